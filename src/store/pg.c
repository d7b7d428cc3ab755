/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The PostgreSQL driver (server.database or --database "postgresql://..."):
 * a bounded pool of non-blocking libpq connections on the loop
 * (pg_conn.c); nothing runs on the threadpool. Each request takes a
 * connection, runs its statements (pg_entities.c, pg_read.c,
 * pg_aggregate.c, pg_submit.c) and gives it back.
 *
 * Open: the URI is checked (no password in it), the schema migrated under
 * an advisory lock (pg_schema.c), the sample data loaded once per database
 * (also under an advisory lock, so that gateways starting together load
 * it once), and submissions whose lease expired marked interrupted; the
 * store is open once its listener for cancels between gateways listens
 * (pg_cancel.c). While open, a timer renews the leases of this store's
 * running submissions and recovers expired ones of any gateway.
 *
 * With server.readDatabase, a second pool on hot standbys serves the read
 * tools while pg_replica.c finds the standby fresh enough; every write,
 * submission, migration and the form tools' reads use the primary. */
#include <stdlib.h>
#include <string.h>

#include "store/pg_internal.h"

#define POOL_CONNS 8         /* connections per store (per worker), without server.databasePool */
#define LEASE_MS 30000       /* a running submission's lease */
#define LEASE_RENEW_MS 10000 /* how often leases are renewed and expired ones recovered */
#define ABANDONED_MAX 256    /* abandoned submissions remembered until their lease is out */
#define SAMPLE_LOCK 0x64617461676175LL
#define LISTEN_POLL_MS 5 /* how often an opening store looks whether its listener listens */
#define LISTEN_WAIT_MS DG__PG_CONNECT_TIMEOUT_MS

typedef struct dg__pg {
  dg_store_t *store;
  dg__pg_pool_t *pool;
  dg__pg_pool_t *read_pool; /* hot standbys (server.readDatabase), or NULL */
  dg__pg_replica_t replica;
  bool replica_started;
  uv_timer_t timer; /* open failures on a later turn, then the leases */
  int open_status;
  /* Opening: the connection and the sample data being loaded. */
  dg__pg_conn_t *conn;
  dg_arena_t *arena;
  dg_store_write_t *writes;
  size_t nwrites, next;
  int sample_step;
  int interrupted; /* submissions marked interrupted at open */
  bool renewing;
  /* Submissions whose outcome could not be recorded (the database went
   * away mid-finish): their leases are no longer renewed, so that they
   * run out and any gateway marks them interrupted instead of them
   * showing as running for as long as this process lives. */
  struct {
    char id[64];
    uint64_t at; /* loop time it was abandoned */
  } abandoned[ABANDONED_MAX];
  size_t nabandoned;
  uint64_t listen_waited; /* ms waited at open for the cancel listener */
} dg__pg_t;

static bool pg_accepts(const char *path) {
  return strncmp(path, "postgresql://", 13) == 0 || strncmp(path, "postgres://", 11) == 0;
}

static dg__pg_t *state(dg_store_t *s) {
  return s->drv;
}

/* ---- Opening -------------------------------------------------------------------------- */

/* The timer is closed before the store hears of the failure: the store
 * frees this state then. */
static void on_failed_timer_closed(uv_handle_t *h) {
  dg__pg_t *pg = h->data;
  dg__store_opened(pg->store, pg->open_status);
}

static void on_pool_closed_after_failure(void *data) {
  dg__pg_t *pg = data;
  uv_close((uv_handle_t *)&pg->timer, on_failed_timer_closed);
}

static void close_primary_after_failure(void *data) {
  dg__pg_t *pg = data;
  if (pg->pool == NULL) {
    on_pool_closed_after_failure(pg);
    return;
  }
  dg__pg_pool_t *pool = pg->pool;
  pg->pool = NULL;
  dg__pg_pool_close(pool, on_pool_closed_after_failure, pg);
}

/* Ends a failed open: store->open_err says why. */
static void open_fail(dg__pg_t *pg, int status) {
  pg->open_status = status;
  if (pg->conn != NULL)
    dg__pg_release(pg->conn);
  pg->conn = NULL;
  dg_arena_destroy(pg->arena);
  pg->arena = NULL;
  if (pg->read_pool != NULL) {
    dg__pg_pool_t *pool = pg->read_pool;
    pg->read_pool = NULL;
    dg__pg_pool_close(pool, close_primary_after_failure, pg);
    return;
  }
  close_primary_after_failure(pg);
}

