/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* A real dg_http_server on 127.0.0.1:0 serving dg_mcp_http_handler, its
 * loop in a thread of its own, and a small blocking-socket HTTP client run
 * by the test thread. Stopping closes the HTTP server, frees the MCP
 * server (in that order, as the binary does) and checks that the loop has
 * nothing left open. */
#ifndef DG_TEST_MCP_HTTP_TEST_H
#define DG_TEST_MCP_HTTP_TEST_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "mcp/mcp_test.h"

typedef struct ht {
  uv_loop_t loop;
  uv_thread_t thread;
  uv_async_t stop;
  dg_catalog_t *cat;
  dg_mcp_shared_t *shared; /* set before ht_run to share sessions with another server */
  dg_mcp_server_t *mcp;
  dg_http_server_t *http;
  int port;
  int loop_rc;
  /* Optional, set before ht_run: the server's relay of cancels, and an
   * async handle on its loop through which the test hands it relayed
   * cancels (closed at stop). */
  dg_mcp_relay_fn relay;
  void *relay_data;
  uv_async_cb inbox_cb;
  uv_async_t inbox;
} ht_t;

static inline void ht_closed(uv_handle_t *h) {
  (void)h;
}

static inline void ht_on_stop(uv_async_t *a) {
  ht_t *t = a->data;
  dg_mcp_server_attach_http(t->mcp, NULL);
  dg_http_server_close(t->http);
  dg_mcp_server_free(t->mcp);
  if (t->inbox_cb != NULL)
    uv_close((uv_handle_t *)&t->inbox, ht_closed);
  uv_close((uv_handle_t *)&t->stop, ht_closed);
}

static inline void ht_thread(void *arg) {
  ht_t *t = arg;
  uv_run(&t->loop, UV_RUN_DEFAULT);
  t->loop_rc = uv_loop_close(&t->loop);
}

/* Loads the configuration; the test may adjust t->cat before ht_run. */
static inline ht_t *ht_new(void) {
  ht_t *t = calloc(1, sizeof(*t));
  dg_log_init(2, DG_LOG_ERROR);
  uv_loop_init(&t->loop);
  t->cat = mt_catalog();
  mt_cancels = 0;
  mt_slow_runs = 0;
  return t;
}

static inline void ht_run(ht_t *t) {
  assert_int_equal(mt_server_new_shared(&t->loop, t->cat, t->shared, &t->mcp), 0);
  dg_http_server_config_t cfg = {
      .host = "127.0.0.1", .handler = dg_mcp_http_handler, .data = t->mcp};
  dg_http_limits_default(&cfg.limits);
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_http_server_start(&t->loop, &cfg, &t->http, &err), 0);
  dg_mcp_server_attach_http(t->mcp, t->http);
  t->port = dg_http_server_port(t->http);
  t->stop.data = t;
  uv_async_init(&t->loop, &t->stop, ht_on_stop);
  if (t->relay != NULL)
    dg_mcp_server_set_relay(t->mcp, t->relay, t->relay_data);
  if (t->inbox_cb != NULL) {
    t->inbox.data = t;
    uv_async_init(&t->loop, &t->inbox, t->inbox_cb);
  }
  assert_int_equal(uv_thread_create(&t->thread, ht_thread, t), 0);
}

static inline void ht_free(ht_t *t) {
  uv_async_send(&t->stop);
  uv_thread_join(&t->thread);
  assert_int_equal(t->loop_rc, 0);
  dg_catalog_unref(t->cat);
  free(t);
}

static inline void ht_sleep_ms(int ms) {
  usleep((useconds_t)ms * 1000);
}

/* Waits for a counter the server's loop raises; true once it reached want.
 * The limit only keeps a broken test from hanging: it is far beyond any
 * expected wait, so a slow run never fails here. */
static inline bool ht_wait_for(_Atomic int *v, int want) {
  for (int i = 0; i < 1000 && *v < want; i++)
    ht_sleep_ms(10);
  return *v >= want;
}

/* ---- Client --------------------------------------------------------------------- */

static inline int hc_connect(int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(fd >= 0);
  struct timeval tv = {.tv_sec = 5};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof(a)), 0);
  return fd;
}

static inline void hc_send(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
    assert_true(w > 0);
    p += w;
    n -= (size_t)w;
  }
}

typedef struct hc_resp {
  int status;
  char head[8192];
  char body[1 << 17];
  size_t body_len;
} hc_resp_t;

