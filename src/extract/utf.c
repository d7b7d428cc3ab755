/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Character counting for extracted text; decoding and encoding are
 * dg_utf8_decode and dg_utf8_encode in base. */
#include <string.h>

#include "extract/internal.h"

/* Bytes that start a character in the 8 bytes at s: all but the
 * continuation bytes (10xxxxxx: bit 7 set, bit 6 clear). Extracted texts
 * run to megabytes, and a byte at a time was most of the chunker's cost. */
static unsigned leads8(const char *s) {
  uint64_t w;
  memcpy(&w, s, sizeof(w));
  uint64_t continuation = w & ~(w << 1) & 0x8080808080808080ull;
  /* One bit per byte, moved to bit 0 and summed into the top byte (no
   * population count instruction is assumed). */
  return 8u - (unsigned)(((continuation >> 7) * 0x0101010101010101ull) >> 56);
}

static bool lead(char c) {
  return ((unsigned char)c & 0xc0) != 0x80;
}

uint64_t dg__utf8_count(const char *s, size_t len) {
  uint64_t n = 0;
  size_t i = 0;
  for (; len - i >= 8; i += 8)
    n += leads8(s + i);
  for (; i < len; i++)
    n += lead(s[i]);
  return n;
}

/* The character starting at from is the first one passed; the position
 * after n of them is that of the next character's first byte. */
size_t dg__utf8_advance(const char *s, size_t len, size_t from, uint64_t n, uint64_t *taken) {
  *taken = 0;
  if (from >= len || n == 0)
    return from;
  /* The first byte is passed whatever it is, as a character's start. */
  uint64_t count = 1; /* characters started */
  size_t i = from + 1;
  /* Whole blocks whose leading bytes all start characters up to the n-th. */
  while (len - i >= 8 && count + leads8(s + i) <= n) {
    count += leads8(s + i);
    i += 8;
  }
  for (; i < len; i++) {
    if (lead(s[i])) {
      if (count == n)
        break;
      count++;
    }
  }
  *taken = count;
  return i;
}
