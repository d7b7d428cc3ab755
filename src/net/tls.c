/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* TLS termination with mbedTLS 2.28. The certificate chain and key are
 * loaded once per server; each connection has an ssl context whose BIO
 * reads from the bytes of the current socket read and writes straight to
 * the connection's write queue, so nothing ever blocks: the handshake and
 * reads simply stop at WANT_READ until the next read brings more. */
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/pk.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/tls.h"
#include "net/internal.h"

struct dg__tls_server {
  dg_tls_conf_t tc;
  mbedtls_x509_crt chain;
  mbedtls_pk_context key;
};

struct dg__tls {
  dg_tls_input_t input; /* first: the BIO's receive side reads it */
  mbedtls_ssl_context ssl;
  dg__conn_t *conn;
  bool handshake_done;
};

void dg__tls_server_free(dg__tls_server_t *ts) {
  if (ts == NULL)
    return;
  dg_tls_conf_free(&ts->tc);
  mbedtls_x509_crt_free(&ts->chain);
  mbedtls_pk_free(&ts->key);
  free(ts);
}

static int tls_error(dg_errctx_t *err, const char *param, const char *what, const char *file,
                     int rc) {
  char msg[128];
  mbedtls_strerror(rc, msg, sizeof(msg));
  return dg_errctx_set(err, DG_ECONFIG, param, "cannot %s '%s': %s", what,
                       file != NULL ? file : "(none)", msg);
}

static int load_credentials(dg__tls_server_t *ts, const dg_tls_server_config_t *config,
                            dg_errctx_t *err) {
  if (config->cert_file == NULL || config->key_file == NULL)
    return dg_errctx_set(err, DG_ECONFIG, "tls", "both a certificate and a key file are required");
  int rc = mbedtls_x509_crt_parse_file(&ts->chain, config->cert_file);
  if (rc != 0)
    return tls_error(err, "tls.cert_file", "load the certificate chain", config->cert_file, rc);
  rc = mbedtls_pk_parse_keyfile(&ts->key, config->key_file, NULL);
  if (rc != 0)
    return tls_error(err, "tls.key_file", "load the private key", config->key_file, rc);
  rc = mbedtls_pk_check_pair(&ts->chain.pk, &ts->key);
  if (rc != 0)
    return tls_error(err, "tls.key_file", "match the key with the certificate", config->key_file,
                     rc);
  return 0;
}

static int configure(dg__tls_server_t *ts, dg_errctx_t *err) {
  int rc = dg_tls_conf_setup(&ts->tc, MBEDTLS_SSL_IS_SERVER, "datagate-tls");
  if (rc == 0)
    rc = mbedtls_ssl_conf_own_cert(&ts->tc.conf, &ts->chain, &ts->key);
  if (rc != 0)
    return tls_error(err, "tls", "configure", "TLS", rc);
  return 0;
}

int dg__tls_server_new(const dg_tls_server_config_t *config, dg__tls_server_t **out,
                       dg_errctx_t *err) {
  dg__tls_server_t *ts = calloc(1, sizeof(*ts));
  if (ts == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "tls", "out of memory");
  dg_tls_conf_init(&ts->tc);
  mbedtls_x509_crt_init(&ts->chain);
  mbedtls_pk_init(&ts->key);
  int rc = load_credentials(ts, config, err);
  if (rc == 0)
    rc = configure(ts, err);
  if (rc != 0) {
    dg__tls_server_free(ts);
    return rc;
  }
  *out = ts;
  return 0;
}

static int bio_send(void *ctx, const unsigned char *buf, size_t len) {
  dg__tls_t *t = ctx;
  /* The write queue takes everything; backpressure is applied above TLS. */
  if (dg__conn_raw_write(t->conn, buf, len) != 0)
    return MBEDTLS_ERR_NET_SEND_FAILED;
  return (int)len;
}

int dg__tls_attach(dg__conn_t *c, dg__tls_server_t *ts) {
  dg__tls_t *t = calloc(1, sizeof(*t));
  if (t == NULL)
    return DG_ENOMEM;
  mbedtls_ssl_init(&t->ssl);
  if (mbedtls_ssl_setup(&t->ssl, &ts->tc.conf) != 0) {
    mbedtls_ssl_free(&t->ssl);
    free(t);
    return DG_ENOMEM;
  }
  t->conn = c;
  mbedtls_ssl_set_bio(&t->ssl, t, bio_send, dg_tls_bio_recv, NULL);
  c->tls = t;
  return 0;
}

void dg__tls_free(dg__tls_t *t) {
  if (t == NULL)
    return;
  mbedtls_ssl_free(&t->ssl);
  free(t);
}

/* One handshake step; *done once the peer is authenticated to us. */
static int handshake_step(dg__conn_t *c, bool *done) {
  int rc = mbedtls_ssl_handshake(&c->tls->ssl);
  *done = rc == 0;
  if (rc == 0 || dg_tls_would_block(rc))
    return 0;
  if (dg_log_enabled(DG_LOG_DEBUG)) {
    char msg[128];
    mbedtls_strerror(rc, msg, sizeof(msg));
    dg_logf(DG_LOG_DEBUG, "tls_handshake_failed", "%s: %s", c->peer, msg);
  }
  return DG_EPROTO;
}

/* Decrypts every complete record of this read and hands the plaintext to
 * the protocol; mbedTLS keeps a partial record for the next read. */
static int read_plain(dg__conn_t *c) {
  unsigned char plain[DG__TLS_PLAIN_SIZE];
  while (dg__conn_is_open(c)) {
    int rc = mbedtls_ssl_read(&c->tls->ssl, plain, sizeof(plain));
    if (rc > 0) {
      c->proto->on_data(c, (const char *)plain, (size_t)rc);
      continue;
    }
    if (dg_tls_would_block(rc))
      return 0;
    return rc == 0 || rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY ? DG_ECLOSED : DG_EPROTO;
  }
  return 0;
}

int dg__tls_feed(dg__conn_t *c, const char *data, size_t len) {
  dg__tls_t *t = c->tls;
  int rc = 0;
  t->input.in = (const unsigned char *)data;
  t->input.in_len = len;
  if (!t->handshake_done) {
    rc = handshake_step(c, &t->handshake_done);
    if (rc == 0 && t->handshake_done)
      dg__conn_opened(c);
  }
  if (rc == 0 && t->handshake_done)
    rc = read_plain(c);
  t->input.in = NULL;
  t->input.in_len = 0;
  return rc;
}

int dg__tls_write(dg__conn_t *c, const void *data, size_t len) {
  return dg_tls_write_all(&c->tls->ssl, data, len);
}

size_t dg__tls_memory(const dg__tls_t *t) {
  /* mbedTLS allocates one input and one output record buffer per context. */
  return t != NULL ? sizeof(*t) + MBEDTLS_SSL_IN_CONTENT_LEN + MBEDTLS_SSL_OUT_CONTENT_LEN : 0;
}

size_t dg__tls_conn_cost(void) {
  return sizeof(dg__tls_t) + MBEDTLS_SSL_IN_CONTENT_LEN + MBEDTLS_SSL_OUT_CONTENT_LEN;
}

void dg__tls_close_notify(dg__conn_t *c) {
  if (c->tls != NULL && c->tls->handshake_done)
    mbedtls_ssl_close_notify(&c->tls->ssl);
}
