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
 * a <meta charset> or <meta http-equiv="Content-Type"> (libxml2 switches
 * when it meets one), else UTF-8, falling back to Latin-1 for bytes that
 * are not UTF-8. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/HTMLparser.h>
#include <libxml/parserInternals.h>

#include "extract/internal.h"

#define SLICE 65536

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
  unsigned char head[4];
  size_t head_len;
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
  return 0;
}

/* Chooses the input encoding before any text is parsed; returns the
 * length of the byte order mark to skip. */
static size_t choose_encoding(html_state_t *st, const unsigned char *p, size_t n) {
  if (n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0)
    return 3;
  if (n >= 2 && p[0] == 0xff && p[1] == 0xfe) {
    xmlSwitchEncoding(st->ctxt, XML_CHAR_ENCODING_UTF16LE);
    return 2;
  }
  if (n >= 2 && p[0] == 0xfe && p[1] == 0xff) {
    xmlSwitchEncoding(st->ctxt, XML_CHAR_ENCODING_UTF16BE);
    return 2;
  }
  if (st->run->charset[0] != '\0') {
    xmlCharEncodingHandlerPtr h = xmlFindCharEncodingHandler(st->run->charset);
    if (h != NULL)
      xmlSwitchToEncoding(st->ctxt, h);
  }
  return 0;
}

static int create_parser(html_state_t *st) {
  st->ctxt = htmlCreatePushParserCtxt(&st->sax, st, NULL, 0, NULL, XML_CHAR_ENCODING_NONE);
  if (st->ctxt == NULL)
    return dg_errctx_set(&st->run->err, DG_ENOMEM, "url", "out of memory");
  htmlCtxtUseOptions(st->ctxt, HTML_PARSE_NONET | HTML_PARSE_NOERROR | HTML_PARSE_NOWARNING |
                                   HTML_PARSE_RECOVER);
  size_t skip = choose_encoding(st, st->head, st->head_len);
  /* Parse problems are not failures: HTML is read the way browsers read it. */
  htmlParseChunk(st->ctxt, (const char *)st->head + skip, (int)(st->head_len - skip), 0);
  return 0;
}

static size_t take_head(html_state_t *st, const unsigned char *p, size_t n) {
  size_t k = sizeof(st->head) - st->head_len;
  k = k < n ? k : n;
  memcpy(st->head + st->head_len, p, k);
  st->head_len += k;
  return k;
}

static int parse_slice(html_state_t *st, const unsigned char *p, size_t n, bool last) {
  htmlParseChunk(st->ctxt, (const char *)p, (int)n, last);
  if (st->failure != 0)
    return st->failure;
  return dg__xrun_check(st->run);
}

static int html_step(dg__xrun_t *run, bool *done) {
  html_state_t *st = run->state;
  size_t off = 0;
  if (st->ctxt == NULL && run->in_len > 0)
    off = take_head(st, run->in, run->in_len);
  if (st->ctxt == NULL && st->head_len < sizeof(st->head) && !run->in_last)
    return 0;
  int rc = st->ctxt == NULL ? create_parser(st) : 0;
  rc = rc != 0 ? rc : st->failure;
  do {
    size_t n = run->in_len - off < SLICE ? run->in_len - off : SLICE;
    bool last = run->in_last && off + n == run->in_len;
    if (rc == 0 && (n > 0 || last))
      rc = parse_slice(st, run->in + off, n, last);
    off += n;
  } while (rc == 0 && off < run->in_len && !dg__xrun_full(run));
  *done = run->in_last;
  return rc;
}

static void html_close(dg__xrun_t *run) {
  html_state_t *st = run->state;
  if (st->ctxt != NULL)
    htmlFreeParserCtxt(st->ctxt);
}

const dg__extractor_t dg__extract_html = {
    .name = "html",
    .whole = false,
    .state_size = sizeof(html_state_t),
    .open = html_open,
    .step = html_step,
    .close = html_close,
};
