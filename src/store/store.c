/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The store's life and its requests, whatever the driver: opening, the
 * list of requests in flight, cancellation, completion on the loop and
 * closing once the last request has ended. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"

/* The first that accepts the path serves it: PostgreSQL URIs, then files. */
static const dg__store_driver_t *const drivers[] = {&dg__store_postgres, &dg__store_sqlite};

static const char *const state_names[] = {"opening", "open", "closing", "closed"};

static void set_state(dg_store_t *s, dg__store_state_t next) {
  static const bool legal[4][4] = {
      [DG__STORE_OPENING] = {[DG__STORE_OPEN] = true, [DG__STORE_CLOSED] = true},
      [DG__STORE_OPEN] = {[DG__STORE_CLOSING] = true},
      [DG__STORE_CLOSING] = {[DG__STORE_CLOSED] = true},
  };
  /* Checked in every build: an illegal transition is a bug worth a stop. */
  if (!legal[s->state][next])
    dg_log_illegal_state("store", state_names[s->state], state_names[next]);
  dg_log_json(DG_LOG_DEBUG, "store_state",
              json_pack("{s:s,s:s}", "from", state_names[s->state], "to", state_names[next]));
  s->state = next;
}

const char *dg_store_driver(const dg_store_t *store) {
  return store->driver->name;
}

/* ---- Opening ------------------------------------------------------------------------ */

static const dg__store_driver_t *driver_for(const char *path) {
  for (size_t i = 0; i < DG_ARRAY_SIZE(drivers); i++) {
    if (drivers[i]->accepts(path))
      return drivers[i];
  }
  return NULL;
}

static char *sample_dir_of(const dg_catalog_t *cat, const dg_store_options_t *o) {
  if (o != NULL && o->sample_dir != NULL)
    return o->sample_dir[0] != '\0' ? strdup(o->sample_dir) : NULL;
  size_t n = strlen(cat->dir) + sizeof("/data");
  char *dir = malloc(n);
  if (dir != NULL)
    snprintf(dir, n, "%s/data", cat->dir);
  return dir;
}

int dg_store_check_sample(const dg_catalog_t *cat, dg_errctx_t *err) {
  char *dir = sample_dir_of(cat, NULL);
  dg_arena_t *arena = dir != NULL ? dg_arena_new(64 * 1024) : NULL;
  dg_store_write_t *writes = NULL;
  size_t n = 0;
  int rc = arena != NULL ? dg__store_sample_read(cat, dir, arena, &writes, &n, err)
                         : dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
  dg_arena_destroy(arena);
  free(dir);
  return rc;
}

static void store_free(dg_store_t *s) {
  json_decref(s->open_notes);
  dg_catalog_unref(s->cat);
  free(s->drv);
  free(s->path);
  free(s->read_path);
  free(s->sample_dir);
  free(s);
}

static dg_store_t *store_new(uv_loop_t *loop, dg_catalog_t *cat, const dg_store_options_t *o) {
  dg_store_t *s = calloc(1, sizeof(*s));
  if (s == NULL)
    return NULL;
  s->loop = loop;
  s->cat = dg_catalog_ref(cat);
  const char *path = o != NULL && o->path != NULL ? o->path : cat->server.database;
  s->path = strdup(path != NULL ? path : "datagate.db");
  const char *read_path =
      o != NULL && o->read_path != NULL ? o->read_path : cat->server.read_database;
  s->read_path = read_path != NULL ? strdup(read_path) : NULL;
  s->max_result_bytes =
      o != NULL && o->max_result_bytes > 0 ? o->max_result_bytes : cat->server.max_result_bytes;
  if (s->max_result_bytes == 0)
    s->max_result_bytes = SIZE_MAX / 2;
  s->sample_dir = sample_dir_of(cat, o);
  s->driver = driver_for(s->path);
  s->drv = s->driver != NULL ? calloc(1, s->driver->state_size) : NULL;
  s->open_notes = json_array();
  bool sample_ok = s->sample_dir != NULL || (o != NULL && o->sample_dir != NULL);
  bool read_ok = read_path == NULL || s->read_path != NULL;
  if (s->path == NULL || s->drv == NULL || s->open_notes == NULL || !sample_ok || !read_ok) {
    store_free(s);
    return NULL;
  }
  return s;
}

