/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The reads of the SQLite driver (threadpool thread, inside the caller's
 * read transaction): the page or the ids asked for, then one batched
 * statement per expanded reference for the whole page (never one per
 * parent), put together by read.c, which every driver shares; or the
 * keyword search model by model. Answers are handed on as dg_json_raw
 * values, so that the loop only copies them into the reply. */
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_internal.h"

typedef dg__sqlite_run_t run_t;

static dg__read_t reader(run_t *run) {
  return (dg__read_t){.arena = run->arena, .max = run->max, .err = run->err};
}

/* ---- Parents and expansions (read.c puts them together) ------------------------------------- */

typedef struct parent_rows {
  dg__parents_t *p;
  const dg__sql_cols_t *cols;
  dg_store_value_t *row;
  bool more; /* a row past the limit was seen */
} parent_rows_t;

static int parent_row(run_t *run, sqlite3_stmt *st, void *data) {
  parent_rows_t *pr = data;
  dg__read_t rd = reader(run);
  dg__sqlite_row(st, 0, pr->cols->n, pr->row);
  return dg__parents_add(&rd, pr->p, pr->cols, pr->row, &pr->more);
}

static int read_parents(run_t *run, const dg__sql_t *sql, const dg__sql_cols_t *cols,
                        dg__parents_t *p, bool *more) {
  parent_rows_t pr = {.p = p, .cols = cols};
  pr.row = dg_arena_calloc(run->arena, cols->n + 1, sizeof(*pr.row));
  if (pr.row == NULL)
    return dg__sqlite_oom(run);
  int rc = dg__sqlite_each_row(run, sql, parent_row, &pr);
  if (more != NULL)
    *more = pr.more;
  return rc;
}

typedef struct related_rows {
  dg__related_t rr;
  dg_store_value_t *row;
} related_rows_t;

static int related_row(run_t *run, sqlite3_stmt *st, void *data) {
  related_rows_t *x = data;
  dg__read_t rd = reader(run);
  dg__sqlite_row(st, 0, dg__related_ncols(&x->rr), x->row);
  return dg__related_row(&rd, &x->rr, x->row);
}

static int expand_one(run_t *run, dg__parents_t *p, size_t j) {
  related_rows_t x;
  dg__read_t rd = reader(run);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  int rc = dg__related_start(&rd, p, j, &x.rr, &sql);
  if (rc == 0) {
    x.row = dg_arena_calloc(run->arena, dg__related_ncols(&x.rr) + 1, sizeof(*x.row));
    rc = x.row != NULL ? dg__sqlite_each_row(run, &sql, related_row, &x) : dg__sqlite_oom(run);
  } else if (rc == 1) {
    rc = 0;
  }
  dg__sql_free(&sql);
  if (rc == 0)
    dg__related_end(&x.rr);
  return rc;
}

static int expand_all(run_t *run, dg__parents_t *p) {
  int rc = 0;
  for (size_t j = 0; rc == 0 && j < p->nexpand; j++)
    rc = expand_one(run, p, j);
  return rc;
}

/* ---- Query and fetch ---------------------------------------------------------------------------
 */

static int count_row(run_t *run, sqlite3_stmt *st, void *data) {
  *(int64_t *)data = sqlite3_column_int64(st, 0);
  return 0;
}

static int read_count(run_t *run, const dg_store_query_t *q) {
  dg__sql_t sql;
  dg_buf_t out;
  int64_t count = 0;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_count(&sql, q);
  int rc = dg__sqlite_each_row(run, &sql, count_row, &count);
  dg__sql_free(&sql);
  if (rc != 0)
    return rc;
  dg_buf_init(&out, run->max);
  return dg__sqlite_set_result(run, dg_buf_appendf(&out, "{\"count\":%lld}", (long long)count),
                               &out);
}

static int read_page(run_t *run, const dg_store_query_t *q) {
  dg__parents_t p;
  dg__sql_cols_t cols;
  dg__sql_t sql;
  dg_buf_t out;
  dg__read_t rd = reader(run);
  bool more = false;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg_buf_init(&out, run->max);
  int rc = dg__parents_init(&rd, &p, (size_t)q->page_size, q->expand, q->nexpand);
  if (rc == 0 && dg__sql_entity_cols(&q->select, q->expand, q->nexpand, run->arena, &cols) != 0)
    rc = dg__sqlite_oom(run);
  if (rc == 0)
    dg__sql_page(&sql, q, &cols);
  if (rc == 0)
    rc = read_parents(run, &sql, &cols, &p, &more);
  if (rc == 0)
    rc = expand_all(run, &p);
  dg__sql_free(&sql);
  if (rc == 0)
    rc = dg__sqlite_set_result(run, dg__parents_put_page(&out, q, &p, more, run->max), &out);
  dg_buf_free(&out);
  dg__parents_free(&p);
  return rc;
}

int dg__sqlite_read_query(run_t *run, const dg_store_query_t *q) {
  return q->count_only ? read_count(run, q) : read_page(run, q);
}

