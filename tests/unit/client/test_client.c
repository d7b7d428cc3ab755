/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The HTTP client against scripted upstreams on loopback: framing
 * (Content-Length, chunked, close-delimited, gzip and deflate), keep-alive
 * reuse and the pool's maximum, timeouts per phase, resets, retries with
 * Retry-After for idempotent calls only, redirects and their limits, the
 * body cap, the circuit breaker, the concurrency limit, cancellation, the
 * address policy and traceparent. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <zlib.h>

#include "client/client_test.h"
#include "client/internal.h"

static char url[256];

static const char *at(const ctx_t *t, const char *path) {
  snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", t->srv.port, path);
  return url;
}

/* ---- upstream scripts ------------------------------------------------------ */

static void serve_ok(raw_conn_t *c) {
  while (raw_read_request(c) > 0)
    raw_send(c, "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nX-Seen: yes\r\n\r\nhello");
}

static void serve_chunked(raw_conn_t *c) {
  if (raw_read_request(c) > 0)
    raw_send(c, "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                "5\r\nhello\r\n1;ext=1\r\n \r\n5\r\nworld\r\n0\r\nX-Trailer: 1\r\n\r\n");
  raw_wait_close(c);
}

static void serve_close_delimited(raw_conn_t *c) {
  if (raw_read_request(c) > 0) {
    raw_send(c, "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\npart one, ");
    sleep_ms(20);
    raw_send(c, "part two");
  }
}

/* Compresses text with zlib: gzip (wbits 31), zlib (15) or raw (-15). */
static size_t compress_text(const char *text, size_t len, int wbits, unsigned char *out,
                            size_t size) {
  z_stream z;
  memset(&z, 0, sizeof(z));
  deflateInit2(&z, 6, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY);
  z.next_in = (Bytef *)(uintptr_t)text;
  z.avail_in = (uInt)len;
  z.next_out = out;
  z.avail_out = (uInt)size;
  deflate(&z, Z_FINISH);
  size_t n = size - z.avail_out;
  deflateEnd(&z);
  return n;
}

static void send_encoded(raw_conn_t *c, int wbits, const char *coding, bool chunked) {
  static char text[20000];
  unsigned char packed[32768];
  for (size_t i = 0; i < sizeof(text) - 1; i++)
    text[i] = (char)('a' + (i * 7) % 26);
  size_t n = compress_text(text, sizeof(text) - 1, wbits, packed, sizeof(packed));
  char head[256];
  if (chunked)
    snprintf(head, sizeof(head),
             "HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nTransfer-Encoding: chunked\r\n\r\n%zx\r\n",
             coding, n);
  else
    snprintf(head, sizeof(head),
             "HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %zu\r\n\r\n", coding, n);
  raw_send(c, head);
  raw_send_n(c, packed, n);
  if (chunked)
    raw_send(c, "\r\n0\r\n\r\n");
}

#define BIG_TEXT ((size_t)2 << 20)

/* 2 MiB of text in a few kilobytes of gzip, Content-Length framed. */
static void send_big_encoded(raw_conn_t *c) {
  char *text = malloc(BIG_TEXT);
  unsigned char *packed = malloc(BIG_TEXT / 8);
  assert_non_null(text);
  assert_non_null(packed);
  for (size_t i = 0; i < BIG_TEXT; i++)
    text[i] = (char)('a' + (i * 7) % 26);
  size_t n = compress_text(text, BIG_TEXT, 31, packed, BIG_TEXT / 8);
  char head[256];
  snprintf(head, sizeof(head),
           "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: %zu\r\n\r\n", n);
  raw_send(c, head);
  raw_send_n(c, packed, n);
  free(text);
  free(packed);
}

static void serve_encoded(raw_conn_t *c) {
  const char *mode = c->srv->user;
  while (raw_read_request(c) > 0) {
    if (strcmp(mode, "big") == 0)
      send_big_encoded(c);
    else if (strcmp(mode, "gzip") == 0)
      send_encoded(c, 31, "gzip", true);
    else if (strcmp(mode, "deflate") == 0)
      send_encoded(c, 15, "deflate", false);
    else
      send_encoded(c, -15, "deflate", false);
  }
}

/* Takes the request and never answers: the call's timeout is the only
 * way it can end. */
static void serve_no_answer(raw_conn_t *c) {
  if (raw_read_request(c) > 0)
    raw_hold(c);
}

/* Sends the head and 3 of the 10 body bytes, then nothing more. */
static void serve_stalled_body(raw_conn_t *c) {
  if (raw_read_request(c) > 0) {
    raw_send(c, "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc");
    raw_hold(c);
  }
}

static void serve_reset(raw_conn_t *c) {
  if (raw_read_request(c) > 0)
    raw_reset(c);
}

/* 503 with Retry-After 0 for the first connection, then 200. */
static void serve_unavailable_once(raw_conn_t *c) {
  const char *status = c->srv->user;
  if (raw_read_request(c) <= 0)
    return;
  if (c->index == 0) {
    char resp[256];
    snprintf(resp, sizeof(resp),
             "HTTP/1.1 %s\r\nRetry-After: 0\r\nContent-Length: 13\r\nConnection: close\r\n\r\n"
             "{\"busy\":true}",
             status);
    raw_send(c, resp);
    return;
  }
  raw_send(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  raw_wait_close(c);
}

static void serve_retry_after_long(raw_conn_t *c) {
  while (raw_read_request(c) > 0)
    raw_send(c, "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 30\r\nContent-Length: 0\r\n\r\n");
}

/* /r/N redirects to /r/N-1 with the status in the query; /r/0 answers. */
static void serve_redirects(raw_conn_t *c) {
  while (raw_read_request(c) > 0) {
    char last[8192];
    raw_last_request(c->srv, last, sizeof(last));
    int n = 0;
    int code = 302;
    sscanf(strchr(last, ' ') + 1, "/r/%d?code=%d", &n, &code);
    char resp[1024];
    if (last[0] == '\0' || strlen(last) > 400)
      break;
    if (n > 0)
      snprintf(resp, sizeof(resp),
               "HTTP/1.1 %d Moved\r\nLocation: /r/%d?code=%d\r\nContent-Length: 3\r\n\r\nbye", code,
               n - 1, code);
    else
      snprintf(resp, sizeof(resp), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%.*s",
               (int)strcspn(last, "\r"), (int)strcspn(last, "\r"), last);
    resp[sizeof(resp) - 1] = '\0';
    raw_send(c, resp);
  }
}

static void serve_big(raw_conn_t *c) {
  static char body[5000];
  memset(body, 'x', sizeof(body));
  if (raw_read_request(c) <= 0)
    return;
  raw_send(c, "HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n");
  raw_send_n(c, body, sizeof(body));
  raw_wait_close(c);
}

static void serve_status_from_user(raw_conn_t *c) {
  atomic_int *status = c->srv->user;
  while (raw_read_request(c) > 0) {
    char resp[128];
    snprintf(resp, sizeof(resp), "HTTP/1.1 %d X\r\nContent-Length: 4\r\n\r\nbody", (int)*status);
    raw_send(c, resp);
  }
}

static void serve_hang(raw_conn_t *c) {
  raw_read_request(c);
  raw_wait_close(c);
}

static void serve_slow_ok(raw_conn_t *c) {
  while (raw_read_request(c) > 0) {
    sleep_ms(60);
    raw_send(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  }
}

static void serve_garbage(raw_conn_t *c) {
  if (raw_read_request(c) > 0)
    raw_send(c, "HTTP/1.1 2x0 OK\r\n\r\n");
  raw_wait_close(c);
}

/* ---- framing ---------------------------------------------------------------- */

static void test_content_length(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_ok, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  t->out[0].want_header = "x-seen";
  assert_int_equal(call_once(t, "GET", at(t, "/a?key=secret"), &t->out[0]), 200);
  assert_int_equal(t->out[0].rc, 0);
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_NONE);
  assert_string_equal(t->out[0].body, "hello");
  assert_string_equal(t->out[0].header, "yes");
  assert_int_equal(t->out[0].attempts, 1);
  assert_non_null(strstr(t->out[0].url, "/a?key=secret"));
  char req[8192];
  raw_last_request(&t->srv, req, sizeof(req));
  assert_non_null(strstr(req, "GET /a?key=secret HTTP/1.1\r\n"));
  assert_non_null(strstr(req, "Accept-Encoding: gzip, deflate\r\n"));
  assert_int_equal(ctx_close(t), 0);
}

static void test_chunked(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_chunked, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[0]), 200);
  assert_string_equal(t->out[0].body, "hello world");
  assert_int_equal(ctx_close(t), 0);
}

