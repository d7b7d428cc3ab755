/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* XML: text and attribute values in document order, from libxml2's SAX2
 * push parser fed as bytes arrive; no tree is built.
 *
 * Entities are never expanded and nothing is loaded: a declared general
 * entity is recorded with empty content, so a reference to it costs nothing
 * (the billion laughs yield no text) and is written as "&name;"; external
 * subsets and external entities are not fetched (no resolver, XML_PARSE_NONET).
 * Nesting deeper than limits.max_depth stops the parse with an error.
 *
 * Layout: the end of an element that held child elements is a line break,
 * the end of a leaf a space; white space holding a newline between elements
 * is a line break, so indented documents keep one value per line. */
#include <stdlib.h>
#include <string.h>

#include <libxml/entities.h>
#include <libxml/parser.h>
#include <libxml/parserInternals.h>
#include <libxml/tree.h>

#include "extract/internal.h"

#define SLICE 65536
/* Declared entities recorded per document; more are ignored (a reference
 * to one of them is then an undeclared entity, a well-formedness error). */
#define MAX_ENTITIES 10000

typedef struct xml_state {
  dg__xrun_t *run;
  xmlParserCtxtPtr ctxt;
  xmlSAXHandler sax;
  xmlDocPtr entities; /* holds the empty stand-ins of declared entities */
  size_t entity_count;
  unsigned depth;
  bool *has_children; /* per open element, max_depth + 1 of them */
  int failure;        /* a limit hit inside a callback */
  dg__attr_scan_t attrs;
  unsigned char head[4];
  size_t head_len;
} xml_state_t;

static void stop(xml_state_t *st, int rc) {
  if (st->failure == 0)
    st->failure = rc;
  xmlStopParser(st->ctxt);
}

/* An attribute value as libxml2 hands it over without entity
 * substitution: a literal "&" is kept as "&#38;", which is undone here. */
static void attribute_text(dg__sink_t *sink, const char *v, size_t n) {
  size_t from = 0;
  for (size_t i = 0; i + 5 <= n; i++) {
    if (memcmp(v + i, "&#38;", 5) != 0)
      continue;
    dg__sink_text(sink, v + from, i - from);
    dg__sink_text(sink, "&", 1);
    from = i + 5;
    i += 4;
  }
  dg__sink_text(sink, v + from, n - from);
}

static void on_start(void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri,
                     int nb_namespaces, const xmlChar **namespaces, int nb_attributes,
                     int nb_defaulted, const xmlChar **attributes) {
  xml_state_t *st = ctx;
  dg__sink_t *sink = &st->run->sink;
  if (st->depth >= st->run->limits.max_depth) {
    stop(st, dg__xml_too_deep(st->run, "the XML document"));
    return;
  }
  st->has_children[st->depth] = true;
  st->depth++;
  st->has_children[st->depth] = false;
  dg__sink_break(sink, DG__BREAK_SPACE);
  /* Each attribute is five pointers: name, prefix, URI, value, value end. */
  for (int i = 0; i < nb_attributes; i++) {
    const xmlChar *value = attributes[i * 5 + 3], *end = attributes[i * 5 + 4];
    attribute_text(sink, (const char *)value, (size_t)(end - value));
    dg__sink_break(sink, DG__BREAK_SPACE);
  }
}

static void on_end(void *ctx, const xmlChar *localname, const xmlChar *prefix, const xmlChar *uri) {
  xml_state_t *st = ctx;
  if (st->depth == 0)
    return;
  bool parent = st->has_children[st->depth];
  st->depth--;
  dg__sink_break(&st->run->sink, parent ? DG__BREAK_LINE : DG__BREAK_SPACE);
}

static void on_text(void *ctx, const xmlChar *ch, int len) {
  xml_state_t *st = ctx;
  size_t n = (size_t)len, blank = 0;
  while (blank < n &&
         (ch[blank] == ' ' || ch[blank] == '\t' || ch[blank] == '\r' || ch[blank] == '\n'))
    blank++;
  if (blank == n) {
    bool newline = memchr(ch, '\n', n) != NULL;
    dg__sink_break(&st->run->sink, newline ? DG__BREAK_LINE : DG__BREAK_SPACE);
    return;
  }
  dg__sink_text(&st->run->sink, (const char *)ch, n);
}

static void on_reference(void *ctx, const xmlChar *name) {
  xml_state_t *st = ctx;
  dg__sink_text(&st->run->sink, "&", 1);
  dg__sink_text(&st->run->sink, (const char *)name, strlen((const char *)name));
  dg__sink_text(&st->run->sink, ";", 1);
}

/* Records a general entity as an empty internal one: never expanded, never
 * loaded. Parameter and unparsed entities are not recorded. */
