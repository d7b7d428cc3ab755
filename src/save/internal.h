/* save internals: the connector runtime shared by connector.c (calls and
 * their authentication) and oauth.c (the client-credentials token cache).
 * Never included from outside src/save. */
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
  DG__CALL_NEW,
  DG__CALL_WAIT_TOKEN,
  DG__CALL_SENDING,
  DG__CALL_DEFERRED,
  DG__CALL_DONE,
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
  dg_connector_call_t *spare; /* freed calls kept for the next ones (linked by next) */
  unsigned nspare;
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

#endif