static void test_close_delimited(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_close_delimited, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[0]), 200);
  assert_string_equal(t->out[0].body, "part one, part two");
  /* A connection that ended the body cannot be pooled. */
  assert_int_equal(dg_http_client_idle_connections(t->client), 0);
  assert_int_equal(ctx_close(t), 0);
}

static void check_encoded(const char *mode) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_encoded, (void *)mode), 0);
  assert_int_equal(ctx_client(t), 0);
  assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[0]), 200);
  assert_int_equal(t->out[0].body_len, 19999);
  for (size_t i = 0; i < 19999; i++)
    assert_int_equal(t->out[0].body[i], 'a' + (i * 7) % 26);
  assert_int_equal(ctx_close(t), 0);
}

static void test_gzip_chunked(void **state) {
  check_encoded("gzip");
}

static void test_deflate_zlib_and_raw(void **state) {
  check_encoded("deflate");
  check_encoded("raw");
}

/* A body that decodes to far more than one turn's share is decoded over
 * several loop turns while the connection stops reading, and the
 * connection is reused afterwards. */
static void test_large_gzip_over_several_turns(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_encoded, "big"), 0);
  assert_int_equal(ctx_client(t), 0);
  for (int k = 0; k < 3; k++) {
    assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[0]), 200);
    assert_int_equal(t->out[0].body_len, BIG_TEXT);
    for (size_t i = 0; i < sizeof(t->out[0].body) - 1; i++)
      assert_int_equal(t->out[0].body[i], 'a' + (i * 7) % 26);
    assert_int_equal(dg_http_client_idle_connections(t->client), 1);
  }
  assert_int_equal(t->srv.accepted, 1);
  assert_int_equal(ctx_close(t), 0);
}

static void test_malformed_response(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_garbage, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  call_once(t, "GET", at(t, "/"), &t->out[0]);
  assert_int_equal(t->out[0].rc, DG_EPROTO);
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_PROTOCOL);
  assert_non_null(strstr(t->out[0].msg, "malformed response"));
  assert_int_equal(ctx_close(t), 0);
}

/* ---- keep-alive --------------------------------------------------------------- */

