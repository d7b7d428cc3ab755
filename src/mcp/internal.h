/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Private declarations shared by the files of the mcp module. Never
 * included from outside src/mcp/ (unit tests and the fuzzer excepted).
 *
 * Pieces, bottom up:
 *   server.c     the server, its reference count and the deferred queue
 *   session.c    sessions (one per HTTP Mcp-Session-Id, WebSocket or stdio)
 *   exchange.c   exchanges: one incoming transport message (a JSON-RPC
 *                message or a batch) and the reply built for it
 *   methods.c    the method table: initialize, ping, tools/list, tools/call, ...
 *   tool_call.c  dg_mcp_tool_call_t: one running tool
 *   http.c, http_routes.c, ws.c, stdio.c   the transports
 *
 * Ownership: the server owns its sessions; an exchange holds a reference
 * to its session; a tool call holds a reference to its exchange until the
 * tool ends it, so a call whose client went away can still end safely. */
#ifndef DATAGATE_MCP_INTERNAL_H
#define DATAGATE_MCP_INTERNAL_H

#include <stdatomic.h>

#include "datagate/mcp.h"

/* JSON-RPC error codes, one per meaning: the standard ones, then the
 * server's (-32000 to -32099). An HTTP refusal of the transport carries
 * the code of its reason beside its status. */
#define DG__RPC_CODES(XX)                                                                          \
  XX(PARSE_ERROR, -32700)                                                                          \
  XX(INVALID_REQUEST, -32600)                                                                      \
  XX(METHOD_NOT_FOUND, -32601)                                                                     \
  XX(INVALID_PARAMS, -32602)                                                                       \
  XX(INTERNAL, -32603)                                                                             \
  XX(SERVER_BUSY, -32000)        /* 503: no room for the call, session or server */                \
  XX(UNAUTHORIZED, -32001)       /* 401 */                                                         \
  XX(RESOURCE_NOT_FOUND, -32002) /* MCP: resources/read of an unknown URI */                       \
  XX(BAD_TRANSPORT, -32003)      /* 400: a header the transport needs is missing or wrong */       \
  XX(SESSION_NOT_FOUND, -32004)  /* 404: the session ended or expired */                           \
  XX(CONFLICT, -32005)           /* 409: the session already has an event stream */                \
  XX(UNSUPPORTED_MEDIA, -32006)  /* 415: the body is not application/json */                       \
  /* A request the client cancelled, when an answer must still be given                            \
   * (the code LSP uses for it). */                                                                \
  XX(CANCELLED, -32800)

enum {
#define XX(name, value) DG__RPC_##name = (value),
  DG__RPC_CODES(XX)
#undef XX
};

/* Protocol versions by index into DG_MCP_VERSIONS. */
#define DG__MCP_NVERSIONS 4
#define DG__MCP_V2024_11_05 "2024-11-05"
#define DG__MCP_V2025_03_26 "2025-03-26"
#define DG__MCP_V2025_06_18 "2025-06-18"

/* An HTTP session id: DG__MCP_SID_BYTES signed bytes in base64url (sid.c).
 * WebSocket and stdio sessions have a shorter random id, for logs. */
#define DG__MCP_SID_BYTES 45
#define DG__MCP_SESSION_ID_LEN 60
#define DG__MCP_LOCAL_ID_LEN 32
#define DG__MCP_SESSION_BUCKETS 1024
#define DG__MCP_SSE_KEEPALIVE_MS 15000

typedef struct dg__mcp_session dg__mcp_session_t;
typedef struct dg__mcp_exchange dg__mcp_exchange_t;
typedef struct dg__mcp_sse dg__mcp_sse_t;

/* A transport's side of an exchange. Every function runs on a later loop
 * turn than the one that started the exchange. */
