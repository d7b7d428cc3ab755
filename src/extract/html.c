/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* HTML: the visible text, from libxml2's HTML parser in push mode with SAX
 * callbacks, fed as bytes arrive; no tree is built.
 *
 * Left out: head (and title), script, style, template, noscript, iframe,
 * object, canvas, svg, audio, video, datalist, and any element with the
 * hidden attribute or an inline style of display:none or
 * visibility:hidden, with everything inside. Block elements are line or
 * paragraph breaks, <br> a line break, table cells are separated by " | ",
 * <pre> and <textarea> keep their white space; elsewhere white space
 * collapses as a browser shows it. Entities are decoded by the parser.
 *
 * Encoding: a byte order mark wins, then the content type's charset, then
 * a <meta charset> or <meta http-equiv="Content-Type"> in the first
 * kilobyte (libxml2 switches when it meets one), else UTF-8 when the first
 * bytes are valid UTF-8 and Windows-1252 when they are not. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/HTMLparser.h>
#include <libxml/parserInternals.h>

#include "extract/internal.h"

#define SLICE 65536
/* Bytes of an unfinished tag held back for the next chunk, at most. */
#define HOLD_MAX 4096

enum { F_SKIP = 1, F_PRE = 2, F_CELL = 4, F_ROW = 8 };

typedef struct tag_rule {
  const char *name;
  unsigned char before; /* break before the element's content */
  unsigned char after;  /* break after it */
  unsigned char flags;
} tag_rule_t;

#define P DG__BREAK_PARA
#define L DG__BREAK_LINE
#define S DG__BREAK_SPACE

static const tag_rule_t rules[] = {
    {"head", 0, 0, F_SKIP},
    {"title", 0, 0, F_SKIP},
    {"script", 0, 0, F_SKIP},
    {"style", 0, 0, F_SKIP},
    {"template", 0, 0, F_SKIP},
    {"noscript", 0, 0, F_SKIP},
    {"iframe", 0, 0, F_SKIP},
    {"object", 0, 0, F_SKIP},
    {"canvas", 0, 0, F_SKIP},
    {"svg", 0, 0, F_SKIP},
    {"audio", 0, 0, F_SKIP},
    {"video", 0, 0, F_SKIP},
    {"datalist", 0, 0, F_SKIP},
    {"p", P, P, 0},
    {"h1", P, P, 0},
    {"h2", P, P, 0},
    {"h3", P, P, 0},
    {"h4", P, P, 0},
    {"h5", P, P, 0},
    {"h6", P, P, 0},
    {"blockquote", P, P, 0},
    {"pre", P, P, F_PRE},
    {"textarea", L, L, F_PRE},
    {"table", P, P, 0},
    {"ul", P, P, 0},
    {"ol", P, P, 0},
    {"dl", P, P, 0},
    {"section", P, P, 0},
    {"article", P, P, 0},
    {"header", P, P, 0},
    {"footer", P, P, 0},
    {"aside", P, P, 0},
    {"nav", P, P, 0},
    {"main", P, P, 0},
    {"figure", P, P, 0},
    {"address", P, P, 0},
    {"form", P, P, 0},
    {"fieldset", P, P, 0},
    {"details", P, P, 0},
    {"hr", P, P, 0},
    {"div", L, L, 0},
    {"li", L, L, 0},
    {"dt", L, L, 0},
    {"dd", L, L, 0},
    {"tr", L, L, F_ROW},
    {"caption", L, L, 0},
    {"figcaption", L, L, 0},
    {"summary", L, L, 0},
    {"option", L, L, 0},
    {"legend", L, L, 0},
    {"center", L, L, 0},
    {"dialog", L, L, 0},
    {"hgroup", L, L, 0},
    {"thead", L, L, 0},
    {"tbody", L, L, 0},
    {"tfoot", L, L, 0},
    {"body", L, L, 0},
    {"br", 0, L, 0},
    {"td", S, S, F_CELL},
    {"th", S, S, F_CELL},
    {"img", S, S, 0},
    {"input", S, S, 0},
    {"button", S, S, 0},
};

#undef P
#undef L
#undef S

typedef struct html_state {
  dg__xrun_t *run;
  htmlParserCtxtPtr ctxt;
  htmlSAXHandler sax;
  unsigned depth;
  unsigned skip_depth; /* depth of the hidden element being skipped, or 0 */
  unsigned pre_depth;  /* depth of the <pre> whose white space is kept, or 0 */
  unsigned row_cells;  /* cells seen in the current table row */
  int failure;
  bool utf16;    /* the input is UTF-16 (from its byte order mark) */
  dg_buf_t pend; /* bytes waiting to be parsed */
} html_state_t;

static const tag_rule_t *rule_of(const char *name) {
  for (size_t i = 0; i < DG_ARRAY_SIZE(rules); i++) {
    if (strcmp(name, rules[i].name) == 0)
      return &rules[i];
  }
  return NULL;
}