static void on_entity_decl(void *ctx, const xmlChar *name, int type, const xmlChar *public_id,
                           const xmlChar *system_id, xmlChar *content) {
  xml_state_t *st = ctx;
  if (type != XML_INTERNAL_GENERAL_ENTITY && type != XML_EXTERNAL_GENERAL_PARSED_ENTITY)
    return;
  if (st->entity_count >= MAX_ENTITIES || xmlGetDocEntity(st->entities, name) != NULL)
    return;
  if (xmlAddDocEntity(st->entities, name, XML_INTERNAL_GENERAL_ENTITY, NULL, NULL,
                      (const xmlChar *)"") != NULL)
    st->entity_count++;
}

static xmlEntityPtr on_get_entity(void *ctx, const xmlChar *name) {
  xml_state_t *st = ctx;
  xmlEntityPtr e = xmlGetPredefinedEntity(name);
  return e != NULL ? e : xmlGetDocEntity(st->entities, name);
}

static xmlEntityPtr on_get_parameter_entity(void *ctx, const xmlChar *name) {
  return NULL;
}

static void on_error(void *ctx, xmlErrorPtr e) {
  xml_state_t *st = ctx;
  if (e->level < XML_ERR_ERROR || st->failure != 0)
    return;
  st->failure = dg__xml_fail(st->run, "the XML document", e);
}

static void init_sax(xmlSAXHandler *sax) {
  memset(sax, 0, sizeof(*sax));
  sax->initialized = XML_SAX2_MAGIC;
  sax->startElementNs = on_start;
  sax->endElementNs = on_end;
  sax->characters = on_text;
  sax->cdataBlock = on_text;
  sax->ignorableWhitespace = on_text;
  sax->reference = on_reference;
  sax->entityDecl = on_entity_decl;
  sax->getEntity = on_get_entity;
  sax->getParameterEntity = on_get_parameter_entity;
  sax->serror = on_error;
}

static int xml_open(dg__xrun_t *run) {
  xml_state_t *st = run->state;
  dg__xml_init();
  st->run = run;
  init_sax(&st->sax);
  st->entities = xmlNewDoc((const xmlChar *)"1.0");
  st->has_children = calloc((size_t)run->limits.max_depth + 2, sizeof(bool));
  if (st->entities == NULL || st->has_children == NULL ||
      xmlCreateIntSubset(st->entities, (const xmlChar *)"x", NULL, NULL) == NULL)
    return dg_errctx_set(&run->err, DG_ENOMEM, "url", "out of memory");
  return 0;
}

/* The parser is created with the first four bytes, from which libxml2
 * detects the encoding (byte order mark or the "<?xml" in UTF-16). */
static int create_parser(xml_state_t *st, const unsigned char *p, size_t n) {
  st->ctxt = xmlCreatePushParserCtxt(&st->sax, st, (const char *)p, (int)n, NULL);
  if (st->ctxt == NULL)
    return dg_errctx_set(&st->run->err, DG_ENOMEM, "url", "out of memory");
  xmlCtxtUseOptions(st->ctxt, XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
  return 0;
}

/* Fills the four bytes the parser is created with; returns bytes taken. */
static size_t take_head(xml_state_t *st, const unsigned char *p, size_t n) {
  size_t k = sizeof(st->head) - st->head_len;
  k = k < n ? k : n;
  memcpy(st->head + st->head_len, p, k);
  st->head_len += k;
  return k;
}

static int parse_slice(xml_state_t *st, const unsigned char *p, size_t n, bool last) {
  int rc = xmlParseChunk(st->ctxt, (const char *)p, (int)n, last);
  if (st->failure != 0)
    return st->failure;
  if (rc != 0 || !st->ctxt->wellFormed)
    return dg__xml_fail(st->run, "the XML document", xmlCtxtGetLastError(st->ctxt));
  return dg__xrun_check(st->run);
}

static int xml_step(dg__xrun_t *run, bool *done) {
  dg__xml_init();
  xml_state_t *st = run->state;
  size_t off = 0;
  if (!dg__attr_scan(&st->attrs, run->in, run->in_len, run->limits.max_attributes))
    return dg__xml_too_many_attributes(run, "the XML document");
  if (st->ctxt == NULL && run->in_len > 0)
    off = take_head(st, run->in, run->in_len);
  if (st->ctxt == NULL && st->head_len < sizeof(st->head) && !run->in_last)
    return 0;
  int rc = st->ctxt == NULL ? create_parser(st, st->head, st->head_len) : 0;
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

static void xml_close(dg__xrun_t *run) {
  xml_state_t *st = run->state;
  /* In SAX mode libxml2 keeps the entity declarations it checks in a
   * document of its own, which the SAX user frees. */
  if (st->ctxt != NULL && st->ctxt->myDoc != NULL)
    xmlFreeDoc(st->ctxt->myDoc);
  if (st->ctxt != NULL)
    xmlFreeParserCtxt(st->ctxt);
  if (st->entities != NULL)
    xmlFreeDoc(st->entities);
  free(st->has_children);
}

const dg__extractor_t dg__extract_xml = {
    .name = "xml",
    .whole = false,
    .state_size = sizeof(xml_state_t),
    .open = xml_open,
    .step = xml_step,
    .close = xml_close,
};
