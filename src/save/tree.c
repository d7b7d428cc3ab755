/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Save action trees: a run, and one node per record running one
 * endpoint's tree. The stages of a node, in order: load its child lists,
 * run the root and the pre-child actions, run the child saves, run the
 * post-child actions, finish. Every wait (a list load, an upstream call, a
 * large answer parsed on the threadpool, the child saves) ends in a
 * callback that moves the node on; nothing blocks the loop. A run starts
 * on a later loop turn and ends once, when its root node is done. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "save/internal.h"

/* Answers up to this size are parsed on the loop; larger ones on the
 * threadpool, so that parsing never holds up other connections. */
#define INLINE_PARSE_BYTES (64u * 1024u)

static const char *const node_state_names[] = {"new",     "loading",  "ready", "calling",
                                               "parsing", "children", "done"};

static void node_set_state(dg__save_node_t *n, dg__save_node_state_t next) {
  static const bool legal[7][7] = {
      [DG__NODE_NEW] = {[DG__NODE_LOADING] = true, [DG__NODE_READY] = true},
      [DG__NODE_LOADING] = {[DG__NODE_LOADING] = true, [DG__NODE_READY] = true},
      [DG__NODE_READY] =
          {[DG__NODE_CALLING] = true, [DG__NODE_CHILDREN] = true, [DG__NODE_DONE] = true},
      [DG__NODE_CALLING] = {[DG__NODE_PARSING] = true, [DG__NODE_READY] = true},
      [DG__NODE_PARSING] = {[DG__NODE_READY] = true},
      [DG__NODE_CHILDREN] = {[DG__NODE_READY] = true},
  };
  if (!legal[n->state][next])
    dg_log_illegal_state("save_node", node_state_names[n->state], node_state_names[next]);
  n->state = next;
}

static void node_advance(dg__save_node_t *n);
static void node_start(dg__save_node_t *n);
static void schedule(dg__save_node_t *n);

/* ---- Runs ------------------------------------------------------------------------------ */

static void run_free(uv_handle_t *handle) {
  dg_save_run_t *run = handle->data;
  for (dg__save_node_t *n = run->nodes; n != NULL; n = n->next_in_run) {
    free(n->path);
    free(n->body);
    free(n->not_json);
    json_decref(n->not_json_up);
    json_decref(n->session);
    json_decref(n->actions);
    json_decref(n->entry);
    json_decref(n->parsed);
    for (size_t i = 0; n->responses != NULL && i < n->ep->nsteps; i++)
      json_decref(n->responses[i]);
    for (size_t i = 0; i < n->nlists; i++)
      json_decref(n->lists[i].entry);
  }
  for (dg__save_record_t *r = run->records; r != NULL; r = r->next_in_run) {
    json_decref(r->values);
    json_decref(r->changed);
    json_decref(r->inherited);
    json_decref(r->pending);
  }
  json_decref(run->warnings);
  dg_arena_destroy(run->arena);
  free(run);
}

/* What the tree set on records, for the caller to store. */
static json_t *changes(const dg_save_run_t *run) {
  json_t *list = json_array();
  for (const dg__save_record_t *r = run->records; list != NULL && r != NULL; r = r->next_in_run) {
    if (json_object_size(r->changed) == 0)
      continue;
    json_array_append_new(list, json_pack("{s:s,s:s,s:O}", "model", r->model->name, "id", r->id,
                                          "values", r->changed));
  }
  return list;
}

static const char *run_status(const dg_save_run_t *run) {
  return run->canceled ? "canceled" : run->failed ? "failed" : "succeeded";
}

static void run_done(dg_save_run_t *run) {
  run->state = DG__RUN_DONE;
  json_t *result =
      json_pack("{s:s,s:s,s:s?,s:s?,s:O,s:O}", "endpoint", run->opt.endpoint->name, "status",
                run_status(run), "failedAction", run->failed_action, "reason", run->reason,
                "actions", run->root->actions, "warnings", run->warnings);
  json_t *ch = changes(run);
  dg_save_outcome_t out = {.succeeded = !run->failed && !run->canceled,
                           .canceled = run->canceled,
                           .failed_action = run->failed_action,
                           .reason = run->reason,
                           .result = result,
                           .changes = ch};
  run->done(run, &out, run->data);
  json_decref(result);
  json_decref(ch);
  uv_close((uv_handle_t *)&run->timer, run_free);
}

