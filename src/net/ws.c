/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* WebSocket connections (RFC 6455) after an HTTP upgrade: the handshake
 * answer, message reassembly under max_ws_message_bytes, UTF-8 checks,
 * ping/pong, keep-alive pings and the close handshake. Frames are parsed
 * by the codec in ws_codec.c. An idle WebSocket holds its connection, this
 * small struct and nothing else: the parser and the message buffer are
 * empty between messages. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/internal.h"

#define OP_CONT 0
#define OP_TEXT 1
#define OP_BINARY 2
#define OP_CLOSE 8
#define OP_PING 9
#define OP_PONG 10

#define CLOSE_NORMAL 1000
#define CLOSE_GOING_AWAY 1001
#define CLOSE_PROTOCOL 1002
#define CLOSE_UNSUPPORTED 1003
#define CLOSE_NO_STATUS 1005
#define CLOSE_ABNORMAL 1006
#define CLOSE_BAD_DATA 1007
#define CLOSE_TOO_BIG 1009

typedef enum ws_state {
  WS_OPEN,
  WS_CLOSE_SENT, /* our close frame is out; waiting for the peer's */
  WS_CLOSING     /* handshake over or failed; the TCP connection is ending */
} ws_state_t;

struct dg_ws {
  dg__conn_t *conn;
  dg_ws_parser_t parser;
  dg_buf_t message;  /* fragments of the message being reassembled */
  dg_buf_t leftover; /* bytes that arrived with the upgrade request */
  dg_ws_callbacks_t cb;
  void *user;
  ws_state_t state;
  int close_code;
  bool in_message;
  bool ping_outstanding;
  uint64_t last_rx_ms;
  uint64_t close_deadline_ms;
};

static dg_ws_t *ws_of(dg__conn_t *c) {
  return c->proto == &dg__ws_proto ? c->proto_state : NULL;
}

static void set_state(dg_ws_t *ws, ws_state_t to) {
  /* States only move forward. */
  if (to <= ws->state) {
    dg_logf(DG_LOG_ERROR, "ws_state", "illegal WebSocket state change %d -> %d", ws->state, to);
    abort();
  }
  ws->state = to;
}

static int send_frame(dg_ws_t *ws, int opcode, const void *data, size_t len) {
  unsigned char head[10];
  size_t n = dg_ws_frame_header(head, true, opcode, len);
  uv_buf_t parts[2] = {uv_buf_init((char *)head, (unsigned)n),
                       uv_buf_init((char *)data, (unsigned)len)};
  return dg__conn_writev(ws->conn, parts, len > 0 ? 2 : 1);
}

static int send_close(dg_ws_t *ws, int code, const char *reason) {
  unsigned char payload[125];
  size_t n = 0;
  if (code != CLOSE_NO_STATUS) {
    payload[0] = (unsigned char)(code >> 8);
    payload[1] = (unsigned char)code;
    n = 2;
    size_t rlen = reason != NULL ? strlen(reason) : 0;
    if (rlen > sizeof(payload) - 2)
      rlen = sizeof(payload) - 2;
    if (rlen > 0 && dg_utf8_valid((const unsigned char *)reason, rlen))
      memcpy(payload + 2, reason, rlen);
    else
      rlen = 0;
    n += rlen;
  }
  return send_frame(ws, OP_CLOSE, payload, n);
}

/* Fails the connection (RFC 6455 7.1.7): close frame, then TCP close. */
static void ws_fail(dg_ws_t *ws, int code) {
  if (ws->state == WS_CLOSING)
    return;
  if (ws->state == WS_OPEN)
    send_close(ws, code, NULL);
  ws->close_code = code;
  set_state(ws, WS_CLOSING);
  dg__conn_finish(ws->conn);
}

static void ws_arm(dg_ws_t *ws) {
  dg__conn_t *c = ws->conn;
  uint64_t interval = c->server->limits.ws_ping_interval_ms;
  uint64_t now = dg_now_ms();
  if (!dg__conn_is_open(c))
    return;
  if (ws->leftover.len > 0)
    dg__conn_timer(c, 0);
  else if (ws->state == WS_CLOSE_SENT)
    dg__conn_timer(c, ws->close_deadline_ms > now ? ws->close_deadline_ms - now : 0);
  else if (ws->state == WS_OPEN && interval > 0)
    dg__conn_timer(c, interval);
  else
    dg__conn_timer_stop(c);
}

/* ---- frames ----------------------------------------------------------- */

