/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* entitybench http: the load client of bench/query. Each client is one
 * HTTP/1.1 keep-alive connection with an MCP session of its own
 * (initialize, notifications/initialized), then sends tools/call requests
 * one after the other, each as soon as the last is answered. A response
 * that is not 200, or a JSON-RPC error, or a tool result with isError,
 * counts as an error. One libuv loop drives every connection, so the
 * client costs little CPU beside the gateway.
 *
 * Usage: entitybench http PORT WORKLOAD KIND --token T --model ORDERS_ID
 *                         [--clients N] [--warmup S] [--seconds S] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <uv.h>

#include "entitybench.h"

#define BODY_MAX 8192
#define REQUEST_MAX (BODY_MAX + 1024)
#define RESPONSE_MAX (16 * 1024 * 1024)
#define SESSION_MAX 128

typedef enum state { S_INITIALIZE, S_INITIALIZED, S_CALL } state_t;

typedef struct hrunner hrunner_t;

typedef struct hclient {
  uv_tcp_t tcp;
  uv_connect_t connect;
  uv_write_t write;
  hrunner_t *r;
  state_t state;
  char *in;
  size_t in_len, in_cap;
  char out[REQUEST_MAX];
  char session[SESSION_MAX];
  uint64_t start;
  int next_id;
} hclient_t;

struct hrunner {
  uv_loop_t loop;
  uv_timer_t guard;
  workload_t w;
  drive_t d;
  int port;
  const char *token;
  const char *model;
  hclient_t *clients;
  int open;
  size_t cursor;
  uint64_t measure_from, measure_to;
  latencies_t lat;
  uint64_t setup_errors;
};

/* ---- Requests -------------------------------------------------------------------------------- */

