/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* What the workers of one machine share about HTTP sessions: the key that
 * signs session ids (sid.c) and a table, in memory mapped MAP_SHARED before
 * the workers are forked, with one slot per session: its tag (64 bits of
 * the id's nonce) and one word holding the time of its last use and its
 * state. Workers change slots with atomic operations only: no worker ever
 * waits for another, and one that dies half-way leaves nothing locked.
 *
 * A slot is taken by first swapping its word, from the value seen, to BUSY
 * (which no reader takes for a session), then writing the tag, then the
 * final word. So a reader that sees a tag, then a word, then the same tag
 * again holds that tag's word, and two workers can never take one slot.
 * Ids are made by the gateway from random bytes, so no client can choose
 * which bucket its sessions fill.
 *
 * A second map holds a ring of recent relayed cancels, through which a
 * cancel reaches the other workers when the store cannot publish it. */
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <mbedtls/platform_util.h>

#include "mcp/internal.h"

#define BUCKET_SLOTS 8
/* Slots per session the table is sized for: a bucket overflows only when
 * eight live sessions of a half-full table land in it. */
#define SLOTS_PER_SESSION 2
#define MIN_BUCKETS 128
#define MAX_BUCKETS (1u << 19) /* 4 Mi slots, 64 MiB */
/* Claiming a slot that another worker took at the same moment is tried
 * again on a fresh look at the bucket. Each lost try means another worker
 * changed the bucket, so the bound is only a guard: with four, a worker
 * descheduled between its look and its claim while the others kept taking
 * the same oldest slot could give up on a bucket that had room. */
#define CLAIM_TRIES 64

#define ST_LIVE 0u
#define ST_ENDED 1u
#define ST_BUSY 2u

_Static_assert(ATOMIC_LLONG_LOCK_FREE == 2, "shared slots need lock-free 64-bit atomics");

typedef struct dg__mcp_shared_slot {
  _Atomic unsigned long long tag;
  _Atomic unsigned long long word; /* (ms << 2) | state; 0: empty */
} slot_t;

static uint64_t pack(uint64_t ms, unsigned st) {
  return ((ms > 0 ? ms : 1) << 2) | st;
}

static uint64_t word_ms(uint64_t w) {
  return w >> 2;
}

static unsigned word_state(uint64_t w) {
  return (unsigned)(w & 3u);
}

/* Another process may have read the clock a moment later than this one. */
static uint64_t age(uint64_t now, uint64_t then) {
  return now > then ? now - then : 0;
}

static slot_t *bucket_of(const dg_mcp_shared_t *sh, uint64_t tag) {
  return sh->table + (tag & (sh->nbuckets - 1)) * BUCKET_SLOTS;
}

/* The slot holding tag and its word, read consistently; NULL when none. */
static slot_t *find(const dg_mcp_shared_t *sh, uint64_t tag, uint64_t *word) {
  slot_t *b = bucket_of(sh, tag);
  for (size_t i = 0; i < BUCKET_SLOTS; i++) {
    if (atomic_load(&b[i].tag) != tag)
      continue;
    uint64_t w = atomic_load(&b[i].word);
    if (atomic_load(&b[i].tag) != tag || w == 0 || word_state(w) == ST_BUSY)
      continue;
    *word = w;
    return &b[i];
  }
  return NULL;
}

/* A free slot (empty, or unused for idle_ms; 0 means never), else the
 * ended session recorded longest ago, else NULL. *seen is its word. */
static slot_t *victim(slot_t *b, uint64_t now, uint64_t idle_ms, uint64_t *seen) {
  slot_t *ended = NULL;
  uint64_t ended_word = 0;
  for (size_t i = 0; i < BUCKET_SLOTS; i++) {
    uint64_t w = atomic_load(&b[i].word);
    if (w == 0 || (idle_ms > 0 && age(now, word_ms(w)) >= idle_ms)) {
      *seen = w;
      return &b[i];
    }
    if (word_state(w) == ST_ENDED && (ended == NULL || word_ms(w) < word_ms(ended_word))) {
      ended = &b[i];
      ended_word = w;
    }
  }
  *seen = ended_word;
  return ended;
}

static int claim(dg_mcp_shared_t *sh, uint64_t tag, uint64_t final_word, uint64_t now,
                 uint64_t idle_ms) {
  slot_t *b = bucket_of(sh, tag);
  for (int attempt = 0; attempt < CLAIM_TRIES; attempt++) {
    uint64_t seen = 0;
    if (find(sh, tag, &seen) != NULL)
      return DG_EEXIST;
    slot_t *slot = victim(b, now, idle_ms, &seen);
    if (slot == NULL)
      return DG_EBUSY;
    unsigned long long expected = seen;
    if (!atomic_compare_exchange_strong(&slot->word, &expected, pack(now, ST_BUSY)))
      continue;
    atomic_store(&slot->tag, tag);
    atomic_store(&slot->word, final_word);
    return 0;
  }
  return DG_EBUSY;
}

dg__mcp_entry_t dg__mcp_shared_get(dg_mcp_shared_t *sh, uint64_t tag, uint64_t *used_ms) {
  uint64_t w = 0;
  if (find(sh, tag, &w) == NULL)
    return DG__MCP_ENTRY_ABSENT;
  *used_ms = word_ms(w);
  return word_state(w) == ST_ENDED ? DG__MCP_ENTRY_ENDED : DG__MCP_ENTRY_LIVE;
}

int dg__mcp_shared_add(dg_mcp_shared_t *sh, uint64_t tag, uint64_t now, uint64_t idle_ms) {
  return claim(sh, tag, pack(now, ST_LIVE), now, idle_ms);
}

void dg__mcp_shared_touch(dg_mcp_shared_t *sh, uint64_t tag, uint64_t now, uint64_t every_ms) {
  uint64_t w = 0;
  slot_t *slot = find(sh, tag, &w);
  if (slot == NULL || word_state(w) != ST_LIVE || age(now, word_ms(w)) < every_ms)
    return;
  /* Losing the race means another worker wrote a use or an end: either
   * way there is nothing left to record. */
  unsigned long long expected = w;
  atomic_compare_exchange_strong(&slot->word, &expected, pack(now, ST_LIVE));
}

bool dg__mcp_shared_end(dg_mcp_shared_t *sh, uint64_t tag, uint64_t now, uint64_t idle_ms,
                        bool forget) {
  uint64_t next = forget ? 0 : pack(now, ST_ENDED);
  for (int attempt = 0; attempt < CLAIM_TRIES; attempt++) {
    uint64_t w = 0;
    slot_t *slot = find(sh, tag, &w);
    if (slot == NULL && forget)
      return true;
    if (slot == NULL) {
      int rc = claim(sh, tag, next, now, idle_ms);
      if (rc != DG_EEXIST)
        return rc == 0;
      continue;
    }
    unsigned long long expected = w;
    if (atomic_compare_exchange_strong(&slot->word, &expected, next))
      return true;
  }
  return false;
}

/* ---- Relayed cancels --------------------------------------------------------
 * A writer claims entry n with one fetch-add on head, marks it as being
 * written (seq 2n + 1), writes it, then publishes seq 2n + 2 with release
 * order. A reader copies the entry between two reads of seq and keeps the
 * copy only when both are 2n + 2: a torn or overwritten entry is never
 * handed on, and a writer that dies half-way leaves an entry that is
 * skipped, nothing locked. Only two writers a whole ring apart (a writer
 * stalled while 255 more cancels were claimed) could write one entry at
 * once; a cancel through the ring is best-effort, and the receiving end
 * checks what it is handed as it checks any relayed cancel. */

static uint64_t written(uint64_t n) {
  return 2 * n + 2;
}

void dg__mcp_ring_post(dg_mcp_shared_t *sh, uint64_t origin, const char *session,
                       const char *request) {
  uint64_t n = atomic_fetch_add(&sh->ring->head, 1);
  dg__mcp_ring_entry_t *e = &sh->ring->entries[n % DG__MCP_RING_SIZE];
  atomic_store(&e->seq, written(n) - 1);
  atomic_store_explicit(&e->origin, origin, memory_order_relaxed);
  snprintf(e->session, sizeof(e->session), "%s", session);
  snprintf(e->request, sizeof(e->request), "%s", request != NULL ? request : "");
  atomic_store_explicit(&e->seq, written(n), memory_order_release);
}

void dg__mcp_ring_start(dg_mcp_shared_t *sh, dg__mcp_ring_cursor_t *c) {
  /* The process id tells workers apart, the count servers of one process. */
  static _Atomic unsigned servers;
  c->origin = ((uint64_t)getpid() << 32) | atomic_fetch_add(&servers, 1);
  c->next = atomic_load(&sh->ring->head);
  c->waited = false;
}

typedef enum { COPY_WHOLE, COPY_NOT_YET, COPY_LOST } copy_t;

static copy_t copy_entry(const dg__mcp_ring_t *ring, uint64_t n, dg__mcp_ring_entry_t *out) {
  const dg__mcp_ring_entry_t *e = &ring->entries[n % DG__MCP_RING_SIZE];
  uint64_t before = atomic_load_explicit(&e->seq, memory_order_acquire);
  if (before != written(n))
    return before < written(n) ? COPY_NOT_YET : COPY_LOST;
  atomic_store_explicit(&out->origin, atomic_load_explicit(&e->origin, memory_order_relaxed),
                        memory_order_relaxed);
  memcpy(out->session, e->session, sizeof(out->session));
  memcpy(out->request, e->request, sizeof(out->request));
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&e->seq, memory_order_relaxed) != before)
    return COPY_LOST;
  out->session[sizeof(out->session) - 1] = '\0';
  out->request[sizeof(out->request) - 1] = '\0';
  return COPY_WHOLE;
}

