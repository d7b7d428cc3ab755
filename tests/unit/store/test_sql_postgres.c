/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the PostgreSQL dialect of sql.c and sql_aggregate.c: the
 * same generator as SQLite, with numbered placeholders in order, ILIKE
 * read in the binary collation for the string operators, strpos and
 * binary lower() for comparisons of two properties, dates read from their
 * normalised text, distinct strings that keep ignoring case, and nulls
 * placed in ORDER BY as SQLite places them. */
#include "store/internal.h"
#include "store/store_test.h"

static void check(const dg__sql_t *sql, const char *want) {
  assert_int_equal(sql->rc, 0);
  assert_string_equal(sql->text.data, want);
}

static void page_of(st_fixture_t *fx, const char *model, const char *args, const char *want) {
  dg_store_query_t q;
  if (st_parse_query(fx, "admin", model, args, &q) != 0)
    fail_msg("%s", fx->err.message);
  dg__sql_cols_t cols;
  assert_int_equal(dg__sql_entity_cols(&q.select, q.expand, q.nexpand, fx->arena, &cols), 0);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_page(&sql, &q, &cols);
  check(&sql, want);
  dg__sql_free(&sql);
}

static void test_placeholders_and_like(void **state) {
  page_of(*state, "Orders",
          "{\"properties\": [\"OrderNumber\"], \"queryParameterGroups\": ["
          " {\"andOrOperator\": \"Or\", \"parameters\": ["
          "  {\"operator\": \"EqualTo\", \"propertyName\": \"Status\", \"value\": \"Open\"},"
          "  {\"operator\": \"NotStartsWith\", \"propertyName\": \"OrderNumber\", "
          "\"value\": \"5%\"}]}]}",
          "SELECT t0.id, t0.\"OrderNumber\" FROM \"Orders\" AS t0 WHERE (t0.\"Status\" = $1 OR "
          "NOT COALESCE(t0.\"OrderNumber\" COLLATE \"C\" ILIKE $2 ESCAPE '\\', FALSE)) ORDER BY "
          "t0.id ASC LIMIT $3 OFFSET $4");
}

static void test_comparison_string_operators(void **state) {
  page_of(*state, "Customers",
          "{\"properties\": [], \"queryParameterGroups\": [{\"andOrOperator\": \"Or\", "
          "\"parameters\": ["
          " {\"operator\": \"Contains\", \"propertyName\": \"Email\", \"comparisonPropertyName\": "
          "\"Name\"},"
          " {\"operator\": \"EndsWith\", \"propertyName\": \"Email\", "
          "\"comparisonPropertyName\": \"Region\"}]}]}",
          "SELECT t0.id FROM \"Customers\" AS t0 WHERE (strpos(lower(t0.\"Email\") COLLATE \"C\", "
          "lower(t0.\"Name\") COLLATE \"C\") > 0 OR (length(t0.\"Email\") >= length(t0.\"Region\") "
          "AND substr(lower(t0.\"Email\") COLLATE \"C\", length(t0.\"Email\") - "
          "length(t0.\"Region\") + 1) = lower(t0.\"Region\") COLLATE \"C\")) ORDER BY t0.id ASC "
          "LIMIT $1 OFFSET $2");
}

static void test_aggregate_dates_and_nocase(void **state) {
  st_fixture_t *fx = *state;
  dg_store_parse_t ps = st_ctx(fx, "admin");
  dg_store_aggregate_t a;
  const char *args =
      "{\"aggregations\": ["
      " {\"function\": \"Sum\", \"propertyName\": \"Amount\", \"joinFilter\": {\"reference\": "
      "\"Customer\", \"condition\": {\"localProperty\": \"OrderDate\", \"operator\": "
      "\"GreaterThan\", \"foreignProperty\": \"CreatedAt\"}}},"
      " {\"function\": \"DistinctCount\", \"propertyName\": \"Status\", \"joinFilter\": "
      "{\"reference\": \"Customer\", \"condition\": {\"localProperty\": \"Status\", "
      "\"operator\": \"NotEqualTo\", \"value\": \"Open\"}}}]}";
  if (dg_store_parse_aggregate(&ps, st_model(fx, "Orders"), st_json(fx, args), &a) != 0)
    fail_msg("%s", fx->err.message);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_aggregate(&sql, &a);
  check(&sql, "SELECT count(*), COALESCE(sum(CASE WHEN (j0.id IS NOT NULL AND t0.\"OrderDate\" > "
              "substr(j0.\"CreatedAt\", 1, 10)) THEN t0.\"Amount\" END), 0), count(DISTINCT CASE "
              "WHEN (j0.id IS NOT NULL AND NOT COALESCE(t0.\"Status\" = $1, FALSE)) THEN "
              "t0.\"Status\" END) FROM \"Orders\" AS t0 LEFT JOIN \"Customers\" "
              "AS j0 ON j0.id = t0.\"Customer\"");
  dg__sql_free(&sql);
}

/* Nulls first ascending, last descending, as SQLite sorts them. */
static void test_nulls_order(void **state) {
  page_of(*state, "Customers",
          "{\"properties\": [], \"sortCondition\": {\"propertyName\": \"Region\", "
          "\"sortOrder\": \"Descending\"}}",
          "SELECT t0.id FROM \"Customers\" AS t0 ORDER BY t0.\"Region\" DESC NULLS LAST, t0.id "
          "DESC LIMIT $1 OFFSET $2");
  page_of(*state, "Customers",
          "{\"properties\": [], \"sortCondition\": {\"propertyName\": \"Region\"}}",
          "SELECT t0.id FROM \"Customers\" AS t0 ORDER BY t0.\"Region\" ASC NULLS FIRST, t0.id "
          "ASC LIMIT $1 OFFSET $2");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_placeholders_and_like, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_comparison_string_operators, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_aggregate_dates_and_nocase, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_nulls_order, st_setup, st_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
