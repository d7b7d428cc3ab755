/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The reads of the SQLite driver (threadpool thread, inside the caller's
 * read transaction): the page or the ids asked for, then one batched
 * statement per expanded reference for the whole page (never one per
 * parent), or the keyword search model by model.
 *
 * Answers are written straight into JSON text. Each row's members and each
 * related entity are written once into a buffer of pieces as the rows
 * arrive; the answer is then put together from those pieces, each parent
 * with its expansions, and handed on as a dg_json_raw value, so that the
 * loop only copies it into the reply. Both buffers stop at the result
 * budget. */
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_internal.h"

typedef dg__sqlite_run_t run_t;

/* Bytes [off, off + len) of a pieces buffer (offsets stay right when the
 * buffer moves as it grows). */
typedef struct span {
  size_t off, len;
  bool set;
} span_t;

/* The entities of a page or fetch and what their expansions found. */
typedef struct parents {
  const char **ids;
  span_t *bodies;   /* "key":value,... of each parent */
  const char **fks; /* [i * nexpand + j]: parent i's key for Outbound expansion j */
  span_t *related;  /* [i * nexpand + j]: the related entity, or the list's entities */
  bool *cut;        /* [i * nexpand + j]: the list went past DG_STORE_EXPAND_MAX */
  size_t n;
  dg__id_index_t index; /* over ids */
  const dg_store_expand_t *expand;
  size_t nexpand;
  dg_buf_t pieces;
} parents_t;

static const char *copy_text(run_t *run, const dg_store_value_t *v) {
  return v->kind == DG_STORE_TEXT ? dg_arena_strndup(run->arena, v->text, v->len) : NULL;
}

static int put(dg_buf_t *out, const char *text) {
  return dg_buf_append_str(out, text);
}

static int put_string(dg_buf_t *out, const char *text) {
  return dg_json_write_string(out, text, strlen(text));
}

static int put_span(dg_buf_t *out, const dg_buf_t *pieces, span_t s) {
  return s.len > 0 ? dg_buf_append(out, pieces->data + s.off, s.len) : 0;
}

/* ---- Parents ------------------------------------------------------------------------------ */

/* Bytes a row's members are guessed to take, to reserve the pieces once
 * or twice rather than doubling them from a few hundred bytes: each
 * doubling copies all written so far, and those copies pushed the
 * database's pages out of the processor's caches. */
#define ROW_GUESS 512

/* Room for the framing put_parent adds around each parent's pieces. */
#define PARENT_FRAME 128

/* What a page's or a search's rows may take before its answer is written:
 * more than the answer, which keeps the entities that fit. */
#define PIECES_MIN (16u << 20)
static size_t pieces_max(const run_t *run) {
  size_t max = run->max < SIZE_MAX / 8 ? run->max * 4 : run->max;
  return max > PIECES_MIN ? max : PIECES_MIN;
}

/* The budget of an answer: the caller's, within the store's limit. */
static size_t budget_of(const run_t *run, size_t asked) {
  return asked > 0 && asked < run->max ? asked : run->max;
}

static int parents_init(run_t *run, parents_t *p, size_t cap, const dg_store_expand_t *expand,
                        size_t nexpand) {
  size_t cells = (cap + 1) * (nexpand + 1);
  memset(p, 0, sizeof(*p));
  p->expand = expand;
  p->nexpand = nexpand;
  dg_buf_init(&p->pieces, pieces_max(run));
  (void)dg_buf_reserve(&p->pieces, cap * (nexpand + 1) * ROW_GUESS); /* a hint: may be refused */
  p->ids = dg_arena_calloc(run->arena, cap + 1, sizeof(*p->ids));
  p->bodies = dg_arena_calloc(run->arena, cap + 1, sizeof(*p->bodies));
  p->fks = dg_arena_calloc(run->arena, cells, sizeof(*p->fks));
  p->related = dg_arena_calloc(run->arena, cells, sizeof(*p->related));
  p->cut = dg_arena_calloc(run->arena, cells, sizeof(*p->cut));
  if (p->ids == NULL || p->bodies == NULL || p->fks == NULL || p->related == NULL ||
      p->cut == NULL || dg__id_index_init(&p->index, run->arena, p->ids, cap) != 0)
    return dg__sqlite_oom(run);
  return 0;
}

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
  size_t i = p->n, off = p->pieces.len;
  int rc = dg__store_put_members(&p->pieces, pr->cols, pr->row);
  if (rc != 0)
    return dg__sqlite_put_failed(run, rc);
  p->bodies[i] = (span_t){off, p->pieces.len - off, true};
  p->ids[i] = copy_text(run, &pr->row[0]);
  for (size_t j = 0; j < p->nexpand; j++) {
    int col = dg__sql_col_of(pr->cols, p->expand[j].reference);
    if (col >= 0)
      p->fks[i * p->nexpand + j] = copy_text(run, &pr->row[col]);
  }
  if (p->ids[i] == NULL)
    return dg__sqlite_oom(run);
  dg__id_index_add(&p->index, i);
  p->n++;
  return 0;
}

