/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Connector calls: a request relative to a connector becomes an HTTP
 * client call with the connector's base URL, headers, limits and
 * authentication. The stages of one call, in order: copy the request,
 * check the credentials are configured, get an OAuth token when the
 * connector uses one (oauth.c), send, and on a 401 with an OAuth token
 * fetch a new token and send once more. */
#include <assert.h>
#include <mbedtls/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "save/internal.h"

static const char *const state_names[] = {"new", "wait_token", "sending", "deferred", "done"};

void dg__save_call_set_state(dg_connector_call_t *call, dg__save_call_state_t next) {
  static const bool legal[5][5] = {
      [DG__SAVE_CALL_NEW] = {[DG__SAVE_CALL_WAIT_TOKEN] = true,
                             [DG__SAVE_CALL_SENDING] = true,
                             [DG__SAVE_CALL_DEFERRED] = true},
      [DG__SAVE_CALL_WAIT_TOKEN] =
          {[DG__SAVE_CALL_SENDING] = true, [DG__SAVE_CALL_DEFERRED] = true},
      [DG__SAVE_CALL_SENDING] = {[DG__SAVE_CALL_WAIT_TOKEN] = true,
                                 [DG__SAVE_CALL_SENDING] = true,
                                 [DG__SAVE_CALL_DEFERRED] = true,
                                 [DG__SAVE_CALL_DONE] = true},
      [DG__SAVE_CALL_DEFERRED] = {[DG__SAVE_CALL_DONE] = true},
  };
  if (!legal[call->state][next])
    dg_log_illegal_state("connector_call", state_names[call->state], state_names[next]);
  call->state = next;
}

/* ---- Ending ----------------------------------------------------------------- */

static void unlink_call(dg_connector_call_t *call) {
  dg_connectors_t *cs = call->cs;
  DG_LIST_UNLINK(cs->calls, call, prev, next);
  cs->ncalls--;
}

/* Calls kept for reuse (1.4 KiB each, past glibc's per-thread cache). */
#define SPARE_CALLS 256

static void call_free(dg_connectors_t *cs, dg_connector_call_t *call) {
  dg_spare_release(&cs->spare, call, !cs->closing);
}

static void complete(dg_connector_call_t *call, const dg_connector_result_t *result) {
  dg_connectors_t *cs = call->cs;
  dg__save_call_set_state(call, DG__SAVE_CALL_DONE);
  dg__save_oauth_release(call);
  unlink_call(call);
  call->done(call, result, call->user);
  dg_arena_destroy(call->arena);
  call_free(cs, call);
  dg__save_maybe_free(cs);
}

static void complete_without_response(dg_connector_call_t *call) {
  dg_connector_result_t result = {.rc = call->rc,
                                  .err = &call->err,
                                  .attempts = call->attempts,
                                  .elapsed_ms = dg_now_ms() - call->start_ms};
  complete(call, &result);
}

static void on_timer(uv_timer_t *timer) {
  dg_connectors_t *cs = timer->data;
  dg_connector_call_t *list = cs->deferred;
  cs->deferred = cs->deferred_tail = NULL;
  while (list != NULL) {
    dg_connector_call_t *call = list;
    list = call->next_deferred;
    complete_without_response(call);
  }
}

void dg__save_call_defer(dg_connector_call_t *call, int rc) {
  dg_connectors_t *cs = call->cs;
  call->rc = rc;
  call->http = NULL;
  dg__save_call_set_state(call, DG__SAVE_CALL_DEFERRED);
  DG_QUEUE_PUSH(cs->deferred, cs->deferred_tail, call, next_deferred);
  uv_timer_start(&cs->timer, on_timer, 0, 0);
}

/* ---- Sending ------------------------------------------------------------------ */

static bool has_header(const dg_http_header_t *h, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++) {
    if (strcasecmp(h[i].name, name) == 0)
      return true;
  }
  return false;
}

static void wipe_string(void *data) {
  memset(data, 0, strlen(data));
}

