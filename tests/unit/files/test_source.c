/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the document URL checks of get_file_text: allowed schemes,
 * sources matched by scheme, host, port and path prefix (the longest
 * prefix wins), dot segments, and the wording of each refusal. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/files.h"
#include "tools/catalog_test.h"

static const char *const schemes[] = {"https", "http"};

static const dg_file_source_t sources[] = {
    {.name = "files",
     .https = false,
     .host = "127.0.0.1",
     .port = 8091,
     .origin = "http://127.0.0.1:8091",
     .path_prefix = "/files/"},
    {.name = "private",
     .https = false,
     .host = "127.0.0.1",
     .port = 8091,
     .origin = "http://127.0.0.1:8091",
     .path_prefix = "/files/private/"},
    {.name = "docs",
     .https = true,
     .host = "docs.example.com",
     .port = 443,
     .origin = "https://docs.example.com",
     .path_prefix = "/"},
};

static dg_file_settings_t settings(size_t nschemes, size_t nsources) {
  return (dg_file_settings_t){.allowed_schemes = schemes,
                              .nallowed_schemes = nschemes,
                              .sources = sources,
                              .nsources = nsources};
}

/* Checks text; returns the code, with the message in msg. */
static int check(const dg_file_settings_t *cfg, const char *text, const dg_file_source_t **source,
                 char *msg, size_t size) {
  dg_arena_t *arena = dg_arena_new(1024);
  dg_http_url_t url;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_files_check(cfg, NULL, arena, "Invalid argument 'url':", text, &url, source, &err);
  snprintf(msg, size, "%s", rc != 0 ? err.message : "");
  if (rc != 0)
    assert_string_equal(err.param, "url");
  dg_arena_destroy(arena);
  return rc;
}

static void test_matches_the_longest_prefix(void **state) {
  dg_file_settings_t cfg = settings(2, 3);
  const dg_file_source_t *s = NULL;
  char msg[1024];
  assert_int_equal(check(&cfg, "http://127.0.0.1:8091/files/a%20b.pdf?x=1", &s, msg, sizeof(msg)),
                   0);
  assert_ptr_equal(s, &sources[0]);
  assert_int_equal(check(&cfg, "http://127.0.0.1:8091/files/private/a.pdf", &s, msg, sizeof(msg)),
                   0);
  assert_ptr_equal(s, &sources[1]);
  assert_int_equal(
      check(&cfg, "HTTPS://Docs.Example.COM:443/any/where.docx#p2", &s, msg, sizeof(msg)), 0);
  assert_ptr_equal(s, &sources[2]);
}

static void test_refuses_other_origins_and_paths(void **state) {
  dg_file_settings_t cfg = settings(2, 3);
  const dg_file_source_t *s = NULL;
  char msg[1024];
  /* Another port, another scheme, another host, outside the prefix. */
  assert_int_equal(check(&cfg, "http://127.0.0.1:8092/files/a.pdf", &s, msg, sizeof(msg)),
                   DG_EPERM);
  assert_int_equal(check(&cfg, "http://docs.example.com/a.pdf", &s, msg, sizeof(msg)), DG_EPERM);
  assert_int_equal(check(&cfg, "https://docs.example.com.evil.test/a.pdf", &s, msg, sizeof(msg)),
                   DG_EPERM);
  assert_int_equal(
      check(&cfg, "http://127.0.0.1:8091/filesX/a.pdf?key=secret", &s, msg, sizeof(msg)), DG_EPERM);
  assert_null(s);
  assert_string_equal(msg, "Invalid argument 'url': 'http://127.0.0.1:8091/filesX/a.pdf' is not "
                           "under an allowed document source; allowed are URLs under "
                           "http://127.0.0.1:8091/files/, http://127.0.0.1:8091/files/private/, "
                           "https://docs.example.com/.");
}

static void test_refuses_schemes(void **state) {
  dg_file_settings_t cfg = settings(1, 3);
  const dg_file_source_t *s = NULL;
  char msg[1024];
  assert_int_equal(check(&cfg, "http://127.0.0.1:8091/files/a.pdf", &s, msg, sizeof(msg)),
                   DG_EPERM);
  assert_string_equal(msg, "Invalid argument 'url': 'http://127.0.0.1:8091/files/a.pdf' uses the "
                           "scheme 'http', which is not allowed; allowed schemes are https.");
  assert_int_equal(check(&cfg, "file:///etc/passwd", &s, msg, sizeof(msg)), DG_EPERM);
  assert_non_null(strstr(msg, "uses the scheme 'file'"));
  assert_int_equal(check(&cfg, "/files/a.pdf", &s, msg, sizeof(msg)), DG_EINVAL);
  assert_non_null(strstr(msg, "is not an absolute URL"));
  /* A "://" in the query is not a scheme: the query stays out of the message. */
  assert_int_equal(check(&cfg, ".:/?key=s3cret://x/y", &s, msg, sizeof(msg)), DG_EINVAL);
  assert_null(strstr(msg, "s3cret"));
  /* Nor the user info of a URL without a scheme, or with one too long to name. */
  assert_int_equal(check(&cfg, "//user:s3cret@docs.example.com/a.pdf", &s, msg, sizeof(msg)),
                   DG_EINVAL);
  assert_null(strstr(msg, "s3cret"));
  assert_non_null(strstr(msg, "'//docs.example.com/a.pdf'"));
  assert_int_equal(check(&cfg,
                         "averyveryveryveryverylongschemename://user:s3cret@docs.example.com/a.pdf",
                         &s, msg, sizeof(msg)),
                   DG_EINVAL);
  assert_null(strstr(msg, "s3cret"));
}

