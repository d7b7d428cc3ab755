/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for MCP over WebSocket at /mcp: the upgrade's authentication
 * (header or access_token query parameter) and Origin check, one JSON-RPC
 * message per text message, progress as separate messages, a parse error
 * that keeps the connection, and calls canceled when the client leaves. */
#include "mcp/mcp_http_test.h"

static int leftover_fd = -1;

static int setup(void **state) {
  ht_t *t = ht_new();
  ht_run(t);
  *state = t;
  return 0;
}

static int teardown(void **state) {
  ht_free(*state);
  if (leftover_fd >= 0)
    close(leftover_fd);
  leftover_fd = -1;
  return 0;
}

/* Sends the upgrade; returns the connected socket and fills the response
 * head. */
static int ws_open(int port, const char *target, const char *extra, char *head, size_t size) {
  int fd = hc_connect(port);
  char req[1024];
  snprintf(req, sizeof(req),
           "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
           "Sec-WebSocket-Protocol: mcp\r\n%s\r\n",
           target, extra);
  hc_send(fd, req, strlen(req));
  assert_true(hc_recv_until(fd, head, size, "\r\n\r\n"));
  return fd;
}

static void ws_send_text(int fd, const char *text) {
  size_t n = strlen(text);
  unsigned char frame[8192];
  size_t h = 0;
  assert_true(n + 8 < sizeof(frame));
  frame[h++] = 0x81;
  if (n < 126) {
    frame[h++] = (unsigned char)(0x80 | n);
  } else {
    frame[h++] = 0x80 | 126;
    frame[h++] = (unsigned char)(n >> 8);
    frame[h++] = (unsigned char)(n & 0xff);
  }
  static const unsigned char mask[4] = {0x12, 0x34, 0x56, 0x78};
  memcpy(frame + h, mask, 4);
  h += 4;
  for (size_t i = 0; i < n; i++)
    frame[h + i] = (unsigned char)text[i] ^ mask[i % 4];
  hc_send(fd, frame, h + n);
}

static void recv_exact(int fd, void *buf, size_t n) {
  char *p = buf;
  while (n > 0) {
    ssize_t got = recv(fd, p, n, 0);
    assert_true(got > 0);
    p += got;
    n -= (size_t)got;
  }
}

/* Reads one server frame; returns its JSON (text frames) or NULL (other). */
static json_t *ws_recv(int fd, int *opcode) {
  unsigned char h[2];
  recv_exact(fd, h, 2);
  *opcode = h[0] & 0x0f;
  uint64_t len = h[1] & 0x7f;
  if (len == 126) {
    unsigned char ext[2];
    recv_exact(fd, ext, 2);
    len = (uint64_t)ext[0] << 8 | ext[1];
  } else if (len == 127) {
    unsigned char ext[8];
    recv_exact(fd, ext, 8);
    len = 0;
    for (int i = 0; i < 8; i++)
      len = len << 8 | ext[i];
  }
  char *data = malloc(len + 1);
  recv_exact(fd, data, len);
  data[len] = '\0';
  json_t *v = *opcode == 1 ? json_loads(data, 0, NULL) : NULL;
  free(data);
  return v;
}

static json_t *ws_call(int fd, const char *text) {
  ws_send_text(fd, text);
  int op = 0;
  json_t *v = ws_recv(fd, &op);
  assert_int_equal(op, 1);
  assert_non_null(v);
  return v;
}

static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
                           "{\"protocolVersion\":\"2025-11-25\"}}";

