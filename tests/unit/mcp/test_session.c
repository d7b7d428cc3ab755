/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for HTTP sessions: created by initialize, required after it,
 * unknown or expired ids, binding to the principal that created them,
 * DELETE, and the server.max_sessions limit; then two servers sharing one
 * session table, as two workers do: a session taken over, DELETE, idle
 * expiry and the lifetime across them, and two instances sharing a key. */
#include "mcp/mcp_http_test.h"

static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";

/* Sessions that must stay alive get an idle timeout no run comes near, so
 * a slow run cannot end them between two requests. */
static int setup_with_idle(void **state, uint64_t idle_ms) {
  ht_t *t = ht_new();
  t->cat->server.session_idle_timeout_ms = idle_ms;
  ht_run(t);
  *state = t;
  return 0;
}

static int setup(void **state) {
  return setup_with_idle(state, 60000);
}

/* One second: requests 600 ms apart keep a session (400 ms to spare on a
 * loaded machine), and 1.5 s without one ends it. */
static int setup_short_idle(void **state) {
  return setup_with_idle(state, 1000);
}

static int teardown(void **state) {
  ht_free(*state);
  return 0;
}

static void test_create_and_use(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  char a[64], b[64];
  hc_initialize(t->port, "2025-06-18", a);
  hc_initialize(t->port, "2025-06-18", b);
  assert_string_not_equal(a, b);
  for (const char *p = a; *p; p++)
    assert_true(*p > 0x20 && *p < 0x7f);
  assert_int_equal(hc_post(t->port, a, ping, &r), 200);
  char echoed[64];
  assert_string_equal(hc_header(&r, "Mcp-Session-Id", echoed, sizeof(echoed)), a);
}

static void test_missing_session(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  assert_int_equal(hc_post(t->port, NULL, ping, &r), 400);
  json_t *body = hc_json(&r);
  assert_non_null(json_object_get(body, "error"));
  json_decref(body);
}

static void test_unknown_session(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  assert_int_equal(hc_post(t->port, "0123456789abcdef0123456789abcdef", ping, &r), 404);
  assert_int_equal(hc_post(t->port, "short", ping, &r), 404);
}

static void test_wrong_principal(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  char sid[64], extra[512];
  hc_initialize(t->port, "2025-06-18", sid);
  snprintf(extra, sizeof(extra), HC_JSON HC_BOB "Mcp-Session-Id: %s\r\n", sid);
  hc_request(t->port, "POST", extra, ping, &r);
  assert_int_equal(r.status, 404);
  snprintf(extra, sizeof(extra), HC_BOB "Mcp-Session-Id: %s\r\n", sid);
  hc_request(t->port, "DELETE", extra, NULL, &r);
  assert_int_equal(r.status, 404);
  /* Still alive for its owner. */
  assert_int_equal(hc_post(t->port, sid, ping, &r), 200);
}

static void test_delete(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  char sid[64], extra[512];
  hc_initialize(t->port, "2025-06-18", sid);
  snprintf(extra, sizeof(extra), HC_ALICE "Mcp-Session-Id: %s\r\n", sid);
  hc_request(t->port, "DELETE", extra, NULL, &r);
  assert_int_equal(r.status, 204);
  assert_int_equal(hc_post(t->port, sid, ping, &r), 404);
  hc_request(t->port, "DELETE", extra, NULL, &r);
  assert_int_equal(r.status, 404);
  hc_request(t->port, "DELETE", HC_ALICE, NULL, &r);
  assert_int_equal(r.status, 400);
}

static void test_expired(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  char sid[64];
  hc_initialize(t->port, "2025-06-18", sid);
  ht_sleep_ms(600);
  assert_int_equal(hc_post(t->port, sid, ping, &r), 200); /* activity restarts the clock */
  ht_sleep_ms(600);
  assert_int_equal(hc_post(t->port, sid, ping, &r), 200); /* 1.2 s after it began */
  ht_sleep_ms(1500);
  assert_int_equal(hc_post(t->port, sid, ping, &r), 404);
}