size_t dg__mcp_ring_read(dg_mcp_shared_t *sh, dg__mcp_ring_cursor_t *c, dg__mcp_ring_fn fn,
                         void *data) {
  uint64_t head = atomic_load(&sh->ring->head);
  if (head - c->next > DG__MCP_RING_SIZE) {
    c->next = head - DG__MCP_RING_SIZE;
    c->waited = false;
  }
  size_t handed = 0;
  while (c->next < head) {
    dg__mcp_ring_entry_t e;
    copy_t got = copy_entry(sh->ring, c->next, &e);
    if (got == COPY_NOT_YET && !c->waited) {
      c->waited = true;
      break;
    }
    c->waited = false;
    c->next++;
    if (got == COPY_WHOLE && atomic_load(&e.origin) != c->origin) {
      fn(e.session, e.request[0] != '\0' ? e.request : NULL, data);
      handed++;
    }
  }
  return handed;
}

/* ---- Creation -------------------------------------------------------------- */

static size_t table_buckets(unsigned max_sessions, unsigned workers) {
  uint64_t slots = (uint64_t)max_sessions * (workers > 0 ? workers : 1) * SLOTS_PER_SESSION;
  size_t n = MIN_BUCKETS;
  while (n < MAX_BUCKETS && (uint64_t)n * BUCKET_SLOTS < slots)
    n *= 2;
  return n;
}

