/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The listener: binds (optionally with SO_REUSEPORT), accepts connections
 * up to max_connections, drains and closes. The server is freed once its
 * listener, its drain timer and every connection have been closed. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "net/internal.h"

#define LISTEN_BACKLOG 511

void dg_http_limits_default(dg_http_limits_t *limits) {
  limits->max_header_bytes = 16 * 1024;
  limits->max_headers = 64;
  limits->max_body_bytes = 1024 * 1024;
  limits->max_connections = 10000;
  limits->header_timeout_ms = 10 * 1000;
  limits->request_timeout_ms = 30 * 1000;
  limits->idle_timeout_ms = 75 * 1000;
  limits->max_write_buffer = 1024 * 1024;
  limits->max_pipelined = 16;
  limits->max_ws_message_bytes = 1024 * 1024;
  limits->ws_ping_interval_ms = 30 * 1000;
  limits->max_unadmitted_bytes = 64 * 1024 * 1024;
}

static void server_free(dg_http_server_t *s) {
  dg__tls_server_free(s->tls);
  free(s);
}

static void handle_closed(uv_handle_t *handle) {
  dg_http_server_t *s = handle->data;
  if (--s->handles == 0)
    server_free(s);
}

/* Calls the drain callback once every connection is gone. */
static void drain_check(dg_http_server_t *s) {
  if (!s->drain_pending || s->conns != NULL)
    return;
  s->drain_pending = false;
  uv_timer_stop(&s->drain_timer);
  if (s->drain_done != NULL)
    s->drain_done(s, s->drain_data);
}

void dg__server_conn_gone(dg_http_server_t *s, dg__conn_t *c) {
  DG_LIST_UNLINK(s->conns, c, prev, next);
  if (c->counted) {
    s->nconns--;
    dg_metrics_gauge_add("dg_http_connections_open", NULL, -1);
  }
  dg__server_admitted(s, c);
  /* The connection still counts as a handle here, so a drain callback that
   * closes the server cannot free it under our feet. */
  drain_check(s);
  if (--s->handles == 0)
    server_free(s);
}

int dg__server_new(uv_loop_t *loop, const dg_http_server_config_t *config, dg_http_server_t **out,
                   dg_errctx_t *err) {
  if (config->handler == NULL)
    return dg_errctx_set(err, DG_EINVAL, "handler", "a request handler is required");
  dg_http_server_t *s = calloc(1, sizeof(*s));
  if (s == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "server", "out of memory");
  s->loop = loop;
  s->limits = config->limits;
  s->handler = config->handler;
  s->admit = config->admit;
  s->data = config->data;
  s->access_log = config->access_log;
  if (config->tls != NULL) {
    int rc = dg__tls_server_new(config->tls, &s->tls, err);
    if (rc != 0) {
      free(s);
      return rc;
    }
  }
  uv_timer_init(loop, &s->drain_timer);
  s->drain_timer.data = s;
  s->handles = 1;
  *out = s;
  return 0;
}

/* Parses a numeric host; "localhost" is accepted as 127.0.0.1 so that no
 * name lookup ever blocks the loop. */
static int parse_host(const char *host, int port, struct sockaddr_storage *ss, dg_errctx_t *err) {
  if (host == NULL || *host == '\0' || strcmp(host, "localhost") == 0)
    host = "127.0.0.1";
  if (port < 0 || port > 65535)
    return dg_errctx_set(err, DG_ECONFIG, "port", "port %d is not in 0..65535", port);
  if (uv_ip4_addr(host, port, (struct sockaddr_in *)ss) == 0)
    return 0;
  if (uv_ip6_addr(host, port, (struct sockaddr_in6 *)ss) == 0)
    return 0;
  return dg_errctx_set(err, DG_ECONFIG, "host", "host '%s' is not a numeric IPv4 or IPv6 address",
                       host);
}

