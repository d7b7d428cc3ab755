/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* A PDF page's text read straight from its content stream.
 *
 * MuPDF's interpreter lexes the stream and calls a processor of ours for
 * the text operators (BT/ET, Tc Tw Tz TL Tf Tr Ts, Td TD Tm T*, Tj TJ ' ",
 * q Q cm and form XObjects); paths, images, shadings and colours have no
 * handler and cost nothing. Each glyph's position is the text matrix, the
 * text state and the CTM multiplied out; its width comes from the font's
 * metrics, and what its code decodes to (CID, glyph, width, advance,
 * Unicode) is kept per font for the 256 one-byte codes. No glyph outline
 * or bounding box is computed.
 *
 * Lines and blocks are built as MuPDF's structured-text device builds them
 * (MuPDF 1.21, with dehyphenation), so that the text is the same: a glyph
 * on the baseline of the line continues it, with a space added where the
 * gap along the line is wider than 0.15 of the font size and no space is
 * there; a gap wider than 0.8 of the size, or a baseline moved by up to 1.5
 * sizes, starts a line (and a block when the text object starts indented
 * by half a size); a larger move or another direction starts a block; a
 * line ending in a hyphen is joined with the next one without it; ligatures
 * are split and white space becomes a space. A block's box spans its
 * characters from the font's descender to its ascender, as MuPDF's does.
 *
 * Form XObjects are read with their own matrix and resources, at most
 * MAX_FORMS deep and never inside themselves. Optional content that is
 * hidden is left out, as MuPDF does. Pages with annotations or form fields
 * are left to MuPDF's device (pdf.c), which also reads their appearances. */
#include <float.h>
#include <math.h>
#include <string.h>

#include <mupdf/ucdn.h>

#include "extract/internal.h"
#include "extract/pdf_internal.h"

/* MuPDF's structured-text thresholds, in font sizes. */
#define PARAGRAPH_DIST 1.5f
#define SPACE_DIST 0.15f
#define SPACE_MAX_DIST 0.8f
/* Saved graphics states; deeper q's are counted, not saved. */
#define MAX_GSTATES 256
/* Form XObjects inside each other. */
#define MAX_FORMS 32
/* Glyphs between two calls of the deadline check (which itself looks at
 * the clock every 64th call). */
#define GLYPHS_PER_TICK 64

/* What a code of a font decodes to. */
typedef struct code_info {
  int cid; /* -1: the code has no character */
  int gid;
  int w;      /* width (or vertical advance) in thousandths of the size */
  int vx, vy; /* vertical writing: the glyph's origin */
  float adv;  /* the glyph's advance in the font file, as MuPDF's device uses */
  int ucs;    /* the first Unicode character */
  int ucs_len;
  bool filled;
} code_info_t;

struct dg__pdf_font_info {
  pdf_font_desc *font; /* held */
  float ascender, descender;
  bool type3;
  bool one_byte[256]; /* a code of one byte in the encoding */
  code_info_t codes[256];
};

typedef struct gstate {
  fz_matrix ctm;
  pdf_font_desc *font; /* held */
  dg__pdf_font_info_t *info;
  float size, scale, char_space, word_space, leading, rise;
  int render;
} gstate_t;

typedef struct proc {
  pdf_processor super;
  dg__pdf_texts_t *t;
  pdf_document *doc;
  fz_cookie *cookie;
  gstate_t gs[MAX_GSTATES];
  int top;              /* gs[top] is the current state */
  int excess;           /* q's beyond MAX_GSTATES */
  int forms[MAX_FORMS]; /* object numbers of the forms being read */
  int nforms;
  fz_matrix tm, tlm;
  unsigned glyphs;
  int text_mode;             /* render mode of the text object being shown, -1 after a flush */
  dg__pdf_font_info_t spare; /* for fonts when the cache is full */
  /* Line building, as MuPDF's structured-text device. */
  fz_point pen, start, line_dir;
  int line_wmode;
  bool new_obj;
  int curdir, lastchar;
  bool pending; /* the last character's box is not yet in its block's */
  fz_rect last;
  /* The direction and size of the last glyph matrix. */
  float ka, kb, kc, kd;
  int kw;
  fz_point dir, ndir;
  float size;
} proc_t;

/* ---- Matrices, as MuPDF computes them --------------------------------------- */

static fz_matrix concat(fz_matrix one, fz_matrix two) {
  fz_matrix dst;
  dst.a = one.a * two.a + one.b * two.c;
  dst.b = one.a * two.b + one.b * two.d;
  dst.c = one.c * two.a + one.d * two.c;
  dst.d = one.c * two.b + one.d * two.d;
  dst.e = one.e * two.a + one.f * two.c + two.e;
  dst.f = one.e * two.b + one.f * two.d + two.f;
  return dst;
}

