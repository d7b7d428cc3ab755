/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* A small LRU of extracted documents with a byte budget. Entries are few
 * (each holds a whole document's text), so a list searched from its most
 * recently used end is enough. Loop thread only; the documents themselves
 * are reference counted, so an entry evicted while a caller still reads its
 * text stays alive until that caller lets go. */
#include <stdlib.h>
#include <string.h>

#include "extract/internal.h"

typedef struct entry {
  struct entry *prev; /* more recently used */
  struct entry *next; /* less recently used */
  char *key;
  char *etag;
  char *last_modified;
  dg_extract_doc_t *doc;
  size_t bytes;
  uint64_t stored_ms; /* when stored or last revalidated */
} entry_t;

struct dg_extract_cache {
  entry_t *head; /* most recently used */
  entry_t *tail;
  size_t count;
  size_t bytes;
  size_t max_bytes;
  size_t max_entries;
  uint64_t ttl_ms;
};

dg_extract_cache_t *dg_extract_cache_new(size_t max_bytes, size_t max_entries, uint64_t ttl_ms) {
  dg_extract_cache_t *c = calloc(1, sizeof(*c));
  if (c == NULL)
    return NULL;
  c->max_bytes = max_bytes;
  c->max_entries = max_entries;
  c->ttl_ms = ttl_ms;
  return c;
}

static void unlink_entry(dg_extract_cache_t *c, entry_t *e) {
  DG_DLIST_UNLINK(c->head, c->tail, e, prev, next);
}

static void push_front(dg_extract_cache_t *c, entry_t *e) {
  DG_DLIST_PUSH(c->head, c->tail, e, prev, next);
}

static void free_entry(entry_t *e) {
  dg_extract_doc_unref(e->doc);
  free(e->key);
  free(e->etag);
  free(e->last_modified);
  free(e);
}

static void drop(dg_extract_cache_t *c, entry_t *e) {
  unlink_entry(c, e);
  c->count--;
  c->bytes -= e->bytes;
  free_entry(e);
}

void dg_extract_cache_free(dg_extract_cache_t *c) {
  if (c == NULL)
    return;
  while (c->head != NULL)
    drop(c, c->head);
  free(c);
}

static entry_t *find(const dg_extract_cache_t *c, const char *key) {
  for (entry_t *e = c->head; e != NULL; e = e->next) {
    if (strcmp(e->key, key) == 0)
      return e;
  }
  return NULL;
}

static char *dup_or_null(const char *s, bool *failed) {
  char *d = s != NULL ? strdup(s) : NULL;
  *failed |= s != NULL && d == NULL;
  return d;
}

static entry_t *new_entry(const char *key, const char *etag, const char *last_modified,
                          dg_extract_doc_t *doc) {
  bool failed = false;
  entry_t *e = calloc(1, sizeof(*e));
  if (e == NULL)
    return NULL;
  e->key = dup_or_null(key, &failed);
  e->etag = dup_or_null(etag, &failed);
  e->last_modified = dup_or_null(last_modified, &failed);
  if (failed) {
    free_entry(e);
    return NULL;
  }
  e->doc = dg_extract_doc_ref(doc);
  e->bytes = sizeof(*e) + dg_extract_doc_bytes(doc) + strlen(key) + 1 +
             (etag != NULL ? strlen(etag) + 1 : 0) +
             (last_modified != NULL ? strlen(last_modified) + 1 : 0);
  e->stored_ms = dg_now_ms();
  return e;
}

int dg_extract_cache_put(dg_extract_cache_t *c, const char *key, const char *etag,
                         const char *last_modified, dg_extract_doc_t *doc) {
  entry_t *old = find(c, key);
  /* Whatever happens, the older version of the document is stale now. */
  if (old != NULL)
    drop(c, old);
  entry_t *e = new_entry(key, etag, last_modified, doc);
  if (e == NULL)
    return DG_ENOMEM;
  if (e->bytes > c->max_bytes || c->max_entries == 0) {
    free_entry(e);
    return DG_E2BIG;
  }
  push_front(c, e);
  c->count++;
  c->bytes += e->bytes;
  while (c->bytes > c->max_bytes || c->count > c->max_entries)
    drop(c, c->tail);
  return 0;
}

static bool same(const char *given, const char *stored) {
  return given == NULL || (stored != NULL && strcmp(given, stored) == 0);
}

dg_extract_doc_t *dg_extract_cache_get(dg_extract_cache_t *c, const char *key, const char *etag,
                                       const char *last_modified) {
  entry_t *e = find(c, key);
  if (e == NULL)
    return NULL;
  uint64_t now = dg_now_ms();
  if (etag == NULL && last_modified == NULL) {
    if (c->ttl_ms == 0 || now - e->stored_ms >= c->ttl_ms)
      return NULL;
  } else if (same(etag, e->etag) && same(last_modified, e->last_modified)) {
    e->stored_ms = now;
  } else {
    return NULL;
  }
  unlink_entry(c, e);
  push_front(c, e);
  return dg_extract_doc_ref(e->doc);
}

bool dg_extract_cache_validators(dg_extract_cache_t *c, const char *key, const char **etag,
                                 const char **last_modified) {
  entry_t *e = find(c, key);
  if (e == NULL)
    return false;
  *etag = e->etag;
  *last_modified = e->last_modified;
  return true;
}

void dg_extract_cache_remove(dg_extract_cache_t *c, const char *key) {
  entry_t *e = find(c, key);
  if (e != NULL)
    drop(c, e);
}

size_t dg_extract_cache_bytes(const dg_extract_cache_t *c) {
  return c->bytes;
}

size_t dg_extract_cache_count(const dg_extract_cache_t *c) {
  return c->count;
}
