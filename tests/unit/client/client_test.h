/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Shared helpers of the HTTP client tests: a scripted raw-socket upstream
 * whose connections are each served by a thread (so that a test can make
 * it slow, reset, malformed or anything else), and a driver that runs the
 * client's loop on the test's own thread until calls complete. Closing the
 * context closes the client, runs the loop dry and checks that nothing was
 * left open, then stops the upstream. */
#ifndef DG_TEST_CLIENT_TEST_H
#define DG_TEST_CLIENT_TEST_H

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "datagate/client.h"

#define RAW_MAX_CONNS 64

/* ---- the scripted upstream ------------------------------------------------ */

typedef struct raw_server raw_server_t;

typedef struct raw_conn {
  raw_server_t *srv;
  int fd;
  int index; /* 0 for the first connection accepted */
  char buf[1 << 16];
  size_t len;
} raw_conn_t;

typedef void (*raw_serve_fn)(raw_conn_t *c);

struct raw_server {
  int fd;
  int port;
  uv_thread_t thread;
  atomic_int accepted;
  atomic_int requests;
  atomic_int active;
  atomic_int max_active;
  atomic_bool stop;
  raw_serve_fn serve;
  void *user;
  uv_mutex_t lock;
  char last_request[8192];
  uv_thread_t conns[RAW_MAX_CONNS];
  int nconns;
};

static inline void raw_conn_thread(void *arg) {
  raw_conn_t *c = arg;
  raw_server_t *s = c->srv;
  int now = ++s->active;
  int seen = s->max_active;
  while (now > seen && !atomic_compare_exchange_weak(&s->max_active, &seen, now)) {
  }
  s->serve(c);
  s->active--;
  if (c->fd >= 0)
    close(c->fd);
  free(c);
}

static inline void raw_accept_one(raw_server_t *s) {
  int fd = accept(s->fd, NULL, NULL);
  if (fd < 0)
    return;
  struct timeval tv = {.tv_sec = 5};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  raw_conn_t *c = calloc(1, sizeof(*c));
  c->srv = s;
  c->fd = fd;
  c->index = s->accepted++;
  if (s->nconns >= RAW_MAX_CONNS || uv_thread_create(&s->conns[s->nconns], raw_conn_thread, c)) {
    close(fd);
    free(c);
    return;
  }
  s->nconns++;
}

static inline void raw_accept_thread(void *arg) {
  raw_server_t *s = arg;
  while (!s->stop) {
    struct pollfd p = {.fd = s->fd, .events = POLLIN};
    if (poll(&p, 1, 20) > 0)
      raw_accept_one(s);
  }
}

/* Listens on host (127.0.0.1 when NULL), port 0. backlog 0 with no
 * serve function makes a server that never accepts. */
