/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for sqlite_exec.c on a temporary database loaded with the
 * sample data: each filter rule, sorting and paging, property selection,
 * permissions, expansion (batched, truncated at 100), fetch by ids,
 * keyword lookup and writes. Expected answers are computed here from the
 * sample JSON files, independently of the store. */
#include "store/sqlite_internal.h"
#include "store/sqlite_test.h"

/* ---- Independent evaluation over the sample data ------------------------------------- */

typedef bool (*pred_fn)(sq_fixture_t *fx, const json_t *e);

static bool ieq(const char *a, const char *b) {
  return a != NULL && b != NULL && strcasecmp(a, b) == 0;
}

static double num(const json_t *e, const char *key) {
  return json_number_value(json_object_get(e, key));
}

static bool has(const json_t *e, const char *key) {
  const json_t *v = json_object_get(e, key);
  return v != NULL && !json_is_null(v);
}

static const json_t *customer_of(sq_fixture_t *fx, const json_t *order) {
  const char *id = sq_str(order, "Customer");
  return id != NULL ? sq_find(fx, "Customers", "id", id) : NULL;
}

static bool p_open(sq_fixture_t *fx, const json_t *e) {
  return ieq(sq_str(e, "Status"), "open");
}

static bool p_not_open(sq_fixture_t *fx, const json_t *e) {
  return !p_open(fx, e);
}

static bool p_status_null(sq_fixture_t *fx, const json_t *e) {
  return !has(e, "Status");
}

static bool p_draft_or_cancelled(sq_fixture_t *fx, const json_t *e) {
  return ieq(sq_str(e, "Status"), "Draft") || ieq(sq_str(e, "Status"), "Cancelled");
}

static bool p_big_open(sq_fixture_t *fx, const json_t *e) {
  return p_open(fx, e) && has(e, "Amount") && num(e, "Amount") > 1000;
}

static bool p_summer(sq_fixture_t *fx, const json_t *e) {
  const char *d = sq_str(e, "OrderDate");
  return d != NULL && strcmp(d, "2024-06-01") >= 0 && strcmp(d, "2024-09-01") < 0;
}

static bool p_due_after_order(sq_fixture_t *fx, const json_t *e) {
  const char *due = sq_str(e, "DueDate"), *ord = sq_str(e, "OrderDate");
  return due != NULL && ord != NULL && strcmp(due, ord) > 0;
}

static bool p_emea(sq_fixture_t *fx, const json_t *e) {
  const json_t *c = customer_of(fx, e);
  return c != NULL && ieq(sq_str(c, "Region"), "EMEA");
}

static bool p_not_emea(sq_fixture_t *fx, const json_t *e) {
  const json_t *c = customer_of(fx, e);
  return c != NULL && !ieq(sq_str(c, "Region"), "EMEA");
}

static bool p_has_w100_line(sq_fixture_t *fx, const json_t *e) {
  size_t i;
  json_t *l;
  json_array_foreach(sq_data(fx, "OrderLines"), i, l) {
    if (ieq(sq_str(l, "Order"), sq_str(e, "id")) && ieq(sq_str(l, "SKU"), "w-100"))
      return true;
  }
  return false;
}

static bool p_customer_with_open_order(sq_fixture_t *fx, const json_t *c) {
  size_t i;
  json_t *o;
  json_array_foreach(sq_data(fx, "Orders"), i, o) {
    if (ieq(sq_str(o, "Customer"), sq_str(c, "id")) && p_open(fx, o))
      return true;
  }
  return false;
}

static bool p_no_customer(sq_fixture_t *fx, const json_t *e) {
  return !has(e, "Customer");
}

static bool p_inactive(sq_fixture_t *fx, const json_t *e) {
  return json_is_false(json_object_get(e, "Active"));
}

static bool p_not_active(sq_fixture_t *fx, const json_t *e) {
  return !json_is_true(json_object_get(e, "Active"));
}

static bool p_name_has_corp(sq_fixture_t *fx, const json_t *e) {
  const char *n = sq_str(e, "Name");
  return n != NULL && strcasestr(n, "CORP") != NULL;
}

static bool p_name_starts_acme(sq_fixture_t *fx, const json_t *e) {
  const char *n = sq_str(e, "Name");
  return n != NULL && strncasecmp(n, "acme", 4) == 0;
}

static bool ends_with(const char *s, const char *tail) {
  size_t n = s ? strlen(s) : 0, t = strlen(tail);
  return s != NULL && n >= t && strcasecmp(s + n - t, tail) == 0;
}

