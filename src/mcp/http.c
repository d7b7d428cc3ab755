/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* MCP Streamable HTTP at /mcp (specification 2025-06-18 and 2025-11-25,
 * "Transports"; 2025-03-26 clients work the same way).
 *
 *   POST    one JSON-RPC message (a batch at 2025-03-26): 202 when it holds
 *           no request; otherwise the response as application/json, or as
 *           an SSE stream when the client accepts one and asked for
 *           progress, or calls a tool that may ask the user a question
 *           (elicitation/create travels on the stream). initialize creates
 *           the session (Mcp-Session-Id).
 *   GET     the session's server-to-client SSE stream (one per session).
 *   DELETE  ends the session.
 *
 * Every request is checked in the same order: Origin (403), bearer token
 * (401), then the method's own checks. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "mcp/internal.h"

#define REPLY_HEADERS 3
#define SSE_EVENT_MAX 32

static const dg_http_header_t ct_json = {"Content-Type", "application/json"};

/* The per-POST state of an exchange, in the exchange's arena. */
typedef struct http_ex {
  dg_http_request_t *req; /* NULL once answered or aborted */
  bool streaming;         /* answering as an SSE stream */
  bool created_session;   /* this initialize created the session */
  char *tail;             /* the final SSE event, waiting for on_drain (heap) */
  size_t tail_len;
} http_ex_t;

struct dg__mcp_sse {
  dg__mcp_session_t *session; /* reference held until the stream is freed */
  dg_http_request_t *req;     /* NULL once ended or aborted */
  uv_timer_t keepalive;
};

/* ---- Header checks ------------------------------------------------------------ */

bool dg__mcp_lists_token(const char *header, const char *type) {
  size_t tlen = strlen(type);
  for (const char *p = header; p != NULL && *p != '\0';) {
    p += strspn(p, " \t,");
    size_t n = strcspn(p, ";, \t");
    if (n == tlen && strncasecmp(p, type, n) == 0)
      return true;
    p = strchr(p, ',');
  }
  return false;
}

static bool version_supported(const char *v) {
  static const char *const versions[DG__MCP_NVERSIONS] = DG_MCP_VERSIONS;
  for (size_t i = 0; i < DG__MCP_NVERSIONS; i++) {
    if (strcmp(v, versions[i]) == 0)
      return true;
  }
  return false;
}

static void rpc_error(dg_http_request_t *req, int status, int code, const char *message) {
  json_t *body = dg__mcp_error(NULL, code, "%s", message);
  dg_buf_t out;
  dg_buf_init(&out, 4096 + strlen(message));
  dg__mcp_dump(body, &out);
  json_decref(body);
  dg_http_respond(req, status, &ct_json, 1, out.data, out.len);
  dg_buf_free(&out);
}

static int authenticate(dg_mcp_server_t *s, dg_http_request_t *req, const dg_catalog_t *cat,
                        dg_arena_t *arena, const dg_principal_t **out) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  const char *authz = dg_http_request_header(req, "Authorization");
  /* The admit callback checked this request's token when its head came:
   * its caller is copied (into arena, which may outlive the request). */
  if (dg_auth_principal_copy(cat, dg_http_request_admitted(req), arena, out) == 0)
    return 0;
  int rc = dg_auth_authenticate_seen(s->tokens, cat, authz, arena, out, &err);
  /* A request refused at its head (its token was not valid then) stays
   * refused: its body was never read. */
  if (rc == 0 && dg_http_request_body_refused(req))
    rc = dg_errctx_set(&err, DG_EAUTH, "Authorization", "authentication required");
  if (rc != 0)
    dg__mcp_http_unauthorized(s, req, dg__mcp_bearer_given(authz),
                              err.message[0] ? err.message : "authentication required");
  return rc;
}

static void session_not_found(dg_http_request_t *req) {
  rpc_error(req, 404, DG__RPC_SESSION_NOT_FOUND,
            "Session not found: it ended or expired; send initialize to start a new one");
}

static void too_many_sessions(dg_http_request_t *req) {
  rpc_error(req, 503, DG__RPC_SERVER_BUSY,
            "Service Unavailable: too many sessions; try again later");
}

static bool has_session_id(dg_http_request_t *req) {
  if (dg_http_request_header(req, "Mcp-Session-Id") != NULL)
    return true;
  rpc_error(req, 400, DG__RPC_BAD_TRANSPORT,
            "Bad Request: the Mcp-Session-Id header is required; send initialize first");
  return false;
}

/* The session named by Mcp-Session-Id, bound to principal, held here or
 * taken over from another worker; answers 400, 404 or 503 and returns
 * NULL otherwise. */
