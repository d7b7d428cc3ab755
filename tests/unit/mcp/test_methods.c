/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the lifecycle methods: initialize negotiation for every
 * supported version and an unknown one, ping at any time, requests before
 * initialize, and the shape of tools/list per protocol version. */
#include "mcp/mcp_test.h"

static json_t *initialize(mt_env_t *env, const char *version) {
  char text[256];
  snprintf(text, sizeof(text),
           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
           "{\"protocolVersion\":\"%s\",\"capabilities\":{}}}",
           version);
  return json_object_get(mt_call(env, text), "result");
}

static void check_negotiates(void **state, const char *asked, const char *answered) {
  mt_env_t *env = *state;
  json_t *result = initialize(env, asked);
  assert_non_null(result);
  assert_string_equal(json_string_value(json_object_get(result, "protocolVersion")), answered);
  assert_string_equal(env->session->version, answered);
  json_t *tools = json_object_get(json_object_get(result, "capabilities"), "tools");
  assert_true(json_is_false(json_object_get(tools, "listChanged")));
  assert_int_equal(json_object_size(json_object_get(result, "capabilities")), 1);
  json_t *info = json_object_get(result, "serverInfo");
  assert_string_equal(json_string_value(json_object_get(info, "name")), "datagate");
  assert_string_equal(json_string_value(json_object_get(info, "version")), "9.9.9");
  /* Implementation.title came with 2025-06-18. */
  bool titled = strcmp(answered, "2025-06-18") >= 0;
  assert_true((json_string_value(json_object_get(info, "title")) != NULL) == titled);
  assert_string_equal(json_string_value(json_object_get(result, "instructions")),
                      "Call echo first.");
}

static void test_initialize_2025_11_25(void **state) {
  check_negotiates(state, "2025-11-25", "2025-11-25");
}

static void test_initialize_2025_06_18(void **state) {
  check_negotiates(state, "2025-06-18", "2025-06-18");
}

static void test_initialize_2025_03_26(void **state) {
  check_negotiates(state, "2025-03-26", "2025-03-26");
}

static void test_initialize_2024_11_05(void **state) {
  check_negotiates(state, "2024-11-05", "2024-11-05");
}

static void test_initialize_unknown_version(void **state) {
  check_negotiates(state, "2024-10-07", "2025-11-25");
}

static void test_initialize_bad_params(void **state) {
  mt_env_t *env = *state;
  json_t *r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\"}");
  assert_int_equal(mt_error_code(r), -32602);
  r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                   "\"params\":{\"protocolVersion\":5}}");
  assert_int_equal(mt_error_code(r), -32602);
  assert_null(env->session->version);
}

static void test_initialize_twice(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-06-18");
  json_t *r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"initialize\","
                           "\"params\":{\"protocolVersion\":\"2025-03-26\"}}");
  assert_int_equal(mt_error_code(r), -32600);
  assert_string_equal(env->session->version, "2025-06-18");
}

static void test_requests_before_initialize(void **state) {
  mt_env_t *env = *state;
  json_t *r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}");
  assert_true(json_is_object(json_object_get(r, "result")));
  assert_int_equal(json_object_size(json_object_get(r, "result")), 0);
  r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
  assert_int_equal(mt_error_code(r), -32600);
  r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\","
                   "\"params\":{\"name\":\"echo\"}}");
  assert_int_equal(mt_error_code(r), -32600);
}

static json_t *find_tool(json_t *list, const char *name) {
  size_t i;
  json_t *t;
  json_array_foreach(list, i, t) {
    if (strcmp(json_string_value(json_object_get(t, "name")), name) == 0)
      return t;
  }
  fail_msg("tool %s not listed", name);
  return NULL;
}

static json_t *tools_list(mt_env_t *env, const char *version) {
  mt_initialize(env, version);
  json_t *r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\","
                           "\"params\":{\"cursor\":\"ignored\"}}");
  json_t *result = json_object_get(r, "result");
  assert_null(json_object_get(result, "nextCursor"));
  json_t *tools = json_object_get(result, "tools");
  assert_int_equal(json_array_size(tools), DG_ARRAY_SIZE(mt_tools));
  return tools;
}

