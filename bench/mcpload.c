/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* mcpload: the HTTP load client of the Saved Query benchmark
 * (bench/saved_query).
 *
 *   mcpload rate --port P --conns N --seconds S [--warmup W] --token T
 *               (--query-id ID | --get PATH) --expect TEXT
 *       N keep-alive connections. With --query-id each connection is an MCP
 *       client of its own: initialize (keeping its Mcp-Session-Id),
 *       notifications/initialized, then tools/call execute_saved_query
 *       {savedQueryId: ID, inputs: [{key: OrderNumber, value: SO-1001}]}
 *       in a loop, one call at a time. With --get each connection sends
 *       GET PATH (Authorization: Bearer T) in a loop, as the gateway calls
 *       its upstream. Calls answered in the S seconds after W seconds of
 *       warm-up are counted; prints their rate and latency percentiles.
 *   mcpload hold --port P --conns N --token T --query-id ID --rss-pid PID
 *               --upstream-port U --expect TEXT
 *       Opens and initializes N MCP clients, then sends one call on each
 *       while the upstream on port U holds its requests: reads the
 *       resident memory (VmRSS) of PID once the sessions are open and again
 *       once GET /__pending on the upstream says all N calls are held, then
 *       waits for every answer.
 *
 * One thread, one epoll set, non-blocking sockets. Every answer is checked:
 * status 200 (202 for the notification), a Content-Length body that
 * holds TEXT and no "isError":true. The exit status is 1 when any answer
 * was wrong or a connection failed. Results are also printed as one
 * "RESULT key=value..." line for scripts. */
#include <errno.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "loadutil.h"

#define BUF_SIZE 16384
#define OPEN_WINDOW 256 /* connections being opened and initialized at once */
#define MAX_EVENTS 256
#define HIST_US 1000000 /* latency histogram: 1 us buckets up to 1 s */
#define SETTLE_MS 1000
#define TIMEOUT_MS 120000

typedef enum conn_state {
  C_IDLE,        /* not opened yet */
  C_CONNECTING,  /* connect() in progress */
  C_INIT,        /* initialize sent */
  C_INITIALIZED, /* notifications/initialized sent */
  C_READY,       /* between calls */
  C_CALL,        /* a call sent, its answer awaited */
  C_CLOSED
} conn_state_t;

typedef struct conn {
  int fd;
  conn_state_t state;
  uint64_t next_id;
  uint64_t sent_ns;
  char session[128];
  size_t len;
  char buf[BUF_SIZE];
} conn_t;

typedef struct options {
  const char *mode;
  int port;
  unsigned conns;
  double seconds, warmup;
  const char *token;
  const char *query_id;
  const char *get_path;
  const char *expect;
  int rss_pid;
  int upstream_port;
} options_t;

typedef struct client {
  options_t opt;
  int ep;
  conn_t *conns;
  unsigned next_to_open;
  unsigned opening; /* connecting or initializing */
  unsigned ready;   /* initialized, no call out */
  unsigned calling; /* a call out */
  unsigned failed;
  uint64_t bad_answers;
  bool looping;            /* rate mode: each answer sends the next call */
  uint64_t window_from_ns; /* answers in [from, to) are counted */
  uint64_t window_to_ns;
  uint64_t counted;
  uint64_t answers;
  uint32_t *hist;
} client_t;

/* ---- small helpers ------------------------------------------------------ */

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "mcpload: %s\n", what);
  exit(2);
}

static void conn_fail(client_t *cl, conn_t *c, const char *why) {
  if (c->state == C_CLOSED)
    return;
  if (c->state == C_CONNECTING || c->state == C_INIT || c->state == C_INITIALIZED)
    cl->opening--;
  else if (c->state == C_READY)
    cl->ready--;
  else if (c->state == C_CALL)
    cl->calling--;
  cl->failed++;
  if (cl->failed <= 5)
    fprintf(stderr, "mcpload: connection %ld: %s\n", (long)(c - cl->conns), why);
  close(c->fd);
  c->state = C_CLOSED;
}

/* Small requests on a socket whose buffer is empty go out whole; a short
 * write would mean the client itself is overloaded. */
static void send_all(client_t *cl, conn_t *c, const char *data, size_t len) {
  ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
  if (n != (ssize_t)len)
    conn_fail(cl, c, n < 0 ? strerror(errno) : "short write");
}

