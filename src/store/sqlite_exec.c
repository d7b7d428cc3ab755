/* Answering requests on a SQLite connection (threadpool thread): the page
 * or the ids asked for, then one batched statement per expanded reference
 * for the whole page (never one per parent), all in one read transaction
 * so that the expansions see the same data as the page. The result JSON
 * is built here and handed to the loop as it is. */
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_internal.h"

#define RUN_ARENA_BLOCK 16384

atomic_ulong dg__sqlite_statements;

typedef struct run {
  dg__sqlite_conn_t *conn;
  dg_store_req_t *r;
  dg_arena_t *arena;
  dg__store_budget_t budget;
  dg_errctx_t *err;
} run_t;

/* The entities of a page or fetch and what their expansions need. */
typedef struct parents {
  json_t **entities;
  const char **ids;
  const char **fks; /* [i * nexpand + j]: entity i's key for Outbound expansion j */
  size_t n;
  const dg_store_expand_t *expand;
  size_t nexpand;
} parents_t;

static int oom(run_t *run) {
  return dg_errctx_set(run->err, DG_ENOMEM, "", "The entity store is out of memory.");
}

/* Remembers the main statement for the debug log. */
static void keep_sql(run_t *run, const dg__sql_t *sql) {
  if (run->r->sql == NULL && sql->text.data != NULL)
    run->r->sql = strdup(sql->text.data);
}

static const char *copy_text(run_t *run, const dg_store_value_t *v) {
  return v->kind == DG_STORE_TEXT ? dg_arena_strndup(run->arena, v->text, v->len) : NULL;
}

/* Prepares sql and calls row() for each result row until it fails or
 * asks to stop (returns 1). */
typedef int (*row_fn)(run_t *run, sqlite3_stmt *st, void *data);

static int each_row(run_t *run, const dg__sql_t *sql, row_fn row, void *data) {
  sqlite3_stmt *st = NULL;
  keep_sql(run, sql);
  atomic_fetch_add(&dg__sqlite_statements, 1);
  int rc = dg__sqlite_prepare(run->conn, sql, &st, run->err);
  int step = rc == 0 ? dg__sqlite_step(run->conn, st, run->err) : rc;
  for (; step == SQLITE_ROW; step = dg__sqlite_step(run->conn, st, run->err)) {
    run->r->rows++;
    rc = row(run, st, data);
    if (rc != 0)
      break;
  }
  if (st != NULL)
    dg__sqlite_release(st);
  if (rc == 1 || step == SQLITE_DONE)
    return 0;
  return rc != 0 ? rc : step;
}

static int entity_failed(run_t *run, int rc) {
  return rc == DG_E2BIG ? dg__store_too_big(run->err, run->budget.max) : oom(run);
}

/* ---- Parents ------------------------------------------------------------------------------ */

typedef struct parent_rows {
  parents_t *p;
  const dg__sql_cols_t *cols;
  dg_store_value_t *row;
  size_t limit;
  bool more; /* a row past the limit was seen */
} parent_rows_t;

static int parent_row(run_t *run, sqlite3_stmt *st, void *data) {
  parent_rows_t *pr = data;
  parents_t *p = pr->p;
  if (p->n == pr->limit) {
    pr->more = true;
    return 1;
  }
  dg__sqlite_row(st, 0, pr->cols->n, pr->row);
  int rc = 0;
  json_t *e = dg__store_entity(pr->cols, pr->row, false, &run->budget, &rc);
  if (e == NULL)
    return entity_failed(run, rc);
  p->entities[p->n] = e;
  p->ids[p->n] = copy_text(run, &pr->row[0]);
  for (size_t j = 0; j < p->nexpand; j++) {
    int col = dg__sql_col_of(pr->cols, p->expand[j].reference);
    if (col >= 0)
      p->fks[p->n * p->nexpand + j] = copy_text(run, &pr->row[col]);
  }
  p->n++;
  return p->ids[p->n - 1] != NULL ? 0 : oom(run);
}

