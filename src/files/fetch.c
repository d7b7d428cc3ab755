/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* One document download for get_file_text. Each hop is a GET with the
 * process's client (the source's address policy, the download caps) or,
 * for a source with a connector, a connector call (its headers,
 * credentials and limits, with the download caps). Redirects are followed
 * here rather than by the client, so that every target is checked like the
 * first URL: scheme, source, dot segments; the client then checks the
 * addresses the target's name resolves to before it connects. The body of
 * the 2xx answer streams to the caller as it arrives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "datagate/files.h"
#include "datagate/save.h"

typedef enum fetch_state { FETCH_SENDING, FETCH_DEFERRED, FETCH_DONE } fetch_state_t;

struct dg_files_fetch {
  uv_loop_t *loop;
  struct dg_http_client *const *client;
  struct dg_connectors *const *connectors;
  const dg_file_settings_t *cfg;
  dg_arena_t *arena;
  const dg_files_fetch_ops_t *ops;
  void *user;
  const char *request_id;
  const char *trace_id;
  dg_http_url_t url; /* this hop */
  const dg_file_source_t *source;
  const dg_principal_t *principal;
  const char *etag; /* validators sent, or NULL */
  const char *last_modified;
  unsigned hops;
  fetch_state_t state;
  dg_http_call_t *http;          /* a hop through the client */
  dg_connector_call_t *upstream; /* a hop through a connector */
  uv_timer_t *timer;             /* carries a failure to a later loop turn */
  bool canceled;
  bool aborted; /* on_head or on_body stopped the download */
  int rc;
  dg_errctx_t err;
};

static int send_hop(dg_files_fetch_t *f, dg_errctx_t *err);

/* ---- Ending ---------------------------------------------------------------------- */

static void finish(dg_files_fetch_t *f, int rc, bool not_modified) {
  f->state = FETCH_DONE;
  f->http = NULL;
  f->upstream = NULL;
  f->ops->on_done(f->user, rc, not_modified, f->aborted, &f->err);
}

static void on_timer_closed(uv_handle_t *h) {
  dg_files_fetch_t *f = h->data;
  finish(f, f->rc, false);
}

static void on_timer(uv_timer_t *t) {
  uv_close((uv_handle_t *)t, on_timer_closed);
}

/* Ends the fetch with err on a later loop turn. */
static void defer_failure(dg_files_fetch_t *f, int rc) {
  f->rc = rc;
  f->state = FETCH_DEFERRED;
  f->http = NULL;
  f->upstream = NULL;
  uv_timer_init(f->loop, f->timer);
  f->timer->data = f;
  uv_timer_start(f->timer, on_timer, 0, 0);
}

/* "http://host/path" of this hop, without its query. */
static const char *shown(dg_files_fetch_t *f) {
  char url[512];
  dg_http_url_display(&f->url, url, sizeof(url));
  const char *s = dg_arena_strdup(f->arena, url);
  return s != NULL ? s : "the document";
}

/* The client's reason, in the words of a document download. */
static int download_failed(dg_files_fetch_t *f, int rc, dg_http_failure_t failure,
                           const dg_errctx_t *why) {
  const char *msg = why != NULL && why->message[0] ? why->message : dg_strerror(rc);
  if (failure == DG_HTTP_FAIL_TOO_BIG)
    return dg_errctx_set(&f->err, rc, "url",
                         "The document at '%s' is larger than the download limit of %zu bytes "
                         "(%s).",
                         shown(f), f->cfg->max_download_bytes, msg);
  if (failure == DG_HTTP_FAIL_TIMEOUT)
    return dg_errctx_set(&f->err, rc, "url",
                         "The download of '%s' took longer than allowed (at most %llu ms): %s.",
                         shown(f), (unsigned long long)f->cfg->download_timeout_ms, msg);
  return dg_errctx_set(&f->err, rc, "url", "The document at '%s' cannot be read: %s.", shown(f),
                       msg);
}

/* ---- Redirects ------------------------------------------------------------------------ */

static const char *header(const dg_http_header_t *h, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++) {
    if (strcasecmp(h[i].name, name) == 0)
      return h[i].value;
  }
  return NULL;
}

