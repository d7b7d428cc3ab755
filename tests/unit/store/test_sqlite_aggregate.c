/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for sqlite_aggregate.c (and result_aggregate.c) on a
 * temporary database loaded with the sample data: totals of every
 * function, typed values, empty results, grouping by own, Outbound and
 * Inbound keys with their null groups, a conditional count, the grouped
 * cap at its boundary and the result budget. Expected answers are
 * computed here from the sample JSON files, independently of the store. */
#include <math.h>

#include "store/sqlite_test.h"

static sq_result_t run(sq_fixture_t *fx, const char *user, const char *model, const char *args) {
  dg_store_parse_t ps = st_ctx(&fx->st, user);
  dg_store_aggregate_t *a = dg_arena_calloc(fx->st.arena, 1, sizeof(*a));
  if (dg_store_parse_aggregate(&ps, st_model(&fx->st, model), st_json(&fx->st, args), a) != 0)
    fail_msg("refused: %s", fx->st.err.message);
  sq_result_t r = {.starting = true};
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_store_aggregate(fx->store, a, sq_on_result, &r, NULL, &err), 0);
  r.starting = false;
  sq_wait(fx, &r);
  dg_arena_defer(fx->st.arena, (void (*)(void *))json_decref, r.json);
  return r;
}

static const json_t *only_row(const json_t *result) {
  const json_t *rows = json_object_get(result, "rows");
  assert_int_equal(json_array_size(rows), 1);
  assert_int_equal(json_object_size(json_object_get(json_array_get(rows, 0), "groupKey")), 0);
  return json_object_get(json_array_get(rows, 0), "aggregates");
}

static bool has(const json_t *e, const char *key) {
  const json_t *v = json_object_get(e, key);
  return v != NULL && !json_is_null(v);
}

static bool is_open(const json_t *e) {
  const char *s = sq_str(e, "Status");
  return s != NULL && strcasecmp(s, "open") == 0;
}

/* The totals of the open orders, computed from the sample data. */
typedef struct totals {
  int64_t count, quantity_n, distinct_customers;
  double amount, quantity_sum, max_amount;
  const char *min_date;
} totals_t;

static totals_t open_totals(sq_fixture_t *fx) {
  totals_t t = {.max_amount = -INFINITY};
  const char *seen[64];
  size_t i;
  json_t *e;
  json_array_foreach(sq_data(fx, "Orders"), i, e) {
    if (!is_open(e))
      continue;
    t.count++;
    t.amount += json_number_value(json_object_get(e, "Amount"));
    if (has(e, "Amount"))
      t.max_amount = fmax(t.max_amount, json_number_value(json_object_get(e, "Amount")));
    t.quantity_n += has(e, "Quantity");
    t.quantity_sum += json_number_value(json_object_get(e, "Quantity"));
    const char *d = sq_str(e, "OrderDate"), *c = sq_str(e, "Customer");
    if (d != NULL && (t.min_date == NULL || strcmp(d, t.min_date) < 0))
      t.min_date = d;
    bool dup = c == NULL;
    for (int64_t k = 0; k < t.distinct_customers && !dup; k++)
      dup = strcmp(seen[k], c) == 0;
    if (!dup)
      seen[t.distinct_customers++] = c;
  }
  return t;
}