static void test_keep_alive_reuse(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_ok, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[0]), 200);
    assert_int_equal(dg_http_client_idle_connections(t->client), 1);
  }
  assert_int_equal(t->srv.accepted, 1);
  assert_int_equal(t->srv.requests, 3);
  assert_int_equal(ctx_close(t), 0);
}

/* A finished call's memory serves the next call, which starts clean: its
 * response is its own. */
static void test_call_memory_is_reused(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_ok, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/first"), &t->out[0]);
  dg_http_call_t *first = start(t, &r);
  assert_non_null(first);
  assert_true(run_until(t, &t->out[0], 1));
  uintptr_t first_at = (uintptr_t)first;
  uv_run(&t->loop, UV_RUN_NOWAIT); /* its memory goes back in the close callback */
  req_init(&r, "GET", at(t, "/second"), &t->out[1]);
  dg_http_call_t *second = start(t, &r);
  assert_int_equal((uintptr_t)second, first_at);
  assert_true(run_until(t, &t->out[1], 1));
  assert_int_equal(t->out[1].status, 200);
  assert_string_equal(t->out[1].body, "hello");
  assert_int_equal(t->out[1].attempts, 1);
  assert_int_equal(t->out[1].redirects, 0);
  assert_int_equal(ctx_close(t), 0);
}

static void test_pool_maximum(void **state) {
  ctx_t *t = ctx_new();
  t->cfg.pool_max_per_origin = 2;
  assert_int_equal(raw_start(&t->srv, serve_slow_ok, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  for (int i = 0; i < 4; i++) {
    req_init(&r, "GET", at(t, "/"), &t->out[0]);
    assert_non_null(start(t, &r));
  }
  assert_true(run_until(t, &t->out[0], 4));
  assert_int_equal(t->srv.accepted, 4);
  assert_int_equal(dg_http_client_idle_connections(t->client), 2);
  /* The next calls take the pooled connections. */
  for (int i = 0; i < 2; i++) {
    req_init(&r, "GET", at(t, "/"), &t->out[1]);
    assert_non_null(start(t, &r));
  }
  assert_true(run_until(t, &t->out[1], 2));
  assert_int_equal(t->srv.accepted, 4);
  assert_int_equal(ctx_close(t), 0);
}

static void test_idle_timeout_closes(void **state) {
  ctx_t *t = ctx_new();
  t->cfg.pool_idle_ms = 30;
  assert_int_equal(raw_start(&t->srv, serve_ok, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[0]), 200);
  assert_int_equal(dg_http_client_idle_connections(t->client), 1);
  /* The loop runs until the idle timer has closed it, however late. */
  assert_true(run_until_idle(t, 0));
  assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[0]), 200);
  assert_int_equal(t->srv.accepted, 2);
  assert_int_equal(ctx_close(t), 0);
}

/* ---- timeouts ------------------------------------------------------------------- */

static void test_first_byte_timeout(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_no_answer, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  r.timeouts.first_byte_ms = 60;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].rc, DG_ETIMEDOUT);
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_TIMEOUT);
  assert_string_equal(t->out[0].phase, "first_byte");
  assert_non_null(strstr(t->out[0].msg, "first byte"));
  /* Not a connection error: no retry. */
  assert_int_equal(t->out[0].attempts, 1);
  assert_int_equal(ctx_close(t), 0);
}

static void test_body_stall_timeout(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_stalled_body, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  /* The same limit bounds the wait for the head, which must win: a second
   * is far more than the upstream thread needs, even on a loaded machine. */
  r.timeouts.first_byte_ms = 1000;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_TIMEOUT);
  assert_string_equal(t->out[0].phase, "body");
  assert_int_equal(ctx_close(t), 0);
}

static void test_total_timeout(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_no_answer, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  r.timeouts.total_ms = 60;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_TIMEOUT);
  assert_string_equal(t->out[0].phase, "call");
  assert_int_equal(ctx_close(t), 0);
}

/* A listener that never accepts, with its backlog filled, leaves further
 * connects waiting for a SYN-ACK that does not come. The backlog is full
 * once the listening socket reports a queued connection (readable), which
 * the test waits for rather than for a while. */
static void test_connect_timeout(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start_on(&t->srv, NULL, NULL, NULL, false), 0);
  int fillers[4];
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)t->srv.port)};
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  for (int i = 0; i < 4; i++) {
    fillers[i] = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    connect(fillers[i], (struct sockaddr *)&a, sizeof(a));
  }
  struct pollfd queued = {.fd = t->srv.fd, .events = POLLIN};
  assert_int_equal(poll(&queued, 1, 10000), 1);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  r.timeouts.connect_ms = 60;
  r.max_retries = 1;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_TIMEOUT);
  assert_string_equal(t->out[0].phase, "connect");
  /* A connect timeout is a connection error: retried. */
  assert_int_equal(t->out[0].attempts, 2);
  for (int i = 0; i < 4; i++)
    close(fillers[i]);
  assert_int_equal(ctx_close(t), 0);
}

static void test_refused(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start_on(&t->srv, NULL, NULL, NULL, false), 0);
  int port = t->srv.port;
  raw_stop(&t->srv); /* the port is now closed */
  assert_int_equal(ctx_client(t), 0);
  char u[64];
  snprintf(u, sizeof(u), "http://127.0.0.1:%d/x", port);
  dg_http_client_request_t r;
  req_init(&r, "GET", u, &t->out[0]);
  r.max_retries = 0;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].rc, DG_EUPSTREAM);
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_CONNECT);
  assert_non_null(strstr(t->out[0].msg, "connection refused"));
  assert_non_null(strstr(t->out[0].msg, "upstream 'test' GET http://127.0.0.1:"));
  assert_int_equal(ctx_close(t), 0);
}

