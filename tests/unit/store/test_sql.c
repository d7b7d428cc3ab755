/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for sql.c: the statements generated for filters (And/Or
 * groups, null tests, negations, LIKE escaping, property comparisons,
 * Outbound joins, Inbound IN lists), sorting with the id tie-break, paging,
 * counts, fetches by id, batched expansions and writes, with their bound
 * values. Every statement must also prepare and run on a database migrated
 * from the sample configuration. */
#include "store/sql_test.h"

static void page_of(sql_fixture_t *fx, const char *model, const char *args, const char *want,
                    const char *binds) {
  dg_store_query_t q;
  if (st_parse_query(&fx->st, "admin", model, args, &q) != 0)
    fail_msg("%s", fx->st.err.message);
  dg__sql_cols_t cols;
  assert_int_equal(dg__sql_entity_cols(&q.select, q.expand, q.nexpand, fx->st.arena, &cols), 0);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  if (q.count_only)
    dg__sql_count(&sql, &q);
  else
    dg__sql_page(&sql, &q, &cols);
  sql_check(fx, &sql, want, binds);
  dg__sql_free(&sql);
}

/* ---- Filters ------------------------------------------------------------------------- */

static void test_groups_and_negation(void **state) {
  page_of(*state, "Orders",
          "{\"properties\": [\"OrderNumber\"], \"queryParameterGroups\": ["
          " {\"andOrOperator\": \"Or\", \"parameters\": ["
          "  {\"operator\": \"EqualTo\", \"propertyName\": \"Status\", \"value\": \"Open\"},"
          "  {\"operator\": \"NotEqualTo\", \"propertyName\": \"Status\", \"value\": \"null\","
          "   \"valueType\": \"null\"}]},"
          " {\"parameters\": []},"
          " {\"parameters\": [{\"operator\": \"NotStartsWith\", \"propertyName\": "
          "\"OrderNumber\", \"value\": \"5%_x\\\\\"}]}]}",
          "SELECT t0.id, t0.\"OrderNumber\" FROM \"Orders\" AS t0 WHERE (t0.\"Status\" = ? OR "
          "t0.\"Status\" IS NOT NULL) AND (NOT COALESCE(t0.\"OrderNumber\" LIKE ? ESCAPE '\\', "
          "FALSE)) ORDER BY t0.id ASC LIMIT ? OFFSET ?",
          "'Open' '5\\%\\_x\\\\%' 26 0");
}

static void test_string_operators(void **state) {
  const char *ops[][2] = {
      {"Contains", "'%ab%'"},   {"StartsWith", "'ab%'"},    {"EndsWith", "'%ab'"},
      {"NotEndsWith", "'%ab'"}, {"NotStartsWith", "'ab%'"},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(ops); i++) {
    char args[256], want[512], binds[64];
    bool neg = strncmp(ops[i][0], "Not", 3) == 0;
    snprintf(args, sizeof(args),
             "{\"properties\": [], \"queryParameterGroups\": [{\"parameters\": [{\"operator\": "
             "\"%s\", \"propertyName\": \"Name\", \"value\": \"ab\"}]}]}",
             ops[i][0]);
    snprintf(want, sizeof(want),
             "SELECT t0.id FROM \"Products\" AS t0 WHERE (%st0.\"Name\" LIKE ? ESCAPE '\\'%s) "
             "ORDER BY t0.id ASC LIMIT ? OFFSET ?",
             neg ? "NOT COALESCE(" : "", neg ? ", FALSE)" : "");
    snprintf(binds, sizeof(binds), "%s 26 0", ops[i][1]);
    page_of(*state, "Products", args, want, binds);
  }
}