/* True for an inline style that hides the element. */
static bool style_hides(const char *style) {
  char flat[256];
  size_t n = 0;
  for (const char *p = style; *p != '\0' && n + 1 < sizeof(flat); p++) {
    if (!isspace((unsigned char)*p))
      flat[n++] = (char)tolower((unsigned char)*p);
  }
  flat[n] = '\0';
  return strstr(flat, "display:none") != NULL || strstr(flat, "visibility:hidden") != NULL;
}

static bool hidden(const xmlChar **atts) {
  for (size_t i = 0; atts != NULL && atts[i] != NULL; i += 2) {
    const char *name = (const char *)atts[i], *value = (const char *)atts[i + 1];
    if (strcasecmp(name, "hidden") == 0)
      return true;
    if (value != NULL && strcasecmp(name, "style") == 0 && style_hides(value))
      return true;
  }
  return false;
}

static void stop(html_state_t *st, int rc) {
  if (st->failure == 0)
    st->failure = rc;
  xmlStopParser(st->ctxt);
}

/* Applies an element's layout at its start. */
static void open_layout(html_state_t *st, const tag_rule_t *r) {
  dg__sink_t *sink = &st->run->sink;
  if (r == NULL)
    return;
  dg__sink_break(sink, r->before);
  if (r->flags & F_ROW)
    st->row_cells = 0;
  if ((r->flags & F_CELL) && st->row_cells++ > 0)
    dg__sink_text(sink, " | ", 3);
  if ((r->flags & F_PRE) && st->pre_depth == 0) {
    st->pre_depth = st->depth;
    dg__sink_preserve(sink, true);
  }
}

static void on_start(void *ctx, const xmlChar *name, const xmlChar **atts) {
  html_state_t *st = ctx;
  if (st->depth >= st->run->limits.max_depth) {
    stop(st, dg__xml_too_deep(st->run, "the HTML document"));
    return;
  }
  st->depth++;
  if (st->skip_depth != 0)
    return;
  const tag_rule_t *r = rule_of((const char *)name);
  if ((r != NULL && (r->flags & F_SKIP)) || hidden(atts)) {
    st->skip_depth = st->depth;
    return;
  }
  open_layout(st, r);
}

static void on_end(void *ctx, const xmlChar *name) {
  html_state_t *st = ctx;
  if (st->depth == 0)
    return;
  unsigned depth = st->depth--;
  if (st->skip_depth != 0) {
    if (depth == st->skip_depth)
      st->skip_depth = 0;
    return;
  }
  if (depth == st->pre_depth) {
    st->pre_depth = 0;
    dg__sink_preserve(&st->run->sink, false);
  }
  const tag_rule_t *r = rule_of((const char *)name);
  if (r != NULL)
    dg__sink_break(&st->run->sink, r->after);
}

static void on_text(void *ctx, const xmlChar *ch, int len) {
  html_state_t *st = ctx;
  if (st->skip_depth == 0)
    dg__sink_text(&st->run->sink, (const char *)ch, (size_t)len);
}

static void init_sax(htmlSAXHandler *sax) {
  memset(sax, 0, sizeof(*sax));
  sax->startElement = on_start;
  sax->endElement = on_end;
  sax->characters = on_text;
  sax->ignorableWhitespace = on_text;
  sax->cdataBlock = on_text;
}

static int html_open(dg__xrun_t *run) {
  html_state_t *st = run->state;
  dg__xml_init();
  st->run = run;
  init_sax(&st->sax);
  dg_buf_init(&st->pend, SLICE + HOLD_MAX + 8);
  return 0;
}

/* True when a <meta> among the first bytes declares a charset, which
 * libxml2 then applies itself. */
static bool meta_charset(const unsigned char *p, size_t n) {
  size_t end = n < DG_EXTRACT_SNIFF_BYTES ? n : DG_EXTRACT_SNIFF_BYTES;
  for (size_t i = 0; i + 5 <= end; i++) {
    if (p[i] != '<' || strncasecmp((const char *)p + i + 1, "meta", 4) != 0)
      continue;
    for (size_t j = i + 5; j + 7 <= end && p[j] != '>'; j++) {
      if (strncasecmp((const char *)p + j, "charset", 7) == 0)
        return true;
    }
  }
  return false;
}

/* True when p holds only valid UTF-8 (a character cut at the end aside). */
static bool valid_utf8(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n;) {
    uint32_t cp = 0;
    int k = dg_utf8_decode(p + i, n - i, &cp);
    if (k < 0)
      return false;
    if (k == 0)
      return n - i < 4;
    i += (size_t)k;
  }
  return true;
}

/* Switches the parser to a named encoding; false when it is unknown. */
static bool switch_to(html_state_t *st, const char *name) {
  xmlCharEncodingHandlerPtr h = xmlFindCharEncodingHandler(name);
  if (h == NULL)
    return false;
  xmlSwitchToEncoding(st->ctxt, h);
  return true;
}

