/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Compact JSON output of jansson values into a bounded buffer: the bytes
 * json_dumps gives with JSON_COMPACT, written several times faster. Every
 * response leaves through here, and jansson's own writer hands its output
 * over a few bytes at a time and decodes each string character by
 * character; this one copies each run of plain string bytes at once
 * (jansson strings are valid UTF-8 already) and reserves room once per
 * value. Reals, rare in responses, are formatted by jansson itself so that
 * their digits stay exactly the same. */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "datagate/base.h"

/* Deeper values are refused; jansson's parser stops at 2048 as well. */
#define MAX_DEPTH 2048

/* Bytes that a JSON string must escape: the quote, the backslash and the
 * control characters. */
static bool needs_escape(unsigned char ch) {
  return ch < 0x20 || ch == '"' || ch == '\\';
}

/* Writes the escape sequence of ch to seq (room for 6) and returns its
 * length. */
static size_t escape_seq(unsigned char ch, char *seq) {
  static const char hex[] = "0123456789ABCDEF";
  static const char shorts[] = "\"\"\\\\\bb\ff\nn\rr\tt";
  for (size_t i = 0; i < sizeof(shorts) - 1; i += 2) {
    if ((unsigned char)shorts[i] == ch) {
      seq[0] = '\\';
      seq[1] = shorts[i + 1];
      return 2;
    }
  }
  memcpy(seq, "\\u00", 4);
  seq[4] = hex[ch >> 4];
  seq[5] = hex[ch & 15];
  return 6;
}

/* The high bit of every byte of w that needs escaping and of no other
 * (each byte is tested on its own, without carries between bytes). */
static uint64_t escape_mask(uint64_t w) {
  const uint64_t ones = 0x0101010101010101ULL, low7 = 0x7f7f7f7f7f7f7f7fULL;
  uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
  uint64_t is_quote = ~(((quote & low7) + low7) | quote);
  uint64_t is_backslash = ~(((backslash & low7) + low7) | backslash);
  uint64_t is_control = ~(((w & low7) + ones * 0x60) | w);
  return (is_quote | is_backslash | is_control) & ~low7;
}

/* Index of the first byte from i on that needs escaping, or len. Plain
 * text is skipped eight bytes at a time. */
static size_t next_escape(const unsigned char *p, size_t i, size_t len) {
  for (; i + 8 <= len; i += 8) {
    uint64_t w;
    memcpy(&w, p + i, sizeof(w));
    if (escape_mask(w) != 0)
      break;
  }
  while (i < len && !needs_escape(p[i]))
    i++;
  return i;
}

/* Bytes the escapes of p add: the string is measured first so that it is
 * then written straight into the buffer, reserved once. */
static size_t escaped_extra(const unsigned char *p, size_t len) {
  size_t extra = 0;
  char seq[6];
  for (size_t i = next_escape(p, 0, len); i < len; i = next_escape(p, i + 1, len))
    extra += escape_seq(p[i], seq) - 1;
  return extra;
}

/* The string measured, then written into room reserved for exactly its
 * bytes: the way for a string near the buffer's maximum, where the
 * optimistic reservation of put_string_fast could be refused. */
static int put_string_measured(dg_buf_t *out, const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  int rc = dg_buf_reserve(out, len + escaped_extra(p, len) + 2);
  if (rc != 0)
    return rc;
  char *w = out->data + out->len;
  *w++ = '"';
  size_t run = 0;
  for (size_t i = next_escape(p, 0, len); i < len; i = next_escape(p, i + 1, len)) {
    memcpy(w, s + run, i - run);
    w += i - run;
    w += escape_seq(p[i], w);
    run = i + 1;
  }
  memcpy(w, s + run, len - run);
  w += len - run;
  *w++ = '"';
  *w = '\0';
  out->len = (size_t)(w - out->data);
  return 0;
}

/* ---- One pass ------------------------------------------------------------------------- *
 * Most strings are written in one pass over their bytes, thirty-two and
 * then sixteen at a time where the processor has SSE2 (every x86-64), and
 * eight at a time otherwise and for the rest: room is reserved for the
 * string with a few escapes and grown when the room ahead of the writer
 * runs short. Plain bytes are copied a group at a time. In a group with
 * escapes each one is found from an exact mask; a quote or a backslash is
 * written as a backslash, the byte itself going out with the next run, so
 * that a run costs one copy. A JSON answer written again inside a JSON
 * string (the text item of a tool's result, a quote every nine bytes) so
 * costs a few instructions per quote rather than a block per quote. */