int dg_store_open(uv_loop_t *loop, dg_catalog_t *cat, const dg_store_options_t *options,
                  dg_store_open_cb cb, void *data) {
  dg_store_t *s = store_new(loop, cat, options);
  if (s == NULL)
    return DG_ENOMEM;
  s->open_cb = cb;
  s->open_data = data;
  s->state = DG__STORE_OPENING;
  dg_errctx_clear(&s->open_err);
  s->driver->open(s);
  return 0;
}

static void log_notes(dg_store_t *s) {
  size_t i;
  json_t *note;
  json_array_foreach(s->open_notes, i, note) {
    char event[64];
    const char *named = json_string_value(json_object_get(note, "event"));
    dg_strlcpy(event, named ? named : "store_migration", sizeof(event));
    json_object_del(note, "event");
    dg_log_json(DG_LOG_WARN, event, json_incref(note));
  }
  json_array_clear(s->open_notes);
}

void dg__store_opened(dg_store_t *s, int status) {
  log_notes(s);
  if (status != 0) {
    set_state(s, DG__STORE_CLOSED);
    dg_store_open_cb cb = s->open_cb;
    void *data = s->open_data;
    dg_errctx_t err = s->open_err;
    store_free(s);
    cb(NULL, status, &err, data);
    return;
  }
  set_state(s, DG__STORE_OPEN);
  dg_log_json(DG_LOG_INFO, "store_open",
              json_pack("{s:s,s:s,s:i}", "driver", s->driver->name, "path", s->path, "models",
                        (int)s->cat->nmodels));
  s->open_cb(s, 0, NULL, s->open_data);
}

/* ---- Closing ------------------------------------------------------------------------ */

static void close_if_idle(dg_store_t *s) {
  if (s->state == DG__STORE_CLOSING && s->inflight == 0 && !s->driver_closing) {
    s->driver_closing = true;
    s->driver->close(s);
  }
}

void dg_store_close(dg_store_t *s, void (*cb)(void *data), void *data) {
  if (s == NULL || s->state != DG__STORE_OPEN)
    return;
  set_state(s, DG__STORE_CLOSING);
  s->close_cb = cb;
  s->close_data = data;
  for (dg_store_req_t *r = s->reqs; r != NULL; r = r->next)
    dg_store_cancel(r);
  close_if_idle(s);
}

void dg__store_closed(dg_store_t *s) {
  set_state(s, DG__STORE_CLOSED);
  void (*cb)(void *) = s->close_cb;
  void *data = s->close_data;
  dg_log_json(DG_LOG_INFO, "store_closed", json_pack("{s:s}", "path", s->path));
  store_free(s);
  if (cb != NULL)
    cb(data);
}

/* ---- Requests ------------------------------------------------------------------------- */

static const char *const kind_names[] = {"query",     "fetch",  "lookup", "write",
                                         "aggregate", "submit", "finish", "submission"};

static void unlink_req(dg_store_req_t *r) {
  dg_store_t *s = r->store;
  DG_LIST_UNLINK(s->reqs, r, prev, next);
  s->inflight--;
}

static void log_done(const dg_store_req_t *r) {
  if (!dg_log_enabled(DG_LOG_DEBUG))
    return;
  double ms = dg_log_ms(dg_now_ns() - r->start_ns);
  dg_log_json(DG_LOG_DEBUG, "store_request",
              json_pack("{s:s,s:s,s:i,s:f,s:s}", "kind", kind_names[r->kind], "status",
                        r->status ? dg_err_name(r->status) : "ok", "rows", (int)r->rows,
                        "duration_ms", ms, "sql", r->sql ? r->sql : ""));
}

void dg__store_done(dg_store_req_t *r) {
  dg_store_t *s = r->store;
  unlink_req(r);
  log_done(r);
  if (r->status == 0 && r->result == NULL)
    r->status =
        dg_errctx_set(&r->err, DG_ENOMEM, "", "The result could not be built: out of memory.");
  json_t *result = r->status == 0 ? r->result : NULL;
  if (r->status != 0)
    json_decref(r->result);
  r->cb(r->status, result, &r->err, r->data);
  free(r->sql);
  free(r);
  close_if_idle(s);
}

