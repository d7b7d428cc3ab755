/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* WebSocket connections: handshake, echo, fragments, control frames,
 * protocol errors with their close codes, keep-alive pings, the close
 * handshake from either side and write limits, over real sockets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "net/internal.h"
#include "net/net_test.h"

typedef struct state {
  atomic_int opened;
  atomic_int closed;
  atomic_int close_code;
  atomic_int messages;
  atomic_int e2big;
  atomic_int drain_done;
  atomic_size_t max_pending;
  atomic_size_t memory;
  atomic_int measured;
  atomic_int ws_conns;
} state_t;

static state_t st;

/* ---- the server side -------------------------------------------------- */

static void on_message(dg_ws_t *ws, const char *data, size_t len, void *user) {
  st.messages++;
  if (len == 8 && memcmp(data, "close-me", 8) == 0) {
    dg_ws_close(ws, 1000, "bye");
    return;
  }
  if (len == 5 && memcmp(data, "flood", 5) == 0) {
    static char big[32 * 1024];
    memset(big, 'y', sizeof(big));
    for (int i = 0; i < 1000; i++) {
      if (dg_ws_send_text(ws, big, sizeof(big)) == DG_E2BIG) {
        st.e2big++;
        break;
      }
    }
    st.max_pending = dg_ws_pending(ws);
    return;
  }
  dg_ws_send_text(ws, data, len);
}

static void on_close(dg_ws_t *ws, int code, void *user) {
  st.closed++;
  st.close_code = code;
}

static void handler(dg_http_request_t *req) {
  static const dg_ws_callbacks_t cb = {on_message, on_close, NULL};
  if (strcmp(dg_http_request_path(req), "/ws") == 0) {
    if (dg_ws_accept(req, "mcp", &cb, NULL) != NULL)
      st.opened++;
    return;
  }
  dg_http_respond(req, 200, NULL, 0, "plain", 5);
}

/* ---- the client side -------------------------------------------------- */

static const char *const upgrade_request = "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\n"
                                           "Connection: keep-alive, Upgrade\r\n"
                                           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                                           "Sec-WebSocket-Protocol: chat, mcp\r\n"
                                           "Sec-WebSocket-Version: 13\r\n\r\n";

static size_t frame(unsigned char *out, bool fin, int opcode, const void *payload, size_t len,
                    bool masked) {
  static const unsigned char key[4] = {0x12, 0x34, 0x56, 0x78};
  size_t n = 0;
  out[n++] = (unsigned char)((fin ? 0x80 : 0) | opcode);
  unsigned char m = masked ? 0x80 : 0;
  if (len < 126) {
    out[n++] = (unsigned char)(m | len);
  } else if (len <= 0xffff) {
    out[n++] = m | 126;
    out[n++] = (unsigned char)(len >> 8);
    out[n++] = (unsigned char)len;
  } else {
    out[n++] = m | 127;
    for (int i = 7; i >= 0; i--)
      out[n++] = (unsigned char)((uint64_t)len >> (8 * i));
  }
  if (masked) {
    memcpy(out + n, key, 4);
    n += 4;
  }
  for (size_t i = 0; i < len; i++)
    out[n + i] = ((const unsigned char *)payload)[i] ^ (masked ? key[i & 3] : 0);
  return n + len;
}

static int send_frame(client_t *cl, bool fin, int opcode, const void *payload, size_t len,
                      bool masked) {
  unsigned char *buf = malloc(len + 14);
  size_t n = frame(buf, fin, opcode, payload, len, masked);
  int rc = client_send_n(cl, buf, n);
  free(buf);
  return rc;
}

typedef struct ws_frame {
  int opcode;
  bool fin;
  size_t len;
  unsigned char payload[1 << 15];
} ws_frame_t;

static int need(client_t *cl, size_t n) {
  while (cl->len < n) {
    if (client_fill(cl) <= 0)
      return -1;
  }
  return 0;
}

