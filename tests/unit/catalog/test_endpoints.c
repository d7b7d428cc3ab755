/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for endpoints.json: the sample's order edit trees (REST and
 * GraphQL) laid out in execution order with their extractions resolved;
 * each kind of problem with its exact "file: json/path: message" line (a
 * session value no earlier action produces, a property that does not
 * exist, the shape of actions, extractions, child configurations, cycles,
 * filters); and the --explain-endpoint output. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf_test.h"
#include "datagate/text.h"

static const char *sample_dir(void) {
  static char dir[4096];
  const char *src = getenv("DG_SOURCE_DIR");
  snprintf(dir, sizeof(dir), "%s/conf", src ? src : ".");
  return dir;
}

static dg_catalog_t *load_sample(void) {
  dg_catalog_t *cat = NULL;
  assert_int_equal(dg_catalog_load(sample_dir(), &cat, NULL), 0);
  return cat;
}

/* The sample's endpoints.json, parsed, for a test to change. */
static json_t *sample_doc(void) {
  json_error_t jerr;
  json_t *doc = json_loads(conf_test_read_sample("endpoints.json"), 0, &jerr);
  assert_non_null(doc);
  return doc;
}

/* Sets the value at a JSON pointer of doc (every step but the last must
 * exist; "-" appends to an array). */
static void set(json_t *doc, const char *pointer, json_t *value) {
  char buf[512];
  dg_strlcpy(buf, pointer, sizeof(buf));
  json_t *at = doc;
  char *key = buf + 1;
  for (char *slash = strchr(key, '/'); slash != NULL; slash = strchr(key, '/')) {
    *slash = '\0';
    at = json_is_array(at) ? json_array_get(at, strtoul(key, NULL, 10)) : json_object_get(at, key);
    assert_non_null(at);
    key = slash + 1;
  }
  if (json_is_array(at) && strcmp(key, "-") == 0)
    json_array_append_new(at, value);
  else if (json_is_array(at))
    json_array_set_new(at, strtoul(key, NULL, 10), value);
  else if (value == NULL)
    json_object_del(at, key);
  else
    json_object_set_new(at, key, value);
}

static json_t *parse(const char *text) {
  json_error_t jerr;
  json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);
  if (v == NULL)
    fail_msg("bad test JSON '%s': %s", text, jerr.text);
  return v;
}

/* Loads the sample configuration with doc as endpoints.json (doc is
 * released); with want, expects exactly those problem lines. */
static dg_catalog_t *load_with(json_t *doc, const char *const *want, size_t nwant) {
  char *text = json_dumps(doc, JSON_INDENT(1));
  json_decref(doc);
  conf_test_dir_t t;
  conf_test_make_sample_connectors(&t);
  conf_test_write(t.dir, "endpoints.json", text);
  free(text);
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = NULL;
  int rc = dg_catalog_load(t.dir, &cat, &errors);
  for (size_t i = 0; i < errors.count; i++)
    fprintf(stderr, "got: %s\n", errors.lines[i]);
  for (size_t i = 0; i < nwant && i < errors.count; i++)
    assert_string_equal(errors.lines[i], want[i]);
  assert_int_equal(errors.count, nwant);
  assert_int_equal(rc, nwant ? DG_ECONFIG : 0);
  dg_config_errors_free(&errors);
  conf_test_remove(&t);
  return cat;
}

#define EXPECT(doc, ...)                                                                           \
  do {                                                                                             \
    static const char *const want_[] = {__VA_ARGS__};                                              \
    load_with(doc, want_, DG_ARRAY_SIZE(want_));                                                   \
  } while (0)

/* ---- The sample ----------------------------------------------------------------- */

