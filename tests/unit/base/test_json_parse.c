/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the JSON parser: it must accept and refuse exactly what
 * jansson's json_loadb with JSON_DECODE_ANY does and build equal values,
 * and it reports where a refused text went wrong. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/base.h"

/* A literal with its length, so that embedded NUL bytes count. */
#define LIT(s) s, sizeof(s) - 1

static json_t *jansson_parse(const char *text, size_t len) {
  json_error_t jerr;
  return json_loadb(text, len, JSON_DECODE_ANY, &jerr);
}

/* Both parsers accept text and build equal values; returns ours. */
static json_t *parses_like_jansson(const char *text, size_t len) {
  dg_json_parse_error_t err;
  json_t *ours = dg_json_parse(text, len, &err);
  json_t *theirs = jansson_parse(text, len);
  if (ours == NULL)
    fail_msg("refused %.*s: %s at %zu", (int)len, text, err.message, err.offset);
  assert_non_null(theirs);
  if (!json_equal(ours, theirs))
    fail_msg("different value for %.*s", (int)len, text);
  json_decref(theirs);
  return ours;
}

static void assert_parses_like_jansson(const char *text, size_t len) {
  json_decref(parses_like_jansson(text, len));
}

/* Both parsers refuse text; ours says it went wrong at offset. */
static void assert_refused_at(const char *text, size_t len, size_t offset) {
  dg_json_parse_error_t err;
  json_t *ours = dg_json_parse(text, len, &err);
  json_t *theirs = jansson_parse(text, len);
  if (ours != NULL || theirs != NULL)
    fail_msg("accepted %.*s (ours %d, jansson %d)", (int)len, text, ours != NULL, theirs != NULL);
  if (err.offset != offset)
    fail_msg("%.*s: %s at %zu, expected at %zu", (int)len, text, err.message, err.offset, offset);
  assert_true(err.message[0] != '\0');
}

static void test_valid_documents(void **state) {
  static const char *const docs[] = {
      "true",
      "false",
      "null",
      "0",
      "-0",
      "7",
      "-12",
      "1.5",
      "-0.0",
      "1e5",
      "1E+2",
      "2.5e-3",
      "\"\"",
      "\"plain text\"",
      "\"caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80\"",
      "\"\\\" \\\\ \\/ \\b \\f \\n \\r \\t\"",
      "\"\\u0041\\u00e9\\u20AC\\uffff\"",
      "\"\x7f\"",
      "[]",
      "{}",
      " \t\r\n[ ] \n",
      "[1,2.0,\"three\",true,false,null,[],{}]",
      "{\"a\":1,\"b\":[1,{\"c\":null}],\"\":\"empty key\"}",
      "{\"a\":1,\"a\":2}",
      "{\"a\":{\"x\":1},\"a\":[2]}",
      "{\"k\\u00e9y\\n\":\"v\",\"k\xc3\xa9y\\n\":\"w\"}",
      "{ \"a\" : [ 1 , 2 ] , \"b\" : { } }",
      "[\"a long string that needs more than one word of scanning, and more\"]",
      "[\"escape at the end of a long run of plain bytes\\n\"]",
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(docs); i++)
    assert_parses_like_jansson(docs[i], strlen(docs[i]));
}

static void test_values_built(void **state) {
  json_t *v = parses_like_jansson(LIT("{\"a\":1,\"a\":2,\"b\":-0}"));
  assert_int_equal(json_object_size(v), 2);
  assert_int_equal(json_integer_value(json_object_get(v, "a")), 2);
  assert_true(json_is_integer(json_object_get(v, "b")));
  assert_int_equal(json_integer_value(json_object_get(v, "b")), 0);
  json_decref(v);
  v = parses_like_jansson(LIT("\"a\\tb\\u00e9\""));
  assert_int_equal(json_string_length(v), 5);
  assert_memory_equal(json_string_value(v), "a\tb\xc3\xa9", 5);
  json_decref(v);
  v = parses_like_jansson(LIT("1.0"));
  assert_true(json_is_real(v));
  json_decref(v);
}

