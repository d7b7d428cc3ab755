/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the JSON-RPC layer: error codes, notifications, batches
 * per protocol version, and the rule that replies leave on a later loop
 * turn than the one that received the message. */
#include "mcp/mcp_test.h"

static void test_parse_error(void **state) {
  mt_env_t *env = *state;
  json_t *r = mt_call(env, "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": ");
  assert_int_equal(mt_error_code(r), -32700);
  assert_true(json_is_null(json_object_get(r, "id")));
  assert_string_equal(mt_error_message(r), "Parse error: unexpected end of input (at byte 38)");
  r = mt_call(env, "not json at all");
  assert_int_equal(mt_error_code(r), -32700);
  assert_string_equal(mt_error_message(r), "Parse error: invalid value (at byte 0)");
  r = mt_call(env, "{\"jsonrpc\": \"2.0\", \"id\": 1, \"method\": \"ping\"} x");
  assert_string_equal(mt_error_message(r),
                      "Parse error: unexpected data after the value (at byte 46)");
}

/* Valid JSON that a message may not hold is answered with the request's
 * id, so that the client is not left waiting. */
static void test_unreadable_values_answered_with_the_id(void **state) {
  mt_env_t *env = *state;
  json_t *r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{"
                           "\"name\":\"get_data_models\",\"arguments\":{\"x\":\"a\\u0000b\"}}}");
  assert_int_equal(mt_error_code(r), -32602);
  assert_int_equal(json_integer_value(json_object_get(r, "id")), 7);
  assert_non_null(strstr(mt_error_message(r), "\\u0000 is not allowed in a string"));
  r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":\"big\",\"method\":\"ping\",\"params\":{\"n\":"
                   "18446744073709551616}}");
  assert_int_equal(mt_error_code(r), -32602);
  assert_string_equal(json_string_value(json_object_get(r, "id")), "big");
  r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"method\":\"tools/list\"}");
  assert_int_equal(mt_error_code(r), -32600);
  assert_int_equal(json_integer_value(json_object_get(r, "id")), 8);
  assert_non_null(strstr(mt_error_message(r), "the key \"method\" is repeated"));
  r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":1,\"id\":2,\"method\":\"ping\"}");
  assert_int_equal(mt_error_code(r), -32600);
  assert_true(json_is_null(json_object_get(r, "id")));
  assert_non_null(strstr(mt_error_message(r), "the key \"id\" is repeated"));
}

static void test_invalid_requests(void **state) {
  mt_env_t *env = *state;
  static const char *const bad[] = {
      "42",
      "\"text\"",
      "{\"id\":1,\"method\":\"ping\"}",
      "{\"jsonrpc\":\"1.0\",\"id\":1,\"method\":\"ping\"}",
      "{\"jsonrpc\":\"2.0\",\"id\":1}",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":7}",
      "{\"jsonrpc\":\"2.0\",\"id\":{\"a\":1},\"method\":\"ping\"}",
      "{\"jsonrpc\":\"2.0\",\"id\":1.5,\"method\":\"ping\"}",
      "{\"jsonrpc\":\"2.0\",\"id\":null,\"method\":\"ping\"}",
      "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"params\":3}",
      "[]",
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++) {
    json_t *r = mt_call(env, bad[i]);
    if (mt_error_code(r) != -32600)
      fail_msg("message %zu (%s) got %d", i, bad[i], mt_error_code(r));
  }
}

static void test_id_echoed(void **state) {
  mt_env_t *env = *state;
  json_t *r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":\"abc\",\"method\":\"ping\"}");
  assert_string_equal(json_string_value(json_object_get(r, "id")), "abc");
  assert_true(json_is_object(json_object_get(r, "result")));
  r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":77,\"method\":\"ping\"}");
  assert_int_equal(json_integer_value(json_object_get(r, "id")), 77);
  /* A bad jsonrpc still echoes a valid id. */
  r = mt_call(env, "{\"jsonrpc\":\"3\",\"id\":5,\"method\":\"ping\"}");
  assert_int_equal(json_integer_value(json_object_get(r, "id")), 5);
}