static void test_sample_rest_tree(void **state) {
  (void)state;
  dg_catalog_t *cat = load_sample();
  assert_int_equal(cat->nendpoints, 5);
  const dg_model_t *orders = dg_catalog_model_by_name(cat, "Orders");
  const dg_endpoint_t *e = dg_catalog_form_endpoint(cat, orders);
  assert_non_null(e);
  assert_string_equal(e->name, "OrderEdit");
  assert_ptr_equal(dg_catalog_endpoint(cat, "2D7E0B54-8A3F-4C61-9E0D-5F1B7C3A9E01"), e);
  assert_null(dg_catalog_form_endpoint(cat, dg_catalog_model_by_name(cat, "OrderLines")));
  assert_int_equal(e->nsteps, 3);
  assert_int_equal(e->first_post, 2);
  assert_ptr_equal(e->steps[0], e->root);
  assert_int_equal(e->steps[0]->phase, DG_PHASE_ROOT);
  assert_false(e->root->on_create);
  assert_true(e->root->on_update);
  assert_string_equal(dg_template_text(e->root->request.path),
                      "/orders/{OrderNumber}/edits/begin.json");
  const dg_action_t *gsv = e->steps[1];
  assert_int_equal(gsv->type, DG_ACTION_GET_SESSION_VALUES);
  assert_int_equal(gsv->phase, DG_PHASE_PRE_CHILD);
  assert_ptr_equal(gsv->source, e->root);
  assert_int_equal(gsv->nextractions, 2);
  const dg_extraction_t *basic = &gsv->extractions[0], *coll = &gsv->extractions[1];
  assert_int_equal(basic->kind, DG_EXTRACT_BASIC);
  assert_string_equal(basic->model_property->name, "CalculatedOrderId");
  assert_string_equal(dg_jsonpath_text(basic->connector_property), "calculatedOrder.id");
  assert_int_equal(coll->kind, DG_EXTRACT_COLLECTION);
  assert_string_equal(coll->model_property->name, "LineItemId");
  assert_string_equal(coll->target_list->name, "OrderLines");
  assert_string_equal(coll->model_match_property->name, "SKU");
  /* The list path the connector property was written with is taken off. */
  assert_string_equal(dg_jsonpath_text(coll->connector_property), "id");
  assert_string_equal(dg_jsonpath_text(coll->connector_match), "sku");
  assert_string_equal(dg_jsonpath_text(coll->connector_list), "calculatedOrder.lineItems");
  const dg_action_t *commit = e->steps[2];
  assert_int_equal(commit->phase, DG_PHASE_POST_CHILD);
  assert_true(commit->after_child_configs);
  assert_string_equal(commit->path, "/endpoints/0/save/actions/1");
  assert_string_equal(commit->responses[0].property->name, "Amount");
  assert_int_equal(e->nchildren, 1);
  assert_string_equal(e->children[0].list->name, "OrderLines");
  assert_string_equal(e->children[0].endpoint->name, "OrderLineEdit");
  assert_ptr_equal(e->children[0].endpoint, dg_catalog_endpoint(cat, "OrderLineEdit"));
  assert_int_equal(e->children[0].concurrency, 1);
  assert_string_equal(e->children[0].order_by->name, "SKU");
  /* Lines a form call adds go to OrderLineAdd; removed ones to the same
   * endpoint with quantity 0, as the commerce system's edits remove lines. */
  assert_ptr_equal(e->children[0].add_endpoint, dg_catalog_endpoint(cat, "OrderLineAdd"));
  assert_null(e->children[0].remove_endpoint);
  assert_true(e->children[0].removable);
  assert_int_equal(e->children[0].nremove_values, 1);
  assert_string_equal(e->children[0].remove_props[0]->name, "Quantity");
  assert_string_equal(e->children[0].remove_values[0], "0");
  const dg_action_t *line = e->children[0].endpoint->root;
  assert_int_equal(line->nmappings, 1);
  assert_int_equal(line->mappings[0].nkeys, 2);
  assert_string_equal(line->mappings[0].keys[1], "quantity");
  dg_catalog_unref(cat);
}

static void test_sample_graphql_tree(void **state) {
  (void)state;
  dg_catalog_t *cat = load_sample();
  const dg_endpoint_t *e = dg_catalog_endpoint(cat, "OrderEditGraphql");
  assert_false(e->form_submit);
  assert_int_equal(e->root->request.kind, DG_REQUEST_GRAPHQL);
  assert_string_equal(e->root->request.operation_name, "orderEditBegin");
  const dg_extraction_t *x = &e->steps[1]->extractions[1];
  assert_int_equal(x->kind, DG_EXTRACT_MULTIPLE_LISTS);
  assert_null(x->model_match_property); /* the child's id */
  assert_int_equal(x->nlists, 2);
  assert_string_equal(x->lists[0].prefix, "original");
  assert_true(dg_jsonpath_is_multi(x->lists[1].path));
  assert_string_equal(dg_jsonpath_text(x->connector_match), "original.node.id");
  assert_string_equal(dg_jsonpath_text(x->connector_property), "calculated.node.id");
  const dg_template_t *vars = e->children[0].endpoint->root->request.graphql_variables;
  assert_string_equal(dg_template_var(vars, 0)->name, "Order.CalculatedOrderId");
  assert_true(dg_template_var(vars, 0)->session);
  assert_true(dg_template_var(vars, 1)->session);
  dg_catalog_unref(cat);
}

/* ---- Session values and properties -------------------------------------------------- */

static void test_session_value_no_earlier_action(void **state) {
  (void)state;
  json_t *doc = sample_doc();
  set(doc, "/endpoints/0/save/request/path",
      json_string("/orders/{SESSION:CalculatedOrderId}/begin.json"));
  set(doc, "/endpoints/0/save/actions/1/request/path",
      json_string("/orders/{SESSION:LineItemId}/{SESSION:Nothing}"));
  EXPECT(doc,
         "endpoints.json: /endpoints/0/save/request/path: {SESSION:CalculatedOrderId}: no earlier "
         "action produces this session value when 'OrderEdit' runs on its own (available here: "
         "none); 'CalculatedOrderId' is produced later, by 'Extract Edit Session' "
         "(/endpoints/0/save/actions/0)",
         "endpoints.json: /endpoints/0/save/actions/1/request/path: {SESSION:LineItemId}: no "
         "earlier action produces this session value when 'OrderEdit' runs on its own "
         "(available here: CalculatedOrderId); 'LineItemId' is a value of each 'OrderLines' "
         "child, which only the child saves can use",
         "endpoints.json: /endpoints/0/save/actions/1/request/path: {SESSION:Nothing}: no earlier "
         "action produces this session value when 'OrderEdit' runs on its own (available here: "
         "CalculatedOrderId)");
}

static void test_child_scope(void **state) {
  (void)state;
  json_t *doc = sample_doc();
  /* A header value of the parent does not reach the child ... */
  set(doc, "/endpoints/1/save/request/mappings/0/value",
      json_string("{SESSION:CalculatedOrderId}"));
  /* ... and the parent record is reached only through the list's reference. */
  set(doc, "/endpoints/1/save/request/path", json_string("/x/{Product.Name}/{Order.OrderNumber}"));
  EXPECT(doc,
         "endpoints.json: /endpoints/1/save/request/path: {Product.Name}: when 'OrderEdit' saves "
         "each record of its list 'OrderLines', the parent record is reached through 'Order', "
         "not 'Product'",
         "endpoints.json: /endpoints/1/save/request/mappings/0/value: {SESSION:CalculatedOrderId}: "
         "no earlier action produces this session value when 'OrderEdit' saves each record of "
         "its list 'OrderLines' (available here: LineItemId)");
}

