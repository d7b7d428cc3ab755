/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Private declarations shared by the files of the client module. Never
 * included from outside src/client/. */
#ifndef DATAGATE_CLIENT_INTERNAL_H
#define DATAGATE_CLIENT_INTERNAL_H

#include <llhttp.h>

#include "datagate/client.h"

#define DG__READ_BUF_SIZE (64 * 1024)
#define DG__TLS_PLAIN_SIZE (16 * 1024)

/* ---- HTTP client ----------------------------------------------------------
 * Layers of one upstream call, bottom up:
 *   dns.c            c-ares on uv_poll/uv_timer, TTL cache, coalesced lookups
 *   tls.c     mbedTLS client sessions (CA bundle, SNI, host names)
 *   conn.c    one TCP (+TLS) connection, its reads and writes, and
 *                    the keep-alive pool of idle connections per origin
 *   parse.c   llhttp response parsing, gzip/deflate, caps (fuzzed)
 *   call.c    the call state machine: admission, attempts, timers,
 *                    retries, redirects, results
 *   policy.c  connectors: concurrency queue and circuit breakers
 *   util.c    URLs, Retry-After, address policy
 *   client.c         the public API, configuration, close */
#include <netinet/in.h>
#include <zlib.h>

#define DG__CLIENT_MAX_HEADERS 128
#define DG__CLIENT_MAX_STATUS_LINE 1024
#define DG__CLIENT_MAX_REQUEST_BODY (64u * 1024 * 1024)
#define DG__CLIENT_MAX_URL 8192
#define DG__CLIENT_MAX_REQ_HEADERS 64
#define DG__CLIENT_EXCERPT 200
#define DG__DNS_MAX_ADDRS 8
#define DG__BREAKER_MAX_ORIGINS 64
#define DG__CLIENT_MAX_CONNECTORS 1024
#define DG__CLIENT_MAX_IDLE 4096

typedef struct dg__dns dg__dns_t;
typedef struct dg__ctls_config dg__ctls_config_t;
typedef struct dg__ctls dg__ctls_t;
typedef struct dg__uconn dg__uconn_t;
typedef struct dg__pool dg__pool_t;
typedef struct dg__connector dg__connector_t;
typedef struct dg__breaker dg__breaker_t;

/* ---- util.c ---- */
/* The client's URLs are the public dg_http_url_t (client.h). */
typedef dg_http_url_t dg__url_t;

/* Parses an absolute http(s) URL (the fragment is dropped); strings live in
 * arena. On failure *why says what is wrong. */
int dg__url_parse(dg_arena_t *arena, const char *text, dg__url_t *out, const char **why);
/* Resolves a Location value against base. */
int dg__url_resolve(dg_arena_t *arena, const dg__url_t *base, const char *location, dg__url_t *out,
                    const char **why);
/* "https://host:port/path" without the query, for messages and logs. */
void dg__url_display(const dg__url_t *url, char *out, size_t size);
/* The whole URL, query included (for the caller only). */
char *dg__url_full(dg_arena_t *arena, const dg__url_t *url);
/* Retry-After as a delay from now: delta-seconds or an HTTP date. */
bool dg__retry_after_ms(const char *value, int64_t now_sec, uint64_t *out);
bool dg__method_idempotent(const char *method);
bool dg__header_name_ok(const char *name);
bool dg__header_value_ok(const char *value);
/* A printable excerpt of a body (control bytes as spaces, cut with "..."). */
void dg__excerpt(const char *body, size_t len, char *out, size_t size);
/* "1.2.3.4" or "::1" of a socket address. */
void dg__addr_text(const struct sockaddr *sa, char *out, size_t size);

/* ---- dns.c ---- */
typedef struct dg__dns_addrs {
  unsigned n;
  struct sockaddr_storage addr[DG__DNS_MAX_ADDRS]; /* port 0 */
} dg__dns_addrs_t;

