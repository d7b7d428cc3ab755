/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* One client connection: socket reads into the server's shared read
 * buffer, writes with a bounded queue, one timer, and the way down:
 * FLUSHING (last output queued) -> LINGER (write side shut, input
 * discarded so the peer reads our last response before any reset) ->
 * CLOSED. Memory is freed in the close callback only, so a connection
 * stays valid for the whole of any callback stack that reaches it. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/internal.h"

typedef struct write_block {
  uv_write_t req;
  dg__conn_t *conn;
  size_t len;
  char data[];
} write_block_t;

static bool transition_ok(dg__conn_state_t from, dg__conn_state_t to) {
  switch (from) {
  case DG__CONN_HANDSHAKE:
    return to == DG__CONN_OPEN || to == DG__CONN_FLUSHING || to == DG__CONN_CLOSED;
  case DG__CONN_OPEN:
    return to == DG__CONN_FLUSHING || to == DG__CONN_CLOSED;
  case DG__CONN_FLUSHING:
    return to == DG__CONN_LINGER || to == DG__CONN_CLOSED;
  case DG__CONN_LINGER:
    return to == DG__CONN_CLOSED;
  default:
    return false;
  }
}

static void update_reading(dg__conn_t *c);

static void set_state(dg__conn_t *c, dg__conn_state_t to) {
  if (!transition_ok(c->state, to)) {
    dg_logf(DG_LOG_ERROR, "conn_state", "illegal connection state change %d -> %d", c->state, to);
    abort();
  }
  c->state = to;
  update_reading(c);
}

bool dg__conn_is_open(const dg__conn_t *c) {
  return c != NULL && c->state == DG__CONN_OPEN;
}

size_t dg__conn_memory(const dg__conn_t *c) {
  size_t n = sizeof(*c) + c->pending;
  if (c->tls != NULL)
    n += dg__tls_memory(c->tls);
  if (c->proto != NULL && c->proto->memory != NULL)
    n += c->proto->memory(c);
  return n;
}

const char *dg__conn_transport(const dg__conn_t *c) {
  return c->tls != NULL ? "https" : "http";
}

/* ---- reading ---------------------------------------------------------- */

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  dg__conn_t *c = handle->data;
  dg_http_server_t *s = c->server;
  /* libuv calls alloc and read back to back, so one buffer per server
   * serves every connection; idle connections hold no read memory. */
  if (!s->rbuf_busy) {
    s->rbuf_busy = true;
    *buf = uv_buf_init(s->rbuf, sizeof(s->rbuf));
    return;
  }
  char *p = malloc(DG__READ_BUF_SIZE);
  *buf = uv_buf_init(p, p != NULL ? DG__READ_BUF_SIZE : 0);
}

static void release_buf(dg_http_server_t *s, const uv_buf_t *buf) {
  if (buf->base == s->rbuf)
    s->rbuf_busy = false;
  else
    free(buf->base);
}

static void on_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  dg__conn_t *c = stream->data;
  dg_http_server_t *s = c->server;
  if (nread > 0)
    dg__conn_feed(c, buf->base, (size_t)nread);
  else if (nread == UV_EOF) {
    c->eof = true;
    c->reading = false; /* libuv stops reading at EOF */
    dg__conn_feed_eof(c);
  } else if (nread < 0)
    dg__conn_close(c);
  if (buf->base != NULL)
    release_buf(s, buf);
}

static void update_reading(dg__conn_t *c) {
  if (c->capture != NULL)
    return;
  bool want = false;
  if (c->state == DG__CONN_LINGER)
    want = true;
  else if (c->state == DG__CONN_HANDSHAKE || c->state == DG__CONN_OPEN)
    want = c->noread == 0;
  if (want && !c->reading && !c->eof)
    c->reading = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) == 0;
  else if (!want && c->reading) {
    uv_read_stop((uv_stream_t *)&c->tcp);
    c->reading = false;
  }
}

