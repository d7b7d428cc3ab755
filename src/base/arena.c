/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Per-request arena: bump allocation from a chain of blocks, with
 * destructors for resources that need closing. */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/base.h"

#define ARENA_ALIGN 16

typedef struct arena_block {
  struct arena_block *next;
  size_t size;
  size_t used;
  _Alignas(ARENA_ALIGN) unsigned char data[];
} arena_block_t;

typedef struct arena_defer {
  struct arena_defer *next;
  void (*fn)(void *);
  void *data;
} arena_defer_t;

struct dg_arena {
  arena_block_t *blocks;
  arena_defer_t *defers;
  size_t block_size;
  size_t used;
};

/* ---- Block cache ---------------------------------------------------------
 * A request or call makes several arenas, each with a first block of 1 to
 * 16 KiB. From glibc such a size is a "large" request: it misses the
 * per-thread cache and sweeps the fast bins first (malloc_consolidate), a
 * cost paid several times per call under load. Blocks of these power-of-two
 * sizes are therefore kept, a bounded number per size and per thread, for
 * the thread's next arenas; any thread may free a block that another made.
 * Under AddressSanitizer a kept block is poisoned, so that a use after
 * destroy is still caught. */
/* Bytes kept per size and thread: a loop turn may end a hundred calls at
 * once and start as many, each with several arenas. */
#define CACHE_BYTES (1024 * 1024)
#define CACHE_MIN_SHIFT 10 /* 1 KiB */
#define CACHE_CLASSES 5    /* 1, 2, 4, 8 and 16 KiB */

typedef struct block_cache {
  arena_block_t *head;
  unsigned count;
} block_cache_t;

static _Thread_local block_cache_t cache[CACHE_CLASSES];
static _Thread_local bool cache_watched;
static pthread_key_t cache_key;
static pthread_once_t cache_once = PTHREAD_ONCE_INIT;

/* A thread that ends gives its kept blocks back. */
static void cache_drain(void *unused) {
  for (int c = 0; c < CACHE_CLASSES; c++) {
    while (cache[c].head != NULL) {
      arena_block_t *b = cache[c].head;
      cache[c].head = b->next;
      DG_UNPOISON(b->data, b->size);
      free(b);
    }
    cache[c].count = 0;
  }
}

static void cache_key_create(void) {
  (void)pthread_key_create(&cache_key, cache_drain);
}

/* Arranges cache_drain at the end of the calling thread, once. */
static void cache_watch(void) {
  if (cache_watched)
    return;
  cache_watched = true;
  pthread_once(&cache_once, cache_key_create);
  (void)pthread_setspecific(cache_key, &cache_watched);
}

/* The cache class of a block size, or -1 when it is not kept. */
static int cache_class(size_t size) {
  for (int c = 0; c < CACHE_CLASSES; c++) {
    if (size == (size_t)1 << (CACHE_MIN_SHIFT + c))
      return c;
  }
  return -1;
}

#ifdef DG_TEST_BUILD
/* Blocks of this size the calling thread keeps (for the unit tests). */
unsigned dg__arena_cached(size_t size);
unsigned dg__arena_cached(size_t size) {
  int c = cache_class(size);
  return c >= 0 ? cache[c].count : 0;
}
#endif

static void block_free(arena_block_t *b) {
  int c = cache_class(b->size);
  if (c < 0 || (size_t)(cache[c].count + 1) * b->size > CACHE_BYTES) {
    free(b);
    return;
  }
  cache_watch();
  b->next = cache[c].head;
  cache[c].head = b;
  cache[c].count++;
  DG_POISON(b->data, b->size);
}