static fz_matrix pre_translate(fz_matrix m, float tx, float ty) {
  m.e += tx * m.a + ty * m.c;
  m.f += tx * m.b + ty * m.d;
  return m;
}

static fz_point vector(float x, float y, fz_matrix m) {
  return (fz_point){x * m.a + y * m.c, x * m.b + y * m.d};
}

/* ---- The page's text --------------------------------------------------------- */

static void *grow(fz_context *ctx, void *p, size_t *cap, size_t need, size_t size) {
  if (need <= *cap)
    return p;
  size_t n = *cap < 64 ? 64 : *cap * 2;
  while (n < need)
    n *= 2;
  p = fz_realloc(ctx, p, n * size);
  *cap = n;
  return p;
}

static void text_reset(dg__pdf_text_t *t) {
  t->nchars = t->nlines = t->nblocks = 0;
}

static void new_block(fz_context *ctx, dg__pdf_text_t *t) {
  t->blocks = grow(ctx, t->blocks, &t->block_cap, t->nblocks + 1, sizeof(*t->blocks));
  t->blocks[t->nblocks++] = (dg__pdf_block_t){fz_empty_rect, (uint32_t)t->nlines, 0};
}

static void new_line(fz_context *ctx, dg__pdf_text_t *t) {
  t->lines = grow(ctx, t->lines, &t->line_cap, t->nlines + 1, sizeof(*t->lines));
  t->lines[t->nlines++] = (dg__pdf_line_t){(uint32_t)t->nchars, 0};
  t->blocks[t->nblocks - 1].count++;
}

static void push_char(fz_context *ctx, dg__pdf_text_t *t, int c) {
  t->chars = grow(ctx, t->chars, &t->char_cap, t->nchars + 1, sizeof(*t->chars));
  t->chars[t->nchars++] = c;
  t->lines[t->nlines - 1].count++;
}

/* MuPDF's union: boxes that are not valid (NaN) are left out. */
static void add_box(fz_rect *box, fz_rect r) {
  if (!(r.x0 <= r.x1 && r.y0 <= r.y1))
    return;
  if (!(box->x0 <= box->x1 && box->y0 <= box->y1)) {
    *box = r;
    return;
  }
  box->x0 = r.x0 < box->x0 ? r.x0 : box->x0;
  box->y0 = r.y0 < box->y0 ? r.y0 : box->y0;
  box->x1 = r.x1 > box->x1 ? r.x1 : box->x1;
  box->y1 = r.y1 > box->y1 ? r.y1 : box->y1;
}

/* The last character's box goes into its block's. */
static void settle(proc_t *p) {
  if (p->pending)
    add_box(&p->t->text.blocks[p->t->text.nblocks - 1].box, p->last);
  p->pending = false;
}

static float min4(float a, float b, float c, float d) {
  float m = a < b ? a : b;
  m = m < c ? m : c;
  return m < d ? m : d;
}

static float max4(float a, float b, float c, float d) {
  float m = a > b ? a : b;
  m = m > c ? m : c;
  return m > d ? m : d;
}

/* A character from p to q on the current line, with the box MuPDF gives it
 * (from the descender to the ascender). */
static void put_char(fz_context *ctx, proc_t *p, int c, fz_point from, fz_point to, fz_matrix trm,
                     const dg__pdf_font_info_t *fi) {
  fz_point a = p->line_wmode == 0 ? vector(0, fi->ascender, trm) : vector(1, 0, trm);
  fz_point d = p->line_wmode == 0 ? vector(0, fi->descender, trm) : vector(0, 0, trm);
  fz_point ll = {from.x + d.x, from.y + d.y}, ul = {from.x + a.x, from.y + a.y};
  fz_point lr = {to.x + d.x, to.y + d.y}, ur = {to.x + a.x, to.y + a.y};
  settle(p);
  p->last = (fz_rect){min4(ll.x, lr.x, ul.x, ur.x), min4(ll.y, lr.y, ul.y, ur.y),
                      max4(ll.x, lr.x, ul.x, ur.x), max4(ll.y, lr.y, ul.y, ur.y)};
  p->pending = true;
  push_char(ctx, &p->t->text, c);
}

/* ---- Lines and blocks, as MuPDF's structured-text device -------------------------- */

static int direction(int c, int curdir) {
  if (c < 0x80)
    return ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') ? 1 : curdir;
  switch (ucdn_get_bidi_class((uint32_t)c)) {
  case UCDN_BIDI_CLASS_L:
    return 1;
  case UCDN_BIDI_CLASS_R:
  case UCDN_BIDI_CLASS_AL:
    return -1;
  case UCDN_BIDI_CLASS_EN:
  case UCDN_BIDI_CLASS_ES:
  case UCDN_BIDI_CLASS_ET:
  case UCDN_BIDI_CLASS_AN:
  case UCDN_BIDI_CLASS_CS:
  case UCDN_BIDI_CLASS_NSM:
  case UCDN_BIDI_CLASS_BN:
  case UCDN_BIDI_CLASS_B:
  case UCDN_BIDI_CLASS_S:
  case UCDN_BIDI_CLASS_WS:
  case UCDN_BIDI_CLASS_ON:
    return curdir;
  default:
    return 0;
  }
}

