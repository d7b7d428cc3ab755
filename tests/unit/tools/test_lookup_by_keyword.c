/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for lookup_by_keyword through the MCP layer: results name
 * their model, respect the caller's permissions and the limit, and bad
 * arguments are refused with the parameter named. */
#include "tools/entity_tools_test.h"

static void test_lookup(void **state) {
  et_fixture_t *fx = *state;
  /* The order and the two files named after it; the order, whose keyword
   * is exactly the search, ranks first. */
  json_t *sc = et_ok(fx, "admin", "lookup_by_keyword", "{\"searchValue\": \"SO-1001\"}");
  json_t *list = json_object_get(sc, "entities");
  assert_int_equal(json_array_size(list), 3);
  json_t *e = json_array_get(list, 0);
  assert_string_equal(json_string_value(json_object_get(e, "dataModelId")), ET_ORDERS);
  assert_string_equal(json_string_value(json_object_get(e, "dataModelName")), "Orders");
  assert_string_equal(json_string_value(json_object_get(e, "entityType")), "Order");
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(e, "properties"), "orderNumber")),
      "SO-1001");
  for (size_t i = 1; i < 3; i++)
    assert_string_equal(
        json_string_value(json_object_get(json_array_get(list, i), "dataModelName")), "Files");
  sc = et_ok(fx, "admin", "lookup_by_keyword",
             "{\"searchValue\": \"SO-1001\", \"entityType\": \"Order\", \"entitySubType\": "
             "\"SalesOrder\"}");
  assert_int_equal(json_array_size(json_object_get(sc, "entities")), 1);
}

static void test_limit_and_permissions(void **state) {
  et_fixture_t *fx = *state;
  json_t *sc = et_ok(fx, "admin", "lookup_by_keyword", "{\"searchValue\": \"card\", \"limit\": 2}");
  assert_int_equal(json_array_size(json_object_get(sc, "entities")), 2);
  sc = et_ok(fx, "sales", "lookup_by_keyword", "{\"searchValue\": \"card\"}");
  assert_int_equal(json_array_size(json_object_get(sc, "entities")), 0);
}

static void test_errors(void **state) {
  et_fixture_t *fx = *state;
  et_contains(et_error(fx, "admin", "lookup_by_keyword", "{\"searchValue\": \"\"}"), "searchValue");
  et_contains(et_error(fx, "admin", "lookup_by_keyword", "{\"searchValue\": \"x\", \"limit\": 0}"),
              "limit");
  et_contains(et_error(fx, "sales", "lookup_by_keyword",
                       "{\"searchValue\": \"x\", \"entityType\": \"Payment\"}"),
              "Invalid argument 'entityType'");
  et_contains(et_error(fx, "admin", "lookup_by_keyword", "{\"searchValue\": \"%%%\"}"),
              "no letters or digits");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_lookup, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_limit_and_permissions, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_errors, et_setup, et_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
