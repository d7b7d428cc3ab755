/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for pg_cancel.c: two stores on one PostgreSQL database, as two
 * gateways of a fleet: a cancel one publishes is heard by both, once open
 * (a store opens once its listener listens), and a malformed notification
 * on the channel is dropped. */
#include "store/internal.h"
#include "store/pg_store_test.h"
#include "store/sqlite_test.h"

#define HASH "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

typedef struct heard {
  int calls;
  char session[DG_STORE_CANCEL_SESSION_LEN + 1];
  char request[DG_STORE_CANCEL_REQUEST_MAX + 1];
  bool whole;
} heard_t;

static void on_heard(const char *session, const char *request, void *data) {
  heard_t *h = data;
  h->calls++;
  snprintf(h->session, sizeof(h->session), "%s", session);
  h->whole = request == NULL;
  snprintf(h->request, sizeof(h->request), "%s", request != NULL ? request : "");
}

/* Runs the loop until both have heard calls cancels; fails after 10 s. */
static void wait_heard(uv_loop_t *loop, const heard_t *a, const heard_t *b, int calls) {
  uv_timer_t t;
  uv_timer_init(loop, &t);
  uv_timer_start(&t, tick, 5, 5);
  for (int i = 0; i < 2000 && (a->calls < calls || b->calls < calls); i++)
    uv_run(loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
  assert_int_equal(a->calls, calls);
  assert_int_equal(b->calls, calls);
}

static dg_store_t *open_store(sq_fixture_t *fx) {
  dg_store_options_t o = {.path = g_uri, .sample_dir = ""};
  dg_store_t *s = NULL;
  char msg[1024];
  if (sq_open(fx, g_st->cat, &o, &s, msg, sizeof(msg)) != 0)
    fail_msg("open failed: %s", msg);
  return s;
}

static void test_published_to_every_store(void **state) {
  (void)state;
  sq_fixture_t fx = {0};
  assert_int_equal(uv_loop_init(&fx.loop), 0);
  dg_store_t *a = open_store(&fx);
  dg_store_t *b = open_store(&fx);
  assert_string_equal(dg_store_driver(a), "postgresql");
  heard_t ha = {0}, hb = {0};
  dg_store_on_cancel(a, on_heard, &ha);
  dg_store_on_cancel(b, on_heard, &hb);

  assert_int_equal(dg_store_publish_cancel(a, HASH, "\"call one\""), 0);
  wait_heard(&fx.loop, &ha, &hb, 1);
  assert_string_equal(hb.session, HASH);
  assert_string_equal(hb.request, "\"call one\"");
  assert_false(hb.whole);
  assert_string_equal(ha.request, "\"call one\"");

  /* Written to the channel by anyone else: dropped. Notifications arrive
   * in commit order, so the good one after it shows it was not passed on. */
  dg__pg_pool_t *pool = pool_new(&fx.loop, g_uri, 1, 0);
  dg__pg_conn_t *c = acquire(&fx.loop, pool);
  got_t g = {0};
  dg_errctx_t err;
  assert_int_equal(
      dg__pg_notify(c, DG__PG_CANCEL_CHANNEL, "c1 not-a-session 7", on_query, &g, &err), 0);
  wait_for(&fx.loop, &g);
  assert_int_equal(g.status, 0);
  dg__pg_release(c);
  assert_int_equal(dg_store_publish_cancel(b, HASH, NULL), 0);
  wait_heard(&fx.loop, &ha, &hb, 2);
  assert_true(ha.whole);
  assert_true(hb.whole);
  assert_string_equal(ha.session, HASH);

  /* Refused before anything is sent. */
  assert_int_equal(dg_store_publish_cancel(a, "0123", "7"), DG_EINVAL);

  pool_drain(&fx.loop, pool);
  sq_close(&fx, a);
  sq_close(&fx, b);
  uv_run(&fx.loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&fx.loop), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_published_to_every_store),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