static void on_start(uv_timer_t *timer) {
  dg_save_run_t *run = timer->data;
  run->state = DG__RUN_RUNNING;
  node_start(run->root);
}

/* ---- Records and nodes ----------------------------------------------------------------------- */

static dg__save_record_t *record_new(dg_save_run_t *run, const dg_model_t *model, const char *id,
                                     const json_t *values) {
  dg__save_record_t *r = dg_arena_calloc(run->arena, 1, sizeof(*r));
  if (r == NULL)
    return NULL;
  r->model = model;
  r->id = dg_arena_strdup(run->arena, id);
  r->values = json_is_object(values) ? json_deep_copy(values) : json_object();
  r->changed = json_object();
  r->inherited = json_object();
  r->pending = json_object();
  r->next_in_run = run->records;
  run->records = r;
  return r->id && r->values && r->changed && r->inherited && r->pending ? r : NULL;
}

static dg__save_node_t *node_new(dg_save_run_t *run, const dg_endpoint_t *ep,
                                 dg__save_record_t *rec) {
  dg__save_node_t *n = dg_arena_calloc(run->arena, 1, sizeof(*n));
  if (n == NULL)
    return NULL;
  n->run = run;
  n->ep = ep;
  n->rec = rec;
  n->session = json_object();
  n->actions = json_array();
  n->responses = dg_arena_calloc(run->arena, ep->nsteps + 1, sizeof(*n->responses));
  n->lists = dg_arena_calloc(run->arena, ep->nchildren + 1, sizeof(*n->lists));
  n->nlists = ep->nchildren;
  n->next_in_run = run->nodes;
  run->nodes = n;
  for (size_t i = 0; n->lists != NULL && i < ep->nchildren; i++)
    n->lists[i].config = &ep->children[i];
  bool ok = n->session && n->actions && n->responses && n->lists;
  /* What this tree extracts is read from this run only, never from what
   * an earlier submission stored. */
  if (ok)
    dg__save_unset_extracted(ep, NULL, rec);
  return ok ? n : NULL;
}

int dg_save_run(const dg_save_options_t *o, dg_save_done_fn done, void *data, dg_save_run_t **out,
                dg_errctx_t *err) {
  dg_save_run_t *run = calloc(1, sizeof(*run));
  if (out != NULL)
    *out = NULL;
  if (run == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "", "The save could not start: out of memory.");
  run->opt = *o;
  run->done = done;
  run->data = data;
  run->arena = dg_arena_new(16384);
  run->warnings = json_array();
  run->start_ms = dg_now_ms();
  dg__save_record_t *rec =
      run->arena ? record_new(run, o->endpoint->model, o->id, o->values) : NULL;
  run->root = rec ? node_new(run, o->endpoint, rec) : NULL;
  uv_timer_init(o->loop, &run->timer);
  run->timer.data = run;
  if (run->root == NULL || run->warnings == NULL) {
    uv_close((uv_handle_t *)&run->timer, run_free);
    return dg_errctx_set(err, DG_ENOMEM, "", "The save could not start: out of memory.");
  }
  uv_timer_start(&run->timer, on_start, 0, 0);
  if (out != NULL)
    *out = run;
  return 0;
}

void dg_save_cancel(dg_save_run_t *run) {
  if (run == NULL || run->canceled || run->state == DG__RUN_DONE)
    return;
  run->canceled = true;
  for (dg__save_node_t *n = run->calling; n != NULL; n = n->next_calling)
    run->opt.upstream.cancel(run->opt.upstream.data, n->call);
}

/* ---- Failing and finishing
 * ----------------------------------------------------------------------- */

/* The first failure names the run's failing action; later ones (running
 * siblings, the parents they stop) only mark their own entries. what is
 * "title (json/path)". */
static void fail(dg__save_node_t *n, const char *what, const char *reason) {
  dg_save_run_t *run = n->run;
  n->failed = true;
  if (run->failed)
    return;
  run->failed = true;
  run->failed_action = dg_arena_strdup(run->arena, what);
  run->reason = dg_arena_strdup(run->arena, reason);
  dg_log_json(run->canceled ? DG_LOG_INFO : DG_LOG_WARN, "save_failed",
              json_pack("{s:s?,s:s,s:s,s:s?,s:s}", "request_id", run->opt.request_id, "endpoint",
                        n->ep->name, "record", n->rec->id, "action", run->failed_action, "reason",
                        reason));
}

