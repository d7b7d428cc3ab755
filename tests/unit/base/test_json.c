/* Unit tests for the JSON writer: its output must be exactly what jansson's
 * json_dumps gives with JSON_COMPACT and 15 significant digits, for hand-picked and generated
 * values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/base.h"

static void assert_same_as_jansson(const json_t *value) {
  char *want = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
  assert_non_null(want);
  dg_buf_t out;
  dg_buf_init(&out, 1 << 24);
  assert_int_equal(dg_json_write(value, &out), 0);
  assert_non_null(out.data);
  assert_int_equal(out.len, strlen(want));
  assert_memory_equal(out.data, want, out.len);
  assert_int_equal(out.data[out.len], '\0');
  dg_buf_free(&out);
  free(want);
}

static void test_scalars(void **state) {
  json_t *values[] = {
      json_true(),
      json_false(),
      json_null(),
      json_integer(0),
      json_integer(-1),
      json_integer(INT64_MAX),
      json_integer(INT64_MIN),
      json_real(0.1),
      json_real(1.0),
      json_real(-0.0),
      json_real(1e300),
      json_real(-2.5e-300),
      json_string(""),
      json_string("plain"),
      json_object(),
      json_array(),
  };
  for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
    assert_same_as_jansson(values[i]);
    json_decref(values[i]);
  }
}

/* An amount stored as a double reads back as it was written. */
static void test_decimal_amounts_keep_their_digits(void **state) {
  json_t *amounts = json_pack("[f,f,f]", 1450.1, 0.3, 19.99);
  dg_buf_t out;
  dg_buf_init(&out, 256);
  assert_int_equal(dg_json_write(amounts, &out), 0);
  assert_string_equal(out.data, "[1450.1,0.3,19.99]");
  dg_buf_free(&out);
  json_decref(amounts);
}

static void test_every_escape(void **state) {
  char text[160];
  size_t n = 0;
  for (int c = 1; c < 0x20; c++)
    text[n++] = (char)c;
  memcpy(text + n, "\"\\/ \x7f", 5);
  n += 5;
  /* é, U+2028 and an emoji: multi-byte UTF-8 is written as it is. */
  const char *utf8 = "\xc3\xa9\xe2\x80\xa8\xf0\x9f\x98\x80";
  memcpy(text + n, utf8, strlen(utf8));
  n += strlen(utf8);
  json_t *s = json_stringn(text, n);
  assert_non_null(s);
  assert_same_as_jansson(s);
  json_t *obj = json_object();
  json_object_set_new(obj, text, json_string("key with escapes"));
  assert_same_as_jansson(obj);
  json_decref(obj);
  json_decref(s);
  json_t *nul = json_stringn("a\0b", 3);
  assert_same_as_jansson(nul);
  json_decref(nul);
}

/* Long strings are scanned eight bytes at a time: put an escape at every
 * offset of a word, between plain and multi-byte UTF-8 text. */
static void test_escape_at_every_offset(void **state) {
  static const char specials[] = {'"', '\\', '\n', 0x01, 0x1f};
  for (size_t at = 0; at < 24; at++) {
    for (size_t k = 0; k < sizeof(specials); k++) {
      char text[64];
      memset(text, 'a', sizeof(text));
      memcpy(text + 30, "\xc3\xa9\xe2\x82\xac", 5); /* é and the euro sign */
      text[at] = specials[k];
      text[at + 36] = specials[(k + 1) % sizeof(specials)];
      json_t *v = json_stringn(text, sizeof(text));
      assert_non_null(v);
      assert_same_as_jansson(v);
      json_decref(v);
    }
  }
}

static void test_insertion_order(void **state) {
  json_t *obj = json_pack("{s:i,s:i,s:i}", "zeta", 1, "alpha", 2, "mid", 3);
  json_object_del(obj, "alpha");
  json_object_set_new(obj, "alpha", json_integer(4));
  json_object_set_new(obj, "zeta", json_integer(5));
  assert_same_as_jansson(obj);
  json_decref(obj);
}

static void test_response_like(void **state) {
  json_t *v = json_pack("{s:s,s:i,s:{s:[{s:s,s:{s:b,s:n}},{s:[i,f,s]}]}}", "jsonrpc", "2.0", "id",
                        7, "result", "content", "type", "text", "flags", "ok", 1, "none", "list", 1,
                        2.5, "line\nbreak \"quoted\"");
  assert_non_null(v);
  assert_same_as_jansson(v);
  json_decref(v);
}

/* A random value of bounded depth, from a fixed seed. */
static json_t *random_value(uint32_t *seed, int depth) {
  *seed = *seed * 1103515245u + 12345u;
  uint32_t r = *seed >> 8;
  int kind = depth <= 0 ? (int)(r % 6) : (int)(r % 8);
  char text[24];
  size_t n = r % sizeof(text);
  for (size_t i = 0; i < n; i++) {
    *seed = *seed * 1103515245u + 12345u;
    text[i] = (char)(1 + (*seed >> 16) % 127); /* ASCII, controls included */
  }
  switch (kind) {
  case 0:
    return json_integer((json_int_t)r - 5000000);
  case 1:
    return json_real((double)r / 7.0);
  case 2:
    return json_stringn(text, n);
  case 3:
    return r & 1 ? json_true() : json_false();
  case 4:
    return json_null();
  case 5:
    return json_stringn(text, n / 2);
  case 6: {
    json_t *a = json_array();
    for (uint32_t i = 0; i < r % 5; i++)
      json_array_append_new(a, random_value(seed, depth - 1));
    return a;
  }
  default: {
    json_t *o = json_object();
    for (uint32_t i = 0; i < r % 5; i++)
      json_object_setn_new(o, text, i < n ? n - i : 0, random_value(seed, depth - 1));
    return o;
  }
  }
}

static void test_generated_values(void **state) {
  uint32_t seed = 42;
  for (int i = 0; i < 2000; i++) {
    json_t *v = random_value(&seed, 4);
    assert_non_null(v);
    assert_same_as_jansson(v);
    json_decref(v);
  }
}

static void test_limit_leaves_buffer_unchanged(void **state) {
  json_t *v = json_pack("{s:s}", "key", "a value that does not fit");
  dg_buf_t out;
  dg_buf_init(&out, 16);
  assert_int_equal(dg_buf_append_str(&out, "head"), 0);
  assert_int_equal(dg_json_write(v, &out), DG_E2BIG);
  assert_int_equal(out.len, 4);
  assert_string_equal(out.data, "head");
  dg_buf_free(&out);
  json_decref(v);
}

static void test_depth_limit(void **state) {
  json_t *root = json_array();
  json_t *cur = root;
  for (int i = 0; i < 2100; i++) {
    json_t *next = json_array();
    json_array_append_new(cur, next);
    cur = next;
  }
  dg_buf_t out;
  dg_buf_init(&out, 1 << 20);
  assert_int_equal(dg_json_write(root, &out), DG_EINVAL);
  assert_int_equal(out.len, 0);
  assert_int_equal(dg_json_write(NULL, &out), DG_EINVAL);
  dg_buf_free(&out);
  json_decref(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scalars),
      cmocka_unit_test(test_decimal_amounts_keep_their_digits),
      cmocka_unit_test(test_every_escape),
      cmocka_unit_test(test_escape_at_every_offset),
      cmocka_unit_test(test_insertion_order),
      cmocka_unit_test(test_response_like),
      cmocka_unit_test(test_generated_values),
      cmocka_unit_test(test_limit_leaves_buffer_unchanged),
      cmocka_unit_test(test_depth_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
