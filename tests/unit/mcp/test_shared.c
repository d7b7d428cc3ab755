/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the session table the workers share: recording, touching
 * and ending sessions, a full bucket, which slots give way, a forked
 * process seeing and changing the same table, and threads claiming slots
 * of the same buckets at once; the ring of relayed cancels: read in order
 * and once, across its end, by a reader more than a ring behind, with a
 * torn or overwritten entry, and from a forked writer. */
#include <pthread.h>
#include <sys/wait.h>

#include "mcp/mcp_test.h"

#define IDLE 1000

static dg_mcp_shared_t *new_shared(unsigned max_sessions, unsigned workers) {
  dg_mcp_limits_t st = {.max_sessions = max_sessions};
  dg_mcp_shared_t *sh = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_mcp_shared_new(&st, workers, &sh, &err), 0);
  return sh;
}

/* The k-th tag that lands in bucket b. */
static uint64_t tag_in(const dg_mcp_shared_t *sh, uint64_t b, uint64_t k) {
  return b + (k + 1) * sh->nbuckets;
}

static void test_sizes(void **state) {
  dg_mcp_shared_t *small = new_shared(3, 1), *big = new_shared(10000, 4);
  assert_int_equal(small->nbuckets, 128);
  /* 2 slots per session of every worker, 8 slots per bucket, a power of two. */
  assert_int_equal(big->nbuckets, 16384);
  assert_int_equal(big->key_len, 32);
  dg_mcp_shared_free(small);
  dg_mcp_shared_free(big);
  dg_mcp_shared_free(NULL);
}

static void test_add_touch_end(void **state) {
  dg_mcp_shared_t *sh = new_shared(10, 1);
  uint64_t now = 5000, used = 0;
  assert_int_equal(dg__mcp_shared_get(sh, 42, &used), DG__MCP_ENTRY_ABSENT);
  assert_int_equal(dg__mcp_shared_add(sh, 42, now, IDLE), 0);
  assert_int_equal(dg__mcp_shared_add(sh, 42, now, IDLE), DG_EEXIST);
  assert_int_equal(dg__mcp_shared_get(sh, 42, &used), DG__MCP_ENTRY_LIVE);
  assert_int_equal(used, now);
  /* A use closer than `every` to the recorded one is not written. */
  dg__mcp_shared_touch(sh, 42, now + 50, 100);
  assert_int_equal(dg__mcp_shared_get(sh, 42, &used), DG__MCP_ENTRY_LIVE);
  assert_int_equal(used, now);
  dg__mcp_shared_touch(sh, 42, now + 100, 100);
  dg__mcp_shared_get(sh, 42, &used);
  assert_int_equal(used, now + 100);
  /* Kept as ended; a touch does not bring it back. */
  assert_true(dg__mcp_shared_end(sh, 42, now + 200, IDLE, false));
  dg__mcp_shared_touch(sh, 42, now + 900, 100);
  assert_int_equal(dg__mcp_shared_get(sh, 42, &used), DG__MCP_ENTRY_ENDED);
  assert_int_equal(used, now + 200);
  assert_int_equal(dg__mcp_shared_add(sh, 42, now + 300, IDLE), DG_EEXIST);
  /* Forgotten. */
  assert_true(dg__mcp_shared_end(sh, 42, now + 300, IDLE, true));
  assert_int_equal(dg__mcp_shared_get(sh, 42, &used), DG__MCP_ENTRY_ABSENT);
  assert_true(dg__mcp_shared_end(sh, 43, now, IDLE, true));
  assert_int_equal(dg__mcp_shared_get(sh, 43, &used), DG__MCP_ENTRY_ABSENT);
  /* Ending a session the table never held records it as ended. */
  assert_true(dg__mcp_shared_end(sh, 44, now, IDLE, false));
  assert_int_equal(dg__mcp_shared_get(sh, 44, &used), DG__MCP_ENTRY_ENDED);
  dg_mcp_shared_free(sh);
}

static void fill_bucket(dg_mcp_shared_t *sh, uint64_t b, uint64_t now) {
  for (uint64_t k = 0; k < 8; k++)
    assert_int_equal(dg__mcp_shared_add(sh, tag_in(sh, b, k), now + k, IDLE), 0);
}