/* A property this run extracts has no value before its extraction: a
 * placeholder that reads it earlier is refused. A child reads what its
 * parent's run extracted with {SESSION:Reference.Name}. */
static void test_run_values_and_parent_session(void **state) {
  (void)state;
  json_t *doc = sample_doc();
  set(doc, "/endpoints/0/save/request/path",
      json_string("/orders/{OrderNumber}/edits/{CalculatedOrderId}/begin.json"));
  set(doc, "/endpoints/1/save/request/path",
      json_string("/o/{SESSION:Order.CalculatedOrderId}/{SESSION:Order.Amount}/"
                  "{SESSION:Product.Name}"));
  EXPECT(doc,
         "endpoints.json: /endpoints/0/save/request/path: {CalculatedOrderId}: when 'OrderEdit' "
         "runs on its own, 'CalculatedOrderId' has no value yet: this run sets it only later, by "
         "'Extract Edit Session' (/endpoints/0/save/actions/0), and a value an earlier run "
         "stored is never read",
         "endpoints.json: /endpoints/1/save/request/path: {SESSION:Order.Amount}: when "
         "'OrderEdit' saves each record of its list 'OrderLines', no action of 'OrderEdit' "
         "extracts 'Amount' as a header value; {SESSION:Reference.Name} reads what the parent's "
         "run extracted",
         "endpoints.json: /endpoints/1/save/request/path: {SESSION:Product.Name}: when 'OrderEdit' "
         "saves "
         "each record of its list 'OrderLines', the parent record is reached through 'Order', "
         "not 'Product'");
  /* The parent's extraction after its child saves is too late. */
  doc = sample_doc();
  set(doc, "/endpoints/0/save/actions/0/afterChildConfigs", json_true());
  json_t *actions = json_object_get(
      json_object_get(json_array_get(json_object_get(doc, "endpoints"), 0), "save"), "actions");
  json_array_remove(json_object_get(json_array_get(actions, 0), "extractions"), 1);
  set(doc, "/endpoints/1/save/request/path", json_string("/o/{SESSION:Order.CalculatedOrderId}"));
  EXPECT(doc,
         "endpoints.json: /endpoints/1/save/request/path: {SESSION:Order.CalculatedOrderId}: "
         "when 'OrderEdit' saves each record of its list 'OrderLines', 'CalculatedOrderId' is "
         "extracted by 'Extract Edit Session' (/endpoints/0/save/actions/0), which runs after "
         "the child saves; a child can read only what its parent extracted before them",
         "endpoints.json: /endpoints/4/save/request/path: {SESSION:Order.CalculatedOrderId}: "
         "when 'OrderEdit' saves each record of its list 'OrderLines', 'CalculatedOrderId' is "
         "extracted by 'Extract Edit Session' (/endpoints/0/save/actions/0), which runs after "
         "the child saves; a child can read only what its parent extracted before them");
}

/* "expect": "any" only where nothing reads the answer. */
static void test_expect(void **state) {
  (void)state;
  json_t *doc = sample_doc();
  set(doc, "/endpoints/0/save/expect", json_string("any"));
  set(doc, "/endpoints/0/save/actions/1/expect", json_string("any"));
  set(doc, "/endpoints/0/save/actions/0/expect", json_string("any"));
  set(doc, "/endpoints/2/save/actions/1/responseMappings", NULL);
  set(doc, "/endpoints/2/save/actions/1/expect", json_string("any"));
  set(doc, "/endpoints/1/save/expect", json_string("xml"));
  EXPECT(doc,
         "endpoints.json: /endpoints/0/save/actions/0/expect: only an EndpointSave action gets "
         "an answer to expect",
         "endpoints.json: /endpoints/0/save/actions/1/expect: 'any' is for an action whose "
         "answer nothing reads, and its responseMappings read it; leave 'expect' out (an answer "
         "that is read must be JSON)",
         "endpoints.json: /endpoints/0/save/expect: 'any' is for an action whose answer nothing "
         "reads, and its GetSessionValues actions read it; leave 'expect' out (an answer that is "
         "read must be JSON)",
         "endpoints.json: /endpoints/1/save/expect: unknown value 'xml' (allowed: json, any)",
         "endpoints.json: /endpoints/2/save/actions/1/expect: 'any' is for an action whose "
         "answer nothing reads, and a GraphQL answer is checked for 'errors'; leave 'expect' out "
         "(an answer that is read must be JSON)");
}

/* The three problems of the sample's OrderLineEdit (/endpoints/1) once it
 * also runs on its own: the parent's values and the session value the
 * parent extracts are missing there. */
