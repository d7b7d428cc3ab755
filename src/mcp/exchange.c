/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* JSON-RPC 2.0 over any transport. An exchange is one incoming transport
 * message: a single JSON-RPC message or, for sessions at 2025-03-26, a
 * batch. Each request of it gets a slot that is answered now (errors,
 * initialize, tools/list) or when its tool call ends; once every slot is
 * done the reply is queued and handed to the transport on a later loop
 * turn, never from inside the call that started the exchange. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

#define ARENA_BLOCK 4096

/* ---- Envelopes ------------------------------------------------------------ */

/* Built directly rather than with json_pack, which reads its format on
 * every reply. Each set steals its value, also when it fails. */
json_t *dg__mcp_result(const json_t *id, json_t *result) {
  json_t *r = json_object();
  int rc = json_object_set_new_nocheck(r, "jsonrpc", json_string_nocheck("2.0"));
  rc |= json_object_set_new_nocheck(r, "id", id != NULL ? json_copy((json_t *)id) : json_null());
  rc |= json_object_set_new_nocheck(r, "result", result ? result : json_object());
  if (rc != 0) {
    json_decref(r);
    return NULL;
  }
  return r;
}

/* text with each invalid or cut UTF-8 sequence replaced by U+FFFD (one
 * for each maximal subpart, as Unicode recommends). */
static json_t *repaired_text(const char *text, size_t n) {
  static const char replacement[] = "\xef\xbf\xbd";
  const unsigned char *p = (const unsigned char *)text;
  dg_buf_t out;
  dg_buf_init(&out, n * 3 + 1);
  for (size_t i = 0; i < n;) {
    uint32_t cp;
    int len = dg_utf8_decode(p + i, n - i, &cp);
    if (len > 0) {
      dg_buf_append(&out, p + i, (size_t)len);
      i += (size_t)len;
    } else {
      dg_buf_append(&out, replacement, sizeof(replacement) - 1);
      i = len < 0 ? i + (size_t)-len : n; /* 0: cut short by the end */
    }
  }
  json_t *s = json_stringn(out.data ? out.data : "", out.len);
  dg_buf_free(&out);
  return s;
}

json_t *dg__mcp_text(const char *text) {
  json_t *s = json_string(text ? text : "");
  return s != NULL ? s : repaired_text(text, strlen(text));
}

json_t *dg__mcp_error(const json_t *id, int code, const char *fmt, ...) {
  char message[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof(message), fmt, ap);
  va_end(ap);
  json_t *id_copy = id != NULL ? json_copy((json_t *)id) : json_null();
  return json_pack("{s:s,s:o,s:{s:i,s:o}}", "jsonrpc", "2.0", "id", id_copy, "error", "code", code,
                   "message", dg__mcp_text(message));
}

/* Room for the envelope around a result, above twice the result limit. */
#define REPLY_SLACK (64 * 1024)
/* The result limit when none is configured. */
#define RESULT_DEFAULT_MAX (64 * 1024 * 1024)

size_t dg__mcp_reply_limit(const dg__mcp_exchange_t *ex) {
  size_t max = ex->limits.max_result_bytes;
  return (max > 0 ? max : RESULT_DEFAULT_MAX) * 2 + REPLY_SLACK;
}

/* An empty reply buffer starts at 1000 bytes instead of growing from 256
 * by doubling. Not more: glibc serves blocks up to 1032 bytes from its
 * per-thread cache, and a 4 KiB first block per reply made the small
 * answers (ping, notifications) a third slower in bench/ws. */
#define DUMP_RESERVE 1000

int dg__mcp_dump(const json_t *value, dg_buf_t *out) {
  /* Reserved once for the whole reply where it can be: a tool's answer
   * appears twice in it (the text item escaped, then structuredContent), and
   * growing by doubling would copy it again and again. A refusal shows
   * again below, when the reply is written. */
  if (out->cap == 0) {
    size_t hint = dg_json_size_hint(value);
    if (dg_buf_reserve(out, DUMP_RESERVE + hint + hint / 8) != 0)
      (void)dg_buf_reserve(out, DUMP_RESERVE);
  }
  return dg_json_write(value, out) == 0 ? 0 : DG_E2BIG;
}

