/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Helpers of the save tree tests: a fake connector that answers each call
 * on a later loop turn (with what the test's answer function says, after
 * an optional delay, or never until canceled) and records every request;
 * a fake child loader serving records the test set per parent and list;
 * catalogs made of the sample configuration with the test's own
 * endpoints.json; and a driver that runs the loop until the tree is done,
 * then closes the loop and checks that nothing was left open. */
#ifndef DG_TEST_TREE_TEST_H
#define DG_TEST_TREE_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../catalog/conf_test.h"
#include "datagate/save.h"

#define TT_MAX_CALLS 512

typedef struct tt_fake tt_fake_t;

/* One request the fake saw. */
typedef struct tt_call {
  tt_fake_t *fake;
  char method[8];
  char path[512];
  char body[4096];
  char connector[64];
  dg_connector_done_fn done;
  void *user;
  uv_timer_t timer;
  bool canceled;
  bool hang;
  int status;
  char *answer;
} tt_call_t;

/* What to answer: status (0: the call fails to connect), body; hang true
 * answers never (until canceled); delay_ms waits first. */
typedef struct tt_answer {
  int status;
  const char *body;
  bool hang;
  unsigned delay_ms;
} tt_answer_t;

struct tt_fake {
  uv_loop_t loop;
  tt_call_t calls[TT_MAX_CALLS];
  size_t ncalls;
  unsigned running, max_running;
  tt_answer_t (*answer)(tt_fake_t *f, const tt_call_t *c);
  void *user;
  json_t *children; /* "<parent id>/<list>" -> records */
  unsigned loads;
  bool done;
  int done_calls;
  bool done_early; /* done ran inside dg_save_run */
  bool starting;
  json_t *result;
  json_t *changes;
  bool succeeded, canceled;
  char failed_action[512];
  char reason[1024];
};

/* ---- The fake connector ---------------------------------------------------------------- */

static inline void tt_call_closed(uv_handle_t *h) {
  tt_call_t *c = h->data;
  free(c->answer);
  c->answer = NULL;
}

static inline void tt_call_fire(uv_timer_t *t) {
  tt_call_t *c = t->data;
  tt_fake_t *f = c->fake;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  dg_http_response_t res = {.status = c->status,
                            .body = c->answer ? c->answer : "",
                            .body_len = c->answer ? strlen(c->answer) : 0,
                            .url = "http://fake/api"};
  dg_connector_result_t r = {.attempts = 1, .err = &err};
  if (c->canceled) {
    r.rc = dg_errctx_set(&err, DG_ECANCELED, "upstream", "upstream '%s' %s: canceled", c->connector,
                         c->method);
  } else if (c->status == 0) {
    r.rc = dg_errctx_set(&err, DG_EUPSTREAM, "upstream", "upstream '%s' %s %s: connection refused",
                         c->connector, c->method, c->path);
  } else {
    r.response = &res;
    if (c->status >= 300)
      r.rc = dg_errctx_set(&err, DG_EUPSTREAM, "upstream", "upstream '%s' %s %s answered %d",
                           c->connector, c->method, c->path, c->status);
  }
  f->running--;
  c->done(NULL, &r, c->user);
  uv_close((uv_handle_t *)&c->timer, tt_call_closed);
}

static inline int tt_start(void *data, const dg_connector_t *conn,
                           const dg_connector_request_t *req, dg_connector_done_fn done, void *user,
                           void **handle, dg_errctx_t *err) {
  tt_fake_t *f = data;
  assert_true(f->ncalls < TT_MAX_CALLS);
  tt_call_t *c = &f->calls[f->ncalls++];
  memset(c, 0, sizeof(*c));
  c->fake = f;
  snprintf(c->method, sizeof(c->method), "%s", req->method);
  snprintf(c->path, sizeof(c->path), "%s", req->path);
  snprintf(c->body, sizeof(c->body), "%.*s", (int)req->body_len,
           req->body ? (const char *)req->body : "");
  snprintf(c->connector, sizeof(c->connector), "%s", conn->name);
  c->done = done;
  c->user = user;
  tt_answer_t a = f->answer(f, c);
  c->status = a.status;
  c->hang = a.hang;
  c->answer = a.body ? strdup(a.body) : NULL;
  uv_timer_init(&f->loop, &c->timer);
  c->timer.data = c;
  if (!a.hang)
    uv_timer_start(&c->timer, tt_call_fire, a.delay_ms, 0);
  if (++f->running > f->max_running)
    f->max_running = f->running;
  *handle = c;
  return 0;
}