/* Resolves and checks the target like a first URL, then sends again. */
static int follow(dg_files_fetch_t *f, const dg_http_response_t *res) {
  const char *location = header(res->headers, res->nheaders, "Location");
  dg_http_url_t next;
  const char *why = NULL;
  if (f->hops >= f->cfg->max_redirects)
    return dg_errctx_set(&f->err, DG_EUPSTREAM, "url",
                         "The document at '%s' cannot be read: it was redirected more than %u "
                         "times.",
                         shown(f), f->cfg->max_redirects);
  if (location == NULL || dg_http_url_resolve(f->arena, &f->url, location, &next, &why) != 0)
    return dg_errctx_set(&f->err, DG_EPROTO, "url",
                         "The document at '%s' cannot be read: it answered %d with %s.", shown(f),
                         res->status, location ? why : "no Location header");
  if (f->url.https && !next.https)
    return dg_errctx_set(&f->err, DG_EPERM, "url",
                         "The document at '%s' cannot be read: it redirects from https to http, "
                         "which is refused.",
                         shown(f));
  char *text = dg_http_url_full(f->arena, &next);
  const char *what = dg_arena_sprintf(
      f->arena, "The document at '%s' cannot be read: the redirect target", shown(f));
  if (text == NULL || what == NULL)
    return dg_errctx_set(&f->err, DG_ENOMEM, "url", "out of memory");
  int rc = dg_files_check(f->cfg, f->principal, f->arena, what, text, &f->url, &f->source, &f->err);
  if (rc != 0)
    return rc;
  f->hops++;
  return send_hop(f, &f->err);
}

/* A 3xx, a 304 or the end of a 2xx body: what follows. */
static void answered(dg_files_fetch_t *f, const dg_http_response_t *res) {
  int status = res != NULL ? res->status : 0;
  if (status == 304 && (f->etag != NULL || f->last_modified != NULL)) {
    finish(f, 0, true);
    return;
  }
  if (status >= 300 && status < 400) {
    int rc = follow(f, res);
    if (rc != 0)
      finish(f, rc, false);
    return;
  }
  finish(f, 0, false);
}

static void failed(dg_files_fetch_t *f, int rc, dg_http_failure_t failure, const dg_errctx_t *why) {
  if (f->canceled)
    rc = dg_errctx_set(&f->err, DG_ECANCELED, "url", "The download was canceled.");
  else if (!f->aborted)
    download_failed(f, rc, failure, why);
  finish(f, rc, false);
}

/* ---- Client and connector callbacks ---------------------------------------------------- */

static int on_head(dg_files_fetch_t *f, int status, const dg_http_header_t *h, size_t n) {
  if (status < 200 || status >= 300)
    return 0;
  const char *length = header(h, n, "Content-Length");
  int64_t declared = -1;
  if (length != NULL && !dg_parse_int64(length, 0, INT64_MAX, &declared))
    declared = -1;
  int rc = f->ops->on_head(f->user, header(h, n, "Content-Type"), header(h, n, "ETag"),
                           header(h, n, "Last-Modified"), declared);
  f->aborted = rc != 0;
  return rc;
}

static int on_body(dg_files_fetch_t *f, const char *data, size_t len) {
  int rc = f->ops->on_body(f->user, data, len);
  f->aborted = rc != 0;
  return rc;
}

static int client_head(dg_http_call_t *call, int status, const dg_http_header_t *h, size_t n,
                       void *user) {
  return on_head(user, status, h, n);
}

static int client_chunk(dg_http_call_t *call, const char *data, size_t len, void *user) {
  return on_body(user, data, len);
}

static void client_done(dg_http_call_t *call, const dg_http_result_t *result, void *user) {
  dg_files_fetch_t *f = user;
  f->http = NULL;
  if (result->rc != 0)
    failed(f, result->rc, result->failure, result->err);
  else
    answered(f, result->response);
}

static int conn_head(int status, const dg_http_header_t *h, size_t n, void *user) {
  return on_head(user, status, h, n);
}

static int conn_chunk(const char *data, size_t len, void *user) {
  return on_body(user, data, len);
}

static void conn_done(dg_connector_call_t *call, const dg_connector_result_t *result, void *user) {
  dg_files_fetch_t *f = user;
  f->upstream = NULL;
  dg_http_failure_t kind = result->rc == DG_ETIMEDOUT ? DG_HTTP_FAIL_TIMEOUT
                           : result->rc == DG_E2BIG   ? DG_HTTP_FAIL_TOO_BIG
                                                      : DG_HTTP_FAIL_STATUS;
  if (result->rc != 0)
    failed(f, result->rc, kind, result->err);
  else
    answered(f, result->response);
}

/* ---- Sending ----------------------------------------------------------------------------- */

static const dg_connector_stream_t conn_stream_base = {
    .no_redirects = true, .on_head = conn_head, .on_chunk = conn_chunk};

