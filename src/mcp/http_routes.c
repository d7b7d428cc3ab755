/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The HTTP entry point and the gateway's small routes: /healthz, /readyz,
 * /metrics and, with OAuth configured, the OAuth 2.0 protected-resource metadata
 * (RFC 9728) that a 401 points clients at. Every request's Host is checked
 * against server.allowedHosts (DNS rebinding), a browser's Origin against
 * server.allowedOrigins, and CORS preflights are answered here. Also the
 * helpers the /mcp transports share: the public base URL, the 401
 * challenge and JSON error bodies. */
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

/* ---- Origin ----------------------------------------------------------------- */

static bool default_port(const char *scheme, size_t n, const char **port) {
  if (dg_strieq_n(scheme, n, "http") || dg_strieq_n(scheme, n, "ws"))
    *port = "80";
  else if (dg_strieq_n(scheme, n, "https") || dg_strieq_n(scheme, n, "wss"))
    *port = "443";
  else
    return false;
  return true;
}

typedef struct origin {
  const char *scheme;
  size_t scheme_len;
  dg_authority_t auth;
  int64_t port; /* -1: any ("*") */
} origin_t;

/* scheme://host[:port]; the port defaults by scheme, "*" when allowed. */
static bool origin_parse(const char *text, bool wildcard, origin_t *o) {
  const char *sep = strstr(text, "://");
  if (sep == NULL || sep == text)
    return false;
  o->scheme = text;
  o->scheme_len = (size_t)(sep - text);
  const char *rest = sep + 3;
  if (!dg_authority_parse(rest, strlen(rest), wildcard, &o->auth))
    return false;
  o->port = -1;
  if (o->auth.port_len == 1 && o->auth.port[0] == '*')
    return true;
  char digits[8];
  const char *port = digits;
  if (o->auth.port_len > 0)
    snprintf(digits, sizeof(digits), "%.*s", (int)o->auth.port_len, o->auth.port);
  else if (!default_port(o->scheme, o->scheme_len, &port))
    return false;
  return dg_parse_int64(port, 0, 65535, &o->port);
}

static bool counted_ieq(const char *a, size_t alen, const char *b, size_t blen) {
  return alen == blen && strncasecmp(a, b, alen) == 0;
}

/* Scheme, host and port compared (RFC 6454 5), the pattern's port "*"
 * matching any; "*" alone matches every origin, and a pattern that is not
 * an origin ("null") only itself. */
static bool origin_matches(const char *pattern, const char *origin) {
  if (strcmp(pattern, "*") == 0 || strcmp(pattern, origin) == 0)
    return true;
  origin_t p, o;
  if (!origin_parse(pattern, true, &p) || !origin_parse(origin, false, &o))
    return false;
  return counted_ieq(p.scheme, p.scheme_len, o.scheme, o.scheme_len) &&
         counted_ieq(p.auth.host, p.auth.host_len, o.auth.host, o.auth.host_len) &&
         (p.port < 0 || p.port == o.port);
}

bool dg__mcp_origin_allowed(const dg_mcp_limits_t *limits, const char *origin) {
  if (origin == NULL)
    return true;
  for (size_t i = 0; i < limits->nallowed_origins; i++) {
    if (origin_matches(limits->allowed_origins[i], origin))
      return true;
  }
  return false;
}

/* ---- Host ------------------------------------------------------------------- */

/* The address the HTTP server is bound to ("127.0.0.1", "::"). */
static const char *listen_host(const dg_mcp_server_t *s) {
  if (s->http != NULL)
    return dg_http_server_host(s->http);
  return s->limits.host != NULL ? s->limits.host : "127.0.0.1";
}

static bool loopback_name(const char *h, size_t n) {
  if (dg_strieq_n(h, n, "localhost") || dg_strieq_n(h, n, "::1"))
    return true;
  if (n < 4 || strncmp(h, "127.", 4) != 0)
    return false;
  return strspn(h, "0123456789.") >= n;
}

