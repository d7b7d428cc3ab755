/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for connector calls against a scripted upstream: the URL and
 * headers each auth kind produces, a missing credential reported on a
 * later loop turn, HTTP failures naming the connector, redirects that are
 * not followed, the address policy, cancelling, and closing the runtime
 * with calls in flight. Every test closes its loop and checks nothing is
 * left open. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "save/save_test.h"

static const dg_connector_header_t conn_headers[] = {{"X-Tenant", "t1"}, {"X-Trace", "conn"}};

static void last_request(fixture_t *fx, char *out, size_t size) {
  raw_last_request(&fx->ctx->srv, out, size);
}

static void test_bearer_headers_and_url(void **state) {
  fixture_t *fx = save_fixture();
  fx->conn.auth =
      (dg_connector_auth_t){.kind = DG_CONN_AUTH_BEARER, .token = {"TOKEN_ENV", "s3cret"}};
  fx->conn.headers = conn_headers;
  fx->conn.nheaders = 2;
  dg_http_header_t h[] = {{"X-Trace", "request"}, {"Content-Type", "application/json"}};
  dg_connector_request_t req = {.method = "POST",
                                .path = "/orders/search?x=1",
                                .headers = h,
                                .nheaders = 2,
                                .body = "{\"a\":1}",
                                .body_len = 7,
                                .request_id = "req-1"};
  result_t *out = &fx->results[0];
  dg_errctx_t err;
  assert_int_equal(dg_connectors_call(fx->cs, &fx->conn, &req, save_record, out, NULL, &err), 0);
  assert_true(save_run_until(fx, out, 1));
  assert_int_equal(out->rc, 0);
  assert_int_equal(out->status, 200);
  assert_string_equal(out->body, "{\"ok\":true}");
  char got[8192];
  last_request(fx, got, sizeof(got));
  assert_non_null(strstr(got, "POST /api/orders/search?x=1 HTTP/1.1\r\n"));
  assert_non_null(strstr(got, "Authorization: Bearer s3cret\r\n"));
  assert_non_null(strstr(got, "X-Tenant: t1\r\n"));
  assert_non_null(strstr(got, "X-Trace: request\r\n"));
  assert_null(strstr(got, "X-Trace: conn"));
  assert_non_null(strstr(got, "Accept: application/json\r\n"));
  assert_non_null(strstr(got, "\r\n\r\n{\"a\":1}"));
  save_fixture_free(fx);
}

static void test_basic_credentials(void **state) {
  fixture_t *fx = save_fixture();
  fx->conn.auth = (dg_connector_auth_t){
      .kind = DG_CONN_AUTH_BASIC, .username = {"U", "ann"}, .password = {"P", "p:w"}};
  assert_int_equal(save_call(fx, "GET", "/x", &fx->results[0]), 0);
  char got[8192];
  last_request(fx, got, sizeof(got));
  assert_non_null(strstr(got, "Authorization: Basic YW5uOnA6dw==\r\n")); /* ann:p:w */
  save_fixture_free(fx);
}

static void test_api_key_in_header_and_query(void **state) {
  fixture_t *fx = save_fixture();
  fx->conn.auth = (dg_connector_auth_t){
      .kind = DG_CONN_AUTH_API_KEY, .key = {"K", "k v&1"}, .key_name = "X-Api-Key"};
  assert_int_equal(save_call(fx, "GET", "/x", &fx->results[0]), 0);
  char got[8192];
  last_request(fx, got, sizeof(got));
  assert_non_null(strstr(got, "GET /api/x HTTP/1.1\r\n"));
  assert_non_null(strstr(got, "X-Api-Key: k v&1\r\n"));
  fx->conn.auth.key_name = "api_key";
  fx->conn.auth.key_in_query = true;
  assert_int_equal(save_call(fx, "GET", "/x?q=1", &fx->results[1]), 0);
  last_request(fx, got, sizeof(got));
  assert_non_null(strstr(got, "GET /api/x?q=1&api_key=k%20v%261 HTTP/1.1\r\n"));
  assert_null(strstr(got, "Authorization"));
  save_fixture_free(fx);
}

