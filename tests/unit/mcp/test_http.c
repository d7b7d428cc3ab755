/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for Streamable HTTP at /mcp and the small routes, driven
 * through a real dg_http_server with a raw socket client: authentication,
 * Origin, content type, protocol version header, JSON and SSE responses,
 * the GET stream, methods, and a client that disconnects mid-call. */
#include "mcp/mcp_http_test.h"

static const char tools_call_slow[] =
    "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\",\"params\":{\"name\":\"slow\"}}";

static int setup(void **state) {
  ht_t *t = ht_new();
  ht_run(t);
  *state = t;
  return 0;
}

static int leftover_fd = -1; /* a connection left open across teardown */

static int teardown(void **state) {
  ht_free(*state);
  if (leftover_fd >= 0)
    close(leftover_fd);
  leftover_fd = -1;
  return 0;
}

static void get_path_host(int port, const char *path, const char *host, hc_resp_t *r) {
  int fd = hc_connect(port);
  char req[512];
  snprintf(req, sizeof(req), "GET %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n", path,
           host);
  hc_send(fd, req, strlen(req));
  hc_read_all(fd, r);
  close(fd);
}

static void get_path(int port, const char *path, hc_resp_t *r) {
  get_path_host(port, path, "localhost:8443", r);
}

static void test_healthz_metrics_metadata(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  get_path(t->port, "/healthz", &r);
  assert_int_equal(r.status, 200);
  json_t *h = hc_json(&r);
  assert_string_equal(json_string_value(json_object_get(h, "status")), "ok");
  assert_string_equal(json_string_value(json_object_get(h, "version")), "9.9.9");
  assert_int_equal(json_integer_value(json_object_get(h, "pid")), getpid());
  assert_true(json_is_integer(json_object_get(h, "uptimeSeconds")));
  assert_int_equal(json_integer_value(json_object_get(h, "connections")), 1);
  assert_int_equal(json_integer_value(json_object_get(h, "sessions")), 0);
  json_decref(h);
  get_path(t->port, "/metrics", &r);
  assert_int_equal(r.status, 200);
  char type[128];
  assert_non_null(hc_header(&r, "Content-Type", type, sizeof(type)));
  assert_non_null(strstr(type, "text/plain; version=0.0.4"));
  assert_non_null(strstr(r.body, "dg_mcp_sessions_open"));
  /* Without OAuth there is no protected-resource metadata to serve. */
  get_path(t->port, "/.well-known/oauth-protected-resource", &r);
  assert_int_equal(r.status, 404);
  get_path(t->port, "/nothing/here", &r);
  assert_int_equal(r.status, 404);
  json_t *e = hc_json(&r);
  assert_non_null(json_object_get(e, "error"));
  json_decref(e);
}

/* /readyz follows what the owner says, unlike /healthz, which stays 200. */
static void test_readyz(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  get_path(t->port, "/readyz", &r);
  assert_int_equal(r.status, 503);
  json_t *b = hc_json(&r);
  assert_string_equal(json_string_value(json_object_get(b, "status")), "not_ready");
  json_decref(b);
  dg_mcp_server_set_ready(t->mcp, true);
  get_path(t->port, "/readyz", &r);
  assert_int_equal(r.status, 200);
  b = hc_json(&r);
  assert_string_equal(json_string_value(json_object_get(b, "status")), "ready");
  json_decref(b);
  dg_mcp_server_set_ready(t->mcp, false);
  get_path(t->port, "/readyz", &r);
  assert_int_equal(r.status, 503);
  get_path(t->port, "/healthz", &r);
  assert_int_equal(r.status, 200);
}

/* The scrape carries the process's metrics and the build's version. */
static void test_metrics_process(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  get_path(t->port, "/metrics", &r);
  assert_int_equal(r.status, 200);
  const char *want[] = {
      "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes ",
      "# TYPE process_open_fds gauge\nprocess_open_fds ",
      "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total ",
      "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds ",
      "# TYPE datagate_build_info gauge\ndatagate_build_info{version=\"9.9.9\"} 1\n",
      "# HELP process_open_fds ",
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(want); i++) {
    if (strstr(r.body, want[i]) == NULL)
      fail_msg("no '%s' in:\n%s", want[i], r.body);
  }
}

