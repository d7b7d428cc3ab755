/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The text sink every extractor writes through. It keeps the output valid
 * UTF-8 whatever the input, collapses white space for markup formats (a
 * document's layout is expressed with breaks instead), turns CRLF and CR
 * into LF for text formats, and stops at the output's maximum on a
 * character boundary, remembering that it did. */
#include <string.h>

#include "extract/internal.h"

void dg__sink_init(dg__sink_t *s, dg_buf_t *out) {
  memset(s, 0, sizeof(*s));
  s->out = out;
}

/* Appends bytes that are valid UTF-8; past the maximum, the longest prefix
 * that ends on a character boundary and fits. */
static void put(dg__sink_t *s, const char *p, size_t n) {
  if (s->truncated || n == 0)
    return;
  dg_buf_t *out = s->out;
  size_t room = out->max - out->len;
  if (n > room) {
    n = room;
    while (n > 0 && ((unsigned char)p[n] & 0xc0) == 0x80)
      n--;
    s->truncated = true;
  }
  if (n > 0 && dg_buf_append(out, p, n) != 0)
    s->truncated = true;
}

static size_t trailing_newlines(const dg_buf_t *out) {
  size_t n = 0;
  while (n < DG__SINK_LOOKBACK && n < out->len && out->data[out->len - 1 - n] == '\n')
    n++;
  return n;
}

static void write_break(dg__sink_t *s, unsigned kind) {
  const dg_buf_t *out = s->out;
  if (out->len == 0 || kind == DG__BREAK_NONE)
    return;
  size_t nl = trailing_newlines(out);
  char last = out->data[out->len - 1];
  if (kind == DG__BREAK_PARA)
    put(s, "\n\n", 2 - nl);
  else if (kind == DG__BREAK_LINE && nl == 0)
    put(s, "\n", 1);
  else if (kind == DG__BREAK_SPACE && last != ' ' && last != '\n' && last != '\t')
    put(s, " ", 1);
}

static void write_label(dg__sink_t *s, const char *label) {
  write_break(s, DG__BREAK_PARA);
  put(s, label, strlen(label));
  s->pending = DG__BREAK_LINE;
}

/* Runs before visible output: the pending label and break. */
static void flush(dg__sink_t *s) {
  if (s->label != NULL) {
    const char *label = s->label;
    s->label = NULL;
    write_label(s, label);
  }
  unsigned kind = s->pending;
  s->pending = DG__BREAK_NONE;
  write_break(s, kind);
}

static void visible(dg__sink_t *s, const char *p, size_t n) {
  if (n == 0)
    return;
  flush(s);
  put(s, p, n);
}

void dg__sink_break(dg__sink_t *s, unsigned kind) {
  if (kind > s->pending)
    s->pending = kind;
}

void dg__sink_label(dg__sink_t *s, const char *label, bool eager) {
  s->label = NULL;
  if (label == NULL)
    return;
  dg_strlcpy(s->label_buf, label, sizeof(s->label_buf));
  s->label = s->label_buf;
  if (eager)
    flush(s);
}

void dg__sink_preserve(dg__sink_t *s, bool on) {
  s->preserve = on;
  s->after_cr = false;
}

void dg__sink_rune(dg__sink_t *s, uint32_t cp) {
  char tmp[4];
  size_t n = dg_utf8_encode(cp, tmp);
  dg__sink_text(s, tmp, n);
}

static bool is_space(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

/* Handles one ASCII byte that is not part of a plain run. */
static void special_byte(dg__sink_t *s, unsigned char c) {
  static const char replacement[] = "\xef\xbf\xbd";
  bool cr = s->after_cr;
  s->after_cr = false;
  if (c == 0) {
    visible(s, replacement, 3);
  } else if (!s->preserve) {
    if (is_space(c))
      dg__sink_break(s, DG__BREAK_SPACE);
    /* Other control characters carry nothing a reader can see. */
  } else if (c == '\r') {
    visible(s, "\n", 1);
    s->after_cr = true;
  } else if (c != '\n' || !cr) {
    visible(s, (const char *)&c, 1);
  }
}

static bool visible_ascii(unsigned char c) {
  return c > 0x20 && c < 0x7f;
}

/* Length of the plain run at p: bytes written as they are. Collapsing
 * white space, one space between two visible ASCII characters is plain
 * too: it would become a space break that the next character writes as
 * one space, so words go out in one piece instead of three. */
static size_t plain_run(const dg__sink_t *s, const unsigned char *p, size_t n) {
  size_t i = 0;
  while (i < n) {
    unsigned char c = p[i];
    if (c < 0x80) {
      bool plain = s->preserve ? (c != 0 && c != '\r' && c != '\n') : visible_ascii(c);
      if (!plain && !s->preserve && c == ' ' && i > 0 && visible_ascii(p[i - 1]) && i + 1 < n &&
          visible_ascii(p[i + 1]))
        plain = true;
      if (!plain)
        break;
      i++;
      continue;
    }
    uint32_t cp = 0;
    int k = dg_utf8_decode(p + i, n - i, &cp);
    if (k <= 0 || (cp == 0xa0 && !s->preserve))
      break;
    i += (size_t)k;
  }
  return i;
}

/* Handles the non-ASCII sequence at p that is not plain; returns its length. */
static size_t special_sequence(dg__sink_t *s, const unsigned char *p, size_t n) {
  static const char replacement[] = "\xef\xbf\xbd";
  uint32_t cp = 0;
  int k = dg_utf8_decode(p, n, &cp);
  s->after_cr = false;
  if (k > 0) {
    /* A no-break space is a space to a reader of plain text. */
    dg__sink_break(s, DG__BREAK_SPACE);
    return (size_t)k;
  }
  visible(s, replacement, 3);
  return k == 0 ? n : (size_t)-k;
}

void dg__sink_text(dg__sink_t *s, const char *text, size_t len) {
  const unsigned char *p = (const unsigned char *)text;
  size_t i = 0;
  while (i < len && !s->truncated) {
    size_t run = plain_run(s, p + i, len - i);
    if (run > 0) {
      s->after_cr = false;
      visible(s, (const char *)p + i, run);
      i += run;
    } else if (p[i] < 0x80) {
      special_byte(s, p[i]);
      i++;
    } else {
      i += special_sequence(s, p + i, len - i);
    }
  }
}
