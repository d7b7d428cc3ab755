/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Private declarations shared by the files of the net module. Never
 * included from outside src/net/.
 *
 * Layers of one connection, bottom up:
 *   conn.c   socket reads and writes, timers, graceful and immediate close
 *   tls.c    optional mbedTLS record layer between the socket and the protocol
 *   http1.c  llhttp parsing, the pipeline of requests, timeouts and limits
 *   ws.c     RFC 6455 messages once a request was upgraded
 * The protocol on top of a connection is a dg__proto_t; the connection
 * calls it with plaintext bytes and timer events. */
#ifndef DATAGATE_NET_INTERNAL_H
#define DATAGATE_NET_INTERNAL_H

#include <llhttp.h>

#include "datagate/net.h"

#define DG__READ_BUF_SIZE (64 * 1024)
#define DG__TLS_PLAIN_SIZE (16 * 1024)
/* How long a closing connection keeps discarding input after its last
 * response so that the peer reads that response before a reset. */
#define DG__LINGER_MS 2000
/* How long dg_ws_close waits for the peer's close frame. */
#define DG__WS_CLOSE_WAIT_MS 3000

typedef struct dg__conn dg__conn_t;
typedef struct dg__http1 dg__http1_t;
typedef struct dg__tls dg__tls_t;
typedef struct dg__tls_server dg__tls_server_t;

/* A protocol spoken over a connection once its bytes are plaintext. */
typedef struct dg__proto {
  const char *name;
  /* The connection is open for plaintext (optional). */
  void (*on_open)(dg__conn_t *c);
  /* Plaintext input; the protocol consumes or copies all of it. */
  void (*on_data)(dg__conn_t *c, const char *data, size_t len);
  /* The peer finished sending. */
  void (*on_eof)(dg__conn_t *c);
  /* The connection timer fired while the connection is open. */
  void (*on_timer)(dg__conn_t *c);
  /* Queued output fell below half of max_write_buffer. */
  void (*on_drain)(dg__conn_t *c);
  /* The server drains: close when idle, finish in-flight work. */
  void (*on_server_drain)(dg__conn_t *c);
  /* The connection is gone (called from its close callback): release the
   * protocol state and tell its owners. */
  void (*on_closed)(dg__conn_t *c);
  /* Heap bytes the protocol state holds now (for tests and metrics). */
  size_t (*memory)(const dg__conn_t *c);
} dg__proto_t;

typedef enum dg__conn_state {
  DG__CONN_HANDSHAKE, /* TLS handshake in progress */
  DG__CONN_OPEN,      /* the protocol owns the connection */
  DG__CONN_FLUSHING,  /* last output queued; shutdown once it is written */
  DG__CONN_LINGER,    /* write side shut; input discarded until EOF or timeout */
  DG__CONN_CLOSED     /* uv_close called; memory freed in the close callback */
} dg__conn_state_t;

/* Reasons the connection does not read; reading resumes when none is set. */
enum {
  DG__NOREAD_BACKPRESSURE = 1, /* too much queued output */
  DG__NOREAD_PROTO = 2         /* the protocol wants no more input for now */
};

struct dg__conn {
  uv_tcp_t tcp;
  uv_timer_t timer;
  dg_http_server_t *server;
  dg__conn_t *prev, *next; /* the server's list of connections */
  dg__conn_state_t state;
  const dg__proto_t *proto;
  void *proto_state; /* dg__http1_t or dg_ws_t */
  dg__tls_t *tls;
  dg_buf_t *capture; /* when set, output goes here instead of the socket */
  size_t pending;    /* bytes handed to uv_write and not yet completed */
  unsigned handles;  /* libuv handles not yet closed */
  unsigned noread;   /* DG__NOREAD_* bits */
  bool reading;      /* uv_read_start is in effect */
  bool eof;          /* the peer finished sending */
  bool want_drain;   /* a writer was refused or reads paused: tell it later */
  bool counted;      /* counts against max_connections */
  bool reject;       /* over max_connections: answered 503 and closed */
  size_t unadmitted; /* the charge against max_unadmitted_bytes; 0 once admitted */
  char peer[64];
};

typedef enum dg__server_state {
  DG__SERVER_RUNNING,
  DG__SERVER_DRAINING,
  DG__SERVER_CLOSING
} dg__server_state_t;