typedef struct dg__dns_waiter dg__dns_waiter_t;
/* rc 0 with addrs, or DG_EUPSTREAM (why says why) or DG_ECANCELED. */
typedef void (*dg__dns_cb)(dg__dns_waiter_t *w, int rc, const dg__dns_addrs_t *addrs,
                           const char *why);
struct dg__dns_waiter {
  dg__dns_waiter_t *prev, *next;
  void *entry; /* the lookup waited on; NULL when not waiting */
  dg__dns_cb cb;
};

int dg__dns_new(uv_loop_t *loop, const char *servers, unsigned cache_max, uint64_t max_ttl_ms,
                dg__dns_t **out, dg_errctx_t *err);
/* Numeric, cached and hosts-file names answer at once: returns 1 with *out
 * filled, or a negative error with why. Else returns 0 and w->cb follows
 * from a later loop event (unless cancelled). */
int dg__dns_resolve(dg__dns_t *dns, const char *host, dg__dns_waiter_t *w, dg__dns_addrs_t *out,
                    char *why, size_t whysize);
/* Stops waiting; the lookup goes on and still fills the cache. */
void dg__dns_cancel(dg__dns_waiter_t *w);
/* Cancels lookups, closes handles and frees on a later turn; done follows. */
void dg__dns_close(dg__dns_t *dns, void (*done)(void *data), void *data);
unsigned dg__dns_cached(const dg__dns_t *dns);

/* ---- tls.c ---- */
int dg__ctls_config_new(const char *system_ca, const char *extra_ca, dg__ctls_config_t **out,
                        dg_errctx_t *err);
void dg__ctls_config_free(dg__ctls_config_t *cfg);
/* A session for host (SNI and name verification); send queues ciphertext. */
int dg__ctls_new(dg__ctls_config_t *cfg, const char *host,
                 int (*send)(void *ctx, const void *data, size_t len), void *ctx, dg__ctls_t **out);
void dg__ctls_free(dg__ctls_t *t);
/* Ciphertext in. Before the handshake ends it advances it and stops as
 * soon as it is done (*opened true; call again with no data for what
 * followed). After, plaintext goes to on_plain. Returns 0, DG_EUPSTREAM
 * (why: the verification or alert reason), DG_ECLOSED on close_notify, or
 * on_plain's error. */
int dg__ctls_feed(dg__ctls_t *t, const char *data, size_t len, bool *opened,
                  int (*on_plain)(void *ctx, const char *data, size_t len), void *ctx, char *why,
                  size_t whysize);
/* Starts the handshake (client hello). */
int dg__ctls_start(dg__ctls_t *t, char *why, size_t whysize);
int dg__ctls_write(dg__ctls_t *t, const void *data, size_t len);

/* ---- parse.c ---- */
typedef struct dg__resp dg__resp_t;
typedef struct dg__resp_sink {
  int (*on_head)(dg__resp_t *r, void *user); /* status and headers known */
  int (*on_body)(dg__resp_t *r, const char *data, size_t len, void *user); /* decoded */
  int (*on_complete)(dg__resp_t *r, void *user);
} dg__resp_sink_t;

struct dg__resp {
  llhttp_t parser;
  llhttp_settings_t settings;
  const dg__resp_sink_t *sink;
  void *user;
  dg_buf_t head; /* names and values, NUL-separated */
  size_t nheaders;
  int status;
  size_t status_len; /* bytes of the reason phrase so far */
  size_t max_body;
  size_t body_len; /* decoded bytes so far */
  size_t raw_len;  /* bytes on the wire so far */
  z_stream z;
  int coding; /* 0 identity, 1 gzip, 2 deflate (zlib or raw) */
  bool z_ready;
  bool z_end;      /* the compressed stream reached its end marker */
  bool msg_done;   /* the message ended while compressed bytes were held */
  size_t turn_out; /* bytes decoded since the last feed or drain began */
  dg_buf_t zheld;  /* compressed body bytes not decoded yet, in order */
  bool head_only;  /* the request was HEAD: no body */
  bool started;    /* some byte of the response arrived */
  bool complete;   /* the message ended */
  bool keep_alive; /* the connection may carry another request */
  bool trailing;   /* bytes followed the end of the message */
  bool in_value;
  int error;        /* what failed (DG_EPROTO, DG_E2BIG or a sink error) */
  bool sink_failed; /* the error came from the sink, not the response */
  char reason[160];
  /* Last, and never zeroed: only the first nheaders entries are read.
   * Offsets into head of each name and value (a response head is at most
   * max_header_bytes, far below 4 GiB). */
  uint32_t name_off[DG__CLIENT_MAX_HEADERS];
  uint32_t value_off[DG__CLIENT_MAX_HEADERS];
};

