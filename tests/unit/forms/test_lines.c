/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for lines.c: which child lists a caller may edit with a
 * record, and submit_data_entry_form's childLists checked as a whole into
 * store changes (an added line with a new id, its reference to the record
 * and its defaults; a modified and a removed line; the references its
 * values name), with the exact message of each refusal. */
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

#define ORDER "83b6460c-7039-56c3-9694-e8fb46ec2322"
#define LINE_A "00fc00e4-f93d-5619-bea3-c81d1427ce26"
#define LINE_B "958fb4af-e9cf-5b08-85b8-860ef11dc25d"
#define PRODUCT "8d773c1e-fbb4-5c19-bc4a-6f1a80282d3d"

static int check(fixture_t *fx, const char *who, bool create, const char *lists,
                 dg_forms_lines_t *out, dg_errctx_t *err) {
  json_t *v = json_loads(lists, 0, NULL);
  assert_non_null(v);
  json_array_append_new(fx->keep, v);
  const dg_model_t *orders = dg_catalog_model_by_name(fx->cat, "Orders");
  dg_forms_lines_req_t req = {.principal = ct_principal(fx, who),
                              .model = orders,
                              .endpoint = dg_catalog_form_endpoint(fx->cat, orders),
                              .parent_id = ORDER,
                              .create = create,
                              .lists = v};
  dg_errctx_clear(err);
  return dg_forms_check_lines(&req, fx->arena, out, err);
}

static void test_lists(void **state) {
  fixture_t *fx = *state;
  const dg_model_t *orders = dg_catalog_model_by_name(fx->cat, "Orders");
  const dg_endpoint_t *ep = dg_catalog_form_endpoint(fx->cat, orders);
  const dg_child_config_t *c = NULL;
  char names[256];
  /* The lists the form endpoint saves; without one, none. */
  dg_forms_line_list_names(ct_principal(fx, "admin"), orders, ep, names, sizeof(names));
  assert_string_equal(names, "OrderLines");
  assert_true(dg_forms_line_list(ct_principal(fx, "admin"), orders, ep,
                                 dg_model_property(orders, "OrderLines"), &c));
  assert_ptr_equal(c, &ep->children[0]);
  dg_forms_line_list_names(ct_principal(fx, "admin"), orders, NULL, names, sizeof(names));
  assert_string_equal(names, "none");
  /* A list of a model the caller may not read is none of its lists. */
  dg_forms_line_list_names(ct_principal(fx, "auditor"), orders, ep, names, sizeof(names));
  assert_string_equal(names, "none");
}

static void test_changes(void **state) {
  fixture_t *fx = *state;
  dg_forms_lines_t out;
  dg_errctx_t err;
  assert_int_equal(check(fx, "sales", false,
                         "[{\"list\": \"orderlines\", \"changes\": ["
                         "{\"formValues\": [{\"key\": \"SKU\", \"value\": \"X-1\"}, {\"key\": "
                         "\"Product\", \"value\": \"" PRODUCT "\"}]},"
                         "{\"id\": \"" LINE_A "\", \"formValues\": [{\"key\": \"Quantity\", "
                         "\"value\": \"4\"}]},"
                         "{\"id\": \"" LINE_B "\", \"op\": \"remove\"}]}]",
                         &out, &err),
                   0);
  assert_int_equal(out.nlists, 1);
  assert_int_equal(out.nchanges, 3);
  const dg_store_child_change_t *add = &out.changes[0], *upd = &out.changes[1],
                                *rem = &out.changes[2];
  /* The added line: a new id, its values, the default Quantity, the order. */
  assert_int_equal(add->write.mode, DG_STORE_CREATE);
  assert_true(dg_uuid_valid(add->write.id));
  assert_int_equal(add->write.nvalues, 4);
  assert_string_equal(add->write.props[2]->name, "Quantity");
  assert_int_equal(add->write.values[2].i, 1);
  assert_string_equal(add->write.props[3]->name, "Order");
  assert_string_equal(add->write.values[3].text, ORDER);
  assert_int_equal(out.nrefs, 1);
  assert_string_equal(out.refs[0].id, PRODUCT);
  assert_string_equal(out.refs[0].param, "childLists[0].changes[0].formValues[1].value");
  assert_int_equal(upd->write.mode, DG_STORE_UPDATE);
  assert_false(upd->remove);
  assert_string_equal(upd->write.id, LINE_A);
  assert_int_equal(upd->write.nvalues, 1);
  assert_string_equal(upd->param, "childLists[0].changes[1].id");
  assert_true(rem->remove);
  assert_string_equal(rem->write.id, LINE_B);
  assert_string_equal(rem->parent->name, "Order");
  json_t *shown = dg_forms_lines_json(&out);
  char *text = json_dumps(shown, JSON_COMPACT);
  char want[512];
  snprintf(want, sizeof(want),
           "[{\"list\":\"OrderLines\",\"added\":[\"%s\"],\"updated\":[\"" LINE_A
           "\"],\"removed\":[\"" LINE_B "\"]}]",
           add->write.id);
  assert_string_equal(text, want);
  free(text);
  json_decref(shown);
}

