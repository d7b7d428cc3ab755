/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes the store's argument parser and SQL generation. The first byte
 * picks the caller (admin, sales or auditor), the second the Data Model;
 * the rest, parsed as JSON, is given as the arguments of query_entities,
 * get_entities_by_ids and lookup_by_keyword against the sample
 * configuration. A refusal must name its parameter in the message; an
 * accepted query must give statements that SQLite prepares and runs on a
 * database migrated from the same configuration. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_store.h"

static void expansions(const dg_store_expand_t *e, size_t n, dg_arena_t *arena) {
  static const char *const keys[] = {"00000000-0000-4000-8000-000000000001", "x"};
  for (size_t i = 0; i < n; i++) {
    dg__sql_cols_t cols;
    dg__sql_t sql;
    if (dg__sql_entity_cols(&e[i].select, NULL, 0, arena, &cols) != 0)
      return;
    dg__sql_init(&sql, &dg__sql_sqlite);
    if (e[i].reference->reference->direction == DG_REF_INBOUND)
      dg__sql_expand_many(&sql, &e[i], &cols, keys, 2, DG_STORE_EXPAND_MAX);
    else
      dg__sql_by_ids(&sql, e[i].target, &cols, keys, 2);
    must_run(&sql);
    dg__sql_free(&sql);
  }
}

static void query(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *args) {
  dg_store_query_t q;
  int rc = dg_store_parse_query(ps, m, args, &q);
  if (rc != 0) {
    check_refusal(rc, ps->err);
    return;
  }
  dg__sql_cols_t cols;
  dg__sql_t sql;
  if (dg__sql_entity_cols(&q.select, q.expand, q.nexpand, ps->arena, &cols) != 0)
    return;
  dg__sql_init(&sql, &dg__sql_sqlite);
  if (q.count_only)
    dg__sql_count(&sql, &q);
  else
    dg__sql_page(&sql, &q, &cols);
  must_run(&sql);
  dg__sql_free(&sql);
  expansions(q.expand, q.nexpand, ps->arena);
}

static void fetch_and_lookup(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *args) {
  dg_store_fetch_t f;
  dg_store_lookup_t l;
  int rc = dg_store_parse_fetch(ps, m, args, &f);
  if (rc != 0)
    check_refusal(rc, ps->err);
  else if (f.nids < 1 || f.nids > DG_STORE_IDS_MAX)
    abort();
  dg_errctx_clear(ps->err);
  rc = dg_store_parse_lookup(ps, args, &l);
  if (rc != 0)
    check_refusal(rc, ps->err);
  else if (l.nterms < 1 || l.limit < 1 || l.limit > DG_STORE_LOOKUP_LIMIT_MAX)
    abort();
}

static void query_fetch_and_lookup(const dg_store_parse_t *ps, const dg_model_t *m,
                                   const json_t *args) {
  query(ps, m, args);
  dg_errctx_clear(ps->err);
  fetch_and_lookup(ps, m, args);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_store_input(data, size, query_fetch_and_lookup);
}