/* Secrets copied into the call's arena are wiped when it is released. */
static char *secret(dg_connector_call_t *call, char *s) {
  if (s != NULL && dg_arena_defer(call->arena, wipe_string, s) != 0)
    return NULL;
  return s;
}

/* "Basic base64(user:password)" in the call's arena. */
static const char *basic_credentials(dg_connector_call_t *call) {
  const dg_connector_auth_t *a = &call->conn->auth;
  const char *pair = dg_arena_sprintf(call->arena, "%s:%s", a->username.value, a->password.value);
  size_t n = pair ? strlen(pair) : 0, olen = 0;
  char *out = pair ? dg_arena_alloc(call->arena, 6 + (n + 2) / 3 * 4 + 1) : NULL;
  if (out == NULL)
    return NULL;
  memcpy(out, "Basic ", 6);
  mbedtls_base64_encode((unsigned char *)out + 6, (n + 2) / 3 * 4 + 1, &olen,
                        (const unsigned char *)pair, n);
  memset((void *)pair, 0, n);
  out[6 + olen] = '\0';
  return secret(call, out);
}

/* Fills the authentication header of this attempt; false when the
 * connector sends none (a NULL value means out of memory). */
static bool auth_header(dg_connector_call_t *call, dg_http_header_t *out) {
  const dg_connector_auth_t *a = &call->conn->auth;
  switch (a->kind) {
  case DG_CONN_AUTH_BEARER:
    *out = (dg_http_header_t){
        "Authorization", secret(call, dg_arena_sprintf(call->arena, "Bearer %s", a->token.value))};
    return true;
  case DG_CONN_AUTH_OAUTH2:
    *out = (dg_http_header_t){
        "Authorization", secret(call, dg_arena_sprintf(call->arena, "Bearer %s", call->bearer))};
    return true;
  case DG_CONN_AUTH_BASIC:
    *out = (dg_http_header_t){"Authorization", basic_credentials(call)};
    return true;
  case DG_CONN_AUTH_API_KEY:
    *out = (dg_http_header_t){a->key_name, a->key.value};
    return !a->key_in_query;
  default:
    return false;
  }
}

/* Connector headers (unless the request or the authentication sets the
 * same one), request headers, a default Accept, the authentication. */
static dg_http_header_t *headers(dg_connector_call_t *call, size_t *count) {
  const dg_connector_t *conn = call->conn;
  const dg_connector_request_t *r = &call->req;
  dg_http_header_t *h = dg_arena_calloc(call->arena, conn->nheaders + r->nheaders + 3, sizeof(*h));
  if (h == NULL)
    return NULL;
  dg_http_header_t auth;
  bool has_auth = auth_header(call, &auth);
  size_t n = 0;
  for (size_t i = 0; i < conn->nheaders; i++) {
    const char *name = conn->headers[i].name;
    if (!has_header(r->headers, r->nheaders, name) && !(has_auth && !strcasecmp(name, auth.name)))
      h[n++] = (dg_http_header_t){name, conn->headers[i].value};
  }
  for (size_t i = 0; i < r->nheaders; i++) {
    if (!(has_auth && strcasecmp(r->headers[i].name, auth.name) == 0))
      h[n++] = r->headers[i];
  }
  if (!has_header(h, n, "Accept"))
    h[n++] = (dg_http_header_t){"Accept", "application/json"};
  if (has_auth)
    h[n++] = auth;
  *count = n;
  return has_auth && auth.value == NULL ? NULL : h;
}

/* The URL, with an API key appended when it travels in the query. */
static const char *url(dg_connector_call_t *call) {
  const dg_connector_auth_t *a = &call->conn->auth;
  if (a->kind != DG_CONN_AUTH_API_KEY || !a->key_in_query)
    return call->url;
  dg_buf_t u;
  dg_buf_init(&u, 64 * 1024);
  int rc = dg_buf_append_str(&u, call->url);
  if (rc == 0)
    rc = dg_buf_append_str(&u, strchr(call->url, '?') ? "&" : "?");
  if (rc == 0)
    rc = dg_template_append_encoded(&u, a->key_name, strlen(a->key_name), false);
  if (rc == 0)
    rc = dg_buf_append(&u, "=", 1);
  if (rc == 0)
    rc = dg_template_append_encoded(&u, a->key.value, strlen(a->key.value), false);
  const char *out = rc == 0 ? secret(call, dg_arena_strdup(call->arena, u.data)) : NULL;
  if (u.data != NULL)
    memset(u.data, 0, u.len);
  dg_buf_free(&u);
  return out;
}