static dg__mcp_session_t *session_of(dg_mcp_server_t *s, dg_http_request_t *req,
                                     const dg_principal_t *p) {
  if (!has_session_id(req))
    return NULL;
  const char *sid = dg_http_request_header(req, "Mcp-Session-Id");
  dg__mcp_session_t *ss = NULL;
  const char *version = dg_http_request_header(req, "MCP-Protocol-Version");
  int rc = dg__mcp_session_open(s, sid, dg_principal_name(p), version, &ss);
  if (rc == DG_EBUSY)
    too_many_sessions(req);
  else if (rc != 0)
    session_not_found(req);
  return ss;
}

/* ---- Replies -------------------------------------------------------------------- */

static void sse_event(dg_buf_t *out, dg__mcp_session_t *ss, const json_t *msg) {
  dg_buf_appendf(out, "id: %llu\nevent: message\ndata: ", (unsigned long long)++ss->event_seq);
  dg__mcp_dump(msg, out);
  dg_buf_append_str(out, "\n\n");
}

static void stream_finish(dg__mcp_exchange_t *ex, http_ex_t *hx, const json_t *reply) {
  dg_buf_t out;
  dg_buf_init(&out, dg__mcp_reply_limit(ex));
  if (reply != NULL)
    sse_event(&out, ex->session, reply);
  int rc = out.len > 0 ? dg_http_stream_write(hx->req, out.data, out.len) : 0;
  if (rc == DG_E2BIG) {
    /* The client reads slowly: the final event waits for on_drain. */
    hx->tail = dg_buf_steal(&out, &hx->tail_len);
    dg__mcp_exchange_ref(ex);
    return;
  }
  dg_buf_free(&out);
  dg_http_stream_end(hx->req);
  hx->req = NULL;
}

static int reply_status(const json_t *reply) {
  json_t *err = json_object_get(reply, "error");
  bool anonymous = json_is_null(json_object_get(reply, "id"));
  return err != NULL && anonymous ? 400 : 200;
}

static void respond_reply(dg__mcp_exchange_t *ex, http_ex_t *hx, const json_t *reply,
                          bool with_session) {
  dg_http_header_t headers[REPLY_HEADERS] = {ct_json};
  size_t n = 1;
  if (with_session)
    headers[n++] = (dg_http_header_t){"Mcp-Session-Id", ex->session->id};
  if (reply == NULL) {
    dg_http_respond(hx->req, 202, headers + 1, n - 1, "", 0);
    return;
  }
  dg_buf_t out;
  dg_buf_init(&out, dg__mcp_reply_limit(ex));
  if (dg__mcp_dump(reply, &out) != 0) {
    rpc_error(hx->req, 500, DG__RPC_INTERNAL, "Internal error: the reply is too large");
  } else {
    dg_http_respond(hx->req, reply_status(reply), headers, n, out.data, out.len);
  }
  dg_buf_free(&out);
}

static int begin_stream(dg__mcp_session_t *ss, dg_http_request_t *req);

static bool holds_request(const dg__mcp_exchange_t *ex) {
  for (size_t i = 0; i < ex->nslots; i++) {
    if (ex->slots[i].id != NULL)
      return true;
  }
  return false;
}

/* The POST of a request whose response will not come (the client sent
 * notifications/cancelled for it): 202 is only for notifications and
 * responses, and the cancelled request gets no response (MCP
 * "Cancellation"), so a client that accepts SSE gets an event stream that
 * ends with no event; one that takes JSON only gets a JSON-RPC error. */
static void respond_cancelled(dg__mcp_exchange_t *ex, http_ex_t *hx) {
  const char *accept = dg_http_request_header(hx->req, "Accept");
  if (accept != NULL && dg__mcp_lists_token(accept, "text/event-stream") &&
      begin_stream(ex->session, hx->req) == 0) {
    dg_http_stream_end(hx->req);
    return;
  }
  json_t *body = dg__mcp_error(ex->nslots == 1 ? ex->slots[0].id : NULL, DG__RPC_CANCELLED,
                               "Request cancelled: the client sent notifications/cancelled");
  dg_buf_t out;
  dg_buf_init(&out, 4096);
  dg__mcp_dump(body, &out);
  json_decref(body);
  dg_http_respond(hx->req, 200, &ct_json, 1, out.data, out.len);
  dg_buf_free(&out);
}

