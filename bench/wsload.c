/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* wsload: the WebSocket load client of datagate's benchmarks (bench/ws).
 *
 *   wsload idle --port P --conns N [--init] [--token T] --rss-pid PID [--hold S]
 *       Opens N WebSocket connections to /mcp with subprotocol mcp and,
 *       with --init, runs the MCP initialize handshake on each (initialize,
 *       its answer, notifications/initialized), as an idle client holds
 *       them. Prints the resident memory (VmRSS) of process PID before,
 *       after the upgrades, after the handshakes and after closing, and the
 *       growth per connection. --hold keeps the connections open S seconds
 *       after the readings, for a look at the server from outside.
 *   wsload ping --port P --conns N --seconds S [--warmup W] [--init] [--token T]
 *               [--call TOOL]
 *       N connections each send a JSON-RPC ping (with --call, a tools/call
 *       of TOOL without arguments) and wait for its answer, in a loop; after
 *       W seconds of warm-up the round trips of S seconds are counted.
 *       Prints round trips per second.
 *
 * One thread, one epoll set and non-blocking sockets: the client spends
 * little per message so that the figures measure the server. Every answer
 * is checked byte for byte; the exit status is 1 when any was wrong or a
 * connection failed. Results are also printed as one "RESULT key=value..."
 * line for scripts. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
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
#include "wsframe.h"

#define BUF_SIZE 16384     /* per connection: a get_data_models answer is about 5.5 KiB */
#define CONNECT_WINDOW 256 /* connections being opened at once */
#define REQUEST_WINDOW 256 /* initialize requests waiting for answers at once */
#define MAX_EVENTS 256
#define SETTLE_MS 1000 /* pause before a memory reading, so the server is idle */
#define OPEN_TIMEOUT_MS 120000

/* The key of RFC 6455 section 1.3 and the accept value it must produce. */
#define WS_KEY "dGhlIHNhbXBsZSBub25jZQ=="
#define WS_ACCEPT "s3pPLMBiTxaQ9kYGzzhZRbK+xOo="

typedef enum conn_state {
  C_IDLE,       /* not opened yet */
  C_CONNECTING, /* connect() in progress */
  C_UPGRADING,  /* upgrade request sent, waiting for 101 */
  C_OPEN,       /* a WebSocket */
  C_CLOSED
} conn_state_t;

typedef struct conn {
  int fd;
  conn_state_t state;
  uint64_t awaiting; /* id of the request whose answer is awaited; 0 when none */
  uint64_t next_id;
  size_t len; /* bytes in buf */
  unsigned char buf[BUF_SIZE];
} conn_t;

typedef struct options {
  const char *mode;
  int port;
  unsigned conns;
  bool init;
  const char *token;
  int rss_pid;
  double seconds;
  double warmup;
  double hold;      /* idle: seconds to keep the connections open after measuring */
  const char *call; /* ping mode: call this tool (no arguments) instead of ping */
} options_t;

typedef struct client {
  options_t opt;
  int ep;
  conn_t *conns;
  uint32_t rng;
  unsigned next_to_open; /* index of the next connection to open */
  unsigned opening;      /* connecting or upgrading */
  unsigned open;         /* upgraded and not closed */
  unsigned awaiting;     /* requests waiting for their answer */
  unsigned failed;       /* connections that failed or were closed by the server */
  uint64_t answers;      /* answers received and checked */
  uint64_t bad_answers;  /* answers that were not the expected bytes */
  bool pinging;          /* ping mode: each answer sends the next ping */
} client_t;

/* ---- small helpers ------------------------------------------------------ */

static uint64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what) {
  fprintf(stderr, "wsload: %s\n", what);
  exit(2);
}

/* ---- sending ------------------------------------------------------------ */

static void conn_fail(client_t *cl, conn_t *c, const char *why) {
  if (c->state == C_CLOSED)
    return;
  if (c->state == C_CONNECTING || c->state == C_UPGRADING)
    cl->opening--;
  else if (c->state == C_OPEN)
    cl->open--;
  if (c->awaiting != 0)
    cl->awaiting--;
  c->awaiting = 0;
  if (why != NULL) {
    cl->failed++;
    if (cl->failed <= 5)
      fprintf(stderr, "wsload: connection %ld: %s\n", (long)(c - cl->conns), why);
  }
  close(c->fd);
  c->state = C_CLOSED;
}

