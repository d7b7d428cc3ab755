/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* save: what calls external APIs on behalf of Data Models: connector calls
 * (with their authentication) and the save action tree, plus the expansion
 * of a configured request's parts with the templates of text.h, a Saved
 * Query's answer mapped onto its model and aggregated as aggregate_entities
 * aggregates stored records (store.h's functions, auth.h's visibility).
 */
#ifndef DATAGATE_SAVE_H
#define DATAGATE_SAVE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "datagate/auth.h"
#include "datagate/base.h"
#include "datagate/catalog.h"
#include "datagate/client.h"
#include "datagate/store.h"
#include "datagate/text.h"

/* ---- Requests ------------------------------------------------------------ */
/* The parts of a configured request (a Saved Query's or a save action's),
 * expanded with lookup the way dg_template_expand does; on failure err
 * names the placeholder and out may hold part of the text.
 * - path: the path, then the query string; a parameter whose placeholders
 *   all lack a value (DG_TVAL_ABSENT) is left out.
 * - graphql_body: {"query":...,"operationName":...,"variables":{...}}
 *   (operationName only when configured, {} without variables).
 * - headers: each header value expanded (RAW, at most max bytes) and copied
 *   into arena, with Content-Type: application/json added when json_body;
 *   *out and *nout are set even on failure. */
int dg_template_request_path(const dg_saved_request_t *r, dg_template_lookup_fn lookup, void *data,
                             dg_buf_t *out, dg_errctx_t *err);
int dg_template_graphql_body(const dg_saved_request_t *r, dg_template_lookup_fn lookup, void *data,
                             dg_buf_t *out, dg_errctx_t *err);
int dg_template_request_headers(const dg_saved_request_t *r, dg_template_lookup_fn lookup,
                                void *data, bool json_body, size_t max, dg_arena_t *arena,
                                dg_http_header_t **out, size_t *nout, dg_errctx_t *err);

/* ---- Connector calls -----------------------------------------------------
 * Calls a configured connector through the HTTP client of client.h: the URL
 * is the connector's base URL plus the request's path (and query), the
 * connector's headers and authentication are added, and its limits apply
 * (timeouts, retries, redirects, response cap, address policy, CA file,
 * concurrency and circuit breaker). OAuth 2.0 client-credentials tokens are
 * fetched through the same client, cached until shortly before they
 * expire, shared by concurrent calls, and fetched again once when the API
 * answers 401 to a cached token. Secrets never appear in logs or errors.
 *
 * Threading: every function runs on the loop thread. */
struct dg_http_client;   /* client.h */
struct dg_http_response; /* client.h */
typedef struct dg_connectors dg_connectors_t;
typedef struct dg_connector_call dg_connector_call_t;

/* A download through a connector (get_file_text): the body of a 2xx answer
 * is handed over as it arrives instead of being collected, within the
 * caller's caps. The callbacks get the user of dg_connectors_call. */
typedef struct dg_connector_stream {
  size_t max_body_bytes; /* decoded body cap; 0: the connector's maxResponseBytes */
  uint64_t timeout_ms;   /* the whole call; 0: the connector's */
  bool no_redirects;     /* a 3xx answer is the result (rc 0) for the caller to judge */
  /* The final response's head (any status) before its body; a negative
   * DG_E* code aborts the call with that code. Optional. */
  int (*on_head)(int status, const dg_http_header_t *headers, size_t nheaders, void *user);
  /* Body bytes of a 2xx answer, valid during the call; a negative DG_E*
   * code aborts the call. Optional: without it the body is collected. */
  int (*on_chunk)(const char *data, size_t len, void *user);
} dg_connector_stream_t;

typedef struct dg_connector_request {
  const char *method; /* GET, POST, PUT, PATCH or DELETE */
  /* Appended to the base URL: "" or starting with '/', already encoded,
   * optionally with "?query". */
  const char *path;
  const dg_http_header_t *headers; /* besides the connector's own */
  size_t nheaders;
  const void *body;
  size_t body_len;
  bool retry_unsafe;                   /* a POST or PATCH that may be retried anyway */
  const char *request_id;              /* the tool call's, for traceparent (may be NULL) */
  const char *trace_id;                /* a trace continued, or NULL (from request_id) */
  const dg_connector_stream_t *stream; /* a download; NULL for an ordinary call */
} dg_connector_request_t;

typedef struct dg_connector_result {
  int rc; /* 0 for a 2xx response, otherwise a DG_E* code */
  /* When rc != 0: one sentence naming the connector, the method and URL
   * (without query) and why: DNS, refused, timeout (and of what), TLS,
   * an HTTP status with a short excerpt of the body, a missing credential,
   * a failed token request. param is "upstream". */
  const dg_errctx_t *err;
  /* The final response (2xx, or the failing status), or NULL; valid during
   * the callback only. */
  const struct dg_http_response *response;
  unsigned attempts; /* attempts of the API call, retries included */
  uint64_t elapsed_ms;
} dg_connector_result_t;

/* Called exactly once per started call, never from inside the call that
 * started it; the call is freed when it returns. */
