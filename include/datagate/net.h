/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* net: the listener, the HTTP/1.1 server (llhttp), optional TLS termination
 * (mbedTLS) and WebSocket connections (RFC 6455). net knows nothing of MCP
 * or data models: it hands complete requests to one handler and gives the
 * handler ways to answer them (whole, streamed, or upgraded).
 *
 * Threading: every function here runs on the loop thread. */
#ifndef DATAGATE_NET_H
#define DATAGATE_NET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "datagate/base.h"

/* ---- Limits ------------------------------------------------------------
 * Each is enforced per connection; over a limit the client gets the status
 * named and the connection is closed cleanly after the response. */
typedef struct dg_http_limits {
  size_t max_header_bytes;     /* request line + headers; 431, a long target 414 (default 16 KiB) */
  unsigned max_headers;        /* header count; 431 (default 64) */
  size_t max_body_bytes;       /* decoded body; 413 (default 1 MiB) */
  unsigned max_connections;    /* open connections per process; 503 (default 10000) */
  uint64_t header_timeout_ms;  /* first byte to end of headers; 408 (default 10 s) */
  uint64_t request_timeout_ms; /* end of headers to end of body; 408 (default 30 s) */
  uint64_t idle_timeout_ms;    /* keep-alive idle; closed silently (default 75 s) */
  size_t max_write_buffer;     /* queued output before reads pause (default 1 MiB) */
  unsigned max_pipelined;      /* parsed requests waiting; then reads pause (default 16) */
  size_t max_ws_message_bytes; /* reassembled WebSocket message; close 1009 (default 1 MiB) */
  uint64_t ws_ping_interval_ms; /* server pings an idle WebSocket (0 = never; default 30 s) */
  /* Memory all connections not yet admitted (see admit below) may hold
   * together, each charged its worst case at accept; over it a new
   * connection hears 503 and is closed (default 64 MiB). */
  size_t max_unadmitted_bytes;
} dg_http_limits_t;

/* Fills the defaults named above. */
void dg_http_limits_default(dg_http_limits_t *limits);

/* ---- TLS -------------------------------------------------------------- */
typedef struct dg_tls_server_config {
  const char *cert_file; /* PEM chain */
  const char *key_file;  /* PEM key */
} dg_tls_server_config_t;

/* ---- Requests ----------------------------------------------------------
 * A request is owned by the server. The handler answers it exactly once
 * with dg_http_respond, dg_http_stream_begin (then _write and _end) or
 * dg_ws_accept. Requests on one connection are handed to the handler one
 * at a time, in order; pipelined requests wait (bounded by max_pipelined),
 * so responses always leave in request order. */
typedef struct dg_http_request dg_http_request_t;

const char *dg_http_request_method(const dg_http_request_t *req); /* "GET" */
const char *dg_http_request_path(const dg_http_request_t *req);   /* without query */
const char *dg_http_request_query(const dg_http_request_t *req);  /* after '?', or "" */
/* The header with this name (case-insensitive), or NULL. Field lines with
 * the same name come joined into one list with ", " (RFC 9110 5.3). */
const char *dg_http_request_header(const dg_http_request_t *req, const char *name);
/* How many field lines had this name (0 when absent). */
unsigned dg_http_request_header_lines(const dg_http_request_t *req, const char *name);
/* The authority the request is for: an absolute-form target's, else the
 * Host field's ("" for an HTTP/1.0 request without Host). */
const char *dg_http_request_host(const dg_http_request_t *req);
const char *dg_http_request_body(const dg_http_request_t *req, size_t *len);
/* A request id: the client's X-Request-Id when it is sane, else a new GUID. */
const char *dg_http_request_id(const dg_http_request_t *req);
/* The trace id (32 hex digits) of a valid W3C traceparent header, which
 * the request's upstream calls continue; NULL without one. */
const char *dg_http_request_trace_id(const dg_http_request_t *req);
const char *dg_http_request_peer(const dg_http_request_t *req); /* "127.0.0.1:5123" */
bool dg_http_request_is_tls(const dg_http_request_t *req);
/* Per-request arena, released after the response is fully written. */
dg_arena_t *dg_http_request_arena(dg_http_request_t *req);
/* The server's user data given to dg_http_server_start. */
void *dg_http_request_server_data(const dg_http_request_t *req);
/* True when the server's admit callback refused the request: its body was
 * never read (the body is empty) and the connection closes after the
 * response. The handler answers it without acting on it (401, say). */
bool dg_http_request_body_refused(const dg_http_request_t *req);
/* What the admit callback learnt of the request (the caller it
 * authenticated, say), for the handler to use instead of finding it
 * again; NULL until set. The server never reads it. */
void dg_http_request_set_admitted(dg_http_request_t *req, const void *data);
const void *dg_http_request_admitted(const dg_http_request_t *req);

