/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The PostgreSQL driver's own declarations, shared by src/store/pg*.c.
 *
 * Connections are libpq connections used non-blocking on the loop thread:
 * PQconnectStart/PQconnectPoll to connect, PQsendQueryParams to send,
 * PQsocket watched with uv_poll, PQconsumeInput and PQgetResult when it
 * is readable. Nothing here blocks and nothing runs on the threadpool.
 *
 * A pool holds at most max_conns connections of one loop. A request takes
 * a connection with dg__pg_acquire, runs its statements on it one after
 * the other, and gives it back with dg__pg_release. A connection that
 * failed (lost, terminated by the server) is closed when released; the
 * next request gets a fresh one. When connecting fails, further attempts
 * wait a backoff that doubles up to backoff_max_ms, and requests asking
 * in the meantime fail at once with the last failure.
 *
 * A multi-host URI is walked by libpq, which moves to the next host when
 * one refuses or is not the kind target_session_attrs asks for; a host
 * that does not answer at all (a dead machine) holds the attempt until
 * the connect timeout. The pool then starts its next attempts at the host
 * after that one, so that a failover to a later host of the URI is found
 * even while the old primary's address swallows packets. */
#ifndef DATAGATE_STORE_PG_INTERNAL_H
#define DATAGATE_STORE_PG_INTERNAL_H

#include <libpq-fe.h>

#include "store/internal.h"

#define DG__PG_WAITERS_MAX 4096 /* requests waiting for a connection */
#define DG__PG_CONNECT_TIMEOUT_MS 10000
#define DG__PG_BACKOFF_MIN_MS 100
#define DG__PG_BACKOFF_MAX_MS 5000
#define DG__PG_APPLICATION_NAME "datagate" /* unless the URI names one */

typedef struct dg__pg_pool dg__pg_pool_t;
typedef struct dg__pg_conn dg__pg_conn_t;

typedef struct dg__pg_options {
  const char *uri;               /* libpq connection URI, without a password */
  const char *password;          /* NULL: PGPASSWORD, as libpq reads it; never a file */
  unsigned max_conns;            /* at least 1 */
  uint64_t statement_timeout_ms; /* set on each connection; 0: the server's default */
  uint64_t backoff_max_ms;       /* 0: DG__PG_BACKOFF_MAX_MS */
  uint64_t connect_timeout_ms;   /* 0: DG__PG_CONNECT_TIMEOUT_MS */
} dg__pg_options_t;

/* conn is NULL when status is not 0 (err says why: DG_EIO when the
 * database cannot be reached, DG_EBUSY with too many waiting,
 * DG_ECANCELED when the pool closes). */
typedef void (*dg__pg_acquire_cb)(dg__pg_conn_t *conn, int status, const dg_errctx_t *err,
                                  void *data);
/* res is the statement's last result (freed after cb returns), or NULL
 * with a failure: DG_ETIMEDOUT (statement_timeout), DG_ECANCELED
 * (dg__pg_cancel), DG_EEXIST (a unique constraint), DG_EIO (the
 * connection was lost, or another error, in err). */
typedef void (*dg__pg_query_cb)(dg__pg_conn_t *conn, int status, PGresult *res,
                                const dg_errctx_t *err, void *data);

/* Checks a connection URI given as param ("server.database"): DG_ECONFIG
 * when libpq cannot read it, or when it holds a password or names a
 * password file (passwords come from the environment only). The message
 * never repeats the URI. */
int dg__pg_uri_check(const char *uri, const char *param, dg_errctx_t *err);

int dg__pg_pool_new(uv_loop_t *loop, const dg__pg_options_t *o, dg__pg_pool_t **out);
/* Fails the waiting requests with DG_ECANCELED and closes the connections
 * (those in use when they are released); then cb (may be NULL). */
void dg__pg_pool_close(dg__pg_pool_t *pool, void (*cb)(void *data), void *data);

/* cb runs once, on a later loop turn. 0, or DG_ENOMEM / DG_ECLOSED with
 * cb never called. */
int dg__pg_acquire(dg__pg_pool_t *pool, dg__pg_acquire_cb cb, void *data);
void dg__pg_release(dg__pg_conn_t *conn);

/* Sends the statement (text and binds of sql, which may be freed once this
 * returns); cb runs once, on a later loop turn. 0, or DG_EBUSY (a statement
 * is running), DG_ENOMEM or DG_EIO with cb never called and err filled. */
