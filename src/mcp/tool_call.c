/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* dg_mcp_tool_call_t: one tools/call from validation to its reply.
 *
 * Stages, in order (dg__mcp_call_start): in-flight limit, arguments and
 * progress token, the call object (arena, catalog reference, timer),
 * schema validation, the tool's run. The tool ends the call once; the end
 * builds the tool result, records metrics and the log line, and releases
 * the call. A call that was canceled, timed out or whose client went away
 * is detached from its reply slot: its end is then recorded but nothing is
 * sent. Memory is freed in the timer's close callback, so a tool that ends
 * its call from inside a cancel callback never touches freed memory. */
#include <assert.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

#define CALL_ARENA_BLOCK 8192

typedef enum call_state { CALL_RUNNING, CALL_ENDED } call_state_t;
typedef enum call_stop { STOP_NONE, STOP_CANCELED, STOP_TIMEOUT } call_stop_t;

struct dg_mcp_tool_call {
  dg__mcp_exchange_t *ex;     /* reference held until the call is freed */
  dg__mcp_slot_t *slot;       /* NULL once detached from the reply */
  dg__mcp_session_t *session; /* set while in the session's list of calls */
  const dg__mcp_tool_t *tool;
  dg_catalog_t *cat; /* reference held until the call ends */
  dg_arena_t *arena;
  json_t *args;
  json_t *progress_token;
  const char *request_id;
  const char *trace_id; /* NULL: the trace id comes from request_id */
  uint64_t start_ns;
  uint64_t timeout_ms;
  call_state_t state;
  call_stop_t stop;
  bool cancel_fired;
  void (*cancel_fn)(dg_mcp_tool_call_t *call, void *data);
  void *cancel_data;
  dg_mcp_tool_call_t *prev, *next; /* the session's calls */
  uv_timer_t timer;                /* the timeout, then a deferred cancel callback */
  /* A question to the user waiting for the client's answer. */
  json_t *elicit_id; /* the request id sent; NULL when none is pending */
  unsigned elicit_seq;
  dg_mcp_tool_call_elicit_cb elicit_cb;
  void *elicit_data;
  dg__mcp_read_t read; /* a resources/read (uri set) answered by this call */
  json_t *text;        /* the text item the tool gave instead of its result's JSON */
  int error_code;      /* the DG_E* code of the tool's failure */
};

/* The one legal transition: a running call ends, once. */
static void call_set_state(dg_mcp_tool_call_t *call, call_state_t next) {
  assert(call->state == CALL_RUNNING && next == CALL_ENDED);
  call->state = next;
}

static const char *const outcome_names[] = {"ok", "error", "canceled", "timeout"};
_Static_assert(DG_ARRAY_SIZE(outcome_names) == DG__MCP_CALL_OUTCOMES, "one series per outcome");
typedef enum outcome { OUT_OK, OUT_ERROR, OUT_CANCELED, OUT_TIMEOUT } outcome_t;

/* ---- Accessors -------------------------------------------------------------- */

json_t *dg_mcp_tool_call_args(const dg_mcp_tool_call_t *call) {
  return call->args;
}

const dg_principal_t *dg_mcp_tool_call_principal(const dg_mcp_tool_call_t *call) {
  return call->ex->principal;
}

const dg_catalog_t *dg_mcp_tool_call_catalog(const dg_mcp_tool_call_t *call) {
  return call->cat != NULL ? call->cat : call->ex->cat;
}

uv_loop_t *dg_mcp_tool_call_loop(const dg_mcp_tool_call_t *call) {
  return call->ex->server->loop;
}

dg_arena_t *dg_mcp_tool_call_arena(const dg_mcp_tool_call_t *call) {
  return call->arena;
}

const char *dg_mcp_tool_call_request_id(const dg_mcp_tool_call_t *call) {
  return call->request_id;
}

const char *dg_mcp_tool_call_trace_id(const dg_mcp_tool_call_t *call) {
  return call->trace_id;
}

const char *dg_mcp_tool_call_transport(const dg_mcp_tool_call_t *call) {
  return call->ex->session ? call->ex->session->transport->name : "none";
}