/* Room kept ahead of the writer: a group's escapes at their longest
 * (thirty-two \u00XX), the bytes a store may write past its end, the
 * closing quote and the terminator. */
#define ESCAPE_AHEAD 256

/* Words are read and stored with the first byte in the lowest bits. */
static uint64_t load_word(const unsigned char *p) {
  uint64_t w;
  memcpy(&w, p, sizeof(w));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = __builtin_bswap64(w);
#endif
  return w;
}

static void store_word(char *p, uint64_t w) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
  w = __builtin_bswap64(w);
#endif
  memcpy(p, &w, sizeof(w));
}

/* A bit for each byte of w that needs escaping, bit k for byte k: the
 * high bits of escape_mask gathered by one multiplication (each lands on
 * its own bit, so nothing carries). */
static unsigned word_bits(uint64_t w) {
  return (unsigned)(((escape_mask(w) >> 7) * 0x0102040810204080ULL) >> 56);
}

/* Writes the first n (at most 8) bytes of word, escaped, at w, bits
 * marking the bytes to escape (word_bits); returns the end of what was
 * written. */
static char *put_word(char *w, uint64_t word, unsigned bits, size_t n) {
  size_t from = 0;
  for (; bits != 0; bits &= bits - 1) {
    size_t at = (size_t)__builtin_ctz(bits);
    store_word(w, word >> (8 * from));
    w += at - from;
    unsigned char ch = (unsigned char)(word >> (8 * at));
    if (ch >= 0x20) { /* a quote or a backslash: it follows the backslash */
      *w++ = '\\';
      from = at;
    } else {
      w += escape_seq(ch, w);
      from = at + 1;
    }
  }
  if (from < n) {
    store_word(w, word >> (8 * from));
    w += n - from;
  }
  return w;
}

/* Keeps ESCAPE_AHEAD bytes of room ahead of *w for the rest bytes still to
 * write. */
static int keep_room(dg_buf_t *out, char **w, size_t rest) {
  if ((size_t)(out->data + out->cap - *w) >= ESCAPE_AHEAD)
    return 0;
  out->len = (size_t)(*w - out->data);
  int rc = dg_buf_reserve(out, rest + rest / 4 + ESCAPE_AHEAD);
  *w = out->data + out->len;
  return rc;
}

#if defined(__SSE2__)
/* Bits for the bytes of block that need escaping: quotes and backslashes
 * in *qb, control characters in *ctl. */
static void escape_bits(__m128i block, unsigned *qb, unsigned *ctl) {
  __m128i quote = _mm_cmpeq_epi8(block, _mm_set1_epi8('"'));
  __m128i backslash = _mm_cmpeq_epi8(block, _mm_set1_epi8('\\'));
  __m128i control = _mm_cmpeq_epi8(_mm_min_epu8(block, _mm_set1_epi8(0x1f)), block);
  *qb = (unsigned)_mm_movemask_epi8(_mm_or_si128(quote, backslash));
  *ctl = (unsigned)_mm_movemask_epi8(control);
}

/* Thirty-two bytes from p to w, where a run is at most that long. */
static void copy32(char *w, const unsigned char *p) {
  __m128i a = _mm_loadu_si128((const __m128i *)(const void *)p);
  __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(p + 16));
  _mm_storeu_si128((__m128i *)(void *)w, a);
  _mm_storeu_si128((__m128i *)(void *)(w + 16), b);
}

/* The thirty-two bytes at p without control characters, qb marking their
 * quotes and backslashes, at w. Each one ends a run with a backslash and
 * starts the next run with itself: one copy per escape. */
static char *put_group(char *w, const unsigned char *p, uint32_t qb) {
  size_t run = 0;
  for (; qb != 0; qb &= qb - 1) {
    size_t at = (size_t)__builtin_ctz(qb);
    copy32(w, p + run);
    w += at - run;
    *w++ = '\\';
    run = at;
  }
  copy32(w, p + run);
  return w + 32 - run;
}

/* Thirty-two bytes at a time while sixty-four remain, so that a run may
 * be copied thirty-two bytes at a time from anywhere in the group. A group
 * with a control character, rare in text, is written word by word. */
