/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for running Saved Queries without an upstream: the request
 * each sample query builds from its inputs (URL-encoded paths, optional
 * query parameters left out, typed JSON bodies, GraphQL envelopes) and the
 * mapping of responses onto entities (types, ids, selection, warnings,
 * truncation, GraphQL errors, bodies that are not JSON). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/save.h"
#include "tools/catalog_test.h"

/* Builds the request of query name with values given per input, in
 * declaration order (NULL for absent). */
static dg_connector_request_t build(fixture_t *fx, const char *name, const char *const *values) {
  const dg_saved_query_t *q = dg_catalog_saved_query(fx->cat, name);
  assert_non_null(q);
  dg_connector_request_t req;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_save_query_request(q, values, fx->arena, &req, &err);
  if (rc != 0)
    fail_msg("%s: %s", name, err.message);
  return req;
}

static const char *header(const dg_connector_request_t *req, const char *name) {
  for (size_t i = 0; i < req->nheaders; i++) {
    if (strcmp(req->headers[i].name, name) == 0)
      return req->headers[i].value;
  }
  return NULL;
}

/* ---- Requests ------------------------------------------------------------------ */

static void test_path_is_encoded(void **state) {
  fixture_t *fx = *state;
  const char *values[] = {"SO 1/2?&"};
  dg_connector_request_t req = build(fx, "LiveOrderStatus", values);
  assert_string_equal(req.method, "GET");
  assert_string_equal(req.path, "/orders/SO%201%2F2%3F%26");
  assert_null(req.body);
  assert_int_equal(req.body_len, 0);
  assert_null(header(&req, "Content-Type"));
  assert_false(req.retry_unsafe);
}

static void test_absent_query_parameters_are_left_out(void **state) {
  fixture_t *fx = *state;
  const char *values[] = {"A&B Co", "Open", NULL, "25"};
  dg_connector_request_t req = build(fx, "OpenOrdersByCustomer", values);
  assert_string_equal(req.path, "/orders?customer=A%26B%20Co&status=Open&limit=25");
  const char *more[] = {"Acme", "Shipped", "2025-03-01", "5"};
  req = build(fx, "OpenOrdersByCustomer", more);
  assert_string_equal(req.path, "/orders?customer=Acme&status=Shipped&since=2025-03-01&limit=5");
}

static void test_json_body_is_typed(void **state) {
  fixture_t *fx = *state;
  const char *values[] = {NULL, "12.5"};
  dg_connector_request_t req = build(fx, "SearchOrders", values);
  assert_string_equal(req.method, "POST");
  assert_string_equal(header(&req, "Content-Type"), "application/json");
  assert_string_equal(req.body,
                      "{\"customer\":null,\"minAmount\":12.5,\"statuses\":[\"Open\",\"Shipped\"]}");
  assert_int_equal(req.body_len, strlen(req.body));
  const char *named[] = {"Say \"hi\"\n", "0"};
  req = build(fx, "SearchOrders", named);
  json_t *doc = json_loads(req.body, 0, NULL);
  assert_string_equal(json_string_value(json_object_get(doc, "customer")), "Say \"hi\"\n");
  json_decref(doc);
}

static void test_graphql_envelope(void **state) {
  fixture_t *fx = *state;
  const char *values[] = {NULL, "TRUE", "20"};
  dg_connector_request_t req = build(fx, "ProductPrices", values);
  assert_string_equal(req.method, "POST");
  assert_string_equal(req.path, "/graphql");
  json_t *doc = json_loads(req.body, 0, NULL);
  assert_non_null(doc);
  assert_non_null(strstr(json_string_value(json_object_get(doc, "query")), "products("));
  assert_string_equal(json_string_value(json_object_get(doc, "operationName")), "Products");
  json_t *vars = json_object_get(doc, "variables");
  assert_true(json_is_null(json_object_get(vars, "category")));
  assert_true(json_is_true(json_object_get(vars, "active")));
  assert_int_equal(json_integer_value(json_object_get(vars, "first")), 20);
  json_decref(doc);
}

/* ---- Responses -------------------------------------------------------------------- */

/* Maps body with every field selected (or sel) and max_bytes. */
static json_t *map(fixture_t *fx, const char *name, const char *body, const bool *sel,
                   size_t max_bytes, dg_errctx_t *err) {
  const dg_saved_query_t *q = dg_catalog_saved_query(fx->cat, name);
  bool all[64];
  for (size_t i = 0; i < 64; i++)
    all[i] = true;
  dg_errctx_clear(err);
  return dg_save_query_map(q, sel ? sel : all, body, strlen(body), max_bytes, err);
}

static const json_t *props_of(const json_t *r, size_t i) {
  return json_object_get(json_array_get(json_object_get(r, "entities"), i), "properties");
}

static const char *id_of(const json_t *r, size_t i) {
  return json_string_value(
      json_object_get(json_array_get(json_object_get(r, "entities"), i), "id"));
}