static void lease_tick(uv_timer_t *t);

static void ready(dg__pg_t *pg) {
  uv_timer_start(&pg->timer, lease_tick, LEASE_RENEW_MS, LEASE_RENEW_MS);
  if (pg->read_pool != NULL) {
    dg__pg_replica_start(&pg->replica, pg->store->loop, pg->pool, pg->read_pool,
                         pg->store->cat->server.read_max_lag_ms);
    pg->replica_started = true;
  }
  dg__store_opened(pg->store, 0);
}

static void note_not_listening(dg__pg_t *pg) {
  json_array_append_new(pg->store->open_notes,
                        json_pack("{s:s,s:s}", "event", "cancel_listener_not_ready", "msg",
                                  "cancels sent from other gateways are missed until the "
                                  "listener connects"));
}

/* Waits for the cancel listener, so that a gateway that says it is ready
 * hears the cancels of its calls; one slower than LISTEN_WAIT_MS is not
 * waited for. */
static void listen_tick(uv_timer_t *t) {
  dg__pg_t *pg = t->data;
  bool listening = dg__pg_listening(pg->pool);
  pg->listen_waited += LISTEN_POLL_MS;
  if (!listening && pg->listen_waited < LISTEN_WAIT_MS)
    return;
  uv_timer_stop(t);
  if (!listening)
    note_not_listening(pg);
  ready(pg);
}

static void opened(dg__pg_t *pg) {
  if (pg->interrupted > 0)
    json_array_append_new(
        pg->store->open_notes,
        json_pack("{s:s,s:i}", "event", "submissions_interrupted", "count", pg->interrupted));
  dg__pg_release(pg->conn);
  pg->conn = NULL;
  dg_arena_destroy(pg->arena);
  pg->arena = NULL;
  if (dg__pg_cancel_listen(pg->pool, pg->store) != 0) {
    note_not_listening(pg);
    ready(pg);
    return;
  }
  uv_timer_start(&pg->timer, listen_tick, LISTEN_POLL_MS, LISTEN_POLL_MS);
}

static void on_interrupted(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                           void *data) {
  dg__pg_t *pg = data;
  (void)conn;
  if (status != 0) {
    pg->store->open_err = *err;
    open_fail(pg, status);
    return;
  }
  pg->interrupted += PQntuples(res);
  opened(pg);
}

/* Running submissions of this machine whose process is gone (a restart
 * after a crash) are interrupted at once, without waiting for their
 * lease, as on SQLite. */
static void on_running(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                       void *data) {
  dg__pg_t *pg = data;
  const char *self = pg->store->owner;
  if (status != 0) {
    pg->store->open_err = *err;
    open_fail(pg, status);
    return;
  }
  const char **dead = dg_arena_calloc(pg->arena, DG__PG_INTERRUPT_MAX, sizeof(*dead));
  size_t n = 0;
  for (int i = 0; dead != NULL && i < PQntuples(res) && n < DG__PG_INTERRUPT_MAX; i++) {
    const char *owner = PQgetvalue(res, i, 1);
    if (dg__store_owner_same_machine(owner, self) && !dg__store_owner_alive(owner, self))
      dead[n++] = dg_arena_strdup(pg->arena, PQgetvalue(res, i, 0));
  }
  if (n == 0) {
    opened(pg);
    return;
  }
  int rc = dg__pg_interrupt(conn, dead, n, on_interrupted, pg, &pg->store->open_err);
  if (rc != 0)
    open_fail(pg, rc);
}

static void on_recovered(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                         void *data) {
  dg__pg_t *pg = data;
  if (status != 0) {
    pg->store->open_err = *err;
    open_fail(pg, status);
    return;
  }
  pg->interrupted = PQntuples(res);
  if (pg->arena == NULL)
    pg->arena = dg_arena_new(16384);
  int rc = pg->arena == NULL ? DG_ENOMEM
                             : dg__pg_exec(conn,
                                           "SELECT id, owner FROM \"_dg_submissions\" WHERE "
                                           "status = 'running' LIMIT 10000",
                                           on_running, pg, &pg->store->open_err);
  if (rc != 0)
    open_fail(pg, rc);
}

static void recover(dg__pg_t *pg) {
  int rc = dg__pg_recover_submissions(pg->conn, on_recovered, pg, &pg->store->open_err);
  if (rc != 0)
    open_fail(pg, rc);
}

