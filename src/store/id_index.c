/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The ids of one request, found by hash. A page or a fetch matches up to
 * 100 parents with the ids asked for and with their related rows; comparing
 * each id with all the others made that quadratic. */
#include <stdint.h>
#include <string.h>

#include "store/internal.h"

static uint64_t id_hash(const char *s) {
  return dg_hash_bytes(s, strlen(s), 0);
}

int dg__id_index_init(dg__id_index_t *ix, dg_arena_t *arena, const char *const *ids, size_t cap) {
  size_t slots = 8;
  while (slots < 2 * cap)
    slots *= 2;
  ix->ids = ids;
  ix->mask = slots - 1;
  ix->slots = dg_arena_calloc(arena, slots, sizeof(*ix->slots));
  return ix->slots != NULL ? 0 : DG_ENOMEM;
}

/* The slot holding key, or the free slot where it would go. */
static size_t slot_of(const dg__id_index_t *ix, const char *key) {
  size_t s = (size_t)id_hash(key) & ix->mask;
  while (ix->slots[s] != 0 && strcmp(ix->ids[ix->slots[s] - 1], key) != 0)
    s = (s + 1) & ix->mask;
  return s;
}

size_t dg__id_index_add(dg__id_index_t *ix, size_t i) {
  size_t s = slot_of(ix, ix->ids[i]);
  if (ix->slots[s] != 0)
    return ix->slots[s] - 1;
  ix->slots[s] = (uint32_t)i + 1;
  return i;
}

size_t dg__id_index_find(const dg__id_index_t *ix, const char *key) {
  size_t s = slot_of(ix, key);
  return ix->slots[s] != 0 ? ix->slots[s] - 1 : SIZE_MAX;
}
