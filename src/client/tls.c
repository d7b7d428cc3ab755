/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* HTTPS for upstream calls with mbedTLS 2.28. One configuration per
 * client holds the trusted CA certificates (the system bundle plus an
 * optional extra file) on the shared set-up of datagate/tls.h; each connection has an
 * ssl context that sends server name indication and checks that the
 * certificate names the host. As on the server side the BIO never blocks:
 * it reads from the bytes of the current socket read and writes straight to
 * the connection's write queue. */
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"
#include "datagate/tls.h"

#define SYSTEM_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

struct dg__ctls_config {
  dg_tls_conf_t tc;
  mbedtls_x509_crt ca;
};

struct dg__ctls {
  dg_tls_input_t input; /* first: the BIO's receive side reads it */
  mbedtls_ssl_context ssl;
  int (*send)(void *ctx, const void *data, size_t len);
  void *ctx;
  bool handshake_done;
};

void dg__ctls_config_free(dg__ctls_config_t *cfg) {
  if (cfg == NULL)
    return;
  dg_tls_conf_free(&cfg->tc);
  mbedtls_x509_crt_free(&cfg->ca);
  free(cfg);
}

static int load_ca(dg__ctls_config_t *cfg, const char *file, const char *param, dg_errctx_t *err) {
  /* A positive result counts certificates that did not parse; bundles
   * often hold a few that mbedTLS does not support, which is fine. */
  int rc = mbedtls_x509_crt_parse_file(&cfg->ca, file);
  if (rc >= 0)
    return 0;
  char msg[128];
  mbedtls_strerror(rc, msg, sizeof(msg));
  return dg_errctx_set(err, DG_ECONFIG, param, "cannot load the CA certificates in '%s': %s", file,
                       msg);
}

static int load_trust(dg__ctls_config_t *cfg, const char *system_ca, const char *extra_ca,
                      dg_errctx_t *err) {
  const char *sys = system_ca != NULL ? system_ca : SYSTEM_CA_BUNDLE;
  int rc = 0;
  if (sys[0] != '\0')
    rc = load_ca(cfg, sys, "client.system_ca_file", err);
  if (rc == 0 && extra_ca != NULL && extra_ca[0] != '\0')
    rc = load_ca(cfg, extra_ca, "client.ca_file", err);
  if (rc == 0 && cfg->ca.version == 0)
    rc = dg_errctx_set(err, DG_ECONFIG, "client.ca_file",
                       "no CA certificate could be loaded, so no HTTPS upstream could be trusted");
  return rc;
}

static int configure(dg__ctls_config_t *cfg, dg_errctx_t *err) {
  int rc = dg_tls_conf_setup(&cfg->tc, MBEDTLS_SSL_IS_CLIENT, "datagate-client");
  if (rc != 0) {
    char msg[128];
    mbedtls_strerror(rc, msg, sizeof(msg));
    return dg_errctx_set(err, DG_ECONFIG, "client", "cannot configure TLS: %s", msg);
  }
  mbedtls_ssl_conf_authmode(&cfg->tc.conf, MBEDTLS_SSL_VERIFY_REQUIRED);
  mbedtls_ssl_conf_ca_chain(&cfg->tc.conf, &cfg->ca, NULL);
  return 0;
}

int dg__ctls_config_new(const char *system_ca, const char *extra_ca, dg__ctls_config_t **out,
                        dg_errctx_t *err) {
  dg__ctls_config_t *cfg = calloc(1, sizeof(*cfg));
  if (cfg == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "client", "out of memory");
  dg_tls_conf_init(&cfg->tc);
  mbedtls_x509_crt_init(&cfg->ca);
  int rc = load_trust(cfg, system_ca, extra_ca, err);
  if (rc == 0)
    rc = configure(cfg, err);
  if (rc != 0) {
    dg__ctls_config_free(cfg);
    return rc;
  }
  *out = cfg;
  return 0;
}

static int bio_send(void *ctx, const unsigned char *buf, size_t len) {
  dg__ctls_t *t = ctx;
  if (t->send(t->ctx, buf, len) != 0)
    return MBEDTLS_ERR_NET_SEND_FAILED;
  return (int)len;
}

