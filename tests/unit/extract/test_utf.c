/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for UTF-8 decoding with replacement, encoding and counting. */
#include "extract_test.h"

#include "extract/internal.h"

static int decode(const char *s, size_t n, uint32_t *cp) {
  return dg_utf8_decode((const unsigned char *)s, n, cp);
}

static void test_decode_valid_sequences(void **state) {
  uint32_t cp = 0;
  assert_int_equal(decode("A", 1, &cp), 1);
  assert_int_equal(cp, 'A');
  assert_int_equal(decode("\xc3\xa9", 2, &cp), 2);
  assert_int_equal(cp, 0xe9);
  assert_int_equal(decode("\xe4\xb8\xad", 3, &cp), 3);
  assert_int_equal(cp, 0x4e2d);
  assert_int_equal(decode("\xf0\x9f\x98\x80", 4, &cp), 4);
  assert_int_equal(cp, 0x1f600);
  assert_int_equal(decode("\xf4\x8f\xbf\xbf", 4, &cp), 4);
  assert_int_equal(cp, 0x10ffff);
}

static void test_decode_reports_incomplete_and_invalid(void **state) {
  uint32_t cp = 0;
  /* Cut short: more bytes may complete it. */
  assert_int_equal(decode("\xe4\xb8", 2, &cp), 0);
  assert_int_equal(decode("\xf0\x9f\x98", 3, &cp), 0);
  /* Stray continuation byte, impossible lead bytes. */
  assert_int_equal(decode("\x80", 1, &cp), -1);
  assert_int_equal(decode("\xc0\xaf", 2, &cp), -1);
  assert_int_equal(decode("\xff", 1, &cp), -1);
  /* Overlong three-byte form, surrogate, past U+10FFFF: the lead alone. */
  assert_int_equal(decode("\xe0\x80\x80", 3, &cp), -1);
  assert_int_equal(decode("\xed\xa0\x80", 3, &cp), -1);
  assert_int_equal(decode("\xf4\x90\x80\x80", 4, &cp), -1);
  /* A valid prefix broken by a non-continuation byte: the maximal subpart. */
  assert_int_equal(decode("\xe4\xb8"
                          "A",
                          3, &cp),
                   -2);
  assert_int_equal(decode("\xf0\x9f\x98"
                          "A",
                          4, &cp),
                   -3);
}

static void test_encode_round_trips_and_replaces(void **state) {
  static const uint32_t values[] = {0x24, 0xa2, 0x20ac, 0x10348, 0x10ffff};
  char out[4];
  for (size_t i = 0; i < DG_ARRAY_SIZE(values); i++) {
    uint32_t back = 0;
    size_t n = dg_utf8_encode(values[i], out);
    assert_int_equal(n, (size_t)(i + 1 < 4 ? i + 1 : 4));
    assert_int_equal(decode(out, n, &back), (int)n);
    assert_int_equal(back, values[i]);
  }
  assert_int_equal(dg_utf8_encode(0xd800, out), 3);
  assert_memory_equal(out, "\xef\xbf\xbd", 3);
  assert_int_equal(dg_utf8_encode(0x110000, out), 3);
  assert_memory_equal(out, "\xef\xbf\xbd", 3);
}

static void test_count_and_advance(void **state) {
  const char *s = "a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80z"; /* a é 中 😀 z */
  size_t len = strlen(s);
  uint64_t taken = 0;
  assert_int_equal(dg__utf8_count(s, len), 5);
  assert_int_equal(dg__utf8_advance(s, len, 0, 2, &taken), 3);
  assert_int_equal(taken, 2);
  assert_int_equal(dg__utf8_advance(s, len, 3, 2, &taken), 10);
  assert_int_equal(taken, 2);
  assert_int_equal(dg__utf8_advance(s, len, 0, 99, &taken), len);
  assert_int_equal(taken, 5);
}

/* A byte at a time, as the counting was first written: the reference the
 * block-at-a-time counting must agree with. */
static size_t naive_advance(const char *s, size_t len, size_t from, uint64_t n, uint64_t *taken) {
  uint64_t count = 0;
  size_t i = from;
  while (i < len && count < n) {
    i++;
    while (i < len && ((unsigned char)s[i] & 0xc0) == 0x80)
      i++;
    count++;
  }
  *taken = count;
  return i;
}

/* Texts of one- to four-byte characters and stray continuation bytes, at
 * every start and for counts that end inside, at and past the end of
 * blocks of eight bytes. */
static void test_counting_agrees_with_a_byte_at_a_time(void **state) {
  static const char *const pieces[] = {"a", "\xc3\xa9", "\xe4\xb8\xad", "\xf0\x9f\x98\x80", "\x80",
                                       " ", "\n"};
  char text[200];
  unsigned seed = 7;
  for (int round = 0; round < 200; round++) {
    size_t len = 0;
    while (len < sizeof(text) - 4) {
      seed = seed * 1103515245u + 12345u;
      const char *p = pieces[(seed >> 16) % DG_ARRAY_SIZE(pieces)];
      memcpy(text + len, p, strlen(p));
      len += strlen(p);
      if ((seed >> 8) % 40 == 0)
        break;
    }
    uint64_t want_n = 0;
    for (size_t i = 0; i < len; i++)
      want_n += ((unsigned char)text[i] & 0xc0) != 0x80;
    assert_int_equal(dg__utf8_count(text, len), want_n);
    for (size_t from = 0; from <= len + 1; from++) {
      for (uint64_t n = 0; n <= 40; n++) {
        uint64_t want = 0, got = 0;
        size_t end = naive_advance(text, len, from, n, &want);
        assert_int_equal(dg__utf8_advance(text, len, from, n, &got), end);
        assert_int_equal(got, want);
      }
    }
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_decode_valid_sequences),
      cmocka_unit_test(test_decode_reports_incomplete_and_invalid),
      cmocka_unit_test(test_encode_round_trips_and_replaces),
      cmocka_unit_test(test_count_and_advance),
      cmocka_unit_test(test_counting_agrees_with_a_byte_at_a_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
