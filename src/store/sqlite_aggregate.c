/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Answering aggregate_entities on a SQLite connection (threadpool
 * thread), inside the read transaction sqlite_exec.c opens: when grouping,
 * the matched records are counted first and a count over the cap is
 * refused before any grouping work; then one statement computes every
 * aggregation, and its rows are written straight into the answer's JSON
 * text (result_aggregate.c), handed on as a dg_json_raw value. */
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_internal.h"

typedef struct agg_rows {
  const dg_store_aggregate_t *a;
  dg_store_value_t *row; /* one result row's values */
  size_t ncols;
  int64_t matched;
  dg_buf_t text; /* the rows written so far, comma-separated */
} agg_rows_t;

static int count_row(dg__sqlite_run_t *run, sqlite3_stmt *st, void *data) {
  *(int64_t *)data = sqlite3_column_int64(st, 0);
  return 0;
}

static int result_row(dg__sqlite_run_t *run, sqlite3_stmt *st, void *data) {
  agg_rows_t *ar = data;
  dg__sqlite_row(st, 0, ar->ncols, ar->row);
  int rc = ar->text.len > 0 ? dg_buf_append(&ar->text, ",", 1) : 0;
  if (rc == 0)
    rc = dg__store_put_aggregate_row(&ar->text, ar->a, ar->row);
  /* Ungrouped, the one row's count(*) is the matched count. */
  if (ar->a->ngroup_by == 0)
    ar->matched = ar->row[0].i;
  return rc == 0 ? 0 : dg__sqlite_put_failed(run, rc);
}

/* Grouped: how many records match, refused over the cap. */
static int check_cap(dg__sqlite_run_t *run, const dg_store_aggregate_t *a, int64_t *matched) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_aggregate_count(&sql, a);
  int rc = dg__sqlite_each_row(run, &sql, count_row, matched);
  dg__sql_free(&sql);
  if (rc == 0 && *matched > a->grouped_cap)
    rc = dg__store_over_cap(a, *matched, run->err);
  /* The debug log shows the aggregate statement, not this count. */
  free(run->r->sql);
  run->r->sql = NULL;
  return rc;
}

static int set_result(dg__sqlite_run_t *run, const agg_rows_t *ar) {
  dg_buf_t out;
  dg_buf_init(&out, run->max);
  return dg__sqlite_set_result(run, dg__store_put_aggregate(&out, ar->a, ar->matched, &ar->text),
                               &out);
}

int dg__sqlite_read_aggregate(dg__sqlite_run_t *run, const dg_store_aggregate_t *a) {
  agg_rows_t ar = {.a = a, .ncols = a->ngroup_by + 1 + a->naggs};
  dg__sql_t sql;
  dg_buf_init(&ar.text, run->max);
  ar.row = dg_arena_calloc(run->arena, ar.ncols, sizeof(*ar.row));
  int rc = ar.row != NULL ? 0 : dg__sqlite_put_failed(run, DG_ENOMEM);
  if (rc == 0 && a->ngroup_by > 0)
    rc = check_cap(run, a, &ar.matched);
  dg__sql_init(&sql, &dg__sql_sqlite);
  if (rc == 0) {
    dg__sql_aggregate(&sql, a);
    rc = dg__sqlite_each_row(run, &sql, result_row, &ar);
  }
  dg__sql_free(&sql);
  if (rc == 0)
    rc = set_result(run, &ar);
  dg_buf_free(&ar.text);
  return rc;
}
