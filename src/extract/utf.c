/* UTF-8 encoding and character counting for extracted text; decoding is
 * dg_utf8_decode in base. */
#include <string.h>

#include "extract/internal.h"

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
