/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for DOCX: paragraphs, tables as rows of cells, headers,
 * footers and footnotes, what is left out, and progressive reading. */
#include "extract_test.h"

#include "extract/internal.h"

static char *docx_text(const unsigned char *data, size_t len) {
  dg_extract_doc_t *doc = xt_extract(DG_EXTRACT_UNKNOWN, NULL, data, len, NULL);
  assert_int_equal(dg_extract_doc_format(doc), DG_EXTRACT_DOCX);
  char *t = strdup(dg_extract_doc_text(doc, NULL));
  dg_extract_doc_unref(doc);
  return t;
}

static void test_paragraphs_runs_and_breaks(void **state) {
  size_t len = 0;
  unsigned char *d = xt_docx(
      "<w:p><w:pPr><w:tabs><w:tab w:val=\"left\" w:pos=\"720\"/></w:tabs></w:pPr>"
      "<w:r><w:t>Hello</w:t></w:r><w:r><w:t xml:space=\"preserve\"> w\xc3\xb6rld</w:t></w:r></w:p>"
      "<w:p><w:r><w:t>tab</w:t><w:tab/><w:t>bed</w:t><w:br/><w:t>next</w:t>"
      "<w:noBreakHyphen/><w:t>line</w:t></w:r></w:p><w:p/><w:p>"
      "<w:r><w:fldChar w:fldCharType=\"begin\"/></w:r><w:r><w:instrText>PAGE</w:instrText></w:r>"
      "<w:del><w:r><w:delText>gone</w:delText></w:r></w:del><w:ins><w:r><w:t>added</w:t></w:r>"
      "</w:ins></w:p><w:p><mc:AlternateContent><mc:Choice Requires=\"wps\"><w:r><w:t>box</w:t>"
      "</w:r></mc:Choice><mc:Fallback><w:r><w:t>box again</w:t></w:r></mc:Fallback>"
      "</mc:AlternateContent></w:p>",
      &len);
  char *t = docx_text(d, len);
  assert_string_equal(t, "Hello w\xc3\xb6rld\n\ntab bed\nnext-line\n\nadded\n\nbox");
  free(t);
  free(d);
}

static void test_tables_are_rows_of_cells(void **state) {
  size_t len = 0;
  unsigned char *d =
      xt_docx("<w:p><w:r><w:t>Before</w:t></w:r></w:p><w:tbl><w:tblPr/><w:tblGrid/>"
              "<w:tr><w:tc><w:p><w:r><w:t>Item</w:t></w:r></w:p></w:tc>"
              "<w:tc><w:p><w:r><w:t>Qty</w:t></w:r></w:p></w:tc></w:tr>"
              "<w:tr><w:tc><w:p><w:r><w:t>Bolt</w:t></w:r></w:p><w:p><w:r><w:t>M8</w:t></w:r>"
              "</w:p></w:tc><w:tc><w:tbl><w:tr><w:tc><w:p><w:r><w:t>in</w:t></w:r></w:p></w:tc>"
              "<w:tc><w:p><w:r><w:t>ner</w:t></w:r></w:p></w:tc></w:tr></w:tbl></w:tc></w:tr>"
              "</w:tbl><w:p><w:r><w:t>After</w:t></w:r></w:p>",
              &len);
  char *t = docx_text(d, len);
  assert_string_equal(t, "Before\n\nItem | Qty\nBolt M8 |\n\nin | ner\n\nAfter");
  free(t);
  free(d);
}

