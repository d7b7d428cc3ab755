/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for saved_queries.json: the sample's Saved Queries with their
 * inputs, requests, paths and mapped fields; the input value checks by
 * type; and each kind of problem (unknown connector, model or property,
 * a template naming an undeclared input, bad GUIDs, bad paths, bodies
 * that are not JSON, ...) with its exact line. */
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

#define QID "5b7d0c6e-2f49-4a51-9d0e-3c1e7a9b0001"

static const char connectors[] =
    "{\"connectors\": [{\"id\": \"1f0c1a52-9d1e-4c43-9b4e-0e6f1c2f0a01\", \"name\": \"Api\", "
    "\"baseUrl\": \"http://api.example.com\"}]}";

/* One Saved Query on Orders with inputs Id (required) and Limit (Int,
 * optional), the given request, field mappings and extra members. */
#define QUERYX(request, fields, extra)                                                             \
  "{\"savedQueries\": [{\"id\": \"" QID "\", \"name\": \"Q\", \"connector\": \"Api\", "            \
  "\"dataModel\": \"Orders\", \"inputs\": [{\"name\": \"Id\", \"required\": true}, "               \
  "{\"name\": \"Limit\", \"type\": \"Int\"}], \"request\": " request ", \"fields\": " fields extra \
  "}]}"
#define QUERYF(request, fields) QUERYX(request, fields, "")
#define QUERY(request, extra)                                                                      \
  QUERYX(request, "[{\"property\": \"OrderNumber\", \"path\": \"n\"}]", extra)

static const char *sample_dir(void) {
  static char dir[4096];
  const char *src = getenv("DG_SOURCE_DIR");
  snprintf(dir, sizeof(dir), "%s/conf", src ? src : ".");
  return dir;
}

/* ---- The sample ----------------------------------------------------------- */

static void test_sample_queries(void **state) {
  (void)state;
  dg_catalog_t *cat = NULL;
  assert_int_equal(dg_catalog_load(sample_dir(), &cat, NULL), 0);
  assert_int_equal(cat->nsaved_queries, 7);
  const dg_saved_query_t *q = dg_catalog_saved_query(cat, "OpenOrdersByCustomer");
  assert_non_null(q);
  assert_ptr_equal(dg_catalog_saved_query(cat, "98F4CE0F-646D-4266-BF27-AEE11C64A0B3"), q);
  assert_null(dg_catalog_saved_query(cat, "openordersbycustomer"));
  assert_string_equal(q->connector->name, "SampleErp");
  assert_string_equal(q->model->name, "Orders");
  assert_int_equal(q->ninputs, 4);
  assert_ptr_equal(dg_saved_query_input(q, "customername"), &q->inputs[0]);
  assert_true(q->inputs[0].required);
  assert_string_equal(q->inputs[1].default_value, "Open");
  assert_int_equal(q->inputs[2].type, DG_TYPE_DATE);
  assert_null(q->inputs[2].default_value);
  assert_string_equal(q->inputs[3].default_value, "25");
  assert_int_equal(q->request.kind, DG_REQUEST_REST);
  assert_string_equal(q->request.method, "GET");
  assert_string_equal(dg_template_text(q->request.path), "/orders");
  assert_int_equal(q->request.nquery, 4);
  assert_string_equal(q->request.query[3].name, "limit");
  assert_string_equal(dg_template_var(q->request.query[3].value, 0)->name, "Limit");
  assert_string_equal(dg_jsonpath_text(q->result_path), "$.orders[*]");
  assert_int_equal(q->nfields, 4);
  assert_string_equal(q->fields[3].property->name, "Amount");
  assert_string_equal(q->fields[3].description, q->fields[3].property->description);
  assert_int_equal(q->max_results, 100);
  dg_catalog_unref(cat);
}

static void test_sample_graphql_and_body(void **state) {
  (void)state;
  dg_catalog_t *cat = NULL;
  assert_int_equal(dg_catalog_load(sample_dir(), &cat, NULL), 0);
  const dg_saved_query_t *g = dg_catalog_saved_query(cat, "ProductPrices");
  assert_int_equal(g->request.kind, DG_REQUEST_GRAPHQL);
  assert_string_equal(g->request.method, "POST");
  assert_string_equal(g->request.operation_name, "Products");
  assert_non_null(strstr(g->request.graphql_query, "products(category: $category"));
  assert_int_equal(dg_template_nvars(g->request.graphql_variables), 3);
  assert_true(dg_jsonpath_is_multi(g->result_path));
  const dg_saved_query_t *s = dg_catalog_saved_query(cat, "SearchOrders");
  assert_string_equal(s->request.method, "POST");
  assert_non_null(s->request.body);
  assert_false(s->request.retry_unsafe);
  const dg_saved_query_t *t = dg_catalog_saved_query(cat, "TrackShipment");
  assert_null(t->id_path);
  assert_string_equal(t->fields[1].description, "Shipment state: Shipped once the carrier has it.");
  dg_catalog_unref(cat);
}

