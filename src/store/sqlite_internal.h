/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The SQLite driver's own declarations, shared by src/store/sqlite*.c:
 * connections (one per threadpool thread, each with a cache of prepared
 * statements), the schema migration and the statements that answer
 * requests. Everything here runs on a threadpool thread. */
#ifndef DATAGATE_STORE_SQLITE_INTERNAL_H
#define DATAGATE_STORE_SQLITE_INTERNAL_H

#include <sqlite3.h>

#include "store/internal.h"

#define DG__SQLITE_STMT_CACHE 64

typedef struct dg__sqlite_stmt {
  char *sql;
  uint64_t hash;
  sqlite3_stmt *stmt;
  uint64_t used; /* tick of the last use, for eviction */
} dg__sqlite_stmt_t;

typedef struct dg__sqlite_conn {
  sqlite3 *db;
  dg__sqlite_stmt_t cache[DG__SQLITE_STMT_CACHE];
  uint64_t tick;
  dg_store_req_t *current; /* the request running on this connection */
  struct dg__sqlite_conn *next;
} dg__sqlite_conn_t;

/* Driver state: the thread-local key that finds a thread's connection and
 * the list of every connection, for closing. */
typedef struct dg__sqlite {
  uv_key_t key;
  uv_mutex_t lock;
  dg__sqlite_conn_t *conns;
  bool ready; /* key and lock exist */
  int open_status;
} dg__sqlite_t;

/* Opens a connection with the gateway's settings (WAL, synchronous=FULL,
 * busy timeout, cancellation through conn->current). */
int dg__sqlite_connect(const char *path, int flags, dg__sqlite_conn_t **out, dg_errctx_t *err);
void dg__sqlite_disconnect(dg__sqlite_conn_t *conn);

/* A prepared statement for sql from the connection's cache, with the
 * statement's values bound; give it back with dg__sqlite_release. */
int dg__sqlite_prepare(dg__sqlite_conn_t *conn, const dg__sql_t *sql, sqlite3_stmt **out,
                       dg_errctx_t *err);
void dg__sqlite_release(sqlite3_stmt *stmt);
/* Runs statements without results (pragmas, DDL). */
int dg__sqlite_exec(dg__sqlite_conn_t *conn, const char *sql, dg_errctx_t *err);
/* Runs one statement without results from the connection's cache: BEGIN
 * and COMMIT, which every call runs, are not parsed again each time. */
int dg__sqlite_exec_cached(dg__sqlite_conn_t *conn, const char *sql, dg_errctx_t *err);
/* Steps a statement: SQLITE_ROW, SQLITE_DONE, or a failure in err. */
int dg__sqlite_step(dg__sqlite_conn_t *conn, sqlite3_stmt *stmt, dg_errctx_t *err);
/* The DG_E* code and message of a failed SQLite call. */
int dg__sqlite_fail(dg__sqlite_conn_t *conn, int code, dg_errctx_t *err);
/* Reads columns [first, first + n) of the current row. Text stays valid
 * until the next step. */
void dg__sqlite_row(sqlite3_stmt *stmt, int first, size_t n, dg_store_value_t *out);

/* Creates or migrates the schema for cat; warnings go to notes. */
int dg__sqlite_migrate(dg__sqlite_conn_t *conn, const dg_catalog_t *cat, json_t *notes,
                       dg_errctx_t *err);
/* Loads the sample data of dir when the database is new and empty. */
int dg__sqlite_load_sample(dg__sqlite_conn_t *conn, const dg_catalog_t *cat, const char *dir,
                           dg_errctx_t *err);

/* Statements run for requests since the process started (tests use it to
 * show that expansions are batched). */
extern atomic_ulong dg__sqlite_statements;

/* Answers one request on conn: r->result or r->err. */
int dg__sqlite_run(dg__sqlite_conn_t *conn, dg_store_req_t *r);