static bool host_in_list(const char *const *list, size_t n, const dg_authority_t *a) {
  for (size_t i = 0; i < n; i++) {
    dg_authority_t e;
    if (strcmp(list[i], "*") == 0)
      return true;
    if (!dg_authority_parse(list[i], strlen(list[i]), false, &e))
      continue;
    if (counted_ieq(e.host, e.host_len, a->host, a->host_len) &&
        (e.port_len == 0 || counted_ieq(e.port, e.port_len, a->port, a->port_len)))
      return true;
  }
  return false;
}

/* Whether a is publicUrl's host ("https://mcp.example.com/x"). */
static bool public_host_is(const dg_mcp_server_t *s, const dg_authority_t *a) {
  const char *url = s->limits.public_url;
  const char *sep = url != NULL ? strstr(url, "://") : NULL;
  dg_authority_t p;
  if (sep == NULL || !dg_authority_parse(sep + 3, strcspn(sep + 3, "/?#"), false, &p))
    return false;
  return counted_ieq(p.host, p.host_len, a->host, a->host_len);
}

/* Without server.allowedHosts: a gateway bound to loopback answers only
 * the loopback names, its listen address and publicUrl's host, so that a
 * web page whose name was rebound to 127.0.0.1 cannot reach it; bound
 * elsewhere, any Host. */
static bool host_by_default(const dg_mcp_server_t *s, const dg_authority_t *a) {
  const char *listen = listen_host(s);
  if (!loopback_name(listen, strlen(listen)))
    return true;
  return loopback_name(a->host, a->host_len) || dg_strieq_n(a->host, a->host_len, listen) ||
         public_host_is(s, a);
}

/* An HTTP/1.0 request without Host cannot come from a browser, so it
 * cannot be a rebinding; it passes. */
static bool host_allowed(const dg_mcp_server_t *s, const dg_http_request_t *req) {
  const char *host = dg_http_request_host(req);
  dg_authority_t a;
  if (*host == '\0')
    return true;
  if (!dg_authority_parse(host, strlen(host), false, &a))
    return false;
  const dg_mcp_limits_t *set = &s->limits;
  if (set->allowed_hosts != NULL)
    return host_in_list(set->allowed_hosts, set->nallowed_hosts, &a);
  return host_by_default(s, &a);
}

/* ---- Base URL and the 401 challenge ------------------------------------------ */

/* publicUrl, else the listen address: never the request's Host, which the
 * client chose (a wildcard address is named by its loopback). */
const char *dg__mcp_base_url(const dg_mcp_server_t *s, dg_http_request_t *req) {
  dg_arena_t *arena = dg_http_request_arena(req);
  const char *pub = s->limits.public_url;
  if (pub != NULL && *pub != '\0') {
    size_t n = strlen(pub);
    while (n > 0 && pub[n - 1] == '/')
      n--;
    return dg_arena_strndup(arena, pub, n);
  }
  const char *host = listen_host(s);
  if (strcmp(host, "0.0.0.0") == 0)
    host = "127.0.0.1";
  else if (strcmp(host, "::") == 0)
    host = "::1";
  int port = s->http != NULL ? dg_http_server_port(s->http) : s->limits.port;
  bool v6 = strchr(host, ':') != NULL;
  return dg_arena_sprintf(arena, "%s://%s%s%s:%d", dg_http_request_is_tls(req) ? "https" : "http",
                          v6 ? "[" : "", host, v6 ? "]" : "", port);
}

bool dg__mcp_bearer_given(const char *authorization) {
  if (authorization == NULL || strncasecmp(authorization, "Bearer", 6) != 0)
    return false;
  const char *p = authorization + 6;
  return (*p == ' ' || *p == '\t') && p[strspn(p, " \t")] != '\0';
}

/* RFC 6750 3: a request without a token gets the bare challenge, one with
 * a token that failed gets error="invalid_token". The challenge names the
 * protected-resource metadata only when OAuth is configured, as only then
 * is it served. */
