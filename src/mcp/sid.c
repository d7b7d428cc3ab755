/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Signed HTTP session ids. An id is 45 bytes written in base64url without
 * padding: 60 characters, all visible ASCII as the MCP specification asks.
 *
 *   format (1 byte: 1) | nonce (16 random bytes) | issued (8 bytes, wall
 *   clock milliseconds, big-endian) | instance (4 bytes) | MAC (16 bytes)
 *
 * The MAC is the first half of HMAC-SHA256, under the key the workers
 * share, of a label, the 29 bytes before it and the principal's name. So
 * only a holder of the key can make an id, an id is good only for the
 * principal it was made for, and any worker can check it on its own. */
#include <string.h>
#include <time.h>

#include "mcp/internal.h"

#define FORMAT 1
#define NONCE_AT 1
#define NONCE_LEN 16
#define ISSUED_AT 17
#define INSTANCE_AT 25
#define MAC_AT 29
#define MAC_LEN 16

_Static_assert(MAC_AT + MAC_LEN == DG__MCP_SID_BYTES, "the id's fields fill it");
_Static_assert(DG__MCP_SID_BYTES % 3 == 0 && DG__MCP_SID_BYTES / 3 * 4 == DG__MCP_SESSION_ID_LEN,
               "whole base64 groups, no padding");

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

uint64_t dg__mcp_wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000u + (uint64_t)ts.tv_nsec / 1000000u;
}

static void encode(const unsigned char in[DG__MCP_SID_BYTES],
                   char out[DG__MCP_SESSION_ID_LEN + 1]) {
  size_t o = 0;
  for (size_t i = 0; i < DG__MCP_SID_BYTES; i += 3) {
    uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
    for (int k = 3; k >= 0; k--)
      out[o++] = alphabet[(v >> (6 * k)) & 63];
  }
  out[o] = '\0';
}

static int digit(char c) {
  const char *p = c != '\0' ? strchr(alphabet, c) : NULL;
  return p != NULL ? (int)(p - alphabet) : -1;
}

/* Whole groups only, so every id has exactly one spelling. */
static bool decode(const char *in, unsigned char out[DG__MCP_SID_BYTES]) {
  size_t o = 0;
  for (size_t i = 0; i < DG__MCP_SESSION_ID_LEN; i += 4) {
    uint32_t v = 0;
    for (size_t k = 0; k < 4; k++) {
      int d = digit(in[i + k]);
      if (d < 0)
        return false;
      v = v << 6 | (uint32_t)d;
    }
    out[o++] = (unsigned char)(v >> 16);
    out[o++] = (unsigned char)(v >> 8);
    out[o++] = (unsigned char)v;
  }
  return true;
}

static void mac_of(const dg_mcp_shared_t *sh, const unsigned char raw[DG__MCP_SID_BYTES],
                   const char *principal, unsigned char out[32]) {
  /* The label keeps these MACs apart from any other use of the same key. */
  static const char label[] = "datagate MCP session id";
  dg_bytes_t parts[] = {{label, sizeof(label)}, {raw, MAC_AT}, {principal, strlen(principal)}};
  dg_hmac_sha256(sh->key, sh->key_len, parts, DG_ARRAY_SIZE(parts), out);
}

static void read_info(const unsigned char raw[DG__MCP_SID_BYTES], dg__mcp_sid_t *info) {
  memcpy(&info->tag, raw + NONCE_AT, sizeof(info->tag));
  info->issued_ms = 0;
  for (size_t i = 0; i < 8; i++)
    info->issued_ms = info->issued_ms << 8 | raw[ISSUED_AT + i];
  info->instance = 0;
  for (size_t i = 0; i < 4; i++)
    info->instance = info->instance << 8 | raw[INSTANCE_AT + i];
}

static void write_be(unsigned char *p, uint64_t v, size_t n) {
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
}

int dg__mcp_sid_make(const dg_mcp_shared_t *sh, const char *principal,
                     char out[DG__MCP_SESSION_ID_LEN + 1], dg__mcp_sid_t *info) {
  unsigned char raw[DG__MCP_SID_BYTES], mac[32];
  raw[0] = FORMAT;
  int rc = dg_random_bytes(raw + NONCE_AT, NONCE_LEN);
  if (rc != 0)
    return rc;
  write_be(raw + ISSUED_AT, dg__mcp_wall_ms(), 8);
  write_be(raw + INSTANCE_AT, sh->instance, 4);
  mac_of(sh, raw, principal, mac);
  memcpy(raw + MAC_AT, mac, MAC_LEN);
  encode(raw, out);
  read_info(raw, info);
  return 0;
}

bool dg__mcp_sid_verify(const dg_mcp_shared_t *sh, const char *id, const char *principal,
                        dg__mcp_sid_t *info) {
  unsigned char raw[DG__MCP_SID_BYTES], mac[32];
  if (id == NULL || strnlen(id, DG__MCP_SESSION_ID_LEN + 1) != DG__MCP_SESSION_ID_LEN ||
      !decode(id, raw) || raw[0] != FORMAT)
    return false;
  mac_of(sh, raw, principal, mac);
  if (!dg_ct_equal(mac, raw + MAC_AT, MAC_LEN))
    return false;
  read_info(raw, info);
  return true;
}