static void test_method_not_found(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-06-18");
  static const char *const methods[] = {"resources/list", "prompts/list", "logging/setLevel",
                                        "no/such"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(methods); i++) {
    char text[128];
    snprintf(text, sizeof(text), "{\"jsonrpc\":\"2.0\",\"id\":%zu,\"method\":\"%s\"}", i,
             methods[i]);
    assert_int_equal(mt_error_code(mt_call(env, text)), -32601);
  }
}

static void test_notifications_get_no_response(void **state) {
  mt_env_t *env = *state;
  json_t *r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
  assert_true(json_is_null(r));
  r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"method\":\"no/such/notification\"}");
  assert_true(json_is_null(r));
  /* A response from the client is accepted silently. */
  r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":9,\"result\":{}}");
  assert_true(json_is_null(r));
}

static void test_batch_at_2025_03_26(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-03-26");
  json_t *r = mt_call(env, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                           "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"},"
                           "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
                           "\"params\":{\"name\":\"echo\",\"arguments\":{\"n\":3}}},"
                           "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"nope\"},"
                           "5]");
  assert_true(json_is_array(r));
  assert_int_equal(json_array_size(r), 4); /* the notification has no response */
  assert_int_equal(json_integer_value(json_object_get(json_array_get(r, 0), "id")), 1);
  json_t *call = json_object_get(json_array_get(r, 1), "result");
  assert_non_null(json_object_get(call, "content"));
  assert_null(json_object_get(call, "structuredContent")); /* not at 2025-03-26 */
  assert_int_equal(mt_error_code(json_array_get(r, 2)), -32601);
  assert_int_equal(mt_error_code(json_array_get(r, 3)), -32600);
  /* Only notifications: nothing to send. */
  r = mt_call(env, "[{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}]");
  assert_true(json_is_null(r));
}

static void test_batch_refused_after_2025_03_26(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-06-18");
  json_t *r = mt_call(env, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]");
  assert_int_equal(mt_error_code(r), -32600);
  assert_non_null(strstr(mt_error_message(r), "2025-06-18"));
}

static void test_batch_refused_before_initialize(void **state) {
  mt_env_t *env = *state;
  json_t *r = mt_call(env, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                           "\"params\":{\"protocolVersion\":\"2025-03-26\"}}]");
  assert_int_equal(mt_error_code(r), -32600);
  assert_null(env->session->version);
}

/* A tool that ends its call inside run() still answers on a later turn,
 * and so does every immediate error. */
static void test_replies_are_deferred(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-11-25");
  mt_post(env, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
               "\"params\":{\"name\":\"echo\"}}");
  mt_post(env, "garbage");
  size_t before = json_array_size(mt_sink.replies);
  assert_int_equal(before, 1); /* only initialize's so far */
  uv_run(&env->loop, UV_RUN_NOWAIT);
  assert_int_equal(json_array_size(mt_sink.replies), 3);
  assert_int_equal(mt_sink.early, 0);
}

static void test_message_metrics(void **state) {
  mt_env_t *env = *state;
  dg_metrics_reset();
  mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
  mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"made/up/method\"}");
  dg_buf_t out;
  dg_buf_init(&out, 1 << 20);
  assert_int_equal(dg_metrics_render(&out), 0);
  assert_non_null(strstr(out.data, "dg_mcp_messages_total{transport=\"test\",method=\"ping\"} 1"));
  assert_non_null(strstr(out.data, "method=\"other\"} 1"));
  assert_null(strstr(out.data, "made/up"));
  dg_buf_free(&out);
}