static inline void tt_cancel(void *data, void *handle) {
  tt_call_t *c = handle;
  c->canceled = true;
  uv_timer_start(&c->timer, tt_call_fire, 0, 0);
}

/* ---- The fake loader ---------------------------------------------------------------------- */

typedef struct tt_load {
  tt_fake_t *f;
  dg_save_loaded_fn done;
  void *token;
  json_t *records;
  uv_timer_t timer;
} tt_load_t;

static inline void tt_load_closed(uv_handle_t *h) {
  free(h->data);
}

static inline void tt_load_fire(uv_timer_t *t) {
  tt_load_t *l = t->data;
  l->done(l->token, 0, l->records, NULL);
  uv_close((uv_handle_t *)&l->timer, tt_load_closed);
}

static inline int tt_load(void *data, const dg_child_config_t *child, const char *parent_id,
                          unsigned max, dg_save_loaded_fn done, void *token, dg_errctx_t *err) {
  tt_fake_t *f = data;
  char key[256];
  snprintf(key, sizeof(key), "%s/%s", parent_id, child->list->name);
  json_t *records = json_object_get(f->children, key);
  tt_load_t *l = calloc(1, sizeof(*l));
  l->f = f;
  l->done = done;
  l->token = token;
  l->records = records ? json_deep_copy(records) : json_array();
  uv_timer_init(&f->loop, &l->timer);
  l->timer.data = l;
  uv_timer_start(&l->timer, tt_load_fire, 0, 0);
  f->loads++;
  return 0;
}

/* Children of a parent in a list, as {"id", "values"} records. */
static inline void tt_children(tt_fake_t *f, const char *parent, const char *list,
                               const char *json) {
  char key[256];
  snprintf(key, sizeof(key), "%s/%s", parent, list);
  json_error_t jerr;
  json_t *v = json_loads(json, 0, &jerr);
  if (v == NULL)
    fail_msg("bad test JSON: %s", jerr.text);
  json_object_set_new(f->children, key, v);
}

/* ---- Catalogs --------------------------------------------------------------------------- */

static inline const char *tt_conf_dir(void) {
  static char dir[4096];
  const char *src = getenv("DG_SOURCE_DIR");
  snprintf(dir, sizeof(dir), "%s/conf", src ? src : ".");
  return dir;
}

static inline dg_catalog_t *tt_sample(void) {
  dg_catalog_t *cat = NULL;
  assert_int_equal(dg_catalog_load(tt_conf_dir(), &cat, NULL), 0);
  return cat;
}

/* The sample configuration with endpoints as endpoints.json. */
static inline dg_catalog_t *tt_catalog(const char *endpoints) {
  conf_test_dir_t t;
  conf_test_make_sample_connectors(&t);
  conf_test_write(t.dir, "endpoints.json", endpoints);
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = NULL;
  int rc = dg_catalog_load(t.dir, &cat, &errors);
  for (size_t i = 0; i < errors.count; i++)
    fprintf(stderr, "config: %s\n", errors.lines[i]);
  dg_config_errors_free(&errors);
  conf_test_remove(&t);
  assert_int_equal(rc, 0);
  return cat;
}

/* ---- Running ----------------------------------------------------------------------------------
 */

