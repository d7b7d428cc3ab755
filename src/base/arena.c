/* Per-request arena: bump allocation from a chain of blocks, with
 * destructors for resources that need closing. */
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

static arena_block_t *block_new(size_t size) {
  /* The header plus a size near SIZE_MAX would wrap to a tiny malloc. */
  if (size > SIZE_MAX - sizeof(arena_block_t))
    return NULL;
  arena_block_t *b = malloc(sizeof(*b) + size);
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
    free(b);
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
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0)
    return NULL;
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
