/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The Test panel's runs (POST /admin/api/test): an endpoint's save tree
 * for a record the page gives (values, and the children of its lists),
 * as a dry run or for real. A dry run builds every request and sends
 * none: the n-th call is answered with 200 and the n-th of the sample
 * "answers" the page gave ({} when there are fewer); a real run calls the
 * connectors. Either way the answer is the tree's trace and every request
 * as built, its credential headers masked. Nothing is written to the
 * store: the changes a run would make are only reported. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "admin/internal.h"
#include "datagate/save.h"

#define TEST_MAX_REQUESTS 1000
#define TEST_BODY_SHOWN 65536

typedef struct test_run {
  dg_admin_t *admin;
  dg_http_request_t *req; /* NULL once the client went away */
  dg_catalog_t *cat;
  json_t *input; /* the request body */
  json_t *requests;
  bool dry;
  dg_save_upstream_t real;
  dg_save_run_t *run;
  size_t ncalls;
  char request_id[64]; /* the run may outlive the request */
} test_run_t;

/* One dry call: answered on a later loop turn. */
typedef struct dry_call {
  uv_timer_t timer;
  char *answer; /* JSON text */
  dg_connector_done_fn done;
  void *user;
  bool canceled;
} dry_call_t;

static bool secret_header(const char *name) {
  static const char *const words[] = {"authorization", "cookie", "key",
                                      "token",         "secret", "password"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(words); i++) {
    if (strcasestr(name, words[i]) != NULL)
      return true;
  }
  return false;
}

static void record(test_run_t *t, const dg_connector_t *conn, const dg_connector_request_t *r) {
  if (json_array_size(t->requests) >= TEST_MAX_REQUESTS)
    return;
  json_t *headers = json_object();
  for (size_t i = 0; i < r->nheaders; i++)
    json_object_set_new(
        headers, r->headers[i].name,
        json_string(secret_header(r->headers[i].name) ? "***" : r->headers[i].value));
  size_t n = r->body_len < TEST_BODY_SHOWN ? r->body_len : TEST_BODY_SHOWN;
  json_t *body = r->body != NULL ? json_stringn_nocheck((const char *)r->body, n) : json_null();
  json_array_append_new(
      t->requests, json_pack("{s:s,s:s,s:s+,s:o,s:o,s:b}", "connector", conn->name, "method",
                             r->method, "url", conn->base_url, r->path ? r->path : "", "headers",
                             headers, "body", body ? body : json_null(), "sent", !t->dry));
}

static void dry_closed(uv_handle_t *h) {
  dry_call_t *c = h->data;
  free(c->answer);
  free(c);
}

static void dry_fire(uv_timer_t *timer) {
  dry_call_t *c = timer->data;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  dg_http_response_t res = {
      .status = 200, .body = c->answer, .body_len = strlen(c->answer), .url = "dry-run"};
  dg_connector_result_t r = {.attempts = 0, .err = &err, .response = &res};
  if (c->canceled) {
    r.response = NULL;
    r.rc = dg_errctx_set(&err, DG_ECANCELED, "upstream", "canceled");
  }
  c->done(NULL, &r, c->user);
  uv_close((uv_handle_t *)&c->timer, dry_closed);
}

static int test_start(void *data, const dg_connector_t *conn, const dg_connector_request_t *req,
                      dg_connector_done_fn done, void *user, void **handle, dg_errctx_t *err) {
  test_run_t *t = data;
  record(t, conn, req);
  if (!t->dry)
    return t->real.start(t->real.data, conn, req, done, user, handle, err);
  dry_call_t *c = calloc(1, sizeof(*c));
  const json_t *sample = json_array_get(json_object_get(t->input, "answers"), t->ncalls++);
  if (c != NULL)
    c->answer = sample ? json_dumps(sample, JSON_COMPACT | JSON_ENCODE_ANY) : strdup("{}");
  if (c == NULL || c->answer == NULL) {
    free(c);
    return dg_errctx_set(err, DG_ENOMEM, "upstream", "out of memory");
  }
  c->done = done;
  c->user = user;
  uv_timer_init(t->admin->loop, &c->timer);
  c->timer.data = c;
  uv_timer_start(&c->timer, dry_fire, 0, 0);
  *handle = c;
  return 0;
}

static void test_cancel(void *data, void *handle) {
  test_run_t *t = data;
  if (!t->dry) {
    t->real.cancel(t->real.data, handle);
    return;
  }
  dry_call_t *c = handle;
  c->canceled = true;
  uv_timer_start(&c->timer, dry_fire, 0, 0);
}

/* ---- Children: those the page gave for the record's own lists ---------------- */

typedef struct load {
  uv_timer_t timer;
  dg_save_loaded_fn done;
  void *token;
  json_t *records;
} load_t;

static void load_closed(uv_handle_t *h) {
  free(h->data);
}

static void load_fire(uv_timer_t *timer) {
  load_t *l = timer->data;
  l->done(l->token, 0, l->records, NULL);
  uv_close((uv_handle_t *)&l->timer, load_closed);
}

