/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for aggregate_saved_query's arguments and arithmetic without
 * an upstream: each refused argument and its message, the fields a role
 * hides, and the aggregates of response bodies (every function, null
 * groups, case-folded keys, key order, integer sums, dates, warnings, the
 * grouped cap and bodies that cannot be mapped). */
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

static int parse(fixture_t *fx, const char *query, const char *user, const char *args, size_t cap,
                 dg_save_agg_t *out, dg_errctx_t *err) {
  const dg_saved_query_t *q = dg_catalog_saved_query(fx->cat, query);
  assert_non_null(q);
  json_t *a = json_loads(args, 0, NULL);
  assert_non_null(a);
  json_array_append_new(fx->keep, a);
  dg_errctx_clear(err);
  return dg_save_agg_parse(q, ct_principal(fx, user), a, cap, fx->arena, out, err);
}

/* The aggregate of body for args over OpenOrdersByCustomer, as admin. */
static json_t *aggregate(fixture_t *fx, const char *args, const char *body) {
  dg_save_agg_t a;
  dg_errctx_t err;
  if (parse(fx, "OpenOrdersByCustomer", "admin", args, 1000, &a, &err) != 0)
    fail_msg("%s", err.message);
  json_t *r = dg_save_agg_run(&a, body, strlen(body), &err);
  if (r == NULL)
    fail_msg("%s", err.message);
  return r;
}

static void expect_json(json_t *got, const char *want_text) {
  json_t *want = json_loads(want_text, 0, NULL);
  assert_non_null(want);
  if (!json_equal(got, want)) {
    char *g = json_dumps(got, JSON_COMPACT | JSON_SORT_KEYS);
    fail_msg("got %s", g);
  }
  json_decref(want);
  json_decref(got);
}

static const char orders[] =
    "{\"orders\": ["
    "{\"id\": 1, \"number\": \"SO-1\", \"status\": \"Open\", \"placedAt\": \"2025-01-05\","
    " \"total\": {\"amount\": 10.5}},"
    "{\"id\": 2, \"number\": \"SO-2\", \"status\": \"open\", \"placedAt\": \"2025-03-01\","
    " \"total\": {\"amount\": \"20\"}},"
    "{\"id\": 3, \"number\": \"SO-3\", \"status\": \"Shipped\", \"placedAt\": \"2024-12-31\","
    " \"total\": {\"amount\": 4}},"
    "{\"id\": 4, \"number\": \"SO-4\", \"status\": null, \"total\": {}},"
    "{\"id\": 5, \"number\": \"SO-5\", \"status\": \"Draft\", \"placedAt\": \"soon\","
    " \"total\": {\"amount\": 1.25}}]}";

/* ---- Arguments ------------------------------------------------------------------- */

static void expect_refused(fixture_t *fx, const char *query, const char *user, const char *args,
                           const char *param, const char *part) {
  dg_save_agg_t a;
  dg_errctx_t err;
  assert_int_equal(parse(fx, query, user, args, 1000, &a, &err), DG_EINVAL);
  assert_string_equal(err.param, param);
  if (strstr(err.message, part) == NULL)
    fail_msg("'%s' not in: %s", part, err.message);
}

