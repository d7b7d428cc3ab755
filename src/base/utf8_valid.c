/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Strict UTF-8 validation (RFC 3629) for WebSocket text messages and close
 * reasons: no overlong forms, no UTF-16 surrogates, nothing above
 * U+10FFFF and no sequence cut short at the end of the data. */
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "datagate/base.h"

#define ASCII_MASK 0x8080808080808080ULL

/* Validates one multi-byte sequence at s; returns its length or 0 (also
 * for a sequence cut short at the end of the data). */
static size_t sequence_valid(const unsigned char *s, size_t avail) {
  uint32_t cp;
  int n = dg_utf8_decode(s, avail, &cp);
  return n > 0 ? (size_t)n : 0;
}

bool dg_utf8_valid(const unsigned char *data, size_t len) {
  size_t i = 0;
  while (i < len) {
    uint64_t word;
    /* Most text is ASCII: skip it 64 (with SSE2) or 32, then eight bytes
     * at a time. */
#if defined(__SSE2__)
    if (len - i >= 64) {
      const __m128i *v = (const __m128i *)(const void *)(data + i);
      __m128i any = _mm_or_si128(_mm_or_si128(_mm_loadu_si128(v), _mm_loadu_si128(v + 1)),
                                 _mm_or_si128(_mm_loadu_si128(v + 2), _mm_loadu_si128(v + 3)));
      if (_mm_movemask_epi8(any) == 0) {
        i += 64;
        continue;
      }
    }
#endif
    if (len - i >= 32) {
      uint64_t w[4];
      memcpy(w, data + i, sizeof(w));
      if (((w[0] | w[1] | w[2] | w[3]) & ASCII_MASK) == 0) {
        i += 32;
        continue;
      }
    }
    if (len - i >= 8) {
      memcpy(&word, data + i, sizeof(word));
      if ((word & ASCII_MASK) == 0) {
        i += 8;
        continue;
      }
    }
    if (data[i] < 0x80) {
      i++;
      continue;
    }
    size_t n = sequence_valid(data + i, len - i);
    if (n == 0)
      return false;
    i += n;
  }
  return true;
}
