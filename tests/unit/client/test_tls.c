/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* HTTPS upstream calls against the gateway's own TLS server on the same
 * loop, with a test CA made by openssl at start: verification that
 * succeeds with the CA configured, and fails (with the reason) without it
 * or for another host name; keep-alive over TLS, the handshake timeout, the
 * refusal to follow a redirect from https to http, and a bad CA file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "client/client_test.h"
#include "datagate/net.h"

static char dir[64];
static char ca_path[128];
static char cert_path[128];
static char key_path[128];
static int plain_port;

static int make_ca(void **state) {
  char cmd[2048];
  dg_strlcpy(dir, "/tmp/dg_client_tls_XXXXXX", sizeof(dir));
  if (mkdtemp(dir) == NULL)
    return -1;
  snprintf(ca_path, sizeof(ca_path), "%s/ca.pem", dir);
  snprintf(cert_path, sizeof(cert_path), "%s/srv.pem", dir);
  snprintf(key_path, sizeof(key_path), "%s/srv.key", dir);
  snprintf(cmd, sizeof(cmd),
           "cd %s && printf 'subjectAltName=DNS:localhost\\nbasicConstraints=CA:FALSE\\n' > ext "
           "&& openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
           "-subj /CN=datagate-test-ca -keyout ca.key -out ca.pem "
           "-addext basicConstraints=critical,CA:TRUE "
           "-addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null "
           "&& openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes "
           "-subj /CN=localhost -keyout srv.key -out srv.csr 2>/dev/null "
           "&& openssl x509 -req -in srv.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 "
           "-extfile ext -out srv.pem 2>/dev/null",
           dir);
  return system(cmd) == 0 ? 0 : -1;
}

static int remove_ca(void **state) {
  char cmd[256];
  snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : -1;
}

static void handler(dg_http_request_t *req) {
  if (strcmp(dg_http_request_path(req), "/down") == 0) {
    char loc[128];
    snprintf(loc, sizeof(loc), "http://127.0.0.1:%d/", plain_port);
    dg_http_header_t h[] = {{"Location", loc}};
    dg_http_respond(req, 302, h, 1, "", 0);
    return;
  }
  const char *body = dg_http_request_is_tls(req) ? "secure" : "plain";
  dg_http_respond(req, 200, NULL, 0, body, strlen(body));
}

typedef struct tls_ctx {
  ctx_t *t;
  dg_http_server_t *https;
  dg_http_server_t *http;
  int port;
} tls_ctx_t;

static dg_http_server_t *serve(uv_loop_t *loop, bool tls) {
  static dg_tls_server_config_t tls_cfg;
  dg_http_server_config_t cfg;
  memset(&cfg, 0, sizeof(cfg));
  dg_http_limits_default(&cfg.limits);
  cfg.host = "127.0.0.1";
  cfg.handler = handler;
  tls_cfg.cert_file = cert_path;
  tls_cfg.key_file = key_path;
  cfg.tls = tls ? &tls_cfg : NULL;
  dg_http_server_t *s = NULL;
  dg_errctx_t err;
  if (dg_http_server_start(loop, &cfg, &s, &err) != 0) {
    fprintf(stderr, "server: %s\n", err.message);
    return NULL;
  }
  return s;
}

/* Servers on the client's loop; trust: the test CA only, or (when false)
 * the system bundle only. */
static tls_ctx_t *tls_ctx_new(bool trust_test_ca) {
  tls_ctx_t *c = calloc(1, sizeof(*c));
  c->t = ctx_new();
  if (trust_test_ca) {
    c->t->cfg.system_ca_file = "";
    c->t->cfg.ca_file = ca_path;
  }
  c->https = serve(&c->t->loop, true);
  c->http = serve(&c->t->loop, false);
  c->port = dg_http_server_port(c->https);
  plain_port = dg_http_server_port(c->http);
  if (ctx_client(c->t) != 0)
    return NULL;
  return c;
}

static int tls_ctx_close(tls_ctx_t *c) {
  dg_http_server_close(c->https);
  dg_http_server_close(c->http);
  int rc = ctx_close(c->t);
  free(c);
  return rc;
}

static const char *url_for(tls_ctx_t *c, const char *host, const char *path) {
  static char url[256];
  snprintf(url, sizeof(url), "https://%s:%d%s", host, c->port, path);
  return url;
}

