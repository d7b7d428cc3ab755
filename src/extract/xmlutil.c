/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* What the libxml2-based extractors share: one process-wide initialisation
 * (libxml2 asks for it before threads use the library) and the wording of
 * parse errors. */
#include <pthread.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xmlerror.h>

#include "extract/internal.h"

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static void xml_init_once(void) {
  xmlInitParser();
}

static void quiet(void *ctx, const char *fmt, ...) {
}

void dg__xml_init(void) {
  pthread_once(&xml_once, xml_init_once);
  /* Some libxml2 errors (encoding conversion) bypass the parser's handlers
   * and go to the thread's generic handler, which writes to stderr, where
   * the gateway's JSON log lines go. The handler is per thread and steps
   * move between threadpool threads, so every step sets it. */
  xmlSetGenericErrorFunc(NULL, quiet);
}

/* libxml2's messages end with a newline; the caller's sentence does not. */
static size_t message_len(const char *msg) {
  size_t n = strlen(msg);
  while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
    n--;
  return n;
}

int dg__xml_fail(dg__xrun_t *run, const char *what, const xmlError *e) {
  if (e == NULL || e->message == NULL)
    return dg_errctx_set(&run->err, DG_EPROTO, "url", "%s is not well-formed", what);
  return dg_errctx_set(&run->err, DG_EPROTO, "url", "%s is not well-formed: line %d: %.*s", what,
                       e->line, (int)message_len(e->message), e->message);
}

int dg__xml_too_deep(dg__xrun_t *run, const char *what) {
  return dg_errctx_set(&run->err, DG_E2BIG, "url",
                       "%s nests elements deeper than the limit of %u levels", what,
                       run->limits.max_depth);
}

/* ---- Attributes per element ---------------------------------------------------- */

enum {
  S_TEXT = 0,
  S_LT,        /* after "<" */
  S_BANG,      /* after "<!" */
  S_BANG_DASH, /* after "<!-" */
  S_COMMENT,
  S_CDATA,
  S_PI,
  S_DECL,
  S_END, /* an end tag */
  S_TAG, /* a start tag, outside quotes */
  S_TAG_DQ,
  S_TAG_SQ,
};

/* The state after byte c outside start tags. */
static unsigned char scan_markup(dg__attr_scan_t *s, unsigned char c) {
  switch (s->state) {
  case S_TEXT:
    return c == '<' ? S_LT : S_TEXT;
  case S_LT:
    s->count = 0;
    return c == '!' ? S_BANG : c == '?' ? S_PI : c == '/' ? S_END : S_TAG;
  case S_BANG:
    s->depth = c == '[' ? 1 : 0;
    return c == '-' ? S_BANG_DASH : c == '[' ? S_CDATA : S_DECL;
  case S_BANG_DASH:
    return c == '-' ? S_COMMENT : S_DECL;
  case S_COMMENT:
    return c == '>' && s->hist[0] == '-' && s->hist[1] == '-' ? S_TEXT : S_COMMENT;
  case S_CDATA:
    return c == '>' && s->hist[0] == ']' && s->hist[1] == ']' ? S_TEXT : S_CDATA;
  case S_PI:
    return c == '>' && s->hist[1] == '?' ? S_TEXT : S_PI;
  case S_END:
    return c == '>' ? S_TEXT : S_END;
  default: /* S_DECL: a DOCTYPE's internal subset is in brackets */
    s->depth += c == '[';
    s->depth -= c == ']' && s->depth > 0;
    return c == '>' && s->depth == 0 ? S_TEXT : S_DECL;
  }
}

/* A UTF-16 document has a NUL or a byte order mark in its first bytes. */
static void scan_start(dg__attr_scan_t *s, unsigned char c) {
  unsigned char first = s->hist[1];
  if (c == 0 || (s->seen == 1 && ((first == 0xff && c == 0xfe) || (first == 0xfe && c == 0xff))))
    s->off = true;
  s->seen++;
}

/* The byte that ends the state's stretch of uninteresting bytes: text
 * runs to "<", an end tag to ">", a quoted value to its quote; 0 for the
 * states that look at every byte. */
static unsigned char stretch_end(unsigned char state) {
  switch (state) {
  case S_TEXT:
    return '<';
  case S_END:
    return '>';
  case S_TAG_DQ:
    return '"';
  case S_TAG_SQ:
    return '\'';
  default:
    return 0;
  }
}

/* Skips from i to the byte that ends the current stretch (memchr rather
 * than a byte at a time through the state machine: the scan was most of
 * the cost of reading a DOCX), keeping the last two bytes as seen. */
static size_t skip_stretch(dg__attr_scan_t *s, const unsigned char *p, size_t i, size_t n) {
  unsigned char end = stretch_end(s->state);
  if (end == 0 || s->seen < 2)
    return i;
  const unsigned char *hit = memchr(p + i, end, n - i);
  size_t j = hit != NULL ? (size_t)(hit - p) : n;
  if (j - i >= 2)
    s->hist[0] = p[j - 2];
  else if (j - i == 1)
    s->hist[0] = s->hist[1];
  if (j > i)
    s->hist[1] = p[j - 1];
  return j;
}

bool dg__attr_scan(dg__attr_scan_t *s, const unsigned char *p, size_t n, unsigned max) {
  for (size_t i = 0; i < n && !s->off; i++) {
    i = skip_stretch(s, p, i, n);
    if (i == n)
      break;
    unsigned char c = p[i];
    if (s->seen < 2)
      scan_start(s, c);
    if (s->state == S_TAG) {
      s->count += c == '=';
      s->state = c == '"' ? S_TAG_DQ : c == '\'' ? S_TAG_SQ : c == '>' ? S_TEXT : S_TAG;
      if (max != 0 && s->count > max)
        return false;
    } else if (s->state == S_TAG_DQ || s->state == S_TAG_SQ) {
      s->state = c == (s->state == S_TAG_DQ ? '"' : '\'') ? S_TAG : s->state;
    } else {
      s->state = scan_markup(s, c);
    }
    s->hist[0] = s->hist[1];
    s->hist[1] = c;
  }
  return true;
}

int dg__xml_too_many_attributes(dg__xrun_t *run, const char *what) {
  return dg_errctx_set(&run->err, DG_E2BIG, "url",
                       "%s has an element with more than the limit of %u attributes", what,
                       run->limits.max_attributes);
}