/* Reads one server frame (never masked); returns its opcode or -1. */
static int read_frame(client_t *cl, ws_frame_t *f) {
  if (need(cl, 2) != 0)
    return -1;
  unsigned char *b = (unsigned char *)cl->buf;
  f->fin = (b[0] & 0x80) != 0;
  f->opcode = b[0] & 0x0f;
  if (b[1] & 0x80)
    return -1;
  size_t len = b[1] & 0x7f, hl = 2;
  if (len == 126) {
    if (need(cl, 4) != 0)
      return -1;
    len = ((size_t)b[2] << 8) | b[3];
    hl = 4;
  } else if (len == 127) {
    if (need(cl, 10) != 0)
      return -1;
    len = 0;
    for (int i = 2; i < 10; i++)
      len = (len << 8) | b[i];
    hl = 10;
  }
  if (len > sizeof(f->payload) || need(cl, hl + len) != 0)
    return -1;
  f->len = len;
  memcpy(f->payload, cl->buf + hl, len);
  client_consume(cl, hl + len);
  return f->opcode;
}

static int close_code_of(const ws_frame_t *f) {
  return f->len >= 2 ? (f->payload[0] << 8) | f->payload[1] : 1005;
}

/* ---- fixtures --------------------------------------------------------- */

typedef struct test_ctx {
  fixture_t f;
  dg_http_server_config_t cfg;
  client_t cl;
  response_t r;
  ws_frame_t fr;
} test_ctx_t;

static int setup(void **state) {
  test_ctx_t *t = calloc(1, sizeof(*t));
  memset(&st, 0, sizeof(st));
  dg_http_limits_default(&t->cfg.limits);
  t->cfg.limits.ws_ping_interval_ms = 0;
  t->cfg.handler = handler;
  t->cl.fd = -1;
  *state = t;
  return 0;
}

static int teardown(void **state) {
  test_ctx_t *t = *state;
  client_close(&t->cl);
  if (t->f.server != NULL)
    assert_int_equal(fixture_stop(&t->f), 0);
  free(t);
  return 0;
}

/* Waits for the server's loop to count up to want; the limit only keeps a
 * broken test from hanging, so it is far beyond any expected wait. */
static void wait_for(atomic_int *v, int want) {
  for (int i = 0; i < 1000 && *v < want; i++)
    sleep_ms(10);
}

/* Starts the server, connects and completes the handshake. */
static void open_ws(test_ctx_t *t) {
  assert_int_equal(fixture_start(&t->f, &t->cfg), 0);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  client_send(&t->cl, upgrade_request);
  size_t head_len = 0;
  assert_int_equal(read_head(&t->cl, &t->r, &head_len), 0);
  assert_int_equal(t->r.status, 101);
}

/* Expects a close frame with code, then the end of the TCP connection,
 * then exactly one on_close with code. */
static void expect_closed_with(test_ctx_t *t, int code) {
  assert_int_equal(read_frame(&t->cl, &t->fr), 8);
  assert_int_equal(close_code_of(&t->fr), code);
  assert_true(client_wait_closed(&t->cl, 10000));
  client_close(&t->cl); /* ends the server's linger at once */
  wait_for(&st.closed, 1);
  assert_int_equal(st.closed, 1);
  assert_int_equal(st.close_code, code);
}

/* ---- tests ------------------------------------------------------------ */

