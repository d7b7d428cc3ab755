/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Cancels between gateways (mcp.h): what this process cannot stop itself
 * goes to the owner's relay; what the relay hears comes back here and is
 * applied as a local notifications/cancelled or DELETE would be.
 *
 * A session is named by the SHA-256 of its id: the id is a bearer value
 * and the relay's medium (the database) is read by others. A relayed
 * cancel is trusted as the gateway that sent it checked the session (its
 * signature and principal) before relaying. */
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

void dg__mcp_relay_cancel(dg__mcp_session_t *ss, const json_t *request_id) {
  dg_mcp_server_t *s = ss->server;
  if (s->relay == NULL || !(json_is_string(request_id) || json_is_integer(request_id)))
    return;
  char *text = json_dumps(request_id, JSON_COMPACT | JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
  if (text != NULL && strlen(text) <= DG_MCP_RELAY_REQUEST_MAX)
    s->relay(ss->id_hash, text, s->relay_data);
  free(text);
}

void dg__mcp_relay_delete(dg_mcp_server_t *s, const char *id) {
  if (s->relay == NULL)
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