static void test_refuses_dot_segments_and_bad_urls(void **state) {
  dg_file_settings_t cfg = settings(2, 3);
  const dg_file_source_t *s = NULL;
  char msg[1024];
  const char *dots[] = {
      "http://127.0.0.1:8091/files/../erp/x", "http://127.0.0.1:8091/files/./x",
      "http://127.0.0.1:8091/files/%2e%2E/erp/x", "http://127.0.0.1:8091/files/.%2e",
      /* Separators and dots a lenient server decodes or strips. */
      "http://127.0.0.1:8091/files/..%2ferp/x", "http://127.0.0.1:8091/files/..%2Ferp/x",
      "http://127.0.0.1:8091/files/a/..;/..;/erp/x",
      "http://127.0.0.1:8091/files/..;jsessionid=1/x", "http://127.0.0.1:8091/files/..%5cerp",
      "http://127.0.0.1:8091/files/..%5C..%5Cerp", "http://127.0.0.1:8091/files/%252e%252e/erp/x",
      "http://127.0.0.1:8091/files/%25252e%25252e%25252fx",
      "http://127.0.0.1:8091/files/%2e%2e%252ferp"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(dots); i++) {
    assert_int_equal(check(&cfg, dots[i], &s, msg, sizeof(msg)), DG_EINVAL);
    assert_non_null(strstr(msg, "'.' or '..' path segments"));
  }
  /* Dots inside a name are fine. */
  assert_int_equal(check(&cfg, "http://127.0.0.1:8091/files/a..b/.x", &s, msg, sizeof(msg)), 0);
  assert_int_equal(check(&cfg, "http://127.0.0.1:8091/files/..a/%2e%2ex;y", &s, msg, sizeof(msg)),
                   0);
  assert_int_equal(check(&cfg, "http://127.0.0.1:8091/files/100%25.pdf", &s, msg, sizeof(msg)), 0);
  assert_int_equal(check(&cfg, "http://user:pw@127.0.0.1:8091/files/a", &s, msg, sizeof(msg)),
                   DG_EINVAL);
  assert_non_null(strstr(msg, "is not valid: user names and passwords"));
  assert_null(strstr(msg, "pw"));
}

static void test_no_source_configured(void **state) {
  dg_file_settings_t cfg = settings(1, 0);
  const dg_file_source_t *s = NULL;
  char msg[1024];
  assert_int_equal(check(&cfg, "https://docs.example.com/a.pdf", &s, msg, sizeof(msg)), DG_EPERM);
  assert_non_null(strstr(msg, "no document source is configured"));
}

/* Checks text as user of the sample catalog may. */
static int check_as(fixture_t *fx, const char *user, const char *text, char *msg, size_t size) {
  dg_http_url_t url;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  const dg_file_source_t *s = NULL;
  int rc = dg_files_check(&fx->cat->files, ct_principal(fx, user), fx->arena,
                          "Invalid argument 'url':", text, &url, &s, &err);
  snprintf(msg, size, "%s", rc != 0 ? err.message : "");
  assert_true((rc == 0) == (s != NULL));
  return rc;
}

/* Sources are granted to roles: by default to those that may read a model
 * with documents (Files: admin and sales, not the auditor). */
static void test_sources_follow_roles(void **state) {
  fixture_t *fx = *state;
  static const char doc[] = "http://127.0.0.1:8091/files/x/a.pdf";
  char msg[1024];
  assert_int_equal(check_as(fx, "sales", doc, msg, sizeof(msg)), 0);
  assert_int_equal(check_as(fx, "admin", doc, msg, sizeof(msg)), 0);
  assert_int_equal(check_as(fx, "auditor", doc, msg, sizeof(msg)), DG_EPERM);
  assert_non_null(strstr(msg, "none of your roles may read documents"));
  assert_null(strstr(msg, "allowed are"));
  /* An explicit list: the auditor's role alone may use the second source. */
  dg_file_source_t *list = (dg_file_source_t *)fx->cat->files.sources;
  static const char *const auditor[] = {"auditor"};
  list[1].roles = auditor;
  list[1].nroles = 1;
  list[1].roles_given = true;
  assert_int_equal(check_as(fx, "sales", "http://127.0.0.1:8091/erp/documents/x", msg, sizeof(msg)),
                   DG_EPERM);
  /* Only what the caller may use is listed. */
  assert_non_null(strstr(msg, "allowed are URLs under http://127.0.0.1:8091/files/."));
  assert_null(strstr(strstr(msg, "allowed are"), "/erp/documents/"));
  assert_int_equal(
      check_as(fx, "auditor", "http://127.0.0.1:8091/erp/documents/x", msg, sizeof(msg)), 0);
  assert_int_equal(check_as(fx, "auditor", doc, msg, sizeof(msg)), DG_EPERM);
  assert_non_null(strstr(msg, "allowed are URLs under http://127.0.0.1:8091/erp/documents/."));
  assert_null(strstr(strstr(msg, "allowed are"), "/files/"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_matches_the_longest_prefix),
      cmocka_unit_test(test_refuses_other_origins_and_paths),
      cmocka_unit_test(test_refuses_schemes),
      cmocka_unit_test(test_refuses_dot_segments_and_bad_urls),
      cmocka_unit_test(test_no_source_configured),
      cmocka_unit_test_setup_teardown(test_sources_follow_roles, ct_setup, ct_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
