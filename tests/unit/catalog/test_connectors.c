/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for connectors.json: the sample's connectors, defaults, every
 * auth kind with its secrets read from the environment, and each kind of
 * problem with its exact "file: json/path: message" line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "conf_test.h"

#define ID1 "1f0c1a52-9d1e-4c43-9b4e-0e6f1c2f0a01"
#define ID2 "1f0c1a52-9d1e-4c43-9b4e-0e6f1c2f0a02"

/* One connector with the given extra members. */
#define ONE(extra)                                                                                 \
  "{\"connectors\": [{\"id\": \"" ID1 "\", \"name\": \"Api\", "                                    \
  "\"baseUrl\": \"https://api.example.com/v1/\"" extra "}]}"

static void test_sample_connectors(void **state) {
  (void)state;
  setenv("DATAGATE_SAMPLE_ERP_TOKEN", "erp-secret", 1);
  unsetenv("DATAGATE_SAMPLE_LOGISTICS_KEY");
  char dir[4096];
  const char *src = getenv("DG_SOURCE_DIR");
  snprintf(dir, sizeof(dir), "%s/conf", src ? src : ".");
  dg_catalog_t *cat = NULL;
  assert_int_equal(dg_catalog_load(dir, &cat, NULL), 0);
  assert_int_equal(cat->nconnectors, 4);
  const dg_connector_t *erp = dg_catalog_connector(cat, "SampleErp");
  assert_non_null(erp);
  assert_ptr_equal(dg_catalog_connector(cat, "F61634E3-ACC5-41F2-90AE-29BDE3E788AB"), erp);
  assert_null(dg_catalog_connector(cat, "sampleerp"));
  assert_string_equal(erp->base_url, "http://127.0.0.1:8091/erp");
  assert_false(erp->https);
  assert_true(erp->allow_private_addresses);
  assert_int_equal(erp->auth.kind, DG_CONN_AUTH_BEARER);
  assert_string_equal(erp->auth.token.env, "DATAGATE_SAMPLE_ERP_TOKEN");
  assert_string_equal(erp->auth.token.value, "erp-secret");
  assert_int_equal(erp->nheaders, 1);
  assert_string_equal(erp->headers[0].name, "Accept");
  assert_int_equal(erp->connect_timeout_ms, 2000);
  assert_int_equal(erp->dns_timeout_ms, 5000);
  const dg_connector_t *logistics = dg_catalog_connector(cat, "SampleLogistics");
  assert_int_equal(logistics->auth.kind, DG_CONN_AUTH_API_KEY);
  assert_null(logistics->auth.key.value);
  assert_string_equal(logistics->auth.key_name, "X-Api-Key");
  assert_false(logistics->auth.key_in_query);
  const dg_connector_t *cat_api = dg_catalog_connector(cat, "SampleCatalog");
  assert_int_equal(cat_api->auth.kind, DG_CONN_AUTH_OAUTH2);
  assert_int_equal(cat_api->auth.nscopes, 1);
  assert_string_equal(cat_api->auth.scopes[0], "catalog.read");
  assert_false(cat_api->auth.client_secret_in_body);
  assert_int_equal(dg_catalog_connector(cat, "SampleFinance")->auth.kind, DG_CONN_AUTH_BASIC);
  dg_catalog_unref(cat);
  unsetenv("DATAGATE_SAMPLE_ERP_TOKEN");
}

static void test_defaults(void **state) {
  (void)state;
  dg_catalog_t *cat = conf_test_load(NULL, ONE(""), NULL);
  const dg_connector_t *c = &cat->connectors[0];
  assert_string_equal(c->base_url, "https://api.example.com/v1");
  assert_true(c->https);
  assert_string_equal(c->description, "");
  assert_int_equal(c->auth.kind, DG_CONN_AUTH_NONE);
  assert_int_equal(c->timeout_ms, 20000);
  assert_int_equal(c->first_byte_timeout_ms, 15000);
  assert_int_equal(c->tls_timeout_ms, 10000);
  assert_int_equal(c->max_concurrency, 64);
  assert_int_equal(c->max_queue, 256);
  assert_int_equal(c->breaker_failures, 5);
  assert_int_equal(c->breaker_cooldown_ms, 30000);
  assert_int_equal(c->retry_max_attempts, 3);
  assert_int_equal(c->max_redirects, 5);
  assert_int_equal(c->max_response_bytes, 8 * 1024 * 1024);
  assert_false(c->allow_private_addresses);
  assert_null(c->ca_file);
  assert_int_equal(c->nheaders, 0);
  dg_catalog_unref(cat);
}

