/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the aggregate argument parser (parse_aggregate.c): what
 * good aggregations, group keys and joinFilters become (result keys,
 * labels, joins, the cap), and every way they can be wrong, each with the
 * argument path it names and what the message says was given and is
 * allowed. */
#include "store/store_test.h"

typedef struct bad_case {
  const char *user;
  const char *model;
  const char *args;
  const char *param;
  const char *says[4]; /* substrings of the message */
} bad_case_t;

#define A(clauses) "{\"aggregations\": [" clauses "]}"
#define J(join) A("{\"function\": \"Count\", \"joinFilter\": " join "}")
#define C(cond) J("{\"reference\": \"Customer\", \"condition\": " cond "}")
#define GB(keys) "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": [" keys "]}"

static const bad_case_t bad[] = {
    /* aggregations and functions. */
    {"admin", "Orders", "{}", "aggregations", {"missing", "{\"function\": \"Count\"}"}},
    {"admin", "Orders", A(""), "aggregations", {"got []", "1 to 32 clauses"}},
    {"admin", "Orders", A("7"), "aggregations[0]", {"got 7", "function, propertyName"}},
    {"admin",
     "Orders",
     A("{\"function\": \"Median\", \"propertyName\": \"Amount\"}"),
     "aggregations[0].function",
     {"got \"Median\"", "Sum, Average, Count, Min, Max, DistinctCount"}},
    {"admin",
     "Orders",
     A("{\"function\": \"Sum\", \"propertyName\": \"Amount\", \"filter\": 1}"),
     "aggregations[0].filter",
     {"unknown field", "function, propertyName, alias, joinFilter"}},
    /* Properties by function. */
    {"admin",
     "Orders",
     A("{\"function\": \"Sum\", \"propertyName\": \"Status\"}"),
     "aggregations[0].propertyName",
     {"Sum needs a numeric property", "'Status' is String",
      "properties Sum can use: Amount, Quantity."}},
    {"admin",
     "Orders",
     A("{\"function\": \"Min\", \"propertyName\": \"OrderNumber\"}"),
     "aggregations[0].propertyName",
     {"Date or DateTime", "properties Min can use: OrderDate, DueDate, Amount, Quantity."}},
    {"admin",
     "Orders",
     A("{\"function\": \"Average\", \"propertyName\": \"Colour\"}"),
     "aggregations[0].propertyName",
     {"Orders has no property 'Colour'", "properties Average can use: Amount, Quantity"}},
    {"sales",
     "Customers",
     A("{\"function\": \"Sum\", \"propertyName\": \"CreditLimit\"}"),
     "aggregations[0].propertyName",
     {"no property 'CreditLimit'", "properties Sum can use: (none)"}},
    {"admin",
     "Orders",
     A("{\"function\": \"Average\"}"),
     "aggregations[0].propertyName",
     {"missing", "the property to aggregate"}},
    {"admin",
     "Orders",
     A("{\"function\": \"Count\", \"propertyName\": \"Amount\"}"),
     "aggregations[0].propertyName",
     {"takes no propertyName", "DistinctCount"}},
    /* Related collections. */
    {"admin",
     "Orders",
     A("{\"function\": \"Sum\", \"propertyName\": \"OrderLines\"}"),
     "aggregations[0].propertyName",
     {"summing a parent's child values", "is not supported",
      "OrderLines Data Model (dataModelId e405b7c6-358c-4a55-a021-0999f4a91a40)",
      "its reference 'Order'"}},
    {"admin",
     "Orders",
     A("{\"function\": \"Sum\", \"propertyName\": \"orderLines.Quantity\"}"),
     "aggregations[0].propertyName",
     {"summing a parent's child values"}},
    {"admin",
     "Orders",
     A("{\"function\": \"Sum\", \"propertyName\": \"Quantity\", \"reference\": \"OrderLines\"}"),
     "aggregations[0].reference",
     {"summing a parent's child values"}},
    {"admin",
     "Orders",
     A("{\"function\": \"Sum\", \"propertyName\": \"Customer.CreditLimit\"}"),
     "aggregations[0].propertyName",
     {"aggregations use the properties of Orders itself"}},
    {"admin",
     "Orders",
     A("{\"function\": \"Sum\", \"propertyName\": \"Amount\", \"reference\": \"Nope\"}"),
     "aggregations[0].reference",
     {"takes no reference"}},
    /* Aliases. */
    {"admin",
     "Orders",
     A("{\"function\": \"Sum\", \"propertyName\": \"Amount\"}, {\"function\": \"Sum\", "
       "\"propertyName\": \"amount\"}"),
     "aggregations[1].alias",
     {"the result key 'sum_Amount' is already used by aggregations[0]"}},
    {"admin",
     "Orders",
     A("{\"function\": \"Count\"}, {\"function\": \"Sum\", \"propertyName\": \"Amount\", "
       "\"alias\": \"Count\"}"),
     "aggregations[1].alias",
     {"'count' is already used"}},
    {"admin",
     "Orders",
     A("{\"function\": \"Count\", \"alias\": \"a\\u0001b\"}"),
     "aggregations[0].alias",
     {"without control characters"}},
    {"admin",
     "Orders",
     A("{\"function\": \"Count\", \"alias\": "
       "\"x2345678901234567890123456789012345678901234567890123456789012345\"}"),
     "aggregations[0].alias",
     {"1 to 64 characters"}},
    /* joinFilter: the join. */
    {"admin",
     "Orders",
     "{\"aggregations\": [{\"function\": \"Count\"}, {\"function\": \"Count\", \"alias\": \"x\", "
     "\"joinFilter\": {\"reference\": \"Customer\", \"condition\": {\"localProperty\": "
     "\"DueDate\", \"operator\": \"LessThan\", \"foreignProperty\": \"RenewalDate\"}}}], "
     "\"groupBy\": [{\"propertyName\": \"Status\"}]}",
     "aggregations[1].joinFilter",
     {"cannot be combined with groupBy", "request them separately"}},
    {"admin",
     "Orders",
     J("{\"reference\": \"OrderLines\", \"condition\": {\"localProperty\": \"Amount\", "
       "\"operator\": \"EqualTo\", \"value\": 1}}"),
     "aggregations[0].joinFilter.reference",
     {"Inbound reference", "joins one-to-one only", "Outbound references of Orders: Customer."}},
    {"admin",
     "Orders",
     J("{\"reference\": \"SalesRep\", \"condition\": {\"localProperty\": \"Amount\", "
       "\"operator\": \"EqualTo\", \"value\": 1}}"),
     "aggregations[0].joinFilter.reference",
     {"User entities, which have no Data Model to join"}},
    {"auditor",
     "Orders",
     J("{\"reference\": \"Customer\", \"condition\": {\"localProperty\": \"Amount\", "
       "\"operator\": \"EqualTo\", \"value\": 1}}"),
     "aggregations[0].joinFilter.reference",
     {"you may not read the entities that 'Customer' refers to"}},
    {"admin",
     "Orders",
     J("{\"entity\": \"Customer\", \"on\": {\"localProperty\": \"Customer\", "
       "\"foreignProperty\": \"Email\"}, \"condition\": {\"localProperty\": \"Amount\", "
       "\"operator\": \"EqualTo\", \"value\": 1}}"),
     "aggregations[0].joinFilter.on.foreignProperty",
     {"got 'Email'", "one-to-one only", "must be id"}},
    {"admin",
     "Orders",
     J("{\"entity\": \"Customer\", \"condition\": {\"localProperty\": \"Amount\", "
       "\"operator\": \"EqualTo\", \"value\": 1}}"),
     "aggregations[0].joinFilter.on",
     {"missing", "foreignProperty: \"id\""}},
    {"auditor",
     "Orders",
     J("{\"entity\": \"Customer\", \"on\": {\"localProperty\": \"Customer\", "
       "\"foreignProperty\": \"id\"}, \"condition\": {\"localProperty\": \"Amount\", "
       "\"operator\": \"EqualTo\", \"value\": 1}}"),
     "aggregations[0].joinFilter.entity",
     {"no Data Model you can read is called 'Customer'", "Orders (Order), Payments (Payment)"}},
    {"admin",
     "Orders",
     J("{\"entity\": \"Products\", \"on\": {\"localProperty\": \"Customer\", "
       "\"foreignProperty\": \"id\"}, \"condition\": {\"localProperty\": \"Amount\", "
       "\"operator\": \"EqualTo\", \"value\": 1}}"),
     "aggregations[0].joinFilter.on.localProperty",
     {"'Customer' holds ids of Customer entities, not of Product"}},
    {"admin",
     "Orders",
     J("{\"entity\": \"Customer\", \"on\": {\"localProperty\": \"Status\", "
       "\"foreignProperty\": \"id\"}, \"condition\": {\"localProperty\": \"Amount\", "
       "\"operator\": \"EqualTo\", \"value\": 1}}"),
     "aggregations[0].joinFilter.on.localProperty",
     {"holding the id of a Customer entity", "Customer, SalesRep, WarehouseId."}},
    {"admin",
     "Orders",
     J("{\"reference\": \"Customer\", \"entity\": \"Customer\", \"condition\": {}}"),
     "aggregations[0].joinFilter.entity",
     {"not both"}},
    {"admin",
     "Orders",
     J("{\"reference\": \"Customer\", \"on\": {}, \"condition\": {}}"),
     "aggregations[0].joinFilter.on",
     {"leave on out with reference"}},
    {"admin",
     "Orders",
     J("{\"condition\": {}}"),
     "aggregations[0].joinFilter",
     {"missing reference", "Outbound reference of Orders: Customer"}},
    {"admin",
     "Orders",
     J("{\"reference\": \"Customer\"}"),
     "aggregations[0].joinFilter.condition",
     {"missing"}},
    /* joinFilter: the condition. */
    {"admin",
     "Orders",
     C("{\"localProperty\": \"DueDate\", \"operator\": \"LessThan\", \"foreignProperty\": "
       "\"RenewalDate\", \"value\": \"2024-01-01\"}"),
     "aggregations[0].joinFilter.condition.value",
     {"not both"}},
    {"admin",
     "Orders",
     C("{\"localProperty\": \"DueDate\", \"operator\": \"LessThan\"}"),
     "aggregations[0].joinFilter.condition",
     {"missing foreignProperty or value", "a property of Customers"}},
    {"admin",
     "Orders",
     C("{\"localProperty\": \"Amount\", \"operator\": \"LessThan\", \"foreignProperty\": "
       "\"Name\"}"),
     "aggregations[0].joinFilter.condition.foreignProperty",
     {"'Name' of Customers is String and cannot be compared with 'Amount', which is Decimal"}},
    {"admin",
     "Orders",
     C("{\"localProperty\": \"DueDate\", \"operator\": \"Contains\", \"foreignProperty\": "
       "\"RenewalDate\"}"),
     "aggregations[0].joinFilter.condition.operator",
     {"got \"Contains\" for 'DueDate', which is Date", "allowed for Date: EqualTo"}},
    {"admin",
     "Orders",
     C("{\"localProperty\": \"DueDate\", \"operator\": \"GreaterThan\", \"value\": null}"),
     "aggregations[0].joinFilter.condition.operator",
     {"with a null value", "EqualTo (is null)"}},
    {"admin",
     "Orders",
     C("{\"localProperty\": \"DueDate\", \"operator\": \"GreaterThan\", \"value\": "
       "\"2024-13-01\"}"),
     "aggregations[0].joinFilter.condition.value",
     {"2024-13-01"}},
    {"sales",
     "Orders",
     C("{\"localProperty\": \"Amount\", \"operator\": \"LessThan\", \"foreignProperty\": "
       "\"CreditLimit\"}"),
     "aggregations[0].joinFilter.condition.foreignProperty",
     {"Customers has no property 'CreditLimit'"}},
    {"admin",
     "Orders",
     C("{\"localProperty\": \"OrderLines\", \"operator\": \"EqualTo\", \"value\": 1}"),
     "aggregations[0].joinFilter.condition.localProperty",
     {"Orders has no property 'OrderLines' with a value"}},
    /* groupBy. */
    {"admin",
     "Orders",
     GB("{\"propertyName\": \"Colour\"}"),
     "groupBy[0].propertyName",
     {"Orders has no property 'Colour'", "properties to group by: OrderNumber"}},
    {"admin",
     "Orders",
     GB("{\"propertyName\": \"OrderLines\"}"),
     "groupBy[0].propertyName",
     {"Inbound reference", "set reference to 'OrderLines'"}},
    {"admin",
     "Orders",
     GB("{\"propertyName\": \"Customer.Region\"}"),
     "groupBy[0].propertyName",
     {"set reference to 'Customer' and propertyName to 'Region'"}},
    {"admin",
     "Orders",
     GB("{\"propertyName\": \"Status\"}, {\"propertyName\": \"status\"}"),
     "groupBy[1]",
     {"'Status' is grouped by twice"}},
    {"admin",
     "Orders",
     GB("{\"propertyName\": \"Name\", \"reference\": \"SalesRep\"}"),
     "groupBy[0].reference",
     {"no Data Model to group by"}},
    {"auditor",
     "Orders",
     GB("{\"propertyName\": \"Region\", \"reference\": \"Customer\"}"),
     "groupBy[0].reference",
     {"you may not read the entities that 'Customer' refers to"}},
    {"admin",
     "Orders",
     GB("{\"propertyName\": \"Colour\", \"reference\": \"Customer\"}"),
     "groupBy[0].propertyName",
     {"Customers has no property 'Colour'"}},
    {"admin", "Orders", GB("\"Status\""), "groupBy[0]", {"got \"Status\""}},
    {"admin",
     "Orders",
     GB("{\"propertyName\": \"Status\", \"order\": 1}"),
     "groupBy[0].order",
     {"unknown field", "propertyName, reference"}},
    {"admin",
     "Orders",
     GB("{\"propertyName\": \"OrderNumber\"}, {\"propertyName\": \"Customer\"}, {\"propertyName\": "
        "\"SalesRep\"}, {\"propertyName\": \"OrderDate\"}, {\"propertyName\": \"DueDate\"}, "
        "{\"propertyName\": \"Status\"}, {\"propertyName\": \"Amount\"}, {\"propertyName\": "
        "\"Quantity\"}, {\"propertyName\": \"WarehouseId\"}"),
     "groupBy",
     {"at most 8 group keys"}},
    /* queryParameterGroups are read exactly as query_entities reads them. */
    {"admin",
     "Orders",
     "{\"aggregations\": [{\"function\": \"Count\"}], \"queryParameterGroups\": [{\"parameters\": "
     "[{\"operator\": \"EqualTo\", \"propertyName\": \"Colour\", \"value\": 1}]}]}",
     "queryParameterGroups[0].parameters[0].propertyName",
     {"Orders has no property 'Colour'", "valid names: id, OrderNumber"}},
};