static const char *const known_methods[DG__MCP_METHOD_LABELS] = {
    "initialize",       "notifications/initialized", "ping",           "tools/list",
    "tools/call",       "notifications/cancelled",   "resources/list", "prompts/list",
    "logging/setLevel", "notifications/progress",
};

size_t dg__mcp_method_index(const char *method) {
  for (size_t i = 0; method != NULL && i < DG__MCP_METHOD_LABELS; i++) {
    if (strcmp(method, known_methods[i]) == 0)
      return i;
  }
  return DG__MCP_METHOD_LABELS;
}

const char *dg__mcp_method_label(const char *method) {
  size_t i = dg__mcp_method_index(method);
  return i < DG__MCP_METHOD_LABELS ? known_methods[i] : "other";
}

static bool valid_id(const json_t *id) {
  return json_is_string(id) || json_is_integer(id);
}

static bool has_progress_token(const json_t *msg) {
  json_t *meta = json_object_get(json_object_get(msg, "params"), "_meta");
  return valid_id(json_object_get(meta, "progressToken"));
}

bool dg__mcp_wants_progress(const json_t *msg) {
  if (!json_is_array(msg))
    return has_progress_token(msg);
  size_t i;
  json_t *item;
  json_array_foreach(msg, i, item) {
    if (has_progress_token(item))
      return true;
  }
  return false;
}

bool dg__mcp_is_request(const json_t *msg, const char *m) {
  const char *method = json_string_value(json_object_get(msg, "method"));
  return method != NULL && strcmp(method, m) == 0 && json_object_get(msg, "id") != NULL;
}

/* ---- Lifetime ---------------------------------------------------------------- */

dg__mcp_exchange_t *dg__mcp_exchange_new(dg_mcp_server_t *s) {
  dg__mcp_exchange_t *ex = calloc(1, sizeof(*ex));
  if (ex == NULL)
    return NULL;
  ex->arena = dg_arena_new(ARENA_BLOCK);
  if (ex->arena == NULL) {
    free(ex);
    return NULL;
  }
  ex->server = s;
  ex->cat = dg_catalog_ref(s->cat);
  ex->limits = s->limits;
  ex->refs = 1; /* the transport's, dropped when the reply is delivered */
  dg__mcp_server_ref(s);
  return ex;
}

void dg__mcp_exchange_bind(dg__mcp_exchange_t *ex, dg__mcp_session_t *ss,
                           const dg__mcp_transport_t *t, void *data) {
  ex->session = ss;
  dg__mcp_session_ref(ss);
  ex->transport = t;
  ex->data = data;
  DG_LIST_PUSH(ss->exchanges, ex, prev, next);
  dg__mcp_session_touch(ss);
}

void dg__mcp_exchange_ref(dg__mcp_exchange_t *ex) {
  ex->refs++;
}

static void exchange_free(dg__mcp_exchange_t *ex) {
  for (size_t i = 0; i < ex->nslots; i++)
    json_decref(ex->slots[i].response);
  json_decref(ex->msg);
  dg_arena_destroy(ex->arena);
  dg_catalog_unref(ex->cat);
  if (ex->session != NULL)
    dg__mcp_session_unref(ex->session);
  dg__mcp_server_unref(ex->server);
  free(ex);
}

void dg__mcp_exchange_unref(dg__mcp_exchange_t *ex) {
  if (--ex->refs == 0)
    exchange_free(ex);
}

/* The transport is done with the exchange: unlinked from its session and
 * the transport's reference dropped. Safe to call twice. */
static void release_transport(dg__mcp_exchange_t *ex) {
  if (ex->transport == NULL)
    return;
  ex->transport = NULL;
  dg__mcp_session_t *ss = ex->session;
  if (ss != NULL) {
    if (ex->prev != NULL)
      ex->prev->next = ex->next;
    else if (ss->exchanges == ex)
      ss->exchanges = ex->next;
    if (ex->next != NULL)
      ex->next->prev = ex->prev;
    ex->prev = ex->next = NULL;
    dg__mcp_session_touch(ss);
  }
  dg__mcp_exchange_unref(ex);
}