/* Sample data: BEGIN, the lock, whether it was loaded, the writes, the
 * mark, COMMIT. */
enum { SAMPLE_BEGIN, SAMPLE_LOCKED, SAMPLE_CHECKED, SAMPLE_WRITE, SAMPLE_MARKED, SAMPLE_DONE };

static void sample_step(dg__pg_t *pg);

static void on_sample(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                      void *data) {
  dg__pg_t *pg = data;
  (void)conn;
  if (status != 0) {
    pg->store->open_err = *err;
    dg_errctx_set(&pg->store->open_err, status, "server.database",
                  "The sample data could not be loaded: %s", err->message);
    open_fail(pg, status);
    return;
  }
  if (pg->sample_step == SAMPLE_CHECKED && PQntuples(res) > 0)
    pg->nwrites = 0; /* loaded before, by this or another gateway */
  if (pg->sample_step == SAMPLE_WRITE && ++pg->next < pg->nwrites) {
    sample_step(pg);
    return;
  }
  if (pg->sample_step == SAMPLE_DONE) {
    recover(pg);
    return;
  }
  pg->sample_step++;
  if (pg->sample_step == SAMPLE_WRITE && pg->nwrites == 0)
    pg->sample_step = SAMPLE_MARKED;
  sample_step(pg);
}

static void sample_step(dg__pg_t *pg) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  switch (pg->sample_step) {
  case SAMPLE_BEGIN:
    dg__sql_put(&sql, "BEGIN");
    break;
  case SAMPLE_LOCKED:
    dg__sql_putf(&sql, "SELECT pg_advisory_xact_lock(%lld)", (long long)SAMPLE_LOCK);
    break;
  case SAMPLE_CHECKED:
    dg__sql_put(&sql, "SELECT 1 FROM \"_dg_meta\" WHERE key = 'sample_loaded'");
    break;
  case SAMPLE_WRITE:
    dg__sql_write(&sql, &pg->writes[pg->next], pg->writes[pg->next].id);
    break;
  case SAMPLE_MARKED:
    dg__sql_put(&sql, "INSERT INTO \"_dg_meta\" (key, value) VALUES ('sample_loaded', 'yes') "
                      "ON CONFLICT (key) DO NOTHING");
    break;
  default:
    dg__sql_put(&sql, "COMMIT");
  }
  int rc = dg__pg_query(pg->conn, &sql, on_sample, pg, &pg->store->open_err);
  dg__sql_free(&sql);
  if (rc != 0)
    open_fail(pg, rc);
}

static void load_sample(dg__pg_t *pg) {
  dg_store_t *s = pg->store;
  if (s->sample_dir == NULL) {
    recover(pg);
    return;
  }
  pg->arena = dg_arena_new(16384);
  int rc = pg->arena != NULL ? dg__store_sample_read(s->cat, s->sample_dir, pg->arena, &pg->writes,
                                                     &pg->nwrites, &s->open_err)
                             : dg_errctx_set(&s->open_err, DG_ENOMEM, "", "out of memory");
  if (rc != 0) {
    open_fail(pg, rc);
    return;
  }
  pg->sample_step = SAMPLE_BEGIN;
  sample_step(pg);
}

static void on_migrated(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                        void *data) {
  dg__pg_t *pg = data;
  (void)conn;
  (void)res;
  if (status != 0) {
    dg_errctx_set(&pg->store->open_err, status, "server.database",
                  "The PostgreSQL schema could not be created or migrated: %s", err->message);
    open_fail(pg, status);
    return;
  }
  load_sample(pg);
}

static void on_open_conn(dg__pg_conn_t *conn, int status, const dg_errctx_t *err, void *data) {
  dg__pg_t *pg = data;
  if (status != 0) {
    pg->store->open_err = *err;
    dg_strlcpy(pg->store->open_err.param, "server.database", sizeof(pg->store->open_err.param));
    open_fail(pg, status);
    return;
  }
  pg->conn = conn;
  int rc = dg__pg_migrate(conn, pg->store->cat, on_migrated, pg, &pg->store->open_err);
  if (rc != 0)
    open_fail(pg, rc);
}

/* The password is the value of the variable server.databasePasswordEnv
 * names (PGPASSWORD by default); NULL leaves libpq to read PGPASSWORD. */