void dg__resp_init(dg__resp_t *r, size_t max_header_bytes, const dg__resp_sink_t *sink, void *user);
/* Gets ready for the response to one request. */
void dg__resp_begin(dg__resp_t *r, bool head_only, size_t max_body);
/* Feeds bytes; returns 0 or an error (r->reason says why). Bytes after the
 * end of the message are left unparsed; *used (optional) says how many were
 * taken. */
int dg__resp_feed(dg__resp_t *r, const char *data, size_t len, size_t *used);
/* The peer closed: ends a close-delimited body, or fails. */
int dg__resp_eof(dg__resp_t *r);
/* A compressed body is decoded a bounded amount per loop turn: what a feed
 * could not decode is held. While bytes are held the connection stops
 * reading and each turn drains some (0 or an error); once none is held,
 * settle ends a message whose end came meanwhile (0 or an error). */
bool dg__resp_held(const dg__resp_t *r);
int dg__resp_drain(dg__resp_t *r);
int dg__resp_settle(dg__resp_t *r);
void dg__resp_free(dg__resp_t *r);
const char *dg__resp_header(const dg__resp_t *r, const char *name);
/* The i-th header (i < r->nheaders) once the head is complete. */
void dg__resp_header_at(const dg__resp_t *r, size_t i, const char **name, const char **value);

/* ---- conn.c ---- */
typedef enum dg__uconn_state {
  DG__UCONN_CONNECTING, /* TCP connect in progress */
  DG__UCONN_HANDSHAKE,  /* TLS handshake */
  DG__UCONN_ACTIVE,     /* carries a call's request and response */
  DG__UCONN_IDLE,       /* in the pool */
  DG__UCONN_CLOSED      /* uv_close called; freed in the close callback */
} dg__uconn_state_t;

struct dg__uconn {
  uv_tcp_t tcp;
  uv_timer_t idle_timer;
  uv_connect_t connect_req;
  dg_http_client_t *client;
  dg__pool_t *pool;         /* while idle */
  dg__uconn_t *prev, *next; /* the pool's idle list */
  char origin[300];
  dg__uconn_t *all_prev, *all_next; /* the client's list of connections */
  dg_http_call_t *call;             /* the call using it, or NULL */
  dg__uconn_state_t state;
  dg__ctls_t *tls;
  unsigned handles;
  unsigned requests; /* requests carried so far */
  bool reading;
  bool paused; /* not reading while the call decodes what it holds */
  bool broken; /* failed; never pooled */
  uint64_t idle_since_ms;
  /* The address connected to, checked against the policy of each call
   * that reuses the connection without asking the kernel again. */
  struct sockaddr_storage peer;
};

/* Opens a connection to addr for call's current origin; the call hears
 * dg__call_conn_* as it goes. */
int dg__uconn_open(dg_http_client_t *client, dg_http_call_t *call, const struct sockaddr *addr,
                   dg__uconn_t **out, const char **why);
