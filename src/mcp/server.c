/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The MCP server: the tools with their parsed schemas, the catalog
 * snapshot new messages run on, the sessions, and the queue that delivers
 * replies on a later loop turn than the one that started them.
 *
 * The server is reference counted: its owner holds one reference, every
 * session, exchange and closing handle another, so that a WebSocket whose
 * close handshake ends after dg_mcp_server_free still finds it. */
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

#define SWEEP_MAX_MS 1000
/* How often a worker looks for cancels the others put in the shared ring:
 * one atomic load when there are none, so it runs whether or not a call
 * runs here (a cancel is for a call that runs, so it need not be sooner). */
#define RING_READ_MS 50
#define SWEEP_MIN_MS 10

static void describe_metrics(void) {
  dg_metrics_describe("dg_tool_calls_total", "Tool calls by tool, transport and outcome.");
  dg_metrics_describe("dg_tool_call_duration_seconds", "Tool call duration.");
  dg_metrics_describe("dg_mcp_sessions_open", "MCP sessions open (every transport).");
  dg_metrics_describe("dg_mcp_sessions_adopted_total",
                      "HTTP sessions taken over from another worker or instance.");
  dg_metrics_describe("dg_mcp_messages_total", "JSON-RPC messages received by method.");
}

void dg_mcp_server_set_ready(dg_mcp_server_t *server, bool ready) {
  atomic_store_explicit(&server->ready, ready, memory_order_relaxed);
}

static void free_tools(dg_mcp_server_t *s) {
  for (size_t i = 0; i < s->ntools; i++) {
    json_decref(s->tools[i].input_schema);
    json_decref(s->tools[i].accepted_schema);
    json_decref(s->tools[i].output_schema);
  }
  free(s->tools);
  for (size_t i = 0; i < DG_ARRAY_SIZE(s->tool_list); i++)
    json_decref(s->tool_list[i]);
}

static void server_destroy(dg_mcp_server_t *s) {
  if (s->owns_shared)
    dg_mcp_shared_free(s->shared);
  free_tools(s);
  dg_auth_tokens_free(s->tokens);
  dg_catalog_unref(s->cat);
  free(s);
}

void dg__mcp_server_ref(dg_mcp_server_t *s) {
  s->refs++;
}

void dg__mcp_server_unref(dg_mcp_server_t *s) {
  if (--s->refs == 0)
    server_destroy(s);
}

static int parse_schema(const char *text, const char *tool, const char *which, json_t **out,
                        dg_errctx_t *err) {
  json_error_t jerr;
  *out = json_loads(text, 0, &jerr);
  if (*out == NULL || !json_is_object(*out)) {
    json_decref(*out);
    *out = NULL;
    return dg_errctx_set(err, DG_ECONFIG, tool, "tool %s: %s is not a JSON object: %s", tool, which,
                         jerr.text);
  }
  return 0;
}