static void test_missing_secret_is_reported_later(void **state) {
  fixture_t *fx = save_fixture();
  fx->conn.auth = (dg_connector_auth_t){
      .kind = DG_CONN_AUTH_BASIC, .username = {"U", "ann"}, .password = {"DG_TEST_PASSWORD", NULL}};
  assert_int_equal(save_call(fx, "GET", "/x", &fx->results[0]), DG_EAUTH);
  assert_string_equal(fx->results[0].msg,
                      "upstream 'api' cannot authenticate: the environment variable "
                      "DG_TEST_PASSWORD (its password) is not set in the gateway's environment");
  assert_int_equal(fx->script.api_requests, 0);
  save_fixture_free(fx);
}

static void test_status_failure_names_the_connector(void **state) {
  fixture_t *fx = save_fixture();
  fx->script.api_status = 503;
  assert_int_equal(save_call(fx, "GET", "/orders/1?key=secret", &fx->results[0]), DG_EUPSTREAM);
  result_t *out = &fx->results[0];
  assert_int_equal(out->status, 503);
  assert_non_null(strstr(out->msg, "upstream 'api' GET http://127.0.0.1:"));
  assert_non_null(strstr(out->msg, "/api/orders/1 answered 503"));
  assert_null(strstr(out->msg, "secret"));
  save_fixture_free(fx);
}

static void test_redirect_not_followed(void **state) {
  fixture_t *fx = save_fixture();
  fx->script.api_status = 302;
  fx->conn.max_redirects = 0;
  assert_int_equal(save_call(fx, "GET", "/moved", &fx->results[0]), DG_EUPSTREAM);
  assert_non_null(strstr(fx->results[0].msg, "/api/moved answered 302 Found (redirects are "
                                             "followed at most 0 times)"));
  save_fixture_free(fx);
}

/* A download: the result first, so that save_record can fill it. */
typedef struct download {
  result_t result;
  int head_status;
  char streamed[256];
  size_t nstreamed;
} download_t;

static int download_head(int status, const dg_http_header_t *headers, size_t n, void *user) {
  download_t *d = user;
  d->head_status = status;
  return 0;
}

static int download_chunk(const char *data, size_t len, void *user) {
  download_t *d = user;
  size_t room = sizeof(d->streamed) - 1 - d->nstreamed;
  memcpy(d->streamed + d->nstreamed, data, len < room ? len : room);
  d->nstreamed += len < room ? len : room;
  return 0;
}

static int download(fixture_t *fx, const dg_connector_stream_t *st, download_t *d) {
  dg_http_header_t accept = {"Accept", "*/*"};
  dg_connector_request_t req = {
      .method = "GET", .path = "/doc", .headers = &accept, .nheaders = 1, .stream = st};
  dg_errctx_t err;
  memset(d, 0, sizeof(*d));
  assert_int_equal(dg_connectors_call(fx->cs, &fx->conn, &req, save_record, d, NULL, &err), 0);
  assert_true(save_run_until(fx, &d->result, 1));
  return d->result.rc;
}

static void test_download_streams_within_its_own_caps(void **state) {
  fixture_t *fx = save_fixture();
  fx->conn.auth =
      (dg_connector_auth_t){.kind = DG_CONN_AUTH_BEARER, .token = {"TOKEN_ENV", "s3cret"}};
  dg_connector_stream_t st = {.on_head = download_head, .on_chunk = download_chunk};
  download_t d;
  assert_int_equal(download(fx, &st, &d), 0);
  assert_int_equal(d.head_status, 200);
  assert_string_equal(d.streamed, "{\"ok\":true}");
  assert_string_equal(d.result.body, ""); /* streamed, not collected */
  char got[8192];
  last_request(fx, got, sizeof(got));
  assert_non_null(strstr(got, "Authorization: Bearer s3cret\r\n"));
  assert_non_null(strstr(got, "Accept: */*\r\n"));
  st.max_body_bytes = 5; /* below the 11 bytes of the answer */
  assert_int_equal(download(fx, &st, &d), DG_E2BIG);
  save_fixture_free(fx);
}

static void test_download_leaves_redirects_to_the_caller(void **state) {
  fixture_t *fx = save_fixture();
  fx->script.api_status = 302;
  dg_connector_stream_t st = {.no_redirects = true, .on_head = download_head};
  download_t d;
  assert_int_equal(download(fx, &st, &d), 0);
  assert_int_equal(d.result.status, 302);
  assert_int_equal(d.head_status, 302);
  st.no_redirects = false;
  fx->conn.max_redirects = 0;
  assert_int_equal(download(fx, &st, &d), DG_EUPSTREAM);
  save_fixture_free(fx);
}