/* ---- retries ------------------------------------------------------------------------ */

static void test_reset_retried_for_get_only(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_reset, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  r.max_retries = 2;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_CONNECT);
  assert_int_equal(t->out[0].attempts, 3);
  assert_non_null(strstr(t->out[0].msg, "after 3 attempts"));
  req_init(&r, "POST", at(t, "/"), &t->out[1]);
  r.max_retries = 2;
  r.body = "{}";
  r.body_len = 2;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[1], 1));
  assert_int_equal(t->out[1].failure, DG_HTTP_FAIL_CONNECT);
  assert_int_equal(t->out[1].attempts, 1);
  assert_int_equal(t->srv.requests, 4);
  assert_int_equal(ctx_close(t), 0);
}

static void check_retry_once(const char *status, const char *method, bool unsafe_ok,
                             unsigned want_attempts, int want_status) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_unavailable_once, (void *)status), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, method, at(t, "/"), &t->out[0]);
  r.retry_unsafe = unsafe_ok;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].attempts, want_attempts);
  assert_int_equal(t->out[0].status, want_status);
  assert_int_equal(ctx_close(t), 0);
}

static void test_503_and_429_retried_for_get(void **state) {
  check_retry_once("503 Service Unavailable", "GET", false, 2, 200);
  check_retry_once("429 Too Many Requests", "GET", false, 2, 200);
  check_retry_once("503 Service Unavailable", "PUT", false, 2, 200);
}

static void test_503_not_retried_for_post(void **state) {
  check_retry_once("503 Service Unavailable", "POST", false, 1, 503);
  check_retry_once("429 Too Many Requests", "PATCH", false, 1, 429);
  /* Unless the caller says a retry is safe. */
  check_retry_once("503 Service Unavailable", "POST", true, 2, 200);
}

static void test_status_error_has_excerpt(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_unavailable_once, "503 Service Unavailable"), 0);
  assert_int_equal(ctx_client(t), 0);
  call_once(t, "POST", at(t, "/orders?apikey=hidden"), &t->out[0]);
  assert_int_equal(t->out[0].rc, DG_EUPSTREAM);
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_STATUS);
  assert_string_equal(t->out[0].body, "{\"busy\":true}");
  assert_non_null(strstr(t->out[0].msg, "answered 503 Service Unavailable: {\"busy\":true"));
  assert_non_null(strstr(t->out[0].msg, "/orders"));
  assert_null(strstr(t->out[0].msg, "hidden"));
  assert_int_equal(ctx_close(t), 0);
}

static void test_long_retry_after_not_waited(void **state) {
  ctx_t *t = ctx_new();
  t->cfg.retry_max_ms = 100;
  assert_int_equal(raw_start(&t->srv, serve_retry_after_long, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  call_once(t, "GET", at(t, "/"), &t->out[0]);
  assert_int_equal(t->out[0].status, 429);
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_STATUS);
  assert_int_equal(t->out[0].attempts, 1);
  assert_int_equal(ctx_close(t), 0);
}

static void serve_retry_after_two(raw_conn_t *c) {
  while (raw_read_request(c) > 0)
    raw_send(c, "HTTP/1.1 503 Busy\r\nRetry-After: 2\r\nContent-Length: 0\r\n\r\n");
}

/* The retry waits for what Retry-After asked: its start is scheduled no
 * earlier than two seconds after the answer (the call is cancelled then,
 * so the test does not wait). */
static void test_retry_after_honoured(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_retry_after_two, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  uint64_t sent = dg_now_ms();
  dg_http_call_t *call = start(t, &r);
  assert_non_null(call);
  while (call->state != DG__CALL_BACKOFF && t->out[0].called == 0)
    uv_run(&t->loop, UV_RUN_ONCE);
  assert_int_equal(call->state, DG__CALL_BACKOFF);
  assert_true(call->phase_deadline_ms >= sent + 2000);
  assert_int_equal(t->srv.requests, 1);
  dg_http_call_cancel(call);
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].rc, DG_ECANCELED);
  assert_int_equal(ctx_close(t), 0);
}

/* The first connection answers once, then takes the next request and
 * closes without an answer, as a server closing an idle connection does. */
static void serve_then_drop(raw_conn_t *c) {
  if (raw_read_request(c) <= 0)
    return;
  raw_send(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
  if (c->index == 0) {
    raw_read_request(c);
    return;
  }
  while (raw_read_request(c) > 0)
    raw_send(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
}

static void test_stale_keep_alive(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_then_drop, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[0]), 200);
  /* A GET on the dead pooled connection goes again on a fresh one; both
   * requests were sent, and both count. */
  assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[1]), 200);
  assert_int_equal(t->out[1].attempts, 2);
  assert_int_equal(t->srv.accepted, 2);
  assert_int_equal(t->srv.requests, 3);
  assert_int_equal(ctx_close(t), 0);
  /* A POST is not sent twice. */
  t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_then_drop, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[0]), 200);
  call_once(t, "POST", at(t, "/"), &t->out[1]);
  assert_int_equal(t->out[1].failure, DG_HTTP_FAIL_CONNECT);
  assert_non_null(strstr(t->out[1].msg, "closed before a response"));
  assert_int_equal(t->srv.accepted, 1);
  assert_int_equal(ctx_close(t), 0);
}

/* The first connection answers once and resets the next request it reads;
 * every later connection resets its request. */
