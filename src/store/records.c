/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Records as values: a fetch or query whose answer is handed back as
 * [{id, values}] keyed by property names, for the code that works on
 * records (forms, submissions, save trees) rather than passing the
 * answer on as tool text. Built on dg_store_fetch and dg_store_query, so
 * every driver serves it unchanged. */
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"

/* Answers up to this size are read on the loop; larger ones (long child
 * lists) on the threadpool. */
#define INLINE_PARSE_BYTES (16u * 1024u)

typedef struct records_req {
  dg_store_t *store;
  const dg_model_t *model;
  dg_store_records_cb cb;
  void *data;
  json_t *answer;  /* the store's answer while it is read on the threadpool */
  json_t *records; /* [{id, values}] */
  uv_work_t work;
  dg_store_fetch_t fetch; /* dg_store_read_records: the fetch it runs */
  const dg_property_t **props;
  char **ids;
  size_t nids;
} records_req_t;

/* {"<Property>": value} from an entity's "properties" (camelCased keys). */
static json_t *values_of(const dg_model_t *m, const json_t *properties) {
  json_t *values = json_object();
  for (size_t i = 0; values != NULL && i < m->nproperties; i++) {
    const json_t *v = json_object_get(properties, m->properties[i].json_name);
    if (v != NULL && json_object_set(values, m->properties[i].name, (json_t *)v) != 0) {
      json_decref(values);
      return NULL;
    }
  }
  return values;
}

/* The answer's entities as records; NULL when it cannot be read. Touches
 * only the answer and the immutable catalog: safe on a worker thread. */
static json_t *records_of(const dg_model_t *m, const json_t *answer) {
  const json_t *text = dg_json_raw_text(answer);
  json_t *result = text ? json_loadb(json_string_value(text), json_string_length(text), 0, NULL)
                        : json_incref((json_t *)answer);
  json_t *records = result ? json_array() : NULL;
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(result, "entities"), i, e) {
    json_t *r = json_pack("{s:O,s:o*}", "id", json_object_get(e, "id"), "values",
                          values_of(m, json_object_get(e, "properties")));
    if (r == NULL || json_object_get(r, "values") == NULL ||
        json_array_append_new(records, r) != 0) {
      json_decref(r);
      json_decref(records);
      records = NULL;
      break;
    }
  }
  json_decref(result);
  return records;
}

static void req_free(records_req_t *r) {
  for (size_t i = 0; r != NULL && i < r->nids; i++)
    free(r->ids[i]);
  if (r != NULL) {
    free(r->ids);
    free(r->props);
  }
  free(r);
}

static void finish(records_req_t *r, int status, const dg_errctx_t *err) {
  dg_errctx_t oom;
  dg_errctx_clear(&oom);
  if (status == 0 && r->records == NULL) {
    status = dg_errctx_set(&oom, DG_ENOMEM, "", "The entity store is out of memory.");
    err = &oom;
  }
  r->cb(status, r->records, err, r->data);
  req_free(r);
}

static void parse_work(uv_work_t *w) {
  records_req_t *r = w->data;
  r->records = records_of(r->model, r->answer);
}

static void parse_done(uv_work_t *w, int status) {
  records_req_t *r = w->data;
  (void)status;
  json_decref(r->answer);
  finish(r, 0, NULL);
}

static void on_answer(int status, json_t *answer, const dg_errctx_t *err, void *data) {
  records_req_t *r = data;
  const json_t *text = status == 0 ? dg_json_raw_text(answer) : NULL;
  if (text != NULL && json_string_length(text) > INLINE_PARSE_BYTES) {
    r->answer = answer;
    r->work.data = r;
    if (uv_queue_work(r->store->loop, &r->work, parse_work, parse_done) == 0)
      return;
  }
  r->records = status == 0 ? records_of(r->model, answer) : NULL;
  json_decref(answer);
  finish(r, status, err);
}

static records_req_t *req_new(dg_store_t *store, const dg_model_t *m, dg_store_records_cb cb,
                              void *data) {
  records_req_t *r = calloc(1, sizeof(*r));
  if (r != NULL)
    *r = (records_req_t){.store = store, .model = m, .cb = cb, .data = data};
  return r;
}

static int nomem(dg_errctx_t *err) {
  return dg_errctx_set(err, DG_ENOMEM, "", "The entity store is out of memory.");
}

/* Every stored property of m (Inbound references hold no value), and
 * the ids in lower case (GUIDs). */
static int fill_fetch(records_req_t *r, const char *const *ids, size_t nids) {
  const dg_model_t *m = r->model;
  r->props = calloc(m->nproperties + 1, sizeof(*r->props));
  r->ids = calloc(nids + 1, sizeof(*r->ids));
  if (r->props == NULL || r->ids == NULL)
    return DG_ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < m->nproperties; i++) {
    const dg_property_t *p = &m->properties[i];
    if (p->reference == NULL || p->reference->direction == DG_REF_OUTBOUND)
      r->props[n++] = p;
  }
  for (; r->nids < nids; r->nids++) {
    char *id = strdup(ids[r->nids] ? ids[r->nids] : "");
    if (id == NULL)
      return DG_ENOMEM;
    for (char *c = id; *c != '\0'; c++)
      *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
    r->ids[r->nids] = id;
  }
  r->fetch = (dg_store_fetch_t){.model = m,
                                .ids = (const char **)r->ids,
                                .nids = nids,
                                .select = {.props = r->props, .nprops = n}};
  return 0;
}

int dg_store_read_records(dg_store_t *store, const dg_model_t *model, const char *const *ids,
                          size_t nids, dg_store_records_cb cb, void *data, dg_errctx_t *err) {
  records_req_t *r = req_new(store, model, cb, data);
  if (r == NULL || fill_fetch(r, ids, nids) != 0) {
    req_free(r);
    return nomem(err);
  }
  int rc = dg__store_fetch_primary(store, &r->fetch, on_answer, r, err);
  if (rc != 0)
    req_free(r);
  return rc;
}

int dg_store_query_records(dg_store_t *store, const dg_store_query_t *q, dg_store_records_cb cb,
                           void *data, dg_errctx_t *err) {
  records_req_t *r = req_new(store, q->model, cb, data);
  if (r == NULL)
    return nomem(err);
  int rc = dg__store_query_primary(store, q, on_answer, r, err);
  if (rc != 0)
    req_free(r);
  return rc;
}
