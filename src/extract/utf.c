/* UTF-8 decoding with replacement, encoding and character counting. The
 * decoder follows RFC 3629 (no overlong forms, no surrogates, nothing past
 * U+10FFFF) and reports invalid input as maximal subparts, so that each
 * becomes exactly one U+FFFD as Unicode recommends. */
#include <string.h>

#include "extract/internal.h"

/* Length of the sequence lead byte c starts and the range its second byte
 * must fall in; 0 when c cannot lead a sequence. */
static int lead_shape(unsigned char c, unsigned char *lo, unsigned char *hi) {
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

int dg__utf8_decode(const unsigned char *s, size_t avail, uint32_t *cp) {
  if (avail == 0)
    return 0;
  if (s[0] < 0x80) {
    *cp = s[0];
    return 1;
  }
  unsigned char lo, hi;
  int n = lead_shape(s[0], &lo, &hi);
  if (n == 0)
    return -1;
  uint32_t v = s[0] & (0x7f >> n);
  for (int i = 1; i < n; i++) {
    if ((size_t)i >= avail)
      return 0;
    unsigned char min = i == 1 ? lo : 0x80, max = i == 1 ? hi : 0xbf;
    if (s[i] < min || s[i] > max)
      return -i;
    v = (v << 6) | (s[i] & 0x3f);
  }
  *cp = v;
  return n;
}

size_t dg__utf8_encode(uint32_t cp, char out[4]) {
  if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
    cp = DG__REPLACEMENT;
  if (cp < 0x80) {
    out[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    out[0] = (char)(0xc0 | (cp >> 6));
    out[1] = (char)(0x80 | (cp & 0x3f));
    return 2;
  }
  if (cp < 0x10000) {
    out[0] = (char)(0xe0 | (cp >> 12));
    out[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    out[2] = (char)(0x80 | (cp & 0x3f));
    return 3;
  }
  out[0] = (char)(0xf0 | (cp >> 18));
  out[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
  out[2] = (char)(0x80 | ((cp >> 6) & 0x3f));
  out[3] = (char)(0x80 | (cp & 0x3f));
  return 4;
}

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
