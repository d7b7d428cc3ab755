/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for id_index.c: the hash index that matches a request's ids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "store/internal.h"

#define COUNT 100

/* A hundred ids that differ only in their last characters, so that the
 * hash must use the whole id; each is found at its own position. */
static void test_find_each(void **state) {
  dg_arena_t *arena = dg_arena_new(0);
  char text[COUNT][DG_UUID_LEN + 1];
  const char *ids[COUNT];
  dg__id_index_t ix;
  assert_int_equal(dg__id_index_init(&ix, arena, ids, COUNT), 0);
  for (size_t i = 0; i < COUNT; i++) {
    snprintf(text[i], sizeof(text[i]), "7c08b797-fac4-5249-874c-557b0f45%04zu", i);
    ids[i] = text[i];
    assert_int_equal(dg__id_index_add(&ix, i), i);
  }
  for (size_t i = 0; i < COUNT; i++) {
    char key[DG_UUID_LEN + 1];
    memcpy(key, text[i], sizeof(key)); /* equal text, another pointer */
    assert_int_equal(dg__id_index_find(&ix, key), i);
  }
  assert_int_equal(dg__id_index_find(&ix, "7c08b797-fac4-5249-874c-557b0f459999"), SIZE_MAX);
  assert_int_equal(dg__id_index_find(&ix, ""), SIZE_MAX);
  dg_arena_destroy(arena);
}

/* Adding an id equal to one indexed before answers the earlier position
 * and leaves the index as it was. */
static void test_add_repeat(void **state) {
  dg_arena_t *arena = dg_arena_new(0);
  const char *ids[4] = {"a", "bb", "a", NULL};
  dg__id_index_t ix;
  assert_int_equal(dg__id_index_init(&ix, arena, ids, 3), 0);
  assert_int_equal(dg__id_index_add(&ix, 0), 0);
  assert_int_equal(dg__id_index_add(&ix, 1), 1);
  assert_int_equal(dg__id_index_add(&ix, 2), 0);
  ids[2] = "ccc"; /* the slot of the repeat is reused */
  assert_int_equal(dg__id_index_add(&ix, 2), 2);
  assert_int_equal(dg__id_index_find(&ix, "a"), 0);
  assert_int_equal(dg__id_index_find(&ix, "bb"), 1);
  assert_int_equal(dg__id_index_find(&ix, "ccc"), 2);
  assert_int_equal(dg__id_index_find(&ix, "b"), SIZE_MAX);
  dg_arena_destroy(arena);
}

/* An index for no ids still answers "not found". */
static void test_empty(void **state) {
  dg_arena_t *arena = dg_arena_new(0);
  dg__id_index_t ix;
  assert_int_equal(dg__id_index_init(&ix, arena, NULL, 0), 0);
  assert_int_equal(dg__id_index_find(&ix, "x"), SIZE_MAX);
  dg_arena_destroy(arena);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_find_each),
      cmocka_unit_test(test_add_repeat),
      cmocka_unit_test(test_empty),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
