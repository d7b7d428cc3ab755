/* Fuzzes the store's argument parser and SQL generation. The first byte
 * picks the caller (admin, sales or auditor), the second the Data Model;
 * the rest, parsed as JSON, is given as the arguments of query_entities,
 * get_entities_by_ids and lookup_by_keyword against the sample
 * configuration. A refusal must name its parameter in the message; an
 * accepted query must give statements that SQLite prepares and runs on a
 * database migrated from the same configuration. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_internal.h"

static dg_catalog_t *cat;
static dg_arena_t *boot;
static const dg_principal_t *users[3];
static dg__sqlite_conn_t *conn;

/* The sample configuration sits beside this file's directory. */
static void conf_dir(char *out, size_t size) {
  const char *slash = strrchr(__FILE__, '/');
  size_t n = slash != NULL ? (size_t)(slash - __FILE__) : 0;
  snprintf(out, size, "%.*s%sconf", (int)n, __FILE__, n ? "/../" : "../");
}

static void init(void) {
  char dir[4096];
  const char *names[] = {"admin", "sales", "auditor"};
  dg_errctx_t err;
  dg_log_init(2, DG_LOG_ERROR);
  conf_dir(dir, sizeof(dir));
  boot = dg_arena_new(4096);
  json_t *notes = json_array();
  if (dg_catalog_load(dir, &cat, NULL) != 0 ||
      dg__sqlite_connect(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &conn, &err) ||
      dg__sqlite_migrate(conn, cat, notes, &err) != 0)
    abort();
  json_decref(notes);
  for (size_t i = 0; i < 3; i++) {
    if (dg_auth_principal_for_user(cat, names[i], boot, &users[i]) != 0)
      abort();
  }
}

static void check_refusal(int rc, const dg_errctx_t *err) {
  char prefix[sizeof(err->param) + 32];
  if (rc != DG_EINVAL && rc != DG_ENOMEM)
    abort();
  snprintf(prefix, sizeof(prefix), "Invalid argument '%s': ", err->param);
  if (rc == DG_EINVAL && strncmp(err->message, prefix, strlen(prefix)) != 0)
    abort();
}

/* Prepares and runs sql; any failure is a bug in the generator. */
static void must_run(const dg__sql_t *sql) {
  sqlite3_stmt *st = NULL;
  dg_errctx_t err;
  if (sql->rc == DG_E2BIG)
    return;
  if (dg__sqlite_prepare(conn, sql, &st, &err) != 0)
    abort();
  int step = dg__sqlite_step(conn, st, &err);
  dg__sqlite_release(st);
  if (step != SQLITE_ROW && step != SQLITE_DONE)
    abort();
}

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

/* The n-th model p may read (wrapping), or NULL. */
static const dg_model_t *readable(const dg_principal_t *p, size_t n) {
  size_t count = 0;
  for (size_t i = 0; i < cat->nmodels; i++)
    count += dg_auth_can_read_model(p, &cat->models[i]);
  for (size_t i = 0, k = 0; count > 0 && i < cat->nmodels; i++) {
    if (dg_auth_can_read_model(p, &cat->models[i]) && k++ == n % count)
      return &cat->models[i];
  }
  return NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (cat == NULL)
    init();
  if (size < 2)
    return 0;
  const dg_principal_t *p = users[data[0] % 3];
  const dg_model_t *m = readable(p, data[1]);
  json_t *args = json_loadb((const char *)data + 2, size - 2, 0, NULL);
  if (args == NULL || m == NULL) {
    json_decref(args);
    return 0;
  }
  dg_errctx_t err;
  dg_errctx_clear(&err);
  dg_arena_t *arena = dg_arena_new(4096);
  dg_store_parse_t ps = {.cat = cat, .principal = p, .arena = arena, .err = &err};
  query(&ps, m, args);
  dg_errctx_clear(&err);
  fetch_and_lookup(&ps, m, args);
  dg_arena_destroy(arena);
  json_decref(args);
  return 0;
}
