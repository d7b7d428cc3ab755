/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Shared helpers of the connector tests: a scripted upstream (the raw
 * server of the HTTP client tests) that serves an API and an OAuth token
 * endpoint, hand-built connectors, and a driver that runs the loop until
 * connector calls complete. Closing the fixture closes the runtime and the
 * client, runs the loop dry and checks that nothing was left open. */
#ifndef DG_TEST_SAVE_TEST_H
#define DG_TEST_SAVE_TEST_H

#include "client/client_test.h"
#include "datagate/save.h"

/* What the scripted upstream does, set by each test. */
typedef struct script {
  int api_status;         /* status of API answers (0: 200) */
  bool api_hang;          /* API requests are never answered */
  atomic_bool api_held;   /* API answers wait while set (the test clears it) */
  bool api_needs_token;   /* 401 unless the current token is sent */
  int token_status;       /* status of token answers (0: 200) */
  const char *token_body; /* a fixed token answer, or NULL for a fresh token */
  int expires_in;         /* of fresh tokens (0: leave it out) */
  atomic_int token_requests;
  atomic_int api_requests;
  char token[64]; /* the current token; set by the server, "" revokes */
  char last_token_request[8192];
} script_t;

static inline void save_answer(raw_conn_t *c, int status, const char *body) {
  char head[256];
  snprintf(head, sizeof(head),
           "HTTP/1.1 %d X\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", status,
           strlen(body));
  raw_send(c, head);
  raw_send(c, body);
}

static inline void save_token(raw_conn_t *c, script_t *s, const char *request) {
  uv_mutex_lock(&c->srv->lock);
  snprintf(s->last_token_request, sizeof(s->last_token_request), "%s", request);
  int n = ++s->token_requests;
  if (s->token_status == 0 && s->token_body == NULL)
    snprintf(s->token, sizeof(s->token), "t%d", n);
  char body[256];
  if (s->expires_in > 0)
    snprintf(body, sizeof(body),
             "{\"access_token\":\"%s\",\"token_type\":\"bearer\","
             "\"expires_in\":%d}",
             s->token, s->expires_in);
  else
    snprintf(body, sizeof(body), "{\"access_token\":\"%s\",\"token_type\":\"Bearer\"}", s->token);
  uv_mutex_unlock(&c->srv->lock);
  if (s->token_status != 0)
    save_answer(c, s->token_status, "{\"error\":\"invalid_client\"}");
  else
    save_answer(c, 200, s->token_body ? s->token_body : body);
}

static inline void save_api(raw_conn_t *c, script_t *s, const char *request) {
  s->api_requests++;
  if (s->api_hang) {
    raw_hold(c);
    return;
  }
  /* Released by the test, not by the clock; the limit only keeps a broken
   * test from hanging. */
  for (int i = 0; s->api_held && i < 10000; i++)
    sleep_ms(1);
  char want[96];
  uv_mutex_lock(&c->srv->lock);
  snprintf(want, sizeof(want), "Authorization: Bearer %s\r\n", s->token);
  bool ok = !s->api_needs_token || (s->token[0] != '\0' && strstr(request, want) != NULL);
  uv_mutex_unlock(&c->srv->lock);
  if (!ok)
    save_answer(c, 401, "{\"error\":\"invalid_token\"}");
  else
    save_answer(c, s->api_status ? s->api_status : 200, "{\"ok\":true}");
}

/* Reads one request (head and Content-Length body) of this connection
 * into out; false at EOF. */
static inline bool save_read(raw_conn_t *c, char *out, size_t size) {
  char *end = strstr(c->buf, "\r\n\r\n");
  while (end == NULL) {
    if (raw_fill(c) <= 0)
      return false;
    end = strstr(c->buf, "\r\n\r\n");
  }
  size_t head = (size_t)(end - c->buf) + 4, body = 0;
  const char *cl = strcasestr(c->buf, "\r\nContent-Length:");
  if (cl != NULL && cl < end)
    body = strtoul(cl + 17, NULL, 10);
  while (c->len < head + body) {
    if (raw_fill(c) <= 0)
      return false;
  }
  size_t n = head + body;
  snprintf(out, size, "%.*s", (int)n, c->buf);
  memmove(c->buf, c->buf + n, c->len - n);
  c->len -= n;
  c->buf[c->len] = '\0';
  return true;
}

