/* The reads of the PostgreSQL driver that differ from SQLite's (keyword
 * lookup on full-text search), and its writes.
 *
 * Keyword lookup: each model's keyword properties form one document,
 * to_tsvector('simple', ...) exactly as the GIN index of pg_schema.c
 * builds it, so that the index answers. Every word of the search value
 * must match the start of a word of the document (a prefix query,
 * word:*), as the SQLite driver's FTS5 query does. The 'simple'
 * configuration lower-cases and keeps every word (no stemming, no stop
 * words); unlike SQLite's tokenizer it keeps accents. Hits are ranked by
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
    dg__sql_put(sql, "to_tsquery('simple'::regconfig, quote_literal(");
    dg__sql_bind_text(sql, terms[i]);
    dg__sql_put(sql, ") || ':*')");
  }
}

void dg__pg_lookup_sql(dg__sql_t *sql, const dg_model_t *m, const dg__sql_cols_t *cols,
                       const char *const *terms, size_t nterms, int64_t limit) {
  dg__sql_put(sql, "SELECT ");
  for (size_t i = 0; i < cols->n; i++) {
    dg__sql_put(sql, i ? ", " : "");
    if (cols->cols[i].prop == NULL)
      dg__sql_put(sql, "t0.id");
    else
      dg__sql_ident(sql, "t0", cols->cols[i].prop->name);
  }
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