static void test_limit(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  char sid[3][64];
  for (int i = 0; i < 3; i++)
    hc_initialize(t->port, "2025-06-18", sid[i]);
  static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                             "\"params\":{\"protocolVersion\":\"2025-06-18\"}}";
  assert_int_equal(hc_post(t->port, NULL, init, &r), 503);
  char extra[512];
  snprintf(extra, sizeof(extra), HC_ALICE "Mcp-Session-Id: %s\r\n", sid[0]);
  hc_request(t->port, "DELETE", extra, NULL, &r);
  assert_int_equal(r.status, 204);
  assert_int_equal(hc_post(t->port, NULL, init, &r), 200);
}

static void test_failed_initialize_leaves_no_session(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  static const char bad[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                            "\"params\":{}}";
  for (int i = 0; i < 4; i++) {
    assert_int_equal(hc_post(t->port, NULL, bad, &r), 200);
    char sid[64];
    assert_null(hc_header(&r, "Mcp-Session-Id", sid, sizeof(sid)));
  }
  /* None of them counted against the limit of three. */
  char sid[64];
  hc_initialize(t->port, "2025-06-18", sid);
}

/* ---- Two servers sharing one session table, as two workers do ----------------- */

typedef struct pair {
  ht_t *a, *b;
  dg_mcp_shared_t *shared;
} pair_t;

static pair_t *pair_new(uint64_t idle_ms, uint64_t lifetime_ms) {
  pair_t *p = calloc(1, sizeof(*p));
  p->a = ht_new();
  p->b = ht_new();
  dg_errctx_t err;
  dg_errctx_clear(&err);
  dg_mcp_limits_t limits = dg_tools_mcp_limits(p->a->cat);
  assert_int_equal(dg_mcp_shared_new(&limits, 2, &p->shared, &err), 0);
  ht_t *both[] = {p->a, p->b};
  for (int i = 0; i < 2; i++) {
    both[i]->cat->server.session_idle_timeout_ms = idle_ms;
    if (lifetime_ms > 0)
      both[i]->cat->server.session_max_lifetime_ms = lifetime_ms;
    both[i]->shared = p->shared;
    ht_run(both[i]);
  }
  return p;
}

/* As for one server: an idle timeout no run comes near, unless the test
 * is about the timeout itself. */
static int pair_setup(void **state) {
  *state = pair_new(60000, 0);
  return 0;
}

static int pair_setup_short_idle(void **state) {
  *state = pair_new(1000, 0);
  return 0;
}

static int pair_setup_short_life(void **state) {
  *state = pair_new(60000, 1000);
  return 0;
}

static int pair_teardown(void **state) {
  pair_t *p = *state;
  ht_free(p->a);
  ht_free(p->b);
  dg_mcp_shared_free(p->shared);
  free(p);
  return 0;
}

/* One request with the session id, the token and the extra headers given. */
static int sid_request(int port, const char *method, const char *token_header, const char *sid,
                       const char *more, const char *body, hc_resp_t *r) {
  char extra[1024];
  snprintf(extra, sizeof(extra), "%s%sMcp-Session-Id: %s\r\n%s", body ? HC_JSON : "", token_header,
           sid, more ? more : "");
  hc_request(port, method, extra, body, r);
  return r->status;
}

/* The sessions a server holds, from its /healthz. */
static int sessions_of(int port) {
  static hc_resp_t r;
  int fd = hc_connect(port);
  static const char req[] = "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  hc_send(fd, req, sizeof(req) - 1);
  hc_read_all(fd, &r);
  close(fd);
  assert_int_equal(r.status, 200);
  json_t *v = hc_json(&r);
  int n = (int)json_integer_value(json_object_get(v, "sessions"));
  json_decref(v);
  return n;
}

static bool lists_output_schema(const hc_resp_t *r) {
  return strstr(r->body, "\"outputSchema\"") != NULL;
}

static const char tools_list[] = "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}";

/* A session made by one server is served by the other, at the version the
 * client names, or 2025-03-26 without the header. */
static void test_taken_over(void **state) {
  pair_t *p = *state;
  static hc_resp_t r;
  char sid[64];
  hc_initialize(p->a->port, "2025-06-18", sid);
  assert_int_equal(sessions_of(p->b->port), 0);
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 200);
  assert_int_equal(sessions_of(p->b->port), 1);
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, tools_list, &r), 200);
  assert_false(lists_output_schema(&r)); /* 2025-03-26 has no outputSchema */
  assert_int_equal(sid_request(p->a->port, "POST", HC_ALICE, sid, NULL, tools_list, &r), 200);
  assert_true(lists_output_schema(&r)); /* negotiated at 2025-06-18 */

  hc_initialize(p->a->port, "2025-06-18", sid);
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid,
                               "MCP-Protocol-Version: 2025-06-18\r\n", tools_list, &r),
                   200);
  assert_true(lists_output_schema(&r));
  assert_int_equal(sessions_of(p->b->port), 2);
}