static void test_auth_kinds_and_secrets(void **state) {
  (void)state;
  setenv("DG_T_USER", "ann", 1);
  setenv("DG_T_PASS", "p:w", 1);
  setenv("DG_T_KEY", "k-1", 1);
  setenv("DG_T_CID", "client", 1);
  setenv("DG_T_CSECRET", "", 1);
  dg_catalog_t *cat = conf_test_load(
      NULL,
      "{\"connectors\": ["
      "{\"id\": \"" ID1 "\", \"name\": \"B\", \"baseUrl\": \"http://h\", \"auth\": {\"type\": "
      "\"basic\", \"usernameEnv\": \"DG_T_USER\", \"passwordEnv\": \"DG_T_PASS\"}},"
      "{\"id\": \"" ID2 "\", \"name\": \"K\", \"baseUrl\": \"http://h\", \"auth\": {\"type\": "
      "\"apiKey\", \"keyEnv\": \"DG_T_KEY\", \"keyName\": \"api_key\", \"in\": \"query\"}},"
      "{\"id\": \"1f0c1a52-9d1e-4c43-9b4e-0e6f1c2f0a03\", \"name\": \"O\", \"baseUrl\": "
      "\"http://h\", \"auth\": {\"type\": \"oauth2ClientCredentials\", \"tokenUrl\": "
      "\"https://login.example.com/token\", \"clientIdEnv\": \"DG_T_CID\", \"clientSecretEnv\": "
      "\"DG_T_CSECRET\", \"scopes\": [\"a\", \"b\"], \"audience\": \"api\", \"clientAuth\": "
      "\"body\", \"refreshSkewMs\": 0}}]}",
      NULL);
  const dg_connector_auth_t *b = &cat->connectors[0].auth;
  assert_string_equal(b->username.value, "ann");
  assert_string_equal(b->password.value, "p:w");
  const dg_connector_auth_t *k = &cat->connectors[1].auth;
  assert_true(k->key_in_query);
  assert_string_equal(k->key.value, "k-1");
  const dg_connector_auth_t *o = &cat->connectors[2].auth;
  assert_string_equal(o->token_url, "https://login.example.com/token");
  assert_string_equal(o->client_id.value, "client");
  assert_null(o->client_secret.value); /* empty counts as unset */
  assert_int_equal(o->nscopes, 2);
  assert_string_equal(o->audience, "api");
  assert_true(o->client_secret_in_body);
  assert_int_equal(o->token_refresh_skew_ms, 0);
  dg_catalog_unref(cat);
}

static void test_url_problems(void **state) {
  (void)state;
  CONF_EXPECT(NULL,
              "{\"connectors\": [{\"id\": \"" ID1 "\", \"name\": \"A\", \"baseUrl\": "
              "\"ftp://files.example.com\"}, {\"id\": \"" ID2 "\", \"name\": \"B\", \"baseUrl\": "
              "\"https://u:p@example.com/x?y=1\"}]}",
              NULL,
              "connectors.json: /connectors/0/baseUrl: 'ftp://files.example.com' must start with "
              "http:// or https://",
              "connectors.json: /connectors/1/baseUrl: 'https://u:p@example.com/x?y=1' must not "
              "hold user info (put credentials in 'auth')");
  CONF_EXPECT(NULL, ONE(", \"caFile\": \"/nonexistent/ca.pem\""), NULL,
              "connectors.json: /connectors/0/caFile: cannot read '/nonexistent/ca.pem'");
  char junk[4200];
  snprintf(junk, sizeof(junk), "%s/conf/models.json",
           getenv("DG_SOURCE_DIR") ? getenv("DG_SOURCE_DIR") : ".");
  char text[8400], want[8400];
  snprintf(text, sizeof(text), ONE(", \"caFile\": \"%s\""), junk);
  snprintf(want, sizeof(want),
           "connectors.json: /connectors/0/caFile: '%s' holds no PEM certificate (mbedTLS error "
           "-0x2180)",
           junk);
  const char *const lines[] = {want};
  conf_test_expect(NULL, text, NULL, lines, 1);
  CONF_EXPECT(NULL,
              "{\"connectors\": [{\"id\": \"" ID1 "\", \"name\": \"A\", \"baseUrl\": "
              "\"http://example.com/a b\"}]}",
              NULL,
              "connectors.json: /connectors/0/baseUrl: 'http://example.com/a b' must not hold "
              "spaces or control characters");
}