typedef struct dg__mcp_transport {
  const char *name; /* "http", "ws", "stdio" (metric and log label) */
  /* The reply is ready: one response, an array (batch) or NULL when there
   * is nothing to answer (notifications, responses, canceled requests).
   * reply is borrowed. The exchange is detached from the transport after
   * this returns. */
  void (*reply)(dg__mcp_exchange_t *ex, json_t *reply);
  /* A notification for the client that sent the exchange (progress);
   * borrowed. Optional. */
  void (*notify)(dg__mcp_exchange_t *ex, json_t *note);
  /* Whether a notification would be queued now: 0, DG_E2BIG while the
   * client's output is over half its limit (a sender may hold back or
   * drop), DG_ENOTSUP when this exchange cannot carry one (a JSON answer
   * rather than SSE), DG_ECLOSED when the client is gone. Optional: without
   * it notify is always tried. */
  int (*can_notify)(dg__mcp_exchange_t *ex);
  /* The session ended before the reply (deleted, expired, server closing).
   * The exchange is detached from the transport after this returns. */
  void (*abort)(dg__mcp_exchange_t *ex);
  /* The server ended the session (shutdown, send failure): close the
   * connection behind it. Optional. */
  void (*close)(dg__mcp_session_t *ss);
  /* A tool call of the session ended. Optional. */
  void (*call_ended)(dg__mcp_session_t *ss);
} dg__mcp_transport_t;

/* ---- State shared by the workers (shared.c, sid.c) ------------------------ */
struct dg_mcp_shared {
  unsigned char key[64]; /* HMAC key (a longer configured key is hashed) */
  size_t key_len;
  uint32_t instance;                 /* random: which start of the gateway issued an id */
  struct dg__mcp_shared_slot *table; /* buckets of slots, MAP_SHARED (shared.c) */
  size_t nbuckets;                   /* a power of two */
  size_t map_bytes;
  struct dg__mcp_ring *ring; /* recent relayed cancels, MAP_SHARED (shared.c) */
  unsigned workers;
};

/* What an id says once its signature is checked. */
typedef struct dg__mcp_sid {
  uint64_t tag;       /* 64 bits of the id's random nonce: its key in the table */
  uint64_t issued_ms; /* wall clock, milliseconds since 1970 */
  uint32_t instance;  /* dg_mcp_shared_t.instance of the issuer */
} dg__mcp_sid_t;

typedef enum dg__mcp_entry {
  DG__MCP_ENTRY_ABSENT,
  DG__MCP_ENTRY_LIVE,
  DG__MCP_ENTRY_ENDED,
} dg__mcp_entry_t;

/* Times in the table are monotonic milliseconds (dg_now_ms), the same
 * clock in every process of the machine. A slot is free for another
 * session once its time is idle_ms old. */
/* What the table holds for tag; *used_ms is its last use when present. */
dg__mcp_entry_t dg__mcp_shared_get(dg_mcp_shared_t *sh, uint64_t tag, uint64_t *used_ms);
/* Records tag as live, used at now. DG_EEXIST when present already;
 * DG_EBUSY when its bucket has no room (every slot taken by a session
 * used within idle_ms). Ended entries give way when there is no other
 * room. */
int dg__mcp_shared_add(dg_mcp_shared_t *sh, uint64_t tag, uint64_t now, uint64_t idle_ms);
/* Records a use at now when the recorded one is at least every_ms older
 * (so that a busy session does not write the shared line per request). */
void dg__mcp_shared_touch(dg_mcp_shared_t *sh, uint64_t tag, uint64_t now, uint64_t every_ms);
/* Records that the session ended: forget drops its slot (for an id of this
 * instance, absence means ended), otherwise it is kept as ended, freed
 * idle_ms after now. False when there was no room to record it. */
bool dg__mcp_shared_end(dg_mcp_shared_t *sh, uint64_t tag, uint64_t now, uint64_t idle_ms,
                        bool forget);

/* A new signed id for principal in out (NUL-terminated); info filled. */
int dg__mcp_sid_make(const dg_mcp_shared_t *sh, const char *principal,
                     char out[DG__MCP_SESSION_ID_LEN + 1], dg__mcp_sid_t *info);
/* True when id is a well-formed id signed with sh's key for principal
 * (compared in constant time); fills info. */
bool dg__mcp_sid_verify(const dg_mcp_shared_t *sh, const char *id, const char *principal,
                        dg__mcp_sid_t *info);
