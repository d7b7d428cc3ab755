/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the chunker, the documents it reads and the File text
 * envelope: boundaries, character offsets over multi-byte text, arbitrary
 * offsets, and the agreement of chunks cut from a document with chunks cut
 * from plain text. */
#include "extract_test.h"

#include "extract/internal.h"

static dg_extract_chunk_t chunk_at(const char *text, uint64_t offset, size_t size) {
  dg_extract_chunk_t c;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_extract_chunk_text(text, strlen(text), offset, size, &c, &err), 0);
  return c;
}

/* Builds a text of n characters repeating unit. */
static char *repeat(const char *unit, size_t times) {
  size_t u = strlen(unit);
  char *s = malloc(u * times + 1);
  assert_non_null(s);
  for (size_t i = 0; i < times; i++)
    memcpy(s + i * u, unit, u);
  s[u * times] = '\0';
  return s;
}

static void test_prefers_paragraph_then_sentence_then_line_then_space(void **state) {
  /* 20-character chunks: the window is the last 4 characters. */
  dg_extract_chunk_t c = chunk_at("aaaaaaaaaaaaaaaa\n\nbb. cc dd", 0, 20);
  assert_int_equal(c.len, 18);
  assert_int_equal(c.next_offset, 18);
  c = chunk_at("aaaaaaaaaaaaaaa. b cc dd", 0, 20);
  assert_int_equal(c.len, 17);
  c = chunk_at("aaaaaaaaaaaaaaa b\ncc dd", 0, 20);
  assert_int_equal(c.len, 18);
  c = chunk_at("aaaaaaaaaaaaaaaa bb cc", 0, 20);
  assert_int_equal(c.len, 20);
  assert_memory_equal(c.text + 17, "bb ", 3);
  /* No boundary near the limit: cut at the limit. */
  c = chunk_at("aaaaa aaaaaaaaaaaaaaaaaaaaa", 0, 20);
  assert_int_equal(c.len, 20);
  assert_true(c.has_more);
}

static void test_cjk_full_stop_is_a_sentence_end(void **state) {
  /* 18 ideographs, a full stop, then more: the chunk ends after the stop. */
  char *head = repeat("\xe4\xb8\xad", 17);
  char text[256];
  snprintf(text, sizeof(text), "%s\xe3\x80\x82\xe6\x96\x87\xe6\x96\x87\xe6\x96\x87 x", head);
  dg_extract_chunk_t c = chunk_at(text, 0, 20);
  assert_int_equal(c.next_offset, 18);
  assert_int_equal(c.len, 18 * 3);
  free(head);
}

/* Walks a text chunk by chunk and checks that the chunks tile it. */
static void walk_and_check(const char *text, size_t size) {
  size_t len = strlen(text), bytes = 0;
  uint64_t offset = 0, total = dg__utf8_count(text, len);
  dg_extract_chunk_t c;
  do {
    c = chunk_at(text, offset, size);
    assert_int_equal(c.offset, offset);
    assert_ptr_equal(c.text, text + bytes);
    assert_true(c.next_offset - c.offset <= size);
    assert_int_equal(dg__utf8_count(c.text, c.len), c.next_offset - c.offset);
    /* Never inside a UTF-8 sequence. */
    assert_true(bytes + c.len == len || ((unsigned char)text[bytes + c.len] & 0xc0) != 0x80);
    bytes += c.len;
    offset = c.next_offset;
    assert_true(c.has_more == (offset < total));
  } while (c.has_more);
  assert_int_equal(bytes, len);
  assert_int_equal(offset, total);
}

static void test_offsets_count_characters_over_multibyte_text(void **state) {
  char *cjk =
      repeat("\xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e\xe3\x81\xae\xe6\x96\x87\xe3\x80\x82", 40);
  char *emoji = repeat("\xf0\x9f\x98\x80 \xf0\x9f\x91\x8d\xf0\x9f\x8f\xbd. ", 50);
  char *mixed = repeat("caf\xc3\xa9 \xe4\xb8\xad\xe6\x96\x87 \xf0\x9f\x98\x80\n", 60);
  walk_and_check(cjk, 16);
  walk_and_check(cjk, 37);
  walk_and_check(emoji, 16);
  walk_and_check(emoji, 23);
  walk_and_check(mixed, 50);
  /* The first chunk of CJK text ends after the full stop in its last fifth. */
  dg_extract_chunk_t c = chunk_at(cjk, 0, 20);
  assert_int_equal(c.next_offset, 18);
  assert_int_equal(c.len, 18 * 3);
  /* An emoji offset lands on the emoji. */
  c = chunk_at(emoji, 2, 16);
  assert_memory_equal(c.text, "\xf0\x9f\x91\x8d", 4);
  free(cjk);
  free(emoji);
  free(mixed);
}

static void test_any_offset_and_the_end(void **state) {
  const char *text = "one two three four five six seven eight nine ten";
  uint64_t total = strlen(text);
  dg_extract_chunk_t c = chunk_at(text, 5, 16);
  assert_memory_equal(c.text, "wo ", 3);
  c = chunk_at(text, total, 16);
  assert_int_equal(c.len, 0);
  assert_false(c.has_more);
  assert_int_equal(c.next_offset, total);
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_extract_chunk_text(text, total, total + 1, 16, &c, &err), DG_EINVAL);
  assert_string_equal(err.param, "offset");
  assert_true(xt_contains(err.message, "48 characters"));
  assert_int_equal(dg_extract_chunk_text(text, total, 0, 3, &c, &err), DG_EINVAL);
  assert_string_equal(err.param, "chunkChars");
  c = chunk_at("", 0, 16);
  assert_int_equal(c.len, 0);
  assert_false(c.has_more);
}