static int parents_init(run_t *run, parents_t *p, size_t cap, const dg_store_expand_t *expand,
                        size_t nexpand) {
  memset(p, 0, sizeof(*p));
  p->expand = expand;
  p->nexpand = nexpand;
  p->entities = dg_arena_calloc(run->arena, cap + 1, sizeof(*p->entities));
  p->ids = dg_arena_calloc(run->arena, cap + 1, sizeof(*p->ids));
  p->fks = dg_arena_calloc(run->arena, (cap + 1) * (nexpand + 1), sizeof(*p->fks));
  return p->entities && p->ids && p->fks ? 0 : oom(run);
}

static void parents_free(parents_t *p) {
  for (size_t i = 0; i < p->n; i++)
    json_decref(p->entities[i]);
  p->n = 0;
}

static int read_parents(run_t *run, const dg__sql_t *sql, const dg__sql_cols_t *cols, parents_t *p,
                        size_t limit, bool *more) {
  parent_rows_t pr = {.p = p, .cols = cols, .limit = limit};
  pr.row = dg_arena_calloc(run->arena, cols->n, sizeof(*pr.row));
  if (pr.row == NULL)
    return oom(run);
  int rc = each_row(run, sql, parent_row, &pr);
  if (more != NULL)
    *more = pr.more;
  return rc;
}

/* ---- Expansion ----------------------------------------------------------------------------- */

/* properties.expanded of a parent, created on first use. */
static json_t *expanded_of(json_t *entity) {
  json_t *props = json_object_get(entity, "properties");
  json_t *x = json_object_get(props, "expanded");
  if (x == NULL && json_object_set_new(props, "expanded", json_object()) == 0)
    x = json_object_get(props, "expanded");
  return x;
}

static int mark_truncated(json_t *entity, const char *key) {
  json_t *props = json_object_get(entity, "properties");
  json_t *list = json_object_get(props, "expandedTruncated");
  if (list == NULL && json_object_set_new(props, "expandedTruncated", json_array()) == 0)
    list = json_object_get(props, "expandedTruncated");
  return list != NULL && json_array_append_new(list, json_string(key)) == 0 ? 0 : DG_ENOMEM;
}

typedef struct related_rows {
  const dg__sql_cols_t *cols;
  dg_store_value_t *row;
  json_t *map;       /* key -> entity (Outbound) or array (Inbound) */
  json_t *truncated; /* key -> true (Inbound) */
  int64_t cap;
} related_rows_t;

static int one_row(run_t *run, sqlite3_stmt *st, void *data) {
  related_rows_t *rr = data;
  dg__sqlite_row(st, 0, rr->cols->n, rr->row);
  int rc = 0;
  json_t *e = dg__store_entity(rr->cols, rr->row, true, &run->budget, &rc);
  if (e == NULL)
    return entity_failed(run, rc);
  const char *id = json_string_value(json_object_get(e, "id"));
  return json_object_set_new(rr->map, id ? id : "", e) == 0 ? 0 : oom(run);
}

/* Inbound rows: the parent key, the related entity, its position. */
static int many_row(run_t *run, sqlite3_stmt *st, void *data) {
  related_rows_t *rr = data;
  const char *key = (const char *)sqlite3_column_text(st, 0);
  int64_t rn = sqlite3_column_int64(st, (int)rr->cols->n + 1);
  if (key == NULL)
    return 0;
  if (rn > rr->cap)
    return json_object_set_new(rr->truncated, key, json_true()) == 0 ? 0 : oom(run);
  dg__sqlite_row(st, 1, rr->cols->n, rr->row);
  int rc = 0;
  json_t *e = dg__store_entity(rr->cols, rr->row, true, &run->budget, &rc);
  if (e == NULL)
    return entity_failed(run, rc);
  json_t *list = json_object_get(rr->map, key);
  if (list == NULL && json_object_set_new(rr->map, key, json_array()) == 0)
    list = json_object_get(rr->map, key);
  return list != NULL && json_array_append_new(list, e) == 0 ? 0 : oom(run);
}