struct dg_http_server {
  uv_loop_t *loop;
  uv_tcp_t listener;
  uv_timer_t drain_timer;
  dg__server_state_t state;
  dg_http_limits_t limits;
  dg_http_handler_fn handler;
  dg_http_admit_fn admit;
  void *data;
  dg_access_log_t *access_log; /* borrowed; NULL: none */
  dg__tls_server_t *tls;
  dg__conn_t *conns;
  unsigned nconns;   /* connections counted against max_connections */
  size_t unadmitted; /* charged by connections not yet admitted */
  unsigned handles;  /* listener, drain timer and connections not yet freed */
  int port;
  char host[64]; /* the bound address, numeric */
  bool listening;
  bool drain_pending;
  void (*drain_done)(dg_http_server_t *server, void *data);
  void *drain_data;
  uint64_t date_sec;
  char date[40];
  bool rbuf_busy;
  char rbuf[DG__READ_BUF_SIZE];
};

/* ---- access_log.c ---- */
/* Gathers req's access line (status, bytes and duration as they are now). */
void dg__access_log_request(dg_access_log_t *log, const dg_http_request_t *req);

/* ---- server.c ---- */
/* A server without a listener, for driving connections in tests and the
 * fuzzer; free it with dg_http_server_close. */
int dg__server_new(uv_loop_t *loop, const dg_http_server_config_t *config, dg_http_server_t **out,
                   dg_errctx_t *err);
/* A connection was freed. */
void dg__server_conn_gone(dg_http_server_t *s, dg__conn_t *c);
/* A request of c was admitted: c's charge against max_unadmitted_bytes is
 * released. */
void dg__server_admitted(dg_http_server_t *s, dg__conn_t *c);
/* The IMF-fixdate of now, cached per second. */
const char *dg__server_date(dg_http_server_t *s);

/* ---- conn.c ---- */
int dg__conn_new(dg_http_server_t *s, dg__conn_t **out);
/* Starts a connection accepted into c->tcp: reads, TLS, HTTP. */
void dg__conn_start(dg__conn_t *c);
/* Plaintext begins: right away, or once the TLS handshake is done. */
void dg__conn_opened(dg__conn_t *c);
/* A connection whose output is appended to capture and whose input comes
 * from dg__conn_feed: the bytes-in path without a socket. */
int dg__conn_open_capture(dg_http_server_t *s, dg_buf_t *capture, dg__conn_t **out);
/* Input from the socket (or a test): decrypted if TLS, then handed to the
 * protocol. */
void dg__conn_feed(dg__conn_t *c, const char *data, size_t len);
/* The peer finished sending (or a test says so). */
void dg__conn_feed_eof(dg__conn_t *c);
/* Queues plaintext output (encrypted if TLS). */
int dg__conn_writev(dg__conn_t *c, const uv_buf_t *bufs, unsigned n);
int dg__conn_write(dg__conn_t *c, const void *data, size_t len);
/* Queues ciphertext (or plaintext without TLS) for the socket. */
int dg__conn_raw_write(dg__conn_t *c, const void *data, size_t len);
/* True when len more bytes fit under max_write_buffer; otherwise marks
 * the connection so the writer hears on_drain later. */
bool dg__conn_can_write(dg__conn_t *c, size_t len);
/* Closes after queued output is written: shutdown, linger, close. */
void dg__conn_finish(dg__conn_t *c);
/* Closes now; the protocol hears on_closed from the close callback. */
void dg__conn_close(dg__conn_t *c);
void dg__conn_timer(dg__conn_t *c, uint64_t ms);
void dg__conn_timer_stop(dg__conn_t *c);
void dg__conn_noread(dg__conn_t *c, unsigned reason, bool on);
bool dg__conn_is_open(const dg__conn_t *c);
/* Heap bytes the connection holds now, its write queue included. */
size_t dg__conn_memory(const dg__conn_t *c);
const char *dg__conn_transport(const dg__conn_t *c);

/* ---- http1.c ---- */
extern const dg__proto_t dg__http1_proto;
int dg__http1_attach(dg__conn_t *c);
/* The response to req has ended (respond, stream end, upgrade): log it,
 * release it and move the connection on. keep_alive false closes the
 * connection after the response. */
void dg__http1_request_done(dg_http_request_t *req, bool keep_alive);
/* Answers req and closes the connection after the response (errors). */
int dg__http1_respond_close(dg_http_request_t *req, int status, const void *body, size_t len);
/* Whether the connection may stay open after req's response. */
bool dg__http1_keep_alive(const dg_http_request_t *req);
/* Hands bytes that followed an upgrade request to the new protocol and
 * frees the HTTP state (now, or when the running handler returns). */