/* An answer with a status and a body. */
static inline tt_answer_t tt_reply(int status, const char *body) {
  return (tt_answer_t){.status = status, .body = body};
}

static inline tt_fake_t *tt_fake(tt_answer_t (*answer)(tt_fake_t *f, const tt_call_t *c)) {
  tt_fake_t *f = calloc(1, sizeof(*f));
  assert_int_equal(uv_loop_init(&f->loop), 0);
  f->answer = answer;
  f->children = json_object();
  dg_log_init(2, DG_LOG_ERROR);
  return f;
}

static inline void tt_done(dg_save_run_t *run, const dg_save_outcome_t *o, void *data) {
  tt_fake_t *f = data;
  f->done = true;
  f->done_calls++;
  f->done_early |= f->starting;
  f->succeeded = o->succeeded;
  f->canceled = o->canceled;
  snprintf(f->failed_action, sizeof(f->failed_action), "%s",
           o->failed_action ? o->failed_action : "");
  snprintf(f->reason, sizeof(f->reason), "%s", o->reason ? o->reason : "");
  f->result = json_incref(o->result);
  f->changes = json_incref(o->changes);
}

/* Starts the endpoint's tree for a record; values is JSON text. */
static inline dg_save_run_t *tt_start_run(tt_fake_t *f, const dg_catalog_t *cat,
                                          const char *endpoint, const char *id, bool create,
                                          const char *values) {
  json_t *v = json_loads(values, 0, NULL);
  assert_non_null(v);
  const dg_endpoint_t *e = dg_catalog_endpoint(cat, endpoint);
  assert_non_null(e);
  dg_save_options_t o = {.loop = &f->loop,
                         .cat = cat,
                         .endpoint = e,
                         .create = create,
                         .id = id,
                         .values = v,
                         .upstream = {.start = tt_start, .cancel = tt_cancel, .data = f},
                         .loader = {.load = tt_load, .data = f},
                         .request_id = "req-1"};
  dg_save_run_t *run = NULL;
  dg_errctx_t err;
  f->starting = true;
  assert_int_equal(dg_save_run(&o, tt_done, f, &run, &err), 0);
  f->starting = false;
  json_decref(v);
  assert_int_equal(f->done_calls, 0); /* never from inside the call */
  return run;
}

static inline void tt_wait(tt_fake_t *f) {
  while (!f->done && uv_run(&f->loop, UV_RUN_ONCE) != 0)
    ;
  assert_true(f->done);
  assert_int_equal(f->done_calls, 1);
  assert_false(f->done_early);
}

static inline void tt_run(tt_fake_t *f, const dg_catalog_t *cat, const char *endpoint,
                          const char *id, bool create, const char *values) {
  tt_start_run(f, cat, endpoint, id, create, values);
  tt_wait(f);
}

/* Runs the loop dry, closes it and checks nothing was left open. */
static inline void tt_free(tt_fake_t *f) {
  uv_run(&f->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&f->loop), 0);
  json_decref(f->children);
  json_decref(f->result);
  json_decref(f->changes);
  free(f);
}

/* ---- Reading the result ---------------------------------------------------------------------- */

static inline json_t *tt_actions(const tt_fake_t *f) {
  return json_object_get(f->result, "actions");
}

static inline json_t *tt_action(const tt_fake_t *f, size_t i) {
  json_t *a = json_array_get(tt_actions(f), i);
  assert_non_null(a);
  return a;
}

static inline const char *tt_str(const json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  if (s == NULL)
    fail_msg("no string '%s' in %s", key, json_dumps(o, JSON_COMPACT));
  return s;
}

/* The values the tree set on a record, from the changes. */
static inline json_t *tt_changed(const tt_fake_t *f, const char *id) {
  size_t i;
  json_t *c;
  json_array_foreach(f->changes, i, c) {
    if (strcmp(json_string_value(json_object_get(c, "id")), id) == 0)
      return json_object_get(c, "values");
  }
  return NULL;
}

#endif
