/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The HTTP client's public face: configuration defaults, creating and
 * closing the client, checking and copying a request into a new call, and
 * cancelling. The call's life is in client_call.c. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "client/internal.h"

static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"};

void dg_http_client_config_default(dg_http_client_config_t *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  cfg->timeouts.dns_ms = 5000;
  cfg->timeouts.connect_ms = 5000;
  cfg->timeouts.tls_ms = 10000;
  cfg->timeouts.first_byte_ms = 30000;
  cfg->timeouts.total_ms = 60000;
  cfg->max_body_bytes = 8u * 1024 * 1024;
  cfg->max_header_bytes = 64u * 1024;
  cfg->pool_max_per_origin = 256;
  cfg->max_origins = 256;
  cfg->pool_idle_ms = 30000;
  cfg->dns_cache_max = 1024;
  cfg->dns_cache_max_ttl_ms = 5 * 60 * 1000;
  cfg->max_calls = 20000;
  cfg->retry_base_ms = 200;
  cfg->retry_max_ms = 10000;
  cfg->connector_defaults.max_concurrency = 256;
  cfg->connector_defaults.max_queue = 4096;
  cfg->connector_defaults.breaker_failures = 5;
  cfg->connector_defaults.breaker_cooldown_ms = 30000;
}

void dg_http_client_request_init(dg_http_client_request_t *req) {
  memset(req, 0, sizeof(*req));
  req->max_retries = 2;
  req->max_redirects = 5;
}

const char *dg_http_failure_name(dg_http_failure_t failure) {
  static const char *const names[] = {"ok",      "status",     "dns",      "connect",   "tls",
                                      "timeout", "protocol",   "too_big",  "redirects", "policy",
                                      "breaker", "overloaded", "canceled", "aborted"};
  return (size_t)failure < DG_ARRAY_SIZE(names) ? names[failure] : "unknown";
}

const char *dg_http_response_header(const dg_http_response_t *res, const char *name) {
  for (size_t i = 0; res != NULL && i < res->nheaders; i++) {
    if (strcasecmp(res->headers[i].name, name) == 0)
      return res->headers[i].value;
  }
  return NULL;
}

/* ---- the client ---------------------------------------------------------------- */

#define FILL(field)                                                                                \
  do {                                                                                             \
    if (cfg->field == 0)                                                                           \
      cfg->field = d.field;                                                                        \
  } while (0)

/* Zero fields take their defaults, so callers set only what they change. */
static void complete_config(dg_http_client_config_t *cfg) {
  dg_http_client_config_t d;
  dg_http_client_config_default(&d);
  FILL(timeouts.dns_ms);
  FILL(timeouts.connect_ms);
  FILL(timeouts.tls_ms);
  FILL(timeouts.first_byte_ms);
  FILL(timeouts.total_ms);
  FILL(max_body_bytes);
  FILL(max_header_bytes);
  FILL(max_origins);
  FILL(pool_idle_ms);
  FILL(dns_cache_max_ttl_ms);
  FILL(max_calls);
  FILL(retry_base_ms);
  FILL(retry_max_ms);
  FILL(connector_defaults.max_concurrency);
  FILL(connector_defaults.max_queue);
  FILL(connector_defaults.breaker_failures);
  FILL(connector_defaults.breaker_cooldown_ms);
}

/* Calls kept for reuse: a call is 5 KiB, an allocation that glibc serves
 * slowly (past its per-thread cache, after sweeping its fast bins). */
#define SPARE_CALLS 256

void dg__client_call_free(dg_http_client_t *client, dg_http_call_t *call) {
  dg_spare_release(&client->spare, call, client->state == DG__CLIENT_RUNNING);
}

static void client_free(dg_http_client_t *client) {
  dg_spare_free_all(&client->spare);
  dg__connectors_free(client);
  dg__ctls_config_free(client->tls);
  free(client);
}

void dg__client_handle_gone(dg_http_client_t *client) {
  client->handles--;
  if (client->state == DG__CLIENT_CLOSING && client->handles == 0)
    client_free(client);
}

