/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* query_entities and get_entities_by_ids on a PostgreSQL connection
 * (pg_internal.h): the same statements as on SQLite, run one after the
 * other inside one read-only REPEATABLE READ transaction (the page or the
 * ids, then one batched statement per expansion), their rows handed to
 * read.c, which writes the same answer as for SQLite. BEGIN goes in one
 * pipeline with the first statement, and so does COMMIT when nothing is
 * expanded: such a read is one round trip. COMMIT otherwise goes with the
 * last expansion's statement: one round trip per expansion more. */
#include <stdlib.h>
#include <string.h>

#include "store/pg_internal.h"

#define ARENA_BLOCK 8192

typedef enum estep {
  E_PARENTS, /* or the count */
  E_EXPAND,  /* expansion j */
  E_COMMIT,
  E_ROLLBACK,
} estep_t;

typedef struct ents {
  dg__pg_conn_t *conn;
  const dg_store_query_t *q; /* or: */
  const dg_store_fetch_t *f;
  dg_arena_t *arena;
  dg__read_t rd;
  dg__parents_t p;
  dg__sql_cols_t cols;
  dg__related_t rr;
  estep_t step;
  size_t j;
  bool more;
  bool commit_sent; /* COMMIT went with the statement last sent */
  bool committed;   /* and it ran */
  int64_t count;
  json_t *result;
  char **log_sql;
  int status;
  dg_errctx_t err;
  dg__pg_done_cb cb;
  void *data;
} ents_t;

static void ents_next(ents_t *st);

static void ents_done(ents_t *st) {
  st->cb(st->status, st->status == 0 ? st->result : NULL, &st->err, st->data);
  if (st->status != 0)
    json_decref(st->result);
  dg__parents_free(&st->p);
  dg_arena_destroy(st->arena);
  free(st);
}

static void ents_fail(ents_t *st, int status) {
  st->status = status;
  if (dg__pg_conn_broken(st->conn) || st->committed) {
    ents_done(st);
    return;
  }
  st->step = E_ROLLBACK;
  ents_next(st);
}

static bool counting(const ents_t *st) {
  return st->q != NULL && st->q->count_only;
}

/* ---- Rows --------------------------------------------------------------------------------- */

static int each_row(ents_t *st, const PGresult *res, size_t ncols, bool parents) {
  dg_store_value_t *row = dg_arena_calloc(st->arena, ncols + 1, sizeof(*row));
  if (row == NULL)
    return dg__read_oom(&st->rd);
  int rc = 0;
  for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
    dg__pg_row(res, i, 0, ncols, row);
    rc = parents ? dg__parents_add(&st->rd, &st->p, &st->cols, row, &st->more)
                 : dg__related_row(&st->rd, &st->rr, row);
  }
  return rc == 1 ? 0 : rc;
}

static int set_answer(ents_t *st) {
  dg_buf_t out;
  dg_buf_init(&out, st->rd.max);
  int rc;
  if (counting(st))
    rc = dg_buf_appendf(&out, "{\"count\":%lld}", (long long)st->count);
  else if (st->q != NULL)
    rc = dg__parents_put_page(&out, st->q, &st->p, st->more, st->rd.max);
  else
    rc = dg__parents_put_fetch(&out, &st->p, st->f->ids, st->f->nids, st->rd.max);
  if (rc == 0) {
    st->result = dg_json_raw(out.data != NULL ? out.data : "", out.len);
    rc = st->result != NULL ? 0 : DG_ENOMEM;
  }
  dg_buf_free(&out);
  return rc == 0 ? 0 : dg__read_put_failed(&st->rd, rc);
}

/* Moves to the next expansion that has something to read, its statement
 * in sql; or to COMMIT, with the answer set. */
static int next_expansion(ents_t *st, dg__sql_t *sql) {
  for (; st->j < st->p.nexpand; st->j++) {
    int rc = dg__related_start(&st->rd, &st->p, st->j, &st->rr, sql);
    if (rc == 0) {
      st->step = E_EXPAND;
      return 0;
    }
    if (rc != 1)
      return rc;
    dg__sql_reset(sql);
  }
  st->step = E_COMMIT;
  return set_answer(st);
}

static void on_ents_result(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                           void *data);

/* The statement of expansion st->j; with COMMIT after it when it is the
 * last expansion, since no decision is left between them. */
static void send_sql(ents_t *st, dg__sql_t *sql) {
  dg_errctx_t err;
  st->commit_sent = st->j + 1 == st->p.nexpand;
  int rc = st->commit_sent
               ? dg__pg_pipeline(st->conn, NULL, sql, "COMMIT", on_ents_result, st, &err)
               : dg__pg_query(st->conn, sql, on_ents_result, st, &err);
  if (rc != 0) {
    st->err = err;
    ents_fail(st, rc);
  }
}

