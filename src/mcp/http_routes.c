/* The HTTP entry point and the gateway's small routes: /healthz, /metrics
 * and the OAuth 2.0 protected-resource metadata (RFC 9728) that a 401
 * points clients at. Also the helpers the /mcp transports share: Origin
 * checks, the public base URL and JSON error bodies. */
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "mcp/internal.h"

#define METRICS_MAX (16 * 1024 * 1024)
#define BODY_MAX (64 * 1024)

static const dg_http_header_t ct_json = {"Content-Type", "application/json"};

static void respond_json(dg_http_request_t *req, int status, const dg_http_header_t *headers,
                         size_t n, json_t *body) {
  dg_buf_t out;
  dg_buf_init(&out, BODY_MAX);
  if (body == NULL || dg__mcp_dump(body, &out) != 0)
    dg_buf_append_str(&out, "{\"error\":\"internal error\"}");
  json_decref(body);
  dg_http_respond(req, status, headers, n, out.data, out.len);
  dg_buf_free(&out);
}

void dg__mcp_http_error(dg_http_request_t *req, int status, const char *message) {
  respond_json(req, status, &ct_json, 1, json_pack("{s:s}", "error", message));
}

bool dg__mcp_origin_allowed(const dg_catalog_t *cat, const char *origin) {
  if (origin == NULL)
    return true;
  for (size_t i = 0; i < cat->server.nallowed_origins; i++) {
    const char *o = cat->server.allowed_origins[i];
    if (strcmp(o, "*") == 0 || strcmp(o, origin) == 0)
      return true;
  }
  return false;
}

/* A Host header goes into a response header: only host name characters. */
static bool host_ok(const char *host) {
  if (host == NULL || *host == '\0' || strlen(host) > 255)
    return false;
  for (const char *p = host; *p; p++) {
    unsigned char c = (unsigned char)*p;
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr(".-:[]", c) != NULL;
    if (!ok)
      return false;
  }
  return true;
}

const char *dg__mcp_base_url(const dg_mcp_server_t *s, dg_http_request_t *req) {
  dg_arena_t *arena = dg_http_request_arena(req);
  const char *pub = s->cat->server.public_url;
  if (pub != NULL && *pub != '\0') {
    size_t n = strlen(pub);
    while (n > 0 && pub[n - 1] == '/')
      n--;
    return dg_arena_strndup(arena, pub, n);
  }
  const char *host = dg_http_request_header(req, "Host");
  return dg_arena_sprintf(arena, "%s://%s", dg_http_request_is_tls(req) ? "https" : "http",
                          host_ok(host) ? host : "localhost");
}

void dg__mcp_http_unauthorized(dg_mcp_server_t *s, dg_http_request_t *req, const char *message) {
  const char *base = dg__mcp_base_url(s, req);
  const char *challenge = dg_arena_sprintf(
      dg_http_request_arena(req),
      "Bearer resource_metadata=\"%s/.well-known/oauth-protected-resource\"", base ? base : "");
  dg_http_header_t headers[] = {ct_json, {"WWW-Authenticate", challenge ? challenge : "Bearer"}};
  respond_json(req, 401, headers, DG_ARRAY_SIZE(headers), json_pack("{s:s}", "error", message));
}

/* ---- Routes ------------------------------------------------------------------ */

static unsigned connections(const dg_mcp_server_t *s) {
  return s->http != NULL ? dg_http_server_connections(s->http) : s->nconns;
}

static void healthz(dg_mcp_server_t *s, dg_http_request_t *req) {
  const char *version = s->config.server_version ? s->config.server_version : "0";
  json_t *body =
      json_pack("{s:s,s:s,s:i,s:I,s:i,s:i}", "status", "ok", "version", version, "pid",
                (int)getpid(), "uptimeSeconds", (json_int_t)((dg_now_ms() - s->start_ms) / 1000),
                "connections", (int)connections(s), "sessions", (int)s->nsessions);
  dg_http_header_t headers[] = {ct_json, {"Cache-Control", "no-store"}};
  respond_json(req, 200, headers, DG_ARRAY_SIZE(headers), body);
}

static void metrics(dg_http_request_t *req) {
  dg_buf_t out;
  dg_buf_init(&out, METRICS_MAX);
  if (dg_metrics_render(&out) != 0) {
    dg_buf_free(&out);
    dg__mcp_http_error(req, 500, "the metrics do not fit the response limit");
    return;
  }
  dg_http_header_t headers[] = {{"Content-Type", "text/plain; version=0.0.4; charset=utf-8"}};
  dg_http_respond(req, 200, headers, 1, out.data ? out.data : "", out.len);
  dg_buf_free(&out);
}

static void oauth_metadata(dg_mcp_server_t *s, dg_http_request_t *req) {
  const char *base = dg__mcp_base_url(s, req);
  const char *issuer = s->cat->oauth.issuer;
  json_t *servers = json_array();
  if (s->cat->oauth.enabled && issuer != NULL)
    json_array_append_new(servers, json_string(issuer));
  json_t *body = json_pack("{s:s+,s:o,s:[s],s:s}", "resource", base ? base : "", "/mcp",
                           "authorization_servers", servers, "bearer_methods_supported", "header",
                           "resource_name", "datagate");
  respond_json(req, 200, &ct_json, 1, body);
}

static bool is_get(const dg_http_request_t *req) {
  const char *m = dg_http_request_method(req);
  return strcmp(m, "GET") == 0 || strcmp(m, "HEAD") == 0;
}

bool dg__mcp_http_route(dg_mcp_server_t *s, dg_http_request_t *req) {
  const char *path = dg_http_request_path(req);
  bool health = strcmp(path, "/healthz") == 0, metric = strcmp(path, "/metrics") == 0;
  bool meta = strcmp(path, "/.well-known/oauth-protected-resource") == 0 ||
              strcmp(path, "/.well-known/oauth-protected-resource/mcp") == 0;
  if (!health && !metric && !meta)
    return false;
  if (!is_get(req)) {
    dg_http_header_t headers[] = {ct_json, {"Allow", "GET, HEAD"}};
    respond_json(req, 405, headers, DG_ARRAY_SIZE(headers),
                 json_pack("{s:s}", "error", "method not allowed; use GET"));
  } else if (health) {
    healthz(s, req);
  } else if (metric) {
    metrics(req);
  } else {
    oauth_metadata(s, req);
  }
  return true;
}

void dg_mcp_http_handler(dg_http_request_t *req) {
  dg_mcp_server_t *s = dg_http_request_server_data(req);
  if (s == NULL || s->closing) {
    dg__mcp_http_error(req, 503, "the server is shutting down");
    return;
  }
  if (strcmp(dg_http_request_path(req), "/mcp") == 0) {
    dg__mcp_http_mcp(s, req);
    return;
  }
  if (!dg__mcp_http_route(s, req) && (s->route == NULL || !s->route(req, s->route_data)))
    dg__mcp_http_error(req, 404, "not found; the MCP endpoint is /mcp");
}