static void test_invalid_documents(void **state) {
  static const struct {
    const char *text;
    size_t len;
    size_t offset;
  } bad[] = {
      {LIT(""), 0},
      {LIT("   "), 3},
      {LIT("\xef\xbb\xbf{}"), 0},
      {LIT("[1,]"), 3},
      {LIT("[1 2]"), 3},
      {LIT("[1"), 2},
      {LIT("{\"a\" 1}"), 5},
      {LIT("{\"a\":1,}"), 7},
      {LIT("{\"a\":1"), 6},
      {LIT("{1:2}"), 1},
      {LIT("{\"a\"}"), 4},
      {LIT("1 2"), 2},
      {LIT("{} x"), 3},
      {LIT("tru"), 0},
      {LIT("True"), 0},
      {LIT("nul"), 0},
      {LIT("truex"), 4},
      {LIT("'a'"), 0},
      {LIT("\"abc"), 4},
      {LIT("\"abc\\"), 5},
      {LIT("\"a\x01\""), 2},
      {LIT("\"a\tb\""), 2},
      {LIT("\"\\x\""), 1},
      {LIT("\"\\u12G4\""), 1},
      {LIT("\"\\u12\""), 1},
      {LIT("\"ab\\u0000\""), 3},
      {LIT("\"\\udc00\""), 1},
      {LIT("\"\\ud800\""), 1},
      {LIT("\"ab\\ud800\\u0041\""), 3},
      {LIT("\"\\ud800\\ud800\""), 1},
      {LIT("\"\\ud800\\n\""), 1},
      {LIT("\"a\xc0\x80\""), 2},
      {LIT("\"\xc1\xbf\""), 1},
      {LIT("\"\xe0\x80\xaf\""), 1},
      {LIT("\"\xed\xa0\x80\""), 1},
      {LIT("\"\xf4\x90\x80\x80\""), 1},
      {LIT("\"\xf5\x80\x80\x80\""), 1},
      {LIT("\"\x80\""), 1},
      {LIT("\"\xe2\x82\""), 1},
      {LIT("\"\xe2\x82"), 1},
      {LIT("\"\xff\""), 1},
      {LIT("01"), 1},
      {LIT("-01"), 2},
      {LIT("-"), 1},
      {LIT("-a"), 1},
      {LIT("+1"), 0},
      {LIT(".5"), 0},
      {LIT("1."), 2},
      {LIT("1.e5"), 2},
      {LIT("1e"), 2},
      {LIT("1e+"), 3},
      {LIT("0x10"), 1},
      {LIT("\"a\"\0"), 3},
      {LIT("\0"), 0},
      {LIT("[\0]"), 1},
      {LIT("\"a\0b\""), 2},
      {LIT("{\"a\0\":1}"), 3},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++)
    assert_refused_at(bad[i].text, bad[i].len, bad[i].offset);
}

/* jansson drops one NUL byte right after a number or a literal (it reads
 * the byte to end the token, puts it back and then takes the NUL for "no
 * byte kept"), so it reads "[1\0,2]" as [1,2]. A NUL byte is never valid
 * JSON outside a string; this parser refuses it wherever it is. */
static void test_nul_after_a_token_is_refused(void **state) {
  static const struct {
    const char *text;
    size_t len;
    size_t offset;
  } cases[] = {{LIT("1\0"), 1}, {LIT("[1\0,2]"), 2}, {LIT("true\0"), 4}, {LIT("[2.5e3\0]"), 6}};
  for (size_t i = 0; i < DG_ARRAY_SIZE(cases); i++) {
    dg_json_parse_error_t err;
    assert_null(dg_json_parse(cases[i].text, cases[i].len, &err));
    assert_int_equal(err.offset, cases[i].offset);
    json_t *theirs = jansson_parse(cases[i].text, cases[i].len);
    assert_non_null(theirs); /* when jansson changes, this test can go */
    json_decref(theirs);
  }
}

/* A message: repeated keys are refused; valid JSON jansson cannot hold is
 * noted and read with a stand-in, unless it is the top-level "id". */
