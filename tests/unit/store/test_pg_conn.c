/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for pg_conn.c against a real PostgreSQL 15 started by
 * scripts/pg-test-server: statements with bound values of every kind,
 * statement_timeout, a cancel sent through another connection, a
 * connection terminated by the server mid-statement (the call fails with
 * a clear error, the next one gets a fresh connection), a database that
 * cannot be reached (a clear error, then the backoff answers at once),
 * the pool's bound (a request waits for a released connection), and
 * notifications between two pools, also after the listener was lost,
 * connection URIs that hold a password refused, a password taken from
 * the options only (never from a password file), the application_name
 * the sessions carry, a connection to a server that stopped taking writes
 * closed rather than reused, and a multi-host URI whose first host never
 * answers (later attempts start at the next host). Each
 * test closes its pool and loop with nothing left open. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include "store/pg_test.h"

/* ---- Tests --------------------------------------------------------------------------------- */

static void test_bound_values(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 2, 0);
  dg__pg_conn_t *c = acquire(&loop, pool);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_put(&sql, "SELECT ");
  dg__sql_bind_int(&sql, 41);
  dg__sql_put(&sql, "::bigint + 1, ");
  dg__sql_bind_text(&sql, "it's");
  dg__sql_put(&sql, "::text, ");
  dg_store_value_t b = {.kind = DG_STORE_BOOL, .b = true};
  dg_store_value_t d = {.kind = DG_STORE_REAL, .d = 1.5};
  dg_store_value_t n = {.kind = DG_STORE_NULL};
  dg__sql_bind(&sql, &b);
  dg__sql_put(&sql, "::boolean, ");
  dg__sql_bind(&sql, &d);
  dg__sql_put(&sql, "::float8, ");
  dg__sql_bind(&sql, &n);
  dg__sql_put(&sql, "::text IS NULL");
  got_t g = {0};
  dg_errctx_t err;
  assert_int_equal(dg__pg_query(c, &sql, on_query, &g, &err), 0);
  dg__sql_free(&sql);
  assert_false(g.done);
  wait_for(&loop, &g);
  assert_int_equal(g.status, 0);
  assert_int_equal(g.nvalues, 5);
  assert_string_equal(g.values[0], "42");
  assert_string_equal(g.values[1], "it's");
  assert_string_equal(g.values[2], "t");
  assert_string_equal(g.values[3], "1.5");
  assert_string_equal(g.values[4], "t");
  /* A second statement while one runs is refused. */
  memset(&g, 0, sizeof(g));
  assert_int_equal(dg__pg_exec(c, "SELECT 1", on_query, &g, &err), 0);
  assert_int_equal(dg__pg_exec(c, "SELECT 2", on_query, &g, &err), DG_EBUSY);
  wait_for(&loop, &g);
  run_text(&loop, c, "SELECT 1/0", &g);
  assert_int_equal(g.status, DG_EIO);
  assert_non_null(strstr(g.err.message, "22012"));
  dg__pg_release(c);
  pool_close(&loop, pool);
}

static void test_statement_timeout(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 1, 50);
  dg__pg_conn_t *c = acquire(&loop, pool);
  got_t g;
  run_text(&loop, c, "SELECT pg_sleep(30)", &g);
  assert_int_equal(g.status, DG_ETIMEDOUT);
  assert_non_null(strstr(g.err.message, "50 ms"));
  /* The connection stays usable. */
  run_text(&loop, c, "SELECT current_setting('statement_timeout')", &g);
  assert_int_equal(g.status, 0);
  assert_string_equal(g.values[0], "50ms");
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
  got_t g = {0};
  dg_errctx_t err;
  assert_int_equal(dg__pg_exec(a, "SELECT pg_sleep(60)", on_query, &g, &err), 0);
  wait_active(&loop, b, dg__pg_conn_pid(a));
  dg__pg_cancel(a);
  wait_for(&loop, &g);
  assert_int_equal(g.status, DG_ECANCELED);
  assert_false(dg__pg_conn_broken(a));
  int pid = dg__pg_conn_pid(a);
  dg__pg_release(a);
  dg__pg_release(b);
  /* Once the cancel is answered the same connection serves again. */
  dg__pg_conn_t *again = acquire(&loop, pool);
  dg__pg_conn_t *other = acquire(&loop, pool);
  assert_true(dg__pg_conn_pid(again) == pid || dg__pg_conn_pid(other) == pid);
  run_text(&loop, again, "SELECT 7", &g);
  assert_int_equal(g.status, 0);
  assert_string_equal(g.values[0], "7");
  dg__pg_release(again);
  dg__pg_release(other);
  pool_close(&loop, pool);
}

