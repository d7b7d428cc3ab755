/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for relay.c: two instances sharing a session key, joined by a
 * relay that hands every published cancel to both (as the store's NOTIFY
 * does): a notifications/cancelled or a DELETE sent to one stops the call
 * the other runs; a call running where the cancel arrives is stopped there
 * and nothing is relayed; sessions travel as the SHA-256 of their id; ids
 * too long or of the wrong type are not relayed; relayed cancels that
 * match nothing, or are not the JSON text of an id, change nothing; the
 * relay budget refills at its rate up to its burst, and a flood of cancels
 * from one session relays no more than the session's budget; two workers
 * sharing one map pass a cancel through its ring. */
#include "mcp/mcp_http_test.h"

static const char key[] = "a key both instances read from the environment, 48+ bytes";
static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
static const char tools_call_slow[] =
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\"}}";

/* ---- The relay: what was published last, handed to every instance ------------- */

static uv_mutex_t g_lock;
static char g_session[128];
static char g_request[512];
static bool g_whole;
static _Atomic int g_published; /* cancels relayed by the servers */
static _Atomic int g_delivered; /* cancels handed to a server */
static ht_t *g_both[2];

static void relay(const char *session, const char *request, void *data) {
  (void)data;
  uv_mutex_lock(&g_lock);
  snprintf(g_session, sizeof(g_session), "%s", session);
  snprintf(g_request, sizeof(g_request), "%s", request != NULL ? request : "");
  g_whole = request == NULL;
  uv_mutex_unlock(&g_lock);
  g_published++;
  for (int i = 0; i < 2; i++)
    uv_async_send(&g_both[i]->inbox);
}

static void on_inbox(uv_async_t *a) {
  ht_t *t = a->data;
  char session[128], request[512];
  uv_mutex_lock(&g_lock);
  snprintf(session, sizeof(session), "%s", g_session);
  snprintf(request, sizeof(request), "%s", g_request);
  bool whole = g_whole;
  uv_mutex_unlock(&g_lock);
  dg_mcp_server_cancel_relayed(t->mcp, session, whole ? NULL : request);
  g_delivered++;
}

/* Hands a cancel to one instance as if another gateway had published it. */
static void deliver(ht_t *t, const char *session, const char *request) {
  int before = g_delivered;
  uv_mutex_lock(&g_lock);
  snprintf(g_session, sizeof(g_session), "%s", session);
  snprintf(g_request, sizeof(g_request), "%s", request != NULL ? request : "");
  g_whole = request == NULL;
  uv_mutex_unlock(&g_lock);
  uv_async_send(&t->inbox);
  assert_true(ht_wait_for(&g_delivered, before + 1));
}

static void hash_of(const char *sid, char out[65]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char d[32];
  dg_sha256(sid, strlen(sid), d);
  for (int i = 0; i < 32; i++) {
    out[2 * i] = hex[d[i] >> 4];
    out[2 * i + 1] = hex[d[i] & 15];
  }
  out[64] = '\0';
}

typedef struct fleet {
  ht_t *a, *b;
  dg_mcp_shared_t *sa, *sb;
} fleet_t;

/* Both gateways sign session ids with one key, as a fleet does. */
static void share_sessions(ht_t *t) {
  t->cat->server.session_key = (const unsigned char *)key;
  t->cat->server.session_key_len = strlen(key);
  t->cat->server.session_idle_timeout_ms = 60000;
}

static int setup(void **state) {
  fleet_t *f = calloc(1, sizeof(*f));
  assert_int_equal(uv_mutex_init(&g_lock), 0);
  g_published = g_delivered = 0;
  f->a = ht_new();
  f->b = ht_new();
  g_both[0] = f->a;
  g_both[1] = f->b;
  dg_mcp_shared_t **shared[] = {&f->sa, &f->sb};
  dg_errctx_t err;
  for (int i = 0; i < 2; i++) {
    ht_t *t = g_both[i];
    share_sessions(t);
    dg_mcp_limits_t limits = dg_tools_mcp_limits(t->cat);
    assert_int_equal(dg_mcp_shared_new(&limits, 1, shared[i], &err), 0);
    t->shared = *shared[i];
    t->relay = relay;
    t->inbox_cb = on_inbox;
  }
  /* Both run only once both exist: the relay reaches both inboxes. */
  ht_run(f->a);
  ht_run(f->b);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fleet_t *f = *state;
  ht_free(f->a);
  ht_free(f->b);
  dg_mcp_shared_free(f->sa);
  dg_mcp_shared_free(f->sb);
  uv_mutex_destroy(&g_lock);
  free(f);
  return 0;
}

