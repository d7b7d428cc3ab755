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

typedef struct dg_http_header {
  const char *name;
  const char *value;
} dg_http_header_t;

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

/* Reason phrase of a status code ("Not Found"). */
const char *dg_http_status_text(int status);

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
/* True when data is valid UTF-8 (no overlongs, surrogates or > U+10FFFF). */
bool dg_utf8_valid(const unsigned char *data, size_t len);

/* ---- HTTP client ---------------------------------------------------------
 * A non-blocking HTTP/1.1 client for upstream calls (connectors, save
 * actions, document downloads) on the same loop: c-ares resolves names
 * (results cached for their TTL), mbedTLS speaks HTTPS (certificates checked
 * against the system CA bundle plus an optional CA file, SNI, host name
 * verification), llhttp parses responses (Content-Length, chunked or
 * close-delimited; gzip and deflate bodies are decoded). Connections are
 * kept alive in a bounded pool per origin (scheme, host, port).
 *
 * Each call names a connector: the unit of metrics, of the concurrency
 * limit (calls beyond it wait in a bounded queue) and of the circuit
 * breaker (per connector and origin: it opens after consecutive failures,
 * fails calls fast while open and lets one probe through after a
 * cool-down). Idempotent calls (GET, HEAD, PUT, DELETE, OPTIONS) are retried
 * with exponential backoff and jitter on connection errors, 429 and 503,
 * honouring Retry-After; POST and PATCH only when the request says it is
 * safe. Redirects are followed up to a limit, never from https to http.
 *
 * Secrets: header values and URL queries (which may hold API keys) never
 * appear in logs or error messages; errors name the method, the connector
 * and the URL without its query.
 *
 * Metrics: dg_upstream_calls_total{connector,outcome} (outcome "ok" or a
 * dg_http_failure_name) and dg_upstream_call_duration_seconds{connector},
 * both per call (retries and redirects included).
 *
 * Threading: every function runs on the loop thread. */
struct sockaddr;

typedef struct dg_http_client dg_http_client_t;
typedef struct dg_http_call dg_http_call_t;

/* Per-phase time limits in milliseconds; 0 in a request takes the
 * client's value. A phase that runs out fails the attempt with
 * DG_ETIMEDOUT naming the phase; total bounds the whole call, retries,
 * backoff and queueing included. */
typedef struct dg_http_timeouts {
  uint64_t dns_ms;        /* name resolution (default 5 s) */
  uint64_t connect_ms;    /* TCP connect (default 5 s) */
  uint64_t tls_ms;        /* TLS handshake (default 10 s) */
  uint64_t first_byte_ms; /* request sent to first response byte (default 30 s) */
  uint64_t total_ms;      /* the whole call (default 60 s) */
} dg_http_timeouts_t;

/* Limits of one connector (dg_http_client_set_connector). */
typedef struct dg_http_connector_config {
  const char *name;             /* copied */
  unsigned max_concurrency;     /* calls in flight (default 256) */
  unsigned max_queue;           /* calls waiting beyond that; DG_EBUSY over it (default 4096) */
  unsigned breaker_failures;    /* consecutive failures that open the breaker (default 5) */
  uint64_t breaker_cooldown_ms; /* open time before a half-open probe (default 30 s) */
} dg_http_connector_config_t;

typedef struct dg_http_client_config {
  /* Extra PEM CA certificates trusted besides the system bundle (NULL:
   * none); a file that cannot be read fails dg_http_client_new. */
  const char *ca_file;
  /* The system bundle; NULL takes /etc/ssl/certs/ca-certificates.crt, ""
   * trusts ca_file only (tests). */
  const char *system_ca_file;
  dg_http_timeouts_t timeouts;   /* defaults for requests */
  size_t max_body_bytes;         /* default decoded response body cap (8 MiB) */
  size_t max_header_bytes;       /* response status line and headers (64 KiB) */
  unsigned pool_max_per_origin;  /* idle keep-alive connections kept per origin (256) */
  unsigned max_origins;          /* origins with pooled connections (256) */
  uint64_t pool_idle_ms;         /* idle connection closed after (30 s) */
  unsigned dns_cache_max;        /* cached host names (1024) */
  uint64_t dns_cache_max_ttl_ms; /* a TTL longer than this is cut (5 min) */
  unsigned max_calls;            /* calls started and not yet done; DG_EBUSY over it (20000) */
  uint64_t retry_base_ms;        /* first backoff; doubles per retry, with jitter (200 ms) */
  uint64_t retry_max_ms;         /* backoff cap; a longer Retry-After ends the retries (10 s) */
  dg_http_connector_config_t connector_defaults; /* for connectors never set (name ignored) */
  /* Name servers as "ip[:port],..." instead of /etc/resolv.conf (NULL:
   * the system's); the hosts file is read first either way. */
  const char *dns_servers;
} dg_http_client_config_t;

