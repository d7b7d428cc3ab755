/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* DOCX and PPTX: Office Open XML packages. The package's relationships name
 * its main part, which decides the format whatever the content type or
 * extension said (word/ is DOCX, ppt/ is PPTX, xl/ is refused as XLSX).
 *
 * DOCX is read part by part in the order headers, body, footnotes,
 * endnotes, footers; a step reads a bounded number of XML nodes, so the
 * text of a long body flows out while it is read. PPTX is read slide by
 * slide in presentation order (the slide id list), one slide per step. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <libxml/xmlreader.h>

#include "extract/internal.h"

/* XML nodes a DOCX step reads before handing its text over. */
#define NODES_PER_STEP 200000
/* Header, footer and note parts read at most. */
#define MAX_EXTRA_PARTS 64

typedef struct docx_part {
  char name[DG__PART_MAX];
  const char *label; /* NULL for the body */
  bool notes;
} docx_part_t;

typedef struct ooxml_state {
  dg__zip_t zip;
  bool pptx;
  char main_part[DG__PART_MAX];
  /* DOCX */
  docx_part_t parts[MAX_EXTRA_PARTS + 1];
  size_t part_count;
  size_t next_part;
  xmlTextReaderPtr reader;
  dg__docx_t docx;
  /* PPTX */
  char (*slides)[DG__PART_MAX];
  size_t slide_count;
  size_t next_slide;
} ooxml_state_t;

/* ---- Relationships ---------------------------------------------------------- */

/* The relationship part of part: "word/_rels/document.xml.rels". */
static void rels_name(const char *part, char *out, size_t size) {
  const char *slash = strrchr(part, '/');
  size_t dir = slash != NULL ? (size_t)(slash - part) + 1 : 0;
  snprintf(out, size, "%.*s_rels/%s.rels", (int)dir, part, part + dir);
}

/* Resolves a relationship target against the directory of its source part
 * ("../notesSlides/n1.xml" from "ppt/slides/s1.xml"); false when it leaves
 * the package or is too long. */
static bool resolve(const char *source, const char *target, char *out, size_t size) {
  char path[2 * DG__PART_MAX];
  int dir = 0;
  const char *slash = strrchr(source, '/');
  if (target[0] == '/')
    target++;
  else if (slash != NULL)
    dir = (int)(slash - source) + 1;
  snprintf(path, sizeof(path), "%.*s%s", dir, source, target);
  size_t n = 0;
  out[0] = '\0';
  for (const char *seg = path; *seg != '\0';) {
    size_t len = strcspn(seg, "/");
    if (len == 2 && memcmp(seg, "..", 2) == 0) {
      if (n == 0)
        return false;
      char *last = strrchr(out, '/');
      n = last != NULL ? (size_t)(last - out) : 0;
      out[n] = '\0';
    } else if (len > 0 && !(len == 1 && seg[0] == '.')) {
      if (n + len + 2 > size)
        return false;
      if (n > 0)
        out[n++] = '/';
      memcpy(out + n, seg, len);
      n += len;
      out[n] = '\0';
    }
    seg += len + (seg[len] == '/');
  }
  return n > 0;
}

typedef struct rels_walk {
  dg__rels_t *rels;
  const char *source;
  size_t max;
  int failure;
} rels_walk_t;

static void rels_start(void *ctx, xmlTextReaderPtr r, const char *name, bool *skip) {
  rels_walk_t *w = ctx;
  dg__rel_t rel;
  char target[DG__PART_MAX], mode[16] = "";
  if (strcmp(name, "Relationship") != 0 || w->rels->count >= w->max)
    return;
  dg__zip_attr(r, "TargetMode", NULL, mode, sizeof(mode));
  if (!dg__zip_attr(r, "Id", NULL, rel.id, sizeof(rel.id)) ||
      !dg__zip_attr(r, "Type", NULL, rel.type, sizeof(rel.type)) ||
      !dg__zip_attr(r, "Target", NULL, target, sizeof(target)) || strcmp(mode, "External") == 0 ||
      !resolve(w->source, target, rel.target, sizeof(rel.target)))
    return;
  dg__rel_t *items = realloc(w->rels->items, (w->rels->count + 1) * sizeof(*items));
  if (items == NULL) {
    w->failure = DG_ENOMEM;
    return;
  }
  items[w->rels->count++] = rel;
  w->rels->items = items;
}

static void ignore_end(void *ctx, const char *name) {
}

static void ignore_text(void *ctx, const char *text) {
}

int dg__rels_read(dg__zip_t *z, const char *part, dg__rels_t *out) {
  static const dg__walk_ops_t ops = {.start = rels_start, .end = ignore_end, .text = ignore_text};
  char name[DG__PART_MAX + 16];
  rels_walk_t w = {.rels = out, .source = part, .max = z->run->limits.max_zip_entries};
  xmlTextReaderPtr r = NULL;
  bool finished = false;
  memset(out, 0, sizeof(*out));
  rels_name(part, name, sizeof(name));
  if (!dg__zip_exists(z, name))
    return 0;
  int rc = dg__zip_reader(z, name, &r);
  if (rc == 0)
    rc = dg__zip_walk(z, r, &ops, &w, SIZE_MAX, &finished);
  if (r != NULL)
    xmlFreeTextReader(r);
  if (rc == 0 && w.failure != 0)
    rc = dg_errctx_set(&z->run->err, w.failure, "url", "out of memory");
  return rc;
}

