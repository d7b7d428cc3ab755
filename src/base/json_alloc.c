/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* jansson's memory from per-thread caches of small blocks. A tool call
 * parses and builds a few hundred small JSON values (objects, their hash
 * tables, keys, strings), and glibc keeps only seven freed blocks per size
 * for a thread: past that, each malloc and free of a call takes the
 * allocator's slower paths. Here a thread keeps up to LIST_BYTES of blocks
 * of each small size for its next values: a loop turn may end a hundred
 * calls at once and start as many.
 *
 * A block's size class is read back with malloc_usable_size, not from a
 * header: every block stays an ordinary malloc block, so whatever jansson
 * hands out (json_dumps text) may still be released with free(), values
 * made before the cache was installed are freed correctly, and any thread
 * may free a block another made. Under AddressSanitizer a kept block is
 * poisoned, so that a use after free is still caught. */
#include <jansson.h>
#include <malloc.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>

#include "datagate/base.h"

#define CLASSES 16              /* usable sizes 24, 40, 56, ..., 264 bytes */
#define LIST_BYTES (256 * 1024) /* kept per class and thread */

/* Kept blocks of one class, a stack of pointers: popping one reads only
 * this array. A list threaded through the blocks themselves made every
 * allocation wait for a cache miss on the loop thread, whose kept blocks
 * go cold while the pool threads copy database pages through the caches. */
typedef struct block_list {
  void **blocks;
  unsigned count, cap;
} block_list_t;

static _Thread_local block_list_t lists[CLASSES];
static _Thread_local bool lists_watched;
static pthread_key_t lists_key;
static pthread_once_t lists_once = PTHREAD_ONCE_INIT;

/* A thread that ends gives its kept blocks back. */
static void lists_drain(void *unused) {
  for (int c = 0; c < CLASSES; c++) {
    block_list_t *l = &lists[c];
    while (l->count > 0) {
      void *b = l->blocks[--l->count];
      DG_UNPOISON(b, malloc_usable_size(b));
      free(b);
    }
    free(l->blocks);
    *l = (block_list_t){NULL, 0, 0};
  }
}

static void lists_key_create(void) {
  (void)pthread_key_create(&lists_key, lists_drain);
}

/* Arranges lists_drain at the end of the calling thread, once. */
static void lists_watch(void) {
  if (lists_watched)
    return;
  lists_watched = true;
  pthread_once(&lists_once, lists_key_create);
  (void)pthread_setspecific(lists_key, &lists_watched);
}

/* Usable bytes of a class: glibc's chunk sizes, 16 apart, less their
 * 8-byte header. */
static size_t class_size(int c) {
  return 16 * ((size_t)c + 1) + 8;
}

/* The class that serves a request of n bytes, or -1 when none does. */
static int class_for(size_t n) {
  if (n <= class_size(0))
    return 0;
  size_t c = (n - 8 + 15) / 16 - 1;
  return c < CLASSES ? (int)c : -1;
}

/* The class a freed block belongs to, or -1 (kept by nobody). */
static int class_of(size_t usable) {
  if (usable < class_size(0) || (usable - 8) % 16 != 0)
    return -1;
  size_t c = (usable - 8) / 16 - 1;
  return c < CLASSES ? (int)c : -1;
}

/* Grows l's stack when it is full (from 64 entries, doubling); false when
 * that fails, and the block then goes back to malloc. */
static bool room_for_one(block_list_t *l) {
  if (l->count < l->cap)
    return true;
  unsigned cap = l->cap > 0 ? l->cap * 2 : 64;
  void **grown = realloc(l->blocks, cap * sizeof(*grown));
  if (grown == NULL)
    return false;
  l->blocks = grown;
  l->cap = cap;
  return true;
}

DG_TESTABLE void *dg__json_block_alloc(size_t n) {
  int c = class_for(n);
  if (c < 0)
    return malloc(n);
  block_list_t *l = &lists[c];
  if (l->count == 0)
    return malloc(class_size(c));
  void *b = l->blocks[--l->count];
  DG_UNPOISON(b, class_size(c));
  return b;
}

DG_TESTABLE void dg__json_block_free(void *p) {
  if (p == NULL)
    return;
  size_t usable = malloc_usable_size(p);
  int c = class_of(usable);
  if (c < 0 || (size_t)(lists[c].count + 1) * usable > LIST_BYTES || !room_for_one(&lists[c])) {
    free(p);
    return;
  }
  lists_watch();
  lists[c].blocks[lists[c].count++] = p;
  DG_POISON(p, usable);
}

#ifdef DG_TEST_BUILD
/* Blocks of this usable size the calling thread keeps (for the tests). */
unsigned dg__json_blocks_kept(size_t usable);
unsigned dg__json_blocks_kept(size_t usable) {
  int c = class_of(usable);
  return c >= 0 ? lists[c].count : 0;
}
#endif

void dg_json_use_block_cache(void) {
  json_set_alloc_funcs(dg__json_block_alloc, dg__json_block_free);
}