static void test_typed_values(void **state) {
  page_of(*state, "Products",
          "{\"properties\": [], \"queryParameterGroups\": [{\"parameters\": ["
          " {\"operator\": \"EqualTo\", \"propertyName\": \"Active\", \"value\": \"true\","
          "  \"valueType\": \"boolean\"},"
          " {\"operator\": \"GreaterThanEqualTo\", \"propertyName\": \"Price\", \"value\": 9.5},"
          " {\"operator\": \"LessThanEqualTo\", \"propertyName\": \"Price\", \"value\": \"20\","
          "  \"valueType\": \"number\"},"
          " {\"operator\": \"NotEqualTo\", \"propertyName\": \"id\", \"value\": "
          "\"1ACA09B3-19AD-404D-ADBD-F69A9319A687\"}]}]}",
          "SELECT t0.id FROM \"Products\" AS t0 WHERE (t0.\"Active\" = ? AND t0.\"Price\" >= ? "
          "AND t0.\"Price\" <= ? AND NOT COALESCE(t0.id = ?, FALSE)) ORDER BY t0.id ASC LIMIT ? "
          "OFFSET ?",
          "true 9.5 20 '1aca09b3-19ad-404d-adbd-f69a9319a687' 26 0");
}

/* Outbound references join once each; Inbound ones look the id up among the
 * keys of the matching related entities. */
static void test_references_sort_paging(void **state) {
  page_of(
      *state, "Orders",
      "{\"properties\": [], \"sortCondition\": {\"propertyName\": \"Amount\", "
      "\"sortOrder\": \"Descending\"}, \"paging\": {\"pageNumber\": 3, \"pageSize\": 10},"
      " \"queryParameterGroups\": [{\"parameters\": ["
      "  {\"reference\": \"Customer\", \"operator\": \"EqualTo\", \"propertyName\": "
      "\"Region\", \"value\": \"EMEA\"},"
      "  {\"reference\": \"Customer\", \"operator\": \"NotEqualTo\", \"propertyName\": "
      "\"Name\", \"value\": \"x\"},"
      "  {\"reference\": \"OrderLines\", \"operator\": \"GreaterThan\", \"propertyName\": "
      "\"Quantity\", \"value\": 3},"
      "  {\"operator\": \"LessThan\", \"propertyName\": \"DueDate\", "
      "\"comparisonPropertyName\": \"OrderDate\"},"
      "  {\"operator\": \"EndsWith\", \"propertyName\": \"OrderNumber\", "
      "\"comparisonPropertyName\": \"Status\"}]},"
      " {\"parameters\": [{\"reference\": \"OrderLines\", \"operator\": \"EqualTo\", "
      "\"propertyName\": \"SKU\", \"value\": \"W-100\"}]}]}",
      "SELECT t0.id FROM \"Orders\" AS t0 LEFT JOIN \"Customers\" AS r1 ON r1.id = "
      "t0.\"Customer\" WHERE ((r1.id IS NOT NULL AND r1.\"Region\" = ?) AND (r1.id IS NOT "
      "NULL AND NOT COALESCE(r1.\"Name\" = ?, FALSE)) AND t0.id IN (SELECT "
      "c1.\"Order\" FROM \"OrderLines\" AS c1 WHERE c1.\"Order\" IS NOT NULL AND c1.\"Quantity\" > "
      "?) AND "
      "t0.\"DueDate\" < t0.\"OrderDate\" AND (length(t0.\"OrderNumber\") >= "
      "length(t0.\"Status\") AND substr(lower(t0.\"OrderNumber\"), length(t0.\"OrderNumber\") "
      "- length(t0.\"Status\") + 1) = lower(t0.\"Status\"))) AND (t0.id IN (SELECT "
      "c2.\"Order\" FROM \"OrderLines\" AS c2 WHERE c2.\"Order\" IS NOT NULL AND c2.\"SKU\" = ?)) "
      "ORDER BY "
      "t0.\"Amount\" DESC, t0.id DESC LIMIT ? OFFSET ?",
      "'EMEA' 'x' 3 'W-100' 11 20");
}

static void test_comparison_string_operators(void **state) {
  page_of(*state, "Customers",
          "{\"properties\": [], \"queryParameterGroups\": [{\"andOrOperator\": \"Or\", "
          "\"parameters\": ["
          " {\"operator\": \"Contains\", \"propertyName\": \"Email\", \"comparisonPropertyName\": "
          "\"Name\"},"
          " {\"operator\": \"NotStartsWith\", \"propertyName\": \"Email\", "
          "\"comparisonPropertyName\": \"Region\"}]}]}",
          "SELECT t0.id FROM \"Customers\" AS t0 WHERE (instr(lower(t0.\"Email\"), "
          "lower(t0.\"Name\")) > 0 OR NOT COALESCE(substr(lower(t0.\"Email\"), 1, "
          "length(t0.\"Region\")) = lower(t0.\"Region\"), FALSE)) ORDER BY t0.id ASC LIMIT ? "
          "OFFSET ?",
          "26 0");
}