static const char *label(dg__save_node_t *n, const dg_action_t *a) {
  return dg_arena_sprintf(n->run->arena, "%s (%s)", a->title, a->path);
}

static void skip_entry(dg__save_node_t *n, const dg_action_t *a, const char *reason) {
  json_t *e = dg__save_entry(n, a);
  json_object_set_new(e, "status", json_string("skipped"));
  json_object_set_new(e, "reason", json_string(reason));
  json_array_append_new(n->actions, e);
}

/* Entries for the child lists that never started. */
static void skip_lists(dg__save_node_t *n, const char *reason) {
  for (size_t i = n->current; i < n->nlists && !n->children_done; i++) {
    dg__save_list_t *l = &n->lists[i];
    if (l->entry != NULL)
      continue;
    json_array_append_new(n->actions,
                          json_pack("{s:s,s:s,s:s,s:s,s:s}", "type", "ChildSaves", "list",
                                    l->config->list->name, "endpoint", l->config->endpoint->name,
                                    "status", "skipped", "reason", reason));
  }
  n->children_done = true;
}

static void parent_child_done(dg__save_node_t *parent, dg__save_node_t *child);

static void node_finish(dg__save_node_t *n) {
  const char *reason = n->skip_reason     ? n->skip_reason
                       : n->run->canceled ? "the save was canceled"
                                          : "an earlier action failed";
  for (; n->step < n->ep->nsteps; n->step++) {
    if (n->step == n->ep->first_post)
      skip_lists(n, reason);
    skip_entry(n, n->ep->steps[n->step], reason);
  }
  if (!n->children_done)
    skip_lists(n, reason);
  node_set_state(n, DG__NODE_DONE);
  for (size_t i = 0; i < n->ep->nsteps; i++) {
    json_decref(n->responses[i]);
    n->responses[i] = NULL;
  }
  if (n->parent != NULL)
    parent_child_done(n->parent, n);
  else
    run_done(n->run);
}

/* ---- Upstream calls ---------------------------------------------------------------------------
 */

/* A GraphQL API reports failures in "errors", often with status 200. */
static const char *graphql_error(const dg_action_t *a, const json_t *doc) {
  const json_t *errors = json_object_get(doc, "errors");
  if (a->request.kind != DG_REQUEST_GRAPHQL || json_array_size(errors) == 0)
    return NULL;
  const char *msg = json_string_value(json_object_get(json_array_get(errors, 0), "message"));
  return msg ? msg : "an error without a message";
}

/* The action in flight failed after its call: the entry says why. */
static void failed_after_call(dg__save_node_t *n, const dg_action_t *a, json_t *e,
                              const char *reason) {
  json_object_set_new(e, "reason", json_string(reason));
  dg__save_entry_end(n, e, "failed", n->call_start_ms);
  json_array_append_new(n->actions, e);
  fail(n, label(n, a), reason);
  n->step++;
}

/* The answer of the action in flight is at hand (parsed, or NULL). */
static void answered(dg__save_node_t *n, json_t *doc) {
  const dg_action_t *a = n->ep->steps[n->step];
  json_t *e = n->entry;
  n->entry = NULL;
  const char *gql = graphql_error(a, doc);
  if (gql != NULL) {
    char reason[1024];
    snprintf(reason, sizeof(reason), "the GraphQL API answered errors: %s", gql);
    json_decref(doc);
    failed_after_call(n, a, e, reason);
    return;
  }
  dg__save_map_response(n, a, doc, e);
  dg__save_entry_end(n, e, "succeeded", n->call_start_ms);
  json_array_append_new(n->actions, e);
  n->responses[n->step++] = doc;
}

/* A 2xx answer that had to be JSON and is not fails its action: values
 * the tree reads from it must never be silently missing. Takes why and up. */
static void unreadable(dg__save_node_t *n, char *why, json_t *up) {
  const dg_action_t *a = n->ep->steps[n->step];
  json_t *e = n->entry;
  n->entry = NULL;
  json_object_update(json_object_get(e, "upstream"), up);
  json_decref(up);
  failed_after_call(n, a, e, why ? why : "the answer is not JSON");
  free(why);
}

