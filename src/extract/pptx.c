/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* PPTX: one slide at a time. The slide's title (the text of its title or
 * centred-title placeholder), the text of its other shapes and tables in
 * shape order, and the body placeholder of its notes slide are gathered
 * apart, then written as:
 *
 *   --- Slide N ---
 *   Title: <title>
 *
 *   <body>
 *
 *   Notes:
 *   <notes>
 */
#include <stdlib.h>
#include <string.h>

#include <libxml/xmlreader.h>

#include "extract/internal.h"

enum { PART_TITLE, PART_BODY, PART_NOTES, PARTS };

typedef struct slide {
  dg_buf_t buf[PARTS];
  dg__sink_t sink[PARTS];
  dg__sink_t *cur; /* where the current shape's text goes, or NULL */
  bool notes_part;
  bool title_shape; /* the current shape is a title placeholder */
  bool notes_shape; /* the current shape is the notes' body placeholder */
  bool in_text;     /* inside a:t */
  unsigned tables;
  unsigned cell_depth;
  unsigned cells[64];
} slide_t;

static bool is(const char *name, const char *want) {
  return strcmp(name, want) == 0;
}

static unsigned table_slot(const slide_t *s) {
  return s->tables < DG_ARRAY_SIZE(s->cells) ? s->tables : DG_ARRAY_SIZE(s->cells) - 1;
}

/* A placeholder's type decides where the shape's text goes. */
static void placeholder(slide_t *s, xmlTextReaderPtr r) {
  char type[32] = "body";
  dg__zip_attr(r, "type", NULL, type, sizeof(type));
  if (s->notes_part)
    s->notes_shape = is(type, "body");
  else
    s->title_shape = is(type, "title") || is(type, "ctrTitle");
}

/* The sink for the text of the shape being read; NULL to skip it. */
static dg__sink_t *shape_sink(slide_t *s) {
  if (s->notes_part)
    return s->notes_shape ? &s->sink[PART_NOTES] : NULL;
  return &s->sink[s->title_shape ? PART_TITLE : PART_BODY];
}

static void table_start(slide_t *s, const char *name) {
  if (is(name, "tbl")) {
    dg__sink_break(s->cur, DG__BREAK_PARA);
    s->tables++;
    s->cells[table_slot(s)] = 0;
  } else if (is(name, "tr")) {
    dg__sink_break(s->cur, DG__BREAK_LINE);
    s->cells[table_slot(s)] = 0;
  } else if (is(name, "tc")) {
    if (s->cells[table_slot(s)]++ > 0)
      dg__sink_text(s->cur, " | ", 3);
    s->cell_depth++;
  }
}

static void slide_start(void *ctx, xmlTextReaderPtr r, const char *name, bool *skip) {
  slide_t *s = ctx;
  if (is(name, "sp") || is(name, "graphicFrame")) {
    s->title_shape = false;
    s->notes_shape = false;
    s->cur = shape_sink(s);
  } else if (is(name, "ph")) {
    placeholder(s, r);
    s->cur = shape_sink(s);
  } else if (is(name, "Fallback")) {
    *skip = true;
  } else if (s->cur == NULL) {
    /* Text outside a shape the walker keeps (notes' slide image, numbers). */
    *skip = is(name, "txBody") || is(name, "tbl");
  } else if (is(name, "t")) {
    s->in_text = true;
  } else if (is(name, "br")) {
    dg__sink_break(s->cur, s->cur == &s->sink[PART_TITLE] ? DG__BREAK_SPACE : DG__BREAK_LINE);
  } else if (is(name, "tbl") || is(name, "tr") || is(name, "tc")) {
    table_start(s, name);
  }
}

