/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for PDF: text page by page with page markers, reading order,
 * damaged and empty documents, nested and cyclic page trees, and the page,
 * memory and time limits. The PDFs are written by the tests
 * (extract_test.h). */
#include "extract_test.h"

#include "extract/internal.h"

static unsigned char *one_page(const char *content, size_t *len) {
  const char *pages[] = {content};
  return xt_pdf(pages, 1, len);
}

static void test_pages_in_order_with_markers(void **state) {
  const char *pages[] = {"BT /F1 12 Tf 72 700 Td (First page) Tj ET",
                         "BT /F1 12 Tf 72 700 Td (Caf\\351 cr\\350me) Tj ET", "",
                         "BT /F1 12 Tf 72 700 Td (Last) Tj ET"};
  size_t len = 0;
  unsigned char *d = xt_pdf(pages, 4, &len);
  dg_extract_doc_t *doc = xt_extract(DG_EXTRACT_UNKNOWN, NULL, d, len, NULL);
  assert_int_equal(dg_extract_doc_format(doc), DG_EXTRACT_PDF);
  assert_string_equal(dg_extract_doc_text(doc, NULL),
                      "--- Page 1 ---\nFirst page\n\n--- Page 2 ---\nCaf\xc3\xa9 cr\xc3\xa8me\n\n"
                      "--- Page 3 ---\n\n--- Page 4 ---\nLast");
  dg_extract_doc_unref(doc);
  free(d);
}

static void test_reading_order_top_down(void **state) {
  dg_buf_t page;
  dg_buf_init(&page, SIZE_MAX);
  /* Drawn bottom first: read top first. */
  xt_pdf_line(&page, 72, 100, "Bottom line");
  xt_pdf_line(&page, 72, 400, "Middle line");
  xt_pdf_line(&page, 72, 700, "Top line");
  size_t len = 0;
  unsigned char *d = one_page(page.data, &len);
  char *t = xt_text(DG_EXTRACT_PDF, NULL, d, len);
  assert_true(xt_find(t, "Top") < xt_find(t, "Middle"));
  assert_true(xt_find(t, "Middle") < xt_find(t, "Bottom"));
  free(t);
  free(d);
  dg_buf_free(&page);
}

static void test_reading_order_title_then_columns(void **state) {
  dg_buf_t page;
  dg_buf_init(&page, SIZE_MAX);
  /* The right column is drawn first and its lines interleave in y with the
   * left column's; a title spans both; a footer closes the page. */
  xt_pdf_line(&page, 320, 640, "Right one");
  xt_pdf_line(&page, 320, 626, "Right two");
  xt_pdf_line(&page, 320, 612, "Right three");
  xt_pdf_line(&page, 72, 640, "Left one");
  xt_pdf_line(&page, 72, 626, "Left two");
  xt_pdf_line(&page, 72, 612, "Left three");
  xt_pdf_line(&page, 72, 60, "Footer across the whole page width of the document here");
  xt_pdf_line(&page, 72, 720, "A title that runs across both of the columns below it");
  size_t len = 0;
  unsigned char *d = one_page(page.data, &len);
  char *t = xt_text(DG_EXTRACT_PDF, NULL, d, len);
  size_t title = xt_find(t, "A title"), l1 = xt_find(t, "Left one"), l3 = xt_find(t, "Left three"),
         r1 = xt_find(t, "Right one"), r3 = xt_find(t, "Right three"), foot = xt_find(t, "Footer");
  assert_true(title < l1);
  assert_true(l1 < l3 && l3 < r1);
  assert_true(r1 < r3 && r3 < foot);
  free(t);
  free(d);
  dg_buf_free(&page);
}

/* A PDF of the given objects, numbered from 1, with object 1 the catalog. */
static unsigned char *pdf_of(const char *const *objects, size_t n, size_t *len) {
  dg_buf_t out;
  size_t offsets[96] = {0};
  assert_true(n < DG_ARRAY_SIZE(offsets));
  dg_buf_init(&out, SIZE_MAX);
  assert_int_equal(dg_buf_append_str(&out, "%PDF-1.4\n"), 0);
  for (size_t i = 0; i < n; i++)
    xt_pdf_object(&out, offsets, i + 1, objects[i], strlen(objects[i]));
  size_t xref = out.len;
  assert_int_equal(dg_buf_appendf(&out, "xref\n0 %zu\n0000000000 65535 f \n", n + 1), 0);
  for (size_t i = 1; i <= n; i++)
    assert_int_equal(dg_buf_appendf(&out, "%010zu 00000 n \n", offsets[i]), 0);
  assert_int_equal(dg_buf_appendf(&out,
                                  "trailer\n<< /Size %zu /Root 1 0 R >>\nstartxref\n%zu\n%%%%EOF\n",
                                  n + 1, xref),
                   0);
  return (unsigned char *)dg_buf_steal(&out, len);
}

