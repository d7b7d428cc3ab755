/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for PPTX: slides in presentation order with titles, body
 * text, tables and notes, and the cap on the number of slides. */
#include "extract_test.h"

#include "extract/internal.h"

static char *slide_xml(const char *title, const char *body) {
  char *s = malloc(4096);
  assert_non_null(s);
  snprintf(s, 4096,
           "<p:sld " XT_P_NS "><p:cSld><p:spTree>"
           "<p:sp><p:nvSpPr><p:nvPr><p:ph type=\"body\" idx=\"1\"/></p:nvPr></p:nvSpPr>"
           "<p:txBody><a:p><a:r><a:t>%s</a:t></a:r></a:p><a:p><a:r><a:t>second</a:t></a:r>"
           "<a:br/><a:r><a:t>point</a:t></a:r></a:p></p:txBody></p:sp>"
           "<p:sp><p:nvSpPr><p:nvPr><p:ph type=\"title\"/></p:nvPr></p:nvSpPr>"
           "<p:txBody><a:p><a:r><a:t>%s</a:t></a:r></a:p></p:txBody></p:sp>"
           "</p:spTree></p:cSld></p:sld>",
           body, title);
  return s;
}

/* A presentation of n slides listed in reverse file order; slide 1 (the
 * file slide1.xml, shown last) has notes and a table. */
static unsigned char *pptx(int n, size_t *len) {
  xt_zip_t z;
  static const char *const root[] = {"officeDocument", "ppt/presentation.xml"};
  static const char *const notes_rel[] = {"notesSlide", "../notesSlides/notesSlide1.xml"};
  xt_zip_begin(&z);
  xt_zip_content_types(&z);
  xt_zip_rels(&z, "_rels/.rels", root, 1);
  dg_buf_t pres, rels;
  dg_buf_init(&pres, SIZE_MAX);
  dg_buf_init(&rels, SIZE_MAX);
  assert_int_equal(dg_buf_appendf(&pres, "<p:presentation " XT_P_NS "><p:sldIdLst>"), 0);
  assert_int_equal(dg_buf_appendf(&rels, "<Relationships xmlns=\"%s\">", XT_RELS_NS), 0);
  for (int i = n; i >= 1; i--) {
    char name[64], title[32];
    assert_int_equal(dg_buf_appendf(&pres, "<p:sldId id=\"%d\" r:id=\"rId%d\"/>", 300 - i, i), 0);
    assert_int_equal(dg_buf_appendf(&rels,
                                    "<Relationship Id=\"rId%d\" Type=\"" XT_REL_TYPE
                                    "slide\" Target=\"slides/slide%d.xml\"/>",
                                    i, i),
                     0);
    snprintf(name, sizeof(name), "ppt/slides/slide%d.xml", i);
    snprintf(title, sizeof(title), "Title %d", i);
    char *xml = slide_xml(title, i == 1 ? "Body \xe2\x82\xac" : "Body");
    xt_zip_add_str(&z, name, xml);
    free(xml);
  }
  assert_int_equal(dg_buf_append_str(&pres, "</p:sldIdLst></p:presentation>"), 0);
  assert_int_equal(dg_buf_append_str(&rels, "</Relationships>"), 0);
  xt_zip_add_str(&z, "ppt/presentation.xml", pres.data);
  xt_zip_add_str(&z, "ppt/_rels/presentation.xml.rels", rels.data);
  xt_zip_rels(&z, "ppt/slides/_rels/slide1.xml.rels", notes_rel, 1);
  xt_zip_add_str(&z, "ppt/notesSlides/notesSlide1.xml",
                 "<p:notes " XT_P_NS "><p:cSld><p:spTree>"
                 "<p:sp><p:nvSpPr><p:nvPr><p:ph type=\"sldImg\"/></p:nvPr></p:nvSpPr></p:sp>"
                 "<p:sp><p:nvSpPr><p:nvPr><p:ph type=\"body\" idx=\"1\"/></p:nvPr></p:nvSpPr>"
                 "<p:txBody><a:p><a:r><a:t>Say hello.</a:t></a:r></a:p></p:txBody></p:sp>"
                 "<p:sp><p:nvSpPr><p:nvPr><p:ph type=\"sldNum\"/></p:nvPr></p:nvSpPr>"
                 "<p:txBody><a:p><a:r><a:t>99</a:t></a:r></a:p></p:txBody></p:sp>"
                 "</p:spTree></p:cSld></p:notes>");
  dg_buf_free(&pres);
  dg_buf_free(&rels);
  return xt_zip_finish(&z, len);
}