static void test_totals(void **state) {
  sq_fixture_t *fx = *state;
  totals_t t = open_totals(fx);
  json_t *r = sq_ok(run(fx, "admin", "Orders",
                        "{\"aggregations\": [{\"function\": \"Sum\", \"propertyName\": \"Amount\"},"
                        " {\"function\": \"Count\"},"
                        " {\"function\": \"Average\", \"propertyName\": \"Quantity\"},"
                        " {\"function\": \"Sum\", \"propertyName\": \"Quantity\"},"
                        " {\"function\": \"Min\", \"propertyName\": \"OrderDate\"},"
                        " {\"function\": \"Max\", \"propertyName\": \"Amount\"},"
                        " {\"function\": \"DistinctCount\", \"propertyName\": \"Customer\"}],"
                        " \"queryParameterGroups\": [{\"parameters\": [{\"operator\": "
                        "\"EqualTo\", \"propertyName\": \"Status\", \"value\": \"OPEN\"}]}]}"));
  assert_true(t.count > 2);
  assert_int_equal(json_integer_value(json_object_get(r, "matchedCount")), t.count);
  assert_int_equal(json_array_size(json_object_get(r, "groupByProperties")), 0);
  const json_t *g = only_row(r);
  assert_true(json_is_real(json_object_get(g, "sum_Amount")));
  assert_true(fabs(json_real_value(json_object_get(g, "sum_Amount")) - t.amount) < 1e-6);
  assert_int_equal(json_integer_value(json_object_get(g, "count")), t.count);
  assert_true(fabs(json_real_value(json_object_get(g, "average_Quantity")) -
                   t.quantity_sum / (double)t.quantity_n) < 1e-9);
  /* A sum of Int values is a whole number. */
  assert_true(json_is_integer(json_object_get(g, "sum_Quantity")));
  assert_int_equal(json_integer_value(json_object_get(g, "sum_Quantity")), (int64_t)t.quantity_sum);
  assert_string_equal(json_string_value(json_object_get(g, "min_OrderDate")), t.min_date);
  assert_true(fabs(json_real_value(json_object_get(g, "max_Amount")) - t.max_amount) < 1e-9);
  assert_int_equal(json_integer_value(json_object_get(g, "distinctCount_Customer")),
                   t.distinct_customers);
}

/* Nothing matched: one totals row (Sum 0, Count 0, the others null), or
 * no rows at all when grouping. */
