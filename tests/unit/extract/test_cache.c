/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the cache of extracted text: keys and validators,
 * freshness, least-recently-used eviction by bytes and by count, and
 * documents that outlive their eviction while referenced. */
#include "extract_test.h"

#include "extract/internal.h"

static dg_extract_doc_t *doc_of(const char *text) {
  return dg__extract_doc_new(strdup(text), strlen(text), DG_EXTRACT_TXT, NULL);
}

static void test_validators_select_the_version(void **state) {
  dg_extract_cache_t *c = dg_extract_cache_new(1 << 20, 8, 60000);
  dg_extract_doc_t *v1 = doc_of("version one");
  assert_int_equal(dg_extract_cache_put(c, "https://h/a.pdf", "\"e1\"", "Mon, 01 Jan 2024", v1), 0);
  dg_extract_doc_unref(v1);
  dg_extract_doc_t *got = dg_extract_cache_get(c, "https://h/a.pdf", "\"e1\"", NULL);
  assert_non_null(got);
  assert_string_equal(dg_extract_doc_text(got, NULL), "version one");
  dg_extract_doc_unref(got);
  assert_null(dg_extract_cache_get(c, "https://h/a.pdf", "\"e2\"", NULL));
  assert_null(dg_extract_cache_get(c, "https://h/a.pdf", NULL, "Tue, 02 Jan 2024"));
  assert_null(dg_extract_cache_get(c, "https://h/b.pdf", NULL, NULL));
  const char *etag = NULL, *lm = NULL;
  assert_true(dg_extract_cache_validators(c, "https://h/a.pdf", &etag, &lm));
  assert_string_equal(etag, "\"e1\"");
  assert_string_equal(lm, "Mon, 01 Jan 2024");
  /* A new version replaces the old one. */
  dg_extract_doc_t *v2 = doc_of("version two");
  assert_int_equal(dg_extract_cache_put(c, "https://h/a.pdf", "\"e2\"", NULL, v2), 0);
  dg_extract_doc_unref(v2);
  assert_null(dg_extract_cache_get(c, "https://h/a.pdf", "\"e1\"", NULL));
  got = dg_extract_cache_get(c, "https://h/a.pdf", "\"e2\"", NULL);
  assert_string_equal(dg_extract_doc_text(got, NULL), "version two");
  dg_extract_doc_unref(got);
  assert_int_equal(dg_extract_cache_count(c), 1);
  dg_extract_cache_remove(c, "https://h/a.pdf");
  assert_int_equal(dg_extract_cache_count(c), 0);
  assert_int_equal(dg_extract_cache_bytes(c), 0);
  assert_false(dg_extract_cache_validators(c, "https://h/a.pdf", &etag, &lm));
  dg_extract_cache_free(c);
}

static void test_freshness_without_validators(void **state) {
  dg_extract_doc_t *d = doc_of("text");
  dg_extract_cache_t *fresh = dg_extract_cache_new(1 << 20, 8, 3600000);
  dg_extract_cache_t *never = dg_extract_cache_new(1 << 20, 8, 0);
  assert_int_equal(dg_extract_cache_put(fresh, "k", NULL, NULL, d), 0);
  assert_int_equal(dg_extract_cache_put(never, "k", "\"t\"", NULL, d), 0);
  dg_extract_doc_t *got = dg_extract_cache_get(fresh, "k", NULL, NULL);
  assert_ptr_equal(got, d);
  dg_extract_doc_unref(got);
  assert_null(dg_extract_cache_get(never, "k", NULL, NULL));
  got = dg_extract_cache_get(never, "k", "\"t\"", NULL);
  assert_ptr_equal(got, d);
  dg_extract_doc_unref(got);
  dg_extract_cache_free(fresh);
  dg_extract_cache_free(never);
  dg_extract_doc_unref(d);
}

static void test_lru_eviction_by_bytes_and_count(void **state) {
  char text[1000];
  memset(text, 'x', sizeof(text) - 1);
  text[sizeof(text) - 1] = '\0';
  dg_extract_doc_t *d = doc_of(text);
  size_t one = dg_extract_doc_bytes(d);
  /* Room for three entries by bytes, five by count. */
  dg_extract_cache_t *c = dg_extract_cache_new(one * 3 + 600, 5, 60000);
  dg_extract_doc_t *docs[4];
  for (int i = 0; i < 4; i++)
    docs[i] = doc_of(text);
  assert_int_equal(dg_extract_cache_put(c, "a", NULL, NULL, docs[0]), 0);
  assert_int_equal(dg_extract_cache_put(c, "b", NULL, NULL, docs[1]), 0);
  assert_int_equal(dg_extract_cache_put(c, "c", NULL, NULL, docs[2]), 0);
  /* Using "a" makes "b" the least recently used. */
  dg_extract_doc_unref(dg_extract_cache_get(c, "a", NULL, NULL));
  assert_int_equal(dg_extract_cache_put(c, "d", NULL, NULL, docs[3]), 0);
  assert_int_equal(dg_extract_cache_count(c), 3);
  assert_true(dg_extract_cache_bytes(c) <= one * 3 + 600);
  assert_null(dg_extract_cache_get(c, "b", NULL, NULL));
  dg_extract_doc_t *a = dg_extract_cache_get(c, "a", NULL, NULL);
  assert_non_null(a);
  /* An evicted document stays readable while referenced. */
  dg_extract_cache_remove(c, "a");
  assert_string_equal(dg_extract_doc_text(a, NULL), text);
  dg_extract_doc_unref(a);
  /* A document larger than the whole budget is not kept. */
  dg_extract_cache_t *tiny = dg_extract_cache_new(100, 5, 60000);
  assert_int_equal(dg_extract_cache_put(tiny, "big", NULL, NULL, d), DG_E2BIG);
  assert_int_equal(dg_extract_cache_count(tiny), 0);
  dg_extract_cache_free(tiny);
  /* The count bound. */
  dg_extract_cache_t *few = dg_extract_cache_new(1 << 20, 2, 60000);
  for (int i = 0; i < 4; i++) {
    char key[8];
    snprintf(key, sizeof(key), "k%d", i);
    assert_int_equal(dg_extract_cache_put(few, key, NULL, NULL, docs[i]), 0);
  }
  assert_int_equal(dg_extract_cache_count(few), 2);
  assert_null(dg_extract_cache_get(few, "k1", NULL, NULL));
  dg_extract_cache_free(few);
  for (int i = 0; i < 4; i++)
    dg_extract_doc_unref(docs[i]);
  dg_extract_doc_unref(d);
  dg_extract_cache_free(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_validators_select_the_version),
      cmocka_unit_test(test_freshness_without_validators),
      cmocka_unit_test(test_lru_eviction_by_bytes_and_count),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