/* Fills the defaults named above (all pointers NULL). */
void dg_http_client_config_default(dg_http_client_config_t *config);

/* What an address is, after the IANA IPv4 and IPv6 Special-Purpose Address
 * Registries. An IPv6 address that embeds an IPv4 address (IPv4-mapped
 * ::ffff:0:0/96, IPv4-translated ::ffff:0:0:0/96, IPv4-compatible ::/96,
 * NAT64 64:ff9b::/96 and 64:ff9b:1::/48, 6to4 2002::/16) is judged by
 * the IPv4 address it carries. */
typedef enum dg_http_address_class {
  DG_ADDR_PUBLIC,     /* globally reachable */
  DG_ADDR_LOOPBACK,   /* 127/8, ::1 */
  DG_ADDR_LINK_LOCAL, /* 169.254/16, fe80::/10 */
  /* 10/8, 172.16/12, 192.168/16, 100.64/10, 198.18/15, fc00::/7,
   * fec0::/10, 2001:2::/48 */
  DG_ADDR_PRIVATE,
  /* unspecified, "this network", multicast, broadcast, 240/4,
   * documentation, IETF protocol assignments, Teredo, ORCHID, discard,
   * SRv6 SIDs: never reached */
  DG_ADDR_RESERVED,
} dg_http_address_class_t;

/* The class of an AF_INET or AF_INET6 address (others: DG_ADDR_RESERVED). */
dg_http_address_class_t dg_http_address_class(const struct sockaddr *addr);

/* Which addresses a call may reach. With enforce false any address is
 * allowed. With enforce true, loopback, link-local and private addresses
 * (dg_http_address_class) are refused unless the matching allow_ bit is
 * set, and reserved ones always are; an
 * address that passes is then put to allow (when set), which may refuse it
 * too. Checked on every resolved address before connecting (only allowed
 * addresses are tried), and again for every redirect target; when none is
 * allowed the call fails with DG_EPERM. */
typedef struct dg_http_address_policy {
  bool enforce;
  bool allow_loopback;
  bool allow_link_local;
  bool allow_private;
  bool (*allow)(const struct sockaddr *addr, void *data); /* optional */
  void *data;
} dg_http_address_policy_t;

/* True when policy lets a call connect to addr (AF_INET or AF_INET6). */
bool dg_http_address_allowed(const dg_http_address_policy_t *policy, const struct sockaddr *addr);

/* An absolute http(s) URL as the client parses it, for callers that
 * decide themselves where a URL may lead (document downloads). */
typedef struct dg_http_url {
  bool https;
  bool ipv6; /* host is an IPv6 literal (written in brackets) */
  uint16_t port;
  char host[256];     /* lower case, without brackets */
  const char *target; /* path and query, starting with '/' */
  size_t path_len;    /* bytes of target before the query */
  char origin[300];   /* "https://host:port" */
} dg_http_url_t;

/* Parses an absolute http(s) URL of at most 8192 bytes (the fragment is
 * dropped; user info, spaces and non-ASCII are refused); strings live in
 * arena. Returns 0, or DG_EINVAL with *why saying what is wrong. */
int dg_http_url_parse(dg_arena_t *arena, const char *text, dg_http_url_t *out, const char **why);
/* Resolves a Location header value against base, as a redirect does. */
int dg_http_url_resolve(dg_arena_t *arena, const dg_http_url_t *base, const char *location,
                        dg_http_url_t *out, const char **why);
/* "https://host[:port]/path" without the query (which may hold a key), for
 * messages and logs. */
void dg_http_url_display(const dg_http_url_t *url, char *out, size_t size);
/* The whole URL, query included, default port left out. */
char *dg_http_url_full(dg_arena_t *arena, const dg_http_url_t *url);

