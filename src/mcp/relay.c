/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Cancels between gateways (mcp.h): what this process cannot stop itself
 * goes to the owner's relay; what the relay hears comes back here and is
 * applied as a local notifications/cancelled or DELETE would be.
 *
 * A session is named by the SHA-256 of its id: the id is a bearer value
 * and the relay's medium (the database) is read by others. A relayed
 * cancel is trusted as the gateway that sent it checked the session (its
 * signature and principal) before relaying.
 *
 * Every relayed cancel is a NOTIFY that every gateway of the database
 * hears, so relays are budgeted: a session's notifications/cancelled by
 * its own bucket, and everything a worker relays (DELETEs included) by the
 * worker's. What is over budget is counted and dropped; a cancel for a call
 * this process runs never reaches here (methods.c stops it in place).
 *
 * When the store cannot publish (SQLite: one machine), the owner puts the
 * cancel in the ring of the map the workers share (shared.c), which every
 * worker reads on a timer; the budgets are taken before, as for a NOTIFY. */
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

void dg__mcp_id_hash(const char *id, char out[DG__MCP_ID_HASH_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char digest[32];
  dg_sha256(id, strlen(id), digest);
  for (size_t i = 0; i < sizeof(digest); i++) {
    out[2 * i] = hex[digest[i] >> 4];
    out[2 * i + 1] = hex[digest[i] & 15];
  }
  out[DG__MCP_ID_HASH_LEN] = '\0';
}

void dg_mcp_server_set_relay(dg_mcp_server_t *server, dg_mcp_relay_fn relay, void *data) {
  server->relay = relay;
  server->relay_data = data;
}

bool dg__mcp_budget_take(dg__mcp_budget_t *b, uint32_t burst, uint32_t per_second,
                         uint64_t now_ms) {
  if (now_ms > b->at_ms) {
    /* Milli-takes refilled: elapsed ms times takes per second. */
    uint64_t elapsed = now_ms - b->at_ms;
    uint64_t refill =
        elapsed > UINT64_MAX / ((uint64_t)per_second + 1) ? UINT64_MAX : elapsed * per_second;
    b->used_milli = refill >= b->used_milli ? 0 : b->used_milli - refill;
    b->at_ms = now_ms;
  }
  if (b->used_milli + 1000 > (uint64_t)burst * 1000)
    return false;
  b->used_milli += 1000;
  return true;
}

static void count_relay(bool sent) {
  dg_metrics_describe("dg_mcp_cancel_relays_total",
                      "Cancels handed to the other gateways of the database (or the other workers "
                      "of this machine), or refused by the relay budget.");
  dg_metrics_counter_add("dg_mcp_cancel_relays_total",
                         sent ? "outcome=\"sent\"" : "outcome=\"refused\"", 1);
}

/* The session's bucket first: a session over its budget does not spend
 * the worker's. */
static bool budget_allows(dg_mcp_server_t *s, dg__mcp_session_t *ss) {
  uint64_t now = dg_now_ms();
  bool ok = (ss == NULL || dg__mcp_budget_take(&ss->relay_budget, DG__MCP_RELAY_SESSION_BURST,
                                               DG__MCP_RELAY_SESSION_PER_SECOND, now)) &&
            dg__mcp_budget_take(&s->relay_budget, DG__MCP_RELAY_WORKER_BURST,
                                DG__MCP_RELAY_WORKER_PER_SECOND, now);
  count_relay(ok);
  return ok;
}

void dg__mcp_relay_cancel(dg__mcp_session_t *ss, const json_t *request_id) {
  dg_mcp_server_t *s = ss->server;
  if (s->relay == NULL || !(json_is_string(request_id) || json_is_integer(request_id)))
    return;
  char *text = json_dumps(request_id, JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
  if (text != NULL && strlen(text) <= DG_MCP_RELAY_REQUEST_MAX && budget_allows(s, ss))
    s->relay(ss->id_hash, text, s->relay_data);
  free(text);
}

void dg__mcp_relay_delete(dg_mcp_server_t *s, const char *id) {
  if (s->relay == NULL || !budget_allows(s, NULL))
    return;
  char hash[DG__MCP_ID_HASH_LEN + 1];
  dg__mcp_id_hash(id, hash);
  s->relay(hash, NULL, s->relay_data);
}

/* Sessions are few enough (server.maxSessions) and relayed cancels rare
 * enough for a walk; the hashes are public, so no constant time. */
static dg__mcp_session_t *by_hash(dg_mcp_server_t *s, const char *session) {
  for (dg__mcp_session_t *ss = s->all; ss != NULL; ss = ss->all_next) {
    if (ss->http && strcmp(ss->id_hash, session) == 0)
      return ss;
  }
  return NULL;
}

void dg_mcp_server_cancel_relayed(dg_mcp_server_t *server, const char *session,
                                  const char *request) {
  dg__mcp_session_t *ss = session != NULL ? by_hash(server, session) : NULL;
  if (ss == NULL)
    return;
  if (request == NULL) {
    dg__mcp_session_revoke(ss);
    return;
  }
  json_t *id = json_loads(request, JSON_DECODE_ANY, NULL);
  if (json_is_string(id) || json_is_integer(id))
    dg__mcp_call_cancel_id(ss, id);
  json_decref(id);
}

void dg_mcp_server_share_cancel(dg_mcp_server_t *server, const char *session, const char *request) {
  if (server->shared->workers <= 1 || session == NULL || strlen(session) != DG__MCP_ID_HASH_LEN ||
      (request != NULL && strlen(request) > DG_MCP_RELAY_REQUEST_MAX))
    return;
  dg__mcp_ring_post(server->shared, server->ring.origin, session, request);
}

static void ring_heard(const char *session, const char *request, void *data) {
  dg_mcp_server_cancel_relayed(data, session, request);
}

void dg__mcp_relay_read_ring(dg_mcp_server_t *s) {
  dg__mcp_ring_read(s->shared, &s->ring, ring_heard, s);
}
