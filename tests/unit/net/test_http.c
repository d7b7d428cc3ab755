/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* HTTP/1.1 server: responses, keep-alive, pipelining, bodies, limits,
 * timeouts, backpressure, aborts and draining, over real sockets. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <limits.h>

#include "net/internal.h"
#include "net/net_test.h"

typedef struct state {
  atomic_int handled;
  atomic_int aborted;
  atomic_int e2big;
  atomic_int drain_done;
  atomic_int stream_done;
  atomic_size_t max_pending;
  atomic_int connections; /* the server's count, read on its loop */
  atomic_int counted;
  size_t stream_total;
  dg_http_request_t *held; /* answered when the test says so */
} state_t;

static state_t st;

/* ---- the handler ------------------------------------------------------ */

typedef struct later {
  uv_timer_t timer;
  dg_http_request_t *req;
} later_t;

static void later_closed(uv_handle_t *h) {
  free(h->data);
}

static void later_fire(uv_timer_t *t) {
  later_t *l = t->data;
  char body[128];
  int n = snprintf(body, sizeof(body), "later %s", dg_http_request_query(l->req));
  dg_http_respond(l->req, 200, NULL, 0, body, (size_t)n);
  uv_close((uv_handle_t *)t, later_closed);
}

static void answer_later(dg_http_request_t *req) {
  later_t *l = calloc(1, sizeof(*l));
  int64_t ms = 0;
  const char *q = dg_http_request_query(req);
  dg_parse_int64(strncmp(q, "ms=", 3) == 0 ? q + 3 : "0", 0, 60000, &ms);
  l->req = req;
  l->timer.data = l;
  uv_timer_init(dg_http_request_server_data(req), &l->timer);
  uv_timer_start(&l->timer, later_fire, (uint64_t)ms, 0);
}

typedef struct streamer {
  dg_http_request_t *req;
  size_t sent;
} streamer_t;

/* Chunk i is filled with the letter 'a' + i % 26, so that a reader can
 * tell that every byte arrived in order. */
static void stream_pump(streamer_t *s) {
  static char chunk[16384];
  while (s->sent < st.stream_total) {
    memset(chunk, 'a' + (int)(s->sent / sizeof(chunk) % 26), sizeof(chunk));
    int rc = dg_http_stream_write(s->req, chunk, sizeof(chunk));
    if (rc == DG_E2BIG) {
      st.e2big++;
      return; /* on_drain resumes */
    }
    if (rc != 0)
      return;
    s->sent += sizeof(chunk);
    size_t pending = dg_http_stream_pending(s->req);
    if (pending > st.max_pending)
      st.max_pending = pending;
  }
  dg_http_stream_end(s->req);
  st.stream_done = 1;
  free(s);
}

static void stream_drain(dg_http_request_t *req, void *data) {
  stream_pump(data);
}

static void stream_abort(dg_http_request_t *req, void *data) {
  st.aborted++;
  free(data);
}

static void hang_abort(dg_http_request_t *req, void *data) {
  st.aborted++;
}

static void handler(dg_http_request_t *req) {
  const char *path = dg_http_request_path(req);
  st.handled++;
  if (dg_http_request_body_refused(req)) {
    dg_http_respond(req, 401, NULL, 0, "refused", 7);
    return;
  }
  if (strcmp(path, "/hello") == 0) {
    dg_http_respond(req, 200, NULL, 0, "hello", 5);
  } else if (strcmp(path, "/echo") == 0) {
    size_t len = 0;
    const char *body = dg_http_request_body(req, &len);
    char *out = dg_arena_sprintf(dg_http_request_arena(req), "%s %.*s", dg_http_request_method(req),
                                 (int)len, body);
    dg_http_header_t h = {"Content-Type", "text/plain"};
    dg_http_respond(req, 200, &h, 1, out, strlen(out));
  } else if (strcmp(path, "/admitted") == 0) {
    const char *v = dg_http_request_admitted(req);
    dg_http_respond(req, 200, NULL, 0, v ? v : "(none)", v ? strlen(v) : 6);
  } else if (strcmp(path, "/header") == 0) {
    const char *v = dg_http_request_header(req, "x-test-value");
    dg_http_respond(req, 200, NULL, 0, v ? v : "(none)", v ? strlen(v) : 6);
  } else if (strcmp(path, "/known") == 0) {
    const char *v = dg_http_request_header(req, "Mcp-Session-Id");
    char *out = dg_arena_sprintf(dg_http_request_arena(req), "%s|%u", v ? v : "(none)",
                                 dg_http_request_header_lines(req, "MCP-SESSION-ID"));
    dg_http_respond(req, 200, NULL, 0, out, strlen(out));
  } else if (strcmp(path, "/later") == 0) {
    answer_later(req);
  } else if (strcmp(path, "/stream") == 0) {
    streamer_t *s = calloc(1, sizeof(*s));
    s->req = req;
    dg_http_request_events_t ev = {stream_abort, stream_drain, s};
    dg_http_request_watch(req, &ev);
    dg_http_stream_begin(req, 200, NULL, 0);
    stream_pump(s);
  } else if (strcmp(path, "/held") == 0) {
    st.held = req;
  } else if (strcmp(path, "/hang") == 0) {
    dg_http_request_events_t ev = {hang_abort, NULL, NULL};
    dg_http_request_watch(req, &ev);
  } else if (strcmp(path, "/badheader") == 0) {
    dg_http_header_t h = {"X-Bad", "a\r\nInjected: yes"};
    dg_http_respond(req, 200, &h, 1, "no", 2);
  } else {
    dg_http_respond(req, 404, NULL, 0, "not found", 9);
  }
}

/* ---- fixtures --------------------------------------------------------- */

typedef struct test_ctx {
  fixture_t f;
  dg_http_server_config_t cfg;
  client_t cl;
  response_t r;
} test_ctx_t;