static void slide_end(void *ctx, const char *name) {
  slide_t *s = ctx;
  if (is(name, "t"))
    s->in_text = false;
  if (s->cur == NULL)
    return;
  bool title = s->cur == &s->sink[PART_TITLE];
  if (is(name, "p")) {
    dg__sink_break(s->cur, title || s->cell_depth > 0 ? DG__BREAK_SPACE : DG__BREAK_LINE);
  } else if (is(name, "sp") || is(name, "graphicFrame")) {
    dg__sink_break(s->cur, title ? DG__BREAK_SPACE : DG__BREAK_PARA);
    s->cur = NULL;
  } else if (is(name, "tbl")) {
    s->tables -= s->tables > 0;
    dg__sink_break(s->cur, DG__BREAK_PARA);
  } else if (is(name, "tr")) {
    dg__sink_break(s->cur, DG__BREAK_LINE);
  } else if (is(name, "tc")) {
    s->cell_depth -= s->cell_depth > 0;
  }
}

static void slide_text(void *ctx, const char *text) {
  slide_t *s = ctx;
  if (s->in_text && s->cur != NULL && text != NULL)
    dg__sink_text(s->cur, text, strlen(text));
}

static const dg__walk_ops_t slide_ops = {
    .start = slide_start,
    .end = slide_end,
    .text = slide_text,
};

static int walk_part(dg__zip_t *z, const char *part, slide_t *s) {
  xmlTextReaderPtr r = NULL;
  bool finished = false;
  int rc = dg__zip_reader(z, part, &r);
  if (rc == 0)
    rc = dg__zip_walk(z, r, &slide_ops, s, SIZE_MAX, &finished);
  if (r != NULL)
    xmlFreeTextReader(r);
  return rc;
}

/* The slide's notes part, from its relationships; "" when it has none. */
static int notes_part(dg__zip_t *z, const char *part, char *out, size_t size) {
  dg__rels_t rels = {0};
  out[0] = '\0';
  int rc = dg__rels_read(z, part, &rels);
  for (size_t i = 0; rc == 0 && i < rels.count; i++) {
    if (dg__rel_is(&rels.items[i], "notesSlide") && dg__zip_exists(z, rels.items[i].target)) {
      dg_strlcpy(out, rels.items[i].target, size);
      break;
    }
  }
  dg__rels_free(&rels);
  return rc;
}

/* Writes the gathered parts; the text in them is already normalised. */
static void compose(slide_t *s, unsigned number, dg__sink_t *sink) {
  char label[48];
  snprintf(label, sizeof(label), "--- Slide %u ---", number);
  dg__sink_label(sink, label, true);
  dg__sink_preserve(sink, true);
  if (s->buf[PART_TITLE].len > 0) {
    dg__sink_text(sink, "Title: ", 7);
    dg__sink_text(sink, s->buf[PART_TITLE].data, s->buf[PART_TITLE].len);
    dg__sink_break(sink, DG__BREAK_PARA);
  }
  dg__sink_text(sink, s->buf[PART_BODY].data, s->buf[PART_BODY].len);
  if (s->buf[PART_NOTES].len > 0) {
    dg__sink_break(sink, DG__BREAK_PARA);
    dg__sink_text(sink, "Notes:\n", 7);
    dg__sink_text(sink, s->buf[PART_NOTES].data, s->buf[PART_NOTES].len);
  }
  dg__sink_preserve(sink, false);
  dg__sink_break(sink, DG__BREAK_PARA);
}

int dg__pptx_slide(dg__zip_t *z, const char *part, unsigned number, dg__sink_t *sink) {
  slide_t s;
  char notes[DG__PART_MAX];
  memset(&s, 0, sizeof(s));
  /* A slide's text cannot exceed what the document may still hold. */
  size_t room = sink->out->max - sink->out->len + 1;
  for (int i = 0; i < PARTS; i++) {
    dg_buf_init(&s.buf[i], room);
    dg__sink_init(&s.sink[i], &s.buf[i]);
  }
  int rc = walk_part(z, part, &s);
  if (rc == 0)
    rc = notes_part(z, part, notes, sizeof(notes));
  if (rc == 0 && notes[0] != '\0') {
    s.notes_part = true;
    s.cur = NULL;
    rc = walk_part(z, notes, &s);
  }
  if (rc == 0)
    compose(&s, number, sink);
  for (int i = 0; i < PARTS; i++)
    dg_buf_free(&s.buf[i]);
  return rc;
}