/* Starts the slow call (id 2) on t over a connection of its own, JSON
 * only; returns the connection once the call runs. */
static int start_slow(ht_t *t, const char *sid) {
  int before = mt_slow_runs;
  int fd = hc_connect(t->port);
  char req[1024];
  snprintf(req, sizeof(req),
           "POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
           "Content-Type: application/json\r\nAccept: application/json\r\n" HC_ALICE
           "Mcp-Session-Id: %s\r\nContent-Length: %zu\r\n\r\n%s",
           sid, strlen(tools_call_slow), tools_call_slow);
  hc_send(fd, req, strlen(req));
  assert_true(ht_wait_for(&mt_slow_runs, before + 1));
  return fd;
}

static int sid_request(int port, const char *method, const char *sid, const char *body,
                       hc_resp_t *r) {
  char extra[512];
  snprintf(extra, sizeof(extra), "%s" HC_ALICE "Mcp-Session-Id: %s\r\n", body ? HC_JSON : "", sid);
  hc_request(port, method, extra, body, r);
  return r->status;
}

static void test_cancel_sent_to_the_other(void **state) {
  fleet_t *f = *state;
  static hc_resp_t r, note;
  char sid[64], hash[65];
  hc_initialize(f->a->port, "2025-06-18", sid);
  hash_of(sid, hash);
  int fd = start_slow(f->a, sid);
  assert_int_equal(hc_post(f->b->port, sid,
                           "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                           "\"params\":{\"requestId\":2}}",
                           &note),
                   202);
  assert_true(ht_wait_for(&mt_cancels, 1));
  assert_int_equal(g_published, 1);
  assert_string_equal(g_session, hash); /* the hash, never the id */
  assert_string_equal(g_request, "2");
  assert_false(g_whole);
  /* The call on A ends as a cancelled one, as after a local cancel. */
  hc_read_all(fd, &r);
  close(fd);
  json_t *reply = hc_json(&r);
  assert_int_equal(mt_error_code(reply), -32800);
  json_decref(reply);
  /* The session goes on on both. */
  assert_int_equal(sid_request(f->a->port, "POST", sid, ping, &r), 200);
  assert_int_equal(sid_request(f->b->port, "POST", sid, ping, &r), 200);
}

static void test_local_cancel_not_relayed(void **state) {
  fleet_t *f = *state;
  static hc_resp_t r, note;
  char sid[64];
  hc_initialize(f->a->port, "2025-06-18", sid);
  int fd = start_slow(f->a, sid);
  assert_int_equal(hc_post(f->a->port, sid,
                           "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                           "\"params\":{\"requestId\":2}}",
                           &note),
                   202);
  assert_true(ht_wait_for(&mt_cancels, 1));
  hc_read_all(fd, &r);
  close(fd);
  assert_int_equal(g_published, 0);
}

static void test_delete_sent_to_the_other(void **state) {
  fleet_t *f = *state;
  static hc_resp_t r;
  char sid[64], hash[65];
  hc_initialize(f->a->port, "2025-06-18", sid);
  hash_of(sid, hash);
  int fd = start_slow(f->a, sid);
  assert_int_equal(sid_request(f->b->port, "DELETE", sid, NULL, &r), 204);
  assert_true(ht_wait_for(&mt_cancels, 1));
  assert_int_equal(g_published, 1);
  assert_string_equal(g_session, hash);
  assert_true(g_whole);
  hc_read_all(fd, &r);
  close(fd);
  /* A ended it too: without the relay it would still serve it. */
  assert_true(ht_wait_for(&g_delivered, 2));
  assert_int_equal(sid_request(f->a->port, "POST", sid, ping, &r), 404);
  assert_int_equal(sid_request(f->b->port, "POST", sid, ping, &r), 404);
}

