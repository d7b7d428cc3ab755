/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for dg__pg_pipeline (pg_conn.c) against a real PostgreSQL
 * started by scripts/pg-test-server: BEGIN, a statement with bound values
 * and COMMIT answered in one round trip; a failure in any of the three
 * reported as that statement's error, the ones after it skipped, and the
 * connection usable once the caller rolls back; a cancel, the statement
 * timeout and a connection terminated mid-pipeline reported as for a
 * single statement. Each test closes its pool and loop with nothing left
 * open. */
#include "store/pg_test.h"

static uint64_t round_trips(const dg__pg_pool_t *pool) {
  dg__pg_stats_t st;
  dg__pg_pool_stats(pool, &st);
  return st.round_trips;
}

/* Runs before, head, a bound 41, tail, and after as a pipeline. */
static void run_piped(uv_loop_t *loop, dg__pg_conn_t *c, const char *before, const char *head,
                      const char *tail, const char *after, got_t *g) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_put(&sql, head);
  dg__sql_bind_int(&sql, 41);
  dg__sql_put(&sql, tail);
  memset(g, 0, sizeof(*g));
  dg_errctx_t err;
  int rc = dg__pg_pipeline(c, before, &sql, after, on_query, g, &err);
  dg__sql_free(&sql);
  if (rc != 0)
    fail_msg("pipeline: %s", err.message);
  assert_false(g->done);
  wait_for(loop, g);
}

/* Whether c is out of any transaction and answers. */
static void assert_idle(uv_loop_t *loop, dg__pg_conn_t *c) {
  got_t g;
  assert_false(dg__pg_conn_broken(c));
  run_text(loop, c, "SELECT current_setting('transaction_isolation'), 7", &g);
  if (g.status != 0)
    fail_msg("%s", g.err.message);
  assert_string_equal(g.values[0], "read committed");
  assert_string_equal(g.values[1], "7");
}

static void rollback(uv_loop_t *loop, dg__pg_conn_t *c) {
  got_t g;
  run_text(loop, c, "ROLLBACK", &g);
  assert_int_equal(g.status, 0);
}

/* ---- Tests --------------------------------------------------------------------------------- */

static void test_one_round_trip(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 1, 0);
  dg__pg_conn_t *c = acquire(&loop, pool);
  uint64_t before = round_trips(pool);
  got_t g;
  run_piped(&loop, c, DG__PG_BEGIN_READ, "SELECT current_setting('transaction_isolation'), ",
            "::bigint + 1", "COMMIT", &g);
  if (g.status != 0)
    fail_msg("%s", g.err.message);
  /* The middle statement's result, inside the transaction BEGIN opened. */
  assert_string_equal(g.values[0], "repeatable read");
  assert_string_equal(g.values[1], "42");
  assert_int_equal(round_trips(pool) - before, 1);
  /* COMMIT ran: the next statement is outside the transaction. */
  assert_idle(&loop, c);
  /* Without before and after: the statement alone. */
  run_piped(&loop, c, NULL, "SELECT ", "::bigint - 1", NULL, &g);
  assert_int_equal(g.status, 0);
  assert_string_equal(g.values[0], "40");
  /* A second statement while a pipeline runs is refused. */
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_put(&sql, "SELECT 1");
  dg_errctx_t err;
  memset(&g, 0, sizeof(g));
  assert_int_equal(dg__pg_pipeline(c, "BEGIN", &sql, "COMMIT", on_query, &g, &err), 0);
  got_t h = {0};
  assert_int_equal(dg__pg_pipeline(c, NULL, &sql, NULL, on_query, &h, &err), DG_EBUSY);
  assert_int_equal(dg__pg_exec(c, "SELECT 2", on_query, &h, &err), DG_EBUSY);
  dg__sql_free(&sql);
  wait_for(&loop, &g);
  assert_int_equal(g.status, 0);
  assert_false(h.done);
  dg__pg_release(c);
  pool_close(&loop, pool);
}

/* A failing statement: its error, not the skipped ones' (aborted) nor a
 * later one's; the transaction is left failed until ROLLBACK, then the
 * connection serves again. */
