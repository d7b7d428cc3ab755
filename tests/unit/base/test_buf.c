/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the bounded buffer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "datagate/base.h"

static void test_append_and_terminator(void **state) {
  dg_buf_t b;
  dg_buf_init(&b, 1024);
  assert_null(b.data);
  assert_int_equal(dg_buf_append(&b, "abc", 3), 0);
  assert_int_equal(dg_buf_append_str(&b, "def"), 0);
  assert_int_equal(b.len, 6);
  assert_string_equal(b.data, "abcdef");
  assert_int_equal(dg_buf_append(&b, "", 0), 0);
  assert_string_equal(b.data, "abcdef");
  assert_true(b.cap > b.len);
  dg_buf_free(&b);
  assert_null(b.data);
  assert_int_equal(b.len, 0);
  assert_int_equal(b.max, 1024);
}

static void test_limit_is_exact_and_leaves_buffer_unchanged(void **state) {
  dg_buf_t b;
  char big[100];
  memset(big, 'x', sizeof(big));
  dg_buf_init(&b, 100);
  assert_int_equal(dg_buf_append(&b, big, 60), 0);
  assert_int_equal(dg_buf_append(&b, big, 41), DG_E2BIG);
  assert_int_equal(b.len, 60);
  assert_int_equal(dg_buf_append(&b, big, 40), 0);
  assert_int_equal(b.len, 100);
  assert_int_equal(dg_buf_append(&b, "y", 1), DG_E2BIG);
  assert_int_equal(dg_buf_appendf(&b, "%d", 1), DG_E2BIG);
  assert_int_equal(b.len, 100);
  /* Growth never goes past max plus the terminator. */
  assert_true(b.cap <= 101);
  assert_int_equal(b.data[100], '\0');
  dg_buf_free(&b);
}

static void test_reserve(void **state) {
  dg_buf_t b;
  dg_buf_init(&b, 4096);
  assert_int_equal(dg_buf_reserve(&b, 1000), 0);
  assert_true(b.cap >= 1001);
  char *before = b.data;
  for (int i = 0; i < 1000; i++)
    assert_int_equal(dg_buf_append(&b, "z", 1), 0);
  assert_ptr_equal(b.data, before);
  assert_int_equal(dg_buf_reserve(&b, 3097), DG_E2BIG);
  assert_int_equal(dg_buf_reserve(&b, 3096), 0);
  assert_int_equal(dg_buf_reserve(&b, SIZE_MAX), DG_E2BIG);
  dg_buf_free(&b);
}

/* A buffer has room for n more bytes when they and the terminator fit in
 * what it holds and within its maximum; dg_buf_room grows it only then. */
static void test_room(void **state) {
  (void)state;
  dg_buf_t b;
  dg_buf_init(&b, 300);
  assert_false(dg_buf_has_room(&b, 0)); /* nothing held yet */
  assert_int_equal(dg_buf_room(&b, 10), 0);
  size_t cap = b.cap;
  assert_true(dg_buf_has_room(&b, cap - 1));
  assert_false(dg_buf_has_room(&b, cap)); /* no room for the terminator */
  assert_int_equal(dg_buf_append(&b, "abcd", 4), 0);
  assert_true(dg_buf_has_room(&b, cap - 5));
  assert_false(dg_buf_has_room(&b, cap - 4));
  assert_false(dg_buf_has_room(&b, 297)); /* past the maximum */
  assert_int_equal(dg_buf_room(&b, 296), 0);
  assert_true(b.cap > cap);
  assert_int_equal(dg_buf_room(&b, 297), DG_E2BIG);
  assert_int_equal(b.len, 4);
  assert_string_equal(b.data, "abcd");
  dg_buf_free(&b);
}

static void test_appendf(void **state) {
  dg_buf_t b;
  dg_buf_init(&b, 64);
  assert_int_equal(dg_buf_appendf(&b, "%s=%d", "a", 1), 0);
  assert_int_equal(dg_buf_appendf(&b, ",%s=%.2f", "b", 2.5), 0);
  assert_string_equal(b.data, "a=1,b=2.50");
  assert_int_equal(dg_buf_appendf(&b, "%s", ""), 0);
  assert_int_equal(b.len, 10);
  dg_buf_free(&b);
  /* Text over the maximum leaves the buffer as it was, although part of it
   * fitted in the room already allocated. */
  dg_buf_init(&b, 8);
  assert_int_equal(dg_buf_appendf(&b, "%s", "abcdef"), 0);
  assert_int_equal(dg_buf_appendf(&b, "%s", "ghi"), DG_E2BIG);
  assert_string_equal(b.data, "abcdef");
  assert_int_equal(b.len, 6);
  assert_int_equal(dg_buf_appendf(&b, "%s", "gh"), 0);
  assert_string_equal(b.data, "abcdefgh");
  dg_buf_free(&b);
  /* Text longer than the room grows the buffer and arrives whole. */
  char line[600];
  memset(line, 'z', sizeof(line) - 1);
  line[sizeof(line) - 1] = '\0';
  dg_buf_init(&b, 4096);
  assert_int_equal(dg_buf_appendf(&b, "<%d>", 7), 0);
  assert_true(b.cap < sizeof(line));
  assert_int_equal(dg_buf_appendf(&b, "%s|%s", line, "end"), 0);
  assert_int_equal(b.len, 3 + 599 + 4);
  assert_int_equal(strncmp(b.data, "<7>zzz", 6), 0);
  assert_string_equal(b.data + 3 + 599, "|end");
  dg_buf_free(&b);
}