static void test_verified(void **state) {
  tls_ctx_t *c = tls_ctx_new(true);
  assert_non_null(c);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(call_once(c->t, "GET", url_for(c, "localhost", "/"), &c->t->out[0]), 200);
    assert_string_equal(c->t->out[0].body, "secure");
    assert_int_equal(dg_http_client_idle_connections(c->t->client), 1);
  }
  /* Both calls went over one kept-alive TLS connection. */
  assert_int_equal(dg_http_server_connections(c->https), 1);
  assert_int_equal(tls_ctx_close(c), 0);
}

static void test_unknown_ca_refused(void **state) {
  tls_ctx_t *c = tls_ctx_new(false);
  assert_non_null(c);
  call_once(c->t, "GET", url_for(c, "localhost", "/"), &c->t->out[0]);
  assert_int_equal(c->t->out[0].rc, DG_EUPSTREAM);
  assert_int_equal(c->t->out[0].failure, DG_HTTP_FAIL_TLS);
  assert_non_null(strstr(c->t->out[0].msg, "certificate verification failed"));
  assert_non_null(strstr(c->t->out[0].msg, "not correctly signed"));
  /* Not a connection error: no retry. */
  assert_int_equal(c->t->out[0].attempts, 1);
  assert_int_equal(tls_ctx_close(c), 0);
}

static void test_wrong_host_refused(void **state) {
  tls_ctx_t *c = tls_ctx_new(true);
  assert_non_null(c);
  call_once(c->t, "GET", url_for(c, "127.0.0.1", "/"), &c->t->out[0]);
  assert_int_equal(c->t->out[0].failure, DG_HTTP_FAIL_TLS);
  assert_non_null(strstr(c->t->out[0].msg, "CN"));
  assert_int_equal(tls_ctx_close(c), 0);
}

static void test_https_to_http_refused(void **state) {
  tls_ctx_t *c = tls_ctx_new(true);
  assert_non_null(c);
  call_once(c->t, "GET", url_for(c, "localhost", "/down"), &c->t->out[0]);
  assert_int_equal(c->t->out[0].failure, DG_HTTP_FAIL_REDIRECTS);
  assert_non_null(strstr(c->t->out[0].msg, "from https to http"));
  assert_int_equal(c->t->out[0].redirects, 0);
  assert_int_equal(tls_ctx_close(c), 0);
}

/* Never answers the handshake: the timeout is the only way out. */
static void serve_silent(raw_conn_t *c) {
  raw_hold(c);
}

static void test_handshake_timeout(void **state) {
  ctx_t *t = ctx_new();
  t->cfg.system_ca_file = "";
  t->cfg.ca_file = ca_path;
  assert_int_equal(raw_start(&t->srv, serve_silent, NULL), 0);
  assert_int_equal(ctx_client(t), 0);
  char url[128];
  snprintf(url, sizeof(url), "https://localhost:%d/", t->srv.port);
  dg_http_client_request_t r;
  req_init(&r, "GET", url, &t->out[0]);
  r.timeouts.tls_ms = 60;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].rc, DG_ETIMEDOUT);
  assert_string_equal(t->out[0].phase, "tls");
  assert_int_equal(ctx_close(t), 0);
}

static void test_bad_ca_file(void **state) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg_http_client_config_t cfg;
  dg_http_client_config_default(&cfg);
  cfg.ca_file = "/nonexistent/ca.pem";
  dg_http_client_t *client = NULL;
  dg_errctx_t err;
  assert_int_equal(dg_http_client_new(&loop, &cfg, &client, &err), DG_ECONFIG);
  assert_string_equal(err.param, "client.ca_file");
  assert_non_null(strstr(err.message, "/nonexistent/ca.pem"));
  cfg.ca_file = NULL;
  cfg.system_ca_file = "";
  assert_int_equal(dg_http_client_new(&loop, &cfg, &client, &err), DG_ECONFIG);
  assert_non_null(strstr(err.message, "no CA certificate"));
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
  dg_log_init(2, DG_LOG_ERROR);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_verified),           cmocka_unit_test(test_unknown_ca_refused),
      cmocka_unit_test(test_wrong_host_refused), cmocka_unit_test(test_https_to_http_refused),
      cmocka_unit_test(test_handshake_timeout),  cmocka_unit_test(test_bad_ca_file),
  };
  return cmocka_run_group_tests(tests, make_ca, remove_ca);
}