/* Distinct keys of Outbound expansion j over the parents. */
static size_t outbound_keys(run_t *run, const parents_t *p, size_t j, const char **keys) {
  size_t n = 0;
  for (size_t i = 0; i < p->n; i++) {
    const char *k = p->fks[i * p->nexpand + j];
    bool seen = k == NULL;
    for (size_t x = 0; x < n && !seen; x++)
      seen = strcmp(keys[x], k) == 0;
    if (!seen)
      keys[n++] = k;
  }
  return n;
}

static int attach_one(run_t *run, parents_t *p, size_t j, json_t *map) {
  const char *key = dg__store_ref_key(p->expand[j].reference);
  for (size_t i = 0; i < p->n; i++) {
    const char *fk = p->fks[i * p->nexpand + j];
    json_t *related = fk != NULL ? json_object_get(map, fk) : NULL;
    json_t *x = expanded_of(p->entities[i]);
    if (x == NULL || json_object_set_new(x, key, related ? json_incref(related) : json_null()) != 0)
      return oom(run);
  }
  return 0;
}

static int attach_many(run_t *run, parents_t *p, size_t j, json_t *map, json_t *truncated) {
  const char *key = dg__store_ref_key(p->expand[j].reference);
  for (size_t i = 0; i < p->n; i++) {
    json_t *list = json_object_get(map, p->ids[i]);
    json_t *x = expanded_of(p->entities[i]);
    if (x == NULL || json_object_set_new(x, key, list ? json_incref(list) : json_array()) != 0)
      return oom(run);
    if (json_object_get(truncated, p->ids[i]) != NULL && mark_truncated(p->entities[i], key) != 0)
      return oom(run);
  }
  return 0;
}

static int expand_one(run_t *run, parents_t *p, size_t j) {
  const dg_store_expand_t *e = &p->expand[j];
  bool many = dg__store_is_inbound(e->reference);
  related_rows_t rr = {
      .map = json_object(), .truncated = json_object(), .cap = DG_STORE_EXPAND_MAX};
  const char **keys = dg_arena_calloc(run->arena, p->n + 1, sizeof(*keys));
  dg__sql_cols_t cols;
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  int rc = rr.map && rr.truncated && keys ? 0 : oom(run);
  if (rc == 0 && dg__sql_entity_cols(&e->select, NULL, 0, run->arena, &cols) != 0)
    rc = oom(run);
  rr.cols = &cols;
  rr.row = rc == 0 ? dg_arena_calloc(run->arena, cols.n + 1, sizeof(*rr.row)) : NULL;
  if (rc == 0 && rr.row == NULL)
    rc = oom(run);
  size_t nkeys = many ? p->n : rc == 0 ? outbound_keys(run, p, j, keys) : 0;
  if (many && keys != NULL)
    memcpy(keys, p->ids, p->n * sizeof(*keys));
  if (rc == 0 && nkeys > 0 && many)
    dg__sql_expand_many(&sql, e, &cols, keys, nkeys, DG_STORE_EXPAND_MAX);
  else if (rc == 0 && nkeys > 0)
    dg__sql_by_ids(&sql, e->target, &cols, keys, nkeys);
  if (rc == 0 && nkeys > 0)
    rc = each_row(run, &sql, many ? many_row : one_row, &rr);
  if (rc == 0)
    rc = many ? attach_many(run, p, j, rr.map, rr.truncated) : attach_one(run, p, j, rr.map);
  dg__sql_free(&sql);
  json_decref(rr.map);
  json_decref(rr.truncated);
  return rc;
}

static int expand_all(run_t *run, parents_t *p) {
  int rc = 0;
  for (size_t j = 0; rc == 0 && j < p->nexpand; j++)
    rc = expand_one(run, p, j);
  return rc;
}

/* ---- Query and fetch ------------------------------------------------------------------------ */

static json_t *entity_array(run_t *run, parents_t *p) {
  json_t *list = json_array();
  for (size_t i = 0; list != NULL && i < p->n; i++) {
    if (json_array_append(list, p->entities[i]) != 0) {
      json_decref(list);
      return NULL;
    }
  }
  return list;
}