void dg__rels_free(dg__rels_t *rels) {
  free(rels->items);
  rels->items = NULL;
  rels->count = 0;
}

const dg__rel_t *dg__rels_find(const dg__rels_t *rels, const char *id) {
  for (size_t i = 0; i < rels->count; i++) {
    if (strcmp(rels->items[i].id, id) == 0)
      return &rels->items[i];
  }
  return NULL;
}

bool dg__rel_is(const dg__rel_t *rel, const char *kind) {
  const char *slash = strrchr(rel->type, '/');
  return slash != NULL && strcmp(slash + 1, kind) == 0;
}

/* ---- The package ------------------------------------------------------------ */

/* Finds the main part from the package relationships, else by its usual
 * name. */
static int find_main_part(ooxml_state_t *st) {
  static const char *const usual[] = {"word/document.xml", "ppt/presentation.xml",
                                      "xl/workbook.xml"};
  dg__rels_t rels;
  int rc = dg__rels_read(&st->zip, "", &rels);
  for (size_t i = 0; rc == 0 && i < rels.count && st->main_part[0] == '\0'; i++) {
    if (dg__rel_is(&rels.items[i], "officeDocument"))
      dg_strlcpy(st->main_part, rels.items[i].target, sizeof(st->main_part));
  }
  dg__rels_free(&rels);
  for (size_t i = 0; rc == 0 && i < DG_ARRAY_SIZE(usual) && st->main_part[0] == '\0'; i++) {
    if (dg__zip_exists(&st->zip, usual[i]))
      dg_strlcpy(st->main_part, usual[i], sizeof(st->main_part));
  }
  return rc;
}

static int classify(dg__xrun_t *run, ooxml_state_t *st) {
  const char *m = st->main_part;
  if (strncasecmp(m, "word/", 5) == 0) {
    run->format = DG_EXTRACT_DOCX;
  } else if (strncasecmp(m, "ppt/", 4) == 0) {
    run->format = DG_EXTRACT_PPTX;
    st->pptx = true;
  } else if (strncasecmp(m, "xl/", 3) == 0) {
    return dg_errctx_set(&run->err, DG_ENOTSUP, "url",
                         "the document is an XLSX workbook, which is not supported: supported "
                         "formats are %s",
                         dg_extract_supported);
  } else {
    return dg_errctx_set(&run->err, DG_EPROTO, "url",
                         "the ZIP archive is not a DOCX or PPTX document (no word/document.xml "
                         "or ppt/presentation.xml): supported formats are %s",
                         dg_extract_supported);
  }
  st->zip.what = dg_extract_format_name(run->format);
  return 0;
}

static void add_part(ooxml_state_t *st, const char *name, const char *label, bool notes) {
  if (st->part_count >= DG_ARRAY_SIZE(st->parts))
    return;
  docx_part_t *p = &st->parts[st->part_count++];
  dg_strlcpy(p->name, name, sizeof(p->name));
  p->label = label;
  p->notes = notes;
}

/* Queues the DOCX parts: headers, body, footnotes, endnotes, footers. */
static int plan_docx(ooxml_state_t *st) {
  static const struct {
    const char *kind; /* NULL for the body */
    const char *label;
    bool notes;
  } order[] = {{"header", "--- Header ---", false},
               {NULL, NULL, false},
               {"footnotes", "--- Footnotes ---", true},
               {"endnotes", "--- Endnotes ---", true},
               {"footer", "--- Footer ---", false}};
  dg__rels_t rels;
  int rc = dg__rels_read(&st->zip, st->main_part, &rels);
  for (size_t k = 0; rc == 0 && k < DG_ARRAY_SIZE(order); k++) {
    if (order[k].kind == NULL)
      add_part(st, st->main_part, NULL, false);
    for (size_t i = 0; order[k].kind != NULL && i < rels.count; i++) {
      const dg__rel_t *rel = &rels.items[i];
      if (dg__rel_is(rel, order[k].kind) && dg__zip_exists(&st->zip, rel->target))
        add_part(st, rel->target, order[k].label, order[k].notes);
    }
  }
  dg__rels_free(&rels);
  return rc;
}

typedef struct pres_walk {
  char (*ids)[64];
  size_t count;
  size_t total;
  size_t max;
  int failure;
} pres_walk_t;

static void pres_start(void *ctx, xmlTextReaderPtr r, const char *name, bool *skip) {
  pres_walk_t *w = ctx;
  char id[64];
  if (strcmp(name, "sldId") != 0 || !dg__zip_attr(r, "id", "relationships", id, sizeof(id)))
    return;
  w->total++;
  if (w->count >= w->max)
    return;
  char(*ids)[64] = realloc(w->ids, (w->count + 1) * sizeof(*ids));
  if (ids == NULL) {
    w->failure = DG_ENOMEM;
    return;
  }
  w->ids = ids;
  memcpy(w->ids[w->count++], id, sizeof(id));
}