void dg__conn_noread(dg__conn_t *c, unsigned reason, bool on) {
  if (on)
    c->noread |= reason;
  else
    c->noread &= ~reason;
  update_reading(c);
}

void dg__conn_feed(dg__conn_t *c, const char *data, size_t len) {
  if (c->state != DG__CONN_HANDSHAKE && c->state != DG__CONN_OPEN)
    return; /* lingering or closing: input is discarded */
  if (c->tls == NULL) {
    if (c->proto != NULL)
      c->proto->on_data(c, data, len);
    return;
  }
  int rc = dg__tls_feed(c, data, len);
  if (rc == DG_ECLOSED)
    dg__conn_feed_eof(c);
  else if (rc != 0)
    dg__conn_close(c);
}

void dg__conn_feed_eof(dg__conn_t *c) {
  if (c->state == DG__CONN_OPEN && c->proto != NULL)
    c->proto->on_eof(c);
  else if (c->state != DG__CONN_FLUSHING)
    dg__conn_close(c);
}

/* ---- writing ---------------------------------------------------------- */

static void on_write(uv_write_t *req, int status) {
  write_block_t *b = (write_block_t *)req;
  dg__conn_t *c = b->conn;
  size_t max = c->server->limits.max_write_buffer;
  c->pending -= b->len;
  free(b);
  if (status != 0) {
    dg__conn_close(c); /* the peer is gone; closing twice is harmless */
    return;
  }
  if (c->pending < max / 2)
    dg__conn_noread(c, DG__NOREAD_BACKPRESSURE, false);
  if (c->want_drain && c->pending < max / 2) {
    c->want_drain = false;
    if (c->state == DG__CONN_OPEN && c->proto != NULL)
      c->proto->on_drain(c);
  }
}

/* A block holding the bytes of bufs that follow the first skip bytes. */
static write_block_t *block_new(dg__conn_t *c, const uv_buf_t *bufs, unsigned n, size_t skip,
                                size_t len) {
  write_block_t *b = malloc(sizeof(*b) + (len - skip));
  if (b == NULL)
    return NULL;
  b->conn = c;
  b->len = 0;
  for (unsigned i = 0; i < n; i++) {
    size_t from = skip < bufs[i].len ? skip : bufs[i].len;
    skip -= from;
    if (bufs[i].len > from)
      memcpy(b->data + b->len, bufs[i].base + from, bufs[i].len - from);
    b->len += bufs[i].len - from;
  }
  return b;
}

static int capture_writev(dg__conn_t *c, const uv_buf_t *bufs, unsigned n) {
  int rc = 0;
  for (unsigned i = 0; i < n && rc == 0; i++)
    rc = dg_buf_append(c->capture, bufs[i].base, bufs[i].len);
  return rc;
}

/* Writes what the socket takes at once when nothing is queued before it;
 * returns the bytes written (0 when it took nothing or failed: the queued
 * write then meets the error and reports it as before). */
static size_t write_now(dg__conn_t *c, const uv_buf_t *bufs, unsigned n) {
  if (c->pending > 0 || (c->state != DG__CONN_OPEN && c->state != DG__CONN_HANDSHAKE))
    return 0;
  int rc = uv_try_write((uv_stream_t *)&c->tcp, bufs, n);
  return rc > 0 ? (size_t)rc : 0;
}

/* Most responses fit the socket's buffer and leave in one writev(2) from
 * write_now, with no copy, allocation or poll change. Whatever the socket
 * did not take is copied into one block handed to uv_write, so output
 * stays in order and a response's head and body leave together. */
