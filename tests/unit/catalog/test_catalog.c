/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the catalog: the sample configuration in conf/, lookups,
 * references, every kind of configuration problem with its exact
 * "file: json/path: message" line, defaults, tokens and the refcount. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "datagate/catalog.h"

#define CUSTOMERS_ID "cb94c4ab-8c1d-4fae-b582-9746427cad35"
#define ORDERS_ID "8a03cbc2-7f01-4d47-bdf0-0755336a3a70"

static const char *conf_dir(void) {
  static char dir[4096];
  const char *src = getenv("DG_SOURCE_DIR");
  snprintf(dir, sizeof(dir), "%s/conf", src ? src : ".");
  return dir;
}

static dg_catalog_t *load_conf(void) {
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = NULL;
  int rc = dg_catalog_load(conf_dir(), &cat, &errors);
  for (size_t i = 0; i < errors.count; i++)
    fprintf(stderr, "%s\n", errors.lines[i]);
  assert_int_equal(rc, 0);
  assert_int_equal(errors.count, 0);
  dg_config_errors_free(&errors);
  return cat;
}

/* ---- Temporary configuration directories --------------------------------- */

typedef struct tmpconf {
  char dir[64];
} tmpconf_t;

static void write_file(const char *dir, const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static void tmpconf_make(tmpconf_t *t, const char *datagate, const char *models) {
  dg_strlcpy(t->dir, "/tmp/dg_catalog_XXXXXX", sizeof(t->dir));
  assert_non_null(mkdtemp(t->dir));
  if (datagate != NULL)
    write_file(t->dir, "datagate.json", datagate);
  if (models != NULL)
    write_file(t->dir, "models.json", models);
}

static void tmpconf_remove(tmpconf_t *t) {
  char path[256];
  snprintf(path, sizeof(path), "%s/datagate.json", t->dir);
  unlink(path);
  snprintf(path, sizeof(path), "%s/models.json", t->dir);
  unlink(path);
  rmdir(t->dir);
}

/* Loads a directory expected to fail and checks the problem lines, in order. */
static void expect_errors(const char *datagate, const char *models, const char *const *want,
                          size_t nwant) {
  tmpconf_t t;
  tmpconf_make(&t, datagate, models);
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
  tmpconf_remove(&t);
}

/* ---- The sample configuration ----------------------------------------------- */

static void test_sample_counts_and_settings(void **state) {
  dg_catalog_t *cat = load_conf();
  assert_int_equal(cat->nmodels, 6);
  assert_int_equal(cat->nroles, 3);
  assert_int_equal(cat->nusers, 3);
  assert_string_equal(cat->server.host, "127.0.0.1");
  assert_int_equal(cat->server.port, 8080);
  assert_string_equal(cat->server.stdio_user, "admin");
  assert_string_equal(cat->server.access_log, "-");
  char db[4200];
  snprintf(db, sizeof(db), "%s/var/datagate.db", conf_dir());
  assert_string_equal(cat->server.database, db);
  assert_true(cat->server.nallowed_origins >= 2);
  assert_string_equal(cat->server.allowed_origins[0], "http://localhost:*");
  assert_null(cat->server.allowed_hosts);
  assert_false(cat->oauth.enabled);
  assert_string_equal(cat->oauth.issuer, "https://login.example.com/");
  assert_null(cat->oauth.public_key);
  for (size_t i = 0; i < cat->nmodels; i++)
    assert_int_equal(cat->models[i].index, i);
  dg_catalog_unref(cat);
}

static void test_sample_lookups(void **state) {
  dg_catalog_t *cat = load_conf();
  const dg_model_t *by_id = dg_catalog_model_by_id(cat, "CB94C4AB-8C1D-4FAE-B582-9746427CAD35");
  const dg_model_t *by_name = dg_catalog_model_by_name(cat, "Customers");
  assert_non_null(by_id);
  assert_ptr_equal(by_id, by_name);
  assert_ptr_equal(dg_catalog_model_by_name(cat, "customers"), by_name);
  assert_null(dg_catalog_model_by_name(cat, "Custmers"));
  assert_null(dg_catalog_model_by_id(cat, "00000000-0000-4000-8000-000000000000"));

  const dg_model_t *orders = dg_catalog_model_by_id(cat, ORDERS_ID);
  assert_string_equal(orders->entity_type, "Order");
  assert_string_equal(orders->entity_sub_type, "SalesOrder");
  const dg_property_t *num = dg_model_property(orders, "orderNumber");
  assert_non_null(num);
  assert_string_equal(num->name, "OrderNumber");
  assert_string_equal(num->json_name, "orderNumber");
  assert_true(num->keyword && num->required);
  assert_ptr_equal(dg_model_property(orders, "OrderNumber"), num);
  assert_null(dg_model_property(orders, "OrderNo"));
  const dg_property_t *status = dg_model_property(orders, "Status");
  assert_int_equal(status->nchoices, 4);
  assert_string_equal(status->choices[3], "Cancelled");
  assert_string_equal(status->form.default_value, "Draft");
  assert_true(dg_model_property(orders, "CalculatedOrderId")->read_only);
  assert_int_equal(dg_model_property(orders, "WarehouseId")->type, DG_TYPE_GUID);

  const dg_model_t *files = dg_catalog_model_by_name(cat, "Files");
  assert_string_equal(dg_model_property(files, "ExternalFileLocation")->json_name,
                      "externalFileLocation");
  assert_non_null(dg_catalog_role(cat, "auditor"));
  assert_null(dg_catalog_role(cat, "Auditor"));
  assert_non_null(dg_catalog_user(cat, "sales"));
  dg_catalog_unref(cat);
}

static void test_sample_references(void **state) {
  dg_catalog_t *cat = load_conf();
  const dg_model_t *customers = dg_catalog_model_by_id(cat, CUSTOMERS_ID);
  const dg_model_t *orders = dg_catalog_model_by_id(cat, ORDERS_ID);
  const dg_reference_t *out = dg_model_property(orders, "Customer")->reference;
  assert_non_null(out);
  assert_int_equal(out->direction, DG_REF_OUTBOUND);
  assert_int_equal(out->cardinality, DG_CARD_ONE_TO_ONE);
  assert_ptr_equal(out->target, customers);
  assert_string_equal(out->target_entity_type, "Customer");
  assert_string_equal(out->target_entity_sub_type, "Account");
  assert_false(out->derived);
  assert_null(out->inverse_property);

  const dg_reference_t *in = dg_model_property(customers, "Orders")->reference;
  assert_int_equal(in->direction, DG_REF_INBOUND);
  assert_int_equal(in->cardinality, DG_CARD_ONE_TO_MANY);
  assert_ptr_equal(in->target, orders);
  assert_string_equal(in->inverse_property, "Customer");
  assert_true(in->derived);

  const dg_reference_t *rep = dg_model_property(orders, "SalesRep")->reference;
  assert_null(rep->target);
  assert_string_equal(rep->target_entity_type, "User");
  assert_null(dg_model_property(orders, "Amount")->reference);
  /* Every Inbound reference's inverse points back at its own model. */
  for (size_t i = 0; i < cat->nmodels; i++) {
    const dg_model_t *m = &cat->models[i];
    for (size_t j = 0; j < m->nproperties; j++) {
      const dg_reference_t *r = m->properties[j].reference;
      if (r == NULL || r->direction != DG_REF_INBOUND)
        continue;
      const dg_property_t *inv = dg_model_property(r->target, r->inverse_property);
      assert_ptr_equal(inv->reference->target, m);
    }
  }
  dg_catalog_unref(cat);
}

static void test_sample_roles(void **state) {
  dg_catalog_t *cat = load_conf();
  const dg_role_t *admin = dg_catalog_role(cat, "admin");
  assert_int_equal(admin->ngrants, cat->nmodels);
  for (size_t i = 0; i < admin->ngrants; i++)
    assert_true(admin->grants[i].write && admin->grants[i].all_properties);
  const dg_role_t *sales = dg_catalog_role(cat, "sales");
  const dg_model_t *payments = dg_catalog_model_by_name(cat, "Payments");
  for (size_t i = 0; i < sales->ngrants; i++) {
    assert_ptr_not_equal(sales->grants[i].model, payments);
    if (strcmp(sales->grants[i].model->name, "Customers") == 0) {
      assert_int_equal(sales->grants[i].ndeny, 1);
      assert_string_equal(sales->grants[i].deny[0], "CreditLimit");
      assert_false(sales->grants[i].write);
    }
  }
  const dg_user_t *auditor = dg_catalog_user(cat, "auditor");
  assert_int_equal(auditor->nroles, 1);
  assert_ptr_equal(auditor->roles[0], dg_catalog_role(cat, "auditor"));
  assert_string_equal(auditor->token_env, "DATAGATE_TOKEN_AUDITOR");
  dg_catalog_unref(cat);
}

static void test_tokens_hashed_from_environment(void **state) {
  setenv("DATAGATE_TOKEN_SALES", "sales-secret-token", 1);
  unsetenv("DATAGATE_TOKEN_ADMIN");
  dg_catalog_t *cat = load_conf();
  const dg_user_t *sales = dg_catalog_user(cat, "sales");
  unsigned char want[32];
  dg_sha256("sales-secret-token", strlen("sales-secret-token"), want);
  assert_true(sales->has_token);
  assert_memory_equal(sales->token_sha256, want, 32);
  assert_false(dg_catalog_user(cat, "admin")->has_token);
  dg_catalog_unref(cat);
  unsetenv("DATAGATE_TOKEN_SALES");
}

static void test_refcount(void **state) {
  dg_catalog_t *cat = load_conf();
  assert_int_equal(cat->refs, 1);
  assert_ptr_equal(dg_catalog_ref(cat), cat);
  assert_int_equal(cat->refs, 2);
  dg_catalog_unref(cat);
  /* Still alive: the first reference holds it (ASan would report a use
   * after free otherwise). */
  assert_int_equal(cat->refs, 1);
  assert_string_equal(cat->models[0].name, "Customers");
  dg_catalog_unref(cat);
  dg_catalog_unref(NULL);
}

/* ---- Broken configurations ---------------------------------------------------- */

static const char broken_models[] =
    "{\"models\": ["
    "{\"id\": \"11111111-1111-4111-8111-111111111111\", \"name\": \"Customers\","
    " \"entityType\": \"Customer\", \"properties\": ["
    "  {\"name\": \"Name\", \"dataType\": \"String\"},"
    "  {\"name\": \"name\", \"dataType\": \"String\"},"
    "  {\"name\": \"Score\", \"dataType\": \"Int\", \"choices\": [\"1\", \"2\"]},"
    "  {\"name\": \"Kind\", \"dataType\": \"Strng\"},"
    "  {\"name\": \"Orders\", \"dataType\": \"Reference\", \"reference\": {\"direction\": "
    "\"Inbound\", \"cardinality\": \"OneToOne\", \"target\": \"Orders\", \"inverseProperty\": "
    "\"Buyer\", \"derived\": false}},"
    "  {\"name\": \"Link\", \"dataType\": \"Reference\"},"
    "  {\"name\": \"Note\", \"dataType\": \"String\", \"reference\": {\"direction\": "
    "\"Outbound\", \"target\": \"Orders\"}},"
    "  {\"name\": \"Extra\", \"dataType\": \"String\", \"descripton\": \"typo\"},"
    "  {\"name\": \"Lines\", \"dataType\": \"Reference\", \"reference\": {\"direction\": "
    "\"Inbound\", \"target\": \"Orders\", \"inverseProperty\": \"Number\"}},"
    "  {\"name\": \"Others\", \"dataType\": \"Reference\", \"reference\": {\"direction\": "
    "\"Inbound\", \"target\": \"Orders\", \"inverseProperty\": \"Partner\"}}"
    "]},"
    "{\"id\": \"not-a-guid\", \"name\": \"Orders\", \"entityType\": \"Order\", \"properties\": ["
    "  {\"name\": \"Customer\", \"dataType\": \"Reference\", \"reference\": {\"direction\": "
    "\"Outbound\", \"cardinality\": \"OneToMany\", \"target\": \"Custmers\"}},"
    "  {\"name\": \"Number\", \"dataType\": \"Int\", \"keyword\": true},"
    "  {\"name\": \"Partner\", \"dataType\": \"Reference\", \"reference\": {\"direction\": "
    "\"Outbound\", \"target\": \"Orders\"}}"
    "]},"
    "{\"id\": \"11111111-1111-4111-8111-111111111111\", \"name\": \"Customers\","
    " \"properties\": [{\"name\": \"Id\", \"dataType\": \"Guid\"}]}"
    "]}";

static void test_broken_models(void **state) {
  static const char *const want[] = {
      "models.json: /models/0/properties/2/choices: choices are allowed only on String "
      "properties (dataType is Int)",
      "models.json: /models/0/properties/3/dataType: unknown value 'Strng' (allowed: String, Int, "
      "Long, Double, Decimal, Boolean, Date, DateTime, Guid, Reference)",
      "models.json: /models/0/properties/5: a property of dataType Reference needs a 'reference' "
      "object",
      "models.json: /models/0/properties/6/reference: only Reference properties have a reference "
      "(dataType is String)",
      "models.json: /models/0/properties/7/descripton: unknown field 'descripton' (did you mean "
      "'description'?)",
      "models.json: /models/0/properties/1/name: duplicate property name 'name' (same as "
      "/models/0/properties/0, ignoring case)",
      "models.json: /models/1/id: 'not-a-guid' is not a GUID (8-4-4-4-12 hexadecimal digits)",
      "models.json: /models/1/properties/1/keyword: only String properties can be keywords "
      "(dataType is Int)",
      "models.json: /models/2: missing required field 'entityType'",
      "models.json: /models/2/properties/0/name: 'Id' is reserved for entity results",
      "models.json: /models/2/id: duplicate model id '11111111-1111-4111-8111-111111111111' (same "
      "as /models/0)",
      "models.json: /models/2/name: duplicate model name 'Customers' (same as /models/0)",
      "models.json: /models/0/properties/4/reference/cardinality: an Inbound reference is "
      "OneToMany, not OneToOne",
      "models.json: /models/0/properties/4/reference/derived: derived must be true for an "
      "Inbound reference",
      /* Every target is resolved before an Inbound reference is checked
       * against it, so that an unknown target comes before what follows. */
      "models.json: /models/1/properties/0/reference/target: unknown model 'Custmers' (known: "
      "Customers, Orders, Customers)",
      "models.json: /models/1/properties/0/reference/cardinality: an Outbound reference is "
      "OneToOne, not OneToMany",
      "models.json: /models/0/properties/4/reference/inverseProperty: model 'Orders' has no "
      "property 'Buyer'",
      "models.json: /models/0/properties/8/reference/inverseProperty: 'Orders.Number' is not an "
      "Outbound reference",
      "models.json: /models/0/properties/9/reference/inverseProperty: 'Orders.Partner' does not "
      "point back at model 'Customers'",
  };
  expect_errors("{}", broken_models, want, DG_ARRAY_SIZE(want));
}

static const char good_models[] =
    "{\"models\": [{\"id\": \"22222222-2222-4222-8222-222222222222\", \"name\": \"Orders\","
    " \"entityType\": \"Order\", \"properties\": ["
    "  {\"name\": \"Number\", \"dataType\": \"String\"},"
    "  {\"name\": \"Amount\", \"dataType\": \"Decimal\"}]}]}";

static void test_broken_settings_and_access(void **state) {
  static const char datagate[] =
      "{\"server\": {\"port\": 70000, \"maxBodyByte\": 5, \"logLevel\": \"loud\","
      " \"submitConfirmation\": \"sometimes\","
      " \"workers\": \"2\", \"allowedOrigins\": [\"http://a.example/path\", 7],"
      " \"allowedHosts\": [\"http://a.example\"],"
      " \"stdioUser\": \"nobody\"},"
      " \"oauth\": {\"enabled\": true, \"hs256SecretEnv\": \"DG_TEST_UNSET_SECRET\"},"
      " \"roles\": [{\"name\": \"sales\", \"models\": [{\"model\": \"Custmers\"},"
      "   {\"model\": \"Orders\", \"deny\": [\"Total\"]}, {\"model\": \"Orders\"}]},"
      "  {\"name\": \"sales\"}],"
      " \"users\": [{\"name\": \"bob\", \"roles\": [\"sales\", \"manager\"],"
      "   \"tokenEnv\": \"BAD-NAME\"}, {\"roles\": []}],"
      " \"extra\": 1}";
  static const char *const want[] = {
      "datagate.json: /server/port: must be an integer from 0 to 65535, got 70000",
      "datagate.json: /server/workers: must be an integer from 1 to 256, got a string",
      "datagate.json: /server/allowedOrigins/1: must be a string",
      "datagate.json: /server/allowedOrigins/0: 'http://a.example/path' is not an origin "
      "(scheme://host[:port] or scheme://host:*, no path)",
      "datagate.json: /server/allowedHosts/0: 'http://a.example' is not a host (host or "
      "host:port, no scheme or path)",
      "datagate.json: /server/submitConfirmation: unknown value 'sometimes' (allowed: always, "
      "when-supported, never)",
      "datagate.json: /server/logLevel: unknown log level 'loud' (allowed: debug, info, warn, "
      "error)",
      "datagate.json: /server/maxBodyByte: unknown field 'maxBodyByte' (did you mean "
      "'maxBodyBytes'?)",
      "datagate.json: /oauth/hs256SecretEnv: environment variable 'DG_TEST_UNSET_SECRET' is not "
      "set and no publicKeyFile is given",
      "datagate.json: /roles/0/models/0/model: unknown model 'Custmers' (known: Orders)",
      "datagate.json: /roles/0/models/1/deny/0: model 'Orders' has no property 'Total'",
      "datagate.json: /roles/0/models: model 'Orders' is granted more than once",
      "datagate.json: /roles/1: duplicate role name 'sales' (same as /roles/0)",
      "datagate.json: /users/0/tokenEnv: 'BAD-NAME' is not an environment variable name",
      "datagate.json: /users/0/roles/1: unknown role 'manager' (known: sales, sales)",
      "datagate.json: /users/1: missing required field 'name'",
      "datagate.json: /extra: unknown field 'extra'",
      "datagate.json: /server/stdioUser: unknown user 'nobody'",
  };
  unsetenv("DG_TEST_UNSET_SECRET");
  expect_errors(datagate, good_models, want, DG_ARRAY_SIZE(want));
}

/* The session key comes from the environment, long enough or not at all. */
static void test_session_key(void **state) {
  static const char datagate[] = "{\"server\": {\"sessionKeyEnv\": \"DG_TEST_SESSION_KEY\"}}";
  static const char *const unset[] = {
      "datagate.json: /server/sessionKeyEnv: environment variable 'DG_TEST_SESSION_KEY' is not "
      "set; it must hold a random secret of at least 32 characters, the same on every instance",
  };
  static const char *const shorter[] = {
      "datagate.json: /server/sessionKeyEnv: environment variable 'DG_TEST_SESSION_KEY' is too "
      "short; it must hold a random secret of at least 32 characters, the same on every instance",
  };
  unsetenv("DG_TEST_SESSION_KEY");
  expect_errors(datagate, good_models, unset, DG_ARRAY_SIZE(unset));
  setenv("DG_TEST_SESSION_KEY", "0123456789abcdef0123456789abcde", 1);
  expect_errors(datagate, good_models, shorter, DG_ARRAY_SIZE(shorter));
  static const char key[] = "0123456789abcdef0123456789abcdef";
  setenv("DG_TEST_SESSION_KEY", key, 1);
  tmpconf_t t;
  tmpconf_make(&t, datagate, good_models);
  dg_catalog_t *cat;
  assert_int_equal(dg_catalog_load(t.dir, &cat, NULL), 0);
  assert_string_equal(cat->server.session_key_env, "DG_TEST_SESSION_KEY");
  assert_int_equal(cat->server.session_key_len, strlen(key));
  assert_memory_equal(cat->server.session_key, key, strlen(key));
  dg_catalog_unref(cat);
  tmpconf_remove(&t);
  unsetenv("DG_TEST_SESSION_KEY");
}

static void test_missing_and_invalid_files(void **state) {
  static const char *const missing[] = {
      "datagate.json: /: file not found in '%s' (it is required)",
  };
  tmpconf_t t;
  tmpconf_make(&t, NULL, NULL);
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat;
  assert_int_equal(dg_catalog_load(t.dir, &cat, &errors), DG_ECONFIG);
  assert_int_equal(errors.count, 1);
  char want[256];
  snprintf(want, sizeof(want), missing[0], t.dir);
  assert_string_equal(errors.lines[0], want);
  dg_config_errors_free(&errors);
  tmpconf_remove(&t);

  /* The end of each line is jansson's own wording. */
  tmpconf_make(&t, "{\"oauth\": 1, \"oauth\": 1}", "{\"models\": ,}");
  assert_int_equal(dg_catalog_load(t.dir, &cat, &errors), DG_ECONFIG);
  assert_int_equal(errors.count, 2);
  const char *m = "models.json: /: invalid JSON at line 1, column 12: ";
  const char *d = "datagate.json: /: invalid JSON at line 1, column 20: duplicate object key";
  assert_memory_equal(errors.lines[0], m, strlen(m));
  assert_memory_equal(errors.lines[1], d, strlen(d));
  dg_config_errors_free(&errors);
  tmpconf_remove(&t);
}

static void test_bad_public_key_file(void **state) {
  tmpconf_t t;
  tmpconf_make(&t, "{\"oauth\": {\"enabled\": true, \"publicKeyFile\": \"missing.pem\"}}", NULL);
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat;
  assert_int_equal(dg_catalog_load(t.dir, &cat, &errors), DG_ECONFIG);
  assert_int_equal(errors.count, 1);
  char want[256];
  snprintf(want, sizeof(want),
           "datagate.json: /oauth/publicKeyFile: cannot read a PEM public key from "
           "'%s/missing.pem' (mbedTLS error -0x3e00)",
           t.dir);
  assert_string_equal(errors.lines[0], want);
  dg_config_errors_free(&errors);
  tmpconf_remove(&t);
}

static void test_defaults(void **state) {
  tmpconf_t t;
  tmpconf_make(&t, "{}", NULL);
  dg_catalog_t *cat;
  assert_int_equal(dg_catalog_load(t.dir, &cat, NULL), 0);
  const dg_server_settings_t *s = &cat->server;
  assert_string_equal(s->host, "127.0.0.1");
  assert_int_equal(s->port, 8080);
  assert_int_equal(s->workers, 1);
  assert_int_equal(s->max_header_bytes, 16384);
  assert_int_equal(s->max_headers, 64);
  assert_int_equal(s->max_body_bytes, 1048576);
  assert_int_equal(s->max_connections, 10000);
  assert_int_equal(s->header_timeout_ms, 10000);
  assert_int_equal(s->request_timeout_ms, 30000);
  assert_int_equal(s->idle_timeout_ms, 75000);
  assert_int_equal(s->max_write_buffer, 1048576);
  assert_int_equal(s->max_pipelined, 16);
  assert_int_equal(s->max_ws_message_bytes, 1048576);
  assert_int_equal(s->ws_ping_interval_ms, 30000);
  assert_int_equal(s->drain_timeout_ms, 10000);
  assert_int_equal(s->max_sessions, 10000);
  assert_int_equal(s->session_idle_timeout_ms, 1800000);
  assert_int_equal(s->max_inflight_per_session, 32);
  assert_int_equal(s->session_max_lifetime_ms, 86400000);
  assert_null(s->session_key_env);
  assert_null(s->session_key);
  assert_int_equal(s->tool_timeout_ms, 30000);
  assert_int_equal(s->max_result_bytes, 1048576);
  assert_string_equal(s->log_level, "info");
  assert_string_equal(s->submit_confirmation, "when-supported");
  assert_string_equal(s->access_log, "-");
  assert_int_equal(s->access_log_flush_ms, 0);
  assert_null(s->stdio_user);
  assert_null(s->public_url);
  assert_null(s->tls_cert_file);
  assert_string_equal(s->allowed_origins[0], "http://localhost:*");
  assert_string_equal(s->allowed_origins[1], "http://127.0.0.1:*");
  assert_null(s->allowed_hosts);
  char db[128];
  snprintf(db, sizeof(db), "%s/var/datagate.db", t.dir);
  assert_string_equal(s->database, db);
  assert_string_equal(cat->oauth.roles_claim, "roles");
  assert_string_equal(cat->oauth.user_claim, "sub");
  assert_int_equal(cat->nmodels, 0);
  assert_int_equal(cat->nusers, 0);
  dg_catalog_unref(cat);
  tmpconf_remove(&t);
}

static void test_absolute_paths_kept_and_null_access_log(void **state) {
  tmpconf_t t;
  tmpconf_make(&t,
               "{\"server\": {\"database\": \"/srv/dg.db\", \"accessLog\": null,"
               " \"accessLogFlushMs\": 1000}}",
               NULL);
  dg_catalog_t *cat;
  assert_int_equal(dg_catalog_load(t.dir, &cat, NULL), 0);
  assert_string_equal(cat->server.database, "/srv/dg.db");
  assert_null(cat->server.access_log);
  assert_int_equal(cat->server.access_log_flush_ms, 1000);
  dg_catalog_unref(cat);
  tmpconf_remove(&t);
}

static void test_upstream_dns_servers(void **state) {
  tmpconf_t t;
  tmpconf_make(
      &t, "{\"server\": {\"upstreamDnsServers\": \"127.0.0.1,10.0.0.2:5353,::1,[fe80::1]:53\"}}",
      NULL);
  dg_catalog_t *cat;
  assert_int_equal(dg_catalog_load(t.dir, &cat, NULL), 0);
  assert_string_equal(cat->server.upstream_dns_servers, "127.0.0.1,10.0.0.2:5353,::1,[fe80::1]:53");
  dg_catalog_unref(cat);
  tmpconf_remove(&t);
  static const char *const bad[] = {"dns.example",  "127.0.0.1:0", "127.0.0.1,", "[::1]x",
                                    "1.2.3.4:53:1", "127.0.0.1:",  "300.1.1.1"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++) {
    char conf[256], want[256];
    snprintf(conf, sizeof(conf), "{\"server\": {\"upstreamDnsServers\": \"%s\"}}", bad[i]);
    const char *item = strcmp(bad[i], "127.0.0.1,") == 0 ? "" : bad[i];
    snprintf(want, sizeof(want),
             "datagate.json: /server/upstreamDnsServers: '%s' is not a name server (ip, ip:port or "
             "[ipv6]:port)",
             item);
    const char *const wants[] = {want};
    expect_errors(conf, NULL, wants, 1);
  }
}

/* The PostgreSQL settings: their defaults, the values kept, and each
 * refusal naming its setting. */
static void test_database_settings(void **state) {
  tmpconf_t t;
  tmpconf_make(&t, "{}", NULL);
  dg_catalog_t *cat;
  assert_int_equal(dg_catalog_load(t.dir, &cat, NULL), 0);
  assert_int_equal(cat->server.database_pool, 8);
  assert_string_equal(cat->server.database_password_env, "PGPASSWORD");
  assert_null(cat->server.read_database);
  assert_int_equal(cat->server.read_max_lag_ms, 1000);
  dg_catalog_unref(cat);
  tmpconf_remove(&t);
  tmpconf_make(&t,
               "{\"server\": {\"databasePool\": 3, \"databasePasswordEnv\": \"APP_DB_PW\","
               " \"readDatabase\": \"postgresql://standby1,standby2/app?target_session_attrs="
               "prefer-standby\", \"readMaxLagMs\": 250}}",
               NULL);
  assert_int_equal(dg_catalog_load(t.dir, &cat, NULL), 0);
  assert_int_equal(cat->server.database_pool, 3);
  assert_string_equal(cat->server.database_password_env, "APP_DB_PW");
  assert_string_equal(cat->server.read_database,
                      "postgresql://standby1,standby2/app?target_session_attrs=prefer-standby");
  assert_int_equal(cat->server.read_max_lag_ms, 250);
  dg_catalog_unref(cat);
  tmpconf_remove(&t);
  static const char bad[] = "{\"server\": {\"databasePool\": 0, \"databasePasswordEnv\": \"DB-PW\","
                            " \"readDatabase\": \"var/standby.db\", \"readMaxLagMs\": 5}}";
  static const char *const want[] = {
      "datagate.json: /server/databasePool: must be an integer from 1 to 256, got 0",
      "datagate.json: /server/databasePasswordEnv: 'DB-PW' is not an environment variable name",
      ("datagate.json: /server/readDatabase: not a PostgreSQL URI (postgresql://...): reads "
       "from standbys need a PostgreSQL server.database"),
      "datagate.json: /server/readMaxLagMs: must be an integer from 10 to 3600000, got 5",
  };
  expect_errors(bad, NULL, want, DG_ARRAY_SIZE(want));
}

static void test_check_output(void **state) {
  char *text = NULL;
  size_t len = 0;
  FILE *out = open_memstream(&text, &len);
  assert_int_equal(dg_catalog_check(conf_dir(), NULL, out), 0);
  fclose(out);
  char want[4200];
  /* Where the placeholders of each save action get their values, then the
   * summary. */
  snprintf(want, sizeof(want), "%s: 6 models, 3 roles, 3 users: OK\n", conf_dir());
  assert_non_null(strstr(text, want));
  assert_string_equal(strstr(text, want), want);
  assert_non_null(strstr(text, "endpoints.json: /endpoints/0/save/actions/1: OrderEdit reads "
                               "{OrderNumber} from the stored record, {CalculatedOrderId} from "
                               "this run (/endpoints/0/save/actions/0/extractions/0)\n"));
  assert_non_null(strstr(text, "endpoints.json: /endpoints/3/save: OrderLineEditGraphql reads "
                               "{SESSION:Order.CalculatedOrderId} from the parent's run "
                               "(/endpoints/2/save/actions/0/extractions/0), "));
  free(text);

  tmpconf_t t;
  tmpconf_make(&t, "{\"server\": {\"port\": -1, \"hots\": \"x\"}}", NULL);
  out = open_memstream(&text, &len);
  assert_int_equal(dg_catalog_check(t.dir, NULL, out), 1);
  fclose(out);
  snprintf(want, sizeof(want),
           "datagate.json: /server/port: must be an integer from 0 to 65535, got -1\n"
           "datagate.json: /server/hots: unknown field 'hots' (did you mean 'host'?)\n"
           "%s: 2 problems found\n",
           t.dir);
  assert_string_equal(text, want);
  free(text);
  tmpconf_remove(&t);
}

static void test_data_types(void **state) {
  dg_data_type_t t;
  assert_true(dg_data_type_parse("Decimal", &t));
  assert_int_equal(t, DG_TYPE_DECIMAL);
  assert_false(dg_data_type_parse("decimal", &t));
  assert_false(dg_data_type_parse(NULL, &t));
  for (int i = 0; i < DG_TYPE__COUNT; i++) {
    assert_true(dg_data_type_parse(dg_data_type_name((dg_data_type_t)i), &t));
    assert_int_equal(t, i);
  }
  assert_string_equal(dg_data_type_name(DG_TYPE_REFERENCE), "Reference");
  assert_true(dg_data_type_is_numeric(DG_TYPE_INT));
  assert_true(dg_data_type_is_numeric(DG_TYPE_LONG));
  assert_true(dg_data_type_is_numeric(DG_TYPE_DOUBLE));
  assert_true(dg_data_type_is_numeric(DG_TYPE_DECIMAL));
  assert_false(dg_data_type_is_numeric(DG_TYPE_DATE));
  assert_false(dg_data_type_is_numeric(DG_TYPE_STRING));
}

static void test_errors_add(void **state) {
  dg_config_errors_t errors = {0};
  dg_config_errors_add(&errors, "models.json", "/models/2", "unknown model '%s'", "X");
  for (int i = 0; i < 40; i++)
    dg_config_errors_add(&errors, "f", "/p", "n=%d", i);
  assert_int_equal(errors.count, 41);
  assert_string_equal(errors.lines[0], "models.json: /models/2: unknown model 'X'");
  assert_string_equal(errors.lines[40], "f: /p: n=39");
  dg_config_errors_free(&errors);
  assert_int_equal(errors.count, 0);
  dg_config_errors_add(NULL, "f", "/", "ignored");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sample_counts_and_settings),
      cmocka_unit_test(test_sample_lookups),
      cmocka_unit_test(test_sample_references),
      cmocka_unit_test(test_sample_roles),
      cmocka_unit_test(test_tokens_hashed_from_environment),
      cmocka_unit_test(test_refcount),
      cmocka_unit_test(test_broken_models),
      cmocka_unit_test(test_broken_settings_and_access),
      cmocka_unit_test(test_missing_and_invalid_files),
      cmocka_unit_test(test_bad_public_key_file),
      cmocka_unit_test(test_defaults),
      cmocka_unit_test(test_session_key),
      cmocka_unit_test(test_absolute_paths_kept_and_null_access_log),
      cmocka_unit_test(test_upstream_dns_servers),
      cmocka_unit_test(test_database_settings),
      cmocka_unit_test(test_check_output),
      cmocka_unit_test(test_data_types),
      cmocka_unit_test(test_errors_add),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
