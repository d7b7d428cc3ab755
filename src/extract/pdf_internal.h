/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Names shared between pdf.c (documents, pages, limits, reading order) and
 * pdf_text.c (a page's text read from its content stream). */
#ifndef DG_EXTRACT_PDF_INTERNAL_H
#define DG_EXTRACT_PDF_INTERNAL_H

#include <stdint.h>

#include <mupdf/fitz.h>
#include <mupdf/pdf.h>

/* A page's text: characters (Unicode code points) in lines, lines in
 * blocks, each block with the box of its characters in the page's y-down
 * space. The arrays are kept from page to page and grow as needed. */
typedef struct dg__pdf_line {
  uint32_t first, count; /* in chars */
} dg__pdf_line_t;

typedef struct dg__pdf_block {
  fz_rect box;
  uint32_t first, count; /* in lines */
} dg__pdf_block_t;

typedef struct dg__pdf_text {
  int *chars;
  dg__pdf_line_t *lines;
  dg__pdf_block_t *blocks;
  size_t nchars, nlines, nblocks;
  size_t char_cap, line_cap, block_cap;
} dg__pdf_text_t;

typedef struct dg__pdf_font_info dg__pdf_font_info_t;

/* What the reader keeps between pages: the text arrays, the fonts seen
 * with what their one-byte codes decode to, and the function that checks
 * the deadline (it sets the cookie's abort flag). */
#define DG__PDF_FONTS 32
typedef struct dg__pdf_texts {
  dg__pdf_text_t text;
  dg__pdf_font_info_t *fonts[DG__PDF_FONTS];
  int nfonts;
  void (*tick)(fz_context *ctx);
} dg__pdf_texts_t;

/* Reads a loaded page's text into t->text (emptied first) by running its
 * content stream through a processor of text operators only. False, with
 * nothing read, for a page this does not cover (one with annotations or
 * form fields, which MuPDF's own device reads). Throws MuPDF errors. */
bool dg__pdf_text_read(fz_context *ctx, fz_page *page, fz_cookie *cookie, dg__pdf_texts_t *t);
/* The text of MuPDF's structured-text page, into t->text. Throws. */
void dg__pdf_text_from_stext(fz_context *ctx, fz_stext_page *page, dg__pdf_texts_t *t);
/* Releases what t holds. */
void dg__pdf_text_free(fz_context *ctx, dg__pdf_texts_t *t);

#endif
