/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the Saved Query tools' logic: which queries each sample
 * user sees, the details with fields filtered by permission, and every
 * check of execute_saved_query's arguments (unknown key, twice given,
 * missing required input, values not of the type, defaults, properties
 * selection) with its exact message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "catalog_test.h"
#include "datagate/auth.h"
#include "tools/internal.h"

#define LIVE_STATUS "0df62209-292d-4ece-8b49-58aa7557460c"
#define OPEN_ORDERS "98f4ce0f-646d-4266-bf27-aee11c64a0b3"
#define CUSTOMER_CREDIT "b0d46309-dcef-4d2c-b91e-267bee6a587d"
#define PAYMENTS "da124dec-b649-48d9-b962-6833e494c83c"

/* Names of a JSON array's objects at key, joined with commas. */
static void names_of(const json_t *list, const char *key, char *out, size_t size) {
  size_t i, len = 0;
  const json_t *item;
  out[0] = '\0';
  json_array_foreach(list, i, item) {
    int n = snprintf(out + len, size - len, "%s%s", i ? "," : "",
                     json_string_value(json_object_get(item, key)));
    len += (size_t)n;
  }
}

/* ---- Listing and details ------------------------------------------------------- */

static void test_list_by_user(void **state) {
  fixture_t *fx = *state;
  char names[1024];
  json_t *r = dg__tools_saved_queries_json(fx->cat, ct_principal(fx, "admin"));
  names_of(json_object_get(r, "savedQueries"), "name", names, sizeof(names));
  assert_string_equal(names, "LiveOrderStatus,OpenOrdersByCustomer,SearchOrders,TrackShipment,"
                             "ProductPrices,CustomerCredit,RecentPayments");
  json_t *first = json_array_get(json_object_get(r, "savedQueries"), 0);
  assert_string_equal(json_string_value(json_object_get(first, "savedQueryId")), LIVE_STATUS);
  json_t *conn = json_object_get(first, "connector");
  assert_string_equal(json_string_value(json_object_get(conn, "name")), "SampleErp");
  assert_string_equal(json_string_value(json_object_get(conn, "connectorId")),
                      "f61634e3-acc5-41f2-90ae-29bde3e788ab");
  json_t *model = json_object_get(first, "dataModel");
  assert_string_equal(json_string_value(json_object_get(model, "name")), "Orders");
  assert_string_equal(json_string_value(json_object_get(model, "entityType")), "Order");
  json_t *in = json_array_get(json_object_get(first, "DeclaredInputs"), 0);
  assert_string_equal(json_string_value(json_object_get(in, "name")), "OrderNumber");
  assert_string_equal(json_string_value(json_object_get(in, "type")), "String");
  assert_true(json_is_true(json_object_get(in, "required")));
  assert_true(json_is_null(json_object_get(in, "default")));
  json_decref(r);
  /* sales may not read Payments, so RecentPayments is not theirs. */
  r = dg__tools_saved_queries_json(fx->cat, ct_principal(fx, "sales"));
  names_of(json_object_get(r, "savedQueries"), "name", names, sizeof(names));
  assert_string_equal(names, "LiveOrderStatus,OpenOrdersByCustomer,SearchOrders,TrackShipment,"
                             "ProductPrices,CustomerCredit");
  json_decref(r);
  /* auditor's role grants no Saved Query. */
  r = dg__tools_saved_queries_json(fx->cat, ct_principal(fx, "auditor"));
  assert_int_equal(json_array_size(json_object_get(r, "savedQueries")), 0);
  json_decref(r);
}

static void test_details_filter_fields(void **state) {
  fixture_t *fx = *state;
  dg_errctx_t err;
  char names[1024];
  const dg_principal_t *sales = ct_principal(fx, "sales");
  const dg_saved_query_t *q =
      dg__tools_find_saved_query(fx->cat, sales, "savedQueryId", CUSTOMER_CREDIT, &err);
  assert_non_null(q);
  json_t *r = dg__tools_saved_query_details_json(q, sales);
  names_of(json_object_get(r, "fields"), "name", names, sizeof(names));
  assert_string_equal(names, "Name,Email,Region");
  json_t *f = json_array_get(json_object_get(r, "fields"), 0);
  assert_string_equal(json_string_value(json_object_get(f, "type")), "String");
  assert_string_equal(json_string_value(json_object_get(f, "description")),
                      "Company name of the customer.");
  assert_string_equal(json_string_value(json_object_get(r, "requestType")), "REST");
  assert_int_equal(json_integer_value(json_object_get(r, "maxResults")), 100);
  json_decref(r);
  r = dg__tools_saved_query_details_json(q, ct_principal(fx, "admin"));
  names_of(json_object_get(r, "fields"), "name", names, sizeof(names));
  assert_string_equal(names, "Name,Email,Region,CreditLimit");
  json_decref(r);
}