static void test_one_object_with_types(void **state) {
  fixture_t *fx = *state;
  dg_errctx_t err;
  json_t *r = map(fx, "LiveOrderStatus",
                  "{\"order\": {\"id\": \"7A1E0C9B-5B2D-4C8E-8F10-000000001003\", \"number\": "
                  "\"SO-1003\", \"status\": \"Open\", \"placedAt\": \"2025-03-04T09:30:00Z\", "
                  "\"dueDate\": \"2025-04-04\", \"total\": {\"amount\": \"1037.50\"}, "
                  "\"itemCount\": 4.0}}",
                  NULL, 1 << 20, &err);
  assert_non_null(r);
  assert_string_equal(json_string_value(json_object_get(r, "name")), "LiveOrderStatus");
  assert_string_equal(json_string_value(json_object_get(r, "dataModelId")),
                      "8a03cbc2-7f01-4d47-bdf0-0755336a3a70");
  assert_int_equal(json_integer_value(json_object_get(r, "count")), 1);
  assert_true(json_is_false(json_object_get(r, "truncated")));
  assert_null(json_object_get(r, "warnings"));
  assert_string_equal(id_of(r, 0), "7a1e0c9b-5b2d-4c8e-8f10-000000001003");
  const json_t *p = props_of(r, 0);
  assert_string_equal(json_string_value(json_object_get(p, "orderNumber")), "SO-1003");
  assert_string_equal(json_string_value(json_object_get(p, "orderDate")), "2025-03-04");
  assert_string_equal(json_string_value(json_object_get(p, "dueDate")), "2025-04-04");
  assert_true(json_real_value(json_object_get(p, "amount")) == 1037.5);
  assert_int_equal(json_integer_value(json_object_get(p, "quantity")), 4);
  json_decref(r);
}

static void test_ids_are_stable_names(void **state) {
  fixture_t *fx = *state;
  dg_errctx_t err;
  const char *body = "{\"order\": {\"id\": \"ord-7\", \"number\": \"SO-7\"}}";
  json_t *a = map(fx, "LiveOrderStatus", body, NULL, 1 << 20, &err);
  json_t *b = map(fx, "LiveOrderStatus", body, NULL, 1 << 20, &err);
  json_t *c = map(fx, "LiveOrderStatus", "{\"order\": {\"id\": \"ord-8\"}}", NULL, 1 << 20, &err);
  assert_true(dg_uuid_valid(id_of(a, 0)));
  assert_string_equal(id_of(a, 0), id_of(b, 0));
  assert_string_not_equal(id_of(a, 0), id_of(c, 0));
  assert_int_equal(id_of(a, 0)[14], '8'); /* version 8: a name-based id */
  /* Without an idPath the item's content names it. */
  json_t *d = map(fx, "TrackShipment",
                  "{\"shipments\": [{\"orderNumber\": \"SO-1\"}, "
                  "{\"orderNumber\": \"SO-2\"}, {\"orderNumber\": \"SO-1\"}]}",
                  NULL, 1 << 20, &err);
  assert_string_not_equal(id_of(d, 0), id_of(d, 1));
  assert_string_equal(id_of(d, 0), id_of(d, 2));
  json_decref(a);
  json_decref(b);
  json_decref(c);
  json_decref(d);
}

static void test_selection_and_bad_values(void **state) {
  fixture_t *fx = *state;
  dg_errctx_t err;
  bool sel[] = {true, false, true, false, true, true};
  json_t *r = map(fx, "LiveOrderStatus",
                  "{\"order\": {\"number\": 1003, \"status\": \"Open\", \"placedAt\": "
                  "\"yesterday\", \"total\": {\"amount\": \"n/a\"}, \"itemCount\": [1]}}",
                  sel, 1 << 20, &err);
  const json_t *p = props_of(r, 0);
  assert_int_equal(json_object_size(p), 4);
  assert_string_equal(json_string_value(json_object_get(p, "orderNumber")), "1003");
  assert_null(json_object_get(p, "status"));
  assert_true(json_is_null(json_object_get(p, "orderDate")));
  assert_true(json_is_null(json_object_get(p, "amount")));
  assert_true(json_is_null(json_object_get(p, "quantity")));
  json_t *w = json_object_get(r, "warnings");
  assert_int_equal(json_array_size(w), 3);
  assert_string_equal(json_string_value(json_array_get(w, 0)),
                      "item 1: the value \"yesterday\" at 'placedAt' is not a Date; orderDate is "
                      "null");
  json_decref(r);
}

