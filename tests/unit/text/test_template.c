/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for templates: the placeholder syntax and its errors, and the
 * expansion in each mode (URL path and query encoding, raw header values,
 * JSON bodies with typed values), bounded output and lookup failures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/text.h"

/* A lookup over a small table of name=value pairs; names starting with
 * "n_" are numbers, "b_" booleans, "a_" absent, "e_" fail with EIO. */
typedef struct pair {
  const char *name;
  const char *value;
} pair_t;

static const pair_t values[] = {
    {"Id", "1001"},         {"Name", "Ann \"Bo\" / Co & Sons?"},
    {"n_Limit", "25"},      {"b_Active", "true"},
    {"Path", "a/b c"},      {"Unicode", "caf\xc3\xa9"},
    {"Ctl", "line\nbreak"}, {"Session", "S-42"},
    {"Tab", "x\ty\\z"},     {"Dots", ".."},
    {"Dot", "."},           {"Climb", "../x"},
    {"Back", "x\\..\\y"},   {"Empty", ""},
    {"Ellipsis", "..."},    {"Pct", "%2e%2e"},
    {"DotName", "a..b"},
};

static int lookup(void *data, const dg_template_var_t *var, dg_template_value_t *out) {
  (void)data;
  if (var->session) {
    out->kind = DG_TVAL_STRING;
    out->text = "sess";
    out->len = 4;
    return 0;
  }
  if (strncmp(var->name, "a_", 2) == 0) {
    out->kind = DG_TVAL_ABSENT;
    return 0;
  }
  if (strncmp(var->name, "e_", 2) == 0)
    return DG_EIO;
  for (size_t i = 0; i < DG_ARRAY_SIZE(values); i++) {
    if (strcmp(values[i].name, var->name) != 0)
      continue;
    out->kind = strncmp(var->name, "n_", 2) == 0   ? DG_TVAL_NUMBER
                : strncmp(var->name, "b_", 2) == 0 ? DG_TVAL_BOOL
                                                   : DG_TVAL_STRING;
    out->text = values[i].value;
    out->len = strlen(values[i].value);
    return 0;
  }
  return DG_ENOENT;
}

static dg_arena_t *arena;

static int setup(void **state) {
  (void)state;
  arena = dg_arena_new(4096);
  return arena == NULL;
}

static int teardown(void **state) {
  (void)state;
  dg_arena_destroy(arena);
  return 0;
}

static const dg_template_t *compile(const char *text) {
  const dg_template_t *t = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_template_compile(arena, text, &t, &err);
  if (rc != 0)
    fprintf(stderr, "compile '%s': %s\n", text, err.message);
  assert_int_equal(rc, 0);
  return t;
}

/* Expands text in mode and checks the result. */
static void expect(const char *text, dg_template_mode_t mode, const char *want) {
  const dg_template_t *t = compile(text);
  dg_buf_t out;
  dg_buf_init(&out, 4096);
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_template_expand(t, mode, lookup, NULL, &out, &err), 0);
  assert_string_equal(out.data ? out.data : "", want);
  dg_buf_free(&out);
}

static void expect_compile_error(const char *text, const char *fragment) {
  const dg_template_t *t = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_template_compile(arena, text, &t, &err), DG_EINVAL);
  assert_null(t);
  if (strstr(err.message, fragment) == NULL)
    fail_msg("'%s': message '%s' lacks '%s'", text, err.message, fragment);
}

static void test_placeholders_are_listed(void **state) {
  (void)state;
  const dg_template_t *t = compile("/orders/{Id}/edits/{SESSION:CalcId}?x={Id}");
  assert_int_equal(dg_template_nvars(t), 3);
  assert_string_equal(dg_template_var(t, 0)->name, "Id");
  assert_false(dg_template_var(t, 0)->session);
  assert_string_equal(dg_template_var(t, 1)->name, "CalcId");
  assert_true(dg_template_var(t, 1)->session);
  assert_string_equal(dg_template_var(t, 2)->name, "Id");
  assert_null(dg_template_var(t, 3));
  assert_string_equal(dg_template_text(t), "/orders/{Id}/edits/{SESSION:CalcId}?x={Id}");
}

static void test_reference_placeholder(void **state) {
  (void)state;
  const dg_template_t *t = compile("/orders/{Order.OrderNumber}/lines/{Id}");
  assert_int_equal(dg_template_nvars(t), 2);
  assert_string_equal(dg_template_var(t, 0)->name, "Order.OrderNumber");
  assert_false(dg_template_var(t, 0)->session);
  assert_string_equal(dg_template_var(t, 1)->name, "Id");
  t = compile("/edits/{SESSION:Order.CalculatedOrderId}");
  assert_int_equal(dg_template_nvars(t), 1);
  assert_string_equal(dg_template_var(t, 0)->name, "Order.CalculatedOrderId");
  assert_true(dg_template_var(t, 0)->session);
}