/* ---- Input values ------------------------------------------------------------ */

static void test_input_values(void **state) {
  (void)state;
  static const struct {
    dg_data_type_t type;
    const char *text;
    bool valid;
  } cases[] = {
      {DG_TYPE_STRING, "", true},
      {DG_TYPE_INT, "25", true},
      {DG_TYPE_INT, "-2147483648", true},
      {DG_TYPE_INT, "2147483648", false},
      {DG_TYPE_INT, "2.5", false},
      {DG_TYPE_INT, " 1", false},
      {DG_TYPE_LONG, "9223372036854775807", true},
      {DG_TYPE_LONG, "9223372036854775808", false},
      {DG_TYPE_DOUBLE, "-12.5e3", true},
      {DG_TYPE_DOUBLE, "1e", false},
      {DG_TYPE_DOUBLE, "01", false},
      {DG_TYPE_DOUBLE, "NaN", false},
      {DG_TYPE_DECIMAL, "1450.25", true},
      {DG_TYPE_DECIMAL, "1e3", false},
      {DG_TYPE_DECIMAL, "1.", false},
      {DG_TYPE_BOOLEAN, "TRUE", true},
      {DG_TYPE_BOOLEAN, "yes", false},
      {DG_TYPE_DATE, "2024-02-29", true},
      {DG_TYPE_DATE, "2023-02-29", false},
      {DG_TYPE_DATE, "2024-13-01", false},
      {DG_TYPE_DATE, "2024-1-01", false},
      {DG_TYPE_DATE, "2024-01-01T00:00", false},
      {DG_TYPE_DATETIME, "2024-01-31T23:59", true},
      {DG_TYPE_DATETIME, "2024-01-31T23:59:60.123Z", true},
      {DG_TYPE_DATETIME, "2024-01-31T10:00:00+05:30", true},
      {DG_TYPE_DATETIME, "2024-01-31T24:00", false},
      {DG_TYPE_DATETIME, "2024-01-31 10:00", false},
      {DG_TYPE_DATETIME, "2024-01-31T10:00:00+5", false},
      {DG_TYPE_GUID, "8a03cbc2-7f01-4d47-bdf0-0755336a3a70", true},
      {DG_TYPE_GUID, "8a03cbc2", false},
      {DG_TYPE_REFERENCE, "8a03cbc2-7f01-4d47-bdf0-0755336a3a70", false},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(cases); i++) {
    if (dg_saved_input_value_valid(cases[i].type, cases[i].text) != cases[i].valid)
      fail_msg("%s '%s' should be %s", dg_data_type_name(cases[i].type), cases[i].text,
               cases[i].valid ? "valid" : "invalid");
  }
  assert_non_null(strstr(dg_saved_input_value_hint(DG_TYPE_DATE), "YYYY-MM-DD"));
}

/* ---- Problems ------------------------------------------------------------------- */

static void test_unknown_names(void **state) {
  (void)state;
  CONF_EXPECT(NULL, connectors,
              "{\"savedQueries\": [{\"id\": \"" QID "\", \"name\": \"Q\", \"connector\": \"Erp\", "
              "\"dataModel\": \"Ordrs\", \"request\": {}, \"fields\": [{\"property\": \"X\", "
              "\"path\": \"x\"}]}]}",
              "saved_queries.json: /savedQueries/0/connector: unknown connector 'Erp' (known: Api)",
              "saved_queries.json: /savedQueries/0/dataModel: unknown model 'Ordrs' (known: "
              "Customers, Products, Orders, OrderLines, Files, Payments)");
  CONF_EXPECT(NULL, connectors,
              QUERYF("{\"path\": \"/o\"}",
                     "[{\"property\": \"OrderNo\", \"path\": \"n\"}, "
                     "{\"property\": \"Customer\", \"path\": \"c\"}, {\"property\": "
                     "\"orderNumber\", \"path\": \"$..n\"}, {\"property\": \"OrderNumber\", "
                     "\"path\": \"m\"}]"),
              "saved_queries.json: /savedQueries/0/fields/0/property: model 'Orders' has no "
              "property 'OrderNo'",
              "saved_queries.json: /savedQueries/0/fields/1/property: 'Customer' is a Reference; a "
              "Saved Query maps only plain properties",
              "saved_queries.json: /savedQueries/0/fields/2/path: '$..n': recursive descent '..' "
              "is not supported at offset 1",
              "saved_queries.json: /savedQueries/0/fields/3: property 'OrderNumber' is mapped "
              "twice (also /savedQueries/0/fields/2)");
}