static const char *password_of(const dg_server_settings_t *server) {
  const char *name = server->database_password_env;
  const char *value = name != NULL ? getenv(name) : NULL;
  return value != NULL && value[0] != '\0' ? value : NULL;
}

static void pg_open(dg_store_t *s) {
  dg__pg_t *pg = state(s);
  pg->store = s;
  dg__store_owner(s->owner);
  uv_timer_init(s->loop, &pg->timer);
  pg->timer.data = pg;
  int rc = dg__pg_uri_check(s->path, "server.database", &s->open_err);
  if (rc == 0 && s->read_path != NULL)
    rc = dg__pg_uri_check(s->read_path, "server.readDatabase", &s->open_err);
  const dg_server_settings_t *server = &s->cat->server;
  dg__pg_options_t o = {.uri = s->path,
                        .password = password_of(server),
                        .max_conns = server->database_pool ? server->database_pool : POOL_CONNS,
                        .statement_timeout_ms = server->tool_timeout_ms};
  if (rc == 0 && dg__pg_pool_new(s->loop, &o, &pg->pool) != 0)
    rc = dg_errctx_set(&s->open_err, DG_ENOMEM, "", "out of memory");
  o.uri = s->read_path;
  if (rc == 0 && s->read_path != NULL && dg__pg_pool_new(s->loop, &o, &pg->read_pool) != 0)
    rc = dg_errctx_set(&s->open_err, DG_ENOMEM, "", "out of memory");
  if (rc == 0 && dg__pg_acquire(pg->pool, on_open_conn, pg) != 0)
    rc = dg_errctx_set(&s->open_err, DG_ENOMEM, "", "out of memory");
  if (rc != 0)
    open_fail(pg, rc);
}

/* ---- Leases ----------------------------------------------------------------------------- */

static void on_recover_tick(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                            void *data) {
  dg__pg_t *pg = data;
  (void)status;
  (void)res;
  (void)err;
  dg__pg_release(conn);
  pg->renewing = false;
}

static void on_renewed(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                       void *data) {
  dg__pg_t *pg = data;
  dg_errctx_t e;
  (void)status;
  (void)res;
  (void)err;
  if (dg__pg_recover_submissions(conn, on_recover_tick, pg, &e) != 0) {
    dg__pg_release(conn);
    pg->renewing = false;
  }
}

static void abandon(dg__pg_t *pg, const char *submission_id) {
  if (submission_id == NULL || strlen(submission_id) >= sizeof(pg->abandoned[0].id) ||
      pg->nabandoned == ABANDONED_MAX)
    return;
  snprintf(pg->abandoned[pg->nabandoned].id, sizeof(pg->abandoned[0].id), "%s", submission_id);
  pg->abandoned[pg->nabandoned++].at = uv_now(pg->store->loop);
}

/* Forgets the abandoned submissions whose lease has surely run out (the
 * renewal leaves an expired lease alone); the rest, as a list. */
static size_t abandoned_ids(dg__pg_t *pg, const char **ids) {
  uint64_t now = uv_now(pg->store->loop);
  size_t kept = 0;
  for (size_t i = 0; i < pg->nabandoned; i++) {
    if (now - pg->abandoned[i].at > LEASE_MS + 2 * LEASE_RENEW_MS)
      continue;
    pg->abandoned[kept++] = pg->abandoned[i];
  }
  pg->nabandoned = kept;
  for (size_t i = 0; i < kept; i++)
    ids[i] = pg->abandoned[i].id;
  return kept;
}

static void on_lease_conn(dg__pg_conn_t *conn, int status, const dg_errctx_t *err, void *data) {
  dg__pg_t *pg = data;
  dg_errctx_t e;
  (void)err;
  if (status != 0) {
    pg->renewing = false;
    return;
  }
  const char *skip[ABANDONED_MAX];
  size_t nskip = abandoned_ids(pg, skip);
  if (dg__pg_renew_leases(conn, pg->store->owner, LEASE_MS, skip, nskip, on_renewed, pg, &e) != 0) {
    dg__pg_release(conn);
    pg->renewing = false;
  }
}

static void lease_tick(uv_timer_t *t) {
  dg__pg_t *pg = t->data;
  if (pg->renewing || pg->pool == NULL)
    return;
  pg->renewing = dg__pg_acquire(pg->pool, on_lease_conn, pg) == 0;
}

/* ---- Requests ----------------------------------------------------------------------------- */

/* A request's driver state, kept in its work handle's data (the driver
 * never uses the threadpool). */