static bool is_hyphen(int c) {
  return c == '-' || c == 0xAD || c == 0x2010 || c == 0x2011;
}

/* The direction of writing and the size for a glyph matrix, recomputed
 * only when the matrix's linear part changes. */
static void orient(proc_t *p, fz_matrix trm, int wmode) {
  if (trm.a == p->ka && trm.b == p->kb && trm.c == p->kc && trm.d == p->kd && wmode == p->kw)
    return;
  p->ka = trm.a, p->kb = trm.b, p->kc = trm.c, p->kd = trm.d, p->kw = wmode;
  p->dir = wmode == 0 ? vector(1, 0, trm) : vector(0, -1, trm);
  p->ndir = p->dir;
  float len = p->dir.x * p->dir.x + p->dir.y * p->dir.y;
  if (len != 0) {
    len = sqrtf(len);
    p->ndir.x /= len;
    p->ndir.y /= len;
  }
  p->size = sqrtf(fabsf(trm.a * trm.d - trm.b * trm.c));
}

typedef struct decision {
  bool para, line, space;
} decision_t;

/* Where a glyph at start goes relative to the pen: same line (maybe after
 * a space), a new line or a new block. False when it repeats the last
 * glyph in place (fake bold). */
static bool place(proc_t *p, int c, fz_point start, fz_point end, int wmode, decision_t *d) {
  dg__pdf_text_t *t = &p->t->text;
  float size = p->size;
  *d = (decision_t){false, true, false};
  if (t->nblocks == 0 || p->line_wmode != wmode ||
      p->ndir.x * p->line_dir.x + p->ndir.y * p->line_dir.y < 0.999f) {
    d->para = true;
    return true;
  }
  if (fabsf(end.x - p->pen.x) < FLT_EPSILON && fabsf(end.y - p->pen.y) < FLT_EPSILON &&
      c == p->lastchar)
    return false;
  fz_point delta = {start.x - p->pen.x, start.y - p->pen.y};
  float spacing = p->ndir.x * delta.x + p->ndir.y * delta.y;
  float base_offset = -p->ndir.y * delta.x + p->ndir.x * delta.y;
  if (fabsf(base_offset) < size * 0.8f) {
    d->line = false;
    /* Right to left, no space nor column is guessed; a small move is
     * ignored, a large one starts a line, a backward one is ignored. */
    if (p->curdir < 0 || fabsf(spacing) < size * SPACE_DIST)
      return true;
    if (fabsf(spacing) > size * SPACE_MAX_DIST)
      d->line = true;
    else if (!(spacing < 0))
      d->space = p->lastchar != ' ' && wmode == 0;
  } else if (fabsf(base_offset) <= size * PARAGRAPH_DIST) {
    if (wmode == 0 && p->new_obj && fabsf(start.x - p->start.x) > size * 0.5f)
      d->para = true;
  } else {
    d->para = true;
  }
  return true;
}

/* Drops the hyphen that ends the current line, unless it is the line's
 * only character. */
static void drop_hyphen(proc_t *p) {
  dg__pdf_text_t *t = &p->t->text;
  dg__pdf_line_t *line = &t->lines[t->nlines - 1];
  if (line->count < 2)
    return;
  line->count--;
  t->nchars--;
  p->pending = false;
}

/* One Unicode character of a glyph (glyph false for the second and later
 * characters of one glyph, which take no room). */
static void add_char(fz_context *ctx, proc_t *p, const dg__pdf_font_info_t *fi, int c, bool glyph,
                     fz_matrix trm, float adv, int wmode) {
  dg__pdf_text_t *t = &p->t->text;
  p->curdir = direction(c, p->curdir);
  orient(p, trm, wmode);
  fz_point start, end;
  if (wmode == 0) {
    start = (fz_point){trm.e, trm.f};
    end = (fz_point){trm.e + adv * p->dir.x, trm.f + adv * p->dir.y};
  } else {
    start = (fz_point){trm.e - adv * p->dir.x, trm.f - adv * p->dir.y};
    end = (fz_point){trm.e, trm.f};
  }
  if (t->nblocks > 0 && !glyph) {
    put_char(ctx, p, c, p->pen, p->pen, trm, fi);
    p->lastchar = c;
    return;
  }
  decision_t d;
  if (!place(p, c, start, end, wmode, &d))
    return;
  bool line_open = !d.para && t->nblocks > 0;
  if (d.para || t->nblocks == 0) {
    settle(p);
    new_block(ctx, t);
  }
  if (d.line && is_hyphen(p->lastchar)) {
    if (line_open)
      drop_hyphen(p);
    d.line = false;
  }
  if (d.line || !line_open) {
    new_line(ctx, t);
    p->line_dir = p->ndir;
    p->line_wmode = wmode;
    p->start = start;
  }
  if (d.space)
    put_char(ctx, p, ' ', p->pen, start, trm, fi);
  put_char(ctx, p, c, start, end, trm, fi);
  p->lastchar = c;
  p->pen = end;
  p->new_obj = false;
}