static void serve_ok_then_reset(raw_conn_t *c) {
  if (raw_read_request(c) <= 0)
    return;
  if (c->index == 0) {
    raw_send(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    if (raw_read_request(c) <= 0)
      return;
  }
  raw_reset(c);
}

/* The attempts reported equal the requests the server saw when the first
 * one went out on a pooled connection, and they stay within max_retries + 1. */
static void test_stale_then_resets_counted(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_ok_then_reset, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[0]), 200);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[1]);
  r.max_retries = 2;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[1], 1));
  assert_int_equal(t->out[1].failure, DG_HTTP_FAIL_CONNECT);
  assert_int_equal(t->srv.requests, 1 + 3);
  assert_int_equal(t->out[1].attempts, 3);
  assert_non_null(strstr(t->out[1].msg, "after 3 attempts"));
  assert_int_equal(ctx_close(t), 0);
}

/* ---- redirects ------------------------------------------------------------------------ */

static void test_redirects_followed(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_redirects, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  assert_int_equal(call_once(t, "GET", at(t, "/r/3"), &t->out[0]), 200);
  assert_int_equal(t->out[0].redirects, 3);
  assert_non_null(strstr(t->out[0].url, "/r/0?code=302"));
  assert_string_equal(t->out[0].body, "GET /r/0?code=302 HTTP/1.1");
  /* All on one kept-alive connection. */
  assert_int_equal(t->srv.accepted, 1);
  assert_int_equal(ctx_close(t), 0);
}

static void test_redirect_limit(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_redirects, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/r/4"), &t->out[0]);
  r.max_redirects = 3;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_REDIRECTS);
  assert_non_null(strstr(t->out[0].msg, "redirected more than 3 times"));
  /* With redirects off, the 3xx itself is the answer. */
  req_init(&r, "GET", at(t, "/r/1"), &t->out[1]);
  r.max_redirects = 0;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[1], 1));
  assert_int_equal(t->out[1].rc, 0);
  assert_int_equal(t->out[1].status, 302);
  assert_int_equal(ctx_close(t), 0);
}

static void test_redirect_method_rules(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_redirects, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  const struct {
    const char *path;
    const char *method;
    const char *want;
  } cases[] = {
      {"/r/1?code=303", "POST", "GET /r/0?code=303"},
      {"/r/1?code=302", "POST", "GET /r/0?code=302"},
      {"/r/1?code=307", "POST", "POST /r/0?code=307"},
      {"/r/1?code=308", "PUT", "PUT /r/0?code=308"},
      {"/r/1?code=303", "HEAD", ""},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(cases); i++) {
    dg_http_client_request_t r;
    memset(&t->out[0], 0, sizeof(t->out[0]));
    req_init(&r, cases[i].method, at(t, cases[i].path), &t->out[0]);
    r.body = "{\"a\":1}";
    r.body_len = 7;
    assert_non_null(start(t, &r));
    assert_true(run_until(t, &t->out[0], 1));
    assert_int_equal(t->out[0].status, 200);
    assert_int_equal(strncmp(t->out[0].body, cases[i].want, strlen(cases[i].want)), 0);
    char last[8192];
    raw_last_request(&t->srv, last, sizeof(last));
    bool has_body = strstr(last, "\r\n\r\n{\"a\":1}") != NULL;
    assert_int_equal(has_body, strncmp(cases[i].want, "GET", 3) != 0 && cases[i].want[0]);
  }
  assert_int_equal(ctx_close(t), 0);
}

/* ---- caps and limits -------------------------------------------------------------------- */

static void test_body_cap(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_big, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  r.max_body_bytes = 1000;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].rc, DG_E2BIG);
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_TOO_BIG);
  assert_non_null(strstr(t->out[0].msg, "over the cap of 1000 bytes"));
  assert_int_equal(ctx_close(t), 0);
}

/* Moves the breaker's opening back by its cool-down, as if that much time
 * had passed: the test decides when the cool-down is over, so the breaker
 * cannot close early on a slow run. */
static void cool_down(dg__connector_t *conn, const char *origin) {
  for (dg__breaker_t *b = conn->breakers; b != NULL; b = b->next) {
    if (strcmp(b->origin, origin) == 0)
      b->opened_ms -= conn->cfg.breaker_cooldown_ms;
  }
}

static void test_breaker_opens_probes_and_closes(void **state) {
  ctx_t *t = ctx_new();
  static atomic_int status;
  status = 500;
  t->cfg.connector_defaults.breaker_failures = 2;
  t->cfg.connector_defaults.breaker_cooldown_ms = 60000;
  assert_int_equal(raw_start(&t->srv, serve_status_from_user, &status), 0);
  assert_int_equal(ctx_client(t), 0);
  dg__connector_t *conn = dg__connector_get(t->client, "test");
  char origin[64];
  snprintf(origin, sizeof(origin), "http://127.0.0.1:%d", t->srv.port);
  for (int i = 0; i < 2; i++)
    assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[0]), 500);
  assert_int_equal(dg__breaker_state(conn, origin), DG__BREAKER_OPEN);
  /* Open: fails fast, nothing reaches the upstream. */
  int before = t->srv.requests;
  call_once(t, "GET", at(t, "/"), &t->out[1]);
  assert_int_equal(t->out[1].failure, DG_HTTP_FAIL_BREAKER);
  assert_int_equal(t->out[1].rc, DG_EBUSY);
  assert_int_equal(t->out[1].attempts, 0);
  assert_int_equal(t->srv.requests, before);
  /* After the cool-down a failing probe opens it again. */
  cool_down(conn, origin);
  assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[2]), 500);
  assert_int_equal(dg__breaker_state(conn, origin), DG__BREAKER_OPEN);
  /* A succeeding probe closes it. */
  status = 200;
  cool_down(conn, origin);
  assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[3]), 200);
  assert_int_equal(dg__breaker_state(conn, origin), DG__BREAKER_CLOSED);
  assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[3]), 200);
  assert_int_equal(ctx_close(t), 0);
}