static int parse(st_fixture_t *fx, const char *user, const char *model, const char *args,
                 dg_store_aggregate_t *a) {
  dg_store_parse_t ps = st_ctx(fx, user);
  return dg_store_parse_aggregate(&ps, st_model(fx, model), st_json(fx, args), a);
}

static void test_bad_aggregates(void **state) {
  st_fixture_t *fx = *state;
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++) {
    const bad_case_t *c = &bad[i];
    dg_store_aggregate_t a;
    int rc = parse(fx, c->user, c->model, c->args, &a);
    if (rc != DG_EINVAL)
      fail_msg("case %zu (%s) was accepted (rc %d)", i, c->args, rc);
    if (strcmp(fx->err.param, c->param) != 0)
      fail_msg("case %zu: param '%s', wanted '%s' (%s)", i, fx->err.param, c->param,
               fx->err.message);
    char prefix[256];
    snprintf(prefix, sizeof(prefix), "Invalid argument '%s': ", c->param);
    if (strncmp(fx->err.message, prefix, strlen(prefix)) != 0)
      fail_msg("case %zu: message does not name the argument: %s", i, fx->err.message);
    for (size_t k = 0; k < DG_ARRAY_SIZE(c->says) && c->says[k] != NULL; k++) {
      if (strstr(fx->err.message, c->says[k]) == NULL)
        fail_msg("case %zu: '%s' not in: %s", i, c->says[k], fx->err.message);
    }
  }
}

