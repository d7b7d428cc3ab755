/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Character counting for extracted text; decoding and encoding are
 * dg_utf8_decode and dg_utf8_encode in base. */
#include <string.h>

#include "extract/internal.h"

uint64_t dg__utf8_count(const char *s, size_t len) {
  uint64_t n = 0;
  for (size_t i = 0; i < len; i++)
    n += ((unsigned char)s[i] & 0xc0) != 0x80;
  return n;
}

size_t dg__utf8_advance(const char *s, size_t len, size_t from, uint64_t n, uint64_t *taken) {
  uint64_t count = 0;
  size_t i = from;
  while (i < len && count < n) {
    i++;
    while (i < len && ((unsigned char)s[i] & 0xc0) == 0x80)
      i++;
    count++;
  }
  *taken = count;
  return i;
}