static inline int raw_start_on(raw_server_t *s, const char *host, raw_serve_fn serve, void *user,
                               bool accepting) {
  struct sockaddr_in a;
  socklen_t len = sizeof(a);
  memset(s, 0, sizeof(*s));
  memset(&a, 0, sizeof(a));
  a.sin_family = AF_INET;
  inet_pton(AF_INET, host != NULL ? host : "127.0.0.1", &a.sin_addr);
  s->serve = serve;
  s->user = user;
  s->fd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(s->fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (bind(s->fd, (struct sockaddr *)&a, sizeof(a)) != 0 || listen(s->fd, accepting ? 64 : 0) != 0)
    return -1;
  getsockname(s->fd, (struct sockaddr *)&a, &len);
  s->port = ntohs(a.sin_port);
  uv_mutex_init(&s->lock);
  if (!accepting)
    return 0;
  return uv_thread_create(&s->thread, raw_accept_thread, s);
}

static inline int raw_start(raw_server_t *s, raw_serve_fn serve, void *user) {
  return raw_start_on(s, NULL, serve, user, true);
}

static inline void raw_stop(raw_server_t *s) {
  if (s->fd <= 0)
    return;
  s->stop = true;
  if (s->serve != NULL)
    uv_thread_join(&s->thread);
  for (int i = 0; i < s->nconns; i++)
    uv_thread_join(&s->conns[i]);
  close(s->fd);
  uv_mutex_destroy(&s->lock);
  s->fd = 0;
}

static inline ssize_t raw_fill(raw_conn_t *c) {
  if (c->len >= sizeof(c->buf) - 1)
    return -1;
  ssize_t n = recv(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len, 0);
  if (n > 0) {
    c->len += (size_t)n;
    c->buf[c->len] = '\0';
  }
  return n;
}

/* Reads one request (head and Content-Length body) and keeps a copy as the
 * server's last request. Returns its length, or -1 at EOF or on error. */
static inline int raw_read_request(raw_conn_t *c) {
  char *end = strstr(c->buf, "\r\n\r\n");
  while (end == NULL) {
    if (raw_fill(c) <= 0)
      return -1;
    end = strstr(c->buf, "\r\n\r\n");
  }
  size_t head = (size_t)(end - c->buf) + 4;
  size_t body = 0;
  const char *cl = strcasestr(c->buf, "\r\nContent-Length:");
  if (cl != NULL && cl < end)
    body = strtoul(cl + 17, NULL, 10);
  while (c->len < head + body) {
    if (raw_fill(c) <= 0)
      return -1;
  }
  size_t n = head + body;
  uv_mutex_lock(&c->srv->lock);
  size_t keep = n < sizeof(c->srv->last_request) - 1 ? n : sizeof(c->srv->last_request) - 1;
  memcpy(c->srv->last_request, c->buf, keep);
  c->srv->last_request[keep] = '\0';
  uv_mutex_unlock(&c->srv->lock);
  memmove(c->buf, c->buf + n, c->len - n);
  c->len -= n;
  c->buf[c->len] = '\0';
  c->srv->requests++;
  return (int)n;
}

static inline void raw_send_n(raw_conn_t *c, const void *data, size_t len) {
  const char *p = data;
  while (len > 0) {
    ssize_t w = send(c->fd, p, len, MSG_NOSIGNAL);
    if (w <= 0)
      return;
    p += w;
    len -= (size_t)w;
  }
}

static inline void raw_send(raw_conn_t *c, const char *s) {
  raw_send_n(c, s, strlen(s));
}

/* Closes with a TCP reset instead of a FIN. */
static inline void raw_reset(raw_conn_t *c) {
  struct linger l = {.l_onoff = 1, .l_linger = 0};
  setsockopt(c->fd, SOL_SOCKET, SO_LINGER, &l, sizeof(l));
  close(c->fd);
  c->fd = -1;
}

/* Waits until the peer closes (or 5 s pass). */
static inline void raw_wait_close(raw_conn_t *c) {
  while (raw_fill(c) > 0)
    c->len = 0;
}

/* Sends nothing more and waits until the peer closes or the server stops,
 * however long that takes: a call expected to time out meets an upstream
 * that never answers, not one that answers late. */
static inline void raw_hold(raw_conn_t *c) {
  for (;;) {
    ssize_t n = raw_fill(c);
    if (n > 0)
      c->len = 0;
    else if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) || c->srv->stop)
      return;
  }
}

static inline void sleep_ms(int ms) {
  usleep((useconds_t)ms * 1000);
}

/* The server's last request, copied. */
static inline void raw_last_request(raw_server_t *s, char *out, size_t size) {
  uv_mutex_lock(&s->lock);
  snprintf(out, size, "%s", s->last_request);
  uv_mutex_unlock(&s->lock);
}

/* ---- the client driver ------------------------------------------------------ */

typedef struct outcome {
  int called;
  int rc;
  dg_http_failure_t failure;
  int status;
  char phase[32];
  char msg[1024];
  char body[1 << 16];
  size_t body_len;
  unsigned attempts;
  unsigned redirects;
  char url[512];
  char header[256]; /* the value of the header named in want_header */
  const char *want_header;
} outcome_t;

static inline void record_done(dg_http_call_t *call, const dg_http_result_t *r, void *user) {
  outcome_t *o = user;
  o->called++;
  o->rc = r->rc;
  o->failure = r->failure;
  o->attempts = r->attempts;
  o->redirects = r->redirects;
  snprintf(o->phase, sizeof(o->phase), "%s", r->phase != NULL ? r->phase : "");
  snprintf(o->msg, sizeof(o->msg), "%s", r->err != NULL ? r->err->message : "");
  o->status = r->response != NULL ? r->response->status : 0;
  if (r->response == NULL)
    return;
  size_t n =
      r->response->body_len < sizeof(o->body) - 1 ? r->response->body_len : sizeof(o->body) - 1;
  memcpy(o->body, r->response->body, n);
  o->body[n] = '\0';
  o->body_len = r->response->body_len;
  snprintf(o->url, sizeof(o->url), "%s", r->response->url != NULL ? r->response->url : "");
  const char *h =
      o->want_header != NULL ? dg_http_response_header(r->response, o->want_header) : NULL;
  snprintf(o->header, sizeof(o->header), "%s", h != NULL ? h : "");
}