static void test_concurrency_limit_and_queue(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_slow_ok, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_connector_config_t cc = {.name = "test", .max_concurrency = 2, .max_queue = 2};
  assert_int_equal(dg_http_client_set_connector(t->client, &cc), 0);
  dg_http_client_request_t r;
  for (int i = 0; i < 5; i++) {
    req_init(&r, "GET", at(t, "/"), &t->out[0]);
    assert_non_null(start(t, &r));
  }
  assert_true(run_until(t, &t->out[0], 5));
  /* Two running, two waiting, the fifth refused at once. */
  assert_int_equal(t->srv.requests, 4);
  assert_int_equal(t->srv.max_active, 2);
  assert_int_equal(dg_http_client_active(t->client), 0);
  assert_int_equal(ctx_close(t), 0);
}

static void test_overloaded_message(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_slow_ok, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_connector_config_t cc = {.name = "test", .max_concurrency = 1, .max_queue = 1};
  assert_int_equal(dg_http_client_set_connector(t->client, &cc), 0);
  dg_http_client_request_t r;
  for (int i = 0; i < 3; i++) {
    req_init(&r, "GET", at(t, "/"), &t->out[i]);
    assert_non_null(start(t, &r));
  }
  assert_true(run_until(t, &t->out[2], 1));
  assert_int_equal(t->out[2].failure, DG_HTTP_FAIL_OVERLOADED);
  assert_int_equal(t->out[2].rc, DG_EBUSY);
  assert_int_equal(t->out[0].called, 0);
  assert_true(run_until(t, &t->out[1], 1));
  assert_int_equal(t->out[0].status, 200);
  assert_int_equal(t->out[1].status, 200);
  assert_int_equal(ctx_close(t), 0);
}

/* ---- cancellation and close --------------------------------------------------------------- */

static void test_cancel(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_hang, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  dg_http_call_t *call = start(t, &r);
  assert_non_null(call);
  while (t->srv.requests == 0)
    uv_run(&t->loop, UV_RUN_NOWAIT);
  dg_http_call_cancel(call);
  /* Never from inside the cancel itself. */
  assert_int_equal(t->out[0].called, 0);
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].rc, DG_ECANCELED);
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_CANCELED);
  /* A call cancelled before it started. */
  req_init(&r, "GET", at(t, "/"), &t->out[1]);
  call = start(t, &r);
  dg_http_call_cancel(call);
  assert_true(run_until(t, &t->out[1], 1));
  assert_int_equal(t->out[1].rc, DG_ECANCELED);
  run_for(t, 20);
  assert_int_equal(t->out[0].called + t->out[1].called, 2);
  assert_int_equal(ctx_close(t), 0);
}

static void test_close_cancels_calls(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_hang, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  assert_non_null(start(t, &r));
  while (t->srv.requests == 0)
    uv_run(&t->loop, UV_RUN_NOWAIT);
  dg_http_client_close(t->client);
  dg_errctx_t err;
  assert_int_equal(dg_http_client_request(t->client, &r, NULL, &err), DG_ECLOSED);
  uv_run(&t->loop, UV_RUN_DEFAULT);
  assert_int_equal(t->out[0].called, 1);
  assert_int_equal(t->out[0].rc, DG_ECANCELED);
  t->client = NULL;
  assert_int_equal(ctx_close(t), 0);
}

/* ---- policy, tracing, streaming, arguments ------------------------------------------------- */

static bool only_first_loopback(const struct sockaddr *sa, void *data) {
  const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
  return sa->sa_family == AF_INET && ntohl(in->sin_addr.s_addr) == 0x7f000001;
}

static void serve_redirect_elsewhere(raw_conn_t *c) {
  int *other = c->srv->user;
  while (raw_read_request(c) > 0) {
    char resp[256];
    snprintf(resp, sizeof(resp),
             "HTTP/1.1 302 Found\r\nLocation: http://127.0.0.2:%d/x\r\nContent-Length: 0\r\n\r\n",
             *other);
    raw_send(c, resp);
  }
}

static void test_address_policy(void **state) {
  ctx_t *t = ctx_new();
  static int other_port;
  assert_int_equal(raw_start_on(&t->srv2, "127.0.0.2", serve_ok, NULL, true), 0);
  other_port = t->srv2.port;
  assert_int_equal(raw_start(&t->srv, serve_redirect_elsewhere, &other_port), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  r.addresses.enforce = true;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].rc, DG_EPERM);
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_POLICY);
  assert_non_null(strstr(t->out[0].msg, "127.0.0.1"));
  assert_int_equal(t->srv.requests, 0);
  /* Loopback allowed, but the hook refuses the redirect target. */
  req_init(&r, "GET", at(t, "/"), &t->out[1]);
  r.addresses.enforce = true;
  r.addresses.allow_loopback = true;
  r.addresses.allow = only_first_loopback;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[1], 1));
  assert_int_equal(t->out[1].failure, DG_HTTP_FAIL_POLICY);
  assert_non_null(strstr(t->out[1].msg, "127.0.0.2"));
  assert_int_equal(t->srv.requests, 1);
  assert_int_equal(t->srv2.requests, 0);
  assert_int_equal(t->srv.accepted, 1);
  /* Without the hook the redirect is followed. */
  r.addresses.allow = NULL;
  r.user = &t->out[2];
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[2], 1));
  assert_int_equal(t->out[2].status, 200);
  assert_int_equal(t->srv2.requests, 1);
  assert_int_equal(ctx_close(t), 0);
}