static void test_headers_footers_and_notes(void **state) {
  xt_zip_t z;
  static const char *const root[] = {"officeDocument", "/word/document.xml"};
  static const char *const parts[] = {"footer",    "footer1.xml",   "header",   "header1.xml",
                                      "footnotes", "footnotes.xml", "endnotes", "endnotes.xml",
                                      "header",    "header2.xml",   "styles",   "styles.xml"};
  xt_zip_begin(&z);
  xt_zip_content_types(&z);
  xt_zip_rels(&z, "_rels/.rels", root, 1);
  xt_zip_rels(&z, "word/_rels/document.xml.rels", parts, 6);
  xt_zip_add_str(&z, "word/document.xml",
                 "<w:document " XT_W_NS "><w:body><w:p><w:r><w:t>Body</w:t></w:r><w:r>"
                 "<w:footnoteReference w:id=\"1\"/></w:r><w:r><w:t> text</w:t></w:r></w:p>"
                 "</w:body></w:document>");
  xt_zip_add_str(&z, "word/header1.xml",
                 "<w:hdr " XT_W_NS "><w:p><w:r><w:t>Head one</w:t></w:r></w:p></w:hdr>");
  xt_zip_add_str(&z, "word/header2.xml", "<w:hdr " XT_W_NS "><w:p/></w:hdr>");
  xt_zip_add_str(&z, "word/footer1.xml",
                 "<w:ftr " XT_W_NS "><w:p><w:r><w:t>Page foot</w:t></w:r></w:p></w:ftr>");
  xt_zip_add_str(&z, "word/footnotes.xml",
                 "<w:footnotes " XT_W_NS "><w:footnote w:type=\"separator\" w:id=\"-1\"><w:p>"
                 "<w:r><w:separator/></w:r></w:p></w:footnote><w:footnote w:id=\"1\"><w:p><w:r>"
                 "<w:footnoteRef/></w:r><w:r><w:t>The note.</w:t></w:r></w:p></w:footnote>"
                 "</w:footnotes>");
  xt_zip_add_str(&z, "word/endnotes.xml",
                 "<w:endnotes " XT_W_NS "><w:endnote w:type=\"continuationSeparator\" "
                 "w:id=\"0\"><w:p><w:r><w:t>sep</w:t></w:r></w:p></w:endnote></w:endnotes>");
  xt_zip_add_str(&z, "word/styles.xml", "<w:styles " XT_W_NS "><w:t>style</w:t></w:styles>");
  size_t len = 0;
  unsigned char *d = xt_zip_finish(&z, &len);
  char *t = docx_text(d, len);
  assert_string_equal(t, "--- Header ---\nHead one\n\nBody[1] text\n\n--- Footnotes ---\n"
                         "[1] The note.\n\n--- Footer ---\nPage foot");
  free(t);
  free(d);
}

static void test_long_body_is_read_in_several_steps(void **state) {
  dg_buf_t body;
  dg_buf_init(&body, SIZE_MAX);
  for (int i = 0; i < 40000; i++)
    assert_int_equal(dg_buf_appendf(&body, "<w:p><w:r><w:t>p%d</w:t></w:r></w:p>", i), 0);
  size_t len = 0;
  unsigned char *d = xt_docx(body.data, &len);
  dg__xrun_t run;
  assert_int_equal(dg__xrun_init(&run, DG_EXTRACT_DOCX, NULL, NULL), 0);
  run.in = d;
  run.in_len = len;
  run.in_last = true;
  int steps = 0;
  size_t first = 0;
  while (!run.done) {
    assert_int_equal(dg__xrun_step(&run), 0);
    if (steps++ == 0)
      first = run.text.len;
  }
  assert_true(steps > 1);
  assert_true(first > 0 && first < run.text.len);
  assert_true(xt_contains(run.text.data, "p39999"));
  assert_int_equal(xt_find(run.text.data, "p0\n\np1\n"), 0);
  dg__xrun_free(&run);
  dg_buf_free(&body);
  free(d);
}

static void test_attribute_limit(void **state) {
  dg_buf_t body;
  dg_buf_init(&body, SIZE_MAX);
  assert_int_equal(dg_buf_append_str(&body, "<w:p><w:r><w:t"), 0);
  for (unsigned i = 0; i < 200000; i++)
    assert_int_equal(dg_buf_appendf(&body, " a%u=\"1\"", i), 0);
  assert_int_equal(dg_buf_append_str(&body, ">x</w:t></w:r></w:p>"), 0);
  size_t len = 0;
  unsigned char *d = xt_docx(body.data, &len);
  dg_errctx_t err;
  assert_int_equal(xt_fail(DG_EXTRACT_UNKNOWN, NULL, d, len, NULL, &err), DG_E2BIG);
  assert_true(xt_contains(err.message, "word/document.xml has an element with more than the "
                                       "limit of 1024 attributes"));
  dg_buf_free(&body);
  free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_paragraphs_runs_and_breaks),
      cmocka_unit_test(test_tables_are_rows_of_cells),
      cmocka_unit_test(test_headers_footers_and_notes),
      cmocka_unit_test(test_long_body_is_read_in_several_steps),
      cmocka_unit_test(test_attribute_limit),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
