/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for OAuth 2.0 client credentials on connectors: the token
 * request (Basic or form credentials, scope, audience), one token shared
 * by sequential and concurrent calls, renewal at expiry, one refresh after
 * a 401, and failures of the token endpoint reported with the connector
 * and the reason. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "save/save_test.h"

static const char *const scopes[] = {"read", "orders:list"};

static fixture_t *oauth_fixture(void) {
  fixture_t *fx = save_fixture();
  fx->conn.auth = (dg_connector_auth_t){.kind = DG_CONN_AUTH_OAUTH2,
                                        .token_url = fx->token_url,
                                        .client_id = {"ID", "my client"},
                                        .client_secret = {"SECRET", "s:3"},
                                        .scopes = scopes,
                                        .nscopes = 2,
                                        .token_refresh_skew_ms = 0};
  fx->script.api_needs_token = true;
  return fx;
}

static void test_token_request_and_cache(void **state) {
  fixture_t *fx = oauth_fixture();
  assert_int_equal(save_call(fx, "GET", "/a", &fx->results[0]), 0);
  assert_int_equal(save_call(fx, "GET", "/b", &fx->results[1]), 0);
  assert_int_equal(fx->script.token_requests, 1);
  assert_int_equal(fx->script.api_requests, 2);
  const char *t = fx->script.last_token_request;
  assert_non_null(strstr(t, "POST /token HTTP/1.1\r\n"));
  assert_non_null(strstr(t, "Content-Type: application/x-www-form-urlencoded\r\n"));
  /* base64("my%20client:s%3A3") */
  assert_non_null(strstr(t, "Authorization: Basic bXklMjBjbGllbnQ6cyUzQTM=\r\n"));
  assert_non_null(strstr(t, "\r\n\r\ngrant_type=client_credentials&scope=read%20orders%3Alist"));
  assert_null(strstr(t, "client_secret"));
  char got[8192];
  raw_last_request(&fx->ctx->srv, got, sizeof(got));
  assert_non_null(strstr(got, "Authorization: Bearer t1\r\n"));
  save_fixture_free(fx);
}

static void test_credentials_in_form(void **state) {
  fixture_t *fx = oauth_fixture();
  fx->conn.auth.client_secret_in_body = true;
  fx->conn.auth.nscopes = 0;
  fx->conn.auth.audience = "https://api";
  assert_int_equal(save_call(fx, "GET", "/a", &fx->results[0]), 0);
  const char *t = fx->script.last_token_request;
  assert_null(strstr(t, "Authorization:"));
  assert_non_null(strstr(t, "\r\n\r\ngrant_type=client_credentials&audience=https%3A%2F%2Fapi"
                            "&client_id=my%20client&client_secret=s%3A3"));
  save_fixture_free(fx);
}

static void test_concurrent_calls_share_one_request(void **state) {
  fixture_t *fx = oauth_fixture();
  for (int i = 0; i < 5; i++)
    save_start(fx, "GET", "/c", &fx->results[i]);
  for (int i = 0; i < 5; i++) {
    assert_true(save_run_until(fx, &fx->results[i], 1));
    assert_int_equal(fx->results[i].rc, 0);
  }
  assert_int_equal(fx->script.token_requests, 1);
  assert_int_equal(fx->script.api_requests, 5);
  save_fixture_free(fx);
}

static void test_expired_token_is_renewed(void **state) {
  fixture_t *fx = oauth_fixture();
  fx->script.expires_in = 1;
  fx->conn.auth.token_refresh_skew_ms = 800; /* renewed after half its life at most */
  assert_int_equal(save_call(fx, "GET", "/a", &fx->results[0]), 0);
  run_for(fx->ctx, 600);
  assert_int_equal(save_call(fx, "GET", "/b", &fx->results[1]), 0);
  assert_int_equal(fx->script.token_requests, 2);
  assert_int_equal(fx->script.api_requests, 2);
  save_fixture_free(fx);
}

static void test_401_refreshes_once(void **state) {
  fixture_t *fx = oauth_fixture();
  assert_int_equal(save_call(fx, "GET", "/a", &fx->results[0]), 0);
  uv_mutex_lock(&fx->ctx->srv.lock);
  fx->script.token[0] = '\0'; /* the API forgets t1; the next token works */
  uv_mutex_unlock(&fx->ctx->srv.lock);
  assert_int_equal(save_call(fx, "GET", "/b", &fx->results[1]), 0);
  assert_int_equal(fx->script.token_requests, 2);
  assert_int_equal(fx->script.api_requests, 3);
  char got[8192];
  raw_last_request(&fx->ctx->srv, got, sizeof(got));
  assert_non_null(strstr(got, "Authorization: Bearer t2\r\n"));
  save_fixture_free(fx);
}

static void test_401_twice_fails(void **state) {
  fixture_t *fx = oauth_fixture();
  fx->script.token_body = "{\"access_token\":\"rejected\",\"expires_in\":3600}";
  assert_int_equal(save_call(fx, "GET", "/a", &fx->results[0]), DG_EUPSTREAM);
  assert_int_equal(fx->results[0].status, 401);
  assert_non_null(strstr(fx->results[0].msg, "answered 401"));
  assert_int_equal(fx->script.token_requests, 2);
  assert_int_equal(fx->script.api_requests, 2);
  save_fixture_free(fx);
}