/* A response as the caller sees it. Header names and values are as
 * received (look them up with dg_http_response_header). body is the decoded
 * body, NUL-terminated; empty when it was streamed to on_chunk. Valid only
 * during the callback that receives it. */
typedef struct dg_http_response {
  int status;
  const dg_http_header_t *headers;
  size_t nheaders;
  const char *body;
  size_t body_len;
  const char *url; /* the URL that answered, after redirects */
} dg_http_response_t;

/* First header with this name (case-insensitive), or NULL. */
const char *dg_http_response_header(const dg_http_response_t *res, const char *name);

/* What failed, for callers that react to the kind of failure. */
typedef enum dg_http_failure {
  DG_HTTP_FAIL_NONE,       /* a 1xx-3xx response (rc 0) */
  DG_HTTP_FAIL_STATUS,     /* a 4xx/5xx response (DG_EUPSTREAM; response set) */
  DG_HTTP_FAIL_DNS,        /* name not found or resolver error (DG_EUPSTREAM) */
  DG_HTTP_FAIL_CONNECT,    /* refused, unreachable, reset, closed early (DG_EUPSTREAM) */
  DG_HTTP_FAIL_TLS,        /* handshake or verification failed (DG_EUPSTREAM) */
  DG_HTTP_FAIL_TIMEOUT,    /* a phase ran out; see phase (DG_ETIMEDOUT) */
  DG_HTTP_FAIL_PROTOCOL,   /* malformed response, bad encoding (DG_EPROTO) */
  DG_HTTP_FAIL_TOO_BIG,    /* body or headers over the cap (DG_E2BIG) */
  DG_HTTP_FAIL_REDIRECTS,  /* too many redirects, or https to http (DG_EUPSTREAM) */
  DG_HTTP_FAIL_POLICY,     /* address refused by the policy (DG_EPERM) */
  DG_HTTP_FAIL_BREAKER,    /* circuit breaker open (DG_EBUSY) */
  DG_HTTP_FAIL_OVERLOADED, /* connector queue or client full (DG_EBUSY) */
  DG_HTTP_FAIL_CANCELED,   /* dg_http_call_cancel or client closed (DG_ECANCELED) */
  DG_HTTP_FAIL_ABORTED     /* on_head or on_chunk returned an error (that error) */
} dg_http_failure_t;

/* Short name of a failure kind ("dns", "timeout", ...), used as the
 * outcome label of the upstream metrics. */
const char *dg_http_failure_name(dg_http_failure_t failure);

/* The outcome of a call, handed to its callback once. */
typedef struct dg_http_result {
  int rc; /* 0, or the DG_E* code named in dg_http_failure_t */
  dg_http_failure_t failure;
  /* For DG_HTTP_FAIL_TIMEOUT: "dns", "connect", "tls", "first_byte",
   * "body" (no data for first_byte_ms while reading), "queue" or "call";
   * NULL otherwise. */
  const char *phase;
  /* When rc != 0: one sentence naming the connector, method and URL
   * (without query) and why, e.g. "upstream 'crm' GET
   * https://api.example.com/orders answered 503 Service Unavailable:
   * {\"error\":\"down\"...". param is "upstream". */
  const dg_errctx_t *err;
  /* The last response received (also for DG_HTTP_FAIL_STATUS), or NULL. */
  const dg_http_response_t *response;
  unsigned attempts;  /* connection attempts made, retries included */
  unsigned redirects; /* redirects followed */
  uint64_t elapsed_ms;
} dg_http_result_t;

/* Called exactly once per started call, never from inside
 * dg_http_client_request or dg_http_call_cancel. The call is freed after
 * it returns. */
typedef void (*dg_http_done_fn)(dg_http_call_t *call, const dg_http_result_t *result, void *user);
/* Optional: the final (non-redirect) response's head arrived, before any
 * body. Return 0 to go on, or a negative DG_E* code to abort the call
 * (failure DG_HTTP_FAIL_ABORTED with that code). */
typedef int (*dg_http_head_fn)(dg_http_call_t *call, int status, const dg_http_header_t *headers,
                               size_t nheaders, void *user);