static void test_terminated_mid_statement(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 2, 0);
  dg__pg_conn_t *a = acquire(&loop, pool);
  dg__pg_conn_t *b = acquire(&loop, pool);
  int pid = dg__pg_conn_pid(a);
  got_t g = {0}, k;
  dg_errctx_t err;
  assert_int_equal(dg__pg_exec(a, "SELECT pg_sleep(60)", on_query, &g, &err), 0);
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
  dg__pg_stats_t before, after;
  dg__pg_pool_stats(pool, &before);
  /* Both connections: the live one and a fresh one for the lost. */
  dg__pg_conn_t *c1 = acquire(&loop, pool);
  dg__pg_conn_t *c2 = acquire(&loop, pool);
  dg__pg_pool_stats(pool, &after);
  assert_int_equal(after.connects, before.connects + 1);
  assert_int_not_equal(dg__pg_conn_pid(c1), pid);
  assert_int_not_equal(dg__pg_conn_pid(c2), pid);
  run_text(&loop, c1, "SELECT 1", &g);
  assert_int_equal(g.status, 0);
  dg__pg_release(c1);
  dg__pg_release(c2);
  pool_close(&loop, pool);
}

static void test_unreachable(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  /* A unix socket directory with no server in it. */
  dg__pg_pool_t *pool =
      pool_new(&loop, "postgresql:///postgres?host=/nonexistent-dir&port=1", 2, 0);
  got_t g = {0};
  assert_int_equal(dg__pg_acquire(pool, on_acquire, &g), 0);
  wait_for(&loop, &g);
  assert_int_equal(g.status, DG_EIO);
  assert_null(g.conn);
  assert_non_null(strstr(g.err.message, "The database cannot be reached"));
  assert_non_null(strstr(g.err.message, "next attempt in"));
  /* Within the backoff a request fails at once, with the same reason. */
  memset(&g, 0, sizeof(g));
  assert_int_equal(dg__pg_acquire(pool, on_acquire, &g), 0);
  wait_for(&loop, &g);
  assert_int_equal(g.status, DG_EIO);
  dg__pg_stats_t st;
  dg__pg_pool_stats(pool, &st);
  assert_int_equal(st.connects, 0);
  assert_int_equal(st.open, 0);
  pool_close(&loop, pool);
}

static void test_bound(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 2, 0);
  dg__pg_conn_t *a = acquire(&loop, pool);
  dg__pg_conn_t *b = acquire(&loop, pool);
  got_t third = {0};
  assert_int_equal(dg__pg_acquire(pool, on_acquire, &third), 0);
  for (int i = 0; i < 20; i++)
    uv_run(&loop, UV_RUN_NOWAIT);
  assert_false(third.done);
  dg__pg_stats_t st;
  dg__pg_pool_stats(pool, &st);
  assert_int_equal(st.open, 2);
  assert_int_equal(st.waiting, 1);
  dg__pg_release(b);
  wait_for(&loop, &third);
  assert_int_equal(third.status, 0);
  assert_ptr_equal(third.conn, b);
  dg__pg_release(a);
  dg__pg_release(third.conn);
  pool_close(&loop, pool);
}

