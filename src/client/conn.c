/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Upstream connections and their keep-alive pool. A connection goes
 * CONNECTING -> (HANDSHAKE for https) -> ACTIVE, carrying one call's
 * request and response at a time; when the response leaves it reusable it
 * goes IDLE into its origin's pool (newest first, at most
 * pool_max_per_origin, closed after pool_idle_ms or when the peer closes),
 * from where the next call to that origin takes it back to ACTIVE. Every
 * state ends in CLOSED, and memory is freed in the close callbacks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

struct dg__pool {
  dg__pool_t *prev, *next; /* the client's pools, most recently used first */
  char origin[300];
  dg__uconn_t *idle; /* newest first */
  unsigned nidle;
};

typedef struct write_block {
  uv_write_t req;
  dg__uconn_t *conn;
  char data[];
} write_block_t;

static bool transition_ok(dg__uconn_state_t from, dg__uconn_state_t to) {
  switch (from) {
  case DG__UCONN_CONNECTING:
    return to == DG__UCONN_HANDSHAKE || to == DG__UCONN_ACTIVE || to == DG__UCONN_CLOSED;
  case DG__UCONN_HANDSHAKE:
    return to == DG__UCONN_ACTIVE || to == DG__UCONN_CLOSED;
  case DG__UCONN_ACTIVE:
    return to == DG__UCONN_IDLE || to == DG__UCONN_CLOSED;
  case DG__UCONN_IDLE:
    return to == DG__UCONN_ACTIVE || to == DG__UCONN_CLOSED;
  default:
    return false;
  }
}

static void set_state(dg__uconn_t *c, dg__uconn_state_t to) {
  if (!transition_ok(c->state, to)) {
    dg_logf(DG_LOG_ERROR, "upstream_conn_state", "illegal connection state change %d -> %d",
            c->state, to);
    abort();
  }
  c->state = to;
}

/* ---- the pool -------------------------------------------------------------- */

static dg__pool_t *pool_find(dg_http_client_t *client, const char *origin) {
  for (dg__pool_t *p = client->pools; p != NULL; p = p->next) {
    if (strcmp(p->origin, origin) == 0)
      return p;
  }
  return NULL;
}

/* Takes c out of its pool; an empty pool is freed. */
static void pool_remove(dg__uconn_t *c) {
  dg__pool_t *p = c->pool;
  dg_http_client_t *client = c->client;
  DG_LIST_UNLINK(p->idle, c, prev, next);
  c->pool = NULL;
  p->nidle--;
  client->nidle--;
  if (p->nidle == 0) {
    DG_LIST_UNLINK(client->pools, p, prev, next);
    client->npools--;
    free(p);
  }
}

static void evict_oldest_pool(dg_http_client_t *client) {
  dg__pool_t *last = client->pools;
  while (last != NULL && last->next != NULL)
    last = last->next;
  while (last != NULL && last->nidle > 0) {
    bool gone = last->nidle == 1;
    dg__uconn_close(last->idle);
    if (gone)
      break;
  }
}

/* The idle timer is not stopped when a call takes the connection, which
 * spares two timer updates per call on a busy connection: when it fires,
 * the connection may be in use, or idle again for less than the limit. */
static void on_idle_timeout(uv_timer_t *t) {
  dg__uconn_t *c = t->data;
  uint64_t limit = c->client->cfg.pool_idle_ms;
  uint64_t idle = dg_now_ms() - c->idle_since_ms;
  if (c->state != DG__UCONN_IDLE)
    return; /* parking it again restarts the timer */
  if (idle < limit)
    uv_timer_start(&c->idle_timer, on_idle_timeout, limit - idle, 0);
  else
    dg__uconn_close(c);
}

static dg__pool_t *pool_for(dg_http_client_t *client, const char *origin) {
  dg__pool_t *p = pool_find(client, origin);
  if (p != NULL) {
    DG_LIST_UNLINK(client->pools, p, prev, next);
    DG_LIST_PUSH(client->pools, p, prev, next);
    return p;
  }
  if (client->npools >= client->cfg.max_origins)
    evict_oldest_pool(client);
  p = calloc(1, sizeof(*p));
  if (p == NULL)
    return NULL;
  dg_strlcpy(p->origin, origin, sizeof(p->origin));
  DG_LIST_PUSH(client->pools, p, prev, next);
  client->npools++;
  return p;
}