uint64_t dg__client_random(dg_http_client_t *client, uint64_t n) {
  /* xorshift64*: jitter needs spread, not secrecy. */
  uint64_t x = client->rng;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  client->rng = x;
  return n == 0 ? 0 : (x * 0x2545F4914F6CDD1DULL) % n;
}

static void describe_metrics(void) {
  dg_metrics_describe("dg_upstream_calls_total", "Upstream calls by connector and outcome.");
  dg_metrics_describe("dg_upstream_call_duration_seconds",
                      "Upstream call duration, retries and redirects included.");
  dg_metrics_describe("dg_upstream_breaker_transitions_total",
                      "Circuit breaker state changes by connector and new state.");
}

int dg_http_client_new(uv_loop_t *loop, const dg_http_client_config_t *config,
                       dg_http_client_t **out, dg_errctx_t *err) {
  dg_http_client_t *client = calloc(1, sizeof(*client));
  if (client == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "client", "out of memory");
  if (config != NULL)
    client->cfg = *config;
  else
    dg_http_client_config_default(&client->cfg);
  complete_config(&client->cfg);
  client->loop = loop;
  dg_spare_init(&client->spare, sizeof(dg_http_call_t), SPARE_CALLS);
  int rc = 0;
  if (client->cfg.dns_servers != NULL &&
      !dg_strlcpy(client->dns_servers, client->cfg.dns_servers, sizeof(client->dns_servers)))
    rc = dg_errctx_set(err, DG_ECONFIG, "client.dns_servers",
                       "the list of name servers is longer than %zu bytes",
                       sizeof(client->dns_servers) - 1);
  if (rc == 0)
    rc = dg__ctls_config_new(client->cfg.system_ca_file, client->cfg.ca_file, &client->tls, err);
  if (rc == 0)
    rc = dg__dns_new(loop, client->cfg.dns_servers, client->cfg.dns_cache_max,
                     client->cfg.dns_cache_max_ttl_ms, &client->dns, err);
  if (rc != 0) {
    client_free(client);
    return rc;
  }
  /* The file names were only needed to start; the name servers are kept
   * for clients made alike (dg_http_client_dns_servers). */
  client->cfg.ca_file = client->cfg.system_ca_file = NULL;
  client->cfg.dns_servers = client->dns_servers;
  client->cfg.connector_defaults.name = NULL;
  if (dg_random_bytes(&client->rng, sizeof(client->rng)) != 0 || client->rng == 0)
    client->rng = dg_now_ns() | 1;
  client->handles = 1; /* the resolver */
  describe_metrics();
  *out = client;
  return 0;
}

const char *dg_http_client_dns_servers(const dg_http_client_t *client) {
  return client->dns_servers[0] != '\0' ? client->dns_servers : NULL;
}

unsigned dg_http_client_active(const dg_http_client_t *client) {
  return client->ncalls;
}

unsigned dg_http_client_idle_connections(const dg_http_client_t *client) {
  return dg__pool_idle_total(client);
}

static void on_dns_closed(void *data) {
  dg__client_handle_gone(data);
}

void dg_http_client_close(dg_http_client_t *client) {
  if (client == NULL || client->state == DG__CLIENT_CLOSING)
    return;
  client->state = DG__CLIENT_CLOSING;
  dg_spare_free_all(&client->spare);
  for (dg_http_call_t *c = client->calls; c != NULL; c = c->next) {
    if (c->state != DG__CALL_FINISHING && c->state != DG__CALL_DONE)
      dg__call_fail(c, DG_HTTP_FAIL_CANCELED, DG_ECANCELED, NULL,
                    "was cancelled: the gateway is stopping");
  }
  dg__pool_close_all(client);
  dg__dns_close(client->dns, on_dns_closed, client);
}

void dg_http_call_cancel(dg_http_call_t *call) {
  if (call != NULL)
    dg__call_cancel(call);
}

/* ---- checking a request ----------------------------------------------------------- */

