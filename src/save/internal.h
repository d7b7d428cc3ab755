/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* save internals: the connector runtime shared by connector.c (calls and
 * their authentication) and oauth.c (the client-credentials token cache),
 * and the save tree engine shared by tree.c (runs and the node state
 * machine), tree_request.c (requests from templates), tree_extract.c
 * (session values and response mappings) and tree_result.c (the result
 * entries). Never included from outside src/save. */
#ifndef DATAGATE_SAVE_INTERNAL_H
#define DATAGATE_SAVE_INTERNAL_H

#include "datagate/save.h"

/* Cached tokens kept at most; idle ones beyond are dropped oldest first. */
#define DG__SAVE_MAX_TOKENS 256

typedef struct dg__save_token dg__save_token_t;

/* A call's life: waiting for an OAuth token, then the API call, then the
 * completion (direct from the client's callback, or deferred to a later
 * loop turn when the call ends without one). */
typedef enum dg__save_call_state {
  DG__SAVE_CALL_NEW,
  DG__SAVE_CALL_WAIT_TOKEN,
  DG__SAVE_CALL_SENDING,
  DG__SAVE_CALL_DEFERRED,
  DG__SAVE_CALL_DONE,
} dg__save_call_state_t;

/* A client trusting one extra CA file, for connectors that name one. */
typedef struct dg__save_ca_client {
  char *ca_file;
  dg_http_client_t *client;
  struct dg__save_ca_client *next;
} dg__save_ca_client_t;

struct dg_connectors {
  uv_loop_t *loop;
  dg_http_client_t *shared; /* the process's client, or our own */
  bool own_shared;
  dg__save_ca_client_t *ca_clients;
  dg__save_token_t *tokens;
  size_t ntokens;
  unsigned nfetches; /* token requests in flight */
  dg_connector_call_t *calls;
  unsigned ncalls;
  dg_connector_call_t *deferred; /* completions for the next loop turn */
  dg_connector_call_t *deferred_tail;
  uv_timer_t timer;
  bool closing;
  dg_spare_t spare; /* freed calls kept for the next ones */
};

struct dg_connector_call {
  dg_connectors_t *cs;
  const dg_connector_t *conn;
  dg_http_client_t *client;
  dg__save_call_state_t state;
  dg_arena_t *arena; /* copies of the request */
  dg_connector_request_t req;
  const char *url;         /* base URL + path, before an API key in the query */
  dg__save_token_t *token; /* OAuth: the cache entry it uses */
  char *bearer;            /* OAuth: the token this attempt sent */
  bool refreshed;          /* OAuth: a new token was fetched after a 401 */
  bool canceled;
  dg_http_call_t *http;
  dg_connector_done_fn done;
  void *user;
  int rc;
  dg_errctx_t err;
  unsigned attempts;
  uint64_t start_ms;
  dg_connector_call_t *prev, *next; /* cs->calls */
  dg_connector_call_t *next_waiter; /* the token's waiters */
  dg_connector_call_t *next_deferred;
};

/* connector.c */
void dg__save_call_set_state(dg_connector_call_t *call, dg__save_call_state_t next);
/* Starts (or restarts after a token refresh) the API call. */
void dg__save_call_send(dg_connector_call_t *call);
/* Ends a call without a response on a later loop turn. */
void dg__save_call_defer(dg_connector_call_t *call, int rc);
/* The client for a connector: the shared one, or one trusting its CA file
 * (created on first use). NULL with err when that file cannot be used. */
dg_http_client_t *dg__save_client_for(dg_connectors_t *cs, const dg_connector_t *conn,
                                      dg_errctx_t *err);
/* Frees the runtime once it is closing and nothing runs any more. */
void dg__save_maybe_free(dg_connectors_t *cs);
/* The request options every call of conn shares (limits, policy). */
void dg__save_request_options(const dg_connector_t *conn, dg_http_client_request_t *req);

/* oauth.c */
/* Gets a token for call (cached, or after joining or starting a fetch):
 * sends it when one is at hand, otherwise the call waits and is sent or
 * ended when the fetch ends. */
void dg__save_oauth_acquire(dg_connector_call_t *call);
/* After a 401: drops the token the call sent (unless already replaced)
 * and acquires a fresh one. */
void dg__save_oauth_refresh(dg_connector_call_t *call);
/* A completing call lets go of its cache entry. */
void dg__save_oauth_release(dg_connector_call_t *call);
/* Removes a waiting call from its token's waiters. */
void dg__save_oauth_forget(dg_connector_call_t *call);
/* Cancels token requests in flight (closing). */
void dg__save_oauth_cancel_all(dg_connectors_t *cs);
/* Frees every cached token (wiping it). */
void dg__save_oauth_free_all(dg_connectors_t *cs);
/* Drops cached tokens whose connector is not configured in cat any more
 * with the same credentials. */
void dg__save_oauth_prune(dg_connectors_t *cs, const dg_catalog_t *cat);

/* ---- Save trees ------------------------------------------------------------ */

/* What a form call did to a child record: the tree saves an added line
 * with its list's addEndpoint, as a created record, and a removed one
 * with its removeEndpoint. */
typedef enum dg__save_line_op {
  DG__SAVE_LINE_KEPT,
  DG__SAVE_LINE_ADDED,
  DG__SAVE_LINE_REMOVED,
} dg__save_line_op_t;

/* A record a tree works on: its values by property name, what the tree set
 * on it, the session values its parent's extractions gave it, and the
 * properties an extraction of the run writes that have no value in this
 * run yet (name -> why, for the message of an action that reads one). */
typedef struct dg__save_record {
  const dg_model_t *model;
  const char *id;
  dg__save_line_op_t op;
  json_t *values;
  json_t *changed;
  json_t *inherited;
  json_t *pending;
  struct dg__save_record *next_in_run;
} dg__save_record_t;