/* A header every response to req carries, whichever call gives it (CORS
 * headers, say). Copied into the request's arena; call it before the
 * answer. Returns DG_EINVAL for a name that is not a token or a value with
 * CR/LF, DG_ENOMEM. */
int dg_http_request_add_response_header(dg_http_request_t *req, const char *name,
                                        const char *value);

/* A complete response with a body (Content-Length). Returns 0, or an error if
 * the request was already answered or its connection is gone (the request
 * is still released). The server adds Date, Server, Content-Length,
 * X-Request-Id and Connection; a handler's own copies of those are dropped.
 * A header name that is not a token or a value with CR/LF is refused: the
 * client gets a 500 instead and DG_EINVAL is returned (request released).
 * The body is copied; it may live in the request's arena. */
int dg_http_respond(dg_http_request_t *req, int status, const dg_http_header_t *headers,
                    size_t nheaders, const void *body, size_t len);

/* Streamed response (chunked transfer encoding), used for SSE. The stream
 * ends with dg_http_stream_end; writes apply backpressure through
 * on_drain. Returns DG_ECLOSED when the connection is gone (the request is
 * released, as by dg_http_respond), DG_EINVAL for invalid headers (nothing
 * sent; the request is still unanswered). HTTP/1.0 clients get the body
 * unframed and the connection closes at the end. */
int dg_http_stream_begin(dg_http_request_t *req, int status, const dg_http_header_t *headers,
                         size_t nheaders);
/* Queues data; returns DG_E2BIG when the connection's write buffer is full
 * (the data is not queued; on_drain follows) and DG_ECLOSED when the peer
 * has gone. A write larger than max_write_buffer is accepted only when
 * nothing is queued, so queued memory stays bounded by the larger of the
 * two. */
int dg_http_stream_write(dg_http_request_t *req, const void *data, size_t len);
int dg_http_stream_end(dg_http_request_t *req);
/* Bytes queued and not yet written on the request's connection. */
size_t dg_http_stream_pending(const dg_http_request_t *req);

/* Lifecycle notifications for a request that is answered later or
 * streamed. on_abort fires once if the connection closes before the
 * response has ended; after it the request must not be used. on_drain
 * fires when queued output fell below half of max_write_buffer. */
typedef struct dg_http_request_events {
  void (*on_abort)(dg_http_request_t *req, void *data);
  void (*on_drain)(dg_http_request_t *req, void *data);
  void *data;
} dg_http_request_events_t;
void dg_http_request_watch(dg_http_request_t *req, const dg_http_request_events_t *events);

/* ---- Server ------------------------------------------------------------ */
typedef void (*dg_http_handler_fn)(dg_http_request_t *req);
/* Called once a request's head is complete, before any of its body is
 * read. true admits it: the body is read and the connection leaves the
 * unadmitted budget for good. false: a request with a body goes to the
 * handler without it (dg_http_request_body_refused) and no more input is
 * read from the connection; a request without one is handled as usual.
 * Must not answer the request. */
typedef bool (*dg_http_admit_fn)(dg_http_request_t *req);

/* The access log (server.accessLog): a JSON line per HTTP response,
 * gathered per loop turn and written with one write(2) per turn. */
typedef struct dg_access_log dg_access_log_t;

/* target: a file (appended to, created with mode 0640), "-" for standard
 * error (the lines then follow the log level, as info lines), NULL for
 * none. On failure *err names accessLog and the reason. */
int dg_access_log_open(uv_loop_t *loop, const char *target, dg_access_log_t **out,
                       dg_errctx_t *err);
/* Writes what is gathered and switches to target, opened anew (SIGHUP:
 * after logrotate moved the file, lines go to a new one). On failure the
 * old target stays. */
int dg_access_log_reopen(dg_access_log_t *log, const char *target, dg_errctx_t *err);
/* Lines wait up to ms milliseconds (and while they fit in the 64 KiB
 * buffer) before they are written, instead of being written at the end of
 * each loop turn (0, the default). What waits is written first. */
void dg_access_log_set_flush(dg_access_log_t *log, uint64_t ms);
/* Writes what is gathered and closes; the memory goes on a later turn. */
void dg_access_log_close(dg_access_log_t *log);

typedef struct dg_http_server_config {
  const char *host; /* "127.0.0.1", "::", ... */
  int port;         /* 0 picks a free port (see dg_http_server_port) */
  bool reuse_port;  /* SO_REUSEPORT, for --workers */
  dg_http_limits_t limits;
  const dg_tls_server_config_t *tls; /* NULL: plain HTTP */
  dg_http_handler_fn handler;
  dg_http_admit_fn admit; /* NULL admits every request */
  void *data;             /* returned by dg_http_request_server_data */
  /* Borrowed, may be NULL (no access lines); it must outlive the server. */
  dg_access_log_t *access_log;
} dg_http_server_config_t;

typedef struct dg_http_server dg_http_server_t;

