/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* submit_data_entry_form: creates a record, or modifies the one named by
 * id, and runs the save action tree of the model's endpoint. The stages,
 * in order: check the arguments (write access, every key a field, every
 * value of its type, required fields), record the submission with the
 * record in one durable transaction (which also checks that referenced
 * entities exist and returns the first outcome for a repeated idempotency
 * key), read the record back, run the save tree against the upstream
 * systems, record its outcome with the values it set, answer. Each stage is
 * a state of the submission (sub_state_t), and set_state checks every move. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/save.h"
#include "datagate/tools.h"
#include "tools/internal.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"required\":[\"dataModelId\",\"formValues\"],"
    "\"additionalProperties\":false,\"properties\":{"
    "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\",\"description\":\"Identifier of "
    "the Data Model, from get_data_models; the same as used with get_data_entry_form\"},"
    "\"system\":{\"type\":\"string\",\"enum\":[\"Corbi\",\"ChatGPT\",\"Claude\",\"Copilot\"],"
    "\"description\":\"The assistant client that submits; recorded with the change\"},"
    "\"formValues\":{\"type\":\"array\",\"maxItems\":256,\"description\":\"The values, each "
    "{key, value} as strings; key is a field of the form (a property name from "
    "get_data_model_properties); an empty value clears a field that is not a String\","
    "\"items\":{\"type\":\"object\",\"required\":[\"key\",\"value\"],"
    "\"additionalProperties\":false,\"properties\":{"
    "\"key\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128},"
    "\"value\":{\"type\":\"string\",\"maxLength\":65536}}}},"
    "\"id\":{\"type\":\"string\",\"format\":\"uuid\",\"description\":\"The record to modify; "
    "omit it to create a record\"},"
    "\"childLists\":{\"type\":\"array\",\"maxItems\":16,\"description\":\"Changes to the "
    "record's lists of lines (for example an order's OrderLines), saved with the record in one "
    "call: list is a list name from get_data_entry_form's childLists; each change adds a line "
    "(no id), modifies one (its id and the fields to change) or removes one (its id and op "
    "remove)\",\"items\":{\"type\":\"object\",\"required\":[\"list\",\"changes\"],"
    "\"additionalProperties\":false,\"properties\":{"
    "\"list\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128},"
    "\"changes\":{\"type\":\"array\",\"maxItems\":1000,\"items\":{\"type\":\"object\","
    "\"additionalProperties\":false,\"properties\":{"
    "\"id\":{\"type\":\"string\",\"format\":\"uuid\",\"description\":\"The line to modify "
    "or remove; omit it to add a line\"},"
    "\"op\":{\"type\":\"string\",\"enum\":[\"add\",\"update\",\"remove\"],\"description\":"
    "\"Default: update with an id, add without\"},"
    "\"formValues\":{\"type\":\"array\",\"maxItems\":256,\"description\":\"The line's values, "
    "each {key, value} as strings, as for the record\",\"items\":{\"type\":\"object\","
    "\"required\":[\"key\",\"value\"],\"additionalProperties\":false,\"properties\":{"
    "\"key\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128},"
    "\"value\":{\"type\":\"string\",\"maxLength\":65536}}}}}}}}}},"
    "\"idempotencyKey\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"
    "\"description\":\"Any unique text for this submission: a retry with the same key returns "
    "the first outcome instead of saving twice\"}}}";

static const char output_schema[] =
    "{\"type\":\"object\",\"required\":[\"dataModelId\",\"status\"],\"properties\":{"
    "\"submissionId\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"id\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"created\":{\"type\":\"boolean\"},"
    "\"system\":{\"type\":[\"string\",\"null\"]},"
    "\"status\":{\"type\":\"string\",\"enum\":[\"succeeded\",\"failed\",\"running\","
    "\"declined\",\"cancelled\"]},"
    "\"confirmed\":{\"type\":\"boolean\"},"
    "\"replayed\":{\"type\":\"boolean\"},"
    "\"endpoint\":{\"type\":[\"string\",\"null\"]},"
    "\"failedAction\":{\"type\":[\"string\",\"null\"]},"
    "\"reason\":{\"type\":[\"string\",\"null\"]},"
    "\"message\":{\"type\":\"string\"},"
    "\"actions\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},"
    "\"childLists\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"list\","
    "\"added\",\"updated\",\"removed\"]}},"
    "\"warnings\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}";

/* A submission's life. Each move goes through set_state, which refuses
 * a move the table does not list (as the save tree's nodes do). */