int dg__ctls_new(dg__ctls_config_t *cfg, const char *host,
                 int (*send)(void *ctx, const void *data, size_t len), void *ctx,
                 dg__ctls_t **out) {
  dg__ctls_t *t = calloc(1, sizeof(*t));
  if (t == NULL)
    return DG_ENOMEM;
  mbedtls_ssl_init(&t->ssl);
  int rc = mbedtls_ssl_setup(&t->ssl, &cfg->tc.conf);
  if (rc == 0)
    rc = mbedtls_ssl_set_hostname(&t->ssl, host);
  if (rc != 0) {
    dg__ctls_free(t);
    return DG_ENOMEM;
  }
  t->send = send;
  t->ctx = ctx;
  mbedtls_ssl_set_bio(&t->ssl, t, bio_send, dg_tls_bio_recv, NULL);
  *out = t;
  return 0;
}

void dg__ctls_free(dg__ctls_t *t) {
  if (t == NULL)
    return;
  mbedtls_ssl_free(&t->ssl);
  free(t);
}

/* Why a handshake failed, in words: the verification result when the
 * certificate was refused, else mbedTLS's message. */
static void failure_reason(dg__ctls_t *t, int rc, char *why, size_t whysize) {
  uint32_t flags = mbedtls_ssl_get_verify_result(&t->ssl);
  if (rc == MBEDTLS_ERR_X509_CERT_VERIFY_FAILED && flags != 0 && flags != (uint32_t)-1) {
    char info[256];
    int n = mbedtls_x509_crt_verify_info(info, sizeof(info), "", flags);
    /* One line per problem: keep them on one line, separated. */
    for (int i = 0; i < n && info[i] != '\0'; i++) {
      if (info[i] == '\n')
        info[i] = i + 1 < n && info[i + 1] != '\0' ? ';' : '\0';
    }
    snprintf(why, whysize, "certificate verification failed: %s", info);
    return;
  }
  char msg[128];
  mbedtls_strerror(rc, msg, sizeof(msg));
  snprintf(why, whysize, "TLS handshake failed: %s", msg);
}

int dg__ctls_start(dg__ctls_t *t, char *why, size_t whysize) {
  int rc = mbedtls_ssl_handshake(&t->ssl);
  if (rc == 0 || dg_tls_would_block(rc))
    return 0;
  failure_reason(t, rc, why, whysize);
  return DG_EUPSTREAM;
}

static int handshake(dg__ctls_t *t, bool *opened, char *why, size_t whysize) {
  int rc = mbedtls_ssl_handshake(&t->ssl);
  if (dg_tls_would_block(rc))
    return 0;
  if (rc != 0) {
    failure_reason(t, rc, why, whysize);
    return DG_EUPSTREAM;
  }
  t->handshake_done = true;
  *opened = true;
  return 0;
}

static int read_plain(dg__ctls_t *t, int (*on_plain)(void *ctx, const char *data, size_t len),
                      void *ctx, char *why, size_t whysize) {
  unsigned char plain[DG__TLS_PLAIN_SIZE];
  for (;;) {
    int rc = mbedtls_ssl_read(&t->ssl, plain, sizeof(plain));
    if (rc > 0) {
      int prc = on_plain(ctx, (const char *)plain, (size_t)rc);
      if (prc != 0)
        return prc;
      continue;
    }
    if (dg_tls_would_block(rc))
      return 0;
    if (rc == 0 || rc == MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY)
      return DG_ECLOSED;
    char msg[128];
    mbedtls_strerror(rc, msg, sizeof(msg));
    snprintf(why, whysize, "TLS failed: %s", msg);
    return DG_EUPSTREAM;
  }
}

int dg__ctls_feed(dg__ctls_t *t, const char *data, size_t len, bool *opened,
                  int (*on_plain)(void *ctx, const char *data, size_t len), void *ctx, char *why,
                  size_t whysize) {
  *opened = false;
  if (data != NULL) {
    t->input.in = (const unsigned char *)data;
    t->input.in_len = len;
  }
  int rc = 0;
  if (!t->handshake_done) {
    rc = handshake(t, opened, why, whysize);
    /* Stop here: the request goes out before anything that followed. */
    if (rc != 0 || *opened || !t->handshake_done)
      return rc;
  }
  rc = read_plain(t, on_plain, ctx, why, whysize);
  t->input.in = NULL;
  t->input.in_len = 0;
  return rc;
}

int dg__ctls_write(dg__ctls_t *t, const void *data, size_t len) {
  return dg_tls_write_all(&t->ssl, data, len);
}