static void test_full_bucket(void **state) {
  dg_mcp_shared_t *sh = new_shared(10, 1);
  uint64_t now = 100000, used = 0;
  fill_bucket(sh, 5, now);
  assert_int_equal(dg__mcp_shared_add(sh, tag_in(sh, 5, 8), now + 10, IDLE), DG_EBUSY);
  assert_false(dg__mcp_shared_end(sh, tag_in(sh, 5, 9), now + 10, IDLE, false));
  /* Other buckets are not affected. */
  assert_int_equal(dg__mcp_shared_add(sh, tag_in(sh, 6, 0), now + 10, IDLE), 0);
  /* The first session is idle for IDLE: its slot is free again. */
  assert_int_equal(dg__mcp_shared_add(sh, tag_in(sh, 5, 8), now + IDLE, IDLE), 0);
  assert_int_equal(dg__mcp_shared_get(sh, tag_in(sh, 5, 0), &used), DG__MCP_ENTRY_ABSENT);
  for (uint64_t k = 1; k <= 8; k++)
    assert_int_equal(dg__mcp_shared_get(sh, tag_in(sh, 5, k), &used), DG__MCP_ENTRY_LIVE);
  dg_mcp_shared_free(sh);
}

/* Without room, ended sessions give way, the one ended first first; live
 * sessions never do before they are idle. */
static void test_ended_give_way(void **state) {
  dg_mcp_shared_t *sh = new_shared(10, 1);
  uint64_t now = 100000, used = 0;
  fill_bucket(sh, 7, now);
  assert_true(dg__mcp_shared_end(sh, tag_in(sh, 7, 3), now + 20, IDLE, false));
  assert_true(dg__mcp_shared_end(sh, tag_in(sh, 7, 6), now + 10, IDLE, false));
  assert_int_equal(dg__mcp_shared_add(sh, tag_in(sh, 7, 8), now + 30, IDLE), 0);
  assert_int_equal(dg__mcp_shared_get(sh, tag_in(sh, 7, 6), &used), DG__MCP_ENTRY_ABSENT);
  assert_int_equal(dg__mcp_shared_get(sh, tag_in(sh, 7, 3), &used), DG__MCP_ENTRY_ENDED);
  assert_int_equal(dg__mcp_shared_add(sh, tag_in(sh, 7, 9), now + 30, IDLE), 0);
  assert_int_equal(dg__mcp_shared_get(sh, tag_in(sh, 7, 3), &used), DG__MCP_ENTRY_ABSENT);
  assert_int_equal(dg__mcp_shared_add(sh, tag_in(sh, 7, 10), now + 30, IDLE), DG_EBUSY);
  /* With an idle timeout of 0 (never), a live session never gives way. */
  assert_int_equal(dg__mcp_shared_add(sh, tag_in(sh, 7, 10), now + 1000000, 0), DG_EBUSY);
  dg_mcp_shared_free(sh);
}

/* A forked child sees the parent's sessions and its changes reach the
 * parent: the table is shared memory, not a copy. */