static void test_find_refuses_unknown_and_forbidden(void **state) {
  fixture_t *fx = *state;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_null(dg__tools_find_saved_query(fx->cat, ct_principal(fx, "sales"), "savedQueryId",
                                         PAYMENTS, &err));
  assert_string_equal(err.message,
                      "Invalid argument 'savedQueryId': no Saved Query with id '" PAYMENTS
                      "'; call get_saved_queries for the valid ids.");
  assert_null(dg__tools_find_saved_query(fx->cat, ct_principal(fx, "auditor"), "savedQueryId",
                                         LIVE_STATUS, &err));
  assert_non_null(dg__tools_find_saved_query(fx->cat, ct_principal(fx, "admin"), "savedQueryId",
                                             "0DF62209-292D-4ECE-8B49-58AA7557460C", &err));
  /* Names are not ids. */
  assert_null(dg__tools_find_saved_query(fx->cat, ct_principal(fx, "admin"), "savedQueryId",
                                         "LiveOrderStatus", &err));
}

/* ---- Inputs ---------------------------------------------------------------------- */

/* Checks inputs (JSON text) of the query with the given id as admin. */
static int inputs(fixture_t *fx, const char *id, const char *text, const char ***values,
                  dg_errctx_t *err) {
  const dg_saved_query_t *q = dg_catalog_saved_query(fx->cat, id);
  json_t *in = json_loads(text, 0, NULL);
  assert_non_null(in);
  dg_errctx_clear(err);
  int rc = dg__tools_saved_inputs(q, in, fx->arena, values, err);
  json_array_append_new(fx->keep, in);
  return rc;
}

static void expect_input_error(fixture_t *fx, const char *id, const char *text, const char *param,
                               const char *message) {
  const char **values = NULL;
  dg_errctx_t err;
  assert_int_equal(inputs(fx, id, text, &values, &err), DG_EINVAL);
  assert_string_equal(err.param, param);
  assert_string_equal(err.message, message);
}

static void test_inputs_defaults_and_case(void **state) {
  fixture_t *fx = *state;
  const char **v = NULL;
  dg_errctx_t err;
  assert_int_equal(inputs(fx, OPEN_ORDERS,
                          "[{\"key\": \"customername\", \"value\": \"Acme\"}, {\"key\": "
                          "\"Since\", \"value\": \"\"}]",
                          &v, &err),
                   0);
  assert_string_equal(v[0], "Acme");
  assert_string_equal(v[1], "Open"); /* default */
  assert_null(v[2]);                 /* optional, empty counts as not given */
  assert_string_equal(v[3], "25");
  assert_int_equal(inputs(fx, OPEN_ORDERS,
                          "[{\"key\": \"CustomerName\", \"value\": \"A\"}, {\"key\": \"Limit\", "
                          "\"value\": \"-3\"}, {\"key\": \"Since\", \"value\": \"2024-02-29\"}]",
                          &v, &err),
                   0);
  assert_string_equal(v[3], "-3");
  assert_string_equal(v[2], "2024-02-29");
}

