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

/* Words go out with their spaces in one piece; the text, and where the
 * bound cuts it, must be what a byte at a time gives. */
static void test_words_in_one_piece_equal_a_byte_at_a_time(void **state) {
  static const char text[] = "One two  three\tfour \n five.  Six seven a b c d e f g h i j k "
                             "lmno-pqrs (tuv) wxyz! end";
  for (size_t max = 1; max <= sizeof(text) + 4; max++) {
    sink_fixture_t whole, bytes;
    start(&whole, max);
    start(&bytes, max);
    dg__sink_break(&whole.sink, DG__BREAK_PARA);
    dg__sink_break(&bytes.sink, DG__BREAK_PARA);
    put(&whole, "Lead");
    put(&bytes, "Lead");
    dg__sink_break(&whole.sink, DG__BREAK_LINE);
    dg__sink_break(&bytes.sink, DG__BREAK_LINE);
    put(&whole, text);
    for (size_t i = 0; text[i] != '\0'; i++)
      dg__sink_text(&bytes.sink, text + i, 1);
    assert_string_equal(text_of(&whole), text_of(&bytes));
    assert_int_equal(whole.sink.truncated, bytes.sink.truncated);
    dg_buf_free(&whole.buf);
    dg_buf_free(&bytes.buf);
  }
}

/* One step of a script for two runs: text, a break or a label. */
typedef struct op {
  const char *text;
  unsigned brk;
  const char *label;
} op_t;

static void apply(dg__xrun_t *run, const op_t *op) {
  if (op->text != NULL)
    dg__sink_text(&run->sink, op->text, strlen(op->text));
  if (op->brk != DG__BREAK_NONE)
    dg__sink_break(&run->sink, op->brk);
  if (op->label != NULL)
    dg__sink_label(&run->sink, op->label, true);
}

/* The extractor process forgets the text it has sent: the text that
 * follows, its breaks (which look back at trailing newlines) and where
 * the limit cuts it must be those of a run that kept everything. */
static void test_forgetting_handed_on_text_changes_nothing(void **state) {
  static const op_t script[] = {
      {"alpha", DG__BREAK_LINE, NULL},
      {NULL, DG__BREAK_PARA, NULL},
      {"beta\n", DG__BREAK_PARA, NULL},
      {NULL, DG__BREAK_NONE, "--- Page 2 ---"},
      {"gamma \xc3\xa9", DG__BREAK_SPACE, NULL},
      {"delta", DG__BREAK_LINE, NULL},
      {"epsilon zeta eta theta", DG__BREAK_PARA, NULL},
      {"iota", DG__BREAK_NONE, NULL},
  };
  bool cut = false, whole_text = false; /* both cases are tried */
  for (size_t max = 10; max <= 130; max += 15) {
    dg_extract_limits_t limits;
    dg_extract_limits_default(&limits);
    limits.max_text_bytes = max;
    dg__xrun_t whole, forgetful;
    assert_int_equal(dg__xrun_init(&whole, DG_EXTRACT_TXT, &limits, NULL), 0);
    assert_int_equal(dg__xrun_init(&forgetful, DG_EXTRACT_TXT, &limits, NULL), 0);
    dg_buf_t sent;
    dg_buf_init(&sent, 4096);
    size_t at = 0; /* bytes of forgetful's text already in sent */
    for (size_t i = 0; i < DG_ARRAY_SIZE(script); i++) {
      apply(&whole, &script[i]);
      apply(&forgetful, &script[i]);
      assert_int_equal(dg_buf_append(&sent, forgetful.text.data + at, forgetful.text.len - at), 0);
      at = forgetful.text.len - dg__xrun_forget(&forgetful, forgetful.text.len);
      assert_true(forgetful.text.len <= DG__SINK_LOOKBACK);
    }
    assert_int_equal(dg_buf_append(&sent, forgetful.text.data + at, forgetful.text.len - at), 0);
    assert_string_equal(sent.data, whole.text.data);
    assert_int_equal(forgetful.sink.truncated, whole.sink.truncated);
    cut |= whole.sink.truncated;
    whole_text |= !whole.sink.truncated;
    dg_buf_free(&sent);
    dg__xrun_free(&whole);
    dg__xrun_free(&forgetful);
  }
  assert_true(cut && whole_text);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_collapses_white_space),
      cmocka_unit_test(test_breaks_merge_and_never_trail),
      cmocka_unit_test(test_labels_lazy_and_eager),
      cmocka_unit_test(test_preserve_keeps_spaces_and_normalises_line_ends),
      cmocka_unit_test(test_invalid_input_is_replaced),
      cmocka_unit_test(test_bound_cuts_on_a_character_boundary),
      cmocka_unit_test(test_forgetting_handed_on_text_changes_nothing),
      cmocka_unit_test(test_words_in_one_piece_equal_a_byte_at_a_time),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