static arena_block_t *block_new(size_t size) {
  /* The header plus a size near SIZE_MAX would wrap to a tiny malloc. */
  if (size > SIZE_MAX - sizeof(arena_block_t))
    return NULL;
  int c = cache_class(size);
  arena_block_t *b = NULL;
  if (c >= 0 && cache[c].head != NULL) {
    b = cache[c].head;
    cache[c].head = b->next;
    cache[c].count--;
    DG_UNPOISON(b->data, b->size);
  } else {
    b = malloc(sizeof(*b) + size);
  }
  if (b == NULL)
    return NULL;
  b->next = NULL;
  b->size = size;
  b->used = 0;
  return b;
}

dg_arena_t *dg_arena_new(size_t block_size) {
  dg_arena_t *a = calloc(1, sizeof(*a));
  if (a == NULL)
    return NULL;
  a->block_size = block_size < 256 ? 256 : block_size;
  return a;
}

void dg_arena_destroy(dg_arena_t *arena) {
  if (arena == NULL)
    return;
  while (arena->defers != NULL) {
    arena_defer_t *d = arena->defers;
    arena->defers = d->next;
    d->fn(d->data);
  }
  while (arena->blocks != NULL) {
    arena_block_t *b = arena->blocks;
    arena->blocks = b->next;
    block_free(b);
  }
  free(arena);
}

void *dg_arena_alloc(dg_arena_t *arena, size_t size) {
  size_t need = (size + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (need < size)
    return NULL;
  arena_block_t *b = arena->blocks;
  if (b == NULL || b->size - b->used < need) {
    /* Large requests get a block of their own so the current block's
     * free space is not wasted. */
    size_t bsize = need > arena->block_size / 2 ? need : arena->block_size;
    arena_block_t *nb = block_new(bsize);
    if (nb == NULL)
      return NULL;
    if (b != NULL && bsize == need) {
      nb->next = b->next;
      b->next = nb;
      b = nb;
    } else {
      nb->next = b;
      arena->blocks = nb;
      b = nb;
    }
  }
  void *p = b->data + b->used;
  b->used += need;
  arena->used += need;
  return p;
}

void *dg_arena_calloc(dg_arena_t *arena, size_t n, size_t size) {
  if (size != 0 && n > SIZE_MAX / size)
    return NULL;
  void *p = dg_arena_alloc(arena, n * size);
  if (p != NULL)
    memset(p, 0, n * size);
  return p;
}

char *dg_arena_strndup(dg_arena_t *arena, const char *s, size_t n) {
  if (n == SIZE_MAX)
    return NULL;
  char *p = dg_arena_alloc(arena, n + 1);
  if (p == NULL)
    return NULL;
  memcpy(p, s, n);
  p[n] = '\0';
  return p;
}

char *dg_arena_strdup(dg_arena_t *arena, const char *s) {
  return dg_arena_strndup(arena, s, strlen(s));
}

char *dg_arena_sprintf(dg_arena_t *arena, const char *fmt, ...) {
  va_list ap;
  /* Formatted once, in place, when the text fits the current block. */
  arena_block_t *b = arena->blocks;
  size_t room = b != NULL ? b->size - b->used : 0;
  char *at = room > 0 ? (char *)b->data + b->used : NULL;
  va_start(ap, fmt);
  int n = vsnprintf(at, room, fmt, ap);
  va_end(ap);
  if (n < 0)
    return NULL;
  size_t need = ((size_t)n + 1 + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
  if (need <= room) {
    b->used += need;
    arena->used += need;
    return at;
  }
  char *p = dg_arena_alloc(arena, (size_t)n + 1);
  if (p == NULL)
    return NULL;
  va_start(ap, fmt);
  vsnprintf(p, (size_t)n + 1, fmt, ap);
  va_end(ap);
  return p;
}

int dg_arena_defer(dg_arena_t *arena, void (*fn)(void *), void *data) {
  arena_defer_t *d = dg_arena_alloc(arena, sizeof(*d));
  if (d == NULL) {
    fn(data);
    return DG_ENOMEM;
  }
  d->fn = fn;
  d->data = data;
  d->next = arena->defers;
  arena->defers = d;
  return 0;
}

size_t dg_arena_used(const dg_arena_t *arena) {
  return arena->used;
}