/* Binds and listens. host must be a numeric IPv4/IPv6 address (or
 * "localhost"): nothing here may block on a name lookup. On failure *err
 * says why (address in use, bad certificate, ...) and the partly built
 * server is freed on a later loop turn. Ignores SIGPIPE for the process so
 * that a peer closing mid-write costs an EPIPE, not the process. */
int dg_http_server_start(uv_loop_t *loop, const dg_http_server_config_t *config,
                         dg_http_server_t **out, dg_errctx_t *err);
int dg_http_server_port(const dg_http_server_t *server);
/* The bound address, numeric ("127.0.0.1", "::"). */
const char *dg_http_server_host(const dg_http_server_t *server);
/* New limits apply to new requests (configuration reload). */
void dg_http_server_set_limits(dg_http_server_t *server, const dg_http_limits_t *limits);
unsigned dg_http_server_connections(const dg_http_server_t *server);
/* Stops accepting, closes idle connections, lets in-flight requests finish
 * (WebSockets get close 1001), then calls done. Connections still open
 * after timeout_ms are closed. */
void dg_http_server_drain(dg_http_server_t *server, uint64_t timeout_ms,
                          void (*done)(dg_http_server_t *server, void *data), void *data);
/* Closes everything at once; the server is freed on a later loop turn. */
void dg_http_server_close(dg_http_server_t *server);

/* ---- WebSocket --------------------------------------------------------- */
typedef struct dg_ws dg_ws_t;

typedef struct dg_ws_callbacks {
  /* One complete, UTF-8-validated text message (binary messages are
   * refused with close 1003). The data is valid during the call only. */
  void (*on_message)(dg_ws_t *ws, const char *data, size_t len, void *user);
  /* The connection is gone (after the close handshake or on error); ws is
   * freed after this returns. code is the peer's or our status. */
  void (*on_close)(dg_ws_t *ws, int code, void *user);
  /* Queued output fell below half of max_write_buffer. Optional. */
  void (*on_drain)(dg_ws_t *ws, void *user);
} dg_ws_callbacks_t;

/* True when req is a valid WebSocket upgrade request (GET, Upgrade,
 * Connection, Sec-WebSocket-Key, Sec-WebSocket-Version 13). */
bool dg_ws_is_upgrade(const dg_http_request_t *req);
/* Answers req with 101 and turns its connection into a WebSocket.
 * subprotocol is echoed when the client offered it (NULL: none). On error
 * a 400 (or 426) has been sent and NULL is returned. */
dg_ws_t *dg_ws_accept(dg_http_request_t *req, const char *subprotocol,
                      const dg_ws_callbacks_t *callbacks, void *user);
/* Queues one text message; DG_E2BIG when the write buffer is full (as for
 * dg_http_stream_write), DG_EINVAL when data is not UTF-8, DG_ECLOSED
 * after close. */
int dg_ws_send_text(dg_ws_t *ws, const char *data, size_t len);
size_t dg_ws_pending(const dg_ws_t *ws);
/* Starts the close handshake with a status code and short reason (cut to
 * 123 bytes); the TCP connection closes when the peer answers, or after a
 * few seconds. on_close follows in either case. */
void dg_ws_close(dg_ws_t *ws, int code, const char *reason);
const char *dg_ws_peer(const dg_ws_t *ws);

/* ---- WebSocket codec (pure, used by the connection and fuzzed) ---------
 * Incremental frame parser: feed bytes, receive frames. */
typedef struct dg_ws_frame {
  bool fin;
  int opcode;                   /* 0 continuation, 1 text, 2 binary, 8 close, 9 ping, 10 pong */
  const unsigned char *payload; /* unmasked, valid during the callback */
  size_t len;
} dg_ws_frame_t;

typedef struct dg_ws_parser {
  /* Internal state; treat as opaque. */
  unsigned char header[14];
  size_t header_len;
  size_t need_header;
  uint64_t payload_len;
  dg_buf_t payload;
  bool in_payload;
  bool require_mask; /* servers require masked client frames */
  size_t max_frame;
} dg_ws_parser_t;

void dg_ws_parser_init(dg_ws_parser_t *p, bool require_mask, size_t max_frame);
void dg_ws_parser_free(dg_ws_parser_t *p);
/* Parses data; on_frame is called per complete frame. Returns bytes
 * consumed, or a negative DG_E* code with *close_code set to the status to
 * close with (1002 protocol error, 1009 too big). */
int64_t dg_ws_parse(dg_ws_parser_t *p, const unsigned char *data, size_t len,
                    int (*on_frame)(const dg_ws_frame_t *frame, void *user), void *user,
                    int *close_code);
/* Writes a server frame header (unmasked) for a payload of len bytes into
 * out (at least 10 bytes); returns the header length. */
size_t dg_ws_frame_header(unsigned char *out, bool fin, int opcode, uint64_t len);
/* Sec-WebSocket-Accept for a client key; out has room for 29 bytes. */
int dg_ws_accept_key(const char *client_key, char out[29]);

#endif