static int put_groups(dg_buf_t *out, char **w, const unsigned char *p, size_t *i, size_t len) {
  char *o = *w;
  size_t at = *i;
  int rc = 0;
  for (; at + 64 <= len; at += 32) {
    rc = keep_room(out, &o, len - at);
    if (rc != 0)
      break;
    unsigned qb0, ctl0, qb1, ctl1;
    escape_bits(_mm_loadu_si128((const __m128i *)(const void *)(p + at)), &qb0, &ctl0);
    escape_bits(_mm_loadu_si128((const __m128i *)(const void *)(p + at + 16)), &qb1, &ctl1);
    if ((ctl0 | ctl1) == 0) {
      o = put_group(o, p + at, qb0 | (qb1 << 16));
      continue;
    }
    uint32_t bits = qb0 | ctl0 | ((qb1 | ctl1) << 16);
    for (size_t k = 0; k < 4; k++, bits >>= 8)
      o = put_word(o, load_word(p + at + 8 * k), bits & 0xff, 8);
  }
  *w = o;
  *i = at;
  return rc;
}

/* Sixteen bytes at a time while sixteen remain: a plain block is stored
 * whole, one with escapes as its two words. */
static int put_blocks(dg_buf_t *out, char **w, const unsigned char *p, size_t *i, size_t len) {
  for (; *i + 16 <= len; *i += 16) {
    int rc = keep_room(out, w, len - *i);
    if (rc != 0)
      return rc;
    __m128i block = _mm_loadu_si128((const __m128i *)(const void *)(p + *i));
    unsigned qb, ctl;
    escape_bits(block, &qb, &ctl);
    unsigned bits = qb | ctl;
    if (bits == 0) {
      _mm_storeu_si128((__m128i *)(void *)*w, block);
      *w += 16;
      continue;
    }
    *w = put_word(*w, load_word(p + *i), bits & 0xff, 8);
    *w = put_word(*w, load_word(p + *i + 8), bits >> 8, 8);
  }
  return 0;
}
#endif

/* The last n (1 to 7) bytes of a string of eight or more: the word that
 * ends with them, less the bytes before them, written already. */
static char *put_tail_word(char *w, const unsigned char *end, size_t n) {
  uint64_t word = load_word(end - 8) >> (8 * (8 - n));
  return put_word(w, word, word_bits(word) & ((1u << n) - 1), n);
}

/* A string shorter than a word, byte by byte. */
static char *put_bytes(char *w, const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (needs_escape(p[i]))
      w += escape_seq(p[i], w);
    else
      *w++ = (char)p[i];
  }
  return w;
}

static int put_string_fast(dg_buf_t *out, const unsigned char *p, size_t len) {
  /* Room for the string with a few escapes: most strings fit at once. */
  int rc = dg_buf_room(out, len + len / 8 + ESCAPE_AHEAD);
  if (rc != 0)
    return rc;
  char *w = out->data + out->len;
  *w++ = '"';
  size_t i = 0;
#if defined(__SSE2__)
  rc = put_groups(out, &w, p, &i, len);
  if (rc == 0)
    rc = put_blocks(out, &w, p, &i, len);
  if (rc != 0)
    return rc;
#endif
  for (; i + 8 <= len; i += 8) {
    rc = keep_room(out, &w, len - i);
    if (rc != 0)
      return rc;
    uint64_t word = load_word(p + i);
    w = put_word(w, word, word_bits(word), 8);
  }
  if (i < len) {
    rc = keep_room(out, &w, len - i);
    if (rc != 0)
      return rc;
    w = len >= 8 ? put_tail_word(w, p + len, len - i) : put_bytes(w, p, len);
  }
  *w++ = '"';
  *w = '\0';
  out->len = (size_t)(w - out->data);
  return 0;
}

/* ---- Short strings ---------------------------------------------------------------------- *
 * Most strings of an answer are short values (a status, a date, a number's
 * code, a GUID): 4 to 64 bytes without escapes, checked and copied as
 * overlapping words or blocks where the buffer has room, without the long
 * loop. */

static uint32_t load_u32(const unsigned char *p) {
  uint32_t w;
  memcpy(&w, p, sizeof(w));
  return w;
}

#if defined(__SSE2__)
/* The up to 64 bytes at s (16 or more) copied to w sixteen at a time, the
 * last block overlapping the one before; whether one needs escaping. */
static bool copy_plain_blocks(char *w, const unsigned char *s, size_t len) {
  unsigned qb, ctl, any = 0;
  for (size_t k = 0; k + 16 < len; k += 16) {
    __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + k));
    escape_bits(b, &qb, &ctl);
    any |= qb | ctl;
    _mm_storeu_si128((__m128i *)(void *)(w + k), b);
  }
  __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + len - 16));
  escape_bits(b, &qb, &ctl);
  _mm_storeu_si128((__m128i *)(void *)(w + len - 16), b);
  return (any | qb | ctl) == 0;
}
#define SHORT_MAX 64
#else
#define SHORT_MAX 16
#endif