void *dg_mcp_tool_call_context(const dg_mcp_tool_call_t *call) {
  return call->ex->server->config.tool_context;
}

bool dg_mcp_tool_call_canceled(const dg_mcp_tool_call_t *call) {
  return call->stop != STOP_NONE || call->ex->server->closing;
}

bool dg_mcp_tool_call_wants_progress(const dg_mcp_tool_call_t *call) {
  return call->progress_token != NULL;
}

/* ---- Session list ----------------------------------------------------------- */

static void link_session(dg_mcp_tool_call_t *call, dg__mcp_session_t *ss) {
  call->session = ss;
  DG_LIST_PUSH(ss->calls, call, prev, next);
  ss->ncalls++;
}

static void unlink_session(dg_mcp_tool_call_t *call) {
  dg__mcp_session_t *ss = call->session;
  if (ss == NULL)
    return;
  DG_LIST_UNLINK(ss->calls, call, prev, next);
  call->session = NULL;
  ss->ncalls--;
}

/* ---- Tool results ------------------------------------------------------------ */

static json_t *error_result(const char *text) {
  return json_pack("{s:[{s:s,s:o}],s:b}", "content", "type", "text", "text", dg__mcp_text(text),
                   "isError", 1);
}

size_t dg_mcp_tool_call_result_limit(const dg_mcp_tool_call_t *call) {
  size_t max = call->ex->limits.max_result_bytes;
  return max > 0 ? max : SIZE_MAX - 1;
}

static json_t *too_big(dg_mcp_tool_call_t *call, size_t limit) {
  char msg[512];
  snprintf(msg, sizeof(msg),
           "The result of %s is larger than the limit of %zu bytes. Narrow the request: "
           "select fewer properties, use a smaller page size or a more specific filter.",
           call->tool->def->name, limit);
  return error_result(msg);
}

/* The text item: the text the tool gave (dg_mcp_tool_call_succeed_text), the
 * result written out, or, for a result a tool wrote on a worker thread
 * already (dg_json_raw), that text itself, or its JSON-string form when the
 * tool kept one (answers given again and again): then nothing is escaped.
 * A resource read reads the item's text, so it gets the plain string. */
static json_t *text_item(dg_mcp_tool_call_t *call, const json_t *result) {
  /* A resource read turns the result itself into contents. */
  if (call->text != NULL && call->read.uri == NULL)
    return json_string_length(call->text) <= dg_mcp_tool_call_result_limit(call)
               ? json_incref(call->text)
               : NULL;
  const json_t *raw = dg_json_raw_text(result);
  if (raw != NULL) {
    if (json_string_length(raw) > dg_mcp_tool_call_result_limit(call))
      return NULL;
    const json_t *quoted = call->read.uri == NULL ? dg_json_raw_quoted(result) : NULL;
    return json_incref((json_t *)(quoted != NULL ? quoted : raw));
  }
  dg_buf_t text;
  dg_buf_init(&text, dg_mcp_tool_call_result_limit(call));
  json_t *item =
      dg__mcp_dump(result, &text) == 0 ? json_stringn_nocheck(text.data, text.len) : NULL;
  dg_buf_free(&text);
  return item;
}

/* {"content":[{"type":"text","text":text}]}, text stolen; built directly
 * rather than with json_pack, which reads its format on every call. */
static json_t *text_content(json_t *text) {
  json_t *item = json_object();
  int rc = json_object_set_new_nocheck(item, "type", json_string_nocheck("text"));
  rc |= json_object_set_new_nocheck(item, "text", text);
  json_t *content = json_array();
  rc |= json_array_append_new(content, item);
  json_t *r = json_object();
  rc |= json_object_set_new_nocheck(r, "content", content);
  if (rc != 0) {
    json_decref(r);
    return NULL;
  }
  return r;
}