static void test_other_principal_across(void **state) {
  pair_t *p = *state;
  static hc_resp_t r;
  char sid[64];
  hc_initialize(p->a->port, "2025-06-18", sid);
  assert_int_equal(sid_request(p->b->port, "POST", HC_BOB, sid, NULL, ping, &r), 404);
  assert_int_equal(sid_request(p->b->port, "DELETE", HC_BOB, sid, NULL, NULL, &r), 404);
  assert_int_equal(
      sid_request(p->b->port, "GET", HC_BOB, sid, "Accept: text/event-stream\r\n", NULL, &r), 404);
  assert_int_equal(sessions_of(p->b->port), 0);
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 200);
}

/* DELETE on either server ends the session on both, whether or not the
 * other holds it. */
static void test_delete_across(void **state) {
  pair_t *p = *state;
  static hc_resp_t r;
  char sid[64];
  hc_initialize(p->a->port, "2025-06-18", sid);
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 200);
  assert_int_equal(sid_request(p->a->port, "DELETE", HC_ALICE, sid, NULL, NULL, &r), 204);
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 404);
  assert_int_equal(sid_request(p->a->port, "POST", HC_ALICE, sid, NULL, ping, &r), 404);
  assert_int_equal(sid_request(p->b->port, "DELETE", HC_ALICE, sid, NULL, NULL, &r), 404);
  assert_int_equal(sessions_of(p->a->port), 0);
  assert_int_equal(sessions_of(p->b->port), 0);

  /* Deleted where it was never used: the server holding it refuses it too. */
  hc_initialize(p->a->port, "2025-06-18", sid);
  assert_int_equal(sid_request(p->b->port, "DELETE", HC_ALICE, sid, NULL, NULL, &r), 204);
  assert_int_equal(sid_request(p->a->port, "POST", HC_ALICE, sid, NULL, ping, &r), 404);
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 404);
  assert_int_equal(sessions_of(p->a->port), 0);
}

/* A session used on one server is not idle for the other. */
static void test_idle_everywhere(void **state) {
  pair_t *p = *state;
  static hc_resp_t r;
  char sid[64];
  hc_initialize(p->a->port, "2025-06-18", sid);
  for (int i = 0; i < 2; i++) {
    ht_sleep_ms(600);
    assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 200);
  }
  /* 1.2 s after its last use on a, more than the 1 s idle timeout. */
  assert_int_equal(sid_request(p->a->port, "POST", HC_ALICE, sid, NULL, ping, &r), 200);
  ht_sleep_ms(1500);
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 404);
  assert_int_equal(sid_request(p->a->port, "POST", HC_ALICE, sid, NULL, ping, &r), 404);
}

static void test_forged_across(void **state) {
  pair_t *p = *state;
  static hc_resp_t r;
  char sid[64];
  hc_initialize(p->a->port, "2025-06-18", sid);
  sid[10] = sid[10] == 'A' ? 'B' : 'A';
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 404);
  assert_int_equal(sid_request(p->a->port, "POST", HC_ALICE, sid, NULL, ping, &r), 404);
  /* A valid id of another gateway, whose key is its own. */
  dg_mcp_shared_t *other = NULL;
  dg_errctx_t err;
  dg__mcp_sid_t info;
  dg_mcp_limits_t limits = dg_tools_mcp_limits(p->a->cat);
  assert_int_equal(dg_mcp_shared_new(&limits, 1, &other, &err), 0);
  assert_int_equal(dg__mcp_sid_make(other, "alice", sid, &info), 0);
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 404);
  dg_mcp_shared_free(other);
  assert_int_equal(sessions_of(p->b->port), 0);
}

