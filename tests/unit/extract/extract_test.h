/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Shared helpers of the extract tests: fixtures made by the tests
 * themselves (ZIP packages written with libzip, PDFs written by hand with a
 * correct cross-reference table) and shortcuts around dg_extract_buffer. */
#ifndef DG_TEST_EXTRACT_TEST_H
#define DG_TEST_EXTRACT_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>
#include <zip.h>

#include "datagate/extract.h"

/* ---- Running extractions ------------------------------------------------- */

/* Extracts with a forced format (or detection when UNKNOWN) and returns
 * the document, failing the test on an error. */
static inline dg_extract_doc_t *xt_extract(dg_extract_format_t format, const char *content_type,
                                           const void *data, size_t len,
                                           const dg_extract_limits_t *limits) {
  dg_extract_request_t req = {.format = format, .content_type = content_type, .limits = limits};
  dg_extract_doc_t *doc = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_extract_buffer(&req, data, len, &doc, &err);
  if (rc != 0)
    fprintf(stderr, "extraction failed: %s: %s\n", dg_err_name(rc), err.message);
  assert_int_equal(rc, 0);
  assert_non_null(doc);
  return doc;
}

/* Extracts and returns the error code, with the message in err. */
static inline int xt_fail(dg_extract_format_t format, const char *content_type, const void *data,
                          size_t len, const dg_extract_limits_t *limits, dg_errctx_t *err) {
  dg_extract_request_t req = {.format = format, .content_type = content_type, .limits = limits};
  dg_extract_doc_t *doc = NULL;
  dg_errctx_clear(err);
  int rc = dg_extract_buffer(&req, data, len, &doc, err);
  assert_null(doc);
  assert_true(rc < 0);
  assert_int_equal(err->code, rc);
  assert_true(err->message[0] != '\0');
  return rc;
}

/* The text of a forced-format extraction, as a malloc'd string. */
static inline char *xt_text(dg_extract_format_t format, const char *content_type, const void *data,
                            size_t len) {
  dg_extract_doc_t *doc = xt_extract(format, content_type, data, len, NULL);
  char *text = strdup(dg_extract_doc_text(doc, NULL));
  dg_extract_doc_unref(doc);
  assert_non_null(text);
  return text;
}

static inline bool xt_contains(const char *haystack, const char *needle) {
  if (strstr(haystack, needle) == NULL) {
    fprintf(stderr, "expected to find \"%s\" in:\n%s\n", needle, haystack);
    return false;
  }
  return true;
}

/* Position of needle in haystack (asserting it is there). */
static inline size_t xt_find(const char *haystack, const char *needle) {
  const char *p = strstr(haystack, needle);
  if (p == NULL)
    fprintf(stderr, "expected to find \"%s\" in:\n%s\n", needle, haystack);
  assert_non_null(p);
  return (size_t)(p - haystack);
}

/* ---- ZIP packages --------------------------------------------------------- */

typedef struct xt_zip {
  zip_source_t *src;
  zip_t *za;
} xt_zip_t;

static inline void xt_zip_begin(xt_zip_t *z) {
  zip_error_t error;
  zip_error_init(&error);
  z->src = zip_source_buffer_create(NULL, 0, 0, &error);
  assert_non_null(z->src);
  z->za = zip_open_from_source(z->src, ZIP_TRUNCATE, &error);
  assert_non_null(z->za);
  zip_source_keep(z->src);
  zip_error_fini(&error);
}

static inline void xt_zip_add(xt_zip_t *z, const char *name, const void *data, size_t len) {
  void *copy = malloc(len + 1);
  assert_non_null(copy);
  memcpy(copy, data, len);
  zip_source_t *s = zip_source_buffer(z->za, copy, len, 1);
  assert_non_null(s);
  assert_true(zip_file_add(z->za, name, s, ZIP_FL_ENC_UTF_8) >= 0);
}

static inline void xt_zip_add_str(xt_zip_t *z, const char *name, const char *text) {
  xt_zip_add(z, name, text, strlen(text));
}

/* Closes the archive and returns its bytes (malloc'd). */
static inline unsigned char *xt_zip_finish(xt_zip_t *z, size_t *len) {
  assert_int_equal(zip_close(z->za), 0);
  assert_int_equal(zip_source_open(z->src), 0);
  assert_int_equal(zip_source_seek(z->src, 0, SEEK_END), 0);
  zip_int64_t n = zip_source_tell(z->src);
  assert_true(n > 0);
  assert_int_equal(zip_source_seek(z->src, 0, SEEK_SET), 0);
  unsigned char *out = malloc((size_t)n);
  assert_non_null(out);
  assert_int_equal(zip_source_read(z->src, out, (zip_uint64_t)n), n);
  zip_source_close(z->src);
  zip_source_free(z->src);
  *len = (size_t)n;
  return out;
}

#define XT_RELS_NS "http://schemas.openxmlformats.org/package/2006/relationships"
#define XT_REL_TYPE "http://schemas.openxmlformats.org/officeDocument/2006/relationships/"
#define XT_W_NS                                                                                    \
  "xmlns:w=\"http://schemas.openxmlformats.org/wordprocessingml/2006/main\" "                      \
  "xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\" "               \
  "xmlns:mc=\"http://schemas.openxmlformats.org/markup-compatibility/2006\""
#define XT_P_NS                                                                                    \
  "xmlns:p=\"http://schemas.openxmlformats.org/presentationml/2006/main\" "                        \
  "xmlns:a=\"http://schemas.openxmlformats.org/drawingml/2006/main\" "                             \
  "xmlns:r=\"http://schemas.openxmlformats.org/officeDocument/2006/relationships\""

