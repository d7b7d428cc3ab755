/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the tool registry and the run functions of the Data Model
 * tools. The tool-call functions of mcp.h are stood in for by a small fake
 * here, so a tool runs exactly as the MCP layer would run it: arguments
 * validated against its input schema, then run, then the result checked
 * against its output schema. The fake links instead of the MCP layer's
 * own tool-call file because a static library member is only pulled in
 * for a symbol nothing else defines; the test uses nothing else from it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "catalog_test.h"
#include "datagate/tools.h"

#define ORDERS_ID "8a03cbc2-7f01-4d47-bdf0-0755336a3a70"
#define PAYMENTS_ID "097d00c2-bc00-45fc-8b3b-5be0bae92720"

/* ---- A fake tool call ------------------------------------------------------ */

struct dg_mcp_tool_call {
  json_t *args;
  dg_arena_t *arena;
  const dg_principal_t *principal;
  const dg_catalog_t *cat;
  int ended;
  json_t *result;
  bool is_error;
  char text[1024];
};

json_t *dg_mcp_tool_call_args(const dg_mcp_tool_call_t *call) {
  return call->args;
}

const dg_principal_t *dg_mcp_tool_call_principal(const dg_mcp_tool_call_t *call) {
  return call->principal;
}

const dg_catalog_t *dg_mcp_tool_call_catalog(const dg_mcp_tool_call_t *call) {
  return call->cat;
}

size_t dg_mcp_tool_call_result_limit(const dg_mcp_tool_call_t *call) {
  size_t max = call->cat->server.max_result_bytes;
  return max > 0 ? max : SIZE_MAX - 1;
}

void *dg_mcp_tool_call_context(const dg_mcp_tool_call_t *call) {
  (void)call;
  return NULL;
}

dg_arena_t *dg_mcp_tool_call_arena(const dg_mcp_tool_call_t *call) {
  return call->arena;
}

uv_loop_t *dg_mcp_tool_call_loop(const dg_mcp_tool_call_t *call) {
  (void)call;
  return NULL;
}

const char *dg_mcp_tool_call_request_id(const dg_mcp_tool_call_t *call) {
  (void)call;
  return "test";
}

const char *dg_mcp_tool_call_trace_id(const dg_mcp_tool_call_t *call) {
  (void)call;
  return NULL;
}

void dg_mcp_tool_call_on_cancel(dg_mcp_tool_call_t *call,
                                void (*fn)(dg_mcp_tool_call_t *call, void *data), void *data) {
  (void)call;
  (void)fn;
  (void)data;
}

bool dg_mcp_tool_call_wants_progress(const dg_mcp_tool_call_t *call) {
  (void)call;
  return false;
}

int dg_mcp_tool_call_progress_meta(dg_mcp_tool_call_t *call, double progress, double total,
                                   const char *message, json_t *meta) {
  (void)call;
  (void)progress;
  (void)total;
  (void)message;
  (void)meta;
  return DG_ENOTSUP;
}

void dg_mcp_tool_call_succeed_text(dg_mcp_tool_call_t *call, json_t *result, const char *text,
                                   size_t len) {
  (void)text;
  (void)len;
  dg_mcp_tool_call_succeed(call, result);
}

bool dg_mcp_tool_call_can_elicit(const dg_mcp_tool_call_t *call) {
  (void)call;
  return false;
}

int dg_mcp_tool_call_elicit(dg_mcp_tool_call_t *call, const char *message,
                            const json_t *requested_schema, dg_mcp_tool_call_elicit_cb cb,
                            void *data) {
  (void)call;
  (void)message;
  (void)requested_schema;
  (void)cb;
  (void)data;
  return DG_ENOTSUP;
}

void dg_mcp_tool_call_succeed(dg_mcp_tool_call_t *call, json_t *result) {
  call->ended++;
  call->result = result;
}

void dg_mcp_tool_call_fail(dg_mcp_tool_call_t *call, const dg_errctx_t *err) {
  call->ended++;
  call->is_error = true;
  dg_strlcpy(call->text, err->message, sizeof(call->text));
}

void dg_mcp_tool_call_failf(dg_mcp_tool_call_t *call, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  call->ended++;
  call->is_error = true;
  vsnprintf(call->text, sizeof(call->text), fmt, ap);
  va_end(ap);
}

/* ---- Fixture ------------------------------------------------------------------- */

static const dg_tool_t *tool(const char *name) {
  for (size_t i = 0; i < dg_tools_count; i++) {
    if (strcmp(dg_tools_registry[i]->name, name) == 0)
      return dg_tools_registry[i];
  }
  fail_msg("no tool %s", name);
  return NULL;
}

static json_t *schema_of(const char *text) {
  json_error_t jerr;
  json_t *schema = json_loads(text, JSON_REJECT_DUPLICATES, &jerr);
  if (schema == NULL)
    fail_msg("schema does not parse: %s at %d:%d", jerr.text, jerr.line, jerr.column);
  assert_true(json_is_object(schema));
  return schema;
}