static void test_message_problems(void **state) {
  static const struct {
    const char *text;
    dg_json_problem_t kind;
    size_t offset;
    const char *message;
  } noted[] = {
      {"{\"id\":1,\"params\":{\"a\":\"x\\u0000y\"}}", DG_JSON_UNSUPPORTED, 24,
       "\\u0000 is not allowed in a string"},
      {"{\"id\":1,\"params\":{\"n\":123456789012345678901}}", DG_JSON_UNSUPPORTED, 22,
       "integer out of range"},
      {"{\"id\":1,\"params\":{\"r\":1e999}}", DG_JSON_UNSUPPORTED, 22, "real number out of range"},
      {"{\"id\":1,\"method\":\"a\",\"method\":\"b\"}", DG_JSON_DUPLICATE, 30,
       "the key \"method\" is repeated"},
      {"{\"id\":1,\"params\":{\"a\":1,\"a\":2},\"x\":-99999999999999999999}", DG_JSON_DUPLICATE, 28,
       "the key \"a\" is repeated"},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(noted); i++) {
    dg_json_parse_error_t err;
    json_t *v = dg_json_parse_message(noted[i].text, strlen(noted[i].text), &err);
    assert_non_null(v);
    assert_int_equal(json_integer_value(json_object_get(v, "id")), 1);
    assert_int_equal(err.kind, noted[i].kind);
    assert_int_equal(err.offset, noted[i].offset);
    assert_string_equal(err.message, noted[i].message);
    json_decref(v);
    /* The plain parser refuses what it cannot hold and takes the last key of a repeat. */
    v = dg_json_parse(noted[i].text, strlen(noted[i].text), &err);
    assert_true((v == NULL) == (i != 3));
    json_decref(v);
  }
  static const char *const refused[] = {
      "{\"id\":1,\"id\":2}",
      "{\"id\":99999999999999999999,\"method\":\"ping\"}",
      "{\"id\":\"a\\u0000\",\"method\":\"ping\"}",
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(refused); i++) {
    dg_json_parse_error_t err;
    assert_null(dg_json_parse_message(refused[i], strlen(refused[i]), &err));
    assert_int_not_equal(err.kind, DG_JSON_SYNTAX);
    assert_non_null(strstr(err.message, "\"id\""));
  }
  /* A repeated "id" below the top level is an ordinary repeat. */
  dg_json_parse_error_t err;
  json_t *v = dg_json_parse_message(LIT("{\"p\":{\"id\":1,\"id\":2}}"), &err);
  assert_non_null(v);
  assert_int_equal(err.kind, DG_JSON_DUPLICATE);
  json_decref(v);
  /* A clean message notes nothing. */
  v = dg_json_parse_message(LIT("{\"id\":1,\"s\":\"\\u0041\"}"), &err);
  assert_non_null(v);
  assert_string_equal(err.message, "");
  assert_int_equal(err.kind, DG_JSON_SYNTAX);
  json_decref(v);
}

static void test_integer_limits(void **state) {
  json_t *v = parses_like_jansson(LIT("9223372036854775807"));
  assert_true(json_integer_value(v) == INT64_MAX);
  json_decref(v);
  v = parses_like_jansson(LIT("-9223372036854775808"));
  assert_true(json_integer_value(v) == INT64_MIN);
  json_decref(v);
  assert_refused_at(LIT("9223372036854775808"), 0);
  assert_refused_at(LIT("-9223372036854775809"), 0);
  assert_refused_at(LIT("[1,99999999999999999999]"), 3);
  assert_refused_at(LIT("100000000000000000000000000000000000000000"), 0);
  assert_parses_like_jansson(LIT("[0,-1,1000000000000000000,-999999999999999999]"));
}

static void test_reals(void **state) {
  static const char *const reals[] = {
      "0.1",
      "-0.5",
      "3.141592653589793",
      "1.7976931348623157e308",
      "-1.7976931348623157e308",
      "4.9e-324",
      "2.2250738585072014e-308",
      "1e-400",
      "-1e-400",
      "123456789012345678901234567890.5",
      "0.30000000000000004",
      "9007199254740993.0",
      "1e22",
      "1e23",
      "123456789012345e-22",
      "1234567890123456e-22",
      "0.000000000000000000000000000001",
      "1E-0",
      "1e0000000000000000000000000000005",
      "1450.1",
      "19.99",
      "-0.0e0",
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(reals); i++) {
    json_t *v = parses_like_jansson(reals[i], strlen(reals[i]));
    assert_true(json_is_real(v));
    /* Exactly the double strtod gives, not merely close to it. */
    assert_true(json_real_value(v) == strtod(reals[i], NULL));
    json_decref(v);
  }
  assert_refused_at(LIT("1e400"), 0);
  assert_refused_at(LIT("[-1e400]"), 1);
  assert_refused_at(LIT("1.8e308"), 0);
}

/* Reals near the exact fast path's bounds: every digit count and exponent
 * around 15 digits and 10^22 gives strtod's double. */