/* The text extracted from the PDF of these objects must be want. */
static void assert_pdf_text(const char *const *objects, size_t n, const char *want) {
  size_t len = 0;
  unsigned char *d = pdf_of(objects, n, &len);
  char *t = xt_text(DG_EXTRACT_PDF, NULL, d, len);
  assert_string_equal(t, want);
  free(t);
  free(d);
}

#define FONT "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>"
#define TEXT(s) "<< /Length 40 >>\nstream\nBT /F1 12 Tf 72 700 Td (" s ") Tj ET\nendstream"

/* Pages under intermediate nodes, in tree order, with the Resources and
 * MediaBox they inherit from their parents. */
static void test_nested_page_tree_inherits(void **state) {
  const char *objects[] = {
      "<< /Type /Catalog /Pages 2 0 R >>",
      "<< /Type /Pages /Kids [3 0 R 8 0 R] /Count 3 /MediaBox [0 0 612 792] >>",
      "<< /Type /Pages /Parent 2 0 R /Kids [4 0 R 5 0 R] /Count 2 "
      "/Resources << /Font << /F1 7 0 R >> >> >>",
      "<< /Type /Pages /Parent 3 0 R /Kids [6 0 R] /Count 1 >>",
      "<< /Type /Page /Parent 3 0 R /Contents 10 0 R >>",
      "<< /Type /Page /Parent 4 0 R /Contents 9 0 R >>",
      FONT,
      "<< /Type /Page /Parent 2 0 R /Resources << /Font << /F1 7 0 R >> >> "
      "/Contents 11 0 R >>",
      TEXT("Page AAAA"),
      TEXT("Page BBBB"),
      TEXT("Page CCCC"),
  };
  assert_pdf_text(objects, DG_ARRAY_SIZE(objects),
                  "--- Page 1 ---\nPage AAAA\n\n--- Page 2 ---\nPage BBBB\n\n"
                  "--- Page 3 ---\nPage CCCC");
}

/* A page tree that leads back to itself, or counts more pages than it
 * has, ends: the pages found are read, the others left empty, and a tree
 * with no page outside the cycle is a clear error. */
static void test_page_tree_with_a_cycle(void **state) {
  const char *objects[] = {
      "<< /Type /Catalog /Pages 2 0 R >>",
      "<< /Type /Pages /Kids [4 0 R 3 0 R] /Count 2 >>",
      "<< /Type /Pages /Parent 2 0 R /Kids [2 0 R] /Count 1 >>",
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
      "/Resources << /Font << /F1 5 0 R >> >> /Contents 6 0 R >>",
      FONT,
      TEXT("Page AAAA"),
  };
  assert_pdf_text(objects, DG_ARRAY_SIZE(objects), "--- Page 1 ---\nPage AAAA\n\n--- Page 2 ---\n");
  /* A count larger than the pages there are: the missing page is empty. */
  objects[1] = "<< /Type /Pages /Kids [4 0 R] /Count 2 >>";
  assert_pdf_text(objects, DG_ARRAY_SIZE(objects), "--- Page 1 ---\nPage AAAA\n\n--- Page 2 ---\n");
  /* Only the cycle. */
  objects[1] = "<< /Type /Pages /Kids [3 0 R] /Count 1 >>";
  size_t len = 0;
  unsigned char *d = pdf_of(objects, DG_ARRAY_SIZE(objects), &len);
  dg_errctx_t err;
  assert_int_equal(xt_fail(DG_EXTRACT_PDF, NULL, d, len, NULL, &err), DG_EPROTO);
  assert_true(xt_contains(err.message, "no page of the PDF can be read"));
  free(d);
}

/* A chain of levels page tree nodes above one page. */
static char *deep_tree(int levels) {
  enum { N = 90 };
  char bodies[N][128];
  const char *objects[N];
  int page = 2 + levels;
  assert_true(page + 2 < N);
  snprintf(bodies[0], sizeof(bodies[0]), "<< /Type /Catalog /Pages 2 0 R >>");
  for (int i = 0; i < levels; i++)
    snprintf(bodies[1 + i], sizeof(bodies[0]), "<< /Type /Pages /Kids [%d 0 R] /Count 1 >>", 3 + i);
  snprintf(bodies[page - 1], sizeof(bodies[0]),
           "<< /Type /Page /MediaBox [0 0 612 792] /Resources << /Font << /F1 %d 0 R >> >> "
           "/Contents %d 0 R >>",
           page + 1, page + 2);
  snprintf(bodies[page], sizeof(bodies[0]), "%s", FONT);
  snprintf(bodies[page + 1], sizeof(bodies[0]), "%s", TEXT("Page AAAA"));
  for (int i = 0; i < page + 2; i++)
    objects[i] = bodies[i];
  size_t len = 0;
  unsigned char *d = pdf_of(objects, (size_t)page + 2, &len);
  char *t = xt_text(DG_EXTRACT_PDF, NULL, d, len);
  free(d);
  return t;
}