/* 33 clauses are one too many. */
static void test_too_many_clauses(void **state) {
  st_fixture_t *fx = *state;
  char args[4096];
  size_t len = (size_t)snprintf(args, sizeof(args), "{\"aggregations\": [");
  for (int i = 0; i <= DG_STORE_AGGREGATIONS_MAX; i++)
    len += (size_t)snprintf(args + len, sizeof(args) - len,
                            "%s{\"function\": \"Count\", \"alias\": \"c%d\"}", i ? ", " : "", i);
  snprintf(args + len, sizeof(args) - len, "]}");
  dg_store_aggregate_t a;
  assert_int_equal(parse(fx, "admin", "Orders", args, &a), DG_EINVAL);
  assert_string_equal(fx->err.param, "aggregations");
}

/* Default keys are Function_Property camelCased at the first letter;
 * aliases are camelCased too; names are found in any case. */
static void test_keys(void **state) {
  st_fixture_t *fx = *state;
  dg_store_aggregate_t a;
  assert_int_equal(parse(fx, "admin", "Orders",
                         A("{\"function\": \"Sum\", \"propertyName\": \"amount\"},"
                           "{\"function\": \"Count\"},"
                           "{\"function\": \"DistinctCount\", \"propertyName\": \"Status\"},"
                           "{\"function\": \"Max\", \"propertyName\": \"DueDate\"},"
                           "{\"function\": \"Average\", \"propertyName\": \"Quantity\", "
                           "\"alias\": \"MeanUnits\"},"
                           "{\"function\": \"Min\", \"propertyName\": \"Amount\", \"alias\": "
                           "\"on_time\"}"),
                         &a),
                   0);
  const char *keys[] = {"sum_Amount",  "count",     "distinctCount_Status",
                        "max_DueDate", "meanUnits", "on_time"};
  dg_store_agg_fn_t fns[] = {DG_STORE_AGG_SUM, DG_STORE_AGG_COUNT,   DG_STORE_AGG_DISTINCT_COUNT,
                             DG_STORE_AGG_MAX, DG_STORE_AGG_AVERAGE, DG_STORE_AGG_MIN};
  assert_int_equal(a.naggs, DG_ARRAY_SIZE(keys));
  for (size_t i = 0; i < a.naggs; i++) {
    assert_string_equal(a.aggs[i].key, keys[i]);
    assert_int_equal(a.aggs[i].fn, fns[i]);
    assert_null(a.aggs[i].join);
  }
  assert_string_equal(a.aggs[0].prop->name, "Amount");
  assert_null(a.aggs[1].prop);
  assert_int_equal(a.ngroup_by, 0);
  assert_string_equal(dg_store_agg_name(a.aggs[5].fn), "Min");
}