typedef struct op {
  dg_store_req_t *r;
  dg__pg_conn_t *conn;
  bool standby; /* served by the read pool */
} op_t;

static bool is_write(dg__store_kind_t kind) {
  return kind == DG__STORE_WRITE || kind == DG__STORE_SUBMIT || kind == DG__STORE_FINISH;
}

/* The read tools' statements; the form tools' reads (r->primary) need
 * this gateway's own writes and the submission status its submissions. */
static bool may_use_standby(const dg_store_req_t *r) {
  bool read = r->kind == DG__STORE_QUERY || r->kind == DG__STORE_FETCH ||
              r->kind == DG__STORE_LOOKUP || r->kind == DG__STORE_AGGREGATE;
  return read && !r->primary;
}

static void op_end(op_t *op, int status, json_t *result, const dg_errctx_t *err) {
  dg_store_req_t *r = op->r;
  dg__pg_t *pg = state(r->store);
  /* Even a failed write may have committed: later reads go to the primary. */
  if (is_write(r->kind) && pg->replica_started)
    dg__pg_replica_wrote(&pg->replica);
  if (r->kind == DG__STORE_FINISH && status != 0 && r->in.finish != NULL)
    abandon(pg, r->in.finish->submission_id);
  r->status = status;
  r->result = status == 0 ? result : NULL;
  if (status != 0) {
    json_decref(result);
    if (err != NULL)
      r->err = *err;
  }
  if (op->conn != NULL)
    dg__pg_release(op->conn);
  free(op);
  dg__store_done(r);
}

static int op_acquire(op_t *op, bool standby);

/* A read the standby failed (lost, unreachable, a recovery conflict) is
 * sent again to the primary, once: reads change nothing. */
static bool retry_on_primary(op_t *op, int status) {
  dg__pg_t *pg = state(op->r->store);
  if (!op->standby || status != DG_EIO || atomic_load(&op->r->canceled))
    return false;
  dg__pg_replica_failed(&pg->replica);
  if (op->conn != NULL)
    dg__pg_release(op->conn);
  op->conn = NULL;
  op->standby = false;
  return op_acquire(op, false) == 0;
}

static void on_op_done(int status, json_t *result, const dg_errctx_t *err, void *data) {
  op_t *op = data;
  if (status != 0 && retry_on_primary(op, status)) {
    json_decref(result);
    return;
  }
  if (status != 0 && atomic_load(&op->r->canceled)) {
    status = dg_errctx_set(&op->r->err, DG_ECANCELED, "", "The request was canceled.");
    err = &op->r->err;
  }
  op_end(op, status, result, err);
}

static void on_submission(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                          void *data) {
  static const char *const keys[] = {"submissionId", "dataModel", "entityId",  "operation",
                                     "endpoint",     "system",    "status",    "failedAction",
                                     "reason",       "createdAt", "finishedAt"};
  (void)conn;
  json_t *found = NULL;
  if (status == 0 && PQntuples(res) > 0) {
    found = json_object();
    for (size_t i = 0; found != NULL && i < DG_ARRAY_SIZE(keys); i++)
      json_object_set_new(found, keys[i],
                          PQgetisnull(res, 0, (int)i) ? json_null()
                                                      : json_string(PQgetvalue(res, 0, (int)i)));
  }
  json_t *result =
      status == 0 ? json_pack("{s:o}", "submission", found ? found : json_null()) : NULL;
  on_op_done(status, result, err, data);
}

static int op_start(op_t *op, dg_errctx_t *err) {
  dg_store_req_t *r = op->r;
  dg_store_t *s = r->store;
  size_t max = s->max_result_bytes;
  /* The statement is copied only when the debug log will show it. */
  char **log_sql = dg_log_enabled(DG_LOG_DEBUG) ? &r->sql : NULL;
  switch (r->kind) {
  case DG__STORE_QUERY:
    return dg__pg_query_entities(op->conn, r->in.query, max, log_sql, on_op_done, op, err);
  case DG__STORE_FETCH:
    return dg__pg_fetch(op->conn, r->in.fetch, max, log_sql, on_op_done, op, err);
  case DG__STORE_LOOKUP:
    return dg__pg_lookup(op->conn, r->in.lookup, max, log_sql, on_op_done, op, err);
  case DG__STORE_AGGREGATE:
    return dg__pg_aggregate(op->conn, r->in.aggregate, max, log_sql, on_op_done, op, err);
  case DG__STORE_WRITE:
    return dg__pg_write(op->conn, r->in.write, on_op_done, op, err);
  case DG__STORE_SUBMIT:
    return dg__pg_submit(op->conn, r->in.submit, s->owner, LEASE_MS, on_op_done, op, err);
  case DG__STORE_FINISH:
    return dg__pg_finish(op->conn, r->in.finish, on_op_done, op, err);
  default:
    return dg__pg_submission(op->conn, r->in.submission, on_submission, op, err);
  }
}

