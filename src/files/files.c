/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* get_file_text's process-wide state: the LRU cache of extracted text and
 * the slots that bound how many documents are downloaded and extracted at
 * once (each may hold its document, its text and MuPDF's memory). Calls
 * beyond the slots wait in a bounded FIFO queue. Loop thread only. */
#include <stdlib.h>

#include "datagate/files.h"

struct dg_files {
  dg_extract_cache_t *cache; /* NULL when caching is off */
  unsigned active;           /* slots held */
  unsigned nqueued;
  dg_files_slot_t *head, *tail; /* waiting calls, oldest first */
  bool closing;
  char worker_path[4096]; /* this executable, started for each extraction */
};

dg_files_t *dg_files_new(const dg_catalog_t *cat) {
  dg_files_t *f = calloc(1, sizeof(*f));
  const dg_file_settings_t *s = &cat->files;
#ifdef __linux__
  /* The running executable itself, even once an upgrade has replaced the
   * file at its path. */
  if (f != NULL)
    dg_strlcpy(f->worker_path, "/proc/self/exe", sizeof(f->worker_path));
#else
  size_t len = sizeof(f->worker_path);
  if (f != NULL && uv_exepath(f->worker_path, &len) != 0)
    f->worker_path[0] = '\0';
#endif
  if (f == NULL || s->cache_bytes == 0)
    return f;
  f->cache = dg_extract_cache_new(s->cache_bytes, s->cache_entries, s->cache_ttl_ms);
  if (f->cache == NULL) {
    free(f);
    return NULL;
  }
  return f;
}

static void free_files(dg_files_t *f) {
  dg_extract_cache_free(f->cache);
  free(f);
}

void dg_files_close(dg_files_t *f) {
  if (f == NULL)
    return;
  f->closing = true;
  if (f->active == 0 && f->nqueued == 0)
    free_files(f);
}

const char *dg_files_worker(const dg_files_t *f) {
  return f->worker_path;
}

dg_extract_cache_t *dg_files_cache(dg_files_t *f) {
  return f->cache;
}

int dg_files_acquire(dg_files_t *f, dg_files_slot_t *slot, unsigned max_active,
                     unsigned max_queued) {
  if (f->closing)
    return DG_ECLOSED;
  if (f->active < max_active && f->nqueued == 0) {
    f->active++;
    return 0;
  }
  if (f->nqueued >= max_queued)
    return DG_EBUSY;
  DG_DLIST_APPEND(f->head, f->tail, slot, prev, next);
  slot->queued = true;
  f->nqueued++;
  return 1;
}

void dg_files_forget(dg_files_t *f, dg_files_slot_t *slot) {
  if (!slot->queued)
    return;
  DG_DLIST_UNLINK(f->head, f->tail, slot, prev, next);
  slot->queued = false;
  f->nqueued--;
  if (f->closing && f->active == 0 && f->nqueued == 0)
    free_files(f);
}

/* The slot passes to the oldest waiter, which starts at once. */
void dg_files_release(dg_files_t *f) {
  dg_files_slot_t *first = f->head;
  if (first == NULL || f->closing) {
    f->active--;
    if (f->closing && f->active == 0 && f->nqueued == 0)
      free_files(f);
    return;
  }
  DG_DLIST_UNLINK(f->head, f->tail, first, prev, next);
  first->queued = false;
  f->nqueued--;
  first->start(first);
}