static int read_parents(run_t *run, const dg__sql_t *sql, const dg__sql_cols_t *cols, parents_t *p,
                        size_t limit, bool *more) {
  parent_rows_t pr = {.p = p, .cols = cols, .limit = limit};
  pr.row = dg_arena_calloc(run->arena, cols->n + 1, sizeof(*pr.row));
  if (pr.row == NULL)
    return dg__sqlite_oom(run);
  int rc = dg__sqlite_each_row(run, sql, parent_row, &pr);
  if (more != NULL)
    *more = pr.more;
  return rc;
}

/* ---- Expansion ------------------------------------------------------------------------------ */

typedef struct related_rows {
  parents_t *p;
  size_t j;
  const dg__sql_cols_t *cols;
  dg_store_value_t *row;
  const char **ids;     /* Outbound: the related entities read, with their text */
  dg__id_index_t index; /* over ids */
  span_t *texts;
  size_t n, cap;
} related_rows_t;

/* An Outbound row: a related entity, kept by its id. */
static int one_row(run_t *run, sqlite3_stmt *st, void *data) {
  related_rows_t *rr = data;
  dg_buf_t *pieces = &rr->p->pieces;
  if (rr->n == rr->cap)
    return 1;
  dg__sqlite_row(st, 0, rr->cols->n, rr->row);
  size_t off = pieces->len;
  int rc = dg__store_put_flat(pieces, rr->cols, rr->row);
  if (rc != 0)
    return dg__sqlite_put_failed(run, rc);
  rr->texts[rr->n] = (span_t){off, pieces->len - off, true};
  rr->ids[rr->n] = copy_text(run, &rr->row[0]);
  if (rr->ids[rr->n] == NULL)
    return dg__sqlite_oom(run);
  dg__id_index_add(&rr->index, rr->n++);
  return 0;
}

/* The parent whose id is key, or p->n. */
static size_t parent_of(const parents_t *p, const char *key) {
  size_t i = dg__id_index_find(&p->index, key);
  return i != SIZE_MAX ? i : p->n;
}

/* An Inbound row: the parent key, the related entity, its position. Rows
 * come ordered by parent, so each parent's list grows at the end of the
 * pieces, its entities separated by commas. */
static int many_row(run_t *run, sqlite3_stmt *st, void *data) {
  related_rows_t *rr = data;
  parents_t *p = rr->p;
  const char *key = (const char *)sqlite3_column_text(st, 0);
  int64_t rn = sqlite3_column_int64(st, (int)rr->cols->n + 1);
  size_t i = key != NULL ? parent_of(p, key) : p->n;
  if (i == p->n)
    return 0;
  size_t k = i * p->nexpand + rr->j;
  if (rn > DG_STORE_EXPAND_MAX) {
    p->cut[k] = true;
    return 0;
  }
  dg__sqlite_row(st, 1, rr->cols->n, rr->row);
  span_t *list = &p->related[k];
  int rc = list->set ? dg_buf_append(&p->pieces, ",", 1) : 0;
  if (!list->set)
    *list = (span_t){p->pieces.len, 0, true};
  if (rc == 0)
    rc = dg__store_put_flat(&p->pieces, rr->cols, rr->row);
  list->len = p->pieces.len - list->off;
  return rc == 0 ? 0 : dg__sqlite_put_failed(run, rc);
}