#define BIG_BODY (8u << 20)

static unsigned char big_byte(size_t i) {
  return (unsigned char)((i * 7 + i / 4096) & 0xff);
}

/* Reads only after a pause, so that the client's request fills the socket
 * buffers and the rest of it waits in the client; then checks every byte
 * of the body in order and answers "ok" or where it differed. */
static void serve_check_big_body(raw_conn_t *c) {
  sleep_ms(100);
  char *end = NULL;
  while (end == NULL && raw_fill(c) > 0)
    end = strstr(c->buf, "\r\n\r\n");
  if (end == NULL)
    return;
  size_t head = (size_t)(end - c->buf) + 4;
  size_t got = 0, bad = SIZE_MAX;
  for (size_t i = head; i < c->len; i++, got++)
    bad = bad == SIZE_MAX && (unsigned char)c->buf[i] != big_byte(got) ? got : bad;
  while (got < BIG_BODY) {
    c->len = 0;
    if (raw_fill(c) <= 0)
      break;
    for (size_t i = 0; i < c->len; i++, got++)
      bad = bad == SIZE_MAX && (unsigned char)c->buf[i] != big_byte(got) ? got : bad;
  }
  char answer[128], text[32];
  int n = bad == SIZE_MAX && got == BIG_BODY
              ? snprintf(text, sizeof(text), "ok")
              : snprintf(text, sizeof(text), "at %zu of %zu", bad, got);
  snprintf(answer, sizeof(answer), "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n%s", n, text);
  raw_send(c, answer);
  raw_wait_close(c);
}

/* A request larger than the socket takes at once leaves partly at once and
 * partly from the write queue, whole and in order. */
static void test_large_request_body_in_order(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_check_big_body, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  unsigned char *body = malloc(BIG_BODY);
  assert_non_null(body);
  for (size_t i = 0; i < BIG_BODY; i++)
    body[i] = big_byte(i);
  dg_http_client_request_t r;
  req_init(&r, "POST", at(t, "/upload"), &t->out[0]);
  r.body = body;
  r.body_len = BIG_BODY;
  assert_non_null(start(t, &r));
  free(body); /* the client copied it */
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].status, 200);
  assert_string_equal(t->out[0].body, "ok");
  assert_int_equal(ctx_close(t), 0);
}

/* A pooled connection serves a later call only when that call's policy
 * allows the address it is connected to. */
static void test_pooled_connection_checked_against_policy(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_ok, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  r.addresses.enforce = true;
  r.addresses.allow_loopback = true;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].status, 200);
  assert_int_equal(dg_http_client_idle_connections(t->client), 1);
  req_init(&r, "GET", at(t, "/"), &t->out[1]);
  r.addresses.enforce = true;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[1], 1));
  assert_int_equal(t->out[1].failure, DG_HTTP_FAIL_POLICY);
  assert_int_equal(t->srv.requests, 1);
  /* The same policy as the first call takes the pooled connection again. */
  req_init(&r, "GET", at(t, "/"), &t->out[2]);
  r.addresses.enforce = true;
  r.addresses.allow_loopback = true;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[2], 1));
  assert_int_equal(t->out[2].status, 200);
  assert_int_equal(t->srv.requests, 2);
  assert_int_equal(t->srv.accepted, 1);
  assert_int_equal(ctx_close(t), 0);
}

static void test_traceparent(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_ok, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  r.request_id = "4BF92F35-77B3-4DA6-A3CE-929D0E0E4736";
  dg_http_header_t h[] = {{"traceparent", "forged"}, {"X-Api-Key", "k1"}};
  r.headers = h;
  r.nheaders = 2;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  char req[8192];
  raw_last_request(&t->srv, req, sizeof(req));
  const char *tp = strstr(req, "traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-");
  assert_non_null(tp);
  tp += strlen("traceparent: 00-4bf92f3577b34da6a3ce929d0e0e4736-");
  assert_int_equal(strspn(tp, "0123456789abcdef"), 16);
  assert_int_equal(strncmp(tp + 16, "-01\r\n", 5), 0);
  assert_null(strstr(req, "forged"));
  assert_non_null(strstr(req, "X-Api-Key: k1\r\n"));
  assert_non_null(strstr(req, "User-Agent: datagate/"));
  assert_int_equal(ctx_close(t), 0);
}

typedef struct stream_state {
  size_t bytes;
  int chunks;
  int head_status;
} stream_state_t;

static stream_state_t streamed;

static int on_head(dg_http_call_t *call, int status, const dg_http_header_t *headers,
                   size_t nheaders, void *user) {
  streamed.head_status = status;
  return 0;
}

static int on_chunk(dg_http_call_t *call, const char *data, size_t len, void *user) {
  for (size_t i = 0; i < len; i++) {
    if (data[i] != 'a' + (char)((streamed.bytes + i) * 7 % 26))
      return DG_EPROTO;
  }
  streamed.bytes += len;
  streamed.chunks++;
  return 0;
}

