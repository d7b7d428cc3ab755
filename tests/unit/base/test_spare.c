/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for spare blocks: a released block comes back from the next
 * allocation, at most max wait, and a block released with keep false or
 * past the bound is freed (AddressSanitizer and valgrind see no leak). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/base.h"

typedef struct block {
  void *link;
  char payload[64];
} block_t;

static void test_reuse(void **state) {
  (void)state;
  dg_spare_t s;
  dg_spare_init(&s, sizeof(block_t), 2);
  block_t *a = dg_spare_alloc(&s), *b = dg_spare_alloc(&s);
  assert_non_null(a);
  assert_non_null(b);
  dg_spare_release(&s, a, true);
  dg_spare_release(&s, b, true);
  assert_int_equal(s.count, 2);
  /* Last kept, first given back; the whole block is usable again. */
  assert_ptr_equal(dg_spare_alloc(&s), b);
  assert_ptr_equal(dg_spare_alloc(&s), a);
  assert_int_equal(s.count, 0);
  memset(a, 1, sizeof(*a));
  memset(b, 2, sizeof(*b));
  dg_spare_release(&s, a, true);
  dg_spare_release(&s, b, true);
  dg_spare_free_all(&s);
  assert_int_equal(s.count, 0);
  assert_null(s.head);
}

static void test_bounds(void **state) {
  (void)state;
  dg_spare_t s;
  dg_spare_init(&s, sizeof(block_t), 1);
  block_t *a = dg_spare_alloc(&s), *b = dg_spare_alloc(&s), *c = dg_spare_alloc(&s);
  dg_spare_release(&s, a, true);
  dg_spare_release(&s, b, true); /* past max: freed */
  assert_int_equal(s.count, 1);
  dg_spare_release(&s, c, false); /* not kept: freed */
  assert_int_equal(s.count, 1);
  dg_spare_release(&s, NULL, true);
  assert_int_equal(s.count, 1);
  assert_ptr_equal(dg_spare_alloc(&s), a);
  free(a);
  dg_spare_free_all(&s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_reuse),
      cmocka_unit_test(test_bounds),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
