/* SPDX-License-Identifier: AGPL-3.0-or-later */
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

/* Long strings are scanned sixteen bytes at a time (eight where there is
 * no SSE2, and for the rest): put an escape at every offset of a block and
 * of the word after it, between plain and multi-byte UTF-8 text. */
static void test_escape_at_every_offset(void **state) {
  static const char specials[] = {'"', '\\', '\n', 0x01, 0x1f};
  for (size_t at = 0; at < 28; at++) {
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

/* Strings are written in one pass, eight bytes at a time, with room
 * reserved for a few escapes and grown on the way: strings made only of
 * escapes, and of escapes mixed with plain and multi-byte text, of every
 * length up to a few words and from a fixed seed. */
static void test_dense_escapes(void **state) {
  static const char *const pieces[] = {"\"", "\\", "a", "\n", "\x01", "\xc3\xa9", "\x1f", " "};
  uint32_t seed = 7;
  for (size_t len = 0; len < 300; len++) {
    for (int round = 0; round < 8; round++) {
      char text[600];
      size_t n = 0;
      while (n < len) {
        seed = seed * 1103515245u + 12345u;
        size_t k = round < 2 ? (size_t)round : (seed >> 16) % (round < 5 ? 2 : 8);
        size_t plen = strlen(pieces[k]);
        memcpy(text + n, pieces[k], plen);
        n += plen;
      }
      json_t *v = json_stringn(text, n);
      assert_non_null(v);
      assert_same_as_jansson(v);
      json_decref(v);
    }
  }
}

/* A JSON answer written again as a JSON string (the text item of a tool's
 * result): a quote every few bytes, and strings of every length around the
 * group, block and word sizes (8, 16, 32, 64, 128) made only of quotes or backslashes,
 * or with one escape at the first or the last byte, where the last bytes
 * are written from a word that overlaps bytes written already. */
static void test_escape_lengths_and_answers(void **state) {
  static const char specials[] = {'"', '\\', '\n', 0x01, 0x1f, 'a'};
  for (size_t len = 0; len <= 136; len++) {
    for (size_t k = 0; k < sizeof(specials); k++) {
      char text[140];
      memset(text, specials[k], len);
      json_t *v = json_stringn(text, len);
      assert_same_as_jansson(v);
      json_decref(v);
      if (len == 0)
        continue;
      memset(text, 'b', len);
      text[0] = specials[k];
      text[len - 1] = specials[(k + 1) % sizeof(specials)];
      v = json_stringn(text, len);
      assert_same_as_jansson(v);
      json_decref(v);
    }
  }
  json_t *entities = json_array();
  for (int i = 0; i < 40; i++)
    json_array_append_new(entities, json_pack("{s:s,s:{s:s,s:i,s:n,s:s}}", "id",
                                              "3fcf3481-aec5-4575-b54c-b63e0c0e1c51", "properties",
                                              "status", "Open", "quantity", i, "salesRep", "note",
                                              "a \"quoted\" \\ line\nand \xc3\xa9\xe2\x80\xa8"));
  char *answer = json_dumps(entities, JSON_COMPACT);
  json_t *text = json_string(answer);
  assert_same_as_jansson(text);
  json_decref(text);
  free(answer);
  json_decref(entities);
}

/* A buffer's maximum holds for strings of every path (short, a few
 * blocks, long) also where the buffer's room is larger than it allows. */
static void test_string_within_lowered_max(void **state) {
  static const size_t lens[] = {5, 12, 36, 64, 100};
  char text[101];
  memset(text, 'x', sizeof(text));
  for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
    dg_buf_t out;
    dg_buf_init(&out, 4096);
    assert_int_equal(dg_buf_reserve(&out, 2048), 0);
    assert_int_equal(dg_buf_append(&out, "[", 1), 0);
    out.max = out.len + lens[i] + 1; /* one byte short of the quoted string */
    assert_int_equal(dg_json_write_string(&out, text, lens[i]), DG_E2BIG);
    assert_int_equal(out.len, 1);
    assert_string_equal(out.data, "[");
    out.max = out.len + lens[i] + 2;
    assert_int_equal(dg_json_write_string(&out, text, lens[i]), 0);
    assert_int_equal(out.len, lens[i] + 3);
    dg_buf_free(&out);
  }
}

/* A string that fits the buffer's maximum exactly is written, whatever
 * room the writer would like to keep ahead; one byte less and it is
 * refused with the buffer as it was. */
static void test_string_at_the_limit(void **state) {
  for (size_t len = 0; len < 200; len += 7) {
    char text[200];
    for (size_t i = 0; i < len; i++)
      text[i] = i % 3 == 0 ? 'x' : i % 3 == 1 ? '"' : '\\';
    json_t *v = json_stringn(text, len);
    char *want = json_dumps(v, JSON_ENCODE_ANY);
    size_t wlen = strlen(want);
    dg_buf_t out;
    dg_buf_init(&out, 4 + wlen);
    assert_int_equal(dg_buf_append_str(&out, "head"), 0);
    assert_int_equal(dg_json_write(v, &out), 0);
    assert_int_equal(out.len, 4 + wlen);
    assert_memory_equal(out.data + 4, want, wlen);
    dg_buf_free(&out);
    dg_buf_init(&out, 4 + wlen - 1);
    assert_int_equal(dg_buf_append_str(&out, "head"), 0);
    assert_int_equal(dg_json_write_string(&out, text, len), DG_E2BIG);
    assert_int_equal(out.len, 4);
    assert_string_equal(out.data, "head");
    dg_buf_free(&out);
    free(want);
    json_decref(v);
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

/* Reals of money and measures take a path of their own; its digits must
 * be jansson's, on both sides of every boundary it has. */
static void test_hundredths_as_jansson(void **state) {
  static const double edges[] = {0.0,   -0.0,        0.01, -0.01, 0.05,
                                 0.1,   0.5,         0.55, 1.0,   10.0,
                                 100.1, 99.99,       1e12, -1e12, 9999999999999.99,
                                 1e13,  -1e13,       1e15, 2.675, 1e-5,
                                 0.001, 123456789.12};
  for (size_t i = 0; i < sizeof(edges) / sizeof(edges[0]); i++) {
    json_t *v = json_real(edges[i]);
    assert_same_as_jansson(v);
    json_decref(v);
  }
  uint64_t x = 88172645463325252ULL;
  for (int i = 0; i < 20000; i++) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    long long cents = (long long)(x % 2000000000000000ULL) - 1000000000000000LL;
    double d = i % 2 ? (double)cents / 100 : (double)(cents % 1000000) / 100;
    json_t *v = json_real(i % 7 == 0 ? d / 3 : d);
    assert_same_as_jansson(v);
    json_decref(v);
  }
}

/* The pieces for writers of their own give dg_json_write's bytes. */
static void test_pieces(void **state) {
  static const char *const strings[] = {"", "plain", "quote \" and \\", "tab\tnl\n\x01",
                                        "caf\xc3\xa9"};
  static const double reals[] = {0.0, 1450.1, -2.5, 1e300, 3.14159265358979, 1e-7, 42.0};
  for (size_t i = 0; i < sizeof(strings) / sizeof(strings[0]); i++) {
    dg_buf_t a, b;
    dg_buf_init(&a, 1024);
    dg_buf_init(&b, 1024);
    json_t *v = json_string(strings[i]);
    assert_int_equal(dg_json_write_string(&a, strings[i], strlen(strings[i])), 0);
    assert_int_equal(dg_json_write(v, &b), 0);
    assert_string_equal(a.data, b.data);
    json_decref(v);
    dg_buf_free(&a);
    dg_buf_free(&b);
  }
  for (size_t i = 0; i < sizeof(reals) / sizeof(reals[0]); i++) {
    dg_buf_t a, b;
    dg_buf_init(&a, 1024);
    dg_buf_init(&b, 1024);
    json_t *v = json_real(reals[i]);
    assert_int_equal(dg_json_write_real(&a, reals[i]), 0);
    assert_int_equal(dg_json_write(v, &b), 0);
    assert_string_equal(a.data, b.data);
    json_decref(v);
    dg_buf_free(&a);
    dg_buf_free(&b);
  }
}

/* A whole number written on its own reads as jansson writes it, at both
 * ends of its range. */
static void test_integer_piece(void **state) {
  const int64_t ints[] = {0, 1, -1, 9, 10, -10, 1234567890123, INT64_MAX, INT64_MIN};
  for (size_t i = 0; i < sizeof(ints) / sizeof(ints[0]); i++) {
    dg_buf_t out;
    dg_buf_init(&out, 64);
    json_t *v = json_integer(ints[i]);
    char *want = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    assert_int_equal(dg_json_write_integer(&out, ints[i]), 0);
    assert_string_equal(out.data, want);
    free(want);
    json_decref(v);
    dg_buf_free(&out);
  }
  dg_buf_t small;
  dg_buf_init(&small, 3);
  assert_int_equal(dg_json_write_integer(&small, -1000), DG_E2BIG);
  dg_buf_free(&small);
  /* Written into room the buffer has already, after other text; and its
   * maximum holds even where the room it has is larger. */
  dg_buf_t room;
  dg_buf_init(&room, 1024);
  assert_int_equal(dg_buf_reserve(&room, 512), 0);
  assert_int_equal(dg_buf_append(&room, "[", 1), 0);
  assert_int_equal(dg_json_write_integer(&room, -42), 0);
  assert_int_equal(dg_json_write_real(&room, 19.9), 0);
  assert_string_equal(room.data, "[-4219.9");
  room.max = room.len + 2;
  assert_int_equal(dg_json_write_integer(&room, 123), DG_E2BIG);
  assert_int_equal(dg_json_write_real(&room, 1.25), DG_E2BIG);
  assert_string_equal(room.data, "[-4219.9");
  assert_int_equal(dg_json_write_integer(&room, 12), 0);
  assert_string_equal(room.data, "[-4219.912");
  dg_buf_free(&room);
}

/* A raw value is written as it is, wherever it sits; a look-alike array is
 * just an array. */
static void test_raw_values(void **state) {
  const char text[] = "{\"entities\":[{\"id\":\"a\",\"n\":1.5}],\"hasMore\":false}";
  json_t *raw = dg_json_raw(text, strlen(text));
  assert_non_null(raw);
  assert_string_equal(json_string_value(dg_json_raw_text(raw)), text);
  json_t *reply = json_pack("{s:s,s:O}", "jsonrpc", "2.0", "result", raw);
  dg_buf_t out;
  dg_buf_init(&out, 1 << 20);
  assert_int_equal(dg_json_write(reply, &out), 0);
  char want[256];
  snprintf(want, sizeof(want), "{\"jsonrpc\":\"2.0\",\"result\":%s}", text);
  assert_string_equal(out.data, want);
  dg_buf_free(&out);
  json_t *forged = json_pack("[{},s]", text);
  assert_null(dg_json_raw_text(forged));
  assert_same_as_jansson(forged);
  json_t *plain = json_string(text);
  assert_null(dg_json_raw_text(plain));
  json_decref(plain);
  json_decref(forged);
  json_decref(reply);
  json_decref(raw);
}

/* A raw value's text kept as a JSON string is written as the string would
 * be, escapes and all, and the raw value itself still as its text. */
static void test_raw_quoted(void **state) {
  (void)state;
  const char text[] = "{\"name\":\"a \\\"quoted\\\" word\",\"tab\":\"\\t\"}";
  json_t *raw = dg_json_raw(text, strlen(text));
  assert_null(dg_json_raw_quoted(raw));
  assert_int_equal(dg_json_raw_keep_quoted(raw, 1 << 20), 0);
  assert_int_equal(dg_json_raw_keep_quoted(raw, 1 << 20), 0); /* kept once */
  assert_int_equal(json_array_size(raw), 3);
  assert_string_equal(json_string_value(dg_json_raw_text(raw)), text);
  const json_t *quoted = dg_json_raw_quoted(raw);
  assert_non_null(quoted);
  json_t *as_string = json_string(text);
  json_t *want = json_pack("{s:o,s:O}", "text", as_string, "sc", raw);
  json_t *got = json_pack("{s:O,s:O}", "text", quoted, "sc", raw);
  dg_buf_t a, b;
  dg_buf_init(&a, 1 << 20);
  dg_buf_init(&b, 1 << 20);
  assert_int_equal(dg_json_write(want, &a), 0);
  assert_int_equal(dg_json_write(got, &b), 0);
  assert_string_equal(b.data, a.data);
  dg_buf_free(&a);
  dg_buf_free(&b);
  /* Too large for its bound: not kept; not a raw value: refused. */
  json_t *other = dg_json_raw(text, strlen(text));
  assert_int_equal(dg_json_raw_keep_quoted(other, 8), DG_E2BIG);
  assert_null(dg_json_raw_quoted(other));
  json_t *plain = json_string(text);
  assert_int_equal(dg_json_raw_keep_quoted(plain, 1 << 20), DG_EINVAL);
  assert_null(dg_json_raw_quoted(plain));
  json_decref(plain);
  json_decref(other);
  json_decref(want);
  json_decref(got);
  json_decref(raw);
}

/* The size hint of a reply counts a tool's answer twice (the text item and
 * the raw structuredContent share it) and stops after 64 values, so a huge
 * array costs no more to measure than a small one. */
static void test_size_hint(void **state) {
  (void)state;
  char text[10001];
  memset(text, 'x', sizeof(text) - 1);
  text[0] = '"';
  text[sizeof(text) - 2] = '"';
  text[sizeof(text) - 1] = '\0';
  json_t *raw = dg_json_raw(text, strlen(text));
  json_t *reply =
      json_pack("{s:s,s:i,s:{s:[{s:s,s:O}],s:O}}", "jsonrpc", "2.0", "id", 1, "result", "content",
                "type", "text", "text", dg_json_raw_text(raw), "structuredContent", raw);
  dg_buf_t out;
  dg_buf_init(&out, 1 << 20);
  assert_int_equal(dg_json_write(reply, &out), 0);
  size_t hint = dg_json_size_hint(reply);
  assert_true(hint >= 2 * strlen(text));
  assert_true(hint <= out.len + 200); /* the escaped quotes left out, a few bytes per value over */
  dg_buf_free(&out);
  json_t *many = json_array();
  for (int i = 0; i < 100000; i++)
    json_array_append_new(many, json_string("0123456789"));
  assert_true(dg_json_size_hint(many) < 64 * 16);
  assert_int_equal(dg_json_size_hint(NULL), 0);
  json_decref(many);
  json_decref(reply);
  json_decref(raw);
}

/* Scalars give the same text whether sent as JSON strings or as numbers and
 * booleans; null and containers have none. */
static void test_scalar_text(void **state) {
  (void)state;
  char buf[64];
  json_t *v[] = {json_string("abc"), json_integer(-12), json_real(0.5), json_true(),
                 json_false(),       json_null(),       json_array(),   json_object()};
  const char *want[] = {"abc", "-12", "0.5", "true", "false", NULL, NULL, NULL};
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++) {
    const char *got = dg_json_scalar_text(v[i], buf, sizeof(buf));
    if (want[i] == NULL)
      assert_null(got);
    else
      assert_string_equal(got, want[i]);
    json_decref(v[i]);
  }
  /* Reals: exact by default, as a person wrote them with 15 digits. */
  json_t *r = json_real(0.1);
  assert_string_equal(dg_json_scalar_text(r, buf, sizeof(buf)), "0.10000000000000001");
  assert_string_equal(dg_json_scalar_text_digits(r, 15, buf, sizeof(buf)), "0.1");
  json_decref(r);
}

static void test_excerpt(void **state) {
  (void)state;
  char out[400];
  json_t *v = json_pack("{s:s,s:f}", "a", "x\ny", "b", 0.1);
  dg_json_excerpt(v, JSON_SORT_KEYS | JSON_REAL_PRECISION(15), out, sizeof(out));
  assert_string_equal(out, "{\"a\":\"x\\ny\",\"b\":0.1}");
  json_decref(v);
  /* 100 characters of two bytes each: cut after 80 characters. */
  char text[201];
  for (size_t i = 0; i < 100; i++)
    memcpy(text + 2 * i, "\xc3\xa9", 2);
  text[200] = '\0';
  v = json_string(text);
  dg_json_excerpt(v, 0, out, sizeof(out));
  assert_int_equal(strlen(out), 1 + 79 * 2 + 3);
  assert_string_equal(out + strlen(out) - 3, "...");
  json_decref(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_scalars),
      cmocka_unit_test(test_decimal_amounts_keep_their_digits),
      cmocka_unit_test(test_every_escape),
      cmocka_unit_test(test_escape_at_every_offset),
      cmocka_unit_test(test_dense_escapes),
      cmocka_unit_test(test_escape_lengths_and_answers),
      cmocka_unit_test(test_string_within_lowered_max),
      cmocka_unit_test(test_string_at_the_limit),
      cmocka_unit_test(test_insertion_order),
      cmocka_unit_test(test_response_like),
      cmocka_unit_test(test_size_hint),
      cmocka_unit_test(test_generated_values),
      cmocka_unit_test(test_limit_leaves_buffer_unchanged),
      cmocka_unit_test(test_depth_limit),
      cmocka_unit_test(test_hundredths_as_jansson),
      cmocka_unit_test(test_raw_values),
      cmocka_unit_test(test_raw_quoted),
      cmocka_unit_test(test_pieces),
      cmocka_unit_test(test_integer_piece),
      cmocka_unit_test(test_scalar_text),
      cmocka_unit_test(test_excerpt),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
