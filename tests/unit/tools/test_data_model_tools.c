/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for get_data_models and get_data_model_properties: the JSON
 * each builds for the sample configuration's users, filtered by their
 * permissions, and the error for a model id the caller cannot use. */
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

#define CUSTOMERS_ID "cb94c4ab-8c1d-4fae-b582-9746427cad35"
#define PRODUCTS_ID "1aca09b3-19ad-404d-adbd-f69a9319a687"
#define ORDERS_ID "8a03cbc2-7f01-4d47-bdf0-0755336a3a70"
#define PAYMENTS_ID "097d00c2-bc00-45fc-8b3b-5be0bae92720"
#define ORDERLINES_ID "e405b7c6-358c-4a55-a021-0999f4a91a40"

/* The names of the listed models, joined with commas. */
static void model_names(const json_t *result, char *out, size_t size) {
  const json_t *list = json_object_get(result, "dataModels");
  size_t i, len = 0;
  const json_t *m;
  out[0] = '\0';
  assert_true(json_is_array(list));
  json_array_foreach(list, i, m) {
    int n = snprintf(out + len, size - len, "%s%s", i ? "," : "",
                     json_string_value(json_object_get(m, "name")));
    len += (size_t)n;
  }
}

static const json_t *find_property(const json_t *result, const char *name) {
  size_t i;
  const json_t *p;
  json_array_foreach(json_object_get(result, "properties"), i, p) {
    if (strcmp(json_string_value(json_object_get(p, "propertyName")), name) == 0)
      return p;
  }
  return NULL;
}

static json_t *properties_of(fixture_t *fx, const char *user, const char *id) {
  const dg_principal_t *p = ct_principal(fx, user);
  dg_errctx_t err;
  dg_errctx_clear(&err);
  const dg_model_t *m = dg__tools_find_model(fx->cat, p, "dataModelId", id, &err);
  assert_non_null(m);
  json_t *result = dg__tools_model_properties_json(m, p);
  assert_non_null(result);
  return result;
}

/* ---- get_data_models ------------------------------------------------------------ */

static void test_models_per_user(void **state) {
  fixture_t *fx = *state;
  char names[512];
  json_t *admin = dg__tools_data_models_json(fx->cat, ct_principal(fx, "admin"));
  model_names(admin, names, sizeof(names));
  assert_string_equal(names, "Customers,Products,Orders,OrderLines,Files,Payments");
  json_t *sales = dg__tools_data_models_json(fx->cat, ct_principal(fx, "sales"));
  model_names(sales, names, sizeof(names));
  assert_string_equal(names, "Customers,Products,Orders,OrderLines,Files");
  json_t *auditor = dg__tools_data_models_json(fx->cat, ct_principal(fx, "auditor"));
  model_names(auditor, names, sizeof(names));
  assert_string_equal(names, "Orders,Payments");
  json_decref(admin);
  json_decref(sales);
  json_decref(auditor);
}

static void test_model_entry_shape(void **state) {
  fixture_t *fx = *state;
  json_t *result = dg__tools_data_models_json(fx->cat, ct_principal(fx, "auditor"));
  json_t *want = json_loads("{\"dataModels\": ["
                            "{\"dataModelId\": \"" ORDERS_ID "\", \"name\": \"Orders\","
                            " \"description\": \"Sales orders placed by customers.\","
                            " \"entityType\": \"Order\", \"entitySubType\": \"SalesOrder\"},"
                            "{\"dataModelId\": \"" PAYMENTS_ID "\", \"name\": \"Payments\","
                            " \"description\": \"Payments received against orders.\","
                            " \"entityType\": \"Payment\", \"entitySubType\": \"Receipt\"}]}",
                            0, NULL);
  assert_non_null(want);
  assert_true(json_equal(result, want));
  json_decref(want);
  json_decref(result);
}

/* ---- get_data_model_properties ---------------------------------------------------- */

/* The uses every property of the sample Products model reports: all are
 * stored, filterable and sortable; Name and SKU are keyword properties. */
#define USES_STRING(kw)                                                                            \
  "\"filterable\": true, \"sortable\": true, \"groupable\": true, \"aggregatable\": true, "        \
  "\"aggregateFunctions\": [\"DistinctCount\"], \"keywordSearchable\": " kw
#define USES_NUMBER                                                                                \
  "\"filterable\": true, \"sortable\": true, \"groupable\": true, \"aggregatable\": true, "        \
  "\"aggregateFunctions\": [\"Sum\", \"Average\", \"Min\", \"Max\", \"DistinctCount\"], "          \
  "\"keywordSearchable\": false"

