/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Sessions: one per Mcp-Session-Id on HTTP, one per WebSocket connection
 * and one for stdio. A session carries the negotiated protocol version,
 * the tool calls running for it (for cancellation and the in-flight
 * limit) and the exchanges still waiting for their reply.
 *
 * A session is open until it ends (DELETE, idle expiry, its connection
 * closing, the server closing); its memory lives on while exchanges hold
 * references to it. HTTP sessions are found by id in a small hash table.
 *
 * An HTTP session belongs to no worker: its id is signed (sid.c) and the
 * table the workers share (shared.c) records its last use and its end.
 * A worker that gets a valid id it does not hold takes the session over
 * with the version the client names in MCP-Protocol-Version. The rules:
 *
 *   - An id is refused once it is session_max_lifetime_ms old, by every
 *     worker and every instance: no id lives for ever.
 *   - It is refused once the table says it ended (DELETE on any worker)
 *     or was used by no worker for session_idle_timeout_ms.
 *   - An id of this instance that the table no longer holds has ended (an
 *     ended or expired session's slot is reused). An id of another
 *     instance sharing the key is unknown here and is taken over; DELETE
 *     and expiry elsewhere do not reach this machine. */
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

/* A new session's id is drawn again when its slot in the shared table
 * is taken: another id lands in another bucket. */
#define NEW_TRIES 4
/* A session in use writes its last use to the shared table at most once
 * per TOUCH_MAX_MS, or per 1/16 of the idle timeout when that is shorter. */
#define TOUCH_MAX_MS 1000

typedef enum verdict { V_ALIVE, V_DEAD, V_UNKNOWN } verdict_t;

static size_t bucket_of(const char *id) {
  uint64_t h = 1469598103934665603ULL;
  for (const char *p = id; *p; p++)
    h = (h ^ (unsigned char)*p) * 1099511628211ULL;
  return (size_t)(h % DG__MCP_SESSION_BUCKETS);
}

/* WebSocket and stdio sessions need an id only for logs. */
static int make_local_id(char out[DG__MCP_SESSION_ID_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char raw[DG__MCP_LOCAL_ID_LEN / 2];
  int rc = dg_random_bytes(raw, sizeof(raw));
  if (rc != 0)
    return rc;
  for (size_t i = 0; i < sizeof(raw); i++) {
    out[2 * i] = hex[raw[i] >> 4];
    out[2 * i + 1] = hex[raw[i] & 15];
  }
  out[DG__MCP_LOCAL_ID_LEN] = '\0';
  return 0;
}

static void link_all(dg_mcp_server_t *s, dg__mcp_session_t *ss) {
  DG_LIST_PUSH(s->all, ss, all_prev, all_next);
  s->nsessions++;
  dg_metrics_gauge_add("dg_mcp_sessions_open", NULL, 1);
}

static void unlink_all(dg_mcp_server_t *s, dg__mcp_session_t *ss) {
  DG_LIST_UNLINK(s->all, ss, all_prev, all_next);
  s->nsessions--;
  dg_metrics_gauge_add("dg_mcp_sessions_open", NULL, -1);
}

static dg__mcp_session_t *session_alloc(dg_mcp_server_t *s, const dg__mcp_transport_t *t,
                                        void *transport_data) {
  dg__mcp_session_t *ss = calloc(1, sizeof(*ss));
  if (ss == NULL)
    return NULL;
  ss->server = s;
  ss->transport = t;
  ss->transport_data = transport_data;
  ss->refs = 1; /* the "open" reference, dropped when the session ends */
  ss->open = true;
  ss->last_active_ms = dg_now_ms();
  dg__mcp_server_ref(s);
  link_all(s, ss);
  return ss;
}

int dg__mcp_session_new(dg_mcp_server_t *s, const dg__mcp_transport_t *t, void *transport_data,
                        dg__mcp_session_t **out) {
  *out = NULL;
  char id[DG__MCP_SESSION_ID_LEN + 1];
  int rc = make_local_id(id);
  if (rc != 0)
    return rc;
  dg__mcp_session_t *ss = session_alloc(s, t, transport_data);
  if (ss == NULL)
    return DG_ENOMEM;
  memcpy(ss->id, id, sizeof(id));
  *out = ss;
  return 0;
}

/* ---- HTTP sessions: the local table ---------------------------------------- */

static bool over_limit(const dg_mcp_server_t *s) {
  unsigned max = s->limits.max_sessions;
  return max > 0 && s->nhttp >= max;
}

static int http_session(dg_mcp_server_t *s, const char *principal, const char *id,
                        const dg__mcp_sid_t *sid, dg__mcp_session_t **out) {
  char *name = strdup(principal);
  dg__mcp_session_t *ss = name != NULL ? session_alloc(s, &dg__mcp_http_transport, NULL) : NULL;
  if (ss == NULL) {
    free(name);
    return DG_ENOMEM;
  }
  memcpy(ss->id, id, DG__MCP_SESSION_ID_LEN + 1);
  dg__mcp_id_hash(ss->id, ss->id_hash);
  ss->http = true;
  ss->principal = name;
  ss->sid = *sid;
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

/* Ids are compared in constant time: timing says nothing of a near miss. */
static dg__mcp_session_t *lookup(dg_mcp_server_t *s, const char *id) {
  if (id == NULL || strnlen(id, DG__MCP_SESSION_ID_LEN + 1) != DG__MCP_SESSION_ID_LEN)
    return NULL;
  dg__mcp_session_t *ss = s->buckets[bucket_of(id)];
  while (ss != NULL && !dg_ct_equal(ss->id, id, DG__MCP_SESSION_ID_LEN))
    ss = ss->bucket_next;
  return ss;
}

/* ---- HTTP sessions: the rules shared by every worker ------------------------ */

static uint64_t idle_limit(const dg_mcp_server_t *s) {
  return s->limits.session_idle_timeout_ms;
}

static uint64_t touch_every(const dg_mcp_server_t *s) {
  uint64_t every = idle_limit(s) / 16;
  return every < TOUCH_MAX_MS ? every : TOUCH_MAX_MS;
}

static uint64_t age(uint64_t now, uint64_t then) {
  return now > then ? now - then : 0;
}

static bool too_old(const dg_mcp_server_t *s, const dg__mcp_sid_t *sid) {
  uint64_t lifetime = s->limits.session_max_lifetime_ms;
  return lifetime > 0 && age(dg__mcp_wall_ms(), sid->issued_ms) >= lifetime;
}

/* What the shared table says of sid; *used is its last use when ALIVE. */
static verdict_t shared_verdict(dg_mcp_server_t *s, const dg__mcp_sid_t *sid, uint64_t *used) {
  dg__mcp_entry_t e = dg__mcp_shared_get(s->shared, sid->tag, used);
  if (e == DG__MCP_ENTRY_ENDED)
    return V_DEAD;
  if (e == DG__MCP_ENTRY_ABSENT)
    return sid->instance == s->shared->instance ? V_DEAD : V_UNKNOWN;
  return V_ALIVE;
}

static bool in_use(const dg__mcp_session_t *ss) {
  return ss->exchanges != NULL || ss->sse != NULL || ss->ncalls > 0;
}

/* A session with a reply pending or a GET stream open is in use, not idle;
 * idle means idle here and, as far as the table knows, everywhere. */
static bool idle_everywhere(const dg__mcp_session_t *ss, uint64_t now, uint64_t shared_used) {
  uint64_t limit = idle_limit(ss->server);
  if (limit == 0 || in_use(ss))
    return false;
  uint64_t last = ss->last_active_ms > shared_used ? ss->last_active_ms : shared_used;
  return age(now, last) >= limit;
}

/* True when a session held here has ended for good: ended elsewhere, idle
 * everywhere, or past its lifetime with nothing running. */
static bool must_end(dg__mcp_session_t *ss, uint64_t now) {
  dg_mcp_server_t *s = ss->server;
  uint64_t used = 0;
  verdict_t v = shared_verdict(s, &ss->sid, &used);
  if (v == V_DEAD)
    return true;
  /* An id of another instance whose slot was reused: recorded again. */
  if (v == V_UNKNOWN)
    dg__mcp_shared_add(s->shared, ss->sid.tag, now, idle_limit(s));
  bool busy = ss->exchanges != NULL || ss->ncalls > 0;
  if (!busy && too_old(s, &ss->sid))
    return true;
  return idle_everywhere(ss, now, used);
}

/* Records the end in the shared table. An id of this instance is simply
 * forgotten (absence means ended); another instance's is kept as ended. */
static void record_end(dg_mcp_server_t *s, const dg__mcp_sid_t *sid) {
  bool own = sid->instance == s->shared->instance;
  if (!dg__mcp_shared_end(s->shared, sid->tag, dg_now_ms(), idle_limit(s), own))
    dg_logf(DG_LOG_WARN, "session_end_not_shared",
            "the shared session table had no room to record an ended session; other "
            "workers may accept its id until it is idle for sessionIdleTimeoutMs");
}

/* Checks an id that no session here holds: signed for principal, within
 * its lifetime, neither ended nor idle. *v says what the table knows. */
static bool valid_elsewhere(dg_mcp_server_t *s, const char *id, const char *principal, uint64_t now,
                            dg__mcp_sid_t *sid, verdict_t *v) {
  uint64_t used = 0;
  if (!dg__mcp_sid_verify(s->shared, id, principal, sid) || too_old(s, sid))
    return false;
  *v = shared_verdict(s, sid, &used);
  uint64_t limit = idle_limit(s);
  return *v != V_DEAD && !(*v == V_ALIVE && limit > 0 && age(now, used) >= limit);
}

/* The version a taken-over session speaks: the header's when we know it,
 * else 2025-03-26, as the specification says for a missing header. */
static const char *adopted_version(const char *header) {
  static const char *const versions[DG__MCP_NVERSIONS] = DG_MCP_VERSIONS;
  for (size_t i = 0; header != NULL && i < DG__MCP_NVERSIONS; i++) {
    if (strcmp(header, versions[i]) == 0)
      return versions[i];
  }
  return DG__MCP_V2025_03_26;
}

static int adopt(dg_mcp_server_t *s, const char *id, const char *principal, const char *version,
                 uint64_t now, dg__mcp_session_t **out) {
  dg__mcp_sid_t sid;
  verdict_t v = V_DEAD;
  if (!valid_elsewhere(s, id, principal, now, &sid, &v))
    return DG_ENOENT;
  if (over_limit(s))
    return DG_EBUSY;
  int rc = v == V_UNKNOWN ? dg__mcp_shared_add(s->shared, sid.tag, now, idle_limit(s)) : 0;
  if (rc == DG_EBUSY)
    return rc;
  dg__mcp_session_t *ss;
  rc = http_session(s, principal, id, &sid, &ss);
  if (rc != 0)
    return rc;
  ss->version = adopted_version(version);
  ss->initialized = true; /* the client did the handshake with another worker */
  dg__mcp_session_touch(ss);
  dg_metrics_counter_add("dg_mcp_sessions_adopted_total", NULL, 1);
  *out = ss;
  return 0;
}

/* ---- HTTP sessions: the module's entry points -------------------------------- */

int dg__mcp_session_new_http(dg_mcp_server_t *s, const char *principal, dg__mcp_session_t **out) {
  *out = NULL;
  if (over_limit(s))
    return DG_EBUSY;
  const char *name = principal ? principal : "";
  char id[DG__MCP_SESSION_ID_LEN + 1];
  dg__mcp_sid_t sid;
  uint64_t now = dg_now_ms();
  int rc = DG_EBUSY;
  for (int i = 0; i < NEW_TRIES && rc != 0; i++) {
    rc = dg__mcp_sid_make(s->shared, name, id, &sid);
    if (rc != 0)
      return rc;
    rc = dg__mcp_shared_add(s->shared, sid.tag, now, idle_limit(s));
  }
  if (rc != 0)
    return DG_EBUSY;
  rc = http_session(s, name, id, &sid, out);
  if (rc != 0)
    dg__mcp_shared_end(s->shared, sid.tag, now, idle_limit(s), true);
  return rc;
}

static int use_local(dg__mcp_session_t *ss, const char *principal, uint64_t now,
                     dg__mcp_session_t **out) {
  if (strcmp(ss->principal, principal) != 0)
    return DG_ENOENT;
  if (must_end(ss, now)) {
    dg__mcp_session_end(ss);
    return DG_ENOENT;
  }
  /* Past its lifetime but still running calls: it ends when they do. */
  if (too_old(ss->server, &ss->sid))
    return DG_ENOENT;
  *out = ss;
  return 0;
}

int dg__mcp_session_open(dg_mcp_server_t *s, const char *id, const char *principal,
                         const char *version, dg__mcp_session_t **out) {
  *out = NULL;
  const char *name = principal ? principal : "";
  uint64_t now = dg_now_ms();
  dg__mcp_session_t *ss = lookup(s, id);
  if (ss != NULL)
    return use_local(ss, name, now, out);
  return adopt(s, id, name, version, now, out);
}

/* A session may be held by several gateways at once (a client's requests
 * spread over them): every DELETE is relayed, whether or not this process
 * holds it. */
int dg__mcp_session_delete(dg_mcp_server_t *s, const char *id, const char *principal) {
  const char *name = principal ? principal : "";
  uint64_t now = dg_now_ms();
  dg__mcp_session_t *ss = lookup(s, id);
  if (ss != NULL) {
    dg__mcp_session_t *found = NULL;
    if (use_local(ss, name, now, &found) != 0)
      return DG_ENOENT;
    dg__mcp_session_revoke(found);
    dg__mcp_relay_delete(s, id);
    return 0;
  }
  dg__mcp_sid_t sid;
  verdict_t v = V_DEAD;
  if (!valid_elsewhere(s, id, name, now, &sid, &v))
    return DG_ENOENT;
  record_end(s, &sid);
  dg__mcp_relay_delete(s, id);
  return 0;
}

void dg__mcp_session_revoke(dg__mcp_session_t *ss) {
  if (ss->http && ss->open)
    record_end(ss->server, &ss->sid);
  dg__mcp_session_end(ss);
}

void dg__mcp_session_sweep(dg_mcp_server_t *s) {
  uint64_t now = dg_now_ms();
  dg__mcp_session_t *ss = s->all;
  while (ss != NULL) {
    dg__mcp_session_t *next = ss->all_next;
    if (ss->http && must_end(ss, now))
      dg__mcp_session_end(ss);
    else if (ss->http && in_use(ss)) /* so that other workers see it alive */
      dg__mcp_shared_touch(s->shared, ss->sid.tag, now, touch_every(s));
    ss = next;
  }
}

/* ---- Every session ------------------------------------------------------------ */

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
  if (ss->http && ss->open)
    dg__mcp_shared_touch(ss->server->shared, ss->sid.tag, ss->last_active_ms,
                         touch_every(ss->server));
}

bool dg__mcp_session_at_least(const dg__mcp_session_t *ss, const char *v) {
  return ss != NULL && ss->version != NULL && strcmp(ss->version, v) >= 0;
}