static int deliver(dg_ws_t *ws, const unsigned char *data, size_t len) {
  if (!dg_utf8_valid(data, len)) {
    ws_fail(ws, CLOSE_BAD_DATA);
    return DG_EPROTO;
  }
  if (ws->cb.on_message != NULL)
    ws->cb.on_message(ws, (const char *)data, len, ws->user);
  return 0;
}

static int data_frame(dg_ws_t *ws, const dg_ws_frame_t *f) {
  if (ws->state != WS_OPEN)
    return 0; /* after our close frame, data is ignored */
  /* A new message inside a fragmented one is a protocol error (RFC 6455
   * 5.4), whatever its type; only a well-placed binary message is 1003. */
  if ((f->opcode == OP_CONT) != ws->in_message) {
    ws_fail(ws, CLOSE_PROTOCOL); /* a continuation out of place, or a new message too early */
    return DG_EPROTO;
  }
  if (f->opcode == OP_BINARY) {
    ws_fail(ws, CLOSE_UNSUPPORTED);
    return DG_EPROTO;
  }
  if (f->fin && !ws->in_message)
    return deliver(ws, f->payload, f->len); /* whole in one frame: no copy */
  int rc = dg_buf_append(&ws->message, f->payload, f->len);
  if (rc != 0) {
    ws_fail(ws, CLOSE_TOO_BIG);
    return DG_E2BIG;
  }
  ws->in_message = !f->fin;
  if (!f->fin)
    return 0;
  rc = deliver(ws, (const unsigned char *)ws->message.data, ws->message.len);
  dg_buf_free(&ws->message);
  return rc;
}

static bool close_code_valid(int code) {
  return (code >= 1000 && code <= 1003) || (code >= 1007 && code <= 1014) ||
         (code >= 3000 && code <= 4999);
}

static int close_frame(dg_ws_t *ws, const dg_ws_frame_t *f) {
  int code = CLOSE_NO_STATUS;
  if (f->len == 1) {
    ws_fail(ws, CLOSE_PROTOCOL);
    return DG_EPROTO;
  }
  if (f->len >= 2) {
    code = (f->payload[0] << 8) | f->payload[1];
    if (!close_code_valid(code)) {
      ws_fail(ws, CLOSE_PROTOCOL);
      return DG_EPROTO;
    }
    if (!dg_utf8_valid(f->payload + 2, f->len - 2)) {
      ws_fail(ws, CLOSE_BAD_DATA);
      return DG_EPROTO;
    }
  }
  if (ws->state == WS_OPEN) {
    send_close(ws, code, NULL); /* echo the peer's status */
    ws->close_code = code;
  }
  set_state(ws, WS_CLOSING);
  /* The server closes the TCP connection first (RFC 6455 7.1.1). */
  dg__conn_finish(ws->conn);
  return DG_ECLOSED;
}

static int on_frame(const dg_ws_frame_t *f, void *user) {
  dg_ws_t *ws = user;
  if (ws->state == WS_CLOSING || !dg__conn_is_open(ws->conn))
    return DG_ECLOSED;
  switch (f->opcode) {
  case OP_CLOSE:
    return close_frame(ws, f);
  case OP_PING:
    if (ws->state == WS_OPEN)
      send_frame(ws, OP_PONG, f->payload, f->len);
    return 0;
  case OP_PONG:
    ws->ping_outstanding = false;
    return 0;
  default:
    return data_frame(ws, f);
  }
}

static void parse(dg_ws_t *ws, const char *data, size_t len) {
  int code = CLOSE_PROTOCOL;
  int64_t rc = dg_ws_parse(&ws->parser, (const unsigned char *)data, len, on_frame, ws, &code);
  if (rc < 0 && ws->state != WS_CLOSING)
    ws_fail(ws, code); /* the codec refused the frame */
}

/* ---- protocol hooks --------------------------------------------------- */

static void ws_on_data(dg__conn_t *c, const char *data, size_t len) {
  dg_ws_t *ws = ws_of(c);
  ws->last_rx_ms = dg_now_ms();
  if (ws->state == WS_CLOSING)
    return;
  if (ws->leftover.len > 0) {
    /* Earlier bytes wait for the timer; keep the order. */
    if (dg_buf_append(&ws->leftover, data, len) != 0)
      ws_fail(ws, CLOSE_TOO_BIG);
    return;
  }
  parse(ws, data, len);
}