/* Validates args, runs the tool as user, and checks it ended exactly once
 * with a result that its output schema accepts. The caller frees. */
static struct dg_mcp_tool_call run(fixture_t *fx, const char *name, const char *user,
                                   const char *args) {
  const dg_tool_t *t = tool(name);
  struct dg_mcp_tool_call call = {
      .cat = fx->cat, .args = json_loads(args, 0, NULL), .arena = fx->arena};
  assert_int_equal(dg_auth_principal_for_user(fx->cat, user, fx->arena, &call.principal), 0);
  json_t *in = schema_of(t->accepted_schema ? t->accepted_schema : t->input_schema);
  dg_errctx_t err;
  assert_int_equal(dg_mcp_schema_validate(in, call.args, &err), 0);
  json_decref(in);
  t->run(&call);
  assert_int_equal(call.ended, 1);
  if (!call.is_error) {
    json_t *out = schema_of(t->output_schema);
    int rc = dg_mcp_schema_validate(out, call.result, &err);
    if (rc != 0)
      fail_msg("result does not match the output schema: %s", err.message);
    json_decref(out);
  }
  return call;
}

static void call_free(struct dg_mcp_tool_call *call) {
  json_decref(call->args);
  json_decref(call->result);
}

/* ---- Registry ------------------------------------------------------------------- */

static void test_registry_entries(void **state) {
  const char *expected[] = {
      "get_data_models",       "get_data_model_properties", "lookup_by_keyword",
      "query_entities",        "aggregate_entities",        "get_entities_by_ids",
      "get_saved_queries",     "get_saved_query_details",   "execute_saved_query",
      "aggregate_saved_query", "get_data_entry_form",       "submit_data_entry_form",
      "get_file_text"};
  assert_int_equal(dg_tools_count, DG_ARRAY_SIZE(expected));
  for (size_t i = 0; i < DG_ARRAY_SIZE(expected); i++)
    assert_string_equal(dg_tools_registry[i]->name, expected[i]);
  for (size_t i = 0; i < dg_tools_count; i++) {
    const dg_tool_t *t = dg_tools_registry[i];
    for (size_t j = 0; j < i; j++)
      assert_string_not_equal(t->name, dg_tools_registry[j]->name);
    assert_non_null(t->title);
    assert_non_null(t->run);
    /* Only submit_data_entry_form changes anything, and it says so. */
    bool submit = strcmp(t->name, "submit_data_entry_form") == 0;
    assert_true(t->read_only == !submit && t->destructive == submit && t->idempotent == !submit);
    if (submit)
      assert_non_null(strstr(t->description, "confirm"));
    /* Only the submission asks the user a question. */
    assert_true(t->elicits == submit);
    /* Only the Saved Query runs, get_file_text and the save actions reach
     * external systems. */
    assert_true(t->open_world == (strcmp(t->name, "execute_saved_query") == 0 ||
                                  strcmp(t->name, "aggregate_saved_query") == 0 ||
                                  strcmp(t->name, "get_file_text") == 0 || submit));
    /* Each description says which tool comes first: get_data_models, or
     * get_saved_queries for the Saved Query tools. */
    bool first =
        strcmp(t->name, "get_data_models") == 0 || strcmp(t->name, "get_saved_queries") == 0;
    const char *before = strstr(t->name, "saved_quer") ? "get_saved_queries"
                         : submit                      ? "get_data_entry_form"
                                                       : "get_data_models";
    assert_non_null(strstr(t->description, first ? "Call this first" : before));
    json_t *in = schema_of(t->input_schema);
    json_t *out = schema_of(t->output_schema);
    assert_string_equal(json_string_value(json_object_get(in, "type")), "object");
    assert_true(json_is_false(json_object_get(in, "additionalProperties")));
    json_decref(in);
    json_decref(out);
  }
}

static void test_instructions_order(void **state) {
  const char *order[] = {
      "get_data_models",   "get_data_model_properties", "lookup_by_keyword",  "query_entities",
      "get_saved_queries", "get_saved_query_details",   "execute_saved_query"};
  const char *at = dg_tools_instructions;
  for (size_t i = 0; i < DG_ARRAY_SIZE(order); i++) {
    const char *found = strstr(at, order[i]);
    if (found == NULL)
      fail_msg("'%s' missing or out of order in the instructions", order[i]);
    at = found + strlen(order[i]);
  }
  const char *form = strstr(dg_tools_instructions, "get_data_entry_form");
  const char *submit = strstr(dg_tools_instructions, "submit_data_entry_form");
  assert_non_null(form);
  assert_true(submit > form);
  assert_non_null(strstr(dg_tools_instructions, "confirm"));
  assert_non_null(strstr(dg_tools_instructions, "get_file_text"));
  assert_non_null(strstr(dg_tools_instructions, "externalFileLocation"));
}

