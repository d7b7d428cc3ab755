/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for sql_aggregate.c: the statements of aggregate_entities for
 * every function, grouping by own, Outbound and Inbound keys (keys on one
 * reference sharing one join), joinFilter clauses in both forms with
 * typed comparisons, and the count that guards the grouped cap, with
 * their bound values. Every statement must also prepare and run on a
 * database migrated from the sample configuration. */
#include "store/sql_test.h"

static void aggregate_of(sql_fixture_t *fx, const char *args, bool count, const char *want,
                         const char *binds) {
  dg_store_parse_t ps = st_ctx(&fx->st, "admin");
  dg_store_aggregate_t a;
  if (dg_store_parse_aggregate(&ps, st_model(&fx->st, "Orders"), st_json(&fx->st, args), &a) != 0)
    fail_msg("%s", fx->st.err.message);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  if (count)
    dg__sql_aggregate_count(&sql, &a);
  else
    dg__sql_aggregate(&sql, &a);
  sql_check(fx, &sql, want, binds);
  dg__sql_free(&sql);
}

/* Sum of nothing is 0, so it is wrapped; the others are plain. */
static void test_every_function(void **state) {
  aggregate_of(*state,
               "{\"aggregations\": ["
               " {\"function\": \"Sum\", \"propertyName\": \"Amount\"},"
               " {\"function\": \"Average\", \"propertyName\": \"Quantity\"},"
               " {\"function\": \"Count\"},"
               " {\"function\": \"Min\", \"propertyName\": \"OrderDate\"},"
               " {\"function\": \"Max\", \"propertyName\": \"Amount\"},"
               " {\"function\": \"DistinctCount\", \"propertyName\": \"Status\"}],"
               " \"queryParameterGroups\": [{\"parameters\": [{\"operator\": \"EqualTo\", "
               "\"propertyName\": \"Status\", \"value\": \"Open\"}]}]}",
               false,
               "SELECT count(*), COALESCE(sum(t0.\"Amount\"), 0), avg(t0.\"Quantity\"), count(*), "
               "min(t0.\"OrderDate\"), max(t0.\"Amount\"), count(DISTINCT t0.\"Status\") FROM "
               "\"Orders\" AS t0 WHERE (t0.\"Status\" = ?)",
               "'Open'");
}

/* Keys on one Outbound reference share one join, apart from the filters'. */
static void test_group_own_and_outbound(void **state) {
  aggregate_of(
      *state,
      "{\"aggregations\": [{\"function\": \"Sum\", \"propertyName\": \"Amount\"}],"
      " \"groupBy\": [{\"propertyName\": \"Status\"},"
      "  {\"propertyName\": \"Region\", \"reference\": \"Customer\"},"
      "  {\"propertyName\": \"Name\", \"reference\": \"customer\"}],"
      " \"queryParameterGroups\": [{\"parameters\": [{\"reference\": \"Customer\", \"operator\": "
      "\"NotEqualTo\", \"propertyName\": \"Region\", \"value\": \"APAC\"}]}]}",
      false,
      "SELECT t0.\"Status\", g1.\"Region\", g1.\"Name\", count(*), COALESCE(sum(t0.\"Amount\"), "
      "0) FROM \"Orders\" AS t0 LEFT JOIN \"Customers\" AS r1 ON r1.id = t0.\"Customer\" LEFT "
      "JOIN \"Customers\" AS g1 ON g1.id = t0.\"Customer\" WHERE ((r1.id IS NOT NULL AND NOT "
      "COALESCE(r1.\"Region\" = ?, FALSE))) GROUP BY t0.\"Status\", g1.\"Region\", g1.\"Name\" "
      "ORDER BY t0.\"Status\", g1.\"Region\", g1.\"Name\"",
      "'APAC'");
}

/* Inbound keys: the matched records joined to their related entities by
 * the foreign key, distinct per (record, keys), grouped outside; keys on
 * one reference share one join. */
static void test_group_inbound(void **state) {
  aggregate_of(
      *state,
      "{\"aggregations\": [{\"function\": \"Count\"}, {\"function\": \"Sum\", \"propertyName\": "
      "\"Quantity\"}],"
      " \"groupBy\": [{\"propertyName\": \"SKU\", \"reference\": \"OrderLines\"},"
      "  {\"propertyName\": \"Status\"},"
      "  {\"propertyName\": \"Product\", \"reference\": \"OrderLines\"}],"
      " \"queryParameterGroups\": [{\"parameters\": [{\"reference\": \"OrderLines\", "
      "\"operator\": \"GreaterThan\", \"propertyName\": \"Quantity\", \"value\": 2}]}]}",
      false,
      "SELECT x.k0, x.k1, x.k2, count(*), count(*), COALESCE(sum(x.m1), 0) FROM (SELECT DISTINCT "
      "t0.\"_seq\" AS _s, g10.\"SKU\" AS k0, t0.\"Status\" AS k1, g10.\"Product\" AS k2, "
      "t0.\"Quantity\" AS m1 FROM \"Orders\" AS t0 LEFT JOIN \"OrderLines\" AS g10 ON "
      "g10.\"Order\" = t0.id WHERE (t0.id IN (SELECT c1.\"Order\" FROM \"OrderLines\" AS c1 "
      "WHERE c1.\"Order\" IS NOT NULL AND c1.\"Quantity\" > ?))) AS x GROUP BY x.k0, x.k1, x.k2 "
      "ORDER BY x.k0, x.k1, x.k2",
      "2");
}

/* Clauses joining the same entity by the same key share a join; a Date
 * reads a DateTime as a date; distinct strings keep ignoring case; a null
 * value tests for null; negative operators hold where the positive does
 * not. */