static void park(dg__uconn_t *c) {
  dg_http_client_t *client = c->client;
  dg__pool_t *p = pool_find(client, c->origin);
  /* Idle sockets are bounded per origin and in all, whatever the settings. */
  if (client->cfg.pool_max_per_origin == 0 || client->nidle >= DG__CLIENT_MAX_IDLE ||
      (p != NULL && p->nidle >= client->cfg.pool_max_per_origin)) {
    dg__uconn_close(c);
    return;
  }
  p = pool_for(client, c->origin);
  if (p == NULL) {
    dg__uconn_close(c);
    return;
  }
  set_state(c, DG__UCONN_IDLE);
  c->pool = p;
  DG_LIST_PUSH(p->idle, c, prev, next);
  p->nidle++;
  client->nidle++;
  c->idle_since_ms = dg_now_ms();
  if (!uv_is_active((uv_handle_t *)&c->idle_timer))
    uv_timer_start(&c->idle_timer, on_idle_timeout, client->cfg.pool_idle_ms, 0);
}

dg__uconn_t *dg__pool_checkout(dg_http_client_t *client, const char *origin, dg_http_call_t *call) {
  dg__pool_t *p = pool_find(client, origin);
  if (p == NULL)
    return NULL;
  dg__uconn_t *c = p->idle;
  pool_remove(c);
  set_state(c, DG__UCONN_ACTIVE);
  c->call = call;
  return c;
}

unsigned dg__pool_idle_total(const dg_http_client_t *client) {
  return client->nidle;
}

void dg__pool_close_all(dg_http_client_t *client) {
  dg__uconn_t *c = client->conns;
  while (c != NULL) {
    dg__uconn_t *next = c->all_next;
    dg__uconn_close(c);
    c = next;
  }
}

/* ---- closing ----------------------------------------------------------------- */

static void on_closed(uv_handle_t *h) {
  dg__uconn_t *c = h->data;
  if (--c->handles > 0)
    return;
  dg_http_client_t *client = c->client;
  DG_LIST_UNLINK(client->conns, c, all_prev, all_next);
  dg__ctls_free(c->tls);
  free(c);
  dg__client_handle_gone(client);
}

void dg__uconn_close(dg__uconn_t *c) {
  if (c == NULL || c->state == DG__UCONN_CLOSED)
    return;
  if (c->state == DG__UCONN_IDLE)
    pool_remove(c);
  set_state(c, DG__UCONN_CLOSED);
  c->call = NULL;
  uv_close((uv_handle_t *)&c->tcp, on_closed);
  uv_close((uv_handle_t *)&c->idle_timer, on_closed);
}

void dg__uconn_release(dg__uconn_t *c, bool reusable) {
  c->call = NULL;
  if (!reusable || c->broken || c->paused || c->client->state != DG__CLIENT_RUNNING)
    dg__uconn_close(c);
  else
    park(c);
}

/* ---- writing ------------------------------------------------------------------ */

static void on_write(uv_write_t *req, int status) {
  write_block_t *b = req->data;
  dg__uconn_t *c = b->conn;
  free(b);
  if (status == 0 || c->state == DG__UCONN_CLOSED)
    return;
  c->broken = true;
  if (c->call != NULL) {
    char why[128];
    snprintf(why, sizeof(why), "sending the request failed: %s", uv_strerror(status));
    dg__call_conn_failed(c->call, DG_HTTP_FAIL_CONNECT, why);
  }
}