static void check_entry(json_t *echo) {
  assert_string_equal(json_string_value(json_object_get(echo, "title")), "Echo");
  assert_string_equal(json_string_value(json_object_get(echo, "description")),
                      "Returns its arguments.");
  json_t *schema = json_object_get(echo, "inputSchema");
  assert_string_equal(json_string_value(json_object_get(schema, "type")), "object");
  json_t *a = json_object_get(echo, "annotations");
  assert_string_equal(json_string_value(json_object_get(a, "title")), "Echo");
  assert_true(json_is_true(json_object_get(a, "readOnlyHint")));
  assert_true(json_is_false(json_object_get(a, "destructiveHint")));
  assert_true(json_is_true(json_object_get(a, "idempotentHint")));
  assert_true(json_is_false(json_object_get(a, "openWorldHint")));
}

static void test_tools_list_2025_06_18(void **state) {
  json_t *tools = tools_list(*state, "2025-06-18");
  json_t *echo = find_tool(tools, "echo");
  check_entry(echo);
  assert_true(json_is_object(json_object_get(echo, "outputSchema")));
  /* A tool without an output schema has none listed. */
  assert_null(json_object_get(find_tool(tools, "slow"), "outputSchema"));
  json_t *fail = json_object_get(find_tool(tools, "fail"), "annotations");
  assert_true(json_is_true(json_object_get(fail, "destructiveHint")));
  /* The title falls back to the name. */
  assert_string_equal(json_string_value(json_object_get(find_tool(tools, "slow"), "title")),
                      "slow");
}

static void test_tools_list_2025_11_25(void **state) {
  json_t *echo = find_tool(tools_list(*state, "2025-11-25"), "echo");
  check_entry(echo);
  assert_non_null(json_object_get(echo, "outputSchema"));
}

/* 2025-03-26 has annotations but neither a tool title nor outputSchema. */
static void test_tools_list_2025_03_26(void **state) {
  json_t *echo = find_tool(tools_list(*state, "2025-03-26"), "echo");
  assert_null(json_object_get(echo, "outputSchema"));
  assert_null(json_object_get(echo, "title"));
  json_t *a = json_object_get(echo, "annotations");
  assert_string_equal(json_string_value(json_object_get(a, "title")), "Echo");
  assert_true(json_is_true(json_object_get(a, "readOnlyHint")));
}

/* 2024-11-05 knows name, description and inputSchema only. */
static void test_tools_list_2024_11_05(void **state) {
  json_t *echo = find_tool(tools_list(*state, "2024-11-05"), "echo");
  assert_int_equal(json_object_size(echo), 3);
  assert_string_equal(json_string_value(json_object_get(echo, "name")), "echo");
  assert_non_null(json_object_get(echo, "description"));
  assert_non_null(json_object_get(echo, "inputSchema"));
}

/* A tool list too large to write out is answered with an error, not with
 * a result that lists no tools. */
static char huge_description[(1u << 20) + 64];
static const dg_tool_t mt_huge = {.name = "huge",
                                  .description = huge_description,
                                  .input_schema = "{\"type\":\"object\"}",
                                  .run = mt_fail_run};

static int huge_setup(void **state) {
  static const dg_tool_t *const list[] = {&mt_echo, &mt_huge};
  memset(huge_description, 'x', sizeof(huge_description) - 1);
  mt_env_t *env = calloc(1, sizeof(*env));
  dg_log_init(2, DG_LOG_ERROR);
  uv_loop_init(&env->loop);
  env->cat = mt_catalog();
  dg_mcp_config_t config = {.server_name = "datagate", .tools = list, .ntools = 2};
  dg_errctx_t err;
  dg_errctx_clear(&err);
  dg_mcp_limits_t limits = dg_tools_mcp_limits(env->cat);
  assert_int_equal(dg_mcp_server_new(&env->loop, &config, env->cat, &limits, &env->server, &err),
                   0);
  assert_int_equal(dg__mcp_session_new(env->server, &mt_transport, NULL, &env->session), 0);
  mt_sink.replies = json_array();
  mt_sink.notes = json_array();
  mt_sink.early = 0;
  *state = env;
  return 0;
}

static void test_tools_list_too_large(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-06-18");
  json_t *r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/list\"}");
  assert_int_equal(mt_error_code(r), -32603);
  assert_null(json_object_get(r, "result"));
}

static void test_bad_schema_refused(void **state) {
  static const dg_tool_t broken = {.name = "broken", .input_schema = "{not json", .run = NULL};
  static const dg_tool_t *const list[] = {&broken};
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg_catalog_t *cat = mt_catalog();
  dg_mcp_config_t config = {.server_name = "datagate", .tools = list, .ntools = 1};
  dg_mcp_server_t *s = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  dg_mcp_limits_t limits = dg_tools_mcp_limits(cat);
  assert_int_equal(dg_mcp_server_new(&loop, &config, cat, &limits, &s, &err), DG_ECONFIG);
  assert_null(s);
  assert_non_null(strstr(err.message, "broken"));
  dg_catalog_unref(cat);
  assert_int_equal(uv_loop_close(&loop), 0);
}