/* Serves requests on one connection until it closes. */
static inline void save_serve(raw_conn_t *c) {
  script_t *s = c->srv->user;
  char request[8192];
  while (c->fd >= 0 && save_read(c, request, sizeof(request))) {
    uv_mutex_lock(&c->srv->lock);
    snprintf(c->srv->last_request, sizeof(c->srv->last_request), "%s", request);
    uv_mutex_unlock(&c->srv->lock);
    if (strncmp(request, "POST /token ", 12) == 0)
      save_token(c, s, request);
    else
      save_api(c, s, request);
  }
}

/* ---- Fixture ---------------------------------------------------------------- */

typedef struct result {
  int called;
  int rc;
  int status;
  char msg[1024];
  char body[256];
} result_t;

typedef struct fixture {
  ctx_t *ctx;
  dg_connectors_t *cs;
  script_t script;
  dg_connector_t conn;
  char base_url[128];
  char token_url[128];
  result_t results[8];
} fixture_t;

static inline void save_record(dg_connector_call_t *call, const dg_connector_result_t *r,
                               void *user) {
  result_t *out = user;
  out->called++;
  out->rc = r->rc;
  out->status = r->response ? r->response->status : 0;
  snprintf(out->msg, sizeof(out->msg), "%s", r->rc != 0 ? r->err->message : "");
  snprintf(out->body, sizeof(out->body), "%.*s", r->response ? (int)r->response->body_len : 0,
           r->response ? r->response->body : "");
}

static inline fixture_t *save_fixture(void) {
  fixture_t *fx = calloc(1, sizeof(*fx));
  fx->ctx = ctx_new();
  assert_int_equal(raw_start(&fx->ctx->srv, save_serve, &fx->script), 0);
  assert_int_equal(ctx_client(fx->ctx), 0);
  dg_errctx_t err;
  assert_int_equal(dg_connectors_new(&fx->ctx->loop, fx->ctx->client, &fx->cs, &err), 0);
  snprintf(fx->base_url, sizeof(fx->base_url), "http://127.0.0.1:%d/api", fx->ctx->srv.port);
  snprintf(fx->token_url, sizeof(fx->token_url), "http://127.0.0.1:%d/token", fx->ctx->srv.port);
  fx->conn = (dg_connector_t){.id = "1f0c1a52-9d1e-4c43-9b4e-0e6f1c2f0a01",
                              .name = "api",
                              .base_url = fx->base_url,
                              .dns_timeout_ms = 2000,
                              .connect_timeout_ms = 2000,
                              .tls_timeout_ms = 2000,
                              .first_byte_timeout_ms = 5000,
                              .timeout_ms = 8000,
                              .max_concurrency = 8,
                              .retry_max_attempts = 1,
                              .max_redirects = 5,
                              .max_response_bytes = 1 << 20,
                              .allow_private_addresses = true};
  return fx;
}

/* Closes everything; fails the test if a handle was left open. */
static inline void save_fixture_free(fixture_t *fx) {
  dg_connectors_close(fx->cs);
  assert_int_equal(ctx_close(fx->ctx), 0);
  free(fx);
}

static inline dg_connector_call_t *save_start(fixture_t *fx, const char *method, const char *path,
                                              result_t *out) {
  dg_connector_request_t req = {.method = method, .path = path, .request_id = "req-1"};
  dg_connector_call_t *call = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_connectors_call(fx->cs, &fx->conn, &req, save_record, out, &call, &err), 0);
  return call;
}

/* Runs the loop until out was called n times (10 s at most). */
static inline bool save_run_until(fixture_t *fx, result_t *out, int n) {
  uint64_t give_up = dg_now_ms() + 10000;
  while (out->called < n && dg_now_ms() < give_up)
    uv_run(&fx->ctx->loop, UV_RUN_ONCE);
  return out->called == n;
}

static inline int save_call(fixture_t *fx, const char *method, const char *path, result_t *out) {
  save_start(fx, method, path, out);
  assert_int_equal(out->called, 0); /* never from inside the call */
  assert_true(save_run_until(fx, out, 1));
  return out->rc;
}

#endif