static int send_raw(void *ctx, const void *data, size_t len) {
  dg__uconn_t *c = ctx;
  if (c->state == DG__UCONN_CLOSED)
    return DG_ECLOSED;
  /* A request the socket takes whole leaves at once, without the copy,
   * the write callback and the epoll_ctl that libuv spends on each queued
   * write. Only what it does not take is queued, behind anything queued
   * before; a write error is left to uv_write to report. */
  uv_stream_t *stream = (uv_stream_t *)&c->tcp;
  if (uv_stream_get_write_queue_size(stream) == 0 && c->state != DG__UCONN_CONNECTING) {
    uv_buf_t whole = uv_buf_init((char *)data, (unsigned)len);
    int n = uv_try_write(stream, &whole, 1);
    if (n == (int)len)
      return 0;
    if (n > 0) {
      data = (const char *)data + n;
      len -= (size_t)n;
    }
  }
  write_block_t *b = malloc(sizeof(*b) + len);
  if (b == NULL)
    return DG_ENOMEM;
  memcpy(b->data, data, len);
  b->conn = c;
  b->req.data = b;
  uv_buf_t buf = uv_buf_init(b->data, (unsigned)len);
  if (uv_write(&b->req, stream, &buf, 1, on_write) != 0) {
    free(b);
    return DG_EIO;
  }
  return 0;
}

int dg__uconn_write(dg__uconn_t *c, const void *data, size_t len) {
  if (c->tls != NULL)
    return dg__ctls_write(c->tls, data, len);
  return send_raw(c, data, len);
}

/* ---- reading ------------------------------------------------------------------ */

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  dg__uconn_t *c = handle->data;
  dg_http_client_t *client = c->client;
  /* As on the server: alloc and read come back to back, so one buffer per
   * client serves every connection. */
  if (!client->rbuf_busy) {
    client->rbuf_busy = true;
    *buf = uv_buf_init(client->rbuf, sizeof(client->rbuf));
    return;
  }
  char *p = malloc(DG__READ_BUF_SIZE);
  *buf = uv_buf_init(p, p != NULL ? DG__READ_BUF_SIZE : 0);
}

static void release_buf(dg_http_client_t *client, const uv_buf_t *buf) {
  if (buf->base == client->rbuf)
    client->rbuf_busy = false;
  else
    free(buf->base);
}

/* Plaintext for the call; an idle connection must stay silent. */
static int on_plain(void *ctx, const char *data, size_t len) {
  dg__uconn_t *c = ctx;
  if (c->state == DG__UCONN_IDLE) {
    dg__uconn_close(c);
    return DG_ECLOSED;
  }
  if (c->state != DG__UCONN_ACTIVE || c->call == NULL)
    return DG_ECLOSED;
  dg__call_conn_data(c->call, data, len);
  return c->state == DG__UCONN_CLOSED ? DG_ECLOSED : 0;
}

static void tls_failed(dg__uconn_t *c, int rc, const char *why) {
  c->broken = true;
  if (c->state == DG__UCONN_CLOSED)
    return;
  if (c->call == NULL) {
    dg__uconn_close(c);
    return;
  }
  if (rc == DG_ECLOSED)
    dg__call_conn_eof(c->call);
  else
    dg__call_conn_failed(
        c->call, c->state == DG__UCONN_HANDSHAKE ? DG_HTTP_FAIL_TLS : DG_HTTP_FAIL_CONNECT, why);
}

static void feed_tls(dg__uconn_t *c, const char *data, size_t len) {
  char why[320] = "";
  bool opened = false;
  int rc = dg__ctls_feed(c->tls, data, len, &opened, on_plain, c, why, sizeof(why));
  if (rc == 0 && opened) {
    set_state(c, DG__UCONN_ACTIVE);
    dg__call_conn_ready(c->call);
    /* Anything that came with the last handshake flight follows. */
    if (c->state == DG__UCONN_ACTIVE)
      rc = dg__ctls_feed(c->tls, NULL, 0, &opened, on_plain, c, why, sizeof(why));
  }
  if (rc != 0)
    tls_failed(c, rc, why);
}

static void on_eof(dg__uconn_t *c, int status) {
  c->broken = true;
  if (c->state == DG__UCONN_IDLE || c->call == NULL) {
    dg__uconn_close(c);
    return;
  }
  if (status == UV_EOF) {
    dg__call_conn_eof(c->call);
    return;
  }
  char why[128];
  snprintf(why, sizeof(why), "%s",
           status == UV_ECONNRESET ? "the connection was reset" : uv_strerror(status));
  dg__call_conn_failed(
      c->call, c->state == DG__UCONN_HANDSHAKE ? DG_HTTP_FAIL_TLS : DG_HTTP_FAIL_CONNECT, why);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  dg__uconn_t *c = stream->data;
  dg_http_client_t *client = c->client;
  if (nread > 0 && c->state != DG__UCONN_CLOSED) {
    if (c->tls != NULL)
      feed_tls(c, buf->base, (size_t)nread);
    else
      on_plain(c, buf->base, (size_t)nread);
  } else if (nread < 0 && c->state != DG__UCONN_CLOSED) {
    on_eof(c, (int)nread);
  }
  if (buf->base != NULL)
    release_buf(client, buf);
}