/* Wall clock milliseconds since 1970. */
uint64_t dg__mcp_wall_ms(void);

/* ---- Tools as the server keeps them ------------------------------------- */
/* A tool's call metrics over one transport, found once (the labels are
 * written only then). Slots beyond these are counted the slow way. */
#define DG__MCP_TOOL_TRANSPORTS 4
#define DG__MCP_CALL_OUTCOMES 4
typedef struct dg__mcp_tool_metrics {
  const char *transport; /* the transport's name (static); NULL: slot free */
  dg_metrics_ref_t calls[DG__MCP_CALL_OUTCOMES];
  dg_metrics_ref_t duration;
} dg__mcp_tool_metrics_t;

typedef struct dg__mcp_tool {
  const dg_tool_t *def;
  json_t *input_schema;
  json_t *accepted_schema; /* what arguments are checked against: input_schema or wider */
  json_t *output_schema;   /* NULL when the tool declares none */
  dg__mcp_tool_metrics_t metrics[DG__MCP_TOOL_TRANSPORTS];
} dg__mcp_tool_t;

/* ---- Cancels between the workers of one machine (shared.c) --------------- */
#define DG__MCP_ID_HASH_LEN 64 /* hex digits of a session id's SHA-256 */
/* A ring of the last DG__MCP_RING_SIZE relayed cancels in the shared map.
 * Entry n (counting every entry ever claimed) sits at n % size; its seq
 * is 2n + 1 while it is written and 2n + 2 once it is whole (a seqlock). */
#define DG__MCP_RING_SIZE 256
typedef struct dg__mcp_ring_entry {
  _Atomic unsigned long long seq;
  _Atomic unsigned long long origin; /* the writer's dg__mcp_ring_cursor_t.origin */
  char session[DG__MCP_ID_HASH_LEN + 1];
  char request[DG_MCP_RELAY_REQUEST_MAX + 1]; /* "": the whole session */
} dg__mcp_ring_entry_t;

typedef struct dg__mcp_ring {
  _Atomic unsigned long long head; /* entries ever claimed */
  dg__mcp_ring_entry_t entries[DG__MCP_RING_SIZE];
} dg__mcp_ring_t;

/* One reader's place in the ring. */
typedef struct dg__mcp_ring_cursor {
  uint64_t origin; /* this reader's entries, which it skips */
  uint64_t next;   /* the next entry to read */
  bool waited;     /* next was still being written at the last look */
} dg__mcp_ring_cursor_t;

typedef void (*dg__mcp_ring_fn)(const char *session, const char *request, void *data);

/* Adds a cancel (request NULL: the whole session); lengths as relayed. */
void dg__mcp_ring_post(dg_mcp_shared_t *sh, uint64_t origin, const char *session,
                       const char *request);
/* Starts c at the ring's head, with a new origin unique on the machine. */
void dg__mcp_ring_start(dg_mcp_shared_t *sh, dg__mcp_ring_cursor_t *c);
/* Hands each whole entry after c->next that another origin wrote to fn,
 * oldest first, and returns how many. A reader more than the ring behind
 * skips to the oldest entry still there; an entry still being written is
 * waited for once (until the next call), then skipped. */
size_t dg__mcp_ring_read(dg_mcp_shared_t *sh, dg__mcp_ring_cursor_t *c, dg__mcp_ring_fn fn,
                         void *data);

/* ---- Server ---------------------------------------------------------------- */
/* A token bucket: at most burst takes at once, refilled at per_second;
 * all zero is full. Each relayed cancel is a NOTIFY every gateway of the
 * database hears, so a session, and a worker over all of its sessions,
 * may relay only so many. */
typedef struct dg__mcp_budget {
  uint64_t at_ms;      /* when used was last drained */
  uint64_t used_milli; /* takes not yet refilled, in thousandths */
} dg__mcp_budget_t;