/* A Host that is not this machine's is a rebinding: 421 on every route. */
static void test_host(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  const char *refused[] = {"evil.example", "evil.example:8080", "localhost.evil.example"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(refused); i++) {
    get_path_host(t->port, "/healthz", refused[i], &r);
    assert_int_equal(r.status, 421);
  }
  const char *served[] = {"localhost", "127.0.0.1:9", "[::1]:80", "LOCALHOST:1"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(served); i++) {
    get_path_host(t->port, "/healthz", served[i], &r);
    assert_int_equal(r.status, 200);
  }
}

static void test_unauthorized(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  hc_request(t->port, "POST", HC_JSON, "{}", &r);
  assert_int_equal(r.status, 401);
  char www[512];
  /* No token: the bare challenge; OAuth is off, so no metadata is named. */
  assert_non_null(hc_header(&r, "WWW-Authenticate", www, sizeof(www)));
  assert_string_equal(www, "Bearer realm=\"datagate\"");
  json_t *body = hc_json(&r);
  assert_true(json_is_string(json_object_get(body, "error")));
  json_decref(body);
  hc_request(t->port, "POST", HC_JSON "Authorization: Bearer wrong-token\r\n", "{}", &r);
  assert_int_equal(r.status, 401);
  assert_non_null(hc_header(&r, "WWW-Authenticate", www, sizeof(www)));
  assert_string_equal(www, "Bearer realm=\"datagate\", error=\"invalid_token\"");
  hc_request(t->port, "DELETE", "Mcp-Session-Id: x\r\n", NULL, &r);
  assert_int_equal(r.status, 401);
}

/* With OAuth configured the metadata is served, and it and the challenge
 * name the listen address, whatever Host the client sent. */
static void test_oauth_metadata(void **state) {
  ht_t *t = ht_new();
  *state = t;
  t->cat->oauth.enabled = true;
  t->cat->oauth.issuer = "https://login.example/";
  ht_run(t);
  static hc_resp_t r;
  char expect[256];
  const char *paths[] = {"/.well-known/oauth-protected-resource",
                         "/.well-known/oauth-protected-resource/mcp"};
  for (size_t i = 0; i < 2; i++) {
    get_path(t->port, paths[i], &r);
    assert_int_equal(r.status, 200);
    json_t *m = hc_json(&r);
    snprintf(expect, sizeof(expect), "http://127.0.0.1:%d/mcp", t->port);
    assert_string_equal(json_string_value(json_object_get(m, "resource")), expect);
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(m, "authorization_servers"), 0)),
        "https://login.example/");
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(m, "bearer_methods_supported"), 0)),
        "header");
    assert_string_equal(json_string_value(json_object_get(m, "resource_name")), "datagate");
    json_decref(m);
  }
  hc_request(t->port, "POST", HC_JSON, "{}", &r);
  assert_int_equal(r.status, 401);
  char www[512];
  assert_non_null(hc_header(&r, "WWW-Authenticate", www, sizeof(www)));
  snprintf(expect, sizeof(expect),
           "Bearer resource_metadata=\"http://127.0.0.1:%d/.well-known/oauth-protected-resource\"",
           t->port);
  assert_string_equal(www, expect);
}

