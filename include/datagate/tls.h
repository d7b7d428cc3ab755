/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The mbedTLS 2.28 set-up shared by the server's TLS termination (net) and
 * the client's HTTPS (client), part of base: one random generator per
 * configuration, TLS 1.2 or later, ALPN "http/1.1", no renegotiation, and a
 * BIO that never blocks: it reads from the bytes of the current socket read
 * and the caller's send callback writes straight to a write queue.
 *
 * Threading: a configuration is used from the loop thread only. */
#ifndef DATAGATE_TLS_H
#define DATAGATE_TLS_H

#include <mbedtls/ctr_drbg.h>
#include <mbedtls/entropy.h>
#include <mbedtls/ssl.h>
#include <stdbool.h>
#include <stddef.h>

#include "datagate/base.h"

typedef struct dg_tls_conf {
  mbedtls_ssl_config conf;
  mbedtls_entropy_context entropy;
  mbedtls_ctr_drbg_context drbg;
} dg_tls_conf_t;

/* Initialises every context so that dg_tls_conf_free is always safe. */
void dg_tls_conf_init(dg_tls_conf_t *tc);
/* Seeds the random generator (pers names the user) and applies the shared
 * settings for endpoint (MBEDTLS_SSL_IS_SERVER or _CLIENT). Returns 0 or
 * mbedTLS's error code, for the caller's message. */
int dg_tls_conf_setup(dg_tls_conf_t *tc, int endpoint, const char *pers);
void dg_tls_conf_free(dg_tls_conf_t *tc);

/* The ciphertext of the current read. It must be the first member of the
 * object given to mbedtls_ssl_set_bio, whose receive side is
 * dg_tls_bio_recv. */
typedef struct dg_tls_input {
  const unsigned char *in;
  size_t in_len;
} dg_tls_input_t;

int dg_tls_bio_recv(void *ctx, unsigned char *buf, size_t len);
/* True for the results that only mean "more input first". */
bool dg_tls_would_block(int rc);
/* Encrypts all of data through a BIO that never blocks: 0 or DG_EIO. */
int dg_tls_write_all(mbedtls_ssl_context *ssl, const void *data, size_t len);

#endif
