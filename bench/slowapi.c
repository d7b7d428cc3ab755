/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* slowapi: the upstream of the Saved Query benchmark (bench/saved_query).
 *
 *   slowapi [--port P] [--delay-ms D]
 *
 * An HTTP/1.1 server on 127.0.0.1 that answers every request, after D
 * milliseconds (default 20), with the same small JSON order, over
 * keep-alive connections. GET /__pending answers at once with the number of
 * requests being held, so that a benchmark can tell when its calls have all
 * arrived. Prints "slowapi: listening port N" once it listens.
 *
 * One thread, one epoll set, non-blocking sockets and a timerfd: every
 * request waits the same delay, so the held requests form a FIFO queue and
 * one timer armed for the oldest one is enough. The delay is measured from
 * the end of the request to the write of its answer, with the timer's
 * nanosecond precision, and the server spends a few microseconds per
 * request so that it never limits the throughput it serves. */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#define BUF_SIZE 8192
#define MAX_EVENTS 256
#define MAX_CONNS 65536
#define QUEUE_SIZE (1u << 17) /* held requests; more is an error */

static const char body[] =
    "{\"order\":{\"id\":\"7a1e0c9b-5b2d-4c8e-8f10-000000001001\",\"number\":\"SO-1001\","
    "\"customer\":\"Globex\",\"status\":\"Shipped\",\"placedAt\":\"2025-03-02T09:30:00Z\","
    "\"dueDate\":\"2025-04-02\",\"total\":{\"amount\":1012.5,\"currency\":\"EUR\"},"
    "\"itemCount\":2}}";

typedef struct conn {
  int fd;
  uint32_t gen;  /* bumped when the descriptor is closed, so stale entries are skipped */
  unsigned held; /* requests of this connection waiting for their answer */
  size_t len;    /* bytes in buf */
  char buf[BUF_SIZE];
} conn_t;

typedef struct held {
  int fd;
  uint32_t gen;
  uint64_t due_ns;
} held_t;

typedef struct server {
  int ep, lfd, tfd;
  uint64_t delay_ns;
  conn_t *conns[MAX_CONNS];
  held_t queue[QUEUE_SIZE];
  unsigned head, count; /* the FIFO of held requests */
  unsigned pending;     /* held requests whose connection is still open */
  char response[512];
  size_t response_len;
} server_t;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void die(const char *what) {
  fprintf(stderr, "slowapi: %s: %s\n", what, strerror(errno));
  exit(2);
}

static void raise_nofile(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
}

