/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Shared helpers of the net tests: a server whose loop runs in its own
 * thread, and a blocking-socket client driven by the test itself, so that
 * assertions stay on the test's thread. Stopping the fixture closes the
 * server on its loop and checks that nothing is left open. */
#ifndef DG_TEST_NET_TEST_H
#define DG_TEST_NET_TEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "datagate/net.h"

typedef struct fixture {
  uv_loop_t loop;
  uv_thread_t thread;
  uv_async_t stop;
  uv_async_t call;
  void (*call_fn)(struct fixture *f);
  dg_http_server_t *server;
  int port;
  int loop_close_rc;
  void *user;
  const char *access_log_path; /* set before fixture_start: lines go there */
  dg_access_log_t *access_log;
} fixture_t;

static inline void fixture_on_closed(uv_handle_t *h) {
  (void)h;
}

static inline void fixture_on_stop(uv_async_t *a) {
  fixture_t *f = a->data;
  dg_http_server_close(f->server);
  dg_access_log_close(f->access_log);
  uv_close((uv_handle_t *)&f->stop, fixture_on_closed);
  uv_close((uv_handle_t *)&f->call, fixture_on_closed);
}

static inline void fixture_on_call(uv_async_t *a) {
  fixture_t *f = a->data;
  if (f->call_fn != NULL)
    f->call_fn(f);
}

static inline void fixture_thread(void *arg) {
  fixture_t *f = arg;
  uv_run(&f->loop, UV_RUN_DEFAULT);
  f->loop_close_rc = uv_loop_close(&f->loop);
}

/* Starts a server with the given configuration on 127.0.0.1 port 0. */
static inline int fixture_start(fixture_t *f, dg_http_server_config_t *cfg) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  uv_loop_init(&f->loop);
  f->stop.data = f;
  f->call.data = f;
  uv_async_init(&f->loop, &f->stop, fixture_on_stop);
  uv_async_init(&f->loop, &f->call, fixture_on_call);
  if (cfg->host == NULL)
    cfg->host = "127.0.0.1";
  if (f->access_log_path != NULL &&
      dg_access_log_open(&f->loop, f->access_log_path, &f->access_log, &err) != 0)
    return -1;
  cfg->access_log = f->access_log;
  int rc = dg_http_server_start(&f->loop, cfg, &f->server, &err);
  if (rc != 0) {
    fprintf(stderr, "server start failed: %s\n", err.message);
    return rc;
  }
  f->port = dg_http_server_port(f->server);
  return uv_thread_create(&f->thread, fixture_thread, f);
}

/* Runs fn on the loop thread (for calls that must happen there) and
 * returns without waiting. */
static inline void fixture_call(fixture_t *f, void (*fn)(fixture_t *f)) {
  f->call_fn = fn;
  uv_async_send(&f->call);
}

/* Closes the server on its loop, waits for the loop to end and returns
 * uv_loop_close's result: 0 when nothing was left open. */
static inline int fixture_stop(fixture_t *f) {
  uv_async_send(&f->stop);
  uv_thread_join(&f->thread);
  return f->loop_close_rc;
}

static inline void sleep_ms(int ms) {
  usleep((useconds_t)ms * 1000);
}

/* ---- blocking client -------------------------------------------------- */

typedef struct client {
  int fd;
  int rcvbuf; /* SO_RCVBUF before connecting when not 0 */
  char buf[1 << 16];
  size_t len;
} client_t;

