/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Shared helpers of the PostgreSQL tests: a server of their own started
 * by scripts/pg-test-server for the group, and waiting on the loop for
 * connections and statements. */
#ifndef DG_TEST_PG_TEST_H
#define DG_TEST_PG_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "store/pg_internal.h"

static char g_dir[512];
static char g_uri[512];

/* ---- The server ----------------------------------------------------------------------- */

static inline int server_start(void **state) {
  (void)state;
  const char *src = getenv("DG_SOURCE_DIR");
  char cmd[2048];
  snprintf(g_dir, sizeof(g_dir), "/tmp/dg-test-pg.%d", (int)getpid());
  snprintf(cmd, sizeof(cmd), "%s/scripts/pg-test-server start %s", src ? src : ".", g_dir);
  FILE *f = popen(cmd, "r");
  if (f == NULL || fgets(g_uri, sizeof(g_uri), f) == NULL) {
    if (f != NULL)
      pclose(f);
    return -1;
  }
  g_uri[strcspn(g_uri, "\n")] = '\0';
  return pclose(f) == 0 ? 0 : -1;
}

static inline int server_stop(void **state) {
  (void)state;
  const char *src = getenv("DG_SOURCE_DIR");
  char cmd[2048];
  snprintf(cmd, sizeof(cmd), "%s/scripts/pg-test-server stop %s", src ? src : ".", g_dir);
  return system(cmd) == 0 ? 0 : -1;
}

/* ---- Loop helpers ---------------------------------------------------------------------- */

typedef struct got {
  bool done;
  int status;
  dg__pg_conn_t *conn;
  dg_errctx_t err;
  char values[8][64];
  int nvalues;
} got_t;

static inline void on_acquire(dg__pg_conn_t *conn, int status, const dg_errctx_t *err, void *data) {
  got_t *g = data;
  g->done = true;
  g->status = status;
  g->conn = conn;
  if (err != NULL)
    g->err = *err;
}

static inline void on_query(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                            void *data) {
  got_t *g = data;
  (void)conn;
  g->done = true;
  g->status = status;
  if (err != NULL)
    g->err = *err;
  g->nvalues = 0;
  for (int i = 0; res != NULL && PQntuples(res) > 0 && i < PQnfields(res) && i < 8; i++) {
    snprintf(g->values[i], sizeof(g->values[i]), "%s",
             PQgetisnull(res, 0, i) ? "NULL" : PQgetvalue(res, 0, i));
    g->nvalues++;
  }
}

static inline void tick(uv_timer_t *t) {
  (void)t;
}

/* A turn of the loop may end its callbacks with the poll phase, where it
 * would sleep with g->done already set: a ticking timer wakes it. */
static inline void wait_for(uv_loop_t *loop, const got_t *g) {
  uv_timer_t t;
  uv_timer_init(loop, &t);
  uv_timer_start(&t, tick, 5, 5);
  while (!g->done)
    uv_run(loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
}

static inline dg__pg_pool_t *pool_new(uv_loop_t *loop, const char *uri, unsigned max,
                                      uint64_t timeout) {
  dg__pg_options_t o = {.uri = uri, .max_conns = max, .statement_timeout_ms = timeout};
  dg__pg_pool_t *pool = NULL;
  assert_int_equal(dg__pg_pool_new(loop, &o, &pool), 0);
  return pool;
}

static inline dg__pg_conn_t *acquire(uv_loop_t *loop, dg__pg_pool_t *pool) {
  got_t g = {0};
  assert_int_equal(dg__pg_acquire(pool, on_acquire, &g), 0);
  assert_false(g.done); /* never from inside the call */
  wait_for(loop, &g);
  if (g.status != 0)
    fail_msg("acquire: %s", g.err.message);
  return g.conn;
}

static inline void run_text(uv_loop_t *loop, dg__pg_conn_t *c, const char *text, got_t *g) {
  dg_errctx_t err;
  memset(g, 0, sizeof(*g));
  assert_int_equal(dg__pg_exec(c, text, on_query, g, &err), 0);
  wait_for(loop, g);
}

/* Waits until the statement on pid runs, seen from conn. */
static inline void wait_active(uv_loop_t *loop, dg__pg_conn_t *conn, int pid) {
  char text[160];
  snprintf(text, sizeof(text),
           "SELECT count(*) FROM pg_stat_activity WHERE pid = %d AND state = 'active'", pid);
  for (;;) {
    got_t g;
    run_text(loop, conn, text, &g);
    assert_int_equal(g.status, 0);
    if (strcmp(g.values[0], "1") == 0)
      return;
  }
}

static inline void closed(void *data) {
  *(bool *)data = true;
}

/* Closes pool and waits until it has closed; the loop stays open. */
static inline void pool_drain(uv_loop_t *loop, dg__pg_pool_t *pool) {
  bool done = false;
  dg__pg_pool_close(pool, closed, &done);
  while (!done)
    uv_run(loop, UV_RUN_ONCE);
}

static inline void pool_close(uv_loop_t *loop, dg__pg_pool_t *pool) {
  pool_drain(loop, pool);
  assert_int_equal(uv_run(loop, UV_RUN_NOWAIT), 0);
  assert_int_equal(uv_loop_close(loop), 0);
}

#endif