typedef enum sub_state {
  SUB_CHECKING,        /* arguments checked, nothing asked or stored yet */
  SUB_CONFIRMING,      /* the user is asked to confirm (or need not be) */
  SUB_READING_REMOVED, /* reading the lines the write removes, list after list */
  SUB_STORING,         /* the submission and the record written in one transaction */
  SUB_READING_BACK,    /* the stored record read back for the save tree */
  SUB_RUNNING_TREE,    /* the save tree runs against the upstream systems */
  SUB_RECORDING,       /* the tree's outcome and the values it set are stored */
  SUB_ANSWERED,        /* the call has ended: answer, replay or error */
  SUB_NSTATES
} sub_state_t;

/* One submission, in the call's arena. */
typedef struct submission {
  dg_mcp_tool_call_t *call;
  sub_state_t state;
  dg_store_t *store;
  const dg_model_t *model;
  const dg_endpoint_t *endpoint;
  dg_store_submit_t sub;
  json_t *head; /* the store's answer to the submit: id, created, status */
  json_t *result;
  dg_save_run_t *run;
  bool canceled;
  dg_store_finish_t fin;
  json_t *warnings;
  dg_forms_lines_t lines; /* childLists, checked */
  size_t reading;         /* the list whose removed lines are read next */
  bool confirmed;         /* the user confirmed through the client */
} submission_t;

static void on_finished(int status, json_t *result, const dg_errctx_t *err, void *data);

static const char *const state_names[] = {"checking",  "confirming",   "reading_removed",
                                          "storing",   "reading_back", "running_tree",
                                          "recording", "answered"};

static void set_state(submission_t *s, sub_state_t next) {
  static const bool legal[SUB_NSTATES][SUB_NSTATES] = {
      [SUB_CHECKING] = {[SUB_CONFIRMING] = true, [SUB_ANSWERED] = true},
      [SUB_CONFIRMING] =
          {[SUB_READING_REMOVED] = true, [SUB_STORING] = true, [SUB_ANSWERED] = true},
      [SUB_READING_REMOVED] =
          {[SUB_READING_REMOVED] = true, [SUB_STORING] = true, [SUB_ANSWERED] = true},
      [SUB_STORING] = {[SUB_READING_BACK] = true, [SUB_ANSWERED] = true},
      [SUB_READING_BACK] = {[SUB_RUNNING_TREE] = true, [SUB_RECORDING] = true},
      [SUB_RUNNING_TREE] = {[SUB_RECORDING] = true},
      [SUB_RECORDING] = {[SUB_ANSWERED] = true},
  };
  if (!legal[s->state][next])
    dg_log_illegal_state("submission", state_names[s->state], state_names[next]);
  s->state = next;
}

/* Ends the call with err: the submission is over. */
static void fail(submission_t *s, const dg_errctx_t *err) {
  set_state(s, SUB_ANSWERED);
  dg_mcp_tool_call_fail(s->call, err);
}

/* ---- The answer ---------------------------------------------------------------------------- */

static const char *message(const json_t *r) {
  const char *status = json_string_value(json_object_get(r, "status"));
  if (strcmp(status, "succeeded") == 0)
    return json_is_null(json_object_get(r, "endpoint"))
               ? "The record was saved."
               : "The record was saved and its save actions succeeded in the external system.";
  if (strcmp(status, "running") == 0)
    return "The first submission with this idempotency key is still running; ask again later "
           "with the same key for its outcome.";
  return "The record was saved in the gateway, but its save actions failed (see failedAction and "
         "reason; the actions list shows what ran). The external system may hold part of the "
         "changes. Fix the cause and submit again with a new idempotency key.";
}

/* The common part of every answer: of the submission, or of the first one
 * with the same idempotency key (a replay rebuilds it from what was stored). */
static json_t *answer_of(submission_t *s, const char *submission_id, const char *system,
                         const char *endpoint, const char *status) {
  json_t *r = json_pack("{s:s,s:s,s:O,s:O,s:s?,s:s,s:b,s:s?}", "submissionId", submission_id,
                        "dataModelId", s->model->id, "id", json_object_get(s->head, "id"),
                        "created", json_object_get(s->head, "created"), "system", system, "status",
                        status, "replayed", 0, "endpoint", endpoint);
  if (r != NULL && endpoint == NULL)
    json_object_set_new(r, "message", json_string(message(r)));
  return r;
}

static json_t *answer(submission_t *s, const char *status) {
  json_t *r = answer_of(s, s->sub.submission_id, s->sub.system,
                        s->endpoint ? s->endpoint->name : NULL, status);
  if (r != NULL && s->lines.nlists > 0)
    json_object_set_new(r, "childLists", dg_forms_lines_json(&s->lines));
  return r;
}

/* A repeated idempotency key: the first answer as it was given, marked as
 * replayed. A submission without a save tree stored no answer; it is built
 * again from the stored row, in the same form. One whose tree has not
 * recorded an outcome (still running, or interrupted) says so. */