void dg__mcp_exchange_gone(dg__mcp_exchange_t *ex) {
  if (ex->transport == NULL)
    return;
  dg__mcp_exchange_ref(ex);
  const dg__mcp_transport_t *t = ex->transport;
  ex->transport = NULL; /* nothing more reaches the client */
  for (size_t i = 0; i < ex->nslots; i++) {
    if (ex->slots[i].call != NULL)
      dg__mcp_call_detach(ex->slots[i].call);
  }
  ex->transport = t;
  release_transport(ex);
  dg__mcp_exchange_unref(ex);
}

/* ---- Replies ------------------------------------------------------------------ */

static void check_done(dg__mcp_exchange_t *ex) {
  if (!ex->running && ex->open == 0 && ex->transport != NULL)
    dg__mcp_server_queue(ex->server, ex);
}

void dg__mcp_exchange_answer(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, json_t *response) {
  if (slot->done) {
    json_decref(response);
    return;
  }
  slot->response = response;
  slot->call = NULL;
  slot->done = true;
  ex->open--;
  check_done(ex);
}

static json_t *build_reply(dg__mcp_exchange_t *ex) {
  if (!ex->batch)
    return ex->nslots > 0 ? json_incref(ex->slots[0].response) : NULL;
  json_t *list = json_array();
  for (size_t i = 0; i < ex->nslots; i++) {
    if (ex->slots[i].response != NULL)
      json_array_append(list, ex->slots[i].response);
  }
  if (json_array_size(list) == 0) {
    json_decref(list);
    return NULL;
  }
  return list;
}

void dg__mcp_exchange_deliver(dg__mcp_exchange_t *ex) {
  const dg__mcp_transport_t *t = ex->transport;
  if (t == NULL)
    return;
  dg__mcp_exchange_ref(ex);
  json_t *reply = build_reply(ex);
  t->reply(ex, reply);
  json_decref(reply);
  release_transport(ex);
  dg__mcp_exchange_unref(ex);
}

/* ---- Dispatch -------------------------------------------------------------------- */

static bool alloc_slots(dg__mcp_exchange_t *ex, size_t n) {
  ex->slots = dg_arena_calloc(ex->arena, n, sizeof(*ex->slots));
  if (ex->slots == NULL)
    return false;
  ex->nslots = n;
  ex->open = n;
  return true;
}

void dg__mcp_exchange_fail(dg__mcp_exchange_t *ex, int code, const char *message) {
  if (ex->nslots == 0 && !alloc_slots(ex, 1))
    return;
  dg__mcp_exchange_answer(ex, &ex->slots[0], dg__mcp_error(NULL, code, "%s", message));
}

/* The messages counters, found once per transport and method label
 * (metrics belong to the loop thread, as these do); further transports are
 * counted the slow way. */
#define COUNTED_TRANSPORTS 4
#define METHOD_LABELS (DG__MCP_METHOD_LABELS + 1) /* and "other" */
static struct {
  const char *transport; /* the transport's name (static); NULL: free */
  dg_metrics_ref_t by_method[METHOD_LABELS];
} message_counters[COUNTED_TRANSPORTS];

static dg_metrics_ref_t *message_counter(const char *transport, size_t method) {
  for (size_t i = 0; i < COUNTED_TRANSPORTS; i++) {
    if (message_counters[i].transport == NULL)
      message_counters[i].transport = transport;
    if (message_counters[i].transport == transport)
      return &message_counters[i].by_method[method];
  }
  return NULL;
}

static void count_message(const dg__mcp_exchange_t *ex, const char *method) {
  const char *transport = ex->transport ? ex->transport->name : "none";
  size_t index = dg__mcp_method_index(method);
  dg_metrics_ref_t scratch = {0};
  dg_metrics_ref_t *ref = message_counter(transport, index);
  if (ref == NULL)
    ref = &scratch;
  if (!dg_metrics_ref_bound(ref)) {
    char labels[128];
    snprintf(labels, sizeof(labels), "transport=\"%s\",method=\"%s\"", transport,
             dg__mcp_method_label(method));
    dg_metrics_ref_counter(ref, "dg_mcp_messages_total", labels);
  }
  dg_metrics_ref_add(ref, 1);
}

