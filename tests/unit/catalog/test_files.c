/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for files.json: the sample's document sources, the defaults
 * without the file, origins with ports and IPv6 literals, connector
 * sources, and each kind of problem with its "file: json/path: message". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf_test.h"

#define CONNECTORS                                                                                 \
  "{\"connectors\": [{\"id\": \"1f0c1a52-9d1e-4c43-9b4e-0e6f1c2f0a01\", \"name\": \"Docs\", "      \
  "\"baseUrl\": \"https://docs.example.com:8443/api/v2\", \"allowPrivateAddresses\": true}]}"

/* Loads a directory with CONNECTORS and files (NULL: no files.json);
 * returns the catalog, or NULL with the problems in errors. */
static dg_catalog_t *load_files(const char *files, dg_config_errors_t *errors) {
  conf_test_dir_t t;
  conf_test_make(&t, NULL, CONNECTORS, NULL);
  if (files != NULL)
    conf_test_write(t.dir, "files.json", files);
  dg_catalog_t *cat = NULL;
  dg_catalog_load(t.dir, &cat, errors);
  conf_test_remove(&t);
  return cat;
}

static dg_catalog_t *load_ok(const char *files) {
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = load_files(files, &errors);
  for (size_t i = 0; i < errors.count; i++)
    fprintf(stderr, "unexpected: %s\n", errors.lines[i]);
  assert_non_null(cat);
  dg_config_errors_free(&errors);
  return cat;
}

static void expect_problem(const char *files, const char *want) {
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = load_files(files, &errors);
  for (size_t i = 0; i < errors.count; i++)
    fprintf(stderr, "got: %s\n", errors.lines[i]);
  assert_null(cat);
  assert_int_equal(errors.count, 1);
  assert_string_equal(errors.lines[0], want);
  dg_config_errors_free(&errors);
}

static void test_sample_sources(void **state) {
  (void)state;
  char dir[4096];
  const char *src = getenv("DG_SOURCE_DIR");
  snprintf(dir, sizeof(dir), "%s/conf", src ? src : ".");
  dg_catalog_t *cat = NULL;
  assert_int_equal(dg_catalog_load(dir, &cat, NULL), 0);
  const dg_file_settings_t *f = &cat->files;
  assert_int_equal(f->nallowed_schemes, 2);
  assert_int_equal(f->nsources, 2);
  assert_string_equal(f->sources[0].origin, "http://127.0.0.1:8091");
  assert_string_equal(f->sources[0].path_prefix, "/files/");
  assert_true(f->sources[0].allow_private_addresses);
  assert_null(f->sources[0].connector);
  assert_ptr_equal(f->sources[1].connector, dg_catalog_connector(cat, "SampleErp"));
  assert_string_equal(f->sources[1].host, "127.0.0.1");
  assert_int_equal(f->sources[1].port, 8091);
  assert_string_equal(f->sources[1].path_prefix, "/erp/documents/");
  assert_int_equal(f->chunk_chars, 10000);
  dg_catalog_unref(cat);
}

static void test_defaults_without_the_file(void **state) {
  (void)state;
  dg_catalog_t *cat = load_ok(NULL);
  const dg_file_settings_t *f = &cat->files;
  assert_int_equal(f->nsources, 0);
  assert_int_equal(f->nallowed_schemes, 1);
  assert_string_equal(f->allowed_schemes[0], "https");
  assert_int_equal(f->max_download_bytes, 64 * 1024 * 1024);
  assert_int_equal(f->download_timeout_ms, 20000);
  assert_int_equal(f->max_redirects, 5);
  assert_int_equal(f->chunk_chars, 10000);
  assert_int_equal(f->max_text_bytes, 32 * 1024 * 1024);
  assert_int_equal(f->max_concurrent, 4);
  assert_int_equal(f->max_queued, 64);
  assert_int_equal(f->cache_bytes, 256 * 1024 * 1024);
  assert_int_equal(f->cache_ttl_ms, 300000);
  dg_catalog_unref(cat);
}

static void test_origins(void **state) {
  (void)state;
  dg_catalog_t *cat = load_ok("{\"allowedSchemes\": [\"http\", \"https\"], \"sources\": ["
                              "{\"name\": \"a\", \"origin\": \"http://Files.Example.COM:80\"},"
                              "{\"name\": \"b\", \"origin\": \"https://[::1]:9443\", "
                              "\"pathPrefix\": \"/docs/\", \"allowPrivateAddresses\": true}]}");
  const dg_file_source_t *a = &cat->files.sources[0], *b = &cat->files.sources[1];
  assert_false(a->https);
  assert_string_equal(a->host, "files.example.com");
  assert_int_equal(a->port, 80);
  assert_string_equal(a->origin, "http://files.example.com");
  assert_string_equal(a->path_prefix, "/");
  assert_false(a->allow_private_addresses);
  assert_true(b->https);
  assert_string_equal(b->host, "::1");
  assert_int_equal(b->port, 9443);
  assert_string_equal(b->origin, "https://[::1]:9443");
  assert_true(b->allow_private_addresses);
  dg_catalog_unref(cat);
}