static void test_consume_and_reset(void **state) {
  dg_buf_t b;
  dg_buf_init(&b, 64);
  dg_buf_append_str(&b, "hello world");
  dg_buf_consume(&b, 6);
  assert_string_equal(b.data, "world");
  assert_int_equal(b.len, 5);
  dg_buf_consume(&b, 0);
  assert_string_equal(b.data, "world");
  dg_buf_consume(&b, 5);
  assert_int_equal(b.len, 0);
  assert_string_equal(b.data, "");
  dg_buf_append_str(&b, "again");
  size_t cap = b.cap;
  dg_buf_reset(&b);
  assert_int_equal(b.len, 0);
  assert_string_equal(b.data, "");
  assert_int_equal(b.cap, cap);
  dg_buf_reset(&b);
  dg_buf_free(&b);
  /* Resetting a buffer that never allocated is harmless. */
  dg_buf_reset(&b);
  assert_null(b.data);
}

static void test_steal(void **state) {
  dg_buf_t b;
  size_t len = 99;
  dg_buf_init(&b, 64);
  dg_buf_append_str(&b, "mine");
  char *p = dg_buf_steal(&b, &len);
  assert_string_equal(p, "mine");
  assert_int_equal(len, 4);
  assert_null(b.data);
  assert_int_equal(b.len, 0);
  free(p);
  /* Stealing from an empty buffer still hands over a string. */
  p = dg_buf_steal(&b, NULL);
  assert_non_null(p);
  assert_string_equal(p, "");
  free(p);
}

static void test_zero_max(void **state) {
  dg_buf_t b;
  dg_buf_init(&b, 0);
  assert_int_equal(dg_buf_append(&b, "a", 1), DG_E2BIG);
  assert_int_equal(dg_buf_append(&b, "", 0), 0);
  assert_string_equal(b.data, "");
  dg_buf_free(&b);
}

static void test_unbounded_max(void **state) {
  /* SIZE_MAX as the maximum must not wrap the capacity arithmetic. */
  dg_buf_t b;
  dg_buf_init(&b, SIZE_MAX);
  for (int i = 0; i < 100; i++)
    assert_int_equal(dg_buf_append_str(&b, "0123456789"), 0);
  assert_int_equal(b.len, 1000);
  assert_true(b.cap > 1000);
  assert_int_equal(b.data[999], '9');
  dg_buf_free(&b);
}

/* A whole file is appended; a missing one and one past the maximum say so. */
static void test_read_file(void **state) {
  (void)state;
  char path[] = "/tmp/dg_buf_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  char text[40000];
  for (size_t i = 0; i < sizeof(text); i++)
    text[i] = (char)('a' + i % 26);
  assert_int_equal(write(fd, text, sizeof(text)), (ssize_t)sizeof(text));
  close(fd);
  dg_buf_t b;
  dg_buf_init(&b, sizeof(text));
  assert_int_equal(dg_buf_append_str(&b, ">"), 0);
  assert_int_equal(dg_buf_read_file(&b, path), DG_E2BIG);
  dg_buf_free(&b);
  dg_buf_init(&b, sizeof(text) + 1);
  assert_int_equal(dg_buf_append_str(&b, ">"), 0);
  assert_int_equal(dg_buf_read_file(&b, path), 0);
  assert_int_equal(b.len, sizeof(text) + 1);
  assert_memory_equal(b.data + 1, text, sizeof(text));
  dg_buf_free(&b);
  unlink(path);
  dg_buf_init(&b, 16);
  assert_int_equal(dg_buf_read_file(&b, path), DG_ENOENT);
  assert_int_equal(b.len, 0);
  dg_buf_free(&b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_append_and_terminator),
      cmocka_unit_test(test_limit_is_exact_and_leaves_buffer_unchanged),
      cmocka_unit_test(test_reserve),
      cmocka_unit_test(test_room),
      cmocka_unit_test(test_appendf),
      cmocka_unit_test(test_consume_and_reset),
      cmocka_unit_test(test_steal),
      cmocka_unit_test(test_zero_max),
      cmocka_unit_test(test_unbounded_max),
      cmocka_unit_test(test_read_file),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