static void test_literal_braces(void **state) {
  (void)state;
  const dg_template_t *t = compile("{{Id} { \"a\": 1 } {1} {}");
  assert_int_equal(dg_template_nvars(t), 0);
  expect("{{Id} { \"a\": 1 } {1} {}", DG_TEMPLATE_RAW, "{Id} { \"a\": 1 } {1} {}");
  expect("", DG_TEMPLATE_RAW, "");
}

static void test_compile_errors(void **state) {
  (void)state;
  expect_compile_error("/orders/{Order Id}", "offset 8");
  expect_compile_error("/orders/{Id", "not closed");
  expect_compile_error("{SESSION:}", "offset 0");
  expect_compile_error("{Id-2}", "{Name}, {Reference.Name}, {SESSION:Name} or");
  expect_compile_error("{Order.}", "offset 0");
  expect_compile_error("{Order.Number.X}", "offset 0");
  expect_compile_error("{SESSION:Order.}", "offset 0");
  expect_compile_error("{SESSION:Order.Number.X}", "offset 0");
  char big[DG_TEMPLATE_MAX_LEN + 2];
  memset(big, 'a', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  expect_compile_error(big, "at most 16384");
  char many[DG_TEMPLATE_MAX_VARS * 4 + 8];
  for (int i = 0; i <= DG_TEMPLATE_MAX_VARS; i++)
    memcpy(many + i * 3, "{A}", 4);
  expect_compile_error(many, "more than 64");
}

static void test_path_and_query_encoding(void **state) {
  (void)state;
  expect("/orders/{Id}/by/{Name}", DG_TEMPLATE_PATH,
         "/orders/1001/by/Ann%20%22Bo%22%20%2F%20Co%20%26%20Sons%3F");
  expect("{Path}", DG_TEMPLATE_PATH, "a%2Fb%20c");
  expect("{Unicode}-{a_Missing}", DG_TEMPLATE_QUERY, "caf%C3%A9-");
  expect("{SESSION:X}", DG_TEMPLATE_QUERY, "sess");
}

/* Expands text as a path, expecting a refusal naming param. */
static void expect_path_refused(const char *text, const char *param) {
  const dg_template_t *t = compile(text);
  dg_buf_t out;
  dg_buf_init(&out, 4096);
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_template_expand(t, DG_TEMPLATE_PATH, lookup, NULL, &out, &err), DG_EINVAL);
  assert_string_equal(err.param, param);
  assert_int_equal(out.len, 0);
  dg_buf_free(&out);
}

static void test_path_values_stay_in_their_segment(void **state) {
  (void)state;
  expect_path_refused("/erp/orders/{Dots}/edits/begin.json", "Dots");
  expect_path_refused("/erp/orders/{Dot}/edits", "Dot");
  expect_path_refused("/erp/orders/{Dots}", "Dots");
  expect_path_refused("{Dots}/x", "Dots");
  expect_path_refused("/erp/orders/{Empty}/edits", "Empty");
  expect_path_refused("/erp/orders/{Empty}", "Empty");
  expect_path_refused("/erp/orders/{a_Missing}/edits", "a_Missing");
  expect_path_refused("/erp/orders/{Dot}{Dot}/edits", "Dot");
  /* Encoded, these would still climb on a server that decodes %2F or %5C. */
  expect_path_refused("/erp/orders/{Climb}", "Climb");
  expect_path_refused("/erp/orders/{Back}", "Back");
  expect_path_refused("/files/../{Id}", "template");
  /* A value inside a longer segment, or dots that are part of a name. */
  expect("/erp/orders/{Dots}.json", DG_TEMPLATE_PATH, "/erp/orders/...json");
  expect("/erp/orders/x{Empty}", DG_TEMPLATE_PATH, "/erp/orders/x");
  expect("/erp/orders/{Ellipsis}", DG_TEMPLATE_PATH, "/erp/orders/...");
  expect("/erp/orders/{DotName}", DG_TEMPLATE_PATH, "/erp/orders/a..b");
  expect("/erp/orders/{Pct}", DG_TEMPLATE_PATH, "/erp/orders/%252e%252e");
  /* Queries are not paths. */
  expect("{Dots}", DG_TEMPLATE_QUERY, "..");
}

static void test_raw_mode(void **state) {
  (void)state;
  expect("Bearer {Id}", DG_TEMPLATE_RAW, "Bearer 1001");
  const dg_template_t *t = compile("X {Ctl}");
  dg_buf_t out;
  dg_buf_init(&out, 100);
  dg_errctx_t err;
  assert_int_equal(dg_template_expand(t, DG_TEMPLATE_RAW, lookup, NULL, &out, &err), DG_EINVAL);
  assert_string_equal(err.param, "Ctl");
  assert_non_null(strstr(err.message, "line break"));
  assert_int_equal(out.len, 0);
  dg_buf_free(&out);
}