static inline void xt_zip_content_types(xt_zip_t *z) {
  xt_zip_add_str(z, "[Content_Types].xml",
                 "<?xml version=\"1.0\"?><Types "
                 "xmlns=\"http://schemas.openxmlformats.org/package/2006/content-types\">"
                 "<Default Extension=\"xml\" ContentType=\"application/xml\"/></Types>");
}

/* A relationships part: pairs of (type suffix, target), ids rId1, rId2... */
static inline void xt_zip_rels(xt_zip_t *z, const char *name, const char *const *pairs, size_t n) {
  char buf[8192];
  int k =
      snprintf(buf, sizeof(buf), "<?xml version=\"1.0\"?><Relationships xmlns=\"%s\">", XT_RELS_NS);
  for (size_t i = 0; i < n; i++)
    k += snprintf(buf + k, sizeof(buf) - (size_t)k,
                  "<Relationship Id=\"rId%zu\" Type=\"%s%s\" Target=\"%s\"/>", i + 1, XT_REL_TYPE,
                  pairs[2 * i], pairs[2 * i + 1]);
  snprintf(buf + k, sizeof(buf) - (size_t)k, "</Relationships>");
  xt_zip_add_str(z, name, buf);
}

/* A DOCX whose body is body_xml (inside <w:body>). */
static inline unsigned char *xt_docx(const char *body_xml, size_t *len) {
  xt_zip_t z;
  static const char *const root[] = {"officeDocument", "word/document.xml"};
  xt_zip_begin(&z);
  xt_zip_content_types(&z);
  xt_zip_rels(&z, "_rels/.rels", root, 1);
  size_t n = strlen(body_xml) + 512;
  char *doc = malloc(n);
  assert_non_null(doc);
  snprintf(doc, n, "<?xml version=\"1.0\"?><w:document %s><w:body>%s</w:body></w:document>",
           XT_W_NS, body_xml);
  xt_zip_add_str(&z, "word/document.xml", doc);
  free(doc);
  return xt_zip_finish(&z, len);
}

/* ---- PDFs -------------------------------------------------------------------
 * Each page's content stream is given; pages use Helvetica (F1) with
 * WinAnsiEncoding on a 612 x 792 media box. */

static inline void xt_pdf_object(dg_buf_t *out, size_t *offsets, size_t number, const char *body,
                                 size_t body_len) {
  offsets[number] = out->len;
  assert_int_equal(dg_buf_appendf(out, "%zu 0 obj\n", number), 0);
  assert_int_equal(dg_buf_append(out, body, body_len), 0);
  assert_int_equal(dg_buf_append_str(out, "\nendobj\n"), 0);
}

static inline unsigned char *xt_pdf(const char *const *pages, size_t n, size_t *len) {
  dg_buf_t out, tmp;
  size_t objects = 4 + 2 * n; /* object 0 and objects 1 to 3 + 2n */
  size_t *offsets = calloc(objects, sizeof(size_t));
  dg_buf_init(&out, SIZE_MAX);
  dg_buf_init(&tmp, SIZE_MAX);
  assert_int_equal(dg_buf_append_str(&out, "%PDF-1.4\n"), 0);
  static const char catalog[] = "<< /Type /Catalog /Pages 2 0 R >>";
  static const char font[] =
      "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>";
  xt_pdf_object(&out, offsets, 1, catalog, strlen(catalog));
  assert_int_equal(dg_buf_append_str(&tmp, "<< /Type /Pages /Kids ["), 0);
  for (size_t i = 0; i < n; i++)
    assert_int_equal(dg_buf_appendf(&tmp, "%zu 0 R ", 4 + 2 * i), 0);
  assert_int_equal(dg_buf_appendf(&tmp, "] /Count %zu >>", n), 0);
  xt_pdf_object(&out, offsets, 2, tmp.data, tmp.len);
  xt_pdf_object(&out, offsets, 3, font, strlen(font));
  for (size_t i = 0; i < n; i++) {
    dg_buf_reset(&tmp);
    assert_int_equal(dg_buf_appendf(&tmp,
                                    "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
                                    "/Resources << /Font << /F1 3 0 R >> >> /Contents %zu 0 R >>",
                                    5 + 2 * i),
                     0);
    xt_pdf_object(&out, offsets, 4 + 2 * i, tmp.data, tmp.len);
    dg_buf_reset(&tmp);
    assert_int_equal(dg_buf_appendf(&tmp, "<< /Length %zu >>\nstream\n%s\nendstream",
                                    strlen(pages[i]), pages[i]),
                     0);
    xt_pdf_object(&out, offsets, 5 + 2 * i, tmp.data, tmp.len);
  }
  size_t xref = out.len;
  assert_int_equal(dg_buf_appendf(&out, "xref\n0 %zu\n0000000000 65535 f \n", objects), 0);
  for (size_t i = 1; i < objects; i++)
    assert_int_equal(dg_buf_appendf(&out, "%010zu 00000 n \n", offsets[i]), 0);
  assert_int_equal(dg_buf_appendf(&out,
                                  "trailer\n<< /Size %zu /Root 1 0 R >>\nstartxref\n%zu\n%%%%EOF\n",
                                  objects, xref),
                   0);
  dg_buf_free(&tmp);
  free(offsets);
  return (unsigned char *)dg_buf_steal(&out, len);
}

/* One line of text at (x, y) in points from the bottom left. */
static inline void xt_pdf_line(dg_buf_t *page, int x, int y, const char *text) {
  assert_int_equal(dg_buf_appendf(page, "BT /F1 12 Tf %d %d Td (%s) Tj ET\n", x, y, text), 0);
}

#endif