void dg__save_request_options(const dg_connector_t *conn, dg_http_client_request_t *r) {
  r->connector = conn->name;
  r->timeouts =
      (dg_http_timeouts_t){conn->dns_timeout_ms, conn->connect_timeout_ms, conn->tls_timeout_ms,
                           conn->first_byte_timeout_ms, conn->timeout_ms};
  r->max_body_bytes = conn->max_response_bytes;
  r->max_retries = conn->retry_max_attempts > 0 ? conn->retry_max_attempts - 1 : 0;
  r->max_redirects = conn->max_redirects;
  /* Loopback and private networks only for connectors that allow them. */
  r->addresses = (dg_http_address_policy_t){.enforce = true,
                                            .allow_loopback = conn->allow_private_addresses,
                                            .allow_link_local = conn->allow_private_addresses,
                                            .allow_private = conn->allow_private_addresses};
}

static void on_http_done(dg_http_call_t *http, const dg_http_result_t *result, void *user);

static int stream_head(dg_http_call_t *http, int status, const dg_http_header_t *headers,
                       size_t nheaders, void *user) {
  dg_connector_call_t *call = user;
  return call->req.stream->on_head(status, headers, nheaders, call->user);
}

static int stream_chunk(dg_http_call_t *http, const char *data, size_t len, void *user) {
  dg_connector_call_t *call = user;
  return call->req.stream->on_chunk(data, len, call->user);
}

/* A download's caps replace the connector's where it sets them. */
static void stream_options(const dg_connector_stream_t *st, dg_http_client_request_t *r) {
  if (st->max_body_bytes > 0)
    r->max_body_bytes = st->max_body_bytes;
  if (st->timeout_ms > 0)
    r->timeouts.total_ms = st->timeout_ms;
  if (st->no_redirects)
    r->max_redirects = 0;
  r->on_head = st->on_head != NULL ? stream_head : NULL;
  r->on_chunk = st->on_chunk != NULL ? stream_chunk : NULL;
}

void dg__save_call_send(dg_connector_call_t *call) {
  dg_http_client_request_t r;
  dg_http_client_request_init(&r);
  dg__save_request_options(call->conn, &r);
  r.method = call->req.method;
  r.url = url(call);
  r.headers = headers(call, &r.nheaders);
  r.body = call->req.body;
  r.body_len = call->req.body_len;
  r.request_id = call->req.request_id;
  r.trace_id = call->req.trace_id;
  r.retry_unsafe = call->req.retry_unsafe;
  r.done = on_http_done;
  r.user = call;
  if (call->req.stream != NULL)
    stream_options(call->req.stream, &r);
  dg__save_call_set_state(call, DG__SAVE_CALL_SENDING);
  if (r.url == NULL || r.headers == NULL) {
    dg_errctx_set(&call->err, DG_ENOMEM, "upstream", "upstream '%s': out of memory",
                  call->conn->name);
    dg__save_call_defer(call, DG_ENOMEM);
    return;
  }
  int rc = dg_http_client_request(call->client, &r, &call->http, &call->err);
  if (rc != 0)
    dg__save_call_defer(call, rc);
}

/* ---- Responses -------------------------------------------------------------------- */

static bool is_401(const dg_http_result_t *result) {
  return result->failure == DG_HTTP_FAIL_STATUS && result->response != NULL &&
         result->response->status == 401;
}

/* A 3xx is an answer only when redirects are not followed; it is not the
 * data the caller asked for. */