/* Optional: streams the decoded body of a 2xx final response instead of
 * collecting it; bytes are valid during the call only. Returning a
 * negative DG_E* code aborts the call as for on_head. Once a chunk has
 * been delivered the call is no longer retried. max_body_bytes still caps
 * the total. Bodies of other statuses are collected (for the error
 * excerpt) and never streamed. */
typedef int (*dg_http_chunk_fn)(dg_http_call_t *call, const char *data, size_t len, void *user);

/* One upstream call. Everything is copied by dg_http_client_request: the
 * request and what it points to may be released when it returns. */
typedef struct dg_http_client_request {
  const char *method; /* GET, HEAD, POST, PUT, PATCH, DELETE or OPTIONS */
  const char *url;    /* absolute http:// or https:// URL, query included */
  /* Extra headers. The client sets Host, Content-Length, Connection,
   * Accept-Encoding, User-Agent (unless given) and traceparent; a caller's
   * copies of those are replaced (User-Agent excepted). Authorization,
   * Cookie and Proxy-Authorization are dropped when a redirect leaves the
   * origin. */
  const dg_http_header_t *headers;
  size_t nheaders;
  const void *body; /* request body (e.g. JSON) or NULL */
  size_t body_len;
  const char *connector;              /* connector name; NULL or "" means "default" */
  const char *request_id;             /* the tool call's request id, for traceparent */
  const char *trace_id;               /* a trace continued (32 hex digits), or NULL: the
                                         trace id then comes from request_id */
  dg_http_timeouts_t timeouts;        /* 0 fields take the client's */
  size_t max_body_bytes;              /* 0 takes the client's */
  unsigned max_retries;               /* retries after the first attempt (init: 2) */
  unsigned max_redirects;             /* 0: redirects are returned, not followed (init: 5) */
  bool retry_unsafe;                  /* POST/PATCH may be retried too (the action says so) */
  dg_http_address_policy_t addresses; /* zero: any address */
  dg_http_head_fn on_head;            /* optional */
  dg_http_chunk_fn on_chunk;          /* optional; NULL collects the body */
  dg_http_done_fn done;               /* required */
  void *user;
} dg_http_client_request_t;

/* Zeroes req and sets max_retries 2 and max_redirects 5. */
void dg_http_client_request_init(dg_http_client_request_t *req);

/* Creates a client: loads CA certificates, starts the resolver. config may
 * be NULL (the defaults); its zero fields take their defaults, except
 * pool_max_per_origin and dns_cache_max, where 0 turns pooling or caching
 * off. On failure *err names the file or setting at fault. */
int dg_http_client_new(uv_loop_t *loop, const dg_http_client_config_t *config,
                       dg_http_client_t **out, dg_errctx_t *err);

/* Creates or updates a connector's limits (configuration load or reload);
 * calls in flight keep going, waiting calls see the new limits. */
int dg_http_client_set_connector(dg_http_client_t *client, const dg_http_connector_config_t *cfg);

/* Starts a call; *out (optional) receives the handle for cancelling it.
 * Returns 0 and req->done follows exactly once on a later loop turn, or
 * DG_EINVAL (bad method, URL, header; err names the parameter, what was
 * given and what is allowed) or DG_ECLOSED (client closing), in which case
 * nothing was started and done is never called. Every other failure,
 * immediate ones included, arrives through done. */
int dg_http_client_request(dg_http_client_t *client, const dg_http_client_request_t *req,
                           dg_http_call_t **out, dg_errctx_t *err);

/* Cancels a call that has not completed: its connection is closed, and
 * done runs once, on a later loop turn, with DG_ECANCELED. Must not be
 * used after done has run. */
void dg_http_call_cancel(dg_http_call_t *call);

/* The name servers the client was created with ("ip[:port],..."), or NULL
 * for the system's; valid while the client lives. */
const char *dg_http_client_dns_servers(const dg_http_client_t *client);

/* Calls started and not yet completed. */
unsigned dg_http_client_active(const dg_http_client_t *client);
/* Idle pooled connections, over all origins (for tests and metrics). */
unsigned dg_http_client_idle_connections(const dg_http_client_t *client);

/* Closes the client: calls still running complete with DG_ECANCELED,
 * connections and the resolver close, and the memory is freed on a later
 * loop turn. Call it after dg_http_client_active reached 0 for a clean
 * stop. */
void dg_http_client_close(dg_http_client_t *client);

#endif