static void test_shared_with_child(void **state) {
  dg_mcp_shared_t *sh = new_shared(10, 2);
  uint64_t used = 0;
  assert_int_equal(dg__mcp_shared_add(sh, 1001, 5000, IDLE), 0);
  assert_int_equal(dg__mcp_shared_add(sh, 1002, 5000, IDLE), 0);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    uint64_t seen = 0;
    bool ok = dg__mcp_shared_get(sh, 1001, &seen) == DG__MCP_ENTRY_LIVE && seen == 5000;
    ok = ok && dg__mcp_shared_end(sh, 1001, 6000, IDLE, true);
    ok = ok && dg__mcp_shared_end(sh, 1002, 6000, IDLE, false);
    ok = ok && dg__mcp_shared_add(sh, 1003, 6000, IDLE) == 0;
    _exit(ok ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  assert_int_equal(dg__mcp_shared_get(sh, 1001, &used), DG__MCP_ENTRY_ABSENT);
  assert_int_equal(dg__mcp_shared_get(sh, 1002, &used), DG__MCP_ENTRY_ENDED);
  assert_int_equal(dg__mcp_shared_get(sh, 1003, &used), DG__MCP_ENTRY_LIVE);
  assert_int_equal(used, 6000);
  dg_mcp_shared_free(sh);
}

/* ---- The ring of relayed cancels ---------------------------------------------- */

#define HASH_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"

typedef struct heard {
  size_t n;
  char session[8][DG__MCP_ID_HASH_LEN + 1];
  char request[8][DG_MCP_RELAY_REQUEST_MAX + 1];
  bool whole[8];
  long first, last; /* request ids as numbers, for long runs */
  bool consecutive; /* each request id must be the last one plus one */
} heard_t;

static void on_heard(const char *session, const char *request, void *data) {
  heard_t *h = data;
  long id = request != NULL ? strtol(request, NULL, 10) : -1;
  if (h->n == 0)
    h->first = id;
  assert_true(!h->consecutive || h->n == 0 || id == h->last + 1); /* oldest first, none missed */
  h->last = id;
  if (h->n < 8) {
    snprintf(h->session[h->n], sizeof(h->session[0]), "%s", session);
    snprintf(h->request[h->n], sizeof(h->request[0]), "%s", request != NULL ? request : "");
    h->whole[h->n] = request == NULL;
  }
  h->n++;
}

static void post_n(dg_mcp_shared_t *sh, uint64_t origin, long from, long count) {
  for (long i = from; i < from + count; i++) {
    char req[32];
    snprintf(req, sizeof(req), "%ld", i);
    dg__mcp_ring_post(sh, origin, HASH_A, req);
  }
}

/* What one writer posts another reads once, in order, whole; its own
 * entries a reader skips. */
static void test_ring_write_read(void **state) {
  dg_mcp_shared_t *sh = new_shared(10, 2);
  dg__mcp_ring_cursor_t w, r;
  dg__mcp_ring_start(sh, &w);
  dg__mcp_ring_start(sh, &r);
  assert_int_not_equal(w.origin, r.origin);
  heard_t h = {0};
  assert_int_equal(dg__mcp_ring_read(sh, &r, on_heard, &h), 0);
  char session[DG__MCP_ID_HASH_LEN + 1];
  memset(session, 'b', DG__MCP_ID_HASH_LEN);
  session[DG__MCP_ID_HASH_LEN] = '\0';
  dg__mcp_ring_post(sh, w.origin, session, "\"a-key\"");
  dg__mcp_ring_post(sh, r.origin, HASH_A, "7"); /* the reader's own */
  dg__mcp_ring_post(sh, w.origin, HASH_A, NULL);
  assert_int_equal(dg__mcp_ring_read(sh, &r, on_heard, &h), 2);
  assert_string_equal(h.session[0], session);
  assert_string_equal(h.request[0], "\"a-key\"");
  assert_false(h.whole[0]);
  assert_string_equal(h.session[1], HASH_A);
  assert_true(h.whole[1]);
  /* Read once only. */
  assert_int_equal(dg__mcp_ring_read(sh, &r, on_heard, &h), 0);
  assert_int_equal(h.n, 2);
  dg_mcp_shared_free(sh);
}

/* A reader that keeps up reads every entry across the end of the ring. */
static void test_ring_wraps(void **state) {
  dg_mcp_shared_t *sh = new_shared(10, 2);
  dg__mcp_ring_cursor_t w, r;
  dg__mcp_ring_start(sh, &w);
  dg__mcp_ring_start(sh, &r);
  heard_t h = {.consecutive = true};
  long total = 0;
  for (; total < 3 * DG__MCP_RING_SIZE; total += 100) {
    post_n(sh, w.origin, total, 100);
    assert_int_equal(dg__mcp_ring_read(sh, &r, on_heard, &h), 100);
  }
  assert_int_equal(h.first, 0);
  assert_int_equal(h.last, total - 1);
  assert_int_equal(h.n, total);
  dg_mcp_shared_free(sh);
}

/* A reader more than the ring behind skips to the oldest entry left. */
static void test_ring_reader_behind(void **state) {
  dg_mcp_shared_t *sh = new_shared(10, 2);
  dg__mcp_ring_cursor_t w, r;
  dg__mcp_ring_start(sh, &w);
  dg__mcp_ring_start(sh, &r);
  post_n(sh, w.origin, 0, DG__MCP_RING_SIZE + 44);
  heard_t h = {.consecutive = true};
  assert_int_equal(dg__mcp_ring_read(sh, &r, on_heard, &h), DG__MCP_RING_SIZE);
  assert_int_equal(h.first, 44);
  assert_int_equal(h.last, DG__MCP_RING_SIZE + 43);
  dg_mcp_shared_free(sh);
}

/* An entry still being written (or left so by a writer that died) is
 * waited for once, then skipped; one overwritten under the reader is
 * never handed on. */
static void test_ring_torn(void **state) {
  dg_mcp_shared_t *sh = new_shared(10, 2);
  dg__mcp_ring_cursor_t w, r;
  dg__mcp_ring_start(sh, &w);
  dg__mcp_ring_start(sh, &r);
  post_n(sh, w.origin, 0, 3);
  /* Entry 1 half-written: its seq says "being written". */
  atomic_store(&sh->ring->entries[1].seq, 2 * 1 + 1);
  /* Entry 2 overwritten by a writer a ring later. */
  atomic_store(&sh->ring->entries[2].seq, 2 * (2 + DG__MCP_RING_SIZE) + 2);
  heard_t h = {0};
  assert_int_equal(dg__mcp_ring_read(sh, &r, on_heard, &h), 1);
  assert_int_equal(h.last, 0);
  assert_int_equal(r.next, 1); /* waits for entry 1 */
  /* The writer finishes entry 1 meanwhile: it is read. */
  atomic_store(&sh->ring->entries[1].seq, 2 * 1 + 2);
  assert_int_equal(dg__mcp_ring_read(sh, &r, on_heard, &h), 1);
  assert_int_equal(h.last, 1);
  assert_int_equal(r.next, 3); /* entry 2 skipped */
  /* A writer that never finishes: waited for once, then skipped. */
  post_n(sh, w.origin, 3, 2);
  atomic_store(&sh->ring->entries[3].seq, 2 * 3 + 1);
  assert_int_equal(dg__mcp_ring_read(sh, &r, on_heard, &h), 0);
  assert_int_equal(dg__mcp_ring_read(sh, &r, on_heard, &h), 1);
  assert_string_equal(h.request[2], "4");
  assert_int_equal(h.n, 3);
  dg_mcp_shared_free(sh);
}

/* A forked worker's cancels reach the parent through the same map. */
static void test_ring_across_processes(void **state) {
  dg_mcp_shared_t *sh = new_shared(10, 2);
  dg__mcp_ring_cursor_t r;
  dg__mcp_ring_start(sh, &r);
  fflush(NULL);
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    dg__mcp_ring_cursor_t w;
    dg__mcp_ring_start(sh, &w);
    post_n(sh, w.origin, 0, 2);
    _exit(w.origin != r.origin ? 0 : 1);
  }
  int status = 0;
  assert_int_equal(waitpid(pid, &status, 0), pid);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  heard_t h = {0};
  assert_int_equal(dg__mcp_ring_read(sh, &r, on_heard, &h), 2);
  assert_string_equal(h.session[0], HASH_A);
  assert_string_equal(h.request[0], "0");
  assert_string_equal(h.request[1], "1");
  dg_mcp_shared_free(sh);
}

