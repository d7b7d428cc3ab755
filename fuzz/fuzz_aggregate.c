/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes the aggregate argument parser and the aggregate SQL. The first
 * byte picks the caller (admin, sales or auditor), the second the Data
 * Model; the rest, parsed as JSON, is given as the arguments of
 * aggregate_entities against the sample configuration. A refusal must
 * name its parameter in the message; an accepted call must keep the
 * limits (1 to 32 clauses, at most 8 group keys, no joinFilter with
 * groupBy, distinct result keys) and give statements that SQLite prepares
 * and runs on a database migrated from the same configuration. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_store.h"

static void check_limits(const dg_store_aggregate_t *a) {
  if (a->naggs < 1 || a->naggs > DG_STORE_AGGREGATIONS_MAX || a->ngroup_by > DG_STORE_GROUP_BY_MAX)
    abort();
  for (size_t i = 0; i < a->naggs; i++) {
    if (a->aggs[i].join != NULL && a->ngroup_by > 0)
      abort();
    if ((a->aggs[i].prop == NULL) != (a->aggs[i].fn == DG_STORE_AGG_COUNT))
      abort();
    for (size_t j = 0; j < i; j++) {
      if (strcmp(a->aggs[i].key, a->aggs[j].key) == 0)
        abort();
    }
  }
}

static void aggregate(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *args) {
  dg_store_aggregate_t a;
  int rc = dg_store_parse_aggregate(ps, m, args, &a);
  if (rc != 0) {
    check_refusal(rc, ps->err);
    return;
  }
  check_limits(&a);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_aggregate(&sql, &a);
  must_run(&sql);
  dg__sql_reset(&sql);
  dg__sql_aggregate_count(&sql, &a);
  must_run(&sql);
  dg__sql_free(&sql);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_store_input(data, size, aggregate);
}
