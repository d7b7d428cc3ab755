/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Reads from hot standbys (pg_replica.c, pg.c): the routing rule, the
 * freshness check against a server of its own (scripts/pg-test-server;
 * the "standby" pool reaches the same server, which is no standby and so
 * counts as fresh), the store sending the read tools to the read pool and
 * everything else to the primary, and the settings of the pools
 * (server.databasePool, server.databasePasswordEnv, server.readDatabase). */
#include "store/pg_store_test.h"

#define MS 1000000ULL

/* ---- The routing rule ------------------------------------------------------------------ */

static void test_route(void **state) {
  (void)state;
  uint64_t lag = 1000 * MS;
  /* Never checked, or found behind: the primary. */
  assert_false(dg__pg_read_on_standby(0, 0, 5000 * MS, lag));
  /* Fresh within the bound, no write since: the standby. */
  assert_true(dg__pg_read_on_standby(4500 * MS, 0, 5000 * MS, lag));
  assert_true(dg__pg_read_on_standby(4000 * MS, 0, 5000 * MS, lag));
  /* Older than the bound: the primary. */
  assert_false(dg__pg_read_on_standby(3999 * MS, 0, 5000 * MS, lag));
  /* This store wrote after the standby was seen fresh, or at the same
   * instant: the primary until a later check. */
  assert_false(dg__pg_read_on_standby(4500 * MS, 4600 * MS, 5000 * MS, lag));
  assert_false(dg__pg_read_on_standby(4500 * MS, 4500 * MS, 5000 * MS, lag));
  assert_true(dg__pg_read_on_standby(4700 * MS, 4600 * MS, 5000 * MS, lag));
  /* A clock that went backwards is not trusted. */
  assert_false(dg__pg_read_on_standby(6000 * MS, 0, 5000 * MS, lag));
}

static void test_interval(void **state) {
  (void)state;
  assert_int_equal(dg__pg_replica_interval_ms(1000), 250);
  assert_int_equal(dg__pg_replica_interval_ms(10), 5);
  assert_int_equal(dg__pg_replica_interval_ms(3600000), 1000);
}

/* ---- The check ---------------------------------------------------------------------------- */