/* Distinct keys of Outbound expansion j over the parents (seen indexes
 * keys, with room for one per parent). */
static size_t outbound_keys(const parents_t *p, size_t j, const char **keys, dg__id_index_t *seen) {
  size_t n = 0;
  for (size_t i = 0; i < p->n; i++) {
    keys[n] = p->fks[i * p->nexpand + j];
    if (keys[n] != NULL && dg__id_index_add(seen, n) == n)
      n++;
  }
  keys[n] = NULL;
  return n;
}

static void attach_one(parents_t *p, const related_rows_t *rr) {
  for (size_t i = 0; i < p->n; i++) {
    const char *fk = p->fks[i * p->nexpand + rr->j];
    size_t x = fk != NULL ? dg__id_index_find(&rr->index, fk) : SIZE_MAX;
    if (x != SIZE_MAX)
      p->related[i * p->nexpand + rr->j] = rr->texts[x];
  }
}

static int related_init(run_t *run, related_rows_t *rr, dg__sql_cols_t *cols, size_t cap) {
  const dg_store_expand_t *e = &rr->p->expand[rr->j];
  if (dg__sql_entity_cols(&e->select, NULL, 0, run->arena, cols) != 0)
    return dg__sqlite_oom(run);
  rr->cols = cols;
  rr->cap = cap;
  rr->row = dg_arena_calloc(run->arena, cols->n + 1, sizeof(*rr->row));
  rr->ids = dg_arena_calloc(run->arena, cap + 1, sizeof(*rr->ids));
  rr->texts = dg_arena_calloc(run->arena, cap + 1, sizeof(*rr->texts));
  if (rr->row == NULL || rr->ids == NULL || rr->texts == NULL ||
      dg__id_index_init(&rr->index, run->arena, rr->ids, cap) != 0)
    return dg__sqlite_oom(run);
  return 0;
}

static int expand_one(run_t *run, parents_t *p, size_t j) {
  const dg_store_expand_t *e = &p->expand[j];
  bool many = dg__store_is_inbound(e->reference);
  related_rows_t rr = {.p = p, .j = j};
  dg__sql_cols_t cols;
  dg__sql_t sql;
  const char **keys = dg_arena_calloc(run->arena, p->n + 1, sizeof(*keys));
  int rc = keys != NULL ? related_init(run, &rr, &cols, p->n) : dg__sqlite_oom(run);
  if (rc != 0)
    return rc;
  size_t nkeys = p->n;
  dg__id_index_t seen;
  if (many)
    memcpy(keys, p->ids, p->n * sizeof(*keys));
  else if (dg__id_index_init(&seen, run->arena, keys, p->n) == 0)
    nkeys = outbound_keys(p, j, keys, &seen);
  else
    return dg__sqlite_oom(run);
  if (nkeys == 0)
    return 0;
  dg__sql_init(&sql, &dg__sql_sqlite);
  if (many)
    dg__sql_expand_many(&sql, e, &cols, keys, nkeys, DG_STORE_EXPAND_MAX);
  else
    dg__sql_by_ids(&sql, e->target, &cols, keys, nkeys);
  rc = dg__sqlite_each_row(run, &sql, many ? many_row : one_row, &rr);
  dg__sql_free(&sql);
  if (rc == 0 && !many)
    attach_one(p, &rr);
  return rc;
}

static int expand_all(run_t *run, parents_t *p) {
  int rc = 0;
  for (size_t j = 0; rc == 0 && j < p->nexpand; j++)
    rc = expand_one(run, p, j);
  return rc;
}

/* ---- Writing entities --------------------------------------------------------------------------
 */

/* ,"expanded":{"customer":{...}|null,"orderLines":[...]}, and the
 * references that were cut, if any. */