#define LINE_EDIT_ON_ITS_OWN                                                                       \
  "endpoints.json: /endpoints/1/save/request/path: {Order.OrderNumber}: the record of "            \
  "'Order' is at hand only in child saves, where it is the parent; 'OrderLineEdit' also "          \
  "runs on its own (formSubmit, or no parent saves it as a child), where the value would "         \
  "be missing",                                                                                    \
      "endpoints.json: /endpoints/1/save/request/path: {SESSION:Order.CalculatedOrderId}: the "    \
      "record of 'Order' is at hand only in child saves, where it is the parent; "                 \
      "'OrderLineEdit' also runs on its own (formSubmit, or no parent saves it as a child), "      \
      "where the value would be missing",                                                          \
      "endpoints.json: /endpoints/1/save/request/path: {SESSION:LineItemId}: no earlier "          \
      "action produces this session value when 'OrderLineEdit' runs on its own (available "        \
      "here: none)"

static void test_child_endpoint_on_its_own(void **state) {
  (void)state;
  json_t *doc = sample_doc();
  set(doc, "/endpoints/1/formSubmit", json_true());
  EXPECT(doc, LINE_EDIT_ON_ITS_OWN);
}

static void test_properties_that_do_not_exist(void **state) {
  (void)state;
  json_t *doc = sample_doc();
  set(doc, "/endpoints/0/save/request/path", json_string("/orders/{OrderNo}/{OrderLines}"));
  set(doc, "/endpoints/0/save/actions/0/extractions/0/modelProperty", json_string("CalcId"));
  set(doc, "/endpoints/0/save/actions/0/extractions/1/modelMatchProperty", json_string("Sku2"));
  set(doc, "/endpoints/0/save/actions/1/responseMappings/0/modelProperty", json_string("Total"));
  set(doc, "/endpoints/1/save/request/mappings/0/value", json_string("{Order.Nope}"));
  EXPECT(doc,
         "endpoints.json: /endpoints/0/save/request/path: placeholder {OrderNo} names no property "
         "of 'Orders'",
         "endpoints.json: /endpoints/0/save/request/path: placeholder {OrderLines} is an Inbound "
         "reference and has no value",
         "endpoints.json: /endpoints/0/save/actions/0/extractions/0/modelProperty: model 'Orders' "
         "has no property 'CalcId' (properties: OrderNumber, Customer, SalesRep, OrderDate, "
         "DueDate, Status, Amount, Quantity, WarehouseId, CalculatedOrderId, OrderLines, "
         "Payments, Files)",
         "endpoints.json: /endpoints/0/save/actions/0/extractions/1/modelMatchProperty: model "
         "'OrderLines' has no property 'Sku2' (properties: Order, Product, SKU, Quantity, "
         "UnitPrice, LineItemId, CalculatedLineItemId)",
         "endpoints.json: /endpoints/0/save/actions/1/responseMappings/0/modelProperty: model "
         "'Orders' has no property 'Total' (properties: OrderNumber, Customer, SalesRep, "
         "OrderDate, DueDate, Status, Amount, Quantity, WarehouseId, CalculatedOrderId, "
         "OrderLines, Payments, Files)",
         "endpoints.json: /endpoints/1/save/request/mappings/0/value: model 'Orders' has no "
         "property 'Nope' (properties: OrderNumber, Customer, SalesRep, OrderDate, DueDate, "
         "Status, Amount, Quantity, WarehouseId, CalculatedOrderId, OrderLines, Payments, "
         "Files)",
         "endpoints.json: /endpoints/1/save/request/path: {SESSION:Order.CalculatedOrderId}: when "
         "'OrderEdit' saves each record of its list 'OrderLines', no action of 'OrderEdit' "
         "extracts 'CalculatedOrderId' as a header value; {SESSION:Reference.Name} reads what "
         "the parent's run extracted",
         "endpoints.json: /endpoints/4/save/request/path: {SESSION:Order.CalculatedOrderId}: when "
         "'OrderEdit' saves each record of its list 'OrderLines', no action of 'OrderEdit' "
         "extracts 'CalculatedOrderId' as a header value; {SESSION:Reference.Name} reads what "
         "the parent's run extracted");
}

/* ---- Shapes -------------------------------------------------------------------------- */

static void test_action_shapes(void **state) {
  (void)state;
  json_t *doc = sample_doc();
  set(doc, "/endpoints/0/save/afterChildConfigs", json_true());
  set(doc, "/endpoints/0/save/actions/0/request", parse("{\"path\": \"/x\"}"));
  set(doc, "/endpoints/0/save/actions/1/request", NULL);
  set(doc, "/endpoints/1/save/actions",
      parse("[{\"type\": \"EndpointSave\", \"title\": \"A\", \"request\": {\"path\": \"/a\"}, "
            "\"actions\": [{\"type\": \"EndpointSave\", \"title\": \"B\", \"request\": {}}]}, "
            "{\"type\": \"Other\", \"title\": \"C\"}]"));
  EXPECT(doc,
         "endpoints.json: /endpoints/0/save/afterChildConfigs: the root action always runs first",
         "endpoints.json: /endpoints/0/save/actions/0/request: a GetSessionValues action calls "
         "nothing; it reads the response of its save action",
         "endpoints.json: /endpoints/0/save/actions/1: an EndpointSave action needs 'request'",
         "endpoints.json: /endpoints/1/save/actions/0/actions/0/type: an inner save action holds "
         "only GetSessionValues actions",
         "endpoints.json: /endpoints/1/save/actions/1/type: unknown value 'Other' (allowed: "
         "EndpointSave, GetSessionValues)");
  doc = sample_doc();
  set(doc, "/endpoints/0/save/type", json_string("GetSessionValues"));
  set(doc, "/endpoints/0/save/actions/0/extractions/0/connectorProperty", json_string("a..b"));
  set(doc, "/endpoints/0/save/actions/1/request/method", json_string("FETCH"));
  set(doc, "/endpoints/0/save/actions/1/request/path", json_string("commit?now=1"));
  EXPECT(doc,
         "endpoints.json: /endpoints/0/save/type: the root action of an endpoint is an "
         "EndpointSave",
         "endpoints.json: /endpoints/0/save/actions/0/extractions/0/connectorProperty: 'a..b': "
         "recursive descent '..' is not supported at offset 1",
         "endpoints.json: /endpoints/0/save/actions/1/request/method: unknown method 'FETCH' "
         "(allowed: GET, POST, PUT, PATCH, DELETE)",
         "endpoints.json: /endpoints/0/save/actions/1/request/path: 'commit?now=1' must start "
         "with '/' (it is appended to the connector's baseUrl)");
}

