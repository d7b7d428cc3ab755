/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the query argument parser (parse.c): what a good query
 * becomes, and every way a query can be wrong, each with the argument path
 * it names and what the message says was given and is allowed. */
#include "store/store_test.h"

typedef struct bad_case {
  const char *user;
  const char *model;
  const char *args;
  const char *param;
  const char *says[4]; /* substrings of the message */
} bad_case_t;

#define G(params) "{\"queryParameterGroups\": [{\"parameters\": [" params "]}]}"

static const bad_case_t bad_queries[] = {
    /* Names. */
    {"admin",
     "Orders",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"Colour\", \"value\": 1}"),
     "queryParameterGroups[0].parameters[0].propertyName",
     {"Orders has no property 'Colour'", "valid names: id, OrderNumber, Customer", "Quantity"}},
    {"sales",
     "Customers",
     G("{\"operator\": \"GreaterThan\", \"propertyName\": \"CreditLimit\", \"value\": \"5\"}"),
     "queryParameterGroups[0].parameters[0].propertyName",
     {"no property 'CreditLimit'", "valid names: id, Name, Email, Region, RenewalDate"}},
    {"admin",
     "OrderLines",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"LineItemId\", \"value\": \"x\"}"),
     "queryParameterGroups[0].parameters[0].propertyName",
     {"'LineItemId' cannot be used in filters", "filterable properties of OrderLines"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"OrderLines\", \"value\": \"x\"}"),
     "queryParameterGroups[0].parameters[0].propertyName",
     {"Inbound reference", "set reference to 'OrderLines'", "SKU"}},
    /* Operators. */
    {"admin",
     "Orders",
     G("{\"operator\": \"Like\", \"propertyName\": \"Status\", \"value\": \"x\"}"),
     "queryParameterGroups[0].parameters[0].operator",
     {"got \"Like\"", "allowed for String: EqualTo", "NotEndsWith"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"Contains\", \"propertyName\": \"Amount\", \"value\": \"1\"}"),
     "queryParameterGroups[0].parameters[0].operator",
     {"Contains cannot compare 'Amount', which is Decimal", "LessThanEqualTo."}},
    {"admin",
     "Products",
     G("{\"operator\": \"GreaterThan\", \"propertyName\": \"Active\", \"value\": true}"),
     "queryParameterGroups[0].parameters[0].operator",
     {"which is Boolean", "allowed for Boolean: EqualTo, NotEqualTo."}},
    {"admin",
     "Orders",
     G("{\"operator\": \"LessThan\", \"propertyName\": \"Customer\", \"value\": "
       "\"7c08b797-fac4-5249-874c-557b0f4557f5\"}"),
     "queryParameterGroups[0].parameters[0].operator",
     {"which is Reference"}},
    {"admin",
     "Orders",
     G("{\"propertyName\": \"Status\", \"value\": \"Open\"}"),
     "queryParameterGroups[0].parameters[0].operator",
     {"missing; give an operator"}},
    /* Values. */
    {"admin",
     "Orders",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"Status\"}"),
     "queryParameterGroups[0].parameters[0].value",
     {"missing", "comparisonPropertyName", "valueType null"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"GreaterThan\", \"propertyName\": \"Amount\", \"value\": \"lots\"}"),
     "queryParameterGroups[0].parameters[0].value",
     {"got \"lots\"", "Amount is Decimal", "a number such as 12.5"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"GreaterThan\", \"propertyName\": \"Quantity\", \"value\": 2.5}"),
     "queryParameterGroups[0].parameters[0].value",
     {"got 2.5", "a whole number"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"GreaterThan\", \"propertyName\": \"Quantity\", \"value\": "
       "\"99999999999\"}"),
     "queryParameterGroups[0].parameters[0].value",
     {"from -2147483648 to 2147483647"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"LessThan\", \"propertyName\": \"OrderDate\", \"value\": \"2024-02-30\"}"),
     "queryParameterGroups[0].parameters[0].value",
     {"got \"2024-02-30\"", "OrderDate is Date", "YYYY-MM-DD"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"Customer\", \"value\": \"Acme\"}"),
     "queryParameterGroups[0].parameters[0].value",
     {"Customer is Reference", "GUID", "lookup_by_keyword"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"id\", \"value\": \"12345\"}"),
     "queryParameterGroups[0].parameters[0].value",
     {"id is Guid"}},
    {"admin",
     "Products",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"Active\", \"value\": \"yes\"}"),
     "queryParameterGroups[0].parameters[0].value",
     {"true or false"}},
    {"admin",
     "Customers",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"CreatedAt\", \"value\": \"yesterday\"}"),
     "queryParameterGroups[0].parameters[0].value",
     {"ISO 8601"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"Status\", \"value\": [1]}"),
     "queryParameterGroups[0].parameters[0].value",
     {"got [1]"}},
    /* valueType. */
    {"admin",
     "Orders",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"Status\", \"value\": \"1\", "
       "\"valueType\": \"number\"}"),
     "queryParameterGroups[0].parameters[0].valueType",
     {"got \"number\" but the property is String", "string or null"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"Amount\", \"value\": \"1\", "
       "\"valueType\": \"boolean\"}"),
     "queryParameterGroups[0].parameters[0].valueType",
     {"number, string or null"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"Status\", \"value\": \"x\", "
       "\"valueType\": \"text\"}"),
     "queryParameterGroups[0].parameters[0].valueType",
     {"got \"text\"", "boolean, string, number or null"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"Status\", \"value\": \"Open\", "
       "\"valueType\": \"null\"}"),
     "queryParameterGroups[0].parameters[0].value",
     {"must be the string \"null\""}},
    {"admin",
     "Orders",
     G("{\"operator\": \"GreaterThan\", \"propertyName\": \"Amount\", \"value\": \"null\", "
       "\"valueType\": \"null\"}"),
     "queryParameterGroups[0].parameters[0].operator",
     {"got GreaterThan with a null value", "EqualTo (is null) or NotEqualTo"}},
    /* comparisonPropertyName. */
    {"admin",
     "Orders",
     G("{\"operator\": \"LessThan\", \"propertyName\": \"DueDate\", \"comparisonPropertyName\": "
       "\"OrderDate\", \"value\": \"2024-01-01\"}"),
     "queryParameterGroups[0].parameters[0].value",
     {"leave value (and valueType) out"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"LessThan\", \"propertyName\": \"DueDate\", \"comparisonPropertyName\": "
       "\"Amount\"}"),
     "queryParameterGroups[0].parameters[0].comparisonPropertyName",
     {"'Amount' is Decimal and cannot be compared with 'DueDate', which is Date"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"LessThan\", \"propertyName\": \"DueDate\", \"comparisonPropertyName\": "
       "\"Shipped\"}"),
     "queryParameterGroups[0].parameters[0].comparisonPropertyName",
     {"no property 'Shipped'", "valid names"}},
    /* reference and match. */
    {"admin",
     "Orders",
     G("{\"reference\": \"Status\", \"operator\": \"EqualTo\", \"propertyName\": \"Name\", "
       "\"value\": \"x\"}"),
     "queryParameterGroups[0].parameters[0].reference",
     {"no Reference property 'Status'", "Reference properties: Customer, OrderLines, Payments"}},
    {"admin",
     "Orders",
     G("{\"reference\": \"SalesRep\", \"operator\": \"EqualTo\", \"propertyName\": \"Name\", "
       "\"value\": \"x\"}"),
     "queryParameterGroups[0].parameters[0].reference",
     {"'SalesRep' points at User entities", "which have no Data Model"}},
    {"sales",
     "Orders",
     G("{\"reference\": \"Payments\", \"operator\": \"EqualTo\", \"propertyName\": \"Method\", "
       "\"value\": \"Card\"}"),
     "queryParameterGroups[0].parameters[0].reference",
     {"you may not read the entities that 'Payments' refers to"}},
    {"admin",
     "Orders",
     G("{\"reference\": \"Customer\", \"operator\": \"EqualTo\", \"propertyName\": \"Nme\", "
       "\"value\": \"x\"}"),
     "queryParameterGroups[0].parameters[0].propertyName",
     {"Customers has no property 'Nme'", "Name, Email"}},
    {"admin",
     "Orders",
     G("{\"reference\": \"OrderLines\", \"match\": \"All\", \"operator\": \"EqualTo\", "
       "\"propertyName\": \"SKU\", \"value\": \"x\"}"),
     "queryParameterGroups[0].parameters[0].match",
     {"got \"All\"", "allowed: Any"}},
    /* Shapes. */
    {"admin",
     "Orders",
     "{\"queryParameterGroups\": {}}",
     "queryParameterGroups",
     {"got {}", "an array of at most 20 groups"}},
    {"admin",
     "Orders",
     "{\"queryParameterGroups\": [7]}",
     "queryParameterGroups[0]",
     {"got 7", "andOrOperator (And or Or)"}},
    {"admin",
     "Orders",
     "{\"queryParameterGroups\": [{\"andOrOperator\": \"Xor\"}]}",
     "queryParameterGroups[0].andOrOperator",
     {"got \"Xor\"", "And or Or"}},
    {"admin",
     "Orders",
     "{\"queryParameterGroups\": [{\"parameters\": {}}]}",
     "queryParameterGroups[0].parameters",
     {"at most 50 filters"}},
    {"admin",
     "Orders",
     "{\"queryParameterGroups\": [{\"filters\": []}]}",
     "queryParameterGroups[0].filters",
     {"unknown field", "andOrOperator, parameters"}},
    {"admin",
     "Orders",
     G("\"x\""),
     "queryParameterGroups[0].parameters[0]",
     {"got \"x\"", "an object with operator"}},
    {"admin",
     "Orders",
     G("{\"operator\": \"EqualTo\", \"propertyName\": \"Status\", \"value\": \"x\", \"op\": 1}"),
     "queryParameterGroups[0].parameters[0].op",
     {"unknown field"}},
    /* sortCondition. */
    {"admin",
     "Orders",
     "{\"sortCondition\": {\"propertyName\": \"Price\"}}",
     "sortCondition.propertyName",
     {"no property 'Price' that you can sort by", "OrderDate"}},
    {"admin",
     "Orders",
     "{\"sortCondition\": {\"propertyName\": \"CalculatedOrderId\"}}",
     "sortCondition.propertyName",
     {"'CalculatedOrderId' cannot be sorted by", "sortable properties of Orders: id,"}},
    {"admin",
     "Orders",
     "{\"sortCondition\": {\"propertyName\": \"OrderLines\"}}",
     "sortCondition.propertyName",
     {"'OrderLines' cannot be sorted by"}},
    {"admin",
     "Orders",
     "{\"sortCondition\": {\"propertyName\": \"OrderDate\", \"sortOrder\": \"Down\"}}",
     "sortCondition.sortOrder",
     {"got \"Down\"", "Ascending or Descending"}},
    {"admin", "Orders", "{\"sortCondition\": {}}", "sortCondition.propertyName", {"missing"}},
    {"admin",
     "Orders",
     "{\"sortCondition\": \"OrderDate\"}",
     "sortCondition",
     {"an object {propertyName, sortOrder}"}},
    /* paging and countOnly. */
    {"admin",
     "Orders",
     "{\"paging\": {\"pageSize\": 101}}",
     "paging.pageSize",
     {"got 101", "from 1 to 100 (default 25)"}},
    {"admin", "Orders", "{\"paging\": {\"pageSize\": 0}}", "paging.pageSize", {"got 0"}},
    {"admin",
     "Orders",
     "{\"paging\": {\"pageNumber\": 0}}",
     "paging.pageNumber",
     {"got 0", "from 1 to 1000000 (default 1)"}},
    {"admin",
     "Orders",
     "{\"paging\": {\"pageNumber\": \"2\"}}",
     "paging.pageNumber",
     {"got \"2\""}},
    {"admin", "Orders", "{\"paging\": {\"page\": 2}}", "paging.page", {"unknown field"}},
    {"admin", "Orders", "{\"countOnly\": \"yes\"}", "countOnly", {"true or false"}},
    /* properties. */
    {"sales",
     "Customers",
     "{\"properties\": [\"Name\", \"CreditLimit\"]}",
     "properties[1]",
     {"no property 'CreditLimit' that you can see", "id, Name, Email"}},
    {"admin",
     "Orders",
     "{\"properties\": [\"OrderLines\"]}",
     "properties[0]",
     {"Inbound reference", "expand"}},
    {"admin",
     "Orders",
     "{\"properties\": \"Status\"}",
     "properties",
     {"an array of property names"}},
    {"admin", "Orders", "{\"properties\": [5]}", "properties[0]", {"got 5"}},
    /* expand. */
    {"admin",
     "Orders",
     "{\"expand\": [{\"reference\": \"Status\"}]}",
     "expand[0].reference",
     {"no Reference property 'Status'", "you can expand: Customer, OrderLines, Payments, Files"}},
    {"admin",
     "Orders",
     "{\"expand\": [{\"reference\": \"SalesRep\"}]}",
     "expand[0].reference",
     {"no Data Model", "cannot be expanded"}},
    {"sales",
     "Orders",
     "{\"expand\": [{\"reference\": \"Payments\"}]}",
     "expand[0].reference",
     {"you may not read the entities that 'Payments' refers to", "expandable flag is false"}},
    {"admin",
     "Orders",
     "{\"expand\": [{\"reference\": \"Customer\"}, {\"reference\": \"customer\"}]}",
     "expand[1].reference",
     {"expanded twice"}},
    {"admin",
     "Orders",
     "{\"expand\": [{\"reference\": \"Customer\", \"properties\": [\"Name\", \"Total\"]}]}",
     "expand[0].properties[1]",
     {"Customers has no property 'Total'"}},
    {"admin",
     "Orders",
     "{\"expand\": [{\"reference\": \"Customer\", \"depth\": 2}]}",
     "expand[0].depth",
     {"unknown field", "reference, properties"}},
    {"admin", "Orders", "{\"expand\": [{}]}", "expand[0].reference", {"got nothing"}},
    {"admin", "Orders", "{\"expand\": \"Customer\"}", "expand", {"an array of {reference"}},
};

