/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The answers of query_entities, get_entities_by_ids and lookup_by_keyword,
 * put together the same way by every driver (internal.h): the driver runs the statements
 * (the page or the ids asked for, then one batched statement per expanded
 * reference for the whole page, never one per parent) and hands each row
 * here as the store's values.
 *
 * Answers are written straight into JSON text. Each row's members and each
 * related entity are written once into a buffer of pieces as the rows
 * arrive; the answer is then put together from those pieces, each parent
 * with its expansions. Both buffers stop at the result budget. */
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"

int dg__read_oom(dg__read_t *rd) {
  return dg_errctx_set(rd->err, DG_ENOMEM, "", "The entity store is out of memory.");
}

int dg__read_put_failed(dg__read_t *rd, int rc) {
  return rc == DG_E2BIG ? dg__store_too_big(rd->err, rd->max) : dg__read_oom(rd);
}

static const char *copy_text(dg__read_t *rd, const dg_store_value_t *v) {
  return v->kind == DG_STORE_TEXT ? dg_arena_strndup(rd->arena, v->text, v->len) : NULL;
}

static int put(dg_buf_t *out, const char *text) {
  return dg_buf_append_str(out, text);
}

static int put_string(dg_buf_t *out, const char *text) {
  return dg_json_write_string(out, text, strlen(text));
}