static int set_key(dg_mcp_shared_t *sh, const dg_mcp_limits_t *st) {
  if (st->session_key == NULL) {
    sh->key_len = 32;
    return dg_random_bytes(sh->key, sh->key_len);
  }
  /* HMAC hashes a key longer than its block; doing it here keeps the key
   * in a fixed buffer. */
  if (st->session_key_len > sizeof(sh->key)) {
    dg_sha256(st->session_key, st->session_key_len, sh->key);
    sh->key_len = 32;
    return 0;
  }
  memcpy(sh->key, st->session_key, st->session_key_len);
  sh->key_len = st->session_key_len;
  return 0;
}

static int map_table(dg_mcp_shared_t *sh, size_t nbuckets) {
  size_t bytes = nbuckets * BUCKET_SLOTS * sizeof(slot_t);
  /* Anonymous shared pages start zeroed (every slot empty) and are shared
   * with every child forked afterwards. */
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return DG_ENOMEM;
  sh->table = p;
  sh->nbuckets = nbuckets;
  sh->map_bytes = bytes;
  p = mmap(NULL, sizeof(*sh->ring), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED)
    return DG_ENOMEM;
  sh->ring = p;
  return 0;
}

int dg_mcp_shared_new(const dg_mcp_limits_t *settings, unsigned workers, dg_mcp_shared_t **out,
                      dg_errctx_t *err) {
  *out = NULL;
  dg_mcp_shared_t *sh = calloc(1, sizeof(*sh));
  if (sh == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "server", "out of memory");
  int rc = set_key(sh, settings);
  if (rc == 0)
    rc = dg_random_bytes(&sh->instance, sizeof(sh->instance));
  if (rc != 0) {
    dg_mcp_shared_free(sh);
    return dg_errctx_set(err, rc, "server.sessionKeyEnv",
                         "cannot read random bytes for the "
                         "session key");
  }
  sh->workers = workers;
  size_t nbuckets = table_buckets(settings->max_sessions, workers);
  rc = map_table(sh, nbuckets);
  if (rc != 0) {
    dg_mcp_shared_free(sh);
    return dg_errctx_set(err, rc, "server.maxSessions",
                         "cannot map the shared session table of %zu bytes",
                         nbuckets * BUCKET_SLOTS * sizeof(slot_t));
  }
  *out = sh;
  return 0;
}

void dg_mcp_shared_free(dg_mcp_shared_t *shared) {
  if (shared == NULL)
    return;
  if (shared->table != NULL)
    munmap(shared->table, shared->map_bytes);
  if (shared->ring != NULL)
    munmap(shared->ring, sizeof(*shared->ring));
  mbedtls_platform_zeroize(shared, sizeof(*shared));
  free(shared);
}
