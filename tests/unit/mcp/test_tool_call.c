/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for tools/call: results per protocol version, tool errors,
 * unknown tools, schema validation, cancellation, timeouts, progress, the
 * result size backstop, the in-flight limit, metrics and the log line. */
#include <fcntl.h>

#include "mcp/mcp_test.h"

static json_t *call_tool(mt_env_t *env, const char *name, const char *args) {
  char text[512];
  snprintf(text, sizeof(text),
           "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\""
           "%s%s}}",
           name, args ? ",\"arguments\":" : "", args ? args : "");
  return mt_call(env, text);
}

static const char *first_text(const json_t *result) {
  json_t *item = json_array_get(json_object_get(result, "content"), 0);
  assert_string_equal(json_string_value(json_object_get(item, "type")), "text");
  return json_string_value(json_object_get(item, "text"));
}

static bool metrics_contain(const char *needle) {
  dg_buf_t out;
  dg_buf_init(&out, 1 << 20);
  assert_int_equal(dg_metrics_render(&out), 0);
  bool found = strstr(out.data ? out.data : "", needle) != NULL;
  dg_buf_free(&out);
  return found;
}

static void test_success_2025_06_18(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-06-18");
  json_t *r = call_tool(env, "echo", "{\"n\":4}");
  assert_int_equal(json_integer_value(json_object_get(r, "id")), 7);
  json_t *result = json_object_get(r, "result");
  assert_null(json_object_get(result, "isError"));
  json_t *structured = json_object_get(result, "structuredContent");
  json_t *echo = json_object_get(structured, "echo");
  assert_int_equal(json_integer_value(json_object_get(echo, "n")), 4);
  /* The schema's default was filled in. */
  assert_string_equal(json_string_value(json_object_get(echo, "text")), "hi");
  /* The text item is the same JSON, compact. */
  char *compact = json_dumps(structured, JSON_COMPACT | JSON_PRESERVE_ORDER);
  assert_string_equal(first_text(result), compact);
  free(compact);
}

static void test_success_2025_03_26_has_text_only(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-03-26");
  json_t *result = json_object_get(call_tool(env, "echo", NULL), "result");
  assert_null(json_object_get(result, "structuredContent"));
  json_t *parsed = json_loads(first_text(result), 0, NULL);
  assert_non_null(parsed);
  assert_string_equal(json_string_value(json_object_get(json_object_get(parsed, "echo"), "text")),
                      "hi");
  json_decref(parsed);
}

static void test_tool_error(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-11-25");
  json_t *result = json_object_get(call_tool(env, "fail", "{}"), "result");
  assert_true(json_is_true(json_object_get(result, "isError")));
  assert_string_equal(first_text(result), "parameter 'x' was 7; allowed: 1 to 5");
  assert_null(json_object_get(result, "structuredContent"));
}

static void test_unknown_tool(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-11-25");
  json_t *r = call_tool(env, "nope", "{}");
  assert_int_equal(mt_error_code(r), -32602);
  const char *msg = mt_error_message(r);
  assert_non_null(strstr(msg, "Unknown tool: nope"));
  assert_non_null(strstr(msg, "echo, slow, progress, big, fail"));
  r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"tools/call\",\"params\":{}}");
  assert_int_equal(mt_error_code(r), -32602);
}

static void test_validation_failure(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-11-25");
  json_t *result = json_object_get(call_tool(env, "echo", "{\"n\":50}"), "result");
  assert_true(json_is_true(json_object_get(result, "isError")));
  const char *text = first_text(result);
  assert_non_null(strstr(text, "n"));
  assert_non_null(strstr(text, "50"));
  result = json_object_get(call_tool(env, "echo", "{\"zzz\":1}"), "result");
  assert_true(json_is_true(json_object_get(result, "isError")));
  assert_non_null(strstr(first_text(result), "zzz"));
  result = json_object_get(call_tool(env, "echo", "[1]"), "result");
  assert_true(json_is_true(json_object_get(result, "isError")));
}

/* The call series are found once per tool, transport and outcome and
 * then counted through; a reset of the metrics starts them again. */