static void on_op_conn(dg__pg_conn_t *conn, int status, const dg_errctx_t *err, void *data) {
  op_t *op = data;
  op->conn = conn;
  if (status != 0 && retry_on_primary(op, status))
    return;
  if (status == 0 && atomic_load(&op->r->canceled))
    status = dg_errctx_set(&op->r->err, DG_ECANCELED, "", "The request was canceled.");
  else if (status != 0)
    op->r->err = *err;
  dg_errctx_t e;
  if (status == 0)
    status = op_start(op, &e);
  else
    e = op->r->err;
  if (status != 0)
    op_end(op, status, NULL, &e);
}

static int op_acquire(op_t *op, bool standby) {
  dg__pg_t *pg = state(op->r->store);
  op->standby = standby;
  if (pg->replica_started && may_use_standby(op->r))
    *(standby ? &pg->replica.on_standby : &pg->replica.on_primary) += 1;
  return dg__pg_acquire(standby ? pg->read_pool : pg->pool, on_op_conn, op);
}

static int pg_submit(dg_store_req_t *r) {
  dg__pg_t *pg = state(r->store);
  op_t *op = calloc(1, sizeof(*op));
  if (op == NULL)
    return dg_errctx_set(&r->err, DG_ENOMEM, "", "out of memory");
  op->r = r;
  r->work.data = op;
  bool standby = pg->replica_started && may_use_standby(r) && dg__pg_replica_usable(&pg->replica);
  int rc = op_acquire(op, standby);
  if (rc != 0) {
    free(op);
    return dg_errctx_set(&r->err, rc, "",
                         rc == DG_EBUSY ? "Too many requests are waiting for the database."
                                        : "The store is closing.");
  }
  return 0;
}

static int pg_publish(dg_store_t *s, const char *payload) {
  dg__pg_t *pg = state(s);
  return pg->pool != NULL ? dg__pg_cancel_publish(pg->pool, payload) : DG_ECLOSED;
}

static void pg_cancel(dg_store_req_t *r) {
  op_t *op = r->work.data;
  if (op != NULL && op->conn != NULL)
    dg__pg_cancel(op->conn);
}

/* ---- Closing ------------------------------------------------------------------------------- */

static void on_timer_closed(uv_handle_t *h) {
  dg__pg_t *pg = h->data;
  dg__store_closed(pg->store);
}

static void on_pool_closed(void *data) {
  dg__pg_t *pg = data;
  uv_close((uv_handle_t *)&pg->timer, on_timer_closed);
}

static void close_primary(void *data) {
  dg__pg_t *pg = data;
  dg__pg_pool_close(pg->pool, on_pool_closed, pg);
}

static void on_replica_stopped(uv_handle_t *h) {
  dg__pg_t *pg = h->data;
  dg__pg_pool_close(pg->read_pool, close_primary, pg);
}

static void pg_close(dg_store_t *s) {
  dg__pg_t *pg = state(s);
  uv_timer_stop(&pg->timer);
  if (pg->replica_started) {
    pg->replica.timer.data = pg;
    dg__pg_replica_stop(&pg->replica, on_replica_stopped);
    return;
  }
  close_primary(pg);
}

dg__pg_pool_t *dg__pg_store_pool(const dg_store_t *s) {
  return state((dg_store_t *)s)->pool;
}

const dg__pg_replica_t *dg__pg_store_replica(const dg_store_t *s) {
  const dg__pg_t *pg = state((dg_store_t *)s);
  return pg->replica_started ? &pg->replica : NULL;
}

const dg__store_driver_t dg__store_postgres = {
    .name = "postgresql",
    .state_size = sizeof(dg__pg_t),
    .accepts = pg_accepts,
    .open = pg_open,
    .submit = pg_submit,
    .cancel = pg_cancel,
    .close = pg_close,
    .publish = pg_publish,
};