static inline int client_connect(client_t *cl, int port) {
  struct sockaddr_in a;
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  cl->len = 0;
  cl->fd = socket(AF_INET, SOCK_STREAM, 0);
  if (cl->fd < 0)
    return -1;
  struct timeval tv = {.tv_sec = 10};
  setsockopt(cl->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (cl->rcvbuf > 0)
    setsockopt(cl->fd, SOL_SOCKET, SO_RCVBUF, &cl->rcvbuf, sizeof(cl->rcvbuf));
  int one = 1;
  setsockopt(cl->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return connect(cl->fd, (struct sockaddr *)&a, sizeof(a));
}

static inline void client_close(client_t *cl) {
  if (cl->fd >= 0)
    close(cl->fd);
  cl->fd = -1;
}

static inline int client_send_n(client_t *cl, const void *data, size_t n) {
  const char *p = data;
  while (n > 0) {
    ssize_t w = send(cl->fd, p, n, MSG_NOSIGNAL);
    if (w <= 0)
      return -1;
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

static inline int client_send(client_t *cl, const char *s) {
  return client_send_n(cl, s, strlen(s));
}

/* Reads more bytes into the buffer; 0 on EOF, -1 on error or timeout. */
static inline ssize_t client_fill(client_t *cl) {
  if (cl->len >= sizeof(cl->buf) - 1)
    return -1;
  ssize_t n = recv(cl->fd, cl->buf + cl->len, sizeof(cl->buf) - 1 - cl->len, 0);
  if (n > 0) {
    cl->len += (size_t)n;
    cl->buf[cl->len] = '\0';
  }
  return n;
}

/* True when the peer closed the connection within ms (reading and
 * discarding anything sent before). */
static inline bool client_wait_closed(client_t *cl, int ms) {
  struct pollfd p = {.fd = cl->fd, .events = POLLIN};
  for (;;) {
    int r = poll(&p, 1, ms);
    if (r <= 0)
      return false;
    char tmp[4096];
    ssize_t n = recv(cl->fd, tmp, sizeof(tmp), 0);
    if (n <= 0)
      return true;
  }
}

static inline void client_consume(client_t *cl, size_t n) {
  memmove(cl->buf, cl->buf + n, cl->len - n);
  cl->len -= n;
  cl->buf[cl->len] = '\0';
}

typedef struct response {
  int status;
  char head[8192];
  char body[1 << 16];
  size_t body_len;
} response_t;

/* Value of a header in a response head (case-insensitive), copied. */
static inline const char *response_header(const response_t *r, const char *name, char *out,
                                          size_t size) {
  size_t n = strlen(name);
  for (const char *p = strstr(r->head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n")) {
    const char *line = p + 2;
    if (strncasecmp(line, name, n) == 0 && line[n] == ':') {
      const char *v = line + n + 1;
      while (*v == ' ')
        v++;
      const char *end = strstr(v, "\r\n");
      size_t len = end != NULL ? (size_t)(end - v) : strlen(v);
      if (len >= size)
        len = size - 1;
      memcpy(out, v, len);
      out[len] = '\0';
      return out;
    }
  }
  return NULL;
}

static inline int read_head(client_t *cl, response_t *r, size_t *head_len) {
  char *end = strstr(cl->buf, "\r\n\r\n");
  while (end == NULL) {
    if (client_fill(cl) <= 0)
      return -1;
    end = strstr(cl->buf, "\r\n\r\n");
  }
  *head_len = (size_t)(end - cl->buf) + 4;
  size_t copy = *head_len < sizeof(r->head) ? *head_len : sizeof(r->head) - 1;
  memcpy(r->head, cl->buf, copy);
  r->head[copy] = '\0';
  r->status = 0;
  sscanf(r->head, "HTTP/1.%*d %d", &r->status);
  client_consume(cl, *head_len);
  return 0;
}

static inline int read_chunked(client_t *cl, response_t *r) {
  for (;;) {
    char *eol = strstr(cl->buf, "\r\n");
    while (eol == NULL) {
      if (client_fill(cl) <= 0)
        return -1;
      eol = strstr(cl->buf, "\r\n");
    }
    size_t size = strtoul(cl->buf, NULL, 16);
    size_t need = (size_t)(eol - cl->buf) + 2 + size + 2;
    while (cl->len < need) {
      if (client_fill(cl) <= 0)
        return -1;
    }
    if (r->body_len + size < sizeof(r->body)) {
      memcpy(r->body + r->body_len, eol + 2, size);
      r->body_len += size;
      r->body[r->body_len] = '\0';
    }
    client_consume(cl, need);
    if (size == 0)
      return 0;
  }
}

/* Reads one whole response (Content-Length or chunked). Returns its
 * status, or -1. Interim 100 responses are returned as such. */
static inline int client_response(client_t *cl, response_t *r) {
  size_t head_len = 0;
  char value[64];
  memset(r, 0, sizeof(*r));
  if (read_head(cl, r, &head_len) != 0)
    return -1;
  if (response_header(r, "Transfer-Encoding", value, sizeof(value)) != NULL)
    return read_chunked(cl, r) == 0 ? r->status : -1;
  size_t len = 0;
  if (response_header(r, "Content-Length", value, sizeof(value)) != NULL)
    len = strtoul(value, NULL, 10);
  while (cl->len < len) {
    if (client_fill(cl) <= 0)
      return -1;
  }
  if (len >= sizeof(r->body))
    return -1;
  memcpy(r->body, cl->buf, len);
  r->body[len] = '\0';
  r->body_len = len;
  client_consume(cl, len);
  return r->status;
}

/* Sends a request on a new connection, reads one response, closes. */
static inline int http_once(int port, const char *request, response_t *r) {
  client_t *cl = malloc(sizeof(*cl));
  int status = -1;
  if (client_connect(cl, port) == 0 && client_send(cl, request) == 0)
    status = client_response(cl, r);
  client_close(cl);
  free(cl);
  return status;
}

#endif
