/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for get_entities_by_ids through the MCP layer: order kept,
 * missing ids omitted, selection and expansion, and the limits on ids. */
#include "tools/entity_tools_test.h"

#define ACME "7c08b797-fac4-5249-874c-557b0f4557f5"
#define MISSING "00000000-0000-4000-8000-000000000000"

static void test_fetch(void **state) {
  et_fixture_t *fx = *state;
  json_t *sc = et_ok(fx, "sales", "get_entities_by_ids",
                     "{\"dataModelId\": \"" ET_CUSTOMERS "\", \"entityIds\": [\"" MISSING
                     "\", \"" ACME "\"], \"properties\": [\"Name\", \"Region\"],"
                     " \"expand\": [{\"reference\": \"Orders\", \"properties\": "
                     "[\"OrderNumber\"]}]}");
  json_t *list = json_object_get(sc, "entities");
  assert_int_equal(json_array_size(list), 1);
  json_t *e = json_array_get(list, 0);
  assert_string_equal(json_string_value(json_object_get(e, "id")), ACME);
  json_t *props = json_object_get(e, "properties");
  assert_string_equal(json_string_value(json_object_get(props, "region")), "APAC");
  assert_null(json_object_get(props, "creditLimit"));
  json_t *orders = json_object_get(json_object_get(props, "expanded"), "orders");
  assert_true(json_array_size(orders) > 1);
  assert_non_null(json_object_get(json_array_get(orders, 0), "orderNumber"));
}

static void test_only_missing(void **state) {
  et_fixture_t *fx = *state;
  json_t *sc = et_ok(fx, "admin", "get_entities_by_ids",
                     "{\"dataModelId\": \"" ET_CUSTOMERS "\", \"entityIds\": [\"" MISSING "\"]}");
  assert_int_equal(json_array_size(json_object_get(sc, "entities")), 0);
}

static void test_id_limits(void **state) {
  et_fixture_t *fx = *state;
  char args[4096];
  size_t len = (size_t)snprintf(args, sizeof(args),
                                "{\"dataModelId\": \"" ET_CUSTOMERS "\", \"entityIds\": [");
  for (int i = 0; i <= DG_STORE_IDS_MAX; i++)
    len += (size_t)snprintf(args + len, sizeof(args) - len, "%s\"00000000-0000-4000-8000-%012d\"",
                            i ? "," : "", i);
  snprintf(args + len, sizeof(args) - len, "]}");
  et_contains(et_error(fx, "admin", "get_entities_by_ids", args), "entityIds");
  et_contains(et_error(fx, "admin", "get_entities_by_ids",
                       "{\"dataModelId\": \"" ET_CUSTOMERS "\", \"entityIds\": []}"),
              "entityIds");
  et_contains(et_error(fx, "admin", "get_entities_by_ids",
                       "{\"dataModelId\": \"" ET_CUSTOMERS "\", \"entityIds\": [\"acme\"]}"),
              "entityIds[0]");
  /* A GUID's length, not its form: refused by the argument schema, the one
   * check an id gets, with the item, the value and what is allowed. */
  et_contains(et_error(fx, "admin", "get_entities_by_ids",
                       "{\"dataModelId\": \"" ET_CUSTOMERS "\", \"entityIds\": [\"" MISSING
                       "\", \"7c08b797-fac4-5249-874c-557b0f4557fx\"]}"),
              "Invalid argument 'entityIds[1]': got \"7c08b797-fac4-5249-874c-557b0f4557fx\"; "
              "allowed: a GUID (8-4-4-4-12 hexadecimal digits).");
  et_contains(et_error(fx, "sales", "get_entities_by_ids",
                       "{\"dataModelId\": \"" ET_ORDERS "\", \"entityIds\": [\"" MISSING
                       "\"], \"expand\": [{\"reference\": \"Payments\"}]}"),
              "expand[0].reference");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_fetch, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_only_missing, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_id_limits, et_setup, et_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