/* ---- pausing while a compressed body is decoded ---------------------------------
 * The idle timer is free while a call holds the connection: it paces the
 * decoding, one share per loop turn, while reading stops. */

static void on_drain(uv_timer_t *t) {
  dg__uconn_t *c = t->data;
  if (c->state == DG__UCONN_ACTIVE && c->call != NULL)
    dg__call_conn_drain(c->call);
}

void dg__uconn_pause(dg__uconn_t *c) {
  if (c->state != DG__UCONN_ACTIVE)
    return;
  if (!c->paused)
    uv_read_stop((uv_stream_t *)&c->tcp);
  c->paused = true;
  uv_timer_start(&c->idle_timer, on_drain, 0, 0);
}

void dg__uconn_resume(dg__uconn_t *c) {
  if (!c->paused || c->state != DG__UCONN_ACTIVE)
    return;
  c->paused = false;
  uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
}

/* ---- connecting --------------------------------------------------------------- */

static void on_connect(uv_connect_t *req, int status) {
  dg__uconn_t *c = req->data;
  if (c->state == DG__UCONN_CLOSED)
    return;
  if (status < 0) {
    char why[128];
    c->broken = true;
    snprintf(why, sizeof(why), "%s",
             status == UV_ECONNREFUSED ? "connection refused" : uv_strerror(status));
    dg__call_conn_failed(c->call, DG_HTTP_FAIL_CONNECT, why);
    return;
  }
  uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
  if (c->tls == NULL) {
    set_state(c, DG__UCONN_ACTIVE);
    dg__call_conn_ready(c->call);
    return;
  }
  set_state(c, DG__UCONN_HANDSHAKE);
  dg__call_conn_connected(c->call);
  char why[320] = "";
  if (c->state == DG__UCONN_HANDSHAKE && dg__ctls_start(c->tls, why, sizeof(why)) != 0)
    tls_failed(c, DG_EUPSTREAM, why);
}

static dg__uconn_t *conn_new(dg_http_client_t *client, dg_http_call_t *call) {
  dg__uconn_t *c = calloc(1, sizeof(*c));
  if (c == NULL)
    return NULL;
  c->client = client;
  c->call = call;
  c->state = DG__UCONN_CONNECTING;
  dg_strlcpy(c->origin, call->url.origin, sizeof(c->origin));
  uv_tcp_init(client->loop, &c->tcp);
  uv_timer_init(client->loop, &c->idle_timer);
  c->tcp.data = c;
  c->idle_timer.data = c;
  c->connect_req.data = c;
  c->handles = 2;
  DG_LIST_PUSH(client->conns, c, all_prev, all_next);
  client->handles++;
  return c;
}

int dg__uconn_open(dg_http_client_t *client, dg_http_call_t *call, const struct sockaddr *addr,
                   dg__uconn_t **out, const char **why) {
  dg__uconn_t *c = conn_new(client, call);
  if (c == NULL)
    return DG_ENOMEM;
  int rc = 0;
  if (call->url.https)
    rc = dg__ctls_new(client->tls, call->url.host, send_raw, c, &c->tls);
  if (rc == 0)
    uv_tcp_nodelay(&c->tcp, 1);
  if (rc == 0) {
    size_t len =
        addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
    memcpy(&c->peer, addr, len);
    rc = uv_tcp_connect(&c->connect_req, &c->tcp, addr, on_connect);
  }
  if (rc != 0) {
    *why = rc == DG_ENOMEM ? "out of memory" : uv_strerror(rc);
    dg__uconn_close(c);
    return rc == DG_ENOMEM ? rc : DG_EIO;
  }
  *out = c;
  return 0;
}
