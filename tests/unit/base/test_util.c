/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for GUIDs, clocks, hashing and string helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/base.h"

static void test_uuid_v4_form(void **state) {
  char a[DG_UUID_LEN + 1], b[DG_UUID_LEN + 1];
  for (int round = 0; round < 200; round++) {
    dg_uuid_v4(a);
    assert_int_equal(strlen(a), 36);
    assert_true(dg_uuid_valid(a));
    for (int i = 0; i < 36; i++) {
      if (i == 8 || i == 13 || i == 18 || i == 23)
        assert_int_equal(a[i], '-');
      else
        assert_non_null(strchr("0123456789abcdef", a[i]));
    }
    assert_int_equal(a[14], '4');           /* version 4 */
    assert_non_null(strchr("89ab", a[19])); /* RFC 4122 variant */
  }
  dg_uuid_v4(b);
  assert_string_not_equal(a, b);
}

/* Every byte at every position of a valid GUID: accepted exactly where a
 * dash is a dash and a hexadecimal digit (either case) is a digit. */
static void test_uuid_valid_every_byte(void **state) {
  const char *base = "3f2504e0-4f89-41d3-9a0c-0305e82c3301";
  for (size_t at = 0; at < DG_UUID_LEN; at++) {
    bool dash = at == 8 || at == 13 || at == 18 || at == 23;
    for (int b = 1; b < 256; b++) {
      char id[DG_UUID_LEN + 1];
      memcpy(id, base, sizeof(id));
      id[at] = (char)b;
      bool hex = (b >= '0' && b <= '9') || (b >= 'a' && b <= 'f') || (b >= 'A' && b <= 'F');
      bool want = dash ? b == '-' : hex;
      if (dg_uuid_valid(id) != want)
        fail_msg("byte 0x%02x at %zu: want %d", b, at, want);
    }
  }
}

static void test_uuid_valid(void **state) {
  assert_true(dg_uuid_valid("3f2504e0-4f89-41d3-9a0c-0305e82c3301"));
  assert_true(dg_uuid_valid("3F2504E0-4F89-41D3-9A0C-0305E82C3301"));
  assert_true(dg_uuid_valid("00000000-0000-0000-0000-000000000000"));
  assert_false(dg_uuid_valid(NULL));
  assert_false(dg_uuid_valid(""));
  assert_false(dg_uuid_valid("3f2504e0-4f89-41d3-9a0c-0305e82c330"));
  assert_false(dg_uuid_valid("3f2504e0-4f89-41d3-9a0c-0305e82c33011"));
  assert_false(dg_uuid_valid("3f2504e04f89-41d3-9a0c-0305e82c3301-"));
  assert_false(dg_uuid_valid("3f2504e0-4f89-41d3-9a0c-0305e82c330g"));
  assert_false(dg_uuid_valid("{3f2504e0-4f89-41d3-9a0c-0305e82c33}"));
  assert_false(dg_uuid_valid("3f2504e0_4f89_41d3_9a0c_0305e82c3301"));
  /* A dash where a digit belongs, a digit where a dash belongs, bytes
   * above 0x7f and a NUL inside. */
  assert_false(dg_uuid_valid("3f2504e0-4f89-41d3-9a0c-0305e82c3-01"));
  assert_false(dg_uuid_valid("3f2504e0-4f89-41d3-9a0c00305e82c3301"));
  assert_false(dg_uuid_valid("3f2504e0-4f89-41d3-9a0c-0305e82c33\xc3\xa9"));
  assert_false(dg_uuid_valid("\xff\xff\xff\xff\xff\xff\xff\xff-4f89-41d3-9a0c-0305e82c3301"));
  const char with_nul[] = "3f2504e0-4f89-41d3\0009a0c-0305e82c3301";
  assert_false(dg_uuid_valid(with_nul));
}

static void test_decimal(void **state) {
  const struct {
    uint64_t v;
    const char *text;
  } cases[] = {{0, "0"},
               {7, "7"},
               {10, "10"},
               {1234567890, "1234567890"},
               {UINT64_MAX, "18446744073709551615"}};
  for (size_t i = 0; i < DG_ARRAY_SIZE(cases); i++) {
    char out[DG_DECIMAL_MAX + 1];
    size_t n = dg_decimal(out, cases[i].v);
    out[n] = '\0';
    assert_string_equal(out, cases[i].text);
  }
  /* Every value to 100,000, and each side of every power of ten. */
  char out[DG_DECIMAL_MAX + 1], want[32];
  for (uint64_t v = 0; v <= 100000; v++) {
    out[dg_decimal(out, v)] = '\0';
    snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
    assert_string_equal(out, want);
  }
  for (uint64_t p = 10; p != 0 && p <= UINT64_MAX / 10; p *= 10) {
    for (uint64_t v = p - 1; v <= p + 1; v++) {
      out[dg_decimal(out, v)] = '\0';
      snprintf(want, sizeof(want), "%llu", (unsigned long long)v);
      assert_string_equal(out, want);
    }
  }
}

/* Every byte counts, the length counts, nothing past n is read (ASan
 * watches the exact-size copies), and a seed chains one hash into the next. */