static int count_row(run_t *run, sqlite3_stmt *st, void *data) {
  *(int64_t *)data = sqlite3_column_int64(st, 0);
  return 0;
}

static int run_count(run_t *run, const dg_store_query_t *q) {
  dg__sql_t sql;
  int64_t count = 0;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_count(&sql, q);
  int rc = each_row(run, &sql, count_row, &count);
  dg__sql_free(&sql);
  if (rc == 0)
    run->r->result = json_pack("{s:I}", "count", (json_int_t)count);
  return rc;
}

static int run_page(run_t *run, const dg_store_query_t *q) {
  parents_t p;
  dg__sql_cols_t cols;
  dg__sql_t sql;
  bool more = false;
  dg__sql_init(&sql, &dg__sql_sqlite);
  int rc = parents_init(run, &p, (size_t)q->page_size, q->expand, q->nexpand);
  if (rc == 0 && dg__sql_entity_cols(&q->select, q->expand, q->nexpand, run->arena, &cols) != 0)
    rc = oom(run);
  if (rc == 0)
    dg__sql_page(&sql, q, &cols);
  if (rc == 0)
    rc = read_parents(run, &sql, &cols, &p, (size_t)q->page_size, &more);
  if (rc == 0)
    rc = expand_all(run, &p);
  json_t *list = rc == 0 ? entity_array(run, &p) : NULL;
  if (rc == 0 && list == NULL)
    rc = oom(run);
  if (rc == 0)
    run->r->result =
        json_pack("{s:o,s:I,s:I,s:b,s:o}", "entities", list, "pageNumber",
                  (json_int_t)q->page_number, "pageSize", (json_int_t)q->page_size, "hasMore", more,
                  "nextPage", more ? json_integer((json_int_t)q->page_number + 1) : json_null());
  parents_free(&p);
  dg__sql_free(&sql);
  return rc;
}

/* The entities in the order of the ids asked for. */
static json_t *in_id_order(const dg_store_fetch_t *f, parents_t *p) {
  json_t *list = json_array();
  for (size_t k = 0; list != NULL && k < f->nids; k++) {
    for (size_t i = 0; i < p->n; i++) {
      if (strcmp(p->ids[i], f->ids[k]) == 0 && json_array_append(list, p->entities[i]) != 0) {
        json_decref(list);
        return NULL;
      }
    }
  }
  return list;
}

static int run_fetch(run_t *run, const dg_store_fetch_t *f) {
  parents_t p;
  dg__sql_cols_t cols;
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  int rc = parents_init(run, &p, f->nids, f->expand, f->nexpand);
  if (rc == 0 && dg__sql_entity_cols(&f->select, f->expand, f->nexpand, run->arena, &cols) != 0)
    rc = oom(run);
  if (rc == 0)
    dg__sql_by_ids(&sql, f->model, &cols, f->ids, f->nids);
  if (rc == 0)
    rc = read_parents(run, &sql, &cols, &p, f->nids, NULL);
  if (rc == 0)
    rc = expand_all(run, &p);
  json_t *list = rc == 0 ? in_id_order(f, &p) : NULL;
  if (rc == 0 && list == NULL)
    rc = oom(run);
  if (rc == 0)
    run->r->result = json_pack("{s:o}", "entities", list);
  parents_free(&p);
  dg__sql_free(&sql);
  return rc;
}

/* Starts a transaction; one left open by an earlier failure on this
 * connection is rolled back first, so that it cannot wedge the thread. */
static int begin(run_t *run, const char *sql) {
  if (!sqlite3_get_autocommit(run->conn->db))
    sqlite3_exec(run->conn->db, "ROLLBACK", NULL, NULL, NULL);
  return dg__sqlite_exec(run->conn, sql, run->err);
}