int dg__sqlite_read_fetch(run_t *run, const dg_store_fetch_t *f) {
  dg__parents_t p;
  dg__sql_cols_t cols;
  dg__sql_t sql;
  dg_buf_t out;
  dg__read_t rd = reader(run);
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg_buf_init(&out, run->max);
  int rc = dg__parents_init(&rd, &p, f->nids, f->expand, f->nexpand);
  if (rc == 0 && dg__sql_entity_cols(&f->select, f->expand, f->nexpand, run->arena, &cols) != 0)
    rc = dg__sqlite_oom(run);
  if (rc == 0)
    dg__sql_by_ids(&sql, f->model, &cols, f->ids, f->nids);
  if (rc == 0)
    rc = read_parents(run, &sql, &cols, &p, NULL);
  if (rc == 0)
    rc = expand_all(run, &p);
  dg__sql_free(&sql);
  if (rc == 0)
    rc = dg__sqlite_set_result(run, dg__parents_put_fetch(&out, &p, f->ids, f->nids, run->max),
                               &out);
  dg_buf_free(&out);
  dg__parents_free(&p);
  return rc;
}

/* ---- Lookup
 * ---------------------------------------------------------------------------------------
 */

typedef struct hit_rows {
  dg__hits_t *h;
  const dg__sql_cols_t *cols;
  dg_store_value_t *row;
  size_t model;
} hit_rows_t;

static int hit_row(run_t *run, sqlite3_stmt *st, void *data) {
  hit_rows_t *x = data;
  dg__read_t rd = reader(run);
  dg__sqlite_row(st, 0, x->cols->n, x->row);
  return dg__hits_add(&rd, x->h, x->model, x->cols, x->row,
                      sqlite3_column_double(st, (int)x->cols->n));
}

/* {Name SKU} : "acme"* "corp"*  -- every word as a prefix, all required,
 * in the keyword columns the caller may see. */
static const char *match_text(run_t *run, const dg_store_lookup_t *l,
                              const dg_store_lookup_model_t *lm) {
  dg_buf_t b;
  dg_buf_init(&b, DG_STORE_SEARCH_MAX * 4 + 4096);
  int rc = dg_buf_append_str(&b, "{");
  for (size_t i = 0; rc == 0 && i < lm->nkeywords; i++)
    rc = dg_buf_appendf(&b, "%s%s", i ? " " : "", lm->keywords[i]->name);
  rc = rc == 0 ? dg_buf_append_str(&b, "} :") : rc;
  for (size_t i = 0; rc == 0 && i < l->nterms; i++)
    rc = dg_buf_appendf(&b, " \"%s\"*", l->terms[i]);
  const char *text = rc == 0 ? dg_arena_strdup(run->arena, b.data) : NULL;
  dg_buf_free(&b);
  return text;
}

/* The FTS5 statement of one model: its rows in rank order, rank last. */
static void lookup_sql(dg__sql_t *sql, const dg_model_t *m, const dg__sql_cols_t *cols,
                       const char *match, int64_t limit) {
  char fts[160];
  snprintf(fts, sizeof(fts), "_fts_%s", m->name);
  dg__sql_put(sql, "SELECT ");
  dg__sql_column_list(sql, "t0", cols);
  dg__sql_put(sql, ", f.rank FROM ");
  dg__sql_ident(sql, NULL, fts);
  dg__sql_put(sql, " AS f JOIN ");
  dg__sql_ident(sql, NULL, m->name);
  dg__sql_put(sql, " AS t0 ON t0.\"_seq\" = f.rowid WHERE ");
  dg__sql_ident(sql, NULL, fts);
  dg__sql_put(sql, " MATCH ");
  dg__sql_bind_text(sql, match);
  dg__sql_put(sql, " ORDER BY f.rank LIMIT ");
  dg__sql_bind_int(sql, limit);
}

static int search_model(run_t *run, dg__hits_t *h, size_t m) {
  const dg_store_lookup_model_t *lm = &h->l->models[m];
  dg__sql_cols_t cols;
  dg__sql_t sql;
  const char *match = match_text(run, h->l, lm);
  if (match == NULL || dg__sql_entity_cols(&lm->select, NULL, 0, run->arena, &cols) != 0)
    return dg__sqlite_oom(run);
  hit_rows_t x = {.h = h, .cols = &cols, .model = m};
  x.row = dg_arena_calloc(run->arena, cols.n + 1, sizeof(*x.row));
  if (x.row == NULL)
    return dg__sqlite_oom(run);
  dg__sql_init(&sql, &dg__sql_sqlite);
  lookup_sql(&sql, lm->model, &cols, match, h->l->limit);
  int rc = dg__sqlite_each_row(run, &sql, hit_row, &x);
  dg__sql_free(&sql);
  return rc;
}

int dg__sqlite_read_lookup(run_t *run, const dg_store_lookup_t *l) {
  dg__hits_t h;
  dg_buf_t out;
  dg__read_t rd = reader(run);
  dg_buf_init(&out, run->max);
  int rc = dg__hits_init(&rd, &h, l);
  for (size_t m = 0; rc == 0 && m < l->nmodels; m++) {
    dg__hits_next_model(&h);
    rc = search_model(run, &h, m);
  }
  if (rc == 0)
    rc = dg__sqlite_set_result(run, dg__hits_put(&out, &h, run->max), &out);
  dg_buf_free(&out);
  dg__hits_free(&h);
  return rc;
}