static void test_hash_bytes(void **state) {
  const char text[] = "SELECT t0.\"Name\" FROM \"Orders\" AS t0 WHERE t0.id IN (?, ?)";
  uint64_t seen[sizeof(text)];
  for (size_t n = 0; n < sizeof(text); n++) {
    char *copy = malloc(n > 0 ? n : 1);
    assert_non_null(copy);
    memcpy(copy, text, n);
    seen[n] = dg_hash_bytes(copy, n, 0);
    assert_true(seen[n] == dg_hash_bytes(text, n, 0));
    for (size_t m = 0; m < n; m++)
      assert_true(seen[m] != seen[n]); /* each prefix differs */
    for (size_t i = 0; i < n; i++) {   /* and so does each changed byte */
      copy[i] ^= 1;
      assert_true(dg_hash_bytes(copy, n, 0) != seen[n]);
      copy[i] ^= 1;
    }
    free(copy);
  }
  uint64_t ab = dg_hash_bytes("b", 1, dg_hash_bytes("a", 1, 0));
  assert_true(ab != dg_hash_bytes("a", 1, dg_hash_bytes("b", 1, 0)));
  assert_true(dg_hash_bytes("", 0, 1) != dg_hash_bytes("", 0, 2));
}

static void test_hex_value(void **state) {
  const char digits[] = "0123456789abcdefABCDEF";
  for (size_t i = 0; i < sizeof(digits) - 1; i++)
    assert_int_equal(dg_hex_value((unsigned char)digits[i]), i < 16 ? (int)i : (int)i - 6);
  assert_int_equal(dg_hex_value('g'), -1);
  assert_int_equal(dg_hex_value('/'), -1);
  assert_int_equal(dg_hex_value(':'), -1);
  assert_int_equal(dg_hex_value(0xe9), -1);
}

static void test_camel_first(void **state) {
  dg_arena_t *a = dg_arena_new(0);
  assert_string_equal(dg_camel_first(a, "OrderNumber"), "orderNumber");
  assert_string_equal(dg_camel_first(a, "warehouseId"), "warehouseId");
  assert_string_equal(dg_camel_first(a, "ID"), "iD");
  assert_string_equal(dg_camel_first(a, "X"), "x");
  assert_string_equal(dg_camel_first(a, ""), "");
  assert_string_equal(dg_camel_first(a, "_Id"), "_Id");
  const char *src = "Amount";
  char *copy = dg_camel_first(a, src);
  assert_ptr_not_equal(copy, src);
  assert_string_equal(src, "Amount");
  dg_arena_destroy(a);
}

static void test_strlcpy(void **state) {
  char dst[8];
  assert_true(dg_strlcpy(dst, "abc", sizeof(dst)));
  assert_string_equal(dst, "abc");
  assert_true(dg_strlcpy(dst, "1234567", sizeof(dst)));
  assert_string_equal(dst, "1234567");
  memset(dst, 'z', sizeof(dst));
  assert_false(dg_strlcpy(dst, "12345678", sizeof(dst)));
  assert_string_equal(dst, "1234567");
  assert_false(dg_strlcpy(dst, "a much longer string", sizeof(dst)));
  assert_int_equal(dst[7], '\0');
  dst[0] = 'q';
  assert_false(dg_strlcpy(dst, "x", 0));
  assert_int_equal(dst[0], 'q');
  assert_true(dg_strlcpy(dst, "", 1));
  assert_string_equal(dst, "");
}

static void test_strieq_n(void **state) {
  assert_true(dg_strieq_n("Upgrade", 7, "upgrade"));
  assert_true(dg_strieq_n("WEBSOCKET!", 9, "websocket"));
  assert_false(dg_strieq_n("Upgrade", 6, "upgrade"));
  assert_false(dg_strieq_n("Upgrade", 7, "upgradex"));
  assert_false(dg_strieq_n("Upgrade", 7, "upgradx"));
  dg_authority_t au;
  assert_true(dg_authority_parse("localhost:8080", 14, false, &au));
  assert_int_equal(au.host_len, 9);
  assert_int_equal(au.port_len, 4);
  assert_true(dg_authority_parse("[::1]:80", 8, false, &au));
  assert_int_equal(au.host_len, 3);
  assert_memory_equal(au.host, "::1", 3);
  assert_true(dg_authority_valid("localhost:*", true));
  assert_false(dg_authority_valid("localhost:*", false));
  const char *bad[] = {"", ":80", "u@h", "h/p", "h p", "h:8o", "h:123456", "[::1", "[zz]", "h?q"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++)
    assert_false(dg_authority_valid(bad[i], true));
  assert_true(dg_strieq_n("", 0, ""));
}

static void expect_int(const char *s, int64_t min, int64_t max, bool ok, int64_t want) {
  int64_t out = -12345;
  bool got = dg_parse_int64(s, min, max, &out);
  if (got != ok)
    fail_msg("dg_parse_int64(\"%s\") returned %d", s ? s : "(null)", got);
  if (ok)
    assert_int_equal(out, want);
  else
    assert_int_equal(out, -12345);
}