void dg_store_cancel(dg_store_req_t *r) {
  if (r == NULL || atomic_load(&r->canceled))
    return;
  atomic_store(&r->canceled, true);
  if (r->started)
    r->store->driver->cancel(r);
}

/* ---- The schema the database has --------------------------------------------------------
 * A reload may name models or properties that were not there when the
 * database was migrated at start-up; such a request is refused before it
 * reaches SQL. */

typedef struct schema_check {
  const dg_catalog_t *cat;
  dg_errctx_t *err;
  int rc;
} schema_check_t;

static const dg_model_t *check_model(schema_check_t *c, const dg_model_t *m) {
  const dg_model_t *have = c->rc == 0 ? dg_catalog_model_by_name(c->cat, m->name) : NULL;
  if (have == NULL && c->rc == 0)
    c->rc = dg_errctx_set(c->err, DG_ENOTSUP, "dataModelId",
                          "The Data Model '%s' was added to the configuration after the gateway "
                          "started; restart the gateway to create its table.",
                          m->name);
  return have;
}

static void check_prop(schema_check_t *c, const dg_model_t *m, const dg_property_t *p) {
  const dg_model_t *have = check_model(c, m);
  if (have == NULL || p == NULL)
    return;
  const dg_property_t *hp = dg_model_property(have, p->name);
  bool same =
      hp != NULL && hp->type == p->type && dg__store_is_inbound(hp) == dg__store_is_inbound(p);
  if (!same)
    c->rc = dg_errctx_set(c->err, DG_ENOTSUP, p->name,
                          "The property '%s' of '%s' was added or changed in the configuration "
                          "after the gateway started; restart the gateway to migrate it.",
                          p->name, m->name);
}

static void check_select(schema_check_t *c, const dg_model_t *m, const dg_store_select_t *sel) {
  check_model(c, m);
  for (size_t i = 0; i < sel->nprops; i++)
    check_prop(c, m, sel->props[i]);
}

static void check_expand(schema_check_t *c, const dg_model_t *m, const dg_store_expand_t *e,
                         size_t n) {
  for (size_t i = 0; i < n; i++) {
    check_prop(c, m, e[i].reference);
    check_select(c, e[i].target, &e[i].select);
    if (dg__store_is_inbound(e[i].reference))
      check_prop(c, e[i].target,
                 dg_model_property(e[i].target, e[i].reference->reference->inverse_property));
  }
}

static void check_filters(schema_check_t *c, const dg_model_t *m, const dg_store_filters_t *f) {
  for (size_t g = 0; g < f->ngroups; g++) {
    for (size_t i = 0; i < f->groups[g].nfilters; i++) {
      const dg_store_filter_t *x = &f->groups[g].filters[i];
      if (x->reference != NULL)
        check_prop(c, m, x->reference);
      check_prop(c, x->model, x->prop);
      check_prop(c, x->model, x->other);
    }
  }
}

static void check_join(schema_check_t *c, const dg_model_t *m, const dg_store_join_t *j) {
  if (j->reference != NULL)
    check_prop(c, m, j->reference);
  check_prop(c, m, j->key);
  check_prop(c, m, j->local);
  check_model(c, j->target);
  check_prop(c, j->target, j->foreign);
}

static void check_aggregate(schema_check_t *c, const dg_store_aggregate_t *a) {
  check_filters(c, a->model, &a->filters);
  for (size_t i = 0; i < a->naggs; i++) {
    check_prop(c, a->model, a->aggs[i].prop);
    if (a->aggs[i].join != NULL)
      check_join(c, a->model, a->aggs[i].join);
  }
  for (size_t i = 0; i < a->ngroup_by; i++) {
    const dg_store_group_key_t *k = &a->group_by[i];
    if (k->reference != NULL)
      check_prop(c, a->model, k->reference);
    check_prop(c, k->model, k->prop);
    if (dg__store_is_inbound(k->reference))
      check_prop(c, k->model,
                 dg_model_property(k->model, k->reference->reference->inverse_property));
  }
}

static void check_write(schema_check_t *c, const dg_store_write_t *w) {
  for (size_t i = 0; i < w->nvalues; i++)
    check_prop(c, w->model, w->props[i]);
}