/* Ligatures split into their letters and white space made a space, as
 * MuPDF's device does by default. */
static void add_unicode(fz_context *ctx, proc_t *p, const dg__pdf_font_info_t *fi, int c,
                        bool glyph, fz_matrix trm, float adv, int wmode) {
  static const char *const ligatures[] = {"ff", "fi", "fl", "ffi", "ffl", "st", "st"};
  if (c == -1)
    return;
  if (c >= 0xFB00 && c <= 0xFB06) {
    const char *s = ligatures[c - 0xFB00];
    add_char(ctx, p, fi, s[0], glyph, trm, adv, wmode);
    for (s++; *s != '\0'; s++)
      add_char(ctx, p, fi, *s, false, trm, 0, wmode);
    return;
  }
  switch (c) {
  case 0x0009:
  case 0x00A0:
  case 0x1680:
  case 0x180E:
  case 0x2000:
  case 0x2001:
  case 0x2002:
  case 0x2003:
  case 0x2004:
  case 0x2005:
  case 0x2006:
  case 0x2007:
  case 0x2008:
  case 0x2009:
  case 0x200A:
  case 0x202F:
  case 0x205F:
  case 0x3000:
    c = ' ';
    break;
  default:
    break;
  }
  add_char(ctx, p, fi, c, glyph, trm, adv, wmode);
}

/* ---- Fonts ------------------------------------------------------------------------ */

static void describe(fz_context *ctx, pdf_font_desc *f, int cid, code_info_t *ci) {
  int ucs[PDF_MRANGE_CAP]; /* what pdf_lookup_cmap_full writes at most */
  int n = 0;
  *ci = (code_info_t){.cid = cid, .filled = true};
  if (cid < 0)
    return;
  ci->gid = pdf_font_cid_to_gid(ctx, f, cid);
  if (f->wmode == 0) {
    ci->w = pdf_lookup_hmtx(ctx, f, cid).w;
  } else {
    pdf_vmtx v = pdf_lookup_vmtx(ctx, f, cid);
    ci->w = v.w, ci->vx = v.x, ci->vy = v.y;
  }
  ci->adv = ci->gid >= 0 ? fz_advance_glyph(ctx, f->font, ci->gid, f->wmode) : 0;
  if (f->to_unicode != NULL)
    n = pdf_lookup_cmap_full(f->to_unicode, (unsigned)cid, ucs);
  if (n == 0 && (size_t)cid < f->cid_to_ucs_len) {
    ucs[0] = f->cid_to_ucs[cid];
    n = 1;
  }
  if (n == 0 || (n == 1 && ucs[0] == 0)) {
    ucs[0] = FZ_REPLACEMENT_CHARACTER;
    n = 1;
  }
  ci->ucs = ucs[0];
  ci->ucs_len = n;
}

static void info_init(fz_context *ctx, dg__pdf_font_info_t *fi, pdf_font_desc *f) {
  memset(fi->codes, 0, sizeof(fi->codes));
  fi->ascender = fz_font_ascender(ctx, f->font);
  fi->descender = fz_font_descender(ctx, f->font);
  fi->type3 = f->font->t3procs != NULL;
  for (int b = 0; b < 256; b++) {
    fi->one_byte[b] = false;
    for (int k = 0; k < f->encoding->codespace_len; k++)
      if (f->encoding->codespace[k].n == 1 && (unsigned)b >= f->encoding->codespace[k].low &&
          (unsigned)b <= f->encoding->codespace[k].high)
        fi->one_byte[b] = true;
  }
}

/* The cached description of font f, made on first use; NULL when the
 * cache is full. */
static dg__pdf_font_info_t *font_info(fz_context *ctx, dg__pdf_texts_t *t, pdf_font_desc *f) {
  for (int i = 0; i < t->nfonts; i++)
    if (t->fonts[i]->font == f)
      return t->fonts[i];
  if (t->nfonts == DG__PDF_FONTS)
    return NULL;
  dg__pdf_font_info_t *fi = fz_malloc(ctx, sizeof(*fi));
  fz_try(ctx) {
    info_init(ctx, fi, f);
  }
  fz_catch(ctx) {
    fz_free(ctx, fi);
    fz_rethrow(ctx);
  }
  fi->font = pdf_keep_font(ctx, f);
  t->fonts[t->nfonts++] = fi;
  return fi;
}