static void test_count(void **state) {
  page_of(*state, "Orders",
          "{\"countOnly\": true, \"queryParameterGroups\": [{\"parameters\": [{\"operator\": "
          "\"EqualTo\", \"propertyName\": \"Customer\", \"value\": \"null\", \"valueType\": "
          "\"null\"}]}]}",
          "SELECT count(*) FROM \"Orders\" AS t0 WHERE (t0.\"Customer\" IS NULL)", "");
}

/* ---- Columns, fetch, expansion ------------------------------------------------------------ */

static void test_columns_for_expansion(void **state) {
  sql_fixture_t *fx = *state;
  /* Customer is read (not emitted) because its expansion needs the key. */
  page_of(fx, "Orders",
          "{\"properties\": [\"Status\"], \"sortCondition\": {\"propertyName\": \"id\"},"
          " \"expand\": [{\"reference\": \"Customer\", \"properties\": [\"Name\"]},"
          " {\"reference\": \"OrderLines\", \"properties\": [\"SKU\"]}]}",
          "SELECT t0.id, t0.\"Status\", t0.\"Customer\" FROM \"Orders\" AS t0 ORDER BY t0.id "
          "ASC LIMIT ? OFFSET ?",
          "26 0");
  dg_store_query_t q;
  assert_int_equal(st_parse_query(&fx->st, "admin", "Orders",
                                  "{\"properties\": [\"Status\"], \"expand\": [{\"reference\": "
                                  "\"Customer\"}, {\"reference\": \"OrderLines\"}]}",
                                  &q),
                   0);
  dg__sql_cols_t cols;
  assert_int_equal(dg__sql_entity_cols(&q.select, q.expand, q.nexpand, fx->st.arena, &cols), 0);
  assert_int_equal(cols.n, 3);
  assert_true(cols.cols[0].prop == NULL && cols.cols[0].emit);
  assert_true(cols.cols[1].emit);
  assert_false(cols.cols[2].emit);
  assert_int_equal(dg__sql_col_of(&cols, q.expand[0].reference), 2);
  assert_int_equal(dg__sql_col_of(&cols, q.expand[1].reference), -1);
}

static void test_by_ids_and_expand_many(void **state) {
  sql_fixture_t *fx = *state;
  dg_store_query_t q;
  assert_int_equal(st_parse_query(&fx->st, "admin", "Orders",
                                  "{\"expand\": [{\"reference\": \"OrderLines\", \"properties\": "
                                  "[\"SKU\", \"Quantity\"]}]}",
                                  &q),
                   0);
  dg__sql_cols_t cols;
  assert_int_equal(dg__sql_entity_cols(&q.expand[0].select, NULL, 0, fx->st.arena, &cols), 0);
  const char *keys[] = {"a", "b", "c"};
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_expand_many(&sql, &q.expand[0], &cols, keys, 3, DG_STORE_EXPAND_MAX);
  sql_check(
      fx, &sql,
      "SELECT * FROM (SELECT t0.\"Order\" AS _k, t0.id, t0.\"SKU\", t0.\"Quantity\", "
      "row_number() OVER (PARTITION BY t0.\"Order\" ORDER BY t0.id) AS _rn FROM "
      "\"OrderLines\" AS t0 WHERE t0.\"Order\" IN (?, ?, ?)) AS x WHERE _rn <= ? ORDER BY _k, "
      "_rn",
      "'a' 'b' 'c' 101");
  dg__sql_reset(&sql);
  dg__sql_by_ids(&sql, q.expand[0].target, &cols, keys, 2);
  sql_check(
      fx, &sql,
      "SELECT t0.id, t0.\"SKU\", t0.\"Quantity\" FROM \"OrderLines\" AS t0 WHERE t0.id IN (?, "
      "?)",
      "'a' 'b'");
  dg__sql_free(&sql);
}

/* ---- Writes ------------------------------------------------------------------------------- */