/* structuredContent exists from 2025-06-18; older sessions get the text. */
static json_t *success_result(dg_mcp_tool_call_t *call, json_t *result) {
  json_t *text = text_item(call, result);
  if (text == NULL) {
    json_decref(result);
    return too_big(call, dg_mcp_tool_call_result_limit(call));
  }
  json_t *r = text_content(text);
  if (r != NULL && dg__mcp_session_at_least(call->ex->session, DG__MCP_V2025_06_18))
    json_object_set_new(r, "structuredContent", result);
  else
    json_decref(result);
  return r;
}

/* ---- Resource reads ------------------------------------------------------------ */

/* A tool failure as a read's error: what the caller named does not exist
 * or is not theirs (-32002), or the read failed (-32603). */
static json_t *read_error(const dg_mcp_tool_call_t *call, const json_t *id, const char *text) {
  int code = call->error_code;
  bool missing = code == DG_EINVAL || code == DG_ENOENT || code == DG_EPERM;
  return dg__mcp_error(id, missing ? DG__RPC_RESOURCE_NOT_FOUND : DG__RPC_INTERNAL, "%s%s",
                       missing ? "Resource not found: " : "", text);
}

/* The reply of a resources/read from the tool result r (stolen). */
static json_t *read_reply(const dg_mcp_tool_call_t *call, const json_t *id, json_t *r) {
  const json_t *item = json_array_get(json_object_get(r, "content"), 0);
  const json_t *text = json_object_get(item, "text");
  json_t *reply;
  if (json_is_true(json_object_get(r, "isError")) || !json_is_string(text)) {
    reply = read_error(call, id, json_is_string(text) ? json_string_value(text) : "no answer");
  } else {
    json_t *contents =
        call->read.contents(call->read.uri, json_string_value(text), json_string_length(text));
    reply = contents != NULL ? dg__mcp_result(id, json_pack("{s:o}", "contents", contents))
                             : dg__mcp_error(id, DG__RPC_RESOURCE_NOT_FOUND,
                                             "Resource not found: %s", call->read.uri);
  }
  json_decref(r);
  return reply;
}

/* What the slot is answered with: the tool result (stolen), or for a
 * resource read its contents or error. */
static json_t *slot_reply(const dg_mcp_tool_call_t *call, const json_t *id, json_t *tool_result) {
  if (call->read.uri == NULL)
    return dg__mcp_result(id, tool_result);
  return read_reply(call, id, tool_result);
}

/* ---- Release ------------------------------------------------------------------- */

static void on_timer_closed(uv_handle_t *handle) {
  dg_mcp_tool_call_t *call = handle->data;
  dg_arena_destroy(call->arena);
  dg__mcp_exchange_unref(call->ex);
  free(call);
}

/* The tool's metrics slot for a transport, taken on first use; NULL when
 * every slot holds another transport. */
static dg__mcp_tool_metrics_t *metrics_slot(const dg_mcp_tool_call_t *call, const char *transport) {
  dg_mcp_server_t *s = call->ex->server;
  dg__mcp_tool_metrics_t *m = s->tools[call->tool - s->tools].metrics;
  for (size_t i = 0; i < DG__MCP_TOOL_TRANSPORTS; i++) {
    if (m[i].transport == NULL)
      m[i].transport = transport;
    if (m[i].transport == transport)
      return &m[i];
  }
  return NULL;
}

/* The series are looked up, their labels written, once per tool,
 * transport and outcome (and again after a reset of the metrics). */
static void count_call(const dg_mcp_tool_call_t *call, outcome_t outcome, double seconds) {
  const char *transport = dg_mcp_tool_call_transport(call);
  const char *tool = call->tool->def->name;
  dg__mcp_tool_metrics_t *m = metrics_slot(call, transport);
  dg_metrics_ref_t scratch[2] = {{0}};
  dg_metrics_ref_t *calls = m != NULL ? &m->calls[outcome] : &scratch[0];
  dg_metrics_ref_t *duration = m != NULL ? &m->duration : &scratch[1];
  char labels[256];
  if (!dg_metrics_ref_bound(calls)) {
    snprintf(labels, sizeof(labels), "tool=\"%s\",transport=\"%s\",outcome=\"%s\"", tool, transport,
             outcome_names[outcome]);
    dg_metrics_ref_counter(calls, "dg_tool_calls_total", labels);
  }
  if (!dg_metrics_ref_bound(duration)) {
    snprintf(labels, sizeof(labels), "tool=\"%s\",transport=\"%s\"", tool, transport);
    dg_metrics_ref_histogram(duration, "dg_tool_call_duration_seconds", labels);
  }
  dg_metrics_ref_add(calls, 1);
  dg_metrics_ref_observe(duration, seconds);
}