static void test_session_over_header_auth(void **state) {
  ht_t *t = *state;
  char head[2048];
  int fd = ws_open(t->port, "/mcp", HC_ALICE, head, sizeof(head));
  assert_non_null(strstr(head, "101 Switching Protocols"));
  assert_non_null(strstr(head, "Sec-WebSocket-Protocol: mcp"));
  assert_null(strstr(head, "Mcp-Session-Id"));
  json_t *r = ws_call(fd, init);
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(r, "result"), "protocolVersion")),
      "2025-11-25");
  json_decref(r);
  r = ws_call(fd, "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}");
  assert_int_equal(json_array_size(json_object_get(json_object_get(r, "result"), "tools")), 5);
  json_decref(r);
  /* A parse error is answered and the connection stays. */
  r = ws_call(fd, "{oops");
  assert_int_equal(mt_error_code(r), -32700);
  json_decref(r);
  r = ws_call(fd, "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}");
  assert_int_equal(json_integer_value(json_object_get(r, "id")), 3);
  json_decref(r);
  close(fd);
}

static void test_query_token_and_refusals(void **state) {
  ht_t *t = *state;
  char head[2048];
  int fd = ws_open(t->port, "/mcp?x=1&access_token=" MT_TOKEN_ALICE, "", head, sizeof(head));
  assert_non_null(strstr(head, "101 Switching Protocols"));
  json_t *r = ws_call(fd, init);
  assert_non_null(json_object_get(r, "result"));
  json_decref(r);
  close(fd);
  fd = ws_open(t->port, "/mcp", "", head, sizeof(head));
  assert_non_null(strstr(head, "HTTP/1.1 401"));
  assert_non_null(strstr(head, "WWW-Authenticate: Bearer realm=\"datagate\"\r\n"));
  close(fd);
  fd = ws_open(t->port, "/mcp?access_token=wrong", "", head, sizeof(head));
  assert_non_null(strstr(head, "HTTP/1.1 401"));
  assert_non_null(strstr(head, "error=\"invalid_token\""));
  close(fd);
  fd = ws_open(t->port, "/mcp", HC_ALICE "Origin: http://evil.example\r\n", head, sizeof(head));
  assert_non_null(strstr(head, "HTTP/1.1 403"));
  close(fd);
}

/* Sends an upgrade with the given handshake headers; fills the head. */
static void upgrade_head(int port, const char *headers, char *head, size_t size) {
  int fd = hc_connect(port);
  char req[1024];
  snprintf(req, sizeof(req),
           "GET /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\n"
           "Connection: Upgrade\r\n" HC_ALICE "%s\r\n",
           headers);
  hc_send(fd, req, strlen(req));
  assert_true(hc_recv_until(fd, head, size, "\r\n\r\n"));
  close(fd);
}

#define KEY "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
#define V13 "Sec-WebSocket-Version: 13\r\n"

/* A handshake that is not MCP over RFC 6455 is refused as one, never
 * answered as a plain GET of the event stream (405). */
static void test_handshake_refusals(void **state) {
  ht_t *t = *state;
  char head[2048];
  static const char *const refused[] = {
      KEY V13,                                          /* no subprotocol */
      KEY V13 "Sec-WebSocket-Protocol: graphql-ws\r\n", /* another one */
      "Sec-WebSocket-Key: short\r\n" V13 "Sec-WebSocket-Protocol: mcp\r\n",
      V13 "Sec-WebSocket-Protocol: mcp\r\n", /* no key */
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(refused); i++) {
    upgrade_head(t->port, refused[i], head, sizeof(head));
    assert_non_null(strstr(head, "HTTP/1.1 400"));
  }
  upgrade_head(t->port, KEY "Sec-WebSocket-Version: 8\r\nSec-WebSocket-Protocol: mcp\r\n", head,
               sizeof(head));
  assert_non_null(strstr(head, "HTTP/1.1 426"));
  assert_non_null(strstr(head, "Sec-WebSocket-Version: 13"));
  upgrade_head(t->port, KEY V13 "Sec-WebSocket-Protocol: chat, mcp\r\n", head, sizeof(head));
  assert_non_null(strstr(head, "101 Switching Protocols"));
  assert_non_null(strstr(head, "Sec-WebSocket-Protocol: mcp\r\n"));
}