static void test_writes(void **state) {
  sql_fixture_t *fx = *state;
  const dg_model_t *m = st_model(&fx->st, "Products");
  const dg_property_t *props[] = {dg_model_property(m, "Name"), dg_model_property(m, "Price")};
  dg_store_value_t values[] = {{.kind = DG_STORE_TEXT, .text = "Bolt", .len = 4},
                               {.kind = DG_STORE_NULL}};
  dg_store_write_t w = {
      .model = m, .mode = DG_STORE_CREATE, .props = props, .values = values, .nvalues = 2};
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_write(&sql, &w, "x1");
  sql_check(fx, &sql, "INSERT INTO \"Products\" (id, \"Name\", \"Price\") VALUES (?, ?, ?)",
            "'x1' 'Bolt' NULL");
  dg__sql_reset(&sql);
  w.mode = DG_STORE_UPSERT;
  dg__sql_write(&sql, &w, "x1");
  sql_check(fx, &sql,
            "INSERT INTO \"Products\" (id, \"Name\", \"Price\") VALUES (?, ?, ?) ON CONFLICT (id) "
            "DO UPDATE SET \"Name\" = excluded.\"Name\", \"Price\" = excluded.\"Price\"",
            "'x1' 'Bolt' NULL");
  dg__sql_reset(&sql);
  w.mode = DG_STORE_UPDATE;
  dg__sql_write(&sql, &w, "x1");
  sql_check(fx, &sql, "UPDATE \"Products\" SET \"Name\" = ?, \"Price\" = ? WHERE id = ?",
            "'Bolt' NULL 'x1'");
  dg__sql_reset(&sql);
  w.nvalues = 0;
  dg__sql_write(&sql, &w, "x1");
  sql_check(fx, &sql, "UPDATE \"Products\" SET id = id WHERE id = ?", "'x1'");
  dg__sql_free(&sql);
}

/* ---- Limits -----------------------------------------------------------------------------------
 */

static void test_limits(void **state) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  for (int i = 0; i <= DG__SQL_BINDS_MAX; i++)
    dg__sql_bind_int(&sql, i);
  assert_int_equal(sql.rc, DG_E2BIG);
  assert_int_equal(sql.nbinds, DG__SQL_BINDS_MAX);
  dg__sql_reset(&sql);
  dg__sql_ident(&sql, NULL, "bad\"name");
  assert_int_equal(sql.rc, DG_EINVAL);
  dg__sql_reset(&sql);
  static char big[DG__SQL_TEXT_MAX + 2];
  memset(big, 'x', sizeof(big) - 1);
  dg__sql_put(&sql, big);
  assert_int_equal(sql.rc, DG_E2BIG);
  /* An identifier that would cross the limit stops the statement too. */
  dg__sql_reset(&sql);
  big[DG__SQL_TEXT_MAX - 4] = '\0';
  dg__sql_put(&sql, big);
  assert_int_equal(sql.rc, 0);
  dg__sql_ident(&sql, "t0", "Name");
  assert_int_equal(sql.rc, DG_E2BIG);
  dg__sql_reset(&sql);
  dg__sql_ident(&sql, "t0", "Name");
  assert_string_equal(sql.text.data, "t0.\"Name\"");
  dg__sql_free(&sql);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_groups_and_negation, sql_setup, sql_teardown),
      cmocka_unit_test_setup_teardown(test_string_operators, sql_setup, sql_teardown),
      cmocka_unit_test_setup_teardown(test_typed_values, sql_setup, sql_teardown),
      cmocka_unit_test_setup_teardown(test_references_sort_paging, sql_setup, sql_teardown),
      cmocka_unit_test_setup_teardown(test_comparison_string_operators, sql_setup, sql_teardown),
      cmocka_unit_test_setup_teardown(test_count, sql_setup, sql_teardown),
      cmocka_unit_test_setup_teardown(test_columns_for_expansion, sql_setup, sql_teardown),
      cmocka_unit_test_setup_teardown(test_by_ids_and_expand_many, sql_setup, sql_teardown),
      cmocka_unit_test_setup_teardown(test_writes, sql_setup, sql_teardown),
      cmocka_unit_test(test_limits),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