/* The description of the current font: the cached one or the spare,
 * which holds its font so that no other font can take its address. */
static dg__pdf_font_info_t *current_info(fz_context *ctx, proc_t *p, gstate_t *gs) {
  if (gs->info != NULL)
    return gs->info;
  if (p->spare.font != gs->font) {
    pdf_drop_font(ctx, p->spare.font);
    p->spare.font = NULL;
    info_init(ctx, &p->spare, gs->font);
    p->spare.font = pdf_keep_font(ctx, gs->font);
  }
  return &p->spare;
}

static void fonts_free(fz_context *ctx, dg__pdf_texts_t *t) {
  for (int i = 0; i < t->nfonts; i++) {
    pdf_drop_font(ctx, t->fonts[i]->font);
    fz_free(ctx, t->fonts[i]);
  }
  t->nfonts = 0;
}

/* ---- Showing text ------------------------------------------------------------------- */

static proc_t *proc_of(pdf_processor *proc) {
  return (proc_t *)proc;
}

static gstate_t *gs_of(proc_t *p) {
  return &p->gs[p->top];
}

/* Where MuPDF ends a text object: the next glyph starts another. */
static void flush(proc_t *p) {
  p->new_obj = true;
  p->text_mode = -1;
}

static void tick(fz_context *ctx, proc_t *p) {
  if (p->t->tick != NULL)
    p->t->tick(ctx);
}

/* Whether MuPDF's device sees a glyph drawn in this render mode. */
static bool seen(const proc_t *p, int mode) {
  if (mode < 0 || mode > 7)
    return false;
  return !(p->super.hidden > 0 && mode <= 2);
}

/* One character code: its glyph matrix, its characters, then the text
 * matrix moved past it (pdf_show_char and pdf_tos_make_trm). */
static void show_char(fz_context *ctx, proc_t *p, gstate_t *gs, dg__pdf_font_info_t *fi,
                      const code_info_t *ci) {
  pdf_font_desc *f = gs->font;
  fz_matrix tsm = {gs->size * gs->scale, 0, 0, gs->size, 0, gs->rise};
  float tx, ty;
  if (f->wmode == 0) {
    float w0 = ci->w * 0.001f;
    tx = (w0 * gs->size + gs->char_space) * gs->scale;
    ty = 0;
  } else {
    float w1 = ci->w * 0.001f;
    tsm.e -= ci->vx * fabsf(gs->size) * 0.001f;
    tsm.f -= ci->vy * gs->size * 0.001f;
    tx = 0;
    ty = w1 * gs->size + gs->char_space;
  }
  fz_matrix trm = concat(tsm, p->tm);
  int mode = gs->render;
  if (p->text_mode != mode)
    flush(p);
  if (fi->type3 && !fz_glyph_cacheable(ctx, f->font, ci->gid)) {
    flush(p); /* MuPDF draws such a glyph alone, as invisible text */
    mode = 3;
  }
  p->text_mode = mode;
  if (seen(p, mode)) {
    fz_matrix dtrm = concat(trm, gs->ctm);
    float adv = ci->gid >= 0 ? ci->adv : 0;
    add_unicode(ctx, p, fi, ci->ucs, ci->gid >= 0, dtrm, adv, f->wmode);
    if (ci->ucs_len > 1) {
      int ucs[PDF_MRANGE_CAP];
      int n = pdf_lookup_cmap_full(f->to_unicode, (unsigned)ci->cid, ucs);
      for (int i = 1; i < n; i++)
        add_unicode(ctx, p, fi, ucs[i], false, dtrm, 0, f->wmode);
    }
  }
  p->tm = pre_translate(p->tm, tx, ty);
  if (++p->glyphs % GLYPHS_PER_TICK == 0)
    tick(ctx, p);
}

static void show_space(proc_t *p, gstate_t *gs, float tadj) {
  if (gs->font->wmode == 0)
    p->tm = pre_translate(p->tm, tadj * gs->scale, 0);
  else
    p->tm = pre_translate(p->tm, 0, tadj);
}

static const code_info_t *code_of(fz_context *ctx, dg__pdf_font_info_t *fi, pdf_font_desc *f,
                                  unsigned code) {
  code_info_t *ci = &fi->codes[code];
  if (!ci->filled)
    describe(ctx, f, pdf_lookup_cmap(f->encoding, code), ci);
  return ci;
}