/* ---- Running the tools ------------------------------------------------------------- */

static void test_run_get_data_models(void **state) {
  fixture_t *fx = *state;
  struct dg_mcp_tool_call call = run(fx, "get_data_models", "sales", "{}");
  assert_false(call.is_error);
  assert_int_equal(json_array_size(json_object_get(call.result, "dataModels")), 5);
  call_free(&call);
  call = run(fx, "get_data_models", "admin", "{}");
  assert_int_equal(json_array_size(json_object_get(call.result, "dataModels")), 6);
  call_free(&call);
}

static void test_run_get_data_model_properties(void **state) {
  fixture_t *fx = *state;
  struct dg_mcp_tool_call call =
      run(fx, "get_data_model_properties", "sales", "{\"dataModelId\": \"" ORDERS_ID "\"}");
  assert_false(call.is_error);
  assert_string_equal(json_string_value(json_object_get(call.result, "name")), "Orders");
  call_free(&call);
  call = run(fx, "get_data_model_properties", "sales", "{\"dataModelId\": \"" PAYMENTS_ID "\"}");
  assert_true(call.is_error);
  assert_null(call.result);
  assert_string_equal(call.text,
                      "Invalid argument 'dataModelId': no Data Model with id '" PAYMENTS_ID
                      "'; call get_data_models for the valid ids.");
  call_free(&call);
  call = run(fx, "get_data_model_properties", "auditor", "{\"dataModelId\": \"" PAYMENTS_ID "\"}");
  assert_false(call.is_error);
  call_free(&call);
}

static void test_input_schema_refuses_bad_arguments(void **state) {
  json_t *in = schema_of(tool("get_data_model_properties")->input_schema);
  const char *bad[] = {"{}", "{\"dataModelId\": \"Orders\"}", "{\"dataModelId\": 7}",
                       "{\"dataModelId\": \"" ORDERS_ID "\", \"extra\": 1}"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++) {
    json_t *args = json_loads(bad[i], 0, NULL);
    dg_errctx_t err;
    assert_int_not_equal(dg_mcp_schema_validate(in, args, &err), 0);
    json_decref(args);
  }
  json_decref(in);
  in = schema_of(tool("get_data_models")->input_schema);
  json_t *args = json_loads("{\"x\": 1}", 0, NULL);
  dg_errctx_t err;
  assert_int_not_equal(dg_mcp_schema_validate(in, args, &err), 0);
  json_decref(args);
  json_decref(in);
}

/* The listed schema writes a filter value as text; the accepted one also
 * takes the JSON number, boolean or null that callers wrote before. */
static void test_accepted_schema_widens_values(void **state) {
  const char *text = "{\"dataModelId\": \"" ORDERS_ID "\", \"queryParameterGroups\": [{"
                     "\"parameters\": [{\"operator\": \"GreaterThan\", \"propertyName\": "
                     "\"Amount\", \"value\": \"100\", \"valueType\": \"number\"}]}]}";
  const char *number = "{\"dataModelId\": \"" ORDERS_ID "\", \"queryParameterGroups\": [{"
                       "\"parameters\": [{\"operator\": \"GreaterThan\", \"propertyName\": "
                       "\"Amount\", \"value\": 100}]}]}";
  const char *names[] = {"query_entities", "aggregate_entities"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(names); i++) {
    const dg_tool_t *t = tool(names[i]);
    assert_non_null(t->accepted_schema);
    json_t *listed = schema_of(t->input_schema);
    json_t *accepted = schema_of(t->accepted_schema);
    json_t *a = json_loads(text, 0, NULL), *b = json_loads(number, 0, NULL);
    if (i == 1) {
      json_object_set_new(a, "aggregations", json_pack("[{s:s}]", "function", "Count"));
      json_object_set_new(b, "aggregations", json_pack("[{s:s}]", "function", "Count"));
    }
    dg_errctx_t err;
    assert_int_equal(dg_mcp_schema_validate(listed, a, &err), 0);
    assert_int_equal(dg_mcp_schema_validate(accepted, a, &err), 0);
    assert_int_not_equal(dg_mcp_schema_validate(listed, b, &err), 0);
    assert_int_equal(dg_mcp_schema_validate(accepted, b, &err), 0);
    json_decref(a);
    json_decref(b);
    json_decref(listed);
    json_decref(accepted);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_registry_entries),
      cmocka_unit_test(test_instructions_order),
      cmocka_unit_test_setup_teardown(test_run_get_data_models, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_run_get_data_model_properties, ct_setup, ct_teardown),
      cmocka_unit_test(test_input_schema_refuses_bad_arguments),
      cmocka_unit_test(test_accepted_schema_widens_values),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