static bool p_name_not_ends_ltd(sq_fixture_t *fx, const json_t *e) {
  return !ends_with(sq_str(e, "Name"), "ltd");
}

static bool p_email_contains_region(sq_fixture_t *fx, const json_t *e) {
  const char *email = sq_str(e, "Email"), *region = sq_str(e, "Region");
  return email != NULL && region != NULL && strcasestr(email, region) != NULL;
}

static bool p_acme_orders(sq_fixture_t *fx, const json_t *e) {
  const json_t *c = customer_of(fx, e);
  return c != NULL && ieq(sq_str(c, "Name"), "Acme Corporation");
}

static bool p_renewal_before_2025(sq_fixture_t *fx, const json_t *e) {
  const char *d = sq_str(e, "RenewalDate");
  return d != NULL && strcmp(d, "2025-01-01") < 0;
}

#define P(x) "{\"parameters\": [" x "]}"
#define F(op, prop, value)                                                                         \
  "{\"operator\": \"" op "\", \"propertyName\": \"" prop "\", \"value\": " value "}"
#define RF(ref, op, prop, value)                                                                   \
  "{\"reference\": \"" ref "\", \"operator\": \"" op "\", \"propertyName\": \"" prop               \
  "\", \"value\": " value "}"

typedef struct filter_case {
  const char *model;
  const char *groups;
  pred_fn pred;
} filter_case_t;

static const filter_case_t filter_cases[] = {
    {"Orders", P(F("EqualTo", "Status", "\"oPeN\"")), p_open},
    {"Orders", P(F("NotEqualTo", "Status", "\"Open\"")), p_not_open},
    {"Orders",
     P("{\"operator\": \"EqualTo\", \"propertyName\": \"Status\", \"value\": \"null\", "
       "\"valueType\": \"null\"}"),
     p_status_null},
    {"Orders",
     "{\"andOrOperator\": \"Or\", \"parameters\": [" F("EqualTo", "Status", "\"Draft\"") "," F(
         "EqualTo", "Status", "\"cancelled\"") "]}",
     p_draft_or_cancelled},
    {"Orders",
     P(F("EqualTo", "Status", "\"Open\"")) "," P("{\"operator\": \"GreaterThan\", "
                                                 "\"propertyName\": \"Amount\", \"value\": "
                                                 "\"1000\", \"valueType\": \"number\"}"),
     p_big_open},
    {"Orders",
     P(F("GreaterThanEqualTo", "OrderDate", "\"2024-06-01\"") "," F("LessThan", "OrderDate",
                                                                    "\"2024-09-01\"")),
     p_summer},
    {"Orders",
     P("{\"operator\": \"GreaterThan\", \"propertyName\": \"DueDate\", "
       "\"comparisonPropertyName\": \"OrderDate\"}"),
     p_due_after_order},
    {"Orders", P(RF("Customer", "EqualTo", "Region", "\"emea\"")), p_emea},
    {"Orders", P(RF("Customer", "NotEqualTo", "Region", "\"EMEA\"")), p_not_emea},
    {"Orders", P(RF("OrderLines", "EqualTo", "SKU", "\"w-100\"")), p_has_w100_line},
    {"Customers", P(RF("Orders", "EqualTo", "Status", "\"Open\"")), p_customer_with_open_order},
    {"Orders", P(F("EqualTo", "Customer", "\"null\"")), p_no_customer},
    {"Products", P(F("EqualTo", "Active", "false")), p_inactive},
    {"Products", P(F("NotEqualTo", "Active", "\"true\"")), p_not_active},
    {"Customers", P(F("Contains", "Name", "\"corp\"")), p_name_has_corp},
    {"Customers", P(F("StartsWith", "Name", "\"ACME\"")), p_name_starts_acme},
    {"Customers", P(F("NotEndsWith", "Name", "\"LTD\"")), p_name_not_ends_ltd},
    {"Customers",
     P("{\"operator\": \"Contains\", \"propertyName\": \"Email\", \"comparisonPropertyName\": "
       "\"Region\"}"),
     p_email_contains_region},
    {"Orders", P(RF("Customer", "EqualTo", "Name", "\"acme corporation\"")), p_acme_orders},
    {"Customers", P(F("LessThan", "RenewalDate", "\"2025-01-01\"")), p_renewal_before_2025},
};

