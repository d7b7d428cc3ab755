/* HTTPS for upstream calls with mbedTLS 2.28. One configuration per
 * client holds the trusted CA certificates (the system bundle plus an
 * optional extra file) and the random generator; each connection has an
 * ssl context that sends server name indication and checks that the
 * certificate names the host. As on the server side the BIO never blocks:
 * it reads from the bytes of the current socket read and writes straight to
 * the connection's write queue. */
#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/error.h>
#include <mbedtls/net_sockets.h>
#include <mbedtls/ssl.h>
#include <mbedtls/x509_crt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

#define SYSTEM_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"

struct dg__ctls_config {
  mbedtls_ssl_config conf;
  mbedtls_x509_crt ca;
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
};

struct dg__ctls {
  mbedtls_ssl_context ssl;
  int (*send)(void *ctx, const void *data, size_t len);
  void *ctx;
  const unsigned char *in; /* ciphertext of the current read */
  size_t in_len;
  bool handshake_done;
};

static const char *alpn_protocols[] = {"http/1.1", NULL};

void dg__ctls_config_free(dg__ctls_config_t *cfg) {
  if (cfg == NULL)
    return;
  mbedtls_ssl_config_free(&cfg->conf);
  mbedtls_x509_crt_free(&cfg->ca);
  mbedtls_ctr_drbg_free(&cfg->drbg);
  mbedtls_entropy_free(&cfg->entropy);
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
  static const char pers[] = "datagate-client";
  int rc = mbedtls_ctr_drbg_seed(&cfg->drbg, mbedtls_entropy_func, &cfg->entropy,
                                 (const unsigned char *)pers, sizeof(pers) - 1);
  if (rc == 0)
    rc = mbedtls_ssl_config_defaults(&cfg->conf, MBEDTLS_SSL_IS_CLIENT,
                                     MBEDTLS_SSL_TRANSPORT_STREAM, MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc == 0)
    rc = mbedtls_ssl_conf_alpn_protocols(&cfg->conf, alpn_protocols);
  if (rc != 0) {
    char msg[128];
    mbedtls_strerror(rc, msg, sizeof(msg));
    return dg_errctx_set(err, DG_ECONFIG, "client", "cannot configure TLS: %s", msg);
  }
  mbedtls_ssl_conf_authmode(&cfg->conf, MBEDTLS_SSL_VERIFY_REQUIRED);
  mbedtls_ssl_conf_ca_chain(&cfg->conf, &cfg->ca, NULL);
  mbedtls_ssl_conf_rng(&cfg->conf, mbedtls_ctr_drbg_random, &cfg->drbg);
  mbedtls_ssl_conf_min_version(&cfg->conf, MBEDTLS_SSL_MAJOR_VERSION_3,
                               MBEDTLS_SSL_MINOR_VERSION_3);
  mbedtls_ssl_conf_renegotiation(&cfg->conf, MBEDTLS_SSL_RENEGOTIATION_DISABLED);
  return 0;
}

int dg__ctls_config_new(const char *system_ca, const char *extra_ca, dg__ctls_config_t **out,
                        dg_errctx_t *err) {
  dg__ctls_config_t *cfg = calloc(1, sizeof(*cfg));
  if (cfg == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "client", "out of memory");
  mbedtls_ssl_config_init(&cfg->conf);
  mbedtls_x509_crt_init(&cfg->ca);
  mbedtls_entropy_init(&cfg->entropy);
  mbedtls_ctr_drbg_init(&cfg->drbg);
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

static int bio_recv(void *ctx, unsigned char *buf, size_t len) {
  dg__ctls_t *t = ctx;
  if (t->in_len == 0)
    return MBEDTLS_ERR_SSL_WANT_READ;
  size_t n = len < t->in_len ? len : t->in_len;
  memcpy(buf, t->in, n);
  t->in += n;
  t->in_len -= n;
  return (int)n;
}

int dg__ctls_new(dg__ctls_config_t *cfg, const char *host,
                 int (*send)(void *ctx, const void *data, size_t len), void *ctx,
                 dg__ctls_t **out) {
  dg__ctls_t *t = calloc(1, sizeof(*t));
  if (t == NULL)
    return DG_ENOMEM;
  mbedtls_ssl_init(&t->ssl);
  int rc = mbedtls_ssl_setup(&t->ssl, &cfg->conf);
  if (rc == 0)
    rc = mbedtls_ssl_set_hostname(&t->ssl, host);
  if (rc != 0) {
    dg__ctls_free(t);
    return DG_ENOMEM;
  }
  t->send = send;
  t->ctx = ctx;
  mbedtls_ssl_set_bio(&t->ssl, t, bio_send, bio_recv, NULL);
  *out = t;
  return 0;
}

void dg__ctls_free(dg__ctls_t *t) {
  if (t == NULL)
    return;
  mbedtls_ssl_free(&t->ssl);
  free(t);
}

static bool would_block(int rc) {
  return rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE;
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
  if (rc == 0 || would_block(rc))
    return 0;
  failure_reason(t, rc, why, whysize);
  return DG_EUPSTREAM;
}

static int handshake(dg__ctls_t *t, bool *opened, char *why, size_t whysize) {
  int rc = mbedtls_ssl_handshake(&t->ssl);
  if (would_block(rc))
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
    if (would_block(rc))
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
    t->in = (const unsigned char *)data;
    t->in_len = len;
  }
  int rc = 0;
  if (!t->handshake_done) {
    rc = handshake(t, opened, why, whysize);
    /* Stop here: the request goes out before anything that followed. */
    if (rc != 0 || *opened || !t->handshake_done)
      return rc;
  }
  rc = read_plain(t, on_plain, ctx, why, whysize);
  t->in = NULL;
  t->in_len = 0;
  return rc;
}

int dg__ctls_write(dg__ctls_t *t, const void *data, size_t len) {
  const unsigned char *p = data;
  while (len > 0) {
    int rc = mbedtls_ssl_write(&t->ssl, p, len);
    if (rc <= 0)
      return DG_EIO; /* the BIO never blocks, so this is a real failure */
    p += rc;
    len -= (size_t)rc;
  }
  return 0;
}