/* A tree within the depth that is mapped and one beyond it, which MuPDF's
 * page map would walk recursively, read the same. */
static void test_deep_page_tree(void **state) {
  int depths[] = {1, 10, 63, 64, 80};
  for (size_t i = 0; i < DG_ARRAY_SIZE(depths); i++) {
    char *t = deep_tree(depths[i]);
    assert_string_equal(t, "--- Page 1 ---\nPage AAAA");
    free(t);
  }
}

static void test_damaged_pdfs(void **state) {
  dg_errctx_t err;
  const char junk[] = "%PDF-1.4\nthis is not a PDF at all\n%%EOF\n";
  assert_int_equal(xt_fail(DG_EXTRACT_PDF, NULL, junk, sizeof(junk) - 1, NULL, &err), DG_EPROTO);
  assert_true(xt_contains(err.message, "PDF"));
  assert_string_equal(err.param, "url");
  /* Not a PDF at all, declared as one. */
  assert_int_equal(
      xt_fail(DG_EXTRACT_UNKNOWN, "application/pdf", "<html>hi</html>", 15, NULL, &err), DG_EPROTO);
  /* No pages. */
  const char *none[] = {NULL};
  size_t len = 0;
  unsigned char *d = xt_pdf(none, 0, &len);
  assert_int_equal(xt_fail(DG_EXTRACT_PDF, NULL, d, len, NULL, &err), DG_EPROTO);
  assert_true(xt_contains(err.message, "no pages"));
  free(d);
  /* A broken cross-reference table is repaired. */
  d = one_page("BT /F1 12 Tf 72 700 Td (Still readable) Tj ET", &len);
  unsigned char *xref = (unsigned char *)strstr((char *)d, "xref\n");
  assert_non_null(xref);
  memset(xref + 5, '9', 20);
  char *t = xt_text(DG_EXTRACT_PDF, NULL, d, len);
  assert_true(xt_contains(t, "Still readable"));
  free(t);
  /* A download cut short. */
  dg_extract_request_t req = {.format = DG_EXTRACT_PDF};
  dg_extract_doc_t *doc = NULL;
  int rc = dg_extract_buffer(&req, d, len * 2 / 3, &doc, &err);
  assert_true(rc == 0 || rc == DG_EPROTO);
  if (rc != 0)
    assert_true(xt_contains(err.message, "PDF"));
  dg_extract_doc_unref(doc);
  free(d);
}

static void test_too_many_pages_are_cut(void **state) {
  const char *pages[] = {"BT /F1 12 Tf 72 700 Td (p1) Tj ET", "BT /F1 12 Tf 72 700 Td (p2) Tj ET",
                         "BT /F1 12 Tf 72 700 Td (p3) Tj ET", "BT /F1 12 Tf 72 700 Td (p4) Tj ET",
                         "BT /F1 12 Tf 72 700 Td (p5) Tj ET"};
  size_t len = 0;
  unsigned char *d = xt_pdf(pages, 5, &len);
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_units = 3;
  dg_extract_doc_t *doc = xt_extract(DG_EXTRACT_PDF, NULL, d, len, &limits);
  const char *t = dg_extract_doc_text(doc, NULL);
  assert_true(xt_contains(t, "p3"));
  assert_null(strstr(t, "p4"));
  assert_string_equal(dg_extract_doc_truncated(doc), "only the first 3 of 5 pages were extracted");
  dg_extract_doc_unref(doc);
  free(d);
}

/* Long enough for two threads: every page in order, each with its own
 * text, an odd count so that the last page is read alone, and a damaged
 * page on either side left empty. */
static void test_pages_read_two_at_a_time_stay_in_order(void **state) {
  char texts[11][64];
  const char *pages[11];
  for (int i = 0; i < 11; i++) {
    snprintf(texts[i], sizeof(texts[i]), "BT /F1 12 Tf 72 700 Td (page %d) Tj ET", i + 1);
    pages[i] = texts[i];
  }
  pages[4] = "BT /F1 12 Tf 72 700 Td (unclosed"; /* page 5, a damaged stream */
  size_t len = 0;
  unsigned char *d = xt_pdf(pages, 11, &len);
  dg_extract_doc_t *doc = xt_extract(DG_EXTRACT_PDF, NULL, d, len, NULL);
  const char *t = dg_extract_doc_text(doc, NULL);
  size_t at = 0;
  for (int i = 0; i < 11; i++) {
    char marker[32], body[32];
    snprintf(marker, sizeof(marker), "--- Page %d ---\n", i + 1);
    snprintf(body, sizeof(body), "page %d", i + 1);
    size_t m = xt_find(t, marker);
    assert_true(m >= at);
    at = m;
    if (i != 4)
      assert_int_equal(xt_find(t, body), m + strlen(marker));
  }
  assert_null(strstr(t, "page 5"));
  dg_extract_doc_unref(doc);
  free(d);
}

