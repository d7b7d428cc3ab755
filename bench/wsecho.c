/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* wsecho: the reference server of the WebSocket ping benchmark (bench/ws).
 *
 *   wsecho [--port P]      (0 or none: a free port, printed on stdout)
 *
 * The least a server can do for an MCP client over WebSocket: it accepts
 * the upgrade to /mcp with subprotocol mcp, answers initialize with a
 * fixed result and ping with exactly the bytes datagate sends
 * ({"jsonrpc":"2.0","id":<id>,"result":{}}), one frame per answer, and
 * ignores notifications. No JSON parser, no sessions, no authentication:
 * the ping benchmark divides datagate's rate by this server's, measured
 * with the same client in the same run. One thread, epoll, one read and
 * one write per message. */
#include <errno.h>
#include <fcntl.h>
#include <mbedtls/base64.h>
#include <mbedtls/sha1.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "wsframe.h"

#define BUF_SIZE 4096
#define MAX_EVENTS 256
#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

typedef struct peer {
  int fd;
  bool open; /* upgraded */
  size_t len;
  unsigned char buf[BUF_SIZE];
} peer_t;

static void peer_close(peer_t *p) {
  close(p->fd);
  free(p);
}

static bool send_all(peer_t *p, const void *data, size_t len) {
  return send(p->fd, data, len, MSG_NOSIGNAL) == (ssize_t)len;
}

static bool send_text(peer_t *p, const char *text, size_t len) {
  unsigned char frame[BUF_SIZE];
  size_t n = wsf_build(frame, sizeof(frame), WSF_TEXT, text, len, NULL);
  return n > 0 && send_all(p, frame, n);
}

/* The value of the request id: the bytes after "id": up to , or }. */
static bool find_id(const char *msg, size_t len, const char **id, size_t *idlen) {
  const char *p = memmem(msg, len, "\"id\":", 5);
  if (p == NULL)
    return false;
  p += 5;
  size_t n = strcspn(p, ",}");
  if (p + n > msg + len || n == 0)
    return false;
  *id = p;
  *idlen = n;
  return true;
}

static bool answer(peer_t *p, const unsigned char *payload, size_t len) {
  char msg[BUF_SIZE];
  const char *id;
  size_t idlen;
  if (len >= sizeof(msg))
    return false;
  memcpy(msg, payload, len);
  msg[len] = '\0';
  if (!find_id(msg, len, &id, &idlen))
    return true; /* a notification */
  char out[512];
  const char *result = strstr(msg, "\"method\":\"initialize\"") != NULL
                           ? "{\"protocolVersion\":\"2025-06-18\",\"capabilities\":{\"tools\":{}},"
                             "\"serverInfo\":{\"name\":\"wsecho\",\"version\":\"1\"}}"
                           : "{}";
  int n = snprintf(out, sizeof(out), "{\"jsonrpc\":\"2.0\",\"id\":%.*s,\"result\":%s}", (int)idlen,
                   id, result);
  return n > 0 && (size_t)n < sizeof(out) && send_text(p, out, (size_t)n);
}

/* Handles the frames in the buffer; false when the peer is to be closed. */
static bool on_frames(peer_t *p) {
  size_t off = 0;
  for (;;) {
    wsf_frame_t f;
    long n = wsf_parse(p->buf + off, p->len - off, BUF_SIZE, &f);
    if (n < 0)
      return false;
    if (n == 0)
      break;
    bool ok = true;
    if (f.opcode == WSF_TEXT)
      ok = answer(p, f.payload, f.len);
    else if (f.opcode == WSF_PING)
      ok = send_all(p, (unsigned char[]){0x8a, 0}, 2);
    else if (f.opcode == WSF_CLOSE)
      ok = false;
    if (!ok)
      return false;
    off += (size_t)n;
  }
  memmove(p->buf, p->buf + off, p->len - off);
  p->len -= off;
  return true;
}

