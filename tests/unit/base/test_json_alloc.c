/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for jansson's block cache: blocks of the small sizes come back
 * to the thread's next requests of their size, a bounded number of them;
 * every block stays an ordinary malloc block. */
#include <malloc.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/base.h"

void *dg__json_block_alloc(size_t n);
void dg__json_block_free(void *p);
unsigned dg__json_blocks_kept(size_t usable);

enum { LIST_BYTES = 256 * 1024 };

static void test_small_blocks_are_reused(void **state) {
  static const size_t sizes[] = {1, 24, 25, 40, 41, 100, 264};
  for (size_t i = 0; i < DG_ARRAY_SIZE(sizes); i++) {
    char *p = dg__json_block_alloc(sizes[i]);
    assert_non_null(p);
    size_t usable = malloc_usable_size(p);
    assert_true(usable >= sizes[i]);
    memset(p, 0x7e, usable);
    unsigned kept = dg__json_blocks_kept(usable);
    dg__json_block_free(p);
    assert_int_equal(dg__json_blocks_kept(usable), kept + 1);
    char *again = dg__json_block_alloc(sizes[i]);
    assert_ptr_equal(again, p);
    assert_int_equal(dg__json_blocks_kept(usable), kept);
    dg__json_block_free(again);
  }
}

static void test_large_blocks_go_back_to_malloc(void **state) {
  char *p = dg__json_block_alloc(4000);
  assert_non_null(p);
  memset(p, 1, 4000);
  size_t usable = malloc_usable_size(p);
  dg__json_block_free(p);
  assert_int_equal(dg__json_blocks_kept(usable), 0);
  dg__json_block_free(NULL);
}

static void test_kept_blocks_are_bounded(void **state) {
  enum { DEPTH = LIST_BYTES / 56, MANY = DEPTH + 40 };
  void **blocks = calloc(MANY, sizeof(*blocks));
  assert_non_null(blocks);
  for (size_t i = 0; i < MANY; i++)
    blocks[i] = dg__json_block_alloc(56);
  size_t usable = malloc_usable_size(blocks[0]);
  for (size_t i = 0; i < MANY; i++)
    dg__json_block_free(blocks[i]);
  assert_int_equal(dg__json_blocks_kept(usable), DEPTH);
  free(blocks);
}

/* Blocks from plain malloc, and blocks another thread made, are kept by
 * the thread that frees them. */
static void *alloc_in_thread(void *arg) {
  return dg__json_block_alloc(72);
}

static void test_foreign_blocks_are_kept(void **state) {
  pthread_t t;
  void *theirs = NULL;
  assert_int_equal(pthread_create(&t, NULL, alloc_in_thread, NULL), 0);
  assert_int_equal(pthread_join(t, &theirs), 0);
  assert_non_null(theirs);
  size_t usable = malloc_usable_size(theirs);
  unsigned kept = dg__json_blocks_kept(usable);
  dg__json_block_free(theirs);
  assert_int_equal(dg__json_blocks_kept(usable), kept + 1);
  assert_ptr_equal(dg__json_block_alloc(72), theirs);
  free(theirs); /* an ordinary malloc block */
}

/* jansson with the cache installed: values round-trip, and json_dumps text
 * is released with free(). */
static void test_jansson_through_the_cache(void **state) {
  dg_json_use_block_cache();
  for (int round = 0; round < 50; round++) {
    json_error_t err;
    json_t *v =
        json_loads("{\"a\":[1,2.5,\"x\",{\"b\":null}],\"c\":\"text with some length\"}", 0, &err);
    assert_non_null(v);
    json_object_set_new(v, "round", json_integer(round));
    char *text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
    assert_non_null(text);
    char want[160];
    snprintf(want, sizeof(want),
             "{\"a\":[1,2.5,\"x\",{\"b\":null}],\"c\":\"text with some length\",\"round\":%d}",
             round);
    assert_string_equal(text, want);
    free(text);
    json_decref(v);
  }
  json_set_alloc_funcs(malloc, free);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_small_blocks_are_reused),
      cmocka_unit_test(test_large_blocks_go_back_to_malloc),
      cmocka_unit_test(test_kept_blocks_are_bounded),
      cmocka_unit_test(test_foreign_blocks_are_kept),
      cmocka_unit_test(test_jansson_through_the_cache),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