int dg__pg_query(dg__pg_conn_t *conn, const dg__sql_t *sql, dg__pg_query_cb cb, void *data,
                 dg_errctx_t *err);
/* The same for text without parameters (may hold several statements). */
int dg__pg_exec(dg__pg_conn_t *conn, const char *text, dg__pg_query_cb cb, void *data,
                dg_errctx_t *err);

/* Sends before and after (texts without parameters, each may be NULL)
 * around sql as one pipeline: the three statements go in one write and
 * are answered in one round trip. cb as for dg__pg_query, with sql's
 * result; when a statement fails, the server skips those after it and cb
 * gets the first failure (a transaction begun by before is then left
 * failed, for the caller's ROLLBACK). Returns as dg__pg_query. */
int dg__pg_pipeline(dg__pg_conn_t *conn, const char *before, const dg__sql_t *sql,
                    const char *after, dg__pg_query_cb cb, void *data, dg_errctx_t *err);
/* The transaction of the read tools. */
#define DG__PG_BEGIN_READ "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

/* Asks the server to cancel the statement running on conn, through
 * pg_cancel_backend on a connection of its own (libpq's PQcancel blocks).
 * The statement's cb reports DG_ECANCELED unless it had finished. conn
 * goes back to the pool only after the cancel has been answered, so that
 * it never stops a later request's statement. */
void dg__pg_cancel(dg__pg_conn_t *conn);

/* The server process of conn (pg_terminate_backend, pg_cancel_backend). */
int dg__pg_conn_pid(const dg__pg_conn_t *conn);
/* Whether conn failed and will be closed when released. */
bool dg__pg_conn_broken(const dg__pg_conn_t *conn);

/* ---- Notifications between gateways -------------------------------------------------
 * Every gateway of a fleet listens on one channel (LISTEN/NOTIFY), so
 * that a request reaching one instance can reach the instance running a
 * call (a cancel, a DELETE of its session). */
#define DG__PG_PAYLOAD_MAX 7999 /* bytes of a notification's payload */

typedef void (*dg__pg_notify_cb)(const char *channel, const char *payload, void *data);

/* Opens a connection of the pool's own that LISTENs on channel (lower-case
 * letters, digits and _) until the pool closes; cb runs on the loop for
 * each notification. A lost listener is opened again after a backoff;
 * notifications sent meanwhile are missed. 0, DG_EINVAL (a bad channel, or
 * one already), DG_ECLOSED or DG_ENOMEM. */
int dg__pg_listen(dg__pg_pool_t *pool, const char *channel, dg__pg_notify_cb cb, void *data);
/* Whether the listener listens now. */
bool dg__pg_listening(const dg__pg_pool_t *pool);
/* Sends payload on channel through conn (pg_notify, bound values); cb as
 * for dg__pg_query. Delivered when the sender's transaction commits. */
int dg__pg_notify(dg__pg_conn_t *conn, const char *channel, const char *payload, dg__pg_query_cb cb,
                  void *data, dg_errctx_t *err);

/* Cancels between gateways (pg_cancel.c, store.h): the channel every
 * store listens on; dg__pg_cancel_listen passes what it hears to
 * dg__store_cancel_heard of store; dg__pg_cancel_publish sends a payload
 * on a connection of pool and logs a failure (0, DG_ENOMEM or DG_ECLOSED). */
#define DG__PG_CANCEL_CHANNEL "datagate_cancel"
int dg__pg_cancel_listen(dg__pg_pool_t *pool, dg_store_t *store);
int dg__pg_cancel_publish(dg__pg_pool_t *pool, const char *payload);

/* Counters of a pool, for tests and metrics. */
typedef struct dg__pg_stats {
  unsigned open;        /* connections open or opening */
  unsigned idle;        /* of which waiting in the pool */
  unsigned waiting;     /* requests waiting for one */
  uint64_t connects;    /* connections ever made */
  uint64_t round_trips; /* statements and pipelines sent, each answered before the next */
} dg__pg_stats_t;
void dg__pg_pool_stats(const dg__pg_pool_t *pool, dg__pg_stats_t *out);

/* Reads columns [first, first + n) of row of res (pg_row.c). Text points
 * into res and stays valid while res lives. */
void dg__pg_row(const PGresult *res, int row, int first, size_t n, dg_store_value_t *out);