static int put_expanded(dg_buf_t *out, const parents_t *p, size_t i, bool after_members) {
  int rc = put(out, after_members ? ",\"expanded\":{" : "\"expanded\":{");
  bool any_cut = false;
  for (size_t j = 0; rc == 0 && j < p->nexpand; j++) {
    span_t s = p->related[i * p->nexpand + j];
    bool many = dg__store_is_inbound(p->expand[j].reference);
    rc = j > 0 ? put(out, ",") : 0;
    if (rc == 0)
      rc = put_string(out, dg__store_ref_key(p->expand[j].reference));
    if (rc == 0)
      rc = put(out, many ? ":[" : s.set ? ":" : ":null");
    if (rc == 0)
      rc = put_span(out, &p->pieces, s);
    if (rc == 0 && many)
      rc = put(out, "]");
    any_cut |= p->cut[i * p->nexpand + j];
  }
  rc = rc == 0 ? put(out, "}") : rc;
  for (size_t j = 0, n = 0; rc == 0 && any_cut && j < p->nexpand; j++) {
    if (!p->cut[i * p->nexpand + j])
      continue;
    rc = put(out, n++ == 0 ? ",\"expandedTruncated\":[" : ",");
    if (rc == 0)
      rc = put_string(out, dg__store_ref_key(p->expand[j].reference));
  }
  return rc == 0 && any_cut ? put(out, "]") : rc;
}

/* {"id":...,"properties":{...members[,"expanded":{...}]}} */
static int put_parent(dg_buf_t *out, const parents_t *p, size_t i) {
  int rc = put(out, "{\"id\":");
  if (rc == 0)
    rc = put_string(out, p->ids[i]);
  if (rc == 0)
    rc = put(out, ",\"properties\":{");
  if (rc == 0)
    rc = put_span(out, &p->pieces, p->bodies[i]);
  if (rc == 0 && p->nexpand > 0)
    rc = put_expanded(out, p, i, p->bodies[i].len > 0);
  return rc == 0 ? put(out, "}}") : rc;
}

/* Reserves the answer once: the pieces and their framing. A hint only: a
 * refusal shows again, with its error, when the answer is written. */
static void reserve_answer(dg_buf_t *out, const parents_t *p) {
  (void)dg_buf_reserve(out, p->pieces.len + (p->n + 1) * (PARENT_FRAME + 32 * p->nexpand));
}

/* Room kept after the entities for the rest of an answer. */
#define TAIL_RESERVE 512
/* An id left out of a fetch's answer: "<guid>", */
#define ID_BYTES 40

/* Drops what was written after mark. */
static void unwrite(dg_buf_t *out, size_t mark) {
  out->len = mark;
  if (out->data != NULL)
    out->data[mark] = '\0';
}

/* ,"truncated":true,"omittedIds":[...]: the ids from k on that exist. */
static int put_omitted_ids(dg_buf_t *out, const parents_t *p, const char *const *ids, size_t k,
                           size_t nids) {
  int rc = put(out, ",\"truncated\":true,\"omittedIds\":[");
  size_t written = 0;
  for (; rc == 0 && k < nids; k++) {
    if (parent_of(p, ids[k]) == p->n)
      continue;
    rc = written++ > 0 ? put(out, ",") : 0;
    if (rc == 0)
      rc = put_string(out, ids[k]);
  }
  return rc == 0 ? put(out, "]") : rc;
}

/* "entities":[...] in the order of ids, the whole entities that leave room
 * within budget for the ids of the others, which follow as omittedIds;
 * DG_E2BIG when not even the first one fits. */
