/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* MCP over WebSocket at /mcp (subprotocol "mcp"): each text message is
 * one JSON-RPC message (or a batch at 2025-03-26), each outgoing message
 * one text message. One session per connection, without Mcp-Session-Id.
 *
 * The bearer token is checked at the upgrade and kept, so that every
 * message is authenticated again against the catalog snapshot it runs on
 * (a reload that removes a user applies to open connections). Browsers
 * cannot set headers on a WebSocket, so the token may also come as the
 * access_token query parameter. Per-connection state is this small struct
 * and the session: an idle connection holds no arena and no buffer. */
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

#define TOKEN_MAX 8192

typedef struct ws_conn {
  dg_ws_t *ws;                /* NULL once closed */
  dg__mcp_session_t *session; /* reference held until on_close */
  char *authorization;        /* "Bearer <token>" */
  bool closing;               /* dg_ws_close was called */
} ws_conn_t;

static void ws_close(ws_conn_t *conn, int code, const char *reason) {
  if (conn->ws == NULL || conn->closing)
    return;
  conn->closing = true;
  dg_ws_close(conn->ws, code, reason);
}

static void ws_send(dg__mcp_exchange_t *ex, json_t *msg) {
  ws_conn_t *conn = ex->data;
  if (msg == NULL || conn->ws == NULL || conn->closing)
    return;
  dg_buf_t out;
  dg_buf_init(&out, dg__mcp_reply_limit(ex));
  int rc = dg__mcp_dump(msg, &out);
  if (rc == 0)
    rc = dg_ws_send_text(conn->ws, out.data, out.len);
  dg_buf_free(&out);
  if (rc == DG_E2BIG) {
    /* The client is not reading: close rather than queue without end. */
    ws_close(conn, 1008, "client is not reading its messages");
    dg__mcp_session_end(conn->session);
  }
}

/* Progress is advisory: when the client does not keep up it is dropped,
 * and the connection stays open for the reply. */
static void ws_notify(dg__mcp_exchange_t *ex, json_t *note) {
  ws_conn_t *conn = ex->data;
  if (conn->ws == NULL || conn->closing)
    return;
  dg_buf_t out;
  dg_buf_init(&out, dg__mcp_reply_limit(ex));
  if (dg__mcp_dump(note, &out) == 0)
    dg_ws_send_text(conn->ws, out.data, out.len);
  dg_buf_free(&out);
}

static int ws_can_notify(dg__mcp_exchange_t *ex) {
  ws_conn_t *conn = ex->data;
  if (conn->ws == NULL || conn->closing)
    return DG_ECLOSED;
  return dg_ws_pending(conn->ws) > ex->limits.max_write_buffer / 2 ? DG_E2BIG : 0;
}

static void ws_reply(dg__mcp_exchange_t *ex, json_t *reply) {
  ws_send(ex, reply);
}

static void ws_session_close(dg__mcp_session_t *ss) {
  ws_close(ss->transport_data, 1001, "server closing");
}

static const dg__mcp_transport_t ws_transport = {
    .name = "ws",
    .reply = ws_reply,
    .notify = ws_notify,
    .can_notify = ws_can_notify,
    .close = ws_session_close,
};

static void on_message(dg_ws_t *ws, const char *data, size_t len, void *user) {
  ws_conn_t *conn = user;
  dg__mcp_session_t *ss = conn->session;
  if (!ss->open || conn->closing)
    return;
  dg__mcp_exchange_t *ex = dg__mcp_exchange_new(ss->server);
  if (ex == NULL) {
    ws_close(conn, 1011, "out of memory");
    return;
  }
  dg__mcp_exchange_bind(ex, ss, &ws_transport, conn);
  dg_errctx_t err;
  dg_errctx_clear(&err);
  if (dg_auth_authenticate_seen(ss->server->tokens, ex->cat, conn->authorization, ex->arena,
                                &ex->principal, &err) != 0) {
    dg__mcp_exchange_refuse_text(ex, DG__RPC_UNAUTHORIZED, err.message, data, len);
    return;
  }
  dg__mcp_exchange_run_text(ex, data, len);
}

static void on_close(dg_ws_t *ws, int code, void *user) {
  ws_conn_t *conn = user;
  dg__mcp_session_t *ss = conn->session;
  dg_mcp_server_t *s = ss->server;
  conn->ws = NULL;
  s->nconns--;
  dg__mcp_session_end(ss);
  dg__mcp_session_unref(ss);
  free(conn->authorization);
  free(conn);
}

