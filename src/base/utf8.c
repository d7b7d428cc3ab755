/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* UTF-8 decoding following RFC 3629 (no overlong forms, no surrogates,
 * nothing past U+10FFFF), reporting invalid input as maximal subparts so
 * that each becomes exactly one U+FFFD as Unicode recommends. Text
 * extraction decodes with it and WebSocket validation checks with it;
 * text extraction and the JSON parser encode with dg_utf8_encode. */
#include "datagate/base.h"

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

int dg_utf8_decode(const unsigned char *s, size_t avail, uint32_t *cp) {
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

size_t dg_utf8_encode(uint32_t cp, char out[4]) {
  if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
    cp = 0xfffd;
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
