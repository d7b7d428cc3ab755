/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Reads from hot standbys (pg_internal.h): how fresh the standby is, and
 * whether a read may go there.
 *
 * A check runs on a timer, on the loop, one at a time: the primary's WAL
 * position is sampled (the time taken just before the statement is sent),
 * then the standby is asked whether it has replayed up to it. A write
 * acknowledged before the sample was sent had its commit record written
 * by then, so a standby past the sampled position holds it. The sampled
 * time is compared with the monotonic clock only, never with the servers'
 * clocks. A read server that is not in recovery (libpq's multi-host URI
 * may land on the primary itself) counts as fresh. */
#include <stdio.h>
#include <string.h>

#include "store/pg_internal.h"

#define MS_NS 1000000ULL
#define INTERVAL_MIN_MS 5
#define INTERVAL_MAX_MS 1000

bool dg__pg_read_on_standby(uint64_t fresh_ns, uint64_t wrote_ns, uint64_t now_ns,
                            uint64_t max_lag_ns) {
  if (fresh_ns == 0 || fresh_ns <= wrote_ns || now_ns < fresh_ns)
    return false;
  return now_ns - fresh_ns <= max_lag_ns;
}

/* Four checks per bound, so that a standby keeping up is seldom judged
 * stale only because the last check is old. */
uint64_t dg__pg_replica_interval_ms(uint64_t max_lag_ms) {
  uint64_t ms = max_lag_ms / 4;
  if (ms < INTERVAL_MIN_MS)
    return INTERVAL_MIN_MS;
  return ms > INTERVAL_MAX_MS ? INTERVAL_MAX_MS : ms;
}

bool dg__pg_replica_usable(const dg__pg_replica_t *r) {
  return r->standby != NULL &&
         dg__pg_read_on_standby(r->fresh_ns, r->wrote_ns, dg_now_ns(), r->max_lag_ns);
}

void dg__pg_replica_wrote(dg__pg_replica_t *r) {
  r->wrote_ns = dg_now_ns();
}

void dg__pg_replica_failed(dg__pg_replica_t *r) {
  r->fresh_ns = 0;
}

/* ---- The check ------------------------------------------------------------------------ */

static void check_end(dg__pg_replica_t *r, dg__pg_conn_t *conn, bool fresh) {
  if (conn != NULL)
    dg__pg_release(conn);
  r->checks++;
  if (fresh && r->sample_ns > r->fresh_ns)
    r->fresh_ns = r->sample_ns;
  else if (!fresh)
    r->stale++;
  r->checking = false;
}

static void on_replayed(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                        void *data) {
  dg__pg_replica_t *r = data;
  (void)err;
  bool fresh = status == 0 && PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
  /* A standby that fails the check (gone, or a recovery conflict) is not
   * trusted until a check passes again. */
  if (status != 0)
    r->fresh_ns = 0;
  check_end(r, conn, fresh);
}

static void on_standby_conn(dg__pg_conn_t *conn, int status, const dg_errctx_t *err, void *data) {
  dg__pg_replica_t *r = data;
  (void)err;
  if (status != 0) {
    r->fresh_ns = 0;
    check_end(r, NULL, false);
    return;
  }
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_put(&sql, "SELECT coalesce(pg_last_wal_replay_lsn() >= ");
  dg__sql_bind_text(&sql, r->lsn);
  dg__sql_put(&sql, "::pg_lsn, NOT pg_is_in_recovery())");
  dg_errctx_t e;
  int rc = dg__pg_query(conn, &sql, on_replayed, r, &e);
  dg__sql_free(&sql);
  if (rc != 0) {
    r->fresh_ns = 0;
    check_end(r, conn, false);
  }
}

static void on_sampled(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                       void *data) {
  dg__pg_replica_t *r = data;
  (void)err;
  bool ok = status == 0 && PQntuples(res) == 1 && !PQgetisnull(res, 0, 0);
  if (ok)
    snprintf(r->lsn, sizeof(r->lsn), "%s", PQgetvalue(res, 0, 0));
  dg__pg_release(conn);
  /* The primary cannot say where it is: nothing is learnt this time. After
   * a stop the standby's pool may be gone. */
  if (!ok || r->stopped || dg__pg_acquire(r->standby, on_standby_conn, r) != 0)
    check_end(r, NULL, false);
}

static void on_primary_conn(dg__pg_conn_t *conn, int status, const dg_errctx_t *err, void *data) {
  dg__pg_replica_t *r = data;
  (void)err;
  if (status != 0) {
    check_end(r, NULL, false);
    return;
  }
  dg_errctx_t e;
  r->sample_ns = dg_now_ns();
  if (dg__pg_exec(conn, "SELECT pg_current_wal_lsn()::text", on_sampled, r, &e) != 0)
    check_end(r, conn, false);
}

static void on_tick(uv_timer_t *t) {
  dg__pg_replica_t *r = t->data;
  if (r->checking)
    return;
  r->checking = dg__pg_acquire(r->primary, on_primary_conn, r) == 0;
}

void dg__pg_replica_start(dg__pg_replica_t *r, uv_loop_t *loop, dg__pg_pool_t *primary,
                          dg__pg_pool_t *standby, uint64_t max_lag_ms) {
  r->primary = primary;
  r->standby = standby;
  r->max_lag_ns = max_lag_ms * MS_NS;
  uv_timer_init(loop, &r->timer);
  r->timer.data = r;
  uv_timer_start(&r->timer, on_tick, 0, dg__pg_replica_interval_ms(max_lag_ms));
}

void dg__pg_replica_stop(dg__pg_replica_t *r, uv_close_cb cb) {
  r->stopped = true;
  uv_timer_stop(&r->timer);
  uv_close((uv_handle_t *)&r->timer, cb);
}
