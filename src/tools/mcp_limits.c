/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* What mcp needs of a catalog snapshot, filled in one place for the
 * gateway, its tests and its fuzzers: tools is the lowest module that
 * knows both the catalog and mcp. */
#include "datagate/catalog.h"
#include "datagate/tools.h"

dg_mcp_limits_t dg_tools_mcp_limits(const dg_catalog_t *cat) {
  const dg_server_settings_t *s = &cat->server;
  const char *user = s->stdio_user;
  return (dg_mcp_limits_t){
      .host = s->host,
      .port = s->port,
      .public_url = s->public_url,
      .allowed_origins = s->allowed_origins,
      .nallowed_origins = s->nallowed_origins,
      .allowed_hosts = s->allowed_hosts,
      .nallowed_hosts = s->nallowed_hosts,
      .max_body_bytes = s->max_body_bytes,
      .max_write_buffer = s->max_write_buffer,
      .max_result_bytes = s->max_result_bytes,
      .max_sessions = s->max_sessions,
      .max_inflight_per_session = s->max_inflight_per_session,
      .session_idle_timeout_ms = s->session_idle_timeout_ms,
      .session_max_lifetime_ms = s->session_max_lifetime_ms,
      .tool_timeout_ms = s->tool_timeout_ms,
      .session_key = s->session_key,
      .session_key_len = s->session_key_len,
      .stdio_user = user != NULL && dg_catalog_user(cat, user) != NULL ? user : NULL,
      .oauth_enabled = cat->oauth.enabled,
      .oauth_issuer = cat->oauth.issuer,
  };
}