static void test_filters_and_operations(void **state) {
  (void)state;
  json_t *doc = sample_doc();
  set(doc, "/endpoints/0/save/operations", parse("[\"Delete\"]"));
  set(doc, "/endpoints/0/save/actions/1/filter",
      parse("{\"match\": \"Any\", \"conditions\": [{\"property\": \"Status\", \"operator\": "
            "\"regex\", \"value\": \"(\"}, {\"property\": \"Status\", \"operator\": \"isBlank\", "
            "\"value\": \"x\"}, {\"property\": \"State\", \"operator\": \"=\", \"value\": "
            "\"x\"}]}"));
  EXPECT(doc, "endpoints.json: /endpoints/0/save/operations/0: must be \"Create\" or \"Update\"",
         "endpoints.json: /endpoints/0/save/actions/1/filter/conditions/0/value: '(' is not a "
         "regular expression: Unmatched ( or \\(",
         "endpoints.json: /endpoints/0/save/actions/1/filter/conditions/1: 'isBlank' takes no "
         "'value'",
         "endpoints.json: /endpoints/0/save/actions/1/filter/conditions/2/property: model "
         "'Orders' has no property 'State' (properties: OrderNumber, Customer, SalesRep, "
         "OrderDate, DueDate, Status, Amount, Quantity, WarehouseId, CalculatedOrderId, "
         "OrderLines, Payments, Files)");
  doc = sample_doc();
  set(doc, "/endpoints/0/save/actions/1/filter",
      parse("{\"conditions\": [{\"property\": \"Status\", \"operator\": \"!=\", \"value\": "
            "\"Cancelled\"}]}"));
  dg_catalog_t *cat = load_with(doc, NULL, 0);
  const dg_action_filter_t *f = dg_catalog_endpoint(cat, "OrderEdit")->steps[2]->filter;
  assert_non_null(f);
  assert_false(f->any);
  assert_int_equal(f->conditions[0].op, DG_FILTER_NE);
  dg_catalog_unref(cat);
}

static void test_extraction_shapes(void **state) {
  (void)state;
  json_t *doc = sample_doc();
  const char *x = "/endpoints/0/save/actions/0/extractions";
  char at[256];
  snprintf(at, sizeof(at), "%s/0/targetList", x);
  set(doc, at, json_string("OrderLines"));
  snprintf(at, sizeof(at), "%s/1/targetList", x);
  set(doc, at, json_string("Payments"));
  set(doc, "/endpoints/0/save/actions/1/actions",
      parse("[{\"type\": \"GetSessionValues\", \"title\": \"Late\", \"extractions\": "
            "[{\"modelProperty\": \"LineItemId\", \"connectorProperty\": \"a\", "
            "\"mapToChildren\": true, \"targetList\": \"OrderLines\", \"modelMatchProperty\": "
            "\"SKU\", \"connectorListProperty\": \"l\", \"connectorMatchProperty\": \"s\"}]}]"));
  EXPECT(doc,
         "endpoints.json: /endpoints/0/save/actions/0/extractions/0/targetList: a basic "
         "extraction has no 'targetList' (set mapToChildren or useMultipleLists)",
         "endpoints.json: /endpoints/0/save/actions/0/extractions/1/targetList: no child "
         "configuration saves 'Payments'; its session values would never be used (add it to "
         "childConfigs)",
         "endpoints.json: /endpoints/0/save/actions/0/extractions/1/modelProperty: model "
         "'Payments' has no property 'LineItemId' (properties: Order, Amount, PaidOn, Method, "
         "Reference)",
         "endpoints.json: /endpoints/0/save/actions/0/extractions/1/modelMatchProperty: model "
         "'Payments' has no property 'SKU' (properties: Order, Amount, PaidOn, Method, "
         "Reference)",
         "endpoints.json: /endpoints/0/save/actions/1/actions/0/extractions/0: values for "
         "children are of no use after the child saves; this action runs after child configs",
         /* The lines of the order no longer get LineItemId. */
         "endpoints.json: /endpoints/1/save/request/path: {SESSION:LineItemId}: no earlier "
         "action produces this session value when 'OrderEdit' saves each record of its list "
         "'OrderLines' (available here: none)");
}