static void record(const dg_mcp_tool_call_t *call, outcome_t outcome) {
  const char *transport = dg_mcp_tool_call_transport(call);
  const char *tool = call->tool->def->name;
  uint64_t ns = dg_now_ns() - call->start_ns;
  count_call(call, outcome, (double)ns / 1e9);
  const dg__mcp_session_t *ss = call->ex->session;
  const dg_principal_t *p = call->ex->principal;
  if (!dg_log_enabled(DG_LOG_INFO))
    return; /* the line would be dropped: spare building it */
  json_t *fields = json_pack(
      "{s:s,s:s%,s:s,s:s,s:s,s:f,s:s}", "request_id", call->request_id, "session", ss ? ss->id : "",
      (size_t)(ss ? 8 : 0), "tool", tool, "transport", transport, "outcome", outcome_names[outcome],
      "duration_ms", dg_log_ms(ns), "principal", p ? dg_principal_name(p) : "");
  if (fields != NULL && call->trace_id != NULL)
    json_object_set_new(fields, "trace_id", json_string(call->trace_id));
  dg_log_json(DG_LOG_INFO, "tool_call", fields);
}

static void call_finish(dg_mcp_tool_call_t *call, outcome_t outcome, json_t *tool_result) {
  if (call->stop == STOP_TIMEOUT)
    outcome = OUT_TIMEOUT;
  else if (call->stop == STOP_CANCELED)
    outcome = OUT_CANCELED;
  call_set_state(call, CALL_ENDED);
  uv_timer_stop(&call->timer);
  json_decref(call->elicit_id); /* a question the tool gave up on */
  call->elicit_id = NULL;
  dg__mcp_slot_t *slot = call->slot;
  call->slot = NULL;
  if (slot != NULL)
    dg__mcp_exchange_answer(call->ex, slot, slot_reply(call, slot->id, tool_result));
  else
    json_decref(tool_result);
  record(call, outcome);
  dg__mcp_session_t *ss = call->session;
  unlink_session(call);
  call->ex->server->inflight--;
  dg_catalog_unref(call->cat);
  call->cat = NULL;
  if (ss != NULL && ss->transport->call_ended != NULL)
    ss->transport->call_ended(ss);
  uv_close((uv_handle_t *)&call->timer, on_timer_closed);
}

/* A tool that ends a call twice has a bug; the second end is logged and
 * ignored rather than answering twice. */
static bool may_end(const dg_mcp_tool_call_t *call) {
  if (call->state == CALL_RUNNING)
    return true;
  dg_logf(DG_LOG_ERROR, "tool_call_ended_twice", "tool %s ended call %s twice",
          call->tool->def->name, call->request_id);
  return false;
}

void dg_mcp_tool_call_succeed(dg_mcp_tool_call_t *call, json_t *result) {
  if (!may_end(call)) {
    json_decref(result);
    return;
  }
  if (call->slot == NULL) {
    json_decref(result); /* nobody waits for it any more */
    call_finish(call, OUT_OK, NULL);
    return;
  }
  json_t *r = success_result(call, result ? result : json_object());
  bool too_big = json_is_true(json_object_get(r, "isError"));
  call_finish(call, too_big ? OUT_ERROR : OUT_OK, r);
}

void dg_mcp_tool_call_succeed_text(dg_mcp_tool_call_t *call, json_t *result, const char *text,
                                   size_t len) {
  call->text = json_stringn_nocheck(text, len);
  /* A failed defer has released the text: the result's JSON is sent then. */
  if (call->text != NULL && dg_arena_defer(call->arena, (void (*)(void *))json_decref, call->text))
    call->text = NULL;
  dg_mcp_tool_call_succeed(call, result);
}