static int load_tools(dg_mcp_server_t *s, dg_errctx_t *err) {
  s->tools = calloc(s->config.ntools ? s->config.ntools : 1, sizeof(*s->tools));
  if (s->tools == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "tools", "out of memory");
  for (size_t i = 0; i < s->config.ntools; i++) {
    const dg_tool_t *t = s->config.tools[i];
    dg__mcp_tool_t *mt = &s->tools[s->ntools++];
    mt->def = t;
    int rc = parse_schema(t->input_schema ? t->input_schema : "{\"type\":\"object\"}", t->name,
                          "inputSchema", &mt->input_schema, err);
    if (rc == 0 && t->output_schema != NULL)
      rc = parse_schema(t->output_schema, t->name, "outputSchema", &mt->output_schema, err);
    if (rc == 0 && t->accepted_schema != NULL)
      rc = parse_schema(t->accepted_schema, t->name, "acceptedSchema", &mt->accepted_schema, err);
    else if (rc == 0)
      mt->accepted_schema = json_incref(mt->input_schema);
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* Without a table made before forking (tests, one process) the server
 * makes its own. */
static int attach_shared(dg_mcp_server_t *s, dg_errctx_t *err) {
  s->shared = s->config.shared;
  if (s->shared != NULL)
    return 0;
  s->owns_shared = true;
  return dg_mcp_shared_new(&s->limits, 1, &s->shared, err);
}

static uint64_t sweep_interval(const dg_mcp_server_t *s) {
  uint64_t ms = s->limits.session_idle_timeout_ms / 2;
  return ms < SWEEP_MIN_MS ? SWEEP_MIN_MS : ms > SWEEP_MAX_MS ? SWEEP_MAX_MS : ms;
}

static void on_sweep(uv_timer_t *timer) {
  dg_mcp_server_t *s = timer->data;
  dg__mcp_session_sweep(s);
  uv_timer_set_repeat(timer, sweep_interval(s));
}

static void on_ring_timer(uv_timer_t *timer) {
  dg__mcp_relay_read_ring(timer->data);
}

static void on_flush(uv_idle_t *idle) {
  dg_mcp_server_t *s = idle->data;
  dg__mcp_exchange_t *ex = s->ready_head;
  s->ready_head = s->ready_tail = NULL;
  while (ex != NULL) {
    dg__mcp_exchange_t *next = ex->ready_next;
    ex->ready_next = NULL;
    ex->queued = false;
    dg__mcp_exchange_deliver(ex);
    dg__mcp_exchange_unref(ex);
    ex = next;
  }
  if (s->ready_head == NULL)
    uv_idle_stop(idle);
}

void dg__mcp_server_queue(dg_mcp_server_t *s, dg__mcp_exchange_t *ex) {
  if (ex->queued || s->closing)
    return;
  ex->queued = true;
  dg__mcp_exchange_ref(ex);
  DG_QUEUE_PUSH(s->ready_head, s->ready_tail, ex, ready_next);
  uv_idle_start(&s->flush, on_flush);
}

static void start_handles(dg_mcp_server_t *s) {
  uv_idle_init(s->loop, &s->flush);
  s->flush.data = s;
  uv_timer_init(s->loop, &s->sweep);
  s->sweep.data = s;
  uint64_t every = sweep_interval(s);
  uv_timer_start(&s->sweep, on_sweep, every, every);
  /* The sweep alone must not keep a finished loop running. */
  uv_unref((uv_handle_t *)&s->sweep);
  uv_timer_init(s->loop, &s->ring_timer);
  s->ring_timer.data = s;
  if (s->shared->workers > 1) {
    dg__mcp_ring_start(s->shared, &s->ring);
    uv_timer_start(&s->ring_timer, on_ring_timer, RING_READ_MS, RING_READ_MS);
  }
  uv_unref((uv_handle_t *)&s->ring_timer);
  s->refs += 3; /* one per handle, dropped in its close callback */
}

int dg_mcp_server_new(uv_loop_t *loop, const dg_mcp_config_t *config, dg_catalog_t *cat,
                      const dg_mcp_limits_t *limits, dg_mcp_server_t **out, dg_errctx_t *err) {
  *out = NULL;
  dg_mcp_server_t *s = calloc(1, sizeof(*s));
  if (s == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "mcp", "out of memory");
  s->loop = loop;
  s->config = *config;
  s->cat = dg_catalog_ref(cat);
  s->limits = *limits;
  s->tokens = dg_auth_tokens_new();
  if (s->tokens == NULL) {
    dg_catalog_unref(s->cat);
    free(s);
    return dg_errctx_set(err, DG_ENOMEM, "mcp", "out of memory");
  }
  s->refs = 1;
  s->start_ms = dg_now_ms();
  int rc = load_tools(s, err);
  if (rc == 0)
    rc = attach_shared(s, err);
  if (rc != 0) {
    server_destroy(s);
    return rc;
  }
  describe_metrics();
  dg_metrics_gauge_add("dg_mcp_sessions_open", NULL, 0);
  start_handles(s);
  *out = s;
  return 0;
}

void dg_mcp_server_set_catalog(dg_mcp_server_t *server, dg_catalog_t *cat,
                               const dg_mcp_limits_t *limits) {
  dg_catalog_t *old = server->cat;
  server->cat = dg_catalog_ref(cat);
  server->limits = *limits;
  dg_catalog_unref(old);
}

void dg_mcp_server_attach_http(dg_mcp_server_t *server, dg_http_server_t *http) {
  server->http = http;
}

void dg_mcp_server_set_route(dg_mcp_server_t *server, dg_mcp_route_fn route, void *data,
                             const char *body_prefix) {
  server->route = route;
  server->route_data = data;
  server->route_body_prefix = body_prefix;
}

unsigned dg_mcp_server_inflight(const dg_mcp_server_t *server) {
  return server->inflight;
}

const dg__mcp_tool_t *dg__mcp_server_tool(const dg_mcp_server_t *s, const char *name) {
  for (size_t i = 0; i < s->ntools; i++) {
    if (strcmp(s->tools[i].def->name, name) == 0)
      return &s->tools[i];
  }
  return NULL;
}

static void on_handle_closed(uv_handle_t *handle) {
  dg__mcp_server_unref(handle->data);
}

/* Replies still queued belong to exchanges whose sessions just ended:
 * nothing is delivered, the queue's references are dropped. */
static void drop_queue(dg_mcp_server_t *s) {
  dg__mcp_exchange_t *ex = s->ready_head;
  s->ready_head = s->ready_tail = NULL;
  while (ex != NULL) {
    dg__mcp_exchange_t *next = ex->ready_next;
    ex->queued = false;
    dg__mcp_exchange_unref(ex);
    ex = next;
  }
}

void dg_mcp_server_free(dg_mcp_server_t *server) {
  if (server == NULL || server->closing)
    return;
  server->closing = true;
  server->http = NULL;
  while (server->all != NULL)
    dg__mcp_session_end(server->all);
  drop_queue(server);
  uv_close((uv_handle_t *)&server->flush, on_handle_closed);
  uv_close((uv_handle_t *)&server->sweep, on_handle_closed);
  uv_close((uv_handle_t *)&server->ring_timer, on_handle_closed);
  dg__mcp_server_unref(server);
}