static void test_origin(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
  hc_request(t->port, "POST", HC_JSON HC_ALICE "Origin: http://evil.example\r\n", ping, &r);
  assert_int_equal(r.status, 403);
  static const char init[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\","
                             "\"params\":{\"protocolVersion\":\"2025-06-18\"}}";
  hc_request(t->port, "POST", HC_JSON HC_ALICE "Origin: http://good.example\r\n", init, &r);
  assert_int_equal(r.status, 200);
}

/* Each refusal of the transport carries its own JSON-RPC code. */
static void assert_rpc_code(hc_resp_t *r, int code) {
  json_t *e = hc_json(r);
  assert_int_equal(mt_error_code(e), code);
  json_decref(e);
}

static void test_content_type_and_version_header(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  static const char ping[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}";
  hc_request(t->port, "POST", "Content-Type: text/plain\r\n" HC_ALICE, ping, &r);
  assert_int_equal(r.status, 415);
  assert_rpc_code(&r, -32006);
  hc_request(t->port, "POST", HC_JSON HC_ALICE "MCP-Protocol-Version: 1999-01-01\r\n", ping, &r);
  assert_int_equal(r.status, 400);
  assert_rpc_code(&r, -32003);
  assert_int_equal(hc_post(t->port, "no-such-session", ping, &r), 404);
  assert_rpc_code(&r, -32004);
  char sid[64];
  hc_initialize(t->port, "2025-06-18", sid);
  char extra[512];
  snprintf(extra, sizeof(extra),
           "Content-Type: application/json; charset=utf-8\r\n" HC_ALICE
           "MCP-Protocol-Version: 2025-06-18\r\nMcp-Session-Id: %s\r\n",
           sid);
  hc_request(t->port, "POST", extra, ping, &r);
  assert_int_equal(r.status, 200);
}

static void test_json_flow(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  char sid[64];
  hc_initialize(t->port, "2025-06-18", sid);
  assert_int_equal(strlen(sid), DG__MCP_SESSION_ID_LEN);
  assert_int_equal(
      hc_post(t->port, sid, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", &r),
      202);
  assert_int_equal(r.body_len, 0);
  assert_int_equal(hc_post(t->port, sid,
                           "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/call\","
                           "\"params\":{\"name\":\"echo\",\"arguments\":{\"n\":1}}}",
                           &r),
                   200);
  char type[64];
  assert_string_equal(hc_header(&r, "Content-Type", type, sizeof(type)), "application/json");
  json_t *reply = hc_json(&r);
  json_t *sc = json_object_get(json_object_get(reply, "result"), "structuredContent");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(sc, "echo"), "n")), 1);
  json_decref(reply);
  /* Batches are refused at 2025-06-18. */
  assert_int_equal(
      hc_post(t->port, sid, "[{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"ping\"}]", &r), 400);
  reply = hc_json(&r);
  assert_int_equal(mt_error_code(reply), -32600);
  json_decref(reply);
  assert_int_equal(hc_post(t->port, sid, "{\"jsonrpc\": nope", &r), 400);
  reply = hc_json(&r);
  assert_int_equal(mt_error_code(reply), -32700);
  json_decref(reply);
}

static void test_batch_2025_03_26(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  char sid[64];
  hc_initialize(t->port, "2025-03-26", sid);
  assert_int_equal(hc_post(t->port, sid,
                           "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"},"
                           "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}]",
                           &r),
                   200);
  json_t *reply = hc_json(&r);
  assert_int_equal(json_array_size(reply), 2);
  json_decref(reply);
}

/* Batching came with 2025-03-26: a 2024-11-05 session sends one message
 * at a time. */
static void test_batch_2024_11_05(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  char sid[64];
  hc_initialize(t->port, "2024-11-05", sid);
  assert_int_equal(
      hc_post(t->port, sid, "[{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}]", &r), 400);
  json_t *reply = hc_json(&r);
  assert_int_equal(mt_error_code(reply), -32600);
  json_decref(reply);
  assert_int_equal(hc_post(t->port, sid, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}", &r),
                   200);
}