/* Creates the socket ourselves: libuv has no flag for SO_REUSEPORT. */
static int bind_socket(const struct sockaddr_storage *ss, bool reuse_port, int *fd_out,
                       dg_errctx_t *err) {
  int on = 1;
  socklen_t len =
      ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return dg_errctx_set(err, DG_EIO, "host", "cannot create a socket: %s", strerror(errno));
  if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
      (reuse_port && setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0)) {
    int e = errno;
    close(fd);
    return dg_errctx_set(err, DG_EIO, "reuse_port", "cannot set socket options: %s", strerror(e));
  }
  if (bind(fd, (const struct sockaddr *)ss, len) != 0) {
    int e = errno;
    close(fd);
    return dg_errctx_set(err, e == EADDRINUSE ? DG_EEXIST : DG_EIO, "port", "cannot bind: %s",
                         strerror(e));
  }
  *fd_out = fd;
  return 0;
}

static void on_connection(uv_stream_t *listener, int status);

static int listen_on(dg_http_server_t *s, const dg_http_server_config_t *config, dg_errctx_t *err) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  int fd = -1;
  int rc = parse_host(config->host, config->port, &ss, err);
  if (rc == 0)
    rc = bind_socket(&ss, config->reuse_port, &fd, err);
  if (rc != 0)
    return rc;
  uv_tcp_init(s->loop, &s->listener);
  s->listener.data = s;
  s->handles++;
  s->listening = true;
  int uvrc = uv_tcp_open(&s->listener, fd);
  if (uvrc != 0) {
    close(fd); /* not owned by the handle */
    return dg_errctx_set(err, DG_EIO, "port", "cannot use the socket: %s", uv_strerror(uvrc));
  }
  uvrc = uv_listen((uv_stream_t *)&s->listener, LISTEN_BACKLOG, on_connection);
  if (uvrc != 0)
    return dg_errctx_set(err, DG_EIO, "port", "cannot listen: %s", uv_strerror(uvrc));
  struct sockaddr_storage bound;
  int blen = sizeof(bound);
  uv_tcp_getsockname(&s->listener, (struct sockaddr *)&bound, &blen);
  s->port = ntohs(bound.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&bound)->sin6_port
                                              : ((struct sockaddr_in *)&bound)->sin_port);
  if (bound.ss_family == AF_INET6)
    uv_ip6_name((const struct sockaddr_in6 *)&bound, s->host, sizeof(s->host));
  else
    uv_ip4_name((const struct sockaddr_in *)&bound, s->host, sizeof(s->host));
  return 0;
}

static void describe_metrics(void) {
  dg_metrics_describe("dg_http_connections_open", "Open HTTP connections.");
  dg_metrics_describe("dg_http_responses_total", "HTTP responses sent, by status.");
  dg_metrics_describe("dg_http_limit_rejections_total",
                      "Requests or connections refused by a limit, by limit.");
  dg_metrics_describe("dg_ws_connections_open", "Open WebSocket connections.");
}

int dg_http_server_start(uv_loop_t *loop, const dg_http_server_config_t *config,
                         dg_http_server_t **out, dg_errctx_t *err) {
  dg_http_server_t *s = NULL;
  /* A peer that closes while we write must cost an EPIPE, not the process. */
  signal(SIGPIPE, SIG_IGN);
  int rc = dg__server_new(loop, config, &s, err);
  if (rc != 0)
    return rc;
  rc = listen_on(s, config, err);
  if (rc != 0) {
    dg_http_server_close(s);
    return rc;
  }
  describe_metrics();
  dg_logf(DG_LOG_INFO, "http_listen", "listening on %s port %d%s",
          config->host ? config->host : "127.0.0.1", s->port, s->tls ? " (tls)" : "");
  *out = s;
  return 0;
}

/* Over a limit the peer hears 503 at once instead of waiting in the
 * backlog; a TLS peer cannot be told anything before a handshake, so it
 * is simply closed. */
static void reject(dg__conn_t *c, const char *limit, const char *why) {
  char resp[256];
  int n = snprintf(resp, sizeof(resp),
                   "HTTP/1.1 503 Service Unavailable\r\nServer: datagate\r\n"
                   "Content-Length: %zu\r\nConnection: close\r\nRetry-After: 1\r\n\r\n%s",
                   strlen(why), why);
  c->reject = true;
  dg_metrics_counter_add("dg_http_limit_rejections_total", limit, 1);
  if (c->server->tls != NULL) {
    dg__conn_close(c);
    return;
  }
  dg_metrics_counter_add("dg_http_responses_total", "status=\"503\"", 1);
  dg__conn_raw_write(c, resp, (size_t)n);
  dg__conn_finish(c);
}