/* Queues plaintext (encrypted when TLS). */
int dg__uconn_write(dg__uconn_t *c, const void *data, size_t len);
/* The call is done with the connection: pooled when reusable, else closed. */
void dg__uconn_release(dg__uconn_t *c, bool reusable);
/* Stops reading and asks for dg__call_conn_drain on the next loop turn. */
void dg__uconn_pause(dg__uconn_t *c);
/* Reads again after dg__uconn_pause. */
void dg__uconn_resume(dg__uconn_t *c);
void dg__uconn_close(dg__uconn_t *c);
/* An idle pooled connection for origin, or NULL. */
dg__uconn_t *dg__pool_checkout(dg_http_client_t *client, const char *origin, dg_http_call_t *call);
unsigned dg__pool_idle_total(const dg_http_client_t *client);
/* Closes every connection (client close). */
void dg__pool_close_all(dg_http_client_t *client);

/* ---- policy.c ---- */
typedef enum dg__breaker_state {
  DG__BREAKER_CLOSED,
  DG__BREAKER_OPEN,
  DG__BREAKER_HALF_OPEN
} dg__breaker_state_t;

struct dg__breaker {
  dg__breaker_t *next;
  char origin[300];
  dg__breaker_state_t state;
  unsigned failures; /* consecutive */
  uint64_t opened_ms;
  bool probing; /* the half-open probe is out */
};

struct dg__connector {
  dg__connector_t *next;
  char *name;
  char *label; /* the name escaped for metric labels */
  dg_http_connector_config_t cfg;
  unsigned active;
  unsigned queued;
  dg_http_call_t *queue_head, *queue_tail;
  dg__breaker_t *breakers;
  unsigned nbreakers;
};

dg__connector_t *dg__connector_get(dg_http_client_t *client, const char *name);
void dg__connectors_free(dg_http_client_t *client);
/* Takes a concurrency slot (returns 1), queues the call (0) or refuses it
 * (DG_EBUSY: the queue is full). */
int dg__connector_admit(dg__connector_t *conn, dg_http_call_t *call);
/* Gives back a slot or leaves the queue; returns the next call to start, if any. */
dg_http_call_t *dg__connector_leave(dg__connector_t *conn, dg_http_call_t *call);
/* Whether an attempt may go to origin now; takes the half-open probe when
 * it is due (*probe). Fills why when refused. */
bool dg__breaker_allow(dg__connector_t *conn, const char *origin, uint64_t now_ms, bool *probe,
                       char *why, size_t whysize);
/* Records an attempt's outcome (success: a response below 500). */
void dg__breaker_record(dg__connector_t *conn, const char *origin, bool success, bool probe,
                        uint64_t now_ms);
/* A probe that ended without an outcome (cancelled) frees its place. */
void dg__breaker_release_probe(dg__connector_t *conn, const char *origin);
dg__breaker_state_t dg__breaker_state(dg__connector_t *conn, const char *origin);

/* ---- call.c ---- */
typedef enum dg__call_state {
  DG__CALL_NEW,       /* created, starts on the next loop turn */
  DG__CALL_QUEUED,    /* waiting for a connector slot */
  DG__CALL_RESOLVING, /* DNS lookup */
  DG__CALL_CONNECTING,
  DG__CALL_HANDSHAKE,
  DG__CALL_WAITING,   /* request sent, no response byte yet */
  DG__CALL_READING,   /* response arriving */
  DG__CALL_BACKOFF,   /* waiting before a retry */
  DG__CALL_FINISHING, /* result set; delivered on the next loop turn */
  DG__CALL_DONE
} dg__call_state_t;

typedef enum dg__body_mode { DG__BODY_COLLECT, DG__BODY_STREAM, DG__BODY_DISCARD } dg__body_mode_t;