void dg_mcp_tool_call_fail(dg_mcp_tool_call_t *call, const dg_errctx_t *err) {
  if (!may_end(call))
    return;
  const char *text = err != NULL && err->message[0] ? err->message : "the tool failed";
  call->error_code = err != NULL ? err->code : DG_EINVAL;
  call_finish(call, OUT_ERROR, error_result(text));
}

void dg_mcp_tool_call_failf(dg_mcp_tool_call_t *call, const char *fmt, ...) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  err.code = DG_EINVAL;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err.message, sizeof(err.message), fmt, ap);
  va_end(ap);
  dg_mcp_tool_call_fail(call, &err);
}

/* ---- Cancellation ---------------------------------------------------------------- */

static void fire_cancel(dg_mcp_tool_call_t *call) {
  if (call->cancel_fn == NULL || call->cancel_fired || call->state != CALL_RUNNING)
    return;
  call->cancel_fired = true;
  call->cancel_fn(call, call->cancel_data);
}

static void elicit_end(dg_mcp_tool_call_t *call, int status, dg_elicit_action_t action,
                       const json_t *content);

/* Stops the call's reply: a timeout answers with a tool error, the other
 * reasons answer nothing. A question to the user is abandoned; the tool
 * hears its cancel callback. */
static void call_stop(dg_mcp_tool_call_t *call, call_stop_t why, json_t *answer) {
  if (call->state != CALL_RUNNING || call->stop != STOP_NONE) {
    json_decref(answer);
    return;
  }
  call->stop = why;
  dg__mcp_slot_t *slot = call->slot;
  call->slot = NULL;
  call->error_code = DG_ETIMEDOUT;
  if (slot != NULL)
    dg__mcp_exchange_answer(call->ex, slot, answer ? slot_reply(call, slot->id, answer) : NULL);
  else
    json_decref(answer);
  elicit_end(call, DG_ECANCELED, DG_ELICIT_CANCEL, NULL);
  fire_cancel(call);
}

static void on_timer(uv_timer_t *timer) {
  dg_mcp_tool_call_t *call = timer->data;
  if (call->stop != STOP_NONE) {
    fire_cancel(call); /* a callback registered after the cancellation */
    return;
  }
  char text[256];
  snprintf(text, sizeof(text), "The tool %s timed out after %llu ms.", call->tool->def->name,
           (unsigned long long)call->timeout_ms);
  call_stop(call, STOP_TIMEOUT, error_result(text));
}

void dg_mcp_tool_call_on_cancel(dg_mcp_tool_call_t *call,
                                void (*fn)(dg_mcp_tool_call_t *call, void *data), void *data) {
  call->cancel_fn = fn;
  call->cancel_data = data;
  call->cancel_fired = false;
  if (fn != NULL && call->stop != STOP_NONE && call->state == CALL_RUNNING)
    uv_timer_start(&call->timer, on_timer, 0, 0);
}

bool dg__mcp_call_cancel_id(dg__mcp_session_t *ss, const json_t *request_id) {
  for (dg_mcp_tool_call_t *c = ss->calls; c != NULL; c = c->next) {
    if (c->slot != NULL && json_equal(c->slot->id, (json_t *)request_id)) {
      call_stop(c, STOP_CANCELED, NULL);
      return true;
    }
  }
  return false;
}

void dg__mcp_call_detach(dg_mcp_tool_call_t *call) {
  unlink_session(call);
  call_stop(call, STOP_CANCELED, NULL);
  dg__mcp_slot_t *slot = call->slot;
  call->slot = NULL;
  if (slot != NULL)
    slot->call = NULL;
}

/* ---- Progress ------------------------------------------------------------------ */