static json_t *replay(submission_t *s) {
  const json_t *h = s->head;
  json_t *outcome = json_object_get(h, "outcome");
  json_t *r = json_is_object(outcome) ? json_deep_copy(outcome) : NULL;
  const char *endpoint = json_string_value(json_object_get(h, "endpoint"));
  if (r == NULL)
    r = answer_of(s, json_string_value(json_object_get(h, "submissionId")),
                  json_string_value(json_object_get(h, "system")), endpoint,
                  json_string_value(json_object_get(h, "status")));
  if (r != NULL && !json_is_object(outcome) && endpoint != NULL) {
    json_object_set(r, "failedAction", json_object_get(h, "failedAction"));
    json_object_set(r, "reason", json_object_get(h, "reason"));
    json_object_set_new(r, "message", json_string(message(r)));
  }
  if (r != NULL)
    json_object_set_new(r, "replayed", json_true());
  return r;
}

static void end(submission_t *s, json_t *result) {
  set_state(s, SUB_ANSWERED);
  if (result == NULL) {
    dg_mcp_tool_call_failf(s->call,
                           "The submission was recorded (%s), but its answer could not be "
                           "built: out of memory.",
                           s->sub.submission_id);
    return;
  }
  dg_log_json(DG_LOG_INFO, "form_submitted",
              json_pack("{s:s,s:s,s:s,s:O,s:O,s:b}", "request_id",
                        dg_mcp_tool_call_request_id(s->call), "submission", s->sub.submission_id,
                        "model", s->model->name, "id", json_object_get(result, "id"), "status",
                        json_object_get(result, "status"), "replayed",
                        json_is_true(json_object_get(result, "replayed"))));
  if (s->confirmed)
    json_object_set_new(result, "confirmed", json_true());
  dg_mcp_tool_call_succeed(s->call, result);
}

/* ---- Finishing
 * ----------------------------------------------------------------------------------- */

/* One record's changes as a store write; a value the property cannot hold
 * is left out with a warning. False when out of memory. */
static bool change_write(submission_t *s, const dg_model_t *m, const char *id, const json_t *values,
                         dg_store_write_t *out) {
  dg_arena_t *arena = dg_mcp_tool_call_arena(s->call);
  size_t n = json_object_size(values);
  const dg_property_t **props = dg_arena_calloc(arena, n + 1, sizeof(*props));
  dg_store_value_t *vals = dg_arena_calloc(arena, n + 1, sizeof(*vals));
  if (props == NULL || vals == NULL)
    return false;
  size_t k = 0;
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)values, key, v) {
    dg_errctx_t err;
    props[k] = dg_model_property(m, key);
    if (props[k] != NULL && dg_store_value_parse(props[k], v, key, arena, &vals[k], &err) == 0)
      k++;
    else
      json_array_append_new(s->warnings, json_sprintf("%s %s: the save actions set %s to a value "
                                                      "it cannot hold; it was not stored",
                                                      m->name, id, key));
  }
  *out = (dg_store_write_t){.model = m,
                            .mode = DG_STORE_UPDATE,
                            .id = dg_arena_strdup(arena, id),
                            .props = props,
                            .values = vals,
                            .nvalues = k};
  return out->id != NULL;
}

/* Whether the call removed this line (its record is gone from the store). */
static bool removed_line(const submission_t *s, const dg_model_t *m, const char *id) {
  for (size_t i = 0; i < s->lines.nlists; i++) {
    const char *op = json_string_value(json_object_get(s->lines.lists[i].ops, id));
    if (s->lines.lists[i].model == m && op != NULL && strcmp(op, "remove") == 0)
      return true;
  }
  return false;
}

/* The values the tree set ([{model, id, values}]), as store writes. */
static dg_store_write_t *change_writes(submission_t *s, const json_t *changes, size_t *n) {
  const dg_catalog_t *cat = dg_mcp_tool_call_catalog(s->call);
  dg_store_write_t *w =
      dg_arena_calloc(dg_mcp_tool_call_arena(s->call), json_array_size(changes) + 1, sizeof(*w));
  size_t i, count = 0;
  json_t *c;
  json_array_foreach(changes, i, c) {
    const dg_model_t *m =
        dg_catalog_model_by_name(cat, json_string_value(json_object_get(c, "model")));
    const char *id = json_string_value(json_object_get(c, "id"));
    if (w != NULL && m != NULL && id != NULL && !removed_line(s, m, id) &&
        change_write(s, m, id, json_object_get(c, "values"), &w[count]))
      count++;
  }
  *n = count;
  return w;
}