static void test_input_errors(void **state) {
  fixture_t *fx = *state;
  expect_input_error(fx, LIVE_STATUS, "[{\"key\": \"Order\", \"value\": \"SO-1\"}]",
                     "inputs[0].key",
                     "Invalid argument 'inputs[0].key': 'Order' is not an input of Saved Query "
                     "'LiveOrderStatus'; declared inputs: OrderNumber (String, required).");
  expect_input_error(fx, LIVE_STATUS, "[]", "inputs",
                     "Invalid argument 'inputs': the required input 'OrderNumber' (String) is "
                     "missing; add {\"key\": \"OrderNumber\", \"value\": ...}. Declared inputs: "
                     "OrderNumber (String, required).");
  expect_input_error(fx, LIVE_STATUS, "[{\"key\": \"OrderNumber\", \"value\": \"\"}]",
                     "inputs[0].value",
                     "Invalid argument 'inputs[0].value': input 'OrderNumber' is required and may "
                     "not be empty.");
  expect_input_error(fx, LIVE_STATUS,
                     "[{\"key\": \"OrderNumber\", \"value\": \"a\"}, {\"key\": \"ordernumber\", "
                     "\"value\": \"b\"}]",
                     "inputs[1].key",
                     "Invalid argument 'inputs[1].key': input 'OrderNumber' is given twice (also "
                     "inputs[0]); give each input once.");
  expect_input_error(
      fx, OPEN_ORDERS,
      "[{\"key\": \"CustomerName\", \"value\": \"A\"}, {\"key\": \"Limit\", "
      "\"value\": \"ten\"}]",
      "inputs[1].value",
      "Invalid argument 'inputs[1].value': 'ten' is not a valid Int for input "
      "'Limit'; expected a whole number from -2147483648 to 2147483647, such as 25.");
  expect_input_error(fx, OPEN_ORDERS,
                     "[{\"key\": \"Since\", \"value\": \"31/12/2024\"}, {\"key\": "
                     "\"CustomerName\", \"value\": \"A\"}]",
                     "inputs[0].value",
                     "Invalid argument 'inputs[0].value': '31/12/2024' is not a valid Date for "
                     "input 'Since'; expected a date as YYYY-MM-DD, such as 2025-03-31.");
  expect_input_error(fx, "1c769ad2-fd5e-4d09-adc9-b8cb1d98a7d6",
                     "[{\"key\": \"ActiveOnly\", \"value\": \"yes\"}]", "inputs[0].value",
                     "Invalid argument 'inputs[0].value': 'yes' is not a valid Boolean for input "
                     "'ActiveOnly'; expected true or false.");
  expect_input_error(fx, "6ad3624e-a7dd-4633-8bcc-9ec853bcd9f6",
                     "[{\"key\": \"MinAmount\", \"value\": \"1e3\"}]", "inputs[0].value",
                     "Invalid argument 'inputs[0].value': '1e3' is not a valid Decimal for input "
                     "'MinAmount'; expected a decimal number such as 1450.25.");
}

/* ---- Selection ------------------------------------------------------------------------ */

static void test_selection(void **state) {
  fixture_t *fx = *state;
  const dg_saved_query_t *q = dg_catalog_saved_query(fx->cat, CUSTOMER_CREDIT);
  bool *sel = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(
      dg__tools_saved_selection(q, ct_principal(fx, "admin"), NULL, fx->arena, &sel, &err), 0);
  for (size_t i = 0; i < q->nfields; i++)
    assert_true(sel[i]);
  json_t *props = json_loads("[\"region\", \"id\", \"NAME\"]", 0, NULL);
  assert_int_equal(
      dg__tools_saved_selection(q, ct_principal(fx, "admin"), props, fx->arena, &sel, &err), 0);
  assert_true(sel[0] && !sel[1] && sel[2] && !sel[3]);
  json_decref(props);
  /* Without any selection sales still never gets CreditLimit. */
  assert_int_equal(
      dg__tools_saved_selection(q, ct_principal(fx, "sales"), NULL, fx->arena, &sel, &err), 0);
  assert_true(sel[0] && sel[1] && sel[2] && !sel[3]);
  props = json_loads("[\"Name\", \"CreditLimit\"]", 0, NULL);
  assert_int_equal(
      dg__tools_saved_selection(q, ct_principal(fx, "sales"), props, fx->arena, &sel, &err),
      DG_EINVAL);
  assert_string_equal(err.param, "properties[1]");
  assert_string_equal(err.message,
                      "Invalid argument 'properties[1]': 'CreditLimit' is not a field of Saved "
                      "Query 'CustomerCredit'; its fields are: Name, Email, Region (and id, always "
                      "returned).");
  json_decref(props);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_list_by_user, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_details_filter_fields, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_find_refuses_unknown_and_forbidden, ct_setup,
                                      ct_teardown),
      cmocka_unit_test_setup_teardown(test_inputs_defaults_and_case, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_input_errors, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_selection, ct_setup, ct_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
