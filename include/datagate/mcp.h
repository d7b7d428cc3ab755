/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* mcp: the Model Context Protocol over JSON-RPC 2.0. Owns the lifecycle
 * (initialize, version negotiation, sessions), the tool registry and
 * argument validation against each tool's JSON Schema, and the three
 * transports: Streamable HTTP (with SSE) and WebSocket at /mcp on the
 * net server, and newline-delimited stdio. It also serves the gateway's
 * small HTTP routes (/healthz, /metrics, OAuth protected-resource
 * metadata). mcp knows nothing of data models: tools do.
 *
 * Threading: every function here runs on the loop thread. */
#ifndef DATAGATE_MCP_H
#define DATAGATE_MCP_H

#include <jansson.h>
#include <stdbool.h>
#include <uv.h>

#include "datagate/auth.h"
#include "datagate/base.h"
#include "datagate/catalog.h"
#include "datagate/net.h"

/* Protocol versions, newest first; initialize negotiates among these. */
#define DG_MCP_VERSIONS                                                                            \
  { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" }

/* ---- Tools -------------------------------------------------------------- */
typedef struct dg_mcp_tool_call dg_mcp_tool_call_t;

typedef struct dg_tool {
  const char *name;
  const char *title;
  /* What the tool does and which tool to call first (shown to assistants). */
  const char *description;
  const char *input_schema;  /* JSON Schema (draft 2020-12 subset), as JSON text */
  const char *output_schema; /* JSON Schema of structuredContent, as JSON text */
  /* What tools/call accepts when it is wider than input_schema (NULL: the
   * same). tools/list shows input_schema, kept to one type per field for
   * function-calling clients that take no more; this one may still accept,
   * say, a number where the listed schema asks for its text. */
  const char *accepted_schema;
  bool read_only;
  bool destructive;
  bool idempotent;
  bool open_world; /* talks to external systems */
  /* May ask the user through the client while it runs (elicitation/create):
   * over HTTP its calls are then answered as an SSE stream when the client
   * declared elicitation, so that the question can travel on it. */
  bool elicits;
  /* Runs the tool with arguments already validated against input_schema.
   * The tool ends the call exactly once with dg_mcp_tool_call_succeed or
   * dg_mcp_tool_call_fail*, now or from a later callback on the loop thread. */
  void (*run)(dg_mcp_tool_call_t *call);
} dg_tool_t;

/* Arguments (a JSON object, borrowed; defaults from the schema filled in). */
json_t *dg_mcp_tool_call_args(const dg_mcp_tool_call_t *call);
const dg_principal_t *dg_mcp_tool_call_principal(const dg_mcp_tool_call_t *call);
/* The catalog snapshot the call runs against (held until the call ends). */
const dg_catalog_t *dg_mcp_tool_call_catalog(const dg_mcp_tool_call_t *call);
/* Bytes the call's result may take when written out (server.maxResultBytes;
 * no limit when that is 0). */
size_t dg_mcp_tool_call_result_limit(const dg_mcp_tool_call_t *call);
uv_loop_t *dg_mcp_tool_call_loop(const dg_mcp_tool_call_t *call);
/* Arena released when the call has ended and its result was sent. */
dg_arena_t *dg_mcp_tool_call_arena(const dg_mcp_tool_call_t *call);
const char *dg_mcp_tool_call_request_id(const dg_mcp_tool_call_t *call);
/* The trace id (32 hex digits) of the traceparent the request came with,
 * for the upstream calls it makes; NULL when it came with none. */
const char *dg_mcp_tool_call_trace_id(const dg_mcp_tool_call_t *call);
const char *dg_mcp_tool_call_transport(const dg_mcp_tool_call_t *call); /* "http", "ws", "stdio" */
/* Opaque per-tool-module context given in dg_mcp_config_t.tool_context. */
void *dg_mcp_tool_call_context(const dg_mcp_tool_call_t *call);

/* Cancellation (notifications/cancelled, client gone, tool timeout). The
 * callback runs once on the loop thread; the tool must still end the call
 * (with dg_mcp_tool_call_fail; its result is then dropped). */
bool dg_mcp_tool_call_canceled(const dg_mcp_tool_call_t *call);
void dg_mcp_tool_call_on_cancel(dg_mcp_tool_call_t *call,
                                void (*fn)(dg_mcp_tool_call_t *call, void *data), void *data);
/* Sends notifications/progress when the caller gave a progress token;
 * total < 0 means unknown, message may be NULL. No-op otherwise. */
void dg_mcp_tool_call_progress(dg_mcp_tool_call_t *call, double progress, double total,
                               const char *message);
/* As dg_mcp_tool_call_progress, with meta (borrowed; may be NULL) sent as
 * params._meta, for data that travels with the progress (a streamed chunk's
 * offsets). Returns 0 when the notification was queued for the client,
 * DG_ENOTSUP when the caller gave no progress token or the transport cannot
 * carry it (a JSON answer rather than SSE), DG_ECLOSED when the client is
 * gone, DG_E2BIG when the client's unsent output is over half its limit
 * (nothing was sent: progress is advisory; a sender may try again later or
 * stop). */
int dg_mcp_tool_call_progress_meta(dg_mcp_tool_call_t *call, double progress, double total,
                                   const char *message, json_t *meta);
/* True when the caller gave a progress token (chunks may be streamed). */
bool dg_mcp_tool_call_wants_progress(const dg_mcp_tool_call_t *call);

/* ---- Asking the user (elicitation, protocol 2025-06-18 and later) ------- */
typedef enum dg_elicit_action {
  DG_ELICIT_ACCEPT,
  DG_ELICIT_DECLINE,
  DG_ELICIT_CANCEL,
} dg_elicit_action_t;

/* The user's answer: status 0 with the action and, for accept, the content
 * the user gave (borrowed, may be NULL); or a DG_E* code: DG_EPROTO when
 * the client answered with an error or an answer that is not one,
 * DG_ECANCELED when the call was canceled, timed out or its client went
 * away (the call then still has to be ended). Fires once, on a later loop
 * turn than dg_mcp_tool_call_elicit. */
typedef void (*dg_mcp_tool_call_elicit_cb)(dg_mcp_tool_call_t *call, int status,
                                           dg_elicit_action_t action, const json_t *content,
                                           void *data);

/* True when the caller can be asked now: the client declared form
 * elicitation at initialize, the session's protocol is 2025-06-18 or
 * later, and the call's transport can carry a request to it (over HTTP, a
 * call answered as an SSE stream). */
bool dg_mcp_tool_call_can_elicit(const dg_mcp_tool_call_t *call);
/* Sends elicitation/create with message and requested_schema (a flat
 * object of primitive properties; borrowed) to the caller's client. While
 * the user decides, the call's timeout is replaced by a wait of at most
 * DG_MCP_ELICIT_WAIT_MS; it restarts in full with the answer. Returns 0
 * (cb follows), DG_ENOTSUP when the caller cannot be asked, DG_EBUSY when a
 * question of this call is pending, DG_ENOMEM. */
#define DG_MCP_ELICIT_WAIT_MS (10u * 60u * 1000u)
int dg_mcp_tool_call_elicit(dg_mcp_tool_call_t *call, const char *message,
                            const json_t *requested_schema, dg_mcp_tool_call_elicit_cb cb,
                            void *data);

/* Ends the call with structuredContent = result (stolen) and the same JSON
 * as one text content item. */
void dg_mcp_tool_call_succeed(dg_mcp_tool_call_t *call, json_t *result);
/* As dg_mcp_tool_call_succeed, but the text content item is text (len bytes,
 * copied) instead of result written out: for a result whose text a client
 * should read differently, such as document text fenced as untrusted. The
 * text is bounded by the result limit like any result. */
void dg_mcp_tool_call_succeed_text(dg_mcp_tool_call_t *call, json_t *result, const char *text,
                                   size_t len);
/* Ends the call with isError: true and err->message as the text (naming the
 * parameter, what was given and what is allowed). */
void dg_mcp_tool_call_fail(dg_mcp_tool_call_t *call, const dg_errctx_t *err);
void dg_mcp_tool_call_failf(dg_mcp_tool_call_t *call, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* ---- Argument validation (also used by tests and fuzzers) --------------
 * Validates value against a schema (parsed JSON Schema subset: type, enum,
 * const, minimum, maximum, minLength, maxLength, pattern-free format
 * "uuid"/"uri", items, minItems, maxItems, properties, required,
 * additionalProperties false, default). Fills defaults into objects.
 * On failure err names the parameter path (e.g. "paging.pageSize"), the
 * value given and what is allowed. */
int dg_mcp_schema_validate(const json_t *schema, json_t *value, dg_errctx_t *err);

/* ---- What the worker processes of one machine share ---------------------
 * An HTTP session id is signed (HMAC-SHA256) with a key that every worker
 * holds, so that any worker can check an id another one issued and take
 * the session over. A fixed-size table in memory shared by the workers
 * records, per session, when it was last used and whether it ended, so
 * that DELETE and idle expiry on one worker hold on all of them. Made once,
 * before the workers are forked, by the process that forks them. The key
 * is server.sessionKeyEnv's when configured (several machines then accept
 * each other's ids), else random bytes from the kernel. */
typedef struct dg_mcp_shared dg_mcp_shared_t;

/* ---- Limits and settings ---------------------------------------------------
 * What mcp needs of the configuration, as plain data: the owner fills it
 * from each catalog snapshot (the server.* settings and OAuth) and hands it
 * over with that snapshot, so an exchange keeps the limits of the snapshot
 * it started on. Strings and arrays are borrowed from the snapshot. */
typedef struct dg_mcp_limits {
  const char *host;       /* listen address; NULL: 127.0.0.1 */
  int port;               /* the configured port (when no HTTP server is attached) */
  const char *public_url; /* advertised base URL, or NULL */
  const char *const *allowed_origins;
  size_t nallowed_origins;
  const char *const *allowed_hosts; /* NULL: loopback names and the listen address */
  size_t nallowed_hosts;
  size_t max_body_bytes;
  size_t max_write_buffer;
  size_t max_result_bytes; /* 0: no limit */
  unsigned max_sessions;
  unsigned max_inflight_per_session;
  uint64_t session_idle_timeout_ms;
  uint64_t session_max_lifetime_ms;
  uint64_t tool_timeout_ms;
  const unsigned char *session_key; /* NULL: random bytes */
  size_t session_key_len;
  const char *stdio_user; /* NULL: none, or not a configured user */
  bool oauth_enabled;
  const char *oauth_issuer;
} dg_mcp_limits_t;

/* Sizes the table for `workers` processes of limits->max_sessions
 * sessions each, keyed with limits->session_key. Returns 0, or DG_ENOMEM /
 * DG_EIO with err set. */
int dg_mcp_shared_new(const dg_mcp_limits_t *limits, unsigned workers, dg_mcp_shared_t **out,
                      dg_errctx_t *err);
/* Drops this process's view of the table and wipes its copy of the key;
 * other processes keep theirs. NULL is ignored. */
void dg_mcp_shared_free(dg_mcp_shared_t *shared);

/* ---- Resources -------------------------------------------------------------
 * A resource is read by running one of the server's tools: the provider
 * maps a URI to a tool and its arguments, so that a read has exactly the
 * tool's permissions, limits and truncation, and turns the tool's answer
 * into the resource's contents. */

/* The contents array of a read (new reference) from the tool's result
 * written out as compact JSON (text, len bytes), or NULL when the resource
 * does not exist (answered with error -32002). */
typedef json_t *(*dg_mcp_contents_fn)(const char *uri, const char *text, size_t len);

typedef struct dg_mcp_resource_read {
  const char *tool;            /* the name of the tool that answers */
  json_t *args;                /* its arguments (a new reference, handed over) */
  dg_mcp_contents_fn contents; /* its answer as contents */
} dg_mcp_resource_read_t;

typedef struct dg_mcp_resources {
  /* resources/list: [{uri, name, title?, description?, mimeType?}] of what
   * p may read (new reference; NULL when out of memory). */
  json_t *(*list)(const dg_catalog_t *cat, const dg_principal_t *p);
  /* resources/templates/list: [{uriTemplate, name, ...}] (new reference). */
  json_t *(*templates)(void);
  /* resources/read: 0 with *out, or DG_ENOENT with err for a URI that
   * names no resource (answered with -32002). */
  int (*resolve)(const char *uri, dg_mcp_resource_read_t *out, dg_errctx_t *err);
} dg_mcp_resources_t;

/* ---- Server --------------------------------------------------------------- */
typedef struct dg_mcp_config {
  const char *server_name; /* "datagate" */
  const char *server_version;
  const char *instructions; /* initialize result: the order to call tools in */
  const dg_tool_t *const *tools;
  size_t ntools;
  void *tool_context; /* handed to tools through dg_mcp_tool_call_context */
  /* NULL: no resources (the capability is not declared). */
  const dg_mcp_resources_t *resources;
  /* Borrowed; it must outlive the server. NULL: the server makes its own
   * (one process, a random key). */
  dg_mcp_shared_t *shared;
} dg_mcp_config_t;

typedef struct dg_mcp_server dg_mcp_server_t;

/* Creates the server with the first catalog snapshot (a reference is
 * taken) and the limits filled from it (copied). Tool schemas are parsed
 * here; a bad schema is DG_ECONFIG. */
int dg_mcp_server_new(uv_loop_t *loop, const dg_mcp_config_t *config, dg_catalog_t *cat,
                      const dg_mcp_limits_t *limits, dg_mcp_server_t **out, dg_errctx_t *err);
/* Swaps the catalog and its limits used by calls that start from now on
 * (SIGHUP). */
void dg_mcp_server_set_catalog(dg_mcp_server_t *server, dg_catalog_t *cat,
                               const dg_mcp_limits_t *limits);
/* Cancels calls in flight, ends sessions, frees the server. */
void dg_mcp_server_free(dg_mcp_server_t *server);
/* Number of tool calls running (for graceful drain). */
unsigned dg_mcp_server_inflight(const dg_mcp_server_t *server);
/* Optional: the HTTP server whose connections /healthz reports. Attach
 * NULL before closing that server. Without it /healthz counts the
 * connections this module holds (WebSockets and SSE streams). */
void dg_mcp_server_attach_http(dg_mcp_server_t *server, dg_http_server_t *http);

/* Whether /readyz answers 200: the owner says so once the store is open
 * and the catalog loaded, and takes it back when it starts to drain. A new
 * server is not ready. */
void dg_mcp_server_set_ready(dg_mcp_server_t *server, bool ready);
/* Routes of another module on the same HTTP server: route answers a
 * request it owns and returns true, or returns false to leave it alone.
 * Asked before the 404 of an unknown path. Requests whose path starts with
 * body_prefix (may be NULL: none) may send a body, read only once their
 * bearer token is valid; route checks everything else (role, Origin). */
typedef bool (*dg_mcp_route_fn)(dg_http_request_t *req, void *data);
void dg_mcp_server_set_route(dg_mcp_server_t *server, dg_mcp_route_fn route, void *data,
                             const char *body_prefix);

/* Cancels between gateways. A notifications/cancelled for a call no
 * session of this process runs, and every DELETE of a session, are handed
 * to relay, so that the gateway (or worker) running the call can hear
 * them; the owner passes them on through the store, and what the other
 * gateways hear comes back through dg_mcp_server_cancel_relayed. session
 * is the SHA-256 of the session id as 64 lower-case hex digits, never the
 * id; request is the request id as compact JSON text in ASCII (at most
 * DG_MCP_RELAY_REQUEST_MAX bytes; a longer id is not relayed), or NULL
 * for the whole session (DELETE). Only HTTP sessions are relayed: a
 * WebSocket or stdio session lives in one process. */
#define DG_MCP_RELAY_REQUEST_MAX 200
typedef void (*dg_mcp_relay_fn)(const char *session, const char *request, void *data);
void dg_mcp_server_set_relay(dg_mcp_server_t *server, dg_mcp_relay_fn relay, void *data);
/* A cancel relayed by a gateway (this one included): stops the call with
 * that request id of the HTTP session this process holds under that hash,
 * as a local notifications/cancelled does, or with request NULL ends the
 * session as a DELETE does. Anything else (an unknown session or call, a
 * request that is not the JSON text of a string or an integer) is ignored. */
void dg_mcp_server_cancel_relayed(dg_mcp_server_t *server, const char *session,
                                  const char *request);
/* Hands a cancel given to the relay to the other workers of this machine
 * (dg_mcp_shared_new's workers) through the map they share, for a store
 * that cannot publish it (SQLite); each worker reads them on a timer and
 * applies them as dg_mcp_server_cancel_relayed does. Does nothing with
 * one worker, or for a session or request of the wrong length. */
void dg_mcp_server_share_cancel(dg_mcp_server_t *server, const char *session, const char *request);

/* The HTTP handler for a dg_http_server whose data is the dg_mcp_server_t:
 * /mcp (POST, GET, DELETE, WebSocket upgrade), /healthz, /readyz,
 * /metrics, /.well-known/oauth-protected-resource[/mcp]; 404 otherwise. */
void dg_mcp_http_handler(dg_http_request_t *req);
/* The admit callback that goes with it: only a request to /mcp from an
 * allowed Origin with a valid bearer token may send a body; the others
 * are answered (401, 403, 405, 404) without it being read. */
bool dg_mcp_http_admit(dg_http_request_t *req);

/* MCP over newline-delimited JSON on in_fd/out_fd as the configured stdio
 * user (server.stdioUser). on_eof fires (on a later loop turn, once) when
 * input has ended, every call has finished and all output is written.
 * Pipes, sockets and terminals are closed with the server; regular files
 * are left open. Returns DG_ECONFIG when the stdio user is not configured,
 * DG_EINVAL when the descriptors are equal or of an unusable kind. */
int dg_mcp_stdio_start(dg_mcp_server_t *server, int in_fd, int out_fd, void (*on_eof)(void *data),
                       void *data);

#endif
