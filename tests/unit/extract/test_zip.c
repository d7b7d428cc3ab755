/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for hostile OOXML packages: zip bombs (expansion ratio, part
 * size, total size, sizes that lie, entry count), broken archives,
 * encrypted parts, DTDs and entities, nesting, and packages that are not
 * DOCX or PPTX. Every case is a clear error naming the package. */
#include "extract_test.h"

#include "extract/internal.h"

/* A DOCX whose body holds n empty paragraphs, with optional extra parts. */
static unsigned char *big_docx(size_t paragraphs, size_t *len) {
  dg_buf_t body;
  dg_buf_init(&body, SIZE_MAX);
  for (size_t i = 0; i < paragraphs; i++)
    assert_int_equal(dg_buf_append_str(&body, "<w:p/>"), 0);
  unsigned char *d = xt_docx(body.data, len);
  dg_buf_free(&body);
  return d;
}

static int fail_docx(const unsigned char *d, size_t len, const dg_extract_limits_t *limits,
                     dg_errctx_t *err) {
  int rc = xt_fail(DG_EXTRACT_DOCX, NULL, d, len, limits, err);
  assert_string_equal(err->param, "url");
  return rc;
}

static void test_expansion_ratio_bomb(void **state) {
  size_t len = 0;
  unsigned char *d = big_docx((size_t)1 << 20, &len); /* 6 MiB that deflate to a few KiB */
  dg_errctx_t err;
  assert_int_equal(fail_docx(d, len, NULL, &err), DG_E2BIG);
  assert_true(xt_contains(err.message, "the DOCX package part word/document.xml expands"));
  assert_true(xt_contains(err.message, "over the limit of 200"));
  free(d);
}

static void test_part_and_total_sizes(void **state) {
  size_t len = 0;
  unsigned char *d = big_docx(20000, &len); /* 120 KB */
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_zip_ratio = 1000000;
  limits.max_zip_entry_bytes = 100000;
  dg_errctx_t err;
  assert_int_equal(fail_docx(d, len, &limits, &err), DG_E2BIG);
  assert_true(xt_contains(err.message, "would expand to"));
  assert_true(xt_contains(err.message, "over the limit of 100000"));
  limits.max_zip_entry_bytes = 1000000;
  limits.max_zip_total_bytes = 100000;
  assert_int_equal(fail_docx(d, len, &limits, &err), DG_E2BIG);
  assert_true(xt_contains(err.message, "past the limit of 100000 bytes in all"));
  limits.max_zip_total_bytes = 1000000;
  dg_extract_doc_unref(xt_extract(DG_EXTRACT_DOCX, NULL, d, len, &limits));
  free(d);
}

static void put32(unsigned char *p, uint32_t v) {
  p[0] = (unsigned char)v;
  p[1] = (unsigned char)(v >> 8);
  p[2] = (unsigned char)(v >> 16);
  p[3] = (unsigned char)(v >> 24);
}

/* Rewrites every declared uncompressed size in the archive to small. */
static void lie_about_sizes(unsigned char *d, size_t len, uint32_t small) {
  for (size_t i = 0; i + 46 <= len; i++) {
    if (memcmp(d + i, "PK\x03\x04", 4) == 0)
      put32(d + i + 22, small);
    else if (memcmp(d + i, "PK\x01\x02", 4) == 0)
      put32(d + i + 24, small);
  }
}

static void test_sizes_that_lie_are_caught_while_reading(void **state) {
  size_t len = 0;
  unsigned char *d = big_docx(50000, &len); /* 300 KB declared as 500 bytes */
  lie_about_sizes(d, len, 500);
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_zip_ratio = 1000000;
  limits.max_zip_entry_bytes = 100000;
  dg_errctx_t err;
  int rc = fail_docx(d, len, &limits, &err);
  /* Either the count of inflated bytes or libzip's own check stops it. */
  assert_true(rc == DG_E2BIG || rc == DG_EPROTO);
  assert_true(xt_contains(err.message, "the DOCX package"));
  free(d);
}

static void test_too_many_entries(void **state) {
  xt_zip_t z;
  xt_zip_begin(&z);
  for (int i = 0; i < 30; i++) {
    char name[32];
    snprintf(name, sizeof(name), "junk/%d.xml", i);
    xt_zip_add_str(&z, name, "<x/>");
  }
  size_t len = 0;
  unsigned char *d = xt_zip_finish(&z, &len);
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_zip_entries = 20;
  dg_errctx_t err;
  assert_int_equal(fail_docx(d, len, &limits, &err), DG_E2BIG);
  assert_true(xt_contains(err.message, "has 30 entries, over the limit of 20"));
  free(d);
}