void dg__mcp_http_unauthorized(dg_mcp_server_t *s, dg_http_request_t *req, bool token_given,
                               const char *message) {
  dg_arena_t *arena = dg_http_request_arena(req);
  const char *error = token_given ? ", error=\"invalid_token\"" : "";
  const char *challenge;
  if (s->limits.oauth_enabled) {
    const char *base = dg__mcp_base_url(s, req);
    challenge = dg_arena_sprintf(
        arena, "Bearer resource_metadata=\"%s/.well-known/oauth-protected-resource\"%s",
        base ? base : "", error);
  } else {
    challenge = dg_arena_sprintf(arena, "Bearer realm=\"datagate\"%s", error);
  }
  dg_http_header_t headers[] = {ct_json, {"WWW-Authenticate", challenge ? challenge : "Bearer"}};
  respond_json(req, 401, headers, DG_ARRAY_SIZE(headers), json_pack("{s:s}", "error", message));
}

/* ---- CORS ------------------------------------------------------------------- */

#define CORS_ALLOW_HEADERS                                                                         \
  "Authorization, Content-Type, Mcp-Session-Id, Mcp-Protocol-Version, Last-Event-ID"

/* Every answer to an allowed browser origin says so, and lets the page
 * read the session id and the 401 challenge. */
static void cors_headers(dg_http_request_t *req, const char *origin) {
  dg_http_request_add_response_header(req, "Access-Control-Allow-Origin", origin);
  dg_http_request_add_response_header(req, "Vary", "Origin");
  dg_http_request_add_response_header(req, "Access-Control-Expose-Headers",
                                      "Mcp-Session-Id, WWW-Authenticate");
}

static bool is_mcp_path(const char *path) {
  return strcmp(path, "/mcp") == 0;
}

static bool is_metadata_path(const dg_mcp_server_t *s, const char *path) {
  return s->limits.oauth_enabled &&
         (strcmp(path, "/.well-known/oauth-protected-resource") == 0 ||
          strcmp(path, "/.well-known/oauth-protected-resource/mcp") == 0);
}

static const char *allowed_methods(const dg_mcp_server_t *s, const char *path) {
  if (is_mcp_path(path))
    return "GET, POST, DELETE, OPTIONS";
  if (strcmp(path, "*") == 0)
    return "GET, HEAD, POST, DELETE, OPTIONS";
  if (strcmp(path, "/healthz") == 0 || strcmp(path, "/metrics") == 0 || is_metadata_path(s, path))
    return "GET, HEAD, OPTIONS";
  return NULL;
}

/* OPTIONS: a CORS preflight from an allowed origin gets what it may send;
 * a plain OPTIONS gets Allow. No token is needed: browsers send none with
 * a preflight. */