struct dg_mcp_server {
  uv_loop_t *loop;
  dg_mcp_config_t config;
  dg__mcp_tool_t *tools;
  size_t ntools;
  /* The tools/list array without and with outputSchema, built on first use
   * and shared by every answer: the tools do not change while the server
   * lives. */
  json_t *tool_list[3];     /* per tool_level (methods.c) */
  dg_catalog_t *cat;        /* the snapshot new exchanges use; one reference */
  dg_mcp_limits_t limits;   /* filled from cat by the owner */
  dg_auth_tokens_t *tokens; /* static tokens already matched (auth.h) */
  dg_mcp_shared_t *shared;  /* config.shared, or the server's own */
  bool owns_shared;
  dg_http_server_t *http;
  unsigned refs; /* the owner, sessions, closing handles */
  bool closing;
  /* Set by the owner (store open, catalog loaded; not draining); atomic
   * because tests set it from another thread. */
  atomic_bool ready;
  unsigned inflight;      /* tool calls not yet ended */
  unsigned nhttp;         /* open HTTP sessions (bounded by max_sessions) */
  unsigned nsessions;     /* open sessions of every transport */
  unsigned nconns;        /* WebSockets and SSE streams this module holds */
  dg__mcp_session_t *all; /* every open session */
  dg__mcp_session_t *buckets[DG__MCP_SESSION_BUCKETS]; /* HTTP sessions by id */
  dg__mcp_exchange_t *ready_head, *ready_tail;         /* replies waiting for the next turn */
  uv_idle_t flush;
  uv_timer_t sweep;
  uint64_t start_ms;
  dg_mcp_route_fn route; /* other routes of the same HTTP server, or NULL */
  void *route_data;
  const char *route_body_prefix; /* paths of route that take bodies, or NULL */
  dg_mcp_relay_fn relay;         /* cancels for other gateways, or NULL */
  void *relay_data;
  dg__mcp_budget_t relay_budget; /* every relayed cancel of this worker */
  uv_timer_t ring_timer;         /* reads the ring (more than one worker) */
  dg__mcp_ring_cursor_t ring;
};

void dg__mcp_server_ref(dg_mcp_server_t *s);
void dg__mcp_server_unref(dg_mcp_server_t *s);
/* Queues ex's reply for a later loop turn (a reference is held). */
void dg__mcp_server_queue(dg_mcp_server_t *s, dg__mcp_exchange_t *ex);
const dg__mcp_tool_t *dg__mcp_server_tool(const dg_mcp_server_t *s, const char *name);

/* ---- Sessions ----------------------------------------------------------- */
struct dg__mcp_session {
  dg_mcp_server_t *server;
  const dg__mcp_transport_t *transport;
  void *transport_data; /* ws or stdio connection; NULL for HTTP */
  unsigned refs;
  bool open;
  bool http;                     /* has an Mcp-Session-Id */
  const char *version;           /* negotiated protocol version; NULL before initialize */
  bool initialized;              /* notifications/initialized seen */
  bool elicitation;              /* the client declared form elicitation at initialize */
  char *principal;               /* HTTP: the principal name bound to the session */
  uint64_t last_active_ms;       /* HTTP idle expiry: the last use on this worker */
  dg__mcp_sid_t sid;             /* HTTP: what the id says */
  uint64_t event_seq;            /* SSE event ids */
  dg__mcp_exchange_t *exchanges; /* exchanges waiting for their reply */
  dg_mcp_tool_call_t *calls;     /* tool calls not yet ended */
  unsigned ncalls;
  dg__mcp_sse_t *sse; /* the GET stream, at most one */
  dg__mcp_session_t *all_prev, *all_next;
  dg__mcp_session_t *bucket_next;
  char id[DG__MCP_SESSION_ID_LEN + 1];
  char id_hash[DG__MCP_ID_HASH_LEN + 1]; /* HTTP: dg__mcp_id_hash of id, for relayed cancels */
  dg__mcp_budget_t relay_budget;         /* this session's relayed notifications/cancelled */
};