static void test_token_endpoint_refuses(void **state) {
  fixture_t *fx = oauth_fixture();
  fx->script.token_status = 401;
  assert_int_equal(save_call(fx, "GET", "/a", &fx->results[0]), DG_EAUTH);
  const char *msg = fx->results[0].msg;
  assert_non_null(strstr(msg, "upstream 'api' could not get an OAuth access token: upstream "
                              "'api' POST http://127.0.0.1:"));
  assert_non_null(strstr(msg, "/token answered 401"));
  assert_null(strstr(msg, "s:3"));
  assert_int_equal(fx->script.api_requests, 0);
  save_fixture_free(fx);
}

static void test_bad_token_responses(void **state) {
  static const struct {
    const char *body;
    const char *why;
  } cases[] = {
      {"not json", "is not a JSON object"},
      {"{\"token_type\":\"Bearer\"}", "has no usable access_token"},
      {"{\"access_token\":\"x\",\"token_type\":\"mac\"}", "has a token_type other than Bearer"},
      {"{\"access_token\":\"x\",\"expires_in\":\"soon\"}", "has an invalid expires_in"},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(cases); i++) {
    fixture_t *fx = oauth_fixture();
    fx->script.token_body = cases[i].body;
    assert_int_equal(save_call(fx, "GET", "/a", &fx->results[0]), DG_EAUTH);
    assert_non_null(strstr(fx->results[0].msg, cases[i].why));
    assert_non_null(strstr(fx->results[0].msg, "upstream 'api' could not get an OAuth access "
                                               "token: the response of POST http://"));
    save_fixture_free(fx);
  }
}

static void test_cancel_while_waiting_for_token(void **state) {
  fixture_t *fx = oauth_fixture();
  dg_connector_call_t *a = save_start(fx, "GET", "/a", &fx->results[0]);
  save_start(fx, "GET", "/b", &fx->results[1]);
  dg_connector_call_cancel(a);
  assert_true(save_run_until(fx, &fx->results[0], 1));
  assert_int_equal(fx->results[0].rc, DG_ECANCELED);
  assert_true(save_run_until(fx, &fx->results[1], 1));
  assert_int_equal(fx->results[1].rc, 0);
  assert_int_equal(fx->script.api_requests, 1);
  save_fixture_free(fx);
}

static void test_reconfigure_drops_changed_credentials(void **state) {
  fixture_t *fx = oauth_fixture();
  assert_int_equal(save_call(fx, "GET", "/a", &fx->results[0]), 0);
  dg_catalog_t cat = {.connectors = &fx->conn, .nconnectors = 1};
  dg_errctx_t err;
  assert_int_equal(dg_connectors_configure(fx->cs, &cat, &err), 0);
  assert_int_equal(save_call(fx, "GET", "/b", &fx->results[1]), 0);
  assert_int_equal(fx->script.token_requests, 1); /* same credentials: the token stays */
  fx->conn.auth.client_secret.value = "rotated";
  assert_int_equal(dg_connectors_configure(fx->cs, &cat, &err), 0);
  assert_int_equal(save_call(fx, "GET", "/c", &fx->results[2]), 0);
  assert_int_equal(fx->script.token_requests, 2);
  save_fixture_free(fx);
}

/* A reload that no longer configures the connector must not free the token
 * entry of a call in flight: its 401 still refreshes through it. */
static void test_reconfigure_keeps_entries_in_use(void **state) {
  fixture_t *fx = oauth_fixture();
  fx->script.api_held = true; /* until the test has changed the token */
  result_t *out = &fx->results[0];
  save_start(fx, "GET", "/a", out);
  while (fx->script.api_requests == 0)
    uv_run(&fx->ctx->loop, UV_RUN_NOWAIT);
  uv_mutex_lock(&fx->ctx->srv.lock);
  fx->script.token[0] = '\0'; /* the answer on its way will be a 401 */
  uv_mutex_unlock(&fx->ctx->srv.lock);
  dg_catalog_t empty = {.nconnectors = 0};
  dg_errctx_t err;
  assert_int_equal(dg_connectors_configure(fx->cs, &empty, &err), 0);
  fx->script.api_held = false;
  assert_true(save_run_until(fx, out, 1));
  assert_int_equal(out->rc, 0);
  assert_int_equal(fx->script.token_requests, 2);
  save_fixture_free(fx);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_token_request_and_cache),
      cmocka_unit_test(test_credentials_in_form),
      cmocka_unit_test(test_concurrent_calls_share_one_request),
      cmocka_unit_test(test_expired_token_is_renewed),
      cmocka_unit_test(test_401_refreshes_once),
      cmocka_unit_test(test_401_twice_fails),
      cmocka_unit_test(test_token_endpoint_refuses),
      cmocka_unit_test(test_bad_token_responses),
      cmocka_unit_test(test_cancel_while_waiting_for_token),
      cmocka_unit_test(test_reconfigure_drops_changed_credentials),
      cmocka_unit_test(test_reconfigure_keeps_entries_in_use),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
