/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for format detection: content type, then magic bytes, then
 * extension, and the refusals that name the supported formats. */
#include "extract_test.h"

#include "extract/internal.h"

static dg_extract_format_t detect(const char *type, const char *head, const char *name) {
  dg_extract_format_t f = DG_EXTRACT_UNKNOWN;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_extract_detect(type, head, head != NULL ? strlen(head) : 0, name, &f, &err);
  if (rc != 0)
    fprintf(stderr, "%s\n", err.message);
  assert_int_equal(rc, 0);
  return f;
}

static void test_content_type_wins(void **state) {
  assert_int_equal(detect("application/pdf", "<html>", "x.docx"), DG_EXTRACT_PDF);
  assert_int_equal(detect("Text/HTML; charset=UTF-8", "%PDF-1.7", "x.pdf"), DG_EXTRACT_HTML);
  assert_int_equal(
      detect("application/vnd.openxmlformats-officedocument.presentationml.presentation", "PK",
             NULL),
      DG_EXTRACT_PPTX);
  assert_int_equal(detect("application/ld+json", "x", NULL), DG_EXTRACT_JSON);
  assert_int_equal(detect("image/svg+xml", "x", NULL), DG_EXTRACT_XML);
  assert_int_equal(detect("text/csv", "a,b", "x.txt"), DG_EXTRACT_CSV);
  assert_int_equal(detect("text/markdown", "# t", NULL), DG_EXTRACT_MD);
  /* text/plain is refined by the extension among the text formats only. */
  assert_int_equal(detect("text/plain", "# t", "https://h/readme.MD?x=1"), DG_EXTRACT_MD);
  assert_int_equal(detect("text/plain", "a", "x.pdf"), DG_EXTRACT_TXT);
}

static void test_generic_types_fall_through_to_magic(void **state) {
  assert_int_equal(detect("application/octet-stream", "%PDF-1.4\n", "x.txt"), DG_EXTRACT_PDF);
  assert_int_equal(detect(NULL, "junk\n%PDF-1.4\n", NULL), DG_EXTRACT_PDF);
  assert_int_equal(detect("application/zip", "PK\x03\x04rest", "deck.pptx"), DG_EXTRACT_PPTX);
  assert_int_equal(detect(NULL, "PK\x03\x04rest", "file"), DG_EXTRACT_DOCX);
  assert_int_equal(detect(NULL, "\xef\xbb\xbf  <!DOCTYPE html><p>", "a.txt"), DG_EXTRACT_HTML);
  assert_int_equal(detect(NULL, "<?xml version=\"1.0\"?><root/>", "a.html"), DG_EXTRACT_XML);
  assert_int_equal(detect(NULL, "<?xml version=\"1.0\"?><html xmlns=\"x\">", NULL),
                   DG_EXTRACT_HTML);
  assert_int_equal(detect(NULL, "<!-- c --><html>", NULL), DG_EXTRACT_HTML);
}

static void test_extension_then_text(void **state) {
  assert_int_equal(detect(NULL, "a,b\n1,2\n", "https://h/data.csv#frag"), DG_EXTRACT_CSV);
  assert_int_equal(detect(NULL, "{\"a\":1}", "/tmp/x.json"), DG_EXTRACT_JSON);
  assert_int_equal(detect("", "plain words", "notes.markdown"), DG_EXTRACT_MD);
  assert_int_equal(detect(NULL, "<b>x</b>", "page.HTM"), DG_EXTRACT_HTML);
  /* No sign at all: text is TXT; a dot in the host is no extension. */
  assert_int_equal(detect(NULL, "just words", "https://example.com"), DG_EXTRACT_TXT);
  assert_int_equal(detect(NULL, "just words", "https://example.com/dir.v2/file"), DG_EXTRACT_TXT);
  assert_int_equal(detect(NULL, NULL, NULL), DG_EXTRACT_TXT);
  assert_int_equal(detect(NULL,
                          "\xff\xfe"
                          "a\0b\0",
                          NULL),
                   DG_EXTRACT_TXT);
}

static void refused(const char *type, const void *head, size_t len, const char *name,
                    const char *expect) {
  dg_extract_format_t f = DG_EXTRACT_PDF;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_extract_detect(type, head, len, name, &f, &err), DG_ENOTSUP);
  assert_int_equal(f, DG_EXTRACT_UNKNOWN);
  assert_string_equal(err.param, "url");
  assert_true(xt_contains(err.message, dg_extract_supported));
  assert_true(xt_contains(err.message, expect));
}

static void test_unsupported_formats_are_named(void **state) {
  refused(NULL, "\x89PNG\r\n", 6, "a.pdf", "PNG image");
  refused("image/jpeg", "\xff\xd8\xff\xe0", 4, NULL, "JPEG image");
  refused(NULL, "\xd0\xcf\x11\xe0\xa1\xb1", 6, "old.doc", "legacy Office");
  refused("application/x-thing", "\x01\x02\x00\x03", 4, "x.bin",
          "content type application/x-thing, extension .bin");
  refused(NULL, "\x00\x01", 2, NULL, "content type none, extension none");
}

static void test_charset_parameter(void **state) {
  char cs[64];
  dg__extract_charset("text/html; charset=ISO-8859-1", cs, sizeof(cs));
  assert_string_equal(cs, "ISO-8859-1");
  dg__extract_charset("text/plain;format=flowed; Charset=\"utf-16le\"", cs, sizeof(cs));
  assert_string_equal(cs, "utf-16le");
  dg__extract_charset("text/plain", cs, sizeof(cs));
  assert_string_equal(cs, "");
  dg__extract_charset(NULL, cs, sizeof(cs));
  assert_string_equal(cs, "");
}

static void test_format_names(void **state) {
  assert_string_equal(dg_extract_format_name(DG_EXTRACT_DOCX), "DOCX");
  assert_string_equal(dg_extract_format_name(DG_EXTRACT_XML), "XML");
  assert_string_equal(dg_extract_format_name((dg_extract_format_t)99), "unknown");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_content_type_wins),
      cmocka_unit_test(test_generic_types_fall_through_to_magic),
      cmocka_unit_test(test_extension_then_text),
      cmocka_unit_test(test_unsupported_formats_are_named),
      cmocka_unit_test(test_charset_parameter),
      cmocka_unit_test(test_format_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
