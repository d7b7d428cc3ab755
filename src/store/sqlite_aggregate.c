/* Answering aggregate_entities on a SQLite connection (threadpool
 * thread), inside the read transaction sqlite_exec.c opens: when grouping,
 * the matched records are counted first and a count over the cap is
 * refused before any grouping work; then one statement computes every
 * aggregation, and its rows become the result. */
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_internal.h"

typedef struct agg_run {
  dg__sqlite_conn_t *conn;
  dg_store_req_t *r;
  const dg_store_aggregate_t *a;
  dg__store_budget_t *budget;
  dg_store_value_t *row; /* one result row's values */
  size_t ncols;
  int64_t matched;
  json_t *rows;
} agg_run_t;

typedef int (*agg_row_fn)(agg_run_t *run, sqlite3_stmt *st);

/* The main statement is the one the debug log shows. */
static void keep_sql(agg_run_t *run, const dg__sql_t *sql) {
  free(run->r->sql);
  run->r->sql = sql->text.data != NULL ? strdup(sql->text.data) : NULL;
}

static int each_row(agg_run_t *run, const dg__sql_t *sql, agg_row_fn fn) {
  sqlite3_stmt *st = NULL;
  keep_sql(run, sql);
  atomic_fetch_add(&dg__sqlite_statements, 1);
  int rc = dg__sqlite_prepare(run->conn, sql, &st, &run->r->err);
  int step = rc == 0 ? dg__sqlite_step(run->conn, st, &run->r->err) : rc;
  for (; step == SQLITE_ROW; step = dg__sqlite_step(run->conn, st, &run->r->err)) {
    run->r->rows++;
    rc = fn(run, st);
    if (rc != 0)
      break;
  }
  if (st != NULL)
    dg__sqlite_release(st);
  if (rc != 0)
    return rc;
  return step == SQLITE_DONE ? 0 : step;
}

static int count_row(agg_run_t *run, sqlite3_stmt *st) {
  run->matched = sqlite3_column_int64(st, 0);
  return 0;
}

static int result_row(agg_run_t *run, sqlite3_stmt *st) {
  int rc = 0;
  dg__sqlite_row(st, 0, run->ncols, run->row);
  json_t *row = dg__store_aggregate_row(run->a, run->row, run->budget, &rc);
  if (rc == DG_E2BIG)
    return dg__store_too_big(&run->r->err, run->budget->max);
  if (row == NULL || json_array_append_new(run->rows, row) != 0)
    return dg_errctx_set(&run->r->err, DG_ENOMEM, "", "The entity store is out of memory.");
  /* Ungrouped, the one row's count(*) is the matched count. */
  if (run->a->ngroup_by == 0)
    run->matched = run->row[0].i;
  return 0;
}

/* Grouped: how many records match, refused over the cap. */
static int check_cap(agg_run_t *run) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_aggregate_count(&sql, run->a);
  int rc = each_row(run, &sql, count_row);
  dg__sql_free(&sql);
  if (rc == 0 && run->matched > run->a->grouped_cap)
    rc = dg__store_over_cap(run->a, run->matched, &run->r->err);
  return rc;
}

int dg__sqlite_aggregate(dg__sqlite_conn_t *conn, dg_store_req_t *r, dg__store_budget_t *budget) {
  const dg_store_aggregate_t *a = r->in.aggregate;
  agg_run_t run = {.conn = conn, .r = r, .a = a, .budget = budget};
  dg__sql_t sql;
  run.ncols = a->ngroup_by + 1 + a->naggs;
  run.row = calloc(run.ncols, sizeof(*run.row));
  run.rows = json_array();
  int rc = run.row != NULL && run.rows != NULL
               ? 0
               : dg_errctx_set(&r->err, DG_ENOMEM, "", "The entity store is out of memory.");
  if (rc == 0 && a->ngroup_by > 0)
    rc = check_cap(&run);
  dg__sql_init(&sql, &dg__sql_sqlite);
  if (rc == 0) {
    dg__sql_aggregate(&sql, a);
    rc = each_row(&run, &sql, result_row);
  }
  dg__sql_free(&sql);
  free(run.row);
  if (rc == 0)
    r->result = dg__store_aggregate_result(a, run.matched, json_incref(run.rows));
  json_decref(run.rows);
  return rc;
}