static void show_string(fz_context *ctx, proc_t *p, const unsigned char *buf, size_t len) {
  gstate_t *gs = gs_of(p);
  if (gs->font == NULL)
    return;
  dg__pdf_font_info_t *fi = current_info(ctx, p, gs);
  const unsigned char *end = buf + len;
  while (buf < end) {
    unsigned cpt = 0;
    int w = 1;
    code_info_t other;
    const code_info_t *ci = &other;
    if (fi->one_byte[*buf]) {
      cpt = *buf;
      ci = code_of(ctx, fi, gs->font, cpt);
    } else {
      w = pdf_decode_cmap(gs->font->encoding, (unsigned char *)buf, (unsigned char *)end, &cpt);
      describe(ctx, gs->font, pdf_lookup_cmap(gs->font->encoding, cpt), &other);
    }
    /* At least one byte a step and never past the end, whatever the
     * encoding says: a string is always read to its end. */
    buf += w >= 1 && w <= end - buf ? w : 1;
    if (ci->cid >= 0)
      show_char(ctx, p, gs, fi, ci);
    if (cpt == 32 && w == 1)
      show_space(p, gs, gs->word_space);
  }
}

/* ---- Operators ------------------------------------------------------------------------- */

static void op_BT(fz_context *ctx, pdf_processor *proc) {
  proc_t *p = proc_of(proc);
  p->tm = p->tlm = fz_identity;
  tick(ctx, p);
}

static void op_ET(fz_context *ctx, pdf_processor *proc) {
  flush(proc_of(proc));
}

static void op_Tc(fz_context *ctx, pdf_processor *proc, float charspace) {
  gs_of(proc_of(proc))->char_space = charspace;
}

static void op_Tw(fz_context *ctx, pdf_processor *proc, float wordspace) {
  gs_of(proc_of(proc))->word_space = wordspace;
}

static void op_Tz(fz_context *ctx, pdf_processor *proc, float scale) {
  gs_of(proc_of(proc))->scale = scale / 100;
}

static void op_TL(fz_context *ctx, pdf_processor *proc, float leading) {
  gs_of(proc_of(proc))->leading = leading;
}

static void op_Tf(fz_context *ctx, pdf_processor *proc, const char *name, pdf_font_desc *font,
                  float size) {
  proc_t *p = proc_of(proc);
  gstate_t *gs = gs_of(p);
  dg__pdf_font_info_t *fi = font_info(ctx, p->t, font);
  pdf_drop_font(ctx, gs->font);
  gs->font = pdf_keep_font(ctx, font);
  gs->info = fi;
  gs->size = size;
}

static void op_Tr(fz_context *ctx, pdf_processor *proc, int render) {
  gs_of(proc_of(proc))->render = render;
}

static void op_Ts(fz_context *ctx, pdf_processor *proc, float rise) {
  gs_of(proc_of(proc))->rise = rise;
}

static void op_Td(fz_context *ctx, pdf_processor *proc, float tx, float ty) {
  proc_t *p = proc_of(proc);
  p->tlm = pre_translate(p->tlm, tx, ty);
  p->tm = p->tlm;
}

static void op_TD(fz_context *ctx, pdf_processor *proc, float tx, float ty) {
  gs_of(proc_of(proc))->leading = -ty;
  op_Td(ctx, proc, tx, ty);
}

static void op_Tm(fz_context *ctx, pdf_processor *proc, float a, float b, float c, float d, float e,
                  float f) {
  proc_t *p = proc_of(proc);
  p->tm = p->tlm = (fz_matrix){a, b, c, d, e, f};
}

static void op_Tstar(fz_context *ctx, pdf_processor *proc) {
  proc_t *p = proc_of(proc);
  p->tlm = pre_translate(p->tlm, 0, -gs_of(p)->leading);
  p->tm = p->tlm;
}

static void op_TJ(fz_context *ctx, pdf_processor *proc, pdf_obj *array) {
  proc_t *p = proc_of(proc);
  gstate_t *gs = gs_of(p);
  tick(ctx, p);
  if (gs->font == NULL)
    return;
  if (pdf_is_string(ctx, array)) {
    show_string(ctx, p, (unsigned char *)pdf_to_str_buf(ctx, array), pdf_to_str_len(ctx, array));
    return;
  }
  int n = pdf_array_len(ctx, array);
  for (int i = 0; i < n; i++) {
    pdf_obj *item = pdf_array_get(ctx, array, i);
    if (pdf_is_string(ctx, item))
      show_string(ctx, p, (unsigned char *)pdf_to_str_buf(ctx, item), pdf_to_str_len(ctx, item));
    else
      show_space(p, gs, -pdf_to_real(ctx, item) * gs->size * 0.001f);
  }
}

static void op_Tj(fz_context *ctx, pdf_processor *proc, char *str, size_t len) {
  tick(ctx, proc_of(proc));
  show_string(ctx, proc_of(proc), (unsigned char *)str, len);
}

static void op_squote(fz_context *ctx, pdf_processor *proc, char *str, size_t len) {
  op_Tstar(ctx, proc);
  op_Tj(ctx, proc, str, len);
}