static void test_handshake(void **state) {
  test_ctx_t *t = *state;
  char v[64];
  open_ws(t);
  assert_string_equal(response_header(&t->r, "Sec-WebSocket-Accept", v, sizeof(v)),
                      "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  assert_string_equal(response_header(&t->r, "Sec-WebSocket-Protocol", v, sizeof(v)), "mcp");
  assert_string_equal(response_header(&t->r, "Upgrade", v, sizeof(v)), "websocket");
  assert_string_equal(response_header(&t->r, "Connection", v, sizeof(v)), "Upgrade");
  /* Without an offered subprotocol none is echoed. */
  client_t *cl = calloc(1, sizeof(*cl));
  assert_int_equal(client_connect(cl, t->f.port), 0);
  client_send(cl,
              "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: WebSocket\r\nConnection: upgrade\r\n"
              "Sec-WebSocket-Key: AQIDBAUGBwgJCgsMDQ4PEA==\r\nSec-WebSocket-Version: 13\r\n\r\n");
  size_t hl = 0;
  assert_int_equal(read_head(cl, &t->r, &hl), 0);
  assert_int_equal(t->r.status, 101);
  assert_null(response_header(&t->r, "Sec-WebSocket-Protocol", v, sizeof(v)));
  client_close(cl);
  free(cl);
}

static void test_not_upgrade(void **state) {
  test_ctx_t *t = *state;
  assert_int_equal(fixture_start(&t->f, &t->cfg), 0);
  assert_int_equal(http_once(t->f.port, "GET /ws HTTP/1.1\r\nHost: x\r\n\r\n", &t->r), 400);
  assert_int_equal(
      http_once(t->f.port,
                "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                "Sec-WebSocket-Version: 8\r\n\r\n",
                &t->r),
      426);
  assert_int_equal(
      http_once(t->f.port,
                "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: short\r\nSec-WebSocket-Version: 13\r\n\r\n",
                &t->r),
      400);
  assert_int_equal(
      http_once(t->f.port,
                "POST /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                "Sec-WebSocket-Version: 13\r\nContent-Length: 0\r\n\r\n",
                &t->r),
      400);
  assert_int_equal(st.opened, 0);
}

static void test_echo(void **state) {
  test_ctx_t *t = *state;
  open_ws(t);
  for (int i = 0; i < 3; i++) {
    send_frame(&t->cl, true, 1, "hello", 5, true);
    assert_int_equal(read_frame(&t->cl, &t->fr), 1);
    assert_true(t->fr.fin);
    assert_int_equal(t->fr.len, 5);
    assert_memory_equal(t->fr.payload, "hello", 5);
  }
  /* A 20000-byte message takes the 16-bit length form both ways. */
  char *big = malloc(20000);
  memset(big, 'z', 20000);
  send_frame(&t->cl, true, 1, big, 20000, true);
  assert_int_equal(read_frame(&t->cl, &t->fr), 1);
  assert_int_equal(t->fr.len, 20000);
  free(big);
  assert_int_equal(st.messages, 4);
}

static void test_fragments_and_ping(void **state) {
  test_ctx_t *t = *state;
  open_ws(t);
  send_frame(&t->cl, false, 1, "Hel", 3, true);
  send_frame(&t->cl, true, 9, "abc", 3, true); /* control frames may interleave */
  send_frame(&t->cl, false, 0, "l", 1, true);
  send_frame(&t->cl, true, 0, "o", 1, true);
  assert_int_equal(read_frame(&t->cl, &t->fr), 10);
  assert_int_equal(t->fr.len, 3);
  assert_memory_equal(t->fr.payload, "abc", 3);
  assert_int_equal(read_frame(&t->cl, &t->fr), 1);
  assert_int_equal(t->fr.len, 5);
  assert_memory_equal(t->fr.payload, "Hello", 5);
  /* A UTF-8 sequence split across fragments is valid once whole. */
  send_frame(&t->cl, false, 1, "\xc3", 1, true);
  send_frame(&t->cl, true, 0, "\xa9", 1, true);
  assert_int_equal(read_frame(&t->cl, &t->fr), 1);
  assert_memory_equal(t->fr.payload, "\xc3\xa9", 2);
}

static void test_frames_after_handshake_in_same_packet(void **state) {
  test_ctx_t *t = *state;
  assert_int_equal(fixture_start(&t->f, &t->cfg), 0);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  unsigned char buf[1024];
  size_t n = strlen(upgrade_request);
  memcpy(buf, upgrade_request, n);
  n += frame(buf + n, true, 1, "first", 5, true);
  n += frame(buf + n, true, 1, "second", 6, true);
  client_send_n(&t->cl, buf, n);
  size_t hl = 0;
  assert_int_equal(read_head(&t->cl, &t->r, &hl), 0);
  assert_int_equal(t->r.status, 101);
  assert_int_equal(read_frame(&t->cl, &t->fr), 1);
  assert_memory_equal(t->fr.payload, "first", 5);
  assert_int_equal(read_frame(&t->cl, &t->fr), 1);
  assert_memory_equal(t->fr.payload, "second", 6);
}

static void test_unmasked_is_1002(void **state) {
  test_ctx_t *t = *state;
  open_ws(t);
  send_frame(&t->cl, true, 1, "hello", 5, false);
  expect_closed_with(t, 1002);
}

static void test_continuation_without_start_is_1002(void **state) {
  test_ctx_t *t = *state;
  open_ws(t);
  send_frame(&t->cl, true, 0, "x", 1, true);
  expect_closed_with(t, 1002);
}

static void test_oversized_is_1009(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.max_ws_message_bytes = 1024;
  open_ws(t);
  char part[600];
  memset(part, 'a', sizeof(part));
  send_frame(&t->cl, false, 1, part, sizeof(part), true);
  send_frame(&t->cl, true, 0, part, sizeof(part), true);
  expect_closed_with(t, 1009);
  assert_int_equal(st.messages, 0);
}

static void test_single_oversized_frame_is_1009(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.max_ws_message_bytes = 1024;
  open_ws(t);
  char part[2000];
  memset(part, 'a', sizeof(part));
  send_frame(&t->cl, true, 1, part, sizeof(part), true);
  expect_closed_with(t, 1009);
}

static void test_invalid_utf8_is_1007(void **state) {
  test_ctx_t *t = *state;
  open_ws(t);
  send_frame(&t->cl, true, 1, "bad \xff\xfe", 6, true);
  expect_closed_with(t, 1007);
  assert_int_equal(st.messages, 0);
}

static void test_binary_is_1003(void **state) {
  test_ctx_t *t = *state;
  open_ws(t);
  send_frame(&t->cl, true, 2, "\x01\x02", 2, true);
  expect_closed_with(t, 1003);
}

static void test_client_close_handshake(void **state) {
  test_ctx_t *t = *state;
  open_ws(t);
  send_frame(&t->cl, true, 8,
             "\x03\xe8"
             "bye",
             5, true);
  expect_closed_with(t, 1000);
}

static void test_invalid_close_code_is_1002(void **state) {
  test_ctx_t *t = *state;
  open_ws(t);
  send_frame(&t->cl, true, 8, "\x03\xed", 2, true); /* 1005 may not be sent */
  expect_closed_with(t, 1002);
}

static void test_server_close_handshake(void **state) {
  test_ctx_t *t = *state;
  open_ws(t);
  send_frame(&t->cl, true, 1, "close-me", 8, true);
  assert_int_equal(read_frame(&t->cl, &t->fr), 8);
  assert_int_equal(close_code_of(&t->fr), 1000);
  assert_memory_equal(t->fr.payload + 2, "bye", 3);
  /* Data after our close is ignored; the peer's close ends the connection. */
  send_frame(&t->cl, true, 1, "ignored", 7, true);
  send_frame(&t->cl, true, 8, "\x03\xe8", 2, true);
  assert_true(client_wait_closed(&t->cl, 10000));
  client_close(&t->cl); /* ends the server's linger at once */
  wait_for(&st.closed, 1);
  assert_int_equal(st.closed, 1);
  assert_int_equal(st.close_code, 1000);
  assert_int_equal(st.messages, 1);
}

/* Answered pings keep the connection. The interval is also the time the
 * client has to answer, so it is long enough for a loaded machine: the
 * answer is the side that must win. */
static void test_server_ping_answered_keeps_the_connection(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.ws_ping_interval_ms = 1000;
  open_ws(t);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(read_frame(&t->cl, &t->fr), 9);
    send_frame(&t->cl, true, 10, t->fr.payload, t->fr.len, true);
  }
  /* The second ping came on the same connection, after the first answer;
   * the connection still echoes. */
  send_frame(&t->cl, true, 1, "still here", 10, true);
  assert_int_equal(read_frame(&t->cl, &t->fr), 1);
  assert_memory_equal(t->fr.payload, "still here", 10);
  assert_int_equal(st.closed, 0);
}