static void test_slides_in_order_with_titles_and_notes(void **state) {
  size_t len = 0;
  unsigned char *d = pptx(2, &len);
  dg_extract_doc_t *doc = xt_extract(DG_EXTRACT_DOCX, NULL, d, len, NULL);
  /* The package decides: a PPTX given as DOCX is read as a PPTX. */
  assert_int_equal(dg_extract_doc_format(doc), DG_EXTRACT_PPTX);
  assert_string_equal(dg_extract_doc_text(doc, NULL),
                      "--- Slide 1 ---\nTitle: Title 2\n\nBody\nsecond\npoint\n\n"
                      "--- Slide 2 ---\nTitle: Title 1\n\nBody \xe2\x82\xac\nsecond\npoint\n\n"
                      "Notes:\nSay hello.");
  assert_null(dg_extract_doc_truncated(doc));
  dg_extract_doc_unref(doc);
  free(d);
}

static void test_too_many_slides_are_cut(void **state) {
  size_t len = 0;
  unsigned char *d = pptx(12, &len);
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_units = 5;
  dg_extract_doc_t *doc = xt_extract(DG_EXTRACT_PPTX, NULL, d, len, &limits);
  const char *t = dg_extract_doc_text(doc, NULL);
  assert_true(xt_contains(t, "--- Slide 5 ---\nTitle: Title 8"));
  assert_null(strstr(t, "--- Slide 6 ---"));
  assert_string_equal(dg_extract_doc_truncated(doc),
                      "only the first 5 of 12 slides were extracted");
  dg_extract_doc_unref(doc);
  free(d);
}

static void test_tables_in_slides(void **state) {
  xt_zip_t z;
  static const char *const root[] = {"officeDocument", "ppt/presentation.xml"};
  static const char *const slides[] = {"slide", "slides/s.xml"};
  xt_zip_begin(&z);
  xt_zip_rels(&z, "_rels/.rels", root, 1);
  xt_zip_rels(&z, "ppt/_rels/presentation.xml.rels", slides, 1);
  xt_zip_add_str(&z, "ppt/presentation.xml",
                 "<p:presentation " XT_P_NS "><p:sldIdLst><p:sldId id=\"256\" r:id=\"rId1\"/>"
                 "</p:sldIdLst></p:presentation>");
  xt_zip_add_str(&z, "ppt/slides/s.xml",
                 "<p:sld " XT_P_NS "><p:cSld><p:spTree><p:graphicFrame><a:graphic><a:graphicData>"
                 "<a:tbl><a:tr><a:tc><a:txBody><a:p><a:r><a:t>k</a:t></a:r></a:p></a:txBody>"
                 "</a:tc><a:tc><a:txBody><a:p><a:r><a:t>v</a:t></a:r></a:p></a:txBody></a:tc>"
                 "</a:tr><a:tr><a:tc><a:txBody><a:p><a:r><a:t>1</a:t></a:r></a:p></a:txBody>"
                 "</a:tc><a:tc><a:txBody><a:p><a:r><a:t>2</a:t></a:r></a:p></a:txBody></a:tc>"
                 "</a:tr></a:tbl></a:graphicData></a:graphic></p:graphicFrame>"
                 "</p:spTree></p:cSld></p:sld>");
  size_t len = 0;
  unsigned char *d = xt_zip_finish(&z, &len);
  char *t = xt_text(DG_EXTRACT_PPTX, NULL, d, len);
  assert_string_equal(t, "--- Slide 1 ---\nk | v\n1 | 2");
  free(t);
  free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_slides_in_order_with_titles_and_notes),
      cmocka_unit_test(test_too_many_slides_are_cut),
      cmocka_unit_test(test_tables_in_slides),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