static void test_many_items_truncate(void **state) {
  fixture_t *fx = *state;
  dg_errctx_t err;
  dg_buf_t body;
  dg_buf_init(&body, 1 << 20);
  dg_buf_append_str(&body, "{\"orders\": [");
  for (int i = 0; i < 150; i++)
    dg_buf_appendf(&body, "%s{\"id\": \"o%d\", \"number\": \"SO-%d\", \"placedAt\": \"bad\"}",
                   i ? "," : "", i, i);
  dg_buf_append_str(&body, "]}");
  json_t *r = map(fx, "OpenOrdersByCustomer", body.data, NULL, 1 << 20, &err);
  assert_int_equal(json_integer_value(json_object_get(r, "count")), 100);
  assert_int_equal(json_array_size(json_object_get(r, "entities")), 100);
  assert_true(json_is_true(json_object_get(r, "truncated")));
  json_t *w = json_object_get(r, "warnings");
  assert_int_equal(json_array_size(w), 11);
  assert_string_equal(json_string_value(json_array_get(w, 10)), "... and 90 more warnings");
  json_decref(r);
  /* A small byte budget stops earlier. */
  r = map(fx, "OpenOrdersByCustomer", body.data, NULL, 600, &err);
  size_t n = json_array_size(json_object_get(r, "entities"));
  assert_true(n > 0 && n < 10);
  assert_true(json_is_true(json_object_get(r, "truncated")));
  json_decref(r);
  dg_buf_free(&body);
}

/* The entities kept never take more bytes than the budget, however many
 * of their characters need escaping and however their numbers are written:
 * the measure used is an upper bound. */
static void test_byte_budget_is_never_exceeded(void **state) {
  fixture_t *fx = *state;
  dg_errctx_t err;
  dg_buf_t body;
  dg_buf_init(&body, 1 << 20);
  dg_buf_append_str(&body, "{\"orders\": [");
  for (int i = 0; i < 60; i++)
    dg_buf_appendf(&body,
                   "%s{\"id\": %d, \"number\": \"\\\"q\\\\b\\u0001\\n%d\\\"\", "
                   "\"status\": \"\\t\\u001f\\\"\\\"\", \"total\": {\"amount\": %d.123456789e-3}}",
                   i ? "," : "", i * 1000003, i, i + 1);
  dg_buf_append_str(&body, "]}");
  for (size_t budget = 300; budget <= 6000; budget += 350) {
    json_t *r = map(fx, "OpenOrdersByCustomer", body.data, NULL, budget, &err);
    assert_non_null(r);
    dg_buf_t out;
    dg_buf_init(&out, SIZE_MAX - 1);
    const json_t *entities = json_object_get(r, "entities");
    size_t used = 0;
    for (size_t i = 0; i < json_array_size(entities); i++) {
      dg_buf_reset(&out);
      assert_int_equal(dg_json_write(json_array_get(entities, i), &out), 0);
      used += out.len + 1;
    }
    assert_true(used <= budget);
    assert_true(json_array_size(entities) > 0 || budget < 400);
    assert_true(json_is_true(json_object_get(r, "truncated")) || json_array_size(entities) == 60);
    dg_buf_free(&out);
    json_decref(r);
  }
  dg_buf_free(&body);
}

static void test_empty_and_missing_lists(void **state) {
  fixture_t *fx = *state;
  dg_errctx_t err;
  static const char *const bodies[] = {"{\"orders\": []}", "{}", "{\"orders\": null}", "[]"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(bodies); i++) {
    json_t *r = map(fx, "OpenOrdersByCustomer", bodies[i], NULL, 1 << 20, &err);
    assert_non_null(r);
    assert_int_equal(json_integer_value(json_object_get(r, "count")), 0);
    assert_true(json_is_false(json_object_get(r, "truncated")));
    json_decref(r);
  }
}

static void test_not_json_and_graphql_errors(void **state) {
  fixture_t *fx = *state;
  dg_errctx_t err;
  assert_null(map(fx, "LiveOrderStatus", "{\"order\": {\"number\": ", NULL, 1 << 20, &err));
  assert_int_equal(err.code, DG_EPROTO);
  assert_string_equal(
      err.message,
      "the response is not JSON (line 1, column 21: unexpected token near end of file)");
  assert_null(map(fx, "ProductPrices",
                  "{\"data\": null, \"errors\": [{\"message\": \"Cannot query field\"}]}", NULL,
                  1 << 20, &err));
  assert_string_equal(err.message,
                      "the GraphQL API answered with 1 error and no data: Cannot query field");
  json_t *r = map(fx, "ProductPrices",
                  "{\"data\": {\"products\": {\"edges\": [{\"node\": {\"id\": \"p1\", \"sku\": "
                  "\"A\", \"price\": {\"amount\": 2}, \"active\": \"true\"}}]}}, \"errors\": "
                  "[{\"message\": \"price partly unavailable\"}]}",
                  NULL, 1 << 20, &err);
  assert_int_equal(json_integer_value(json_object_get(r, "count")), 1);
  assert_true(json_is_true(json_object_get(props_of(r, 0), "active")));
  assert_string_equal(json_string_value(json_array_get(json_object_get(r, "warnings"), 0)),
                      "the GraphQL API reported 1 error along with data: price partly unavailable");
  json_decref(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_path_is_encoded, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_absent_query_parameters_are_left_out, ct_setup,
                                      ct_teardown),
      cmocka_unit_test_setup_teardown(test_json_body_is_typed, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_graphql_envelope, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_one_object_with_types, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_ids_are_stable_names, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_selection_and_bad_values, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_many_items_truncate, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_byte_budget_is_never_exceeded, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_empty_and_missing_lists, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_not_json_and_graphql_errors, ct_setup, ct_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