/* A ping never answered closes the connection with 1006. The client never
 * answers, so however late anything runs, the timeout is the only way out. */
static void test_server_ping_unanswered_closes(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.ws_ping_interval_ms = 50;
  open_ws(t);
  assert_int_equal(read_frame(&t->cl, &t->fr), 9);
  assert_true(client_wait_closed(&t->cl, 10000));
  wait_for(&st.closed, 1);
  assert_int_equal(st.closed, 1);
  assert_int_equal(st.close_code, 1006);
}

static void test_send_limit(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.max_write_buffer = 64 * 1024;
  t->cl.rcvbuf = 4096;
  open_ws(t);
  send_frame(&t->cl, true, 1, "flood", 5, true);
  wait_for(&st.e2big, 1);
  assert_int_equal(st.e2big, 1);
  assert_true(st.max_pending > 0);
  assert_true(st.max_pending <= 64 * 1024);
}

static void drain_done(dg_http_server_t *s, void *data) {
  st.drain_done++;
}

static void start_drain(fixture_t *f) {
  dg_http_server_drain(f->server, 10000, drain_done, NULL);
}

static void test_drain_sends_1001(void **state) {
  test_ctx_t *t = *state;
  open_ws(t);
  fixture_call(&t->f, start_drain);
  assert_int_equal(read_frame(&t->cl, &t->fr), 8);
  assert_int_equal(close_code_of(&t->fr), 1001);
  send_frame(&t->cl, true, 8, "\x03\xe9", 2, true);
  assert_true(client_wait_closed(&t->cl, 10000));
  client_close(&t->cl);
  wait_for(&st.drain_done, 1);
  assert_int_equal(st.drain_done, 1);
  assert_int_equal(st.close_code, 1001);
}