static void wait_checks(uv_loop_t *loop, const dg__pg_replica_t *r, uint64_t n) {
  uv_timer_t t;
  uv_timer_init(loop, &t);
  uv_timer_start(&t, tick, 5, 5);
  while (r->checks < n)
    uv_run(loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
}

static void wait_usable(uv_loop_t *loop, const dg__pg_replica_t *r) {
  uv_timer_t t;
  uv_timer_init(loop, &t);
  uv_timer_start(&t, tick, 5, 5);
  while (!dg__pg_replica_usable(r))
    uv_run(loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
}

static void on_stopped(uv_handle_t *h) {
  *(bool *)h->data = true;
}

static void replica_stop(uv_loop_t *loop, dg__pg_replica_t *r) {
  bool done = false;
  r->timer.data = &done;
  dg__pg_replica_stop(r, on_stopped);
  while (!done)
    uv_run(loop, UV_RUN_ONCE);
}

static void close_pool(uv_loop_t *loop, dg__pg_pool_t *pool) {
  pool_drain(loop, pool);
}

/* A read server that answers the check is fresh as of the check's sample;
 * a write of the store sends reads to the primary until the next check. */
static void test_check_fresh(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *primary = pool_new(&loop, g_uri, 2, 0);
  dg__pg_pool_t *standby = pool_new(&loop, g_uri, 2, 0);
  dg__pg_replica_t r = {0};
  dg__pg_replica_start(&r, &loop, primary, standby, 60000);
  assert_false(dg__pg_replica_usable(&r));
  wait_checks(&loop, &r, 1);
  assert_int_equal(r.stale, 0);
  assert_true(r.fresh_ns > 0);
  assert_true(dg__pg_replica_usable(&r));
  dg__pg_replica_wrote(&r);
  assert_false(dg__pg_replica_usable(&r));
  wait_checks(&loop, &r, r.checks + 1);
  assert_true(dg__pg_replica_usable(&r));
  dg__pg_replica_failed(&r);
  assert_false(dg__pg_replica_usable(&r));
  replica_stop(&loop, &r);
  close_pool(&loop, standby);
  pool_close(&loop, primary);
}

/* A read server that cannot be reached is never used. */
static void test_check_unreachable(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *primary = pool_new(&loop, g_uri, 2, 0);
  dg__pg_pool_t *standby = pool_new(&loop, "postgresql://postgres@127.0.0.1:1/postgres", 2, 0);
  dg__pg_replica_t r = {0};
  dg__pg_replica_start(&r, &loop, primary, standby, 60000);
  wait_checks(&loop, &r, 2);
  assert_int_equal(r.stale, r.checks);
  assert_int_equal(r.fresh_ns, 0);
  assert_false(dg__pg_replica_usable(&r));
  replica_stop(&loop, &r);
  close_pool(&loop, standby);
  pool_close(&loop, primary);
}

/* Stopped while the primary answers a check, with the standby's pool
 * closed at once (as a store closes): the check ends without it. */
static void test_stop_during_check(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *primary = pool_new(&loop, g_uri, 2, 0);
  dg__pg_pool_t *standby = pool_new(&loop, g_uri, 2, 0);
  dg__pg_replica_t r = {0};
  dg__pg_replica_start(&r, &loop, primary, standby, 60000);
  dg__pg_stats_t st = {0};
  while (!(r.checking && st.connects == 1 && st.idle == 0)) {
    uv_run(&loop, UV_RUN_ONCE);
    dg__pg_pool_stats(primary, &st);
  }
  replica_stop(&loop, &r);
  close_pool(&loop, standby);
  pool_close(&loop, primary);
  assert_false(r.checking);
  assert_int_equal(r.fresh_ns, 0);
}

/* ---- The store ----------------------------------------------------------------------------- */

typedef struct opened {
  bool done;
  int status;
  dg_store_t *store;
  dg_errctx_t err;
} opened_t;

static void on_open(dg_store_t *store, int status, const dg_errctx_t *err, void *data) {
  opened_t *o = data;
  o->done = true;
  o->status = status;
  o->store = store;
  if (err != NULL)
    o->err = *err;
}

static void wait_flag(uv_loop_t *loop, const bool *flag) {
  uv_timer_t t;
  uv_timer_init(loop, &t);
  uv_timer_start(&t, tick, 5, 5);
  while (!*flag)
    uv_run(loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
}

static opened_t store_open(uv_loop_t *loop, const char *path, const char *read_path) {
  opened_t o = {0};
  dg_store_options_t opts = {.path = path, .read_path = read_path, .sample_dir = ""};
  assert_int_equal(dg_store_open(loop, g_st->cat, &opts, on_open, &o), 0);
  wait_flag(loop, &o.done);
  return o;
}

static void on_store_closed(void *data) {
  *(bool *)data = true;
}

static void store_close(uv_loop_t *loop, dg_store_t *s) {
  bool done = false;
  dg_store_close(s, on_store_closed, &done);
  while (!done)
    uv_run(loop, UV_RUN_ONCE);
  assert_int_equal(uv_run(loop, UV_RUN_NOWAIT), 0);
  assert_int_equal(uv_loop_close(loop), 0);
}

typedef struct answer {
  bool done;
  int status;
  dg_errctx_t err;
} answer_t;

static void on_answer(int status, json_t *result, const dg_errctx_t *err, void *data) {
  answer_t *a = data;
  a->done = true;
  a->status = status;
  if (err != NULL)
    a->err = *err;
  json_decref(result);
}

static void on_records(int status, json_t *records, const dg_errctx_t *err, void *data) {
  answer_t *a = data;
  a->done = true;
  a->status = status;
  if (err != NULL)
    a->err = *err;
  json_decref(records);
}

static void query(uv_loop_t *loop, dg_store_t *s, const dg_store_query_t *q) {
  answer_t a = {0};
  dg_errctx_t err;
  assert_int_equal(dg_store_query(s, q, on_answer, &a, NULL, &err), 0);
  wait_flag(loop, &a.done);
  if (a.status != 0)
    fail_msg("query: %s", a.err.message);
}

static void write_customer(uv_loop_t *loop, dg_store_t *s) {
  const dg_model_t *m = st_model(g_st, "Customers");
  const dg_property_t *name = dg_model_property(m, "Name");
  dg_store_value_t v = {.kind = DG_STORE_TEXT, .text = "Replica Co", .len = 10};
  dg_store_write_t w = {
      .model = m, .mode = DG_STORE_CREATE, .props = &name, .values = &v, .nvalues = 1};
  answer_t a = {0};
  dg_errctx_t err;
  assert_int_equal(dg_store_write(s, &w, on_answer, &a, NULL, &err), 0);
  wait_flag(loop, &a.done);
  if (a.status != 0)
    fail_msg("write: %s", a.err.message);
}

/* The read tools go to the read pool while it is fresh; after this
 * store's write they go to the primary until the next check; the form
 * tools' reads always go to the primary. */
static void test_store_routes_reads(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  g_st->cat->server.read_max_lag_ms = 60000;
  opened_t o = store_open(&loop, g_uri, g_uri);
  if (o.status != 0)
    fail_msg("open: %s", o.err.message);
  const dg__pg_replica_t *r = dg__pg_store_replica(o.store);
  assert_non_null(r);
  dg_store_query_t q;
  assert_int_equal(st_parse_query(g_st, "admin", "Customers", "{}", &q), 0);
  wait_checks(&loop, r, 1);
  query(&loop, o.store, &q);
  assert_int_equal(r->on_standby, 1);
  assert_int_equal(r->on_primary, 0);
  write_customer(&loop, o.store);
  query(&loop, o.store, &q);
  assert_int_equal(r->on_standby, 1);
  assert_int_equal(r->on_primary, 1);
  /* A check begun after the write finds the standby past it (one that
   * was already running when the write ended does not count). */
  wait_usable(&loop, r);
  query(&loop, o.store, &q);
  assert_int_equal(r->on_standby, 2);
  /* The form tools' reads are not counted: they never reach the rule. */
  answer_t a = {0};
  dg_errctx_t err;
  assert_int_equal(dg_store_query_records(o.store, &q, on_records, &a, &err), 0);
  wait_flag(&loop, &a.done);
  assert_int_equal(a.status, 0);
  assert_int_equal(r->on_standby, 2);
  assert_int_equal(r->on_primary, 1);
  store_close(&loop, o.store);
}

/* A read pool that cannot be reached sends the reads to the primary. */
static void test_store_standby_down(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  g_st->cat->server.read_max_lag_ms = 60000;
  opened_t o = store_open(&loop, g_uri, "postgresql://postgres@127.0.0.1:1/postgres");
  if (o.status != 0)
    fail_msg("open: %s", o.err.message);
  const dg__pg_replica_t *r = dg__pg_store_replica(o.store);
  wait_checks(&loop, r, 1);
  dg_store_query_t q;
  assert_int_equal(st_parse_query(g_st, "admin", "Customers", "{}", &q), 0);
  query(&loop, o.store, &q);
  assert_int_equal(r->on_standby, 0);
  assert_int_equal(r->on_primary, 1);
  store_close(&loop, o.store);
}

/* Without server.readDatabase there is no read pool. */
static void test_store_without_read_database(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  opened_t o = store_open(&loop, g_uri, NULL);
  assert_int_equal(o.status, 0);
  assert_null(dg__pg_store_replica(o.store));
  store_close(&loop, o.store);
}

/* A read URI holding a password is refused, naming the setting and not
 * repeating the secret; so is a read URI with a SQLite database. */
static void test_read_database_refused(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  opened_t o = store_open(&loop, g_uri, "postgresql://u:hunter2@127.0.0.1:1/db");
  assert_int_equal(o.status, DG_ECONFIG);
  assert_string_equal(o.err.param, "server.readDatabase");
  assert_non_null(strstr(o.err.message, "server.readDatabase"));
  assert_null(strstr(o.err.message, "hunter2"));
  char file[600];
  snprintf(file, sizeof(file), "%s/replica-test.db", g_dir);
  o = store_open(&loop, file, g_uri);
  assert_int_equal(o.status, DG_ECONFIG);
  assert_string_equal(o.err.param, "server.readDatabase");
  assert_non_null(strstr(o.err.message, "PostgreSQL"));
  assert_int_equal(uv_run(&loop, UV_RUN_NOWAIT), 0);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- Pool size and password ------------------------------------------------------------ */

typedef struct many {
  answer_t a[5];
} many_t;

/* server.databasePool bounds the connections of the store's pool. */
static void test_pool_size(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  unsigned saved = g_st->cat->server.database_pool;
  g_st->cat->server.database_pool = 2;
  opened_t o = store_open(&loop, g_uri, NULL);
  g_st->cat->server.database_pool = saved;
  assert_int_equal(o.status, 0);
  dg_store_query_t q;
  assert_int_equal(st_parse_query(g_st, "admin", "Customers", "{}", &q), 0);
  many_t m = {0};
  dg_errctx_t err;
  for (size_t i = 0; i < DG_ARRAY_SIZE(m.a); i++)
    assert_int_equal(dg_store_query(o.store, &q, on_answer, &m.a[i], NULL, &err), 0);
  for (size_t i = 0; i < DG_ARRAY_SIZE(m.a); i++) {
    wait_flag(&loop, &m.a[i].done);
    assert_int_equal(m.a[i].status, 0);
  }
  dg__pg_stats_t st;
  dg__pg_pool_stats(dg__pg_store_pool(o.store), &st);
  assert_int_equal(st.open, 2);
  store_close(&loop, o.store);
}

/* The password is read from the variable server.databasePasswordEnv
 * names; without it the role that needs one cannot connect. */
static void test_password_env(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *admin = pool_new(&loop, g_uri, 1, 0);
  dg__pg_conn_t *c = acquire(&loop, admin);
  got_t g;
  run_text(&loop, c,
           "DO $$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'dg_password_user') "
           "THEN CREATE ROLE dg_password_user LOGIN PASSWORD 'hunter2'; END IF; END $$; "
           "GRANT CREATE ON DATABASE postgres TO dg_password_user; "
           "CREATE SCHEMA IF NOT EXISTS AUTHORIZATION dg_password_user",
           &g);
  if (g.status != 0)
    fail_msg("%s", g.err.message);
  dg__pg_release(c);
  pool_close(&loop, admin);

  const char *at = strchr(g_uri, '@');
  char uri[512];
  snprintf(uri, sizeof(uri), "postgresql://dg_password_user%s", at);
  const char *saved = g_st->cat->server.database_password_env;
  g_st->cat->server.database_password_env = "DG_TEST_PG_PASSWORD";
  unsetenv("PGPASSWORD");
  unsetenv("DG_TEST_PG_PASSWORD");
  uv_loop_init(&loop);
  opened_t o = store_open(&loop, uri, NULL);
  assert_int_equal(o.status, DG_EIO);
  assert_int_equal(uv_loop_close(&loop), 0);
  setenv("DG_TEST_PG_PASSWORD", "hunter2", 1);
  uv_loop_init(&loop);
  o = store_open(&loop, uri, NULL);
  g_st->cat->server.database_password_env = saved;
  unsetenv("DG_TEST_PG_PASSWORD");
  if (o.status != 0)
    fail_msg("open: %s", o.err.message);
  assert_null(strstr(o.err.message, "hunter2"));
  store_close(&loop, o.store);
}

/* A connection that completes after its pool began closing is closed
 * too, so that the close ends (a store closed right after a burst of
 * reads had one still connecting). */
static void test_close_while_connecting(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 2, 0);
  got_t g = {0};
  assert_int_equal(dg__pg_acquire(pool, on_acquire, &g), 0);
  dg__pg_stats_t st = {0};
  while (st.open == 0) {
    uv_run(&loop, UV_RUN_ONCE);
    dg__pg_pool_stats(pool, &st);
  }
  assert_int_equal(st.idle, 0);
  pool_close(&loop, pool);
  assert_int_equal(g.status, DG_ECANCELED);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_route),
      cmocka_unit_test(test_interval),
      cmocka_unit_test(test_check_fresh),
      cmocka_unit_test(test_check_unreachable),
      cmocka_unit_test(test_stop_during_check),
      cmocka_unit_test(test_store_routes_reads),
      cmocka_unit_test(test_store_standby_down),
      cmocka_unit_test(test_store_without_read_database),
      cmocka_unit_test(test_read_database_refused),
      cmocka_unit_test(test_pool_size),
      cmocka_unit_test(test_password_env),
      cmocka_unit_test(test_close_while_connecting),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
