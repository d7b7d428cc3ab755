/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for XML: text and attribute values in document order, no
 * entity expansion, no network or file access, the depth limit, and
 * well-formedness errors. */
#include "extract_test.h"

#include "extract/internal.h"

static char *xml(const char *doc) {
  return xt_text(DG_EXTRACT_XML, NULL, doc, strlen(doc));
}

static void test_text_and_attributes_in_order(void **state) {
  char *t = xml("<?xml version=\"1.0\"?>\n<catalog name=\"Spring\">\n"
                "  <item id=\"7\" label=\"Bolt &amp; nut\">Steel <b>M8</b>!</item>\n"
                "  <item id=\"8\"><![CDATA[<raw> text]]></item>\n"
                "  <!-- comment --><?pi data?>\n"
                "  <row><a>1</a><b>2</b></row><row><a>3</a><b>4</b></row>\n"
                "</catalog>\n");
  assert_string_equal(t, "Spring\n7 Bolt & nut Steel M8 !\n8 <raw> text\n1 2\n3 4");
  free(t);
}

static void test_billion_laughs_expand_nothing(void **state) {
  dg_buf_t b;
  dg_buf_init(&b, SIZE_MAX);
  assert_int_equal(dg_buf_append_str(&b, "<?xml version=\"1.0\"?>\n<!DOCTYPE lolz [\n"
                                         "<!ENTITY lol0 \"lol\">\n"),
                   0);
  for (int i = 1; i <= 9; i++) {
    assert_int_equal(dg_buf_appendf(&b, "<!ENTITY lol%d \"", i), 0);
    for (int k = 0; k < 10; k++)
      assert_int_equal(dg_buf_appendf(&b, "&lol%d;", i - 1), 0);
    assert_int_equal(dg_buf_append_str(&b, "\">\n"), 0);
  }
  assert_int_equal(
      dg_buf_append_str(&b, "]>\n<lolz a=\"&lol9;\">x &lol9; y &lol9;&lol9; z</lolz>\n"), 0);
  char *t = xt_text(DG_EXTRACT_XML, NULL, b.data, b.len);
  assert_string_equal(t, "&lol9; x &lol9; y &lol9;&lol9; z");
  free(t);
  dg_buf_free(&b);
}

static void test_external_entities_are_not_loaded(void **state) {
  char path[] = "/tmp/dg-xml-secret-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  assert_int_equal(write(fd, "TOPSECRET", 9), 9);
  close(fd);
  char doc[512];
  snprintf(doc, sizeof(doc),
           "<?xml version=\"1.0\"?>\n<!DOCTYPE d [\n<!ENTITY s SYSTEM \"file://%s\">\n"
           "<!ENTITY %% p SYSTEM \"file://%s\">\n]>\n<d>before &s; after</d>",
           path, path);
  char *t = xml(doc);
  assert_null(strstr(t, "TOPSECRET"));
  assert_string_equal(t, "before &s; after");
  free(t);
  /* An external DTD is not fetched either. */
  snprintf(doc, sizeof(doc),
           "<?xml version=\"1.0\"?>\n<!DOCTYPE d SYSTEM \"file://%s\">\n<d>ok</d>", path);
  t = xml(doc);
  assert_string_equal(t, "ok");
  free(t);
  unlink(path);
}

static void test_depth_limit(void **state) {
  dg_buf_t b;
  dg_buf_init(&b, SIZE_MAX);
  for (int i = 0; i < 10000; i++)
    assert_int_equal(dg_buf_append_str(&b, "<a>"), 0);
  dg_errctx_t err;
  assert_int_equal(xt_fail(DG_EXTRACT_XML, NULL, b.data, b.len, NULL, &err), DG_E2BIG);
  assert_true(xt_contains(err.message, "deeper than the limit of 200"));
  assert_string_equal(err.param, "url");
  dg_buf_free(&b);
}

/* One element with n attributes (a0="1" a1="1" ...) inside doc's prefix
 * and suffix. */
static void many_attributes(dg_buf_t *b, unsigned n) {
  for (unsigned i = 0; i < n; i++)
    assert_int_equal(dg_buf_appendf(b, " a%u=\"1\"", i), 0);
}

static void test_attribute_limit(void **state) {
  dg_buf_t b;
  dg_buf_init(&b, SIZE_MAX);
  assert_int_equal(dg_buf_append_str(&b, "<?xml version=\"1.0\"?><r><e"), 0);
  many_attributes(&b, 200000);
  assert_int_equal(dg_buf_append_str(&b, ">x</e></r>"), 0);
  dg_errctx_t err;
  /* Refused before libxml2 compares them (which took minutes). */
  assert_int_equal(xt_fail(DG_EXTRACT_XML, NULL, b.data, b.len, NULL, &err), DG_E2BIG);
  assert_true(xt_contains(err.message, "more than the limit of 1024 attributes"));
  assert_string_equal(err.param, "url");
  dg_buf_free(&b);
}

static void test_attribute_limit_counts_only_start_tags(void **state) {
  dg_buf_t b;
  dg_buf_init(&b, SIZE_MAX);
  /* 1024 on one element, and '=' signs in places that are no attributes. */
  assert_int_equal(dg_buf_append_str(&b, "<?xml version=\"1.0\"?><!-- a=1 b=2 --><r><e"), 0);
  many_attributes(&b, 1023);
  assert_int_equal(dg_buf_append_str(&b, " last=\"x=y > z=w\">v</e><![CDATA[<c "), 0);
  for (int i = 0; i < 2000; i++)
    assert_int_equal(dg_buf_append_str(&b, "k=1 "), 0);
  assert_int_equal(dg_buf_append_str(&b, ">]]><?pi a=1 b=2?></r>"), 0);
  char *t = xt_text(DG_EXTRACT_XML, NULL, b.data, b.len);
  assert_true(xt_contains(t, "x=y > z=w v <c k=1"));
  free(t);
  /* One more attribute is one too many. */
  dg_buf_reset(&b);
  assert_int_equal(dg_buf_append_str(&b, "<r><e"), 0);
  many_attributes(&b, 1025);
  assert_int_equal(dg_buf_append_str(&b, "/></r>"), 0);
  dg_errctx_t err;
  assert_int_equal(xt_fail(DG_EXTRACT_XML, NULL, b.data, b.len, NULL, &err), DG_E2BIG);
  dg_buf_free(&b);
}