static void test_streaming(void **state) {
  ctx_t *t = ctx_new();
  memset(&streamed, 0, sizeof(streamed));
  assert_int_equal(raw_start(&t->srv, serve_encoded, "gzip"), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  r.on_head = on_head;
  r.on_chunk = on_chunk;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].rc, 0);
  assert_int_equal(streamed.head_status, 200);
  assert_int_equal(streamed.bytes, 19999);
  assert_true(streamed.chunks >= 2);
  assert_int_equal(t->out[0].body_len, 0);
  assert_int_equal(ctx_close(t), 0);
}

static int refuse_chunk(dg_http_call_t *call, const char *data, size_t len, void *user) {
  return DG_E2BIG;
}

static void test_streaming_abort(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(raw_start(&t->srv, serve_ok, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", at(t, "/"), &t->out[0]);
  r.on_chunk = refuse_chunk;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].rc, DG_E2BIG);
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_ABORTED);
  assert_int_equal(ctx_close(t), 0);
}

static void test_bad_arguments(void **state) {
  ctx_t *t = ctx_new();
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  dg_errctx_t err;
  req_init(&r, "FETCH", "http://x/", &t->out[0]);
  assert_int_equal(dg_http_client_request(t->client, &r, NULL, &err), DG_EINVAL);
  assert_string_equal(err.param, "method");
  assert_non_null(strstr(err.message, "FETCH"));
  req_init(&r, "GET", "ftp://x/?key=secret", &t->out[0]);
  assert_int_equal(dg_http_client_request(t->client, &r, NULL, &err), DG_EINVAL);
  assert_string_equal(err.param, "url");
  assert_non_null(strstr(err.message, "http:// or https://"));
  assert_null(strstr(err.message, "secret"));
  req_init(&r, "GET", "http://user:pw@x/", &t->out[0]);
  assert_int_equal(dg_http_client_request(t->client, &r, NULL, &err), DG_EINVAL);
  dg_http_header_t bad[] = {{"X-Evil", "a\r\nInjected: 1"}};
  req_init(&r, "GET", "http://x/", &t->out[0]);
  r.headers = bad;
  r.nheaders = 1;
  assert_int_equal(dg_http_client_request(t->client, &r, NULL, &err), DG_EINVAL);
  assert_string_equal(err.param, "headers");
  run_for(t, 10);
  assert_int_equal(t->out[0].called, 0);
  assert_int_equal(ctx_close(t), 0);
}

static void test_metrics_counted(void **state) {
  ctx_t *t = ctx_new();
  dg_metrics_reset();
  assert_int_equal(raw_start(&t->srv, serve_ok, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  assert_int_equal(call_once(t, "GET", at(t, "/"), &t->out[0]), 200);
  dg_buf_t out;
  dg_buf_init(&out, 1 << 20);
  dg_metrics_render(&out);
  assert_non_null(strstr(out.data, "dg_upstream_calls_total{connector=\"test\",outcome=\"ok\"} 1"));
  assert_non_null(
      strstr(out.data, "dg_upstream_call_duration_seconds_count{connector=\"test\"} 1"));
  dg_buf_free(&out);
  assert_int_equal(ctx_close(t), 0);
}

int main(void) {
  dg_log_init(2, DG_LOG_ERROR);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_content_length),
      cmocka_unit_test(test_chunked),
      cmocka_unit_test(test_close_delimited),
      cmocka_unit_test(test_gzip_chunked),
      cmocka_unit_test(test_large_gzip_over_several_turns),
      cmocka_unit_test(test_deflate_zlib_and_raw),
      cmocka_unit_test(test_malformed_response),
      cmocka_unit_test(test_keep_alive_reuse),
      cmocka_unit_test(test_call_memory_is_reused),
      cmocka_unit_test(test_pool_maximum),
      cmocka_unit_test(test_idle_timeout_closes),
      cmocka_unit_test(test_first_byte_timeout),
      cmocka_unit_test(test_body_stall_timeout),
      cmocka_unit_test(test_total_timeout),
      cmocka_unit_test(test_connect_timeout),
      cmocka_unit_test(test_refused),
      cmocka_unit_test(test_reset_retried_for_get_only),
      cmocka_unit_test(test_503_and_429_retried_for_get),
      cmocka_unit_test(test_503_not_retried_for_post),
      cmocka_unit_test(test_status_error_has_excerpt),
      cmocka_unit_test(test_long_retry_after_not_waited),
      cmocka_unit_test(test_retry_after_honoured),
      cmocka_unit_test(test_stale_keep_alive),
      cmocka_unit_test(test_stale_then_resets_counted),
      cmocka_unit_test(test_redirects_followed),
      cmocka_unit_test(test_redirect_limit),
      cmocka_unit_test(test_redirect_method_rules),
      cmocka_unit_test(test_body_cap),
      cmocka_unit_test(test_breaker_opens_probes_and_closes),
      cmocka_unit_test(test_concurrency_limit_and_queue),
      cmocka_unit_test(test_overloaded_message),
      cmocka_unit_test(test_cancel),
      cmocka_unit_test(test_close_cancels_calls),
      cmocka_unit_test(test_address_policy),
      cmocka_unit_test(test_large_request_body_in_order),
      cmocka_unit_test(test_pooled_connection_checked_against_policy),
      cmocka_unit_test(test_traceparent),
      cmocka_unit_test(test_streaming),
      cmocka_unit_test(test_streaming_abort),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_metrics_counted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