static void ws_on_timer(dg__conn_t *c) {
  dg_ws_t *ws = ws_of(c);
  if (ws->leftover.len > 0) {
    dg_buf_t early = ws->leftover;
    dg_buf_init(&ws->leftover, 0);
    parse(ws, early.data, early.len);
    dg_buf_free(&early);
  } else if (ws->state == WS_CLOSE_SENT) {
    dg__conn_close(c); /* the peer never answered our close */
    return;
  } else if (ws->state == WS_OPEN) {
    if (ws->ping_outstanding) {
      ws->close_code = CLOSE_ABNORMAL;
      dg__conn_close(c); /* no pong within the interval */
      return;
    }
    uint64_t interval = c->server->limits.ws_ping_interval_ms;
    if (interval > 0 && dg_now_ms() - ws->last_rx_ms >= interval) {
      ws->ping_outstanding = true;
      send_frame(ws, OP_PING, NULL, 0);
    }
  }
  ws_arm(ws);
}

static void ws_on_eof(dg__conn_t *c) {
  dg__conn_close(c); /* the peer left without a close frame */
}

static void ws_on_drain(dg__conn_t *c) {
  dg_ws_t *ws = ws_of(c);
  if (ws->cb.on_drain != NULL && ws->state == WS_OPEN)
    ws->cb.on_drain(ws, ws->user);
}

static void ws_on_server_drain(dg__conn_t *c) {
  dg_ws_close(ws_of(c), CLOSE_GOING_AWAY, "server shutting down");
}

static void ws_on_closed(dg__conn_t *c) {
  dg_ws_t *ws = c->proto_state;
  c->proto_state = NULL;
  dg_metrics_gauge_add("dg_ws_connections_open", NULL, -1);
  if (ws->cb.on_close != NULL)
    ws->cb.on_close(ws, ws->close_code != 0 ? ws->close_code : CLOSE_ABNORMAL, ws->user);
  dg_ws_parser_free(&ws->parser);
  dg_buf_free(&ws->message);
  dg_buf_free(&ws->leftover);
  free(ws);
}

static size_t ws_memory(const dg__conn_t *c) {
  const dg_ws_t *ws = c->proto_state;
  return sizeof(*ws) + ws->parser.payload.cap + ws->message.cap + ws->leftover.cap;
}

const dg__proto_t dg__ws_proto = {
    .name = "websocket",
    .on_data = ws_on_data,
    .on_eof = ws_on_eof,
    .on_timer = ws_on_timer,
    .on_drain = ws_on_drain,
    .on_server_drain = ws_on_server_drain,
    .on_closed = ws_on_closed,
    .memory = ws_memory,
};

/* ---- handshake -------------------------------------------------------- */

/* True when the comma-separated list holds token (case-insensitive). */
static bool has_token(const char *list, const char *token) {
  const char *p = list;
  while (p != NULL && *p != '\0') {
    while (*p == ' ' || *p == '\t' || *p == ',')
      p++;
    const char *end = p;
    while (*end != '\0' && *end != ',')
      end++;
    const char *last = end;
    while (last > p && (last[-1] == ' ' || last[-1] == '\t'))
      last--;
    if (last > p && dg_strieq_n(p, (size_t)(last - p), token))
      return true;
    p = end;
  }
  return false;
}

static bool version_ok(const dg_http_request_t *req) {
  const char *v = dg_http_request_header(req, "Sec-WebSocket-Version");
  return v != NULL && strcmp(v, "13") == 0;
}

bool dg_ws_is_upgrade(const dg_http_request_t *req) {
  char accept[29];
  const char *upgrade = dg_http_request_header(req, "Upgrade");
  const char *connection = dg_http_request_header(req, "Connection");
  const char *key = dg_http_request_header(req, "Sec-WebSocket-Key");
  /* One key on one line (RFC 6455 4.2.1) and a Host: the HTTP layer
   * refuses an HTTP/1.1 request without one, and this says so again. */
  return strcmp(req->method, "GET") == 0 && req->http_minor >= 1 && upgrade != NULL &&
         has_token(upgrade, "websocket") && connection != NULL &&
         has_token(connection, "upgrade") && version_ok(req) && key != NULL &&
         dg_http_request_header_lines(req, "Sec-WebSocket-Key") == 1 &&
         dg_http_request_header(req, "Host") != NULL && dg_ws_accept_key(key, accept) == 0;
}

