/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The bytes-in path without sockets: a capture connection fed byte by
 * byte, the order of handler calls across loop turns, idle memory, aborts
 * and the small public helpers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/internal.h"

static int handled;
static int depth;
static int max_depth;
static int aborted;

static void on_abort(dg_http_request_t *req, void *data) {
  aborted++;
}

static void handler(dg_http_request_t *req) {
  handled++;
  depth++;
  if (depth > max_depth)
    max_depth = depth;
  if (strcmp(dg_http_request_path(req), "/hang") == 0) {
    dg_http_request_events_t ev = {on_abort, NULL, NULL};
    dg_http_request_watch(req, &ev);
  } else {
    size_t len = 0;
    const char *body = dg_http_request_body(req, &len);
    char *out = dg_arena_sprintf(dg_http_request_arena(req), "[%s %.*s]", dg_http_request_path(req),
                                 (int)len, body);
    dg_http_respond(req, 200, NULL, 0, out, strlen(out));
  }
  depth--;
}

typedef struct ctx {
  uv_loop_t loop;
  dg_http_server_t *server;
  dg__conn_t *conn;
  dg_buf_t out;
} ctx_t;

static int setup(void **state) {
  ctx_t *t = calloc(1, sizeof(*t));
  dg_http_server_config_t cfg = {.handler = handler};
  dg_errctx_t err;
  handled = depth = max_depth = aborted = 0;
  dg_http_limits_default(&cfg.limits);
  uv_loop_init(&t->loop);
  dg_buf_init(&t->out, 1 << 20);
  assert_int_equal(dg__server_new(&t->loop, &cfg, &t->server, &err), 0);
  assert_int_equal(dg__conn_open_capture(t->server, &t->out, &t->conn), 0);
  *state = t;
  return 0;
}

static int teardown(void **state) {
  ctx_t *t = *state;
  dg_http_server_close(t->server);
  uv_run(&t->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&t->loop), 0);
  dg_buf_free(&t->out);
  free(t);
  return 0;
}

static void turns(ctx_t *t, int n) {
  for (int i = 0; i < n; i++)
    uv_run(&t->loop, UV_RUN_NOWAIT);
}

static void test_bytewise_pipeline(void **state) {
  ctx_t *t = *state;
  static const char in[] = "GET /a HTTP/1.1\r\nHost: x\r\n\r\n"
                           "POST /b HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
                           "3\r\nxyz\r\n2\r\n!!\r\n0\r\n\r\n"
                           "PUT /c HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\n\r\nok";
  for (size_t i = 0; i < sizeof(in) - 1; i++) {
    dg__conn_feed(t->conn, in + i, 1);
    turns(t, 1);
  }
  turns(t, 3);
  assert_int_equal(handled, 3);
  const char *a = strstr(t->out.data, "[/a ]");
  const char *b = strstr(t->out.data, "[/b xyz!!]");
  const char *c = strstr(t->out.data, "[/c ok]");
  assert_non_null(a);
  assert_non_null(b);
  assert_non_null(c);
  assert_true(a < b && b < c);
  /* An idle keep-alive connection keeps no request or parse buffers. */
  assert_true(dg__conn_memory(t->conn) < 2048);
}

/* A pipelined request is handed out on a later loop turn, never from
 * inside the response call of the one before it. */
static void test_no_reentrant_dispatch(void **state) {
  ctx_t *t = *state;
  static const char in[] = "GET /1 HTTP/1.1\r\nHost: x\r\n\r\nGET /2 HTTP/1.1\r\nHost: "
                           "x\r\n\r\nGET /3 HTTP/1.1\r\nHost: x\r\n\r\n";
  dg__conn_feed(t->conn, in, sizeof(in) - 1);
  assert_int_equal(handled, 1);
  assert_non_null(strstr(t->out.data, "[/1 ]"));
  assert_null(strstr(t->out.data, "[/2 ]"));
  turns(t, 2);
  assert_int_equal(handled, 3);
  assert_int_equal(max_depth, 1);
  assert_non_null(strstr(t->out.data, "[/3 ]"));
}

static void test_abort_on_eof(void **state) {
  ctx_t *t = *state;
  static const char in[] = "GET /hang HTTP/1.1\r\nHost: x\r\n\r\n";
  dg__conn_feed(t->conn, in, sizeof(in) - 1);
  assert_int_equal(handled, 1);
  dg__conn_feed_eof(t->conn);
  assert_int_equal(aborted, 0); /* reported from the close callback */
  turns(t, 2);
  assert_int_equal(aborted, 1);
  assert_null(t->server->conns);
}

static void test_error_waits_for_earlier_response(void **state) {
  ctx_t *t = *state;
  static const char in[] = "GET /hang HTTP/1.1\r\nHost: x\r\n\r\nBROKEN\r\n\r\n";
  dg__conn_feed(t->conn, in, sizeof(in) - 1);
  turns(t, 2);
  /* The 400 must not overtake the unanswered first request. */
  assert_int_equal(t->out.len, 0);
  assert_int_equal(handled, 1);
}

static void test_helpers(void **state) {
  dg_http_limits_t l;
  dg_http_limits_default(&l);
  assert_int_equal(l.max_header_bytes, 16 * 1024);
  assert_int_equal(l.max_headers, 64);
  assert_int_equal(l.max_body_bytes, 1024 * 1024);
  assert_int_equal(l.max_connections, 10000);
  assert_int_equal(l.header_timeout_ms, 10000);
  assert_int_equal(l.request_timeout_ms, 30000);
  assert_int_equal(l.idle_timeout_ms, 75000);
  assert_int_equal(l.max_write_buffer, 1024 * 1024);
  assert_int_equal(l.max_pipelined, 16);
  assert_int_equal(l.max_ws_message_bytes, 1024 * 1024);
  assert_int_equal(l.ws_ping_interval_ms, 30000);
  assert_string_equal(dg_http_status_text(404), "Not Found");
  assert_string_equal(dg_http_status_text(431), "Request Header Fields Too Large");
  assert_string_equal(dg_http_status_text(299), "Unknown");
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  dg_log_init(2, DG_LOG_WARN);
  const struct CMUnitTest tests[] = {
      T(test_bytewise_pipeline), T(test_no_reentrant_dispatch),
      T(test_abort_on_eof),      T(test_error_waits_for_earlier_response),
      T(test_helpers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