static void test_template_problems(void **state) {
  (void)state;
  CONF_EXPECT(NULL, connectors,
              QUERY("{\"path\": \"/orders/{Id}/{OrderNo}/{Limit}/{SESSION:X}\", \"query\": "
                    "{\"q\": \"{Order Id}\", \"n\": 5}, \"headers\": {\"X-Id\": \"{Idd}\"}}",
                    ""),
              "saved_queries.json: /savedQueries/0/request/path: placeholder {OrderNo} names no "
              "declared input (declared: Id, Limit)",
              "saved_queries.json: /savedQueries/0/request/path: placeholder {Limit} in the path "
              "names an optional input without a default",
              "saved_queries.json: /savedQueries/0/request/path: {SESSION:X}: session values exist "
              "only in save action trees",
              "saved_queries.json: /savedQueries/0/request/query/q: placeholder at offset 0 is not "
              "closed by '}' right after its name (a placeholder is {Name}, {Reference.Name}, "
              "{SESSION:Name} or {SESSION:Reference.Name}; write {{ for a literal '{')",
              "saved_queries.json: /savedQueries/0/request/query/n: must be a template string",
              "saved_queries.json: /savedQueries/0/request/headers/X-Id: placeholder {Idd} names "
              "no declared input (declared: Id, Limit)");
  CONF_EXPECT(NULL, connectors, QUERY("{\"path\": \"orders?x=1\"}", ""),
              "saved_queries.json: /savedQueries/0/request/path: 'orders?x=1' must start with '/' "
              "(it is appended to the connector's baseUrl)");
  CONF_EXPECT(NULL, connectors, QUERY("{\"path\": \"/orders/{Id}?x\"}", ""),
              "saved_queries.json: /savedQueries/0/request/path: '/orders/{Id}?x' must not hold "
              "'?' or '#'; give parameters in 'query'");
}

static void test_input_problems(void **state) {
  (void)state;
  CONF_EXPECT(NULL, connectors,
              "{\"savedQueries\": [{\"id\": \"" QID "\", \"name\": \"Q\", \"connector\": "
              "\"Api\", \"dataModel\": \"Orders\", \"inputs\": [{\"name\": \"Limit\", "
              "\"type\": \"Int\", \"default\": \"ten\"}, {\"name\": \"limit\"}, "
              "{\"name\": \"A\", \"required\": true, \"default\": 1}, {\"name\": \"2x\"}, "
              "{\"name\": \"R\", \"type\": \"Reference\"}, {\"name\": \"D\", \"type\": "
              "\"Date\", \"default\": [1]}], \"request\": {}, \"fields\": [{\"property\": "
              "\"Status\", \"path\": \"s\"}]}]}",
              "saved_queries.json: /savedQueries/0/inputs/0/default: 'ten' is not a valid Int "
              "(expected a whole number from -2147483648 to 2147483647, such as 25)",
              "saved_queries.json: /savedQueries/0/inputs/1: duplicate input name 'limit' (same as "
              "/savedQueries/0/inputs/0, ignoring case)",
              "saved_queries.json: /savedQueries/0/inputs/2/default: a required input has no use "
              "for a default",
              "saved_queries.json: /savedQueries/0/inputs/3/name: '2x' is not a valid name (a "
              "letter or _, then letters, digits or _)",
              "saved_queries.json: /savedQueries/0/inputs/4/type: unknown value 'Reference' "
              "(allowed: String, Int, Long, Double, Decimal, Boolean, Date, DateTime, Guid)",
              "saved_queries.json: /savedQueries/0/inputs/5/default: must be a string, a number or "
              "a boolean");
}