static int call_body(hrunner_t *r, const item_t *it, int id, char *out, size_t size) {
  int n = snprintf(out, size,
                   "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":", id);
  if (r->w.kind == KIND_QUERY)
    return n + snprintf(out + n, size - (size_t)n,
                        "{\"name\":\"query_entities\",\"arguments\":{\"dataModelId\":\"%s\","
                        "\"queryParameterGroups\":[{\"andOrOperator\":\"And\",\"parameters\":["
                        "{\"operator\":\"EqualTo\",\"propertyName\":\"Status\",\"value\":\"%s\"},"
                        "{\"operator\":\"GreaterThanEqualTo\",\"propertyName\":\"OrderDate\","
                        "\"value\":\"%s\"}]}],\"sortCondition\":{\"propertyName\":\"OrderDate\","
                        "\"sortOrder\":\"Descending\"},\"paging\":{\"pageNumber\":%d,\"pageSize\":"
                        "25},\"expand\":[{\"reference\":\"Customer\"},{\"reference\":"
                        "\"OrderLines\"}]}}}",
                        r->model, it->status, it->date, it->page);
  if (r->w.kind == KIND_LOOKUP)
    return n + snprintf(out + n, size - (size_t)n,
                        "{\"name\":\"lookup_by_keyword\",\"arguments\":{\"searchValue\":\"%s\"}}}",
                        it->words);
  n += snprintf(out + n, size - (size_t)n,
                "{\"name\":\"get_entities_by_ids\",\"arguments\":{\"dataModelId\":\"%s\","
                "\"entityIds\":[",
                r->model);
  for (int i = 0; i < fetch_ids(); i++)
    n += snprintf(out + n, size - (size_t)n, "%s\"%s\"", i ? "," : "", it->ids[i]);
  return n + snprintf(out + n, size - (size_t)n, "]}}}");
}

static void on_written(uv_write_t *w, int status);

static void send_post(hclient_t *c, const char *body) {
  hrunner_t *r = c->r;
  char session[SESSION_MAX + 32] = "";
  if (c->session[0] != '\0')
    snprintf(session, sizeof(session), "Mcp-Session-Id: %s\r\n", c->session);
  int n = snprintf(c->out, sizeof(c->out),
                   "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\nAccept: application/json, "
                   "text/event-stream\r\nMCP-Protocol-Version: 2025-06-18\r\n%sContent-Length: "
                   "%zu\r\n\r\n%s",
                   r->port, r->token, session, strlen(body), body);
  if (n < 0 || (size_t)n >= sizeof(c->out))
    die("a request does not fit in %d bytes", REQUEST_MAX);
  uv_buf_t buf = uv_buf_init(c->out, (unsigned)n);
  c->start = now_ns();
  if (uv_write(&c->write, (uv_stream_t *)&c->tcp, &buf, 1, on_written) != 0)
    die("uv_write failed");
}

static void send_call(hclient_t *c) {
  hrunner_t *r = c->r;
  char body[BODY_MAX];
  int n = call_body(r, &r->w.items[r->cursor++ % r->w.n], c->next_id++, body, sizeof(body));
  if (n < 0 || (size_t)n >= sizeof(body))
    die("a tools/call body does not fit in %d bytes", BODY_MAX);
  c->state = S_CALL;
  send_post(c, body);
}

/* ---- Responses ------------------------------------------------------------------------------- */

typedef struct response {
  int status;
  size_t header_len;
  size_t body_len;
  char session[SESSION_MAX];
} response_t;

/* The value of header name in the head (NUL-terminated), or NULL. */
static const char *header(const char *head, const char *name, char *out, size_t size) {
  size_t len = strlen(name);
  for (const char *p = strstr(head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n")) {
    if (strncasecmp(p + 2, name, len) == 0 && p[2 + len] == ':') {
      const char *v = p + 3 + len;
      v += strspn(v, " ");
      snprintf(out, size, "%.*s", (int)strcspn(v, "\r\n"), v);
      return out;
    }
  }
  return NULL;
}

/* True once the whole response is in c->in. */
static bool parse_response(hclient_t *c, response_t *resp) {
  char *end = c->in_len > 4 ? strstr(c->in, "\r\n\r\n") : NULL;
  char value[64];
  if (end == NULL)
    return false;
  *end = '\0';
  resp->header_len = (size_t)(end - c->in) + 4;
  resp->status = (int)strtol(c->in + strcspn(c->in, " "), NULL, 10);
  if (header(c->in, "Transfer-Encoding", value, sizeof(value)) != NULL)
    die("chunked responses are not supported");
  resp->body_len = header(c->in, "Content-Length", value, sizeof(value)) != NULL
                       ? (size_t)strtoull(value, NULL, 10)
                       : 0;
  if (header(c->in, "Mcp-Session-Id", resp->session, sizeof(resp->session)) == NULL)
    resp->session[0] = '\0';
  *end = '\r';
  return c->in_len >= resp->header_len + resp->body_len;
}

static bool call_failed(const response_t *resp, const char *body) {
  return resp->status != 200 || strstr(body, "\"result\":") == NULL ||
         strstr(body, "\"isError\":true") != NULL;
}

static void finish(hclient_t *c);

static void on_response(hclient_t *c, const response_t *resp, const char *body) {
  hrunner_t *r = c->r;
  uint64_t t = now_ns();
  if (c->state == S_INITIALIZE) {
    if (resp->status != 200 || resp->session[0] == '\0')
      die("initialize got HTTP %d without a session: %.300s", resp->status, body);
    snprintf(c->session, sizeof(c->session), "%s", resp->session);
    c->state = S_INITIALIZED;
    send_post(c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
    return;
  }
  r->lat.total += c->state == S_CALL;
  if (c->state == S_INITIALIZED) {
    r->setup_errors += resp->status != 202;
  } else if (c->start >= r->measure_from && t <= r->measure_to) {
    latencies_add(&r->lat, t - c->start);
    bool failed = call_failed(resp, body);
    if (failed && r->lat.errors++ == 0)
      fprintf(stderr, "entitybench http: first error: HTTP %d %.500s\n", resp->status, body);
  }
  if (t < r->measure_to)
    send_call(c);
  else
    finish(c);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  hclient_t *c = h->data;
  (void)suggested;
  if (c->in_cap - c->in_len < 65536) {
    c->in_cap = c->in_cap ? c->in_cap * 2 : 262144;
    if (c->in_cap > RESPONSE_MAX)
      die("a response is larger than %d bytes", RESPONSE_MAX);
    c->in = realloc(c->in, c->in_cap + 1);
    if (c->in == NULL)
      die("out of memory");
  }
  *buf = uv_buf_init(c->in + c->in_len, (unsigned)(c->in_cap - c->in_len));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  hclient_t *c = s->data;
  (void)buf; /* the data is in c->in already */
  response_t resp;
  if (nread < 0)
    die("the gateway closed a connection: %s", uv_strerror((int)nread));
  c->in_len += (size_t)nread;
  c->in[c->in_len] = '\0';
  if (!parse_response(c, &resp))
    return;
  char *body = c->in + resp.header_len;
  char saved = body[resp.body_len];
  body[resp.body_len] = '\0';
  on_response(c, &resp, body);
  body[resp.body_len] = saved;
  size_t used = resp.header_len + resp.body_len;
  memmove(c->in, c->in + used, c->in_len - used);
  c->in_len -= used;
  c->in[c->in_len] = '\0';
}

static void on_written(uv_write_t *w, int status) {
  (void)w;
  if (status != 0)
    die("a write failed: %s", uv_strerror(status));
}

/* ---- Connections ---------------------------------------------------------------------------- */

static void on_closed(uv_handle_t *h) {
  hclient_t *c = h->data;
  free(c->in);
  if (--c->r->open == 0)
    uv_close((uv_handle_t *)&c->r->guard, NULL);
}

static void finish(hclient_t *c) {
  if (!uv_is_closing((uv_handle_t *)&c->tcp))
    uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void on_connect(uv_connect_t *req, int status) {
  hclient_t *c = req->data;
  if (status != 0)
    die("cannot connect to port %d: %s", c->r->port, uv_strerror(status));
  uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
  c->state = S_INITIALIZE;
  send_post(c, "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
               "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{"
               "\"name\":\"entitybench\",\"version\":\"1.0.0\"}}}");
}

/* A request that never ends would hold the run: stop it a while after. */
static void on_guard(uv_timer_t *t) {
  (void)t;
  die("requests were still unanswered 30 s after the end of the run");
}

static void connect_all(hrunner_t *r) {
  struct sockaddr_in addr;
  uv_ip4_addr("127.0.0.1", r->port, &addr);
  r->clients = calloc((size_t)r->d.clients, sizeof(*r->clients));
  if (r->clients == NULL)
    die("out of memory");
  for (int i = 0; i < r->d.clients; i++) {
    hclient_t *c = &r->clients[i];
    c->r = r;
    c->next_id = 1;
    uv_tcp_init(&r->loop, &c->tcp);
    uv_tcp_nodelay(&c->tcp, 1);
    c->tcp.data = c;
    c->connect.data = c;
    r->open++;
    if (uv_tcp_connect(&c->connect, &c->tcp, (const struct sockaddr *)&addr, on_connect) != 0)
      die("cannot connect to port %d", r->port);
  }
}

static const char *option(int *argc, char **argv, const char *name) {
  for (int i = 0; i + 1 < *argc; i++) {
    if (strcmp(argv[i], name) == 0) {
      const char *v = argv[i + 1];
      memmove(&argv[i], &argv[i + 2], (size_t)(*argc - i - 2) * sizeof(*argv));
      *argc -= 2;
      return v;
    }
  }
  die("%s is missing", name);
}

int http_main(int argc, char **argv) {
  hrunner_t r;
  kind_t kind;
  memset(&r, 0, sizeof(r));
  if (argc < 3 || !kind_parse(argv[2], &kind))
    die("usage: entitybench http PORT WORKLOAD query|lookup|fetch --token T --model ID ...");
  r.port = (int)strtol(argv[0], NULL, 10);
  workload_read(argv[1], kind, &r.w);
  argc -= 3;
  argv += 3;
  r.token = option(&argc, argv, "--token");
  r.model = option(&argc, argv, "--model");
  drive_parse(argc, argv, &r.d);
  uv_loop_init(&r.loop);
  uint64_t t0 = now_ns();
  r.measure_from = t0 + (uint64_t)(r.d.warmup_s * 1e9);
  r.measure_to = r.measure_from + (uint64_t)(r.d.measure_s * 1e9);
  uv_timer_init(&r.loop, &r.guard);
  uv_timer_start(&r.guard, on_guard, (uint64_t)((r.d.warmup_s + r.d.measure_s + 30) * 1000), 0);
  connect_all(&r);
  uv_run(&r.loop, UV_RUN_DEFAULT);
  if (r.setup_errors != 0)
    die("%llu sessions were not set up", (unsigned long long)r.setup_errors);
  latencies_report("gateway", kind, &r.lat, r.d.measure_s);
  free(r.clients);
  uv_loop_close(&r.loop);
  workload_free(&r.w);
  return 0;
}