/* Sends text on the session as a caller that may not use the server. */
static json_t *refused_call(mt_env_t *env, const char *text) {
  size_t before = json_array_size(mt_sink.replies);
  dg__mcp_exchange_t *ex = dg__mcp_exchange_new(env->server);
  assert_non_null(ex);
  dg__mcp_exchange_bind(ex, env->session, &mt_transport, NULL);
  mt_sink.dispatching = true;
  dg__mcp_exchange_refuse_text(ex, -32001, "the token is no longer valid", text, strlen(text));
  mt_sink.dispatching = false;
  mt_wait_replies(env, before + 1);
  assert_int_equal(json_array_size(mt_sink.replies), before + 1);
  return json_array_get(mt_sink.replies, before);
}

/* A refused request is answered with its own id, so that a client waiting
 * for it hears the refusal instead of timing out; notifications get
 * nothing and a malformed message still gets its own error. */
static void test_refusal_carries_the_id(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-03-26");
  json_t *r = refused_call(env, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/list\"}");
  assert_int_equal(mt_error_code(r), -32001);
  assert_int_equal(json_integer_value(json_object_get(r, "id")), 7);
  assert_string_equal(mt_error_message(r), "the token is no longer valid");
  r = refused_call(env, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
  assert_true(json_is_null(r));
  r = refused_call(env, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                        "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\"},"
                        "{\"jsonrpc\":\"2.0\",\"id\":\"b\",\"method\":\"tools/call\"}]");
  assert_int_equal(json_array_size(r), 2);
  assert_int_equal(json_integer_value(json_object_get(json_array_get(r, 0), "id")), 1);
  assert_string_equal(json_string_value(json_object_get(json_array_get(r, 1), "id")), "b");
  assert_int_equal(mt_error_code(json_array_get(r, 1)), -32001);
  assert_int_equal(mt_error_code(refused_call(env, "{oops")), -32700);
}

/* A message cut inside a UTF-8 sequence still becomes a JSON string: the
 * partial sequence turns into one U+FFFD, each invalid byte into one, and
 * the rest is kept. */
static void test_text_repairs_cut_utf8(void **state) {
  json_t *s = dg__mcp_text("ok \xe2\x82\xac");
  assert_string_equal(json_string_value(s), "ok \xe2\x82\xac");
  json_decref(s);
  s = dg__mcp_text("cut \xe2\x82");
  assert_string_equal(json_string_value(s), "cut \xef\xbf\xbd");
  json_decref(s);
  s = dg__mcp_text("a\xe2\x82"
                   "b\xed\xa0\x80"
                   "c");
  assert_string_equal(json_string_value(s), "a\xef\xbf\xbd"
                                            "b\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd"
                                            "c");
  json_decref(s);
  s = dg__mcp_text("\xff\xc0\xafx");
  assert_string_equal(json_string_value(s), "\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdx");
  json_decref(s);
}

/* An unknown method whose name the error message cuts mid-character is
 * still answered (it used to get no answer at all). */
static void test_error_for_long_multibyte_method(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-06-18");
  dg_buf_t text;
  dg_buf_init(&text, 1024);
  dg_buf_append_str(&text, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"");
  for (int i = 0; i < 100; i++)
    dg_buf_append_str(&text, "\xe2\x82\xac");
  dg_buf_append_str(&text, "\"}");
  json_t *r = mt_call(env, text.data);
  dg_buf_free(&text);
  assert_int_equal(mt_error_code(r), -32601);
  assert_int_equal(json_integer_value(json_object_get(r, "id")), 8);
  assert_non_null(strstr(mt_error_message(r), "\xef\xbf\xbd"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_parse_error, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_invalid_requests, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_unreadable_values_answered_with_the_id, mt_setup,
                                      mt_teardown),
      cmocka_unit_test_setup_teardown(test_id_echoed, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_method_not_found, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_notifications_get_no_response, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_batch_at_2025_03_26, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_batch_refused_after_2025_03_26, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_batch_refused_before_initialize, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_replies_are_deferred, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_message_metrics, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_refusal_carries_the_id, mt_setup, mt_teardown),
      cmocka_unit_test(test_text_repairs_cut_utf8),
      cmocka_unit_test_setup_teardown(test_error_for_long_multibyte_method, mt_setup, mt_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