static void test_json_mode(void **state) {
  (void)state;
  expect("{\"id\": \"{Id}\", \"limit\": \"{n_Limit}\", \"on\": \"{b_Active}\"}", DG_TEMPLATE_JSON,
         "{\"id\": \"1001\", \"limit\": 25, \"on\": true}");
  expect("{\"missing\": \"{a_X}\", \"raw\": {n_Limit}, \"bare\": {Id}}", DG_TEMPLATE_JSON,
         "{\"missing\": null, \"raw\": 25, \"bare\": \"1001\"}");
  expect("{\"q\": \"name is {Name}!\"}", DG_TEMPLATE_JSON,
         "{\"q\": \"name is Ann \\\"Bo\\\" / Co & Sons?!\"}");
  expect("{\"t\": \"{Tab}\", \"c\": \"<{Ctl}>\"}", DG_TEMPLATE_JSON,
         "{\"t\": \"x\\ty\\\\z\", \"c\": \"<line\\nbreak>\"}");
  /* A quote escaped inside a string does not end it. */
  expect("{\"s\": \"a\\\"{Id}\"}", DG_TEMPLATE_JSON, "{\"s\": \"a\\\"1001\"}");
  /* Keys stay strings, at any depth and after arrays. */
  expect("{\"{n_Limit}\": [1, {\"{b_Active}\": \"{n_Limit}\"}], \"k\": \"{a_X}\"}",
         DG_TEMPLATE_JSON, "{\"25\": [1, {\"true\": 25}], \"k\": null}");
  /* Outside JSON mode a whole-string placeholder keeps its quotes. */
  expect("\"{Id}\"", DG_TEMPLATE_RAW, "\"1001\"");
}

static void test_json_result_parses(void **state) {
  (void)state;
  const dg_template_t *t = compile(
      "{\"variables\": {\"name\": \"{Name}\", \"n\": \"{n_Limit}\", \"u\": \"{Unicode}\"}}");
  dg_buf_t out;
  dg_buf_init(&out, 4096);
  dg_errctx_t err;
  assert_int_equal(dg_template_expand(t, DG_TEMPLATE_JSON, lookup, NULL, &out, &err), 0);
  json_t *doc = json_loads(out.data, 0, NULL);
  assert_non_null(doc);
  json_t *vars = json_object_get(doc, "variables");
  assert_string_equal(json_string_value(json_object_get(vars, "name")), "Ann \"Bo\" / Co & Sons?");
  assert_int_equal(json_integer_value(json_object_get(vars, "n")), 25);
  assert_string_equal(json_string_value(json_object_get(vars, "u")), "caf\xc3\xa9");
  json_decref(doc);
  dg_buf_free(&out);
}

static void test_lookup_failures(void **state) {
  (void)state;
  dg_buf_t out;
  dg_buf_init(&out, 4096);
  dg_errctx_t err;
  dg_buf_append_str(&out, "keep");
  const dg_template_t *t = compile("/x/{Id}/{Nope}");
  assert_int_equal(dg_template_expand(t, DG_TEMPLATE_PATH, lookup, NULL, &out, &err), DG_ENOENT);
  assert_string_equal(err.param, "Nope");
  assert_string_equal(err.message, "no value for {Nope}");
  assert_string_equal(out.data, "keep");
  t = compile("{e_Broken}");
  assert_int_equal(dg_template_expand(t, DG_TEMPLATE_PATH, lookup, NULL, &out, &err), DG_EIO);
  assert_non_null(strstr(err.message, "{e_Broken}"));
  assert_string_equal(out.data, "keep");
  dg_buf_free(&out);
}

static void test_output_is_bounded(void **state) {
  (void)state;
  const dg_template_t *t = compile("/orders/{Name}");
  dg_buf_t out;
  dg_buf_init(&out, 20);
  dg_errctx_t err;
  assert_int_equal(dg_template_expand(t, DG_TEMPLATE_PATH, lookup, NULL, &out, &err), DG_E2BIG);
  assert_non_null(strstr(err.message, "size limit"));
  assert_int_equal(out.len, 0);
  dg_buf_free(&out);
  dg_buf_init(&out, 4);
  t = compile("/orders");
  assert_int_equal(dg_template_expand(t, DG_TEMPLATE_PATH, lookup, NULL, &out, &err), DG_E2BIG);
  dg_buf_free(&out);
}

static void test_encoders(void **state) {
  (void)state;
  dg_buf_t out;
  dg_buf_init(&out, 100);
  assert_int_equal(dg_template_append_encoded(&out, "a/b c", 5, true), 0);
  assert_string_equal(out.data, "a/b%20c");
  dg_buf_reset(&out);
  assert_int_equal(dg_template_append_json_string(&out, "a\x01\"", 3, true), 0);
  assert_string_equal(out.data, "\"a\\u0001\\\"\"");
  dg_buf_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_placeholders_are_listed),
      cmocka_unit_test(test_reference_placeholder),
      cmocka_unit_test(test_literal_braces),
      cmocka_unit_test(test_compile_errors),
      cmocka_unit_test(test_path_and_query_encoding),
      cmocka_unit_test(test_path_values_stay_in_their_segment),
      cmocka_unit_test(test_raw_mode),
      cmocka_unit_test(test_json_mode),
      cmocka_unit_test(test_json_result_parses),
      cmocka_unit_test(test_lookup_failures),
      cmocka_unit_test(test_output_is_bounded),
      cmocka_unit_test(test_encoders),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