static void refuse(dg_http_request_t *req) {
  static const char bad[] = "not a valid WebSocket upgrade request\n";
  if (dg_http_request_header(req, "Sec-WebSocket-Key") != NULL && !version_ok(req)) {
    dg_http_header_t h = {"Sec-WebSocket-Version", "13"};
    dg_http_respond(req, 426, &h, 1, bad, sizeof(bad) - 1);
    return;
  }
  dg_http_respond(req, 400, NULL, 0, bad, sizeof(bad) - 1);
}

static int write_101(dg_http_request_t *req, const char *subprotocol) {
  char accept[29];
  dg_http_header_t headers[2] = {{"Sec-WebSocket-Accept", accept}, {NULL, NULL}};
  size_t n = 1;
  const char *offered = dg_http_request_header(req, "Sec-WebSocket-Protocol");
  if (dg_ws_accept_key(dg_http_request_header(req, "Sec-WebSocket-Key"), accept) != 0)
    return DG_EINVAL;
  if (subprotocol != NULL && offered != NULL && has_token(offered, subprotocol))
    headers[n++] = (dg_http_header_t){"Sec-WebSocket-Protocol", subprotocol};
  dg_buf_t head;
  dg_buf_init(&head, 4096);
  int rc = dg__http1_head(req, &head, 101, headers, n,
                          "Upgrade: websocket\r\nConnection: Upgrade\r\n", true);
  if (rc == 0)
    rc = dg__conn_write(req->conn, head.data, head.len);
  dg_buf_free(&head);
  return rc;
}

static dg_ws_t *ws_new(dg__conn_t *c, const dg_ws_callbacks_t *callbacks, void *user) {
  dg_ws_t *ws = calloc(1, sizeof(*ws));
  if (ws == NULL)
    return NULL;
  size_t max = c->server->limits.max_ws_message_bytes;
  ws->conn = c;
  ws->user = user;
  if (callbacks != NULL)
    ws->cb = *callbacks;
  ws->state = WS_OPEN;
  ws->last_rx_ms = dg_now_ms();
  dg_ws_parser_init(&ws->parser, true, max);
  dg_buf_init(&ws->message, max);
  dg_buf_init(&ws->leftover, 0);
  return ws;
}

dg_ws_t *dg_ws_accept(dg_http_request_t *req, const char *subprotocol,
                      const dg_ws_callbacks_t *callbacks, void *user) {
  if (req == NULL || req->state != DG__REQ_ACTIVE)
    return NULL;
  dg__conn_t *c = req->conn;
  if (!dg__conn_is_open(c) || !dg_ws_is_upgrade(req)) {
    refuse(req);
    return NULL;
  }
  dg_ws_t *ws = ws_new(c, callbacks, user);
  if (ws == NULL || write_101(req, subprotocol) != 0) {
    free(ws);
    dg__http1_respond_close(req, 503, NULL, 0);
    return NULL;
  }
  req->status = 101;
  dg__http1_detach(c, &ws->leftover);
  ws->leftover.max = c->server->limits.max_ws_message_bytes + 14;
  c->proto = &dg__ws_proto;
  c->proto_state = ws;
  dg_metrics_gauge_add("dg_ws_connections_open", NULL, 1);
  dg__conn_noread(c, DG__NOREAD_PROTO, false);
  ws_arm(ws);
  return ws;
}

/* ---- sending ---------------------------------------------------------- */

int dg_ws_send_text(dg_ws_t *ws, const char *data, size_t len) {
  if (ws == NULL || ws->state != WS_OPEN || !dg__conn_is_open(ws->conn))
    return DG_ECLOSED;
  if (!dg_utf8_valid((const unsigned char *)data, len))
    return DG_EINVAL;
  if (!dg__conn_can_write(ws->conn, len + 10))
    return DG_E2BIG;
  return send_frame(ws, OP_TEXT, data, len);
}

size_t dg_ws_pending(const dg_ws_t *ws) {
  return ws->conn->pending;
}

void dg_ws_close(dg_ws_t *ws, int code, const char *reason) {
  if (ws == NULL || ws->state != WS_OPEN || !dg__conn_is_open(ws->conn))
    return;
  if (!close_code_valid(code))
    code = CLOSE_NORMAL;
  send_close(ws, code, reason);
  ws->close_code = code;
  set_state(ws, WS_CLOSE_SENT);
  ws->close_deadline_ms = dg_now_ms() + DG__WS_CLOSE_WAIT_MS;
  ws_arm(ws);
}

const char *dg_ws_peer(const dg_ws_t *ws) {
  return ws->conn->peer;
}