static int raw_writev(dg__conn_t *c, const uv_buf_t *bufs, unsigned n) {
  size_t len = 0;
  for (unsigned i = 0; i < n; i++)
    len += bufs[i].len;
  if (c->state == DG__CONN_CLOSED || c->state == DG__CONN_LINGER)
    return DG_ECLOSED;
  if (len == 0)
    return 0;
  if (c->capture != NULL)
    return capture_writev(c, bufs, n);
  size_t written = write_now(c, bufs, n);
  if (written == len)
    return 0;
  write_block_t *b = block_new(c, bufs, n, written, len);
  if (b == NULL)
    return DG_ENOMEM;
  uv_buf_t buf = uv_buf_init(b->data, (unsigned)b->len);
  if (uv_write(&b->req, (uv_stream_t *)&c->tcp, &buf, 1, on_write) != 0) {
    free(b);
    return DG_ECLOSED;
  }
  c->pending += b->len;
  if (c->pending > c->server->limits.max_write_buffer) {
    /* A peer that does not read must not make us buffer its input too. */
    c->want_drain = true;
    dg__conn_noread(c, DG__NOREAD_BACKPRESSURE, true);
  }
  return 0;
}

int dg__conn_raw_write(dg__conn_t *c, const void *data, size_t len) {
  uv_buf_t buf = uv_buf_init((char *)data, (unsigned)len);
  return raw_writev(c, &buf, 1);
}

int dg__conn_writev(dg__conn_t *c, const uv_buf_t *bufs, unsigned n) {
  if (c->state != DG__CONN_OPEN)
    return DG_ECLOSED;
  if (c->tls == NULL)
    return raw_writev(c, bufs, n);
  for (unsigned i = 0; i < n; i++) {
    int rc = dg__tls_write(c, bufs[i].base, bufs[i].len);
    if (rc != 0)
      return rc;
  }
  return 0;
}

int dg__conn_write(dg__conn_t *c, const void *data, size_t len) {
  uv_buf_t buf = uv_buf_init((char *)data, (unsigned)len);
  return dg__conn_writev(c, &buf, 1);
}

bool dg__conn_can_write(dg__conn_t *c, size_t len) {
  size_t max = c->server->limits.max_write_buffer;
  /* One write larger than the limit is let through when nothing is queued,
   * so memory stays bounded by the larger of the two. */
  if (c->pending == 0 || (len <= max && c->pending <= max - len))
    return true;
  c->want_drain = true;
  return false;
}

/* ---- timers ----------------------------------------------------------- */

static void on_timer(uv_timer_t *timer) {
  dg__conn_t *c = timer->data;
  if (c->state == DG__CONN_OPEN) {
    if (c->proto != NULL)
      c->proto->on_timer(c);
    return;
  }
  /* A handshake, a flush or a linger that took too long. */
  dg__conn_close(c);
}

void dg__conn_timer(dg__conn_t *c, uint64_t ms) {
  if (c->state != DG__CONN_CLOSED)
    uv_timer_start(&c->timer, on_timer, ms, 0);
}

void dg__conn_timer_stop(dg__conn_t *c) {
  if (c->state != DG__CONN_CLOSED)
    uv_timer_stop(&c->timer);
}

/* ---- closing ---------------------------------------------------------- */

static void on_closed(uv_handle_t *handle) {
  dg__conn_t *c = handle->data;
  if (--c->handles > 0)
    return;
  if (c->proto != NULL)
    c->proto->on_closed(c);
  dg__tls_free(c->tls);
  dg__server_conn_gone(c->server, c);
  free(c);
}

void dg__conn_close(dg__conn_t *c) {
  if (c->state == DG__CONN_CLOSED)
    return;
  set_state(c, DG__CONN_CLOSED);
  if (c->reading)
    uv_read_stop((uv_stream_t *)&c->tcp);
  c->reading = false;
  uv_close((uv_handle_t *)&c->timer, on_closed);
  uv_close((uv_handle_t *)&c->tcp, on_closed);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  dg__conn_t *c = req->data;
  free(req);
  if (c->state != DG__CONN_FLUSHING)
    return;
  /* After the peer's EOF no input can arrive to be reset: close now. */
  if (status != 0 || c->eof) {
    dg__conn_close(c);
    return;
  }
  set_state(c, DG__CONN_LINGER);
  dg__conn_timer(c, DG__LINGER_MS);
}