/* Taking a session over counts against maxSessions (3 in these tests). */
static void test_limit_across(void **state) {
  pair_t *p = *state;
  static hc_resp_t r;
  char sid[64], mine[64];
  hc_initialize(p->a->port, "2025-06-18", sid);
  for (int i = 0; i < 3; i++)
    hc_initialize(p->b->port, "2025-06-18", mine);
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 503);
  assert_int_equal(sid_request(p->b->port, "DELETE", HC_ALICE, mine, NULL, NULL, &r), 204);
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 200);
}

/* An id is refused once sessionMaxLifetimeMs (1 s here) old, however
 * busy. */
static void test_lifetime(void **state) {
  pair_t *p = *state;
  static hc_resp_t r;
  char sid[64];
  hc_initialize(p->a->port, "2025-06-18", sid);
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 200);
  for (int i = 0; i < 6; i++) {
    ht_sleep_ms(200);
    sid_request(i % 2 ? p->a->port : p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r);
  }
  assert_int_equal(sid_request(p->a->port, "POST", HC_ALICE, sid, NULL, ping, &r), 404);
  assert_int_equal(sid_request(p->b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 404);
}

/* Two instances configured with one key: each takes over the other's
 * sessions; a DELETE is recorded where it is received. */
static void test_other_instance(void **state) {
  static hc_resp_t r;
  static const char key[] = "a key both instances read from the environment, 48+ bytes";
  ht_t *a = ht_new(), *b = ht_new();
  dg_mcp_shared_t *sa = NULL, *sb = NULL;
  dg_errctx_t err;
  ht_t *both[] = {a, b};
  dg_mcp_shared_t **shared[] = {&sa, &sb};
  for (int i = 0; i < 2; i++) {
    both[i]->cat->server.session_key = (const unsigned char *)key;
    both[i]->cat->server.session_key_len = strlen(key);
    dg_mcp_limits_t limits = dg_tools_mcp_limits(both[i]->cat);
    assert_int_equal(dg_mcp_shared_new(&limits, 1, shared[i], &err), 0);
    both[i]->shared = *shared[i];
    ht_run(both[i]);
  }
  char sid[64];
  hc_initialize(a->port, "2025-06-18", sid);
  assert_int_equal(sid_request(b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 200);
  assert_int_equal(sid_request(b->port, "POST", HC_BOB, sid, NULL, ping, &r), 404);
  assert_int_equal(sid_request(b->port, "DELETE", HC_ALICE, sid, NULL, NULL, &r), 204);
  assert_int_equal(sid_request(b->port, "POST", HC_ALICE, sid, NULL, ping, &r), 404);
  assert_int_equal(sid_request(b->port, "DELETE", HC_ALICE, sid, NULL, NULL, &r), 404);
  /* The other machine was not told: it still serves the session. */
  assert_int_equal(sid_request(a->port, "POST", HC_ALICE, sid, NULL, ping, &r), 200);
  for (int i = 0; i < 2; i++)
    ht_free(both[i]);
  dg_mcp_shared_free(sa);
  dg_mcp_shared_free(sb);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_create_and_use, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_session, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unknown_session, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wrong_principal, setup, teardown),
      cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
      cmocka_unit_test_setup_teardown(test_expired, setup_short_idle, teardown),
      cmocka_unit_test_setup_teardown(test_limit, setup, teardown),
      cmocka_unit_test_setup_teardown(test_failed_initialize_leaves_no_session, setup, teardown),
      cmocka_unit_test_setup_teardown(test_taken_over, pair_setup, pair_teardown),
      cmocka_unit_test_setup_teardown(test_other_principal_across, pair_setup, pair_teardown),
      cmocka_unit_test_setup_teardown(test_delete_across, pair_setup, pair_teardown),
      cmocka_unit_test_setup_teardown(test_idle_everywhere, pair_setup_short_idle, pair_teardown),
      cmocka_unit_test_setup_teardown(test_forged_across, pair_setup, pair_teardown),
      cmocka_unit_test_setup_teardown(test_limit_across, pair_setup, pair_teardown),
      cmocka_unit_test_setup_teardown(test_lifetime, pair_setup_short_life, pair_teardown),
      cmocka_unit_test(test_other_instance),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
