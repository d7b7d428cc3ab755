/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* TLS termination: a real handshake with an mbedTLS client against a
 * throwaway self-signed certificate made with the openssl command line,
 * HTTP and WebSocket over it, and the failures (old protocol versions,
 * plaintext clients, silent clients, bad certificate files). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>

#include "net/net_test.h"

static char dir[64];
static char cert_path[128];
static char key_path[128];
static char other_key_path[128];

static atomic_int ws_messages;

static void on_message(dg_ws_t *ws, const char *data, size_t len, void *user) {
  ws_messages++;
  dg_ws_send_text(ws, data, len);
}

static void handler(dg_http_request_t *req) {
  static const dg_ws_callbacks_t cb = {on_message, NULL, NULL};
  if (dg_ws_is_upgrade(req)) {
    dg_ws_accept(req, NULL, &cb, NULL);
    return;
  }
  const char *body = dg_http_request_is_tls(req) ? "tls" : "plain";
  dg_http_respond(req, 200, NULL, 0, body, strlen(body));
}

/* ---- the mbedTLS client ----------------------------------------------- */

typedef struct tls_client {
  client_t cl;
  mbedtls_net_context net;
  mbedtls_ssl_context ssl;
  mbedtls_ssl_config conf;
  mbedtls_x509_crt ca;
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
  char in[16384];
  size_t in_len;
} tls_client_t;

static void tls_client_init(tls_client_t *c) {
  mbedtls_net_init(&c->net);
  mbedtls_ssl_init(&c->ssl);
  mbedtls_ssl_config_init(&c->conf);
  mbedtls_x509_crt_init(&c->ca);
  mbedtls_entropy_init(&c->entropy);
  mbedtls_ctr_drbg_init(&c->drbg);
  c->cl.fd = -1;
}