/* The most a connection holds before it is admitted: its state, a head
 * being parsed (the scratch buffer and the request's arena copies) and its
 * TLS record buffers. */
static size_t unadmitted_charge(const dg_http_server_t *s) {
  size_t n = sizeof(dg__conn_t) + 2 * s->limits.max_header_bytes + 4096;
  return s->tls != NULL ? n + dg__tls_conn_cost() : n;
}

void dg__server_admitted(dg_http_server_t *s, dg__conn_t *c) {
  s->unadmitted -= c->unadmitted;
  c->unadmitted = 0;
}

static void on_connection(uv_stream_t *listener, int status) {
  dg_http_server_t *s = listener->data;
  dg__conn_t *c = NULL;
  if (status != 0 || s->state != DG__SERVER_RUNNING || dg__conn_new(s, &c) != 0)
    return;
  if (uv_accept(listener, (uv_stream_t *)&c->tcp) != 0) {
    dg__conn_close(c);
    return;
  }
  if (s->nconns >= s->limits.max_connections) {
    reject(c, "limit=\"connections\"", "too many connections");
    return;
  }
  size_t charge = unadmitted_charge(s);
  if (s->unadmitted + charge > s->limits.max_unadmitted_bytes) {
    reject(c, "limit=\"unadmitted\"", "too many connections without a signed-in request");
    return;
  }
  s->unadmitted += charge;
  c->unadmitted = charge;
  c->counted = true;
  s->nconns++;
  dg_metrics_gauge_add("dg_http_connections_open", NULL, 1);
  dg__conn_start(c);
}

int dg_http_server_port(const dg_http_server_t *server) {
  return server->port;
}

const char *dg_http_server_host(const dg_http_server_t *server) {
  return server->host;
}

void dg_http_server_set_limits(dg_http_server_t *server, const dg_http_limits_t *limits) {
  server->limits = *limits;
}

unsigned dg_http_server_connections(const dg_http_server_t *server) {
  return server->nconns;
}

static void stop_listening(dg_http_server_t *s) {
  if (!s->listening)
    return;
  s->listening = false;
  uv_close((uv_handle_t *)&s->listener, handle_closed);
}

/* The drain deadline passed (or there was nothing to wait for). */
static void on_drain_timer(uv_timer_t *timer) {
  dg_http_server_t *s = timer->data;
  if (s->conns == NULL) {
    drain_check(s);
    return;
  }
  for (dg__conn_t *c = s->conns; c != NULL; c = c->next)
    dg__conn_close(c);
}

void dg_http_server_drain(dg_http_server_t *server, uint64_t timeout_ms,
                          void (*done)(dg_http_server_t *server, void *data), void *data) {
  if (server->state != DG__SERVER_RUNNING)
    return;
  server->state = DG__SERVER_DRAINING;
  server->drain_pending = true;
  server->drain_done = done;
  server->drain_data = data;
  stop_listening(server);
  dg__conn_t *next = NULL;
  for (dg__conn_t *c = server->conns; c != NULL; c = next) {
    next = c->next;
    if (c->state == DG__CONN_OPEN && c->proto != NULL)
      c->proto->on_server_drain(c);
    else if (c->state == DG__CONN_HANDSHAKE)
      dg__conn_close(c);
  }
  /* Even with nothing to wait for, done runs on a later loop turn. */
  uv_timer_start(&server->drain_timer, on_drain_timer, server->conns ? timeout_ms : 0, 0);
}

void dg_http_server_close(dg_http_server_t *server) {
  if (server == NULL || server->state == DG__SERVER_CLOSING)
    return;
  server->state = DG__SERVER_CLOSING;
  stop_listening(server);
  for (dg__conn_t *c = server->conns; c != NULL; c = c->next)
    dg__conn_close(c);
  uv_close((uv_handle_t *)&server->drain_timer, handle_closed);
}

const char *dg__server_date(dg_http_server_t *s) {
  time_t now = time(NULL);
  if ((uint64_t)now != s->date_sec || s->date[0] == '\0') {
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(s->date, sizeof(s->date), "%a, %d %b %Y %H:%M:%S GMT", &tm);
    s->date_sec = (uint64_t)now;
  }
  return s->date;
}