typedef struct heard {
  int n;
  char payload[64];
} heard_t;

static void on_notify(const char *channel, const char *payload, void *data) {
  heard_t *h = data;
  assert_string_equal(channel, "dg_test");
  h->n++;
  snprintf(h->payload, sizeof(h->payload), "%s", payload);
}

static void wait_listening(uv_loop_t *loop, dg__pg_pool_t *pool) {
  while (!dg__pg_listening(pool)) {
    uv_timer_t t;
    uv_timer_init(loop, &t);
    uv_timer_start(&t, tick, 5, 0);
    uv_run(loop, UV_RUN_ONCE);
    uv_close((uv_handle_t *)&t, NULL);
    uv_run(loop, UV_RUN_NOWAIT);
  }
}

/* Sends payload from b until a has heard it (a notification sent before
 * the listener listens again is missed, by design). */
static void notify_until_heard(uv_loop_t *loop, dg__pg_conn_t *b, heard_t *h, const char *payload) {
  int before = h->n;
  while (h->n == before || strcmp(h->payload, payload) != 0) {
    got_t g = {0};
    dg_errctx_t err;
    assert_int_equal(dg__pg_notify(b, "dg_test", payload, on_query, &g, &err), 0);
    wait_for(loop, &g);
    assert_int_equal(g.status, 0);
    got_t pause = {0};
    run_text(loop, b, "SELECT 1", &pause);
  }
}

/* Two pools stand for two gateways: what one sends the other hears, also
 * after its listener was terminated by the server and opened again. */
static void test_listen_notify(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *a = pool_new(&loop, g_uri, 1, 0);
  dg__pg_pool_t *b = pool_new(&loop, g_uri, 1, 0);
  heard_t heard = {0};
  assert_int_equal(dg__pg_listen(a, "Bad-Channel", on_notify, &heard), DG_EINVAL);
  assert_int_equal(dg__pg_listen(a, "dg_test", on_notify, &heard), 0);
  assert_int_equal(dg__pg_listen(a, "dg_test", on_notify, &heard), DG_EINVAL);
  wait_listening(&loop, a);
  dg__pg_conn_t *c = acquire(&loop, b);
  notify_until_heard(&loop, c, &heard, "cancel 1");
  assert_string_equal(heard.payload, "cancel 1");
  got_t g;
  run_text(&loop, c,
           "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE query LIKE 'LISTEN%'", &g);
  assert_int_equal(g.status, 0);
  while (dg__pg_listening(a))
    uv_run(&loop, UV_RUN_ONCE);
  wait_listening(&loop, a);
  notify_until_heard(&loop, c, &heard, "cancel 2");
  assert_string_equal(heard.payload, "cancel 2");
  dg__pg_release(c);
  pool_drain(&loop, b);
  pool_close(&loop, a);
}

static void test_uri_check(void **state) {
  (void)state;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg__pg_uri_check(g_uri, "server.database", &err), 0);
  assert_int_equal(dg__pg_uri_check("postgresql://u:hunter2@db/app", "server.database", &err),
                   DG_ECONFIG);
  assert_string_equal(err.param, "server.database");
  assert_non_null(strstr(err.message, "names a password"));
  assert_null(strstr(err.message, "hunter2"));
  assert_int_equal(
      dg__pg_uri_check("postgresql://db/app?passfile=/etc/pw", "server.database", &err),
      DG_ECONFIG);
  assert_non_null(strstr(err.message, "names a passfile"));
  assert_int_equal(dg__pg_uri_check("postgresql://db/app?nosuch=1", "server.database", &err),
                   DG_ECONFIG);
  assert_non_null(strstr(err.message, "not a PostgreSQL connection URI"));
}

/* The password given to the pool (from the environment) is used; a
 * wrong one fails with libpq's reason, which never repeats it. */