/* The model a request names first, or NULL. */
static const dg_model_t *first_model(const dg_store_req_t *r) {
  switch (r->kind) {
  case DG__STORE_QUERY:
    return r->in.query->model;
  case DG__STORE_FETCH:
    return r->in.fetch->model;
  case DG__STORE_LOOKUP:
    return r->in.lookup->nmodels > 0 ? r->in.lookup->models[0].model : NULL;
  case DG__STORE_WRITE:
    return r->in.write->model;
  case DG__STORE_SUBMIT:
    return r->in.submit->write.model;
  case DG__STORE_FINISH:
    return r->in.finish->nwrites > 0 ? r->in.finish->writes[0].model : NULL;
  case DG__STORE_AGGREGATE:
    return r->in.aggregate->model;
  default:
    return NULL;
  }
}

/* Whether the request was read against the catalog the database was
 * migrated with: everything it names is then in the database. A request
 * reads one catalog snapshot throughout, so its first model tells. */
static bool from_store_catalog(const dg_store_t *s, const dg_store_req_t *r) {
  const dg_model_t *m = first_model(r);
  return m != NULL && m->index < s->cat->nmodels && &s->cat->models[m->index] == m;
}

static int check_schema(dg_store_t *s, const dg_store_req_t *r, dg_errctx_t *err) {
  if (from_store_catalog(s, r))
    return 0; /* no reload since the start: nothing to check */
  schema_check_t c = {.cat = s->cat, .err = err, .rc = 0};
  switch (r->kind) {
  case DG__STORE_QUERY:
    check_select(&c, r->in.query->model, &r->in.query->select);
    check_filters(&c, r->in.query->model, &r->in.query->filters);
    check_expand(&c, r->in.query->model, r->in.query->expand, r->in.query->nexpand);
    if (r->in.query->has_sort)
      check_prop(&c, r->in.query->model, r->in.query->sort.prop);
    break;
  case DG__STORE_FETCH:
    check_select(&c, r->in.fetch->model, &r->in.fetch->select);
    check_expand(&c, r->in.fetch->model, r->in.fetch->expand, r->in.fetch->nexpand);
    break;
  case DG__STORE_LOOKUP:
    for (size_t i = 0; i < r->in.lookup->nmodels; i++)
      check_select(&c, r->in.lookup->models[i].model, &r->in.lookup->models[i].select);
    break;
  case DG__STORE_WRITE:
    check_write(&c, r->in.write);
    break;
  case DG__STORE_SUBMIT:
    check_write(&c, &r->in.submit->write);
    for (size_t i = 0; i < r->in.submit->nrefs; i++)
      check_model(&c, r->in.submit->refs[i].model);
    break;
  case DG__STORE_FINISH:
    for (size_t i = 0; i < r->in.finish->nwrites; i++)
      check_write(&c, &r->in.finish->writes[i]);
    break;
  case DG__STORE_SUBMISSION:
    break;
  case DG__STORE_AGGREGATE:
    check_aggregate(&c, r->in.aggregate);
    break;
  }
  return c.rc;
}

static int submit(dg_store_t *s, dg_store_req_t *r, dg_store_req_t **out, dg_errctx_t *err) {
  if (out != NULL)
    *out = NULL;
  if (s == NULL || s->state != DG__STORE_OPEN) {
    free(r);
    return dg_errctx_set(err, DG_ECLOSED, "", "The entity store is not running.");
  }
  int rc = check_schema(s, r, err);
  if (rc == 0)
    rc = s->driver->submit(r);
  if (rc != 0) {
    if (err->code == 0)
      dg_errctx_set(err, rc, "", "The entity store could not start the request: %s.",
                    dg_strerror(rc));
    free(r);
    return rc;
  }
  r->started = true;
  DG_LIST_PUSH(s->reqs, r, prev, next);
  s->inflight++;
  if (out != NULL)
    *out = r;
  return 0;
}

static dg_store_req_t *req_new(dg_store_t *s, dg__store_kind_t kind, dg_store_cb cb, void *data) {
  dg_store_req_t *r = calloc(1, sizeof(*r));
  if (r == NULL)
    return NULL;
  r->store = s;
  r->kind = kind;
  r->cb = cb;
  r->data = data;
  atomic_init(&r->canceled, false);
  dg_errctx_clear(&r->err);
  r->start_ns = dg_now_ns();
  return r;
}