/* ---- Cancels between gateways (relay.c) ----------------------------------- */
#define DG__MCP_RELAY_SESSION_BURST 10
#define DG__MCP_RELAY_SESSION_PER_SECOND 1
#define DG__MCP_RELAY_WORKER_BURST 100
#define DG__MCP_RELAY_WORKER_PER_SECOND 20
/* Takes one from b at now_ms: true when there was one to take. */
bool dg__mcp_budget_take(dg__mcp_budget_t *b, uint32_t burst, uint32_t per_second, uint64_t now_ms);
/* The SHA-256 of a session id in lower-case hex: how a relayed cancel
 * names a session without giving its id away. */
void dg__mcp_id_hash(const char *id, char out[DG__MCP_ID_HASH_LEN + 1]);
/* A notifications/cancelled for a call of this HTTP session that no
 * session of this process runs: handed to the server's relay. */
void dg__mcp_relay_cancel(dg__mcp_session_t *ss, const json_t *request_id);
/* A DELETE of the session with this id: handed to the server's relay. */
void dg__mcp_relay_delete(dg_mcp_server_t *s, const char *id);
/* Hands every cancel another worker put in the ring since the last look
 * to dg_mcp_server_cancel_relayed (the server's ring timer). */
void dg__mcp_relay_read_ring(dg_mcp_server_t *s);

/* A session bound to a transport; one reference for the caller. */
int dg__mcp_session_new(dg_mcp_server_t *s, const dg__mcp_transport_t *t, void *transport_data,
                        dg__mcp_session_t **out);
/* An HTTP session with a fresh signed id bound to principal, recorded in
 * the shared table; DG_EBUSY at server.max_sessions or when the table has
 * no room. One reference is the server table's. */
int dg__mcp_session_new_http(dg_mcp_server_t *s, const char *principal, dg__mcp_session_t **out);
/* The open HTTP session named by id for principal: one this worker holds,
 * or one another worker (or instance with the same key) issued, taken over
 * at protocol version `version` (the MCP-Protocol-Version header; NULL or
 * unknown: 2025-03-26). Returns 0, DG_ENOENT (unknown, forged, another
 * principal's, ended or expired: answered with 404) or DG_EBUSY (no room
 * to take it over). */
int dg__mcp_session_open(dg_mcp_server_t *s, const char *id, const char *principal,
                         const char *version, dg__mcp_session_t **out);
/* DELETE: ends the session named by id on every worker. 0 or DG_ENOENT. */
int dg__mcp_session_delete(dg_mcp_server_t *s, const char *id, const char *principal);
/* Ends the session on every worker (an initialize that failed). */
void dg__mcp_session_revoke(dg__mcp_session_t *ss);
/* Ends the session here: cancels its calls, aborts its exchanges, closes
 * its SSE stream, removes it from the table. Idempotent. */
void dg__mcp_session_end(dg__mcp_session_t *ss);
void dg__mcp_session_ref(dg__mcp_session_t *ss);
void dg__mcp_session_unref(dg__mcp_session_t *ss);
/* The session's activity clock restarts (HTTP idle expiry). */
void dg__mcp_session_touch(dg__mcp_session_t *ss);
/* Ends HTTP sessions idle past server.session_idle_timeout_ms on every
 * worker, past their lifetime, or ended by another worker; records the
 * sessions in use here as used in the shared table. */
void dg__mcp_session_sweep(dg_mcp_server_t *s);
/* True when the negotiated version is at least v ("2025-06-18"). */
bool dg__mcp_session_at_least(const dg__mcp_session_t *ss, const char *v);

/* ---- Exchanges ------------------------------------------------------------ */
typedef struct dg__mcp_slot {
  json_t *id;               /* the request's id (borrowed from the message) */
  json_t *response;         /* owned once answered */
  dg_mcp_tool_call_t *call; /* the running tool call answering this slot */
  bool done;                /* answered or dropped */
} dg__mcp_slot_t;