static void on_tree(dg_save_run_t *run, const dg_save_outcome_t *o, void *data) {
  submission_t *s = data;
  dg_arena_t *arena = dg_mcp_tool_call_arena(s->call);
  s->run = NULL;
  set_state(s, SUB_RECORDING);
  s->result = answer(s, o->succeeded ? "succeeded" : "failed");
  json_t *tree = o->result;
  json_object_set_new(s->result, "failedAction",
                      o->failed_action ? json_string(o->failed_action) : json_null());
  json_object_set_new(s->result, "reason", o->reason ? json_string(o->reason) : json_null());
  json_object_set_new(s->result, "message", json_string(message(s->result)));
  json_object_set(s->result, "actions", json_object_get(tree, "actions"));
  json_array_extend(s->warnings, json_object_get(tree, "warnings"));
  size_t n = 0;
  dg_store_write_t *writes = change_writes(s, o->changes, &n);
  json_object_set(s->result, "warnings", s->warnings);
  char *outcome = json_dumps(s->result, JSON_COMPACT);
  s->fin = (dg_store_finish_t){
      .submission_id = s->sub.submission_id,
      .status = o->succeeded ? DG_STORE_SUBMISSION_SUCCEEDED : DG_STORE_SUBMISSION_FAILED,
      .failed_action = o->failed_action ? dg_arena_strdup(arena, o->failed_action) : NULL,
      .reason = o->reason ? dg_arena_strdup(arena, o->reason) : NULL,
      .outcome = outcome ? dg_arena_strdup(arena, outcome) : NULL,
      .writes = writes,
      .nwrites = n};
  free(outcome);
  dg_errctx_t err;
  dg_errctx_clear(&err);
  if (dg_store_finish(s->store, &s->fin, on_finished, s, NULL, &err) != 0)
    on_finished(err.code, NULL, &err, s);
}

static void on_finished(int status, json_t *result, const dg_errctx_t *err, void *data) {
  submission_t *s = data;
  json_decref(result);
  if (status != 0)
    json_array_append_new(
        json_object_get(s->result, "warnings"),
        json_sprintf("the outcome could not be recorded (%s); the submission "
                     "will show as interrupted: on PostgreSQL once its lease has run "
                     "out (within a minute), on SQLite after the next start",
                     err ? err->message : dg_strerror(status)));
  json_t *r = s->result;
  s->result = NULL;
  end(s, r);
}

/* ---- The save tree
 * ---------------------------------------------------------------------------------- */

typedef struct load {
  dg_store_query_t q;
  dg_store_group_t group;
  dg_store_filter_t filter;
  dg_save_loaded_fn done;
  void *token;
  const dg_child_config_t *config;
  const dg_forms_line_list_t *lines; /* what the call changed in this list, or NULL */
} load_t;

/* A removed line as the tree sees it: its stored values with the child
 * configuration's remove values over them, marked Delete. */
static json_t *removed_record(const dg_child_config_t *c, const json_t *stored) {
  json_t *r = json_deep_copy(stored);
  json_t *values = json_object_get(r, "values");
  for (size_t i = 0; values != NULL && i < c->nremove_values; i++)
    json_object_set_new(values, c->remove_props[i]->name,
                        json_loads(c->remove_values[i], JSON_DECODE_ANY, NULL));
  json_object_set_new(r, "operation", json_string("Delete"));
  return r;
}

/* Marks the lines the call added, and appends those it removed (gone from
 * the store, read before the write), which the tree saves last. */
static void mark_lines(const load_t *l, const dg_child_config_t *c, json_t *records) {
  if (l->lines == NULL || records == NULL)
    return;
  size_t i;
  json_t *r;
  json_array_foreach(records, i, r) {
    const char *id = json_string_value(json_object_get(r, "id"));
    const char *op = id ? json_string_value(json_object_get(l->lines->ops, id)) : NULL;
    if (op != NULL && strcmp(op, "add") == 0)
      json_object_set_new(r, "operation", json_string("Create"));
  }
  json_array_foreach(l->lines->removed_records, i, r) {
    json_array_append_new(records, removed_record(c, r));
  }
}

static void on_children(int status, json_t *records, const dg_errctx_t *err, void *data) {
  load_t *l = data;
  mark_lines(l, l->config, records);
  l->done(l->token, status, records, err);
}