/* Labels: the configured names in groupByProperties, the keys camelCased
 * at the first segment. */
static void test_group_labels(void **state) {
  st_fixture_t *fx = *state;
  dg_store_aggregate_t a;
  assert_int_equal(parse(fx, "sales", "Orders",
                         GB("{\"propertyName\": \"warehouseId\"},"
                            "{\"propertyName\": \"region\", \"reference\": \"customer\"},"
                            "{\"propertyName\": \"SKU\", \"reference\": \"OrderLines\"}"),
                         &a),
                   0);
  const char *names[] = {"WarehouseId", "Customer.Region", "OrderLines.SKU"};
  const char *keys[] = {"warehouseId", "customer.Region", "orderLines.SKU"};
  assert_int_equal(a.ngroup_by, 3);
  for (size_t i = 0; i < a.ngroup_by; i++) {
    assert_string_equal(a.group_by[i].name, names[i]);
    assert_string_equal(a.group_by[i].key, keys[i]);
  }
  assert_null(a.group_by[0].reference);
  assert_ptr_equal(a.group_by[1].model, st_model(fx, "Customers"));
  assert_ptr_equal(a.group_by[2].model, st_model(fx, "OrderLines"));
  assert_string_equal(a.date_hint->name, "OrderDate");
}

static void test_joins(void **state) {
  st_fixture_t *fx = *state;
  dg_store_aggregate_t a;
  assert_int_equal(
      parse(fx, "admin", "Orders",
            A("{\"function\": \"Count\", \"joinFilter\": {\"reference\": \"customer\", "
              "\"condition\": {\"localProperty\": \"dueDate\", \"operator\": \"LessThanEqualTo\", "
              "\"foreignProperty\": \"renewalDate\"}}},"
              "{\"function\": \"Count\", \"alias\": \"b\", \"joinFilter\": {\"entity\": "
              "\"customer\", \"on\": {\"localProperty\": \"ID\", \"foreignProperty\": \"Id\"}, "
              "\"condition\": {\"localProperty\": \"OrderDate\", \"operator\": \"GreaterThan\", "
              "\"value\": \"2024-03-01\"}}}"),
            &a),
      0);
  const dg_store_join_t *j = a.aggs[0].join;
  const dg_model_t *customers = st_model(fx, "Customers");
  assert_ptr_equal(j->target, customers);
  assert_string_equal(j->reference->name, "Customer");
  assert_ptr_equal(j->key, j->reference);
  assert_string_equal(j->local->name, "DueDate");
  assert_true(j->compare_property);
  assert_string_equal(j->foreign->name, "RenewalDate");
  assert_int_equal(j->op, DG_STORE_OP_LE);
  j = a.aggs[1].join;
  assert_ptr_equal(j->target, customers);
  assert_null(j->reference);
  assert_null(j->key);
  assert_false(j->compare_property);
  assert_int_equal(j->value.kind, DG_STORE_TEXT);
  assert_string_equal(j->value.text, "2024-03-01");
}

/* The cap comes from server.maxGroupedAggregateRecords, 100,000 unless set. */
static void test_cap(void **state) {
  st_fixture_t *fx = *state;
  dg_store_aggregate_t a;
  assert_int_equal(fx->cat->server.max_grouped_aggregate_records, DG_STORE_GROUPED_CAP_DEFAULT);
  assert_int_equal(parse(fx, "admin", "Orders", GB("{\"propertyName\": \"Status\"}"), &a), 0);
  assert_int_equal(a.grouped_cap, 100000);
  fx->cat->server.max_grouped_aggregate_records = 7;
  assert_int_equal(parse(fx, "admin", "Orders", GB("{\"propertyName\": \"Status\"}"), &a), 0);
  assert_int_equal(a.grouped_cap, 7);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_bad_aggregates, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_too_many_clauses, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_keys, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_group_labels, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_joins, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_cap, st_setup, st_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