static int check_status(dg_connector_call_t *call, const dg_http_result_t *result) {
  const dg_http_response_t *res = result->response;
  if (result->rc != 0 || res == NULL || (res->status >= 200 && res->status < 300))
    return result->rc;
  /* A download that follows redirects itself judges them. */
  const dg_connector_stream_t *st = call->req.stream;
  if (st != NULL && st->no_redirects && res->status >= 300 && res->status < 400)
    return 0;
  size_t n = strcspn(call->url, "?#");
  return dg_errctx_set(&call->err, DG_EUPSTREAM, "upstream",
                       "upstream '%s' %s %.*s answered %d %s (redirects are followed at most %u "
                       "times)",
                       call->conn->name, call->req.method, (int)n, call->url, res->status,
                       dg_http_status_text(res->status), call->conn->max_redirects);
}

static void on_http_done(dg_http_call_t *http, const dg_http_result_t *result, void *user) {
  dg_connector_call_t *call = user;
  call->http = NULL;
  call->attempts += result->attempts;
  bool oauth = call->conn->auth.kind == DG_CONN_AUTH_OAUTH2;
  if (oauth && is_401(result) && !call->refreshed && !call->canceled && !call->cs->closing) {
    dg__save_oauth_refresh(call);
    return;
  }
  int rc = check_status(call, result);
  if (result->rc != 0)
    call->err = *result->err;
  dg_connector_result_t out = {.rc = rc,
                               .err = &call->err,
                               .response = result->response,
                               .attempts = call->attempts,
                               .elapsed_ms = dg_now_ms() - call->start_ms};
  complete(call, &out);
}

/* ---- Starting ------------------------------------------------------------------------ */

/* The credential a connector needs but did not get, with what it is. */
static const dg_connector_secret_t *missing_secret(const dg_connector_auth_t *a,
                                                   const char **what) {
  const dg_connector_secret_t *need[2] = {NULL, NULL};
  const char *names[2] = {NULL, NULL};
  switch (a->kind) {
  case DG_CONN_AUTH_BEARER:
    need[0] = &a->token;
    names[0] = "bearer token";
    break;
  case DG_CONN_AUTH_BASIC:
    need[0] = &a->username;
    names[0] = "user name";
    need[1] = &a->password;
    names[1] = "password";
    break;
  case DG_CONN_AUTH_API_KEY:
    need[0] = &a->key;
    names[0] = "API key";
    break;
  case DG_CONN_AUTH_OAUTH2:
    need[0] = &a->client_id;
    names[0] = "OAuth client id";
    need[1] = &a->client_secret;
    names[1] = "OAuth client secret";
    break;
  default:
    break;
  }
  for (int i = 0; i < 2; i++) {
    if (need[i] != NULL && need[i]->value == NULL) {
      *what = names[i];
      return need[i];
    }
  }
  return NULL;
}

static int copy_request(dg_connector_call_t *call, const dg_connector_request_t *req) {
  dg_arena_t *a = call->arena;
  dg_http_header_t *h = dg_arena_calloc(a, req->nheaders + 1, sizeof(*h));
  call->req = *req;
  call->req.method = dg_arena_strdup(a, req->method);
  call->req.request_id = req->request_id ? dg_arena_strdup(a, req->request_id) : NULL;
  call->req.trace_id = req->trace_id ? dg_arena_strdup(a, req->trace_id) : NULL;
  call->req.body = req->body_len ? dg_arena_strndup(a, req->body, req->body_len) : NULL;
  call->url = dg_arena_sprintf(a, "%s%s", call->conn->base_url, req->path);
  call->req.path = NULL;
  bool ok = h != NULL && call->req.method != NULL && call->url != NULL &&
            (req->body_len == 0 || call->req.body != NULL);
  for (size_t i = 0; ok && i < req->nheaders; i++) {
    h[i].name = dg_arena_strdup(a, req->headers[i].name);
    h[i].value = dg_arena_strdup(a, req->headers[i].value);
    ok = h[i].name != NULL && h[i].value != NULL;
  }
  call->req.headers = h;
  if (ok && req->stream != NULL) {
    dg_connector_stream_t *st = dg_arena_alloc(a, sizeof(*st));
    ok = st != NULL;
    if (ok)
      *st = *req->stream;
    call->req.stream = st;
  }
  return ok ? 0 : DG_ENOMEM;
}

