/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* DOCX: the walker over WordprocessingML parts (the document body, headers,
 * footers, footnotes and endnotes). Paragraphs are separated by blank
 * lines; a table row is one line with its cells separated by " | " (the
 * paragraphs of a cell joined by spaces); a footnote reference is written
 * "[id]" and the note itself "[id] text". Field codes, deleted text and the
 * fallback copies of markup-compatibility blocks are left out. */
#include <string.h>

#include <libxml/xmlreader.h>

#include "extract/internal.h"

/* Elements with no text of their own, or text a reader does not see. */
static const char *const skipped[] = {
    "instrText", "delText", "delInstrText", "Fallback", "pPr",     "rPr",
    "sectPr",    "tblPr",   "trPr",         "tcPr",     "tblGrid", "footnotePr",
};

static bool is(const char *name, const char *want) {
  return strcmp(name, want) == 0;
}

static bool skip_element(const char *name) {
  for (size_t i = 0; i < DG_ARRAY_SIZE(skipped); i++) {
    if (is(name, skipped[i]))
      return true;
  }
  return false;
}

static unsigned table_slot(const dg__docx_t *d) {
  return d->tables < DG_ARRAY_SIZE(d->cells) ? d->tables : DG_ARRAY_SIZE(d->cells) - 1;
}

/* "[id]" for a note reference, "[id] " before the note's own text. */
static void note_mark(dg__docx_t *d, xmlTextReaderPtr r, const char *after) {
  char id[32], mark[48];
  if (!dg__zip_attr(r, "id", NULL, id, sizeof(id)))
    return;
  snprintf(mark, sizeof(mark), "[%s]%s", id, after);
  dg__sink_text(d->sink, mark, strlen(mark));
}

/* A footnote or endnote that only draws the separator line. */
static bool separator_note(xmlTextReaderPtr r) {
  char type[48];
  return dg__zip_attr(r, "type", NULL, type, sizeof(type)) &&
         (is(type, "separator") || is(type, "continuationSeparator") ||
          is(type, "continuationNotice"));
}

static void table_start(dg__docx_t *d, const char *name) {
  if (is(name, "tbl")) {
    dg__sink_break(d->sink, DG__BREAK_PARA);
    d->tables++;
    d->cells[table_slot(d)] = 0;
  } else if (is(name, "tr")) {
    dg__sink_break(d->sink, DG__BREAK_LINE);
    d->cells[table_slot(d)] = 0;
  } else if (is(name, "tc")) {
    if (d->cells[table_slot(d)]++ > 0)
      dg__sink_text(d->sink, " | ", 3);
    d->cell_depth++;
  }
}

static void docx_start(void *ctx, xmlTextReaderPtr r, const char *name, bool *skip) {
  dg__docx_t *d = ctx;
  if (is(name, "t"))
    d->in_text = true;
  else if (is(name, "tab"))
    dg__sink_break(d->sink, DG__BREAK_SPACE);
  else if (is(name, "br") || is(name, "cr"))
    dg__sink_break(d->sink, DG__BREAK_LINE);
  else if (is(name, "noBreakHyphen"))
    dg__sink_text(d->sink, "-", 1);
  else if (is(name, "tbl") || is(name, "tr") || is(name, "tc"))
    table_start(d, name);
  else if (is(name, "footnoteReference") || is(name, "endnoteReference"))
    note_mark(d, r, "");
  else if (d->notes && (is(name, "footnote") || is(name, "endnote")))
    *skip = separator_note(r);
  else
    *skip = skip_element(name);
  if (d->notes && !*skip && (is(name, "footnote") || is(name, "endnote")))
    note_mark(d, r, " ");
}

static void docx_end(void *ctx, const char *name) {
  dg__docx_t *d = ctx;
  if (is(name, "t")) {
    d->in_text = false;
  } else if (is(name, "p")) {
    dg__sink_break(d->sink, d->cell_depth > 0 ? DG__BREAK_SPACE : DG__BREAK_PARA);
  } else if (is(name, "tbl")) {
    d->tables -= d->tables > 0;
    dg__sink_break(d->sink, DG__BREAK_PARA);
  } else if (is(name, "tr")) {
    dg__sink_break(d->sink, DG__BREAK_LINE);
  } else if (is(name, "tc")) {
    d->cell_depth -= d->cell_depth > 0;
  } else if (is(name, "footnote") || is(name, "endnote")) {
    dg__sink_break(d->sink, DG__BREAK_PARA);
  }
}

static void docx_text(void *ctx, const char *text) {
  dg__docx_t *d = ctx;
  if (d->in_text && text != NULL)
    dg__sink_text(d->sink, text, strlen(text));
}

const dg__walk_ops_t dg__docx_ops = {
    .start = docx_start,
    .end = docx_end,
    .text = docx_text,
};
