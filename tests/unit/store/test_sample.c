/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for sample.c: reading a directory of sample data files into
 * writes, and the message for each kind of mistake in a file. */
#include <sys/stat.h>
#include <unistd.h>

#include "store/internal.h"
#include "store/store_test.h"

static char dir[64];

static int make_dir(void **state) {
  snprintf(dir, sizeof(dir), "/tmp/dg-sample-XXXXXX");
  assert_non_null(mkdtemp(dir));
  return st_setup(state);
}

static int remove_dir(void **state) {
  char path[256];
  const char *names[] = {"a.json", "b.json", "notes.txt"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(names); i++) {
    snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
    unlink(path);
  }
  rmdir(dir);
  return st_teardown(state);
}

static void put(const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static int read_dir(st_fixture_t *fx, dg_store_write_t **w, size_t *n) {
  dg_errctx_clear(&fx->err);
  return dg__store_sample_read(fx->cat, dir, fx->arena, w, n, &fx->err);
}

static void test_reads_files_in_order(void **state) {
  st_fixture_t *fx = *state;
  put("b.json", "{\"model\": \"Orders\", \"entities\": [{\"id\": "
                "\"AB09E981-C410-59EA-AB18-42A523A9EA0F\", \"orderNumber\": \"SO-1\", "
                "\"Amount\": 12.5, \"OrderDate\": \"2024-01-02\", \"Customer\": null}]}");
  put("a.json", "{\"model\": \"cb94c4ab-8c1d-4fae-b582-9746427cad35\", \"entities\": []}");
  put("notes.txt", "not data");
  dg_store_write_t *w = NULL;
  size_t n = 0;
  assert_int_equal(read_dir(fx, &w, &n), 0);
  assert_int_equal(n, 1);
  assert_string_equal(w[0].model->name, "Orders");
  assert_int_equal(w[0].mode, DG_STORE_CREATE);
  assert_string_equal(w[0].id, "ab09e981-c410-59ea-ab18-42a523a9ea0f");
  assert_int_equal(w[0].nvalues, 4);
  assert_string_equal(w[0].props[0]->name, "OrderNumber");
  assert_int_equal(w[0].values[3].kind, DG_STORE_NULL);
}

static void test_missing_dir_is_no_data(void **state) {
  st_fixture_t *fx = *state;
  dg_store_write_t *w = NULL;
  size_t n = 7;
  dg_errctx_clear(&fx->err);
  assert_int_equal(dg__store_sample_read(fx->cat, "/nonexistent/dg", fx->arena, &w, &n, &fx->err),
                   0);
  assert_int_equal(n, 0);
}

static void test_mistakes(void **state) {
  st_fixture_t *fx = *state;
  const char *cases[][2] = {
      {"{\"model\": \"Orders\", \"entities\": [", "line 1"},
      {"[]", "must be an object {\"model\": name, \"entities\": [...]}"},
      {"{\"model\": \"Orders\", \"entities\": [], \"extra\": 1}", "must be an object"},
      {"{\"model\": \"Invoices\", \"entities\": []}", "/model: no Data Model named 'Invoices'"},
      {"{\"model\": \"Orders\", \"entities\": [{\"OrderNumber\": \"x\"}]}",
       "entities[0]: must be an object with an \"id\" GUID"},
      {"{\"model\": \"Orders\", \"entities\": [{\"id\": \"00000000-0000-4000-8000-000000000001\", "
       "\"Colour\": \"red\"}]}",
       "entities[0].Colour: Orders has no property 'Colour'"},
      {"{\"model\": \"Orders\", \"entities\": [{\"id\": \"00000000-0000-4000-8000-000000000001\", "
       "\"OrderLines\": []}]}",
       "Inbound reference"},
      {"{\"model\": \"Orders\", \"entities\": [{\"id\": \"00000000-0000-4000-8000-000000000001\", "
       "\"Quantity\": \"many\"}]}",
       "entities[0].Quantity': got \"many\""},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(cases); i++) {
    put("a.json", cases[i][0]);
    dg_store_write_t *w = NULL;
    size_t n = 0;
    if (read_dir(fx, &w, &n) != DG_ECONFIG)
      fail_msg("case %zu accepted", i);
    st_contains(fx->err.message, "/a.json: ", cases[i][1], NULL);
    assert_int_equal(n, 0);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_reads_files_in_order, make_dir, remove_dir),
      cmocka_unit_test_setup_teardown(test_missing_dir_is_no_data, make_dir, remove_dir),
      cmocka_unit_test_setup_teardown(test_mistakes, make_dir, remove_dir),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