static void test_identity_problems(void **state) {
  (void)state;
  CONF_EXPECT(NULL,
              "{\"connectors\": [{\"id\": \"not-a-guid\", \"name\": \"A\", \"baseUrl\": "
              "\"http://a\"}, {\"id\": \"" ID1 "\", \"name\": \"a\", \"baseUrl\": \"http://a\"}, "
              "{\"id\": \"" ID1 "\", \"name\": \"C\", \"baseUrl\": \"http://a\", \"timeout\": 5}]}",
              NULL,
              "connectors.json: /connectors/0/id: 'not-a-guid' is not a GUID (8-4-4-4-12 "
              "hexadecimal digits)",
              "connectors.json: /connectors/2/timeout: unknown field 'timeout' (did you mean "
              "'timeouts'?)",
              "connectors.json: /connectors/1/name: duplicate connector name 'a' (same as "
              "/connectors/0)",
              "connectors.json: /connectors/2/id: duplicate connector id '" ID1
              "' (same as /connectors/1)");
  CONF_EXPECT(NULL, "{\"connectors\": {}}", NULL,
              "connectors.json: /connectors: must be an array of connectors");
  CONF_EXPECT(NULL, "{\"connectors\": [", NULL,
              "connectors.json: /: invalid JSON at line 1, column 16: ']' expected near end of "
              "file");
}

static void test_auth_problems(void **state) {
  (void)state;
  CONF_EXPECT(NULL, ONE(", \"auth\": {\"type\": \"bearer\", \"keyName\": \"X\"}"), NULL,
              "connectors.json: /connectors/0/auth: auth type 'bearer' needs 'tokenEnv'",
              "connectors.json: /connectors/0/auth/keyName: 'keyName' does not apply to auth type "
              "'bearer'");
  CONF_EXPECT(NULL, ONE(", \"auth\": {\"type\": \"digest\"}"), NULL,
              "connectors.json: /connectors/0/auth/type: unknown value 'digest' (allowed: none, "
              "bearer, basic, apiKey, oauth2ClientCredentials)");
  CONF_EXPECT(NULL,
              ONE(", \"auth\": {\"type\": \"oauth2ClientCredentials\", \"tokenUrl\": \"/token\", "
                  "\"clientIdEnv\": \"1BAD\", \"clientSecretEnv\": \"S\"}"),
              NULL,
              "connectors.json: /connectors/0/auth/clientIdEnv: '1BAD' is not an environment "
              "variable name",
              "connectors.json: /connectors/0/auth/tokenUrl: '/token' must start with http:// or "
              "https://");
  CONF_EXPECT(
      NULL, ONE(", \"auth\": {\"type\": \"apiKey\", \"keyEnv\": \"K\", \"keyName\": \"a b\"}"),
      NULL, "connectors.json: /connectors/0/auth: keyName 'a b' is not a valid header name");
}

static void test_limit_and_header_problems(void **state) {
  (void)state;
  CONF_EXPECT(NULL,
              ONE(", \"headers\": {\"Host\": \"x\", \"Bad Name\": \"v\", \"X-Ok\": 1, \"X-Nl\": "
                  "\"a\\r\\nb\"}, \"retry\": {\"maxAttempts\": 11}, "
                  "\"maxConcurrency\": 0, \"timeouts\": {\"totalMs\": 1}"),
              NULL,
              "connectors.json: /connectors/0/headers/Host: header 'Host' is set by the connector "
              "client and cannot be configured",
              "connectors.json: /connectors/0/headers/Bad Name: 'Bad Name' is not a valid header "
              "name",
              "connectors.json: /connectors/0/headers/X-Ok: must be a string without line breaks",
              "connectors.json: /connectors/0/headers/X-Nl: must be a string without line breaks",
              "connectors.json: /connectors/0/timeouts/totalMs: must be an integer from 10 to "
              "3600000, got 1",
              "connectors.json: /connectors/0/maxConcurrency: must be an integer from 1 to 100000, "
              "got 0",
              "connectors.json: /connectors/0/retry/maxAttempts: must be an integer from 1 to 10, "
              "got 11");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sample_connectors),         cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_auth_kinds_and_secrets),    cmocka_unit_test(test_url_problems),
      cmocka_unit_test(test_identity_problems),         cmocka_unit_test(test_auth_problems),
      cmocka_unit_test(test_limit_and_header_problems),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