static void test_broken_and_foreign_packages(void **state) {
  dg_errctx_t err;
  const char junk[] = "PK\x03\x04 this is not really a zip archive at all";
  assert_int_equal(fail_docx((const unsigned char *)junk, sizeof(junk) - 1, NULL, &err), DG_EPROTO);
  assert_true(xt_contains(err.message, "not a readable ZIP archive"));
  /* A truncated archive. */
  size_t len = 0;
  unsigned char *d = big_docx(10, &len);
  assert_int_equal(fail_docx(d, len / 2, NULL, &err), DG_EPROTO);
  free(d);
  /* A workbook, and a ZIP of something else. */
  xt_zip_t z;
  static const char *const root[] = {"officeDocument", "xl/workbook.xml"};
  xt_zip_begin(&z);
  xt_zip_rels(&z, "_rels/.rels", root, 1);
  xt_zip_add_str(&z, "xl/workbook.xml", "<workbook/>");
  d = xt_zip_finish(&z, &len);
  assert_int_equal(fail_docx(d, len, NULL, &err), DG_ENOTSUP);
  assert_true(xt_contains(err.message, "XLSX"));
  assert_true(xt_contains(err.message, dg_extract_supported));
  free(d);
  xt_zip_begin(&z);
  xt_zip_add_str(&z, "photo.txt", "hello");
  d = xt_zip_finish(&z, &len);
  assert_int_equal(fail_docx(d, len, NULL, &err), DG_EPROTO);
  assert_true(xt_contains(err.message, "not a DOCX or PPTX"));
  free(d);
}

static void test_encrypted_part(void **state) {
  xt_zip_t z;
  static const char *const root[] = {"officeDocument", "word/document.xml"};
  xt_zip_begin(&z);
  xt_zip_rels(&z, "_rels/.rels", root, 1);
  xt_zip_add_str(&z, "word/document.xml", "<w:document " XT_W_NS "/>");
  zip_int64_t i = zip_name_locate(z.za, "word/document.xml", 0);
  assert_int_equal(zip_file_set_encryption(z.za, (zip_uint64_t)i, ZIP_EM_AES_256, "pw"), 0);
  size_t len = 0;
  unsigned char *d = xt_zip_finish(&z, &len);
  dg_errctx_t err;
  assert_int_equal(fail_docx(d, len, NULL, &err), DG_ENOTSUP);
  assert_true(xt_contains(err.message, "password-protected"));
  free(d);
}

/* A declaration far into a part, at several offsets from the pieces the
 * part is inflated in, is found before libxml2 parses it. */
static void test_a_declaration_deep_in_a_part(void **state) {
  for (int shift = 0; shift < 6; shift++) {
    dg_buf_t body;
    dg_buf_init(&body, SIZE_MAX);
    assert_int_equal(dg_buf_appendf(&body, "<w:p><w:r><w:t>%.*s</w:t></w:r></w:p>", shift, "xxxxx"),
                     0);
    for (int k = 0; k < 2000; k++)
      assert_int_equal(dg_buf_append_str(&body, "<w:p><w:r><w:t>word! &lt;!</w:t></w:r></w:p>"), 0);
    assert_int_equal(dg_buf_append_str(&body, "<!ELEMENT x ANY>"), 0);
    size_t len = 0;
    unsigned char *d = xt_docx(body.data, &len);
    dg_errctx_t err;
    assert_int_equal(fail_docx(d, len, NULL, &err), DG_EPROTO);
    assert_true(xt_contains(err.message, "has a DTD, which OOXML forbids"));
    free(d);
    dg_buf_free(&body);
  }
}

static void test_dtd_entities_and_nesting_in_parts(void **state) {
  dg_errctx_t err;
  size_t len = 0;
  xt_zip_t z;
  static const char *const root[] = {"officeDocument", "word/document.xml"};
  xt_zip_begin(&z);
  xt_zip_rels(&z, "_rels/.rels", root, 1);
  xt_zip_add_str(&z, "word/document.xml",
                 "<?xml version=\"1.0\"?><!DOCTYPE d [<!ENTITY a \"aaaaaaaaaa\">"
                 "<!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;"
                 "&b;&b;&b;&b;&b;\">]><w:document " XT_W_NS "><w:body><w:p><w:r><w:t>&c;&c;"
                 "</w:t></w:r></w:p></w:body></w:document>");
  unsigned char *d = xt_zip_finish(&z, &len);
  assert_int_equal(fail_docx(d, len, NULL, &err), DG_EPROTO);
  assert_true(xt_contains(err.message, "has a DTD, which OOXML forbids"));
  free(d);
  dg_buf_t deep;
  dg_buf_init(&deep, SIZE_MAX);
  for (int k = 0; k < 500; k++)
    assert_int_equal(dg_buf_append_str(&deep, "<w:sdt><w:sdtContent>"), 0);
  d = xt_docx(deep.data, &len);
  assert_int_equal(fail_docx(d, len, NULL, &err), DG_E2BIG);
  assert_true(xt_contains(err.message, "deeper than the limit"));
  free(d);
  dg_buf_free(&deep);
  d = xt_docx("<w:p><w:r><w:t>open</w:r></w:p>", &len);
  assert_int_equal(fail_docx(d, len, NULL, &err), DG_EPROTO);
  assert_true(xt_contains(err.message, "word/document.xml"));
  free(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_expansion_ratio_bomb),
      cmocka_unit_test(test_part_and_total_sizes),
      cmocka_unit_test(test_sizes_that_lie_are_caught_while_reading),
      cmocka_unit_test(test_too_many_entries),
      cmocka_unit_test(test_broken_and_foreign_packages),
      cmocka_unit_test(test_encrypted_part),
      cmocka_unit_test(test_dtd_entities_and_nesting_in_parts),
      cmocka_unit_test(test_a_declaration_deep_in_a_part),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
