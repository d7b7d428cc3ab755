/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for query_entities through the MCP layer: results that match
 * the output schema and the text item, decimals that read back as
 * written, argument errors from the schema and from the parser, models
 * the caller may not read, a store that is not running, and a call
 * cancelled while its query waits. */
#include "tools/entity_tools_test.h"

static void test_page_and_expansion(void **state) {
  et_fixture_t *fx = *state;
  json_t *sc = et_ok(fx, "sales", "query_entities",
                     "{\"dataModelId\": \"" ET_ORDERS "\", \"paging\": {\"pageSize\": 2},"
                     " \"sortCondition\": {\"propertyName\": \"OrderNumber\"},"
                     " \"expand\": [{\"reference\": \"Customer\", \"properties\": [\"Name\"]},"
                     " {\"reference\": \"OrderLines\"}]}");
  json_t *list = json_object_get(sc, "entities");
  assert_int_equal(json_array_size(list), 2);
  assert_true(json_is_true(json_object_get(sc, "hasMore")));
  assert_int_equal(json_integer_value(json_object_get(sc, "nextPage")), 2);
  json_t *first = json_object_get(json_array_get(list, 0), "properties");
  assert_string_equal(json_string_value(json_object_get(first, "orderNumber")), "SO-1001");
  json_t *x = json_object_get(first, "expanded");
  assert_string_equal(json_string_value(json_object_get(json_object_get(x, "customer"), "name")),
                      "Acme Corporation");
  assert_int_equal(json_array_size(json_object_get(x, "orderLines")), DG_STORE_EXPAND_MAX);
  assert_string_equal(
      json_string_value(json_array_get(json_object_get(first, "expandedTruncated"), 0)),
      "orderLines");
}

/* Decimals travel with 15 significant digits: 339.95, not 339.94999... */
static void test_decimal_text(void **state) {
  et_fixture_t *fx = *state;
  json_t *result = et_call(fx, "admin", "query_entities",
                           "{\"dataModelId\": \"" ET_ORDERS "\", \"properties\": [\"Amount\"],"
                           " \"queryParameterGroups\": [{\"parameters\": [{\"operator\": "
                           "\"EqualTo\", \"propertyName\": \"OrderNumber\", \"value\": "
                           "\"SO-1024\"}]}]}");
  const char *text = json_string_value(
      json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
  et_contains(text, "\"amount\":339.95}");
}

static void test_count_only(void **state) {
  et_fixture_t *fx = *state;
  json_t *sc = et_ok(fx, "auditor", "query_entities",
                     "{\"dataModelId\": \"" ET_PAYMENTS "\", \"countOnly\": true}");
  assert_int_equal(json_object_size(sc), 1);
  assert_true(json_integer_value(json_object_get(sc, "count")) > 0);
}

static void test_argument_errors(void **state) {
  et_fixture_t *fx = *state;
  /* The schema's check. */
  et_contains(et_error(fx, "admin", "query_entities",
                       "{\"dataModelId\": \"" ET_ORDERS "\", \"paging\": {\"pageSize\": 500}}"),
              "paging.pageSize");
  /* The parser's check. */
  const char *text = et_error(fx, "admin", "query_entities",
                              "{\"dataModelId\": \"" ET_ORDERS "\", \"queryParameterGroups\": "
                              "[{\"parameters\": [{\"operator\": \"Contains\", \"propertyName\": "
                              "\"Amount\", \"value\": \"1\"}]}]}");
  et_contains(text, "Invalid argument 'queryParameterGroups[0].parameters[0].operator'");
  et_contains(text, "allowed for Decimal");
  /* A model the caller may not read is reported like an unknown one. */
  et_contains(et_error(fx, "sales", "query_entities", "{\"dataModelId\": \"" ET_PAYMENTS "\"}"),
              "no Data Model with id '" ET_PAYMENTS "'");
  et_contains(et_error(fx, "admin", "query_entities",
                       "{\"dataModelId\": \"00000000-0000-4000-8000-000000000000\"}"),
              "call get_data_models");
}

static void test_store_not_running(void **state) {
  et_fixture_t *fx = *state;
  fx->env.store = NULL;
  et_contains(et_error(fx, "admin", "query_entities", "{\"dataModelId\": \"" ET_ORDERS "\"}"),
              "The entity store is not running");
  fx->env.store = fx->store;
}

/* ---- Cancellation --------------------------------------------------------------------- */

static void test_cancelled_call(void **state) {
  et_fixture_t *fx = *state;
  et_cancelled_call(fx, "query_entities", "{\"dataModelId\": \"" ET_ORDERS "\"}");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_page_and_expansion, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_decimal_text, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_count_only, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_argument_errors, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_store_not_running, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_cancelled_call, et_setup, et_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