struct dg__mcp_exchange {
  dg_mcp_server_t *server;
  dg__mcp_session_t *session;           /* reference held; NULL until bound */
  const dg__mcp_transport_t *transport; /* NULL once replied, aborted or gone */
  void *data;                           /* the transport's per-exchange state */
  dg_arena_t *arena;
  dg_catalog_t *cat;      /* the snapshot this message runs on; one reference */
  dg_mcp_limits_t limits; /* that snapshot's, borrowing from it */
  const dg_principal_t *principal;
  const char *request_id; /* the HTTP request id, or NULL */
  const char *trace_id;   /* a trace the HTTP request continues, or NULL */
  json_t *msg;
  dg__mcp_slot_t *slots;
  size_t nslots;
  size_t open; /* slots not yet done */
  unsigned refs;
  const char *refusal; /* set: every request is answered with this error */
  int refusal_code;
  bool batch;
  bool running; /* dispatch in progress: the reply waits */
  bool queued;
  dg__mcp_exchange_t *prev, *next; /* the session's exchanges */
  dg__mcp_exchange_t *ready_next;
};

/* A new exchange on the server's current catalog; one reference. */
dg__mcp_exchange_t *dg__mcp_exchange_new(dg_mcp_server_t *s);
/* Attaches the exchange to its session and transport. */
void dg__mcp_exchange_bind(dg__mcp_exchange_t *ex, dg__mcp_session_t *ss,
                           const dg__mcp_transport_t *t, void *data);
/* Parses text as one transport message and dispatches it; the reply comes
 * through the transport on a later loop turn. */
void dg__mcp_exchange_run_text(dg__mcp_exchange_t *ex, const char *text, size_t len);
/* Parses one transport message (dg_json_parse_message). NULL when it
 * cannot be answered but with id null: *code and message say how. A
 * message returned with *code set holds a repeated key or a value that
 * could not be read: every request in it is to be answered with that
 * error (dg__mcp_exchange_refuse). */
json_t *dg__mcp_parse(const char *text, size_t len, int *code, char *message, size_t size);
/* Every request of the exchange is answered with this error (copied). */
void dg__mcp_exchange_refuse(dg__mcp_exchange_t *ex, int code, const char *message);
/* Dispatches an already parsed message (stolen). */
void dg__mcp_exchange_run(dg__mcp_exchange_t *ex, json_t *msg);
/* Parses text as dg__mcp_exchange_run_text does, but answers every request
 * in it with this error (carrying the request's id, so that the client can
 * match it) and drops notifications: for a caller that may no longer use
 * the server, such as a token that a reload removed. */
void dg__mcp_exchange_refuse_text(dg__mcp_exchange_t *ex, int code, const char *message,
                                  const char *text, size_t len);
/* Answers exchange ex with a single error (id null) without dispatching. */
void dg__mcp_exchange_fail(dg__mcp_exchange_t *ex, int code, const char *message);
/* The client of the exchange went away: its calls are canceled, nothing
 * more reaches the transport, and the transport's reference is dropped. */
void dg__mcp_exchange_gone(dg__mcp_exchange_t *ex);
/* Delivers the reply now (from the deferred queue). */
void dg__mcp_exchange_deliver(dg__mcp_exchange_t *ex);
/* Slot i is answered (response stolen; NULL drops it). */
void dg__mcp_exchange_answer(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, json_t *response);
void dg__mcp_exchange_ref(dg__mcp_exchange_t *ex);
void dg__mcp_exchange_unref(dg__mcp_exchange_t *ex);

