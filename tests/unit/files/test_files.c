/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for get_file_text's process-wide state: the extraction slots
 * (taken at once up to the limit, then a bounded FIFO queue, then refused),
 * waiters that leave the queue, the cache switched off by a zero budget,
 * and closing while slots are held (freed when the last one returns; a
 * leak fails the test under the sanitizers). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/files.h"

typedef struct waiter {
  dg_files_slot_t slot; /* first, so the slot is the waiter */
  int started;
  int order; /* when it was started, 1-based */
} waiter_t;

static int starts;

static void on_start(dg_files_slot_t *slot) {
  waiter_t *w = (waiter_t *)slot;
  w->started++;
  w->order = ++starts;
}

static dg_files_t *files_with_cache(size_t cache_bytes) {
  dg_catalog_t cat;
  memset(&cat, 0, sizeof(cat));
  cat.files.cache_bytes = cache_bytes;
  cat.files.cache_entries = 4;
  cat.files.cache_ttl_ms = 1000;
  dg_files_t *f = dg_files_new(&cat);
  assert_non_null(f);
  return f;
}

static void test_slots_queue_and_refuse(void **state) {
  dg_files_t *f = files_with_cache(1 << 20);
  waiter_t w[5] = {0};
  starts = 0;
  for (int i = 0; i < 5; i++)
    w[i].slot.start = on_start;
  assert_int_equal(dg_files_acquire(f, &w[0].slot, 2, 2), 0);
  assert_int_equal(dg_files_acquire(f, &w[1].slot, 2, 2), 0);
  assert_int_equal(dg_files_acquire(f, &w[2].slot, 2, 2), 1);
  assert_int_equal(dg_files_acquire(f, &w[3].slot, 2, 2), 1);
  assert_int_equal(dg_files_acquire(f, &w[4].slot, 2, 2), DG_EBUSY);
  assert_int_equal(starts, 0); /* granted at once means not started through the callback */
  /* A released slot goes to the oldest waiter. */
  dg_files_release(f);
  assert_int_equal(w[2].started, 1);
  assert_int_equal(w[3].started, 0);
  dg_files_release(f);
  assert_int_equal(w[3].started, 1);
  assert_int_equal(w[3].order, 2);
  /* No one waits: a slot taken now is granted at once. */
  dg_files_release(f);
  assert_int_equal(dg_files_acquire(f, &w[4].slot, 2, 2), 0);
  dg_files_release(f);
  dg_files_release(f);
  assert_non_null(dg_files_cache(f));
  dg_files_close(f);
}

static void test_a_waiter_leaves_the_queue(void **state) {
  dg_files_t *f = files_with_cache(0);
  assert_null(dg_files_cache(f));
  waiter_t w[3] = {0};
  starts = 0;
  for (int i = 0; i < 3; i++)
    w[i].slot.start = on_start;
  assert_int_equal(dg_files_acquire(f, &w[0].slot, 1, 4), 0);
  assert_int_equal(dg_files_acquire(f, &w[1].slot, 1, 4), 1);
  assert_int_equal(dg_files_acquire(f, &w[2].slot, 1, 4), 1);
  dg_files_forget(f, &w[1].slot);
  assert_false(w[1].slot.queued);
  dg_files_forget(f, &w[1].slot); /* twice is harmless */
  dg_files_release(f);
  assert_int_equal(w[1].started, 0);
  assert_int_equal(w[2].started, 1);
  dg_files_release(f);
  dg_files_close(f);
}

static void test_close_waits_for_the_slots(void **state) {
  dg_files_t *f = files_with_cache(1 << 20);
  waiter_t w[2] = {0};
  w[0].slot.start = w[1].slot.start = on_start;
  assert_int_equal(dg_files_acquire(f, &w[0].slot, 1, 4), 0);
  assert_int_equal(dg_files_acquire(f, &w[1].slot, 1, 4), 1);
  dg_files_close(f);
  /* Closing: no new slots, and the waiter is not started. */
  waiter_t late = {.slot.start = on_start};
  assert_int_equal(dg_files_acquire(f, &late.slot, 1, 4), DG_ECLOSED);
  dg_files_release(f);
  assert_int_equal(w[1].started, 0);
  dg_files_forget(f, &w[1].slot); /* the last one: freed here */
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slots_queue_and_refuse),
      cmocka_unit_test(test_a_waiter_leaves_the_queue),
      cmocka_unit_test(test_close_waits_for_the_slots),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