static void parse_work(uv_work_t *w) {
  dg__save_node_t *n = w->data;
  n->parsed = json_loadb(n->body, n->body_len, 0, NULL);
}

static void parse_done(uv_work_t *w, int status) {
  dg__save_node_t *n = w->data;
  json_t *doc = n->parsed;
  n->parsed = NULL;
  free(n->body);
  n->body = NULL;
  node_set_state(n, DG__NODE_READY);
  if (doc == NULL && n->not_json != NULL) {
    unreadable(n, n->not_json, n->not_json_up);
  } else {
    free(n->not_json);
    json_decref(n->not_json_up);
    answered(n, doc);
  }
  n->not_json = NULL;
  n->not_json_up = NULL;
  node_advance(n);
}

/* Whether a 2xx answer must be JSON: unless the action accepts any answer,
 * one that is read, and any with a body (an empty answer, a 204 say, is
 * fine when nothing reads it). */
static bool must_be_json(const dg_action_t *a, const dg_http_response_t *res) {
  return !a->expect_any && (a->answer_read || res->body_len > 0);
}

/* A JSON answer (an object or an array) starts with '{' or '['. */
static bool may_be_json(const dg_http_response_t *res) {
  size_t i = 0;
  while (i < res->body_len && strchr(" \t\r\n", res->body[i]) != NULL)
    i++;
  return i < res->body_len && (res->body[i] == '{' || res->body[i] == '[');
}

/* Why the answer is not JSON, and what the entry then shows. */
static char *not_json_reason(const dg_action_t *a, const char *path, const dg_http_response_t *res,
                             json_t **up) {
  const char *p = path ? path : "";
  char url[1200];
  snprintf(url, sizeof(url), "%s%.*s", a->connector->base_url, (int)strcspn(p, "?#"), p);
  return dg__save_not_json(a, url, res->status, dg_http_response_header(res, "Content-Type"),
                           res->body, res->body_len, up);
}

static void call_failed(dg__save_node_t *n, const dg_action_t *a,
                        const dg_connector_result_t *result) {
  json_t *e = n->entry;
  n->entry = NULL;
  const char *reason = n->run->canceled && result->rc == DG_ECANCELED
                           ? "the save was canceled while the call ran"
                           : result->err->message;
  json_object_set_new(e, "reason", json_string(reason));
  dg__save_entry_end(n, e, "failed", n->call_start_ms);
  json_array_append_new(n->actions, e);
  fail(n, label(n, a), reason);
  n->step++;
}

/* Parses a 2xx answer: here, or on the threadpool when it is large. With
 * json, an answer that does not parse fails the action. */
static void parse_answer(dg__save_node_t *n, const dg_action_t *a, const dg_http_response_t *res,
                         bool json, const char *path) {
  json_t *up = NULL;
  if (json && !may_be_json(res)) {
    char *why = not_json_reason(a, path, res, &up);
    unreadable(n, why, up);
    return;
  }
  if (res->body_len > INLINE_PARSE_BYTES) {
    n->body = malloc(res->body_len);
    n->body_len = res->body_len;
    n->work.data = n;
    if (n->body != NULL) {
      memcpy(n->body, res->body, res->body_len);
      /* What the message needs, should the answer not parse. */
      n->not_json = json ? not_json_reason(a, path, res, &n->not_json_up) : NULL;
      node_set_state(n, DG__NODE_PARSING);
      if (uv_queue_work(n->run->opt.loop, &n->work, parse_work, parse_done) == 0)
        return;
      free(n->not_json);
      json_decref(n->not_json_up);
      n->not_json = NULL;
      n->not_json_up = NULL;
      node_set_state(n, DG__NODE_READY); /* the pool refused: parse here after all */
    }
    free(n->body);
    n->body = NULL;
  }
  if (n->state == DG__NODE_CALLING)
    node_set_state(n, DG__NODE_READY);
  json_t *doc = json_loadb(res->body, res->body_len, 0, NULL);
  if (doc == NULL && json) {
    char *why = not_json_reason(a, path, res, &up);
    unreadable(n, why, up);
  } else {
    answered(n, doc);
  }
}

