/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for aggregate_entities through the MCP layer: results that
 * match the output schema and the text item, numbers written with at
 * most 15 significant digits, argument errors from the schema and from
 * the parser, models the caller may not read, a store that is not
 * running, and a call cancelled while its statement waits. */
#include <ctype.h>

#include "tools/entity_tools_test.h"

#define AGG_ORDERS "{\"dataModelId\": \"" ET_ORDERS "\", "

/* Every number in text has at most 15 significant digits. */
static void short_numbers(const char *text) {
  for (const char *p = text; *p != '\0'; p++) {
    if (!isdigit((unsigned char)*p) ||
        (p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '-')))
      continue;
    int digits = 0;
    const char *q = p;
    for (; isdigit((unsigned char)*q) || *q == '.'; q++)
      digits += isdigit((unsigned char)*q) != 0;
    if (digits > 15)
      fail_msg("a number with %d digits in: %s", digits, text);
    p = q - 1;
  }
}

static void test_grouped_result(void **state) {
  et_fixture_t *fx = *state;
  json_t *result =
      et_call(fx, "sales", "aggregate_entities",
              AGG_ORDERS "\"aggregations\": [{\"function\": \"Sum\", \"propertyName\": "
                         "\"Amount\"}, {\"function\": \"Average\", \"propertyName\": "
                         "\"Amount\"}], \"groupBy\": [{\"propertyName\": \"Region\", "
                         "\"reference\": \"Customer\"}]}");
  short_numbers(json_string_value(
      json_object_get(json_array_get(json_object_get(result, "content"), 0), "text")));
  json_t *sc = et_ok(fx, "sales", "aggregate_entities",
                     AGG_ORDERS "\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": "
                                "[{\"propertyName\": \"Region\", \"reference\": \"Customer\"}]}");
  assert_string_equal(
      json_string_value(json_array_get(json_object_get(sc, "groupByProperties"), 0)),
      "Customer.Region");
  json_t *rows = json_object_get(sc, "rows");
  assert_true(json_array_size(rows) > 1);
  json_int_t total = 0;
  size_t i;
  json_t *row;
  json_array_foreach(rows, i, row) {
    assert_non_null(json_object_get(json_object_get(row, "groupKey"), "customer.Region"));
    total += json_integer_value(json_object_get(json_object_get(row, "aggregates"), "count"));
  }
  assert_int_equal(total, json_integer_value(json_object_get(sc, "matchedCount")));
}

static void test_totals_row(void **state) {
  et_fixture_t *fx = *state;
  json_t *sc = et_ok(fx, "auditor", "aggregate_entities",
                     "{\"dataModelId\": \"" ET_PAYMENTS "\", \"aggregations\": [{\"function\": "
                     "\"Count\", \"alias\": \"Payments\"}, {\"function\": \"Max\", "
                     "\"propertyName\": \"PaidOn\"}]}");
  json_t *rows = json_object_get(sc, "rows");
  assert_int_equal(json_array_size(rows), 1);
  json_t *row = json_array_get(rows, 0);
  assert_int_equal(json_object_size(json_object_get(row, "groupKey")), 0);
  json_t *aggs = json_object_get(row, "aggregates");
  assert_int_equal(json_integer_value(json_object_get(aggs, "payments")),
                   json_integer_value(json_object_get(sc, "matchedCount")));
  assert_true(json_is_string(json_object_get(aggs, "max_PaidOn")));
}

static void test_argument_errors(void **state) {
  et_fixture_t *fx = *state;
  /* The schema's checks. */
  et_contains(et_error(fx, "admin", "aggregate_entities", AGG_ORDERS "\"aggregations\": []}"),
              "aggregations");
  et_contains(et_error(fx, "admin", "aggregate_entities", "{\"dataModelId\": \"" ET_ORDERS "\"}"),
              "aggregations");
  /* The parser's checks. */
  const char *text =
      et_error(fx, "admin", "aggregate_entities",
               AGG_ORDERS "\"aggregations\": [{\"function\": \"Sum\", \"propertyName\": "
                          "\"Status\"}]}");
  et_contains(text, "Invalid argument 'aggregations[0].propertyName'");
  et_contains(text, "Sum needs a numeric property");
  text = et_error(fx, "admin", "aggregate_entities",
                  AGG_ORDERS "\"aggregations\": [{\"function\": \"Count\", \"joinFilter\": "
                             "{\"reference\": \"Customer\", \"condition\": {\"localProperty\": "
                             "\"DueDate\", \"operator\": \"LessThan\", \"foreignProperty\": "
                             "\"RenewalDate\"}}}], \"groupBy\": [{\"propertyName\": \"Status\"}]}");
  et_contains(text, "request them separately");
  /* A model the caller may not read is reported like an unknown one. */
  et_contains(et_error(fx, "sales", "aggregate_entities",
                       "{\"dataModelId\": \"" ET_PAYMENTS "\", \"aggregations\": [{\"function\": "
                       "\"Count\"}]}"),
              "no Data Model with id '" ET_PAYMENTS "'");
}

static void test_store_not_running(void **state) {
  et_fixture_t *fx = *state;
  fx->env.store = NULL;
  et_contains(et_error(fx, "admin", "aggregate_entities",
                       AGG_ORDERS "\"aggregations\": [{\"function\": \"Count\"}]}"),
              "The entity store is not running");
  fx->env.store = fx->store;
}

/* ---- Cancellation --------------------------------------------------------------------- */

static void test_cancelled_call(void **state) {
  et_fixture_t *fx = *state;
  et_cancelled_call(fx, "aggregate_entities",
                    AGG_ORDERS "\"aggregations\": [{\"function\": \"Count\"}]}");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_grouped_result, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_totals_row, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_argument_errors, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_store_not_running, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_cancelled_call, et_setup, et_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
