/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for value.c: each property type's accepted forms and the
 * normal form the store keeps (dates in UTC, GUIDs in lower case), and
 * what is refused. */
#include "store/store_test.h"

static const dg_property_t *prop(st_fixture_t *fx, const char *model, const char *name) {
  const dg_property_t *p = dg_model_property(st_model(fx, model), name);
  assert_non_null(p);
  return p;
}

static int parse(st_fixture_t *fx, const dg_property_t *p, const char *json,
                 dg_store_value_t *out) {
  dg_errctx_clear(&fx->err);
  return dg_store_value_parse(p, st_json(fx, json), "value", fx->arena, out, &fx->err);
}

static void expect_text(st_fixture_t *fx, const dg_property_t *p, const char *json,
                        const char *want) {
  dg_store_value_t v;
  if (parse(fx, p, json, &v) != 0)
    fail_msg("%s refused: %s", json, fx->err.message);
  assert_int_equal(v.kind, DG_STORE_TEXT);
  assert_string_equal(v.text, want);
  assert_int_equal(v.len, strlen(want));
}

static void expect_refused(st_fixture_t *fx, const dg_property_t *p, const char *json) {
  dg_store_value_t v;
  if (parse(fx, p, json, &v) != DG_EINVAL)
    fail_msg("%s accepted for %s", json, p ? p->name : "id");
  assert_string_equal(fx->err.param, "value");
}

static void test_datetime(void **state) {
  st_fixture_t *fx = *state;
  const dg_property_t *p = prop(fx, "Customers", "CreatedAt");
  expect_text(fx, p, "\"2024-03-01T09:30:00Z\"", "2024-03-01T09:30:00.000Z");
  expect_text(fx, p, "\"2024-03-01T09:30Z\"", "2024-03-01T09:30:00.000Z");
  expect_text(fx, p, "\"2024-03-01 09:30:15.1234\"", "2024-03-01T09:30:15.123Z");
  expect_text(fx, p, "\"2024-03-01T01:30:00+02:00\"", "2024-02-29T23:30:00.000Z");
  expect_text(fx, p, "\"2024-12-31T23:30:00-0130\"", "2025-01-01T01:00:00.000Z");
  expect_text(fx, p, "\"2024-03-01\"", "2024-03-01T00:00:00.000Z");
  const char *bad[] = {"\"2024-03-01T25:00:00Z\"",  "\"2024-03-01T09:30:00Zulu\"",
                       "\"2023-02-29T00:00:00Z\"",  "\"2024-3-1\"",
                       "\"2024-03-01T09:30:00+2\"", "20240301",
                       "\"2024-03-01T09:30:00.Z\""};
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++)
    expect_refused(fx, p, bad[i]);
}

static void test_date(void **state) {
  st_fixture_t *fx = *state;
  const dg_property_t *p = prop(fx, "Orders", "OrderDate");
  expect_text(fx, p, "\"2024-02-29\"", "2024-02-29");
  const char *bad[] = {"\"2023-02-29\"",           "\"2024-04-31\"", "\"2024-00-10\"",
                       "\"2024-01-05T00:00:00Z\"", "\"01/05/2024\"", "true"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++)
    expect_refused(fx, p, bad[i]);
  st_contains(fx->err.message, "got true", "OrderDate is Date", NULL);
}

static void test_numbers(void **state) {
  st_fixture_t *fx = *state;
  dg_store_value_t v;
  const dg_property_t *qty = prop(fx, "Orders", "Quantity");
  const dg_property_t *amount = prop(fx, "Orders", "Amount");
  const dg_property_t *size = prop(fx, "Files", "SizeBytes");
  assert_int_equal(parse(fx, qty, "\"-12\"", &v), 0);
  assert_int_equal(v.kind, DG_STORE_INT);
  assert_int_equal(v.i, -12);
  assert_int_equal(parse(fx, qty, "7.0", &v), 0);
  assert_int_equal(v.i, 7);
  assert_int_equal(parse(fx, size, "\"9007199254740993\"", &v), 0);
  assert_true(v.i == 9007199254740993LL);
  expect_refused(fx, qty, "\"2147483648\"");
  expect_refused(fx, qty, "\"1e3\"");
  expect_refused(fx, qty, "\" 5\"");
  assert_int_equal(parse(fx, amount, "\"1450.10\"", &v), 0);
  assert_int_equal(v.kind, DG_STORE_REAL);
  assert_true(v.d == 1450.1);
  assert_int_equal(parse(fx, amount, "-2.5e2", &v), 0);
  assert_true(v.d == -250.0);
  const char *bad[] = {"\"inf\"", "\"nan\"", "\"0x10\"", "\"1,5\"", "\"\"", "\"1e999\""};
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++)
    expect_refused(fx, amount, bad[i]);
}

static void test_boolean_guid_string(void **state) {
  st_fixture_t *fx = *state;
  dg_store_value_t v;
  const dg_property_t *active = prop(fx, "Products", "Active");
  assert_int_equal(parse(fx, active, "\"TRUE\"", &v), 0);
  assert_true(v.kind == DG_STORE_BOOL && v.b);
  assert_int_equal(parse(fx, active, "false", &v), 0);
  assert_true(v.kind == DG_STORE_BOOL && !v.b);
  expect_refused(fx, active, "1");
  expect_refused(fx, active, "\"no\"");
  const dg_property_t *customer = prop(fx, "Orders", "Customer");
  expect_text(fx, customer, "\"7C08B797-FAC4-5249-874C-557B0F4557F5\"",
              "7c08b797-fac4-5249-874c-557b0f4557f5");
  expect_text(fx, NULL, "\"7C08B797-FAC4-5249-874C-557B0F4557F5\"",
              "7c08b797-fac4-5249-874c-557b0f4557f5");
  expect_refused(fx, customer, "\"7c08b797fac45249874c557b0f4557f5\"");
  expect_refused(fx, customer, "42");
  const dg_property_t *name = prop(fx, "Customers", "Name");
  expect_text(fx, name, "\"Acme\"", "Acme");
  expect_text(fx, name, "1001", "1001");
  expect_refused(fx, name, "{}");
  assert_int_equal(parse(fx, name, "null", &v), 0);
  assert_int_equal(v.kind, DG_STORE_NULL);
}

static void test_inbound_has_no_value(void **state) {
  st_fixture_t *fx = *state;
  dg_store_value_t v;
  assert_int_equal(parse(fx, prop(fx, "Orders", "OrderLines"), "null", &v), DG_EINVAL);
  st_contains(fx->err.message, "Inbound reference", NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_datetime, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_date, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_numbers, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_boolean_guid_string, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_inbound_has_no_value, st_setup, st_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
