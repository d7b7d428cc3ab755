/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Answering requests on a SQLite connection (threadpool thread): each read
 * (sqlite_read.c) in one read transaction, so that a page and its
 * expansions see the same data; each write in one write transaction. The
 * result is built here and handed to the loop as it is. */
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_internal.h"

#define RUN_ARENA_BLOCK 16384

atomic_ulong dg__sqlite_statements;

int dg__sqlite_oom(dg__sqlite_run_t *run) {
  return dg_errctx_set(run->err, DG_ENOMEM, "", "The entity store is out of memory.");
}

int dg__sqlite_put_failed(dg__sqlite_run_t *run, int rc) {
  return rc == DG_E2BIG ? dg__store_too_big(run->err, run->max) : dg__sqlite_oom(run);
}

int dg__sqlite_set_result(dg__sqlite_run_t *run, int rc, dg_buf_t *out) {
  if (rc == 0) {
    run->r->result = dg_json_raw(out->data != NULL ? out->data : "", out->len);
    rc = run->r->result != NULL ? 0 : DG_ENOMEM;
  }
  dg_buf_free(out);
  return rc == 0 ? 0 : dg__sqlite_put_failed(run, rc);
}

/* ---- Statements ------------------------------------------------------------------------ */

/* Remembers the main statement for the debug log. */
static void keep_sql(dg__sqlite_run_t *run, const dg__sql_t *sql) {
  if (run->log != NULL && run->log->sql == NULL && sql->text.data != NULL)
    run->log->sql = strdup(sql->text.data);
}

static void count_row(dg__sqlite_run_t *run) {
  if (run->log != NULL)
    run->log->rows++;
}

int dg__sqlite_each_row(dg__sqlite_run_t *run, const dg__sql_t *sql, dg__sqlite_row_fn row,
                        void *data) {
  sqlite3_stmt *st = NULL;
  keep_sql(run, sql);
  atomic_fetch_add(&dg__sqlite_statements, 1);
  int rc = dg__sqlite_prepare(run->conn, sql, &st, run->err);
  int step = rc == 0 ? dg__sqlite_step(run->conn, st, run->err) : rc;
  for (; step == SQLITE_ROW; step = dg__sqlite_step(run->conn, st, run->err)) {
    count_row(run);
    rc = row != NULL ? row(run, st, data) : 0;
    if (rc != 0)
      break;
  }
  if (st != NULL)
    dg__sqlite_release(st);
  if (rc == 1 || step == SQLITE_DONE)
    return 0;
  return rc != 0 ? rc : step;
}

static int found_row(dg__sqlite_run_t *run, sqlite3_stmt *st, void *data) {
  *(bool *)data = true;
  return 1;
}

int dg__sqlite_has_row(dg__sqlite_run_t *run, const dg__sql_t *sql, bool *found) {
  *found = false;
  return dg__sqlite_each_row(run, sql, found_row, found);
}

int dg__sqlite_write_entity(dg__sqlite_run_t *run, const dg_store_write_t *w, const char *id) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_write(&sql, w, id);
  int rc = dg__sqlite_each_row(run, &sql, NULL, NULL);
  dg__sql_free(&sql);
  return rc;
}

/* ---- Transactions ------------------------------------------------------------------------ */

int dg__sqlite_begin(dg__sqlite_conn_t *conn, const char *sql, dg_errctx_t *err) {
  if (!sqlite3_get_autocommit(conn->db))
    sqlite3_exec(conn->db, "ROLLBACK", NULL, NULL, NULL);
  return dg__sqlite_exec_cached(conn, sql, err);
}

int dg__sqlite_begin_write(dg__sqlite_run_t *run) {
  return dg__sqlite_begin(run->conn, "BEGIN IMMEDIATE", run->err);
}

