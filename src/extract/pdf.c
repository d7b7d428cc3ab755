/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* PDF with MuPDF, one page per step: MuPDF opens the document, finds and
 * loads the page and lexes its content stream; the text operators are
 * interpreted by a processor of our own (pdf_text.c), which places each
 * glyph by matrix arithmetic and builds lines and blocks as MuPDF's
 * structured-text device would, without the glyph boxes that device and
 * MuPDF's drawing interpreter compute for every character. A page with
 * annotations or form fields, whose appearance streams MuPDF runs, goes
 * through MuPDF's structured-text device instead. The page's text blocks
 * are put in reading order, each page preceded by "--- Page N ---".
 *
 * Reading order is a recursive XY cut over the blocks' boxes: a region is
 * split into side-by-side columns where a vertical gap runs through it and
 * both sides are at least half the region's height, else into bands at a
 * horizontal gap, else into columns at any vertical gap; blocks that
 * overlap everywhere keep top-to-bottom, left-to-right order. So a title
 * over two columns reads title, left column, right column.
 *
 * Bounds: MuPDF (and the page's text arrays and font tables) allocate
 * through a counting allocator capped at limits.max_memory_bytes; the text
 * processor checks the deadline every 64 of the operators it handles and
 * every 4,096 glyphs (the device's drawing calls, on the other path) and
 * aborts the page through MuPDF's cookie when it has passed; a damaged
 * document is repaired by MuPDF where it can be, and a page that cannot be
 * read is left empty (the whole document failing only when no page can be
 * read).
 *
 * One thread reads the pages. A second MuPDF context reading every other
 * page on another CPU halves the wall time but costs about a third more
 * CPU time and memory (the document is opened, and its fonts and objects
 * loaded, twice): the CPU is better spent on the gateway's other calls. */
#include <stdlib.h>
#include <string.h>

#include <mupdf/fitz.h>
#include <mupdf/pdf.h>

#include "extract/internal.h"
#include "extract/pdf_internal.h"

/* Text blocks put in reading order; more keep MuPDF's order. */
#define MAX_BLOCKS 4096
/* MuPDF's cache of decoded objects, inside the memory limit. */
#define STORE_BYTES ((size_t)32 << 20)
/* Drawing calls (or text operators and glyphs) between two looks at the
 * clock. */
#define CALLS_PER_CHECK 64
/* A step reads pages until this much time has passed (at least one page)
 * or limits.max_pages_per_step have been read, so that short pages do not
 * each cost a trip through the threadpool. */
#define STEP_BUDGET_NS (5u * 1000u * 1000u)
/* MuPDF's memory: block header, sizes of the blocks kept for reuse (16
 * bytes to 64 KiB) and how much of them is kept. */
#define HEADER 16
#define MIN_SHIFT 4
#define MAX_SHIFT 22
#define CACHE_MAX ((size_t)16 << 20)

typedef struct mem {
  size_t used; /* capacity handed to MuPDF */
  size_t max;
  bool over;
  bool late;                                  /* an allocation found the deadline passed */
  const struct dg__xrun *run;                 /* for the deadline */
  void *free_list[MAX_SHIFT - MIN_SHIFT + 1]; /* blocks kept for reuse, per size */
  size_t cached;
} mem_t;

/* The MuPDF context and the document. */
typedef struct reader {
  dg__xrun_t *run;
  mem_t mem;
  fz_alloc_context alloc;
  fz_context *ctx;
  pdf_document *doc;
  fz_cookie cookie;
  bool page_tree;    /* MuPDF's page map is loaded */
  pdf_obj *page_obj; /* the object of the page being read, held */
  int page_refs;     /* its reference count before the page was loaded */
  unsigned calls;
  bool late; /* the deadline passed while a page ran */
  /* The stext device's own drawing functions, called by the wrappers. */
  fz_device original;
  dg__pdf_texts_t texts; /* the page's text, and the fonts seen */
  dg_errctx_t err;       /* why the last page failed */
} reader_t;

typedef struct pdf_state {
  reader_t main;
  int pages;
  int next;
  int failed; /* pages that could not be read */
  char first_failure[256];
} pdf_state_t;

/* ---- Memory ------------------------------------------------------------------
 * Each block carries its capacity in front so that frees can be counted.
 * Blocks up to 64 KiB come in power-of-two sizes and are kept for reuse
 * (up to CACHE_MAX bytes) instead of being freed: MuPDF builds and drops a
 * page's structures for every page, and handing that memory back to the C
 * library each time made it trim and regrow its heap, costing more than
 * the extraction itself. Everything is released with the document. */

/* The capacity for a request of n bytes, and its class (-1 for a large
 * block that is not kept). */
static size_t capacity_of(size_t n, int *cls) {
  size_t cap = (size_t)1 << MIN_SHIFT;
  *cls = -1;
  if (n > ((size_t)1 << MAX_SHIFT))
    return n;
  for (*cls = 0; cap < n; (*cls)++)
    cap <<= 1;
  return cap;
}

/* True once the run is canceled or past its deadline. Safe on any thread:
 * it reads only the cancel flag and the deadline. */
static bool over(const dg__xrun_t *run) {
  return atomic_load_explicit(&run->canceled, memory_order_relaxed) ||
         (run->deadline_ms != 0 && dg_now_ms() > run->deadline_ms);
}

/* Large allocations look at the clock: a document that makes MuPDF grow
 * tables object by object is stopped there, not only between pages. */
static bool mem_late(mem_t *m, size_t n) {
  if (n <= ((size_t)1 << MAX_SHIFT) || m->run == NULL || !over(m->run))
    return false;
  m->late = true;
  return true;
}

static void *mem_malloc(void *user, size_t n) {
  mem_t *m = user;
  int cls = 0;
  if (mem_late(m, n))
    return NULL;
  size_t cap = capacity_of(n, &cls);
  if (cap > m->max - m->used) {
    m->over = true;
    return NULL;
  }
  unsigned char *p = cls >= 0 ? m->free_list[cls] : NULL;
  if (p != NULL) {
    memcpy(&m->free_list[cls], p + HEADER, sizeof(void *));
    m->cached -= cap;
  } else {
    p = malloc(cap + HEADER);
    if (p == NULL)
      return NULL;
  }
  memcpy(p, &cap, sizeof(cap));
  m->used += cap;
  return p + HEADER;
}

static size_t capacity_at(const void *ptr) {
  size_t cap = 0;
  memcpy(&cap, (const unsigned char *)ptr - HEADER, sizeof(cap));
  return cap;
}

static void mem_free(void *user, void *ptr) {
  mem_t *m = user;
  if (ptr == NULL)
    return;
  unsigned char *p = (unsigned char *)ptr - HEADER;
  int cls = 0;
  size_t cap = capacity_of(capacity_at(ptr), &cls);
  m->used -= cap;
  if (cls >= 0 && m->cached + cap <= CACHE_MAX) {
    memcpy(ptr, &m->free_list[cls], sizeof(void *));
    m->free_list[cls] = p;
    m->cached += cap;
    return;
  }
  free(p);
}

/* A large block grows by half again at least, in place where the C
 * library can (mremap): MuPDF resizes some tables to the exact size needed
 * (the cross-reference table as objects are found), and copying the whole
 * block at every growth made the cost quadratic in the table's size. */
static void *mem_grow_large(mem_t *m, unsigned char *p, size_t old, size_t n) {
  size_t cap = old + old / 2 > n ? old + old / 2 : n;
  if (cap - old > m->max - m->used)
    cap = n; /* the exact size may still fit */
  if (cap - old > m->max - m->used) {
    m->over = true;
    return NULL;
  }
  if (mem_late(m, n))
    return NULL;
  unsigned char *q = realloc(p, cap + HEADER);
  if (q == NULL)
    return NULL;
  memcpy(q, &cap, sizeof(cap));
  m->used += cap - old;
  return q + HEADER;
}

static void *mem_realloc(void *user, void *ptr, size_t n) {
  if (ptr == NULL)
    return mem_malloc(user, n);
  size_t old = capacity_at(ptr);
  if (n <= old)
    return ptr;
  if (old > ((size_t)1 << MAX_SHIFT))
    return mem_grow_large(user, (unsigned char *)ptr - HEADER, old, n);
  void *q = mem_malloc(user, n);
  if (q == NULL)
    return NULL;
  memcpy(q, ptr, old < n ? old : n);
  mem_free(user, ptr);
  return q;
}

static void mem_release(mem_t *m) {
  for (size_t c = 0; c < DG_ARRAY_SIZE(m->free_list); c++) {
    while (m->free_list[c] != NULL) {
      unsigned char *p = m->free_list[c];
      memcpy(&m->free_list[c], p + HEADER, sizeof(void *));
      free(p);
    }
  }
  m->cached = 0;
}

/* ---- Failures ------------------------------------------------------------------ */

static void quiet(void *user, const char *message) {
}

/* The error for what MuPDF threw (called inside fz_catch), in r->err. */
static int failure(reader_t *r, const char *doing) {
  if (r->mem.late)
    return dg_errctx_set(&r->err, DG_ETIMEDOUT, "url", "%s was stopped", doing);
  if (r->mem.over || fz_caught(r->ctx) == FZ_ERROR_MEMORY)
    return dg_errctx_set(&r->err, DG_E2BIG, "url",
                         "%s needs more than the limit of %zu MiB of memory", doing,
                         r->run->limits.max_memory_bytes >> 20);
  if (over(r->run))
    return dg_errctx_set(&r->err, DG_ETIMEDOUT, "url", "%s was stopped", doing);
  return dg_errctx_set(&r->err, DG_EPROTO, "url", "%s failed: the PDF is damaged (%s)", doing,
                       fz_caught_message(r->ctx));
}

/* ---- The deadline inside a page -------------------------------------------------
 * MuPDF stops interpreting a page when the cookie's abort flag is set; the
 * stext device's drawing functions are wrapped to set it once the deadline
 * has passed. The context's user pointer leads back to the state. */

static void tick(fz_context *ctx) {
  reader_t *r = fz_user_context(ctx);
  if (++r->calls % CALLS_PER_CHECK != 0)
    return;
  if (over(r->run)) {
    r->late = true;
    r->cookie.abort = 1;
  }
}

static reader_t *state_of(fz_context *ctx) {
  return fz_user_context(ctx);
}

static void w_fill_path(fz_context *ctx, fz_device *dev, const fz_path *path, int even_odd,
                        fz_matrix ctm, fz_colorspace *cs, const float *color, float alpha,
                        fz_color_params cp) {
  tick(ctx);
  if (state_of(ctx)->original.fill_path != NULL)
    state_of(ctx)->original.fill_path(ctx, dev, path, even_odd, ctm, cs, color, alpha, cp);
}

static void w_stroke_path(fz_context *ctx, fz_device *dev, const fz_path *path,
                          const fz_stroke_state *stroke, fz_matrix ctm, fz_colorspace *cs,
                          const float *color, float alpha, fz_color_params cp) {
  tick(ctx);
  if (state_of(ctx)->original.stroke_path != NULL)
    state_of(ctx)->original.stroke_path(ctx, dev, path, stroke, ctm, cs, color, alpha, cp);
}

static void w_fill_text(fz_context *ctx, fz_device *dev, const fz_text *text, fz_matrix ctm,
                        fz_colorspace *cs, const float *color, float alpha, fz_color_params cp) {
  tick(ctx);
  if (state_of(ctx)->original.fill_text != NULL)
    state_of(ctx)->original.fill_text(ctx, dev, text, ctm, cs, color, alpha, cp);
}

static void w_stroke_text(fz_context *ctx, fz_device *dev, const fz_text *text,
                          const fz_stroke_state *stroke, fz_matrix ctm, fz_colorspace *cs,
                          const float *color, float alpha, fz_color_params cp) {
  tick(ctx);
  if (state_of(ctx)->original.stroke_text != NULL)
    state_of(ctx)->original.stroke_text(ctx, dev, text, stroke, ctm, cs, color, alpha, cp);
}

static void w_ignore_text(fz_context *ctx, fz_device *dev, const fz_text *text, fz_matrix ctm) {
  tick(ctx);
  if (state_of(ctx)->original.ignore_text != NULL)
    state_of(ctx)->original.ignore_text(ctx, dev, text, ctm);
}

static void w_fill_shade(fz_context *ctx, fz_device *dev, fz_shade *shade, fz_matrix ctm,
                         float alpha, fz_color_params cp) {
  tick(ctx);
  if (state_of(ctx)->original.fill_shade != NULL)
    state_of(ctx)->original.fill_shade(ctx, dev, shade, ctm, alpha, cp);
}

static void w_fill_image(fz_context *ctx, fz_device *dev, fz_image *image, fz_matrix ctm,
                         float alpha, fz_color_params cp) {
  tick(ctx);
  if (state_of(ctx)->original.fill_image != NULL)
    state_of(ctx)->original.fill_image(ctx, dev, image, ctm, alpha, cp);
}

static void watch(reader_t *r, fz_device *dev) {
  r->original = *dev;
  dev->fill_path = w_fill_path;
  dev->stroke_path = w_stroke_path;
  dev->fill_text = w_fill_text;
  dev->stroke_text = w_stroke_text;
  dev->ignore_text = w_ignore_text;
  dev->fill_shade = w_fill_shade;
  dev->fill_image = w_fill_image;
}

/* ---- Reading order ---------------------------------------------------------------- */

typedef struct item {
  fz_rect r;
  const dg__pdf_block_t *block;
} item_t;

static int by_x(const void *a, const void *b) {
  float d = ((const item_t *)a)->r.x0 - ((const item_t *)b)->r.x0;
  return (d > 0) - (d < 0);
}

static int by_y(const void *a, const void *b) {
  const item_t *p = a, *q = b;
  float d = p->r.y0 != q->r.y0 ? p->r.y0 - q->r.y0 : p->r.x0 - q->r.x0;
  return (d > 0) - (d < 0);
}

static void span(const item_t *a, size_t n, float *top, float *bottom) {
  *top = a[0].r.y0;
  *bottom = a[0].r.y1;
  for (size_t i = 1; i < n; i++) {
    *top = a[i].r.y0 < *top ? a[i].r.y0 : *top;
    *bottom = a[i].r.y1 > *bottom ? a[i].r.y1 : *bottom;
  }
}

/* Where a vertical gap splits a (sorted by x) into columns; 0 when none.
 * With tall, both sides must reach half the region's height. */
static size_t column_cut(const item_t *a, size_t n, bool tall) {
  float top, bottom, right = a[0].r.x1;
  span(a, n, &top, &bottom);
  for (size_t i = 1; i < n; i++) {
    if (a[i].r.x0 > right) {
      float t1, b1, t2, b2;
      span(a, i, &t1, &b1);
      span(a + i, n - i, &t2, &b2);
      float half = (bottom - top) / 2;
      if (!tall || (b1 - t1 >= half && b2 - t2 >= half))
        return i;
    }
    right = a[i].r.x1 > right ? a[i].r.x1 : right;
  }
  return 0;
}

/* Where a horizontal gap splits a (sorted by y) into bands; 0 when none. */
static size_t band_cut(const item_t *a, size_t n) {
  float bottom = a[0].r.y1;
  for (size_t i = 1; i < n; i++) {
    if (a[i].r.y0 >= bottom)
      return i;
    bottom = a[i].r.y1 > bottom ? a[i].r.y1 : bottom;
  }
  return 0;
}

/* Orders a in place, recursively; depth bounds the recursion. */
static void xy_cut(item_t *a, size_t n, unsigned depth) {
  if (n < 2)
    return;
  size_t cut = 0;
  if (depth < 64) {
    qsort(a, n, sizeof(*a), by_x);
    cut = column_cut(a, n, true);
    if (cut == 0) {
      qsort(a, n, sizeof(*a), by_y);
      cut = band_cut(a, n);
    }
    if (cut == 0) {
      qsort(a, n, sizeof(*a), by_x);
      cut = column_cut(a, n, false);
    }
  }
  if (cut == 0) {
    qsort(a, n, sizeof(*a), by_y);
    return;
  }
  xy_cut(a, cut, depth + 1);
  xy_cut(a + cut, n - cut, depth + 1);
}

/* ---- Text out ----------------------------------------------------------------------- */

/* A line's characters go to the sink in pieces of this many bytes: one
 * call per piece rather than per character. */
#define LINE_PIECE 512

static void emit_line(dg__sink_t *sink, const int *chars, const dg__pdf_line_t *line) {
  char buf[LINE_PIECE + 4];
  size_t n = 0;
  for (uint32_t i = 0; i < line->count; i++) {
    int c = chars[line->first + i];
    n += dg_utf8_encode(c > 0 ? (uint32_t)c : DG__REPLACEMENT, buf + n);
    if (n >= LINE_PIECE) {
      dg__sink_text(sink, buf, n);
      n = 0;
    }
  }
  dg__sink_text(sink, buf, n);
  dg__sink_break(sink, DG__BREAK_LINE);
}

static void emit_block(dg__sink_t *sink, const dg__pdf_text_t *text, const dg__pdf_block_t *b) {
  for (uint32_t i = 0; i < b->count; i++)
    emit_line(sink, text->chars, &text->lines[b->first + i]);
  dg__sink_break(sink, DG__BREAK_PARA);
}

/* Blocks in reading order; the content stream's order when there are too
 * many to sort or no memory for it. */
static void emit_page(dg__xrun_t *run, const dg__pdf_text_t *text) {
  size_t n = text->nblocks;
  item_t *items = n <= MAX_BLOCKS ? malloc((n + 1) * sizeof(*items)) : NULL;
  for (size_t i = 0; i < n; i++) {
    if (items == NULL)
      emit_block(&run->sink, text, &text->blocks[i]);
    else
      items[i] = (item_t){text->blocks[i].box, &text->blocks[i]};
  }
  if (items == NULL)
    return;
  xy_cut(items, n, 0);
  for (size_t i = 0; i < n; i++)
    emit_block(&run->sink, text, items[i].block);
  free(items);
}

/* ---- Pages --------------------------------------------------------------------------- */

/* With MuPDF's page map loaded, page N is found in constant time; without
 * it MuPDF walks the page tree's kids from the first for every page, which
 * made reading a flat tree of thousands of pages quadratic (about a tenth
 * of the CPU time on a 4,000-page document).
 *
 * MuPDF 1.21 returns the page object from the map with a reference it
 * never drops (pdf_lookup_page_obj hands out pdf_load_object's result as
 * if it were borrowed), once per page loaded: the object then outlives the
 * document. Loading a page through the map therefore gives back what the
 * lookups added to the page object's reference count once the page is
 * dropped, measured rather than assumed, so that a MuPDF without the leak
 * is left alone. */
#if FZ_VERSION_MAJOR == 1 && FZ_VERSION_MINOR == 21
#define LOOKUP_KEEPS 1 /* pdf_lookup_page_obj returns a new reference */
#else
#define LOOKUP_KEEPS 0
#endif

/* MuPDF builds the map recursively, one stack frame per level of the
 * tree and a look through all the levels above for a cycle: deeper trees
 * (written by no PDF producer) are not mapped. */
#define MAX_TREE_DEPTH 64

typedef struct level {
  pdf_obj *kids;
  int next, len;
} level_t;

/* True when the page tree has no more than MAX_TREE_DEPTH levels; a tree
 * with a cycle has no bottom and fails. Walked without recursion, and
 * giving up after twice as many nodes as the pages counted, so that
 * subtrees shared many times over cannot make it long. May throw. */
static bool tree_is_shallow(fz_context *ctx, pdf_document *doc, int pages) {
  level_t stack[MAX_TREE_DEPTH];
  int depth = 0;
  long visits = 0, most = 2L * pages + MAX_TREE_DEPTH;
  pdf_obj *kids = pdf_dict_getp(ctx, pdf_trailer(ctx, doc), "Root/Pages/Kids");
  stack[0] = (level_t){kids, 0, pdf_array_len(ctx, kids)};
  while (depth >= 0) {
    level_t *l = &stack[depth];
    if (l->next >= l->len) {
      depth--;
      continue;
    }
    pdf_obj *kid = pdf_array_get(ctx, l->kids, l->next++);
    if (++visits > most)
      return false;
    if (!pdf_name_eq(ctx, pdf_dict_get(ctx, kid, PDF_NAME(Type)), PDF_NAME(Pages)))
      continue;
    if (++depth == MAX_TREE_DEPTH)
      return false;
    kids = pdf_dict_get(ctx, kid, PDF_NAME(Kids));
    stack[depth] = (level_t){kids, 0, pdf_array_len(ctx, kids)};
  }
  return true;
}

/* Maps the page tree once; a tree that is too deep, has a cycle or cannot
 * be mapped is walked page by page as before. A map too large for the
 * memory limit is not a reason to fail the document: the failed
 * allocation is forgotten. */
static void load_page_tree(reader_t *r, int pages) {
  bool over = r->mem.over;
  r->page_tree = false;
  fz_try(r->ctx) {
    if (tree_is_shallow(r->ctx, r->doc, pages)) {
      pdf_load_page_tree(r->ctx, r->doc);
      r->page_tree = true;
    }
  }
  fz_catch(r->ctx) {
    r->page_tree = false;
    r->mem.over = over;
  }
}

/* The page's object held by the reader while the page is read, and the
 * reference count it had before MuPDF loaded the page. */
static void hold_page_obj(reader_t *r, int number) {
  r->page_obj = NULL;
  if (!r->page_tree)
    return;
  pdf_obj *obj = pdf_lookup_page_obj(r->ctx, r->doc, number);
  r->page_obj = LOOKUP_KEEPS ? obj : pdf_keep_obj(r->ctx, obj);
  r->page_refs = pdf_obj_refs(r->ctx, r->page_obj);
}

static fz_page *load_page(reader_t *r, int number) {
  hold_page_obj(r, number);
  return fz_load_page(r->ctx, &r->doc->super, number);
}

/* Drops the page, then the references MuPDF's lookups left on its object
 * (none with a MuPDF that does not leak them), then the reader's own. */
static void drop_page(reader_t *r, fz_page *page) {
  fz_drop_page(r->ctx, page);
  if (r->page_obj == NULL)
    return;
  if (LOOKUP_KEEPS) {
    for (int n = pdf_obj_refs(r->ctx, r->page_obj); n > r->page_refs; n--)
      pdf_drop_obj(r->ctx, r->page_obj);
  }
  pdf_drop_obj(r->ctx, r->page_obj);
  r->page_obj = NULL;
}

/* A page with annotations or form fields, through MuPDF's structured-text
 * device, which also runs their appearance streams. Throws. */
static void read_stext(reader_t *r, fz_page *page) {
  fz_context *ctx = r->ctx;
  fz_stext_page *text = NULL;
  fz_device *dev = NULL;
  fz_stext_options opts = {.flags = FZ_STEXT_DEHYPHENATE};
  fz_var(text);
  fz_var(dev);
  fz_try(ctx) {
    text = fz_new_stext_page(ctx, fz_bound_page(ctx, page));
    dev = fz_new_stext_device(ctx, text, &opts);
    watch(r, dev);
    fz_run_page(ctx, page, dev, fz_identity, &r->cookie);
    fz_close_device(ctx, dev);
    dg__pdf_text_from_stext(ctx, text, &r->texts);
  }
  fz_always(ctx) {
    fz_drop_device(ctx, dev);
    fz_drop_stext_page(ctx, text);
  }
  fz_catch(ctx) {
    fz_rethrow(ctx);
  }
}

/* Reads page number (0-based) into r->texts.text. */
static int read_page(reader_t *r, int number) {
  fz_context *ctx = r->ctx;
  fz_page *page = NULL;
  fz_var(page);
  fz_try(ctx) {
    page = load_page(r, number);
    if (!dg__pdf_text_read(ctx, page, &r->cookie, &r->texts))
      read_stext(r, page);
  }
  fz_always(ctx) {
    drop_page(r, page);
  }
  fz_catch(ctx) {
    return failure(r, "reading a page");
  }
  return 0;
}

/* Writes what reading page number gave; a damaged page is left empty
 * unless memory or time ran out. */
static int write_page(dg__xrun_t *run, pdf_state_t *st, reader_t *r, int number, int rc) {
  char label[48];
  snprintf(label, sizeof(label), "--- Page %d ---", number + 1);
  dg__sink_label(&run->sink, label, true);
  if (rc == DG_EPROTO && st->failed++ == 0)
    dg_strlcpy(st->first_failure, r->err.message, sizeof(st->first_failure));
  if (rc == 0 && !r->late)
    emit_page(run, &r->texts.text);
  if (r->late || rc == DG_ETIMEDOUT)
    return dg__xrun_check(run) != 0 ? run->err.code : DG_ETIMEDOUT;
  if (rc != 0 && rc != DG_EPROTO)
    run->err = r->err;
  return rc == DG_EPROTO ? 0 : rc;
}

/* ---- Pages ---------------------------------------------------------------------------------- */

static int read_next(dg__xrun_t *run, pdf_state_t *st) {
  int number = st->next++;
  int rc = read_page(&st->main, number);
  return write_page(run, st, &st->main, number, rc);
}

/* Pages until the step's page count or time budget is spent or the text
 * is full. */
static int read_pages(dg__xrun_t *run, pdf_state_t *st, int last) {
  unsigned most = run->limits.max_pages_per_step > 0 ? run->limits.max_pages_per_step : 1;
  unsigned left = (unsigned)(last - st->next);
  int end = st->next + (int)(left < most ? left : most);
  uint64_t start = dg_now_ns();
  int rc = 0;
  while (rc == 0 && st->next < end) {
    rc = read_next(run, st);
    if (dg__xrun_full(run) || dg_now_ns() - start >= STEP_BUDGET_NS)
      break;
  }
  return rc;
}

/* ---- Readers ------------------------------------------------------------------------------- */

/* From the file when there is one (MuPDF then reads what it needs, so the
 * document is not held in memory), else from the bytes. */
static int open_document(reader_t *r, const dg__xrun_t *run, int *pages) {
  fz_context *ctx = r->ctx;
  fz_stream *stm = NULL;
  int rc = 0;
  fz_var(stm);
  fz_var(rc);
  fz_try(ctx) {
    if (run->in_file != NULL)
      stm = fz_open_file_ptr_no_close(ctx, run->in_file);
    else
      stm = fz_open_memory(ctx, run->in, run->in_len);
    r->doc = pdf_open_document_with_stream(ctx, stm);
    if (pdf_needs_password(ctx, r->doc) && !pdf_authenticate_password(ctx, r->doc, ""))
      rc = DG_ENOTSUP;
    else
      *pages = pdf_count_pages(ctx, r->doc);
  }
  fz_always(ctx) {
    fz_drop_stream(ctx, stm);
  }
  fz_catch(ctx) {
    return failure(r, "opening the PDF");
  }
  if (rc == 0 && *pages > 0)
    load_page_tree(r, *pages);
  if (rc != 0)
    return dg_errctx_set(&r->err, rc, "url", "the PDF is password-protected");
  if (*pages <= 0)
    return dg_errctx_set(&r->err, DG_EPROTO, "url", "the PDF has no pages (it is damaged)");
  return 0;
}

/* A context and the document, with memory capped at max_memory. */
static int reader_open(reader_t *r, dg__xrun_t *run, size_t max_memory, int *pages) {
  r->run = run;
  r->mem.max = max_memory;
  r->mem.run = run;
  r->alloc = (fz_alloc_context){&r->mem, mem_malloc, mem_realloc, mem_free};
  size_t store = STORE_BYTES < max_memory / 4 ? STORE_BYTES : max_memory / 4;
  r->ctx = fz_new_context(&r->alloc, NULL, store);
  if (r->ctx == NULL)
    return dg_errctx_set(&r->err, DG_E2BIG, "url",
                         "opening the PDF needs more than the limit of %zu MiB of memory",
                         max_memory >> 20);
  fz_set_user_context(r->ctx, r);
  r->texts.tick = tick;
  fz_set_warning_callback(r->ctx, quiet, NULL);
  fz_set_error_callback(r->ctx, quiet, NULL);
  return open_document(r, run, pages);
}

static void reader_close(reader_t *r) {
  if (r->ctx != NULL) {
    dg__pdf_text_free(r->ctx, &r->texts);
    if (r->page_tree)
      pdf_drop_page_tree(r->ctx, r->doc);
    pdf_drop_document(r->ctx, r->doc);
    fz_drop_context(r->ctx);
  }
  r->ctx = NULL;
  mem_release(&r->mem);
}

/* ---- The extractor ---------------------------------------------------------------------- */

static int pdf_open(dg__xrun_t *run) {
  pdf_state_t *st = run->state;
  int rc = reader_open(&st->main, run, run->limits.max_memory_bytes, &st->pages);
  if (rc == DG_ETIMEDOUT && dg__xrun_check(run) != 0)
    return run->err.code;
  if (rc != 0) {
    run->err = st->main.err;
    return rc;
  }
  return 0;
}

static int pdf_step(dg__xrun_t *run, bool *done) {
  pdf_state_t *st = run->state;
  int last = st->pages < (int)run->limits.max_units ? st->pages : (int)run->limits.max_units;
  int rc = read_pages(run, st, last);
  *done = st->next >= last;
  if (rc == 0 && *done && st->failed == st->next)
    return dg_errctx_set(&run->err, DG_EPROTO, "url", "no page of the PDF can be read: %s",
                         st->first_failure);
  if (rc == 0 && *done && last < st->pages)
    dg__xrun_cut(run, "only the first %d of %d pages were extracted", last, st->pages);
  return rc;
}

static void pdf_close(dg__xrun_t *run) {
  pdf_state_t *st = run->state;
  reader_close(&st->main);
}

const dg__extractor_t dg__extract_pdf = {
    .name = "pdf",
    .whole = true,
    .file = true,
    .state_size = sizeof(pdf_state_t),
    .open = pdf_open,
    .step = pdf_step,
    .close = pdf_close,
};