static int nomem(dg_errctx_t *err) {
  return dg_errctx_set(err, DG_ENOMEM, "", "The entity store is out of memory.");
}

static int query(dg_store_t *s, const dg_store_query_t *q, bool primary, dg_store_cb cb, void *data,
                 dg_store_req_t **req, dg_errctx_t *err) {
  dg_store_req_t *r = req_new(s, DG__STORE_QUERY, cb, data);
  if (r == NULL)
    return nomem(err);
  r->in.query = q;
  r->primary = primary;
  return submit(s, r, req, err);
}

static int fetch(dg_store_t *s, const dg_store_fetch_t *f, bool primary, dg_store_cb cb, void *data,
                 dg_store_req_t **req, dg_errctx_t *err) {
  dg_store_req_t *r = req_new(s, DG__STORE_FETCH, cb, data);
  if (r == NULL)
    return nomem(err);
  r->in.fetch = f;
  r->primary = primary;
  return submit(s, r, req, err);
}

int dg_store_query(dg_store_t *s, const dg_store_query_t *q, dg_store_cb cb, void *data,
                   dg_store_req_t **req, dg_errctx_t *err) {
  return query(s, q, false, cb, data, req, err);
}

int dg_store_fetch(dg_store_t *s, const dg_store_fetch_t *f, dg_store_cb cb, void *data,
                   dg_store_req_t **req, dg_errctx_t *err) {
  return fetch(s, f, false, cb, data, req, err);
}

int dg__store_query_primary(dg_store_t *s, const dg_store_query_t *q, dg_store_cb cb, void *data,
                            dg_errctx_t *err) {
  return query(s, q, true, cb, data, NULL, err);
}

int dg__store_fetch_primary(dg_store_t *s, const dg_store_fetch_t *f, dg_store_cb cb, void *data,
                            dg_errctx_t *err) {
  return fetch(s, f, true, cb, data, NULL, err);
}

int dg_store_lookup(dg_store_t *s, const dg_store_lookup_t *l, dg_store_cb cb, void *data,
                    dg_store_req_t **req, dg_errctx_t *err) {
  dg_store_req_t *r = req_new(s, DG__STORE_LOOKUP, cb, data);
  if (r == NULL)
    return nomem(err);
  r->in.lookup = l;
  return submit(s, r, req, err);
}

int dg_store_aggregate(dg_store_t *s, const dg_store_aggregate_t *a, dg_store_cb cb, void *data,
                       dg_store_req_t **req, dg_errctx_t *err) {
  dg_store_req_t *r = req_new(s, DG__STORE_AGGREGATE, cb, data);
  if (r == NULL)
    return nomem(err);
  r->in.aggregate = a;
  return submit(s, r, req, err);
}

int dg_store_write(dg_store_t *s, const dg_store_write_t *w, dg_store_cb cb, void *data,
                   dg_store_req_t **req, dg_errctx_t *err) {
  dg_store_req_t *r = req_new(s, DG__STORE_WRITE, cb, data);
  if (r == NULL)
    return nomem(err);
  r->in.write = w;
  return submit(s, r, req, err);
}

int dg_store_submit(dg_store_t *s, const dg_store_submit_t *sub, dg_store_cb cb, void *data,
                    dg_store_req_t **req, dg_errctx_t *err) {
  dg_store_req_t *r = req_new(s, DG__STORE_SUBMIT, cb, data);
  if (r == NULL)
    return nomem(err);
  r->in.submit = sub;
  return submit(s, r, req, err);
}

int dg_store_finish(dg_store_t *s, const dg_store_finish_t *f, dg_store_cb cb, void *data,
                    dg_store_req_t **req, dg_errctx_t *err) {
  dg_store_req_t *r = req_new(s, DG__STORE_FINISH, cb, data);
  if (r == NULL)
    return nomem(err);
  r->in.finish = f;
  return submit(s, r, req, err);
}

int dg_store_submission(dg_store_t *s, const dg_store_submission_get_t *g, dg_store_cb cb,
                        void *data, dg_store_req_t **req, dg_errctx_t *err) {
  dg_store_req_t *r = req_new(s, DG__STORE_SUBMISSION, cb, data);
  if (r == NULL)
    return nomem(err);
  r->in.submission = g;
  return submit(s, r, req, err);
}