static int put_entities(dg_buf_t *out, const parents_t *p, const char *const *ids, size_t nids,
                        size_t budget) {
  int rc = put(out, "\"entities\":[");
  size_t written = 0, k = 0;
  for (; rc == 0 && k < nids; k++) {
    size_t i = parent_of(p, ids[k]), mark = out->len;
    if (i == p->n)
      continue;
    rc = written > 0 ? put(out, ",") : 0;
    if (rc == 0)
      rc = put_parent(out, p, i);
    if (rc == DG_E2BIG || (rc == 0 && out->len + TAIL_RESERVE + nids * ID_BYTES > budget)) {
      unwrite(out, mark);
      rc = written > 0 ? 0 : DG_E2BIG;
      break;
    }
    written++;
  }
  if (rc == 0)
    rc = put(out, "]");
  return rc == 0 && k < nids ? put_omitted_ids(out, p, ids, k, nids) : rc;
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

/* "entities":[...] of a page: the whole entities that leave room for the
 * rest of the answer within budget (*kept of them); DG_E2BIG when not even
 * the first one does. */
static int put_fitting(dg_buf_t *out, const parents_t *p, size_t budget, size_t *kept) {
  int rc = put(out, "\"entities\":[");
  size_t k = 0;
  for (; rc == 0 && k < p->n; k++) {
    size_t mark = out->len;
    rc = k > 0 ? put(out, ",") : 0;
    if (rc == 0)
      rc = put_parent(out, p, k);
    if (rc == DG_E2BIG || (rc == 0 && out->len + TAIL_RESERVE > budget)) {
      unwrite(out, mark);
      rc = k > 0 ? 0 : DG_E2BIG;
      break;
    }
  }
  *kept = k;
  return rc == 0 ? put(out, "]") : rc;
}

/* What was left out of a page and the paging that reads on from it: the
 * largest page size up to the entities kept whose pages start there. */
static int put_rest(dg_buf_t *out, const dg_store_query_t *q, size_t kept, size_t omitted) {
  uint64_t start = (uint64_t)(q->page_number - 1) * (uint64_t)q->page_size + kept;
  uint64_t size = kept;
  while (size > 1 && start % size != 0)
    size--;
  return dg_buf_appendf(out,
                        ",\"truncated\":true,\"omittedCount\":%zu,\"continueWith\":{"
                        "\"pageNumber\":%llu,\"pageSize\":%llu}",
                        omitted, (unsigned long long)(start / size + 1), (unsigned long long)size);
}

static int put_page(dg_buf_t *out, const dg_store_query_t *q, const parents_t *p, bool more,
                    size_t budget) {
  size_t kept = 0;
  int rc = put(out, "{");
  if (rc == 0)
    rc = put_fitting(out, p, budget, &kept);
  if (rc == 0)
    rc =
        dg_buf_appendf(out, ",\"pageNumber\":%lld,\"pageSize\":%lld,\"hasMore\":%s,\"nextPage\":",
                       (long long)q->page_number, (long long)q->page_size, more ? "true" : "false");
  if (rc == 0 && more)
    rc = dg_buf_appendf(out, "%lld", (long long)q->page_number + 1);
  else if (rc == 0)
    rc = put(out, "null");
  if (rc == 0 && kept < p->n)
    rc = put_rest(out, q, kept, p->n - kept);
  return rc == 0 ? put(out, "}") : rc;
}

static int read_page(run_t *run, const dg_store_query_t *q) {
  parents_t p;
  dg__sql_cols_t cols;
  dg__sql_t sql;
  dg_buf_t out;
  bool more = false;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg_buf_init(&out, run->max);
  int rc = parents_init(run, &p, (size_t)q->page_size, q->expand, q->nexpand);
  if (rc == 0 && dg__sql_entity_cols(&q->select, q->expand, q->nexpand, run->arena, &cols) != 0)
    rc = dg__sqlite_oom(run);
  if (rc == 0)
    dg__sql_page(&sql, q, &cols);
  if (rc == 0)
    rc = read_parents(run, &sql, &cols, &p, (size_t)q->page_size, &more);
  if (rc == 0)
    rc = expand_all(run, &p);
  dg__sql_free(&sql);
  if (rc == 0) {
    reserve_answer(&out, &p);
    rc =
        dg__sqlite_set_result(run, put_page(&out, q, &p, more, budget_of(run, q->max_bytes)), &out);
  }
  dg_buf_free(&out);
  dg_buf_free(&p.pieces);
  return rc;
}

int dg__sqlite_read_query(run_t *run, const dg_store_query_t *q) {
  return q->count_only ? read_count(run, q) : read_page(run, q);
}

int dg__sqlite_read_fetch(run_t *run, const dg_store_fetch_t *f) {
  parents_t p;
  dg__sql_cols_t cols;
  dg__sql_t sql;
  dg_buf_t out;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg_buf_init(&out, run->max);
  int rc = parents_init(run, &p, f->nids, f->expand, f->nexpand);
  if (rc == 0 && dg__sql_entity_cols(&f->select, f->expand, f->nexpand, run->arena, &cols) != 0)
    rc = dg__sqlite_oom(run);
  if (rc == 0)
    dg__sql_by_ids(&sql, f->model, &cols, f->ids, f->nids);
  if (rc == 0)
    rc = read_parents(run, &sql, &cols, &p, f->nids, NULL);
  if (rc == 0)
    rc = expand_all(run, &p);
  dg__sql_free(&sql);
  if (rc == 0) {
    reserve_answer(&out, &p);
    int put_rc = put(&out, "{");
    if (put_rc == 0)
      put_rc = put_entities(&out, &p, f->ids, f->nids, run->max);
    rc = dg__sqlite_set_result(run, put_rc == 0 ? put(&out, "}") : put_rc, &out);
  }
  dg_buf_free(&out);
  dg_buf_free(&p.pieces);
  return rc;
}

/* ---- Lookup
 * ---------------------------------------------------------------------------------------
 */

typedef struct hit {
  double score;
  size_t model; /* index into the lookup's models */
  size_t seq;   /* rank order within its model */
  span_t text;
  const char *id; /* in the run's arena */
} hit_t;

typedef struct hits {
  const dg_store_lookup_t *l;
  hit_t *items;
  size_t n, cap;
  const dg__sql_cols_t *cols;
  dg_store_value_t *row;
  size_t model;
  dg_buf_t pieces;
} hits_t;

/* {"id","dataModelId","dataModelName","entityType"[,"entitySubType"],"properties":{...}} */
static int put_hit(dg_buf_t *out, const dg_model_t *m, const dg__sql_cols_t *cols,
                   const dg_store_value_t *row) {
  int rc = put(out, "{\"id\":");
  if (rc == 0)
    rc = dg__store_put_value(out, NULL, &row[0]);
  const char *names[] = {"dataModelId", m->id,          "dataModelName", m->name,
                         "entityType",  m->entity_type, "entitySubType", m->entity_sub_type};
  for (size_t i = 0; rc == 0 && i < DG_ARRAY_SIZE(names); i += 2) {
    if (names[i + 1] == NULL)
      continue;
    rc = put(out, ",");
    if (rc == 0)
      rc = put_string(out, names[i]);
    if (rc == 0)
      rc = put(out, ":");
    if (rc == 0)
      rc = put_string(out, names[i + 1]);
  }
  if (rc == 0)
    rc = put(out, ",\"properties\":{");
  if (rc == 0)
    rc = dg__store_put_members(out, cols, row);
  return rc == 0 ? put(out, "}}") : rc;
}

static int hit_row(run_t *run, sqlite3_stmt *st, void *data) {
  hits_t *h = data;
  if (h->n == h->cap)
    return 1;
  dg__sqlite_row(st, 0, h->cols->n, h->row);
  size_t off = h->pieces.len;
  int rc = put_hit(&h->pieces, h->l->models[h->model].model, h->cols, h->row);
  if (rc != 0)
    return dg__sqlite_put_failed(run, rc);
  const char *id = h->row[0].kind == DG_STORE_TEXT ? h->row[0].text : "";
  h->items[h->n] = (hit_t){.score = sqlite3_column_double(st, (int)h->cols->n),
                           .model = h->model,
                           .seq = h->n,
                           .text = {off, h->pieces.len - off, true},
                           .id = dg_arena_strdup(run->arena, id)};
  if (h->items[h->n].id == NULL)
    return dg__sqlite_oom(run);
  h->n++;
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

static int search_model(run_t *run, hits_t *h, size_t m) {
  const dg_store_lookup_model_t *lm = &h->l->models[m];
  dg__sql_cols_t cols;
  dg__sql_t sql;
  const char *match = match_text(run, h->l, lm);
  if (match == NULL || dg__sql_entity_cols(&lm->select, NULL, 0, run->arena, &cols) != 0)
    return dg__sqlite_oom(run);
  h->cols = &cols;
  h->model = m;
  h->row = dg_arena_calloc(run->arena, cols.n + 1, sizeof(*h->row));
  if (h->row == NULL)
    return dg__sqlite_oom(run);
  dg__sql_init(&sql, &dg__sql_sqlite);
  lookup_sql(&sql, lm->model, &cols, match, h->l->limit);
  int rc = dg__sqlite_each_row(run, &sql, hit_row, h);
  dg__sql_free(&sql);
  return rc;
}

/* Best first; equal scores by model, then by rank within the model. */
static int compare_hits(const void *a, const void *b) {
  const hit_t *x = a, *y = b;
  if (x->score != y->score)
    return x->score < y->score ? -1 : 1;
  if (x->model != y->model)
    return x->model < y->model ? -1 : 1;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

#define OMITTED_BYTES 96 /* {"id":"<guid>","dataModelId":"<guid>"}, */

/* ,"truncated":true,"omittedCount":n-from,"omitted":[{id, dataModelId}]:
 * the ids of the hits left out, best first, as many as budget has room
 * for. */
static int put_omitted(dg_buf_t *out, const hits_t *h, size_t from, size_t n, size_t budget) {
  int rc = dg_buf_appendf(out, ",\"truncated\":true,\"omittedCount\":%zu,\"omitted\":[", n - from);
  for (size_t i = from; rc == 0 && i < n && out->len + OMITTED_BYTES + 8 <= budget; i++) {
    rc = dg_buf_appendf(out, "%s{\"id\":", i > from ? "," : "");
    if (rc == 0)
      rc = put_string(out, h->items[i].id);
    if (rc == 0)
      rc = dg_buf_appendf(out, ",\"dataModelId\":\"%s\"}",
                          h->l->models[h->items[i].model].model->id);
  }
  return rc == 0 ? put(out, "]") : rc;
}

/* The hits that fit whole within budget, leaving room for the ids of some
 * of the others (a quarter of the budget at most). */
static int put_hits(dg_buf_t *out, const hits_t *h, size_t budget) {
  size_t n = h->n < (size_t)h->l->limit ? h->n : (size_t)h->l->limit;
  size_t i = 0, max_listed = budget / 4 / OMITTED_BYTES;
  int rc = put(out, "{\"entities\":[");
  for (; rc == 0 && i < n; i++) {
    size_t listed = n - i - 1 < max_listed ? n - i - 1 : max_listed;
    size_t mark = out->len, reserve = TAIL_RESERVE + listed * OMITTED_BYTES;
    rc = i > 0 ? put(out, ",") : 0;
    if (rc == 0)
      rc = put_span(out, &h->pieces, h->items[i].text);
    if (rc == DG_E2BIG || (rc == 0 && out->len + reserve > budget)) {
      unwrite(out, mark);
      rc = i > 0 ? 0 : DG_E2BIG;
      break;
    }
  }
  if (rc == 0)
    rc = put(out, "]");
  if (rc == 0 && i < n)
    rc = put_omitted(out, h, i, n, budget > TAIL_RESERVE / 2 ? budget - TAIL_RESERVE / 2 : 0);
  return rc == 0 ? put(out, "}") : rc;
}

int dg__sqlite_read_lookup(run_t *run, const dg_store_lookup_t *l) {
  hits_t h = {.l = l, .cap = (size_t)l->limit * l->nmodels};
  dg_buf_t out;
  dg_buf_init(&h.pieces, pieces_max(run));
  dg_buf_init(&out, run->max);
  h.items = dg_arena_calloc(run->arena, h.cap + 1, sizeof(*h.items));
  int rc = h.items != NULL ? 0 : dg__sqlite_oom(run);
  for (size_t m = 0; rc == 0 && m < l->nmodels; m++) {
    h.cap = h.n + (size_t)l->limit;
    rc = search_model(run, &h, m);
  }
  if (rc == 0) {
    qsort(h.items, h.n, sizeof(*h.items), compare_hits);
    rc = dg__sqlite_set_result(run, put_hits(&out, &h, budget_of(run, l->max_bytes)), &out);
  }
  dg_buf_free(&out);
  dg_buf_free(&h.pieces);
  return rc;
}