typedef void (*dg_connector_done_fn)(dg_connector_call_t *call, const dg_connector_result_t *result,
                                     void *user);

/* Creates the connector runtime. client is the process's HTTP client, or
 * NULL to have the runtime create (and close) its own. Connectors with a
 * caFile get a client of their own trusting it. */
int dg_connectors_new(uv_loop_t *loop, struct dg_http_client *client, dg_connectors_t **out,
                      dg_errctx_t *err);
/* Applies the connectors of a catalog snapshot (start-up and reload): their
 * concurrency and breaker limits, and a client per CA file. Cached OAuth
 * tokens of connectors whose credentials changed are dropped. */
int dg_connectors_configure(dg_connectors_t *cs, const dg_catalog_t *cat, dg_errctx_t *err);
/* Starts a call on conn, which must stay valid until done (callers hold a
 * catalog reference). Returns 0 and done follows once on a later loop turn,
 * or DG_EINVAL / DG_ECLOSED with err set (nothing started, done never
 * called). *out (may be NULL) receives the handle for cancelling. */
int dg_connectors_call(dg_connectors_t *cs, const dg_connector_t *conn,
                       const dg_connector_request_t *req, dg_connector_done_fn done, void *user,
                       dg_connector_call_t **out, dg_errctx_t *err);
/* Cancels a call that has not completed; done follows with DG_ECANCELED on
 * a later loop turn. */
void dg_connector_call_cancel(dg_connector_call_t *call);
/* Calls started and not yet completed. */
unsigned dg_connectors_active(const dg_connectors_t *cs);
/* Cancels what still runs, closes the clients the runtime created and
 * frees it on a later loop turn. */
void dg_connectors_close(dg_connectors_t *cs);

/* ---- Save action trees ----------------------------------------------------
 * Runs an endpoint's save action tree (catalog.h) for one record, as a
 * non-blocking state machine on the loop: the children of each child list
 * are loaded first (a collection extraction matches against them), then
 * the root action, the pre-child actions in array order, the child saves
 * (each child running its endpoint's tree, at most the configured number
 * at once, in list order), and the post-child actions. A Get Session
 * Values action reads the response of its save action: basic extractions
 * set header-level values that the record's later actions use; collection
 * and Multiple Lists extractions set values on the matched children, which
 * their own trees use. Extracted values and response mappings are also
 * written to the records (the caller stores them).
 *
 * A failing action stops the tree: actions not yet run are skipped, child
 * saves already running finish, none start. The result lists every action
 * with its status, timing and, for a call, the upstream's status (and for
 * a failure a short excerpt of its answer).
 *
 * Threading: every function runs on the loop thread. */
#define DG_SAVE_MAX_LIST_ITEMS 10000      /* items read from one response list */
#define DG_SAVE_MAX_REPORTED_CHILDREN 100 /* child saves detailed per list (failed ones always) */
#define DG_SAVE_EXCERPT_BYTES 300         /* of a failing upstream answer */

typedef struct dg_save_run dg_save_run_t;

/* How upstream calls are made: by default through a dg_connectors_t; tests
 * give a fake. start returns 0 and calls done once, on a later loop turn,
 * with *handle set for cancel; or a DG_E* code with err (done never). */
typedef struct dg_save_upstream {
  int (*start)(void *data, const dg_connector_t *conn, const dg_connector_request_t *req,
               dg_connector_done_fn done, void *user, void **handle, dg_errctx_t *err);
  void (*cancel)(void *data, void *handle);
  void *data;
} dg_save_upstream_t;

/* The upstream that calls through cs. */
dg_save_upstream_t dg_save_upstream_connectors(dg_connectors_t *cs);

/* Children of a record in a child list, loaded by the caller (the store).
 * records is an array of {"id": "...", "values": {"<Property>": value},
 * "operation"?: "Create" | "Delete"} (stolen), at most max + 1 of them,
 * ordered as the child configuration says; done is called once, on a
 * later loop turn. An operation marks a line a form call added (saved by
 * the list's addEndpoint, its actions run as for a created record) or
 * removed (saved by its removeEndpoint); without one the line is saved by
 * the list's endpoint as a modified record. */
typedef void (*dg_save_loaded_fn)(void *token, int status, json_t *records, const dg_errctx_t *err);
typedef struct dg_save_loader {
  int (*load)(void *data, const dg_child_config_t *child, const char *parent_id, unsigned max,
              dg_save_loaded_fn done, void *token, dg_errctx_t *err);
  void *data;
} dg_save_loader_t;

typedef struct dg_save_options {
  uv_loop_t *loop;
  const dg_catalog_t *cat; /* held by the caller until done */
  const dg_endpoint_t *endpoint;
  bool create;          /* the record was created (an action's operations) */
  const char *id;       /* the record */
  const json_t *values; /* its values by property name (copied) */
  dg_save_upstream_t upstream;
  dg_save_loader_t loader;
  const char *request_id; /* for traceparent and logs; may be NULL */
  const char *trace_id;   /* a trace continued, or NULL (from request_id) */
} dg_save_options_t;

