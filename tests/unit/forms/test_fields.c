/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for fields.c and card.c: which properties are form fields
 * for each role, the checks of [{key, value}] items with their exact
 * messages, the text of stored values, records read back by property
 * name, and the Adaptive Card built from a field list. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/forms.h"
#include "tools/catalog_test.h"

static json_t *parse(fixture_t *fx, const char *text) {
  json_t *v = json_loads(text, 0, NULL);
  assert_non_null(v);
  dg_arena_defer(fx->arena, (void (*)(void *))json_decref, v);
  return v;
}

static void test_fields(void **state) {
  fixture_t *fx = *state;
  const dg_model_t *c = dg_catalog_model_by_name(fx->cat, "Customers");
  char names[512];
  dg_forms_field_names(ct_principal(fx, "admin"), c, names, sizeof(names));
  assert_string_equal(names, "Name, Email, Region, CreditLimit, RenewalDate");
  /* A denied property is no field; a read-only or Inbound one never is. */
  dg_forms_field_names(ct_principal(fx, "sales"), c, names, sizeof(names));
  assert_string_equal(names, "Name, Email, Region, RenewalDate");
  assert_false(dg_forms_field(ct_principal(fx, "admin"), c, dg_model_property(c, "CreatedAt")));
  assert_false(dg_forms_field(ct_principal(fx, "admin"), c, dg_model_property(c, "Orders")));
}

static int check(fixture_t *fx, const char *who, const char *model, const char *items,
                 dg_forms_value_t **vals, size_t *n, dg_errctx_t *err) {
  dg_errctx_clear(err);
  return dg_forms_values(ct_principal(fx, who), dg_catalog_model_by_name(fx->cat, model),
                         parse(fx, items), "formValues", fx->arena, vals, n, err);
}

static void test_values(void **state) {
  fixture_t *fx = *state;
  dg_forms_value_t *v = NULL;
  size_t n = 0;
  dg_errctx_t err;
  assert_int_equal(
      check(fx, "admin", "Orders",
            "[{\"key\": \"orderNumber\", \"value\": \"SO-1\"}, {\"key\": \"Quantity\", "
            "\"value\": \"\"}, {\"key\": \"Amount\", \"value\": \"12.5\"}, {\"key\": "
            "\"Customer\", \"value\": \"7C08B797-FAC4-5249-874C-557B0F4557F5\"}]",
            &v, &n, &err),
      0);
  assert_int_equal(n, 4);
  assert_string_equal(v[0].prop->name, "OrderNumber");
  assert_int_equal(v[1].value.kind, DG_STORE_NULL); /* "" clears a non-String */
  assert_true(json_is_null(v[1].json));
  assert_true(v[2].value.kind == DG_STORE_REAL && v[2].value.d == 12.5);
  assert_string_equal(v[3].value.text, "7c08b797-fac4-5249-874c-557b0f4557f5");
  assert_string_equal(v[3].param, "formValues[3].value");
  static const struct {
    const char *who, *model, *items, *message;
  } bad[] = {
      {"sales", "Customers", "[{\"key\": \"CreditLimit\", \"value\": \"1\"}]",
       "Invalid argument 'formValues[0].key': 'CreditLimit' is not a field of this form; the "
       "fields of the Customers form are: Name, Email, Region, RenewalDate."},
      {"admin", "Customers", "[{\"key\": \"CreatedAt\", \"value\": \"2024-01-01\"}]",
       "Invalid argument 'formValues[0].key': 'CreatedAt' is read-only (the gateway and its save "
       "actions set it); the fields of the Customers form are: Name, Email, Region, "
       "CreditLimit, RenewalDate."},
      {"admin", "Customers", "[{\"key\": \"Orders\", \"value\": \"x\"}]",
       "Invalid argument 'formValues[0].key': 'Orders' is a list of related records (an Inbound "
       "reference) and holds no value of its own; the fields of the Customers form are: Name, "
       "Email, Region, CreditLimit, RenewalDate."},
      {"admin", "Customers",
       "[{\"key\": \"Name\", \"value\": \"a\"}, {\"key\": \"name\", \"value\": \"b\"}]",
       "Invalid argument 'formValues[1].key': 'Name' is given twice (also formValues[0]); give "
       "each field once."},
      {"admin", "Customers", "[{\"key\": \"RenewalDate\", \"value\": \"soon\"}]",
       "Invalid argument 'formValues[0].value': got \"soon\"; RenewalDate is Date, so allowed: a "
       "date written YYYY-MM-DD, such as 2024-03-01, or null."},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++) {
    assert_int_equal(check(fx, bad[i].who, bad[i].model, bad[i].items, &v, &n, &err), DG_EINVAL);
    assert_string_equal(err.message, bad[i].message);
  }
}