static const char *known_method(const char *method) {
  for (size_t i = 0; method != NULL && i < DG_ARRAY_SIZE(methods); i++) {
    if (strcmp(method, methods[i]) == 0)
      return methods[i];
  }
  return NULL;
}

/* The URL as it may be shown back: never its query, which may hold keys. */
static void safe_url(const char *url, char *out, size_t size) {
  size_t n = url != NULL ? strcspn(url, "?#") : 0;
  if (n > 200)
    n = 200;
  dg_strlcpy(out, url != NULL ? url : "", n + 1 < size ? n + 1 : size);
}

static int check_headers(const dg_http_client_request_t *req, dg_errctx_t *err) {
  if (req->nheaders > DG__CLIENT_MAX_REQ_HEADERS)
    return dg_errctx_set(err, DG_EINVAL, "headers",
                         "%zu headers were given; at most %d are allowed", req->nheaders,
                         DG__CLIENT_MAX_REQ_HEADERS);
  for (size_t i = 0; i < req->nheaders; i++) {
    const dg_http_header_t *h = &req->headers[i];
    if (!dg__header_name_ok(h->name))
      return dg_errctx_set(err, DG_EINVAL, "headers",
                           "header %zu has the name '%.64s', which is "
                           "not an HTTP token (letters, digits and !#$%%&'*+-.^_`|~)",
                           i, h->name != NULL ? h->name : "");
    if (!dg__header_value_ok(h->value))
      return dg_errctx_set(err, DG_EINVAL, "headers",
                           "header '%s' has a value with control characters or over 8192 bytes",
                           h->name);
  }
  return 0;
}

static int check_request(const dg_http_client_request_t *req, dg_errctx_t *err) {
  if (req->done == NULL)
    return dg_errctx_set(err, DG_EINVAL, "done", "a completion callback is required");
  if (known_method(req->method) == NULL)
    return dg_errctx_set(err, DG_EINVAL, "method",
                         "'%.32s' is not an allowed method (GET, HEAD, POST, PUT, PATCH, DELETE "
                         "or OPTIONS)",
                         req->method != NULL ? req->method : "");
  if (req->body_len > DG__CLIENT_MAX_REQUEST_BODY || (req->body == NULL && req->body_len > 0))
    return dg_errctx_set(err, DG_EINVAL, "body",
                         "a body of %zu bytes was given; at most %u bytes are allowed",
                         req->body_len, DG__CLIENT_MAX_REQUEST_BODY);
  return check_headers(req, err);
}

/* ---- making a call ---------------------------------------------------------------- */

static int copy_request(dg_http_call_t *call, const dg_http_client_request_t *req) {
  dg_arena_t *a = call->arena;
  call->method = known_method(req->method);
  call->headers = dg_arena_calloc(a, req->nheaders + 1, sizeof(*call->headers));
  if (call->headers == NULL)
    return DG_ENOMEM;
  for (size_t i = 0; i < req->nheaders; i++) {
    call->headers[i].name = dg_arena_strdup(a, req->headers[i].name);
    call->headers[i].value = dg_arena_strdup(a, req->headers[i].value);
    if (call->headers[i].name == NULL || call->headers[i].value == NULL)
      return DG_ENOMEM;
  }
  call->nheaders = req->nheaders;
  if (req->body_len > 0) {
    char *body = dg_arena_alloc(a, req->body_len);
    if (body == NULL)
      return DG_ENOMEM;
    memcpy(body, req->body, req->body_len);
    call->body = body;
    call->body_len = req->body_len;
  }
  return 0;
}

static uint64_t pick(uint64_t mine, uint64_t theirs) {
  return mine != 0 ? mine : theirs;
}