typedef struct dg_save_outcome {
  bool succeeded;
  bool canceled;
  const char *failed_action; /* "title (json/path)" of the first failure, or NULL */
  const char *reason;        /* why, or NULL */
  /* {"endpoint", "status", "failedAction", "reason", "actions": [...],
   * "warnings": [...]}; borrowed during the callback (take a reference). */
  json_t *result;
  /* What the tree set on records: [{"model": "<Model>", "id": "...",
   * "values": {"<Property>": value}}]; borrowed likewise. */
  json_t *changes;
} dg_save_outcome_t;

typedef void (*dg_save_done_fn)(dg_save_run_t *run, const dg_save_outcome_t *outcome, void *data);

/* Starts the tree. Returns 0 and done follows once, on a later loop turn
 * (the run is freed after it returns); or DG_ENOMEM with err. *out (may be
 * NULL) receives the run for dg_save_cancel. */
int dg_save_run(const dg_save_options_t *options, dg_save_done_fn done, void *data,
                dg_save_run_t **out, dg_errctx_t *err);
/* Stops the tree: calls in flight are canceled, nothing new starts; done
 * still follows, with canceled set. */
void dg_save_cancel(dg_save_run_t *run);

/* ---- Saved Queries ------------------------------------------------------------------ */
/* Running a Saved Query (saved_query.c): its request built from the
 * templates and the caller's values, and the API's answer mapped onto
 * entities of its Data Model. */

/* Builds the connector request of q from the values (path and query
 * URL-encoded, body JSON-encoded, headers); strings live in arena. */
int dg_save_query_request(const dg_saved_query_t *q, const char *const *values, dg_arena_t *arena,
                          dg_connector_request_t *req, dg_errctx_t *err);
/* Maps a response body onto entities of q's model: {"savedQueryId", "name",
 * "dataModelId", "entities": [{"id", "properties"}], "count", "truncated",
 * "warnings"?}. Stops at q->max_results items or when the entities pass
 * max_bytes (truncated true). NULL with err when the body is not JSON or
 * a GraphQL API answered only errors. Safe on a worker thread. */
json_t *dg_save_query_map(const dg_saved_query_t *q, const bool *selected, const char *body,
                          size_t len, size_t max_bytes, dg_errctx_t *err);

/* Maps a response body like dg_save_query_map, but hands each entity
 * (borrowed; only the selected fields) to sink instead of collecting it,
 * with no size limit. */
typedef struct dg_save_query_each {
  const dg_saved_query_t *q;
  const bool *selected;
  size_t max_items; /* items mapped at most (SIZE_MAX: all) */
  /* A negative DG_E* code stops the mapping and is returned. */
  int (*sink)(void *user, const json_t *entity);
  void *user;
} dg_save_query_each_t;

/* Returns 0, with *more true when the body held more than max_items items
 * and *warnings the mapping's warnings (NULL when none; the caller
 * releases); or a DG_E* code with err (the body is not JSON, a GraphQL
 * API answered only errors, out of memory) or the sink's code. Safe on a
 * worker thread. */
int dg_save_query_each(const dg_save_query_each_t *each, const char *body, size_t len, bool *more,
                       json_t **warnings, dg_errctx_t *err);

/* ---- Aggregating a Saved Query's answer (saved_aggregate.c) ------------------
 * aggregate_saved_query's engine: clauses and group keys checked against
 * the fields a Saved Query returns, then every item of its live answer
 * folded with the rules of aggregate_entities. */

/* One clause: fn over the field at index field of the query (Count: none). */
typedef struct dg_save_agg_clause {
  dg_store_agg_fn_t fn;
  const dg_saved_field_t *field; /* NULL for Count */
  const char *key;               /* result key, camelCased */
} dg_save_agg_clause_t;

/* A checked aggregate_saved_query request, in the call's arena. */
typedef struct dg_save_agg {
  const dg_saved_query_t *q;
  dg_save_agg_clause_t *clauses;
  size_t nclauses;
  const dg_saved_field_t **keys; /* group keys */
  size_t nkeys;
  bool *needed;       /* per field of q: used by a clause or a key */
  size_t max_grouped; /* records a grouped aggregate may cover */
} dg_save_agg_t;

/* Checks aggregations and groupBy against the fields of q that p may see,
 * with err naming the argument, what was given and what is allowed. */
int dg_save_agg_parse(const dg_saved_query_t *q, const dg_principal_t *p, const json_t *args,
                      size_t max_grouped, dg_arena_t *arena, dg_save_agg_t *out, dg_errctx_t *err);
/* Aggregates every item of a Saved Query's response body: {matchedCount,
 * groupByProperties, rows: [{groupKey, aggregates}], warnings?}, rows in
 * key order, nulls first. NULL with err when the body cannot be mapped or
 * a grouped aggregate would cover more than max_grouped records. Safe on
 * a worker thread. */
json_t *dg_save_agg_run(const dg_save_agg_t *a, const char *body, size_t len, dg_errctx_t *err);

#endif