/* Small messages on a socket with an empty send buffer go out whole; a
 * short write would mean the benchmark itself is overloaded. */
static void send_all(client_t *cl, conn_t *c, const void *data, size_t len) {
  ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
  if (n != (ssize_t)len)
    conn_fail(cl, c, n < 0 ? strerror(errno) : "short write");
}

static void send_frame(client_t *cl, conn_t *c, int opcode, const void *payload, size_t len) {
  unsigned char frame[BUF_SIZE];
  size_t n = wsf_build(frame, sizeof(frame), opcode, payload, len, &cl->rng);
  if (n == 0)
    die("a frame to send is too large");
  send_all(cl, c, frame, n);
}

static void send_text(client_t *cl, conn_t *c, const char *text) {
  send_frame(cl, c, WSF_TEXT, text, strlen(text));
}

static void send_request(client_t *cl, conn_t *c, const char *method, const char *params) {
  char msg[512];
  uint64_t id = ++c->next_id;
  snprintf(msg, sizeof(msg), "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu64 ",\"method\":\"%s\"%s%s}", id,
           method, params != NULL ? ",\"params\":" : "", params != NULL ? params : "");
  c->awaiting = id;
  cl->awaiting++;
  send_text(cl, c, msg);
}

static void send_initialize(client_t *cl, conn_t *c) {
  send_request(cl, c, "initialize",
               "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{},"
               "\"clientInfo\":{\"name\":\"wsload\",\"version\":\"1\"}}");
}

static void send_ping(client_t *cl, conn_t *c) {
  char params[256];
  if (cl->opt.call == NULL) {
    send_request(cl, c, "ping", NULL);
    return;
  }
  snprintf(params, sizeof(params), "{\"name\":\"%s\",\"arguments\":{}}", cl->opt.call);
  send_request(cl, c, "tools/call", params);
}

/* ---- receiving ---------------------------------------------------------- */

/* True when text is the answer to request id: for ping exactly the bytes
 * the specification's empty result gives, otherwise a result for that id
 * (for a tool call, not a tool error). */
static bool answer_ok(const client_t *cl, const char *text, size_t len, uint64_t id) {
  char want[128];
  bool exact = cl->pinging && cl->opt.call == NULL;
  int n = exact ? snprintf(want, sizeof(want),
                           "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu64 ",\"result\":{}}", id)
                : snprintf(want, sizeof(want),
                           "{\"jsonrpc\":\"2.0\",\"id\":%" PRIu64 ",\"result\":", id);
  if (exact)
    return len == (size_t)n && memcmp(text, want, len) == 0;
  static const char tool_error[] = "\"isError\":true";
  return len > (size_t)n && memcmp(text, want, (size_t)n) == 0 &&
         memmem(text, len, tool_error, sizeof(tool_error) - 1) == NULL;
}

static void on_text(client_t *cl, conn_t *c, const char *text, size_t len) {
  if (c->awaiting == 0) {
    cl->bad_answers++; /* nothing was asked */
    return;
  }
  if (!answer_ok(cl, text, len, c->awaiting))
    cl->bad_answers++;
  cl->answers++;
  c->awaiting = 0;
  cl->awaiting--;
  if (cl->pinging)
    send_ping(cl, c);
}

/* Handles one frame; false when the connection ended. */
static bool on_frame(client_t *cl, conn_t *c, const wsf_frame_t *f) {
  switch (f->opcode) {
  case WSF_TEXT:
    if (!f->fin)
      conn_fail(cl, c, "fragmented message (not expected here)");
    else
      on_text(cl, c, (const char *)f->payload, f->len);
    break;
  case WSF_PING:
    send_frame(cl, c, WSF_PONG, f->payload, f->len);
    break;
  case WSF_PONG:
    break;
  case WSF_CLOSE:
    conn_fail(cl, c, "closed by the server");
    break;
  default:
    conn_fail(cl, c, "unexpected frame");
  }
  return c->state == C_OPEN;
}

