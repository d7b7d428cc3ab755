/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Spare blocks: a bounded free list of objects of one size, so that a
 * busy client or connector set reuses its call objects instead of asking
 * malloc for each. */
#include <stdlib.h>

#include "datagate/base.h"

typedef struct spare_link {
  struct spare_link *next;
} spare_link_t;

void dg_spare_init(dg_spare_t *s, size_t size, size_t max) {
  s->head = NULL;
  s->count = 0;
  s->max = max;
  s->size = size < sizeof(spare_link_t) ? sizeof(spare_link_t) : size;
}

void *dg_spare_alloc(dg_spare_t *s) {
  spare_link_t *block = s->head;
  if (block == NULL)
    return malloc(s->size);
  DG_UNPOISON(block, s->size);
  s->head = block->next;
  s->count--;
  return block;
}

void dg_spare_release(dg_spare_t *s, void *p, bool keep) {
  if (p == NULL)
    return;
  if (!keep || s->count >= s->max) {
    free(p);
    return;
  }
  spare_link_t *block = p;
  block->next = s->head;
  s->head = block;
  s->count++;
  DG_POISON((char *)p + sizeof(*block), s->size - sizeof(*block));
}

void dg_spare_free_all(dg_spare_t *s) {
  while (s->head != NULL) {
    spare_link_t *block = s->head;
    DG_UNPOISON(block, s->size);
    s->head = block->next;
    free(block);
  }
  s->count = 0;
}
