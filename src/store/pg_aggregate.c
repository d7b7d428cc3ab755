/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* aggregate_entities on a PostgreSQL connection (pg_internal.h), as on
 * SQLite (sqlite_aggregate.c) and from the same statements: when
 * grouping, the matched records are counted first and a count over the
 * cap is refused before any grouping work; then one statement computes
 * every aggregation and its rows are written into the answer's JSON text
 * by the shared builder (result_aggregate.c). Both statements run in one
 * read-only REPEATABLE READ transaction so that the count and the rows
 * see the same data, as SQLite's read transaction does. BEGIN goes in one
 * pipeline with the first statement and COMMIT in one with the rows'
 * statement: one round trip ungrouped, two grouped (the count must be
 * read before the grouping is sent). */
#include <stdlib.h>
#include <string.h>

#include "store/pg_internal.h"

typedef enum astep {
  A_COUNT,
  A_ROWS,
  A_COMMIT,
  A_ROLLBACK,
} astep_t;

typedef struct agg {
  dg__pg_conn_t *conn;
  const dg_store_aggregate_t *a;
  astep_t step;
  int64_t matched;
  bool committed; /* the COMMIT sent with the rows ran */
  dg_buf_t text;  /* the rows written so far, comma-separated */
  size_t max;
  char **log_sql;
  json_t *result;
  int status;
  dg_errctx_t err;
  dg__pg_done_cb cb;
  void *data;
} agg_t;

static void agg_next(agg_t *st);

static void agg_done(agg_t *st) {
  st->cb(st->status, st->status == 0 ? st->result : NULL, &st->err, st->data);
  if (st->status != 0)
    json_decref(st->result);
  dg_buf_free(&st->text);
  free(st);
}

static void agg_fail(agg_t *st, int status) {
  st->status = status;
  if (dg__pg_conn_broken(st->conn) || st->committed) {
    agg_done(st);
    return;
  }
  st->step = A_ROLLBACK;
  agg_next(st);
}

/* The rows into st->text; ungrouped, the one row's count(*) is the
 * matched count. */
static int read_rows(agg_t *st, const PGresult *res) {
  size_t ncols = st->a->ngroup_by + 1 + st->a->naggs;
  dg_store_value_t *row = calloc(ncols, sizeof(*row));
  int rc = row != NULL ? 0 : DG_ENOMEM;
  for (int i = 0; rc == 0 && i < PQntuples(res); i++) {
    dg__pg_row(res, i, 0, ncols, row);
    rc = st->text.len > 0 ? dg_buf_append(&st->text, ",", 1) : 0;
    if (rc == 0)
      rc = dg__store_put_aggregate_row(&st->text, st->a, row);
    if (st->a->ngroup_by == 0)
      st->matched = row[0].i;
  }
  free(row);
  return rc;
}

static int answer(agg_t *st) {
  dg_buf_t out;
  dg_buf_init(&out, st->max);
  int rc = dg__store_put_aggregate(&out, st->a, st->matched, &st->text);
  if (rc == 0) {
    st->result = dg_json_raw(out.data != NULL ? out.data : "", out.len);
    rc = st->result != NULL ? 0 : DG_ENOMEM;
  }
  dg_buf_free(&out);
  return rc;
}

static int put_failed(agg_t *st, int rc) {
  if (rc == DG_E2BIG)
    return dg__store_too_big(&st->err, st->max);
  return dg_errctx_set(&st->err, DG_ENOMEM, "", "Out of memory.");
}

static void on_agg_result(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                          void *data) {
  agg_t *st = data;
  (void)conn;
  if (st->step == A_ROLLBACK || (status == 0 && st->step == A_COMMIT)) {
    agg_done(st);
    return;
  }
  if (status != 0) {
    st->err = *err;
    agg_fail(st, status);
    return;
  }
  int rc = 0;
  if (st->step == A_COUNT) {
    st->matched = PQntuples(res) > 0 ? strtoll(PQgetvalue(res, 0, 0), NULL, 10) : 0;
    rc = st->matched > st->a->grouped_cap ? dg__store_over_cap(st->a, st->matched, &st->err) : 0;
    st->step = A_ROWS;
  } else {
    st->committed = true;
    rc = read_rows(st, res);
    rc = rc == 0 ? answer(st) : rc;
    if (rc != 0)
      rc = put_failed(st, rc);
    st->step = A_COMMIT;
  }
  if (rc != 0) {
    agg_fail(st, rc);
    return;
  }
  if (st->committed)
    agg_done(st);
  else
    agg_next(st);
}

/* The count (BEGIN before it) or the rows (COMMIT after them, and BEGIN
 * before them when they come first) as one pipeline. */
static int send_step(agg_t *st, bool first, dg_errctx_t *err) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  if (st->step == A_COUNT)
    dg__sql_aggregate_count(&sql, st->a);
  else
    dg__sql_aggregate(&sql, st->a);
  if (st->step == A_ROWS)
    dg__pg_keep_sql(st->log_sql, &sql);
  int rc = dg__pg_pipeline(st->conn, first ? DG__PG_BEGIN_READ : NULL, &sql,
                           st->step == A_ROWS ? "COMMIT" : NULL, on_agg_result, st, err);
  dg__sql_free(&sql);
  return rc;
}

static void agg_next(agg_t *st) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc;
  if (st->step == A_ROLLBACK)
    rc = dg__pg_exec(st->conn, "ROLLBACK", on_agg_result, st, &err);
  else
    rc = send_step(st, false, &err);
  if (rc == 0)
    return;
  if (st->step == A_ROLLBACK) {
    agg_done(st);
    return;
  }
  st->err = err;
  agg_fail(st, rc);
}

int dg__pg_aggregate(dg__pg_conn_t *conn, const dg_store_aggregate_t *a, size_t max, char **log_sql,
                     dg__pg_done_cb cb, void *data, dg_errctx_t *err) {
  agg_t *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "", "Out of memory.");
  st->conn = conn;
  st->a = a;
  st->max = max;
  st->log_sql = log_sql;
  st->cb = cb;
  st->data = data;
  dg_buf_init(&st->text, max);
  st->step = a->ngroup_by > 0 ? A_COUNT : A_ROWS;
  int rc = send_step(st, true, err);
  if (rc != 0) {
    dg_buf_free(&st->text);
    free(st);
  }
  return rc;
}