/* The records of a child list: those whose inverse reference names the parent. */
static int load_children(void *data, const dg_child_config_t *c, const char *parent_id,
                         unsigned max, dg_save_loaded_fn done, void *token, dg_errctx_t *err) {
  submission_t *s = data;
  dg_arena_t *arena = dg_mcp_tool_call_arena(s->call);
  load_t *l = dg_arena_calloc(arena, 1, sizeof(*l));
  const dg_model_t *m = c->list->reference->target;
  if (l == NULL || dg_forms_stored_select(m, arena, &l->q.select) != 0)
    return dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
  l->done = done;
  l->token = token;
  l->config = c;
  /* Only the submitted record's own lists hold the call's changes (a
   * model whose records hold records of the same model nests the list). */
  const char *record = json_string_value(json_object_get(s->head, "id"));
  for (size_t i = 0; record != NULL && strcmp(record, parent_id) == 0 && i < s->lines.nlists; i++) {
    if (s->lines.lists[i].list == c->list)
      l->lines = &s->lines.lists[i];
  }
  l->filter = (dg_store_filter_t){
      .op = DG_STORE_OP_EQ,
      .model = m,
      .prop = dg_model_property(m, c->list->reference->inverse_property),
      .value = {.kind = DG_STORE_TEXT, .text = parent_id, .len = strlen(parent_id)}};
  l->group = (dg_store_group_t){.filters = &l->filter, .nfilters = 1};
  l->q.model = m;
  l->q.filters = (dg_store_filters_t){.groups = &l->group, .ngroups = 1};
  l->q.has_sort = c->order_by != NULL;
  l->q.sort.prop = c->order_by;
  l->q.page_number = 1;
  l->q.page_size = (int64_t)max + 1;
  return dg_store_query_records(s->store, &l->q, on_children, l, err);
}

/* The caller left (or the call timed out): the tree stops, and its
 * outcome is still recorded before the call ends. */
static void on_cancel(dg_mcp_tool_call_t *call, void *data) {
  submission_t *s = data;
  s->canceled = true;
  dg_save_cancel(s->run);
}

/* Ends the submission as failed before its tree ran. */
static void fail_early(submission_t *s, const char *what, const char *why) {
  dg_save_outcome_t out = {.failed_action = what,
                           .reason = why,
                           .result = json_pack("{s:[],s:[]}", "actions", "warnings"),
                           .changes = json_array()};
  on_tree(NULL, &out, s);
  json_decref(out.result);
  json_decref(out.changes);
}

static void start_tree(submission_t *s, const json_t *values) {
  dg_tools_env_t *env = dg_tools_env(s->call);
  dg_save_options_t o = {.loop = dg_mcp_tool_call_loop(s->call),
                         .cat = dg_mcp_tool_call_catalog(s->call),
                         .endpoint = s->endpoint,
                         .create = s->sub.write.mode == DG_STORE_CREATE,
                         .id = json_string_value(json_object_get(s->head, "id")),
                         .values = values,
                         .upstream = dg_save_upstream_connectors(env->connectors),
                         .loader = {.load = load_children, .data = s},
                         .request_id = dg_mcp_tool_call_request_id(s->call),
                         .trace_id = dg_mcp_tool_call_trace_id(s->call)};
  dg_errctx_t err;
  dg_errctx_clear(&err);
  /* The caller left before the record was read back: nothing was sent. */
  if (s->canceled) {
    fail_early(s, s->endpoint->root->title, "the call was canceled before the save actions ran");
    return;
  }
  if (env->connectors == NULL) {
    fail_early(s, s->endpoint->root->title, "the connector client is not running in this gateway");
    return;
  }
  set_state(s, SUB_RUNNING_TREE);
  if (dg_save_run(&o, on_tree, s, &s->run, &err) != 0)
    fail_early(s, s->endpoint->root->title, err.message);
}

static void on_fetched(int status, json_t *records, const dg_errctx_t *err, void *data) {
  submission_t *s = data;
  json_t *values = json_object_get(json_array_get(records, 0), "values");
  if (values != NULL)
    start_tree(s, values);
  else
    fail_early(s, s->endpoint->root->title,
               status != 0 && err ? err->message
                                  : "the record was deleted before its save actions could run");
  json_decref(records);
}

static void on_submitted(int status, json_t *result, const dg_errctx_t *err, void *data) {
  submission_t *s = data;
  if (status != 0) {
    fail(s, err);
    return;
  }
  s->head = result;
  dg_arena_defer(dg_mcp_tool_call_arena(s->call), (void (*)(void *))json_decref, result);
  if (json_is_true(json_object_get(result, "replayed"))) {
    end(s, replay(s));
    return;
  }
  if (s->endpoint == NULL) {
    end(s, answer(s, "succeeded"));
    return;
  }
  dg_errctx_t e;
  dg_errctx_clear(&e);
  set_state(s, SUB_READING_BACK);
  const char *ids[] = {json_string_value(json_object_get(result, "id"))};
  int rc =
      ids[0] ? dg_store_read_records(s->store, s->model, ids, 1, on_fetched, s, &e) : DG_EINVAL;
  if (rc != 0)
    on_fetched(rc, NULL, ids[0] ? &e : NULL, s);
}

/* ---- Checking the arguments
 * ------------------------------------------------------------------------ */

static bool has_value(const dg_forms_value_t *v) {
  return v->value.kind != DG_STORE_NULL && !(v->value.kind == DG_STORE_TEXT && v->value.len == 0);
}