static void conn_close(server_t *s, conn_t *c) {
  epoll_ctl(s->ep, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  s->pending -= c->held;
  c->held = 0;
  c->fd = -1;
  c->gen++;
  c->len = 0;
}

/* Small answers on a socket whose buffer is empty go out whole; the
 * clients read each answer before they send again. */
static void send_all(server_t *s, conn_t *c, const char *data, size_t len) {
  ssize_t n = send(c->fd, data, len, MSG_NOSIGNAL);
  if (n != (ssize_t)len)
    conn_close(s, c);
}

static void arm_timer(server_t *s) {
  struct itimerspec its;
  memset(&its, 0, sizeof(its));
  if (s->count > 0) {
    uint64_t due = s->queue[s->head].due_ns;
    its.it_value.tv_sec = (time_t)(due / 1000000000u);
    its.it_value.tv_nsec = (long)(due % 1000000000u);
  }
  timerfd_settime(s->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void hold(server_t *s, conn_t *c) {
  if (s->count == QUEUE_SIZE) {
    fprintf(stderr, "slowapi: more than %u requests held\n", QUEUE_SIZE);
    exit(2);
  }
  held_t *h = &s->queue[(s->head + s->count) % QUEUE_SIZE];
  h->fd = c->fd;
  h->gen = c->gen;
  h->due_ns = now_ns() + s->delay_ns;
  s->count++;
  s->pending++;
  c->held++;
  if (s->count == 1)
    arm_timer(s);
}

/* Answers every held request whose time has come. */
static void release_due(server_t *s) {
  uint64_t now = now_ns();
  while (s->count > 0 && s->queue[s->head].due_ns <= now) {
    held_t h = s->queue[s->head];
    s->head = (s->head + 1) % QUEUE_SIZE;
    s->count--;
    conn_t *c = s->conns[h.fd];
    if (c == NULL || c->fd != h.fd || c->gen != h.gen || c->held == 0)
      continue;
    c->held--;
    s->pending--;
    send_all(s, c, s->response, s->response_len);
  }
  arm_timer(s);
}

static void answer_pending(server_t *s, conn_t *c) {
  char text[160];
  char digits[16];
  int n = snprintf(digits, sizeof(digits), "%u", s->pending);
  int len = snprintf(text, sizeof(text),
                     "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: %d\r\n\r\n%s",
                     n, digits);
  send_all(s, c, text, (size_t)len);
}

/* Bytes of the request at the start of buf (headers and Content-Length
 * body), or 0 when it is not complete yet. */
static size_t request_size(const conn_t *c) {
  const char *end = memmem(c->buf, c->len, "\r\n\r\n", 4);
  if (end == NULL)
    return 0;
  size_t head = (size_t)(end - c->buf) + 4;
  size_t body_len = 0;
  const char *cl = memmem(c->buf, head, "\r\nContent-Length:", 17);
  if (cl == NULL)
    cl = memmem(c->buf, head, "\r\ncontent-length:", 17);
  if (cl != NULL)
    body_len = strtoul(cl + 17, NULL, 10);
  return c->len >= head + body_len ? head + body_len : 0;
}

/* Holds (or answers) each complete request in the buffer. */
static void take_requests(server_t *s, conn_t *c) {
  for (;;) {
    size_t size = request_size(c);
    if (size == 0)
      return;
    if (strncmp(c->buf, "GET /__pending ", 15) == 0)
      answer_pending(s, c);
    else
      hold(s, c);
    if (c->fd < 0)
      return;
    memmove(c->buf, c->buf + size, c->len - size);
    c->len -= size;
  }
}

static void on_readable(server_t *s, conn_t *c) {
  for (;;) {
    if (c->len == BUF_SIZE) {
      conn_close(s, c); /* a request this large is not one of ours */
      return;
    }
    ssize_t n = recv(c->fd, c->buf + c->len, BUF_SIZE - c->len, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
      conn_close(s, c);
      return;
    }
    if (n < 0)
      return;
    c->len += (size_t)n;
    take_requests(s, c);
    if (c->fd < 0)
      return;
  }
}

static void on_accept(server_t *s) {
  for (;;) {
    int fd = accept4(s->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return;
    if (fd >= MAX_CONNS) {
      close(fd);
      continue;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    conn_t *c = s->conns[fd];
    if (c == NULL) {
      c = calloc(1, sizeof(*c));
      if (c == NULL)
        die("out of memory");
      s->conns[fd] = c;
    }
    c->fd = fd;
    c->len = 0;
    c->held = 0;
    struct epoll_event ev = {.events = EPOLLIN | EPOLLET, .data.fd = fd};
    epoll_ctl(s->ep, EPOLL_CTL_ADD, fd, &ev);
  }
}

static int listen_on(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(fd, 4096) != 0)
    die("cannot listen");
  socklen_t len = sizeof(addr);
  getsockname(fd, (struct sockaddr *)&addr, &len);
  printf("slowapi: listening port %d\n", ntohs(addr.sin_port));
  fflush(stdout);
  return fd;
}

static void serve(server_t *s) {
  struct epoll_event events[MAX_EVENTS];
  for (;;) {
    int n = epoll_wait(s->ep, events, MAX_EVENTS, -1);
    for (int i = 0; i < n; i++) {
      int fd = events[i].data.fd;
      if (fd == s->lfd) {
        on_accept(s);
      } else if (fd == s->tfd) {
        uint64_t expirations;
        if (read(s->tfd, &expirations, sizeof(expirations)) < 0 && errno != EAGAIN)
          die("timerfd");
        release_due(s);
      } else if (s->conns[fd] != NULL && s->conns[fd]->fd == fd) {
        on_readable(s, s->conns[fd]);
      }
    }
  }
}

int main(int argc, char **argv) {
  int port = 0;
  long delay_ms = 20;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--port") == 0)
      port = (int)strtol(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--delay-ms") == 0)
      delay_ms = strtol(argv[i + 1], NULL, 10);
    else {
      fprintf(stderr, "usage: slowapi [--port P] [--delay-ms D]\n");
      return 2;
    }
  }
  raise_nofile();
  server_t *s = calloc(1, sizeof(*s));
  if (s == NULL)
    die("out of memory");
  s->delay_ns = (uint64_t)delay_ms * 1000000u;
  int blen = (int)strlen(body);
  int rlen = snprintf(s->response, sizeof(s->response),
                      "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                      "Content-Length: %d\r\n\r\n%s",
                      blen, body);
  s->response_len = (size_t)rlen;
  s->ep = epoll_create1(EPOLL_CLOEXEC);
  s->lfd = listen_on(port);
  s->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (s->ep < 0 || s->tfd < 0)
    die("epoll or timerfd");
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = s->lfd};
  epoll_ctl(s->ep, EPOLL_CTL_ADD, s->lfd, &ev);
  ev.data.fd = s->tfd;
  epoll_ctl(s->ep, EPOLL_CTL_ADD, s->tfd, &ev);
  serve(s);
  return 0;
}