static void test_progress_messages(void **state) {
  ht_t *t = *state;
  char head[2048];
  int fd = ws_open(t->port, "/mcp", HC_ALICE, head, sizeof(head));
  json_decref(ws_call(fd, init));
  ws_send_text(fd, "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"tools/call\",\"params\":"
                   "{\"name\":\"progress\",\"_meta\":{\"progressToken\":\"p\"}}}");
  int op = 0;
  for (int i = 0; i < 2; i++) {
    json_t *note = ws_recv(fd, &op);
    assert_string_equal(json_string_value(json_object_get(note, "method")),
                        "notifications/progress");
    json_decref(note);
  }
  json_t *r = ws_recv(fd, &op);
  assert_int_equal(json_integer_value(json_object_get(r, "id")), 4);
  json_decref(r);
  close(fd);
}

static void test_close_cancels_calls(void **state) {
  ht_t *t = *state;
  char head[2048];
  int fd = ws_open(t->port, "/mcp", HC_ALICE, head, sizeof(head));
  json_decref(ws_call(fd, init));
  ws_send_text(fd, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\","
                   "\"params\":{\"name\":\"slow\"}}");
  /* The call runs (and never ends by itself) before the client goes. */
  assert_true(ht_wait_for(&mt_slow_runs, 1));
  assert_int_equal(mt_cancels, 0);
  close(fd);
  assert_true(ht_wait_for(&mt_cancels, 1));
  assert_int_equal(mt_cancels, 1);
}

static void test_server_closes_open_connection(void **state) {
  ht_t *t = *state;
  char head[2048];
  leftover_fd = ws_open(t->port, "/mcp", HC_ALICE, head, sizeof(head));
  json_decref(ws_call(leftover_fd, init));
  ws_send_text(leftover_fd, "{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"tools/call\","
                            "\"params\":{\"name\":\"slow\"}}");
  assert_true(ht_wait_for(&mt_slow_runs, 1));
  /* teardown frees everything while the connection and its call are open. */
}

static json_t *healthz(int port) {
  static hc_resp_t r;
  int fd = hc_connect(port);
  static const char req[] = "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
  hc_send(fd, req, sizeof(req) - 1);
  hc_read_all(fd, &r);
  close(fd);
  return hc_json(&r);
}

/* A client that sends but never reads is closed (1008) once its output
 * queue is full, and its session ends, rather than queueing without end. */
static void test_slow_reader_closed(void **state) {
  ht_t *t = *state;
  char head[2048];
  int fd = ws_open(t->port, "/mcp", HC_ALICE, head, sizeof(head));
  int small = 4096;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
  struct timeval tv = {.tv_sec = 2};
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  json_decref(ws_call(fd, init));
  json_t *h = healthz(t->port);
  assert_int_equal(json_integer_value(json_object_get(h, "sessions")), 1);
  json_decref(h);
  static const char big[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"tools/call\","
                            "\"params\":{\"name\":\"big\"}}";
  int sessions = 1;
  for (int i = 0; i < 400 && sessions > 0; i++) {
    ws_send_text(fd, big);
    if (i % 50 == 49) {
      ht_sleep_ms(20);
      h = healthz(t->port);
      sessions = (int)json_integer_value(json_object_get(h, "sessions"));
      json_decref(h);
    }
  }
  /* Whatever was sent, the server may still be working through it. */
  for (int i = 0; i < 1000 && sessions > 0; i++) {
    ht_sleep_ms(10);
    h = healthz(t->port);
    sessions = (int)json_integer_value(json_object_get(h, "sessions"));
    json_decref(h);
  }
  assert_int_equal(sessions, 0);
  close(fd);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_session_over_header_auth, setup, teardown),
      cmocka_unit_test_setup_teardown(test_query_token_and_refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(test_handshake_refusals, setup, teardown),
      cmocka_unit_test_setup_teardown(test_progress_messages, setup, teardown),
      cmocka_unit_test_setup_teardown(test_close_cancels_calls, setup, teardown),
      cmocka_unit_test_setup_teardown(test_server_closes_open_connection, setup, teardown),
      cmocka_unit_test_setup_teardown(test_slow_reader_closed, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