static int check_request(const dg_connector_t *conn, const dg_connector_request_t *req,
                         dg_errctx_t *err) {
  if (req->method == NULL || req->path == NULL)
    return dg_errctx_set(err, DG_EINVAL, "request", "a connector call needs a method and a path");
  if (req->path[0] != '\0' && req->path[0] != '/' && req->path[0] != '?')
    return dg_errctx_set(err, DG_EINVAL, "path",
                         "'%.100s' must be empty or start with '/' (it follows the base URL of "
                         "connector '%s')",
                         req->path, conn->name);
  return 0;
}

static dg_connector_call_t *new_call(dg_connectors_t *cs, const dg_connector_t *conn,
                                     dg_connector_done_fn done, void *user) {
  dg_connector_call_t *call = dg_spare_alloc(&cs->spare);
  dg_arena_t *arena = call ? dg_arena_new(2048) : NULL;
  if (arena == NULL) {
    free(call);
    return NULL;
  }
  *call = (dg_connector_call_t){
      .cs = cs, .conn = conn, .arena = arena, .done = done, .user = user, .start_ms = dg_now_ms()};
  DG_LIST_PUSH(cs->calls, call, prev, next);
  cs->ncalls++;
  return call;
}

int dg_connectors_call(dg_connectors_t *cs, const dg_connector_t *conn,
                       const dg_connector_request_t *req, dg_connector_done_fn done, void *user,
                       dg_connector_call_t **out, dg_errctx_t *err) {
  if (cs->closing)
    return dg_errctx_set(err, DG_ECLOSED, "upstream", "the connector client is shutting down");
  int rc = check_request(conn, req, err);
  dg_http_client_t *client = rc == 0 ? dg__save_client_for(cs, conn, err) : NULL;
  if (client == NULL)
    return rc != 0 ? rc : err->code;
  dg_connector_call_t *call = new_call(cs, conn, done, user);
  if (call != NULL && copy_request(call, req) != 0) {
    unlink_call(call); /* never started: nothing to tell */
    dg_arena_destroy(call->arena);
    call_free(cs, call);
    call = NULL;
  }
  if (call == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "upstream", "out of memory");
  call->client = client;
  if (out != NULL)
    *out = call;
  const char *what = NULL;
  const dg_connector_secret_t *missing = missing_secret(&conn->auth, &what);
  if (missing != NULL) {
    dg_errctx_set(&call->err, DG_EAUTH, "upstream",
                  "upstream '%s' cannot authenticate: the environment variable %s (its %s) is "
                  "not set in the gateway's environment",
                  conn->name, missing->env, what);
    dg__save_call_defer(call, DG_EAUTH);
  } else if (conn->auth.kind == DG_CONN_AUTH_OAUTH2) {
    dg__save_oauth_acquire(call);
  } else {
    dg__save_call_send(call);
  }
  return 0;
}

void dg_connector_call_cancel(dg_connector_call_t *call) {
  if (call->canceled || call->state == DG__SAVE_CALL_DEFERRED || call->state == DG__SAVE_CALL_DONE)
    return;
  call->canceled = true;
  if (call->state == DG__SAVE_CALL_SENDING && call->http != NULL) {
    dg_http_call_cancel(call->http);
    return;
  }
  dg__save_oauth_forget(call);
  dg_errctx_set(&call->err, DG_ECANCELED, "upstream", "upstream '%s': the call was canceled",
                call->conn->name);
  dg__save_call_defer(call, DG_ECANCELED);
}

unsigned dg_connectors_active(const dg_connectors_t *cs) {
  return cs->ncalls;
}

/* ---- The runtime ------------------------------------------------------------------------ */

