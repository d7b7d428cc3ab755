/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* HMAC-SHA256 (RFC 2104) on mbedTLS's SHA-256, for values that any process
 * holding the key can check: signed MCP session ids. */
#include <mbedtls/platform_util.h>
#include <mbedtls/sha256.h>
#include <string.h>

#include "datagate/base.h"

#define BLOCK 64

static void hash_parts(const unsigned char pad[BLOCK], const dg_bytes_t *parts, size_t n,
                       unsigned char out[32]) {
  mbedtls_sha256_context ctx;
  mbedtls_sha256_init(&ctx);
  mbedtls_sha256_starts_ret(&ctx, 0);
  mbedtls_sha256_update_ret(&ctx, pad, BLOCK);
  for (size_t i = 0; i < n; i++)
    mbedtls_sha256_update_ret(&ctx, parts[i].data, parts[i].len);
  mbedtls_sha256_finish_ret(&ctx, out);
  mbedtls_sha256_free(&ctx);
}

void dg_hmac_sha256(const void *key, size_t key_len, const dg_bytes_t *parts, size_t n,
                    unsigned char out[32]) {
  unsigned char k[BLOCK] = {0}, pad[BLOCK], inner[32];
  /* A key longer than a block is replaced by its digest (RFC 2104, 2). */
  if (key_len > BLOCK)
    dg_sha256(key, key_len, k);
  else if (key_len > 0)
    memcpy(k, key, key_len);
  for (size_t i = 0; i < BLOCK; i++)
    pad[i] = (unsigned char)(k[i] ^ 0x36);
  hash_parts(pad, parts, n, inner);
  for (size_t i = 0; i < BLOCK; i++)
    pad[i] = (unsigned char)(k[i] ^ 0x5c);
  dg_bytes_t outer = {inner, sizeof(inner)};
  hash_parts(pad, &outer, 1, out);
  /* Key material does not outlive the call on the stack. */
  mbedtls_platform_zeroize(k, sizeof(k));
  mbedtls_platform_zeroize(pad, sizeof(pad));
  mbedtls_platform_zeroize(inner, sizeof(inner));
}