/* ---- Submissions (pg_submit.c) ------------------------------------------------------
 * As dg_store_submit (store.h), on conn, which the caller holds until cb:
 * the submission row is claimed first in the transaction through the
 * unique (principal, idempotency_key), so that the same key sent to
 * several gateways at once runs once; the others replay the first
 * outcome (or get DG_EEXIST for a different request). A running
 * submission gets a lease of lease_ms, renewed by its gateway. */
/* Completion of a whole store operation: result (the callee owns it) or
 * a failure in err. */
typedef void (*dg__pg_done_cb)(int status, json_t *result, const dg_errctx_t *err, void *data);
typedef dg__pg_done_cb dg__pg_submit_cb;

int dg__pg_submit(dg__pg_conn_t *conn, const dg_store_submit_t *s, const char *owner,
                  uint64_t lease_ms, dg__pg_submit_cb cb, void *data, dg_errctx_t *err);
/* As dg_store_finish: the outcome and the values the tree set, in one
 * transaction; the lease ends. Result {"submissionId", "status"}. */
int dg__pg_finish(dg__pg_conn_t *conn, const dg_store_finish_t *f, dg__pg_submit_cb cb, void *data,
                  dg_errctx_t *err);
/* As dg_store_submission: cb gets the row (or none): id, model,
 * entity_id, operation, endpoint, system, status, failed_action, reason,
 * created_at, finished_at. */
int dg__pg_submission(dg__pg_conn_t *conn, const dg_store_submission_get_t *g, dg__pg_query_cb cb,
                      void *data, dg_errctx_t *err);
/* Extends the leases of owner's running submissions to lease_ms from now,
 * but for those in skip (submissions whose outcome could not be recorded:
 * their lease runs out and any gateway marks them interrupted) and those
 * whose lease has already run out (another gateway may have taken them as
 * gone). */
int dg__pg_renew_leases(dg__pg_conn_t *conn, const char *owner, uint64_t lease_ms,
                        const char *const *skip, size_t nskip, dg__pg_query_cb cb, void *data,
                        dg_errctx_t *err);
/* Marks failed ("interrupted") the running submissions whose lease has
 * expired, whichever gateway started them; the result has their ids. */
int dg__pg_recover_submissions(dg__pg_conn_t *conn, dg__pg_query_cb cb, void *data,
                               dg_errctx_t *err);

/* Marks these running submissions interrupted (at most
 * DG__PG_INTERRUPT_MAX ids); the result has the ids marked. */
#define DG__PG_INTERRUPT_MAX 1000
int dg__pg_interrupt(dg__pg_conn_t *conn, const char *const *ids, size_t n, dg__pg_query_cb cb,
                     void *data, dg_errctx_t *err);

/* ---- Reads (pg_read.c) ----------------------------------------------------------------- */
/* The keyword search of one model: cols, then the score (lower is
 * better), best first, at most limit rows. */
void dg__pg_lookup_sql(dg__sql_t *sql, const dg_model_t *m, const dg__sql_cols_t *cols,
                       const char *const *terms, size_t nterms, int64_t limit);

/* lookup_by_keyword: the answer as on SQLite's shape (hits of every model,
 * best first), written out as JSON text of at most max bytes. */
int dg__pg_lookup(dg__pg_conn_t *conn, const dg_store_lookup_t *l, size_t max, char **log_sql,
                  dg__pg_done_cb cb, void *data, dg_errctx_t *err);
/* A write, as dg_store_write: result {"id", "created"}; DG_EEXIST (param
 * "id") when a create finds the id taken, DG_ENOENT when an update finds
 * no entity. */
int dg__pg_write(dg__pg_conn_t *conn, const dg_store_write_t *w, dg__pg_done_cb cb, void *data,
                 dg_errctx_t *err);

/* query_entities and get_entities_by_ids (pg_entities.c): the answers as
 * on SQLite, written out as JSON text (dg_json_raw) of at most max bytes. */
int dg__pg_query_entities(dg__pg_conn_t *conn, const dg_store_query_t *q, size_t max,
                          char **log_sql, dg__pg_done_cb cb, void *data, dg_errctx_t *err);
int dg__pg_fetch(dg__pg_conn_t *conn, const dg_store_fetch_t *f, size_t max, char **log_sql,
                 dg__pg_done_cb cb, void *data, dg_errctx_t *err);

/* aggregate_entities (pg_aggregate.c): the answer as on SQLite, written
 * out as JSON text (a dg_json_raw value) of at most max bytes; DG_E2BIG
 * over the grouped cap or the budget. */