/* The 4 to 16 bytes at s copied to w as two overlapping words (or
 * halves) when none needs escaping; false otherwise, with nothing copied. */
static bool copy_plain_words(char *w, const unsigned char *s, size_t len) {
  if (len >= 8) {
    uint64_t a, b;
    memcpy(&a, s, 8);
    memcpy(&b, s + len - 8, 8);
    if ((escape_mask(a) | escape_mask(b)) != 0)
      return false;
    memcpy(w, &a, 8);
    memcpy(w + len - 8, &b, 8);
    return true;
  }
  uint32_t a = load_u32(s), b = load_u32(s + len - 4);
  if (escape_mask(a | (uint64_t)b << 32) != 0)
    return false;
  memcpy(w, &a, 4);
  memcpy(w + len - 4, &b, 4);
  return true;
}

/* s (4 to SHORT_MAX bytes) quoted at w when none of its bytes needs
 * escaping; false otherwise, with nothing written at w itself (the bytes
 * after it may be). */
static bool put_short(char *w, const unsigned char *s, size_t len) {
#if defined(__SSE2__)
  bool plain = len > 16 ? copy_plain_blocks(w + 1, s, len) : copy_plain_words(w + 1, s, len);
#else
  bool plain = copy_plain_words(w + 1, s, len);
#endif
  if (!plain)
    return false;
  w[0] = '"';
  w[len + 1] = '"';
  w[len + 2] = '\0';
  return true;
}

/* In one pass when the optimistic reservations are granted; otherwise
 * measured, so that whether a string fits depends on its bytes alone. */
static int put_string(dg_buf_t *out, const char *s, size_t len) {
  if (len >= 4 && len <= SHORT_MAX && dg_buf_has_room(out, len + 2) &&
      put_short(out->data + out->len, (const unsigned char *)s, len)) {
    out->len += len + 2;
    return 0;
  }
  if (len > SIZE_MAX / 8)
    return DG_E2BIG;
  size_t start = out->len;
  if (put_string_fast(out, (const unsigned char *)s, len) == 0)
    return 0;
  out->len = start;
  if (out->data != NULL)
    out->data[start] = '\0';
  return put_string_measured(out, s, len);
}

/* text appended as dg_buf_append does, calling dg_buf_reserve only when
 * the buffer must grow: numbers are written one per member. */
static int append_small(dg_buf_t *out, const char *text, size_t n) {
  int rc = dg_buf_room(out, n);
  if (rc != 0)
    return rc;
  memcpy(out->data + out->len, text, n);
  out->len += n;
  out->data[out->len] = '\0';
  return 0;
}

/* Decimal digits without printf, which costs more than the rest of a
 * small value. */
int dg_json_write_integer(dg_buf_t *out, int64_t v) {
  char text[DG_DECIMAL_MAX + 1];
  size_t n = 0;
  if (v < 0)
    text[n++] = '-';
  n += dg_decimal(text + n, v < 0 ? 0ULL - (uint64_t)v : (uint64_t)v);
  return append_small(out, text, n);
}

/* The digits jansson gives the reals of money and measures (whole
 * hundredths below 10^13, so at most 15 significant digits), without
 * printf, which costs more than everything else in a page of entities: the
 * integer part, then the hundredths without trailing zeros, or ".0".
 * Others: false. */
static bool put_hundredths(dg_buf_t *out, double d, int *rc) {
  if (!(d > -1e13 && d < 1e13) || (d == 0 && signbit(d)))
    return false;
  double scaled = d * 100;
  long long cents = llround(scaled);
  if ((double)cents / 100 != d)
    return false;
  unsigned long long a = (unsigned long long)(cents < 0 ? -cents : cents);
  unsigned frac = (unsigned)(a % 100);
  char text[DG_DECIMAL_MAX + 5];
  size_t n = 0;
  if (cents < 0)
    text[n++] = '-';
  n += dg_decimal(text + n, a / 100);
  text[n++] = '.';
  text[n++] = (char)('0' + frac / 10);
  if (frac % 10 != 0)
    text[n++] = (char)('0' + frac % 10);
  *rc = append_small(out, text, n);
  return true;
}

/* jansson's own digits for a real (it keeps a ".0" on whole numbers), 15
 * significant: every decimal of up to 15 digits (an amount such as 1450.1)
 * reads back as written, where jansson's default of 17 would show the
 * binary approximation (1450.0999999999999). */