struct dg_http_call {
  dg_http_client_t *client;
  dg_http_call_t *prev, *next; /* the client's calls */
  dg_http_call_t *qnext;       /* the connector's queue */
  dg__connector_t *connector;
  uv_timer_t timer;
  dg_arena_t *arena;
  dg__call_state_t state;
  /* The request, copied. */
  const char *method;
  dg__url_t url;
  dg_http_header_t *headers;
  size_t nheaders;
  const char *body;
  size_t body_len;
  char trace_id[33];
  dg_http_timeouts_t timeouts;
  size_t max_body;
  unsigned max_retries;
  unsigned max_redirects;
  bool retryable; /* idempotent, or the caller said retrying is safe */
  dg_http_address_policy_t policy;
  dg_http_head_fn on_head;
  dg_http_chunk_fn on_chunk;
  dg_http_done_fn done;
  void *user;
  /* Progress. */
  uint64_t start_ms;
  uint64_t deadline_ms;       /* the whole call */
  uint64_t phase_deadline_ms; /* the current phase, or the end of a backoff */
  uint64_t armed_ms;          /* when the running timer is due (0: next turn) */
  const char *phase;
  unsigned attempts;
  unsigned retries;
  unsigned redirects;
  bool stale_retried; /* a reused connection died once already */
  bool streamed;      /* a chunk reached on_chunk: no more retries */
  bool probe;         /* this attempt is the breaker's half-open probe */
  bool has_slot;      /* holds one of the connector's concurrency slots */
  bool canceled;
  dg__dns_waiter_t dns;
  dg__dns_addrs_t addrs;
  unsigned addr_index;
  char addr_refused[64]; /* the last address the policy refused */
  dg__uconn_t *conn;
  bool conn_reused;
  dg__body_mode_t body_mode;
  dg_buf_t body_buf;
  uint64_t retry_after_ms; /* from the last 429/503, or 0 */
  bool has_retry_after;
  /* The result. */
  dg_http_result_t result;
  dg_errctx_t err;
  dg_http_response_t response;
  /* Last: its header tables are never zeroed (see dg__resp_init). */
  dg__resp_t resp;
};

/* The response sink of every call (user data: the call). */
extern const dg__resp_sink_t dg__call_sink;
/* Starts a call created by client.c (state NEW). */
void dg__call_start(dg_http_call_t *call);
/* Completes the call with failure and a message (delivered on a later turn). */
void dg__call_fail(dg_http_call_t *call, dg_http_failure_t failure, int rc, const char *phase,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
void dg__call_cancel(dg_http_call_t *call);
/* Connection events. */
void dg__call_conn_connected(dg_http_call_t *call);
void dg__call_conn_ready(dg_http_call_t *call);
void dg__call_conn_data(dg_http_call_t *call, const char *data, size_t len);
void dg__call_conn_eof(dg_http_call_t *call);
/* The connection's turn to decode more of a held compressed body. */
void dg__call_conn_drain(dg_http_call_t *call);
void dg__call_conn_failed(dg_http_call_t *call, dg_http_failure_t failure, const char *why);
/* A queued call got its connector slot. */
void dg__call_admitted(dg_http_call_t *call);

/* ---- client.c ---- */
typedef enum dg__client_state { DG__CLIENT_RUNNING, DG__CLIENT_CLOSING } dg__client_state_t;

struct dg_http_client {
  uv_loop_t *loop;
  dg__client_state_t state;
  dg_http_client_config_t cfg;
  dg__dns_t *dns;
  dg__ctls_config_t *tls;
  dg__connector_t *connectors;
  unsigned nconnectors;
  dg_http_call_t *calls;
  unsigned ncalls;
  dg__pool_t *pools; /* origins with idle connections, most recently used first */
  unsigned npools;
  unsigned nidle;
  dg__uconn_t *conns; /* every open connection */
  unsigned handles;   /* calls' timers and connections not yet freed, plus the resolver */
  uint64_t rng;
  dg_spare_t spare;       /* freed calls kept for the next ones */
  char dns_servers[1025]; /* the configured name servers, or "" */
  bool rbuf_busy;
  char rbuf[DG__READ_BUF_SIZE];
};

/* A call or connection handle was freed: frees the client when closing and
 * nothing is left. */
void dg__client_handle_gone(dg_http_client_t *client);
/* Releases a call's memory: kept for the next call, or freed. */
void dg__client_call_free(dg_http_client_t *client, dg_http_call_t *call);
/* Uniform random number in [0, n). */
uint64_t dg__client_random(dg_http_client_t *client, uint64_t n);

#endif