static int compare_strings(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The ids of entities, sorted, joined with spaces. */
static void sorted_ids(const char **ids, size_t n, char *out, size_t size) {
  size_t len = 0;
  qsort(ids, n, sizeof(*ids), compare_strings);
  out[0] = '\0';
  for (size_t i = 0; i < n; i++)
    len += (size_t)snprintf(out + len, size - len, "%s%s", i ? " " : "", ids[i]);
}

static void test_filters(void **state) {
  sq_fixture_t *fx = *state;
  static char want[16384], got[16384];
  for (size_t c = 0; c < DG_ARRAY_SIZE(filter_cases); c++) {
    const filter_case_t *fc = &filter_cases[c];
    const char *ids[256];
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(sq_data(fx, fc->model), i, e) {
      if (fc->pred(fx, e))
        ids[n++] = sq_str(e, "id");
    }
    sorted_ids(ids, n, want, sizeof(want));
    char args[2048];
    snprintf(args, sizeof(args),
             "{\"properties\": [], \"paging\": {\"pageSize\": 100}, \"queryParameterGroups\": "
             "[%s]}",
             fc->groups);
    json_t *r = sq_ok(sq_query(fx, "admin", fc->model, args));
    size_t m = 0;
    json_array_foreach(json_object_get(r, "entities"), i, e) {
      ids[m++] = sq_str(e, "id");
      assert_int_equal(json_object_size(json_object_get(e, "properties")), 0);
    }
    sorted_ids(ids, m, got, sizeof(got));
    if (strcmp(want, got) != 0)
      fail_msg("case %zu (%s): wanted %zu [%s], got %zu [%s]", c, fc->groups, n, want, m, got);
    snprintf(args, sizeof(args), "{\"countOnly\": true, \"queryParameterGroups\": [%s]}",
             fc->groups);
    r = sq_ok(sq_query(fx, "admin", fc->model, args));
    assert_int_equal(json_integer_value(json_object_get(r, "count")), n);
  }
}

/* Every filter case matches something and leaves something out, so each
 * one could tell a wrong answer from a right one. */
static void test_filter_cases_discriminate(void **state) {
  sq_fixture_t *fx = *state;
  for (size_t c = 0; c < DG_ARRAY_SIZE(filter_cases); c++) {
    size_t n = 0, i;
    json_t *e;
    json_array_foreach(sq_data(fx, filter_cases[c].model), i, e) n += filter_cases[c].pred(fx, e);
    if (n == 0 || n == json_array_size(sq_data(fx, filter_cases[c].model)))
      fail_msg("case %zu matches %zu entities", c, n);
  }
}

/* ---- Sorting and paging -------------------------------------------------------------- */

/* Amount descending, nulls last (nulls are the smallest values), ties by
 * id descending: what the store promises. */
static int by_amount_desc(const void *a, const void *b) {
  const json_t *x = *(const json_t *const *)a, *y = *(const json_t *const *)b;
  bool hx = has(x, "Amount"), hy = has(y, "Amount");
  if (hx != hy)
    return hx ? -1 : 1;
  if (hx && num(x, "Amount") != num(y, "Amount"))
    return num(x, "Amount") > num(y, "Amount") ? -1 : 1;
  return -strcmp(sq_str(x, "id"), sq_str(y, "id"));
}

static void test_sort_and_pages(void **state) {
  sq_fixture_t *fx = *state;
  json_t *orders = sq_data(fx, "Orders");
  size_t n = json_array_size(orders);
  const json_t **sorted = calloc(n, sizeof(*sorted));
  for (size_t i = 0; i < n; i++)
    sorted[i] = json_array_get(orders, i);
  qsort(sorted, n, sizeof(*sorted), by_amount_desc);
  size_t seen = 0;
  for (int page = 1;; page++) {
    char args[256];
    snprintf(args, sizeof(args),
             "{\"sortCondition\": {\"propertyName\": \"amount\", \"sortOrder\": \"Descending\"},"
             " \"paging\": {\"pageNumber\": %d, \"pageSize\": 7}, \"properties\": [\"Amount\"]}",
             page);
    json_t *r = sq_ok(sq_query(fx, "admin", "Orders", args));
    json_t *list = json_object_get(r, "entities");
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
      assert_true(seen < n);
      assert_string_equal(sq_str(e, "id"), sq_str(sorted[seen], "id"));
      seen++;
    }
    assert_int_equal(json_integer_value(json_object_get(r, "pageNumber")), page);
    assert_int_equal(json_integer_value(json_object_get(r, "pageSize")), 7);
    bool more = json_is_true(json_object_get(r, "hasMore"));
    assert_int_equal(more, seen < n);
    if (!more) {
      assert_true(json_is_null(json_object_get(r, "nextPage")));
      break;
    }
    assert_int_equal(json_integer_value(json_object_get(r, "nextPage")), page + 1);
    assert_int_equal(json_array_size(list), 7);
  }
  assert_int_equal(seen, n);
  free(sorted);
  /* Past the end: an empty page. */
  json_t *r = sq_ok(sq_query(fx, "admin", "Orders", "{\"paging\": {\"pageNumber\": 50}}"));
  assert_int_equal(json_array_size(json_object_get(r, "entities")), 0);
  assert_true(json_is_false(json_object_get(r, "hasMore")));
  assert_true(json_is_null(json_object_get(r, "nextPage")));
}