static void test_properties_shape(void **state) {
  fixture_t *fx = *state;
  json_t *result = properties_of(fx, "sales", PRODUCTS_ID);
  json_t *want = json_loads(
      "{\"dataModelId\": \"" PRODUCTS_ID "\", \"name\": \"Products\", \"entityType\": "
      "\"Product\", \"entitySubType\": \"Item\", \"properties\": ["
      "{\"propertyName\": \"Name\", \"dataType\": \"String\", \"description\": \"Product "
      "name.\", \"required\": true, \"readOnly\": false, " USES_STRING(
          "true") "},"
                  "{\"propertyName\": \"SKU\", \"dataType\": \"String\", \"description\": \"Stock "
                  "keeping "
                  "unit, unique per product.\", \"required\": true, \"readOnly\": "
                  "false, " USES_STRING(
                      "true") "},"
                              "{\"propertyName\": \"Category\", \"dataType\": \"String\", "
                              "\"description\": \"Product "
                              "category.\", \"required\": false, \"readOnly\": false, " USES_STRING(
                                  "false") "},"
                                           "{\"propertyName\": \"Price\", \"dataType\": "
                                           "\"Decimal\", \"description\": \"List price "
                                           "per unit.\", \"required\": false, \"readOnly\": "
                                           "false, " USES_NUMBER "},"
                                           "{\"propertyName\": \"Active\", \"dataType\": "
                                           "\"Boolean\", \"description\": \"Whether the "
                                           "product can still be ordered.\", \"required\": false, "
                                           "\"readOnly\": false, " USES_STRING("false") "}]}",
      0, NULL);
  assert_non_null(want);
  assert_true(json_equal(result, want));
  json_decref(want);
  json_decref(result);
}

static bool flag(const json_t *result, const char *prop, const char *use) {
  const json_t *v = json_object_get(find_property(result, prop), use);
  assert_true(json_is_boolean(v));
  return json_is_true(v);
}

/* Filterable, sortable, groupable and the aggregate functions follow the
 * configuration and the property's kind, as the query parsers apply them. */
static void test_property_uses(void **state) {
  fixture_t *fx = *state;
  json_t *lines = properties_of(fx, "admin", ORDERLINES_ID);
  assert_false(flag(lines, "LineItemId", "filterable"));
  assert_false(flag(lines, "LineItemId", "sortable"));
  assert_true(flag(lines, "LineItemId", "groupable"));
  assert_true(flag(lines, "Quantity", "filterable"));
  assert_true(flag(lines, "Order", "filterable"));
  assert_true(flag(lines, "Order", "groupable"));
  json_t *orders = properties_of(fx, "admin", ORDERS_ID);
  assert_false(flag(orders, "CalculatedOrderId", "sortable"));
  assert_true(flag(orders, "CalculatedOrderId", "filterable"));
  /* An Inbound collection holds no value: nothing but expand uses it. */
  const char *uses[] = {"filterable", "sortable", "groupable", "aggregatable", "keywordSearchable"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(uses); i++)
    assert_false(flag(orders, "OrderLines", uses[i]));
  assert_int_equal(
      json_array_size(json_object_get(find_property(orders, "OrderLines"), "aggregateFunctions")),
      0);
  json_t *dates = json_loads("[\"Min\", \"Max\", \"DistinctCount\"]", 0, NULL);
  assert_true(
      json_equal(json_object_get(find_property(orders, "OrderDate"), "aggregateFunctions"), dates));
  json_decref(dates);
  json_decref(orders);
  json_decref(lines);
}

static void test_denied_property_hidden(void **state) {
  fixture_t *fx = *state;
  json_t *sales = properties_of(fx, "sales", CUSTOMERS_ID);
  json_t *admin = properties_of(fx, "admin", CUSTOMERS_ID);
  assert_null(find_property(sales, "CreditLimit"));
  assert_non_null(find_property(admin, "CreditLimit"));
  assert_non_null(find_property(sales, "Name"));
  assert_int_equal(json_array_size(json_object_get(sales, "properties")) + 1,
                   json_array_size(json_object_get(admin, "properties")));
  const json_t *region = find_property(sales, "Region");
  json_t *choices = json_loads("[\"APAC\", \"EMEA\", \"AMER\"]", 0, NULL);
  assert_true(json_equal(json_object_get(region, "choices"), choices));
  assert_null(json_object_get(find_property(sales, "Email"), "choices"));
  assert_null(json_object_get(find_property(sales, "Email"), "reference"));
  json_decref(choices);
  json_decref(sales);
  json_decref(admin);
}