static int test_load(void *data, const dg_child_config_t *child, const char *parent_id,
                     unsigned max, dg_save_loaded_fn done, void *token, dg_errctx_t *err) {
  test_run_t *t = data;
  const json_t *rec = json_object_get(t->input, "record");
  const char *id = json_string_value(json_object_get(rec, "id"));
  json_t *given = json_object_get(json_object_get(t->input, "children"), child->list->name);
  load_t *l = calloc(1, sizeof(*l));
  if (l == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "children", "out of memory");
  bool own = id != NULL && strcmp(id, parent_id) == 0 && json_is_array(given);
  l->records = own ? json_deep_copy(given) : json_array();
  while (json_array_size(l->records) > (size_t)max + 1)
    json_array_remove(l->records, json_array_size(l->records) - 1);
  l->done = done;
  l->token = token;
  uv_timer_init(t->admin->loop, &l->timer);
  l->timer.data = l;
  uv_timer_start(&l->timer, load_fire, 0, 0);
  return 0;
}

/* ---- The run ------------------------------------------------------------------ */

static void test_free(test_run_t *t) {
  dg_admin_t *a = t->admin;
  dg_catalog_unref(t->cat);
  json_decref(t->input);
  json_decref(t->requests);
  free(t);
  dg__admin_job_ended(a);
}

static void test_abort(dg_http_request_t *req, void *data) {
  test_run_t *t = data;
  t->req = NULL;
  if (t->run != NULL)
    dg_save_cancel(t->run);
}

static void test_done(dg_save_run_t *run, const dg_save_outcome_t *o, void *data) {
  test_run_t *t = data;
  t->run = NULL;
  if (t->req != NULL) {
    dg_http_request_watch(t->req, &(dg_http_request_events_t){0});
    dg__admin_respond_json(t->req, 200,
                           json_pack("{s:b,s:b,s:O,s:O,s:O}", "dryRun", t->dry, "succeeded",
                                     o->succeeded, "trace", o->result, "changes", o->changes,
                                     "requests", t->requests));
  }
  test_free(t);
}

/* Checks the body: {"endpoint", "record": {"id", "values"}, "operation",
 * "children", "dryRun"}; answers 400 and returns NULL when it is wrong. */
static const dg_endpoint_t *test_endpoint(dg_admin_t *a, dg_http_request_t *req, const json_t *in) {
  const char *name = json_string_value(json_object_get(in, "endpoint"));
  const json_t *rec = json_object_get(in, "record");
  const char *op = json_string_value(json_object_get(in, "operation"));
  const json_t *children = json_object_get(in, "children");
  const dg_endpoint_t *e = name ? dg_catalog_endpoint(a->cat, name) : NULL;
  const char *problem =
      name == NULL ? "endpoint: required, the name of an endpoint"
      : e == NULL  ? "endpoint: no endpoint of that name in endpoints.json"
      : !json_is_object(rec) || !json_is_string(json_object_get(rec, "id")) ||
              !json_is_object(json_object_get(rec, "values"))
          ? "record: must be {\"id\": string, \"values\": object of property name to value}"
      : op != NULL && strcmp(op, "Create") != 0 && strcmp(op, "Update") != 0
          ? "operation: must be \"Create\" or \"Update\""
      : children != NULL && !json_is_object(children)
          ? "children: must be an object of list name to an array of {\"id\", \"values\"}"
      : json_object_get(in, "answers") != NULL && !json_is_array(json_object_get(in, "answers"))
          ? "answers: must be an array of the sample answers of a dry run's calls, in order"
      : !json_is_boolean(json_object_get(in, "dryRun"))
          ? "dryRun: required, true (build the requests, send nothing) or false"
          : NULL;
  if (problem != NULL) {
    dg__admin_error(req, 400, problem);
    return NULL;
  }
  return e;
}

void dg__admin_test(dg_admin_t *a, dg_http_request_t *req, json_t *in) {
  const dg_endpoint_t *e = test_endpoint(a, req, in);
  bool dry = json_is_true(json_object_get(in, "dryRun"));
  if (e != NULL && !dry && a->connectors == NULL) {
    dg__admin_error(req, 503, "the connector client is not running in this gateway");
    e = NULL;
  }
  test_run_t *t = e != NULL ? calloc(1, sizeof(*t)) : NULL;
  if (t == NULL) {
    if (e != NULL)
      dg__admin_error(req, 500, "out of memory");
    json_decref(in);
    return;
  }
  *t = (test_run_t){.admin = a,
                    .req = req,
                    .cat = dg_catalog_ref(a->cat),
                    .input = in,
                    .requests = json_array(),
                    .dry = dry};
  if (!dry)
    t->real = dg_save_upstream_connectors(a->connectors);
  dg_strlcpy(t->request_id, dg_http_request_id(req), sizeof(t->request_id));
  const json_t *rec = json_object_get(in, "record");
  const char *op = json_string_value(json_object_get(in, "operation"));
  dg_save_options_t o = {
      .loop = a->loop,
      .cat = t->cat,
      .endpoint = e,
      .create = op != NULL && strcmp(op, "Create") == 0,
      .id = json_string_value(json_object_get(rec, "id")),
      .values = json_object_get(rec, "values"),
      .upstream = {.start = test_start, .cancel = test_cancel, .data = t},
      .loader = {.load = test_load, .data = t},
      .request_id = t->request_id,
  };
  dg_errctx_t err;
  dg_errctx_clear(&err);
  a->jobs++;
  if (dg_save_run(&o, test_done, t, &t->run, &err) != 0) {
    dg__admin_error(req, 500, err.message[0] ? err.message : "the run did not start");
    test_free(t);
    return;
  }
  dg_http_request_watch(req, &(dg_http_request_events_t){.on_abort = test_abort, .data = t});
}