void dg__conn_finish(dg__conn_t *c) {
  if (c->state != DG__CONN_HANDSHAKE && c->state != DG__CONN_OPEN)
    return;
  if (c->tls != NULL && c->state == DG__CONN_OPEN)
    dg__tls_close_notify(c);
  set_state(c, DG__CONN_FLUSHING);
  uint64_t idle = c->server->limits.idle_timeout_ms;
  dg__conn_timer(c, idle > 0 ? idle : DG__LINGER_MS);
  uv_shutdown_t *req = c->capture != NULL ? NULL : malloc(sizeof(*req));
  if (req == NULL) {
    dg__conn_close(c);
    return;
  }
  req->data = c;
  /* libuv shuts the write side down once every queued write is done. */
  if (uv_shutdown(req, (uv_stream_t *)&c->tcp, on_shutdown) != 0) {
    free(req);
    dg__conn_close(c);
  }
}

/* ---- opening ---------------------------------------------------------- */

int dg__conn_new(dg_http_server_t *s, dg__conn_t **out) {
  dg__conn_t *c = calloc(1, sizeof(*c));
  if (c == NULL)
    return DG_ENOMEM;
  if (uv_tcp_init(s->loop, &c->tcp) != 0) {
    free(c);
    return DG_EIO;
  }
  uv_timer_init(s->loop, &c->timer);
  c->tcp.data = c;
  c->timer.data = c;
  c->handles = 2;
  c->server = s;
  c->state = DG__CONN_HANDSHAKE;
  DG_LIST_PUSH(s->conns, c, prev, next);
  s->handles++;
  *out = c;
  return 0;
}

static void peer_name(dg__conn_t *c) {
  struct sockaddr_storage ss;
  int len = sizeof(ss);
  char ip[INET6_ADDRSTRLEN] = "?";
  dg_strlcpy(c->peer, "unknown", sizeof(c->peer));
  if (uv_tcp_getpeername(&c->tcp, (struct sockaddr *)&ss, &len) != 0)
    return;
  if (ss.ss_family == AF_INET6) {
    const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
    uv_ip6_name(a, ip, sizeof(ip));
    snprintf(c->peer, sizeof(c->peer), "[%s]:%u", ip, (unsigned)ntohs(a->sin6_port));
  } else {
    const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
    uv_ip4_name(a, ip, sizeof(ip));
    snprintf(c->peer, sizeof(c->peer), "%s:%u", ip, (unsigned)ntohs(a->sin_port));
  }
}

/* The plaintext protocol begins (right away, or after the handshake). */
void dg__conn_opened(dg__conn_t *c) {
  set_state(c, DG__CONN_OPEN);
  if (c->proto != NULL && c->proto->on_open != NULL)
    c->proto->on_open(c);
}

void dg__conn_start(dg__conn_t *c) {
  peer_name(c);
  uv_tcp_nodelay(&c->tcp, 1);
  if (dg__http1_attach(c) != 0) {
    dg__conn_close(c);
    return;
  }
  if (c->server->tls == NULL) {
    dg__conn_opened(c);
    return;
  }
  if (dg__tls_attach(c, c->server->tls) != 0) {
    dg__conn_close(c);
    return;
  }
  dg__conn_timer(c, c->server->limits.header_timeout_ms);
  update_reading(c);
}

int dg__conn_open_capture(dg_http_server_t *s, dg_buf_t *capture, dg__conn_t **out) {
  dg__conn_t *c = NULL;
  int rc = dg__conn_new(s, &c);
  if (rc != 0)
    return rc;
  c->capture = capture;
  c->counted = true;
  s->nconns++;
  dg_metrics_gauge_add("dg_http_connections_open", NULL, 1);
  dg_strlcpy(c->peer, "capture", sizeof(c->peer));
  rc = dg__http1_attach(c);
  if (rc != 0) {
    dg__conn_close(c);
    return rc;
  }
  dg__conn_opened(c);
  *out = c;
  return 0;
}