static void test_join_filters(void **state) {
  aggregate_of(
      *state,
      "{\"aggregations\": ["
      " {\"function\": \"Count\", \"alias\": \"on_time\", \"joinFilter\": {\"reference\": "
      "\"Customer\", \"condition\": {\"localProperty\": \"DueDate\", \"operator\": "
      "\"LessThanEqualTo\", \"foreignProperty\": \"RenewalDate\"}}},"
      " {\"function\": \"Sum\", \"propertyName\": \"Amount\", \"joinFilter\": {\"entity\": "
      "\"Customer\", \"on\": {\"localProperty\": \"Customer\", \"foreignProperty\": \"id\"}, "
      "\"condition\": {\"localProperty\": \"OrderDate\", \"operator\": \"GreaterThan\", "
      "\"foreignProperty\": \"CreatedAt\"}}},"
      " {\"function\": \"DistinctCount\", \"propertyName\": \"Status\", \"joinFilter\": "
      "{\"reference\": \"Customer\", \"condition\": {\"localProperty\": \"Status\", "
      "\"operator\": \"NotEqualTo\", \"value\": \"Open\"}}},"
      " {\"function\": \"Average\", \"propertyName\": \"Amount\", \"joinFilter\": {\"entity\": "
      "\"Customers\", \"on\": {\"localProperty\": \"id\", \"foreignProperty\": \"Id\"}, "
      "\"condition\": {\"localProperty\": \"DueDate\", \"operator\": \"EqualTo\", \"value\": "
      "null}}},"
      " {\"function\": \"Count\"}]}",
      false,
      "SELECT count(*), count(CASE WHEN (j0.id IS NOT NULL AND t0.\"DueDate\" <= "
      "j0.\"RenewalDate\") THEN 1 END), COALESCE(sum(CASE WHEN (j0.id IS NOT NULL AND "
      "t0.\"OrderDate\" > date(j0.\"CreatedAt\")) THEN t0.\"Amount\" END), 0), count(DISTINCT "
      "CASE WHEN (j0.id IS NOT NULL AND NOT COALESCE(t0.\"Status\" = ?, FALSE)) THEN "
      "t0.\"Status\" END COLLATE NOCASE), avg(CASE WHEN (j3.id IS NOT NULL AND t0.\"DueDate\" IS "
      "NULL) THEN t0.\"Amount\" END), count(*) FROM \"Orders\" AS t0 LEFT JOIN \"Customers\" AS "
      "j0 ON j0.id = t0.\"Customer\" LEFT JOIN \"Customers\" AS j3 ON j3.id = t0.id",
      "'Open'");
}

/* Comparisons are typed off the base property: a Date reads a String as
 * a date, a String compares a DateTime's text. */
static void test_join_typed_off_local(void **state) {
  aggregate_of(
      *state,
      "{\"aggregations\": ["
      " {\"function\": \"Max\", \"propertyName\": \"DueDate\", \"joinFilter\": {\"reference\": "
      "\"Customer\", \"condition\": {\"localProperty\": \"DueDate\", \"operator\": \"LessThan\", "
      "\"foreignProperty\": \"Name\"}}},"
      " {\"function\": \"Min\", \"propertyName\": \"Amount\", \"joinFilter\": {\"reference\": "
      "\"Customer\", \"condition\": {\"localProperty\": \"OrderNumber\", \"operator\": "
      "\"StartsWith\", \"foreignProperty\": \"CreatedAt\"}}},"
      " {\"function\": \"Count\", \"joinFilter\": {\"reference\": \"Customer\", \"condition\": "
      "{\"localProperty\": \"OrderDate\", \"operator\": \"GreaterThanEqualTo\", \"value\": "
      "\"2024-03-01\"}}}]}",
      false,
      "SELECT count(*), max(CASE WHEN (j0.id IS NOT NULL AND t0.\"DueDate\" < date(j0.\"Name\")) "
      "THEN t0.\"DueDate\" END), min(CASE WHEN (j0.id IS NOT NULL AND "
      "substr(lower(t0.\"OrderNumber\"), 1, length(j0.\"CreatedAt\")) = lower(j0.\"CreatedAt\")) "
      "THEN t0.\"Amount\" END), count(CASE WHEN (j0.id IS NOT NULL AND t0.\"OrderDate\" >= ?) "
      "THEN 1 END) FROM \"Orders\" AS t0 LEFT JOIN \"Customers\" AS j0 ON j0.id = "
      "t0.\"Customer\"",
      "'2024-03-01'");
}

static void test_count_for_cap(void **state) {
  aggregate_of(*state,
               "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": [{\"propertyName\": "
               "\"Region\", \"reference\": \"Customer\"}], \"queryParameterGroups\": "
               "[{\"parameters\": [{\"operator\": \"GreaterThanEqualTo\", \"propertyName\": "
               "\"OrderDate\", \"value\": \"2024-02-01\"}]}]}",
               true, "SELECT count(*) FROM \"Orders\" AS t0 WHERE (t0.\"OrderDate\" >= ?)",
               "'2024-02-01'");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_every_function, sql_setup, sql_teardown),
      cmocka_unit_test_setup_teardown(test_group_own_and_outbound, sql_setup, sql_teardown),
      cmocka_unit_test_setup_teardown(test_group_inbound, sql_setup, sql_teardown),
      cmocka_unit_test_setup_teardown(test_join_filters, sql_setup, sql_teardown),
      cmocka_unit_test_setup_teardown(test_join_typed_off_local, sql_setup, sql_teardown),
      cmocka_unit_test_setup_teardown(test_count_for_cap, sql_setup, sql_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