int dg_mcp_tool_call_progress_meta(dg_mcp_tool_call_t *call, double progress, double total,
                                   const char *message, json_t *meta) {
  const dg__mcp_transport_t *t = call->ex->transport;
  if (call->progress_token == NULL || call->state != CALL_RUNNING || call->slot == NULL ||
      t == NULL || t->notify == NULL)
    return DG_ENOTSUP;
  int rc = t->can_notify != NULL ? t->can_notify(call->ex) : 0;
  if (rc != 0)
    return rc;
  json_t *params =
      json_pack("{s:O,s:f}", "progressToken", call->progress_token, "progress", progress);
  if (params != NULL && total >= 0)
    json_object_set_new(params, "total", json_real(total));
  /* The progress message came with 2025-03-26. */
  if (params != NULL && message != NULL &&
      dg__mcp_session_at_least(call->ex->session, DG__MCP_V2025_03_26))
    json_object_set_new(params, "message", json_string(message));
  if (params != NULL && meta != NULL)
    json_object_set(params, "_meta", meta);
  json_t *note = json_pack("{s:s,s:s,s:o}", "jsonrpc", "2.0", "method", "notifications/progress",
                           "params", params);
  if (note == NULL)
    return DG_ENOMEM;
  t->notify(call->ex, note);
  json_decref(note);
  return 0;
}

void dg_mcp_tool_call_progress(dg_mcp_tool_call_t *call, double progress, double total,
                               const char *message) {
  dg_mcp_tool_call_progress_meta(call, progress, total, message, NULL);
}

/* ---- Asking the user ------------------------------------------------------------ */

bool dg_mcp_tool_call_can_elicit(const dg_mcp_tool_call_t *call) {
  const dg__mcp_session_t *ss = call->session;
  const dg__mcp_transport_t *t = call->ex->transport;
  if (ss == NULL || !ss->elicitation || !dg__mcp_session_at_least(ss, DG__MCP_V2025_06_18) ||
      call->state != CALL_RUNNING || call->slot == NULL || t == NULL || t->notify == NULL)
    return false;
  return t->can_notify == NULL || t->can_notify(call->ex) == 0;
}

/* Hands the answer to the tool once; the call's own timeout runs again. */
static void elicit_end(dg_mcp_tool_call_t *call, int status, dg_elicit_action_t action,
                       const json_t *content) {
  if (call->elicit_id == NULL)
    return;
  json_decref(call->elicit_id);
  call->elicit_id = NULL;
  if (status == 0 && call->state == CALL_RUNNING) {
    uv_timer_stop(&call->timer);
    if (call->timeout_ms > 0)
      uv_timer_start(&call->timer, on_timer, call->timeout_ms, 0);
  }
  call->elicit_cb(call, status, action, content, call->elicit_data);
}

int dg_mcp_tool_call_elicit(dg_mcp_tool_call_t *call, const char *message,
                            const json_t *requested_schema, dg_mcp_tool_call_elicit_cb cb,
                            void *data) {
  if (call->elicit_id != NULL)
    return DG_EBUSY;
  if (!dg_mcp_tool_call_can_elicit(call))
    return DG_ENOTSUP;
  json_t *id = json_sprintf("elicit-%s-%u", call->request_id, ++call->elicit_seq);
  json_t *req = json_pack("{s:s,s:O,s:s,s:{s:o,s:O}}", "jsonrpc", "2.0", "id", id, "method",
                          "elicitation/create", "params", "message", dg__mcp_text(message),
                          "requestedSchema", requested_schema);
  if (id == NULL || req == NULL) {
    json_decref(id);
    json_decref(req);
    return DG_ENOMEM;
  }
  call->elicit_id = id;
  call->elicit_cb = cb;
  call->elicit_data = data;
  uv_timer_start(&call->timer, on_timer, DG_MCP_ELICIT_WAIT_MS, 0);
  call->ex->transport->notify(call->ex, req);
  json_decref(req);
  return 0;
}

/* The action of an elicitation result, or -1 when it is not one. */
static int elicit_action(const json_t *result) {
  static const char *const names[] = {"accept", "decline", "cancel"};
  const char *action = json_string_value(json_object_get(result, "action"));
  for (int i = 0; action != NULL && i < 3; i++) {
    if (strcmp(action, names[i]) == 0)
      return i;
  }
  return -1;
}