static void test_parse_int64(void **state) {
  expect_int("0", 0, 10, true, 0);
  expect_int("10", 0, 10, true, 10);
  expect_int("-5", -10, 10, true, -5);
  expect_int("9223372036854775807", INT64_MIN, INT64_MAX, true, INT64_MAX);
  expect_int("-9223372036854775808", INT64_MIN, INT64_MAX, true, INT64_MIN);
  expect_int("9223372036854775808", INT64_MIN, INT64_MAX, false, 0);
  expect_int("-9223372036854775809", INT64_MIN, INT64_MAX, false, 0);
  expect_int("11", 0, 10, false, 0);
  expect_int("-1", 0, 10, false, 0);
  expect_int("", 0, 10, false, 0);
  expect_int(NULL, 0, 10, false, 0);
  expect_int(" 1", 0, 10, false, 0);
  expect_int("1 ", 0, 10, false, 0);
  expect_int("1x", 0, 10, false, 0);
  expect_int("0x10", 0, 100, false, 0);
  expect_int("-", 0, 10, false, 0);
  expect_int("1.0", 0, 10, false, 0);
  expect_int("007", 0, 10, true, 7);
}

static void hex(const unsigned char *d, size_t n, char *out) {
  for (size_t i = 0; i < n; i++)
    snprintf(out + 2 * i, 3, "%02x", d[i]);
}

static void test_sha256(void **state) {
  unsigned char d[32];
  char h[65];
  dg_sha256("abc", 3, d);
  hex(d, 32, h);
  assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  dg_sha256("", 0, d);
  hex(d, 32, h);
  assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  dg_sha256(two, strlen(two), d);
  hex(d, 32, h);
  assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

static void test_ct_equal(void **state) {
  assert_true(dg_ct_equal("secret-token", "secret-token", 12));
  assert_false(dg_ct_equal("secret-token", "secret-tokeN", 12));
  assert_false(dg_ct_equal("Xecret-token", "secret-token", 12));
  assert_true(dg_ct_equal("a", "b", 0));
  unsigned char x[64] = {0}, y[64] = {0};
  y[63] = 0x80;
  assert_false(dg_ct_equal(x, y, 64));
  assert_true(dg_ct_equal(x, y, 63));
}

static void test_random_bytes(void **state) {
  unsigned char a[32] = {0}, b[32] = {0};
  assert_int_equal(dg_random_bytes(a, sizeof(a)), 0);
  assert_int_equal(dg_random_bytes(b, sizeof(b)), 0);
  assert_memory_not_equal(a, b, sizeof(a));
  assert_int_equal(dg_random_bytes(a, 0), 0);
}

static void test_clocks(void **state) {
  uint64_t ns1 = dg_now_ns(), ms1 = dg_now_ms();
  uint64_t ns2 = dg_now_ns(), ms2 = dg_now_ms();
  assert_true(ns2 >= ns1);
  assert_true(ms2 >= ms1);
  assert_true(ms1 <= ns2 / 1000000 + 1);
  char ts[32];
  dg_time_iso8601(ts, sizeof(ts));
  int y, mo, d, h, mi, s, frac;
  char z = 0;
  assert_int_equal(sscanf(ts, "%4d-%2d-%2dT%2d:%2d:%2d.%3d%c", &y, &mo, &d, &h, &mi, &s, &frac, &z),
                   8);
  assert_int_equal(z, 'Z');
  assert_int_equal(strlen(ts), 24);
  assert_true(y >= 2024 && mo >= 1 && mo <= 12 && d >= 1 && d <= 31);
}

static void test_array_grow(void **state) {
  (void)state;
  size_t cap = 0;
  int *items = dg_array_grow(NULL, &cap, sizeof(*items), 4, 16);
  assert_non_null(items);
  assert_int_equal(cap, 4);
  items[3] = 7;
  int *grown = dg_array_grow(items, &cap, sizeof(*items), 4, 16);
  assert_non_null(grown);
  assert_int_equal(cap, 8);
  assert_int_equal(grown[3], 7);
  items = dg_array_grow(grown, &cap, sizeof(*items), 4, 16);
  assert_int_equal(cap, 16);
  /* Past max: refused, the array and its capacity left as they are. */
  assert_null(dg_array_grow(items, &cap, sizeof(*items), 4, 16));
  assert_int_equal(cap, 16);
  free(items);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_uuid_v4_form),
      cmocka_unit_test(test_uuid_valid),
      cmocka_unit_test(test_uuid_valid_every_byte),
      cmocka_unit_test(test_decimal),
      cmocka_unit_test(test_hash_bytes),
      cmocka_unit_test(test_hex_value),
      cmocka_unit_test(test_camel_first),
      cmocka_unit_test(test_strlcpy),
      cmocka_unit_test(test_strieq_n),
      cmocka_unit_test(test_parse_int64),
      cmocka_unit_test(test_sha256),
      cmocka_unit_test(test_ct_equal),
      cmocka_unit_test(test_random_bytes),
      cmocka_unit_test(test_clocks),
      cmocka_unit_test(test_array_grow),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
