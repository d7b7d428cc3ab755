/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the per-request arena. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/base.h"

static void test_alloc_aligned_and_distinct(void **state) {
  enum { N = 300 };
  unsigned char *ptrs[N];
  size_t sizes[N];
  dg_arena_t *a = dg_arena_new(0);
  assert_non_null(a);
  for (size_t i = 0; i < N; i++) {
    sizes[i] = 1 + (i * 37) % 1500;
    ptrs[i] = dg_arena_alloc(a, sizes[i]);
    assert_non_null(ptrs[i]);
    assert_int_equal((uintptr_t)ptrs[i] % 16, 0);
    memset(ptrs[i], (int)(i & 0xff), sizes[i]);
  }
  /* Had any two allocations overlapped, a later fill would show. */
  for (size_t i = 0; i < N; i++) {
    for (size_t j = 0; j < sizes[i]; j++)
      assert_int_equal(ptrs[i][j], (unsigned char)(i & 0xff));
  }
  dg_arena_destroy(a);
}

static void test_used_counts_rounded_sizes(void **state) {
  dg_arena_t *a = dg_arena_new(1024);
  assert_int_equal(dg_arena_used(a), 0);
  dg_arena_alloc(a, 1);
  assert_int_equal(dg_arena_used(a), 16);
  dg_arena_alloc(a, 17);
  assert_int_equal(dg_arena_used(a), 48);
  dg_arena_alloc(a, 5000); /* a block of its own */
  assert_int_equal(dg_arena_used(a), 48 + 5008);
  dg_arena_destroy(a);
}

static void test_large_then_small_keeps_contents(void **state) {
  dg_arena_t *a = dg_arena_new(256);
  char *small1 = dg_arena_strdup(a, "first");
  char *big = dg_arena_alloc(a, 10000);
  memset(big, 'b', 10000);
  char *small2 = dg_arena_strdup(a, "second");
  assert_string_equal(small1, "first");
  assert_string_equal(small2, "second");
  for (int i = 0; i < 10000; i++)
    assert_int_equal(big[i], 'b');
  dg_arena_destroy(a);
}

static void test_calloc_zeroes_and_overflow(void **state) {
  dg_arena_t *a = dg_arena_new(0);
  unsigned char *p = dg_arena_alloc(a, 64);
  memset(p, 0xaa, 64);
  unsigned *z = dg_arena_calloc(a, 100, sizeof(unsigned));
  for (int i = 0; i < 100; i++)
    assert_int_equal(z[i], 0);
  assert_null(dg_arena_calloc(a, SIZE_MAX / 2, 4));
  dg_arena_destroy(a);
}

static void test_huge_sizes_refused(void **state) {
  dg_arena_t *a = dg_arena_new(0);
  /* Rounding up would wrap. */
  assert_null(dg_arena_alloc(a, SIZE_MAX));
  /* The block header on top would wrap to a tiny allocation. */
  assert_null(dg_arena_alloc(a, SIZE_MAX - 20));
  assert_null(dg_arena_strndup(a, "x", SIZE_MAX));
  /* The arena still works afterwards. */
  assert_string_equal(dg_arena_strdup(a, "ok"), "ok");
  dg_arena_destroy(a);
}

static void test_strings(void **state) {
  dg_arena_t *a = dg_arena_new(0);
  assert_string_equal(dg_arena_strdup(a, ""), "");
  assert_string_equal(dg_arena_strndup(a, "abcdef", 3), "abc");
  assert_string_equal(dg_arena_sprintf(a, "%s-%d-%05.1f", "x", 42, 3.14159), "x-42-003.1");
  char longer[3000];
  memset(longer, 'L', sizeof(longer) - 1);
  longer[sizeof(longer) - 1] = '\0';
  char *copy = dg_arena_sprintf(a, "<%s>", longer);
  assert_int_equal(strlen(copy), sizeof(longer) + 1);
  assert_int_equal(copy[0], '<');
  assert_int_equal(copy[sizeof(longer)], '>');
  dg_arena_destroy(a);
  /* Texts formatted in place fill a block exactly, stay distinct and
   * leave the next allocation aligned; one that does not fit moves on. */
  a = dg_arena_new(256);
  char *texts[40];
  for (int i = 0; i < 40; i++) {
    texts[i] = dg_arena_sprintf(a, "%0*d", 5 + i % 27, i);
    assert_non_null(texts[i]);
    assert_int_equal((uintptr_t)texts[i] % 16, 0);
    unsigned char *after = dg_arena_alloc(a, 1);
    assert_int_equal((uintptr_t)after % 16, 0);
    *after = 0xee;
  }
  for (int i = 0; i < 40; i++) {
    char want[40];
    snprintf(want, sizeof(want), "%0*d", 5 + i % 27, i);
    assert_string_equal(texts[i], want);
  }
  dg_arena_destroy(a);
}