static size_t page_markers(const dg_buf_t *text) {
  size_t n = 0;
  for (const char *p = text->data; p != NULL && (p = strstr(p, "--- Page ")) != NULL; p++)
    n++;
  return n;
}

/* A threadpool step reads at most max_pages_per_step pages, and at least
 * one; the pages come whole and in order. Steps may end sooner on the
 * clock, never later. */
static void test_a_step_reads_at_most_the_pages_allowed(void **state) {
  char texts[11][64];
  const char *pages[11];
  for (int i = 0; i < 11; i++) {
    snprintf(texts[i], sizeof(texts[i]), "BT /F1 12 Tf 72 700 Td (page %d) Tj ET", i + 1);
    pages[i] = texts[i];
  }
  size_t len = 0;
  unsigned char *d = xt_pdf(pages, 11, &len);
  for (unsigned most = 0; most <= 3; most++) {
    dg_extract_limits_t limits;
    dg_extract_limits_default(&limits);
    limits.max_pages_per_step = most;
    dg__xrun_t run;
    assert_int_equal(dg__xrun_init(&run, DG_EXTRACT_PDF, &limits, NULL), 0);
    run.in = d;
    run.in_len = len;
    run.in_last = true;
    size_t read = 0, steps = 0;
    while (!run.done) {
      assert_int_equal(dg__xrun_step(&run), 0);
      size_t now = page_markers(&run.text);
      assert_true(now > read);
      assert_true(now - read <= (most > 0 ? most : 1));
      read = now;
      steps++;
    }
    assert_int_equal(read, 11);
    assert_true(steps >= (most > 0 ? (11 + most - 1) / most : 11));
    dg_extract_doc_t *doc = dg__xrun_finish(&run);
    assert_non_null(doc);
    char *want = xt_text(DG_EXTRACT_PDF, NULL, d, len);
    assert_string_equal(dg_extract_doc_text(doc, NULL), want);
    free(want);
    dg_extract_doc_unref(doc);
    dg__xrun_free(&run);
  }
  free(d);
}

static void test_memory_limit(void **state) {
  size_t len = 0;
  unsigned char *d = one_page("BT /F1 12 Tf 72 700 Td (x) Tj ET", &len);
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_memory_bytes = 64 << 10;
  dg_errctx_t err;
  assert_int_equal(xt_fail(DG_EXTRACT_PDF, NULL, d, len, &limits, &err), DG_E2BIG);
  assert_true(xt_contains(err.message, "memory"));
  free(d);
}

/* A one-page PDF of the content in page, read with no time at all, stops
 * with the time limit's error; page is freed. */
static void assert_page_times_out(dg_buf_t *page) {
  size_t len = 0;
  unsigned char *d = one_page(page->data, &len);
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_time_ms = 0;
  dg_errctx_t err;
  assert_int_equal(xt_fail(DG_EXTRACT_PDF, NULL, d, len, &limits, &err), DG_ETIMEDOUT);
  assert_true(xt_contains(err.message, "longer than the limit of 0 ms"));
  free(d);
  dg_buf_free(page);
}

static void test_time_limit_stops_a_heavy_page(void **state) {
  dg_buf_t page;
  dg_buf_init(&page, SIZE_MAX);
  for (int i = 0; i < 300000; i++)
    assert_int_equal(dg_buf_appendf(&page, "%d 0 m %d 5 l S\n", i % 600, i % 600), 0);
  assert_page_times_out(&page);
}

/* ---- Text operators ----------------------------------------------------------------
 * Each PDF below has one page with the content given, the Helvetica font
 * F1 (object 3) and the objects given from object 6 on. The texts expected
 * are the ones MuPDF's structured-text device gives for the same pages. */

/* A stream object of the content, with its dictionary's other entries. */
static char *stream_object(const char *dict, const char *content) {
  dg_buf_t b;
  dg_buf_init(&b, SIZE_MAX);
  assert_int_equal(dg_buf_appendf(&b, "<< %s /Length %zu >>\nstream\n%s\nendstream", dict,
                                  strlen(content), content),
                   0);
  return dg_buf_steal(&b, NULL);
}

/* The text of a one-page PDF. page_extra goes into the page dictionary. */
static char *page_text(const char *content, const char *resources, const char *page_extra,
                       const char *const *extra, size_t n_extra) {
  char page[1024];
  snprintf(page, sizeof(page),
           "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 "
           "R >> %s >> /Contents 5 0 R %s >>",
           resources, page_extra);
  char *contents = stream_object("", content);
  const char *objects[48] = {"<< /Type /Catalog /Pages 2 0 R >>",
                             "<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
                             "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
                             "/Encoding /WinAnsiEncoding >>",
                             page, contents};
  assert_true(5 + n_extra <= DG_ARRAY_SIZE(objects));
  for (size_t i = 0; i < n_extra; i++)
    objects[5 + i] = extra[i];
  size_t len = 0;
  unsigned char *d = pdf_of(objects, 5 + n_extra, &len);
  char *t = xt_text(DG_EXTRACT_PDF, NULL, d, len);
  free(d);
  free(contents);
  return t;
}