/* Accept, and the validators of a cached copy. */
static size_t request_headers(dg_files_fetch_t *f, dg_http_header_t h[3]) {
  size_t n = 0;
  h[n++] = (dg_http_header_t){"Accept", "*/*"};
  if (f->etag != NULL)
    h[n++] = (dg_http_header_t){"If-None-Match", f->etag};
  if (f->last_modified != NULL)
    h[n++] = (dg_http_header_t){"If-Modified-Since", f->last_modified};
  return n;
}

/* Through the connector: the URL minus its base URL is the path. */
static int send_connector(dg_files_fetch_t *f, const dg_http_header_t *h, size_t n,
                          dg_errctx_t *err) {
  const dg_connector_t *conn = f->source->connector;
  const char *base_path = strchr(conn->base_url + (conn->https ? 8 : 7), '/');
  size_t skip = base_path != NULL ? strlen(base_path) : 0;
  dg_connector_stream_t st = conn_stream_base;
  st.max_body_bytes = f->cfg->max_download_bytes;
  st.timeout_ms = f->cfg->download_timeout_ms;
  dg_connector_request_t req = {.method = "GET",
                                .path = f->url.target + skip,
                                .headers = h,
                                .nheaders = n,
                                .request_id = f->request_id,
                                .trace_id = f->trace_id,
                                .stream = &st};
  if (*f->connectors == NULL)
    return dg_errctx_set(err, DG_ENOTSUP, "url",
                         "The document at '%s' cannot be read: connector calls are not running "
                         "in this gateway.",
                         shown(f));
  return dg_connectors_call(*f->connectors, conn, &req, conn_done, f, &f->upstream, err);
}

static int send_client(dg_files_fetch_t *f, const dg_http_header_t *h, size_t n, dg_errctx_t *err) {
  bool priv = f->source->allow_private_addresses;
  dg_http_client_request_t r;
  dg_http_client_request_init(&r);
  r.method = "GET";
  r.url = dg_http_url_full(f->arena, &f->url);
  r.headers = h;
  r.nheaders = n;
  r.connector = f->source->name;
  r.request_id = f->request_id;
  r.trace_id = f->trace_id;
  r.timeouts.total_ms = f->cfg->download_timeout_ms;
  r.max_body_bytes = f->cfg->max_download_bytes;
  r.max_redirects = 0;
  r.addresses = (dg_http_address_policy_t){
      .enforce = true, .allow_loopback = priv, .allow_link_local = priv, .allow_private = priv};
  r.on_head = client_head;
  r.on_chunk = client_chunk;
  r.done = client_done;
  r.user = f;
  if (*f->client == NULL || r.url == NULL)
    return dg_errctx_set(err, *f->client ? DG_ENOMEM : DG_ENOTSUP, "url",
                         "The document at '%s' cannot be read: %s.", shown(f),
                         r.url ? "the connector client is not running" : "out of memory");
  return dg_http_client_request(*f->client, &r, &f->http, err);
}

static int send_hop(dg_files_fetch_t *f, dg_errctx_t *err) {
  dg_http_header_t h[3];
  size_t n = request_headers(f, h);
  f->state = FETCH_SENDING;
  int rc = f->source->connector != NULL ? send_connector(f, h, n, err) : send_client(f, h, n, err);
  /* A hop that cannot start after a redirect still ends on a later turn. */
  if (rc != 0 && f->hops > 0) {
    defer_failure(f, rc);
    return 0;
  }
  return rc;
}

/* ---- Public -------------------------------------------------------------------------------- */

int dg_files_fetch_start(const dg_files_fetch_req_t *req, dg_files_fetch_t **out,
                         dg_errctx_t *err) {
  dg_files_fetch_t *f = dg_arena_calloc(req->arena, 1, sizeof(*f));
  uv_timer_t *timer = f != NULL ? dg_arena_calloc(req->arena, 1, sizeof(*timer)) : NULL;
  if (timer == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "url", "out of memory");
  *f = (dg_files_fetch_t){.loop = req->loop,
                          .client = req->client,
                          .connectors = req->connectors,
                          .cfg = req->cfg,
                          .arena = req->arena,
                          .ops = req->ops,
                          .user = req->user,
                          .request_id = req->request_id,
                          .trace_id = req->trace_id,
                          .url = *req->url,
                          .source = req->source,
                          .principal = req->principal,
                          .etag = req->etag,
                          .last_modified = req->last_modified,
                          .timer = timer};
  *out = f;
  return send_hop(f, err);
}

void dg_files_fetch_cancel(dg_files_fetch_t *f) {
  if (f->state != FETCH_SENDING || f->canceled)
    return;
  f->canceled = true;
  if (f->http != NULL)
    dg_http_call_cancel(f->http);
  else if (f->upstream != NULL)
    dg_connector_call_cancel(f->upstream);
}