void dg__mcp_call_response(dg__mcp_session_t *ss, const json_t *msg) {
  const json_t *id = json_object_get(msg, "id");
  dg_mcp_tool_call_t *c = ss->calls;
  while (c != NULL && !(c->elicit_id != NULL && json_equal(c->elicit_id, (json_t *)id)))
    c = c->next;
  if (c == NULL)
    return; /* an answer nobody waits for any more */
  const json_t *result = json_object_get(msg, "result");
  int action = elicit_action(result);
  if (action < 0) {
    elicit_end(c, DG_EPROTO, DG_ELICIT_CANCEL, NULL);
    return;
  }
  const json_t *content = json_object_get(result, "content");
  elicit_end(c, 0, (dg_elicit_action_t)action, json_is_object(content) ? content : NULL);
}

/* ---- Start ------------------------------------------------------------------------ */

static dg_mcp_tool_call_t *call_new(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot,
                                    const dg__mcp_tool_t *tool) {
  dg_mcp_tool_call_t *call = calloc(1, sizeof(*call));
  dg_arena_t *arena = call != NULL ? dg_arena_new(CALL_ARENA_BLOCK) : NULL;
  char uuid[DG_UUID_LEN + 1];
  if (arena == NULL) {
    free(call);
    return NULL;
  }
  /* A call without an HTTP request id (WebSocket, stdio) gets its own. */
  if (ex->request_id == NULL)
    dg_uuid_v4(uuid);
  call->request_id = dg_arena_strdup(arena, ex->request_id ? ex->request_id : uuid);
  call->trace_id = ex->trace_id != NULL ? dg_arena_strdup(arena, ex->trace_id) : NULL;
  call->arena = arena;
  call->ex = ex;
  dg__mcp_exchange_ref(ex);
  call->slot = slot;
  call->tool = tool;
  call->cat = dg_catalog_ref(ex->cat);
  call->start_ns = dg_now_ns();
  call->timeout_ms = ex->limits.tool_timeout_ms;
  uv_timer_init(ex->server->loop, &call->timer);
  call->timer.data = call;
  return call;
}

static json_t *take_arguments(json_t *params) {
  json_t *args = json_object_get(params, "arguments");
  if (args == NULL || json_is_null(args)) {
    json_object_set_new(params, "arguments", json_object());
    args = json_object_get(params, "arguments");
  }
  return args;
}

static bool over_limit(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot) {
  unsigned max = ex->limits.max_inflight_per_session;
  if (max == 0 || ex->session->ncalls < max)
    return false;
  dg__mcp_exchange_answer(ex, slot,
                          dg__mcp_error(slot->id, DG__RPC_SERVER_BUSY,
                                        "too many requests in flight (at most %u per session); "
                                        "wait for a response before sending more",
                                        max));
  return true;
}

void dg__mcp_call_start(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, const dg__mcp_tool_t *tool,
                        json_t *params, const dg__mcp_read_t *read) {
  if (over_limit(ex, slot))
    return;
  json_t *args = take_arguments(params);
  dg_mcp_tool_call_t *call = call_new(ex, slot, tool);
  if (call == NULL) {
    dg__mcp_exchange_answer(
        ex, slot, dg__mcp_error(slot->id, DG__RPC_INTERNAL, "Internal error: out of memory"));
    return;
  }
  call->args = args;
  if (read != NULL)
    call->read = *read;
  json_t *token = json_object_get(json_object_get(params, "_meta"), "progressToken");
  call->progress_token = json_is_string(token) || json_is_integer(token) ? token : NULL;
  slot->call = call;
  link_session(call, ex->session);
  ex->server->inflight++;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  if (dg_mcp_schema_validate(tool->accepted_schema, args, &err) != 0) {
    dg_mcp_tool_call_fail(call, &err);
    return;
  }
  if (call->timeout_ms > 0)
    uv_timer_start(&call->timer, on_timer, call->timeout_ms, 0);
  tool->def->run(call);
}