static void http_reply(dg__mcp_exchange_t *ex, json_t *reply) {
  http_ex_t *hx = ex->data;
  if (hx->req == NULL)
    return;
  if (reply == NULL && !hx->streaming && holds_request(ex)) {
    respond_cancelled(ex, hx);
    hx->req = NULL;
    return;
  }
  /* An initialize that failed leaves no session behind. */
  bool failed_init = hx->created_session && json_object_get(reply, "error") != NULL;
  if (hx->streaming)
    stream_finish(ex, hx, reply);
  else
    respond_reply(ex, hx, reply, ex->session->open && !failed_init);
  if (!hx->streaming)
    hx->req = NULL;
  if (failed_init)
    dg__mcp_session_revoke(ex->session);
}

static void http_notify(dg__mcp_exchange_t *ex, json_t *note) {
  http_ex_t *hx = ex->data;
  if (hx->req == NULL || !hx->streaming)
    return;
  dg_buf_t out;
  dg_buf_init(&out, dg__mcp_reply_limit(ex));
  sse_event(&out, ex->session, note);
  /* Progress is advisory: when the client does not keep up it is dropped. */
  dg_http_stream_write(hx->req, out.data, out.len);
  dg_buf_free(&out);
}

static int http_can_notify(dg__mcp_exchange_t *ex) {
  http_ex_t *hx = ex->data;
  if (hx->req == NULL)
    return DG_ECLOSED;
  if (!hx->streaming)
    return DG_ENOTSUP;
  size_t max = ex->limits.max_write_buffer;
  return dg_http_stream_pending(hx->req) > max / 2 ? DG_E2BIG : 0;
}

static void http_abort(dg__mcp_exchange_t *ex) {
  http_ex_t *hx = ex->data;
  if (hx->req == NULL)
    return;
  if (hx->streaming)
    dg_http_stream_end(hx->req);
  else if (ex->server->closing)
    rpc_error(hx->req, 503, DG__RPC_SERVER_BUSY, "the server is shutting down");
  else
    rpc_error(hx->req, 404, DG__RPC_SESSION_NOT_FOUND, "Session not found: the session ended");
  hx->req = NULL;
}

const dg__mcp_transport_t dg__mcp_http_transport = {
    .name = "http",
    .reply = http_reply,
    .notify = http_notify,
    .can_notify = http_can_notify,
    .abort = http_abort,
};

static void on_post_abort(dg_http_request_t *req, void *data) {
  dg__mcp_exchange_t *ex = data;
  http_ex_t *hx = ex->data;
  hx->req = NULL;
  if (hx->tail != NULL) {
    free(hx->tail);
    hx->tail = NULL;
    dg__mcp_exchange_unref(ex);
    return;
  }
  dg__mcp_exchange_gone(ex);
}

static void on_post_drain(dg_http_request_t *req, void *data) {
  dg__mcp_exchange_t *ex = data;
  http_ex_t *hx = ex->data;
  if (hx->tail == NULL || dg_http_stream_write(req, hx->tail, hx->tail_len) == DG_E2BIG)
    return;
  free(hx->tail);
  hx->tail = NULL;
  dg_http_stream_end(req);
  hx->req = NULL;
  dg__mcp_exchange_unref(ex);
}

/* ---- POST ------------------------------------------------------------------------ */

static bool post_checks(dg_http_request_t *req) {
  const char *type = dg_http_request_header(req, "Content-Type");
  if (type == NULL || !dg__mcp_lists_token(type, "application/json")) {
    rpc_error(req, 415, DG__RPC_UNSUPPORTED_MEDIA,
              "Unsupported Media Type: the body must be application/json");
    return false;
  }
  const char *v = dg_http_request_header(req, "MCP-Protocol-Version");
  if (v != NULL && !version_supported(v)) {
    rpc_error(req, 400, DG__RPC_BAD_TRANSPORT,
              "Bad Request: unsupported MCP-Protocol-Version; supported: 2025-11-25, "
              "2025-06-18, 2025-03-26, 2024-11-05");
    return false;
  }
  return true;
}

/* The message of the body; a message that holds what it may not is
 * returned too, and the exchange answers its requests with the error. */
static json_t *parse_body(dg_http_request_t *req, dg__mcp_exchange_t *ex) {
  size_t len = 0;
  const char *body = dg_http_request_body(req, &len);
  char text[256];
  int code;
  json_t *msg = dg__mcp_parse(body, len, &code, text, sizeof(text));
  if (msg == NULL) {
    rpc_error(req, 400, code, text);
    return NULL;
  }
  if (code != 0)
    dg__mcp_exchange_refuse(ex, code, text);
  if (code != 0 && ex->refusal == NULL) {
    json_decref(msg);
    rpc_error(req, 500, DG__RPC_INTERNAL, "Internal error: out of memory");
    return NULL;
  }
  return msg;
}