int dg__pg_aggregate(dg__pg_conn_t *conn, const dg_store_aggregate_t *a, size_t max, char **log_sql,
                     dg__pg_done_cb cb, void *data, dg_errctx_t *err);

/* The reads above take log_sql, where the request's main statement is
 * kept for the debug log (store_request), as on SQLite: the page or the
 * ids, the first model's keyword search, the aggregate statement (not the
 * count before it). NULL keeps nothing. */
void dg__pg_keep_sql(char **log_sql, const dg__sql_t *sql);

/* ---- Schema (pg_schema.c) ----------------------------------------------------------- */
/* The advisory lock that orders migrations of gateways starting at once. */
#define DG__PG_MIGRATE_LOCK 0x64617461676174LL /* "datagat" */

/* The migration of cat as one text of statements (one implicit
 * transaction); identifiers are catalog names, nothing is bound. */
void dg__pg_schema(dg__sql_t *sql, const dg_catalog_t *cat);
/* Sends it on conn; cb as for dg__pg_exec. */
int dg__pg_migrate(dg__pg_conn_t *conn, const dg_catalog_t *cat, dg__pg_query_cb cb, void *data,
                   dg_errctx_t *err);
/* to_tsvector('simple', the keyword properties of m joined by spaces), as
 * the keyword index is built: lookups must repeat it exactly to use it. */
void dg__pg_keyword_document(dg__sql_t *sql, const dg_model_t *m, const char *alias);

/* ---- Reads from hot standbys (pg_replica.c) --------------------------------------------
 * With server.readDatabase, the read tools' statements may go to a pool of
 * their own on hot standbys. A check on a timer samples the primary's WAL
 * position (pg_current_wal_lsn) and then asks the standby whether it has
 * replayed that far: when it has, the standby holds every write
 * acknowledged before the sample was sent, and "fresh" becomes the time
 * the sample was sent (monotonic clock). A read goes to the standby only
 * while fresh is at most max_lag old and newer than this store's last
 * write; otherwise (and when the standby cannot be reached) to the
 * primary. */
typedef struct dg__pg_replica {
  dg__pg_pool_t *primary, *standby;
  uv_timer_t timer;
  uint64_t max_lag_ns;
  uint64_t fresh_ns; /* the standby holds every write acknowledged before; 0: unknown */
  uint64_t wrote_ns; /* this store's last write ended; 0: none */
  uint64_t sample_ns;
  char lsn[32]; /* the primary's position sampled at sample_ns */
  bool checking;
  bool stopped;           /* the pools may be closing: a running check ends without the standby */
  uint64_t checks, stale; /* checks ended, of which found the standby behind or gone */
  uint64_t on_standby, on_primary; /* reads sent to each (a retry counts again) */
} dg__pg_replica_t;

/* The routing rule: whether a read at now_ns may go to the standby. */
bool dg__pg_read_on_standby(uint64_t fresh_ns, uint64_t wrote_ns, uint64_t now_ns,
                            uint64_t max_lag_ns);
/* The time between two checks for a staleness bound of max_lag_ms. */
uint64_t dg__pg_replica_interval_ms(uint64_t max_lag_ms);

/* Starts the checks of standby against primary (both stay the caller's). */
void dg__pg_replica_start(dg__pg_replica_t *r, uv_loop_t *loop, dg__pg_pool_t *primary,
                          dg__pg_pool_t *standby, uint64_t max_lag_ms);
/* Whether a read now may go to the standby. */
bool dg__pg_replica_usable(const dg__pg_replica_t *r);
/* A write of this store ended: reads go to the primary until the standby
 * is seen past it. */
void dg__pg_replica_wrote(dg__pg_replica_t *r);
/* The standby failed a read: reads go to the primary until a check passes. */
void dg__pg_replica_failed(dg__pg_replica_t *r);
/* Stops the checks; cb once the timer is closed (the pools may close then;
 * a check still running ends on its own when they do). */
void dg__pg_replica_stop(dg__pg_replica_t *r, uv_close_cb cb);

/* A store's primary pool, and its replica state (NULL without
 * server.readDatabase): for tests. */
dg__pg_pool_t *dg__pg_store_pool(const dg_store_t *s);
const dg__pg_replica_t *dg__pg_store_replica(const dg_store_t *s);

#endif