/* One record running one endpoint's tree. NEW -> LOADING (its child
 * lists) -> READY (runs actions until one waits) -> CALLING (upstream) ->
 * PARSING (a large answer, on the threadpool) -> READY -> CHILDREN (child
 * saves) -> READY -> DONE. */
typedef enum dg__save_node_state {
  DG__NODE_NEW,
  DG__NODE_LOADING,
  DG__NODE_READY,
  DG__NODE_CALLING,
  DG__NODE_PARSING,
  DG__NODE_CHILDREN,
  DG__NODE_DONE,
} dg__save_node_state_t;

typedef struct dg__save_node dg__save_node_t;

/* The child saves of one child list of a node. */
typedef struct dg__save_list {
  const dg_child_config_t *config;
  dg__save_record_t **records;
  size_t n;
  size_t next; /* next record to start */
  unsigned running;
  size_t finished;
  size_t failed;
  json_t *entry; /* the "ChildSaves" result entry */
  uint64_t start_ms;
} dg__save_list_t;

struct dg__save_node {
  dg_save_run_t *run;
  dg__save_node_t *parent;
  const dg_endpoint_t *ep;
  const dg_child_config_t *via; /* the parent's list this record is in */
  dg__save_record_t *rec;
  dg__save_list_t *in_list; /* the parent's list */
  size_t in_index;
  dg__save_node_state_t state;
  size_t step; /* next action of ep->steps */
  bool failed;
  bool children_done;
  bool scheduling;         /* inside schedule(): finished children are picked up there */
  const char *skip_reason; /* set: every remaining action is skipped for this reason */
  json_t *session;         /* header-level session values */
  json_t **responses;      /* per step: the parsed answer of a save action */
  dg__save_list_t *lists;
  size_t nlists;
  size_t loading; /* list being loaded */
  size_t current; /* list whose children run */
  json_t *actions;
  json_t *entry; /* the entry of the action in flight */
  void *call;    /* upstream handle while CALLING */
  char *path;    /* its request path, for the result */
  uint64_t call_start_ms;
  uv_work_t work; /* PARSING */
  char *body;
  size_t body_len;
  json_t *parsed;
  char *not_json;      /* PARSING: why the answer is unreadable, should it not parse */
  json_t *not_json_up; /* ... and what the entry's upstream part then shows */
  dg__save_node_t *prev_calling, *next_calling;
  dg__save_node_t *next_in_run;
};

typedef enum dg__save_run_state {
  DG__RUN_STARTING,
  DG__RUN_RUNNING,
  DG__RUN_DONE,
} dg__save_run_state_t;

struct dg_save_run {
  dg_save_options_t opt;
  dg_arena_t *arena;
  dg__save_run_state_t state;
  dg__save_node_t *root;
  dg__save_node_t *nodes;     /* every node, for freeing */
  dg__save_record_t *records; /* every record, for the changes */
  dg__save_node_t *calling;   /* nodes with a call in flight */
  bool canceled;
  bool failed;
  const char *failed_action;
  const char *reason;
  json_t *warnings;
  uint64_t start_ms;
  dg_save_done_fn done;
  void *data;
  uv_timer_t timer; /* the first step runs on a later loop turn */
};

/* tree_request.c: the request of a save action for a node's record, in
 * arena. On failure err names the placeholder or part and why. */
int dg__save_build_request(const dg__save_node_t *n, const dg_action_t *a, dg_arena_t *arena,
                           dg_connector_request_t *req, dg_errctx_t *err);

/* tree_extract.c: a Get Session Values action's extractions over the
 * answer of its save action (NULL: none or not JSON), and a save action's
 * response mappings; both record what they did in entry. */
void dg__save_extract(dg__save_node_t *n, const dg_action_t *a, const json_t *response,
                      json_t *entry);
void dg__save_map_response(dg__save_node_t *n, const dg_action_t *a, const json_t *response,
                           json_t *entry);
/* Sets a record's property (and remembers it as changed); value stolen. */
void dg__save_record_set(dg__save_record_t *r, const char *name, json_t *value);
/* Property name of r has no value in this run, because of why (stolen);
 * a value this run already set is kept. */
void dg__save_record_unset(dg__save_record_t *r, const char *name, json_t *why);
/* Every property the extractions of ep's actions write on r (basic ones)
 * or, with list, on the records of that child list. */
void dg__save_unset_extracted(const dg_endpoint_t *ep, const dg_property_t *list,
                              dg__save_record_t *r);
/* Whether an inner action's filter holds for the record. */
bool dg__save_filter_holds(const dg_action_filter_t *f, const dg__save_record_t *r);

/* tree_result.c: result entries. */
json_t *dg__save_entry(const dg__save_node_t *n, const dg_action_t *a);
void dg__save_entry_end(const dg__save_node_t *n, json_t *entry, const char *status,
                        uint64_t start_ms);
/* The upstream part of an entry: method, URL without its query, status,
 * attempts, and for a failure an excerpt of the answer. */
void dg__save_entry_upstream(json_t *entry, const dg_connector_t *conn, const char *method,
                             const char *path, const dg_connector_result_t *result);
/* Why a 2xx answer that must be JSON is not, naming the action, the call
 * (url without query), status, content type and first bytes (malloc'd;
 * NULL when out of memory); *upstream gets {contentType, excerpt} for the
 * entry's upstream part. */
char *dg__save_not_json(const dg_action_t *a, const char *url, int status, const char *content_type,
                        const char *body, size_t len, json_t **upstream);
/* A warning: in the entry, in the run's list and in the log (event). */
void dg__save_warn(dg__save_node_t *n, json_t *entry, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