static void test_connector_source(void **state) {
  (void)state;
  dg_catalog_t *cat =
      load_ok("{\"sources\": [{\"name\": \"d\", \"connector\": \"Docs\"}, "
              "{\"name\": \"e\", \"connector\": \"Docs\", \"origin\": "
              "\"https://docs.example.com:8443\", \"pathPrefix\": \"/api/v2/f/\"}]}");
  const dg_file_source_t *d = &cat->files.sources[0], *e = &cat->files.sources[1];
  assert_string_equal(d->origin, "https://docs.example.com:8443");
  assert_string_equal(d->path_prefix, "/api/v2/");
  assert_true(d->allow_private_addresses);
  assert_ptr_equal(d->connector, &cat->connectors[0]);
  assert_string_equal(e->path_prefix, "/api/v2/f/");
  dg_catalog_unref(cat);
}

static void test_problems(void **state) {
  (void)state;
  expect_problem("{\"sources\": [{\"name\": \"a\", \"origin\": \"https://x.example.com/docs\"}]}",
                 "files.json: /sources/0/origin: 'https://x.example.com/docs' must be an origin, "
                 "scheme://host[:port], without a path (use pathPrefix)");
  expect_problem("{\"sources\": [{\"name\": \"a\", \"origin\": \"ftp://x.example.com\"}]}",
                 "files.json: /sources/0/origin: 'ftp://x.example.com' must start with http:// or "
                 "https://");
  expect_problem("{\"sources\": [{\"name\": \"a\", \"origin\": \"https://x.example.com:99999\"}]}",
                 "files.json: /sources/0/origin: 'https://x.example.com:99999' has a port that is "
                 "not a number from 1 to 65535");
  expect_problem("{\"sources\": [{\"name\": \"a\", \"origin\": \"http://x.example.com\"}]}",
                 "files.json: /sources/0: the scheme of http://x.example.com is not in "
                 "allowedSchemes");
  expect_problem("{\"allowedSchemes\": [\"https\", \"file\"]}",
                 "files.json: /allowedSchemes/1: unknown scheme 'file' (allowed: https, http)");
  expect_problem("{\"sources\": [{\"name\": \"a\", \"connector\": \"Nope\"}]}",
                 "files.json: /sources/0/connector: unknown connector 'Nope' (connectors.json)");
  expect_problem("{\"sources\": [{\"name\": \"a\", \"connector\": \"Docs\", \"pathPrefix\": "
                 "\"/other/\"}]}",
                 "files.json: /sources/0/connector: pathPrefix '/other/' is not under the base "
                 "URL of connector 'Docs' (https://docs.example.com:8443/api/v2)");
  expect_problem("{\"sources\": [{\"name\": \"a\", \"connector\": \"Docs\", \"origin\": "
                 "\"https://docs.example.com\"}]}",
                 "files.json: /sources/0/connector: connector 'Docs' has the origin "
                 "https://docs.example.com:8443, not the source's origin");
  expect_problem("{\"sources\": [{\"name\": \"a\", \"connector\": \"Docs\", "
                 "\"allowPrivateAddresses\": true}]}",
                 "files.json: /sources/0: allowPrivateAddresses does not apply to a source with a "
                 "connector (the connector's own setting does)");
  expect_problem("{\"sources\": [{\"name\": \"a\"}]}",
                 "files.json: /sources/0: a source needs 'origin', 'connector' or both");
  expect_problem("{\"sources\": [{\"name\": \"a\", \"origin\": \"https://a.example\"}, {\"name\": "
                 "\"A\", \"origin\": \"https://b.example\"}]}",
                 "files.json: /sources/1/name: duplicate source name 'A' (same as /sources/0)");
  expect_problem("{\"sources\": [{\"name\": \"a\", \"origin\": \"https://a.example\", "
                 "\"pathPrefix\": \"docs\"}]}",
                 "files.json: /sources/0/pathPrefix: 'docs' must start with '/' and hold no "
                 "spaces, control characters, '?' or '#'");
  expect_problem("{\"sources\": [{\"name\": \"a\", \"origin\": \"https://a.example\", "
                 "\"roles\": [\"clerk\"]}]}",
                 "files.json: /sources/0/roles/0: unknown role 'clerk' (give a role name from "
                 "datagate.json)");
  expect_problem("{\"chunkChars\": 5}",
                 "files.json: /chunkChars: must be an integer from 16 to 1000000, got 5");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sample_sources), cmocka_unit_test(test_defaults_without_the_file),
      cmocka_unit_test(test_origins),        cmocka_unit_test(test_connector_source),
      cmocka_unit_test(test_problems),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