static void on_call(dg_connector_call_t *call, const dg_connector_result_t *result, void *user) {
  dg__save_node_t *n = user;
  const dg_action_t *a = n->ep->steps[n->step];
  DG_LIST_UNLINK(n->run->calling, n, prev_calling, next_calling);
  n->call = NULL;
  dg__save_entry_upstream(n->entry, a->connector, a->request.method, n->path, result);
  char *path = n->path;
  n->path = NULL;
  if (result->rc != 0) {
    node_set_state(n, DG__NODE_READY);
    call_failed(n, a, result);
  } else {
    parse_answer(n, a, result->response, must_be_json(a, result->response), path);
    if (n->state == DG__NODE_CALLING)
      node_set_state(n, DG__NODE_READY);
  }
  free(path);
  if (n->state == DG__NODE_READY)
    node_advance(n);
}

/* Starts the call of a save action; false when it could not start (the
 * action has failed). */
static bool start_call(dg__save_node_t *n, const dg_action_t *a) {
  dg_save_run_t *run = n->run;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  dg_connector_request_t req;
  dg_arena_t *arena = dg_arena_new(4096);
  int rc = arena ? dg__save_build_request(n, a, arena, &req, &err)
                 : dg_errctx_set(&err, DG_ENOMEM, "", "out of memory");
  n->entry = dg__save_entry(n, a);
  n->call_start_ms = dg_now_ms();
  if (rc == 0) {
    req.request_id = run->opt.request_id;
    req.trace_id = run->opt.trace_id;
    n->path = strdup(req.path);
    rc = n->path == NULL ? dg_errctx_set(&err, DG_ENOMEM, "", "out of memory")
                         : run->opt.upstream.start(run->opt.upstream.data, a->connector, &req,
                                                   on_call, n, &n->call, &err);
  }
  dg_arena_destroy(arena);
  if (rc != 0) {
    free(n->path);
    n->path = NULL;
    json_object_set_new(n->entry, "reason", json_string(err.message));
    dg__save_entry_end(n, n->entry, "failed", n->call_start_ms);
    json_array_append_new(n->actions, n->entry);
    n->entry = NULL;
    fail(n, label(n, a), err.message);
    n->step++;
    return false;
  }
  node_set_state(n, DG__NODE_CALLING);
  DG_LIST_PUSH(run->calling, n, prev_calling, next_calling);
  return true;
}

/* ---- Actions ------------------------------------------------------------------------------------
 */

/* Why an action does not run for this record, or NULL. */
static const char *skip_reason(const dg__save_node_t *n, const dg_action_t *a) {
  bool create = n->parent == NULL ? n->run->opt.create : n->rec->op == DG__SAVE_LINE_ADDED;
  if (create && !a->on_create)
    return "the action runs only when a record is modified";
  if (!create && !a->on_update)
    return "the action runs only when a record is created";
  if (a->filter != NULL && !dg__save_filter_holds(a->filter, n->rec))
    return "its filter does not hold for this record";
  if (a->source != NULL && a->type == DG_ACTION_GET_SESSION_VALUES &&
      n->responses[a->source->step] == NULL)
    return "its save action did not run or gave no JSON answer";
  return NULL;
}

static void read_session_values(dg__save_node_t *n, const dg_action_t *a) {
  json_t *e = dg__save_entry(n, a);
  uint64_t start = dg_now_ms();
  dg__save_extract(n, a, n->responses[a->source->step], e);
  dg__save_entry_end(n, e, "succeeded", start);
  json_array_append_new(n->actions, e);
  n->step++;
}

/* Runs the action at n->step; returns when it has ended or waits. */
static void run_action(dg__save_node_t *n) {
  const dg_action_t *a = n->ep->steps[n->step];
  const char *why = skip_reason(n, a);
  if (why != NULL && a->phase == DG_PHASE_ROOT) {
    /* Without its root the tree has nothing to read or continue. */
    n->skip_reason = why;
    return;
  }
  if (why != NULL) {
    skip_entry(n, a, why);
    n->step++;
  } else if (a->type == DG_ACTION_GET_SESSION_VALUES) {
    read_session_values(n, a);
  } else {
    start_call(n, a);
  }
}

/* Runs actions while the node is READY: until one waits or the tree ends. */
static void node_advance(dg__save_node_t *n) {
  while (n->state == DG__NODE_READY) {
    if (n->failed || n->skip_reason != NULL || n->run->canceled || n->step == n->ep->nsteps) {
      node_finish(n);
      return;
    }
    if (n->step == n->ep->first_post && !n->children_done) {
      node_set_state(n, DG__NODE_CHILDREN);
      schedule(n);
      return;
    }
    run_action(n);
  }
}