static void test_error_in_the_middle(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 1, 0);
  dg__pg_conn_t *c = acquire(&loop, pool);
  uint64_t before = round_trips(pool);
  got_t g;
  run_piped(&loop, c, DG__PG_BEGIN_READ, "SELECT ", "::bigint / 0", "COMMIT", &g);
  assert_int_equal(g.status, DG_EIO);
  assert_non_null(strstr(g.err.message, "22012"));
  assert_int_equal(g.nvalues, 0);
  assert_int_equal(round_trips(pool) - before, 1);
  assert_false(dg__pg_conn_broken(c));
  /* COMMIT was skipped: the transaction is still open, and failed. */
  got_t k;
  run_text(&loop, c, "SELECT 1", &k);
  assert_int_equal(k.status, DG_EIO);
  assert_non_null(strstr(k.err.message, "25P02"));
  rollback(&loop, c);
  assert_idle(&loop, c);
  /* The first statement fails: the later ones are skipped, its error is
   * the one reported. */
  run_piped(&loop, c, "SELECT 1 FROM no_such_table", "SELECT ", "::bigint / 0", NULL, &g);
  assert_int_equal(g.status, DG_EIO);
  assert_non_null(strstr(g.err.message, "42P01"));
  assert_idle(&loop, c);
  /* The last one fails after the wanted one succeeded: the call fails. */
  run_piped(&loop, c, NULL, "SELECT ", "::bigint", "SELECT 1/0", &g);
  assert_int_equal(g.status, DG_EIO);
  assert_non_null(strstr(g.err.message, "22012"));
  /* A write in a read-only transaction. */
  run_piped(&loop, c, DG__PG_BEGIN_READ, "CREATE TABLE t AS SELECT ", "::bigint AS n", "COMMIT",
            &g);
  assert_int_equal(g.status, DG_EIO);
  assert_non_null(strstr(g.err.message, "no longer accepts writes"));
  /* Refused writes close the connection, so that a new one finds the
   * primary after a failover. */
  assert_true(dg__pg_conn_broken(c));
  dg__pg_release(c);
  pool_close(&loop, pool);
}

static void test_cancel(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 2, 0);
  dg__pg_conn_t *a = acquire(&loop, pool);
  dg__pg_conn_t *b = acquire(&loop, pool);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_put(&sql, "SELECT pg_sleep(60)");
  got_t g = {0};
  dg_errctx_t err;
  assert_int_equal(dg__pg_pipeline(a, DG__PG_BEGIN_READ, &sql, "COMMIT", on_query, &g, &err), 0);
  dg__sql_free(&sql);
  wait_active(&loop, b, dg__pg_conn_pid(a));
  dg__pg_cancel(a);
  wait_for(&loop, &g);
  assert_int_equal(g.status, DG_ECANCELED);
  rollback(&loop, a);
  assert_idle(&loop, a);
  dg__pg_release(a);
  dg__pg_release(b);
  pool_close(&loop, pool);
}

static void test_statement_timeout(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 1, 50);
  dg__pg_conn_t *c = acquire(&loop, pool);
  got_t g;
  run_piped(&loop, c, DG__PG_BEGIN_READ, "SELECT pg_sleep(30), ", "::bigint", "COMMIT", &g);
  assert_int_equal(g.status, DG_ETIMEDOUT);
  assert_non_null(strstr(g.err.message, "50 ms"));
  rollback(&loop, c);
  assert_idle(&loop, c);
  dg__pg_release(c);
  pool_close(&loop, pool);
}

/* Terminated by the server mid-pipeline: the call fails as lost, the
 * connection is closed when released and the next request gets another. */
static void test_terminated(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 2, 0);
  dg__pg_conn_t *a = acquire(&loop, pool);
  dg__pg_conn_t *b = acquire(&loop, pool);
  int pid = dg__pg_conn_pid(a);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_put(&sql, "SELECT pg_sleep(60)");
  got_t g = {0}, k;
  dg_errctx_t err;
  assert_int_equal(dg__pg_pipeline(a, DG__PG_BEGIN_READ, &sql, "COMMIT", on_query, &g, &err), 0);
  dg__sql_free(&sql);
  wait_active(&loop, b, pid);
  char text[64];
  snprintf(text, sizeof(text), "SELECT pg_terminate_backend(%d)", pid);
  run_text(&loop, b, text, &k);
  assert_int_equal(k.status, 0);
  wait_for(&loop, &g);
  assert_int_equal(g.status, DG_EIO);
  assert_non_null(strstr(g.err.message, "connection to the PostgreSQL database was lost"));
  assert_true(dg__pg_conn_broken(a));
  dg__pg_release(a);
  dg__pg_release(b);
  dg__pg_conn_t *c1 = acquire(&loop, pool);
  dg__pg_conn_t *c2 = acquire(&loop, pool);
  assert_int_not_equal(dg__pg_conn_pid(c1), pid);
  assert_int_not_equal(dg__pg_conn_pid(c2), pid);
  assert_idle(&loop, c1);
  assert_idle(&loop, c2);
  dg__pg_release(c1);
  dg__pg_release(c2);
  pool_close(&loop, pool);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_one_round_trip), cmocka_unit_test(test_error_in_the_middle),
      cmocka_unit_test(test_cancel),         cmocka_unit_test(test_statement_timeout),
      cmocka_unit_test(test_terminated),
  };
  return cmocka_run_group_tests(tests, server_start, server_stop);
}