static void test_sort_ignores_case(void **state) {
  sq_fixture_t *fx = *state;
  json_t *r = sq_ok(sq_query(fx, "admin", "Customers",
                             "{\"sortCondition\": {\"propertyName\": \"Name\"}, \"properties\": "
                             "[\"Name\"], \"paging\": {\"pageSize\": 100}}"));
  size_t i;
  json_t *e;
  const char *prev = "";
  json_array_foreach(json_object_get(r, "entities"), i, e) {
    const char *name = sq_str(json_object_get(e, "properties"), "name");
    assert_true(strcasecmp(prev, name) <= 0);
    prev = name;
  }
  assert_int_equal(i, json_array_size(sq_data(fx, "Customers")));
}

/* ---- Properties and permissions --------------------------------------------------------- */

static void test_typed_properties(void **state) {
  sq_fixture_t *fx = *state;
  json_t *r = sq_ok(sq_query(fx, "admin", "Products", "{\"paging\": {\"pageSize\": 100}}"));
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(r, "entities"), i, e) {
    const json_t *want = sq_find(fx, "Products", "id", sq_str(e, "id"));
    const json_t *props = json_object_get(e, "properties");
    assert_non_null(want);
    assert_int_equal(json_object_size(props), 5);
    assert_string_equal(sq_str(props, "sKU"), sq_str(want, "SKU"));
    assert_true(json_real_value(json_object_get(props, "price")) == num(want, "Price"));
    const json_t *active = json_object_get(props, "active");
    const json_t *want_active = json_object_get(want, "Active");
    assert_true(want_active ? json_equal(active, (json_t *)want_active) : json_is_null(active));
    if (!has(want, "Category"))
      assert_true(json_is_null(json_object_get(props, "category")));
  }
}

static void test_selection_and_hidden(void **state) {
  sq_fixture_t *fx = *state;
  json_t *r = sq_ok(sq_query(fx, "sales", "Customers", "{}"));
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(r, "entities"), i, e) {
    json_t *props = json_object_get(e, "properties");
    assert_null(json_object_get(props, "creditLimit"));
    assert_non_null(json_object_get(props, "name"));
    assert_null(json_object_get(props, "orders"));
  }
  r = sq_ok(sq_query(fx, "admin", "Customers", "{\"properties\": [\"creditLimit\"]}"));
  json_array_foreach(json_object_get(r, "entities"), i, e) {
    json_t *props = json_object_get(e, "properties");
    assert_int_equal(json_object_size(props), 1);
    assert_non_null(json_object_get(props, "creditLimit"));
    assert_non_null(sq_str(e, "id"));
  }
}

/* ---- Expansion ------------------------------------------------------------------------------ */

static size_t lines_of(sq_fixture_t *fx, const char *order) {
  size_t n = 0, i;
  json_t *l;
  json_array_foreach(sq_data(fx, "OrderLines"), i, l) n += ieq(sq_str(l, "Order"), order);
  return n;
}

