/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* TXT, MD, CSV and JSON: the text as it is, decoded to UTF-8. A byte order
 * mark decides the encoding (UTF-8, UTF-16LE, UTF-16BE), else the content
 * type's charset (any that iconv knows), else UTF-8. Invalid sequences
 * become U+FFFD; line ends become LF. Input is decoded in slices, carrying
 * an incomplete sequence over to the next slice or step. */
#include <errno.h>
#include <iconv.h>
#include <string.h>
#include <strings.h>

#include "extract/internal.h"

#define SLICE 65536
#define CARRY_MAX 8

typedef enum encoding { ENC_UTF8, ENC_UTF16LE, ENC_UTF16BE, ENC_ICONV } encoding_t;

typedef struct text_state {
  encoding_t enc;
  bool started; /* the byte order mark has been looked for */
  iconv_t cd;
  size_t carry_len;
  unsigned char work[CARRY_MAX + SLICE];
  char out[SLICE * 3 + 16]; /* UTF-8 of one slice of UTF-16 or a legacy charset */
} text_state_t;

static bool charset_is(const char *charset, const char *a, const char *b) {
  return strcasecmp(charset, a) == 0 || (b != NULL && strcasecmp(charset, b) == 0);
}

static int text_open(dg__xrun_t *run) {
  text_state_t *st = run->state;
  const char *cs = run->charset;
  st->cd = (iconv_t)-1;
  st->enc = ENC_UTF8;
  dg__sink_preserve(&run->sink, true);
  if (charset_is(cs, "utf-16le", NULL))
    st->enc = ENC_UTF16LE;
  else if (charset_is(cs, "utf-16be", "utf-16"))
    st->enc = ENC_UTF16BE;
  else if (cs[0] != '\0' && !charset_is(cs, "utf-8", "utf8") && !charset_is(cs, "us-ascii", NULL))
    st->cd = iconv_open("UTF-8", cs);
  /* An unknown charset is read as UTF-8, with replacement where it is not. */
  if (st->cd != (iconv_t)-1)
    st->enc = ENC_ICONV;
  return 0;
}

/* Looks for a byte order mark; returns its length, or -1 to wait for more. */
static int byte_order_mark(text_state_t *st, const unsigned char *p, size_t n, bool last) {
  if (n < 3 && !last)
    return -1;
  st->started = true;
  if (n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) {
    st->enc = ENC_UTF8;
    return 3;
  }
  if (n >= 2 && p[0] == 0xff && p[1] == 0xfe) {
    st->enc = ENC_UTF16LE;
    return 2;
  }
  if (n >= 2 && p[0] == 0xfe && p[1] == 0xff) {
    st->enc = ENC_UTF16BE;
    return 2;
  }
  return 0;
}

/* Bytes at the end of p that start a character not yet complete. */
static size_t utf8_incomplete_tail(const unsigned char *p, size_t n) {
  for (size_t k = 1; k <= 3 && k <= n; k++) {
    uint32_t cp = 0;
    if ((p[n - k] & 0xc0) != 0x80)
      return dg_utf8_decode(p + n - k, k, &cp) == 0 ? k : 0;
  }
  return 0;
}

/* Decodes UTF-16 into st->out; returns the bytes consumed (a trailing odd
 * byte or lone high surrogate waits for the next slice unless last). */
static size_t utf16_decode(text_state_t *st, const unsigned char *p, size_t n, bool le, bool last,
                           size_t *out_len) {
  size_t i = 0, o = 0;
  while (i + 1 < n) {
    uint32_t u = le ? (uint32_t)(p[i] | p[i + 1] << 8) : (uint32_t)(p[i] << 8 | p[i + 1]);
    size_t used = 2;
    if (u >= 0xd800 && u <= 0xdbff) {
      if (i + 3 >= n && !last)
        break;
      uint32_t v = 0;
      if (i + 3 < n)
        v = le ? (uint32_t)(p[i + 2] | p[i + 3] << 8) : (uint32_t)(p[i + 2] << 8 | p[i + 3]);
      if (v >= 0xdc00 && v <= 0xdfff) {
        u = 0x10000 + ((u - 0xd800) << 10) + (v - 0xdc00);
        used = 4;
      }
    }
    /* A lone surrogate is encoded as U+FFFD by dg_utf8_encode. */
    o += dg_utf8_encode(u == 0 ? DG__REPLACEMENT : u, st->out + o);
    i += used;
  }
  if (last && i < n) {
    o += dg_utf8_encode(DG__REPLACEMENT, st->out + o);
    i = n;
  }
  *out_len = o;
  return i;
}