/* ---- Resources ------------------------------------------------------------------ */

static json_t *resource_call(mt_env_t *env, const char *method, const char *params) {
  char text[512];
  snprintf(text, sizeof(text), "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"%s\"%s%s}", method,
           params ? ",\"params\":" : "", params ? params : "");
  return mt_call(env, text);
}

static void test_resources_capability_only_when_offered(void **state) {
  mt_env_t *env = *state;
  json_t *r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
                           "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                           "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
  json_t *caps = json_object_get(json_object_get(r, "result"), "capabilities");
  assert_null(json_object_get(caps, "resources"));
  assert_int_equal(mt_error_code(resource_call(env, "resources/read", "{\"uri\":\"mt://echo/a\"}")),
                   -32601);
}

static void test_resources_list_and_templates(void **state) {
  mt_env_t *env = *state;
  assert_int_equal(mt_error_code(resource_call(env, "resources/list", NULL)), -32600);
  json_t *r = mt_call(env, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
                           "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
                           "\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}");
  json_t *caps = json_object_get(json_object_get(r, "result"), "capabilities");
  json_t *want = json_loads("{}", 0, NULL);
  assert_true(json_equal(json_object_get(caps, "resources"), want));
  json_decref(want);
  r = json_object_get(resource_call(env, "resources/list", NULL), "result");
  json_t *first = json_array_get(json_object_get(r, "resources"), 0);
  assert_string_equal(json_string_value(json_object_get(first, "uri")), "mt://echo/listed");
  assert_string_equal(json_string_value(json_object_get(first, "name")), "alice");
  r = json_object_get(resource_call(env, "resources/templates/list", NULL), "result");
  first = json_array_get(json_object_get(r, "resourceTemplates"), 0);
  assert_string_equal(json_string_value(json_object_get(first, "uriTemplate")), "mt://echo/{text}");
}

/* A read runs the provider's tool; its answer, a failure of the tool and
 * a URI the provider does not know come back as contents or errors. */
static void test_resources_read_through_a_tool(void **state) {
  mt_env_t *env = *state;
  mt_initialize(env, "2025-06-18");
  json_t *r = resource_call(env, "resources/read", "{\"uri\":\"mt://echo/hello\"}");
  json_t *item = json_array_get(json_object_get(json_object_get(r, "result"), "contents"), 0);
  assert_string_equal(json_string_value(json_object_get(item, "uri")), "mt://echo/hello");
  assert_string_equal(json_string_value(json_object_get(item, "text")),
                      "{\"echo\":{\"text\":\"hello\"}}");
  r = resource_call(env, "resources/read", "{\"uri\":\"mt://none/x\"}");
  assert_int_equal(mt_error_code(r), -32002);
  assert_string_equal(mt_error_message(r), "Resource not found: mt://none/x");
  r = resource_call(env, "resources/read", "{\"uri\":\"mt://fail\"}");
  assert_int_equal(mt_error_code(r), -32002);
  assert_non_null(strstr(mt_error_message(r), "parameter 'x' was 7"));
  r = resource_call(env, "resources/read", "{\"uri\":\"other://x\"}");
  assert_int_equal(mt_error_code(r), -32002);
  assert_string_equal(mt_error_message(r), "no resource other://x");
  assert_int_equal(mt_error_code(resource_call(env, "resources/read", "{}")), -32602);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_initialize_2025_11_25, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_initialize_2025_06_18, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_initialize_2025_03_26, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_initialize_2024_11_05, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_initialize_unknown_version, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_initialize_bad_params, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_initialize_twice, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_requests_before_initialize, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_tools_list_2025_06_18, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_tools_list_2025_11_25, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_tools_list_2025_03_26, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_tools_list_2024_11_05, mt_setup, mt_teardown),
      cmocka_unit_test_setup_teardown(test_tools_list_too_large, huge_setup, mt_teardown),
      cmocka_unit_test(test_bad_schema_refused),
      cmocka_unit_test_setup_teardown(test_resources_capability_only_when_offered, mt_setup,
                                      mt_teardown),
      cmocka_unit_test_setup_teardown(test_resources_list_and_templates, mt_setup_more,
                                      mt_teardown),
      cmocka_unit_test_setup_teardown(test_resources_read_through_a_tool, mt_setup_more,
                                      mt_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
