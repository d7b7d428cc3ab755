/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the text formats (TXT, MD, CSV, JSON): byte order marks,
 * UTF-16, charsets, replacement of invalid UTF-8, line ends, huge lines,
 * and input split at every byte. */
#include "extract_test.h"

#include "extract/internal.h"

static char *text_of(const char *content_type, const void *data, size_t len) {
  return xt_text(DG_EXTRACT_TXT, content_type, data, len);
}

static void test_utf8_as_is_with_bom_dropped(void **state) {
  const char in[] = "\xef\xbb\xbf# Title\r\n\r\nname,price\r\n\"caf\xc3\xa9\",3\n\xf0\x9f\x98\x80";
  char *t = text_of(NULL, in, sizeof(in) - 1);
  assert_string_equal(t, "# Title\n\nname,price\n\"caf\xc3\xa9\",3\n\xf0\x9f\x98\x80");
  free(t);
}

static void test_invalid_utf8_is_replaced_never_passed(void **state) {
  const char in[] = "ok \xc3\x28 \xa0\xa1 \xf0\x28\x8c\xbc end\xe2\x82";
  char *t = text_of(NULL, in, sizeof(in) - 1);
  assert_string_equal(t, "ok \xef\xbf\xbd( \xef\xbf\xbd\xef\xbf\xbd \xef\xbf\xbd(\xef\xbf\xbd"
                         "\xef\xbf\xbd end\xef\xbf\xbd");
  free(t);
}

/* "Aé中😀" in UTF-16 with the given byte order and a BOM. */
static size_t utf16(bool le, unsigned char *out) {
  static const uint16_t units[] = {0xfeff, 'A', 0xe9, 0x4e2d, 0xd83d, 0xde00, '\r', '\n', 'z'};
  for (size_t i = 0; i < DG_ARRAY_SIZE(units); i++) {
    out[2 * i + (le ? 0 : 1)] = (unsigned char)(units[i] & 0xff);
    out[2 * i + (le ? 1 : 0)] = (unsigned char)(units[i] >> 8);
  }
  return 2 * DG_ARRAY_SIZE(units);
}

static void test_utf16_with_byte_order_marks(void **state) {
  unsigned char buf[64];
  const char *want = "A\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\nz";
  size_t n = utf16(true, buf);
  char *t = text_of(NULL, buf, n);
  assert_string_equal(t, want);
  free(t);
  n = utf16(false, buf);
  t = text_of("text/plain; charset=utf-8", buf, n);
  assert_string_equal(t, want);
  free(t);
  /* A lone surrogate and an odd last byte become U+FFFD. */
  unsigned char bad[] = {0xff, 0xfe, 0x00, 0xd8, 'a', 0, 'b'};
  t = text_of(NULL, bad, sizeof(bad));
  assert_string_equal(t, "\xef\xbf\xbd"
                         "a\xef\xbf\xbd");
  free(t);
}

static void test_declared_charsets(void **state) {
  const char latin1[] = "caf\xe9 \xa3";
  char *t = text_of("text/plain; charset=ISO-8859-1", latin1, sizeof(latin1) - 1);
  assert_string_equal(t, "caf\xc3\xa9 \xc2\xa3");
  free(t);
  const char cp1252[] = "\x80 \x93q\x94";
  t = text_of("text/csv; charset=windows-1252", cp1252, sizeof(cp1252) - 1);
  assert_string_equal(t, "\xe2\x82\xac \xe2\x80\x9cq\xe2\x80\x9d");
  free(t);
  unsigned char le[] = {'h', 0, 'i', 0};
  t = text_of("text/plain; charset=UTF-16LE", le, sizeof(le));
  assert_string_equal(t, "hi");
  free(t);
  /* An unknown charset is read as UTF-8, with replacement. */
  t = text_of("text/plain; charset=x-unknown-thing", "ok\xff", 3);
  assert_string_equal(t, "ok\xef\xbf\xbd");
  free(t);
}