static int setup(void **state) {
  test_ctx_t *t = calloc(1, sizeof(*t));
  memset(&st, 0, sizeof(st));
  dg_http_limits_default(&t->cfg.limits);
  t->cfg.handler = handler;
  t->cfg.data = &t->f.loop;
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

static void start(test_ctx_t *t) {
  assert_int_equal(fixture_start(&t->f, &t->cfg), 0);
}

/* Waits for a counter the server's loop raises. The limit only keeps a
 * broken test from hanging: it is far beyond any expected wait. */
static bool wait_for(atomic_int *v, int want) {
  for (int i = 0; i < 1000 && *v < want; i++)
    sleep_ms(10);
  return *v >= want;
}

static void count_connections(fixture_t *f) {
  st.connections = (int)dg_http_server_connections(f->server);
  st.counted++;
}

/* Waits until the server counts n open connections, asking its loop. */
static bool wait_connections(test_ctx_t *t, int n) {
  for (int i = 0; i < 1000; i++) {
    int asked = st.counted;
    fixture_call(&t->f, count_connections);
    if (!wait_for(&st.counted, asked + 1))
      return false;
    if (st.connections == n)
      return true;
    sleep_ms(10);
  }
  return false;
}

/* Answers the /held request on the loop thread. */
static void answer_held(fixture_t *f) {
  dg_http_respond(st.held, 200, NULL, 0, "held", 4);
  st.held = NULL;
}

/* ---- tests ------------------------------------------------------------ */

static void test_get(void **state) {
  test_ctx_t *t = *state;
  char v[128];
  start(t);
  assert_int_equal(http_once(t->f.port, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", &t->r), 200);
  assert_string_equal(t->r.body, "hello");
  assert_string_equal(response_header(&t->r, "Server", v, sizeof(v)), "datagate");
  assert_string_equal(response_header(&t->r, "Content-Length", v, sizeof(v)), "5");
  assert_non_null(response_header(&t->r, "Date", v, sizeof(v)));
  assert_non_null(response_header(&t->r, "X-Request-Id", v, sizeof(v)));
  assert_true(dg_uuid_valid(v));
  assert_null(response_header(&t->r, "Connection", v, sizeof(v)));
  assert_int_equal(http_once(t->f.port, "GET /nope HTTP/1.1\r\nHost: x\r\n\r\n", &t->r), 404);
}

static void test_request_id(void **state) {
  test_ctx_t *t = *state;
  char v[128];
  start(t);
  http_once(t->f.port, "GET /hello HTTP/1.1\r\nHost: x\r\nX-Request-Id: abc.DEF_1-2\r\n\r\n",
            &t->r);
  assert_string_equal(response_header(&t->r, "X-Request-Id", v, sizeof(v)), "abc.DEF_1-2");
  http_once(t->f.port, "GET /hello HTTP/1.1\r\nHost: x\r\nx-request-id: bad id!\r\n\r\n", &t->r);
  assert_true(dg_uuid_valid(response_header(&t->r, "X-Request-Id", v, sizeof(v))));
  char req[256];
  char longid[66];
  memset(longid, 'a', 65);
  longid[65] = '\0';
  snprintf(req, sizeof(req), "GET /hello HTTP/1.1\r\nHost: x\r\nX-Request-Id: %s\r\n\r\n", longid);
  http_once(t->f.port, req, &t->r);
  assert_true(dg_uuid_valid(response_header(&t->r, "X-Request-Id", v, sizeof(v))));
}

/* A request target in absolute form is served by its path. */
static void test_absolute_form(void **state) {
  test_ctx_t *t = *state;
  start(t);
  static const char *const targets[] = {"http://example.com/hello", "HTTPS://h:8443/hello?x=1",
                                        "http://[::1]:80/hello"};
  char req[256];
  for (size_t i = 0; i < DG_ARRAY_SIZE(targets); i++) {
    snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: h\r\n\r\n", targets[i]);
    assert_int_equal(http_once(t->f.port, req, &t->r), 200);
    assert_string_equal(t->r.body, "hello");
  }
  /* Without a path the target is the root. */
  assert_int_equal(http_once(t->f.port, "GET http://h?q=1 HTTP/1.1\r\nHost: x\r\n\r\n", &t->r),
                   404);
  assert_int_equal(http_once(t->f.port, "GET /http://h/hello HTTP/1.1\r\nHost: x\r\n\r\n", &t->r),
                   404);
}

static void test_post_and_headers(void **state) {
  test_ctx_t *t = *state;
  start(t);
  assert_int_equal(
      http_once(t->f.port,
                "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 11\r\n\r\nhello world", &t->r),
      200);
  assert_string_equal(t->r.body, "POST hello world");
  assert_int_equal(
      http_once(t->f.port, "GET /header HTTP/1.1\r\nHost: x\r\nX-TEST-Value: abc  \r\n\r\n", &t->r),
      200);
  assert_string_equal(t->r.body, "abc");
  /* An empty value does not run into the next header. */
  assert_int_equal(
      http_once(t->f.port, "GET /header HTTP/1.1\r\nHost: x\r\nX-Empty:\r\nX-Test-Value: d\r\n\r\n",
                &t->r),
      200);
  assert_string_equal(t->r.body, "d");
  /* Lines with the same name are one list (RFC 9110 5.3). */
  assert_int_equal(http_once(t->f.port,
                             "GET /header HTTP/1.1\r\nHost: x\r\nX-Test-Value: a\r\n"
                             "X-Test-Value: b\r\n\r\n",
                             &t->r),
                   200);
  assert_string_equal(t->r.body, "a, b");
  /* A handler's header with CR/LF is never sent as given. */
  assert_int_equal(http_once(t->f.port, "GET /badheader HTTP/1.1\r\nHost: x\r\n\r\n", &t->r), 500);
  assert_null(strstr(t->r.head, "Injected"));
}

/* Each byte value at each place of values of 0 to 24 bytes (the word
 * path and its tail): only controls other than HTAB, and DEL, are refused. */
static void test_value_bytes(void **state) {
  (void)state;
  for (size_t n = 1; n <= 24; n++) {
    char *v = malloc(n); /* exact size: ASan sees a read past the value */
    assert_non_null(v);
    for (size_t at = 0; at < n; at++) {
      for (int ch = 0; ch < 256; ch++) {
        memset(v, 'a', n);
        v[at] = (char)ch;
        bool want = !((ch < 0x20 && ch != '\t') || ch == 0x7f);
        if (dg__http1_value_ok(v, n) != want)
          fail_msg("byte 0x%02x at %zu of %zu: got %d", ch, at, n, !want);
      }
    }
    memset(v, '\t', n); /* a word of tabs only */
    assert_true(dg__http1_value_ok(v, n));
    free(v);
  }
  assert_true(dg__http1_value_ok("", 0));
}

/* The names the gateway looks up are found once, in any case; others,
 * and names that only start or end like one, are not. */
static void test_known_headers(void **state) {
  test_ctx_t *t = *state;
  assert_int_equal(dg__http1_known_header("Host", 4), DG__H_HOST);
  assert_int_equal(dg__http1_known_header("mcp-SESSION-id", 14), DG__H_MCP_SESSION_ID);
  assert_int_equal(dg__http1_known_header("Sec-WebSocket-Protocol", 22),
                   DG__H_SEC_WEBSOCKET_PROTOCOL);
  assert_int_equal(dg__http1_known_header("TRACEPARENT", 11), DG__H_TRACEPARENT);
  assert_int_equal(dg__http1_known_header("Hosts", 5), DG__H_KNOWN);
  assert_int_equal(dg__http1_known_header("Hos", 3), DG__H_KNOWN);
  assert_int_equal(dg__http1_known_header("Mcp-Session-Ix", 14), DG__H_KNOWN);
  assert_int_equal(dg__http1_known_header("X-Test-Value", 12), DG__H_KNOWN);
  assert_int_equal(dg__http1_known_header("", 0), DG__H_KNOWN);
  /* Every known name is found by its own spelling. */
  static const char *const names[] = {"Host",
                                      "Accept",
                                      "Expect",
                                      "Origin",
                                      "Upgrade",
                                      "If-Match",
                                      "Connection",
                                      "traceparent",
                                      "Content-Type",
                                      "X-Request-Id",
                                      "Authorization",
                                      "Content-Length",
                                      "Mcp-Session-Id",
                                      "Sec-WebSocket-Key",
                                      "Transfer-Encoding",
                                      "MCP-Protocol-Version",
                                      "Sec-WebSocket-Version",
                                      "Sec-WebSocket-Protocol"};
  assert_int_equal(DG_ARRAY_SIZE(names), DG__H_KNOWN);
  for (size_t i = 0; i < DG_ARRAY_SIZE(names); i++)
    assert_int_equal(dg__http1_known_header(names[i], strlen(names[i])), i);
  start(t);
  assert_int_equal(http_once(t->f.port,
                             "GET /known HTTP/1.1\r\nHost: x\r\nmcp-session-id: a\r\n"
                             "X-Other: z\r\nMCP-Session-ID: b\r\n\r\n",
                             &t->r),
                   200);
  assert_string_equal(t->r.body, "a, b|2");
  assert_int_equal(http_once(t->f.port, "GET /known HTTP/1.1\r\nHost: x\r\n\r\n", &t->r), 200);
  assert_string_equal(t->r.body, "(none)|0");
}

static void test_keep_alive(void **state) {
  test_ctx_t *t = *state;
  char v[64];
  start(t);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  for (int i = 0; i < 3; i++) {
    client_send(&t->cl, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_int_equal(client_response(&t->cl, &t->r), 200);
  }
  client_send(&t->cl, "GET /hello HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  assert_int_equal(client_response(&t->cl, &t->r), 200);
  assert_string_equal(response_header(&t->r, "Connection", v, sizeof(v)), "close");
  assert_true(client_wait_closed(&t->cl, 10000));
  client_close(&t->cl);

  /* HTTP/1.0 closes unless it asks for keep-alive. */
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  client_send(&t->cl, "GET /hello HTTP/1.0\r\nConnection: keep-alive\r\n\r\n");
  assert_int_equal(client_response(&t->cl, &t->r), 200);
  assert_string_equal(response_header(&t->r, "Connection", v, sizeof(v)), "keep-alive");
  client_send(&t->cl, "GET /hello HTTP/1.0\r\n\r\n");
  assert_int_equal(client_response(&t->cl, &t->r), 200);
  assert_string_equal(response_header(&t->r, "Connection", v, sizeof(v)), "close");
  assert_true(client_wait_closed(&t->cl, 10000));
}

/* On one connection the buffer the head is read into is kept between
 * requests, or given back after a long head: each request sees its own
 * headers only, whole, after a long one and after a short one. */
static void test_headers_across_requests(void **state) {
  test_ctx_t *t = *state;
  char req[4096];
  char value[2001];
  memset(value, 'v', sizeof(value) - 1);
  value[sizeof(value) - 1] = '\0';
  start(t);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  static const char *const values[] = {"short", NULL, "ab", NULL, "x"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(values); i++) {
    const char *v = values[i] != NULL ? values[i] : value;
    snprintf(req, sizeof(req),
             "GET /header HTTP/1.1\r\nHost: x\r\nX-Long-Name-%zu: y\r\n"
             "X-Test-Value: %s\r\n\r\n",
             i, v);
    client_send(&t->cl, req);
    assert_int_equal(client_response(&t->cl, &t->r), 200);
    assert_string_equal(t->r.body, v);
  }
  client_send(&t->cl, "GET /known HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_int_equal(client_response(&t->cl, &t->r), 200);
  assert_string_equal(t->r.body, "(none)|0");
}

static void test_pipelining_in_order(void **state) {
  test_ctx_t *t = *state;
  start(t);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  /* The first is answered later than the second could be. */
  client_send(&t->cl,
              "GET /later?ms=150 HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n"
              "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
  assert_int_equal(client_response(&t->cl, &t->r), 200);
  assert_string_equal(t->r.body, "later ms=150");
  assert_int_equal(client_response(&t->cl, &t->r), 200);
  assert_string_equal(t->r.body, "hello");
  assert_int_equal(client_response(&t->cl, &t->r), 200);
  assert_string_equal(t->r.body, "POST abc");
}

static void test_chunked_body(void **state) {
  test_ctx_t *t = *state;
  start(t);
  assert_int_equal(http_once(t->f.port,
                             "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                             "4\r\nWiki\r\n5\r\npedia\r\n0\r\n\r\n",
                             &t->r),
                   200);
  assert_string_equal(t->r.body, "POST Wikipedia");
}

static void test_expect_continue(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.max_body_bytes = 100;
  start(t);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  client_send(
      &t->cl,
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nExpect: 100-continue\r\n\r\n");
  assert_int_equal(client_response(&t->cl, &t->r), 100);
  client_send(&t->cl, "hello");
  assert_int_equal(client_response(&t->cl, &t->r), 200);
  assert_string_equal(t->r.body, "POST hello");
  client_close(&t->cl);
  /* Over the limit: 413 at once, no 100. */
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  client_send(
      &t->cl,
      "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 500\r\nExpect: 100-continue\r\n\r\n");
  assert_int_equal(client_response(&t->cl, &t->r), 413);
  assert_true(client_wait_closed(&t->cl, 10000));
}

static void expect_status_then_close(test_ctx_t *t, const char *req, size_t len, int status) {
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  client_send_n(&t->cl, req, len);
  assert_int_equal(client_response(&t->cl, &t->r), status);
  char v[64];
  assert_string_equal(response_header(&t->r, "Connection", v, sizeof(v)), "close");
  assert_true(client_wait_closed(&t->cl, 10000));
  client_close(&t->cl);
}

static void test_limit_header_bytes(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.max_header_bytes = 1024;
  start(t);
  char req[4096];
  char big[2000];
  memset(big, 'a', sizeof(big) - 1);
  big[sizeof(big) - 1] = '\0';
  int n = snprintf(req, sizeof(req), "GET /hello HTTP/1.1\r\nHost: x\r\nX-Big: %s\r\n\r\n", big);
  expect_status_then_close(t, req, (size_t)n, 431);
  /* A request-target over the limit is 414 URI Too Long. */
  n = snprintf(req, sizeof(req), "GET /%s HTTP/1.1\r\nHost: x\r\n\r\n", big);
  expect_status_then_close(t, req, (size_t)n, 414);
  /* Just under the limit still works. */
  assert_int_equal(
      http_once(t->f.port, "GET /hello HTTP/1.1\r\nHost: x\r\nX-Small: b\r\n\r\n", &t->r), 200);
}

static void test_limit_header_count(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.max_headers = 8;
  start(t);
  char req[4096] = "GET /hello HTTP/1.1\r\nHost: x\r\n";
  for (int i = 0; i < 9; i++) {
    size_t len = strlen(req);
    snprintf(req + len, sizeof(req) - len, "X-H%d: %d\r\n", i, i);
  }
  strncat(req, "\r\n", sizeof(req) - strlen(req) - 1);
  expect_status_then_close(t, req, strlen(req), 431);
  assert_int_equal(
      http_once(t->f.port, "GET /hello HTTP/1.1\r\nHost: x\r\nA: 1\r\nB: 2\r\n\r\n", &t->r), 200);
}

static void test_limit_body(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.max_body_bytes = 1024;
  start(t);
  char req[8192];
  char body[2049];
  memset(body, 'b', 2048);
  body[2048] = '\0';
  int n = snprintf(req, sizeof(req),
                   "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 2048\r\n\r\n%s", body);
  expect_status_then_close(t, req, (size_t)n, 413);
  n = snprintf(
      req, sizeof(req),
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n400\r\n%.1024s\r\n"
      "400\r\n%.1024s\r\n0\r\n\r\n",
      body, body);
  expect_status_then_close(t, req, (size_t)n, 413);
  /* Exactly the limit is fine. */
  n = snprintf(req, sizeof(req),
               "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\n\r\n%.1024s", body);
  assert_int_equal(http_once(t->f.port, req, &t->r), 200);
  assert_int_equal(t->r.body_len, 5 + 1024);
}

static void test_malformed(void **state) {
  test_ctx_t *t = *state;
  start(t);
  const char *bad = "THIS IS NOT HTTP\r\n\r\n";
  expect_status_then_close(t, bad, strlen(bad), 400);
  const char *smuggle = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: "
                        "chunked\r\n\r\n0\r\n\r\n";
  expect_status_then_close(t, smuggle, strlen(smuggle), 400);
}

/* The request line and the header section against RFC 9112 2-7: each is
 * refused with the status RFC 9110 15 names, and the connection closes. */
static void test_grammar(void **state) {
  test_ctx_t *t = *state;
  start(t);
  static const struct {
    const char *text;
    int status;
  } cases[] = {
      {"GET /hello HTTP/1.1\r\n\r\n", 400},                           /* no Host */
      {"GET /hello HTTP/1.1\r\nHost: x\r\nHost: x\r\n\r\n", 400},     /* two Host lines */
      {"GET /hello HTTP/1.1\r\nHost:\r\n\r\n", 400},                  /* empty Host */
      {"GET /hello HTTP/1.1\r\nHost: x/y\r\n\r\n", 400},              /* a path in Host */
      {"GET /hello HTTP/1.1\r\nHost: u@x\r\n\r\n", 400},              /* user info in Host */
      {"GET /hello HTTP/1.1\r\nHost: x\r\nX-Probe : 1\r\n\r\n", 400}, /* space before colon */
      {"GET /hello HTTP/1.1\r\nHost: x\r\nContent Length: 5\r\n\r\nhello", 400},
      {"GET /hello HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n", 400},          /* empty name */
      {"GET /hello HTTP/1.1\r\nHost: x\r\nX-A: 1\r\n 2\r\n\r\n", 400}, /* obs-fold */
      {"POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: \r\n\r\nhello",
       400},
      {"POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\n\r\n0\r\n\r\n", 501},
      {"POST /echo HTTP/1.0\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n", 400},
      {"FOO /hello HTTP/1.1\r\nHost: x\r\n\r\n", 501},
      {"PROPFIND /hello HTTP/1.1\r\nHost: x\r\n\r\n", 501},
      {"CONNECT x:443 HTTP/1.1\r\nHost: x:443\r\n\r\n", 501},
      {"GET /hello\r\n\r\n", 400}, /* HTTP/0.9 */
      {"GET /hello HTTP/2.0\r\nHost: x\r\n\r\n", 505},
      {"GET * HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"GET hello HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"GET /hello#f HTTP/1.1\r\nHost: x\r\n\r\n", 400},
      {"GET http://u@x/hello HTTP/1.1\r\nHost: x\r\n\r\n", 400}, /* user info */
      /* Control bytes and DEL inside long values: llhttp refuses them before
       * the gateway's own check, which test_value_bytes covers. */
      {"GET /hello HTTP/1.1\r\nHost: x\r\nX-A: 0123456789\x01"
       "bcdefghij\r\n\r\n",
       400},
      {"GET /hello HTTP/1.1\r\nHost: x\r\nX-A: 012\x7f"
       "456789abcdefgh\r\n\r\n",
       400},
      {"GET /hello HTTP/1.1\r\nHost: x\r\nX-A: 0123456789abcdefgh\x1b\r\n\r\n", 400},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(cases); i++) {
    expect_status_then_close(t, cases[i].text, strlen(cases[i].text), cases[i].status);
  }
  /* What stays served: HTTP/1.0 without Host, a bracketed IPv6 Host with a
   * port, and OPTIONS in asterisk form. */
  assert_int_equal(http_once(t->f.port, "GET /hello HTTP/1.0\r\n\r\n", &t->r), 200);
  assert_int_equal(http_once(t->f.port, "GET /hello HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", &t->r),
                   200);
  assert_int_equal(http_once(t->f.port, "OPTIONS * HTTP/1.1\r\nHost: x\r\n\r\n", &t->r), 404);
  /* A tab and obs-text stay allowed in a value, wherever they stand. */
  assert_int_equal(
      http_once(t->f.port,
                "GET /hello HTTP/1.1\r\nHost: x\r\nX-A: 012345678\tbcdef caf\xc3\xa9 \xff~\r\n\r\n",
                &t->r),
      200);
}

static void test_header_timeout(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.header_timeout_ms = 150;
  start(t);
  /* The clock starts before the connection exists, so a slow run can only
   * make the wait look longer: the 408 must not come before the timeout. */
  uint64_t t0 = dg_now_ms();
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  client_send(&t->cl, "GET /hello HTTP/1.1\r\nHost: slow");
  assert_int_equal(client_response(&t->cl, &t->r), 408);
  assert_true(dg_now_ms() - t0 >= 100);
  assert_true(client_wait_closed(&t->cl, 10000));
  client_close(&t->cl);
  /* A body that stops arriving hits the request timeout. */
  t->cl.fd = -1;
}

static void test_request_timeout(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.request_timeout_ms = 150;
  start(t);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  client_send(&t->cl, "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc");
  assert_int_equal(client_response(&t->cl, &t->r), 408);
  assert_true(client_wait_closed(&t->cl, 10000));
}

static void test_idle_timeout(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.idle_timeout_ms = 200;
  start(t);
  /* Measured from before the request, so that a late reader cannot make
   * the idle time look shorter than it was: the close must not come early. */
  uint64_t t0 = dg_now_ms();
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  client_send(&t->cl, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_int_equal(client_response(&t->cl, &t->r), 200);
  assert_true(client_wait_closed(&t->cl, 10000));
  assert_true(dg_now_ms() - t0 >= 150);
}

static void test_max_connections(void **state) {
  test_ctx_t *t = *state;
  client_t *a = calloc(1, sizeof(*a));
  client_t *b = calloc(1, sizeof(*b));
  t->cfg.limits.max_connections = 2;
  start(t);
  assert_int_equal(client_connect(a, t->f.port), 0);
  assert_int_equal(client_connect(b, t->f.port), 0);
  client_send(a, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  client_send(b, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_int_equal(client_response(a, &t->r), 200);
  assert_int_equal(client_response(b, &t->r), 200);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  assert_int_equal(client_response(&t->cl, &t->r), 503);
  assert_true(client_wait_closed(&t->cl, 10000));
  client_close(&t->cl);
  /* Room again once one leaves (once the server has seen it go). */
  client_close(a);
  assert_true(wait_connections(t, 1));
  assert_int_equal(http_once(t->f.port, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", &t->r), 200);
  client_close(b);
  free(a);
  free(b);
  assert_int_equal(fixture_stop(&t->f), 0);
  t->f.server = NULL;
  dg_buf_t out;
  dg_buf_init(&out, 1 << 20);
  dg_metrics_render(&out);
  assert_non_null(strstr(out.data, "dg_http_limit_rejections_total{limit=\"connections\"}"));
  dg_buf_free(&out);
}

/* Admits the requests that carry X-Token: ok, and notes who they are
 * from for the handler (dg_http_request_admitted). */
static bool admit_token(dg_http_request_t *req) {
  const char *v = dg_http_request_header(req, "X-Token");
  if (v == NULL || strcmp(v, "ok") != 0)
    return false;
  dg_http_request_set_admitted(req, "token ok");
  return true;
}

/* A request the admit callback refuses is answered on its head alone: the
 * body it announces is never waited for. */
static void test_admit_before_body(void **state) {
  test_ctx_t *t = *state;
  t->cfg.admit = admit_token;
  t->cfg.limits.max_body_bytes = 1 << 20;
  start(t);
  static const char head[] = "POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\nabc";
  expect_status_then_close(t, head, sizeof(head) - 1, 401);
  static const char chunked[] =
      "POST /echo HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n";
  expect_status_then_close(t, chunked, sizeof(chunked) - 1, 401);
  /* Without a body nothing needs refusing: the handler answers as usual. */
  assert_int_equal(http_once(t->f.port, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", &t->r), 200);
  assert_int_equal(
      http_once(t->f.port,
                "POST /echo HTTP/1.1\r\nHost: x\r\nX-Token: ok\r\nContent-Length: 3\r\n\r\nabc",
                &t->r),
      200);
  assert_int_equal(t->r.body_len, 8);
  /* What the admit callback noted reaches the handler of that request
   * only: the next request on the connection starts without it. */
  client_t *c = calloc(1, sizeof(*c));
  assert_int_equal(client_connect(c, t->f.port), 0);
  client_send(c, "POST /admitted HTTP/1.1\r\nHost: x\r\nX-Token: ok\r\nContent-Length: 1\r\n\r\nx");
  assert_int_equal(client_response(c, &t->r), 200);
  assert_int_equal(t->r.body_len, 8);
  assert_memory_equal(t->r.body, "token ok", 8);
  client_send(c, "GET /admitted HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_int_equal(client_response(c, &t->r), 200);
  assert_memory_equal(t->r.body, "(none)", 6);
  client_close(c);
  free(c);
}

/* Connections that sent no admitted request share max_unadmitted_bytes. */
static void test_unadmitted_budget(void **state) {
  test_ctx_t *t = *state;
  client_t *a = calloc(1, sizeof(*a));
  client_t *b = calloc(1, sizeof(*b));
  t->cfg.admit = admit_token;
  t->cfg.limits.max_header_bytes = 1024;
  t->cfg.limits.max_unadmitted_bytes = 2 * (sizeof(dg__conn_t) + 2 * 1024 + 4096);
  start(t);
  assert_int_equal(client_connect(a, t->f.port), 0);
  assert_int_equal(client_connect(b, t->f.port), 0);
  client_send(a, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  client_send(b, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_int_equal(client_response(a, &t->r), 200);
  assert_int_equal(client_response(b, &t->r), 200);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  assert_int_equal(client_response(&t->cl, &t->r), 503);
  assert_true(client_wait_closed(&t->cl, 10000));
  client_close(&t->cl);
  /* An admitted request frees its connection's share for good. */
  client_send(a, "GET /hello HTTP/1.1\r\nHost: x\r\nX-Token: ok\r\n\r\n");
  assert_int_equal(client_response(a, &t->r), 200);
  assert_int_equal(http_once(t->f.port, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n", &t->r), 200);
  client_close(a);
  client_close(b);
  free(a);
  free(b);
}

static void test_pipeline_limit(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.max_pipelined = 2;
  start(t);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  char req[1024] = "";
  for (int i = 0; i < 5; i++)
    strncat(req, "GET /later?ms=50 HTTP/1.1\r\nHost: x\r\n\r\n", sizeof(req) - strlen(req) - 1);
  client_send(&t->cl, req);
  /* Past the queue's room the connection stops reading until it drains:
   * every request is served, in order, on the same connection. */
  for (int i = 0; i < 5; i++)
    assert_int_equal(client_response(&t->cl, &t->r), 200);
  client_send(&t->cl, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_int_equal(client_response(&t->cl, &t->r), 200);
  assert_string_equal(t->r.body, "hello");
}

static void test_backpressure(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.max_write_buffer = 64 * 1024;
  st.stream_total = 16u << 20;
  start(t);
  t->cl.rcvbuf = 4096;
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  client_send(&t->cl, "GET /stream HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  /* A reader that does not read: the server's buffer fills up. */
  assert_true(wait_for(&st.e2big, 1));
  assert_true(st.max_pending <= 64 * 1024);
  assert_int_equal(st.stream_done, 0);
  /* Reading again lets the stream finish through on_drain. */
  size_t cap = st.stream_total + (1u << 20), total = 0;
  char *all = malloc(cap);
  assert_non_null(all);
  for (;;) {
    ssize_t n = recv(t->cl.fd, all + total, cap - total, 0);
    if (n <= 0)
      break;
    total += (size_t)n;
  }
  assert_true(total > st.stream_total);
  assert_memory_equal(all + total - 5, "0\r\n\r\n", 5);
  assert_int_equal(st.stream_done, 1);
  /* Every chunk arrived whole and in order, though the socket took the
   * output in pieces of its own sizes. */
  char *p = strstr(all, "\r\n\r\n");
  assert_non_null(p);
  p += 4;
  for (size_t i = 0; i < st.stream_total / 16384; i++) {
    assert_memory_equal(p, "4000\r\n", 6);
    p += 6;
    for (size_t j = 0; j < 16384; j++)
      assert_true(p[j] == 'a' + (int)(i % 26));
    p += 16384;
    assert_memory_equal(p, "\r\n", 2);
    p += 2;
  }
  free(all);
}

static void test_abort(void **state) {
  test_ctx_t *t = *state;
  start(t);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  client_send(&t->cl, "GET /hang HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_true(wait_for(&st.handled, 1));
  assert_int_equal(st.handled, 1);
  assert_int_equal(st.aborted, 0);
  client_close(&t->cl);
  assert_true(wait_for(&st.aborted, 1));
  assert_int_equal(st.aborted, 1);
}

static void drain_done(dg_http_server_t *s, void *data) {
  st.drain_done++;
}

static void start_drain(fixture_t *f) {
  dg_http_server_drain(f->server, 10000, drain_done, NULL);
}

static void test_drain(void **state) {
  test_ctx_t *t = *state;
  client_t *idle = calloc(1, sizeof(*idle));
  start(t);
  assert_int_equal(client_connect(idle, t->f.port), 0);
  client_send(idle, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_int_equal(client_response(idle, &t->r), 200);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  /* Held until the test answers it, so the drain cannot end early. */
  client_send(&t->cl, "GET /held HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_true(wait_for(&st.handled, 2));
  fixture_call(&t->f, start_drain);
  /* The idle connection goes at once; the busy one is answered and closed. */
  assert_true(client_wait_closed(idle, 10000));
  assert_int_equal(st.drain_done, 0);
  fixture_call(&t->f, answer_held);
  assert_int_equal(client_response(&t->cl, &t->r), 200);
  assert_string_equal(t->r.body, "held");
  char v[32];
  assert_string_equal(response_header(&t->r, "Connection", v, sizeof(v)), "close");
  assert_true(client_wait_closed(&t->cl, 10000));
  /* Our close ends the server's linger at once, so the drain ends now
   * rather than at the linger's timeout. */
  client_close(&t->cl);
  assert_true(wait_for(&st.drain_done, 1));
  assert_int_equal(st.drain_done, 1);
  /* No new connections once draining. */
  client_t *late = calloc(1, sizeof(*late));
  assert_int_not_equal(client_connect(late, t->f.port), 0);
  client_close(late);
  client_close(idle);
  free(late);
  free(idle);
}

static void start_short_drain(fixture_t *f) {
  dg_http_server_drain(f->server, 200, drain_done, NULL);
}

/* A request that never ends is cut off at the drain deadline. */
static void test_drain_deadline(void **state) {
  test_ctx_t *t = *state;
  start(t);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  client_send(&t->cl, "GET /hang HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_true(wait_for(&st.handled, 1));
  /* Measured from before the drain starts: the cut must not come early. */
  uint64_t t0 = dg_now_ms();
  fixture_call(&t->f, start_short_drain);
  assert_true(client_wait_closed(&t->cl, 10000));
  assert_true(dg_now_ms() - t0 >= 150);
  assert_true(wait_for(&st.drain_done, 1));
  assert_int_equal(st.drain_done, 1);
  assert_int_equal(st.aborted, 1);
}

static void test_head_and_reuse_port(void **state) {
  test_ctx_t *t = *state;
  char v[64];
  t->cfg.reuse_port = true;
  start(t);
  assert_int_equal(client_connect(&t->cl, t->f.port), 0);
  client_send(&t->cl,
              "HEAD /hello HTTP/1.1\r\nHost: x\r\n\r\nGET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  size_t head_len = 0;
  assert_int_equal(read_head(&t->cl, &t->r, &head_len), 0);
  assert_string_equal(response_header(&t->r, "Content-Length", v, sizeof(v)), "5");
  assert_int_equal(client_response(&t->cl, &t->r), 200);
  assert_string_equal(t->r.body, "hello");
  /* A second server shares the port with SO_REUSEPORT; without it the bind fails. */
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg_http_server_config_t cfg = t->cfg;
  cfg.port = t->f.port;
  dg_http_server_t *second = NULL;
  dg_errctx_t err;
  assert_int_equal(dg_http_server_start(&loop, &cfg, &second, &err), 0);
  dg_http_server_close(second);
  cfg.reuse_port = false;
  assert_int_not_equal(dg_http_server_start(&loop, &cfg, &second, &err), 0);
  assert_non_null(strstr(err.message, "bind"));
  /* IPv6 loopback works too. */
  cfg.host = "::1";
  cfg.port = 0;
  assert_int_equal(dg_http_server_start(&loop, &cfg, &second, &err), 0);
  assert_true(dg_http_server_port(second) > 0);
  dg_http_server_close(second);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

static void test_access_log(void **state) {
  test_ctx_t *t = *state;
  char path[] = "/tmp/dg_access_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  t->f.access_log_path = path;
  start(t);
  assert_int_equal(
      http_once(t->f.port, "GET /hello?token=secret HTTP/1.1\r\nHost: x\r\n\r\n", &t->r), 200);
  /* A valid traceparent's trace id goes into the line; a path's bytes that
   * are not UTF-8 are replaced, so that the line stays JSON. */
  http_once(t->f.port,
            "GET /caf\xe9 HTTP/1.1\r\nHost: x\r\ntraceparent: "
            "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01\r\n\r\n",
            &t->r);
  assert_int_equal(fixture_stop(&t->f), 0);
  t->f.server = NULL;
  char text[8192] = "";
  ssize_t n = pread(fd, text, sizeof(text) - 1, 0);
  close(fd);
  unlink(path);
  assert_true(n > 0);
  const char *line = strstr(text, "\"event\":\"access\"");
  assert_non_null(line);
  assert_non_null(strstr(line, "\"path\":\"/hello\""));
  assert_non_null(strstr(line, "\"status\":200"));
  assert_non_null(strstr(line, "\"transport\":\"http\""));
  assert_non_null(strstr(line, "\"bytes\":5"));
  assert_null(strstr(text, "secret"));
  /* Every line is a JSON object of its own. */
  int lines = 0;
  for (char *p = text, *nl = strchr(p, '\n'); nl != NULL; p = nl + 1, nl = strchr(p, '\n')) {
    json_error_t jerr;
    json_t *v = json_loadb(p, (size_t)(nl - p), 0, &jerr);
    if (!json_is_object(v))
      fail_msg("not a JSON object (%s): %.*s", jerr.text, (int)(nl - p), p);
    const char *tid = json_string_value(json_object_get(v, "trace_id"));
    if (lines == 1)
      assert_string_equal(tid, "4bf92f3577b34da6a3ce929d0e0e4736");
    else
      assert_null(tid);
    json_decref(v);
    lines++;
  }
  assert_int_equal(lines, 2);
}

/* Reached through DG_TESTABLE: how much of the gathered lines one write takes. */
size_t dg__access_log_piece(bool pieces, const char *p, size_t n);

/* To a pipe, writes hold whole lines and at most PIPE_BUF bytes (a longer
 * line goes alone), so that lines of workers sharing it never mix. */
static void test_access_log_pieces(void **state) {
  (void)state;
  static char text[3 * PIPE_BUF];
  size_t line = 1000, n = 0;
  while (n + line <= sizeof(text)) {
    memset(text + n, 'x', line - 1);
    text[n + line - 1] = '\n';
    n += line;
  }
  assert_int_equal(dg__access_log_piece(false, text, n), n);
  size_t first = dg__access_log_piece(true, text, n);
  assert_true(first <= PIPE_BUF);
  assert_int_equal(first % line, 0);
  assert_int_equal(first, (PIPE_BUF / line) * line);
  assert_int_equal(dg__access_log_piece(true, text, 500), 500);
  /* One line longer than PIPE_BUF goes alone, whole. */
  memset(text, 'y', sizeof(text));
  text[PIPE_BUF + 9] = '\n';
  assert_int_equal(dg__access_log_piece(true, text, sizeof(text)), PIPE_BUF + 10);
}

/* Reached through DG_TESTABLE: duration_ms without printf. */
int dg__access_log_ms(dg_buf_t *out, uint64_t ns);

/* duration_ms is written as the general writer writes dg_log_ms's double. */
static void test_access_log_ms(void **state) {
  (void)state;
  static const uint64_t ns[] = {0,
                                499,
                                500,
                                1000,
                                120000,
                                123456,
                                999499,
                                999500,
                                1000000,
                                1500000,
                                1005000,
                                12345678,
                                100000000,
                                1234567890123,
                                86400000000000,
                                UINT64_MAX / 4};
  for (size_t i = 0; i < DG_ARRAY_SIZE(ns); i++) {
    dg_buf_t got, want;
    dg_buf_init(&got, 256);
    dg_buf_init(&want, 256);
    assert_int_equal(dg__access_log_ms(&got, ns[i]), 0);
    assert_int_equal(dg_json_write_real(&want, dg_log_ms(ns[i])), 0);
    assert_string_equal(got.data, want.data);
    dg_buf_free(&got);
    dg_buf_free(&want);
  }
  for (uint64_t v = 0; v < 3000000; v += 777) {
    dg_buf_t got, want;
    dg_buf_init(&got, 256);
    dg_buf_init(&want, 256);
    dg__access_log_ms(&got, v * 1000 + 17);
    dg_json_write_real(&want, dg_log_ms(v * 1000 + 17));
    assert_string_equal(got.data, want.data);
    dg_buf_free(&got);
    dg_buf_free(&want);
  }
}

/* The lines of the file at path. */
static size_t file_lines(const char *path) {
  FILE *f = fopen(path, "r");
  assert_non_null(f);
  size_t n = 0;
  for (int ch = fgetc(f); ch != EOF; ch = fgetc(f))
    n += ch == '\n';
  fclose(f);
  return n;
}

/* With a flush interval the lines wait across loop turns, until the
 * interval has passed or the rule changes; without one each turn writes. */
static void test_access_log_flush_interval(void **state) {
  (void)state;
  char path[] = "/tmp/dg_access_XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  close(fd);
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg_errctx_t err;
  dg_access_log_t *log = NULL;
  assert_int_equal(dg_access_log_open(&loop, path, &log, &err), 0);
  dg_http_request_t req = {.method = "GET", .path = "/x", .status = 200, .start_ns = dg_now_ns()};
  dg_strlcpy(req.id, "r1", sizeof(req.id));
  dg_strlcpy(req.peer, "127.0.0.1", sizeof(req.peer));
  /* Each turn writes its lines. */
  dg__access_log_request(log, &req);
  assert_int_equal(file_lines(path), 0);
  uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(file_lines(path), 1);
  /* An hour's interval: turns pass and nothing is written... */
  dg_access_log_set_flush(log, 3600000);
  dg__access_log_request(log, &req);
  dg__access_log_request(log, &req);
  for (int i = 0; i < 3; i++)
    uv_run(&loop, UV_RUN_NOWAIT);
  assert_int_equal(file_lines(path), 1);
  /* ...until the rule changes, which writes what waits. */
  dg_access_log_set_flush(log, 0);
  assert_int_equal(file_lines(path), 3);
  /* A short interval: the timer writes the line, without another request. */
  dg_access_log_set_flush(log, 1);
  dg__access_log_request(log, &req);
  assert_int_equal(file_lines(path), 3);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(file_lines(path), 4);
  /* Closing writes what waits. */
  dg_access_log_set_flush(log, 3600000);
  dg__access_log_request(log, &req);
  dg_access_log_close(log);
  assert_int_equal(file_lines(path), 5);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  unlink(path);
}

/* null turns the access log off: the server writes nothing anywhere. */
static void test_access_log_off(void **state) {
  test_ctx_t *t = *state;
  dg_errctx_t err;
  dg_access_log_t *log = NULL;
  uv_loop_t loop;
  uv_loop_init(&loop);
  assert_int_equal(dg_access_log_open(&loop, NULL, &log, &err), 0);
  assert_non_null(log);
  assert_int_equal(dg_access_log_open(&loop, "/nonexistent/dir/access.log", &log, &err), DG_EIO);
  assert_string_equal(err.param, "accessLog");
  assert_non_null(strstr(err.message, "/nonexistent/dir/access.log"));
  dg_access_log_close(log);
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
  (void)t;
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  dg_log_init(2, DG_LOG_WARN);
  const struct CMUnitTest tests[] = {
      T(test_get),
      T(test_request_id),
      T(test_absolute_form),
      T(test_post_and_headers),
      T(test_known_headers),
      cmocka_unit_test(test_value_bytes),
      T(test_keep_alive),
      T(test_headers_across_requests),
      T(test_pipelining_in_order),
      T(test_chunked_body),
      T(test_expect_continue),
      T(test_limit_header_bytes),
      T(test_limit_header_count),
      T(test_limit_body),
      T(test_malformed),
      T(test_grammar),
      T(test_header_timeout),
      T(test_request_timeout),
      T(test_idle_timeout),
      T(test_max_connections),
      T(test_admit_before_body),
      T(test_unadmitted_budget),
      T(test_pipeline_limit),
      T(test_backpressure),
      T(test_abort),
      T(test_drain),
      T(test_drain_deadline),
      T(test_head_and_reuse_port),
      T(test_access_log),
      T(test_access_log_off),
      cmocka_unit_test(test_access_log_pieces),
      cmocka_unit_test(test_access_log_ms),
      cmocka_unit_test(test_access_log_flush_interval),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