static int tls_client_open(tls_client_t *c, int port, int max_minor) {
  c->in_len = 0;
  if (client_connect(&c->cl, port) != 0)
    return -1;
  c->net.fd = c->cl.fd;
  int rc = mbedtls_ctr_drbg_seed(&c->drbg, mbedtls_entropy_func, &c->entropy, NULL, 0);
  rc = rc ? rc : mbedtls_x509_crt_parse_file(&c->ca, cert_path);
  rc = rc ? rc
          : mbedtls_ssl_config_defaults(&c->conf, MBEDTLS_SSL_IS_CLIENT,
                                        MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc != 0)
    return rc;
  mbedtls_ssl_conf_authmode(&c->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
  mbedtls_ssl_conf_ca_chain(&c->conf, &c->ca, NULL);
  mbedtls_ssl_conf_rng(&c->conf, mbedtls_ctr_drbg_random, &c->drbg);
  mbedtls_ssl_conf_min_version(&c->conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_1);
  mbedtls_ssl_conf_max_version(&c->conf, MBEDTLS_SSL_MAJOR_VERSION_3, max_minor);
  rc = mbedtls_ssl_setup(&c->ssl, &c->conf);
  rc = rc ? rc : mbedtls_ssl_set_hostname(&c->ssl, "localhost");
  if (rc != 0)
    return rc;
  mbedtls_ssl_set_bio(&c->ssl, &c->net, mbedtls_net_send, mbedtls_net_recv, NULL);
  return mbedtls_ssl_handshake(&c->ssl);
}

static void tls_client_close(tls_client_t *c) {
  mbedtls_ssl_free(&c->ssl);
  mbedtls_ssl_config_free(&c->conf);
  mbedtls_x509_crt_free(&c->ca);
  mbedtls_ctr_drbg_free(&c->drbg);
  mbedtls_entropy_free(&c->entropy);
  client_close(&c->cl);
}

static int tls_send(tls_client_t *c, const void *data, size_t len) {
  const unsigned char *p = data;
  while (len > 0) {
    int n = mbedtls_ssl_write(&c->ssl, p, len);
    if (n <= 0)
      return -1;
    p += n;
    len -= (size_t)n;
  }
  return 0;
}

/* Reads plaintext until the buffer holds at least n bytes. */
static int tls_need(tls_client_t *c, size_t n) {
  while (c->in_len < n) {
    int r = mbedtls_ssl_read(&c->ssl, (unsigned char *)c->in + c->in_len,
                             sizeof(c->in) - 1 - c->in_len);
    if (r <= 0)
      return -1;
    c->in_len += (size_t)r;
    c->in[c->in_len] = '\0';
  }
  return 0;
}

/* Reads one response whose body has a Content-Length; returns the body. */
static const char *tls_response(tls_client_t *c, int *status) {
  char *end = strstr(c->in, "\r\n\r\n");
  while (end == NULL) {
    if (tls_need(c, c->in_len + 1) != 0)
      return NULL;
    end = strstr(c->in, "\r\n\r\n");
  }
  size_t head = (size_t)(end - c->in) + 4;
  const char *cl = strstr(c->in, "Content-Length: ");
  size_t len = cl != NULL && cl < end ? strtoul(cl + 16, NULL, 10) : 0;
  sscanf(c->in, "HTTP/1.1 %d", status);
  if (tls_need(c, head + len) != 0)
    return NULL;
  static char body[4096];
  snprintf(body, sizeof(body), "%.*s", (int)len, c->in + head);
  memmove(c->in, c->in + head + len, c->in_len - head - len);
  c->in_len -= head + len;
  c->in[c->in_len] = '\0';
  return body;
}

/* ---- fixtures --------------------------------------------------------- */

static int make_certificates(void **state) {
  char cmd[1024];
  dg_strlcpy(dir, "/tmp/dg_tls_XXXXXX", sizeof(dir));
  if (mkdtemp(dir) == NULL)
    return -1;
  snprintf(cert_path, sizeof(cert_path), "%s/c.pem", dir);
  snprintf(key_path, sizeof(key_path), "%s/k.pem", dir);
  snprintf(other_key_path, sizeof(other_key_path), "%s/other.pem", dir);
  snprintf(cmd, sizeof(cmd),
           "openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 1 "
           "-subj /CN=localhost -keyout %s -out %s 2>/dev/null && "
           "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:prime256v1 -out %s "
           "2>/dev/null",
           key_path, cert_path, other_key_path);
  return system(cmd) == 0 ? 0 : -1;
}

static int remove_certificates(void **state) {
  unlink(cert_path);
  unlink(key_path);
  unlink(other_key_path);
  rmdir(dir);
  return 0;
}

typedef struct test_ctx {
  fixture_t f;
  dg_http_server_config_t cfg;
  dg_tls_server_config_t tls;
  tls_client_t c;
} test_ctx_t;

static int setup(void **state) {
  test_ctx_t *t = calloc(1, sizeof(*t));
  dg_http_limits_default(&t->cfg.limits);
  t->cfg.handler = handler;
  t->tls.cert_file = cert_path;
  t->tls.key_file = key_path;
  t->cfg.tls = &t->tls;
  tls_client_init(&t->c);
  ws_messages = 0;
  *state = t;
  return 0;
}

static int teardown(void **state) {
  test_ctx_t *t = *state;
  tls_client_close(&t->c);
  if (t->f.server != NULL)
    assert_int_equal(fixture_stop(&t->f), 0);
  free(t);
  return 0;
}

/* ---- tests ------------------------------------------------------------ */

static void test_https_get(void **state) {
  test_ctx_t *t = *state;
  int status = 0;
  assert_int_equal(fixture_start(&t->f, &t->cfg), 0);
  assert_int_equal(tls_client_open(&t->c, t->f.port, MBEDTLS_SSL_MINOR_VERSION_3), 0);
  assert_int_equal(mbedtls_ssl_get_verify_result(&t->c.ssl), 0);
  for (int i = 0; i < 2; i++) {
    const char *req = "GET /hello HTTP/1.1\r\nHost: localhost\r\n\r\n";
    assert_int_equal(tls_send(&t->c, req, strlen(req)), 0);
    const char *body = tls_response(&t->c, &status);
    assert_non_null(body);
    assert_int_equal(status, 200);
    assert_string_equal(body, "tls");
  }
}

static void test_websocket_over_tls(void **state) {
  test_ctx_t *t = *state;
  int status = 0;
  assert_int_equal(fixture_start(&t->f, &t->cfg), 0);
  assert_int_equal(tls_client_open(&t->c, t->f.port, MBEDTLS_SSL_MINOR_VERSION_3), 0);
  const char *req = "GET /ws HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                    "Sec-WebSocket-Version: 13\r\n\r\n";
  assert_int_equal(tls_send(&t->c, req, strlen(req)), 0);
  assert_non_null(tls_response(&t->c, &status));
  assert_int_equal(status, 101);
  /* A masked "hi" text frame; the echo comes back unmasked. */
  const unsigned char frame[] = {0x81, 0x82, 1, 2, 3, 4, 'h' ^ 1, 'i' ^ 2};
  assert_int_equal(tls_send(&t->c, frame, sizeof(frame)), 0);
  assert_int_equal(tls_need(&t->c, 4), 0);
  assert_memory_equal(t->c.in, "\x81\x02hi", 4);
  assert_int_equal(ws_messages, 1);
}

static void test_old_tls_refused(void **state) {
  test_ctx_t *t = *state;
  assert_int_equal(fixture_start(&t->f, &t->cfg), 0);
  assert_int_not_equal(tls_client_open(&t->c, t->f.port, MBEDTLS_SSL_MINOR_VERSION_2), 0);
}

static void test_plaintext_client_closed(void **state) {
  test_ctx_t *t = *state;
  assert_int_equal(fixture_start(&t->f, &t->cfg), 0);
  assert_int_equal(client_connect(&t->c.cl, t->f.port), 0);
  client_send(&t->c.cl, "GET /hello HTTP/1.1\r\nHost: x\r\n\r\n");
  assert_true(client_wait_closed(&t->c.cl, 3000));
}

static void test_handshake_timeout(void **state) {
  test_ctx_t *t = *state;
  t->cfg.limits.header_timeout_ms = 150;
  assert_int_equal(fixture_start(&t->f, &t->cfg), 0);
  assert_int_equal(client_connect(&t->c.cl, t->f.port), 0);
  uint64_t t0 = dg_now_ms();
  assert_true(client_wait_closed(&t->c.cl, 3000));
  assert_true(dg_now_ms() - t0 >= 100);
}

static void test_bad_credentials(void **state) {
  test_ctx_t *t = *state;
  uv_loop_t loop;
  dg_http_server_t *s = NULL;
  dg_errctx_t err;
  uv_loop_init(&loop);
  t->cfg.host = "127.0.0.1";
  t->tls.cert_file = "/nonexistent/cert.pem";
  assert_int_equal(dg_http_server_start(&loop, &t->cfg, &s, &err), DG_ECONFIG);
  assert_string_equal(err.param, "tls.cert_file");
  assert_non_null(strstr(err.message, "/nonexistent/cert.pem"));
  t->tls.cert_file = cert_path;
  t->tls.key_file = other_key_path;
  assert_int_equal(dg_http_server_start(&loop, &t->cfg, &s, &err), DG_ECONFIG);
  assert_string_equal(err.param, "tls.key_file");
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)

int main(void) {
  dg_log_init(2, DG_LOG_WARN);
  const struct CMUnitTest tests[] = {
      T(test_https_get),         T(test_websocket_over_tls),
      T(test_old_tls_refused),   T(test_plaintext_client_closed),
      T(test_handshake_timeout), T(test_bad_credentials),
  };
  return cmocka_run_group_tests(tests, make_certificates, remove_certificates);
}