/* The text of a page whose content draws form XObjects, objects 6 on:
 * each form is its dictionary and its content. */
typedef struct form_xobject {
  const char *dict, *content;
} form_xobject_t;

/* The text of a page drawing the n forms its xobjects name must be want. */
static void assert_forms_text(const char *content, const char *xobjects,
                              const form_xobject_t *forms, size_t n, const char *want) {
  char *objects[4];
  assert_true(n <= DG_ARRAY_SIZE(objects));
  for (size_t i = 0; i < n; i++)
    objects[i] = stream_object(forms[i].dict, forms[i].content);
  char *t = page_text(content, xobjects, "", (const char *const *)objects, n);
  for (size_t i = 0; i < n; i++)
    free(objects[i]);
  assert_string_equal(t, want);
  free(t);
}

static void assert_page_text(const char *content, const char *want) {
  char *t = page_text(content, "", "", NULL, 0);
  assert_string_equal(t, want);
  free(t);
}

/* TJ's adjustments move the text: a wide one is a space between words, a
 * narrow one (kerning) is not. */
static void test_tj_kerning_and_spaces(void **state) {
  assert_page_text("BT /F1 12 Tf 72 700 Td [(Hello)-600(world)] TJ ET "
                   "BT /F1 12 Tf 72 650 Td [(Ke)-100(rned)] TJ ET",
                   "--- Page 1 ---\nHello world\n\nKerned");
}

/* Horizontal scaling, character and word spacing and rise move the glyphs
 * as they do when drawn: letters spaced by half the font size read apart. */
static void test_tz_tc_tw_ts(void **state) {
  assert_page_text("BT /F1 12 Tf 50 Tz 72 700 Td (Squeezed words here) Tj ET "
                   "BT /F1 12 Tf 1 Tc 72 650 Td (Loose letters) Tj ET "
                   "BT /F1 12 Tf 6 Tc 72 600 Td (Wide) Tj ET "
                   "BT /F1 12 Tf 0 Tc 10 Tw 72 550 Td (Word spaced text) Tj ET "
                   "BT /F1 12 Tf 200 Tz 72 500 Td (Stretched) Tj ET "
                   "BT /F1 12 Tf 72 450 Td (Rise) Tj 4 Ts (up) Tj ET",
                   "--- Page 1 ---\nSqueezed words here\n\nLoose letters\n\nW i d e\n\n"
                   "Word spaced text\n\nStretched\n\nRiseup");
}

/* A form XObject's text is read with its matrix and resources, or the
 * page's resources when it has none. */
static void test_form_xobject_text(void **state) {
  const form_xobject_t forms[] = {
      {"/Type /XObject /Subtype /Form /BBox [0 0 600 800] /Matrix [1 0 0 1 0 300] /Resources << "
       "/Font << /F1 3 0 R >> >>",
       "BT /F1 12 Tf 72 100 Td (Text in a form) Tj ET"},
      {"/Type /XObject /Subtype /Form /BBox [0 0 600 800]",
       "BT /F1 10 Tf 72 100 Td (Form without resources) Tj ET"},
  };
  assert_forms_text("BT /F1 12 Tf 72 700 Td (Page text) Tj ET q 1 0 0 1 0 -100 cm /Fm1 Do Q /Fm2 "
                    "Do",
                    "/XObject << /Fm1 6 0 R /Fm2 7 0 R >>", forms, 2,
                    "--- Page 1 ---\nPage text\n\nText in a form\n\nForm without resources");
}

/* A form drawn when the graphics states are saved as deep as they go
 * leaves the matrix it drew with behind: the next line still continues the
 * block (with the form's doubled matrix kept, it would start another). */
static void test_form_xobject_with_full_stack(void **state) {
  const form_xobject_t form = {"/Type /XObject /Subtype /Form /BBox [0 0 600 800] /Matrix [2 0 0 "
                               "2 0 0]",
                               "0 0 0 RG"};
  char content[2048];
  size_t n = (size_t)snprintf(content, sizeof(content), "BT /F1 12 Tf 72 700 Td (Before) Tj ET ");
  for (int i = 0; i < 300; i++)
    n += (size_t)snprintf(content + n, sizeof(content) - n, "q ");
  snprintf(content + n, sizeof(content) - n, "/Fm1 Do BT /F1 12 Tf 72 686 Td (After) Tj ET");
  assert_forms_text(content, "/XObject << /Fm1 6 0 R >>", &form, 1,
                    "--- Page 1 ---\nBefore\nAfter");
}