static void test_password_from_options(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *admin = pool_new(&loop, g_uri, 1, 0);
  dg__pg_conn_t *c = acquire(&loop, admin);
  got_t g;
  run_text(&loop, c,
           "DO $$ BEGIN IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = "
           "'dg_password_user') THEN CREATE ROLE dg_password_user LOGIN PASSWORD 'hunter2'; END "
           "IF; END $$",
           &g);
  assert_int_equal(g.status, 0);
  dg__pg_release(c);
  char uri[600];
  const char *at = strchr(g_uri, '@');
  assert_non_null(at);
  snprintf(uri, sizeof(uri), "postgresql://dg_password_user%s", at);
  const char *passwords[] = {"hunter2", "wrong-secret"};
  for (size_t i = 0; i < 2; i++) {
    dg__pg_options_t o = {.uri = uri, .password = passwords[i], .max_conns = 1};
    dg__pg_pool_t *pool = NULL;
    assert_int_equal(dg__pg_pool_new(&loop, &o, &pool), 0);
    got_t a = {0};
    assert_int_equal(dg__pg_acquire(pool, on_acquire, &a), 0);
    wait_for(&loop, &a);
    if (i == 0) {
      assert_int_equal(a.status, 0);
      run_text(&loop, a.conn, "SELECT current_user", &g);
      assert_string_equal(g.values[0], "dg_password_user");
      dg__pg_release(a.conn);
    } else {
      assert_int_equal(a.status, DG_EIO);
      assert_non_null(strstr(a.err.message, "password authentication failed"));
      assert_null(strstr(a.err.message, "wrong-secret"));
    }
    pool_drain(&loop, pool);
  }
  /* A password file is never read, even one libpq is pointed at. */
  char passfile[600];
  snprintf(passfile, sizeof(passfile), "%s.pgpass", g_dir);
  FILE *f = fopen(passfile, "w");
  assert_non_null(f);
  fputs("*:*:*:dg_password_user:hunter2\n", f);
  fclose(f);
  chmod(passfile, 0600);
  setenv("PGPASSFILE", passfile, 1);
  dg__pg_options_t o = {.uri = uri, .max_conns = 1};
  dg__pg_pool_t *pool = NULL;
  assert_int_equal(dg__pg_pool_new(&loop, &o, &pool), 0);
  got_t a = {0};
  assert_int_equal(dg__pg_acquire(pool, on_acquire, &a), 0);
  wait_for(&loop, &a);
  unsetenv("PGPASSFILE");
  unlink(passfile);
  assert_int_equal(a.status, DG_EIO);
  pool_drain(&loop, pool);
  pool_close(&loop, admin);
}

/* The gateway's sessions carry application_name "datagate" unless the URI
 * names one, so that operators (and the tests) find them. */
static void test_application_name(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 1, 0);
  dg__pg_conn_t *c = acquire(&loop, pool);
  got_t g;
  run_text(&loop, c, "SHOW application_name", &g);
  assert_int_equal(g.status, 0);
  assert_string_equal(g.values[0], "datagate");
  dg__pg_release(c);
  pool_close(&loop, pool);
  char uri[600];
  snprintf(uri, sizeof(uri), "%s?application_name=billing_gw", g_uri);
  uv_loop_init(&loop);
  pool = pool_new(&loop, uri, 1, 0);
  c = acquire(&loop, pool);
  run_text(&loop, c, "SHOW application_name", &g);
  assert_int_equal(g.status, 0);
  assert_string_equal(g.values[0], "billing_gw");
  dg__pg_release(c);
  pool_close(&loop, pool);
}

/* A write refused because the server no longer takes writes (as a primary
 * fenced for a failover answers) breaks the connection: the next request
 * gets a new one, which libpq opens on the primary of a multi-host URI. */