int dg__sqlite_end_write(dg__sqlite_run_t *run, int rc) {
  if (rc == 0)
    return dg__sqlite_exec_cached(run->conn, "COMMIT", run->err);
  sqlite3_exec(run->conn->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

static int read_in_txn(dg__sqlite_run_t *run) {
  dg_store_req_t *r = run->r;
  int rc = dg__sqlite_begin(run->conn, "BEGIN", run->err);
  if (rc == 0 && r->kind == DG__STORE_QUERY)
    rc = dg__sqlite_read_query(run, r->in.query);
  else if (rc == 0 && r->kind == DG__STORE_FETCH)
    rc = dg__sqlite_read_fetch(run, r->in.fetch);
  else if (rc == 0 && r->kind == DG__STORE_AGGREGATE)
    rc = dg__sqlite_read_aggregate(run, r->in.aggregate);
  else if (rc == 0)
    rc = dg__sqlite_read_lookup(run, r->in.lookup);
  if (rc != 0 || dg__sqlite_exec_cached(run->conn, "COMMIT", NULL) != 0)
    sqlite3_exec(run->conn->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

/* ---- Write --------------------------------------------------------------------------------- */

static int entity_exists(dg__sqlite_run_t *run, const dg_model_t *m, const char *id, bool *exists) {
  dg__sql_t sql;
  const char *ids[1] = {id};
  dg__sql_cols_t cols = {.cols = &(dg__sql_col_t){.prop = NULL, .emit = true}, .n = 1};
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_by_ids(&sql, m, &cols, ids, 1);
  int rc = dg__sqlite_has_row(run, &sql, exists);
  dg__sql_free(&sql);
  return rc;
}

static int write_locked(dg__sqlite_run_t *run, const dg_store_write_t *w, const char *id,
                        bool *created) {
  bool exists = false;
  int rc = w->mode == DG_STORE_CREATE ? 0 : entity_exists(run, w->model, id, &exists);
  if (rc == 0 && w->mode == DG_STORE_UPDATE && !exists)
    return dg_errctx_set(run->err, DG_ENOENT, "id", "There is no %s entity with id '%s'.",
                         w->model->name, id);
  *created = !exists;
  return rc == 0 ? dg__sqlite_write_entity(run, w, id) : rc;
}

static int write_fn(dg__sqlite_run_t *run, const dg_store_write_t *w) {
  char fresh[DG_UUID_LEN + 1];
  const char *id = w->id;
  bool created = false;
  if (id == NULL) {
    dg_uuid_v4(fresh);
    id = fresh;
  }
  int rc = dg__sqlite_begin_write(run);
  if (rc == 0)
    rc = dg__sqlite_end_write(run, write_locked(run, w, id, &created));
  if (rc == 0)
    run->r->result = json_pack("{s:s,s:b}", "id", id, "created", created);
  return rc;
}

/* ---- Entry -------------------------------------------------------------------------------- */

/* Reads and writes show their first statement and rows in the debug log;
 * a submission request's line shows only its kind and status. */
static bool logs_statement(const dg_store_req_t *r) {
  return r->kind != DG__STORE_SUBMIT && r->kind != DG__STORE_FINISH &&
         r->kind != DG__STORE_SUBMISSION;
}

int dg__sqlite_run(dg__sqlite_conn_t *conn, dg_store_req_t *r) {
  dg__sqlite_run_t run = {.conn = conn,
                          .r = r,
                          .log = logs_statement(r) ? r : NULL,
                          .err = &r->err,
                          .max = r->store->max_result_bytes};
  run.arena = dg_arena_new(RUN_ARENA_BLOCK);
  if (run.arena == NULL)
    return dg__sqlite_oom(&run);
  int rc = 0;
  switch (r->kind) {
  case DG__STORE_WRITE:
    rc = write_fn(&run, r->in.write);
    break;
  case DG__STORE_SUBMIT:
    rc = dg__sqlite_submit(&run);
    break;
  case DG__STORE_FINISH:
    rc = dg__sqlite_finish(&run);
    break;
  case DG__STORE_SUBMISSION:
    rc = dg__sqlite_submission(&run);
    break;
  default:
    rc = read_in_txn(&run);
    break;
  }
  dg_arena_destroy(run.arena);
  if (rc != 0) {
    json_decref(r->result);
    r->result = NULL;
  }
  return rc;
}
