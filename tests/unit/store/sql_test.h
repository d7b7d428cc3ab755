/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Shared helpers of the SQL generation tests: a connection to an empty
 * database migrated from the sample configuration, the bound values
 * written out, and a check that a statement is the text expected, binds
 * those values, and prepares and runs. */
#ifndef DG_TEST_SQL_TEST_H
#define DG_TEST_SQL_TEST_H

#include "store/sqlite_internal.h"
#include "store/store_test.h"

typedef struct sql_fixture {
  st_fixture_t st;
  dg__sqlite_conn_t *conn;
} sql_fixture_t;

static inline int sql_setup(void **state) {
  st_setup(state);
  sql_fixture_t *fx = calloc(1, sizeof(*fx));
  fx->st = *(st_fixture_t *)*state;
  free(*state);
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(
      dg__sqlite_connect(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &fx->conn, &err),
      0);
  json_t *notes = json_array();
  assert_int_equal(dg__sqlite_migrate(fx->conn, fx->st.cat, notes, &err), 0);
  assert_int_equal(json_array_size(notes), 0);
  json_decref(notes);
  *state = fx;
  return 0;
}

static inline int sql_teardown(void **state) {
  sql_fixture_t *fx = *state;
  dg__sqlite_disconnect(fx->conn);
  dg_arena_destroy(fx->st.arena);
  dg_catalog_unref(fx->st.cat);
  free(fx);
  return 0;
}

/* The binds written out: 'text', 12, 1.5, true, NULL. */
static inline void sql_binds_text(const dg__sql_t *sql, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < sql->nbinds && len < size; i++) {
    const dg_store_value_t *v = &sql->binds[i];
    const char *sep = i ? " " : "";
    if (v->kind == DG_STORE_TEXT)
      len += (size_t)snprintf(out + len, size - len, "%s'%s'", sep, v->text);
    else if (v->kind == DG_STORE_INT)
      len += (size_t)snprintf(out + len, size - len, "%s%lld", sep, (long long)v->i);
    else if (v->kind == DG_STORE_REAL)
      len += (size_t)snprintf(out + len, size - len, "%s%g", sep, v->d);
    else if (v->kind == DG_STORE_BOOL)
      len += (size_t)snprintf(out + len, size - len, "%s%s", sep, v->b ? "true" : "false");
    else
      len += (size_t)snprintf(out + len, size - len, "%sNULL", sep);
  }
}

/* Prepares and runs sql on the migrated (empty) database. */
static inline void sql_runs(sql_fixture_t *fx, const dg__sql_t *sql) {
  sqlite3_stmt *st = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  if (dg__sqlite_prepare(fx->conn, sql, &st, &err) != 0)
    fail_msg("does not prepare: %s\n%s", err.message, sql->text.data);
  int step = dg__sqlite_step(fx->conn, st, &err);
  dg__sqlite_release(st);
  if (step != SQLITE_DONE && step != SQLITE_ROW)
    fail_msg("does not run: %s\n%s", err.message, sql->text.data);
}

static inline void sql_check(sql_fixture_t *fx, const dg__sql_t *sql, const char *want,
                             const char *binds) {
  char got[1024];
  assert_int_equal(sql->rc, 0);
  assert_string_equal(sql->text.data, want);
  sql_binds_text(sql, got, sizeof(got));
  assert_string_equal(got, binds);
  sql_runs(fx, sql);
}

#endif