/* A form that draws itself is read once; a chain of forms deeper than the
 * bound is read down to the bound. Neither hangs. */
static void test_form_xobject_recursion(void **state) {
  const form_xobject_t self = {"/Type /XObject /Subtype /Form /BBox [0 0 600 800] /Resources << "
                               "/Font << /F1 3 0 R >> /XObject << /Fm1 6 0 R >> >>",
                               "BT /F1 12 Tf 72 100 Td (Loop) Tj ET 0 0 0 RG /Fm1 Do"};
  assert_forms_text("/Fm1 Do BT /F1 12 Tf 72 700 Td (After) Tj ET", "/XObject << /Fm1 6 0 R >>",
                    &self, 1, "--- Page 1 ---\nAfter\n\nLoop");
  /* Forms 6 to 45, each showing its number 10 points lower and drawing
   * the next; the last draws the first. Forms are read 32 deep. */
  enum { N = 40 };
  char *chain[N];
  for (int i = 0; i < N; i++) {
    char dict[160], content[160];
    snprintf(dict, sizeof(dict),
             "/Type /XObject /Subtype /Form /BBox [0 0 600 800] /Matrix [1 0 0 1 0 -10] "
             "/Resources << /Font << /F1 3 0 R >> /XObject << /Fx %d 0 R >> >>",
             i + 1 < N ? 7 + i : 6);
    snprintf(content, sizeof(content), "BT /F1 8 Tf 72 700 Td (Level %d) Tj ET /Fx Do", i + 1);
    chain[i] = stream_object(dict, content);
  }
  char *t = page_text("/Fx Do", "/XObject << /Fx 6 0 R >>", "", (const char *const *)chain, N);
  assert_true(xt_contains(t, "Level 1\n"));
  assert_true(xt_contains(t, "Level 32"));
  assert_null(strstr(t, "Level 33"));
  for (int i = 0; i < N; i++)
    free(chain[i]);
  free(t);
}

/* A rotated page reads as the page is shown, and text drawn upwards or
 * at an angle reads whole, each direction a block of its own. */
static void test_rotated_page_and_text(void **state) {
  char *t = page_text("BT /F1 12 Tf 72 700 Td (Rotated page line one) Tj 0 -14 Td (line two) "
                      "Tj ET",
                      "", "/Rotate 90", NULL, 0);
  assert_string_equal(t, "--- Page 1 ---\nRotated page line one\nline two");
  free(t);
  assert_page_text("BT /F1 12 Tf 0 1 -1 0 300 200 Tm (Going up the page) Tj ET "
                   "BT /F1 12 Tf 0.7071 0.7071 -0.7071 0.7071 100 100 Tm (Diagonal text) Tj ET "
                   "BT /F1 12 Tf 72 700 Td (Upright) Tj ET",
                   "--- Page 1 ---\nUpright\n\nGoing up the page\n\nDiagonal text");
}

/* A Type3 font's glyphs are placed with its widths and FontMatrix, and
 * read through its encoding's glyph names. */
static void test_type3_font(void **state) {
  char *a = stream_object("", "600 0 0 0 500 700 d1 0 0 m 500 0 l 500 700 l h f");
  char *b = stream_object("", "700 0 d0 0 0 600 700 re f");
  const char *extra[] = {
      "<< /Type /Font /Subtype /Type3 /FontBBox [0 0 1000 1000] /FontMatrix [0.001 0 0 0.001 0 "
      "0] /CharProcs << /a 7 0 R /b 8 0 R >> /Encoding << /Type /Encoding /Differences [97 /a "
      "/b] >> /FirstChar 97 /LastChar 98 /Widths [600 700] /Resources << >> >>",
      a, b};
  char *t = page_text("BT /T3 12 Tf 72 700 Td (abba ab) Tj ET BT /T3 24 Tf 72 600 Td (ba) Tj ET",
                      "/Font << /F1 3 0 R /T3 6 0 R >>", "", extra, 3);
  assert_string_equal(t, "--- Page 1 ---\nabba ab\n\nba");
  free(t);
  free(a);
  free(b);
}

#define CMAP_HEAD "/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /X def "
#define CMAP_TAIL " endcmap CMapName currentdict /CMap defineresource pop end end"

/* ToUnicode maps codes to characters, one code to several, and a
 * ligature is split into its letters. */
static void test_font_with_tounicode(void **state) {
  char *cmap = stream_object("", CMAP_HEAD "1 begincodespacerange <00> <FF> endcodespacerange "
                                           "3 beginbfchar <41> <0042> <43> <00660069> <44> "
                                           "<FB01> endbfchar" CMAP_TAIL);
  const char *extra[] = {"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode 7 0 R >>",
                         cmap};
  char *t = page_text("BT /F2 12 Tf 72 700 Td (AACD xyz) Tj ET", "/Font << /F1 3 0 R /F2 6 0 R >>",
                      "", extra, 2);
  assert_string_equal(t, "--- Page 1 ---\nBBfifi xyz");
  free(t);
  free(cmap);
}