/* Chooses the input encoding before any text is parsed: byte order mark,
 * content type charset, <meta> (left to libxml2), else UTF-8 when the
 * first bytes are UTF-8 and Windows-1252 when not. Returns the length of
 * the byte order mark to skip. */
static size_t choose_encoding(html_state_t *st, const unsigned char *p, size_t n) {
  if (n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) {
    switch_to(st, "UTF-8");
    return 3;
  }
  st->utf16 = n >= 2 && ((p[0] == 0xff && p[1] == 0xfe) || (p[0] == 0xfe && p[1] == 0xff));
  if (st->utf16) {
    xmlSwitchEncoding(st->ctxt,
                      p[0] == 0xff ? XML_CHAR_ENCODING_UTF16LE : XML_CHAR_ENCODING_UTF16BE);
    return 2;
  }
  if (st->run->charset[0] != '\0' && switch_to(st, st->run->charset))
    return 0;
  if (!meta_charset(p, n))
    switch_to(st, valid_utf8(p, n) ? "UTF-8" : "windows-1252");
  return 0;
}

static int create_parser(html_state_t *st) {
  st->ctxt = htmlCreatePushParserCtxt(&st->sax, st, NULL, 0, NULL, XML_CHAR_ENCODING_NONE);
  if (st->ctxt == NULL)
    return dg_errctx_set(&st->run->err, DG_ENOMEM, "url", "out of memory");
  htmlCtxtUseOptions(st->ctxt, HTML_PARSE_NONET | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                                   HTML_PARSE_RECOVER);
  size_t bom = choose_encoding(st, (const unsigned char *)st->pend.data, st->pend.len);
  dg_buf_consume(&st->pend, bom);
  return 0;
}

/* Where to end the bytes handed to the parser now. libxml2's push parser
 * loses an end tag such as </script> cut by a chunk boundary, and falls
 * back to Latin-1 on a UTF-8 sequence cut by one, so a tag still open at
 * the end and an incomplete UTF-8 character wait for the next bytes. */
static size_t safe_cut(const html_state_t *st, const unsigned char *p, size_t n) {
  size_t cut = n;
  for (size_t i = n; i > 0 && n - i < HOLD_MAX; i--) {
    if (p[i - 1] == '>')
      break;
    if (p[i - 1] == '<') {
      cut = i - 1;
      break;
    }
  }
  if (st->utf16)
    return cut & ~(size_t)1;
  for (size_t k = 1; k <= 3 && k <= cut; k++) {
    uint32_t cp = 0;
    if ((p[cut - k] & 0xc0) != 0x80)
      return dg_utf8_decode(p + cut - k, k, &cp) == 0 ? cut - k : cut;
  }
  return cut;
}

/* Adds bytes to what waits and hands the parser all it safely can. */
static int push(html_state_t *st, const unsigned char *p, size_t n, bool last) {
  if (dg_buf_append(&st->pend, p, n) != 0)
    return dg_errctx_set(&st->run->err, DG_ENOMEM, "url", "out of memory");
  /* The first kilobyte decides the encoding. */
  if (st->ctxt == NULL && st->pend.len < DG_EXTRACT_SNIFF_BYTES && !last)
    return 0;
  int rc = st->ctxt == NULL ? create_parser(st) : 0;
  if (rc != 0)
    return rc;
  const unsigned char *data = (const unsigned char *)(st->pend.data ? st->pend.data : "");
  size_t cut = last ? st->pend.len : safe_cut(st, data, st->pend.len);
  /* Parse problems are not failures: HTML is read the way browsers read it. */
  htmlParseChunk(st->ctxt, (const char *)data, (int)cut, last);
  dg_buf_consume(&st->pend, cut);
  if (st->failure != 0)
    return st->failure;
  return dg__xrun_check(st->run);
}

static int html_step(dg__xrun_t *run, bool *done) {
  dg__xml_init();
  html_state_t *st = run->state;
  size_t off = 0;
  int rc = 0;
  do {
    size_t n = run->in_len - off < SLICE ? run->in_len - off : SLICE;
    bool last = run->in_last && off + n == run->in_len;
    if (n > 0 || last)
      rc = push(st, run->in + off, n, last);
    off += n;
  } while (rc == 0 && off < run->in_len && !dg__xrun_full(run));
  *done = run->in_last;
  return rc;
}

static void html_close(dg__xrun_t *run) {
  html_state_t *st = run->state;
  if (st->ctxt != NULL)
    htmlFreeParserCtxt(st->ctxt);
  dg_buf_free(&st->pend);
}

const dg__extractor_t dg__extract_html = {
    .name = "html",
    .whole = false,
    .state_size = sizeof(html_state_t),
    .open = html_open,
    .step = html_step,
    .close = html_close,
};