/* Reads in one transaction: a consistent snapshot for page and expansions. */
static int in_read_txn(run_t *run, int (*fn)(run_t *run, const void *in), const void *in) {
  int rc = begin(run, "BEGIN");
  if (rc == 0)
    rc = fn(run, in);
  if (rc != 0 || sqlite3_exec(run->conn->db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
    sqlite3_exec(run->conn->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

static int query_fn(run_t *run, const void *in) {
  const dg_store_query_t *q = in;
  return q->count_only ? run_count(run, q) : run_page(run, q);
}

static int fetch_fn(run_t *run, const void *in) {
  return run_fetch(run, in);
}

/* ---- Lookup ------------------------------------------------------------------------------------
 */

typedef struct hit {
  double score;
  size_t model; /* index into the lookup's models */
  json_t *entity;
} hit_t;

typedef struct hits {
  hit_t *items;
  size_t n, cap;
  const dg__sql_cols_t *cols;
  dg_store_value_t *row;
  size_t model;
} hits_t;

static int hit_row(run_t *run, sqlite3_stmt *st, void *data) {
  hits_t *h = data;
  if (h->n == h->cap)
    return 1;
  dg__sqlite_row(st, 0, h->cols->n, h->row);
  int rc = 0;
  json_t *e = dg__store_entity(h->cols, h->row, false, &run->budget, &rc);
  if (e == NULL)
    return entity_failed(run, rc);
  h->items[h->n++] =
      (hit_t){.score = sqlite3_column_double(st, (int)h->cols->n), .model = h->model, .entity = e};
  return 0;
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
  for (size_t i = 0; i < cols->n; i++) {
    dg__sql_put(sql, i ? ", " : "");
    if (cols->cols[i].prop == NULL)
      dg__sql_put(sql, "t0.id");
    else
      dg__sql_ident(sql, "t0", cols->cols[i].prop->name);
  }
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

static int search_model(run_t *run, const dg_store_lookup_t *l, size_t m, hits_t *h) {
  const dg_store_lookup_model_t *lm = &l->models[m];
  dg__sql_cols_t cols;
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  const char *match = match_text(run, l, lm);
  int rc = match != NULL && dg__sql_entity_cols(&lm->select, NULL, 0, run->arena, &cols) == 0
               ? 0
               : oom(run);
  h->cols = &cols;
  h->model = m;
  h->row = rc == 0 ? dg_arena_calloc(run->arena, cols.n + 1, sizeof(*h->row)) : NULL;
  if (rc == 0 && h->row == NULL)
    rc = oom(run);
  if (rc == 0) {
    lookup_sql(&sql, lm->model, &cols, match, l->limit);
    rc = each_row(run, &sql, hit_row, h);
  }
  dg__sql_free(&sql);
  return rc;
}

static int compare_hits(const void *a, const void *b) {
  const hit_t *x = a, *y = b;
  if (x->score != y->score)
    return x->score < y->score ? -1 : 1;
  return x->model < y->model ? -1 : x->model > y->model ? 1 : 0;
}

static json_t *hit_json(const dg_store_lookup_t *l, const hit_t *h) {
  const dg_model_t *m = l->models[h->model].model;
  return json_pack("{s:O,s:s,s:s,s:s,s:s?,s:O}", "id", json_object_get(h->entity, "id"),
                   "dataModelId", m->id, "dataModelName", m->name, "entityType", m->entity_type,
                   "entitySubType", m->entity_sub_type, "properties",
                   json_object_get(h->entity, "properties"));
}

static int lookup_fn(run_t *run, const void *in) {
  const dg_store_lookup_t *l = in;
  hits_t h = {.cap = (size_t)l->limit * l->nmodels};
  h.items = dg_arena_calloc(run->arena, h.cap + 1, sizeof(*h.items));
  int rc = h.items != NULL ? 0 : oom(run);
  for (size_t m = 0; rc == 0 && m < l->nmodels; m++) {
    h.cap = h.n + (size_t)l->limit;
    rc = search_model(run, l, m, &h);
  }
  qsort(h.items, h.n, sizeof(*h.items), compare_hits);
  json_t *list = rc == 0 ? json_array() : NULL;
  for (size_t i = 0; list != NULL && i < h.n && i < (size_t)l->limit; i++) {
    if (json_array_append_new(list, hit_json(l, &h.items[i])) != 0)
      rc = oom(run);
  }
  if (rc == 0)
    run->r->result = list != NULL ? json_pack("{s:o}", "entities", list) : NULL;
  else
    json_decref(list);
  for (size_t i = 0; i < h.n; i++)
    json_decref(h.items[i].entity);
  return rc;
}

/* ---- Write --------------------------------------------------------------------------------- */

static int exists_row(run_t *run, sqlite3_stmt *st, void *data) {
  *(bool *)data = true;
  return 1;
}

static int entity_exists(run_t *run, const dg_model_t *m, const char *id, bool *exists) {
  dg__sql_t sql;
  const char *ids[1] = {id};
  dg__sql_cols_t cols = {.cols = &(dg__sql_col_t){.prop = NULL, .emit = true}, .n = 1};
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_by_ids(&sql, m, &cols, ids, 1);
  *exists = false;
  int rc = each_row(run, &sql, exists_row, exists);
  dg__sql_free(&sql);
  return rc;
}

static int no_row(run_t *run, sqlite3_stmt *st, void *data) {
  return 0;
}

static int write_locked(run_t *run, const dg_store_write_t *w, const char *id, bool *created) {
  bool exists = false;
  dg__sql_t sql;
  int rc = w->mode == DG_STORE_CREATE ? 0 : entity_exists(run, w->model, id, &exists);
  if (rc == 0 && w->mode == DG_STORE_UPDATE && !exists)
    return dg_errctx_set(run->err, DG_ENOENT, "id", "There is no %s entity with id '%s'.",
                         w->model->name, id);
  *created = !exists;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_write(&sql, w, id);
  if (rc == 0)
    rc = each_row(run, &sql, no_row, NULL);
  dg__sql_free(&sql);
  return rc;
}

static int write_fn(run_t *run, const dg_store_write_t *w) {
  char fresh[DG_UUID_LEN + 1];
  const char *id = w->id;
  bool created = false;
  if (id == NULL) {
    dg_uuid_v4(fresh);
    id = fresh;
  }
  int rc = begin(run, "BEGIN IMMEDIATE");
  if (rc == 0)
    rc = write_locked(run, w, id, &created);
  if (rc == 0)
    rc = dg__sqlite_exec(run->conn, "COMMIT", run->err);
  else
    sqlite3_exec(run->conn->db, "ROLLBACK", NULL, NULL, NULL);
  if (rc == 0)
    run->r->result = json_pack("{s:s,s:b}", "id", id, "created", created);
  return rc;
}

/* ---- Entry -------------------------------------------------------------------------------------
 */

int dg__sqlite_run(dg__sqlite_conn_t *conn, dg_store_req_t *r) {
  run_t run = {.conn = conn, .r = r, .err = &r->err};
  run.budget.max = r->store->max_result_bytes;
  run.arena = dg_arena_new(RUN_ARENA_BLOCK);
  if (run.arena == NULL)
    return oom(&run);
  int rc = 0;
  switch (r->kind) {
  case DG__STORE_QUERY:
    rc = in_read_txn(&run, query_fn, r->in.query);
    break;
  case DG__STORE_FETCH:
    rc = in_read_txn(&run, fetch_fn, r->in.fetch);
    break;
  case DG__STORE_LOOKUP:
    rc = in_read_txn(&run, lookup_fn, r->in.lookup);
    break;
  case DG__STORE_WRITE:
    rc = write_fn(&run, r->in.write);
    break;
  case DG__STORE_SUBMIT:
    rc = dg__sqlite_submit(conn, r);
    break;
  case DG__STORE_FINISH:
    rc = dg__sqlite_finish(conn, r);
    break;
  case DG__STORE_SUBMISSION:
    rc = dg__sqlite_submission(conn, r);
    break;
  }
  dg_arena_destroy(run.arena);
  if (rc != 0) {
    json_decref(r->result);
    r->result = NULL;
  }
  return rc;
}