static void options(dg_mcp_server_t *s, dg_http_request_t *req, const char *origin,
                    bool origin_ok) {
  const char *methods = allowed_methods(s, dg_http_request_path(req));
  if (methods == NULL) {
    dg__mcp_http_error(req, 404, "not found; the MCP endpoint is /mcp");
    return;
  }
  if (!origin_ok) {
    dg__mcp_http_error(req, 403, "Forbidden: this Origin is not in server.allowedOrigins");
    return;
  }
  dg_http_header_t headers[] = {{"Allow", methods},
                                {"Access-Control-Allow-Methods", methods},
                                {"Access-Control-Allow-Headers", CORS_ALLOW_HEADERS},
                                {"Access-Control-Max-Age", "600"}};
  dg_http_respond(req, 204, headers, origin != NULL ? DG_ARRAY_SIZE(headers) : 1, "", 0);
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

/* Ready for traffic: the store is open and the catalog loaded, and the
 * process is not draining. Unlike /healthz, a load balancer takes a 503
 * here as "send nothing new" without counting the process as dead. */
static void readyz(dg_mcp_server_t *s, dg_http_request_t *req) {
  bool ready = atomic_load_explicit(&s->ready, memory_order_relaxed) && !s->closing;
  dg_http_header_t headers[] = {ct_json, {"Cache-Control", "no-store"}};
  respond_json(req, ready ? 200 : 503, headers, DG_ARRAY_SIZE(headers),
               json_pack("{s:s}", "status", ready ? "ready" : "not_ready"));
}

/* Metrics that are read rather than counted: the process's and the build's. */
static void update_metrics(const dg_mcp_server_t *s) {
  char labels[96];
  dg_metrics_update_process();
  dg_metrics_describe("datagate_build_info", "Always 1; the version label is the build's.");
  snprintf(labels, sizeof(labels), "version=\"%.64s\"",
           s->config.server_version ? s->config.server_version : "0");
  dg_metrics_gauge_set("datagate_build_info", labels, 1);
}

static void metrics(dg_mcp_server_t *s, dg_http_request_t *req) {
  dg_buf_t out;
  update_metrics(s);
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
  const char *issuer = s->limits.oauth_issuer;
  json_t *servers = json_array();
  if (issuer != NULL)
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
  bool ready = strcmp(path, "/readyz") == 0;
  bool meta = is_metadata_path(s, path); /* served only when OAuth is configured */
  if (!health && !metric && !ready && !meta)
    return false;
  if (!is_get(req)) {
    dg_http_header_t headers[] = {ct_json, {"Allow", "GET, HEAD, OPTIONS"}};
    respond_json(req, 405, headers, DG_ARRAY_SIZE(headers),
                 json_pack("{s:s}", "error", "method not allowed; use GET"));
  } else if (health) {
    healthz(s, req);
  } else if (ready) {
    readyz(s, req);
  } else if (metric) {
    metrics(s, req);
  } else {
    oauth_metadata(s, req);
  }
  return true;
}

/* Only /mcp and the paths the other routes' owner named take bodies, and
 * only with a valid token. That owner checks its own Origin and role once
 * the body is in. */
bool dg_mcp_http_admit(dg_http_request_t *req) {
  dg_mcp_server_t *s = dg_http_request_server_data(req);
  const char *path = dg_http_request_path(req);
  bool mcp = strcmp(path, "/mcp") == 0;
  const char *prefix = s != NULL ? s->route_body_prefix : NULL;
  bool routed = prefix != NULL && strncmp(path, prefix, strlen(prefix)) == 0;
  if (s == NULL || s->closing || !(mcp || routed) ||
      (mcp && !dg__mcp_origin_allowed(&s->limits, dg_http_request_header(req, "Origin"))))
    return false;
  const dg_principal_t *p;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  const char *authz = dg_http_request_header(req, "Authorization");
  if (dg_auth_authenticate_seen(s->tokens, s->cat, authz, dg_http_request_arena(req), &p, &err) !=
      0)
    return false;
  /* The handler takes the caller from here rather than checking the
   * token a second time (http.c, authenticate). */
  dg_http_request_set_admitted(req, p);
  return true;
}

void dg_mcp_http_handler(dg_http_request_t *req) {
  dg_mcp_server_t *s = dg_http_request_server_data(req);
  if (s == NULL || s->closing) {
    dg__mcp_http_error(req, 503, "the server is shutting down");
    return;
  }
  if (!host_allowed(s, req)) {
    dg__mcp_http_error(req, 421, "Misdirected Request: this Host is not in server.allowedHosts");
    return;
  }
  const char *origin = dg_http_request_header(req, "Origin");
  bool origin_ok = dg__mcp_origin_allowed(&s->limits, origin);
  if (origin != NULL && origin_ok)
    cors_headers(req, origin);
  if (strcmp(dg_http_request_method(req), "OPTIONS") == 0) {
    options(s, req, origin, origin_ok);
    return;
  }
  if (strcmp(dg_http_request_path(req), "/mcp") == 0) {
    dg__mcp_http_mcp(s, req);
    return;
  }
  if (!dg__mcp_http_route(s, req) && (s->route == NULL || !s->route(req, s->route_data)))
    dg__mcp_http_error(req, 404, "not found; the MCP endpoint is /mcp");
}