static void op_dquote(fz_context *ctx, pdf_processor *proc, float aw, float ac, char *str,
                      size_t len) {
  gstate_t *gs = gs_of(proc_of(proc));
  gs->word_space = aw;
  gs->char_space = ac;
  op_squote(ctx, proc, str, len);
}

static void op_q(fz_context *ctx, pdf_processor *proc) {
  proc_t *p = proc_of(proc);
  tick(ctx, p);
  if (p->top + 1 == MAX_GSTATES) {
    p->excess++;
    return;
  }
  p->gs[p->top + 1] = p->gs[p->top];
  p->top++;
  pdf_keep_font(ctx, p->gs[p->top].font);
}

static void op_Q(fz_context *ctx, pdf_processor *proc) {
  proc_t *p = proc_of(proc);
  flush(p);
  if (p->excess > 0) {
    p->excess--;
    return;
  }
  if (p->top == 0)
    return;
  pdf_drop_font(ctx, p->gs[p->top].font);
  p->top--;
}

static void op_cm(fz_context *ctx, pdf_processor *proc, float a, float b, float c, float d, float e,
                  float f) {
  proc_t *p = proc_of(proc);
  gstate_t *gs = gs_of(p);
  flush(p);
  gs->ctm = concat((fz_matrix){a, b, c, d, e, f}, gs->ctm);
}

/* A form XObject: its content with its matrix and resources (the page's
 * when it has none), in a graphics state of its own. */
static void op_Do_form(fz_context *ctx, pdf_processor *proc, const char *name, pdf_obj *form,
                       pdf_obj *page_resources) {
  proc_t *p = proc_of(proc);
  int num = pdf_to_num(ctx, form);
  tick(ctx, p);
  if (p->nforms == MAX_FORMS)
    return;
  for (int i = 0; i < p->nforms; i++)
    if (num != 0 && p->forms[i] == num)
      return;
  int top = p->top, excess = p->excess;
  fz_matrix outer = gs_of(p)->ctm; /* for when the stack is full and q saved nothing */
  op_q(ctx, proc);
  gstate_t *gs = gs_of(p);
  gs->ctm = concat(pdf_xobject_matrix(ctx, form), gs->ctm);
  pdf_obj *resources = pdf_xobject_resources(ctx, form);
  p->forms[p->nforms++] = num;
  fz_try(ctx) {
    pdf_process_contents(ctx, proc, p->doc, resources != NULL ? resources : page_resources, form,
                         p->cookie);
  }
  fz_always(ctx) {
    p->nforms--;
    while (p->top > top)
      op_Q(ctx, proc);
    p->excess = excess;
    if (p->top == top)
      gs_of(p)->ctm = outer;
  }
  fz_catch(ctx) {
    fz_rethrow(ctx);
  }
}

/* Operators MuPDF ends a text object at (colours, graphics state). */
static void op_flush_f(fz_context *ctx, pdf_processor *proc, float x) {
  flush(proc_of(proc));
}

static void op_flush_i(fz_context *ctx, pdf_processor *proc, int x) {
  flush(proc_of(proc));
}

static void op_flush_rgb(fz_context *ctx, pdf_processor *proc, float r, float g, float b) {
  flush(proc_of(proc));
}

static void op_flush_cmyk(fz_context *ctx, pdf_processor *proc, float c, float m, float y,
                          float k) {
  flush(proc_of(proc));
}

static void op_flush_color(fz_context *ctx, pdf_processor *proc, int n, float *color) {
  flush(proc_of(proc));
}

static void op_flush_s(fz_context *ctx, pdf_processor *proc, const char *s) {
  flush(proc_of(proc));
}

static void op_flush_d(fz_context *ctx, pdf_processor *proc, pdf_obj *array, float phase) {
  flush(proc_of(proc));
}

/* Paths only look at the clock. */
static void op_tick_xy(fz_context *ctx, pdf_processor *proc, float x, float y) {
  tick(ctx, proc_of(proc));
}

static void op_tick_re(fz_context *ctx, pdf_processor *proc, float x, float y, float w, float h) {
  tick(ctx, proc_of(proc));
}

static void op_tick_c(fz_context *ctx, pdf_processor *proc, float x1, float y1, float x2, float y2,
                      float x3, float y3) {
  tick(ctx, proc_of(proc));
}

static void proc_drop(fz_context *ctx, pdf_processor *proc) {
  proc_t *p = proc_of(proc);
  pdf_drop_font(ctx, p->spare.font);
  p->spare.font = NULL;
  for (int i = 0; i <= p->top; i++)
    pdf_drop_font(ctx, p->gs[i].font);
  p->top = 0;
  p->gs[0].font = NULL;
}