/* JSON-RPC envelopes (new references). id may be NULL (null id). */
json_t *dg__mcp_result(const json_t *id, json_t *result);
json_t *dg__mcp_error(const json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A JSON string of text for a message to the client. A message cut by a
 * length limit may end inside a UTF-8 sequence, which jansson refuses:
 * such bytes become U+FFFD, so that an answer is never lost to them. */
json_t *dg__mcp_text(const char *text);
/* True when some request of msg carries params._meta.progressToken. */
bool dg__mcp_wants_progress(const json_t *msg);
/* True when msg is one request (not a batch) whose method is m. */
bool dg__mcp_is_request(const json_t *msg, const char *m);
/* Serialises compactly into out (bounded by out->max); 0 or DG_E2BIG. */
int dg__mcp_dump(const json_t *value, dg_buf_t *out);
/* The hard ceiling of one serialised message of ex on any transport: twice
 * the configured result limit (a result appears as text and as
 * structuredContent) and room for the envelope around it. */
size_t dg__mcp_reply_limit(const dg__mcp_exchange_t *ex);
/* A method name as a bounded metric label. */
const char *dg__mcp_method_label(const char *method);
/* The method labels besides "other", and a method's index among them
 * (DG__MCP_METHOD_LABELS for "other"). */
#define DG__MCP_METHOD_LABELS 10
size_t dg__mcp_method_index(const char *method);

/* ---- Methods (methods.c) ------------------------------------------------ */
/* Handles one request; answers slot now or starts a tool call that will. */
void dg__mcp_handle_request(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, const char *method,
                            json_t *params);
void dg__mcp_handle_notification(dg__mcp_exchange_t *ex, const char *method, json_t *params);

/* ---- Tool calls (tool_call.c) -------------------------------------------- */
/* A resources/read answered by a tool call: the URI (in the exchange's
 * arena) and how the tool's answer becomes the contents. */
typedef struct dg__mcp_read {
  const char *uri;
  dg_mcp_contents_fn contents;
} dg__mcp_read_t;

/* Validates and runs tools/call, or with read a resources/read through
 * the tool (params {name, arguments}); answers slot now or when the tool
 * ends. */
void dg__mcp_call_start(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, const dg__mcp_tool_t *tool,
                        json_t *params, const dg__mcp_read_t *read);
/* notifications/cancelled: cancels the session's running call with this
 * request id; its response is not sent. False when no call has that id. */
bool dg__mcp_call_cancel_id(dg__mcp_session_t *ss, const json_t *request_id);
/* The client is gone: the call is canceled and detached from its slot. */
void dg__mcp_call_detach(dg_mcp_tool_call_t *call);
/* A response from the client (msg: {id, result | error}): the answer to a
 * pending elicitation of one of the session's calls, or ignored. */
void dg__mcp_call_response(dg__mcp_session_t *ss, const json_t *msg);
/* True when msg is a tools/call of a tool that may ask the user and the
 * session's client can be asked (methods.c). */
bool dg__mcp_may_elicit(const dg__mcp_exchange_t *ex, const json_t *msg);

/* ---- Transports ------------------------------------------------------------ */
extern const dg__mcp_transport_t dg__mcp_http_transport;
/* Streamable HTTP at /mcp (http.c). */
void dg__mcp_http_mcp(dg_mcp_server_t *s, dg_http_request_t *req);
/* The GET stream of a session ends (session ended or server closing). */
void dg__mcp_sse_close(dg__mcp_sse_t *sse);
/* WebSocket upgrade at /mcp (ws.c): also answers a request that asks for
 * a WebSocket but is not a valid upgrade (400, 426). */
void dg__mcp_ws_upgrade(dg_mcp_server_t *s, dg_http_request_t *req);
/* True when a comma-separated header lists token (parameters after ';'
 * and case ignored), as Accept lists media types (http.c). */
bool dg__mcp_lists_token(const char *header, const char *token);
/* Checks the Origin header against server.allowed_origins. */
bool dg__mcp_origin_allowed(const dg_mcp_limits_t *limits, const char *origin);
/* Answers 401 with WWW-Authenticate and {error: message}. */
/* 401 with the RFC 6750 challenge; token_given: a bearer token was sent
 * and failed (error="invalid_token"). */
void dg__mcp_http_unauthorized(dg_mcp_server_t *s, dg_http_request_t *req, bool token_given,
                               const char *message);
/* Whether an Authorization value carries a bearer token at all. */
bool dg__mcp_bearer_given(const char *authorization);
/* Answers a JSON body {error: message} with the given status. */
void dg__mcp_http_error(dg_http_request_t *req, int status, const char *message);
/* The server's public base URL ("https://host:port", no trailing slash). */
const char *dg__mcp_base_url(const dg_mcp_server_t *s, dg_http_request_t *req);
/* /healthz, /metrics, the OAuth metadata; false when path is none of them. */
bool dg__mcp_http_route(dg_mcp_server_t *s, dg_http_request_t *req);

#endif