/* A modified record keeps its required fields: none may be cleared. */
static int check_cleared(const dg_forms_value_t *vals, size_t n, dg_errctx_t *err) {
  for (size_t i = 0; i < n; i++) {
    if (vals[i].prop->required && !has_value(&vals[i]))
      return dg_errctx_set(err, DG_EINVAL, vals[i].param,
                           "Invalid argument '%s': '%s' is required and cannot be cleared; give "
                           "a value.",
                           vals[i].param, vals[i].prop->name);
  }
  return 0;
}

/* What was asked, for comparing a retry with the same idempotency key. */
static const char *fingerprint(submission_t *s, const json_t *args) {
  static const char hex[] = "0123456789abcdef";
  json_t *what = json_pack("{s:s,s:O?,s:O?,s:O?,s:O?}", "dataModelId", s->model->id, "id",
                           json_object_get(args, "id"), "system", json_object_get(args, "system"),
                           "formValues", json_object_get(args, "formValues"), "childLists",
                           json_object_get(args, "childLists"));
  char *text = what ? json_dumps(what, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
  json_decref(what);
  if (text == NULL)
    return NULL;
  unsigned char d[32];
  char out[65];
  dg_sha256(text, strlen(text), d);
  free(text);
  for (size_t i = 0; i < 32; i++) {
    out[2 * i] = hex[d[i] >> 4];
    out[2 * i + 1] = hex[d[i] & 15];
  }
  out[64] = '\0';
  return dg_arena_strdup(dg_mcp_tool_call_arena(s->call), out);
}

/* Referenced records must exist, in the models the caller may read. A
 * model hidden from the caller is treated as if it did not exist (as for
 * a reference to entities without a Data Model): checking its records
 * would tell the caller its name and which of its ids exist. */
static void add_refs(submission_t *s, const dg_forms_value_t *vals, size_t n) {
  dg_arena_t *arena = dg_mcp_tool_call_arena(s->call);
  const dg_principal_t *who = dg_mcp_tool_call_principal(s->call);
  dg_store_ref_check_t *refs = dg_arena_calloc(arena, n + s->lines.nrefs + 1, sizeof(*refs));
  size_t k = 0;
  for (size_t i = 0; refs != NULL && i < n; i++) {
    const dg_property_t *p = vals[i].prop;
    if (p->type == DG_TYPE_REFERENCE && p->reference->target != NULL &&
        dg_auth_can_read_model(who, p->reference->target) && has_value(&vals[i]))
      refs[k++] = (dg_store_ref_check_t){p->reference->target, vals[i].value.text, vals[i].param};
  }
  for (size_t i = 0; refs != NULL && i < s->lines.nrefs; i++)
    refs[k++] = s->lines.refs[i];
  s->sub.refs = refs;
  s->sub.nrefs = k;
}

/* The checked form values, with the defaults of a new record; *all has
 * room for one more value per property. */
static int checked_values(submission_t *s, bool create, dg_forms_value_t **all, size_t *n,
                          dg_errctx_t *err) {
  const dg_principal_t *p = dg_mcp_tool_call_principal(s->call);
  dg_arena_t *arena = dg_mcp_tool_call_arena(s->call);
  json_t *items = json_object_get(dg_mcp_tool_call_args(s->call), "formValues");
  dg_forms_value_t *vals = NULL;
  int rc = dg_forms_values(p, s->model, items, "formValues", arena, &vals, n, err);
  *all = rc == 0 ? dg_arena_calloc(arena, *n + s->model->nproperties + 1, sizeof(**all)) : NULL;
  if (rc == 0 && *all == NULL)
    rc = dg_errctx_set(err, DG_ENOMEM, "formValues", "out of memory");
  if (rc != 0)
    return rc;
  memcpy(*all, vals, *n * sizeof(**all));
  return create ? dg_forms_defaults(p, s->model, NULL, *all, n, "formValues", arena, err)
                : check_cleared(*all, *n, err);
}

/* The record's write: CREATE, or UPDATE of the given id. */
static int record_write(submission_t *s, const char *id, const dg_forms_value_t *all, size_t n,
                        dg_errctx_t *err) {
  dg_arena_t *arena = dg_mcp_tool_call_arena(s->call);
  const dg_property_t **props = dg_arena_calloc(arena, n + 1, sizeof(*props));
  dg_store_value_t *values = dg_arena_calloc(arena, n + 1, sizeof(*values));
  if (props == NULL || values == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
  for (size_t i = 0; i < n; i++) {
    props[i] = all[i].prop;
    values[i] = all[i].value;
  }
  s->sub.write = (dg_store_write_t){.model = s->model,
                                    .mode = id ? DG_STORE_UPDATE : DG_STORE_CREATE,
                                    .id = id ? dg_forms_lower(arena, id) : NULL,
                                    .props = props,
                                    .values = values,
                                    .nvalues = n};
  return 0;
}

/* childLists, checked as a whole; a new record gets its id here, since
 * its added lines name it. */
static int check_lines(submission_t *s, const json_t *lists, dg_errctx_t *err) {
  dg_arena_t *arena = dg_mcp_tool_call_arena(s->call);
  if (s->sub.write.id == NULL) {
    char *id = dg_arena_alloc(arena, DG_UUID_LEN + 1);
    if (id == NULL)
      return dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
    dg_uuid_v4(id);
    s->sub.write.id = id;
  }
  dg_forms_lines_req_t req = {.principal = dg_mcp_tool_call_principal(s->call),
                              .model = s->model,
                              .endpoint = s->endpoint,
                              .parent_id = s->sub.write.id,
                              .create = s->sub.write.mode == DG_STORE_CREATE,
                              .lists = lists};
  int rc = dg_forms_check_lines(&req, arena, &s->lines, err);
  s->sub.children = s->lines.changes;
  s->sub.nchildren = s->lines.nchanges;
  return rc;
}

static int check_args(submission_t *s, dg_errctx_t *err) {
  json_t *args = dg_mcp_tool_call_args(s->call);
  s->model = dg_tools_model_arg(s->call, "dataModelId", err);
  if (s->model == NULL)
    return err->code;
  if (!dg_auth_can_write_model(dg_mcp_tool_call_principal(s->call), s->model))
    return dg_errctx_set(err, DG_EPERM, "dataModelId",
                         "Invalid argument 'dataModelId': you may read %s records but not create "
                         "or modify them (none of your roles grants write access to '%s').",
                         s->model->name, s->model->name);
  const char *id = json_string_value(json_object_get(args, "id"));
  dg_forms_value_t *all = NULL;
  size_t n = 0;
  s->endpoint = dg_catalog_form_endpoint(dg_mcp_tool_call_catalog(s->call), s->model);
  int rc = checked_values(s, id == NULL, &all, &n, err);
  if (rc == 0)
    rc = record_write(s, id, all, n, err);
  if (rc == 0 && json_array_size(json_object_get(args, "childLists")) > 0)
    rc = check_lines(s, json_object_get(args, "childLists"), err);
  if (rc != 0)
    return rc;
  add_refs(s, all, n);
  s->sub.fingerprint = fingerprint(s, args);
  return s->sub.fingerprint ? 0 : dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
}

static int submit(submission_t *s, dg_errctx_t *err) {
  set_state(s, SUB_STORING);
  int rc = dg_store_submit(s->store, &s->sub, on_submitted, s, NULL, err);
  if (rc == 0)
    dg_mcp_tool_call_on_cancel(s->call, on_cancel, s);
  return rc;
}

static void on_removed(int status, json_t *records, const dg_errctx_t *err, void *data);

/* Reads the lines the call removes, list after list, before the write
 * deletes them: the tree still saves them. Then submits. */
static int read_removed(submission_t *s, dg_errctx_t *err) {
  dg_arena_t *arena = dg_mcp_tool_call_arena(s->call);
  while (s->reading < s->lines.nlists && json_array_size(s->lines.lists[s->reading].removed) == 0)
    s->reading++;
  if (s->reading == s->lines.nlists || s->endpoint == NULL)
    return submit(s, err);
  const dg_forms_line_list_t *l = &s->lines.lists[s->reading];
  size_t n = json_array_size(l->removed);
  const char **ids = dg_arena_calloc(arena, n + 1, sizeof(*ids));
  if (ids == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
  for (size_t i = 0; i < n; i++)
    ids[i] = json_string_value(json_array_get(l->removed, i));
  set_state(s, SUB_READING_REMOVED);
  return dg_store_read_records(s->store, l->model, ids, n, on_removed, s, err);
}

static void on_removed(int status, json_t *records, const dg_errctx_t *err, void *data) {
  submission_t *s = data;
  dg_forms_line_list_t *l = &s->lines.lists[s->reading];
  if (status != 0) {
    fail(s, err);
    return;
  }
  if (records == NULL || dg_arena_defer(dg_mcp_tool_call_arena(s->call),
                                        (void (*)(void *))json_decref, records) != 0) {
    json_decref(records);
    set_state(s, SUB_ANSWERED);
    dg_mcp_tool_call_failf(s->call, "The form could not be submitted: out of memory.");
    return;
  }
  l->removed_records = records;
  s->reading++;
  dg_errctx_t e;
  dg_errctx_clear(&e);
  if (read_removed(s, &e) != 0)
    fail(s, &e);
}

/* The answer when the user did not confirm: nothing was stored or sent. */
static json_t *unconfirmed(submission_t *s, dg__tools_confirmation_t outcome) {
  bool declined = outcome == DG__TOOLS_DECLINED;
  json_t *id = json_object_get(dg_mcp_tool_call_args(s->call), "id");
  json_t *r = json_pack("{s:s,s:s,s:b,s:s}", "dataModelId", s->model->id, "status",
                        declined ? "declined" : "cancelled", "confirmed", 0, "message",
                        declined ? "The user declined the submission; nothing was stored or "
                                   "sent. Ask the user what to change before submitting again."
                                 : "The user cancelled the confirmation; nothing was stored or "
                                   "sent.");
  if (r != NULL && json_is_string(id))
    json_object_set_new(
        r, "id",
        json_string(dg_forms_lower(dg_mcp_tool_call_arena(s->call), json_string_value(id))));
  return r;
}

static void on_confirmation(void *data, dg__tools_confirmation_t outcome) {
  submission_t *s = data;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  if (outcome == DG__TOOLS_ABANDONED) {
    set_state(s, SUB_ANSWERED);
    dg_mcp_tool_call_failf(s->call,
                           "The submission was canceled while the user was asked to confirm "
                           "it; nothing was stored or sent.");
    return;
  }
  if (outcome != DG__TOOLS_CONFIRMED) {
    set_state(s, SUB_ANSWERED);
    dg__tools_reply(s->call, unconfirmed(s, outcome), "The submission was not confirmed");
    return;
  }
  s->confirmed = true;
  if (read_removed(s, &err) != 0)
    fail(s, &err);
}

static int begin(submission_t *s, dg_errctx_t *err) {
  int rc = check_args(s, err);
  if (rc != 0)
    return rc;
  json_t *args = dg_mcp_tool_call_args(s->call);
  char *id = dg_arena_alloc(dg_mcp_tool_call_arena(s->call), DG_UUID_LEN + 1);
  s->warnings = json_array();
  if (id == NULL || s->warnings == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
  dg_arena_defer(dg_mcp_tool_call_arena(s->call), (void (*)(void *))json_decref, s->warnings);
  dg_uuid_v4(id);
  s->sub.submission_id = id;
  s->sub.endpoint = s->endpoint ? s->endpoint->name : NULL;
  s->sub.system = json_string_value(json_object_get(args, "system"));
  s->sub.principal = dg_principal_name(dg_mcp_tool_call_principal(s->call));
  s->sub.idempotency_key = json_string_value(json_object_get(args, "idempotencyKey"));
  dg__tools_confirm_view_t view = {&s->sub.write, s->endpoint, s->sub.system, &s->lines};
  set_state(s, SUB_CONFIRMING);
  rc = dg__tools_confirm_submit(s->call, &view, on_confirmation, s, err);
  return rc == 1 ? read_removed(s, err) : rc;
}

/* A failed submission ends the call itself (fail), so that the state
 * machine records the answer. */
static int start(dg_mcp_tool_call_t *call, void *state, dg_errctx_t *err) {
  submission_t *s = state;
  s->call = call;
  s->store = dg__tools_store(call);
  if (s->store != NULL && begin(s, err) != 0)
    fail(s, err);
  return 0;
}

static void run(dg_mcp_tool_call_t *call) {
  dg__tools_start(call, sizeof(submission_t), "The form could not be submitted", start);
}

const dg_tool_t dg_tool_submit_data_entry_form = {
    .name = "submit_data_entry_form",
    .title = "Submit a data entry form",
    .description =
        "DESTRUCTIVE: creates or modifies a record and runs the model's save actions, which "
        "change data in external systems. Before calling it, show the user the values you will "
        "submit and ask them to confirm; call it only after they agree. A client that supports "
        "elicitation is also asked by the gateway itself, showing the record, the changes and "
        "the save actions; if the user declines or cancels, status is declined or cancelled and "
        "nothing is stored or sent. Without id it creates a "
        "record; with id it modifies that record (only the given fields change). formValues is "
        "an array of {key, value} strings: key is a field from get_data_entry_form (a property "
        "name from get_data_model_properties), value its text (12.5, true, 2024-03-01, a GUID "
        "for a reference, found with lookup_by_keyword); an empty value clears a field. The "
        "record's lines (an order's OrderLines) change in the same call with childLists "
        "[{list, changes: [{id, formValues}]}]: a change with id modifies that line, one "
        "without id adds a line, {id, op: \"remove\"} removes one; all is checked first, "
        "then saved and sent together. Give "
        "system (the assistant client you are) and an idempotencyKey unique to this submission: "
        "a retry with the same key returns the first outcome instead of saving twice. Invalid "
        "values are refused with an error naming the field and nothing is written. The answer "
        "has status succeeded or failed with failedAction, reason and every save action's "
        "status. Call get_data_entry_form first.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    .read_only = false,
    .destructive = true,
    .idempotent = false,
    .open_world = true,
    .elicits = true,
    .run = run,
};