static void test_read_only_server(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 1, 0);
  dg__pg_conn_t *c = acquire(&loop, pool);
  int pid = dg__pg_conn_pid(c);
  got_t g;
  run_text(&loop, c, "SET default_transaction_read_only = on", &g);
  assert_int_equal(g.status, 0);
  run_text(&loop, c, "CREATE TABLE dg_read_only_probe (x int)", &g);
  assert_int_equal(g.status, DG_EIO);
  assert_non_null(strstr(g.err.message, "no longer accepts writes"));
  assert_non_null(strstr(g.err.message, "read-only transaction"));
  assert_true(dg__pg_conn_broken(c));
  dg__pg_release(c);
  c = acquire(&loop, pool);
  assert_int_not_equal(dg__pg_conn_pid(c), pid);
  run_text(&loop, c, "CREATE TEMP TABLE dg_read_only_probe (x int)", &g);
  assert_int_equal(g.status, 0);
  assert_false(dg__pg_conn_broken(c));
  dg__pg_release(c);
  pool_close(&loop, pool);
}

/* A TCP port that takes connections into its backlog and never answers,
 * as a dead primary's address that swallows packets looks to libpq. */
static int silent_port(int *fd) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof(a);
  *fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(*fd >= 0);
  assert_int_equal(bind(*fd, (struct sockaddr *)&a, sizeof(a)), 0);
  assert_int_equal(listen(*fd, 16), 0);
  assert_int_equal(getsockname(*fd, (struct sockaddr *)&a, &len), 0);
  return ntohs(a.sin_port);
}

/* The first host of a multi-host URI never answers: the attempt times
 * out, and the next attempts start at the following host, where the
 * server is (libpq alone would wait on the first host every time). */
static void test_silent_first_host(void **state) {
  (void)state;
  int fd, real = 0;
  int silent = silent_port(&fd);
  assert_int_equal(sscanf(g_uri, "postgresql://postgres@127.0.0.1:%d/", &real), 1);
  char uri[256];
  snprintf(uri, sizeof(uri), "postgresql://postgres@127.0.0.1:%d,127.0.0.1:%d/postgres", silent,
           real);
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_options_t o = {.uri = uri, .max_conns = 1, .connect_timeout_ms = 200};
  dg__pg_pool_t *pool = NULL;
  assert_int_equal(dg__pg_pool_new(&loop, &o, &pool), 0);
  got_t g = {0};
  assert_int_equal(dg__pg_acquire(pool, on_acquire, &g), 0);
  wait_for(&loop, &g);
  assert_int_equal(g.status, DG_EIO);
  assert_non_null(strstr(g.err.message, "timed out while connecting"));
  /* Requests within the backoff fail at once; one after it connects. */
  for (int i = 0; i < 100 && g.status != 0; i++) {
    uv_sleep(50);
    memset(&g, 0, sizeof(g));
    assert_int_equal(dg__pg_acquire(pool, on_acquire, &g), 0);
    wait_for(&loop, &g);
  }
  assert_int_equal(g.status, 0);
  got_t q;
  run_text(&loop, g.conn, "SELECT inet_server_port()", &q);
  assert_int_equal(q.status, 0);
  int64_t port = 0;
  assert_true(dg_parse_int64(q.values[0], 1, 65535, &port));
  assert_int_equal(port, real);
  dg__pg_release(g.conn);
  pool_close(&loop, pool);
  close(fd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bound_values),
      cmocka_unit_test(test_statement_timeout),
      cmocka_unit_test(test_cancel),
      cmocka_unit_test(test_terminated_mid_statement),
      cmocka_unit_test(test_unreachable),
      cmocka_unit_test(test_bound),
      cmocka_unit_test(test_listen_notify),
      cmocka_unit_test(test_uri_check),
      cmocka_unit_test(test_password_from_options),
      cmocka_unit_test(test_application_name),
      cmocka_unit_test(test_read_only_server),
      cmocka_unit_test(test_silent_first_host),
  };
  return cmocka_run_group_tests(tests, server_start, server_stop);
}