static int put_real(dg_buf_t *out, const json_t *value) {
  int rc = 0;
  if (put_hundredths(out, json_real_value(value), &rc))
    return rc;
  char text[64];
  size_t flags = JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15);
  size_t n = json_dumpb(value, text, sizeof(text), flags);
  if (n == 0 || n > sizeof(text))
    return DG_EINVAL;
  return dg_buf_append(out, text, n);
}

/* ---- Raw values -------------------------------------------------------------------- *
 * [marker, "text"]: the marker is one object made once, so that no value
 * parsed from input or built elsewhere can pass for a raw one. */

static json_t *raw_marker;
static pthread_once_t raw_once = PTHREAD_ONCE_INIT;

static void raw_marker_init(void) {
  raw_marker = json_object();
}

json_t *dg_json_raw(const char *text, size_t len) {
  pthread_once(&raw_once, raw_marker_init);
  json_t *raw = raw_marker != NULL ? json_array() : NULL;
  json_t *s = raw != NULL ? json_stringn_nocheck(text, len) : NULL;
  if (s == NULL || json_array_append(raw, raw_marker) != 0 || json_array_append_new(raw, s) != 0) {
    json_decref(s);
    json_decref(raw);
    return NULL;
  }
  return raw;
}

/* [marker, "text"], or [marker, "text", quoted] once the text's form as a
 * JSON string is kept beside it (dg_json_raw_keep_quoted). */
const json_t *dg_json_raw_text(const json_t *value) {
  size_t n = json_array_size(value);
  if (!json_is_array(value) || n < 2 || n > 3 || raw_marker == NULL ||
      json_array_get(value, 0) != raw_marker)
    return NULL;
  return json_array_get(value, 1);
}

int dg_json_raw_keep_quoted(json_t *raw, size_t max) {
  const json_t *text = dg_json_raw_text(raw);
  if (text == NULL)
    return DG_EINVAL;
  if (json_array_size(raw) == 3)
    return 0;
  dg_buf_t out;
  dg_buf_init(&out, max);
  int rc = put_string(&out, json_string_value(text), json_string_length(text));
  json_t *quoted = rc == 0 ? dg_json_raw(out.data, out.len) : NULL;
  dg_buf_free(&out);
  if (quoted == NULL)
    return rc != 0 ? rc : DG_ENOMEM;
  return json_array_append_new(raw, quoted) == 0 ? 0 : DG_ENOMEM;
}

const json_t *dg_json_raw_quoted(const json_t *value) {
  return dg_json_raw_text(value) != NULL ? json_array_get(value, 2) : NULL;
}

/* Values dg_json_size_hint visits at most: a reply's envelope is a dozen. */
#define HINT_VALUES 64

static size_t size_hint(const json_t *v, unsigned *budget) {
  const char *key;
  size_t i, klen, sum = 2;
  json_t *item;
  if (*budget == 0)
    return 0;
  (*budget)--;
  switch (json_typeof(v)) {
  case JSON_STRING:
    return json_string_length(v) + 2;
  case JSON_OBJECT:
    json_object_keylen_foreach((json_t *)v, key, klen, item) {
      if (*budget == 0)
        break;
      sum += klen + 4 + size_hint(item, budget);
    }
    return sum;
  case JSON_ARRAY:
    if (dg_json_raw_text(v) != NULL) /* written as its text alone */
      return json_string_length(dg_json_raw_text(v));
    json_array_foreach(v, i, item) {
      if (*budget == 0)
        break;
      sum += 1 + size_hint(item, budget);
    }
    return sum;
  default:
    return 8;
  }
}

size_t dg_json_size_hint(const json_t *value) {
  unsigned budget = HINT_VALUES;
  return value != NULL ? size_hint(value, &budget) : 0;
}

int dg_json_write_string(dg_buf_t *out, const char *s, size_t len) {
  return put_string(out, s, len);
}

int dg_json_write_real(dg_buf_t *out, double d) {
  int rc = 0;
  if (put_hundredths(out, d, &rc))
    return rc;
  json_t *v = json_real(d);
  rc = v != NULL ? put_real(out, v) : DG_EINVAL; /* not finite */
  json_decref(v);
  return rc;
}

static int put_value(dg_buf_t *out, const json_t *value, unsigned depth);