dg_http_client_t *dg__save_client_for(dg_connectors_t *cs, const dg_connector_t *conn,
                                      dg_errctx_t *err) {
  if (conn->ca_file == NULL)
    return cs->shared;
  for (dg__save_ca_client_t *c = cs->ca_clients; c != NULL; c = c->next) {
    if (strcmp(c->ca_file, conn->ca_file) == 0)
      return c->client;
  }
  dg__save_ca_client_t *c = calloc(1, sizeof(*c));
  char *path = c ? strdup(conn->ca_file) : NULL;
  dg_http_client_config_t config;
  dg_http_client_config_default(&config);
  config.ca_file = path;
  config.dns_servers = dg_http_client_dns_servers(cs->shared);
  int rc = path ? dg_http_client_new(cs->loop, &config, &c->client, err) : DG_ENOMEM;
  if (rc != 0) {
    if (rc == DG_ENOMEM)
      dg_errctx_set(err, rc, "upstream", "out of memory");
    free(path);
    free(c);
    return NULL;
  }
  c->ca_file = path;
  c->next = cs->ca_clients;
  cs->ca_clients = c;
  return c->client;
}

int dg_connectors_new(uv_loop_t *loop, dg_http_client_t *client, dg_connectors_t **out,
                      dg_errctx_t *err) {
  *out = NULL;
  dg_connectors_t *cs = calloc(1, sizeof(*cs));
  if (cs == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "upstream", "out of memory");
  cs->loop = loop;
  cs->shared = client;
  dg_spare_init(&cs->spare, sizeof(dg_connector_call_t), SPARE_CALLS);
  if (client == NULL) {
    dg_http_client_config_t config;
    dg_http_client_config_default(&config);
    int rc = dg_http_client_new(loop, &config, &cs->shared, err);
    if (rc != 0) {
      free(cs);
      return rc;
    }
    cs->own_shared = true;
  }
  uv_timer_init(loop, &cs->timer);
  cs->timer.data = cs;
  *out = cs;
  return 0;
}

int dg_connectors_configure(dg_connectors_t *cs, const dg_catalog_t *cat, dg_errctx_t *err) {
  dg_http_client_config_t defaults;
  dg_http_client_config_default(&defaults);
  for (size_t i = 0; i < cat->nconnectors; i++) {
    const dg_connector_t *conn = &cat->connectors[i];
    dg_http_client_t *client = dg__save_client_for(cs, conn, err);
    if (client == NULL)
      return err->code;
    dg_http_connector_config_t limits = defaults.connector_defaults;
    limits.name = conn->name;
    limits.max_concurrency = conn->max_concurrency;
    limits.max_queue = conn->max_queue;
    limits.breaker_failures = conn->breaker_failures;
    limits.breaker_cooldown_ms = conn->breaker_cooldown_ms;
    int rc = dg_http_client_set_connector(client, &limits);
    if (rc != 0)
      return dg_errctx_set(err, rc, "connectors", "connector '%s': %s", conn->name,
                           dg_strerror(rc));
  }
  dg__save_oauth_prune(cs, cat);
  return 0;
}

static void on_timer_closed(uv_handle_t *handle) {
  dg_connectors_t *cs = handle->data;
  dg__save_oauth_free_all(cs);
  dg_spare_free_all(&cs->spare);
  free(cs);
}

void dg__save_maybe_free(dg_connectors_t *cs) {
  if (!cs->closing || cs->ncalls > 0 || cs->nfetches > 0 ||
      uv_is_closing((uv_handle_t *)&cs->timer))
    return;
  while (cs->ca_clients != NULL) {
    dg__save_ca_client_t *c = cs->ca_clients;
    cs->ca_clients = c->next;
    dg_http_client_close(c->client);
    free(c->ca_file);
    free(c);
  }
  if (cs->own_shared)
    dg_http_client_close(cs->shared);
  uv_close((uv_handle_t *)&cs->timer, on_timer_closed);
}

void dg_connectors_close(dg_connectors_t *cs) {
  if (cs == NULL || cs->closing)
    return;
  cs->closing = true;
  dg_spare_free_all(&cs->spare);
  for (dg_connector_call_t *call = cs->calls; call != NULL;) {
    dg_connector_call_t *next = call->next;
    dg_connector_call_cancel(call);
    call = next;
  }
  dg__save_oauth_cancel_all(cs);
  dg__save_maybe_free(cs);
}