static void test_text_and_lower(void **state) {
  fixture_t *fx = *state;
  char buf[64];
  json_t *v = parse(fx, "[117.61, 8, true, \"2024-02-11\", null]");
  assert_string_equal(dg_forms_text(json_array_get(v, 0), buf, sizeof(buf)), "117.61");
  assert_string_equal(dg_forms_text(json_array_get(v, 1), buf, sizeof(buf)), "8");
  assert_string_equal(dg_forms_text(json_array_get(v, 2), buf, sizeof(buf)), "true");
  assert_string_equal(dg_forms_text(json_array_get(v, 3), buf, sizeof(buf)), "2024-02-11");
  assert_null(dg_forms_text(json_array_get(v, 4), buf, sizeof(buf)));
  assert_string_equal(dg_forms_lower(fx->arena, "AB-Cd"), "ab-cd");
}

static json_t *input_at(json_t *card, size_t container, size_t item) {
  json_t *c = json_array_get(json_object_get(card, "body"), container);
  assert_string_equal(json_string_value(json_object_get(c, "type")), "Container");
  json_t *in = json_array_get(json_object_get(c, "items"), item);
  assert_non_null(in);
  return in;
}

static const char *str(json_t *o, const char *key) {
  return json_string_value(json_object_get(o, key));
}

static void test_card(void **state) {
  fixture_t *fx = *state;
  const dg_model_t *o = dg_catalog_model_by_name(fx->cat, "Orders");
  json_t *fields =
      parse(fx, "[{\"key\": \"Status\", \"label\": \"State\", \"type\": \"String\", \"control\": "
                "\"choice\", \"required\": false, \"group\": \"Order\", \"value\": \"Open\", "
                "\"choices\": [{\"title\": \"Open\", \"value\": \"Open\"}]}, "
                "{\"key\": \"Quantity\", \"label\": \"Qty\", \"type\": \"Int\", \"control\": "
                "\"number\", \"required\": true, \"value\": \"8\"}, "
                "{\"key\": \"Paid\", \"label\": \"Paid\", \"type\": \"Boolean\", \"control\": "
                "\"toggle\", \"required\": false, \"value\": null}, "
                "{\"key\": \"Rep\", \"label\": \"Rep\", \"type\": \"Reference\", \"control\": "
                "\"lookup\", \"required\": false, \"value\": null}]");
  json_t *card = dg_forms_card(o, fields, "id-1", NULL);
  assert_string_equal(str(card, "type"), "AdaptiveCard");
  assert_string_equal(str(card, "version"), "1.5");
  json_t *body = json_object_get(card, "body");
  assert_string_equal(str(json_array_get(body, 0), "text"), "Orders");
  /* The group "Order" under its heading, then the fields without a group. */
  json_t *heading = input_at(card, 2, 0);
  assert_string_equal(str(heading, "text"), "Order");
  json_t *status = input_at(card, 2, 1);
  assert_string_equal(str(status, "type"), "Input.ChoiceSet");
  assert_string_equal(str(status, "id"), "Status");
  assert_string_equal(str(status, "label"), "State");
  assert_string_equal(str(status, "value"), "Open");
  json_t *qty = input_at(card, 3, 0);
  assert_string_equal(str(qty, "type"), "Input.Number");
  assert_int_equal(json_integer_value(json_object_get(qty, "value")), 8);
  assert_true(json_is_true(json_object_get(qty, "isRequired")));
  assert_string_equal(str(qty, "errorMessage"), "Qty: enter a whole number.");
  json_t *paid = input_at(card, 3, 1);
  assert_string_equal(str(paid, "type"), "Input.Toggle");
  assert_string_equal(str(paid, "title"), "Paid");
  assert_string_equal(str(paid, "value"), "false");
  json_t *rep = input_at(card, 3, 2);
  assert_string_equal(str(rep, "type"), "Input.Text");
  assert_non_null(str(rep, "regex"));
  json_t *submit = json_array_get(json_object_get(card, "actions"), 0);
  assert_string_equal(str(submit, "type"), "Action.Submit");
  assert_string_equal(str(json_object_get(submit, "data"), "id"), "id-1");
  assert_string_equal(str(json_object_get(submit, "data"), "dataModelId"), o->id);
  json_decref(card);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_fields, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_values, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_text_and_lower, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_card, ct_setup, ct_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
