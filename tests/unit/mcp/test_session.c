/* Unit tests for HTTP sessions: created by initialize, required after it,
 * unknown or expired ids, binding to the principal that created them,
 * DELETE, and the server.max_sessions limit. */
#include "mcp/mcp_http_test.h"

static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";

static int setup(void **state) {
  ht_t *t = ht_new();
  t->cat->server.session_idle_timeout_ms = 200;
  ht_run(t);
  *state = t;
  return 0;
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
  ht_sleep_ms(100);
  assert_int_equal(hc_post(t->port, sid, ping, &r), 200); /* activity restarts the clock */
  ht_sleep_ms(120);
  assert_int_equal(hc_post(t->port, sid, ping, &r), 200);
  ht_sleep_ms(400);
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

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_create_and_use, setup, teardown),
      cmocka_unit_test_setup_teardown(test_missing_session, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unknown_session, setup, teardown),
      cmocka_unit_test_setup_teardown(test_wrong_principal, setup, teardown),
      cmocka_unit_test_setup_teardown(test_delete, setup, teardown),
      cmocka_unit_test_setup_teardown(test_expired, setup, teardown),
      cmocka_unit_test_setup_teardown(test_limit, setup, teardown),
      cmocka_unit_test_setup_teardown(test_failed_initialize_leaves_no_session, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