/* ---- Threads racing for the slots of a few buckets ---------------------------- */

#define RACERS 4
#define ROUNDS 3000
#define RACE_BUCKETS 2

typedef struct racer {
  dg_mcp_shared_t *sh;
  int index;
  int failures;
} racer_t;

/* Each thread holds at most one live session per bucket at a time, so an
 * add must always find room (ended sessions give way), and what a thread
 * recorded must read back as it left it. */
static void *race(void *arg) {
  racer_t *r = arg;
  uint64_t used = 0;
  for (uint64_t i = 0; i < ROUNDS; i++) {
    uint64_t b = i % RACE_BUCKETS;
    uint64_t tag = b + ((i * RACERS + (uint64_t)r->index) + 1) * r->sh->nbuckets;
    uint64_t now = 1000 + i;
    r->failures += dg__mcp_shared_add(r->sh, tag, now, 1000000) != 0;
    r->failures += dg__mcp_shared_get(r->sh, tag, &used) != DG__MCP_ENTRY_LIVE;
    dg__mcp_shared_touch(r->sh, tag, now + 5, 1);
    r->failures += dg__mcp_shared_get(r->sh, tag, &used) != DG__MCP_ENTRY_LIVE;
    r->failures += !dg__mcp_shared_end(r->sh, tag, now + 6, 1000000, i % 2 == 0);
    dg__mcp_entry_t after = dg__mcp_shared_get(r->sh, tag, &used);
    r->failures += after == DG__MCP_ENTRY_LIVE || (i % 2 == 0 && after != DG__MCP_ENTRY_ABSENT);
  }
  return NULL;
}

static void test_racing_threads(void **state) {
  dg_mcp_shared_t *sh = new_shared(10, 1);
  pthread_t threads[RACERS];
  racer_t racers[RACERS];
  for (int i = 0; i < RACERS; i++) {
    racers[i] = (racer_t){.sh = sh, .index = i};
    assert_int_equal(pthread_create(&threads[i], NULL, race, &racers[i]), 0);
  }
  for (int i = 0; i < RACERS; i++) {
    pthread_join(threads[i], NULL);
    assert_int_equal(racers[i].failures, 0);
  }
  dg_mcp_shared_free(sh);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sizes),
      cmocka_unit_test(test_add_touch_end),
      cmocka_unit_test(test_full_bucket),
      cmocka_unit_test(test_ended_give_way),
      cmocka_unit_test(test_shared_with_child),
      cmocka_unit_test(test_racing_threads),
      cmocka_unit_test(test_ring_write_read),
      cmocka_unit_test(test_ring_wraps),
      cmocka_unit_test(test_ring_reader_behind),
      cmocka_unit_test(test_ring_torn),
      cmocka_unit_test(test_ring_across_processes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