/* ---- Child lists -------------------------------------------------------------------------------
 */

static void load_next(dg__save_node_t *n);

static dg__save_line_op_t line_op(const json_t *v) {
  const char *op = json_string_value(v);
  if (op != NULL && strcmp(op, "Create") == 0)
    return DG__SAVE_LINE_ADDED;
  if (op != NULL && strcmp(op, "Delete") == 0)
    return DG__SAVE_LINE_REMOVED;
  return DG__SAVE_LINE_KEPT;
}

/* The endpoint that saves a child record: its list's, or the one for
 * lines a form call added or removed. */
static const dg_endpoint_t *child_endpoint(const dg_child_config_t *c,
                                           const dg__save_record_t *rec) {
  if (rec->op == DG__SAVE_LINE_ADDED && c->add_endpoint != NULL)
    return c->add_endpoint;
  if (rec->op == DG__SAVE_LINE_REMOVED && c->remove_endpoint != NULL)
    return c->remove_endpoint;
  return c->endpoint;
}

static int add_children(dg__save_node_t *n, dg__save_list_t *l, json_t *records) {
  const dg_model_t *model = l->config->list->reference->target;
  size_t count = json_array_size(records);
  if (count > l->config->max_children)
    return DG_E2BIG;
  l->records = dg_arena_calloc(n->run->arena, count + 1, sizeof(*l->records));
  if (l->records == NULL)
    return DG_ENOMEM;
  for (size_t i = 0; i < count; i++) {
    json_t *item = json_array_get(records, i);
    const char *id = json_string_value(json_object_get(item, "id"));
    l->records[i] = record_new(n->run, model, id ? id : "", json_object_get(item, "values"));
    if (l->records[i] == NULL)
      return DG_ENOMEM;
    l->records[i]->op = line_op(json_object_get(item, "operation"));
    dg__save_unset_extracted(n->ep, l->config->list, l->records[i]);
  }
  l->n = count;
  return 0;
}

static void on_loaded(void *token, int status, json_t *records, const dg_errctx_t *err) {
  dg__save_node_t *n = token;
  dg__save_list_t *l = &n->lists[n->loading];
  int rc = status == 0 ? add_children(n, l, records) : status;
  json_decref(records);
  if (rc == 0) {
    n->loading++;
    load_next(n);
    return;
  }
  char reason[1200];
  if (rc == DG_E2BIG)
    snprintf(reason, sizeof(reason),
             "the record has more %s than its child configuration allows (maxChildren %u); "
             "nothing was sent",
             l->config->list->name, l->config->max_children);
  else
    snprintf(reason, sizeof(reason), "the %s of the record could not be loaded: %s",
             l->config->list->name, err && err->message[0] ? err->message : dg_strerror(rc));
  fail(n, dg_arena_sprintf(n->run->arena, "Child Saves (%s)", l->config->path), reason);
  n->skip_reason = dg_arena_strdup(n->run->arena, reason);
  node_set_state(n, DG__NODE_READY);
  node_advance(n);
}

/* Loads the child lists one after another, then runs the actions. */
static void load_next(dg__save_node_t *n) {
  dg_save_run_t *run = n->run;
  if (n->loading == n->nlists || run->canceled) {
    node_set_state(n, DG__NODE_READY);
    node_advance(n);
    return;
  }
  dg__save_list_t *l = &n->lists[n->loading];
  dg_errctx_t err;
  dg_errctx_clear(&err);
  node_set_state(n, DG__NODE_LOADING);
  int rc = run->opt.loader.load(run->opt.loader.data, l->config, n->rec->id,
                                l->config->max_children, on_loaded, n, &err);
  if (rc != 0)
    on_loaded(n, rc, NULL, &err);
}

static const char *skip_reason(const dg__save_node_t *n, const dg_action_t *a);

static void node_start(dg__save_node_t *n) {
  /* A root that does not run leaves nothing for the children to do. */
  if (n->nlists > 0 && skip_reason(n, n->ep->root) == NULL) {
    load_next(n);
    return;
  }
  node_set_state(n, DG__NODE_READY);
  node_advance(n);
}