/* Reads the slide id list of presentation.xml, in presentation order. */
static int read_slide_ids(dg__xrun_t *run, ooxml_state_t *st, pres_walk_t *w) {
  static const dg__walk_ops_t ops = {.start = pres_start, .end = ignore_end, .text = ignore_text};
  xmlTextReaderPtr r = NULL;
  bool finished = false;
  w->max = run->limits.max_units;
  int rc = dg__zip_reader(&st->zip, st->main_part, &r);
  if (rc == 0)
    rc = dg__zip_walk(&st->zip, r, &ops, w, SIZE_MAX, &finished);
  if (r != NULL)
    xmlFreeTextReader(r);
  if (rc == 0 && w->failure != 0)
    rc = dg_errctx_set(&run->err, w->failure, "url", "out of memory");
  return rc;
}

/* Lists the slide parts in presentation order. */
static int plan_pptx(dg__xrun_t *run, ooxml_state_t *st) {
  pres_walk_t w = {0};
  dg__rels_t rels = {0};
  int rc = read_slide_ids(run, st, &w);
  rc = rc != 0 ? rc : dg__rels_read(&st->zip, st->main_part, &rels);
  if (rc == 0 && w.count > 0) {
    st->slides = calloc(w.count, sizeof(*st->slides));
    rc = st->slides == NULL ? dg_errctx_set(&run->err, DG_ENOMEM, "url", "out of memory") : 0;
  }
  for (size_t i = 0; rc == 0 && i < w.count; i++) {
    const dg__rel_t *rel = dg__rels_find(&rels, w.ids[i]);
    if (rel != NULL && dg__zip_exists(&st->zip, rel->target))
      dg_strlcpy(st->slides[st->slide_count++], rel->target, DG__PART_MAX);
  }
  if (rc == 0 && w.total > w.count)
    dg__xrun_cut(run, "only the first %zu of %zu slides were extracted", w.count, w.total);
  free(w.ids);
  dg__rels_free(&rels);
  return rc;
}

static int ooxml_open(dg__xrun_t *run) {
  ooxml_state_t *st = run->state;
  dg__xml_init();
  int rc = dg__zip_open(&st->zip, run, dg_extract_format_name(run->format));
  rc = rc != 0 ? rc : find_main_part(st);
  rc = rc != 0 ? rc : classify(run, st);
  if (rc == 0)
    rc = st->pptx ? plan_pptx(run, st) : plan_docx(st);
  return rc;
}

static int pptx_step(dg__xrun_t *run, ooxml_state_t *st, bool *done) {
  int rc = 0;
  if (st->next_slide < st->slide_count) {
    rc = dg__pptx_slide(&st->zip, st->slides[st->next_slide], (unsigned)st->next_slide + 1,
                        &run->sink);
    st->next_slide++;
  }
  *done = st->next_slide >= st->slide_count;
  return rc;
}

/* Opens the next DOCX part, announcing it with its label. */
static int docx_next_part(dg__xrun_t *run, ooxml_state_t *st) {
  const docx_part_t *p = &st->parts[st->next_part];
  memset(&st->docx, 0, sizeof(st->docx));
  st->docx.sink = &run->sink;
  st->docx.notes = p->notes;
  dg__sink_break(&run->sink, DG__BREAK_PARA);
  dg__sink_label(&run->sink, p->label, false);
  return dg__zip_reader(&st->zip, p->name, &st->reader);
}

static int docx_step(dg__xrun_t *run, ooxml_state_t *st, bool *done) {
  bool finished = false;
  int rc = 0;
  if (st->reader == NULL && st->next_part < st->part_count)
    rc = docx_next_part(run, st);
  if (rc == 0 && st->reader != NULL)
    rc = dg__zip_walk(&st->zip, st->reader, &dg__docx_ops, &st->docx, NODES_PER_STEP, &finished);
  if (rc == 0 && finished) {
    xmlFreeTextReader(st->reader);
    st->reader = NULL;
    st->next_part++;
  }
  *done = st->reader == NULL && st->next_part >= st->part_count;
  return rc;
}

static int ooxml_step(dg__xrun_t *run, bool *done) {
  dg__xml_init();
  ooxml_state_t *st = run->state;
  return st->pptx ? pptx_step(run, st, done) : docx_step(run, st, done);
}

static void ooxml_close(dg__xrun_t *run) {
  ooxml_state_t *st = run->state;
  if (st->reader != NULL)
    xmlFreeTextReader(st->reader);
  st->reader = NULL;
  dg__zip_close(&st->zip);
  free(st->slides);
}

const dg__extractor_t dg__extract_ooxml = {
    .name = "ooxml",
    .whole = true,
    .state_size = sizeof(ooxml_state_t),
    .open = ooxml_open,
    .step = ooxml_step,
    .close = ooxml_close,
};