static void after_rows(ents_t *st, const PGresult *res) {
  int rc = 0;
  if (st->step == E_PARENTS && counting(st)) {
    st->count = PQntuples(res) > 0 ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0;
  } else if (st->step == E_PARENTS) {
    rc = each_row(st, res, st->cols.n, true);
  } else {
    rc = each_row(st, res, dg__related_ncols(&st->rr), false);
    dg__related_end(&st->rr);
    st->j++;
  }
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  if (rc == 0 && counting(st)) {
    st->step = E_COMMIT;
    rc = set_answer(st);
  } else if (rc == 0) {
    rc = next_expansion(st, &sql);
  }
  if (rc != 0)
    ents_fail(st, rc);
  else if (st->step == E_EXPAND)
    send_sql(st, &sql);
  else if (st->committed)
    ents_done(st);
  else
    ents_next(st);
  dg__sql_free(&sql);
}

static void on_ents_result(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                           void *data) {
  ents_t *st = data;
  (void)conn;
  if (st->step == E_ROLLBACK || (status == 0 && st->step == E_COMMIT)) {
    ents_done(st);
    return;
  }
  if (status != 0) {
    st->err = *err;
    ents_fail(st, status);
    return;
  }
  st->committed = st->commit_sent;
  after_rows(st, res);
}

static void first_sql(ents_t *st, dg__sql_t *sql) {
  if (counting(st))
    dg__sql_count(sql, st->q);
  else if (st->q != NULL)
    dg__sql_page(sql, st->q, &st->cols);
  else
    dg__sql_by_ids(sql, st->f->model, &st->cols, st->f->ids, st->f->nids);
}

/* BEGIN, the page, the ids or the count, and COMMIT when no expansion
 * can follow, as one pipeline. */
static int send_first(ents_t *st, dg_errctx_t *err) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  first_sql(st, &sql);
  dg__pg_keep_sql(st->log_sql, &sql);
  st->step = E_PARENTS;
  st->commit_sent = counting(st) || st->p.nexpand == 0;
  int rc = dg__pg_pipeline(st->conn, DG__PG_BEGIN_READ, &sql, st->commit_sent ? "COMMIT" : NULL,
                           on_ents_result, st, err);
  dg__sql_free(&sql);
  return rc;
}

static void ents_next(ents_t *st) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  const char *text = st->step == E_COMMIT ? "COMMIT" : "ROLLBACK";
  int rc = dg__pg_exec(st->conn, text, on_ents_result, st, &err);
  if (rc == 0)
    return;
  if (st->step == E_ROLLBACK) {
    ents_done(st);
    return;
  }
  st->err = err;
  ents_fail(st, rc);
}

/* ---- Entry ------------------------------------------------------------------------------- */

static int start(ents_t *st, size_t cap, const dg_store_select_t *select,
                 const dg_store_expand_t *expand, size_t nexpand, dg_errctx_t *err) {
  st->arena = dg_arena_new(ARENA_BLOCK);
  st->rd = (dg__read_t){.arena = st->arena, .max = st->rd.max, .err = &st->err};
  int rc = st->arena != NULL ? 0 : DG_ENOMEM;
  if (rc == 0 && !counting(st))
    rc = dg__parents_init(&st->rd, &st->p, cap, expand, nexpand);
  if (rc == 0 && !counting(st) &&
      dg__sql_entity_cols(select, expand, nexpand, st->arena, &st->cols) != 0)
    rc = DG_ENOMEM;
  if (rc == 0)
    rc = send_first(st, err);
  else
    dg_errctx_set(err, DG_ENOMEM, "", "The entity store is out of memory.");
  if (rc != 0) {
    dg__parents_free(&st->p);
    dg_arena_destroy(st->arena);
    free(st);
  }
  return rc;
}

static ents_t *ents_new(dg__pg_conn_t *conn, size_t max, char **log_sql, dg__pg_done_cb cb,
                        void *data) {
  ents_t *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return NULL;
  st->conn = conn;
  st->rd.max = max;
  st->log_sql = log_sql;
  st->cb = cb;
  st->data = data;
  return st;
}

int dg__pg_query_entities(dg__pg_conn_t *conn, const dg_store_query_t *q, size_t max,
                          char **log_sql, dg__pg_done_cb cb, void *data, dg_errctx_t *err) {
  ents_t *st = ents_new(conn, max, log_sql, cb, data);
  if (st == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "", "The entity store is out of memory.");
  st->q = q;
  return start(st, (size_t)q->page_size, &q->select, q->expand, q->nexpand, err);
}

int dg__pg_fetch(dg__pg_conn_t *conn, const dg_store_fetch_t *f, size_t max, char **log_sql,
                 dg__pg_done_cb cb, void *data, dg_errctx_t *err) {
  ents_t *st = ents_new(conn, max, log_sql, cb, data);
  if (st == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "", "The entity store is out of memory.");
  st->f = f;
  return start(st, f->nids, &f->select, f->expand, f->nexpand, err);
}

void dg__pg_keep_sql(char **log_sql, const dg__sql_t *sql) {
  if (log_sql != NULL && *log_sql == NULL && sql->rc == 0 && sql->text.data != NULL)
    *log_sql = strdup(sql->text.data);
}