static void check_expanded_order(sq_fixture_t *fx, const json_t *e) {
  const json_t *want = sq_find(fx, "Orders", "id", sq_str(e, "id"));
  const json_t *props = json_object_get(e, "properties");
  const json_t *x = json_object_get(props, "expanded");
  const json_t *cust = json_object_get(x, "customer");
  const json_t *lines = json_object_get(x, "orderLines");
  const json_t *want_c = customer_of(fx, want);
  if (want_c == NULL) {
    assert_true(json_is_null(cust));
  } else {
    assert_string_equal(sq_str(cust, "id"), sq_str(want_c, "id"));
    assert_string_equal(sq_str(cust, "name"), sq_str(want_c, "Name"));
    assert_int_equal(json_object_size(cust), 2);
  }
  size_t n = lines_of(fx, sq_str(want, "id"));
  assert_true(json_is_array(lines));
  assert_int_equal(json_array_size(lines), n > DG_STORE_EXPAND_MAX ? DG_STORE_EXPAND_MAX : n);
  const json_t *cut = json_object_get(props, "expandedTruncated");
  if (n > DG_STORE_EXPAND_MAX) {
    assert_int_equal(json_array_size(cut), 1);
    assert_string_equal(json_string_value(json_array_get(cut, 0)), "orderLines");
  } else {
    assert_null(cut);
  }
  size_t i;
  json_t *line;
  json_array_foreach(lines, i, line) {
    const json_t *wl = sq_find(fx, "OrderLines", "id", sq_str(line, "id"));
    assert_non_null(wl);
    assert_string_equal(sq_str(wl, "Order"), sq_str(want, "id"));
    assert_int_equal(json_integer_value(json_object_get(line, "quantity")), num(wl, "Quantity"));
  }
}

static void test_expansion(void **state) {
  sq_fixture_t *fx = *state;
  unsigned long before = atomic_load(&dg__sqlite_statements);
  json_t *r = sq_ok(sq_query(fx, "admin", "Orders",
                             "{\"paging\": {\"pageSize\": 100}, \"properties\": [\"OrderNumber\"],"
                             " \"expand\": [{\"reference\": \"Customer\", \"properties\": "
                             "[\"Name\"]}, {\"reference\": \"OrderLines\", \"properties\": "
                             "[\"Quantity\"]}, {\"reference\": \"Files\"}]}"));
  /* One statement for the page and one per expanded reference. */
  assert_int_equal(atomic_load(&dg__sqlite_statements) - before, 4);
  size_t i;
  json_t *e;
  size_t truncated = 0, empty = 0, no_customer = 0;
  json_array_foreach(json_object_get(r, "entities"), i, e) {
    check_expanded_order(fx, e);
    json_t *x = json_object_get(json_object_get(e, "properties"), "expanded");
    truncated += json_object_get(json_object_get(e, "properties"), "expandedTruncated") != NULL;
    empty += json_array_size(json_object_get(x, "orderLines")) == 0;
    no_customer += json_is_null(json_object_get(x, "customer"));
    assert_true(json_is_array(json_object_get(x, "files")));
  }
  assert_int_equal(i, json_array_size(sq_data(fx, "Orders")));
  /* The sample data has each case the rules speak of. */
  assert_int_equal(truncated, 1);
  assert_true(empty >= 1);
  assert_true(no_customer >= 1);
}

/* SQLite's memory counts are off in the store (their mutex was taken on
 * every allocation): after queries on several connections, SQLite has
 * counted nothing. */
static void test_memory_counts_off(void **state) {
  sq_fixture_t *fx = *state;
  for (int i = 0; i < 8; i++)
    sq_ok(sq_query(fx, "admin", "Orders", "{\"paging\": {\"pageSize\": 100}}"));
  assert_int_equal(sqlite3_memory_used(), 0);
}

static void test_inbound_expansion_empty(void **state) {
  sq_fixture_t *fx = *state;
  json_t *r =
      sq_ok(sq_query(fx, "admin", "Customers",
                     "{\"queryParameterGroups\": [" P(
                         F("EqualTo", "Name",
                           "\"Quiet Fields Ltd\"")) "],"
                                                    " \"expand\": [{\"reference\": \"Orders\"}]}"));
  json_t *e = json_array_get(json_object_get(r, "entities"), 0);
  json_t *orders =
      json_object_get(json_object_get(json_object_get(e, "properties"), "expanded"), "orders");
  assert_true(json_is_array(orders));
  assert_int_equal(json_array_size(orders), 0);
}

/* ---- Fetch by ids -----------------------------------------------------------------------------
 */

static sq_result_t fetch(sq_fixture_t *fx, const char *user, const char *model, const char *args) {
  dg_store_parse_t ps = st_ctx(&fx->st, user);
  dg_store_fetch_t *f = dg_arena_calloc(fx->st.arena, 1, sizeof(*f));
  if (dg_store_parse_fetch(&ps, st_model(&fx->st, model), st_json(&fx->st, args), f) != 0)
    fail_msg("%s", fx->st.err.message);
  sq_result_t r = {.starting = true};
  dg_errctx_t err;
  assert_int_equal(dg_store_fetch(fx->store, f, sq_on_result, &r, NULL, &err), 0);
  r.starting = false;
  sq_wait(fx, &r);
  dg_arena_defer(fx->st.arena, (void (*)(void *))json_decref, r.json);
  return r;
}