static void test_huge_single_line_is_bounded(void **state) {
  size_t n = (size_t)3 << 20;
  char *big = malloc(n);
  assert_non_null(big);
  memset(big, 'x', n);
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_text_bytes = (size_t)1 << 20;
  dg_extract_doc_t *doc = xt_extract(DG_EXTRACT_TXT, NULL, big, n, &limits);
  size_t len = 0;
  dg_extract_doc_text(doc, &len);
  assert_int_equal(len, limits.max_text_bytes);
  assert_non_null(dg_extract_doc_truncated(doc));
  assert_true(xt_contains(dg_extract_doc_truncated(doc), "1048576 bytes"));
  /* The line still chunks, cut at the chunk size. */
  dg_extract_chunk_t c;
  dg_errctx_t err;
  assert_int_equal(dg_extract_doc_chunk(doc, 0, 1000, &c, &err), 0);
  assert_int_equal(c.len, 1000);
  assert_int_equal(c.next_offset, 1000);
  dg_extract_doc_unref(doc);
  free(big);
}

/* Runs the extractor step by step with the input cut at pos. */
static char *split_run(const dg__extractor_t *ext, const char *ct, const unsigned char *data,
                       size_t len, size_t pos) {
  dg__xrun_t run;
  assert_int_equal(dg__xrun_init(&run, DG_EXTRACT_TXT, NULL, ct), 0);
  assert_ptr_equal(run.ext, ext);
  run.in = data;
  run.in_len = pos;
  assert_int_equal(dg__xrun_step(&run), 0);
  run.in = data + pos;
  run.in_len = len - pos;
  run.in_last = true;
  assert_int_equal(dg__xrun_step(&run), 0);
  assert_true(run.done);
  dg_extract_doc_t *doc = dg__xrun_finish(&run);
  char *t = strdup(dg_extract_doc_text(doc, NULL));
  dg_extract_doc_unref(doc);
  dg__xrun_free(&run);
  return t;
}

static void test_split_anywhere_gives_the_same_text(void **state) {
  const char utf8[] = "\xef\xbb\xbf"
                      "a\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\r\nb\xff";
  unsigned char u16[64];
  size_t n16 = utf16(false, u16);
  char *whole8 = text_of(NULL, utf8, sizeof(utf8) - 1);
  char *whole16 = text_of(NULL, u16, n16);
  for (size_t pos = 0; pos <= sizeof(utf8) - 1; pos++) {
    char *t =
        split_run(&dg__extract_text, NULL, (const unsigned char *)utf8, sizeof(utf8) - 1, pos);
    assert_string_equal(t, whole8);
    free(t);
  }
  for (size_t pos = 0; pos <= n16; pos++) {
    char *t = split_run(&dg__extract_text, NULL, u16, n16, pos);
    assert_string_equal(t, whole16);
    free(t);
  }
  free(whole8);
  free(whole16);
}

static void test_json_and_md_are_text(void **state) {
  const char json[] = "{\"k\": [1, 2],\n \"s\": \"\\u00e9\"}";
  char *t = xt_text(DG_EXTRACT_JSON, NULL, json, sizeof(json) - 1);
  assert_string_equal(t, json);
  free(t);
  dg_extract_doc_t *doc = xt_extract(DG_EXTRACT_UNKNOWN, NULL, "# x", 3, NULL);
  assert_int_equal(dg_extract_doc_format(doc), DG_EXTRACT_TXT);
  dg_extract_doc_unref(doc);
  dg_extract_request_t req = {.name = "notes.md"};
  assert_int_equal(dg_extract_buffer(&req, "# x\n", 4, &doc, NULL), 0);
  assert_int_equal(dg_extract_doc_format(doc), DG_EXTRACT_MD);
  assert_string_equal(dg_extract_doc_text(doc, NULL), "# x\n");
  dg_extract_doc_unref(doc);
}

static void test_input_over_the_limit_is_refused(void **state) {
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_input_bytes = 10;
  dg_errctx_t err;
  assert_int_equal(xt_fail(DG_EXTRACT_TXT, NULL, "01234567890", 11, &limits, &err), DG_E2BIG);
  assert_true(xt_contains(err.message, "larger than the limit of 10 bytes"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_utf8_as_is_with_bom_dropped),
      cmocka_unit_test(test_invalid_utf8_is_replaced_never_passed),
      cmocka_unit_test(test_utf16_with_byte_order_marks),
      cmocka_unit_test(test_declared_charsets),
      cmocka_unit_test(test_huge_single_line_is_bounded),
      cmocka_unit_test(test_split_anywhere_gives_the_same_text),
      cmocka_unit_test(test_json_and_md_are_text),
      cmocka_unit_test(test_input_over_the_limit_is_refused),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