static void test_private_addresses_need_permission(void **state) {
  fixture_t *fx = save_fixture();
  fx->conn.allow_private_addresses = false;
  assert_int_equal(save_call(fx, "GET", "/x", &fx->results[0]), DG_EPERM);
  assert_int_equal(fx->script.api_requests, 0);
  save_fixture_free(fx);
}

static void test_bad_requests_are_refused_at_once(void **state) {
  fixture_t *fx = save_fixture();
  dg_connector_request_t req = {.method = "GET", .path = "orders"};
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(
      dg_connectors_call(fx->cs, &fx->conn, &req, save_record, &fx->results[0], NULL, &err),
      DG_EINVAL);
  assert_string_equal(err.message, "'orders' must be empty or start with '/' (it follows the "
                                   "base URL of connector 'api')");
  assert_int_equal(dg_connectors_active(fx->cs), 0);
  save_fixture_free(fx);
}

static void test_cancel(void **state) {
  fixture_t *fx = save_fixture();
  fx->script.api_hang = true;
  result_t *out = &fx->results[0];
  dg_connector_call_t *call = save_start(fx, "GET", "/slow", out);
  assert_int_equal(dg_connectors_active(fx->cs), 1);
  while (fx->script.api_requests == 0)
    uv_run(&fx->ctx->loop, UV_RUN_NOWAIT);
  dg_connector_call_cancel(call);
  assert_int_equal(out->called, 0);
  assert_true(save_run_until(fx, out, 1));
  assert_int_equal(out->rc, DG_ECANCELED);
  assert_int_equal(dg_connectors_active(fx->cs), 0);
  save_fixture_free(fx);
}

static void test_close_with_calls_in_flight(void **state) {
  fixture_t *fx = save_fixture();
  fx->script.api_hang = true;
  save_start(fx, "GET", "/slow", &fx->results[0]);
  fx->conn.auth = (dg_connector_auth_t){.kind = DG_CONN_AUTH_BEARER, .token = {"T", NULL}};
  save_start(fx, "GET", "/never", &fx->results[1]);
  while (fx->script.api_requests == 0)
    uv_run(&fx->ctx->loop, UV_RUN_NOWAIT);
  dg_connectors_close(fx->cs);
  fx->cs = NULL;
  assert_true(save_run_until(fx, &fx->results[0], 1));
  assert_true(save_run_until(fx, &fx->results[1], 1));
  assert_int_equal(fx->results[0].rc, DG_ECANCELED);
  assert_int_equal(fx->results[1].called, 1);
  assert_int_equal(fx->results[1].rc, DG_EAUTH);
  save_fixture_free(fx);
}

static void test_closed_runtime_refuses_calls(void **state) {
  fixture_t *fx = save_fixture();
  dg_connectors_t *cs = fx->cs;
  dg_connectors_close(cs);
  dg_connector_request_t req = {.method = "GET", .path = "/x"};
  dg_errctx_t err;
  assert_int_equal(
      dg_connectors_call(cs, &fx->conn, &req, save_record, &fx->results[0], NULL, &err),
      DG_ECLOSED);
  fx->cs = NULL;
  uv_run(&fx->ctx->loop, UV_RUN_NOWAIT);
  assert_int_equal(fx->results[0].called, 0);
  save_fixture_free(fx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_bearer_headers_and_url),
      cmocka_unit_test(test_basic_credentials),
      cmocka_unit_test(test_api_key_in_header_and_query),
      cmocka_unit_test(test_missing_secret_is_reported_later),
      cmocka_unit_test(test_status_failure_names_the_connector),
      cmocka_unit_test(test_redirect_not_followed),
      cmocka_unit_test(test_download_streams_within_its_own_caps),
      cmocka_unit_test(test_download_leaves_redirects_to_the_caller),
      cmocka_unit_test(test_private_addresses_need_permission),
      cmocka_unit_test(test_bad_requests_are_refused_at_once),
      cmocka_unit_test(test_cancel),
      cmocka_unit_test(test_close_with_calls_in_flight),
      cmocka_unit_test(test_closed_runtime_refuses_calls),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