static void test_fetch(void **state) {
  sq_fixture_t *fx = *state;
  json_t *cust = sq_data(fx, "Customers");
  const char *c1 = sq_str(json_array_get(cust, 0), "id");
  const char *c3 = sq_str(json_array_get(cust, 2), "id");
  char args[512];
  snprintf(args, sizeof(args),
           "{\"entityIds\": [\"%s\", \"00000000-0000-4000-8000-000000000000\", \"%s\", \"%s\"],"
           " \"properties\": [\"Name\"], \"expand\": [{\"reference\": \"Orders\", "
           "\"properties\": [\"OrderNumber\"]}]}",
           c3, c1, c3);
  json_t *r = sq_ok(fetch(fx, "admin", "Customers", args));
  json_t *list = json_object_get(r, "entities");
  assert_int_equal(json_array_size(list), 2);
  assert_string_equal(sq_str(json_array_get(list, 0), "id"), c3);
  assert_string_equal(sq_str(json_array_get(list, 1), "id"), c1);
  json_t *orders = json_object_get(
      json_object_get(json_object_get(json_array_get(list, 1), "properties"), "expanded"),
      "orders");
  size_t want = 0, i;
  json_t *o;
  json_array_foreach(sq_data(fx, "Orders"), i, o) want += ieq(sq_str(o, "Customer"), c1);
  assert_int_equal(json_array_size(orders), want);
  r = sq_ok(fetch(fx, "admin", "Customers",
                  "{\"entityIds\": [\"00000000-0000-4000-8000-000000000000\"]}"));
  assert_int_equal(json_array_size(json_object_get(r, "entities")), 0);
}

/* ---- Lookup ------------------------------------------------------------------------------------
 */

static sq_result_t lookup(sq_fixture_t *fx, const char *user, const char *args) {
  dg_store_parse_t ps = st_ctx(&fx->st, user);
  dg_store_lookup_t *l = dg_arena_calloc(fx->st.arena, 1, sizeof(*l));
  if (dg_store_parse_lookup(&ps, st_json(&fx->st, args), l) != 0)
    fail_msg("%s", fx->st.err.message);
  sq_result_t r = {.starting = true};
  dg_errctx_t err;
  assert_int_equal(dg_store_lookup(fx->store, l, sq_on_result, &r, NULL, &err), 0);
  r.starting = false;
  sq_wait(fx, &r);
  dg_arena_defer(fx->st.arena, (void (*)(void *))json_decref, r.json);
  return r;
}

static size_t count_with_prefix(sq_fixture_t *fx, const char *model, const char *key,
                                const char *prefix) {
  size_t n = 0, i;
  json_t *e;
  json_array_foreach(sq_data(fx, model), i, e) {
    const char *v = sq_str(e, key);
    n += v != NULL && strncasecmp(v, prefix, strlen(prefix)) == 0;
  }
  return n;
}

static void test_lookup(void **state) {
  sq_fixture_t *fx = *state;
  json_t *r = sq_ok(lookup(fx, "sales", "{\"searchValue\": \"ACME\"}"));
  json_t *list = json_object_get(r, "entities");
  assert_int_equal(json_array_size(list), count_with_prefix(fx, "Customers", "Name", "acme"));
  size_t i;
  json_t *e;
  json_array_foreach(list, i, e) {
    assert_string_equal(sq_str(e, "dataModelName"), "Customers");
    assert_string_equal(sq_str(e, "dataModelId"), st_model(&fx->st, "Customers")->id);
    assert_string_equal(sq_str(e, "entityType"), "Customer");
    assert_string_equal(sq_str(e, "entitySubType"), "Account");
    assert_null(json_object_get(json_object_get(e, "properties"), "creditLimit"));
  }
  /* Two words: both must match. */
  r = sq_ok(lookup(fx, "admin", "{\"searchValue\": \"acme corp\"}"));
  assert_int_equal(json_array_size(json_object_get(r, "entities")), 1);
  r = sq_ok(lookup(fx, "admin", "{\"searchValue\": \"widget\", \"entityType\": \"Product\"}"));
  json_array_foreach(json_object_get(r, "entities"), i, e) {
    assert_string_equal(sq_str(e, "dataModelName"), "Products");
    assert_non_null(strcasestr(sq_str(json_object_get(e, "properties"), "name"), "widget"));
  }
  assert_int_equal(i, 2);
  /* Payments are invisible to sales, found for the admin. */
  size_t trx = count_with_prefix(fx, "Payments", "Reference", "TRX");
  r = sq_ok(lookup(fx, "sales", "{\"searchValue\": \"TRX\"}"));
  assert_int_equal(json_array_size(json_object_get(r, "entities")), 0);
  r = sq_ok(lookup(fx, "admin", "{\"searchValue\": \"TRX\", \"limit\": 100}"));
  assert_int_equal(json_array_size(json_object_get(r, "entities")), trx);
  r = sq_ok(lookup(fx, "admin", "{\"searchValue\": \"TRX\", \"limit\": 2}"));
  assert_int_equal(json_array_size(json_object_get(r, "entities")), 2);
  /* A SKU is found both on its product and on order lines. */
  r = sq_ok(lookup(fx, "admin", "{\"searchValue\": \"GZ-410\", \"limit\": 100}"));
  bool product = false, line = false;
  json_array_foreach(json_object_get(r, "entities"), i, e) {
    product |= strcmp(sq_str(e, "dataModelName"), "Products") == 0;
    line |= strcmp(sq_str(e, "dataModelName"), "OrderLines") == 0;
  }
  assert_true(product && line);
}

