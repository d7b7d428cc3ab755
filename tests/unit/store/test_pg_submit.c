/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for pg_submit.c against a real PostgreSQL 15: the same
 * idempotency key sent 100 times at once through two pools (two gateways)
 * creates one record and one submission, the other 99 replay it; a key
 * reused for another request is refused; a failed check writes nothing
 * and frees the key; a running submission whose lease expired is marked
 * interrupted by any gateway, one whose lease was renewed is not, one
 * whose outcome could not be recorded is not renewed; a
 * finished submission's outcome and values land together and a retry of
 * its key replays that outcome. */
#include "store/pg_store_test.h"

#define SENDS 100

typedef struct send {
  const dg_store_submit_t *s;
  bool done;
  int status;
  json_t *result;
  dg_errctx_t err;
  dg__pg_conn_t *conn;
} send_t;

static uint64_t round_trips(dg__pg_pool_t *pool) {
  dg__pg_stats_t st;
  dg__pg_pool_stats(pool, &st);
  return st.round_trips;
}

static void on_submitted(int status, json_t *result, const dg_errctx_t *err, void *data) {
  send_t *x = data;
  x->done = true;
  x->status = status;
  x->result = result;
  if (err != NULL)
    x->err = *err;
  dg__pg_release(x->conn);
}

static void on_conn(dg__pg_conn_t *conn, int status, const dg_errctx_t *err, void *data) {
  send_t *x = data;
  dg_errctx_t e;
  if (status != 0) {
    x->done = true;
    x->status = status;
    x->err = *err;
    return;
  }
  x->conn = conn;
  if (dg__pg_submit(conn, x->s, "owner-1", 60000, on_submitted, x, &e) != 0)
    fail_msg("%s", e.message);
}

static bool all_done(const send_t *xs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!xs[i].done)
      return false;
  }
  return true;
}