static void test_ids_not_relayed(void **state) {
  fleet_t *f = *state;
  static hc_resp_t note;
  char sid[64], body[1024], id[DG_MCP_RELAY_REQUEST_MAX + 8];
  hc_initialize(f->a->port, "2025-06-18", sid);
  /* The longest id that is relayed: its JSON text with the quotes. */
  memset(id, 'x', DG_MCP_RELAY_REQUEST_MAX - 2);
  id[DG_MCP_RELAY_REQUEST_MAX - 2] = '\0';
  snprintf(body, sizeof(body),
           "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
           "\"params\":{\"requestId\":\"%s\"}}",
           id);
  assert_int_equal(hc_post(f->b->port, sid, body, &note), 202);
  assert_int_equal(g_published, 1);
  assert_int_equal(strlen(g_request), DG_MCP_RELAY_REQUEST_MAX);
  /* One byte longer, an object, null: not relayed. */
  id[DG_MCP_RELAY_REQUEST_MAX - 2] = 'x';
  id[DG_MCP_RELAY_REQUEST_MAX - 1] = '\0';
  snprintf(body, sizeof(body),
           "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
           "\"params\":{\"requestId\":\"%s\"}}",
           id);
  assert_int_equal(hc_post(f->b->port, sid, body, &note), 202);
  const char *others[] = {"{\"a\":1}", "null", "1.5", "[2]"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(others); i++) {
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
             "\"params\":{\"requestId\":%s}}",
             others[i]);
    assert_int_equal(hc_post(f->b->port, sid, body, &note), 202);
  }
  assert_int_equal(g_published, 1);
  /* Non-ASCII text is relayed escaped, as ASCII. */
  assert_int_equal(hc_post(f->b->port, sid,
                           "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                           "\"params\":{\"requestId\":\"caf\xc3\xa9\"}}",
                           &note),
                   202);
  assert_int_equal(g_published, 2);
  assert_string_equal(g_request, "\"caf\\u00E9\"");
}

static void test_relayed_that_match_nothing(void **state) {
  fleet_t *f = *state;
  static hc_resp_t r;
  char sid[64], hash[65];
  hc_initialize(f->a->port, "2025-06-18", sid);
  hash_of(sid, hash);
  int fd = start_slow(f->a, sid);
  const char *requests[] = {"3", "\"2\"", "2.0", "[2]", "{", "", "null"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(requests); i++)
    deliver(f->a, hash, requests[i]);
  char other[65];
  hash_of("another session id", other);
  deliver(f->a, other, "2");
  deliver(f->a, other, NULL);
  assert_int_equal(mt_cancels, 0);
  assert_int_equal(sid_request(f->b->port, "POST", sid, ping, &r), 200);
  /* The matching one stops the call. */
  deliver(f->a, hash, "2");
  assert_true(ht_wait_for(&mt_cancels, 1));
  hc_read_all(fd, &r);
  close(fd);
  assert_int_equal(g_published, 0);
}

/* ---- Two workers of one machine, whose store cannot publish ----------------- */

/* The owner's relay for a store that cannot publish: the shared ring. */
static void relay_to_workers(const char *session, const char *request, void *data) {
  ht_t *t = data;
  g_published++;
  dg_mcp_server_share_cancel(t->mcp, session, request);
}

/* Torn down by teardown: f->sb stays NULL, which dg_mcp_shared_free takes. */
static int setup_workers(void **state) {
  fleet_t *f = calloc(1, sizeof(*f));
  assert_int_equal(uv_mutex_init(&g_lock), 0);
  g_published = g_delivered = 0;
  f->a = ht_new();
  f->b = ht_new();
  ht_t *both[] = {f->a, f->b};
  dg_errctx_t err;
  for (int i = 0; i < 2; i++) {
    ht_t *t = both[i];
    share_sessions(t);
    if (i == 0) {
      dg_mcp_limits_t limits = dg_tools_mcp_limits(t->cat);
      assert_int_equal(dg_mcp_shared_new(&limits, 2, &f->sa, &err), 0);
    }
    t->shared = f->sa; /* one map, as forked workers have */
    t->relay = relay_to_workers;
    t->relay_data = t;
  }
  ht_run(f->a);
  ht_run(f->b);
  *state = f;
  return 0;
}