static int put_object(dg_buf_t *out, const json_t *object, unsigned depth) {
  const char *key;
  size_t klen;
  json_t *member;
  bool first = true;
  int rc = dg_buf_append(out, "{", 1);
  json_object_keylen_foreach((json_t *)object, key, klen, member) {
    if (rc == 0 && !first)
      rc = dg_buf_append(out, ",", 1);
    if (rc == 0)
      rc = put_string(out, key, klen);
    if (rc == 0)
      rc = dg_buf_append(out, ":", 1);
    if (rc == 0)
      rc = put_value(out, member, depth + 1);
    if (rc != 0)
      return rc;
    first = false;
  }
  return rc == 0 ? dg_buf_append(out, "}", 1) : rc;
}

static int put_array(dg_buf_t *out, const json_t *array, unsigned depth) {
  const json_t *raw = dg_json_raw_text(array);
  if (raw != NULL)
    return dg_buf_append(out, json_string_value(raw), json_string_length(raw));
  size_t n = json_array_size(array);
  int rc = dg_buf_append(out, "[", 1);
  for (size_t i = 0; i < n && rc == 0; i++) {
    if (i > 0)
      rc = dg_buf_append(out, ",", 1);
    if (rc == 0)
      rc = put_value(out, json_array_get(array, i), depth + 1);
  }
  return rc == 0 ? dg_buf_append(out, "]", 1) : rc;
}

static int put_value(dg_buf_t *out, const json_t *value, unsigned depth) {
  if (depth > MAX_DEPTH)
    return DG_EINVAL;
  switch (json_typeof(value)) {
  case JSON_OBJECT:
    return put_object(out, value, depth);
  case JSON_ARRAY:
    return put_array(out, value, depth);
  case JSON_STRING:
    return put_string(out, json_string_value(value), json_string_length(value));
  case JSON_INTEGER:
    return dg_json_write_integer(out, json_integer_value(value));
  case JSON_REAL:
    return put_real(out, value);
  case JSON_TRUE:
    return dg_buf_append(out, "true", 4);
  case JSON_FALSE:
    return dg_buf_append(out, "false", 5);
  case JSON_NULL:
    return dg_buf_append(out, "null", 4);
  }
  return DG_EINVAL;
}

int dg_json_write(const json_t *value, dg_buf_t *out) {
  if (value == NULL)
    return DG_EINVAL;
  size_t start = out->len;
  int rc = put_value(out, value, 0);
  if (rc != 0 && out->data != NULL) {
    out->len = start;
    out->data[start] = '\0';
  }
  return rc;
}

typedef struct excerpt_sink {
  char s[DG_JSON_EXCERPT_CHARS * 4 + 8];
  size_t len;
} excerpt_sink_t;

static int excerpt_collect(const char *buffer, size_t size, void *data) {
  excerpt_sink_t *d = data;
  size_t room = sizeof(d->s) - 1 - d->len;
  size_t n = size < room ? size : room;
  memcpy(d->s + d->len, buffer, n);
  d->len += n;
  /* Stopping early keeps a huge value from being serialised in full. */
  return n < size ? -1 : 0;
}

void dg_json_excerpt(const json_t *value, size_t flags, char *out, size_t size) {
  excerpt_sink_t d = {.len = 0};
  json_dump_callback(value, excerpt_collect, &d, JSON_ENCODE_ANY | JSON_COMPACT | flags);
  size_t chars = 0, i = 0;
  for (; i < d.len; i++) {
    /* Count characters, not bytes, and keep control bytes out. */
    if (((unsigned char)d.s[i] & 0xc0) != 0x80 && chars++ == DG_JSON_EXCERPT_CHARS)
      break;
    if ((unsigned char)d.s[i] < 0x20)
      d.s[i] = '?';
  }
  bool cut = i < d.len || d.len == sizeof(d.s) - 1;
  d.s[i] = '\0';
  snprintf(out, size, "%s%s", d.s, cut ? "..." : "");
}

const char *dg_json_scalar_text(const json_t *v, char *buf, size_t size) {
  return dg_json_scalar_text_digits(v, 17, buf, size);
}

const char *dg_json_scalar_text_digits(const json_t *v, int digits, char *buf, size_t size) {
  if (json_is_string(v))
    return json_string_value(v);
  if (json_is_integer(v))
    snprintf(buf, size, "%lld", (long long)json_integer_value(v));
  else if (json_is_real(v))
    snprintf(buf, size, "%.*g", digits, json_real_value(v));
  else if (json_is_boolean(v))
    snprintf(buf, size, "%s", json_is_true(v) ? "true" : "false");
  else
    return NULL;
  return buf;
}