/* Finds the session, or creates one for an initialize without a session. */
static dg__mcp_session_t *post_session(dg_mcp_server_t *s, dg_http_request_t *req,
                                       const dg__mcp_exchange_t *ex, const json_t *msg,
                                       bool *created) {
  *created = false;
  if (dg_http_request_header(req, "Mcp-Session-Id") != NULL ||
      !dg__mcp_is_request(msg, "initialize"))
    return session_of(s, req, ex->principal);
  dg__mcp_session_t *ss;
  int rc = dg__mcp_session_new_http(s, dg_principal_name(ex->principal), &ss);
  if (rc == DG_EBUSY)
    too_many_sessions(req);
  else if (rc != 0)
    rpc_error(req, 500, DG__RPC_INTERNAL, "Internal error: cannot create a session");
  if (rc != 0)
    return NULL;
  *created = true;
  return ss;
}

static int begin_stream(dg__mcp_session_t *ss, dg_http_request_t *req) {
  dg_http_header_t headers[] = {{"Content-Type", "text/event-stream"},
                                {"Cache-Control", "no-cache"},
                                {"Mcp-Session-Id", ss->id}};
  return dg_http_stream_begin(req, 200, headers, DG_ARRAY_SIZE(headers));
}

static void post_start(dg__mcp_exchange_t *ex, dg_http_request_t *req, dg__mcp_session_t *ss,
                       json_t *msg, bool created) {
  http_ex_t *hx = dg_arena_calloc(ex->arena, 1, sizeof(*hx));
  if (hx == NULL) {
    rpc_error(req, 500, DG__RPC_INTERNAL, "Internal error: out of memory");
    json_decref(msg);
    dg__mcp_exchange_unref(ex);
    return;
  }
  hx->req = req;
  hx->created_session = created;
  dg__mcp_exchange_bind(ex, ss, &dg__mcp_http_transport, hx);
  const char *accept = dg_http_request_header(req, "Accept");
  if (accept != NULL && dg__mcp_lists_token(accept, "text/event-stream") &&
      (dg__mcp_wants_progress(msg) || dg__mcp_may_elicit(ex, msg))) {
    int rc = begin_stream(ss, req);
    if (rc == DG_ECLOSED) { /* the client is gone and the request released */
      hx->req = NULL;
      json_decref(msg);
      dg__mcp_exchange_gone(ex);
      return;
    }
    hx->streaming = rc == 0;
  }
  dg_http_request_events_t events = {on_post_abort, on_post_drain, ex};
  dg_http_request_watch(req, &events);
  dg__mcp_exchange_run(ex, msg);
}

static void http_post(dg_mcp_server_t *s, dg_http_request_t *req) {
  dg__mcp_exchange_t *ex = dg__mcp_exchange_new(s);
  if (ex == NULL) {
    rpc_error(req, 500, DG__RPC_INTERNAL, "Internal error: out of memory");
    return;
  }
  ex->request_id = dg_arena_strdup(ex->arena, dg_http_request_id(req));
  const char *trace = dg_http_request_trace_id(req);
  ex->trace_id = trace != NULL ? dg_arena_strdup(ex->arena, trace) : NULL;
  json_t *msg = NULL;
  dg__mcp_session_t *ss = NULL;
  bool created = false;
  if (authenticate(s, req, ex->cat, ex->arena, &ex->principal) != 0 || !post_checks(req))
    goto drop;
  msg = parse_body(req, ex);
  if (msg == NULL)
    goto drop;
  ss = post_session(s, req, ex, msg, &created);
  if (ss == NULL)
    goto drop;
  post_start(ex, req, ss, msg, created);
  return;
drop:
  json_decref(msg);
  dg__mcp_exchange_unref(ex);
}

/* ---- GET: the session's SSE stream -------------------------------------------- */

static void on_sse_closed(uv_handle_t *handle) {
  dg__mcp_sse_t *sse = handle->data;
  dg_mcp_server_t *s = sse->session->server;
  s->nconns--;
  dg__mcp_session_unref(sse->session);
  free(sse);
}

static void sse_release(dg__mcp_sse_t *sse) {
  if (sse->session->sse == sse)
    sse->session->sse = NULL;
  sse->req = NULL;
  uv_close((uv_handle_t *)&sse->keepalive, on_sse_closed);
}

void dg__mcp_sse_close(dg__mcp_sse_t *sse) {
  if (sse->req != NULL)
    dg_http_stream_end(sse->req);
  sse_release(sse);
}