/* ---- Writes ------------------------------------------------------------------------------------
 */

static sq_result_t write_one(sq_fixture_t *fx, dg_store_write_mode_t mode, const char *id,
                             const char *name) {
  const dg_model_t *m = st_model(&fx->st, "Customers");
  dg_store_write_t *w = dg_arena_calloc(fx->st.arena, 1, sizeof(*w));
  const dg_property_t **props = dg_arena_calloc(fx->st.arena, 1, sizeof(*props));
  dg_store_value_t *values = dg_arena_calloc(fx->st.arena, 1, sizeof(*values));
  props[0] = dg_model_property(m, "Name");
  values[0] = (dg_store_value_t){.kind = DG_STORE_TEXT, .text = name, .len = strlen(name)};
  *w = (dg_store_write_t){
      .model = m, .mode = mode, .id = id, .props = props, .values = values, .nvalues = 1};
  sq_result_t r = {.starting = true};
  dg_errctx_t err;
  assert_int_equal(dg_store_write(fx->store, w, sq_on_result, &r, NULL, &err), 0);
  r.starting = false;
  sq_wait(fx, &r);
  dg_arena_defer(fx->st.arena, (void (*)(void *))json_decref, r.json);
  return r;
}

static size_t found(sq_fixture_t *fx, const char *word) {
  char args[128];
  snprintf(args, sizeof(args), "{\"searchValue\": \"%s\"}", word);
  return json_array_size(json_object_get(sq_ok(lookup(fx, "admin", args)), "entities"));
}

static void test_writes(void **state) {
  sq_fixture_t *fx = *state;
  json_t *r = sq_ok(write_one(fx, DG_STORE_CREATE, NULL, "Zebra Works"));
  const char *id = sq_str(r, "id");
  assert_true(dg_uuid_valid(id));
  assert_true(json_is_true(json_object_get(r, "created")));
  char *keep = dg_arena_strdup(fx->st.arena, id);
  assert_int_equal(found(fx, "zebra"), 1);
  r = sq_ok(write_one(fx, DG_STORE_UPDATE, keep, "Yak Holdings"));
  assert_true(json_is_false(json_object_get(r, "created")));
  assert_int_equal(found(fx, "zebra"), 0);
  assert_int_equal(found(fx, "yak"), 1);
  sq_result_t bad = write_one(fx, DG_STORE_CREATE, keep, "Again");
  assert_int_equal(bad.status, DG_EEXIST);
  bad = write_one(fx, DG_STORE_UPDATE, "00000000-0000-4000-8000-00000000abcd", "Nobody");
  assert_int_equal(bad.status, DG_ENOENT);
  st_contains(bad.message, "no Customers entity with id", NULL);
  r = sq_ok(write_one(fx, DG_STORE_UPSERT, "00000000-0000-4000-8000-00000000abcd", "Newt"));
  assert_true(json_is_true(json_object_get(r, "created")));
  r = sq_ok(write_one(fx, DG_STORE_UPSERT, "00000000-0000-4000-8000-00000000abcd", "Newton"));
  assert_true(json_is_false(json_object_get(r, "created")));
  r = sq_ok(sq_query(fx, "admin", "Customers", "{\"countOnly\": true}"));
  assert_int_equal(json_integer_value(json_object_get(r, "count")),
                   json_array_size(sq_data(fx, "Customers")) + 2);
}