static void test_call_metrics(void **state) {
  mt_env_t *env = *state;
  dg_metrics_reset();
  mt_initialize(env, "2025-11-25");
  for (int i = 0; i < 3; i++)
    call_tool(env, "echo", "{\"n\":1}");
  call_tool(env, "echo", "{\"n\":50}");
  assert_true(
      metrics_contain("dg_tool_calls_total{tool=\"echo\",transport=\"test\",outcome=\"ok\"} 3"));
  assert_true(
      metrics_contain("dg_tool_calls_total{tool=\"echo\",transport=\"test\",outcome=\"error\"} 1"));
  assert_true(
      metrics_contain("dg_tool_call_duration_seconds_count{tool=\"echo\",transport=\"test\"} 4"));
  dg_metrics_reset();
  call_tool(env, "echo", "{\"n\":1}");
  assert_true(
      metrics_contain("dg_tool_calls_total{tool=\"echo\",transport=\"test\",outcome=\"ok\"} 1"));
  assert_true(
      metrics_contain("dg_tool_call_duration_seconds_count{tool=\"echo\",transport=\"test\"} 1"));
}

static void test_cancellation(void **state) {
  mt_env_t *env = *state;
  dg_metrics_reset();
  mt_initialize(env, "2025-11-25");
  mt_post(env, "{\"jsonrpc\":\"2.0\",\"id\":\"s1\",\"method\":\"tools/call\","
               "\"params\":{\"name\":\"slow\"}}");
  for (int i = 0; i < 3; i++)
    uv_run(&env->loop, UV_RUN_NOWAIT);
  assert_int_equal(json_array_size(mt_sink.replies), 1); /* initialize only */
  assert_int_equal(dg_mcp_server_inflight(env->server), 1);
  /* Another id cancels nothing. */
  mt_call(env, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
               "\"params\":{\"requestId\":\"other\"}}");
  assert_int_equal(mt_cancels, 0);
  mt_post(env, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
               "\"params\":{\"requestId\":\"s1\",\"reason\":\"user\"}}");
  mt_wait_replies(env, 4);
  assert_int_equal(mt_cancels, 1);
  assert_int_equal(dg_mcp_server_inflight(env->server), 0);
  /* Both the notification and the canceled call send nothing. */
  assert_true(json_is_null(json_array_get(mt_sink.replies, 2)));
  assert_true(json_is_null(json_array_get(mt_sink.replies, 3)));
  assert_true(metrics_contain(
      "dg_tool_calls_total{tool=\"slow\",transport=\"test\",outcome=\"canceled\"} 1"));
}

static void test_timeout(void **state) {
  mt_env_t *env = *state;
  dg_metrics_reset();
  env->server->limits.tool_timeout_ms = 30;
  mt_initialize(env, "2025-11-25");
  uint64_t start = dg_now_ms();
  json_t *result = json_object_get(call_tool(env, "slow", "{}"), "result");
  assert_true(dg_now_ms() - start >= 25);
  assert_true(json_is_true(json_object_get(result, "isError")));
  assert_non_null(strstr(first_text(result), "timed out after 30 ms"));
  assert_int_equal(mt_cancels, 1);
  assert_int_equal(dg_mcp_server_inflight(env->server), 0);
  assert_true(metrics_contain(
      "dg_tool_calls_total{tool=\"slow\",transport=\"test\",outcome=\"timeout\"} 1"));
}

static void test_progress(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-11-25");
  json_t *r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
                           "{\"name\":\"progress\",\"_meta\":{\"progressToken\":\"tok\"}}}");
  json_t *structured = json_object_get(json_object_get(r, "result"), "structuredContent");
  assert_true(json_is_true(json_object_get(structured, "streamed")));
  assert_int_equal(json_array_size(mt_sink.notes), 2);
  json_t *n0 = json_array_get(mt_sink.notes, 0);
  assert_string_equal(json_string_value(json_object_get(n0, "method")), "notifications/progress");
  assert_null(json_object_get(n0, "id"));
  json_t *p0 = json_object_get(n0, "params");
  assert_string_equal(json_string_value(json_object_get(p0, "progressToken")), "tok");
  assert_true(json_number_value(json_object_get(p0, "progress")) == 1.0);
  assert_true(json_number_value(json_object_get(p0, "total")) == 3.0);
  assert_string_equal(json_string_value(json_object_get(p0, "message")), "one");
  json_t *p1 = json_object_get(json_array_get(mt_sink.notes, 1), "params");
  assert_null(json_object_get(p1, "total"));
  assert_null(json_object_get(p1, "message"));
}