static void test_multiple_lists_shapes(void **state) {
  (void)state;
  json_t *doc = sample_doc();
  const char *x = "/endpoints/2/save/actions/0/extractions/1";
  char at[256];
  snprintf(at, sizeof(at), "%s/connectorLists/1/prefix", x);
  set(doc, at, json_string("original"));
  snprintf(at, sizeof(at), "%s/connectorLists/0/path", x);
  set(doc, at, json_string("data.list"));
  snprintf(at, sizeof(at), "%s/connectorMatchProperty", x);
  set(doc, at, json_string("node.id"));
  EXPECT(doc,
         "endpoints.json: /endpoints/2/save/actions/0/extractions/1/connectorLists/0/path: "
         "'data.list' must end in a wildcard list selector such as [*]",
         "endpoints.json: /endpoints/2/save/actions/0/extractions/1/connectorLists/1/prefix: "
         "prefix 'original' is used twice",
         "endpoints.json: /endpoints/2/save/actions/0/extractions/1/connectorProperty: "
         "'calculated.node.id' must start with a list prefix (original, original)",
         "endpoints.json: /endpoints/2/save/actions/0/extractions/1/connectorMatchProperty: "
         "'node.id' must start with a list prefix (original, original)");
  doc = sample_doc();
  snprintf(at, sizeof(at), "%s/connectorLists", x);
  set(doc, at, parse("[{\"prefix\": \"only\", \"path\": \"a[*]\"}]"));
  EXPECT(doc, "endpoints.json: /endpoints/2/save/actions/0/extractions/1/connectorLists: must "
              "hold 'connectorLists': 2 to 8 rows of {prefix, path}");
}

/* ---- Child configurations --------------------------------------------------------------- */

static void test_child_configurations(void **state) {
  (void)state;
  json_t *doc = sample_doc();
  set(doc, "/endpoints/0/childConfigs/0/endpoint", json_string("OrderEdit"));
  set(doc, "/endpoints/2/childConfigs/0/list", json_string("Customer"));
  set(doc, "/endpoints/3/formSubmit", json_true());
  set(doc, "/endpoints/1/formSubmit", json_true());
  EXPECT(doc,
         "endpoints.json: /endpoints/2/childConfigs/0/list: 'Customer' is not an Inbound "
         "reference of 'Orders' to a Data Model",
         "endpoints.json: /endpoints/2/save/actions/0/extractions/1/targetList: no child "
         "configuration saves 'OrderLines'; its session values would never be used (add it to "
         "childConfigs)",
         "endpoints.json: /endpoints/3/formSubmit: 'OrderLineEdit' already saves the forms of "
         "'OrderLines' (/endpoints/1); set formSubmit false on one",
         "endpoints.json: /endpoints/0/childConfigs/0/endpoint: endpoint 'OrderEdit' saves "
         "'Orders', but list 'OrderLines' holds 'OrderLines'",
         LINE_EDIT_ON_ITS_OWN,
         "endpoints.json: /endpoints/3/save/request/graphql/variables: "
         "{SESSION:Order.CalculatedOrderId}: the record of 'Order' is at hand only in child saves, "
         "where it is the parent; "
         "'OrderLineEditGraphql' also runs on its own (formSubmit, or no parent saves it as a "
         "child), where the value would be missing",
         "endpoints.json: /endpoints/3/save/request/graphql/variables: "
         "{SESSION:CalculatedLineItemId}: no earlier action produces this session value when "
         "'OrderLineEditGraphql' runs on its own (available here: none)");
}

/* A model whose records hold records of the same model: the only way an
 * endpoint can reach itself through child configurations. */
static const char nodes_models[] =
    "{\"models\": [{\"id\": \"9b1c2d3e-0000-4000-8000-000000000001\", \"name\": \"Nodes\", "
    "\"entityType\": \"Node\", \"properties\": [{\"name\": \"Name\", \"dataType\": "
    "\"String\"}, {\"name\": \"Parent\", \"dataType\": \"Reference\", \"reference\": "
    "{\"direction\": \"Outbound\", \"target\": \"Nodes\"}}, {\"name\": \"Kids\", "
    "\"dataType\": \"Reference\", \"reference\": {\"direction\": \"Inbound\", "
    "\"cardinality\": \"OneToMany\", \"target\": \"Nodes\", \"inverseProperty\": "
    "\"Parent\"}}]}]}";

static const char nodes_endpoints[] =
    "{\"endpoints\": [{\"id\": \"9b1c2d3e-0000-4000-8000-000000000002\", \"name\": \"A\", "
    "\"dataModel\": \"Nodes\", \"connector\": \"SampleErp\", \"save\": {\"type\": "
    "\"EndpointSave\", \"title\": \"Save\", \"request\": {\"path\": \"/n/{Name}\"}}, "
    "\"childConfigs\": [{\"list\": \"Kids\", \"endpoint\": \"A\"}]}]}";

/* The lines a form call adds or removes: their endpoints must exist and
 * save the list's model, the remove values must suit their properties,
 * and an add endpoint is checked as a child of the list like the list's
 * own endpoint. */