/* The value of query parameter name (not decoded), or NULL. */
static const char *find_param(const char *query, const char *name, size_t *len) {
  size_t nlen = strlen(name);
  const char *p = query;
  while (p != NULL && *p != '\0') {
    size_t n = strcspn(p, "&");
    if (n > nlen && strncmp(p, name, nlen) == 0 && p[nlen] == '=') {
      *len = n - nlen - 1;
      return p + nlen + 1;
    }
    p = p[n] == '&' ? p + n + 1 : NULL;
  }
  return NULL;
}

/* Percent-decodes n bytes of v into out (room for n + 1); false when an
 * escape is malformed. */
static bool percent_decode(const char *v, size_t n, char *out) {
  size_t o = 0;
  for (size_t i = 0; i < n; i++) {
    if (v[i] != '%') {
      out[o++] = v[i] == '+' ? ' ' : v[i];
      continue;
    }
    int hi = i + 1 < n ? dg_hex_value((unsigned char)v[i + 1]) : -1;
    int lo = hi >= 0 && i + 2 < n ? dg_hex_value((unsigned char)v[i + 2]) : -1;
    if (lo < 0)
      return false;
    out[o++] = (char)(hi * 16 + lo);
    i += 2;
  }
  out[o] = '\0';
  return true;
}

/* The access_token query parameter as an Authorization value; NULL when
 * absent or malformed. */
static char *query_token(dg_arena_t *arena, const char *query) {
  size_t n = 0;
  const char *v = find_param(query, "access_token", &n);
  if (v == NULL || n == 0 || n > TOKEN_MAX)
    return NULL;
  char *out = dg_arena_alloc(arena, n + 8);
  if (out == NULL)
    return NULL;
  memcpy(out, "Bearer ", 7);
  return percent_decode(v, n, out + 7) ? out : NULL;
}

static ws_conn_t *conn_new(dg_mcp_server_t *s, const char *authorization) {
  ws_conn_t *conn = calloc(1, sizeof(*conn));
  char *copy = strdup(authorization);
  if (conn == NULL || copy == NULL || dg__mcp_session_new(s, &ws_transport, conn, &conn->session)) {
    free(conn);
    free(copy);
    return NULL;
  }
  conn->authorization = copy;
  dg__mcp_session_ref(conn->session); /* the connection's own reference */
  return conn;
}

/* The frames carry MCP only for a client that asked for it: one that offers
 * no subprotocol, or another one, would not understand them. */
static bool offers_mcp(const dg_http_request_t *req) {
  const char *offered = dg_http_request_header(req, "Sec-WebSocket-Protocol");
  return offered != NULL && dg__mcp_lists_token(offered, "mcp");
}

void dg__mcp_ws_upgrade(dg_mcp_server_t *s, dg_http_request_t *req) {
  dg_arena_t *arena = dg_http_request_arena(req);
  const char *authz = dg_http_request_header(req, "Authorization");
  if (authz == NULL)
    authz = query_token(arena, dg_http_request_query(req));
  const dg_principal_t *p;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  if (dg_auth_authenticate_seen(s->tokens, s->cat, authz, arena, &p, &err) != 0) {
    dg__mcp_http_unauthorized(s, req, dg__mcp_bearer_given(authz),
                              err.message[0] ? err.message : "authentication required");
    return;
  }
  if (!offers_mcp(req)) {
    dg__mcp_http_error(req, 400,
                       "Bad Request: a WebSocket at /mcp needs the subprotocol 'mcp' "
                       "(Sec-WebSocket-Protocol: mcp)");
    return;
  }
  ws_conn_t *conn = conn_new(s, authz);
  if (conn == NULL) {
    dg__mcp_http_error(req, 500, "out of memory");
    return;
  }
  static const dg_ws_callbacks_t callbacks = {.on_message = on_message, .on_close = on_close};
  conn->ws = dg_ws_accept(req, "mcp", &callbacks, conn);
  if (conn->ws == NULL) {
    conn->closing = true;
    dg__mcp_session_end(conn->session);
    dg__mcp_session_unref(conn->session);
    free(conn->authorization);
    free(conn);
    return;
  }
  s->nconns++;
}