/* Checks the envelope; returns an error response for a bad one, NULL when
 * the message is well formed. */
static json_t *check_envelope(const json_t *msg) {
  if (!json_is_object(msg))
    return dg__mcp_error(NULL, DG__RPC_INVALID_REQUEST,
                         "Invalid Request: a JSON-RPC message must be a JSON object");
  json_t *id = json_object_get(msg, "id");
  const json_t *good_id = valid_id(id) ? id : NULL;
  const char *version = json_string_value(json_object_get(msg, "jsonrpc"));
  if (version == NULL || strcmp(version, "2.0") != 0)
    return dg__mcp_error(good_id, DG__RPC_INVALID_REQUEST,
                         "Invalid Request: \"jsonrpc\" must be \"2.0\"");
  if (id != NULL && good_id == NULL)
    return dg__mcp_error(NULL, DG__RPC_INVALID_REQUEST,
                         "Invalid Request: \"id\" must be a string or an integer");
  json_t *params = json_object_get(msg, "params");
  if (params != NULL && !json_is_object(params) && !json_is_array(params))
    return dg__mcp_error(good_id, DG__RPC_INVALID_REQUEST,
                         "Invalid Request: \"params\" must be an object");
  return NULL;
}

/* A message without a method is a response from the client (to a question
 * a tool asked; others are ignored) or invalid. */
static void dispatch_methodless(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, json_t *msg) {
  json_t *id = json_object_get(msg, "id");
  bool response = id != NULL && (json_object_get(msg, "result") || json_object_get(msg, "error"));
  count_message(ex, NULL);
  if (response) {
    dg__mcp_exchange_answer(ex, slot, NULL);
    if (ex->session != NULL)
      dg__mcp_call_response(ex->session, msg);
    return;
  }
  dg__mcp_exchange_answer(ex, slot,
                          dg__mcp_error(valid_id(id) ? id : NULL, DG__RPC_INVALID_REQUEST,
                                        "Invalid Request: \"method\" is missing"));
}

static void dispatch_one(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, json_t *msg) {
  json_t *bad = check_envelope(msg);
  if (bad != NULL) {
    count_message(ex, NULL);
    dg__mcp_exchange_answer(ex, slot, bad);
    return;
  }
  json_t *method = json_object_get(msg, "method");
  if (method == NULL) {
    dispatch_methodless(ex, slot, msg);
    return;
  }
  json_t *id = json_object_get(msg, "id");
  if (!json_is_string(method)) {
    count_message(ex, NULL);
    dg__mcp_exchange_answer(
        ex, slot,
        dg__mcp_error(id, DG__RPC_INVALID_REQUEST, "Invalid Request: \"method\" must be a string"));
    return;
  }
  count_message(ex, json_string_value(method));
  if (ex->refusal != NULL) {
    dg__mcp_exchange_answer(
        ex, slot, id != NULL ? dg__mcp_error(id, ex->refusal_code, "%s", ex->refusal) : NULL);
    return;
  }
  json_t *params = json_object_get(msg, "params");
  if (id == NULL) {
    dg__mcp_handle_notification(ex, json_string_value(method), params);
    dg__mcp_exchange_answer(ex, slot, NULL);
    return;
  }
  slot->id = id;
  dg__mcp_handle_request(ex, slot, json_string_value(method), params);
}

static const char *batch_refusal(const dg__mcp_exchange_t *ex) {
  const char *v = ex->session ? ex->session->version : NULL;
  if (v == NULL)
    return "Invalid Request: a JSON-RPC batch cannot start a session; send initialize alone";
  if (strcmp(v, DG__MCP_V2024_11_05) == 0)
    return "Invalid Request: JSON-RPC batching came with protocol version 2025-03-26; "
           "send one message at a time (batches are accepted only at 2025-03-26)";
  if (strcmp(v, DG__MCP_V2025_03_26) != 0)
    return "Invalid Request: JSON-RPC batching was removed in protocol version 2025-06-18; "
           "send one message at a time (batches are accepted only at 2025-03-26)";
  return NULL;
}

