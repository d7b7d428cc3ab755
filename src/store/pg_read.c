/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The reads of the PostgreSQL driver that differ from SQLite's (keyword
 * lookup on full-text search), and its writes.
 *
 * Keyword lookup: each model's keyword properties form one document,
 * to_tsvector('simple', ...) exactly as the GIN index of pg_schema.c
 * builds it, so that the index answers. Every word of the search value
 * must match the start of a word of the document (a prefix query,
 * word:*), as the SQLite driver's FTS5 query does. The 'simple'
 * configuration lower-cases and keeps every word (no stemming, no stop
 * words); accents are folded with unaccent when the server has it (as
 * SQLite's tokenizer folds them). Hits are ranked by
 * ts_rank, negated so that, as with SQLite's bm25, a lower score is a
 * better hit; ties go by id. */
#include <stdlib.h>

#include "store/pg_internal.h"

/* The query: every term as a prefix, all required. A term goes through
 * quote_literal so that to_tsquery reads it as one lexeme whatever it
 * holds. */
static void tsquery(dg__sql_t *sql, const char *const *terms, size_t nterms) {
  for (size_t i = 0; i < nterms; i++) {
    dg__sql_put(sql, i ? " && " : "");
    dg__sql_put(sql, "to_tsquery('simple'::regconfig, quote_literal(dg_fold(");
    dg__sql_bind_text(sql, terms[i]);
    dg__sql_put(sql, ")) || ':*')");
  }
}

void dg__pg_lookup_sql(dg__sql_t *sql, const dg_model_t *m, const dg__sql_cols_t *cols,
                       const char *const *terms, size_t nterms, int64_t limit) {
  dg__sql_put(sql, "SELECT ");
  dg__sql_column_list(sql, "t0", cols);
  dg__sql_put(sql, ", -ts_rank(");
  dg__pg_keyword_document(sql, m, "t0");
  dg__sql_put(sql, ", q.q) AS score FROM ");
  dg__sql_ident(sql, NULL, m->name);
  dg__sql_put(sql, " AS t0, (SELECT ");
  tsquery(sql, terms, nterms);
  dg__sql_put(sql, ") AS q(q) WHERE ");
  dg__pg_keyword_document(sql, m, "t0");
  dg__sql_put(sql, " @@ q.q ORDER BY score, t0.id LIMIT ");
  dg__sql_bind_int(sql, limit);
}

/* ---- Writes ---------------------------------------------------------------------------------
 * One statement each, so no transaction is needed: a create fails on the
 * unique id (DG_EEXIST), an update says whether it found the entity
 * (RETURNING), an upsert whether it inserted (xmax is 0 on a row the
 * statement inserted). */

typedef struct write {
  const dg_store_write_t *w;
  char id[DG_UUID_LEN + 1];
  dg__pg_done_cb cb;
  void *data;
} write_t;

static void on_written(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                       void *data) {
  write_t *st = data;
  dg_errctx_t e = *err;
  json_t *result = NULL;
  (void)conn;
  bool found = status == 0 && PQntuples(res) > 0;
  if (status == DG_EEXIST)
    dg_errctx_set(&e, DG_EEXIST, "id", "There is already a %s entity with id '%s'.",
                  st->w->model->name, st->id);
  else if (status == 0 && st->w->mode == DG_STORE_UPDATE && !found)
    status = dg_errctx_set(&e, DG_ENOENT, "id", "There is no %s entity with id '%s'.",
                           st->w->model->name, st->id);
  if (status == 0) {
    bool created = st->w->mode == DG_STORE_CREATE ||
                   (st->w->mode == DG_STORE_UPSERT && found && PQgetvalue(res, 0, 0)[0] == 't');
    result = json_pack("{s:s,s:b}", "id", st->id, "created", created);
    if (result == NULL)
      status = dg_errctx_set(&e, DG_ENOMEM, "", "Out of memory.");
  }
  st->cb(status, result, &e, st->data);
  free(st);
}

int dg__pg_write(dg__pg_conn_t *conn, const dg_store_write_t *w, dg__pg_done_cb cb, void *data,
                 dg_errctx_t *err) {
  write_t *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "", "Out of memory.");
  st->w = w;
  st->cb = cb;
  st->data = data;
  if (w->id != NULL)
    dg_strlcpy(st->id, w->id, sizeof(st->id));
  else
    dg_uuid_v4(st->id);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_write(&sql, w, st->id);
  dg__sql_put(&sql, " RETURNING (xmax = 0)");
  int rc = dg__pg_query(conn, &sql, on_written, st, err);
  dg__sql_free(&sql);
  if (rc != 0)
    free(st);
  return rc;
}