/* ---- requests ----------------------------------------------------------- */

static void send_post(client_t *cl, conn_t *c, const char *body) {
  char req[2048];
  int n = snprintf(req, sizeof(req),
                   "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\n"
                   "Accept: application/json, text/event-stream\r\n"
                   "MCP-Protocol-Version: 2025-06-18\r\n%s%s%sContent-Length: %zu\r\n\r\n%s",
                   cl->opt.port, cl->opt.token, c->session[0] ? "Mcp-Session-Id: " : "", c->session,
                   c->session[0] ? "\r\n" : "", strlen(body), body);
  if (n < 0 || (size_t)n >= sizeof(req))
    die("a request is too long");
  send_all(cl, c, req, (size_t)n);
}

static void send_initialize(client_t *cl, conn_t *c) {
  c->state = C_INIT;
  send_post(cl, c,
            "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{"
            "\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
            "\"clientInfo\":{\"name\":\"mcpload\",\"version\":\"1\"}}}");
}

static void send_call(client_t *cl, conn_t *c) {
  char body[512];
  if (cl->opt.get_path != NULL) {
    int n = snprintf(body, sizeof(body),
                     "GET %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nAuthorization: Bearer %s\r\n"
                     "Accept: application/json\r\n\r\n",
                     cl->opt.get_path, cl->opt.port, cl->opt.token);
    if (n < 0 || (size_t)n >= sizeof(body))
      die("the GET request is too long");
    c->sent_ns = now_ns();
    send_all(cl, c, body, (size_t)n);
  } else {
    snprintf(body, sizeof(body),
             "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu64 ",\"method\":\"tools/call\",\"params\":{"
             "\"name\":\"execute_saved_query\",\"arguments\":{\"savedQueryId\":\"%s\","
             "\"inputs\":[{\"key\":\"OrderNumber\",\"value\":\"SO-1001\"}]}}}",
             ++c->next_id, cl->opt.query_id);
    c->sent_ns = now_ns();
    send_post(cl, c, body);
  }
  if (c->state == C_CLOSED)
    return;
  c->state = C_CALL;
  cl->ready--;
  cl->calling++;
}

/* ---- answers ------------------------------------------------------------ */

/* The value of header name in head (NUL-terminated), copied to out. */
static bool header_value(const char *head, const char *name, char *out, size_t size) {
  size_t nlen = strlen(name);
  for (const char *p = strstr(head, "\r\n"); p != NULL; p = strstr(p + 2, "\r\n")) {
    if (strncasecmp(p + 2, name, nlen) == 0 && p[2 + nlen] == ':') {
      const char *v = p + 3 + nlen;
      v += strspn(v, " ");
      size_t len = strcspn(v, "\r");
      if (len >= size)
        return false;
      memcpy(out, v, len);
      out[len] = '\0';
      return true;
    }
  }
  return false;
}

static void record(client_t *cl, conn_t *c) {
  uint64_t now = now_ns();
  cl->answers++;
  if (cl->hist == NULL || now < cl->window_from_ns || now >= cl->window_to_ns)
    return;
  uint64_t us = (now - c->sent_ns) / 1000;
  cl->hist[us < HIST_US ? us : HIST_US - 1]++;
  cl->counted++;
}

static void on_call_answer(client_t *cl, conn_t *c, int status, const char *body, size_t len) {
  bool ok = status == 200 && memmem(body, len, cl->opt.expect, strlen(cl->opt.expect)) != NULL &&
            memmem(body, len, "\"isError\":true", 14) == NULL;
  if (!ok) {
    cl->bad_answers++;
    if (cl->bad_answers <= 3)
      fprintf(stderr, "mcpload: unexpected answer %d: %.*s\n", status, (int)(len > 400 ? 400 : len),
              body);
  }
  record(cl, c);
  c->state = C_READY;
  cl->calling--;
  cl->ready++;
  if (cl->looping)
    send_call(cl, c);
}