static void test_no_progress_without_token(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-11-25");
  json_t *r = call_tool(env, "progress", "{}");
  json_t *structured = json_object_get(json_object_get(r, "result"), "structuredContent");
  assert_true(json_is_false(json_object_get(structured, "streamed")));
  assert_int_equal(json_array_size(mt_sink.notes), 0);
}

static void test_progress_with_meta(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-11-25");
  json_t *r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":"
                           "{\"name\":\"progress\",\"arguments\":{\"meta\":true},"
                           "\"_meta\":{\"progressToken\":9}}}");
  json_t *structured = json_object_get(json_object_get(r, "result"), "structuredContent");
  assert_string_equal(json_string_value(json_object_get(structured, "rc")), "ok");
  assert_int_equal(json_array_size(mt_sink.notes), 1);
  json_t *p = json_object_get(json_array_get(mt_sink.notes, 0), "params");
  assert_int_equal(json_integer_value(json_object_get(p, "progressToken")), 9);
  assert_true(json_number_value(json_object_get(p, "progress")) == 50.0);
  assert_null(json_object_get(p, "total"));
  assert_string_equal(json_string_value(json_object_get(p, "message")), "chunk");
  json_t *meta = json_object_get(p, "_meta");
  assert_int_equal(json_integer_value(json_object_get(meta, "offset")), 40);
}

static void test_progress_with_meta_needs_a_token(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-11-25");
  json_t *r = call_tool(env, "progress", "{\"meta\":true}");
  json_t *structured = json_object_get(json_object_get(r, "result"), "structuredContent");
  assert_string_equal(json_string_value(json_object_get(structured, "rc")), "DG_ENOTSUP");
  assert_int_equal(json_array_size(mt_sink.notes), 0);
}

static void test_result_too_large(void **state) {
  mt_env_t *env = *state;
  env->server->limits.max_result_bytes = 4096;
  mt_initialize(env, "2025-11-25");
  json_t *result = json_object_get(call_tool(env, "big", "{}"), "result");
  assert_true(json_is_true(json_object_get(result, "isError")));
  assert_non_null(strstr(first_text(result), "Narrow the request"));
  assert_null(json_object_get(result, "structuredContent"));
}

static void test_inflight_limit(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-11-25");
  mt_post(env, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
               "\"params\":{\"name\":\"slow\"}}");
  mt_post(env, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
               "\"params\":{\"name\":\"slow\"}}");
  json_t *r = call_tool(env, "echo", "{}");
  assert_int_equal(mt_error_code(r), -32000);
  assert_non_null(strstr(mt_error_message(r), "too many requests in flight"));
  assert_int_equal(dg_mcp_server_inflight(env->server), 2);
  /* Freeing the server (teardown) cancels both. */
}

static void test_client_gone(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-11-25");
  mt_post(env, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
               "\"params\":{\"name\":\"slow\"}}");
  dg__mcp_exchange_t *ex = env->session->exchanges;
  assert_non_null(ex);
  dg__mcp_exchange_gone(ex);
  assert_int_equal(mt_cancels, 1);
  assert_int_equal(dg_mcp_server_inflight(env->server), 0);
  for (int i = 0; i < 3; i++)
    uv_run(&env->loop, UV_RUN_NOWAIT);
  assert_int_equal(json_array_size(mt_sink.replies), 1); /* nothing for the gone client */
}

static void test_catalog_held_by_call(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-11-25");
  mt_post(env, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
               "\"params\":{\"name\":\"slow\"}}");
  assert_non_null(mt_slow_call);
  const dg_catalog_t *old = dg_mcp_tool_call_catalog(mt_slow_call);
  assert_ptr_equal(old, env->cat);
  dg_catalog_t *next = mt_catalog();
  dg_mcp_limits_t limits = dg_tools_mcp_limits(next);
  dg_mcp_server_set_catalog(env->server, next, &limits);
  int refs = env->cat->refs;
  assert_ptr_equal(dg_mcp_tool_call_catalog(mt_slow_call), old);
  dg_mcp_tool_call_failf(mt_slow_call, "done");
  mt_slow_call = NULL;
  assert_int_equal(env->cat->refs, refs - 1); /* released at the end */
  dg_catalog_unref(env->cat);
  env->cat = next; /* teardown releases the new one */
  mt_wait_replies(env, 2);
}

