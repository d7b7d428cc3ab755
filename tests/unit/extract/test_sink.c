/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the text sink: white space, breaks, labels, line ends,
 * replacement of invalid input and the output bound. */
#include "extract_test.h"

#include "extract/internal.h"

typedef struct sink_fixture {
  dg_buf_t buf;
  dg__sink_t sink;
} sink_fixture_t;

static void start(sink_fixture_t *f, size_t max) {
  dg_buf_init(&f->buf, max);
  dg__sink_init(&f->sink, &f->buf);
}

static const char *text_of(sink_fixture_t *f) {
  return f->buf.data != NULL ? f->buf.data : "";
}

static void put(sink_fixture_t *f, const char *s) {
  dg__sink_text(&f->sink, s, strlen(s));
}

static void test_collapses_white_space(void **state) {
  sink_fixture_t f;
  start(&f, 1024);
  put(&f, "  Hello \t\n  world  ");
  put(&f, "\xc2\xa0"
          "again");
  assert_string_equal(text_of(&f), "Hello world again");
  dg_buf_free(&f.buf);
}

static void test_breaks_merge_and_never_trail(void **state) {
  sink_fixture_t f;
  start(&f, 1024);
  dg__sink_break(&f.sink, DG__BREAK_PARA);
  put(&f, "one");
  dg__sink_break(&f.sink, DG__BREAK_LINE);
  dg__sink_break(&f.sink, DG__BREAK_SPACE);
  put(&f, "two");
  dg__sink_break(&f.sink, DG__BREAK_PARA);
  dg__sink_break(&f.sink, DG__BREAK_LINE);
  put(&f, "three");
  dg__sink_break(&f.sink, DG__BREAK_PARA);
  assert_string_equal(text_of(&f), "one\ntwo\n\nthree");
  dg_buf_free(&f.buf);
}

static void test_labels_lazy_and_eager(void **state) {
  sink_fixture_t f;
  start(&f, 1024);
  dg__sink_label(&f.sink, "--- Header ---", false);
  dg__sink_label(&f.sink, "--- Footer ---", false);
  put(&f, "body");
  dg__sink_label(&f.sink, "--- Empty ---", false);
  dg__sink_label(&f.sink, NULL, false);
  dg__sink_label(&f.sink, "--- Page 2 ---", true);
  assert_string_equal(text_of(&f), "--- Footer ---\nbody\n\n--- Page 2 ---\n");
  dg_buf_free(&f.buf);
}

static void test_preserve_keeps_spaces_and_normalises_line_ends(void **state) {
  sink_fixture_t f;
  start(&f, 1024);
  dg__sink_preserve(&f.sink, true);
  put(&f, "a  b\r\nc\rd\r");
  put(&f, "\ne\n\n");
  assert_string_equal(text_of(&f), "a  b\nc\nd\ne\n\n");
  dg_buf_free(&f.buf);
}

static void test_invalid_input_is_replaced(void **state) {
  sink_fixture_t f;
  start(&f, 1024);
  dg__sink_preserve(&f.sink, true);
  dg__sink_text(&f.sink,
                "a\xff"
                "b\xe4\xb8"
                "c\x00"
                "d\xc3",
                9);
  assert_string_equal(text_of(&f), "a\xef\xbf\xbd"
                                   "b\xef\xbf\xbd"
                                   "c\xef\xbf\xbd"
                                   "d\xef\xbf\xbd");
  dg__sink_rune(&f.sink, 0xdc00);
  assert_int_equal(f.buf.len, 4 + 4 * 3 + 3);
  dg_buf_free(&f.buf);
}

static void test_bound_cuts_on_a_character_boundary(void **state) {
  sink_fixture_t f;
  start(&f, 10);
  put(&f, "ab\xe4\xb8\xad\xe4\xb8\xad\xe4\xb8\xad");
  /* 2 + 3 + 3 = 8 fits; the third character would need 11 bytes. */
  assert_int_equal(f.buf.len, 8);
  assert_true(f.sink.truncated);
  put(&f, "x");
  assert_int_equal(f.buf.len, 8);
  dg_buf_free(&f.buf);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_collapses_white_space),
      cmocka_unit_test(test_breaks_merge_and_never_trail),
      cmocka_unit_test(test_labels_lazy_and_eager),
      cmocka_unit_test(test_preserve_keeps_spaces_and_normalises_line_ends),
      cmocka_unit_test(test_invalid_input_is_replaced),
      cmocka_unit_test(test_bound_cuts_on_a_character_boundary),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