static void test_reals_around_the_fast_path(void **state) {
  char text[64];
  for (int digits = 1; digits <= 18; digits++) {
    for (int exp = -26; exp <= 26; exp++) {
      char mantissa[20];
      for (int i = 0; i < digits; i++)
        mantissa[i] = (char)('1' + (i * 7 + exp + 30) % 9);
      mantissa[digits] = '\0';
      int n = digits == 1 ? snprintf(text, sizeof(text), "%se%d", mantissa, exp)
                          : snprintf(text, sizeof(text), "%.1s.%se%d", mantissa, mantissa + 1, exp);
      json_t *v = parses_like_jansson(text, (size_t)n);
      assert_true(json_real_value(v) == strtod(text, NULL));
      json_decref(v);
      n = snprintf(text, sizeof(text), "-%se%d", mantissa, exp);
      v = parses_like_jansson(text, (size_t)n);
      assert_true(json_real_value(v) == strtod(text, NULL));
      json_decref(v);
    }
  }
}

static void test_surrogate_pairs(void **state) {
  json_t *v = parses_like_jansson(LIT("\"\\ud83d\\ude00 \\uD834\\uDD1E\""));
  assert_string_equal(json_string_value(v), "\xf0\x9f\x98\x80 \xf0\x9d\x84\x9e");
  json_decref(v);
  v = parses_like_jansson(LIT("\"\\udbff\\udfff\\ud800\\udc00\""));
  assert_string_equal(json_string_value(v), "\xf4\x8f\xbf\xbf\xf0\x90\x80\x80");
  json_decref(v);
  assert_refused_at(LIT("\"x\\ude00\\ud83d\""), 2);
  assert_refused_at(LIT("\"\\ud83d\""), 1);
  assert_refused_at(LIT("\"\\ud83dx\""), 1);
  assert_refused_at(LIT("\"\\ud83d\\u"), 1);
}

/* text is n arrays (or objects) around inner. */
static char *nested(size_t n, bool objects, const char *inner) {
  size_t unit = objects ? 5 : 1, inner_len = strlen(inner);
  char *text = malloc(2 * n * unit + inner_len + 1);
  assert_non_null(text);
  char *p = text;
  for (size_t i = 0; i < n; i++, p += unit)
    memcpy(p, objects ? "{\"a\":" : "[", unit);
  memcpy(p, inner, inner_len);
  p += inner_len;
  for (size_t i = 0; i < n; i++)
    *p++ = objects ? '}' : ']';
  *p = '\0';
  return text;
}

static void test_depth_limit(void **state) {
  static const struct {
    size_t n;
    bool objects;
    const char *inner;
    bool accepted;
    size_t offset; /* where a refused text goes wrong, in containers */
  } cases[] = {{2047, false, "[]", true, 0},    {2048, false, "[]", false, 2048},
               {2047, false, "1", true, 0},     {2048, false, "1", false, 2048},
               {2047, true, "{}", true, 0},     {2048, true, "{}", false, 2048},
               {2048, false, "", true, 0},      {2049, false, "", false, 2048},
               {200000, false, "", false, 2048}};
  for (size_t i = 0; i < DG_ARRAY_SIZE(cases); i++) {
    char *text = nested(cases[i].n, cases[i].objects, cases[i].inner);
    if (cases[i].accepted)
      assert_parses_like_jansson(text, strlen(text));
    else
      assert_refused_at(text, strlen(text), cases[i].offset * (cases[i].objects ? 5 : 1));
    free(text);
  }
}

static uint32_t next_random(uint32_t *seed) {
  *seed = *seed * 1103515245u + 12345u;
  return *seed >> 8;
}

/* A string mixing ASCII, escapes jansson writes and multi-byte UTF-8. */
static json_t *random_string(uint32_t *seed) {
  static const char *const pieces[] = {
      "a",        "Zq",           "0123456789abcdef", "\"", "\\", "\n", "\x01", "/",
      "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", " "};
  char text[512];
  size_t len = 0, n = next_random(seed) % 24;
  for (size_t i = 0; i < n; i++) {
    const char *piece = pieces[next_random(seed) % DG_ARRAY_SIZE(pieces)];
    size_t piece_len = strlen(piece);
    memcpy(text + len, piece, piece_len);
    len += piece_len;
  }
  return json_stringn(text, len);
}

