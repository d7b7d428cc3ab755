/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Helpers for catalog tests that load a temporary configuration directory:
 * the sample's models.json plus the files a test writes, then checks the
 * exact "file: json/path: message" lines of a failed load. */
#ifndef DG_TEST_CONF_TEST_H
#define DG_TEST_CONF_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datagate/catalog.h"

#define CONF_TEST_MINIMAL_DATAGATE                                                                 \
  "{\"roles\": [{\"name\": \"r\", \"models\": [{\"model\": \"*\"}], \"savedQueries\": [\"*\"]}]}"

typedef struct conf_test_dir {
  char dir[64];
} conf_test_dir_t;

static inline void conf_test_write(const char *dir, const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static inline char *conf_test_read_sample(const char *name) {
  char path[4096];
  const char *src = getenv("DG_SOURCE_DIR");
  snprintf(path, sizeof(path), "%s/conf/%s", src ? src : ".", name);
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static char text[1 << 20];
  size_t n = fread(text, 1, sizeof(text) - 1, f);
  fclose(f);
  text[n] = '\0';
  return text;
}

/* Makes a directory with the sample models.json and the given files (a
 * NULL text leaves a file out; datagate defaults to a minimal one). */
static inline void conf_test_make(conf_test_dir_t *t, const char *datagate, const char *connectors,
                                  const char *queries) {
  dg_strlcpy(t->dir, "/tmp/dg_conf_XXXXXX", sizeof(t->dir));
  assert_non_null(mkdtemp(t->dir));
  conf_test_write(t->dir, "datagate.json", datagate ? datagate : CONF_TEST_MINIMAL_DATAGATE);
  conf_test_write(t->dir, "models.json", conf_test_read_sample("models.json"));
  if (connectors != NULL)
    conf_test_write(t->dir, "connectors.json", connectors);
  if (queries != NULL)
    conf_test_write(t->dir, "saved_queries.json", queries);
}

/* A directory as conf_test_make makes it, with the sample's
 * connectors.json (copied first: conf_test_read_sample reuses one buffer). */
static inline void conf_test_make_sample_connectors(conf_test_dir_t *t) {
  char *connectors = strdup(conf_test_read_sample("connectors.json"));
  assert_non_null(connectors);
  conf_test_make(t, NULL, connectors, NULL);
  free(connectors);
}

/* Removes the directory with every file a test may have written to it. */
static inline void conf_test_remove(conf_test_dir_t *t) {
  static const char *const names[] = {"datagate.json",      "models.json",    "connectors.json",
                                      "saved_queries.json", "endpoints.json", "files.json"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(names); i++) {
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", t->dir, names[i]);
    unlink(path);
  }
  rmdir(t->dir);
}

/* Loads and expects success; the caller unrefs. */
static inline dg_catalog_t *conf_test_load(const char *datagate, const char *connectors,
                                           const char *queries) {
  conf_test_dir_t t;
  conf_test_make(&t, datagate, connectors, queries);
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = NULL;
  int rc = dg_catalog_load(t.dir, &cat, &errors);
  for (size_t i = 0; i < errors.count; i++)
    fprintf(stderr, "unexpected: %s\n", errors.lines[i]);
  assert_int_equal(rc, 0);
  dg_config_errors_free(&errors);
  conf_test_remove(&t);
  return cat;
}

/* Loads and expects exactly the problem lines want, in order. */
static inline void conf_test_expect(const char *datagate, const char *connectors,
                                    const char *queries, const char *const *want, size_t nwant) {
  conf_test_dir_t t;
  conf_test_make(&t, datagate, connectors, queries);
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = (dg_catalog_t *)1;
  int rc = dg_catalog_load(t.dir, &cat, &errors);
  for (size_t i = 0; i < errors.count; i++)
    fprintf(stderr, "got: %s\n", errors.lines[i]);
  assert_int_equal(rc, DG_ECONFIG);
  assert_null(cat);
  for (size_t i = 0; i < nwant && i < errors.count; i++)
    assert_string_equal(errors.lines[i], want[i]);
  assert_int_equal(errors.count, nwant);
  dg_config_errors_free(&errors);
  conf_test_remove(&t);
}

#define CONF_EXPECT(datagate, connectors, queries, ...)                                            \
  do {                                                                                             \
    static const char *const want_[] = {__VA_ARGS__};                                              \
    conf_test_expect(datagate, connectors, queries, want_, DG_ARRAY_SIZE(want_));                  \
  } while (0)

#endif