static void test_bad_queries(void **state) {
  st_fixture_t *fx = *state;
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad_queries); i++) {
    const bad_case_t *c = &bad_queries[i];
    dg_store_query_t q;
    int rc = st_parse_query(fx, c->user, c->model, c->args, &q);
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

/* A hidden property is never named in a message to a caller who cannot
 * see it. */
static void test_hidden_names_not_listed(void **state) {
  st_fixture_t *fx = *state;
  dg_store_query_t q;
  assert_int_equal(st_parse_query(fx, "sales", "Customers", "{\"properties\": [\"Nope\"]}", &q),
                   DG_EINVAL);
  assert_null(strstr(fx->err.message, "CreditLimit"));
  assert_int_equal(st_parse_query(fx, "admin", "Customers", "{\"properties\": [\"Nope\"]}", &q),
                   DG_EINVAL);
  assert_non_null(strstr(fx->err.message, "CreditLimit"));
}

static void test_too_many_groups(void **state) {
  st_fixture_t *fx = *state;
  char args[2048] = "{\"queryParameterGroups\": [";
  for (int i = 0; i <= DG_STORE_GROUPS_MAX; i++)
    strncat(args, i ? ",{}" : "{}", sizeof(args) - strlen(args) - 1);
  strncat(args, "]}", sizeof(args) - strlen(args) - 1);
  dg_store_query_t q;
  assert_int_equal(st_parse_query(fx, "admin", "Orders", args, &q), DG_EINVAL);
  assert_string_equal(fx->err.param, "queryParameterGroups");
}

/* ---- What a good query becomes ------------------------------------------------------ */

static void test_defaults(void **state) {
  st_fixture_t *fx = *state;
  dg_store_query_t q;
  assert_int_equal(st_parse_query(fx, "sales", "Customers", "{}", &q), 0);
  assert_int_equal(q.page_number, 1);
  assert_int_equal(q.page_size, DG_STORE_PAGE_SIZE_DEFAULT);
  assert_false(q.has_sort);
  assert_false(q.count_only);
  assert_int_equal(q.filters.ngroups, 0);
  assert_int_equal(q.nexpand, 0);
  /* Every stored property sales may see: not CreditLimit, not Orders. */
  const dg_model_t *m = st_model(fx, "Customers");
  size_t want = 0;
  for (size_t i = 0; i < m->nproperties; i++) {
    const dg_property_t *p = &m->properties[i];
    bool visible = strcmp(p->name, "CreditLimit") != 0;
    bool stored = p->reference == NULL || p->reference->direction == DG_REF_OUTBOUND;
    want += visible && stored;
  }
  assert_int_equal(q.select.nprops, want);
  for (size_t i = 0; i < q.select.nprops; i++) {
    assert_string_not_equal(q.select.props[i]->name, "CreditLimit");
    assert_string_not_equal(q.select.props[i]->name, "Orders");
  }
}

static void test_full_query(void **state) {
  st_fixture_t *fx = *state;
  dg_store_query_t q;
  const char *args =
      "{\"queryParameterGroups\": ["
      " {\"andOrOperator\": \"Or\", \"parameters\": ["
      "  {\"operator\": \"EqualTo\", \"propertyName\": \"status\", \"value\": \"Open\"},"
      "  {\"operator\": \"EqualTo\", \"propertyName\": \"Status\", \"value\": \"null\","
      "   \"valueType\": \"null\"}]},"
      " {\"parameters\": ["
      "  {\"operator\": \"GreaterThan\", \"propertyName\": \"Amount\", \"value\": \"100.5\","
      "   \"valueType\": \"number\"},"
      "  {\"operator\": \"LessThan\", \"propertyName\": \"DueDate\","
      "   \"comparisonPropertyName\": \"OrderDate\"},"
      "  {\"reference\": \"Customer\", \"operator\": \"StartsWith\", \"propertyName\": \"Name\","
      "   \"value\": \"ac\"},"
      "  {\"reference\": \"OrderLines\", \"match\": \"Any\", \"operator\": \"EqualTo\","
      "   \"propertyName\": \"Quantity\", \"value\": 3},"
      "  {\"operator\": \"EqualTo\", \"propertyName\": \"Customer\","
      "   \"value\": \"7C08B797-FAC4-5249-874C-557B0F4557F5\"}]}],"
      " \"sortCondition\": {\"propertyName\": \"amount\", \"sortOrder\": \"Descending\"},"
      " \"paging\": {\"pageNumber\": 3, \"pageSize\": 10},"
      " \"properties\": [\"OrderNumber\", \"id\", \"orderNumber\", \"Amount\"],"
      " \"expand\": [{\"reference\": \"Customer\", \"properties\": [\"Name\"]},"
      "            {\"reference\": \"OrderLines\"}]}";
  assert_int_equal(st_parse_query(fx, "admin", "Orders", args, &q), 0);
  assert_int_equal(q.filters.ngroups, 2);
  const dg_store_group_t *g0 = &q.filters.groups[0], *g1 = &q.filters.groups[1];
  assert_true(g0->any);
  assert_false(g1->any);
  assert_int_equal(g0->nfilters, 2);
  assert_string_equal(g0->filters[0].prop->name, "Status");
  assert_int_equal(g0->filters[0].value.kind, DG_STORE_TEXT);
  assert_int_equal(g0->filters[1].value.kind, DG_STORE_NULL);
  assert_int_equal(g1->nfilters, 5);
  assert_int_equal(g1->filters[0].value.kind, DG_STORE_REAL);
  assert_true(g1->filters[0].value.d == 100.5);
  assert_true(g1->filters[1].compare_property);
  assert_string_equal(g1->filters[1].other->name, "OrderDate");
  assert_string_equal(g1->filters[2].reference->name, "Customer");
  assert_string_equal(g1->filters[2].model->name, "Customers");
  assert_int_equal(g1->filters[2].op, DG_STORE_OP_STARTS);
  assert_string_equal(g1->filters[3].model->name, "OrderLines");
  assert_int_equal(g1->filters[3].value.kind, DG_STORE_INT);
  assert_int_equal(g1->filters[3].value.i, 3);
  assert_string_equal(g1->filters[4].value.text, "7c08b797-fac4-5249-874c-557b0f4557f5");
  assert_true(q.has_sort && q.sort.descending);
  assert_string_equal(q.sort.prop->name, "Amount");
  assert_int_equal(q.page_number, 3);
  assert_int_equal(q.page_size, 10);
  assert_int_equal(q.select.nprops, 2); /* id is implied; duplicates dropped */
  assert_string_equal(q.select.props[0]->name, "OrderNumber");
  assert_string_equal(q.select.props[1]->name, "Amount");
  assert_int_equal(q.nexpand, 2);
  assert_string_equal(q.expand[0].target->name, "Customers");
  assert_int_equal(q.expand[0].select.nprops, 1);
  assert_string_equal(q.expand[1].target->name, "OrderLines");
  assert_true(q.expand[1].select.nprops > 3);
}

/* The string null tests for null where no other reading exists; with a
 * String property it is the text "null" unless valueType is null. */
static void test_null_readings(void **state) {
  st_fixture_t *fx = *state;
  dg_store_query_t q;
  assert_int_equal(
      st_parse_query(fx, "admin", "Orders",
                     G("{\"operator\": \"NotEqualTo\", \"propertyName\": \"DueDate\", \"value\": "
                       "\"null\"}"),
                     &q),
      0);
  assert_int_equal(q.filters.groups[0].filters[0].value.kind, DG_STORE_NULL);
  assert_int_equal(
      st_parse_query(fx, "admin", "Orders",
                     G("{\"operator\": \"EqualTo\", \"propertyName\": \"Status\", \"value\": "
                       "\"null\"}"),
                     &q),
      0);
  assert_int_equal(q.filters.groups[0].filters[0].value.kind, DG_STORE_TEXT);
  assert_int_equal(
      st_parse_query(
          fx, "admin", "Orders",
          G("{\"operator\": \"EqualTo\", \"propertyName\": \"Status\", \"value\": null}"), &q),
      0);
  assert_int_equal(q.filters.groups[0].filters[0].value.kind, DG_STORE_NULL);
}

static void test_count_only_and_id(void **state) {
  st_fixture_t *fx = *state;
  dg_store_query_t q;
  assert_int_equal(
      st_parse_query(fx, "auditor", "Payments",
                     "{\"countOnly\": true, \"sortCondition\": {\"propertyName\": \"id\"},"
                     " \"properties\": [],"
                     " \"queryParameterGroups\": [{\"parameters\": [{\"operator\": "
                     "\"NotEqualTo\", \"propertyName\": \"Id\", \"value\": "
                     "\"097d00c2-bc00-45fc-8b3b-5be0bae92720\"}]}]}",
                     &q),
      0);
  assert_true(q.count_only);
  assert_true(q.has_sort);
  assert_null(q.sort.prop);
  assert_int_equal(q.select.nprops, 0);
  assert_null(q.filters.groups[0].filters[0].prop);
}

/* ---- Operators ---------------------------------------------------------------------- */

static void test_operator_table(void **state) {
  for (int i = 0; i < DG_STORE_OP__COUNT; i++) {
    dg_store_op_t op;
    assert_true(dg_store_op_parse(dg_store_op_name((dg_store_op_t)i), &op));
    assert_int_equal(op, i);
    assert_true(dg_store_op_allowed(op, DG_TYPE_STRING));
    bool order = op >= DG_STORE_OP_GT && op <= DG_STORE_OP_LE;
    bool eq = op == DG_STORE_OP_EQ || op == DG_STORE_OP_NE;
    assert_int_equal(dg_store_op_allowed(op, DG_TYPE_DECIMAL), eq || order);
    assert_int_equal(dg_store_op_allowed(op, DG_TYPE_DATE), eq || order);
    assert_int_equal(dg_store_op_allowed(op, DG_TYPE_BOOLEAN), eq);
    assert_int_equal(dg_store_op_allowed(op, DG_TYPE_GUID), eq);
  }
  dg_store_op_t op;
  assert_false(dg_store_op_parse("equalto", &op));
  assert_false(dg_store_op_parse(NULL, &op));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_bad_queries, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_hidden_names_not_listed, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_too_many_groups, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_defaults, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_full_query, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_null_readings, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_count_only_and_id, st_setup, st_teardown),
      cmocka_unit_test(test_operator_table),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