/* One complete answer in the state the connection is in. */
static void on_answer(client_t *cl, conn_t *c, const char *head, const char *body, size_t len) {
  int status = (int)strtol(head + 9, NULL, 10);
  if (c->state == C_INIT) {
    if (status != 200 || !header_value(head, "Mcp-Session-Id", c->session, sizeof(c->session))) {
      conn_fail(cl, c, "initialize failed");
      return;
    }
    c->state = C_INITIALIZED;
    send_post(cl, c, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
  } else if (c->state == C_INITIALIZED) {
    if (status != 202) {
      conn_fail(cl, c, "notifications/initialized was not accepted");
      return;
    }
    c->state = C_READY;
    cl->opening--;
    cl->ready++;
    if (cl->looping)
      send_call(cl, c);
  } else if (c->state == C_CALL) {
    on_call_answer(cl, c, status, body, len);
  } else {
    conn_fail(cl, c, "an answer nothing asked for");
  }
}

/* Takes every complete answer (Content-Length framing) from the buffer. */
static void parse_answers(client_t *cl, conn_t *c) {
  while (c->state != C_CLOSED) {
    char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
    if (end == NULL)
      return;
    *end = '\0';
    char value[32];
    if (strncmp(c->buf, "HTTP/1.1 ", 9) != 0 ||
        !header_value(c->buf, "Content-Length", value, sizeof(value))) {
      conn_fail(cl, c, "an answer without Content-Length");
      return;
    }
    size_t head = (size_t)(end - c->buf) + 4;
    size_t total = head + strtoul(value, NULL, 10);
    if (c->len < total) {
      *end = '\r';
      return;
    }
    on_answer(cl, c, c->buf, c->buf + head, total - head);
    memmove(c->buf, c->buf + total, c->len - total);
    c->len -= total;
  }
}

static void on_readable(client_t *cl, conn_t *c) {
  for (;;) {
    if (c->len == BUF_SIZE) {
      conn_fail(cl, c, "an answer larger than the client's buffer");
      return;
    }
    ssize_t n = recv(c->fd, c->buf + c->len, BUF_SIZE - c->len, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      conn_fail(cl, c, n == 0 ? "closed by the server" : strerror(errno));
      return;
    }
    if (n < 0)
      return;
    c->len += (size_t)n;
    parse_answers(cl, c);
    if (c->state == C_CLOSED)
      return;
  }
}

/* ---- opening ------------------------------------------------------------ */

static void on_connected(client_t *cl, conn_t *c) {
  int err = lu_connect_result(c->fd);
  if (err != 0) {
    conn_fail(cl, c, strerror(err));
    return;
  }
  struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.ptr = c};
  epoll_ctl(cl->ep, EPOLL_CTL_MOD, c->fd, &ev);
  if (cl->opt.get_path != NULL) {
    c->state = C_READY;
    cl->opening--;
    cl->ready++;
    if (cl->looping)
      send_call(cl, c);
    return;
  }
  send_initialize(cl, c);
}

static void open_one(client_t *cl, conn_t *c) {
  int err;
  c->fd = lu_connect_start(cl->ep, cl->opt.port, c, &err);
  if (c->fd < 0)
    die("socket() failed: raise the open-file limit (ulimit -n)");
  c->state = C_CONNECTING;
  cl->opening++;
  if (err != 0)
    conn_fail(cl, c, strerror(err));
}

static void open_more(client_t *cl) {
  while (cl->next_to_open < cl->opt.conns && cl->opening < OPEN_WINDOW)
    open_one(cl, &cl->conns[cl->next_to_open++]);
}

/* ---- the loop ----------------------------------------------------------- */

static void on_event(client_t *cl, conn_t *c, uint32_t events) {
  if (c->state == C_CONNECTING) {
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
      on_connected(cl, c);
    return;
  }
  if (c->state != C_CLOSED && (events & (EPOLLIN | EPOLLERR | EPOLLHUP)))
    on_readable(cl, c);
}

/* Runs the loop until done(cl) or until deadline_ns; false on timeout. */
static bool run_until(client_t *cl, bool (*done)(const client_t *cl), uint64_t deadline_ns) {
  struct epoll_event events[MAX_EVENTS];
  while (done == NULL || !done(cl)) {
    uint64_t now = now_ns();
    if (now >= deadline_ns)
      return done == NULL;
    int timeout = (int)((deadline_ns - now) / 1000000u) + 1;
    int n = epoll_wait(cl->ep, events, MAX_EVENTS, timeout > 1000 ? 1000 : timeout);
    if (n < 0 && errno != EINTR)
      die("epoll_wait failed");
    for (int i = 0; i < n; i++)
      on_event(cl, events[i].data.ptr, events[i].events);
    open_more(cl);
  }
  return true;
}