static void test_request_problems(void **state) {
  (void)state;
  CONF_EXPECT(NULL, connectors, QUERY("{\"method\": \"FETCH\", \"body\": {\"a\": 1}}", ""),
              "saved_queries.json: /savedQueries/0/request/method: unknown method 'FETCH' "
              "(allowed: GET, POST, PUT, PATCH, DELETE)");
  CONF_EXPECT(NULL, connectors, QUERY("{\"method\": \"GET\", \"body\": {\"a\": 1}}", ""),
              "saved_queries.json: /savedQueries/0/request/body: a GET request has no body");
  CONF_EXPECT(NULL, connectors, QUERY("{\"type\": \"GraphQL\"}", ""),
              "saved_queries.json: /savedQueries/0/request: a GraphQL request needs 'graphql' "
              "(query, variables)");
  CONF_EXPECT(NULL, connectors,
              QUERY("{\"type\": \"GraphQL\", \"method\": \"GET\", \"body\": {}, "
                    "\"graphql\": {\"query\": \"{ a }\", \"variables\": [1], \"vars\": 1}}",
                    ""),
              "saved_queries.json: /savedQueries/0/request/body: a GraphQL request has no body",
              "saved_queries.json: /savedQueries/0/request/method: a GraphQL request is a POST",
              "saved_queries.json: /savedQueries/0/request/graphql/vars: unknown field 'vars'",
              "saved_queries.json: /savedQueries/0/request/graphql/variables: must be an object "
              "(or a JSON text) of GraphQL variables");
  CONF_EXPECT(NULL, connectors,
              QUERY("{\"method\": \"POST\", \"body\": \"{\\\"id\\\": {Id}, \\\"n\\\": "
                    "\\\"{Limit}\\\"\", \"graphql\": {}}",
                    ""),
              "saved_queries.json: /savedQueries/0/request/graphql: only a request of type GraphQL "
              "has 'graphql'",
              "saved_queries.json: /savedQueries/0/request/body: is not JSON once its placeholders "
              "are filled in: '}' expected near end of file");
}

static void test_identity_and_role_problems(void **state) {
  (void)state;
  CONF_EXPECT(
      "{\"roles\": [{\"name\": \"r\", \"savedQueries\": [\"Q\", \"" QID "\", \"Nope\", \"*\"]}]}",
      connectors,
      "{\"savedQueries\": [{\"id\": \"" QID "\", \"name\": \"Q\", \"connector\": "
      "\"Api\", \"dataModel\": \"Orders\", \"request\": {}, \"resultPath\": "
      "\"$.a[\", \"fields\": [{\"property\": \"Status\", \"path\": \"s\"}]}, "
      "{\"id\": \"" QID "\", \"name\": \"q\", \"connector\": \"Api\", "
      "\"dataModel\": \"Orders\", \"request\": {}, \"idPath\": \"\", \"fields\": "
      "[]}, {\"id\": \"x\", \"name\": \"Z\", \"connector\": \"Api\", "
      "\"dataModel\": \"Orders\", \"maxResults\": 0, \"fields\": [{\"property\": "
      "\"Status\", \"path\": \"s\"}]}]}",
      "saved_queries.json: /savedQueries/0/resultPath: '$.a[': expected an index, '*' or a quoted "
      "key inside [ ] at offset 4",
      "saved_queries.json: /savedQueries/1/idPath: must not be empty",
      "saved_queries.json: /savedQueries/1/fields: must be a non-empty array of field mappings",
      "saved_queries.json: /savedQueries/2/id: 'x' is not a GUID (8-4-4-4-12 hexadecimal digits)",
      "saved_queries.json: /savedQueries/2: missing required field 'request'",
      "saved_queries.json: /savedQueries/2/maxResults: must be an integer from 1 to 1000, got 0",
      "saved_queries.json: /savedQueries/1/id: duplicate Saved Query id "
      "'5b7d0c6e-2f49-4a51-9d0e-3c1e7a9b0001' (same as /savedQueries/0)",
      "saved_queries.json: /savedQueries/1/name: duplicate Saved Query name 'q' (same as "
      "/savedQueries/0)",
      "datagate.json: /roles/0/savedQueries/2: unknown Saved Query 'Nope' (give an id or name from "
      "saved_queries.json, or \"*\")");
  CONF_EXPECT(NULL, NULL,
              "{\"savedQueries\": [{\"id\": \"" QID "\", \"name\": \"Q\", "
              "\"connector\": \"Api\", \"dataModel\": \"Orders\", \"request\": {}, "
              "\"fields\": [{\"property\": \"Status\", \"path\": \"s\"}]}]}",
              "saved_queries.json: /savedQueries/0/connector: unknown connector 'Api' (known: "
              "none; see connectors.json)");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sample_queries),    cmocka_unit_test(test_sample_graphql_and_body),
      cmocka_unit_test(test_input_values),      cmocka_unit_test(test_unknown_names),
      cmocka_unit_test(test_template_problems), cmocka_unit_test(test_input_problems),
      cmocka_unit_test(test_request_problems),  cmocka_unit_test(test_identity_and_role_problems),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