static void test_sse_response_with_progress(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  char sid[64];
  hc_initialize(t->port, "2025-11-25", sid);
  assert_int_equal(hc_post(t->port, sid,
                           "{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":"
                           "{\"name\":\"progress\",\"_meta\":{\"progressToken\":5}}}",
                           &r),
                   200);
  char type[64];
  assert_string_equal(hc_header(&r, "Content-Type", type, sizeof(type)), "text/event-stream");
  /* Two progress events, then the response; each an "event: message". */
  const char *p = r.body;
  for (int i = 0; i < 3; i++) {
    p = strstr(p, "id: ");
    assert_non_null(p);
    p = strstr(p, "\nevent: message\ndata: ");
    assert_non_null(p);
    p += 22;
    const char *end = strstr(p, "\n\n");
    assert_non_null(end);
    json_t *msg = json_loadb(p, (size_t)(end - p), 0, NULL);
    assert_non_null(msg);
    if (i < 2)
      assert_string_equal(json_string_value(json_object_get(msg, "method")),
                          "notifications/progress");
    else
      assert_int_equal(json_integer_value(json_object_get(msg, "id")), 9);
    json_decref(msg);
    p = end;
  }
  assert_null(strstr(p, "data:"));
}

static void test_get_stream_and_methods(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  char sid[64], extra[512];
  hc_initialize(t->port, "2025-11-25", sid);
  snprintf(extra, sizeof(extra), HC_ALICE "Mcp-Session-Id: %s\r\n", sid);
  hc_request(t->port, "GET", extra, NULL, &r);
  assert_int_equal(r.status, 405);
  int fd = hc_connect(t->port);
  char req[1024];
  snprintf(req, sizeof(req),
           "GET /mcp HTTP/1.1\r\nHost: localhost\r\nAccept: text/event-stream\r\n%s\r\n", extra);
  hc_send(fd, req, strlen(req));
  char head[1024];
  ssize_t n = recv(fd, head, sizeof(head) - 1, 0);
  assert_true(n > 0);
  head[n] = '\0';
  assert_non_null(strstr(head, "HTTP/1.1 200"));
  assert_non_null(strstr(head, "text/event-stream"));
  /* A second stream for the same session is refused. */
  snprintf(req, sizeof(req), "Accept: text/event-stream\r\n%s", extra);
  hc_request(t->port, "GET", req, NULL, &r);
  assert_int_equal(r.status, 409);
  assert_rpc_code(&r, -32005);
  hc_request(t->port, "PUT", extra, "{}", &r);
  assert_int_equal(r.status, 405);
  char allow[64];
  assert_string_equal(hc_header(&r, "Allow", allow, sizeof(allow)), "GET, POST, DELETE, OPTIONS");
  /* Ending the session ends its stream. */
  hc_request(t->port, "DELETE", extra, NULL, &r);
  assert_int_equal(r.status, 204);
  char rest[256];
  assert_true(hc_recv_until(fd, rest, sizeof(rest), "0\r\n\r\n"));
  close(fd);
}

static void test_client_disconnect_cancels(void **state) {
  ht_t *t = *state;
  char sid[64], req[1024];
  hc_initialize(t->port, "2025-11-25", sid);
  int fd = hc_connect(t->port);
  snprintf(req, sizeof(req),
           "POST /mcp HTTP/1.1\r\nHost: localhost\r\n" HC_JSON HC_ALICE
           "Mcp-Session-Id: %s\r\nContent-Length: %zu\r\n\r\n%s",
           sid, strlen(tools_call_slow), tools_call_slow);
  hc_send(fd, req, strlen(req));
  /* The call runs (and never ends by itself) before the client goes. */
  assert_true(ht_wait_for(&mt_slow_runs, 1));
  assert_int_equal(mt_cancels, 0);
  close(fd);
  assert_true(ht_wait_for(&mt_cancels, 1));
  assert_int_equal(mt_cancels, 1);
}

/* Starts the slow call on its own connection, cancels it from another
 * and reads what the first POST gets. */