typedef struct order {
  int seen[4];
  int n;
} order_t;

static order_t order;

static void note1(void *data) {
  order.seen[order.n++] = 1;
}
static void note2(void *data) {
  order.seen[order.n++] = 2;
}
static void note3(void *data) {
  order.seen[order.n++] = *(int *)data;
}

static void test_defer_runs_last_first(void **state) {
  static int three = 3;
  memset(&order, 0, sizeof(order));
  dg_arena_t *a = dg_arena_new(0);
  assert_int_equal(dg_arena_defer(a, note1, NULL), 0);
  assert_int_equal(dg_arena_defer(a, note2, NULL), 0);
  assert_int_equal(dg_arena_defer(a, note3, &three), 0);
  assert_int_equal(order.n, 0);
  dg_arena_destroy(a);
  assert_int_equal(order.n, 3);
  assert_int_equal(order.seen[0], 3);
  assert_int_equal(order.seen[1], 2);
  assert_int_equal(order.seen[2], 1);
}

unsigned dg__arena_cached(size_t size);

/* Blocks of the usual sizes come back to the thread's next arenas, a
 * bounded number per size; other sizes go back to malloc. */
static void test_blocks_are_reused_within_a_bound(void **state) {
  enum { DEPTH = (1024 * 1024) / 4096, MANY = DEPTH + 40 };
  unsigned before = dg__arena_cached(4096);
  dg_arena_t *a = dg_arena_new(4096);
  char *first = dg_arena_alloc(a, 100);
  assert_non_null(first);
  dg_arena_destroy(a);
  assert_int_equal(dg__arena_cached(4096), before < DEPTH ? before + 1 : DEPTH);
  a = dg_arena_new(4096);
  char *again = dg_arena_alloc(a, 100);
  assert_ptr_equal(again, first);
  memset(again, 0x5a, 4000); /* the whole block is usable again */
  dg_arena_destroy(a);

  dg_arena_t *arenas[MANY];
  for (size_t i = 0; i < MANY; i++) {
    arenas[i] = dg_arena_new(4096);
    assert_non_null(dg_arena_alloc(arenas[i], 8));
  }
  assert_int_equal(dg__arena_cached(4096), 0);
  for (size_t i = 0; i < MANY; i++)
    dg_arena_destroy(arenas[i]);
  assert_int_equal(dg__arena_cached(4096), DEPTH);

  a = dg_arena_new(3000);
  assert_non_null(dg_arena_alloc(a, 8));
  dg_arena_destroy(a);
  assert_int_equal(dg__arena_cached(3000), 0);
  /* A large request's own block is not a cached size either. */
  a = dg_arena_new(1024);
  assert_non_null(dg_arena_alloc(a, 5000));
  unsigned kept = dg__arena_cached(1024);
  dg_arena_destroy(a);
  assert_int_equal(dg__arena_cached(1024), kept);
}

static void test_destroy_null(void **state) {
  dg_arena_destroy(NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_alloc_aligned_and_distinct),
      cmocka_unit_test(test_used_counts_rounded_sizes),
      cmocka_unit_test(test_large_then_small_keeps_contents),
      cmocka_unit_test(test_calloc_zeroes_and_overflow),
      cmocka_unit_test(test_huge_sizes_refused),
      cmocka_unit_test(test_strings),
      cmocka_unit_test(test_defer_runs_last_first),
      cmocka_unit_test(test_blocks_are_reused_within_a_bound),
      cmocka_unit_test(test_destroy_null),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