/* Starts the child save of record i of list l. */
static void start_child(dg__save_node_t *n, dg__save_list_t *l, size_t i) {
  dg__save_node_t *c = node_new(n->run, child_endpoint(l->config, l->records[i]), l->records[i]);
  if (c == NULL) {
    fail(n, dg_arena_sprintf(n->run->arena, "Child Saves (%s)", l->config->path), "out of memory");
    l->failed++;
    return;
  }
  c->parent = n;
  c->via = l->config;
  c->in_list = l;
  c->in_index = i;
  l->running++;
  node_start(c);
}

static void list_entry(dg__save_node_t *n, dg__save_list_t *l) {
  l->entry = json_pack("{s:s,s:s,s:s,s:s,s:I,s:[]}", "type", "ChildSaves", "list",
                       l->config->list->name, "endpoint", l->config->endpoint->name, "status",
                       "running", "count", (json_int_t)l->n, "saves");
  l->start_ms = dg_now_ms();
}

static void list_end(dg__save_node_t *n, dg__save_list_t *l) {
  const char *status = l->failed > 0                    ? "failed"
                       : l->finished < l->n && l->n > 0 ? "skipped"
                                                        : "succeeded";
  if (l->finished < l->n)
    json_object_set_new(l->entry, "notStarted", json_integer((json_int_t)(l->n - l->finished)));
  json_object_set_new(l->entry, "status", json_string(status));
  json_object_set_new(l->entry, "durationMs",
                      json_integer((json_int_t)(dg_now_ms() - l->start_ms)));
  json_array_append(n->actions, l->entry);
}

/* Starts child saves up to each list's concurrency, list after list;
 * moves on when a list has ended, or stops starting after a failure. */
static void schedule(dg__save_node_t *n) {
  n->scheduling = true;
  while (n->current < n->nlists) {
    dg__save_list_t *l = &n->lists[n->current];
    if (l->entry == NULL)
      list_entry(n, l);
    bool stop = n->failed || n->run->canceled;
    while (!stop && l->running < l->config->concurrency && l->next < l->n) {
      start_child(n, l, l->next++);
      stop = n->failed || n->run->canceled;
    }
    if (l->running > 0) {
      n->scheduling = false;
      return;
    }
    list_end(n, l);
    n->current++;
    if (stop)
      break;
  }
  n->scheduling = false;
  n->children_done = n->current == n->nlists;
  node_set_state(n, DG__NODE_READY);
  node_advance(n);
}

static void report_child(dg__save_list_t *l, dg__save_node_t *c) {
  json_t *saves = json_object_get(l->entry, "saves");
  if (!c->failed && json_array_size(saves) >= DG_SAVE_MAX_REPORTED_CHILDREN) {
    json_int_t omitted = json_integer_value(json_object_get(l->entry, "omitted"));
    json_object_set_new(l->entry, "omitted", json_integer(omitted + 1));
    return;
  }
  static const char *const ops[] = {NULL, "Create", "Delete"};
  json_array_append_new(saves,
                        json_pack("{s:s,s:I,s:s*,s:s*,s:s,s:O}", "id", c->rec->id, "index",
                                  (json_int_t)c->in_index, "operation", ops[c->rec->op], "endpoint",
                                  c->ep != l->config->endpoint ? c->ep->name : NULL, "status",
                                  c->failed ? "failed" : "succeeded", "actions", c->actions));
}

static void parent_child_done(dg__save_node_t *n, dg__save_node_t *c) {
  dg__save_list_t *l = c->in_list;
  l->running--;
  l->finished++;
  report_child(l, c);
  if (c->failed) {
    l->failed++;
    n->failed = true;
  }
  if (!n->scheduling)
    schedule(n);
}

/* ---- The default upstream ------------------------------------------------------------------- */

static int connectors_start(void *data, const dg_connector_t *conn,
                            const dg_connector_request_t *req, dg_connector_done_fn done,
                            void *user, void **handle, dg_errctx_t *err) {
  dg_connector_call_t *call = NULL;
  int rc = dg_connectors_call(data, conn, req, done, user, &call, err);
  *handle = call;
  return rc;
}

static void connectors_cancel(void *data, void *handle) {
  dg_connector_call_cancel(handle);
}

dg_save_upstream_t dg_save_upstream_connectors(dg_connectors_t *cs) {
  return (dg_save_upstream_t){.start = connectors_start, .cancel = connectors_cancel, .data = cs};
}
