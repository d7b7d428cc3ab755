/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for HTML: visible text only, layout from block elements,
 * entities, declared charsets, and the nesting limit. */
#include "extract_test.h"

#include "extract/internal.h"

static char *html(const char *ct, const char *doc) {
  return xt_text(DG_EXTRACT_HTML, ct, doc, strlen(doc));
}

static void test_visible_text_only(void **state) {
  char *t = html(NULL, "<!DOCTYPE html><html><head><title>T</title><style>p{}</style>"
                       "<script>var a = '<p>x</p>';</script><meta name=a content=b></head>"
                       "<body><p>shown</p><script>hidden1()</script><noscript>ns</noscript>"
                       "<template><p>tpl</p></template><div hidden>h2</div>"
                       "<span style=\"color: red; DISPLAY : None\">h3</span>"
                       "<p style=\"visibility:hidden\">h4</p><svg><text>h5</text></svg>"
                       "<iframe>h6</iframe><p>also <span style=\"color:red\">shown</span></p>"
                       "</body></html>");
  assert_string_equal(t, "shown\n\nalso shown");
  free(t);
}

static void test_blocks_breaks_and_white_space(void **state) {
  char *t = html(NULL, "<h1>Title</h1><p>one   two\n three<br>four<br/>five</p>"
                       "<div>d1</div><div>d2<div>d3</div></div><ul><li>a</li><li>b</li></ul>"
                       "<span>x</span><span>y</span> <b>z</b>");
  assert_string_equal(t, "Title\n\none two three\nfour\nfive\n\nd1\nd2\nd3\n\na\nb\n\nxy z");
  free(t);
}

static void test_tables_and_pre(void **state) {
  char *t = html(NULL, "<table><tr><th>Name</th><th>Qty</th></tr>"
                       "<tr><td>Bolt</td><td>3</td></tr><tr><td></td><td>4</td></tr></table>"
                       "<pre>  a  b\n    c</pre><p>after</p>");
  assert_string_equal(t, "Name | Qty\nBolt | 3\n| 4\n\n  a  b\n    c\n\nafter");
  free(t);
}

static void test_entities_decoded(void **state) {
  char *t = html(NULL, "<p>caf&eacute; &amp; &lt;b&gt; &#x1F600; &#233;&nbsp;x &copy;</p>");
  assert_string_equal(t, "caf\xc3\xa9 & <b> \xf0\x9f\x98\x80 \xc3\xa9 x \xc2\xa9");
  free(t);
}

static void test_declared_charsets_are_honoured(void **state) {
  const char *body = "<html><body><p>caf\xe9 \x80</p></body></html>";
  char *t = html("text/html; charset=windows-1252", body);
  assert_string_equal(t, "caf\xc3\xa9 \xe2\x82\xac");
  free(t);
  t = html(NULL, "<html><head><meta charset=\"iso-8859-1\"></head><body><p>caf\xe9</p></body>"
                 "</html>");
  assert_string_equal(t, "caf\xc3\xa9");
  free(t);
  t = html(NULL, "<html><head><meta http-equiv=\"Content-Type\" "
                 "content=\"text/html; charset=ISO-8859-1\"></head><body>na\xefve</body></html>");
  assert_string_equal(t, "na\xc3\xafve");
  free(t);
  /* Without any declaration: Windows-1252 unless the bytes are UTF-8. */
  t = html(NULL, "<p>caf\xe9 \x93q\x94</p>");
  assert_string_equal(t, "caf\xc3\xa9 \xe2\x80\x9cq\xe2\x80\x9d");
  free(t);
  t = html(NULL, "<p>\xe4\xb8\xad\xe6\x96\x87</p>");
  assert_string_equal(t, "\xe4\xb8\xad\xe6\x96\x87");
  free(t);
}

static void test_utf16_with_bom(void **state) {
  const char *ascii = "<p>hi &amp; \xe9</p>";
  unsigned char buf[128];
  size_t n = 0;
  buf[n++] = 0xff;
  buf[n++] = 0xfe;
  for (const char *p = ascii; *p != '\0'; p++) {
    buf[n++] = (unsigned char)*p;
    buf[n++] = 0;
  }
  char *t = xt_text(DG_EXTRACT_HTML, NULL, buf, n);
  assert_string_equal(t, "hi & \xc3\xa9");
  free(t);
}

static void test_nesting_limit(void **state) {
  dg_buf_t b;
  dg_buf_init(&b, SIZE_MAX);
  for (int i = 0; i < 300; i++)
    assert_int_equal(dg_buf_append_str(&b, "<div>"), 0);
  assert_int_equal(dg_buf_append_str(&b, "deep"), 0);
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  dg_errctx_t err;
  assert_int_equal(xt_fail(DG_EXTRACT_HTML, NULL, b.data, b.len, &limits, &err), DG_E2BIG);
  assert_true(xt_contains(err.message, "deeper than the limit of 200"));
  limits.max_depth = 1000;
  dg_extract_doc_t *doc = xt_extract(DG_EXTRACT_HTML, NULL, b.data, b.len, &limits);
  assert_string_equal(dg_extract_doc_text(doc, NULL), "deep");
  dg_extract_doc_unref(doc);
  dg_buf_free(&b);
}

static void test_huge_single_line_is_bounded(void **state) {
  size_t n = (size_t)3 << 20;
  char *doc = malloc(n + 16);
  assert_non_null(doc);
  memcpy(doc, "<p>", 3);
  memset(doc + 3, 'y', n);
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_text_bytes = (size_t)1 << 20;
  dg_extract_doc_t *d = xt_extract(DG_EXTRACT_HTML, NULL, doc, n + 3, &limits);
  size_t len = 0;
  dg_extract_doc_text(d, &len);
  assert_int_equal(len, limits.max_text_bytes);
  assert_non_null(dg_extract_doc_truncated(d));
  dg_extract_doc_unref(d);
  free(doc);
}

static void test_split_anywhere_gives_the_same_text(void **state) {
  const char *doc = "<html><head><meta charset=utf-8><title>x</title></head><body>"
                    "<p>caf\xc3\xa9 &amp; <b>bold</b></p><script>no</script>"
                    "<div>\xf0\x9f\x98\x80 end</div></body></html>";
  size_t len = strlen(doc);
  char *whole = html(NULL, doc);
  for (size_t pos = 0; pos <= len; pos++) {
    dg__xrun_t run;
    assert_int_equal(dg__xrun_init(&run, DG_EXTRACT_HTML, NULL, NULL), 0);
    run.in = (const unsigned char *)doc;
    run.in_len = pos;
    assert_int_equal(dg__xrun_step(&run), 0);
    run.in = (const unsigned char *)doc + pos;
    run.in_len = len - pos;
    run.in_last = true;
    assert_int_equal(dg__xrun_step(&run), 0);
    assert_true(run.done);
    assert_string_equal(run.text.data, whole);
    dg__xrun_free(&run);
  }
  free(whole);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_visible_text_only),
      cmocka_unit_test(test_blocks_breaks_and_white_space),
      cmocka_unit_test(test_tables_and_pre),
      cmocka_unit_test(test_entities_decoded),
      cmocka_unit_test(test_declared_charsets_are_honoured),
      cmocka_unit_test(test_utf16_with_bom),
      cmocka_unit_test(test_nesting_limit),
      cmocka_unit_test(test_huge_single_line_is_bounded),
      cmocka_unit_test(test_split_anywhere_gives_the_same_text),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
