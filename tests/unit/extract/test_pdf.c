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
  size_t len = 0;
  unsigned char *d = pdf_of(objects, DG_ARRAY_SIZE(objects), &len);
  char *t = xt_text(DG_EXTRACT_PDF, NULL, d, len);
  assert_string_equal(t, "--- Page 1 ---\nPage AAAA\n\n--- Page 2 ---\nPage BBBB\n\n"
                         "--- Page 3 ---\nPage CCCC");
  free(t);
  free(d);
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
  size_t len = 0;
  unsigned char *d = pdf_of(objects, DG_ARRAY_SIZE(objects), &len);
  char *t = xt_text(DG_EXTRACT_PDF, NULL, d, len);
  assert_string_equal(t, "--- Page 1 ---\nPage AAAA\n\n--- Page 2 ---\n");
  free(t);
  free(d);
  /* A count larger than the pages there are: the missing page is empty. */
  objects[1] = "<< /Type /Pages /Kids [4 0 R] /Count 2 >>";
  d = pdf_of(objects, DG_ARRAY_SIZE(objects), &len);
  t = xt_text(DG_EXTRACT_PDF, NULL, d, len);
  assert_string_equal(t, "--- Page 1 ---\nPage AAAA\n\n--- Page 2 ---\n");
  free(t);
  free(d);
  /* Only the cycle. */
  objects[1] = "<< /Type /Pages /Kids [3 0 R] /Count 1 >>";
  d = pdf_of(objects, DG_ARRAY_SIZE(objects), &len);
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

static void test_time_limit_stops_a_heavy_page(void **state) {
  dg_buf_t page;
  dg_buf_init(&page, SIZE_MAX);
  for (int i = 0; i < 300000; i++)
    assert_int_equal(dg_buf_appendf(&page, "%d 0 m %d 5 l S\n", i % 600, i % 600), 0);
  size_t len = 0;
  unsigned char *d = one_page(page.data, &len);
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_time_ms = 0;
  dg_errctx_t err;
  assert_int_equal(xt_fail(DG_EXTRACT_PDF, NULL, d, len, &limits, &err), DG_ETIMEDOUT);
  assert_true(xt_contains(err.message, "longer than the limit of 0 ms"));
  free(d);
  dg_buf_free(&page);
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
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
