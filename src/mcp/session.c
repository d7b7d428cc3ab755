/* Sessions: one per Mcp-Session-Id on HTTP, one per WebSocket connection
 * and one for stdio. A session carries the negotiated protocol version,
 * the tool calls running for it (for cancellation and the in-flight
 * limit) and the exchanges still waiting for their reply.
 *
 * A session is open until it ends (DELETE, idle expiry, its connection
 * closing, the server closing); its memory lives on while exchanges hold
 * references to it. HTTP sessions are found by id in a small hash table. */
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

static size_t bucket_of(const char *id) {
  uint64_t h = 1469598103934665603ULL;
  for (const char *p = id; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ULL;
  return (size_t)(h % DG__MCP_SESSION_BUCKETS);
}

static int make_id(char out[DG__MCP_SESSION_ID_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char raw[DG__MCP_SESSION_ID_LEN / 2];
  int rc = dg_random_bytes(raw, sizeof(raw));
  if (rc != 0)
    return rc;
  for (size_t i = 0; i < sizeof(raw); i++) {
    out[2 * i] = hex[raw[i] >> 4];
    out[2 * i + 1] = hex[raw[i] & 15];
  }
  out[DG__MCP_SESSION_ID_LEN] = '\0';
  return 0;
}

static void link_all(dg_mcp_server_t *s, dg__mcp_session_t *ss) {
  ss->all_next = s->all;
  if (s->all != NULL)
    s->all->all_prev = ss;
  s->all = ss;
  s->nsessions++;
  dg_metrics_gauge_add("dg_mcp_sessions_open", NULL, 1);
}

static void unlink_all(dg_mcp_server_t *s, dg__mcp_session_t *ss) {
  if (ss->all_prev != NULL)
    ss->all_prev->all_next = ss->all_next;
  else
    s->all = ss->all_next;
  if (ss->all_next != NULL)
    ss->all_next->all_prev = ss->all_prev;
  ss->all_prev = ss->all_next = NULL;
  s->nsessions--;
  dg_metrics_gauge_add("dg_mcp_sessions_open", NULL, -1);
}

int dg__mcp_session_new(dg_mcp_server_t *s, const dg__mcp_transport_t *t, void *transport_data,
                        dg__mcp_session_t **out) {
  *out = NULL;
  dg__mcp_session_t *ss = calloc(1, sizeof(*ss));
  if (ss == NULL)
    return DG_ENOMEM;
  int rc = make_id(ss->id);
  if (rc != 0) {
    free(ss);
    return rc;
  }
  ss->server = s;
  ss->transport = t;
  ss->transport_data = transport_data;
  ss->refs = 1; /* the "open" reference, dropped when the session ends */
  ss->open = true;
  ss->last_active_ms = dg_now_ms();
  dg__mcp_server_ref(s);
  link_all(s, ss);
  *out = ss;
  return 0;
}

int dg__mcp_session_new_http(dg_mcp_server_t *s, const char *principal, dg__mcp_session_t **out) {
  *out = NULL;
  unsigned max = s->cat->server.max_sessions;
  if (max > 0 && s->nhttp >= max)
    return DG_EBUSY;
  char *name = strdup(principal ? principal : "");
  if (name == NULL)
    return DG_ENOMEM;
  dg__mcp_session_t *ss;
  int rc = dg__mcp_session_new(s, &dg__mcp_http_transport, NULL, &ss);
  if (rc != 0) {
    free(name);
    return rc;
  }
  ss->http = true;
  ss->principal = name;
  size_t b = bucket_of(ss->id);
  ss->bucket_next = s->buckets[b];
  s->buckets[b] = ss;
  s->nhttp++;
  *out = ss;
  return 0;
}

static void unlink_bucket(dg_mcp_server_t *s, dg__mcp_session_t *ss) {
  dg__mcp_session_t **pp = &s->buckets[bucket_of(ss->id)];
  while (*pp != NULL && *pp != ss)
    pp = &(*pp)->bucket_next;
  if (*pp == ss)
    *pp = ss->bucket_next;
  ss->bucket_next = NULL;
  s->nhttp--;
}

/* A session with a reply pending or a GET stream open is in use, not idle. */
static bool expired(const dg__mcp_session_t *ss, uint64_t now) {
  uint64_t limit = ss->server->cat->server.session_idle_timeout_ms;
  if (limit == 0 || ss->exchanges != NULL || ss->sse != NULL || ss->ncalls > 0)
    return false;
  return now - ss->last_active_ms >= limit;
}

dg__mcp_session_t *dg__mcp_session_find(dg_mcp_server_t *s, const char *id) {
  if (id == NULL || strlen(id) != DG__MCP_SESSION_ID_LEN)
    return NULL;
  dg__mcp_session_t *ss = s->buckets[bucket_of(id)];
  while (ss != NULL && strcmp(ss->id, id) != 0)
    ss = ss->bucket_next;
  if (ss != NULL && expired(ss, dg_now_ms())) {
    dg__mcp_session_end(ss);
    return NULL;
  }
  return ss;
}

void dg__mcp_session_sweep(dg_mcp_server_t *s) {
  uint64_t now = dg_now_ms();
  dg__mcp_session_t *ss = s->all;
  while (ss != NULL) {
    dg__mcp_session_t *next = ss->all_next;
    if (ss->http && expired(ss, now))
      dg__mcp_session_end(ss);
    ss = next;
  }
}

/* The exchanges list shrinks as each exchange is aborted. */
static void abort_exchanges(dg__mcp_session_t *ss) {
  while (ss->exchanges != NULL) {
    dg__mcp_exchange_t *ex = ss->exchanges;
    const dg__mcp_transport_t *t = ex->transport;
    if (t != NULL && t->abort != NULL)
      t->abort(ex);
    dg__mcp_exchange_gone(ex);
  }
}

void dg__mcp_session_end(dg__mcp_session_t *ss) {
  if (!ss->open)
    return;
  dg_mcp_server_t *s = ss->server;
  ss->open = false;
  dg__mcp_session_ref(ss);
  unlink_all(s, ss);
  if (ss->http)
    unlink_bucket(s, ss);
  abort_exchanges(ss);
  while (ss->calls != NULL)
    dg__mcp_call_detach(ss->calls);
  if (ss->sse != NULL)
    dg__mcp_sse_close(ss->sse);
  if (ss->transport->close != NULL)
    ss->transport->close(ss);
  /* Drops the open reference directly: the one taken above is still held,
   * so this cannot free ss (and the optimiser need not prove it). */
  ss->refs--;
  dg__mcp_session_unref(ss);
}

void dg__mcp_session_ref(dg__mcp_session_t *ss) {
  ss->refs++;
}

void dg__mcp_session_unref(dg__mcp_session_t *ss) {
  if (--ss->refs > 0)
    return;
  dg_mcp_server_t *s = ss->server;
  free(ss->principal);
  free(ss);
  dg__mcp_server_unref(s);
}

void dg__mcp_session_touch(dg__mcp_session_t *ss) {
  ss->last_active_ms = dg_now_ms();
}

bool dg__mcp_session_at_least(const dg__mcp_session_t *ss, const char *v) {
  return ss != NULL && ss->version != NULL && strcmp(ss->version, v) >= 0;
}