/* Converts with iconv, writing to the sink whenever st->out fills up;
 * returns the bytes consumed. */
static size_t iconv_decode(dg__xrun_t *run, const unsigned char *p, size_t n, bool last) {
  text_state_t *st = run->state;
  char *in = (char *)p, *out = st->out;
  size_t in_left = n, out_left = sizeof(st->out) - 4;
  while (in_left > 0) {
    if (iconv(st->cd, &in, &in_left, &out, &out_left) != (size_t)-1)
      break;
    if (errno == E2BIG) {
      dg__sink_text(&run->sink, st->out, (size_t)(out - st->out));
      out = st->out;
      out_left = sizeof(st->out) - 4;
      continue;
    }
    if (errno == EINVAL && !last)
      break;
    /* EILSEQ, or a sequence cut by the end of the document. */
    out += dg_utf8_encode(DG__REPLACEMENT, out);
    out_left = out_left > 3 ? out_left - 3 : 0;
    in++;
    in_left--;
  }
  dg__sink_text(&run->sink, st->out, (size_t)(out - st->out));
  return n - in_left;
}

/* Decodes one slice (carry included); returns the bytes consumed. */
static size_t decode_slice(dg__xrun_t *run, const unsigned char *p, size_t n, bool last) {
  text_state_t *st = run->state;
  size_t used = n, out_len = 0;
  if (st->enc == ENC_UTF8) {
    used = last ? n : n - utf8_incomplete_tail(p, n);
    dg__sink_text(&run->sink, (const char *)p, used);
    return used;
  }
  if (st->enc == ENC_ICONV)
    return iconv_decode(run, p, n, last);
  used = utf16_decode(st, p, n, st->enc == ENC_UTF16LE, last, &out_len);
  dg__sink_text(&run->sink, st->out, out_len);
  return used;
}

/* Runs one slice of new bytes through the decoder after the carry. */
static int feed_slice(dg__xrun_t *run, const unsigned char *p, size_t n, bool last) {
  text_state_t *st = run->state;
  if (n > 0)
    memcpy(st->work + st->carry_len, p, n);
  size_t len = st->carry_len + n, start = 0;
  st->carry_len = 0;
  if (!st->started) {
    int bom = byte_order_mark(st, st->work, len, last);
    if (bom < 0) {
      st->carry_len = len;
      return 0;
    }
    start = (size_t)bom;
  }
  size_t used = start + decode_slice(run, st->work + start, len - start, last);
  /* Whatever was not consumed is a partial character: at most a few bytes. */
  st->carry_len = len - used > CARRY_MAX ? CARRY_MAX : len - used;
  memmove(st->work, st->work + len - st->carry_len, st->carry_len);
  return 0;
}

static int text_step(dg__xrun_t *run, bool *done) {
  size_t off = 0;
  while (off < run->in_len && !dg__xrun_full(run)) {
    size_t n = run->in_len - off < SLICE ? run->in_len - off : SLICE;
    bool last = run->in_last && off + n == run->in_len;
    int rc = feed_slice(run, run->in + off, n, last);
    rc = rc != 0 ? rc : dg__xrun_check(run);
    if (rc != 0)
      return rc;
    off += n;
  }
  if (run->in_last && run->in_len == 0)
    feed_slice(run, NULL, 0, true);
  *done = run->in_last;
  return 0;
}

static void text_close(dg__xrun_t *run) {
  text_state_t *st = run->state;
  if (st->cd != (iconv_t)-1 && st->cd != (iconv_t)0)
    iconv_close(st->cd);
}

const dg__extractor_t dg__extract_text = {
    .name = "text",
    .whole = false,
    .state_size = sizeof(text_state_t),
    .open = text_open,
    .step = text_step,
    .close = text_close,
};