static bool all_opened(const client_t *cl) {
  return cl->next_to_open == cl->opt.conns && cl->opening == 0;
}

static bool all_answered(const client_t *cl) {
  return cl->calling == 0;
}

/* ---- the modes ---------------------------------------------------------- */

static uint64_t percentile(const client_t *cl, double p) {
  uint64_t want = (uint64_t)((double)cl->counted * p);
  uint64_t seen = 0;
  for (uint64_t us = 0; us < HIST_US; us++) {
    seen += cl->hist[us];
    if (seen > want)
      return us;
  }
  return HIST_US;
}

static int rate_mode(client_t *cl) {
  cl->hist = calloc(HIST_US, sizeof(*cl->hist));
  if (cl->hist == NULL)
    die("out of memory");
  cl->looping = true;
  uint64_t start = now_ns();
  cl->window_from_ns = start + (uint64_t)(cl->opt.warmup * 1e9);
  cl->window_to_ns = cl->window_from_ns + (uint64_t)(cl->opt.seconds * 1e9);
  run_until(cl, NULL, cl->window_to_ns);
  double rate = (double)cl->counted / cl->opt.seconds;
  printf("%" PRIu64 " calls answered in %.1f s: %.0f calls/s; latency p50 %" PRIu64
         " us, p90 %" PRIu64 " us, p99 %" PRIu64 " us; %" PRIu64 " wrong answers, %u failed "
         "connections\n",
         cl->counted, cl->opt.seconds, rate, percentile(cl, 0.5), percentile(cl, 0.9),
         percentile(cl, 0.99), cl->bad_answers, cl->failed);
  printf("RESULT calls=%" PRIu64 " rate=%.1f p50_us=%" PRIu64 " p90_us=%" PRIu64 " p99_us=%" PRIu64
         " bad=%" PRIu64 " failed=%u\n",
         cl->counted, rate, percentile(cl, 0.5), percentile(cl, 0.9), percentile(cl, 0.99),
         cl->bad_answers, cl->failed);
  return cl->bad_answers == 0 && cl->failed == 0 && cl->counted > 0 ? 0 : 1;
}

/* GET /__pending on the upstream: the number of requests it holds, or -1. */
static long upstream_pending(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct timeval tv = {.tv_sec = 2};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  long n = -1;
  char buf[512];
  static const char req[] = "GET /__pending HTTP/1.1\r\nHost: upstream\r\n\r\n";
  if (fd >= 0 && connect(fd, (struct sockaddr *)&addr, sizeof(addr)) == 0 &&
      send(fd, req, sizeof(req) - 1, MSG_NOSIGNAL) == (ssize_t)(sizeof(req) - 1)) {
    ssize_t got = recv(fd, buf, sizeof(buf) - 1, 0);
    buf[got > 0 ? got : 0] = '\0';
    const char *body = strstr(buf, "\r\n\r\n");
    if (body != NULL)
      n = strtol(body + 4, NULL, 10);
  }
  if (fd >= 0)
    close(fd);
  return n;
}

/* Keeps the loop running (answers may arrive) until the upstream holds
 * want requests; false on timeout. */
static bool wait_pending(client_t *cl, long want, uint64_t deadline_ns) {
  for (;;) {
    long n = upstream_pending(cl->opt.upstream_port);
    if (n >= want)
      return true;
    if (now_ns() >= deadline_ns)
      return false;
    run_until(cl, NULL, now_ns() + 50000000u);
  }
}