static void parse_frames(client_t *cl, conn_t *c) {
  size_t off = 0;
  while (c->state == C_OPEN) {
    wsf_frame_t f;
    long n = wsf_parse(c->buf + off, c->len - off, BUF_SIZE, &f);
    if (n == 0)
      break;
    if (n < 0) {
      conn_fail(cl, c, "malformed frame");
      return;
    }
    off += (size_t)n;
    if (!on_frame(cl, c, &f))
      return;
  }
  memmove(c->buf, c->buf + off, c->len - off);
  c->len -= off;
}

static bool header_is(const char *head, const char *line) {
  for (const char *p = head; p != NULL; p = strstr(p, "\r\n")) {
    p += p == head ? 0 : 2;
    if (strncasecmp(p, line, strlen(line)) == 0)
      return true;
  }
  return false;
}

/* The 101 answer: status, accept key and subprotocol checked. */
static void on_upgrade_answer(client_t *cl, conn_t *c) {
  unsigned char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
  if (end == NULL) {
    if (c->len == BUF_SIZE)
      conn_fail(cl, c, "upgrade answer too long");
    return;
  }
  *end = '\0';
  const char *head = (const char *)c->buf;
  if (strncmp(head, "HTTP/1.1 101 ", 13) != 0 ||
      !header_is(head, "Sec-WebSocket-Accept: " WS_ACCEPT) ||
      !header_is(head, "Sec-WebSocket-Protocol: mcp")) {
    fprintf(stderr, "wsload: upgrade refused:\n%s\n", head);
    conn_fail(cl, c, "upgrade refused");
    return;
  }
  size_t used = (size_t)(end + 4 - c->buf);
  memmove(c->buf, c->buf + used, c->len - used);
  c->len -= used;
  c->state = C_OPEN;
  cl->opening--;
  cl->open++;
}

static void on_readable(client_t *cl, conn_t *c) {
  for (;;) {
    ssize_t n = recv(c->fd, c->buf + c->len, BUF_SIZE - c->len, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      conn_fail(cl, c, n == 0 ? "closed by the server" : strerror(errno));
      return;
    }
    if (n < 0)
      return;
    c->len += (size_t)n;
    if (c->state == C_UPGRADING)
      on_upgrade_answer(cl, c);
    if (c->state == C_OPEN)
      parse_frames(cl, c);
    if (c->state == C_CLOSED)
      return;
    if (c->len == BUF_SIZE) {
      conn_fail(cl, c, "message larger than the client's buffer");
      return;
    }
  }
}

/* ---- opening ------------------------------------------------------------ */

static void send_upgrade(client_t *cl, conn_t *c) {
  char req[1024];
  int n = snprintf(req, sizeof(req),
                   "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: " WS_KEY "\r\n"
                   "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: mcp\r\n"
                   "Authorization: Bearer %s\r\n\r\n",
                   cl->opt.port, cl->opt.token);
  if (n < 0 || (size_t)n >= sizeof(req))
    die("the token is too long");
  c->state = C_UPGRADING;
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
  epoll_ctl(cl->ep, EPOLL_CTL_MOD, c->fd, &ev);
  send_all(cl, c, req, (size_t)n);
}

static void on_connected(client_t *cl, conn_t *c) {
  int err = lu_connect_result(c->fd);
  if (err != 0) {
    conn_fail(cl, c, strerror(err));
    return;
  }
  send_upgrade(cl, c);
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
  while (cl->next_to_open < cl->opt.conns && cl->opening < CONNECT_WINDOW)
    open_one(cl, &cl->conns[cl->next_to_open++]);
}

/* ---- the loop ----------------------------------------------------------- */

static void on_event(client_t *cl, conn_t *c, uint32_t events) {
  if (c->state == C_CONNECTING) {
    if (events & (EPOLLOUT | EPOLLERR | EPOLLHUP))
      on_connected(cl, c);
    return;
  }
  if (events & (EPOLLIN | EPOLLERR | EPOLLHUP))
    on_readable(cl, c);
}

