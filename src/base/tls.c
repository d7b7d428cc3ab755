/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The mbedTLS set-up the server and the client share (datagate/tls.h). */
#include <string.h>

#include "datagate/tls.h"

static const char *alpn_protocols[] = {"http/1.1", NULL};

void dg_tls_conf_init(dg_tls_conf_t *tc) {
  mbedtls_ssl_config_init(&tc->conf);
  mbedtls_entropy_init(&tc->entropy);
  mbedtls_ctr_drbg_init(&tc->drbg);
}

int dg_tls_conf_setup(dg_tls_conf_t *tc, int endpoint, const char *pers) {
  int rc = mbedtls_ctr_drbg_seed(&tc->drbg, mbedtls_entropy_func, &tc->entropy,
                                 (const unsigned char *)pers, strlen(pers));
  if (rc == 0)
    rc = mbedtls_ssl_config_defaults(&tc->conf, endpoint, MBEDTLS_SSL_TRANSPORT_STREAM,
                                     MBEDTLS_SSL_PRESET_DEFAULT);
  if (rc == 0)
    rc = mbedtls_ssl_conf_alpn_protocols(&tc->conf, alpn_protocols);
  if (rc != 0)
    return rc;
  mbedtls_ssl_conf_rng(&tc->conf, mbedtls_ctr_drbg_random, &tc->drbg);
  mbedtls_ssl_conf_min_version(&tc->conf, MBEDTLS_SSL_MAJOR_VERSION_3, MBEDTLS_SSL_MINOR_VERSION_3);
  mbedtls_ssl_conf_renegotiation(&tc->conf, MBEDTLS_SSL_RENEGOTIATION_DISABLED);
  return 0;
}

void dg_tls_conf_free(dg_tls_conf_t *tc) {
  mbedtls_ssl_config_free(&tc->conf);
  mbedtls_ctr_drbg_free(&tc->drbg);
  mbedtls_entropy_free(&tc->entropy);
}

int dg_tls_bio_recv(void *ctx, unsigned char *buf, size_t len) {
  dg_tls_input_t *input = ctx;
  if (input->in_len == 0)
    return MBEDTLS_ERR_SSL_WANT_READ;
  size_t n = len < input->in_len ? len : input->in_len;
  memcpy(buf, input->in, n);
  input->in += n;
  input->in_len -= n;
  return (int)n;
}

bool dg_tls_would_block(int rc) {
  return rc == MBEDTLS_ERR_SSL_WANT_READ || rc == MBEDTLS_ERR_SSL_WANT_WRITE;
}

int dg_tls_write_all(mbedtls_ssl_context *ssl, const void *data, size_t len) {
  const unsigned char *p = data;
  while (len > 0) {
    int rc = mbedtls_ssl_write(ssl, p, len);
    if (rc <= 0)
      return DG_EIO; /* the BIO never blocks, so this is a real failure */
    p += rc;
    len -= (size_t)rc;
  }
  return 0;
}