#define REFUSED(fx, who, create, lists, want)                                                      \
  do {                                                                                             \
    dg_forms_lines_t out_;                                                                         \
    dg_errctx_t err_;                                                                              \
    assert_int_not_equal(check(fx, who, create, lists, &out_, &err_), 0);                          \
    assert_string_equal(err_.message, want);                                                       \
  } while (0)

static void test_refusals(void **state) {
  fixture_t *fx = *state;
  REFUSED(fx, "admin", false, "[{\"list\": \"Payments\", \"changes\": []}]",
          "Invalid argument 'childLists[0].list': 'Payments' is not a list of lines of the "
          "Orders form saved by endpoint OrderEdit; its lists are: OrderLines.");
  REFUSED(fx, "admin", false,
          "[{\"list\": \"OrderLines\", \"changes\": []}, {\"list\": \"OrderLines\", "
          "\"changes\": []}]",
          "Invalid argument 'childLists[1].list': 'OrderLines' is given twice (also "
          "childLists[0]); give all the changes of a list in one entry.");
  REFUSED(fx, "admin", false,
          "[{\"list\": \"OrderLines\", \"changes\": [{\"op\": \"update\", \"formValues\": []}]}]",
          "Invalid argument 'childLists[0].changes[0].id': op \"update\" needs the id of the line "
          "(from get_data_entry_form); leave op out or give \"add\" for a new line.");
  REFUSED(fx, "admin", true,
          "[{\"list\": \"OrderLines\", \"changes\": [{\"id\": \"" LINE_A "\", \"op\": "
          "\"remove\"}]}]",
          "Invalid argument 'childLists[0].changes[0].op': \"remove\" is not possible while the "
          "Orders record is created (it has no lines yet); allowed: \"add\".");
  REFUSED(fx, "admin", false,
          "[{\"list\": \"OrderLines\", \"changes\": [{\"id\": \"" LINE_A "\"}, {\"id\": "
          "\"" LINE_B "\"}, {\"id\": \"" LINE_A "\", \"op\": \"remove\"}]}]",
          "Invalid argument 'childLists[0].changes[2].id': line '" LINE_A "' is given twice in "
          "childLists[0]; give each line once.");
  REFUSED(fx, "admin", false,
          "[{\"list\": \"OrderLines\", \"changes\": [{\"formValues\": [{\"key\": \"Order\", "
          "\"value\": \"" ORDER "\"}]}]}]",
          "Invalid argument 'childLists[0].changes[0].formValues[0].key': 'Order' is set by the "
          "call (the line belongs to the submitted Orders record); leave it out.");
  REFUSED(fx, "admin", false,
          "[{\"list\": \"OrderLines\", \"changes\": [{\"formValues\": [{\"key\": \"LineItemId\", "
          "\"value\": \"x\"}]}]}]",
          "Invalid argument 'childLists[0].changes[0].formValues[0].key': 'LineItemId' is "
          "read-only (the gateway and its save actions set it); the fields of the OrderLines "
          "form are: Order, Product, SKU, Quantity, UnitPrice.");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_lists, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_changes, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_refusals, ct_setup, ct_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