static void proc_init(proc_t *p, dg__pdf_texts_t *t, pdf_document *doc, fz_cookie *cookie,
                      fz_matrix ctm) {
  pdf_processor *s = &p->super;
  p->t = t;
  p->doc = doc;
  p->cookie = cookie;
  p->gs[0] = (gstate_t){.ctm = ctm, .scale = 1, .size = -1};
  p->text_mode = -1;
  p->new_obj = true;
  p->lastchar = ' ';
  p->curdir = 1;
  p->kw = -1;
  s->usage = "View";
  s->drop_processor = proc_drop;
  s->op_BT = op_BT;
  s->op_ET = op_ET;
  s->op_Tc = op_Tc;
  s->op_Tw = op_Tw;
  s->op_Tz = op_Tz;
  s->op_TL = op_TL;
  s->op_Tf = op_Tf;
  s->op_Tr = op_Tr;
  s->op_Ts = op_Ts;
  s->op_Td = op_Td;
  s->op_TD = op_TD;
  s->op_Tm = op_Tm;
  s->op_Tstar = op_Tstar;
  s->op_TJ = op_TJ;
  s->op_Tj = op_Tj;
  s->op_squote = op_squote;
  s->op_dquote = op_dquote;
  s->op_q = op_q;
  s->op_Q = op_Q;
  s->op_cm = op_cm;
  s->op_Do_form = op_Do_form;
  s->op_w = op_flush_f;
  s->op_j = op_flush_i;
  s->op_J = op_flush_i;
  s->op_M = op_flush_f;
  s->op_d = op_flush_d;
  s->op_ri = op_flush_s;
  s->op_gs_OP = op_flush_i;
  s->op_gs_op = op_flush_i;
  s->op_gs_OPM = op_flush_i;
  s->op_gs_BM = op_flush_s;
  s->op_gs_CA = op_flush_f;
  s->op_gs_ca = op_flush_f;
  s->op_G = op_flush_f;
  s->op_g = op_flush_f;
  s->op_RG = op_flush_rgb;
  s->op_rg = op_flush_rgb;
  s->op_K = op_flush_cmyk;
  s->op_k = op_flush_cmyk;
  s->op_SC_color = op_flush_color;
  s->op_sc_color = op_flush_color;
  s->op_m = op_tick_xy;
  s->op_l = op_tick_xy;
  s->op_re = op_tick_re;
  s->op_c = op_tick_c;
}

/* ---- Pages ---------------------------------------------------------------------------- */

bool dg__pdf_text_read(fz_context *ctx, fz_page *page, fz_cookie *cookie, dg__pdf_texts_t *t) {
  pdf_page *pp = pdf_page_from_fz_page(ctx, page);
  text_reset(&t->text);
  if (pp == NULL || pp->annots != NULL || pp->widgets != NULL)
    return false;
  if (t->nfonts == DG__PDF_FONTS)
    fonts_free(ctx, t); /* no page holds them now */
  fz_rect mediabox;
  fz_matrix ctm;
  pdf_page_transform(ctx, pp, &mediabox, &ctm);
  pdf_obj *resources = pdf_page_resources(ctx, pp);
  pdf_obj *contents = pdf_page_contents(ctx, pp);
  proc_t *p = pdf_new_processor(ctx, sizeof(*p));
  fz_try(ctx) {
    proc_init(p, t, pp->doc, cookie, ctm);
    pdf_process_contents(ctx, &p->super, pp->doc, resources, contents, cookie);
    pdf_close_processor(ctx, &p->super);
    if (t->text.nblocks > 0)
      settle(p);
  }
  fz_always(ctx) {
    pdf_drop_processor(ctx, &p->super);
  }
  fz_catch(ctx) {
    text_reset(&t->text);
    fz_rethrow(ctx);
  }
  return true;
}

void dg__pdf_text_from_stext(fz_context *ctx, fz_stext_page *page, dg__pdf_texts_t *t) {
  dg__pdf_text_t *x = &t->text;
  text_reset(x);
  for (fz_stext_block *b = page->first_block; b != NULL; b = b->next) {
    if (b->type != FZ_STEXT_BLOCK_TEXT)
      continue;
    new_block(ctx, x);
    x->blocks[x->nblocks - 1].box = b->bbox;
    for (fz_stext_line *line = b->u.t.first_line; line != NULL; line = line->next) {
      new_line(ctx, x);
      for (fz_stext_char *ch = line->first_char; ch != NULL; ch = ch->next)
        push_char(ctx, x, ch->c);
    }
  }
}

void dg__pdf_text_free(fz_context *ctx, dg__pdf_texts_t *t) {
  fonts_free(ctx, t);
  fz_free(ctx, t->text.chars);
  fz_free(ctx, t->text.lines);
  fz_free(ctx, t->text.blocks);
  memset(&t->text, 0, sizeof(t->text));
}
