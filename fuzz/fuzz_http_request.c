/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Feeds arbitrary bytes into one HTTP connection whose output goes to a
 * capture buffer: request parsing under limits, pipelining, whole and
 * streamed responses, and the WebSocket upgrade with frames after it.
 *
 * The first input byte chooses how the rest is cut into reads (low four
 * bits: 0 means one read, else reads of 1..15 bytes) and whether the peer
 * ends with EOF (high bit). The loop runs between reads so that answers
 * deferred to the next turn happen too. */
#include <stdint.h>
#include <string.h>

#include "net/internal.h"

static void on_message(dg_ws_t *ws, const char *data, size_t len, void *user) {
  dg_ws_send_text(ws, data, len);
  if (len > 0 && data[0] == 'q')
    dg_ws_close(ws, 1000, "bye");
}

static void handler(dg_http_request_t *req) {
  static const dg_ws_callbacks_t cb = {on_message, NULL, NULL};
  size_t len = 0;
  const char *body = dg_http_request_body(req, &len);
  const char *path = dg_http_request_path(req);
  if (dg_ws_is_upgrade(req)) {
    dg_ws_accept(req, "mcp", &cb, NULL);
    return;
  }
  if (strncmp(path, "/s", 2) == 0) {
    dg_http_stream_begin(req, 200, NULL, 0);
    dg_http_stream_write(req, body, len);
    dg_http_stream_write(req, dg_http_request_query(req), strlen(dg_http_request_query(req)));
    dg_http_stream_end(req);
    return;
  }
  const char *host = dg_http_request_header(req, "Host");
  dg_http_header_t h = {"X-Host", host != NULL ? host : "none"};
  dg_http_respond(req, len > 0 ? 200 : 204, &h, 1, body, len);
}

static bool alive(const dg_http_server_t *s, const dg__conn_t *c) {
  for (const dg__conn_t *p = s->conns; p != NULL; p = p->next) {
    if (p == c)
      return true;
  }
  return false;
}

static void small_limits(dg_http_limits_t *l) {
  dg_http_limits_default(l);
  l->max_header_bytes = 2048;
  l->max_headers = 16;
  l->max_body_bytes = 4096;
  l->max_pipelined = 4;
  l->max_ws_message_bytes = 4096;
  l->ws_ping_interval_ms = 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static uv_loop_t loop;
  static bool ready;
  if (!ready) {
    uv_loop_init(&loop);
    dg_log_init(2, DG_LOG_ERROR);
    ready = true;
  }
  if (size == 0)
    return 0;
  dg_http_server_config_t cfg = {.handler = handler};
  small_limits(&cfg.limits);
  dg_http_server_t *server = NULL;
  dg__conn_t *c = NULL;
  dg_errctx_t err;
  dg_buf_t out;
  dg_buf_init(&out, 1 << 20);
  if (dg__server_new(&loop, &cfg, &server, &err) != 0)
    return 0;
  if (dg__conn_open_capture(server, &out, &c) != 0)
    goto cleanup;
  size_t step = data[0] & 0x0f;
  const char *p = (const char *)data + 1;
  size_t left = size - 1;
  while (left > 0 && alive(server, c)) {
    size_t n = step == 0 || step > left ? left : step;
    dg__conn_feed(c, p, n);
    p += n;
    left -= n;
    uv_run(&loop, UV_RUN_NOWAIT);
  }
  if ((data[0] & 0x80) && alive(server, c))
    dg__conn_feed_eof(c);
  uv_run(&loop, UV_RUN_NOWAIT);
cleanup:
  dg_http_server_close(server);
  uv_run(&loop, UV_RUN_DEFAULT);
  dg_buf_free(&out);
  return 0;
}
