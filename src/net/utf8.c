/* Strict UTF-8 validation (RFC 3629) for WebSocket text messages and close
 * reasons: no overlong forms, no UTF-16 surrogates, nothing above
 * U+10FFFF and no sequence cut short at the end of the data. */
#include <string.h>

#include "datagate/net.h"

#define ASCII_MASK 0x8080808080808080ULL

/* Length of the sequence that lead byte c starts, with the range its
 * second byte must fall in (the second byte is where overlongs,
 * surrogates and values past U+10FFFF show); 0 when c cannot lead. */
static size_t sequence_shape(unsigned char c, unsigned char *lo, unsigned char *hi) {
  *lo = 0x80;
  *hi = 0xbf;
  if (c >= 0xc2 && c <= 0xdf)
    return 2;
  if (c == 0xe0)
    *lo = 0xa0;
  else if (c == 0xed)
    *hi = 0x9f;
  if (c >= 0xe0 && c <= 0xef)
    return 3;
  if (c == 0xf0)
    *lo = 0x90;
  else if (c == 0xf4)
    *hi = 0x8f;
  return c >= 0xf0 && c <= 0xf4 ? 4 : 0;
}

/* Validates one multi-byte sequence at s; returns its length or 0. */
static size_t sequence_valid(const unsigned char *s, size_t avail) {
  unsigned char lo, hi;
  size_t n = sequence_shape(s[0], &lo, &hi);
  if (n == 0 || avail < n || s[1] < lo || s[1] > hi)
    return 0;
  for (size_t i = 2; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return 0;
  }
  return n;
}

bool dg_utf8_valid(const unsigned char *data, size_t len) {
  size_t i = 0;
  while (i < len) {
    uint64_t word;
    /* Most text is ASCII: skip it eight bytes at a time. */
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
