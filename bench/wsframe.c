/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* RFC 6455 frame building and parsing for the benchmark programs. */
#include "wsframe.h"

#include <string.h>

#define FIN 0x80
#define MASKED 0x80

uint32_t wsf_random(uint32_t *state) {
  uint32_t x = *state;
  x ^= x << 13;
  x ^= x >> 17;
  x ^= x << 5;
  *state = x;
  return x;
}

static size_t put_length(unsigned char *out, size_t len, unsigned char mask_bit) {
  if (len < 126) {
    out[1] = (unsigned char)(mask_bit | len);
    return 2;
  }
  if (len <= 0xffff) {
    out[1] = (unsigned char)(mask_bit | 126);
    out[2] = (unsigned char)(len >> 8);
    out[3] = (unsigned char)len;
    return 4;
  }
  out[1] = (unsigned char)(mask_bit | 127);
  for (int i = 0; i < 8; i++)
    out[2 + i] = (unsigned char)((uint64_t)len >> (56 - 8 * i));
  return 10;
}

size_t wsf_build(unsigned char *out, size_t cap, int opcode, const void *payload, size_t len,
                 uint32_t *rng) {
  if (cap < WSF_HEADER_MAX || len > cap - WSF_HEADER_MAX)
    return 0;
  out[0] = (unsigned char)(FIN | (opcode & 0x0f));
  size_t n = put_length(out, len, rng != NULL ? MASKED : 0);
  if (len > 0)
    memcpy(out + n + (rng != NULL ? 4 : 0), payload, len);
  if (rng == NULL)
    return n + len;
  uint32_t key = wsf_random(rng);
  unsigned char *mask = out + n;
  memcpy(mask, &key, 4);
  unsigned char *p = mask + 4;
  for (size_t i = 0; i < len; i++)
    p[i] ^= mask[i & 3];
  return n + 4 + len;
}

/* Reads the payload length that follows the first two bytes; returns the
 * bytes it took, or 0 when more are needed. */
static size_t get_length(const unsigned char *data, size_t len, uint64_t *out) {
  unsigned short7 = data[1] & 0x7f;
  if (short7 < 126) {
    *out = short7;
    return 2;
  }
  size_t ext = short7 == 126 ? 2 : 8;
  if (len < 2 + ext)
    return 0;
  uint64_t v = 0;
  for (size_t i = 0; i < ext; i++)
    v = (v << 8) | data[2 + i];
  *out = v;
  return 2 + ext;
}

long wsf_parse(unsigned char *data, size_t len, size_t max_payload, wsf_frame_t *frame) {
  if (len < 2)
    return 0;
  uint64_t plen = 0;
  size_t head = get_length(data, len, &plen);
  if (head == 0)
    return 0;
  if (plen > max_payload)
    return -1;
  bool masked = (data[1] & MASKED) != 0;
  size_t total = head + (masked ? 4 : 0) + (size_t)plen;
  if (len < total)
    return 0;
  frame->fin = (data[0] & FIN) != 0;
  frame->opcode = data[0] & 0x0f;
  frame->payload = data + head + (masked ? 4 : 0);
  frame->len = (size_t)plen;
  if (masked) {
    const unsigned char *mask = data + head;
    for (size_t i = 0; i < frame->len; i++)
      frame->payload[i] ^= mask[i & 3];
  }
  return (long)total;
}