/* A notifications/cancelled that reaches the other worker stops the call
 * through the shared ring, which the running worker reads on its timer. */
static void test_cancel_through_the_workers_ring(void **state) {
  fleet_t *f = *state;
  static hc_resp_t r, note;
  char sid[64];
  hc_initialize(f->a->port, "2025-06-18", sid);
  int fd = start_slow(f->a, sid);
  assert_int_equal(hc_post(f->b->port, sid,
                           "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                           "\"params\":{\"requestId\":2}}",
                           &note),
                   202);
  assert_true(ht_wait_for(&mt_cancels, 1));
  assert_int_equal(g_published, 1);
  hc_read_all(fd, &r);
  close(fd);
  json_t *reply = hc_json(&r);
  assert_int_equal(mt_error_code(reply), -32800);
  json_decref(reply);
  assert_int_equal(sid_request(f->a->port, "POST", sid, ping, &r), 200);
}

static void test_budget(void **state) {
  (void)state;
  dg__mcp_budget_t b = {0};
  uint64_t t = 5000;
  /* All zero is full: burst takes, then none. */
  for (int i = 0; i < 3; i++)
    assert_true(dg__mcp_budget_take(&b, 3, 2, t));
  assert_false(dg__mcp_budget_take(&b, 3, 2, t));
  /* 2 a second: nothing after 499 ms, one at 500. */
  assert_false(dg__mcp_budget_take(&b, 3, 2, t + 499));
  assert_true(dg__mcp_budget_take(&b, 3, 2, t + 500));
  assert_false(dg__mcp_budget_take(&b, 3, 2, t + 500));
  /* A clock that goes back refills nothing. */
  assert_false(dg__mcp_budget_take(&b, 3, 2, t));
  /* A long pause refills to the burst, not beyond. */
  t += 3600 * 1000;
  for (int i = 0; i < 3; i++)
    assert_true(dg__mcp_budget_take(&b, 3, 2, t));
  assert_false(dg__mcp_budget_take(&b, 3, 2, t));
  /* The furthest time does not overflow the refill. */
  assert_true(dg__mcp_budget_take(&b, 3, UINT32_MAX, UINT64_MAX));
}

/* A session that sends many cancels for calls no one runs relays its
 * burst and what its rate refilled meanwhile; another session still has
 * its own. */
static void test_flood_bounded(void **state) {
  fleet_t *f = *state;
  static hc_resp_t note;
  char sid[64], body[256];
  enum { FLOOD = 4 * DG__MCP_RELAY_SESSION_BURST };
  hc_initialize(f->a->port, "2025-06-18", sid);
  uint64_t start = dg_now_ms();
  for (int i = 0; i < FLOOD; i++) {
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
             "\"params\":{\"requestId\":%d}}",
             100 + i);
    assert_int_equal(hc_post(f->b->port, sid, body, &note), 202);
  }
  uint64_t seconds = (dg_now_ms() - start) / 1000 + 1;
  int published = g_published;
  assert_true(published >= DG__MCP_RELAY_SESSION_BURST);
  assert_true((uint64_t)published <=
              DG__MCP_RELAY_SESSION_BURST + seconds * DG__MCP_RELAY_SESSION_PER_SECOND);
  char other[64];
  hc_initialize(f->a->port, "2025-06-18", other);
  assert_int_equal(hc_post(f->b->port, other,
                           "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                           "\"params\":{\"requestId\":1}}",
                           &note),
                   202);
  assert_int_equal(g_published, published + 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_budget),
      cmocka_unit_test_setup_teardown(test_flood_bounded, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_sent_to_the_other, setup, teardown),
      cmocka_unit_test_setup_teardown(test_local_cancel_not_relayed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_delete_sent_to_the_other, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancel_through_the_workers_ring, setup_workers,
                                      teardown),
      cmocka_unit_test_setup_teardown(test_ids_not_relayed, setup, teardown),
      cmocka_unit_test_setup_teardown(test_relayed_that_match_nothing, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