static void test_line_changes(void **state) {
  (void)state;
  json_t *doc = sample_doc();
  set(doc, "/endpoints/0/childConfigs/0/addEndpoint", json_string("Nope"));
  set(doc, "/endpoints/0/childConfigs/0/removeEndpoint", json_string("OrderEditGraphql"));
  set(doc, "/endpoints/0/childConfigs/0/removeValues",
      parse("{\"Quantity\": \"none\", \"Colour\": 1, \"UnitPrice\": 2.5}"));
  set(doc, "/endpoints/2/childConfigs/0/removeValues", parse("{}"));
  EXPECT(doc,
         "endpoints.json: /endpoints/0/childConfigs/0/removeValues/Quantity: does not suit "
         "'Quantity', a Int property",
         "endpoints.json: /endpoints/0/childConfigs/0/removeValues/Colour: 'Colour' is not a "
         "stored property of 'OrderLines' (references excluded)",
         "endpoints.json: /endpoints/2/childConfigs/0/removeValues: must be an object of 1 to 64 "
         "values, each a property of 'OrderLines'",
         "endpoints.json: /endpoints/0/childConfigs/0/addEndpoint: unknown endpoint 'Nope'",
         "endpoints.json: /endpoints/0/childConfigs/0/removeEndpoint: endpoint 'OrderEditGraphql' "
         "saves 'Orders', but list 'OrderLines' holds 'OrderLines'",
         /* Saved by no list now, OrderLineAdd is checked as running on its own. */
         "endpoints.json: /endpoints/4/save/request/path: {Order.OrderNumber}: the record of "
         "'Order' is at hand only in child saves, where it is the parent; 'OrderLineAdd' also "
         "runs on its own (formSubmit, or no parent saves it as a child), where the value would "
         "be missing",
         "endpoints.json: /endpoints/4/save/request/path: {SESSION:Order.CalculatedOrderId}: the "
         "record "
         "of 'Order' is at hand only in child saves, where it is the parent; 'OrderLineAdd' also "
         "runs on its own (formSubmit, or no parent saves it as a child), where the value would "
         "be missing");
  doc = sample_doc();
  /* The add endpoint reads a session value no action gives a new line. */
  set(doc, "/endpoints/4/save/request/path", json_string("/x/{SESSION:Nothing}"));
  EXPECT(doc, "endpoints.json: /endpoints/4/save/request/path: {SESSION:Nothing}: no earlier "
              "action produces this session value when 'OrderEdit' saves each record of its "
              "list 'OrderLines' (available here: LineItemId)");
}

static void test_cycles(void **state) {
  (void)state;
  conf_test_dir_t t;
  conf_test_make_sample_connectors(&t);
  conf_test_write(t.dir, "models.json", nodes_models);
  conf_test_write(t.dir, "endpoints.json", nodes_endpoints);
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = NULL;
  assert_int_equal(dg_catalog_load(t.dir, &cat, &errors), DG_ECONFIG);
  assert_int_equal(errors.count, 1);
  assert_string_equal(errors.lines[0],
                      "endpoints.json: /endpoints/0/childConfigs: child configurations of 'A' "
                      "lead back to an endpoint already being saved, or nest deeper than 8 "
                      "endpoints");
  dg_config_errors_free(&errors);
  conf_test_remove(&t);
}

/* ---- --explain-endpoint ---------------------------------------------------------------- */

static char *explain(const dg_catalog_t *cat, const char *name, int *rc) {
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  *rc = dg_catalog_explain_endpoint(cat, name, out);
  fclose(out);
  /* A copy: pointers into the stream's own buffer, whose address went to
   * open_memstream, look dangling to gcc's -Wdangling-pointer once
   * inlined. */
  char *copy = strdup(text);
  free(text);
  return copy;
}

static void test_explain(void **state) {
  (void)state;
  dg_catalog_t *cat = load_sample();
  int rc = 0;
  char *text = explain(cat, "OrderEdit", &rc);
  assert_int_equal(rc, 0);
  const char *begin = strstr(text, "1. Begin Order Edit  [EndpointSave, root]  POST "
                                   "/orders/{OrderNumber}/edits/begin.json via SampleErp\n");
  const char *extract = strstr(text, "2. Extract Edit Session  [GetSessionValues, pre-child]  "
                                     "reads the response of 1. Begin Order Edit\n"
                                     "     session values: none\n");
  const char *sep = strstr(text, "  \u2014 Child Saves \u2014\n");
  const char *child = strstr(text, "1. Set Line Quantity  [EndpointSave, root]");
  const char *child_values = strstr(text, "session values: LineItemId (set by the parent)\n");
  const char *commit = strstr(text, "3. Save Line Changes  [EndpointSave, after child configs]");
  const char *commit_values = strstr(text, "     session values: CalculatedOrderId\n");
  const char *added = strstr(text, "     OrderLines added by a form call: saved by endpoint "
                                   "'OrderLineAdd'\n");
  const char *removed =
      strstr(text, "     OrderLines removed by a form call: deleted from the "
                   "store, saved by endpoint 'OrderLineEdit' with Quantity = 0\n");
  assert_non_null(added);
  assert_non_null(removed);
  assert_true(child < added && added < removed && removed < commit);
  assert_non_null(begin);
  assert_non_null(extract);
  assert_non_null(sep);
  assert_non_null(child);
  assert_non_null(child_values);
  assert_non_null(commit);
  assert_non_null(commit_values);
  assert_true(begin < extract && extract < sep && sep < child && child < commit);
  assert_true(commit < commit_values);
  /* Where each placeholder's value comes from. */
  const char *begin_reads =
      strstr(text, "     reads: {OrderNumber} from the stored record, {Status} from the stored "
                   "record\n");
  const char *child_reads = strstr(
      text, "reads: {Order.OrderNumber} from the parent's stored record, "
            "{SESSION:Order.CalculatedOrderId} from the parent's run "
            "(/endpoints/0/save/actions/0/extractions/0), {SESSION:LineItemId} from the parent's "
            "run (/endpoints/0/save/actions/0/extractions/1), {Quantity} from the stored record\n");
  const char *commit_reads =
      strstr(text, "     reads: {OrderNumber} from the stored record, {CalculatedOrderId} from "
                   "this run (/endpoints/0/save/actions/0/extractions/0)\n");
  assert_non_null(begin_reads);
  assert_non_null(child_reads);
  assert_non_null(commit_reads);
  assert_true(begin < begin_reads && begin_reads < extract && child < child_reads &&
              commit < commit_reads);
  assert_non_null(strstr(begin, "     answer: JSON, read by the tree (a 2xx answer that is not "
                                "JSON fails)\n"));
  free(text);
  dg_catalog_unref(cat);
  /* An action whose answer nothing reads may accept any answer. */
  json_t *doc = sample_doc();
  set(doc, "/endpoints/0/save/actions/1/responseMappings", NULL);
  set(doc, "/endpoints/0/save/actions/1/expect", json_string("any"));
  cat = load_with(doc, NULL, 0);
  text = explain(cat, "OrderEdit", &rc);
  commit = strstr(text, "3. Save Line Changes");
  assert_non_null(commit);
  assert_non_null(
      strstr(commit, "answer: any (expect any: a 2xx answer that is not JSON is accepted)\n"));
  free(text);
  text = explain(cat, "OrderLineEdit", &rc);
  assert_non_null(strstr(text, "session values: none\n"));
  assert_non_null(strstr(text, "Also saved as a child of 'OrderEdit' (list OrderLines)\n"));
  assert_null(strstr(text, "Child Saves"));
  free(text);
  text = explain(cat, "Nope", &rc);
  assert_int_equal(rc, 1);
  assert_non_null(strstr(text, "no endpoint named 'Nope'"));
  free(text);
  dg_catalog_unref(cat);
}