static void cancelled_post(ht_t *t, const char *accept, hc_resp_t *r) {
  char sid[64], req[1024];
  hc_initialize(t->port, "2025-11-25", sid);
  int before = mt_slow_runs;
  int fd = hc_connect(t->port);
  snprintf(req, sizeof(req),
           "POST /mcp HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n"
           "Content-Type: application/json\r\nAccept: %s\r\n" HC_ALICE
           "Mcp-Session-Id: %s\r\nContent-Length: %zu\r\n\r\n%s",
           accept, sid, strlen(tools_call_slow), tools_call_slow);
  hc_send(fd, req, strlen(req));
  assert_true(ht_wait_for(&mt_slow_runs, before + 1));
  static hc_resp_t note;
  assert_int_equal(hc_post(t->port, sid,
                           "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/cancelled\","
                           "\"params\":{\"requestId\":2}}",
                           &note),
                   202);
  hc_read_all(fd, r);
  close(fd);
}

/* A cancelled request's POST is not a 202 (that is for notifications):
 * an event stream with no event, or a JSON-RPC error for a JSON-only
 * client. */
static void test_cancelled_request_post(void **state) {
  ht_t *t = *state;
  static hc_resp_t r;
  char type[64];
  cancelled_post(t, "application/json, text/event-stream", &r);
  assert_int_equal(r.status, 200);
  assert_string_equal(hc_header(&r, "Content-Type", type, sizeof(type)), "text/event-stream");
  assert_null(strstr(r.body, "data:"));
  assert_int_equal(mt_cancels, 1);
  cancelled_post(t, "application/json", &r);
  assert_int_equal(r.status, 200);
  assert_string_equal(hc_header(&r, "Content-Type", type, sizeof(type)), "application/json");
  json_t *reply = hc_json(&r);
  assert_int_equal(mt_error_code(reply), -32800);
  assert_int_equal(json_integer_value(json_object_get(reply, "id")), 2);
  json_decref(reply);
  assert_int_equal(mt_cancels, 2);
}

static void test_shutdown_with_call_in_flight(void **state) {
  ht_t *t = *state;
  char sid[64], req[1024];
  hc_initialize(t->port, "2025-11-25", sid);
  int fd = hc_connect(t->port);
  snprintf(req, sizeof(req),
           "POST /mcp HTTP/1.1\r\nHost: localhost\r\n" HC_JSON HC_ALICE
           "Mcp-Session-Id: %s\r\nContent-Length: %zu\r\n\r\n%s",
           sid, strlen(tools_call_slow), tools_call_slow);
  hc_send(fd, req, strlen(req));
  assert_true(ht_wait_for(&mt_slow_runs, 1));
  /* teardown closes the HTTP server, then frees the MCP server while the
   * call runs: the call is canceled and nothing is left open. */
  leftover_fd = fd;
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_healthz_metrics_metadata, setup, teardown),
      cmocka_unit_test_setup_teardown(test_readyz, setup, teardown),
      cmocka_unit_test_setup_teardown(test_metrics_process, setup, teardown),
      cmocka_unit_test_setup_teardown(test_host, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unauthorized, setup, teardown),
      cmocka_unit_test_teardown(test_oauth_metadata, teardown),
      cmocka_unit_test_setup_teardown(test_origin, setup, teardown),
      cmocka_unit_test_setup_teardown(test_content_type_and_version_header, setup, teardown),
      cmocka_unit_test_setup_teardown(test_json_flow, setup, teardown),
      cmocka_unit_test_setup_teardown(test_batch_2025_03_26, setup, teardown),
      cmocka_unit_test_setup_teardown(test_batch_2024_11_05, setup, teardown),
      cmocka_unit_test_setup_teardown(test_sse_response_with_progress, setup, teardown),
      cmocka_unit_test_setup_teardown(test_get_stream_and_methods, setup, teardown),
      cmocka_unit_test_setup_teardown(test_client_disconnect_cancels, setup, teardown),
      cmocka_unit_test_setup_teardown(test_cancelled_request_post, setup, teardown),
      cmocka_unit_test_setup_teardown(test_shutdown_with_call_in_flight, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