static void test_nothing_matched(void **state) {
  sq_fixture_t *fx = *state;
  static const char filter[] = "\"queryParameterGroups\": [{\"parameters\": [{\"operator\": "
                               "\"EqualTo\", \"propertyName\": \"OrderNumber\", \"value\": "
                               "\"none\"}]}]";
  char args[1024];
  snprintf(args, sizeof(args),
           "{\"aggregations\": [{\"function\": \"Sum\", \"propertyName\": \"Amount\"}, "
           "{\"function\": \"Sum\", \"propertyName\": \"Quantity\"}, {\"function\": \"Count\"}, "
           "{\"function\": \"Average\", \"propertyName\": \"Amount\"}, {\"function\": \"Max\", "
           "\"propertyName\": \"DueDate\"}], %s}",
           filter);
  json_t *r = sq_ok(run(fx, "admin", "Orders", args));
  assert_int_equal(json_integer_value(json_object_get(r, "matchedCount")), 0);
  const json_t *g = only_row(r);
  assert_true(json_is_real(json_object_get(g, "sum_Amount")));
  assert_true(json_real_value(json_object_get(g, "sum_Amount")) == 0.0);
  assert_true(json_is_integer(json_object_get(g, "sum_Quantity")));
  assert_int_equal(json_integer_value(json_object_get(g, "count")), 0);
  assert_true(json_is_null(json_object_get(g, "average_Amount")));
  assert_true(json_is_null(json_object_get(g, "max_DueDate")));
  snprintf(args, sizeof(args),
           "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": [{\"propertyName\": "
           "\"Status\"}], %s}",
           filter);
  r = sq_ok(run(fx, "admin", "Orders", args));
  assert_int_equal(json_integer_value(json_object_get(r, "matchedCount")), 0);
  assert_int_equal(json_array_size(json_object_get(r, "rows")), 0);
  assert_string_equal(json_string_value(json_array_get(json_object_get(r, "groupByProperties"), 0)),
                      "Status");
}

/* The count of rows under groupKey key == value (NULL: the null group). */
static int64_t group_count(const json_t *r, const char *key, const char *value) {
  size_t i;
  json_t *row;
  json_array_foreach(json_object_get(r, "rows"), i, row) {
    const json_t *v = json_object_get(json_object_get(row, "groupKey"), key);
    assert_non_null(v);
    bool match = value == NULL ? json_is_null(v)
                               : json_is_string(v) && strcmp(json_string_value(v), value) == 0;
    if (match)
      return json_integer_value(json_object_get(json_object_get(row, "aggregates"), "count"));
  }
  return 0;
}

static void test_group_by_customer_region(void **state) {
  sq_fixture_t *fx = *state;
  json_t *r = sq_ok(run(fx, "sales", "Orders",
                        "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": "
                        "[{\"propertyName\": \"Region\", \"reference\": \"Customer\"}]}"));
  const char *regions[] = {"APAC", "EMEA", "AMER", NULL};
  int64_t total = 0;
  for (size_t k = 0; k < DG_ARRAY_SIZE(regions); k++) {
    int64_t want = 0;
    size_t i;
    json_t *e;
    json_array_foreach(sq_data(fx, "Orders"), i, e) {
      const char *id = sq_str(e, "Customer");
      const json_t *c = id != NULL ? sq_find(fx, "Customers", "id", id) : NULL;
      const char *region = c != NULL ? sq_str(c, "Region") : NULL;
      want += regions[k] == NULL ? region == NULL : region && strcmp(region, regions[k]) == 0;
    }
    assert_int_equal(group_count(r, "customer.Region", regions[k]), want);
    total += want;
  }
  /* The null group is kept, and nothing else is there. */
  assert_true(group_count(r, "customer.Region", NULL) > 0);
  assert_int_equal(json_array_size(json_object_get(r, "rows")), DG_ARRAY_SIZE(regions));
  assert_int_equal(json_integer_value(json_object_get(r, "matchedCount")), total);
}

/* An Inbound key: a row per distinct SKU, each order counted once per SKU
 * it has; orders without lines in the null group. */
static void test_group_by_line_sku(void **state) {
  sq_fixture_t *fx = *state;
  json_t *r = sq_ok(run(fx, "admin", "Orders",
                        "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": "
                        "[{\"propertyName\": \"SKU\", \"reference\": \"OrderLines\"}]}"));
  size_t i, j;
  json_t *order, *line, *row;
  json_array_foreach(json_object_get(r, "rows"), i, row) {
    const char *sku =
        json_string_value(json_object_get(json_object_get(row, "groupKey"), "orderLines.SKU"));
    int64_t want = 0;
    json_array_foreach(sq_data(fx, "Orders"), j, order) {
      bool any = false, lines = false;
      size_t k;
      json_array_foreach(sq_data(fx, "OrderLines"), k, line) {
        if (strcmp(sq_str(line, "Order"), sq_str(order, "id")) != 0)
          continue;
        lines = true;
        const char *s = sq_str(line, "SKU");
        any |= sku == NULL ? s == NULL : s != NULL && strcasecmp(s, sku) == 0;
      }
      want += any || (sku == NULL && !lines);
    }
    assert_true(want > 0);
    assert_int_equal(
        json_integer_value(json_object_get(json_object_get(row, "aggregates"), "count")), want);
  }
  assert_true(json_array_size(json_object_get(r, "rows")) > 5);
  assert_true(group_count(r, "orderLines.SKU", NULL) > 0);
}

/* On time: the order's due date is on or before its customer's renewal. */
static void test_conditional_count(void **state) {
  sq_fixture_t *fx = *state;
  json_t *r = sq_ok(
      run(fx, "admin", "Orders",
          "{\"aggregations\": [{\"function\": \"Count\", \"alias\": \"on_time\", \"joinFilter\": "
          "{\"reference\": \"Customer\", \"condition\": {\"localProperty\": \"DueDate\", "
          "\"operator\": \"LessThanEqualTo\", \"foreignProperty\": \"RenewalDate\"}}}, "
          "{\"function\": \"Count\"}]}"));
  int64_t want = 0;
  size_t i;
  json_t *e;
  json_array_foreach(sq_data(fx, "Orders"), i, e) {
    const char *id = sq_str(e, "Customer"), *due = sq_str(e, "DueDate");
    const json_t *c = id != NULL ? sq_find(fx, "Customers", "id", id) : NULL;
    const char *renewal = c != NULL ? sq_str(c, "RenewalDate") : NULL;
    want += due != NULL && renewal != NULL && strcmp(due, renewal) <= 0;
  }
  const json_t *g = only_row(r);
  assert_true(want > 0 && want < (int64_t)json_array_size(sq_data(fx, "Orders")));
  assert_int_equal(json_integer_value(json_object_get(g, "on_time")), want);
  assert_int_equal(json_integer_value(json_object_get(g, "count")),
                   json_array_size(sq_data(fx, "Orders")));
}

static void test_boolean_keys(void **state) {
  sq_fixture_t *fx = *state;
  json_t *r = sq_ok(run(fx, "admin", "Products",
                        "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": "
                        "[{\"propertyName\": \"Active\"}]}"));
  const json_t *rows = json_object_get(r, "rows");
  assert_int_equal(json_array_size(rows), 3); /* null, false, true */
  assert_true(json_is_null(
      json_object_get(json_object_get(json_array_get(rows, 0), "groupKey"), "active")));
  assert_true(json_is_false(
      json_object_get(json_object_get(json_array_get(rows, 1), "groupKey"), "active")));
  assert_true(json_is_true(
      json_object_get(json_object_get(json_array_get(rows, 2), "groupKey"), "active")));
}

/* A grouped call may match exactly the cap, not one record more;
 * ungrouped totals have no cap. */
static void test_grouped_cap(void **state) {
  sq_fixture_t *fx = *state;
  static const char grouped[] = "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": "
                                "[{\"propertyName\": \"Status\"}]}";
  int64_t orders = (int64_t)json_array_size(sq_data(fx, "Orders"));
  fx->st.cat->server.max_grouped_aggregate_records = (uint64_t)orders;
  json_t *r = sq_ok(run(fx, "admin", "Orders", grouped));
  assert_int_equal(json_integer_value(json_object_get(r, "matchedCount")), orders);
  fx->st.cat->server.max_grouped_aggregate_records = (uint64_t)orders - 1;
  sq_result_t over = run(fx, "admin", "Orders", grouped);
  assert_int_equal(over.status, DG_E2BIG);
  assert_null(over.json);
  char says[128];
  snprintf(says, sizeof(says), "matches %lld Orders records, more than the %lld", (long long)orders,
           (long long)orders - 1);
  st_contains(over.message, says, "Narrow queryParameterGroups", "date range on OrderDate",
              "ungrouped totals", NULL);
  r = sq_ok(run(fx, "admin", "Orders", "{\"aggregations\": [{\"function\": \"Count\"}]}"));
  assert_int_equal(json_integer_value(json_object_get(r, "matchedCount")), orders);
}

static void test_result_budget(void **state) {
  sq_fixture_t *fx = *state;
  dg_store_t *small = NULL;
  dg_store_options_t o = {.path = fx->path, .sample_dir = "", .max_result_bytes = 600};
  assert_int_equal(sq_open(fx, fx->st.cat, &o, &small, NULL, 0), 0);
  dg_store_t *normal = fx->store;
  fx->store = small;
  sq_result_t r = run(fx, "admin", "Orders",
                      "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": "
                      "[{\"propertyName\": \"OrderNumber\"}]}");
  assert_int_equal(r.status, DG_E2BIG);
  st_contains(r.message, "larger than the limit of 600 bytes", NULL);
  json_t *ok = sq_ok(run(fx, "admin", "Orders", "{\"aggregations\": [{\"function\": \"Count\"}]}"));
  assert_int_equal(json_array_size(json_object_get(ok, "rows")), 1);
  fx->store = normal;
  sq_close(fx, small);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_totals, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_nothing_matched, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_group_by_customer_region, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_group_by_line_sku, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_conditional_count, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_boolean_keys, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_grouped_cap, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_result_budget, sq_setup, sq_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