/* A reload changes the limits of calls that start from then on; a call in
 * flight keeps those of the snapshot it started on. */
static void test_limits_held_by_call(void **state) {
  mt_env_t *env = *state;
  env->server->limits.max_result_bytes = 4096;
  mt_initialize(env, "2025-11-25");
  mt_post(env, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
               "\"params\":{\"name\":\"slow\"}}");
  assert_non_null(mt_slow_call);
  dg_catalog_t *next = mt_catalog();
  dg_mcp_limits_t limits = dg_tools_mcp_limits(next);
  limits.max_result_bytes = 8192;
  dg_mcp_server_set_catalog(env->server, next, &limits);
  assert_int_equal(dg_mcp_tool_call_result_limit(mt_slow_call), 4096);
  assert_int_equal(env->server->limits.max_result_bytes, 8192);
  dg_mcp_tool_call_failf(mt_slow_call, "done");
  mt_slow_call = NULL;
  dg_catalog_unref(env->cat);
  env->cat = next; /* teardown releases the new one */
  mt_wait_replies(env, 2);
}

static void test_log_line(void **state) {
  mt_env_t *env = *state;
  FILE *f = tmpfile();
  assert_non_null(f);
  dg_log_init(fileno(f), DG_LOG_INFO);
  mt_initialize(env, "2025-11-25");
  call_tool(env, "echo", "{\"text\":\"SECRET-ARGUMENT\"}");
  dg_log_init(2, DG_LOG_ERROR);
  char buf[4096] = {0};
  rewind(f);
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  assert_true(n > 0);
  assert_non_null(strstr(buf, "\"event\":\"tool_call\""));
  assert_non_null(strstr(buf, "\"tool\":\"echo\""));
  assert_non_null(strstr(buf, "\"outcome\":\"ok\""));
  assert_non_null(strstr(buf, "\"principal\":\"alice\""));
  assert_non_null(strstr(buf, "\"transport\":\"test\""));
  assert_non_null(strstr(buf, "\"duration_ms\""));
  assert_non_null(strstr(buf, "\"request_id\""));
  assert_null(strstr(buf, "SECRET-ARGUMENT"));
}

/* ---- Asking the user ---------------------------------------------------------- */

/* Starts "ask" as request 7 and returns the question it sent (borrowed). */
static json_t *ask(mt_env_t *env) {
  size_t before = json_array_size(mt_sink.notes);
  mt_post(env, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\",\"params\":{\"name\":"
               "\"ask\"}}");
  uint64_t deadline = dg_now_ms() + 2000;
  while (json_array_size(mt_sink.notes) == before && dg_now_ms() < deadline)
    uv_run(&env->loop, UV_RUN_ONCE);
  return json_array_get(mt_sink.notes, before);
}

/* The reply with id 7 among the replies from index from (borrowed). */
static json_t *reply_7(size_t from) {
  for (size_t i = from; i < json_array_size(mt_sink.replies); i++) {
    json_t *r = json_array_get(mt_sink.replies, i);
    if (json_integer_value(json_object_get(r, "id")) == 7)
      return r;
  }
  return NULL;
}

/* Answers the question q with result (JSON text) and returns the call's
 * structured result: the answer's own exchange is answered with nothing,
 * the call's with its result. */
static json_t *answer(mt_env_t *env, const json_t *q, const char *result) {
  char text[512];
  snprintf(text, sizeof(text), "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",%s}",
           json_string_value(json_object_get(q, "id")), result);
  size_t before = json_array_size(mt_sink.replies);
  mt_post(env, text);
  mt_wait_replies(env, before + 2);
  assert_int_equal(json_array_size(mt_sink.replies), before + 2);
  json_t *r = reply_7(before);
  assert_non_null(r);
  return json_object_get(json_object_get(r, "result"), "structuredContent");
}