/* Runs the loop until done(cl) or deadline_ms (0: none); false on timeout. */
static bool run_until(client_t *cl, bool (*done)(const client_t *cl), uint64_t deadline_ms) {
  struct epoll_event events[MAX_EVENTS];
  while (done == NULL || !done(cl)) {
    uint64_t now = now_ms();
    if (deadline_ms != 0 && now >= deadline_ms)
      return done == NULL;
    int timeout = deadline_ms != 0 ? (int)(deadline_ms - now) : 1000;
    int n = epoll_wait(cl->ep, events, MAX_EVENTS, timeout);
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

static bool none_awaiting(const client_t *cl) {
  return cl->awaiting == 0;
}

static void pause_ms(client_t *cl, uint64_t ms) {
  run_until(cl, NULL, now_ms() + ms);
}

static void open_all(client_t *cl) {
  double t0 = now_s();
  open_more(cl);
  if (!run_until(cl, all_opened, now_ms() + OPEN_TIMEOUT_MS))
    die("timed out opening connections");
  printf("wsload: %u of %u WebSocket connections open (subprotocol mcp) in %.2f s\n", cl->open,
         cl->opt.conns, now_s() - t0);
}

/* initialize on every connection, at most REQUEST_WINDOW waiting at once,
 * then notifications/initialized: what an MCP client does before it idles. */
static void initialize_all(client_t *cl) {
  double t0 = now_s();
  for (unsigned i = 0; i < cl->opt.conns; i++) {
    conn_t *c = &cl->conns[i];
    while (cl->awaiting >= REQUEST_WINDOW)
      run_until(cl, NULL, now_ms() + 1);
    if (c->state == C_OPEN)
      send_initialize(cl, c);
  }
  if (!run_until(cl, none_awaiting, now_ms() + OPEN_TIMEOUT_MS))
    die("timed out waiting for initialize answers");
  for (unsigned i = 0; i < cl->opt.conns; i++) {
    if (cl->conns[i].state == C_OPEN)
      send_text(cl, &cl->conns[i],
                "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}");
  }
  printf("wsload: initialize answered on %" PRIu64 " connections in %.2f s\n", cl->answers,
         now_s() - t0);
}

static void close_all(client_t *cl) {
  for (unsigned i = 0; i < cl->opt.conns; i++) {
    conn_t *c = &cl->conns[i];
    if (c->state != C_CLOSED && c->state != C_IDLE)
      conn_fail(cl, c, NULL);
  }
}

/* ---- the two modes ------------------------------------------------------ */

static double per_conn(long after, long before, unsigned n) {
  return n > 0 ? (double)(after - before) / n : 0;
}

static int run_idle(client_t *cl) {
  int pid = cl->opt.rss_pid;
  long before = lu_rss_kib(pid);
  if (before < 0)
    die("cannot read VmRSS of --rss-pid");
  open_all(cl);
  pause_ms(cl, SETTLE_MS);
  long upgraded = lu_rss_kib(pid);
  long initialized = upgraded;
  if (cl->opt.init) {
    initialize_all(cl);
    pause_ms(cl, SETTLE_MS);
    initialized = lu_rss_kib(pid);
  }
  unsigned held = cl->open;
  if (cl->opt.hold > 0) {
    printf("wsload: holding %u connections for %.0f s\n", held, cl->opt.hold);
    fflush(stdout);
    pause_ms(cl, (uint64_t)(cl->opt.hold * 1000));
  }
  close_all(cl);
  usleep(SETTLE_MS * 1000);
  long closed = lu_rss_kib(pid);
  printf("wsload: server VmRSS %ld KiB before, %ld KiB with %u upgraded connections "
         "(%+.2f KiB each)",
         before, upgraded, held, per_conn(upgraded, before, held));
  if (cl->opt.init)
    printf(", %ld KiB once each was initialized (%+.2f KiB each)", initialized,
           per_conn(initialized, before, held));
  printf(", %ld KiB after they closed\n", closed);
  printf("RESULT mode=idle conns=%u rss_before_kib=%ld rss_upgraded_kib=%ld "
         "rss_initialized_kib=%ld rss_closed_kib=%ld per_conn_kib=%.2f failed=%u bad=%" PRIu64 "\n",
         held, before, upgraded, initialized, closed, per_conn(initialized, before, held),
         cl->failed, cl->bad_answers);
  return cl->failed == 0 && cl->bad_answers == 0 && held == cl->opt.conns ? 0 : 1;
}

static void ping_all(client_t *cl) {
  cl->pinging = true;
  for (unsigned i = 0; i < cl->opt.conns; i++) {
    if (cl->conns[i].state == C_OPEN)
      send_ping(cl, &cl->conns[i]);
  }
}

static int run_ping(client_t *cl) {
  open_all(cl);
  if (cl->opt.init)
    initialize_all(cl);
  ping_all(cl);
  pause_ms(cl, (uint64_t)(cl->opt.warmup * 1000));
  uint64_t start_answers = cl->answers;
  double t0 = now_s();
  pause_ms(cl, (uint64_t)(cl->opt.seconds * 1000));
  double elapsed = now_s() - t0;
  uint64_t trips = cl->answers - start_answers;
  cl->pinging = false;
  run_until(cl, none_awaiting, now_ms() + 5000);
  close_all(cl);
  double rate = trips / elapsed;
  printf("wsload: %" PRIu64 " ping round trips in %.2f s over %u connections: %.0f per second\n",
         trips, elapsed, cl->opt.conns, rate);
  printf("RESULT mode=ping conns=%u trips=%" PRIu64 " seconds=%.3f rate=%.1f failed=%u bad=%" PRIu64
         "\n",
         cl->opt.conns, trips, elapsed, rate, cl->failed, cl->bad_answers);
  return cl->failed == 0 && cl->bad_answers == 0 ? 0 : 1;
}

/* ---- command line ------------------------------------------------------- */

static void usage(void) {
  fprintf(stderr, "usage: wsload idle --port P --conns N [--init] [--token T] --rss-pid PID "
                  "[--hold S]\n"
                  "       wsload ping --port P --conns N --seconds S [--warmup W] [--init] "
                  "[--token T] [--call TOOL]\n");
  exit(2);
}

static long number(const char *s, long min, long max) {
  char *end = NULL;
  errno = 0;
  long v = s != NULL ? strtol(s, &end, 10) : 0;
  if (s == NULL || errno != 0 || end == s || *end != '\0' || v < min || v > max)
    usage();
  return v;
}

static void parse_args(int argc, char **argv, options_t *o) {
  *o = (options_t){.conns = 1, .token = "", .seconds = 5, .warmup = 1};
  if (argc < 2)
    usage();
  o->mode = argv[1];
  for (int i = 2; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--init") == 0) {
      o->init = true;
      continue;
    }
    if (strcmp(a, "--port") == 0)
      o->port = (int)number(v, 1, 65535);
    else if (strcmp(a, "--conns") == 0)
      o->conns = (unsigned)number(v, 1, 1000000);
    else if (strcmp(a, "--token") == 0 && v != NULL)
      o->token = v;
    else if (strcmp(a, "--rss-pid") == 0)
      o->rss_pid = (int)number(v, 1, 1L << 30);
    else if (strcmp(a, "--seconds") == 0)
      o->seconds = (double)number(v, 1, 3600);
    else if (strcmp(a, "--warmup") == 0)
      o->warmup = (double)number(v, 0, 3600);
    else if (strcmp(a, "--hold") == 0)
      o->hold = (double)number(v, 0, 86400);
    else if (strcmp(a, "--call") == 0 && v != NULL && strlen(v) < 128)
      o->call = v;
    else
      usage();
    i++;
  }
  if (o->port == 0)
    usage();
}

int main(int argc, char **argv) {
  client_t cl = {.rng = 2463534242u};
  parse_args(argc, argv, &cl.opt);
  bool idle = strcmp(cl.opt.mode, "idle") == 0;
  if (!idle && strcmp(cl.opt.mode, "ping") != 0)
    usage();
  if (idle && cl.opt.rss_pid == 0)
    usage();
  lu_raise_nofile(cl.opt.conns);
  cl.conns = calloc(cl.opt.conns, sizeof(conn_t));
  cl.ep = epoll_create1(EPOLL_CLOEXEC);
  if (cl.conns == NULL || cl.ep < 0)
    die("out of memory");
  int rc = idle ? run_idle(&cl) : run_ping(&cl);
  free(cl.conns);
  close(cl.ep);
  return rc;
}