static void test_refused_arguments(void **state) {
  fixture_t *fx = *state;
  const char *q = "OpenOrdersByCustomer";
  expect_refused(fx, q, "admin", "{\"aggregations\": []}", "aggregations", "1 to 32 clauses");
  expect_refused(fx, q, "admin", "{}", "aggregations", "1 to 32 clauses");
  expect_refused(fx, q, "admin", "{\"aggregations\": [{\"function\": \"Median\"}]}",
                 "aggregations[0].function", "got \"Median\"; allowed: Sum, Average");
  expect_refused(fx, q, "admin",
                 "{\"aggregations\": [{\"function\": \"Sum\", \"propertyName\": \"Status\"}]}",
                 "aggregations[0].propertyName",
                 "Sum needs a numeric field, and 'Status' is String; fields Sum can use: Amount.");
  expect_refused(fx, q, "admin",
                 "{\"aggregations\": [{\"function\": \"Max\", \"propertyName\": \"Quantity\"}]}",
                 "aggregations[0].propertyName",
                 "returns no field 'Quantity' that you can see; fields Max can use: OrderDate, "
                 "Amount.");
  expect_refused(fx, q, "admin", "{\"aggregations\": [{\"function\": \"Sum\"}]}",
                 "aggregations[0].propertyName", "missing; Sum needs a field");
  expect_refused(fx, q, "admin",
                 "{\"aggregations\": [{\"function\": \"Count\", \"propertyName\": \"Amount\"}]}",
                 "aggregations[0].propertyName", "takes no propertyName");
  expect_refused(fx, q, "admin",
                 "{\"aggregations\": [{\"function\": \"Count\", \"joinFilter\": {}}]}",
                 "aggregations[0].joinFilter", "takes no joinFilter");
  expect_refused(fx, q, "admin",
                 "{\"aggregations\": [{\"function\": \"Count\", \"reference\": \"Customer\"}]}",
                 "aggregations[0].reference", "takes no reference");
  expect_refused(fx, q, "admin", "{\"aggregations\": [{\"function\": \"Count\", \"x\": 1}]}",
                 "aggregations[0].x", "unknown field; allowed fields here: function");
  expect_refused(fx, q, "admin",
                 "{\"aggregations\": [{\"function\": \"Count\"}, {\"function\": \"Count\"}]}",
                 "aggregations[1].alias", "'count' is already used");
  expect_refused(fx, q, "admin",
                 "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": [{\"propertyName\": "
                 "\"Region\", \"reference\": \"Customer\"}]}",
                 "groupBy[0].reference", "group keys use the fields");
  expect_refused(fx, q, "admin",
                 "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": [{\"propertyName\": "
                 "\"Customer\"}]}",
                 "groupBy[0].propertyName",
                 "group keys must be fields it returns: OrderNumber, Status, OrderDate, Amount.");
  expect_refused(fx, q, "admin",
                 "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": [{\"propertyName\": "
                 "\"status\"}, {\"propertyName\": \"Status\"}]}",
                 "groupBy[1]", "grouped by twice");
}

/* A field the role hides is not there, whatever the tool is asked. */
static void test_hidden_fields(void **state) {
  fixture_t *fx = *state;
  const char *args = "{\"aggregations\": [{\"function\": \"Sum\", \"propertyName\": "
                     "\"CreditLimit\"}]}";
  expect_refused(fx, "CustomerCredit", "sales", args, "aggregations[0].propertyName",
                 "returns no field 'CreditLimit' that you can see; fields Sum can use: none.");
  expect_refused(fx, "CustomerCredit", "sales",
                 "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": [{\"propertyName\": "
                 "\"CreditLimit\"}]}",
                 "groupBy[0].propertyName", "fields it returns: Name, Email, Region.");
  dg_save_agg_t a;
  dg_errctx_t err;
  assert_int_equal(parse(fx, "CustomerCredit", "admin", args, 1000, &a, &err), 0);
  assert_true(a.needed[3]);
  assert_false(a.needed[0]);
}

/* ---- Arithmetic ------------------------------------------------------------------ */

static void test_totals(void **state) {
  fixture_t *fx = *state;
  json_t *r = aggregate(fx,
                        "{\"aggregations\": [{\"function\": \"Count\"}, {\"function\": \"Sum\", "
                        "\"propertyName\": \"Amount\"}, {\"function\": \"Average\", "
                        "\"propertyName\": \"amount\", \"alias\": \"Mean\"}, {\"function\": "
                        "\"Min\", \"propertyName\": \"OrderDate\"}, {\"function\": \"Max\", "
                        "\"propertyName\": \"OrderDate\"}, {\"function\": \"DistinctCount\", "
                        "\"propertyName\": \"Status\"}]}",
                        orders);
  /* "20" is read as a number; "soon" is no date (a warning, and null);
   * "Open" and "open" are one distinct value. */
  json_t *warnings = json_incref(json_object_get(r, "warnings"));
  json_object_del(r, "warnings");
  expect_json(r, "{\"matchedCount\": 5, \"groupByProperties\": [], \"rows\": [{\"groupKey\": {}, "
                 "\"aggregates\": {\"count\": 5, \"sum_Amount\": 35.75, \"mean\": 8.9375, "
                 "\"min_OrderDate\": \"2024-12-31\", \"max_OrderDate\": \"2025-03-01\", "
                 "\"distinctCount_Status\": 3}}]}");
  assert_int_equal(json_array_size(warnings), 1);
  assert_non_null(strstr(json_string_value(json_array_get(warnings, 0)), "\"soon\""));
  json_decref(warnings);
}

static void test_groups_in_key_order_with_nulls_first(void **state) {
  fixture_t *fx = *state;
  json_t *r = aggregate(fx,
                        "{\"aggregations\": [{\"function\": \"Count\"}, {\"function\": \"Sum\", "
                        "\"propertyName\": \"Amount\"}], \"groupBy\": [{\"propertyName\": "
                        "\"status\"}]}",
                        orders);
  expect_json(r, "{\"matchedCount\": 5, \"groupByProperties\": [\"Status\"], \"rows\": ["
                 "{\"groupKey\": {\"status\": null}, \"aggregates\": {\"count\": 1, "
                 "\"sum_Amount\": 0.0}},"
                 "{\"groupKey\": {\"status\": \"Draft\"}, \"aggregates\": {\"count\": 1, "
                 "\"sum_Amount\": 1.25}},"
                 "{\"groupKey\": {\"status\": \"Open\"}, \"aggregates\": {\"count\": 2, "
                 "\"sum_Amount\": 30.5}},"
                 "{\"groupKey\": {\"status\": \"Shipped\"}, \"aggregates\": {\"count\": 1, "
                 "\"sum_Amount\": 4.0}}]}");
}

/* An empty answer still has its totals row; a grouped one has no rows. */
static void test_empty_answers(void **state) {
  fixture_t *fx = *state;
  json_t *r = aggregate(fx,
                        "{\"aggregations\": [{\"function\": \"Count\"}, {\"function\": "
                        "\"Average\", \"propertyName\": \"Amount\"}, {\"function\": \"Sum\", "
                        "\"propertyName\": \"Amount\"}]}",
                        "{\"orders\": []}");
  expect_json(r, "{\"matchedCount\": 0, \"groupByProperties\": [], \"rows\": [{\"groupKey\": {}, "
                 "\"aggregates\": {\"count\": 0, \"average_Amount\": null, \"sum_Amount\": "
                 "0.0}}]}");
  r = aggregate(fx,
                "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": [{\"propertyName\": "
                "\"Status\"}]}",
                "{}");
  expect_json(r, "{\"matchedCount\": 0, \"groupByProperties\": [\"Status\"], \"rows\": []}");
}

/* Sums of whole-number fields stay integers (LiveOrderStatus maps Quantity,
 * an Int). */
static void test_integer_sums(void **state) {
  fixture_t *fx = *state;
  dg_save_agg_t a;
  dg_errctx_t err;
  assert_int_equal(parse(fx, "LiveOrderStatus", "admin",
                         "{\"aggregations\": [{\"function\": \"Sum\", \"propertyName\": "
                         "\"Quantity\"}, {\"function\": \"Average\", \"propertyName\": "
                         "\"Quantity\"}]}",
                         1000, &a, &err),
                   0);
  const char *body = "{\"order\": {\"id\": \"x\", \"itemCount\": 7}}";
  json_t *r = dg_save_agg_run(&a, body, strlen(body), &err);
  json_t *aggs = json_object_get(json_array_get(json_object_get(r, "rows"), 0), "aggregates");
  assert_true(json_is_integer(json_object_get(aggs, "sum_Quantity")));
  assert_int_equal(json_integer_value(json_object_get(aggs, "sum_Quantity")), 7);
  assert_true(json_is_real(json_object_get(aggs, "average_Quantity")));
  json_decref(r);
}

/* A grouped aggregate covers at most the cap; totals have none. */
static void test_grouped_cap(void **state) {
  fixture_t *fx = *state;
  dg_save_agg_t a;
  dg_errctx_t err;
  assert_int_equal(parse(fx, "OpenOrdersByCustomer", "admin",
                         "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": "
                         "[{\"propertyName\": \"Status\"}]}",
                         4, &a, &err),
                   0);
  assert_null(dg_save_agg_run(&a, orders, strlen(orders), &err));
  assert_int_equal(err.code, DG_E2BIG);
  assert_non_null(strstr(err.message, "more than 4 records"));
  assert_int_equal(parse(fx, "OpenOrdersByCustomer", "admin",
                         "{\"aggregations\": [{\"function\": \"Count\"}]}", 4, &a, &err),
                   0);
  json_t *r = dg_save_agg_run(&a, orders, strlen(orders), &err);
  assert_int_equal(json_integer_value(json_object_get(r, "matchedCount")), 5);
  json_decref(r);
}

static void test_bodies_that_cannot_be_mapped(void **state) {
  fixture_t *fx = *state;
  dg_save_agg_t a;
  dg_errctx_t err;
  assert_int_equal(parse(fx, "OpenOrdersByCustomer", "admin",
                         "{\"aggregations\": [{\"function\": \"Count\"}]}", 10, &a, &err),
                   0);
  assert_null(dg_save_agg_run(&a, "{oops", 5, &err));
  assert_int_equal(err.code, DG_EPROTO);
  assert_non_null(strstr(err.message, "not JSON"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_refused_arguments, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_hidden_fields, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_totals, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_groups_in_key_order_with_nulls_first, ct_setup,
                                      ct_teardown),
      cmocka_unit_test_setup_teardown(test_empty_answers, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_integer_sums, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_grouped_cap, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_bodies_that_cannot_be_mapped, ct_setup, ct_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