/* The picker's Session Values follow the load-time scope rules: nothing
 * before the first extraction, header values after it, and in a child
 * save the parent's list values and header values (through the parent
 * record). */
static json_t *scope_values(const json_t *scope, size_t place, size_t step) {
  json_t *p = json_array_get(json_object_get(scope, "places"), place);
  return json_object_get(json_array_get(json_object_get(p, "steps"), step), "sessionValues");
}

static void test_scope(void **state) {
  dg_catalog_t *cat = load_sample();
  json_t *edit = dg_catalog_endpoint_scope(cat, dg_catalog_endpoint(cat, "OrderEdit"));
  assert_non_null(edit);
  json_t *places = json_object_get(edit, "places");
  assert_int_equal(json_array_size(places), 1);
  assert_true(json_is_null(json_object_get(json_array_get(places, 0), "parent")));
  assert_int_equal(json_array_size(scope_values(edit, 0, 0)), 0);
  assert_int_equal(json_array_size(scope_values(edit, 0, 1)), 0);
  json_t *commit = scope_values(edit, 0, 2);
  assert_int_equal(json_array_size(commit), 1);
  json_t *v = json_array_get(commit, 0);
  assert_string_equal(json_string_value(json_object_get(v, "insert")),
                      "{SESSION:CalculatedOrderId}");
  assert_string_equal(json_string_value(json_object_get(v, "origin")), "header");
  assert_string_equal(json_string_value(json_object_get(v, "setByPath")),
                      "/endpoints/0/save/actions/0");
  json_decref(edit);

  json_t *line = dg_catalog_endpoint_scope(cat, dg_catalog_endpoint(cat, "OrderLineEdit"));
  json_t *place = json_array_get(json_object_get(line, "places"), 0);
  assert_int_equal(json_array_size(json_object_get(line, "places")), 1);
  assert_string_equal(json_string_value(json_object_get(place, "parent")), "OrderEdit");
  assert_string_equal(json_string_value(json_object_get(place, "list")), "OrderLines");
  json_t *got = scope_values(line, 0, 0);
  assert_int_equal(json_array_size(got), 2);
  const char *a = json_string_value(json_object_get(json_array_get(got, 0), "insert"));
  const char *b = json_string_value(json_object_get(json_array_get(got, 1), "insert"));
  assert_string_equal(a, "{SESSION:Order.CalculatedOrderId}");
  assert_string_equal(b, "{SESSION:LineItemId}");
  assert_string_equal(json_string_value(json_object_get(json_array_get(got, 1), "origin")),
                      "parentList");
  json_decref(line);

  /* The Multiple Lists values of the GraphQL edit reach its child only. */
  json_t *gql = dg_catalog_endpoint_scope(cat, dg_catalog_endpoint(cat, "OrderLineEditGraphql"));
  got = scope_values(gql, 0, 0);
  bool found = false;
  for (size_t i = 0; i < json_array_size(got); i++)
    found |= strcmp(json_string_value(json_object_get(json_array_get(got, i), "insert")),
                    "{SESSION:CalculatedLineItemId}") == 0;
  assert_true(found);
  json_decref(gql);
  dg_catalog_unref(cat);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sample_rest_tree),
      cmocka_unit_test(test_sample_graphql_tree),
      cmocka_unit_test(test_session_value_no_earlier_action),
      cmocka_unit_test(test_child_scope),
      cmocka_unit_test(test_child_endpoint_on_its_own),
      cmocka_unit_test(test_run_values_and_parent_session),
      cmocka_unit_test(test_expect),
      cmocka_unit_test(test_properties_that_do_not_exist),
      cmocka_unit_test(test_action_shapes),
      cmocka_unit_test(test_filters_and_operations),
      cmocka_unit_test(test_extraction_shapes),
      cmocka_unit_test(test_multiple_lists_shapes),
      cmocka_unit_test(test_child_configurations),
      cmocka_unit_test(test_line_changes),
      cmocka_unit_test(test_cycles),
      cmocka_unit_test(test_explain),
      cmocka_unit_test(test_scope),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