static void test_growing_text_waits_for_one_more_character(void **state) {
  const char *text = "aaaaaaaaaaaaaaaaaaaabbbb";
  size_t end = 0;
  uint64_t chars = 0;
  assert_false(dg__chunk_end(text, 20, 0, 20, false, &end, &chars));
  assert_true(dg__chunk_end(text, 21, 0, 20, false, &end, &chars));
  assert_int_equal(end, 20);
  assert_true(dg__chunk_end(text, 20, 0, 20, true, &end, &chars));
  assert_int_equal(chars, 20);
}

static void test_document_chunks_equal_text_chunks(void **state) {
  /* Long enough for several index steps, with multi-byte characters. */
  char *text = repeat("Sentence with \xc3\xa9l\xc3\xa8ve and \xe4\xb8\xad\xe6\x96\x87. ", 2000);
  size_t len = strlen(text);
  char *copy = strdup(text);
  dg_extract_doc_t *doc = dg__extract_doc_new(copy, len, DG_EXTRACT_TXT, NULL);
  assert_non_null(doc);
  assert_int_equal(dg_extract_doc_chars(doc), dg__utf8_count(text, len));
  static const uint64_t offsets[] = {0, 1, 4095, 4096, 4097, 12345, 50000, 55999, 56000};
  for (size_t i = 0; i < DG_ARRAY_SIZE(offsets); i++) {
    dg_extract_chunk_t a, b;
    dg_errctx_t err;
    assert_int_equal(dg_extract_doc_chunk(doc, offsets[i], 1000, &a, &err), 0);
    b = chunk_at(text, offsets[i], 1000);
    assert_int_equal(a.len, b.len);
    assert_memory_equal(a.text, b.text, a.len);
    assert_int_equal(a.next_offset, b.next_offset);
    assert_int_equal(a.has_more, b.has_more);
  }
  dg_extract_chunk_t c;
  dg_errctx_t err;
  assert_int_equal(dg_extract_doc_chunk(doc, 56001, 1000, &c, &err), DG_EINVAL);
  assert_true(dg_extract_doc_bytes(doc) > len);
  dg_extract_doc_unref(doc);
  free(text);
}

static void test_every_chunk_of_a_cut_text_says_so(void **state) {
  char *text = repeat("Some words. ", 100);
  dg_extract_doc_t *doc =
      dg__extract_doc_new(strdup(text), strlen(text), DG_EXTRACT_TXT, "cut at 1200 bytes");
  assert_non_null(doc);
  dg_extract_chunk_t c = {.has_more = true};
  dg_errctx_t err;
  size_t chunks = 0;
  for (uint64_t at = 0; c.has_more; at = c.next_offset, chunks++) {
    assert_int_equal(dg_extract_doc_chunk(doc, at, 100, &c, &err), 0);
    assert_non_null(c.truncated);
    assert_string_equal(c.truncated, "cut at 1200 bytes");
  }
  assert_true(chunks > 5);
  dg_extract_doc_unref(doc);
  free(text);
}

static void test_envelope(void **state) {
  dg_extract_chunk_t c = {.text = "caf\xc3\xa9",
                          .len = 5,
                          .offset = 10,
                          .next_offset = 14,
                          .has_more = true,
                          .format = DG_EXTRACT_PDF};
  json_t *j = dg_extract_chunk_json(&c);
  assert_string_equal(json_string_value(json_object_get(j, "text")), "caf\xc3\xa9");
  assert_int_equal(json_integer_value(json_object_get(j, "offset")), 10);
  assert_int_equal(json_integer_value(json_object_get(j, "nextOffset")), 14);
  assert_true(json_is_true(json_object_get(j, "hasMore")));
  assert_string_equal(json_string_value(json_object_get(j, "format")), "PDF");
  assert_null(json_object_get(j, "truncated"));
  json_decref(j);
  c.has_more = false;
  c.truncated = "only the first 2 of 3 pages were extracted";
  j = dg_extract_chunk_json(&c);
  assert_true(json_is_null(json_object_get(j, "nextOffset")));
  assert_true(json_is_false(json_object_get(j, "hasMore")));
  assert_true(json_is_true(json_object_get(j, "truncated")));
  assert_string_equal(json_string_value(json_object_get(j, "truncatedReason")), c.truncated);
  json_decref(j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_prefers_paragraph_then_sentence_then_line_then_space),
      cmocka_unit_test(test_cjk_full_stop_is_a_sentence_end),
      cmocka_unit_test(test_offsets_count_characters_over_multibyte_text),
      cmocka_unit_test(test_any_offset_and_the_end),
      cmocka_unit_test(test_growing_text_waits_for_one_more_character),
      cmocka_unit_test(test_document_chunks_equal_text_chunks),
      cmocka_unit_test(test_every_chunk_of_a_cut_text_says_so),
      cmocka_unit_test(test_envelope),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