static int put_span(dg_buf_t *out, const dg_buf_t *pieces, dg__span_t s) {
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
static size_t pieces_max(size_t max) {
  size_t m = max < SIZE_MAX / 8 ? max * 4 : max;
  return m > PIECES_MIN ? m : PIECES_MIN;
}

/* The budget of an answer: the caller's, within the store's limit. */
static size_t budget_of(size_t max, size_t asked) {
  return asked > 0 && asked < max ? asked : max;
}

int dg__parents_init(dg__read_t *rd, dg__parents_t *p, size_t cap, const dg_store_expand_t *expand,
                     size_t nexpand) {
  size_t cells = (cap + 1) * (nexpand + 1);
  memset(p, 0, sizeof(*p));
  p->expand = expand;
  p->nexpand = nexpand;
  p->cap = cap;
  dg_buf_init(&p->pieces, pieces_max(rd->max));
  (void)dg_buf_reserve(&p->pieces, cap * (nexpand + 1) * ROW_GUESS); /* a hint: may be refused */
  p->ids = dg_arena_calloc(rd->arena, cap + 1, sizeof(*p->ids));
  p->bodies = dg_arena_calloc(rd->arena, cap + 1, sizeof(*p->bodies));
  p->fks = dg_arena_calloc(rd->arena, cells, sizeof(*p->fks));
  p->related = dg_arena_calloc(rd->arena, cells, sizeof(*p->related));
  p->cut = dg_arena_calloc(rd->arena, cells, sizeof(*p->cut));
  if (p->ids == NULL || p->bodies == NULL || p->fks == NULL || p->related == NULL ||
      p->cut == NULL || dg__id_index_init(&p->index, rd->arena, p->ids, cap) != 0)
    return dg__read_oom(rd);
  return 0;
}

void dg__parents_free(dg__parents_t *p) {
  dg_buf_free(&p->pieces);
}

int dg__parents_add(dg__read_t *rd, dg__parents_t *p, const dg__sql_cols_t *cols,
                    const dg_store_value_t *row, bool *more) {
  if (p->n == p->cap) {
    *more = true;
    return 1;
  }
  size_t i = p->n, off = p->pieces.len;
  int rc = dg__store_put_members(&p->pieces, cols, row);
  if (rc != 0)
    return dg__read_put_failed(rd, rc);
  p->bodies[i] = (dg__span_t){off, p->pieces.len - off, true};
  p->ids[i] = copy_text(rd, &row[0]);
  for (size_t j = 0; j < p->nexpand; j++) {
    int col = dg__sql_col_of(cols, p->expand[j].reference);
    if (col >= 0)
      p->fks[i * p->nexpand + j] = copy_text(rd, &row[col]);
  }
  if (p->ids[i] == NULL)
    return dg__read_oom(rd);
  dg__id_index_add(&p->index, i);
  p->n++;
  return 0;
}

/* ---- Expansion ------------------------------------------------------------------------------ */

/* The parent whose id is key, or p->n. */
static size_t parent_of(const dg__parents_t *p, const char *key) {
  size_t i = dg__id_index_find(&p->index, key);
  return i != SIZE_MAX ? i : p->n;
}

/* An Outbound row: a related entity, kept by its id. */
static int one_row(dg__read_t *rd, dg__related_t *rr, const dg_store_value_t *row) {
  dg_buf_t *pieces = &rr->p->pieces;
  if (rr->n == rr->cap)
    return 1;
  size_t off = pieces->len;
  int rc = dg__store_put_flat(pieces, &rr->cols, row);
  if (rc != 0)
    return dg__read_put_failed(rd, rc);
  rr->texts[rr->n] = (dg__span_t){off, pieces->len - off, true};
  rr->ids[rr->n] = copy_text(rd, &row[0]);
  if (rr->ids[rr->n] == NULL)
    return dg__read_oom(rd);
  dg__id_index_add(&rr->index, rr->n++);
  return 0;
}

/* An Inbound row: the parent key, the related entity, its position. Rows
 * come ordered by parent, so each parent's list grows at the end of the
 * pieces, its entities separated by commas. */
static int many_row(dg__read_t *rd, dg__related_t *rr, const dg_store_value_t *row) {
  dg__parents_t *p = rr->p;
  const dg_store_value_t *rn = &row[rr->cols.n + 1];
  /* Drivers hand text NUL-terminated. */
  size_t i = row[0].kind == DG_STORE_TEXT ? parent_of(p, row[0].text) : p->n;
  if (i == p->n)
    return 0;
  size_t k = i * p->nexpand + rr->j;
  if (rn->kind == DG_STORE_INT && rn->i > DG_STORE_EXPAND_MAX) {
    p->cut[k] = true;
    return 0;
  }
  dg__span_t *list = &p->related[k];
  int rc = list->set ? dg_buf_append(&p->pieces, ",", 1) : 0;
  if (!list->set)
    *list = (dg__span_t){p->pieces.len, 0, true};
  if (rc == 0)
    rc = dg__store_put_flat(&p->pieces, &rr->cols, row + 1);
  list->len = p->pieces.len - list->off;
  return rc == 0 ? 0 : dg__read_put_failed(rd, rc);
}

int dg__related_row(dg__read_t *rd, dg__related_t *rr, const dg_store_value_t *row) {
  return rr->many ? many_row(rd, rr, row) : one_row(rd, rr, row);
}

size_t dg__related_ncols(const dg__related_t *rr) {
  return rr->many ? rr->cols.n + 2 : rr->cols.n;
}

/* Distinct keys of Outbound expansion j over the parents (seen indexes
 * keys, with room for one per parent). */
static size_t outbound_keys(const dg__parents_t *p, size_t j, const char **keys,
                            dg__id_index_t *seen) {
  size_t n = 0;
  for (size_t i = 0; i < p->n; i++) {
    keys[n] = p->fks[i * p->nexpand + j];
    if (keys[n] != NULL && dg__id_index_add(seen, n) == n)
      n++;
  }
  keys[n] = NULL;
  return n;
}

void dg__related_end(dg__related_t *rr) {
  dg__parents_t *p = rr->p;
  if (rr->many)
    return;
  for (size_t i = 0; i < p->n; i++) {
    const char *fk = p->fks[i * p->nexpand + rr->j];
    size_t x = fk != NULL ? dg__id_index_find(&rr->index, fk) : SIZE_MAX;
    if (x != SIZE_MAX)
      p->related[i * p->nexpand + rr->j] = rr->texts[x];
  }
}

static int related_init(dg__read_t *rd, dg__related_t *rr, size_t cap) {
  const dg_store_expand_t *e = &rr->p->expand[rr->j];
  if (dg__sql_entity_cols(&e->select, NULL, 0, rd->arena, &rr->cols) != 0)
    return dg__read_oom(rd);
  rr->cap = cap;
  rr->ids = dg_arena_calloc(rd->arena, cap + 1, sizeof(*rr->ids));
  rr->texts = dg_arena_calloc(rd->arena, cap + 1, sizeof(*rr->texts));
  if (rr->ids == NULL || rr->texts == NULL ||
      dg__id_index_init(&rr->index, rd->arena, rr->ids, cap) != 0)
    return dg__read_oom(rd);
  return 0;
}

int dg__related_start(dg__read_t *rd, dg__parents_t *p, size_t j, dg__related_t *rr,
                      dg__sql_t *sql) {
  const dg_store_expand_t *e = &p->expand[j];
  memset(rr, 0, sizeof(*rr));
  rr->p = p;
  rr->j = j;
  rr->many = dg__store_is_inbound(e->reference);
  const char **keys = dg_arena_calloc(rd->arena, p->n + 1, sizeof(*keys));
  int rc = keys != NULL ? related_init(rd, rr, p->n) : dg__read_oom(rd);
  if (rc != 0)
    return rc;
  size_t nkeys = p->n;
  dg__id_index_t seen;
  if (rr->many)
    memcpy(keys, p->ids, p->n * sizeof(*keys));
  else if (dg__id_index_init(&seen, rd->arena, keys, p->n) == 0)
    nkeys = outbound_keys(p, j, keys, &seen);
  else
    return dg__read_oom(rd);
  if (nkeys == 0)
    return 1;
  if (rr->many)
    dg__sql_expand_many(sql, e, &rr->cols, keys, nkeys, DG_STORE_EXPAND_MAX);
  else
    dg__sql_by_ids(sql, e->target, &rr->cols, keys, nkeys);
  return 0;
}

/* ---- Writing entities --------------------------------------------------------------------------
 */

/* ,"expanded":{"customer":{...}|null,"orderLines":[...]}, and the
 * references that were cut, if any. */
static int put_expanded(dg_buf_t *out, const dg__parents_t *p, size_t i, bool after_members) {
  int rc = put(out, after_members ? ",\"expanded\":{" : "\"expanded\":{");
  bool any_cut = false;
  for (size_t j = 0; rc == 0 && j < p->nexpand; j++) {
    dg__span_t s = p->related[i * p->nexpand + j];
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
static int put_parent(dg_buf_t *out, const dg__parents_t *p, size_t i) {
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
static void reserve_answer(dg_buf_t *out, const dg__parents_t *p) {
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
static int put_omitted_ids(dg_buf_t *out, const dg__parents_t *p, const char *const *ids, size_t k,
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
static int put_entities(dg_buf_t *out, const dg__parents_t *p, const char *const *ids, size_t nids,
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

/* "entities":[...] of a page: the whole entities that leave room for the
 * rest of the answer within budget (*kept of them); DG_E2BIG when not even
 * the first one does. */
static int put_fitting(dg_buf_t *out, const dg__parents_t *p, size_t budget, size_t *kept) {
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

int dg__parents_put_page(dg_buf_t *out, const dg_store_query_t *q, const dg__parents_t *p,
                         bool more, size_t max) {
  size_t kept = 0;
  reserve_answer(out, p);
  int rc = put(out, "{");
  if (rc == 0)
    rc = put_fitting(out, p, budget_of(max, q->max_bytes), &kept);
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

int dg__parents_put_fetch(dg_buf_t *out, const dg__parents_t *p, const char *const *ids,
                          size_t nids, size_t max) {
  reserve_answer(out, p);
  int rc = put(out, "{");
  if (rc == 0)
    rc = put_entities(out, p, ids, nids, max);
  return rc == 0 ? put(out, "}") : rc;
}

/* ---- Keyword hits --------------------------------------------------------------------------- */

int dg__hits_init(dg__read_t *rd, dg__hits_t *h, const dg_store_lookup_t *l) {
  memset(h, 0, sizeof(*h));
  h->l = l;
  dg_buf_init(&h->pieces, pieces_max(rd->max));
  h->items = dg_arena_calloc(rd->arena, (size_t)l->limit * l->nmodels + 1, sizeof(*h->items));
  return h->items != NULL ? 0 : dg__read_oom(rd);
}

void dg__hits_free(dg__hits_t *h) {
  dg_buf_free(&h->pieces);
}

void dg__hits_next_model(dg__hits_t *h) {
  h->cap = h->n + (size_t)h->l->limit;
}

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

int dg__hits_add(dg__read_t *rd, dg__hits_t *h, size_t model, const dg__sql_cols_t *cols,
                 const dg_store_value_t *row, double score) {
  if (h->n == h->cap)
    return 1;
  size_t off = h->pieces.len;
  int rc = put_hit(&h->pieces, h->l->models[model].model, cols, row);
  if (rc != 0)
    return dg__read_put_failed(rd, rc);
  h->items[h->n] = (dg__hit_t){.score = score,
                               .model = model,
                               .seq = h->n,
                               .text = {off, h->pieces.len - off, true},
                               .id = copy_text(rd, &row[0])};
  if (h->items[h->n].id == NULL)
    h->items[h->n].id = "";
  h->n++;
  return 0;
}

/* Best first; equal scores by model, then by rank within the model. */
static int compare_hits(const void *a, const void *b) {
  const dg__hit_t *x = a, *y = b;
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
static int put_omitted(dg_buf_t *out, const dg__hits_t *h, size_t from, size_t n, size_t budget) {
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

/* The hits that fit whole within the budget, best first, leaving room for
 * the ids of some of the others (a quarter of the budget at most). */
int dg__hits_put(dg_buf_t *out, dg__hits_t *h, size_t max) {
  size_t budget = budget_of(max, h->l->max_bytes);
  qsort(h->items, h->n, sizeof(*h->items), compare_hits);
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