static void test_elicit_answers(void **state) {
  mt_env_t *env = *state;
  mt_initialize_with(env, "2025-06-18", "{\"elicitation\":{}}");
  json_t *q = ask(env);
  assert_non_null(q);
  assert_string_equal(json_string_value(json_object_get(q, "method")), "elicitation/create");
  assert_string_equal(json_string_value(json_object_get(json_object_get(q, "params"), "message")),
                      "Go ahead?");
  assert_non_null(json_object_get(json_object_get(q, "params"), "requestedSchema"));
  json_t *r = answer(env, q, "\"result\":{\"action\":\"accept\",\"content\":{\"ok\":true}}");
  assert_string_equal(json_string_value(json_object_get(r, "action")), "accept");
  assert_true(json_is_true(json_object_get(json_object_get(r, "content"), "ok")));
  r = answer(env, ask(env), "\"result\":{\"action\":\"decline\"}");
  assert_string_equal(json_string_value(json_object_get(r, "action")), "decline");
  assert_true(json_is_null(json_object_get(r, "content"))); /* no content reached the tool */
  r = answer(env, ask(env), "\"result\":{\"action\":\"cancel\"}");
  assert_string_equal(json_string_value(json_object_get(r, "action")), "cancel");
  /* An error, or a result that is not an answer, is a protocol error. */
  r = answer(env, ask(env), "\"error\":{\"code\":-32601,\"message\":\"no\"}");
  assert_string_equal(json_string_value(json_object_get(r, "status")), "DG_EPROTO");
  r = answer(env, ask(env), "\"result\":{\"action\":\"maybe\"}");
  assert_string_equal(json_string_value(json_object_get(r, "status")), "DG_EPROTO");
}

/* Without the capability, before 2025-06-18, or with URL elicitation only,
 * the caller cannot be asked. */
static void expect_cannot_ask(const char *version, const char *caps) {
  mt_env_t *env = NULL;
  assert_int_equal(mt_setup_more((void **)&env), 0);
  mt_initialize_with(env, version, caps);
  json_t *r = json_object_get(
      json_object_get(mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"tools/call\","
                                   "\"params\":{\"name\":\"ask\"}}"),
                      "result"),
      "content");
  assert_non_null(
      strstr(json_string_value(json_object_get(json_array_get(r, 0), "text")), "DG_ENOTSUP"));
  assert_int_equal(json_array_size(mt_sink.notes), 0);
  mt_teardown((void **)&env);
}

static void test_elicit_needs_the_capability(void **state) {
  (void)state;
  expect_cannot_ask("2025-06-18", "{}");
  expect_cannot_ask("2025-03-26", "{\"elicitation\":{}}");
  expect_cannot_ask("2025-11-25", "{\"elicitation\":{\"url\":{}}}");
}

/* A call canceled while the user decides hears it once; the late answer is
 * dropped. */
static void test_elicit_abandoned(void **state) {
  mt_env_t *env = *state;
  mt_initialize_with(env, "2025-11-25", "{\"elicitation\":{\"form\":{}}}");
  json_t *q = json_incref(ask(env));
  assert_non_null(q);
  size_t before = json_array_size(mt_sink.replies);
  mt_post(env, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\",\"params\":{"
               "\"requestId\":7}}");
  mt_wait_replies(env, before + 2); /* the notification's and the call's: both nothing */
  assert_int_equal(json_array_size(mt_sink.replies), before + 2);
  assert_int_equal(mt_cancels, 1);
  assert_null(reply_7(before));
  char text[256];
  snprintf(text, sizeof(text),
           "{\"jsonrpc\":\"2.0\",\"id\":\"%s\",\"result\":{\"action\":\"accept\"}}",
           json_string_value(json_object_get(q, "id")));
  assert_true(json_is_null(mt_call(env, text)));
  assert_int_equal(mt_cancels, 1);
  json_decref(q);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_success_2025_06_18, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_success_2025_03_26_has_text_only, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_tool_error, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_unknown_tool, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_validation_failure, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_call_metrics, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_cancellation, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_timeout, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_progress, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_no_progress_without_token, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_progress_with_meta, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_progress_with_meta_needs_a_token, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_result_too_large, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_inflight_limit, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_client_gone, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_catalog_held_by_call, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_limits_held_by_call, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_log_line, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_elicit_answers, mt_setup_more, mt_teardown),
      cmocka_unit_test(test_elicit_needs_the_capability),
      cmocka_unit_test_setup_teardown(test_elicit_abandoned, mt_setup_more, mt_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