/* Starts every send before running the loop, so that they race. */
static void send_all(uv_loop_t *loop, dg__pg_pool_t **pools, size_t npools, send_t *xs, size_t n) {
  for (size_t i = 0; i < n; i++)
    assert_int_equal(dg__pg_acquire(pools[i % npools], on_conn, &xs[i]), 0);
  uv_timer_t t;
  uv_timer_init(loop, &t);
  uv_timer_start(&t, tick, 5, 5);
  while (!all_done(xs, n))
    uv_run(loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
}

static dg_store_submit_t customer(const char *name, const char *key, const char *fingerprint,
                                  const char *endpoint) {
  const dg_model_t *m = st_model(g_st, "Customers");
  const dg_property_t **p = dg_arena_calloc(g_st->arena, 1, sizeof(*p));
  dg_store_value_t *v = dg_arena_calloc(g_st->arena, 1, sizeof(*v));
  p[0] = dg_model_property(m, "Name");
  *v = (dg_store_value_t){.kind = DG_STORE_TEXT, .text = name, .len = strlen(name)};
  char id[DG_UUID_LEN + 1];
  dg_uuid_v4(id);
  dg_store_submit_t s = {
      .submission_id = dg_arena_strdup(g_st->arena, id),
      .write = {.model = m, .mode = DG_STORE_CREATE, .props = p, .values = v, .nvalues = 1},
      .endpoint = endpoint,
      .principal = "admin",
      .idempotency_key = key,
      .fingerprint = fingerprint,
  };
  return s;
}

static void count(uv_loop_t *loop, dg__pg_pool_t *pool, const char *text, const char *want) {
  dg__pg_conn_t *c = acquire(loop, pool);
  got_t g;
  run_text(loop, c, text, &g);
  if (g.status != 0)
    fail_msg("%s", g.err.message);
  assert_string_equal(g.values[0], want);
  dg__pg_release(c);
}

static void migrate(uv_loop_t *loop, dg__pg_pool_t *pool) {
  dg__pg_conn_t *c = acquire(loop, pool);
  got_t g = {0};
  dg_errctx_t err;
  assert_int_equal(dg__pg_migrate(c, g_st->cat, on_query, &g, &err), 0);
  wait_for(loop, &g);
  assert_int_equal(g.status, 0);
  dg__pg_release(c);
}

static void close_pools(uv_loop_t *loop, dg__pg_pool_t **pools, size_t n) {
  for (size_t i = 1; i < n; i++) {
    pool_drain(loop, pools[i]);
  }
  pool_close(loop, pools[0]);
}

static void test_same_key_once_across_gateways(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pools[2] = {pool_new(&loop, g_uri, 4, 0), pool_new(&loop, g_uri, 4, 0)};
  migrate(&loop, pools[0]);
  /* Each gateway names its own submission, as every call does: only the
   * idempotency key is shared. */
  static dg_store_submit_t subs[SENDS];
  static send_t xs[SENDS];
  memset(xs, 0, sizeof(xs));
  for (size_t i = 0; i < SENDS; i++) {
    subs[i] = customer("Once Ltd", "once-key", "fp-1", NULL);
    xs[i].s = &subs[i];
  }
  send_all(&loop, pools, 2, xs, SENDS);
  int fresh = 0, replayed = 0;
  const char *first_id = NULL;
  for (size_t i = 0; i < SENDS; i++) {
    if (xs[i].status != 0)
      fail_msg("send %zu: %s", i, xs[i].err.message);
    bool again = json_is_true(json_object_get(xs[i].result, "replayed"));
    fresh += !again;
    replayed += again;
    const char *id = json_string_value(json_object_get(xs[i].result, "id"));
    if (first_id == NULL)
      first_id = id;
    assert_string_equal(id, first_id);
  }
  assert_int_equal(fresh, 1);
  assert_int_equal(replayed, SENDS - 1);
  count(&loop, pools[0], "SELECT count(*) FROM \"Customers\" WHERE \"Name\" = 'Once Ltd'", "1");
  count(&loop, pools[1],
        "SELECT count(*) FROM \"_dg_submissions\" WHERE idempotency_key = 'once-key'", "1");
  for (size_t i = 0; i < SENDS; i++)
    json_decref(xs[i].result);
  close_pools(&loop, pools, 2);
}

static void test_key_reused_and_failed_checks(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pools[1] = {pool_new(&loop, g_uri, 2, 0)};
  migrate(&loop, pools[0]);
  dg_store_submit_t first = customer("Reuse Inc", "reuse-key", "fp-a", NULL);
  dg_store_submit_t other = customer("Other Inc", "reuse-key", "fp-b", NULL);
  send_t x[2] = {{.s = &first}, {.s = &other}};
  send_all(&loop, pools, 1, &x[0], 1);
  send_all(&loop, pools, 1, &x[1], 1);
  assert_int_equal(x[0].status, 0);
  assert_int_equal(x[1].status, DG_EEXIST);
  assert_string_equal(x[1].err.param, "idempotencyKey");
  assert_non_null(strstr(x[1].err.message, "already used for a different submission"));
  json_decref(x[0].result);
  /* A reference to a missing entity: nothing written, the key stays free. */
  dg_store_submit_t bad = customer("Ghost Co", "ghost-key", "fp-g", NULL);
  dg_store_ref_check_t ref = {.model = st_model(g_st, "Orders"),
                              .id = "99999999-9999-4999-8999-999999999999",
                              .param = "fields.Order"};
  bad.refs = &ref;
  bad.nrefs = 1;
  send_t y = {.s = &bad};
  send_all(&loop, pools, 1, &y, 1);
  assert_int_equal(y.status, DG_ENOENT);
  assert_string_equal(y.err.param, "fields.Order");
  count(&loop, pools[0], "SELECT count(*) FROM \"Customers\" WHERE \"Name\" = 'Ghost Co'", "0");
  count(&loop, pools[0],
        "SELECT count(*) FROM \"_dg_submissions\" WHERE idempotency_key = 'ghost-key'", "0");
  bad.nrefs = 0;
  send_t z = {.s = &bad};
  send_all(&loop, pools, 1, &z, 1);
  assert_int_equal(z.status, 0);
  assert_false(json_is_true(json_object_get(z.result, "replayed")));
  json_decref(z.result);
  close_pools(&loop, pools, 1);
}

static void test_expired_lease_recovered(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pools[1] = {pool_new(&loop, g_uri, 2, 0)};
  migrate(&loop, pools[0]);
  dg_store_submit_t a = customer("Lease A", NULL, NULL, "SaveCustomer");
  dg_store_submit_t b = customer("Lease B", NULL, NULL, "SaveCustomer");
  send_t xa = {.s = &a}, xb = {.s = &b};
  send_all(&loop, pools, 1, &xa, 1);
  send_all(&loop, pools, 1, &xb, 1);
  assert_int_equal(xa.status, 0);
  assert_string_equal(json_string_value(json_object_get(xa.result, "status")), "running");
  dg__pg_conn_t *c = acquire(&loop, pools[0]);
  got_t g;
  /* a's gateway is gone: its lease ran out. b's gateway renews its own. */
  char text[256];
  snprintf(text, sizeof(text),
           "UPDATE \"_dg_submissions\" SET owner = 'gone', lease_until = now() - interval '1 "
           "second' WHERE id = '%s'",
           a.submission_id);
  run_text(&loop, c, text, &g);
  assert_int_equal(g.status, 0);
  dg_errctx_t err;
  memset(&g, 0, sizeof(g));
  assert_int_equal(dg__pg_renew_leases(c, "owner-1", 60000, NULL, 0, on_query, &g, &err), 0);
  wait_for(&loop, &g);
  assert_int_equal(g.status, 0);
  memset(&g, 0, sizeof(g));
  assert_int_equal(dg__pg_recover_submissions(c, on_query, &g, &err), 0);
  wait_for(&loop, &g);
  assert_int_equal(g.status, 0);
  assert_int_equal(g.nvalues, 1);
  assert_string_equal(g.values[0], a.submission_id);
  snprintf(text, sizeof(text),
           "SELECT status || ' ' || left(reason, 12) FROM \"_dg_submissions\" WHERE id = '%s'",
           a.submission_id);
  run_text(&loop, c, text, &g);
  assert_string_equal(g.values[0], "failed interrupted:");
  snprintf(text, sizeof(text), "SELECT status FROM \"_dg_submissions\" WHERE id = '%s'",
           b.submission_id);
  run_text(&loop, c, text, &g);
  assert_string_equal(g.values[0], "running");
  dg__pg_release(c);
  json_decref(xa.result);
  json_decref(xb.result);
  close_pools(&loop, pools, 1);
}

/* Whether the statement about submission id says "t". */
static void lease_is(uv_loop_t *loop, dg__pg_conn_t *c, const char *cond, const char *id,
                     const char *want) {
  char text[300];
  snprintf(text, sizeof(text), "SELECT %s FROM \"_dg_submissions\" WHERE id = '%s'", cond, id);
  got_t g;
  run_text(loop, c, text, &g);
  assert_int_equal(g.nvalues, 1);
  if (strcmp(g.values[0], want) != 0)
    fail_msg("%s of %s: %s, not %s", cond, id, g.values[0], want);
}

/* A submission whose outcome could not be recorded is left out of the
 * renewal, so its lease runs out; a lease that ran out is never renewed
 * again (another gateway may have taken the submission as gone). */
static void test_abandoned_lease_runs_out(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pools[1] = {pool_new(&loop, g_uri, 2, 0)};
  migrate(&loop, pools[0]);
  dg_store_submit_t a = customer("Abandoned A", NULL, NULL, "SaveCustomer");
  dg_store_submit_t b = customer("Abandoned B", NULL, NULL, "SaveCustomer");
  send_t xa = {.s = &a}, xb = {.s = &b};
  send_all(&loop, pools, 1, &xa, 1);
  send_all(&loop, pools, 1, &xb, 1);
  assert_int_equal(xa.status, 0);
  assert_int_equal(xb.status, 0);
  dg__pg_conn_t *c = acquire(&loop, pools[0]);
  got_t g;
  char text[300];
  snprintf(text, sizeof(text),
           "UPDATE \"_dg_submissions\" SET owner = 'owner-1', lease_until = now() + interval "
           "'5 seconds' WHERE id IN ('%s', '%s')",
           a.submission_id, b.submission_id);
  run_text(&loop, c, text, &g);
  assert_int_equal(g.status, 0);
  const char *skip[] = {a.submission_id, "x'}"};
  dg_errctx_t err;
  memset(&g, 0, sizeof(g));
  assert_int_equal(dg__pg_renew_leases(c, "owner-1", 60000, skip, 2, on_query, &g, &err), 0);
  wait_for(&loop, &g);
  assert_int_equal(g.status, 0);
  lease_is(&loop, c, "lease_until < now() + interval '10 seconds'", a.submission_id, "t");
  lease_is(&loop, c, "lease_until > now() + interval '50 seconds'", b.submission_id, "t");
  snprintf(text, sizeof(text),
           "UPDATE \"_dg_submissions\" SET lease_until = now() - interval '1 second' WHERE id = "
           "'%s'",
           b.submission_id);
  run_text(&loop, c, text, &g);
  memset(&g, 0, sizeof(g));
  assert_int_equal(dg__pg_renew_leases(c, "owner-1", 60000, NULL, 0, on_query, &g, &err), 0);
  wait_for(&loop, &g);
  assert_int_equal(g.status, 0);
  lease_is(&loop, c, "lease_until < now()", b.submission_id, "t");
  dg__pg_release(c);
  json_decref(xa.result);
  json_decref(xb.result);
  close_pools(&loop, pools, 1);
}

typedef struct finished {
  bool done;
  int status;
  json_t *result;
  dg_errctx_t err;
} finished_t;

static void on_finished(int status, json_t *result, const dg_errctx_t *err, void *data) {
  finished_t *f = data;
  f->done = true;
  f->status = status;
  f->result = result;
  if (err != NULL)
    f->err = *err;
}

static void finish(uv_loop_t *loop, dg__pg_conn_t *c, const dg_store_finish_t *f, finished_t *out) {
  dg_errctx_t err;
  memset(out, 0, sizeof(*out));
  assert_int_equal(dg__pg_finish(c, f, on_finished, out, &err), 0);
  uv_timer_t t;
  uv_timer_init(loop, &t);
  uv_timer_start(&t, tick, 5, 5);
  while (!out->done)
    uv_run(loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
}

/* The outcome and the tree's values land together; a retry of the key
 * then replays that outcome; the record's latest submission shows it. */
static void test_finish_and_replay(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pools[1] = {pool_new(&loop, g_uri, 2, 0)};
  migrate(&loop, pools[0]);
  dg_store_submit_t s = customer("Tree Co", "tree-key", "fp-t", "SaveCustomer");
  send_t x = {.s = &s};
  uint64_t trips = round_trips(pools[0]);
  send_all(&loop, pools, 1, &x, 1);
  assert_int_equal(x.status, 0);
  /* BEGIN with the claim, the write, COMMIT (four before BEGIN went
   * with the claim). */
  assert_int_equal(round_trips(pools[0]) - trips, 3);
  const char *id = json_string_value(json_object_get(x.result, "id"));
  const dg_model_t *m = st_model(g_st, "Customers");
  const dg_property_t *region = dg_model_property(m, "Region");
  dg_store_value_t v = {.kind = DG_STORE_TEXT, .text = "EMEA", .len = 4};
  dg_store_write_t w = {
      .model = m, .mode = DG_STORE_UPDATE, .id = id, .props = &region, .values = &v, .nvalues = 1};
  dg_store_finish_t f = {.submission_id = s.submission_id,
                         .status = DG_STORE_SUBMISSION_SUCCEEDED,
                         .outcome = "{\"ok\": true}",
                         .writes = &w,
                         .nwrites = 1};
  dg__pg_conn_t *c = acquire(&loop, pools[0]);
  finished_t out;
  trips = round_trips(pools[0]);
  finish(&loop, c, &f, &out);
  assert_int_equal(out.status, 0);
  /* BEGIN with the outcome, the write with COMMIT (four before). */
  assert_int_equal(round_trips(pools[0]) - trips, 2);
  assert_string_equal(json_string_value(json_object_get(out.result, "status")), "succeeded");
  json_decref(out.result);
  dg_store_finish_t unknown = {.submission_id = "00000000-0000-4000-8000-000000000000",
                               .status = DG_STORE_SUBMISSION_FAILED};
  finish(&loop, c, &unknown, &out);
  assert_int_equal(out.status, DG_ENOENT);
  assert_string_equal(out.err.param, "submissionId");
  got_t g;
  char text[256];
  snprintf(text, sizeof(text),
           "SELECT \"Region\" || ' ' || (lease_until IS NULL) FROM \"Customers\", "
           "\"_dg_submissions\" s WHERE \"Customers\".id = '%s' AND s.id = '%s'",
           id, s.submission_id);
  run_text(&loop, c, text, &g);
  assert_string_equal(g.values[0], "EMEA true");
  dg_store_submission_get_t get = {.model = m, .entity_id = id};
  dg_errctx_t err;
  memset(&g, 0, sizeof(g));
  got_t rows = {0};
  assert_int_equal(dg__pg_submission(c, &get, on_query, &rows, &err), 0);
  wait_for(&loop, &rows);
  assert_int_equal(rows.status, 0);
  assert_string_equal(rows.values[0], s.submission_id);
  assert_string_equal(rows.values[6], "succeeded");
  dg__pg_release(c);
  send_t again = {.s = &s};
  send_all(&loop, pools, 1, &again, 1);
  assert_int_equal(again.status, 0);
  assert_true(json_is_true(json_object_get(again.result, "replayed")));
  assert_true(json_is_true(json_object_get(json_object_get(again.result, "outcome"), "ok")));
  assert_string_equal(json_string_value(json_object_get(again.result, "status")), "succeeded");
  json_decref(again.result);
  json_decref(x.result);
  close_pools(&loop, pools, 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_key_once_across_gateways),
      cmocka_unit_test(test_key_reused_and_failed_checks),
      cmocka_unit_test(test_expired_lease_recovered),
      cmocka_unit_test(test_abandoned_lease_runs_out),
      cmocka_unit_test(test_finish_and_replay),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