static json_t *random_value(uint32_t *seed, int depth) {
  switch (next_random(seed) % (depth > 0 ? 8 : 6)) {
  case 0:
    return json_integer((json_int_t)next_random(seed) * (json_int_t)next_random(seed) -
                        ((json_int_t)1 << 40));
  case 1:
    return json_real((double)next_random(seed) / ((double)(next_random(seed) % 1000) + 1.5));
  case 2:
    return random_string(seed);
  case 3:
    return json_boolean(next_random(seed) % 2);
  case 4:
    return json_null();
  case 5:
    return json_integer((json_int_t)(next_random(seed) % 100));
  case 6: {
    json_t *a = json_array();
    for (uint32_t i = next_random(seed) % 6; i > 0; i--)
      json_array_append_new(a, random_value(seed, depth - 1));
    return a;
  }
  default: {
    json_t *o = json_object();
    for (uint32_t i = next_random(seed) % 6; i > 0; i--) {
      json_t *key = random_string(seed);
      json_object_setn_new(o, json_string_value(key), json_string_length(key),
                           random_value(seed, depth - 1));
      json_decref(key);
    }
    return o;
  }
  }
}

/* Generated documents, written by jansson in several styles, read back. */
static void test_generated_documents(void **state) {
  static const size_t styles[] = {JSON_COMPACT, JSON_INDENT(2), JSON_ENSURE_ASCII,
                                  JSON_COMPACT | JSON_ESCAPE_SLASH};
  uint32_t seed = 12345;
  json_t *all = json_array();
  for (int i = 0; i < 1000; i++) {
    json_t *v = random_value(&seed, 6);
    char *text = json_dumps(v, JSON_ENCODE_ANY | styles[i % DG_ARRAY_SIZE(styles)]);
    assert_non_null(text);
    json_t *back = parses_like_jansson(text, strlen(text));
    assert_true(json_equal(back, v));
    json_decref(back);
    free(text);
    json_array_append_new(all, v);
  }
  /* All of them at once, many times over: a document of megabytes. */
  json_t *big = json_array();
  for (int i = 0; i < 50; i++)
    json_array_append(big, all);
  char *text = json_dumps(big, JSON_INDENT(1));
  assert_non_null(text);
  assert_true(strlen(text) > 1000000);
  json_t *back = parses_like_jansson(text, strlen(text));
  assert_true(json_equal(back, big));
  json_decref(back);
  free(text);
  json_decref(big);
  json_decref(all);
}

/* A tools/call body of about 2 KB carrying 50 GUIDs, the shape of a typical
 * request. */
static char *tools_call_body(size_t *len) {
  dg_buf_t b;
  dg_buf_init(&b, 1 << 16);
  dg_buf_append_str(&b, "{\"jsonrpc\":\"2.0\",\"id\":42,\"method\":\"tools/call\",\"params\":"
                        "{\"name\":\"get_entities\",\"arguments\":{\"model\":\"Customer\","
                        "\"ids\":[");
  for (int i = 0; i < 50; i++) {
    char uuid[DG_UUID_LEN + 1];
    dg_uuid_v4(uuid);
    dg_buf_appendf(&b, "%s\"%s\"", i > 0 ? "," : "", uuid);
  }
  dg_buf_append_str(&b, "],\"limit\":100,\"offset\":0,\"includeDeleted\":false}}}");
  return dg_buf_steal(&b, len);
}

/* The shape of request the gateway's profile was taken on: a tools/call
 * with 50 ids. */
static void test_tools_call_body(void **state) {
  size_t len;
  char *body = tools_call_body(&len);
  assert_parses_like_jansson(body, len);
  free(body);
}

int main(void) {
  /* The allocator the server runs with. */
  dg_json_use_block_cache();
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_valid_documents),
      cmocka_unit_test(test_message_problems),
      cmocka_unit_test(test_values_built),
      cmocka_unit_test(test_invalid_documents),
      cmocka_unit_test(test_nul_after_a_token_is_refused),
      cmocka_unit_test(test_integer_limits),
      cmocka_unit_test(test_reals),
      cmocka_unit_test(test_reals_around_the_fast_path),
      cmocka_unit_test(test_surrogate_pairs),
      cmocka_unit_test(test_depth_limit),
      cmocka_unit_test(test_generated_documents),
      cmocka_unit_test(test_tools_call_body),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