typedef struct ctx {
  uv_loop_t loop;
  dg_http_client_t *client;
  dg_http_client_config_t cfg;
  raw_server_t srv;
  raw_server_t srv2;
  outcome_t out[8];
} ctx_t;

static inline ctx_t *ctx_new(void) {
  ctx_t *t = calloc(1, sizeof(*t));
  uv_loop_init(&t->loop);
  dg_http_client_config_default(&t->cfg);
  t->cfg.retry_base_ms = 10;
  return t;
}

static inline int ctx_client(ctx_t *t) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_http_client_new(&t->loop, &t->cfg, &t->client, &err);
  if (rc != 0)
    fprintf(stderr, "client: %s\n", err.message);
  return rc;
}

/* Closes the client and the loop; returns uv_loop_close's result (0 when
 * nothing was left open), then stops the upstreams. */
static inline int ctx_close(ctx_t *t) {
  if (t->client != NULL)
    dg_http_client_close(t->client);
  uv_run(&t->loop, UV_RUN_DEFAULT);
  int rc = uv_loop_close(&t->loop);
  raw_stop(&t->srv);
  raw_stop(&t->srv2);
  free(t);
  return rc;
}

/* Runs the loop until o has been called n times in all (a stuck call is a
 * failure after 10 s rather than a hung test). */
static inline bool run_until(ctx_t *t, outcome_t *o, int n) {
  uint64_t give_up = dg_now_ms() + 10000;
  while (o->called < n && dg_now_ms() < give_up)
    uv_run(&t->loop, UV_RUN_ONCE);
  return o->called == n;
}

static inline void run_for_fired(uv_timer_t *timer) {
  *(int *)timer->data = 1;
}

/* Runs the loop for ms milliseconds. */
static inline void run_for(ctx_t *t, uint64_t ms) {
  uv_timer_t timer;
  int fired = 0;
  timer.data = &fired;
  uv_timer_init(&t->loop, &timer);
  uv_timer_start(&timer, run_for_fired, ms, 0);
  while (!fired)
    uv_run(&t->loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&timer, NULL);
  uv_run(&t->loop, UV_RUN_NOWAIT);
}

/* Runs the loop until the pool holds n idle connections; false when that
 * has not happened within 10 s (a limit far beyond any expected wait, so
 * that a broken test fails rather than hangs). */
static inline bool run_until_idle(ctx_t *t, unsigned n) {
  uv_timer_t give_up;
  int fired = 0;
  give_up.data = &fired;
  uv_timer_init(&t->loop, &give_up);
  uv_timer_start(&give_up, run_for_fired, 10000, 0);
  while (dg_http_client_idle_connections(t->client) != n && !fired)
    uv_run(&t->loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&give_up, NULL);
  uv_run(&t->loop, UV_RUN_NOWAIT);
  return dg_http_client_idle_connections(t->client) == n;
}

static inline void req_init(dg_http_client_request_t *r, const char *method, const char *url,
                            outcome_t *o) {
  dg_http_client_request_init(r);
  r->method = method;
  r->url = url;
  r->connector = "test";
  r->done = record_done;
  r->user = o;
}

static inline dg_http_call_t *start(ctx_t *t, const dg_http_client_request_t *r) {
  dg_http_call_t *call = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  if (dg_http_client_request(t->client, r, &call, &err) != 0) {
    fprintf(stderr, "request refused: %s\n", err.message);
    return NULL;
  }
  return call;
}

/* One call from start to end; returns the outcome's status. */
static inline int call_once(ctx_t *t, const char *method, const char *url, outcome_t *o) {
  dg_http_client_request_t r;
  req_init(&r, method, url, o);
  int before = o->called;
  if (start(t, &r) == NULL || !run_until(t, o, before + 1))
    return -1;
  return o->status;
}

#endif