static void on_sse_abort(dg_http_request_t *req, void *data) {
  sse_release(data);
}

/* A comment line keeps proxies from closing an idle stream. */
static void on_keepalive(uv_timer_t *timer) {
  dg__mcp_sse_t *sse = timer->data;
  static const char ping[] = ": keep-alive\n\n";
  if (sse->req != NULL)
    dg_http_stream_write(sse->req, ping, sizeof(ping) - 1);
}

static void sse_open(dg_mcp_server_t *s, dg_http_request_t *req, dg__mcp_session_t *ss) {
  dg__mcp_sse_t *sse = calloc(1, sizeof(*sse));
  int rc = sse != NULL ? begin_stream(ss, req) : DG_ENOMEM;
  if (rc != 0) {
    free(sse);
    if (rc != DG_ECLOSED) /* otherwise the request was released with its connection */
      dg__mcp_http_error(req, 500, "cannot open the event stream");
    return;
  }
  sse->session = ss;
  sse->req = req;
  dg__mcp_session_ref(ss);
  ss->sse = sse;
  s->nconns++;
  uv_timer_init(s->loop, &sse->keepalive);
  sse->keepalive.data = sse;
  uv_timer_start(&sse->keepalive, on_keepalive, DG__MCP_SSE_KEEPALIVE_MS, DG__MCP_SSE_KEEPALIVE_MS);
  dg_http_request_events_t events = {on_sse_abort, NULL, sse};
  dg_http_request_watch(req, &events);
}

static void http_get(dg_mcp_server_t *s, dg_http_request_t *req) {
  const char *accept = dg_http_request_header(req, "Accept");
  if (accept == NULL || !dg__mcp_lists_token(accept, "text/event-stream")) {
    dg_http_header_t headers[] = {ct_json, {"Allow", "GET, POST, DELETE, OPTIONS"}};
    static const char body[] = "{\"error\":\"GET /mcp needs Accept: text/event-stream\"}";
    dg_http_respond(req, 405, headers, DG_ARRAY_SIZE(headers), body, sizeof(body) - 1);
    return;
  }
  const dg_principal_t *p;
  if (authenticate(s, req, s->cat, dg_http_request_arena(req), &p) != 0)
    return;
  dg__mcp_session_t *ss = session_of(s, req, p);
  if (ss == NULL)
    return;
  if (ss->sse != NULL) {
    rpc_error(req, 409, DG__RPC_CONFLICT,
              "Conflict: this session already has an open event stream");
    return;
  }
  dg__mcp_session_touch(ss);
  sse_open(s, req, ss);
}

/* ---- DELETE and the rest ------------------------------------------------------- */

/* DELETE ends the session on every worker, whether or not this one holds
 * it. */
static void http_delete(dg_mcp_server_t *s, dg_http_request_t *req) {
  const dg_principal_t *p;
  if (authenticate(s, req, s->cat, dg_http_request_arena(req), &p) != 0 || !has_session_id(req))
    return;
  const char *sid = dg_http_request_header(req, "Mcp-Session-Id");
  if (dg__mcp_session_delete(s, sid, dg_principal_name(p)) != 0) {
    session_not_found(req);
    return;
  }
  dg_http_respond(req, 204, NULL, 0, "", 0);
}

void dg__mcp_http_mcp(dg_mcp_server_t *s, dg_http_request_t *req) {
  if (!dg__mcp_origin_allowed(&s->limits, dg_http_request_header(req, "Origin"))) {
    dg__mcp_http_error(req, 403, "Forbidden: this Origin is not in server.allowedOrigins");
    return;
  }
  /* A request that asks for a WebSocket is refused as a bad handshake when
   * it is not a valid one, rather than answered as a plain GET. */
  const char *upgrade = dg_http_request_header(req, "Upgrade");
  if (dg_ws_is_upgrade(req) || (upgrade != NULL && dg__mcp_lists_token(upgrade, "websocket"))) {
    dg__mcp_ws_upgrade(s, req);
    return;
  }
  const char *method = dg_http_request_method(req);
  if (strcmp(method, "POST") == 0) {
    http_post(s, req);
  } else if (strcmp(method, "GET") == 0) {
    http_get(s, req);
  } else if (strcmp(method, "DELETE") == 0) {
    http_delete(s, req);
  } else {
    dg_http_header_t headers[] = {ct_json, {"Allow", "GET, POST, DELETE, OPTIONS"}};
    static const char body[] = "{\"error\":\"method not allowed; use GET, POST or DELETE\"}";
    dg_http_respond(req, 405, headers, DG_ARRAY_SIZE(headers), body, sizeof(body) - 1);
  }
}
