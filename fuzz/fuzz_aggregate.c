/* Fuzzes the aggregate argument parser and the aggregate SQL. The first
 * byte picks the caller (admin, sales or auditor), the second the Data
 * Model; the rest, parsed as JSON, is given as the arguments of
 * aggregate_entities against the sample configuration. A refusal must
 * name its parameter in the message; an accepted call must keep the
 * limits (1 to 32 clauses, at most 8 group keys, no joinFilter with
 * groupBy, distinct result keys) and give statements that SQLite prepares
 * and runs on a database migrated from the same configuration. */
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
  aggregate(&ps, m, args);
  dg_arena_destroy(arena);
  json_decref(args);
  return 0;
}
