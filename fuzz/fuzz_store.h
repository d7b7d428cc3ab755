/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Shared by the store harnesses (filter, aggregate): the sample
 * configuration loaded once, with an in-memory SQLite database migrated
 * from it and a principal for each of admin, sales and auditor; the checks
 * every refusal and every generated statement must pass; and the reading
 * of an input: the first byte picks the caller, the second the Data Model
 * (among those the caller may read), the rest is parsed as the JSON
 * arguments. */
#ifndef DG_FUZZ_STORE_H
#define DG_FUZZ_STORE_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_internal.h"

/* One arguments object for the harness to try, with the caller and model
 * the input chose. */
typedef void (*fuzz_store_run_fn)(const dg_store_parse_t *ps, const dg_model_t *m,
                                  const json_t *args);

static dg_catalog_t *fuzz_store_cat;
static dg_arena_t *fuzz_store_boot;
static const dg_principal_t *fuzz_store_users[3];
static dg__sqlite_conn_t *fuzz_store_conn;

/* The sample configuration sits beside this file's directory. */
static void fuzz_store_conf_dir(char *out, size_t size) {
  const char *slash = strrchr(__FILE__, '/');
  size_t n = slash != NULL ? (size_t)(slash - __FILE__) : 0;
  snprintf(out, size, "%.*s%sconf", (int)n, __FILE__, n ? "/../" : "../");
}

static void fuzz_store_init(void) {
  char dir[4096];
  const char *names[] = {"admin", "sales", "auditor"};
  dg_errctx_t err;
  dg_log_init(2, DG_LOG_ERROR);
  fuzz_store_conf_dir(dir, sizeof(dir));
  fuzz_store_boot = dg_arena_new(4096);
  json_t *notes = json_array();
  if (dg_catalog_load(dir, &fuzz_store_cat, NULL) != 0 ||
      dg__sqlite_connect(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &fuzz_store_conn,
                         &err) ||
      dg__sqlite_migrate(fuzz_store_conn, fuzz_store_cat, notes, &err) != 0)
    abort();
  json_decref(notes);
  for (size_t i = 0; i < 3; i++) {
    if (dg_auth_principal_for_user(fuzz_store_cat, names[i], fuzz_store_boot,
                                   &fuzz_store_users[i]) != 0)
      abort();
  }
}

/* A refusal must be DG_EINVAL naming its parameter, or DG_ENOMEM. */
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
  if (dg__sqlite_prepare(fuzz_store_conn, sql, &st, &err) != 0)
    abort();
  int step = dg__sqlite_step(fuzz_store_conn, st, &err);
  dg__sqlite_release(st);
  if (step != SQLITE_ROW && step != SQLITE_DONE)
    abort();
}

/* The n-th model p may read (wrapping), or NULL. */
static const dg_model_t *fuzz_store_readable(const dg_principal_t *p, size_t n) {
  const dg_catalog_t *cat = fuzz_store_cat;
  size_t count = 0;
  for (size_t i = 0; i < cat->nmodels; i++)
    count += dg_auth_can_read_model(p, &cat->models[i]);
  for (size_t i = 0, k = 0; count > 0 && i < cat->nmodels; i++) {
    if (dg_auth_can_read_model(p, &cat->models[i]) && k++ == n % count)
      return &cat->models[i];
  }
  return NULL;
}

/* Reads one input as the header comment says and gives it to run. */
static int fuzz_store_input(const uint8_t *data, size_t size, fuzz_store_run_fn run) {
  if (fuzz_store_cat == NULL)
    fuzz_store_init();
  if (size < 2)
    return 0;
  const dg_principal_t *p = fuzz_store_users[data[0] % 3];
  const dg_model_t *m = fuzz_store_readable(p, data[1]);
  json_t *args = json_loadb((const char *)data + 2, size - 2, 0, NULL);
  if (args == NULL || m == NULL) {
    json_decref(args);
    return 0;
  }
  dg_errctx_t err;
  dg_errctx_clear(&err);
  dg_arena_t *arena = dg_arena_new(4096);
  dg_store_parse_t ps = {.cat = fuzz_store_cat, .principal = p, .arena = arena, .err = &err};
  run(&ps, m, args);
  dg_arena_destroy(arena);
  json_decref(args);
  return 0;
}

#endif