/* Sec-WebSocket-Accept for the request's key (RFC 6455 section 4.2.2). */
static bool accept_key(const char *head, char out[32]) {
  const char *k = strcasestr(head, "\r\nSec-WebSocket-Key:");
  if (k == NULL)
    return false;
  k += strlen("\r\nSec-WebSocket-Key:");
  k += strspn(k, " ");
  size_t klen = strcspn(k, "\r\n ");
  char text[128];
  int n = snprintf(text, sizeof(text), "%.*s%s", (int)klen, k, WS_GUID);
  unsigned char digest[20];
  size_t olen = 0;
  if (n < 0 || (size_t)n >= sizeof(text) ||
      mbedtls_sha1_ret((const unsigned char *)text, (size_t)n, digest) != 0)
    return false;
  return mbedtls_base64_encode((unsigned char *)out, 32, &olen, digest, sizeof(digest)) == 0;
}

static bool on_upgrade(peer_t *p) {
  unsigned char *end = memmem(p->buf, p->len, "\r\n\r\n", 4);
  if (end == NULL)
    return p->len < BUF_SIZE;
  end[2] = '\0';
  char key[32];
  if (!accept_key((const char *)p->buf, key))
    return false;
  char resp[256];
  int n = snprintf(resp, sizeof(resp),
                   "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Accept: %s\r\n"
                   "Sec-WebSocket-Protocol: mcp\r\n\r\n",
                   key);
  if (n < 0 || !send_all(p, resp, (size_t)n))
    return false;
  size_t used = (size_t)(end + 4 - p->buf);
  memmove(p->buf, p->buf + used, p->len - used);
  p->len -= used;
  p->open = true;
  return true;
}

/* Reads what is there; false when the peer is to be closed. */
static bool on_readable(peer_t *p) {
  for (;;) {
    ssize_t n = recv(p->fd, p->buf + p->len, BUF_SIZE - p->len, 0);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
      return false;
    if (n < 0)
      return true;
    p->len += (size_t)n;
    if (!p->open && !on_upgrade(p))
      return false;
    if (p->open && !on_frames(p))
      return false;
    if (p->len == BUF_SIZE)
      return false;
  }
}

static void on_accept(int ep, int lfd) {
  for (;;) {
    int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0)
      return;
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    peer_t *p = calloc(1, sizeof(*p));
    if (p == NULL) {
      close(fd);
      continue;
    }
    p->fd = fd;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = p};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
  }
}

static int listen_on(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof(addr);
  if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) != 0 || listen(fd, 4096) != 0 ||
      getsockname(fd, (struct sockaddr *)&addr, &len) != 0) {
    perror("wsecho: listen");
    exit(2);
  }
  printf("wsecho: listening port %d pid %d\n", ntohs(addr.sin_port), (int)getpid());
  fflush(stdout);
  return fd;
}

int main(int argc, char **argv) {
  int port = 0;
  if (argc == 3 && strcmp(argv[1], "--port") == 0)
    port = (int)strtol(argv[2], NULL, 10);
  else if (argc != 1) {
    fprintf(stderr, "usage: wsecho [--port P]\n");
    return 2;
  }
  signal(SIGPIPE, SIG_IGN);
  int lfd = listen_on(port);
  int ep = epoll_create1(EPOLL_CLOEXEC);
  static int listener_tag;
  struct epoll_event lev = {.events = EPOLLIN, .data.ptr = &listener_tag};
  epoll_ctl(ep, EPOLL_CTL_ADD, lfd, &lev);
  struct epoll_event events[MAX_EVENTS];
  for (;;) {
    int n = epoll_wait(ep, events, MAX_EVENTS, -1);
    for (int i = 0; i < n; i++) {
      if (events[i].data.ptr == &listener_tag) {
        on_accept(ep, lfd);
        continue;
      }
      peer_t *p = events[i].data.ptr;
      if (!on_readable(p))
        peer_close(p);
    }
  }
}