static void copy_options(dg_http_call_t *call, const dg_http_client_request_t *req) {
  const dg_http_client_config_t *cfg = &call->client->cfg;
  call->timeouts.dns_ms = pick(req->timeouts.dns_ms, cfg->timeouts.dns_ms);
  call->timeouts.connect_ms = pick(req->timeouts.connect_ms, cfg->timeouts.connect_ms);
  call->timeouts.tls_ms = pick(req->timeouts.tls_ms, cfg->timeouts.tls_ms);
  call->timeouts.first_byte_ms = pick(req->timeouts.first_byte_ms, cfg->timeouts.first_byte_ms);
  call->timeouts.total_ms = pick(req->timeouts.total_ms, cfg->timeouts.total_ms);
  call->max_body = req->max_body_bytes != 0 ? req->max_body_bytes : cfg->max_body_bytes;
  call->max_retries = req->max_retries;
  call->max_redirects = req->max_redirects;
  call->retryable = dg__method_idempotent(call->method) || req->retry_unsafe;
  call->policy = req->addresses;
  call->on_head = req->on_head;
  call->on_chunk = req->on_chunk;
  call->done = req->done;
  call->user = req->user;
  dg_trace_id(req->trace_id != NULL ? req->trace_id : req->request_id, call->trace_id);
}

static dg_http_call_t *call_new(dg_http_client_t *client) {
  dg_http_call_t *call = dg_spare_alloc(&client->spare);
  if (call == NULL)
    return NULL;
  /* Zeroed up to the response parser, which dg__resp_init prepares. */
  memset(call, 0, offsetof(dg_http_call_t, resp));
  /* A call keeps its URL, headers and the response's headers here: 2 KiB
   * holds a usual call, and a larger one takes more blocks. */
  call->arena = dg_arena_new(2048);
  if (call->arena == NULL) {
    dg__client_call_free(client, call);
    return NULL;
  }
  call->client = client;
  call->state = DG__CALL_NEW;
  return call;
}

static void call_discard(dg_http_call_t *call) {
  dg_arena_destroy(call->arena);
  dg__client_call_free(call->client, call);
}

/* From here on the call is the loop's: it owns a timer and completes once. */
static void call_launch(dg_http_client_t *client, dg_http_call_t *call) {
  dg_buf_init(&call->body_buf, call->max_body);
  dg__resp_init(&call->resp, client->cfg.max_header_bytes, &dg__call_sink, call);
  uv_timer_init(client->loop, &call->timer);
  DG_LIST_PUSH(client->calls, call, prev, next);
  client->ncalls++;
  client->handles++;
  call->start_ms = dg_now_ms();
  call->deadline_ms = call->start_ms + call->timeouts.total_ms;
  call->phase = "queue";
  dg__call_start(call);
}

static int prepare(dg_http_client_t *client, dg_http_call_t *call,
                   const dg_http_client_request_t *req, dg_errctx_t *err) {
  const char *why = NULL;
  char shown[256];
  if (dg__url_parse(call->arena, req->url, &call->url, &why) != 0) {
    safe_url(req->url, shown, sizeof(shown));
    return dg_errctx_set(err, DG_EINVAL, "url", "'%s' is not a usable URL: %s", shown, why);
  }
  if (copy_request(call, req) != 0)
    return dg_errctx_set(err, DG_ENOMEM, "request", "out of memory");
  copy_options(call, req);
  call->connector = dg__connector_get(client, req->connector);
  if (call->connector == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "connector", "out of memory");
  return 0;
}

int dg_http_client_request(dg_http_client_t *client, const dg_http_client_request_t *req,
                           dg_http_call_t **out, dg_errctx_t *err) {
  if (client->state != DG__CLIENT_RUNNING)
    return dg_errctx_set(err, DG_ECLOSED, "client", "the connector client is closing");
  int rc = check_request(req, err);
  if (rc != 0)
    return rc;
  dg_http_call_t *call = call_new(client);
  if (call == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "request", "out of memory");
  rc = prepare(client, call, req, err);
  if (rc != 0) {
    call_discard(call);
    return rc;
  }
  bool over = client->ncalls >= client->cfg.max_calls;
  call_launch(client, call);
  if (over)
    dg__call_fail(call, DG_HTTP_FAIL_OVERLOADED, DG_EBUSY, NULL,
                  "was refused: %u upstream calls are already running", client->cfg.max_calls);
  if (out != NULL)
    *out = call;
  return 0;
}