/* Two-byte codes of a CID font, written across and down the page. */
static void test_cid_font_horizontal_and_vertical(void **state) {
  char *cmap = stream_object("", CMAP_HEAD "1 begincodespacerange <0000> <FFFF> "
                                           "endcodespacerange 1 beginbfrange <0020> <007E> <0020> "
                                           "endbfrange" CMAP_TAIL);
  const char *extra[] = {
      "<< /Type /Font /Subtype /Type0 /BaseFont /Helvetica /Encoding /Identity-H "
      "/DescendantFonts [8 0 R] /ToUnicode 9 0 R >>",
      "<< /Type /Font /Subtype /Type0 /BaseFont /Helvetica /Encoding /Identity-V "
      "/DescendantFonts [8 0 R] /ToUnicode 9 0 R >>",
      "<< /Type /Font /Subtype /CIDFontType0 /BaseFont /Helvetica /CIDSystemInfo << /Registry "
      "(Adobe) /Ordering (Identity) /Supplement 0 >> /DW 600 /W [32 [278] 72 [722 556]] "
      "/FontDescriptor << /Type /FontDescriptor /FontName /Helvetica /Flags 32 /FontBBox [0 -200 "
      "1000 900] /ItalicAngle 0 /Ascent 900 /Descent -200 /CapHeight 700 /StemV 80 >> >>",
      cmap};
  const char *fonts = "/Font << /F1 3 0 R /F2 6 0 R /F3 7 0 R >>";
  char *t = page_text("BT /F2 12 Tf 72 700 Td <00480065006C006C006F0020007700680065006C0065> Tj ET",
                      fonts, "", extra, 4);
  assert_string_equal(t, "--- Page 1 ---\nHello whele");
  free(t);
  t = page_text("BT /F3 12 Tf 300 700 Td <0054006F0070> Tj ET "
                "BT /F1 12 Tf 72 700 Td (Horizontal) Tj ET",
                fonts, "", extra, 4);
  assert_string_equal(t, "--- Page 1 ---\nHorizontal\n\nTop");
  free(t);
  free(cmap);
}

/* A word hyphenated at the end of a line is joined; a dash alone is not. */
static void test_dehyphenation_across_lines(void **state) {
  assert_page_text("BT /F1 12 Tf 14 TL 72 700 Td (A word split by a hyph-) Tj T* "
                   "(enation across lines) Tj T* (and a dash -) Tj T* (- alone) Tj ET",
                   "--- Page 1 ---\nA word split by a hyphenation across lines\n"
                   "and a dash - alone");
}

/* Invisible and clipping text is read; text in optional content that is
 * off is not; text drawn twice in place is read once per drawing. */
static void test_render_modes_and_hidden_content(void **state) {
  assert_page_text("BT /F1 12 Tf 72 700 Td 3 Tr (Invisible) Tj 0 -20 Td 2 Tr (FillStroke) Tj "
                   "0 -20 Td 7 Tr (Clip) Tj ET",
                   "--- Page 1 ---\nInvisible\n\nFillStroke\n\nClip");
  const char *objects[] = {
      "<< /Type /Catalog /Pages 2 0 R /OCProperties << /OCGs [6 0 R] /D << /OFF [6 0 R] >> >> "
      ">>",
      "<< /Type /Pages /Kids [4 0 R] /Count 1 >>",
      "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
      "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 3 0 R >> "
      "/Properties << /oc1 6 0 R >> >> /Contents 5 0 R >>",
      NULL,
      "<< /Type /OCG /Name (L) >>",
  };
  char *contents = stream_object("", "/OC /oc1 BDC BT /F1 12 Tf 72 700 Td (Hidden) Tj ET EMC "
                                     "BT /F1 12 Tf 72 650 Td (Shown) Tj ET");
  objects[4] = contents;
  assert_pdf_text(objects, DG_ARRAY_SIZE(objects), "--- Page 1 ---\nShown");
  free(contents);
}

/* A text object that starts indented under the line above starts a
 * paragraph; one that does not continues it. */
static void test_indented_text_object_starts_a_block(void **state) {
  assert_page_text("BT /F1 12 Tf 72 700 Td (First paragraph line one) Tj ET "
                   "BT /F1 12 Tf 72 686 Td (line two) Tj ET "
                   "BT /F1 12 Tf 100 672 Td (Indented new paragraph) Tj ET",
                   "--- Page 1 ---\nFirst paragraph line one\nline two\n\nIndented new paragraph");
}