static void run_batch(dg__mcp_exchange_t *ex, json_t *msg) {
  size_t n = json_array_size(msg);
  const char *refusal = n == 0 ? "Invalid Request: the batch is empty" : batch_refusal(ex);
  if (refusal != NULL) {
    count_message(ex, NULL);
    dg__mcp_exchange_fail(ex, DG__RPC_INVALID_REQUEST, refusal);
    return;
  }
  if (!alloc_slots(ex, n)) {
    dg__mcp_exchange_fail(ex, DG__RPC_INTERNAL, "Internal error: out of memory");
    return;
  }
  ex->batch = true;
  for (size_t i = 0; i < n; i++)
    dispatch_one(ex, &ex->slots[i], json_array_get(msg, i));
}

void dg__mcp_exchange_run(dg__mcp_exchange_t *ex, json_t *msg) {
  ex->msg = msg;
  ex->running = true;
  if (json_is_array(msg))
    run_batch(ex, msg);
  else if (alloc_slots(ex, 1))
    dispatch_one(ex, &ex->slots[0], msg);
  ex->running = false;
  if (ex->nslots == 0) /* out of memory before any slot existed */
    dg__mcp_exchange_fail(ex, DG__RPC_INTERNAL, "Internal error: out of memory");
  check_done(ex);
}

json_t *dg__mcp_parse(const char *text, size_t len, int *code, char *message, size_t size) {
  dg_json_parse_error_t perr;
  json_t *msg = dg_json_parse_message(text, len, &perr);
  *code = 0;
  message[0] = '\0';
  if (msg != NULL && perr.message[0] == '\0')
    return msg;
  /* Valid JSON that a message may not hold is the request's fault, not the
   * parser's: with its id it is answered like any bad request. */
  if (perr.kind == DG_JSON_SYNTAX)
    *code = DG__RPC_PARSE_ERROR;
  else
    *code = perr.kind == DG_JSON_UNSUPPORTED ? DG__RPC_INVALID_PARAMS : DG__RPC_INVALID_REQUEST;
  const char *what = perr.kind == DG_JSON_SYNTAX        ? "Parse error"
                     : perr.kind == DG_JSON_UNSUPPORTED ? "Invalid params"
                                                        : "Invalid Request";
  snprintf(message, size, "%s: %s (at byte %zu)", what, perr.message, perr.offset);
  return msg;
}

void dg__mcp_exchange_run_text(dg__mcp_exchange_t *ex, const char *text, size_t len) {
  char message[256];
  int code;
  json_t *msg = dg__mcp_parse(text, len, &code, message, sizeof(message));
  if (msg == NULL) {
    count_message(ex, NULL);
    dg__mcp_exchange_fail(ex, code, message);
    return;
  }
  if (code != 0 && ex->refusal == NULL)
    dg__mcp_exchange_refuse(ex, code, message);
  if (code != 0 && ex->refusal == NULL) { /* out of memory: never run it as read */
    json_decref(msg);
    count_message(ex, NULL);
    dg__mcp_exchange_fail(ex, code, message);
    return;
  }
  dg__mcp_exchange_run(ex, msg);
}

void dg__mcp_exchange_refuse(dg__mcp_exchange_t *ex, int code, const char *message) {
  ex->refusal = dg_arena_strdup(ex->arena, message);
  ex->refusal_code = code;
}

void dg__mcp_exchange_refuse_text(dg__mcp_exchange_t *ex, int code, const char *message,
                                  const char *text, size_t len) {
  dg__mcp_exchange_refuse(ex, code, message);
  if (ex->refusal == NULL) {
    dg__mcp_exchange_fail(ex, code, message);
    return;
  }
  dg__mcp_exchange_run_text(ex, text, len);
}