/* The value of a response header (case-insensitive name), or NULL. */
static inline const char *hc_header(const hc_resp_t *r, const char *name, char *out, size_t size) {
  size_t n = strlen(name);
  for (const char *p = strstr(r->head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n")) {
    const char *line = p + 2;
    if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
      const char *v = line + n + 1;
      v += strspn(v, " ");
      size_t len = strcspn(v, "\r");
      snprintf(out, size, "%.*s", (int)len, v);
      return out;
    }
  }
  return NULL;
}

/* Decodes a chunked body in place. */
static inline void hc_dechunk(hc_resp_t *r) {
  char *in = r->body, *end = r->body + r->body_len, *out = r->body;
  while (in < end) {
    size_t size = strtoul(in, NULL, 16);
    char *data = strstr(in, "\r\n");
    if (data == NULL || size == 0)
      break;
    data += 2;
    memmove(out, data, size);
    out += size;
    in = data + size + 2;
  }
  r->body_len = (size_t)(out - r->body);
  r->body[r->body_len] = '\0';
}

static inline size_t hc_recv_all(int fd, char *raw, size_t cap) {
  size_t len = 0;
  while (len < cap - 1) {
    ssize_t n = recv(fd, raw + len, cap - 1 - len, 0);
    if (n <= 0)
      break;
    len += (size_t)n;
  }
  raw[len] = '\0';
  return len;
}

/* Reads until needle arrived (true) or the connection ends (false). */
static inline bool hc_recv_until(int fd, char *raw, size_t cap, const char *needle) {
  size_t len = 0;
  raw[0] = '\0';
  while (len < cap - 1 && strstr(raw, needle) == NULL) {
    ssize_t n = recv(fd, raw + len, cap - 1 - len, 0);
    if (n <= 0)
      break;
    len += (size_t)n;
    raw[len] = '\0';
  }
  return strstr(raw, needle) != NULL;
}

/* Reads a whole response from a connection the server closes after it. */
static inline void hc_read_all(int fd, hc_resp_t *r) {
  static char raw[sizeof(r->head) + sizeof(r->body)];
  size_t len = hc_recv_all(fd, raw, sizeof(raw));
  char *split = strstr(raw, "\r\n\r\n");
  assert_non_null(split);
  size_t hlen = (size_t)(split - raw) + 2;
  assert_true(hlen < sizeof(r->head));
  memcpy(r->head, raw, hlen);
  r->head[hlen] = '\0';
  r->body_len = len - hlen - 2;
  memcpy(r->body, split + 4, r->body_len);
  r->body[r->body_len] = '\0';
  r->status = (int)strtol(r->head + 9, NULL, 10);
  char te[64];
  if (hc_header(r, "Transfer-Encoding", te, sizeof(te)) != NULL)
    hc_dechunk(r);
}

/* One request on a new connection ("Connection: close"); extra holds
 * whole header lines ending in CRLF. */
static inline void hc_request(int port, const char *method, const char *extra, const char *body,
                              hc_resp_t *r) {
  int fd = hc_connect(port);
  char head[4096];
  snprintf(head, sizeof(head),
           "%s /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n%s"
           "Content-Length: %zu\r\n\r\n",
           method, port, extra ? extra : "", body ? strlen(body) : 0);
  hc_send(fd, head, strlen(head));
  if (body != NULL)
    hc_send(fd, body, strlen(body));
  hc_read_all(fd, r);
  close(fd);
}

#define HC_JSON "Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n"
#define HC_ALICE "Authorization: Bearer " MT_TOKEN_ALICE "\r\n"
#define HC_BOB "Authorization: Bearer " MT_TOKEN_BOB "\r\n"

/* POSTs body as alice with the session id (when given); returns the status. */
static inline int hc_post(int port, const char *sid, const char *body, hc_resp_t *r) {
  char extra[512];
  snprintf(extra, sizeof(extra), HC_JSON HC_ALICE "%s%s%s", sid ? "Mcp-Session-Id: " : "",
           sid ? sid : "", sid ? "\r\n" : "");
  hc_request(port, "POST", extra, body, r);
  return r->status;
}

/* initialize as alice at version; fills sid (33 bytes). */
static inline void hc_initialize(int port, const char *version, char sid[64]) {
  static hc_resp_t r;
  char body[256];
  snprintf(body, sizeof(body),
           "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
           "{\"protocolVersion\":\"%s\",\"capabilities\":{}}}",
           version);
  assert_int_equal(hc_post(port, NULL, body, &r), 200);
  assert_non_null(hc_header(&r, "Mcp-Session-Id", sid, 64));
}

static inline json_t *hc_json(const hc_resp_t *r) {
  json_t *v = json_loadb(r->body, r->body_len, 0, NULL);
  if (v == NULL)
    fail_msg("not JSON: %s", r->body);
  return v;
}

#endif