/* ---- Lookup ----------------------------------------------------------------------------------
 * One statement per model searched, one after the other, their hits put
 * together by read.c as on SQLite. */

typedef struct look {
  dg__pg_conn_t *conn;
  const dg_store_lookup_t *l;
  dg_arena_t *arena;
  dg__read_t rd;
  dg__hits_t hits;
  dg__sql_cols_t cols;
  size_t m;
  char **log_sql;
  dg_errctx_t err;
  dg__pg_done_cb cb;
  void *data;
} look_t;

static void look_done(look_t *st, int status, json_t *result) {
  st->cb(status, result, &st->err, st->data);
  dg__hits_free(&st->hits);
  dg_arena_destroy(st->arena);
  free(st);
}

static void on_look_rows(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                         void *data);
static void look_next(look_t *st);

/* Sends the search of model st->m; 0, or the failure in st->err. */
static int look_send(look_t *st) {
  const dg_store_lookup_t *l = st->l;
  const dg_store_lookup_model_t *lm = &l->models[st->m];
  if (dg__sql_entity_cols(&lm->select, NULL, 0, st->arena, &st->cols) != 0)
    return dg__read_oom(&st->rd);
  dg__hits_next_model(&st->hits);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__pg_lookup_sql(&sql, lm->model, &st->cols, l->terms, l->nterms, l->limit);
  dg__pg_keep_sql(st->log_sql, &sql);
  int rc = dg__pg_query(st->conn, &sql, on_look_rows, st, &st->err);
  dg__sql_free(&sql);
  return rc;
}

/* Searches the next model, or writes the answer after the last one. */
static void look_next(look_t *st) {
  if (st->m < st->l->nmodels) {
    int rc = look_send(st);
    if (rc != 0)
      look_done(st, rc, NULL);
    return;
  }
  dg_buf_t out;
  dg_buf_init(&out, st->rd.max);
  int rc = dg__hits_put(&out, &st->hits, st->rd.max);
  json_t *result = rc == 0 ? dg_json_raw(out.data != NULL ? out.data : "", out.len) : NULL;
  dg_buf_free(&out);
  if (rc == 0 && result == NULL)
    rc = DG_ENOMEM;
  if (rc != 0)
    rc = dg__read_put_failed(&st->rd, rc);
  look_done(st, rc, result);
}

static void on_look_rows(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                         void *data) {
  look_t *st = data;
  (void)conn;
  if (status != 0) {
    st->err = *err;
    look_done(st, status, NULL);
    return;
  }
  size_t n = st->cols.n;
  dg_store_value_t *row = dg_arena_calloc(st->arena, n + 1, sizeof(*row));
  int rc = row != NULL ? 0 : dg__read_oom(&st->rd);
  for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
    dg__pg_row(res, i, 0, n + 1, row);
    double score = row[n].kind == DG_STORE_REAL ? row[n].d : (double)row[n].i;
    rc = dg__hits_add(&st->rd, &st->hits, st->m, &st->cols, row, score);
  }
  if (rc != 0 && rc != 1) {
    look_done(st, rc, NULL);
    return;
  }
  st->m++;
  look_next(st);
}

/* No model to search: an empty answer, on a later turn. */
static void on_no_model(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                        void *data) {
  (void)conn;
  (void)status;
  (void)res;
  (void)err;
  look_next(data);
}

int dg__pg_lookup(dg__pg_conn_t *conn, const dg_store_lookup_t *l, size_t max, char **log_sql,
                  dg__pg_done_cb cb, void *data, dg_errctx_t *err) {
  look_t *st = calloc(1, sizeof(*st));
  dg_arena_t *arena = dg_arena_new(8192);
  if (st == NULL || arena == NULL) {
    free(st);
    dg_arena_destroy(arena);
    return dg_errctx_set(err, DG_ENOMEM, "", "The entity store is out of memory.");
  }
  st->conn = conn;
  st->l = l;
  st->arena = arena;
  st->log_sql = log_sql;
  st->cb = cb;
  st->data = data;
  st->rd = (dg__read_t){.arena = arena, .max = max, .err = &st->err};
  /* The first statement is sent here, so that a failure to send it is
   * returned rather than reported through cb. */
  int rc = dg__hits_init(&st->rd, &st->hits, l);
  if (rc == 0)
    rc = l->nmodels > 0 ? look_send(st) : dg__pg_exec(conn, "SELECT 1", on_no_model, st, &st->err);
  if (rc != 0) {
    *err = st->err;
    dg__hits_free(&st->hits);
    dg_arena_destroy(arena);
    free(st);
  }
  return rc;
}
