/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The configuration files behind the admin API: the version, the check of
 * a change in a staging directory (the directory itself untouched) and
 * the atomic write that keeps the previous version. */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "admin/internal.h"

static const char *const names[] = {"datagate.json",      "models.json",    "connectors.json",
                                    "saved_queries.json", "endpoints.json", "files.json"};

typedef struct fixture {
  char dir[64];
  char tmp[64];
} fixture_t;

static char *slurp(const char *dir, const char *name) {
  char path[512];
  if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
    return NULL; /* DG_SOURCE_DIR too long for the test */
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return NULL;
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof(text) - 1, f);
  fclose(f);
  text[n] = '\0';
  return strdup(text);
}

static void put(const char *dir, const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static size_t entries(const char *dir) {
  DIR *d = opendir(dir);
  assert_non_null(d);
  size_t n = 0;
  for (struct dirent *e = readdir(d); e != NULL; e = readdir(d))
    n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
  closedir(d);
  return n;
}

static void remove_all(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return;
  for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
    char path[512];
    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
    if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
      unlink(path);
  }
  closedir(d);
  rmdir(dir);
}

/* A copy of the sample configuration (without its data) and an empty
 * TMPDIR, where the staging directories go. */
static int setup(void **state) {
  fixture_t *f = calloc(1, sizeof(*f));
  dg_strlcpy(f->dir, "/tmp/dg_admin_XXXXXX", sizeof(f->dir));
  dg_strlcpy(f->tmp, "/tmp/dg_admin_tmp_XXXXXX", sizeof(f->tmp));
  assert_non_null(mkdtemp(f->dir));
  assert_non_null(mkdtemp(f->tmp));
  char src[4096];
  const char *root = getenv("DG_SOURCE_DIR");
  snprintf(src, sizeof(src), "%s/conf", root ? root : ".");
  for (size_t i = 0; i < DG_ARRAY_SIZE(names); i++) {
    char *text = slurp(src, names[i]);
    assert_non_null(text);
    put(f->dir, names[i], text);
    free(text);
  }
  setenv("TMPDIR", f->tmp, 1);
  setenv("DATAGATE_TOKEN_ADMIN", "unit-admin", 1);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture_t *f = *state;
  remove_all(f->dir);
  remove_all(f->tmp);
  free(f);
  return 0;
}

static json_t *endpoints(const fixture_t *f) {
  char *text = slurp(f->dir, "endpoints.json");
  json_t *doc = json_loads(text, 0, NULL);
  free(text);
  assert_non_null(doc);
  return doc;
}

static void test_version(void **state) {
  fixture_t *f = *state;
  char a[33], b[33], c[33];
  assert_int_equal(dg_admin_version(f->dir, a), 0);
  assert_int_equal(strlen(a), 32);
  assert_int_equal(dg_admin_version(f->dir, b), 0);
  assert_string_equal(a, b);
  char *text = slurp(f->dir, "files.json");
  put(f->dir, "files.json", "{}");
  assert_int_equal(dg_admin_version(f->dir, c), 0);
  assert_string_not_equal(a, c);
  put(f->dir, "files.json", text);
  free(text);
  assert_int_equal(dg_admin_version(f->dir, c), 0);
  assert_string_equal(a, c);
  char path[512];
  snprintf(path, sizeof(path), "%s/files.json", f->dir);
  unlink(path);
  assert_int_equal(dg_admin_version(f->dir, c), 0);
  assert_string_not_equal(a, c);
}

static void test_writable(void **state) {
  assert_true(dg_admin_file_writable("endpoints.json"));
  assert_true(dg_admin_file_writable("models.json"));
  assert_false(dg_admin_file_writable("datagate.json"));
  assert_false(dg_admin_file_writable("../endpoints.json"));
}

static void test_check_invalid(void **state) {
  fixture_t *f = *state;
  char *before = slurp(f->dir, "endpoints.json");
  size_t n = entries(f->dir);
  json_t *doc = endpoints(f);
  json_t *save = json_object_get(json_array_get(json_object_get(doc, "endpoints"), 0), "save");
  json_object_set_new(json_object_get(save, "request"), "path",
                      json_string("/orders/{SESSION:Nope}"));
  json_t *files = json_pack("{s:o}", "endpoints.json", doc);
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = NULL;
  assert_int_equal(dg_admin_check(f->dir, files, &cat, &errors), DG_ECONFIG);
  assert_null(cat);
  bool found = false;
  for (size_t i = 0; i < errors.count; i++)
    found |= strncmp(errors.lines[i], "endpoints.json: /endpoints/0/save/request/path: ",
                     strlen("endpoints.json: /endpoints/0/save/request/path: ")) == 0;
  assert_true(found);
  dg_config_errors_free(&errors);
  char *after = slurp(f->dir, "endpoints.json");
  assert_string_equal(before, after);
  assert_int_equal(entries(f->dir), n);
  assert_int_equal(entries(f->tmp), 0);
  free(before);
  free(after);
  json_decref(files);
}

static void test_check_valid(void **state) {
  fixture_t *f = *state;
  json_t *doc = endpoints(f);
  json_t *save = json_object_get(json_array_get(json_object_get(doc, "endpoints"), 0), "save");
  json_object_set_new(save, "title", json_string("Checked Title"));
  json_t *files = json_pack("{s:o}", "endpoints.json", doc);
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = NULL;
  assert_int_equal(dg_admin_check(f->dir, files, &cat, &errors), 0);
  assert_int_equal(errors.count, 0);
  assert_string_equal(dg_catalog_endpoint(cat, "OrderEdit")->root->title, "Checked Title");
  dg_catalog_unref(cat);
  dg_config_errors_free(&errors);
  assert_int_equal(entries(f->tmp), 0);
  json_decref(files);
}

static void test_write(void **state) {
  fixture_t *f = *state;
  char *before = slurp(f->dir, "endpoints.json");
  size_t n = entries(f->dir);
  json_t *doc = endpoints(f);
  json_object_set_new(json_array_get(json_object_get(doc, "endpoints"), 0), "description",
                      json_string("written"));
  json_t *files = json_pack("{s:O}", "endpoints.json", doc);
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_admin_write(f->dir, files, &err), 0);
  char *prev = slurp(f->dir, "endpoints.json.prev");
  assert_non_null(prev);
  assert_string_equal(prev, before);
  char *now = slurp(f->dir, "endpoints.json");
  json_t *back = json_loads(now, 0, NULL);
  assert_true(json_equal(back, doc));
  /* The new file and .prev, no temporary file left behind. */
  assert_int_equal(entries(f->dir), n + 1);
  dg_catalog_t *cat = NULL;
  assert_int_equal(dg_catalog_load(f->dir, &cat, NULL), 0);
  assert_string_equal(dg_catalog_endpoint(cat, "OrderEdit")->description, "written");
  dg_catalog_unref(cat);
  json_decref(back);
  json_decref(doc);
  json_decref(files);
  free(before);
  free(prev);
  free(now);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_version, setup, teardown),
      cmocka_unit_test(test_writable),
      cmocka_unit_test_setup_teardown(test_check_invalid, setup, teardown),
      cmocka_unit_test_setup_teardown(test_check_valid, setup, teardown),
      cmocka_unit_test_setup_teardown(test_write, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