/* ---- Running statements (sqlite_exec.c) ----------------------------------
 * The reads (sqlite_read.c, sqlite_aggregate.c), the writes (sqlite_exec.c)
 * and the submissions (sqlite_submit.c) run their statements and write
 * transactions through these, on a run: the connection, where a failure
 * goes, and the request being answered (NULL while the store opens). */
typedef struct dg__sqlite_run {
  dg__sqlite_conn_t *conn;
  dg_store_req_t *r;
  dg_store_req_t *log; /* its debug log shows the first statement and the rows; or NULL */
  dg_arena_t *arena;
  size_t max; /* bytes the result may take */
  dg_errctx_t *err;
} dg__sqlite_run_t;

/* Prepares sql and calls row() (NULL: none) for each result row until it
 * fails or asks to stop (returns 1); counts it in dg__sqlite_statements.
 * 0, or the row's code, or the failure in err. */
typedef int (*dg__sqlite_row_fn)(dg__sqlite_run_t *run, sqlite3_stmt *st, void *data);
int dg__sqlite_each_row(dg__sqlite_run_t *run, const dg__sql_t *sql, dg__sqlite_row_fn row,
                        void *data);
/* Whether sql returns a row (an entity exists). */
int dg__sqlite_has_row(dg__sqlite_run_t *run, const dg__sql_t *sql, bool *found);
/* The INSERT, UPDATE or upsert of w for the entity id. */
int dg__sqlite_write_entity(dg__sqlite_run_t *run, const dg_store_write_t *w, const char *id);

/* Runs sql ("BEGIN" or "BEGIN IMMEDIATE"); a transaction left open by an
 * earlier failure on this connection is rolled back first, so that it
 * cannot wedge the thread. */
int dg__sqlite_begin(dg__sqlite_conn_t *conn, const char *sql, dg_errctx_t *err);
/* A write transaction takes the write lock at once (BEGIN IMMEDIATE); it
 * ends with COMMIT when rc is 0 (returning COMMIT's failure, if any) and
 * with ROLLBACK otherwise (returning rc). */
int dg__sqlite_begin_write(dg__sqlite_run_t *run);
int dg__sqlite_end_write(dg__sqlite_run_t *run, int rc);

/* Fills err for out of memory; returns DG_ENOMEM. */
int dg__sqlite_oom(dg__sqlite_run_t *run);
/* Fills err for out of memory, or for a result over the budget
 * (rc DG_E2BIG); returns the code. */
int dg__sqlite_put_failed(dg__sqlite_run_t *run, int rc);
/* Hands the JSON text in out to the request as its result when rc is 0,
 * frees out, and returns 0 or the failure filled in as put_failed does. */
int dg__sqlite_set_result(dg__sqlite_run_t *run, int rc, dg_buf_t *out);

/* The reads, each inside the caller's read transaction: r->result is set
 * to the answer, written out as JSON text (dg_json_raw). */
int dg__sqlite_read_query(dg__sqlite_run_t *run, const dg_store_query_t *q);
int dg__sqlite_read_fetch(dg__sqlite_run_t *run, const dg_store_fetch_t *f);
int dg__sqlite_read_lookup(dg__sqlite_run_t *run, const dg_store_lookup_t *l);
/* aggregate_entities (sqlite_aggregate.c): the count for the grouped cap,
 * then the aggregate statement, whose statement the debug log shows. */
int dg__sqlite_read_aggregate(dg__sqlite_run_t *run, const dg_store_aggregate_t *a);

/* Submissions (sqlite_submit.c): the table and its indexes (inside the
 * migration's transaction), the three requests (run->r), and marking the
 * submissions of processes that are gone as interrupted (at open; notes
 * say how many). */
int dg__sqlite_migrate_submissions(dg__sqlite_conn_t *conn, dg_errctx_t *err);
int dg__sqlite_submit(dg__sqlite_run_t *run);
int dg__sqlite_finish(dg__sqlite_run_t *run);
int dg__sqlite_submission(dg__sqlite_run_t *run);
int dg__sqlite_recover_submissions(dg__sqlite_conn_t *conn, const char *self, json_t *notes,
                                   dg_errctx_t *err);

#endif