static void measure(fixture_t *f) {
  size_t total = 0;
  int n = 0;
  for (const dg__conn_t *c = f->server->conns; c != NULL; c = c->next) {
    total += dg__conn_memory(c);
    n += c->proto == &dg__ws_proto;
  }
  st.memory = total;
  st.ws_conns = n;
  st.measured = 1;
}

/* Idle WebSockets keep no parser, request or buffer memory: 10,000 of them
 * must fit in about 100 MiB, kernel buffers aside. */
static void test_idle_memory(void **state) {
  enum { N = 100 };
  test_ctx_t *t = *state;
  client_t *cls = calloc(N, sizeof(*cls));
  open_ws(t);
  for (int i = 0; i < N; i++) {
    assert_int_equal(client_connect(&cls[i], t->f.port), 0);
    client_send(&cls[i], upgrade_request);
    size_t hl = 0;
    assert_int_equal(read_head(&cls[i], &t->r, &hl), 0);
    assert_int_equal(t->r.status, 101);
    send_frame(&cls[i], false, 1, "frag", 4, true);
    send_frame(&cls[i], true, 0, "ment", 4, true);
    assert_int_equal(read_frame(&cls[i], &t->fr), 1);
  }
  fixture_call(&t->f, measure);
  wait_for(&st.measured, 1);
  assert_int_equal(st.ws_conns, N + 1);
  size_t each = st.memory / (N + 1);
  assert_true(each > sizeof(dg__conn_t));
  assert_true(each <= 2048);
  for (int i = 0; i < N; i++)
    client_close(&cls[i]);
  wait_for(&st.closed, N);
  assert_int_equal(st.closed, N);
  free(cls);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  dg_log_init(2, DG_LOG_WARN);
  const struct CMUnitTest tests[] = {
      T(test_handshake),
      T(test_not_upgrade),
      T(test_echo),
      T(test_fragments_and_ping),
      T(test_frames_after_handshake_in_same_packet),
      T(test_unmasked_is_1002),
      T(test_continuation_without_start_is_1002),
      T(test_oversized_is_1009),
      T(test_single_oversized_frame_is_1009),
      T(test_invalid_utf8_is_1007),
      T(test_binary_is_1003),
      T(test_client_close_handshake),
      T(test_invalid_close_code_is_1002),
      T(test_server_close_handshake),
      T(test_server_ping_answered_keeps_the_connection),
      T(test_server_ping_unanswered_closes),
      T(test_send_limit),
      T(test_drain_sends_1001),
      T(test_idle_memory),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