/* A page with an annotation is read with the annotation's appearance. */
static void test_annotation_text(void **state) {
  char *ap = stream_object("/Type /XObject /Subtype /Form /BBox [0 0 228 30] /Resources << /Font "
                           "<< /F1 3 0 R >> >>",
                           "BT /F1 12 Tf 2 10 Td (Annotation text) Tj ET");
  const char *extra[] = {"<< /Type /Annot /Subtype /FreeText /Rect [72 500 300 530] /Contents "
                         "(Note) /DA (/Helv 12 Tf 0 g) /AP << /N 7 0 R >> >>",
                         ap};
  char *t = page_text("BT /F1 12 Tf 72 700 Td (Body) Tj ET", "", "/Annots [6 0 R]", extra, 2);
  assert_string_equal(t, "--- Page 1 ---\nBody\n\nAnnotation text");
  free(t);
  free(ap);
}

/* A page with more fonts than are kept described from page to page: the
 * ones past the table are described as they are used, and read the same. */
static void test_more_fonts_than_the_table_holds(void **state) {
  enum { N = 40 };
  char *fonts[N];
  dg_buf_t content, resources, want;
  dg_buf_init(&content, SIZE_MAX);
  dg_buf_init(&resources, SIZE_MAX);
  dg_buf_init(&want, SIZE_MAX);
  assert_int_equal(dg_buf_append_str(&resources, "/Font << /F1 3 0 R"), 0);
  assert_int_equal(dg_buf_append_str(&want, "--- Page 1 ---"), 0);
  for (int i = 0; i < N; i++) {
    dg_buf_t f;
    dg_buf_init(&f, SIZE_MAX);
    assert_int_equal(dg_buf_appendf(&f,
                                    "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica "
                                    "/Encoding /WinAnsiEncoding /Name /G%d >>",
                                    i),
                     0);
    fonts[i] = dg_buf_steal(&f, NULL);
    assert_int_equal(dg_buf_appendf(&resources, " /G%d %d 0 R", i, 6 + i), 0);
    /* The last fonts take turns, so the one described last changes. */
    int font = i < N - 4 ? i : N - 4 + (i % 2);
    assert_int_equal(
        dg_buf_appendf(&content, "BT /G%d 12 Tf 72 %d Td (Font %d) Tj ET\n", font, 770 - 19 * i, i),
        0);
    assert_int_equal(dg_buf_appendf(&want, "%sFont %d", i == 0 ? "\n" : "\n\n", i), 0);
  }
  assert_int_equal(dg_buf_append_str(&resources, " >>"), 0);
  char *t = page_text(content.data, resources.data, "", (const char *const *)fonts, N);
  assert_string_equal(t, want.data);
  free(t);
  for (int i = 0; i < N; i++)
    free(fonts[i]);
  dg_buf_free(&content);
  dg_buf_free(&resources);
  dg_buf_free(&want);
}

static void test_time_limit_stops_a_page_of_text(void **state) {
  dg_buf_t page;
  dg_buf_init(&page, SIZE_MAX);
  assert_int_equal(dg_buf_append_str(&page, "BT /F1 12 Tf 72 700 Td\n"), 0);
  for (int i = 0; i < 100000; i++)
    assert_int_equal(dg_buf_append_str(&page, "[(abc) -20 (def)] TJ\n"), 0);
  assert_int_equal(dg_buf_append_str(&page, "ET\n"), 0);
  assert_page_times_out(&page);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_pages_in_order_with_markers),
      cmocka_unit_test(test_reading_order_top_down),
      cmocka_unit_test(test_reading_order_title_then_columns),
      cmocka_unit_test(test_damaged_pdfs),
      cmocka_unit_test(test_nested_page_tree_inherits),
      cmocka_unit_test(test_page_tree_with_a_cycle),
      cmocka_unit_test(test_deep_page_tree),
      cmocka_unit_test(test_too_many_pages_are_cut),
      cmocka_unit_test(test_pages_read_two_at_a_time_stay_in_order),
      cmocka_unit_test(test_a_step_reads_at_most_the_pages_allowed),
      cmocka_unit_test(test_memory_limit),
      cmocka_unit_test(test_time_limit_stops_a_heavy_page),
      cmocka_unit_test(test_tj_kerning_and_spaces),
      cmocka_unit_test(test_tz_tc_tw_ts),
      cmocka_unit_test(test_form_xobject_text),
      cmocka_unit_test(test_form_xobject_recursion),
      cmocka_unit_test(test_form_xobject_with_full_stack),
      cmocka_unit_test(test_rotated_page_and_text),
      cmocka_unit_test(test_type3_font),
      cmocka_unit_test(test_font_with_tounicode),
      cmocka_unit_test(test_cid_font_horizontal_and_vertical),
      cmocka_unit_test(test_dehyphenation_across_lines),
      cmocka_unit_test(test_render_modes_and_hidden_content),
      cmocka_unit_test(test_indented_text_object_starts_a_block),
      cmocka_unit_test(test_annotation_text),
      cmocka_unit_test(test_more_fonts_than_the_table_holds),
      cmocka_unit_test(test_time_limit_stops_a_page_of_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