static int hold_mode(client_t *cl) {
  uint64_t deadline = now_ns() + (uint64_t)TIMEOUT_MS * 1000000u;
  if (!run_until(cl, all_opened, deadline))
    die("timed out opening the connections");
  run_until(cl, NULL, now_ns() + (uint64_t)SETTLE_MS * 1000000u);
  long before = lu_rss_kib(cl->opt.rss_pid);
  unsigned open = cl->ready;
  for (unsigned i = 0; i < cl->opt.conns; i++) {
    if (cl->conns[i].state == C_READY)
      send_call(cl, &cl->conns[i]);
  }
  bool held = wait_pending(cl, (long)open, deadline);
  long during = lu_rss_kib(cl->opt.rss_pid);
  unsigned in_flight = cl->calling;
  if (!run_until(cl, all_answered, deadline))
    die("timed out waiting for the answers");
  run_until(cl, NULL, now_ns() + (uint64_t)SETTLE_MS * 1000000u);
  long after = lu_rss_kib(cl->opt.rss_pid);
  double per = open > 0 ? (double)(during - before) / open : 0;
  printf("%u sessions open: VmRSS %ld KiB; %u calls held by the upstream: %ld KiB "
         "(+%.2f KiB per call in flight); after the answers: %ld KiB; %" PRIu64 " answers, %" PRIu64
         " wrong, %u failed connections\n",
         open, before, in_flight, during, per, after, cl->answers, cl->bad_answers, cl->failed);
  printf("RESULT sessions=%u in_flight=%u rss_before_kib=%ld rss_during_kib=%ld "
         "rss_after_kib=%ld per_call_kib=%.2f held=%d bad=%" PRIu64 " failed=%u\n",
         open, in_flight, before, during, after, per, held ? 1 : 0, cl->bad_answers, cl->failed);
  return held && cl->bad_answers == 0 && cl->failed == 0 && cl->answers == open ? 0 : 1;
}

/* ---- options ------------------------------------------------------------ */

static void usage(void) {
  fprintf(stderr, "usage: mcpload rate|hold --port P --conns N [--seconds S] [--warmup W]\n"
                  "       --token T (--query-id ID | --get PATH) --expect TEXT\n"
                  "       [--rss-pid PID --upstream-port U]\n");
  exit(2);
}

static void parse_options(int argc, char **argv, options_t *o) {
  if (argc < 2)
    usage();
  o->mode = argv[1];
  o->seconds = 10;
  o->warmup = 1;
  for (int i = 2; i + 1 < argc; i += 2) {
    const char *k = argv[i], *v = argv[i + 1];
    if (strcmp(k, "--port") == 0)
      o->port = (int)strtol(v, NULL, 10);
    else if (strcmp(k, "--conns") == 0)
      o->conns = (unsigned)strtoul(v, NULL, 10);
    else if (strcmp(k, "--seconds") == 0)
      o->seconds = strtod(v, NULL);
    else if (strcmp(k, "--warmup") == 0)
      o->warmup = strtod(v, NULL);
    else if (strcmp(k, "--token") == 0)
      o->token = v;
    else if (strcmp(k, "--query-id") == 0)
      o->query_id = v;
    else if (strcmp(k, "--get") == 0)
      o->get_path = v;
    else if (strcmp(k, "--expect") == 0)
      o->expect = v;
    else if (strcmp(k, "--rss-pid") == 0)
      o->rss_pid = (int)strtol(v, NULL, 10);
    else if (strcmp(k, "--upstream-port") == 0)
      o->upstream_port = (int)strtol(v, NULL, 10);
    else
      usage();
  }
  bool rate = strcmp(o->mode, "rate") == 0;
  bool hold =
      strcmp(o->mode, "hold") == 0 && o->query_id != NULL && o->rss_pid > 0 && o->upstream_port > 0;
  if ((!rate && !hold) || o->port <= 0 || o->conns == 0 || o->token == NULL || o->expect == NULL ||
      (o->query_id == NULL) == (o->get_path == NULL) || o->seconds <= 0)
    usage();
}

int main(int argc, char **argv) {
  client_t cl;
  memset(&cl, 0, sizeof(cl));
  parse_options(argc, argv, &cl.opt);
  lu_raise_nofile(cl.opt.conns);
  cl.conns = calloc(cl.opt.conns, sizeof(*cl.conns));
  cl.ep = epoll_create1(EPOLL_CLOEXEC);
  if (cl.conns == NULL || cl.ep < 0)
    die("out of memory");
  cl.window_to_ns = UINT64_MAX;
  int rc = strcmp(cl.opt.mode, "rate") == 0 ? rate_mode(&cl) : hold_mode(&cl);
  for (unsigned i = 0; i < cl.opt.conns; i++) {
    if (cl.conns[i].state != C_IDLE && cl.conns[i].state != C_CLOSED)
      close(cl.conns[i].fd);
  }
  free(cl.hist);
  free(cl.conns);
  return rc;
}