static void test_reference_objects(void **state) {
  fixture_t *fx = *state;
  json_t *admin = properties_of(fx, "admin", ORDERS_ID);
  json_t *sales = properties_of(fx, "sales", ORDERS_ID);
  const json_t *pay_admin = json_object_get(find_property(admin, "Payments"), "reference");
  const json_t *pay_sales = json_object_get(find_property(sales, "Payments"), "reference");
  json_t *want = json_loads("{\"direction\": \"Inbound\", \"cardinality\": \"OneToMany\","
                            " \"targetEntityType\": \"Payment\", \"targetEntitySubType\": "
                            "\"Receipt\", \"targetDataModelId\": \"" PAYMENTS_ID "\","
                            " \"expandable\": true, \"derived\": true}",
                            0, NULL);
  assert_true(json_equal(pay_admin, want));
  json_object_set_new(want, "expandable", json_false());
  assert_true(json_equal(pay_sales, want));
  assert_true(json_is_true(json_object_get(find_property(sales, "Payments"), "readOnly")));

  const json_t *rep = json_object_get(find_property(admin, "SalesRep"), "reference");
  assert_true(json_is_null(json_object_get(rep, "targetDataModelId")));
  assert_true(json_is_false(json_object_get(rep, "expandable")));
  assert_string_equal(json_string_value(json_object_get(rep, "targetEntityType")), "User");
  assert_string_equal(json_string_value(json_object_get(rep, "direction")), "Outbound");

  const json_t *cust = json_object_get(find_property(sales, "Customer"), "reference");
  assert_string_equal(json_string_value(json_object_get(cust, "cardinality")), "OneToOne");
  assert_string_equal(json_string_value(json_object_get(cust, "targetDataModelId")), CUSTOMERS_ID);
  assert_true(json_is_true(json_object_get(cust, "expandable")));
  assert_true(json_is_false(json_object_get(cust, "derived")));
  json_decref(want);
  json_decref(admin);
  json_decref(sales);
}

/* The auditor reads Orders but not Customers or Files. */
static void test_expandable_follows_target_access(void **state) {
  fixture_t *fx = *state;
  json_t *auditor = properties_of(fx, "auditor", ORDERS_ID);
  const char *names[] = {"Customer", "OrderLines", "Files", "Payments"};
  const bool want[] = {false, false, false, true};
  for (size_t i = 0; i < DG_ARRAY_SIZE(names); i++) {
    const json_t *ref = json_object_get(find_property(auditor, names[i]), "reference");
    assert_non_null(ref);
    assert_int_equal(json_is_true(json_object_get(ref, "expandable")), want[i]);
  }
  json_decref(auditor);
}

/* ---- Errors ------------------------------------------------------------------------- */

static void expect_no_model(fixture_t *fx, const char *user, const char *id) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_null(dg__tools_find_model(fx->cat, ct_principal(fx, user), "dataModelId", id, &err));
  char want[256];
  snprintf(want, sizeof(want),
           "Invalid argument 'dataModelId': no Data Model with id '%s'; call get_data_models for "
           "the valid ids.",
           id ? id : "");
  assert_string_equal(err.message, want);
  assert_string_equal(err.param, "dataModelId");
  assert_int_equal(err.code, DG_EINVAL);
}

static void test_unknown_or_unreadable_model(void **state) {
  fixture_t *fx = *state;
  expect_no_model(fx, "admin", "00000000-0000-4000-8000-000000000000");
  /* A model the caller may not read is reported as unknown. */
  expect_no_model(fx, "sales", PAYMENTS_ID);
  expect_no_model(fx, "auditor", CUSTOMERS_ID);
  expect_no_model(fx, "admin", NULL);
  /* Ids compare in any case. */
  dg_errctx_t err;
  const dg_model_t *m = dg__tools_find_model(fx->cat, ct_principal(fx, "auditor"), "dataModelId",
                                             "097D00C2-BC00-45FC-8B3B-5BE0BAE92720", &err);
  assert_non_null(m);
  assert_string_equal(m->name, "Payments");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_models_per_user, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_model_entry_shape, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_properties_shape, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_property_uses, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_denied_property_hidden, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_reference_objects, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_expandable_follows_target_access, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_unknown_or_unreadable_model, ct_setup, ct_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