/* ---- Transactions from the statement cache ---------------------------------------------- */

static bool cached(const dg__sqlite_conn_t *conn, const char *sql) {
  for (size_t i = 0; i < DG__SQLITE_STMT_CACHE; i++) {
    if (conn->cache[i].sql != NULL && strcmp(conn->cache[i].sql, sql) == 0)
      return true;
  }
  return false;
}

static void test_exec_cached(void **state) {
  (void)state;
  dg__sqlite_conn_t *conn = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(
      dg__sqlite_connect(":memory:", SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &conn, &err), 0);
  for (int round = 0; round < 2; round++) { /* the second round reuses the statements */
    assert_int_equal(dg__sqlite_exec_cached(conn, "BEGIN", &err), 0);
    assert_false(sqlite3_get_autocommit(conn->db));
    assert_int_equal(dg__sqlite_exec_cached(conn, "COMMIT", &err), 0);
    assert_true(sqlite3_get_autocommit(conn->db));
  }
  assert_true(cached(conn, "BEGIN") && cached(conn, "COMMIT"));
  /* A failed step is reported and leaves the statement ready for the next call. */
  assert_int_equal(dg__sqlite_exec_cached(conn, "COMMIT", &err), DG_EIO);
  st_contains(err.message, "no transaction is active", NULL);
  assert_int_equal(dg__sqlite_exec_cached(conn, "BEGIN", &err), 0);
  assert_int_equal(dg__sqlite_exec_cached(conn, "COMMIT", &err), 0);
  assert_int_equal(dg__sqlite_exec_cached(conn, "NOT A STATEMENT", &err), DG_EIO);
  st_contains(err.message, "syntax error", NULL);
  dg__sqlite_disconnect(conn);
}

/* ---- Result budget
 * ------------------------------------------------------------------------------- */

static void test_result_budget(void **state) {
  sq_fixture_t *fx = *state;
  dg_store_t *small = NULL;
  dg_store_options_t o = {.path = fx->path, .sample_dir = "", .max_result_bytes = 2000};
  assert_int_equal(sq_open(fx, fx->st.cat, &o, &small, NULL, 0), 0);
  dg_store_t *normal = fx->store;
  fx->store = small;
  /* A page over the limit keeps the whole entities that fit and says how
   * to read on from the first one left out. */
  sq_result_t r = sq_query(fx, "admin", "Orders", "{\"paging\": {\"pageSize\": 100}}");
  assert_int_equal(r.status, 0);
  json_t *page = r.json;
  size_t kept = json_array_size(json_object_get(page, "entities"));
  size_t total = json_array_size(sq_data(fx, "Orders"));
  assert_true(kept > 0 && kept < total);
  assert_true(json_is_true(json_object_get(page, "truncated")));
  assert_int_equal(json_integer_value(json_object_get(page, "omittedCount")),
                   (total < 100 ? total : 100) - kept);
  json_t *next = json_object_get(page, "continueWith");
  json_int_t size = json_integer_value(json_object_get(next, "pageSize"));
  assert_true(size >= 1 && (size_t)size <= kept);
  assert_int_equal((json_integer_value(json_object_get(next, "pageNumber")) - 1) * size, kept);
  char *text = json_dumps(page, JSON_COMPACT);
  assert_true(strlen(text) <= 2000);
  free(text);
  r = sq_query(fx, "admin", "Orders", "{\"paging\": {\"pageSize\": 1}, \"properties\": []}");
  assert_int_equal(r.status, 0);
  assert_null(json_object_get(r.json, "truncated"));
  fx->store = normal;
  sq_close(fx, small);
  /* Not even one entity fits: refused, saying how to narrow the request. */
  o.max_result_bytes = 600;
  assert_int_equal(sq_open(fx, fx->st.cat, &o, &small, NULL, 0), 0);
  fx->store = small;
  r = sq_query(fx, "admin", "Orders", "{\"paging\": {\"pageSize\": 5}}");
  assert_int_equal(r.status, DG_E2BIG);
  st_contains(r.message, "larger than the limit of 600 bytes", "select fewer properties", NULL);
  fx->store = normal;
  sq_close(fx, small);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_filters, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_filter_cases_discriminate, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_sort_and_pages, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_sort_ignores_case, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_typed_properties, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_selection_and_hidden, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_expansion, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_inbound_expansion_empty, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_memory_counts_off, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_fetch, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_lookup, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_writes, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_result_budget, sq_setup, sq_teardown),
      cmocka_unit_test(test_exec_cached),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