/* Scans doc in two pieces split at cut (all of it at once when cut is
 * its length). */
static bool scan_split(const char *doc, size_t cut, unsigned max) {
  dg__attr_scan_t s;
  memset(&s, 0, sizeof(s));
  size_t len = strlen(doc);
  return dg__attr_scan(&s, (const unsigned char *)doc, cut, max) &&
         dg__attr_scan(&s, (const unsigned char *)doc + cut, len - cut, max);
}

static bool scan_bytes(const char *doc, unsigned max) {
  dg__attr_scan_t s;
  memset(&s, 0, sizeof(s));
  for (const char *p = doc; *p != '\0'; p++) {
    if (!dg__attr_scan(&s, (const unsigned char *)p, 1, max))
      return false;
  }
  return true;
}

/* The most attributes on one start tag here is three; four-attribute tags
 * hide in a comment, a CDATA section, a processing instruction, quoted
 * values (with quotes and ">" of the other kind) and an end tag. Wherever
 * the bytes are split, the verdict is the same. */
static void test_attribute_scan_is_the_same_in_any_pieces(void **state) {
  static const char doc[] =
      "<?xml version=\"1.0\"?><!-- <e a=1 b=2 c=3 d=4> -- -> --><r>text > = "
      "<a x=\"1> '<e a=1 b=2 c=3 d=4>\" y='2\" <e a=1 b=2 c=3 d=4>' z=\"3\">v</a x=1 y=2 z=3 w=4>"
      "<![CDATA[ <e a=1 b=2 c=3 d=4> ] ]> ]]><?pi <e a=1 b=2 c=3 d=4> ? > ?>"
      "<b p=\"1\" q=\"2\"/></r>";
  size_t len = strlen(doc);
  for (unsigned max = 0; max <= 4; max++) {
    bool want = max == 0 || max >= 3;
    for (size_t cut = 0; cut <= len; cut++)
      assert_int_equal(scan_split(doc, cut, max), want);
    assert_int_equal(scan_bytes(doc, max), want);
  }
}

static void test_malformed_is_a_clear_error(void **state) {
  dg_errctx_t err;
  const char *doc = "<?xml version=\"1.0\"?>\n<a>\n<b>text</a>";
  assert_int_equal(xt_fail(DG_EXTRACT_XML, NULL, doc, strlen(doc), NULL, &err), DG_EPROTO);
  assert_true(xt_contains(err.message, "not well-formed: line 3"));
  doc = "<a>&undeclared;</a>";
  assert_int_equal(xt_fail(DG_EXTRACT_XML, NULL, doc, strlen(doc), NULL, &err), DG_EPROTO);
  assert_true(xt_contains(err.message, "undeclared"));
  assert_int_equal(xt_fail(DG_EXTRACT_XML, NULL, "", 0, NULL, &err), DG_EPROTO);
}

static void test_encodings(void **state) {
  const char latin1[] = "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><a>caf\xe9</a>";
  char *t = xml(latin1);
  assert_string_equal(t, "caf\xc3\xa9");
  free(t);
  unsigned char u16[128];
  size_t n = 0;
  u16[n++] = 0xfe;
  u16[n++] = 0xff;
  for (const char *p = "<a>\xe9</a>"; *p != '\0'; p++) {
    u16[n++] = 0;
    u16[n++] = (unsigned char)*p;
  }
  t = xt_text(DG_EXTRACT_XML, NULL, u16, n);
  assert_string_equal(t, "\xc3\xa9");
  free(t);
}

static void test_split_anywhere_gives_the_same_text(void **state) {
  const char *doc = "<?xml version=\"1.0\"?><r a=\"v\xc3\xa9\"><x>caf\xc3\xa9 &amp; "
                    "\xf0\x9f\x98\x80</x><![CDATA[cd]]></r>";
  size_t len = strlen(doc);
  char *whole = xml(doc);
  for (size_t pos = 0; pos <= len; pos++) {
    dg__xrun_t run;
    assert_int_equal(dg__xrun_init(&run, DG_EXTRACT_XML, NULL, NULL), 0);
    run.in = (const unsigned char *)doc;
    run.in_len = pos;
    assert_int_equal(dg__xrun_step(&run), 0);
    run.in = (const unsigned char *)doc + pos;
    run.in_len = len - pos;
    run.in_last = true;
    assert_int_equal(dg__xrun_step(&run), 0);
    assert_string_equal(run.text.data, whole);
    dg__xrun_free(&run);
  }
  free(whole);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_text_and_attributes_in_order),
      cmocka_unit_test(test_billion_laughs_expand_nothing),
      cmocka_unit_test(test_external_entities_are_not_loaded),
      cmocka_unit_test(test_depth_limit),
      cmocka_unit_test(test_attribute_limit),
      cmocka_unit_test(test_attribute_limit_counts_only_start_tags),
      cmocka_unit_test(test_attribute_scan_is_the_same_in_any_pieces),
      cmocka_unit_test(test_malformed_is_a_clear_error),
      cmocka_unit_test(test_encodings),
      cmocka_unit_test(test_split_anywhere_gives_the_same_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
