/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for response paths: every step kind, the forms without '$'
 * and with quoted keys, wildcards over arrays and objects, negative
 * indexes, misses, the match bound and every compile error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/text.h"

static const char doc_text[] =
    "{\"data\":{\"orderEditBegin\":{\"calculatedOrder\":{\"id\":\"gid://Calc/7\","
    "\"lineItems\":{\"edges\":[{\"node\":{\"id\":\"L1\",\"sku\":\"A\"}},"
    "{\"node\":{\"id\":\"L2\",\"sku\":\"B\"}},{\"node\":{\"id\":\"L3\",\"sku\":\"C\"}}]}}}},"
    "\"a.b\":{\"it's\":1,\"q\\\"k\":2},\"rates\":{\"EUR\":0.5,\"GBP\":0.25},\"n\":null}";

static dg_arena_t *arena;
static json_t *doc;

static int setup(void **state) {
  (void)state;
  arena = dg_arena_new(4096);
  doc = json_loads(doc_text, 0, NULL);
  return arena == NULL || doc == NULL;
}

static int teardown(void **state) {
  (void)state;
  json_decref(doc);
  dg_arena_destroy(arena);
  return 0;
}

static const dg_jsonpath_t *compile(const char *text) {
  const dg_jsonpath_t *p = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_jsonpath_compile(arena, text, &p, &err);
  if (rc != 0)
    fail_msg("compile '%s': %s", text, err.message);
  return p;
}

/* Every match of text, as compact JSON joined with '|'. */
static int collect(void *data, json_t *value) {
  dg_buf_t *out = data;
  char *s = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY);
  if (out->len > 0)
    dg_buf_append_str(out, "|");
  dg_buf_append_str(out, s);
  free(s);
  return 0;
}

static void expect(const char *text, const char *want) {
  dg_buf_t out;
  dg_buf_init(&out, 4096);
  size_t count = 99;
  assert_int_equal(dg_jsonpath_each(compile(text), doc, 100, collect, &out, &count), 0);
  assert_string_equal(out.data ? out.data : "", want);
  assert_true(count <= 100);
  dg_buf_free(&out);
}

static void expect_error(const char *text, const char *fragment) {
  const dg_jsonpath_t *p = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_jsonpath_compile(arena, text, &p, &err), DG_EINVAL);
  assert_null(p);
  assert_string_equal(err.param, "path");
  if (strstr(err.message, fragment) == NULL)
    fail_msg("'%s': message '%s' lacks '%s'", text, err.message, fragment);
}

static void test_keys_with_and_without_dollar(void **state) {
  (void)state;
  expect("$.data.orderEditBegin.calculatedOrder.id", "\"gid://Calc/7\"");
  expect("data.orderEditBegin.calculatedOrder.id", "\"gid://Calc/7\"");
  expect("$['data'][\"orderEditBegin\"].calculatedOrder['id']", "\"gid://Calc/7\"");
  expect("$.rates", "{\"EUR\":0.5,\"GBP\":0.25}");
}

static void test_root(void **state) {
  (void)state;
  json_t *root = dg_jsonpath_get(compile("$"), doc);
  assert_ptr_equal(root, doc);
  assert_false(dg_jsonpath_is_multi(compile("$")));
}

static void test_quoted_keys(void **state) {
  (void)state;
  expect("$['a.b']['it\\'s']", "1");
  expect("$[\"a.b\"][\"q\\\"k\"]", "2");
  expect("['a.b'].q", "");
}

static void test_indexes(void **state) {
  (void)state;
  const char *base = "data.orderEditBegin.calculatedOrder.lineItems.edges";
  char p[256];
  snprintf(p, sizeof(p), "%s[0].node.id", base);
  expect(p, "\"L1\"");
  snprintf(p, sizeof(p), "%s[-1].node.sku", base);
  expect(p, "\"C\"");
  snprintf(p, sizeof(p), "%s[3].node.id", base);
  expect(p, "");
  snprintf(p, sizeof(p), "%s[-4]", base);
  expect(p, "");
  expect("rates[0]", "");
}

static void test_wildcards(void **state) {
  (void)state;
  const dg_jsonpath_t *p =
      compile("$.data.orderEditBegin.calculatedOrder.lineItems.edges[*].node.id");
  assert_true(dg_jsonpath_is_multi(p));
  expect("$.data.orderEditBegin.calculatedOrder.lineItems.edges[*].node.id",
         "\"L1\"|\"L2\"|\"L3\"");
  expect("$.rates.*", "0.5|0.25");
  expect("$.rates[*]", "0.5|0.25");
  expect("$.n[*]", "");
  expect("$.missing[*].x", "");
  json_t *first = dg_jsonpath_get(p, doc);
  assert_string_equal(json_string_value(first), "L1");
}

static int stop_at_second(void *data, json_t *value) {
  (void)value;
  return ++*(int *)data == 2 ? 7 : 0;
}

static void test_bounds_and_early_stop(void **state) {
  (void)state;
  const dg_jsonpath_t *p = compile("data.orderEditBegin.calculatedOrder.lineItems.edges[*]");
  dg_buf_t out;
  dg_buf_init(&out, 4096);
  size_t count = 0;
  assert_int_equal(dg_jsonpath_each(p, doc, 2, collect, &out, &count), DG_E2BIG);
  assert_int_equal(count, 2);
  dg_buf_free(&out);
  int seen = 0;
  assert_int_equal(dg_jsonpath_each(p, doc, 10, stop_at_second, &seen, &count), 7);
  assert_int_equal(count, 2);
  assert_null(dg_jsonpath_get(compile("nope"), doc));
}

static void test_errors(void **state) {
  (void)state;
  expect_error("", "1 to 1024 characters");
  expect_error("$..id", "recursive descent");
  expect_error("$.a[", "expected an index");
  expect_error("$.a[1", "expected ']'");
  expect_error("$.a['x", "unterminated quoted key");
  expect_error("$.a.", "expected a key name");
  expect_error("$a", "expected '.' or '['");
  expect_error("$.a[x]", "expected an index");
  expect_error("$.a[99999999999]", "index out of range");
  expect_error("a b", "expected '.' or '['");
  char deep[DG_JSONPATH_MAX_STEPS * 2 + 8] = "$";
  size_t n = 1;
  for (int i = 0; i <= DG_JSONPATH_MAX_STEPS; i++) {
    memcpy(deep + n, ".a", 3);
    n += 2;
  }
  expect_error(deep, "too many steps");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_keys_with_and_without_dollar),
      cmocka_unit_test(test_root),
      cmocka_unit_test(test_quoted_keys),
      cmocka_unit_test(test_indexes),
      cmocka_unit_test(test_wildcards),
      cmocka_unit_test(test_bounds_and_early_stop),
      cmocka_unit_test(test_errors),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