void dg__http1_detach(dg__conn_t *c, dg_buf_t *leftover);
/* Builds the head of a response into out. */
int dg__http1_head(dg_http_request_t *req, dg_buf_t *out, int status,
                   const dg_http_header_t *headers, size_t nheaders, const char *framing,
                   bool keep_alive);

/* ---- tls.c ---- */
int dg__tls_server_new(const dg_tls_server_config_t *config, dg__tls_server_t **out,
                       dg_errctx_t *err);
void dg__tls_server_free(dg__tls_server_t *ts);
int dg__tls_attach(dg__conn_t *c, dg__tls_server_t *ts);
void dg__tls_free(dg__tls_t *t);
/* Ciphertext in: advances the handshake or hands plaintext to the
 * protocol. Returns 0, DG_EPROTO on a TLS failure, DG_ECLOSED on
 * close_notify. */
int dg__tls_feed(dg__conn_t *c, const char *data, size_t len);
int dg__tls_write(dg__conn_t *c, const void *data, size_t len);
/* Queues a close_notify alert. */
void dg__tls_close_notify(dg__conn_t *c);
size_t dg__tls_memory(const dg__tls_t *t);
/* What one connection's TLS state holds at most (its record buffers). */
size_t dg__tls_conn_cost(void);

/* ---- ws.c ---- */
extern const dg__proto_t dg__ws_proto;

/* ---- request (shared by http1.c and response.c) ---- */
/* The field names the gateway looks up, found once when a field line is
 * parsed so that each lookup is an index instead of a walk of the list. */
typedef enum dg__known_header {
  DG__H_HOST,
  DG__H_ACCEPT,
  DG__H_EXPECT,
  DG__H_ORIGIN,
  DG__H_UPGRADE,
  DG__H_IF_MATCH,
  DG__H_CONNECTION,
  DG__H_TRACEPARENT,
  DG__H_CONTENT_TYPE,
  DG__H_X_REQUEST_ID,
  DG__H_AUTHORIZATION,
  DG__H_CONTENT_LENGTH,
  DG__H_MCP_SESSION_ID,
  DG__H_SEC_WEBSOCKET_KEY,
  DG__H_TRANSFER_ENCODING,
  DG__H_MCP_PROTOCOL_VERSION,
  DG__H_SEC_WEBSOCKET_VERSION,
  DG__H_SEC_WEBSOCKET_PROTOCOL,
  DG__H_KNOWN /* the count; also "another name" */
} dg__known_header_t;

/* The known name n bytes long at name (any case), or DG__H_KNOWN. */
dg__known_header_t dg__http1_known_header(const char *name, size_t n);
/* Whether n bytes are a field value: VCHAR, obs-text, SP and HTAB (RFC 9110 5.5). */
bool dg__http1_value_ok(const char *s, size_t n);

typedef struct dg__header {
  const char *name;
  const char *value; /* the field lines of one name joined with ", " */
  unsigned lines;    /* how many field lines had this name */
  struct dg__header *next;
} dg__header_t;

typedef enum dg__req_state {
  DG__REQ_PARSING,   /* headers or body still arriving */
  DG__REQ_QUEUED,    /* complete, waiting for the requests before it */
  DG__REQ_ACTIVE,    /* handed to the handler, not answered yet */
  DG__REQ_STREAMING, /* chunked response begun */
  DG__REQ_DONE
} dg__req_state_t;

struct dg_http_request {
  dg__conn_t *conn; /* NULL once the connection is gone */
  dg_http_request_t *next;
  dg_arena_t *arena;
  void *server_data;
  const void *admitted; /* dg_http_request_set_admitted */
  dg__req_state_t state;
  const char *method;
  const char *path;
  const char *query;
  const char *url;
  const char *host; /* the target's authority, or Host (RFC 9112 3.2.2, 7.2) */
  dg__header_t *headers, *headers_tail;
  dg__header_t *known[DG__H_KNOWN]; /* the known names' entries in headers */
  dg__header_t *extra;              /* response headers added before the answer */
  dg_buf_t body;
  dg_http_request_events_t events;
  uint64_t start_ns;
  size_t bytes_out;
  int status;
  unsigned char http_minor;
  bool keep_alive;
  bool is_head;
  bool tls;
  bool upgrade;
  bool expect_continue;
  bool chunked_out;
  bool body_refused; /* not admitted: the body was never read */
  char id[65];
  char trace_id[33]; /* from a valid traceparent header, else "" */
  char peer[64];
};

#endif
