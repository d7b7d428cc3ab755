/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for auth: static bearer tokens, JWTs (HS256, ES256, RS256 with
 * keys generated here), the refusal messages, and permissions per role of
 * the sample configuration. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <mbedtls/base64.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/md.h>
#include <mbedtls/pk.h>
#include <mbedtls/rsa.h>

#include "auth/internal.h"
#include "datagate/auth.h"

#define SECRET "a-test-hmac-secret-of-some-length"
#define ISSUER "https://login.example.com/"
#define AUDIENCE "http://127.0.0.1:8080/mcp"

/* ---- Configuration fixtures ------------------------------------------------- */

typedef struct fixture {
  char dir[64];
  dg_catalog_t *cat;
  dg_arena_t *arena;
  mbedtls_pk_context key; /* signing key of the JWT tests, when any */
} fixture_t;

static char *read_text(const char *path) {
  FILE *f = fopen(path, "rb");
  assert_non_null(f);
  static char text[65536];
  size_t n = fread(text, 1, sizeof(text) - 1, f);
  fclose(f);
  text[n] = '\0';
  return text;
}

static void write_text(const char *dir, const char *name, const char *text) {
  char path[256];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

/* The sample configuration's files, with its oauth object replaced. */
static void fixture_load(fixture_t *fx, const char *oauth) {
  char path[4096];
  const char *src = getenv("DG_SOURCE_DIR");
  dg_strlcpy(fx->dir, "/tmp/dg_auth_XXXXXX", sizeof(fx->dir));
  assert_non_null(mkdtemp(fx->dir));
  snprintf(path, sizeof(path), "%s/conf/models.json", src ? src : ".");
  write_text(fx->dir, "models.json", read_text(path));
  snprintf(path, sizeof(path), "%s/conf/datagate.json", src ? src : ".");
  json_t *root = json_loads(read_text(path), 0, NULL);
  assert_non_null(root);
  if (oauth != NULL)
    json_object_set_new(root, "oauth", json_loads(oauth, 0, NULL));
  char *text = json_dumps(root, JSON_INDENT(2));
  write_text(fx->dir, "datagate.json", text);
  free(text);
  json_decref(root);
  dg_config_errors_t errors = {0};
  int rc = dg_catalog_load(fx->dir, &fx->cat, &errors);
  for (size_t i = 0; i < errors.count; i++)
    fprintf(stderr, "%s\n", errors.lines[i]);
  assert_int_equal(rc, 0);
  dg_config_errors_free(&errors);
  fx->arena = dg_arena_new(4096);
}

static void fixture_remove_files(fixture_t *fx) {
  const char *names[] = {"models.json", "datagate.json"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(names); i++) {
    char path[256];
    snprintf(path, sizeof(path), "%s/%s", fx->dir, names[i]);
    unlink(path);
  }
  rmdir(fx->dir);
}

static int teardown(void **state) {
  fixture_t *fx = *state;
  dg_arena_destroy(fx->arena);
  dg_catalog_unref(fx->cat);
  mbedtls_pk_free(&fx->key);
  fixture_remove_files(fx);
  free(fx);
  return 0;
}

static fixture_t *fixture_new(void **state) {
  fixture_t *fx = calloc(1, sizeof(*fx));
  assert_non_null(fx);
  mbedtls_pk_init(&fx->key);
  *state = fx;
  return fx;
}

static int setup_static(void **state) {
  setenv("DATAGATE_TOKEN_ADMIN", "admin-token-1", 1);
  setenv("DATAGATE_TOKEN_SALES", "sales-token-2", 1);
  setenv("DATAGATE_TOKEN_AUDITOR", "auditor-token-3", 1);
  fixture_load(fixture_new(state), NULL);
  return 0;
}

static int setup_hs256(void **state) {
  setenv("DG_TEST_JWT_SECRET", SECRET, 1);
  fixture_load(fixture_new(state),
               "{\"enabled\": true, \"issuer\": \"" ISSUER "\", \"audience\": \"" AUDIENCE "\","
               " \"hs256SecretEnv\": \"DG_TEST_JWT_SECRET\"}");
  return 0;
}

static int rng(void *ctx, unsigned char *buf, size_t n) {
  return dg_random_bytes(buf, n) == 0 ? 0 : -1;
}

/* Generates a key pair, writes its public half where the configuration
 * names it, and loads a catalog with that publicKeyFile. */
static void setup_public_key(void **state, bool rsa) {
  fixture_t *fx = fixture_new(state);
  mbedtls_pk_context *pk = &fx->key;
  if (rsa) {
    assert_int_equal(mbedtls_pk_setup(pk, mbedtls_pk_info_from_type(MBEDTLS_PK_RSA)), 0);
    assert_int_equal(mbedtls_rsa_gen_key(mbedtls_pk_rsa(*pk), rng, NULL, 1024, 65537), 0);
  } else {
    assert_int_equal(mbedtls_pk_setup(pk, mbedtls_pk_info_from_type(MBEDTLS_PK_ECKEY)), 0);
    assert_int_equal(mbedtls_ecp_gen_key(MBEDTLS_ECP_DP_SECP256R1, mbedtls_pk_ec(*pk), rng, NULL),
                     0);
  }
  unsigned char pem[4096];
  assert_int_equal(mbedtls_pk_write_pubkey_pem(pk, pem, sizeof(pem)), 0);
  /* The configuration names the key by an absolute path; the catalog has
   * parsed it by the time the file is removed. */
  char keyfile[128];
  snprintf(keyfile, sizeof(keyfile), "/tmp/dg_auth_key_%d_%s.pem", (int)getpid(),
           rsa ? "rsa" : "ec");
  FILE *f = fopen(keyfile, "w");
  assert_non_null(f);
  fputs((const char *)pem, f);
  fclose(f);
  char oauth[512];
  snprintf(oauth, sizeof(oauth),
           "{\"enabled\": true, \"audience\": \"" AUDIENCE "\", \"publicKeyFile\": \"%s\"}",
           keyfile);
  fixture_load(fx, oauth);
  unlink(keyfile);
}

static int setup_es256(void **state) {
  setup_public_key(state, false);
  return 0;
}

static int setup_rs256(void **state) {
  setup_public_key(state, true);
  return 0;
}

/* ---- Building JWTs ------------------------------------------------------------- */

static void b64url(const unsigned char *in, size_t len, char *out, size_t cap) {
  size_t n;
  assert_int_equal(mbedtls_base64_encode((unsigned char *)out, cap, &n, in, len), 0);
  while (n > 0 && out[n - 1] == '=')
    n--;
  out[n] = '\0';
  for (char *c = out; *c != '\0'; c++) {
    if (*c == '+')
      *c = '-';
    else if (*c == '/')
      *c = '_';
  }
}

static size_t sign(fixture_t *fx, const char *alg, const char *input, unsigned char *sig) {
  unsigned char hash[32];
  size_t len = 0;
  dg_sha256(input, strlen(input), hash);
  if (strcmp(alg, "HS256") == 0) {
    mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), (const unsigned char *)SECRET,
                    strlen(SECRET), (const unsigned char *)input, strlen(input), sig);
    return 32;
  }
  if (strcmp(alg, "RS256") == 0) {
    assert_int_equal(mbedtls_pk_sign(&fx->key, MBEDTLS_MD_SHA256, hash, 32, sig, &len, rng, NULL),
                     0);
    return len;
  }
  mbedtls_ecp_keypair *ec = mbedtls_pk_ec(fx->key);
  mbedtls_mpi r, s;
  mbedtls_mpi_init(&r);
  mbedtls_mpi_init(&s);
  assert_int_equal(mbedtls_ecdsa_sign(&ec->grp, &r, &s, &ec->d, hash, 32, rng, NULL), 0);
  mbedtls_mpi_write_binary(&r, sig, 32);
  mbedtls_mpi_write_binary(&s, sig + 32, 32);
  mbedtls_mpi_free(&r);
  mbedtls_mpi_free(&s);
  return 64;
}

/* "Bearer <header>.<payload>.<signature>" signed with alg (the header may
 * claim another alg to test refusals). */
static char *make_jwt(fixture_t *fx, const char *header, const char *payload, const char *alg) {
  static char out[8192];
  char h[1024], p[2048], s[1024];
  unsigned char sig[512];
  b64url((const unsigned char *)header, strlen(header), h, sizeof(h));
  b64url((const unsigned char *)payload, strlen(payload), p, sizeof(p));
  char input[4096];
  snprintf(input, sizeof(input), "%s.%s", h, p);
  s[0] = '\0';
  if (alg != NULL)
    b64url(sig, sign(fx, alg, input, sig), s, sizeof(s));
  snprintf(out, sizeof(out), "Bearer %s.%s", input, s);
  return out;
}

static char *claims(const char *sub, long exp_delta, const char *extra) {
  static char out[1024];
  snprintf(out, sizeof(out), "{\"sub\": \"%s\", \"exp\": %ld, \"iss\": \"" ISSUER "\"%s%s}", sub,
           (long)time(NULL) + exp_delta, extra ? ", " : "", extra ? extra : "");
  return out;
}

static int auth(fixture_t *fx, const char *header, const dg_principal_t **p, dg_errctx_t *err) {
  dg_errctx_clear(err);
  *p = NULL;
  return dg_auth_authenticate(fx->cat, header, fx->arena, p, err);
}

static void expect_refused(fixture_t *fx, const char *header, const char *message) {
  const dg_principal_t *p;
  dg_errctx_t err;
  assert_int_equal(auth(fx, header, &p, &err), DG_EAUTH);
  assert_null(p);
  assert_int_equal(err.code, DG_EAUTH);
  assert_string_equal(err.param, "Authorization");
  assert_string_equal(err.message, message);
}

/* ---- Static tokens ------------------------------------------------------------- */

static void test_static_tokens(void **state) {
  fixture_t *fx = *state;
  const dg_principal_t *p;
  dg_errctx_t err;
  assert_int_equal(auth(fx, "Bearer sales-token-2", &p, &err), 0);
  assert_string_equal(dg_principal_name(p), "sales");
  assert_true(dg_principal_has_role(p, "sales"));
  assert_false(dg_principal_has_role(p, "admin"));
  assert_int_equal(auth(fx, "bEaReR   admin-token-1  ", &p, &err), 0);
  assert_string_equal(dg_principal_name(p), "admin");
  assert_int_equal(auth(fx, "Bearer auditor-token-3", &p, &err), 0);
  assert_string_equal(dg_principal_name(p), "auditor");
}

/* A static token matched once is found again by its bytes: the second
 * request does not hash it (shown by a user whose stored hash no longer
 * matches, which only the table can still find), a refused token is never
 * kept, and another catalog snapshot empties the table. */
static void test_seen_tokens(void **state) {
  fixture_t *fx = *state;
  int refs = fx->cat->refs;
  dg_auth_tokens_t *seen = dg_auth_tokens_new();
  dg_arena_t *a = dg_arena_new(1024);
  const dg_principal_t *p = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_auth_authenticate_seen(seen, fx->cat, "Bearer sales-token-2", a, &p, &err),
                   0);
  assert_string_equal(dg_principal_name(p), "sales");
  const dg_user_t *sales = dg_catalog_user(fx->cat, "sales");
  unsigned char *hash = (unsigned char *)sales->token_sha256;
  hash[0] ^= 1;
  assert_int_equal(auth(fx, "Bearer sales-token-2", &p, &err), DG_EAUTH);
  assert_int_equal(dg_auth_authenticate_seen(seen, fx->cat, "Bearer sales-token-2", a, &p, &err),
                   0);
  assert_string_equal(dg_principal_name(p), "sales");
  assert_true(dg_principal_has_role(p, "sales"));
  /* Only the same bytes: a token one byte longer or shorter is refused. */
  assert_int_equal(dg_auth_authenticate_seen(seen, fx->cat, "Bearer sales-token-22", a, &p, &err),
                   DG_EAUTH);
  assert_int_equal(dg_auth_authenticate_seen(seen, fx->cat, "Bearer sales-token-", a, &p, &err),
                   DG_EAUTH);
  hash[0] ^= 1;
  /* A refused token is refused again. */
  for (int i = 0; i < 2; i++)
    assert_int_equal(dg_auth_authenticate_seen(seen, fx->cat, "Bearer sales-token-9", a, &p, &err),
                     DG_EAUTH);
  /* Another snapshot without that user: the token kept for the old one
   * is not used. */
  dg_catalog_t other = *fx->cat;
  other.nusers = 0;
  other.refs = 1;
  assert_int_equal(dg_auth_authenticate_seen(seen, &other, "Bearer sales-token-2", a, &p, &err),
                   DG_EAUTH);
  assert_null(p);
  /* The table let the old snapshot go; the principals it handed out
   * keep it until the arena they were given to is destroyed. */
  assert_int_equal(fx->cat->refs, refs + 1);
  dg_arena_destroy(a);
  assert_int_equal(fx->cat->refs, refs);
  assert_int_equal(other.refs, 2);
  dg_auth_tokens_free(seen);
  assert_int_equal(other.refs, 1);
}

/* A static user's principal is built once per snapshot and shared: the
 * same permissions as one built for the request alone, the same object for
 * every request and for every copy, and alive while any arena it was given
 * to is, after the table has moved to another snapshot. */
static void test_shared_principals(void **state) {
  fixture_t *fx = *state;
  int refs = fx->cat->refs;
  dg_auth_tokens_t *seen = dg_auth_tokens_new();
  dg_arena_t *first = dg_arena_new(1024), *second = dg_arena_new(1024);
  const dg_principal_t *p1 = NULL, *p2 = NULL, *own = NULL, *copy = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(
      dg_auth_authenticate_seen(seen, fx->cat, "Bearer sales-token-2", first, &p1, &err), 0);
  assert_int_equal(
      dg_auth_authenticate_seen(seen, fx->cat, "Bearer sales-token-2", second, &p2, &err), 0);
  assert_ptr_equal(p1, p2);
  assert_int_equal(auth(fx, "Bearer sales-token-2", &own, &err), 0);
  assert_ptr_not_equal(own, p1);
  for (size_t m = 0; m < fx->cat->nmodels; m++) {
    const dg_model_t *model = &fx->cat->models[m];
    assert_int_equal(dg_auth_can_read_model(p1, model), dg_auth_can_read_model(own, model));
  }
  assert_int_equal(dg_principal_has_role(p1, "sales"), dg_principal_has_role(own, "sales"));
  assert_int_equal(dg_auth_principal_copy(fx->cat, p1, second, &copy), 0);
  assert_ptr_equal(copy, p1);
  /* Another user gets another principal. */
  assert_int_equal(
      dg_auth_authenticate_seen(seen, fx->cat, "Bearer admin-token-1", first, &p2, &err), 0);
  assert_ptr_not_equal(p2, p1);
  assert_string_equal(dg_principal_name(p2), "admin");
  /* The table moves on; the principals stay while their arenas live. */
  dg_catalog_t other = *fx->cat;
  other.nusers = 0;
  other.refs = 1;
  assert_int_equal(
      dg_auth_authenticate_seen(seen, &other, "Bearer sales-token-2", first, &p2, &err), DG_EAUTH);
  dg_auth_tokens_free(seen);
  dg_arena_destroy(first);
  assert_string_equal(dg_principal_name(p1), "sales");
  assert_true(dg_principal_has_role(p1, "sales"));
  assert_int_equal(fx->cat->refs, refs + 1);
  dg_arena_destroy(second);
  assert_int_equal(fx->cat->refs, refs);
  assert_int_equal(other.refs, 1);
}

static void test_static_refusals(void **state) {
  fixture_t *fx = *state;
  expect_refused(fx, NULL, "missing Authorization header; send 'Authorization: Bearer <token>'");
  expect_refused(fx, "  ", "missing Authorization header; send 'Authorization: Bearer <token>'");
  expect_refused(fx,
                 "Basic YWRtaW46YWRtaW4=", "the Authorization header must use the Bearer scheme");
  expect_refused(fx, "Bearertoken", "the Authorization header must use the Bearer scheme");
  expect_refused(fx, "Bearer ", "the bearer token is empty or malformed");
  expect_refused(fx, "Bearer two words", "the bearer token is empty or malformed");
  expect_refused(fx, "Bearer sales-token-X", "the bearer token is not valid");
  /* A token that is a prefix of a real one is no token. */
  expect_refused(fx, "Bearer sales-token-", "the bearer token is not valid");
  /* With OAuth off, a JWT is just an unknown static token. */
  expect_refused(fx, "Bearer aaa.bbb.ccc", "the bearer token is not valid");
  static char big[8300];
  memcpy(big, "Bearer ", 7);
  memset(big + 7, 'a', 8193);
  big[7 + 8193] = '\0';
  expect_refused(fx, big, "the bearer token is longer than 8192 bytes");
  big[7 + 8192] = '\0';
  expect_refused(fx, big, "the bearer token is not valid");
}

static void test_unset_token_cannot_sign_in(void **state) {
  fixture_t *fx = fixture_new(state);
  unsetenv("DATAGATE_TOKEN_ADMIN");
  setenv("DATAGATE_TOKEN_SALES", "s", 1);
  fixture_load(fx, NULL);
  assert_false(dg_catalog_user(fx->cat, "admin")->has_token);
  /* The token the variable held before no longer signs in. */
  expect_refused(fx, "Bearer admin-token-1", "the bearer token is not valid");
  const dg_principal_t *p;
  dg_errctx_t err;
  assert_int_equal(auth(fx, "Bearer s", &p, &err), 0);
  assert_string_equal(dg_principal_name(p), "sales");
}

/* ---- Permissions ----------------------------------------------------------------- */

static const dg_principal_t *principal(fixture_t *fx, const char *user) {
  const dg_principal_t *p = NULL;
  assert_int_equal(dg_auth_principal_for_user(fx->cat, user, fx->arena, &p), 0);
  assert_non_null(p);
  return p;
}

static const dg_model_t *model(fixture_t *fx, const char *name) {
  const dg_model_t *m = dg_catalog_model_by_name(fx->cat, name);
  assert_non_null(m);
  return m;
}

static void test_permissions_admin(void **state) {
  fixture_t *fx = *state;
  const dg_principal_t *admin = principal(fx, "admin");
  for (size_t i = 0; i < fx->cat->nmodels; i++) {
    const dg_model_t *m = &fx->cat->models[i];
    assert_true(dg_auth_can_read_model(admin, m));
    assert_true(dg_auth_can_write_model(admin, m));
    for (size_t j = 0; j < m->nproperties; j++)
      assert_true(dg_auth_can_see_property(admin, m, &m->properties[j]));
  }
  assert_true(dg_auth_can_use_saved_query(admin, "0f0e0d0c-0000-4000-8000-000000000000", "Any"));
}

static void test_permissions_sales(void **state) {
  fixture_t *fx = *state;
  const dg_principal_t *sales = principal(fx, "sales");
  const dg_model_t *customers = model(fx, "Customers");
  assert_true(dg_auth_can_read_model(sales, customers));
  assert_false(dg_auth_can_write_model(sales, customers));
  assert_false(
      dg_auth_can_see_property(sales, customers, dg_model_property(customers, "CreditLimit")));
  assert_true(dg_auth_can_see_property(sales, customers, dg_model_property(customers, "Name")));
  assert_false(dg_auth_can_read_model(sales, model(fx, "Payments")));
  const dg_model_t *payments = model(fx, "Payments");
  assert_false(dg_auth_can_see_property(sales, payments, &payments->properties[0]));
  assert_true(dg_auth_can_write_model(sales, model(fx, "Orders")));
  assert_true(dg_auth_can_write_model(sales, model(fx, "OrderLines")));
  assert_false(dg_auth_can_write_model(sales, model(fx, "Products")));
  assert_true(dg_auth_can_read_model(sales, model(fx, "Files")));
  assert_true(dg_auth_can_use_saved_query(sales, NULL, "Open orders"));
  /* A property of another model is not visible through this one. */
  const dg_model_t *orders = model(fx, "Orders");
  assert_false(dg_auth_can_see_property(sales, customers, &orders->properties[0]));
}

static void test_permissions_auditor(void **state) {
  fixture_t *fx = *state;
  const dg_principal_t *auditor = principal(fx, "auditor");
  assert_true(dg_auth_can_read_model(auditor, model(fx, "Payments")));
  assert_true(dg_auth_can_read_model(auditor, model(fx, "Orders")));
  assert_false(dg_auth_can_read_model(auditor, model(fx, "Customers")));
  assert_false(dg_auth_can_read_model(auditor, model(fx, "Files")));
  for (size_t i = 0; i < fx->cat->nmodels; i++)
    assert_false(dg_auth_can_write_model(auditor, &fx->cat->models[i]));
  assert_false(dg_auth_can_use_saved_query(auditor, "0f0e0d0c-0000-4000-8000-000000000000", "X"));
  const dg_principal_t *none = NULL;
  assert_int_equal(dg_auth_principal_for_user(fx->cat, "nobody", fx->arena, &none), DG_ENOENT);
  assert_null(none);
}

/* A copy made for another arena has the same name and permissions; a
 * principal of another catalog snapshot is not copied. */
static void test_principal_copy(void **state) {
  fixture_t *fx = *state;
  const dg_principal_t *sales = principal(fx, "sales");
  const dg_principal_t *copy = NULL;
  dg_arena_t *arena = dg_arena_new(1024);
  assert_int_equal(dg_auth_principal_copy(fx->cat, sales, arena, &copy), 0);
  assert_ptr_not_equal(copy, sales);
  assert_string_equal(dg_principal_name(copy), "sales");
  const dg_model_t *customers = model(fx, "Customers");
  for (size_t i = 0; i < fx->cat->nmodels; i++) {
    const dg_model_t *m = &fx->cat->models[i];
    assert_int_equal(dg_auth_can_read_model(copy, m), dg_auth_can_read_model(sales, m));
    assert_int_equal(dg_auth_can_write_model(copy, m), dg_auth_can_write_model(sales, m));
    for (size_t j = 0; j < m->nproperties; j++)
      assert_int_equal(dg_auth_can_see_property(copy, m, &m->properties[j]),
                       dg_auth_can_see_property(sales, m, &m->properties[j]));
  }
  assert_false(
      dg_auth_can_see_property(copy, customers, dg_model_property(customers, "CreditLimit")));
  assert_int_equal(dg_auth_can_use_saved_query(copy, NULL, "No such query"),
                   dg_auth_can_use_saved_query(sales, NULL, "No such query"));
  assert_true(dg_auth_can_use_saved_query(copy, NULL, "Open orders"));
  const dg_role_t *const *a, *const *b;
  assert_int_equal(dg_principal_roles(copy, &a), dg_principal_roles(sales, &b));
  assert_ptr_equal(a[0], b[0]);
  /* The copy stands alone: it outlives the original's arena. */
  dg_arena_t *first = dg_arena_new(1024);
  const dg_principal_t *again = NULL, *last = NULL;
  assert_int_equal(dg_auth_principal_copy(fx->cat, sales, first, &again), 0);
  assert_int_equal(dg_auth_principal_copy(fx->cat, again, arena, &last), 0);
  dg_arena_destroy(first);
  assert_string_equal(dg_principal_name(last), "sales");
  assert_true(dg_auth_can_use_saved_query(last, NULL, "Open orders"));
  assert_false(
      dg_auth_can_see_property(last, customers, dg_model_property(customers, "CreditLimit")));
  assert_true(dg_auth_can_read_model(last, customers));
  /* Another snapshot: the caller must authenticate against it. */
  dg_catalog_t other = *fx->cat;
  const dg_principal_t *none = NULL;
  assert_int_equal(dg_auth_principal_copy(&other, sales, arena, &none), DG_EINVAL);
  assert_null(none);
  assert_int_equal(dg_auth_principal_copy(fx->cat, NULL, arena, &none), DG_EINVAL);
  dg_arena_destroy(arena);
}

/* Roles listing saved queries by id or name, and deny lists unioned. */
static void test_permissions_grants_by_list(void **state) {
  fixture_t *fx = *state;
  const dg_model_t *customers = model(fx, "Customers");
  dg_model_grant_t only_name = {
      .model = customers, .properties = (const char *const[]){"name"}, .nproperties = 1};
  dg_role_t role = {
      .name = "narrow",
      .grants = &only_name,
      .ngrants = 1,
      .saved_queries = (const char *const[]){"AB000000-0000-4000-8000-000000000000", "Open orders"},
      .nsaved_queries = 2};
  const dg_principal_t *p = NULL;
  /* The narrow role alone, then together with sales (which denies
   * CreditLimit but shows every other property). */
  const dg_role_t *roles[] = {&role, dg_catalog_role(fx->cat, "sales")};
  assert_int_equal(dg__auth_principal_new(fx->cat, "n", roles, 1, fx->arena, &p), 0);
  assert_true(dg_auth_can_see_property(p, customers, dg_model_property(customers, "Name")));
  assert_false(dg_auth_can_see_property(p, customers, dg_model_property(customers, "Email")));
  assert_true(dg_auth_can_use_saved_query(p, "ab000000-0000-4000-8000-000000000000", NULL));
  assert_true(dg_auth_can_use_saved_query(p, NULL, "Open orders"));
  assert_false(dg_auth_can_use_saved_query(p, NULL, "open orders"));
  assert_false(dg_auth_can_use_saved_query(p, "cd000000-0000-4000-8000-000000000000", "Other"));
  assert_int_equal(dg__auth_principal_new(fx->cat, "n", roles, 2, fx->arena, &p), 0);
  assert_true(dg_auth_can_see_property(p, customers, dg_model_property(customers, "Email")));
  assert_false(dg_auth_can_see_property(p, customers, dg_model_property(customers, "CreditLimit")));
}

/* ---- JWT --------------------------------------------------------------------------- */

#define HS "{\"alg\": \"HS256\", \"typ\": \"JWT\"}"
#define AUD_CLAIM "\"aud\": \"" AUDIENCE "\""
#define AUD ", " AUD_CLAIM

static void test_jwt_hs256_valid(void **state) {
  fixture_t *fx = *state;
  const dg_principal_t *p;
  dg_errctx_t err;
  char *h = make_jwt(fx, HS,
                     claims("carol", 600,
                            "\"aud\": \"" AUDIENCE "\", \"roles\": "
                            "[\"auditor\", \"no-such-role\"]"),
                     "HS256");
  assert_int_equal(auth(fx, h, &p, &err), 0);
  assert_string_equal(dg_principal_name(p), "carol");
  assert_true(dg_principal_has_role(p, "auditor"));
  assert_false(dg_principal_has_role(p, "no-such-role"));
  assert_true(dg_auth_can_read_model(p, model(fx, "Payments")));
  assert_false(dg_auth_can_read_model(p, model(fx, "Customers")));
  /* The sub of a configured user brings that user's roles; aud may be a
   * list; an expiry inside the leeway is still accepted. */
  h = make_jwt(fx, HS,
               claims("sales", -30, "\"aud\": [\"other\", \"" AUDIENCE "\"], \"roles\": []"),
               "HS256");
  assert_int_equal(auth(fx, h, &p, &err), 0);
  assert_true(dg_principal_has_role(p, "sales"));
  assert_true(dg_auth_can_read_model(p, model(fx, "Customers")));
  /* A token whose sub carries no roles reads nothing. */
  h = make_jwt(fx, HS, claims("dave", 600, "\"aud\": \"" AUDIENCE "\""), "HS256");
  assert_int_equal(auth(fx, h, &p, &err), 0);
  for (size_t i = 0; i < fx->cat->nmodels; i++)
    assert_false(dg_auth_can_read_model(p, &fx->cat->models[i]));
}

static void test_jwt_hs256_refusals(void **state) {
  fixture_t *fx = *state;
  expect_refused(fx, make_jwt(fx, HS, claims("carol", -120, AUD_CLAIM), "HS256"),
                 "the JWT has expired");
  char nbf[256];
  snprintf(nbf, sizeof(nbf), AUD_CLAIM ", \"nbf\": %ld", (long)time(NULL) + 600);
  expect_refused(fx, make_jwt(fx, HS, claims("carol", 900, nbf), "HS256"),
                 "the JWT is not valid yet ('nbf' is in the future)");
  expect_refused(fx, make_jwt(fx, HS, claims("carol", 600, "\"aud\": \"https://other/\""), "HS256"),
                 "the JWT audience ('aud') does not include this server");
  expect_refused(fx, make_jwt(fx, HS, claims("carol", 600, NULL), "HS256"),
                 "the JWT audience ('aud') does not include this server");
  expect_refused(fx,
                 make_jwt(fx, HS,
                          "{\"sub\": \"carol\", \"exp\": 99999999999" AUD ", \"iss\": "
                          "\"https://evil.example/\"}",
                          "HS256"),
                 "the JWT issuer ('iss') is not the configured issuer");
  expect_refused(fx,
                 make_jwt(fx, HS, "{\"sub\": \"carol\", \"iss\": \"" ISSUER "\"" AUD "}", "HS256"),
                 "the JWT has no numeric 'exp' (expiry) claim");
  expect_refused(fx, make_jwt(fx, HS, claims("", 600, AUD_CLAIM), "HS256"),
                 "the JWT has no usable 'sub' claim naming the user");
}

static void test_jwt_signature_and_alg(void **state) {
  fixture_t *fx = *state;
  char *h = make_jwt(fx, HS, claims("carol", 600, AUD_CLAIM), "HS256");
  char token[8192];
  dg_strlcpy(token, h, sizeof(token));
  /* Flip one character of the signature. */
  size_t n = strlen(token);
  token[n - 2] = token[n - 2] == 'A' ? 'B' : 'A';
  expect_refused(fx, token, "the JWT signature does not verify");
  expect_refused(fx, make_jwt(fx, "{\"alg\": \"none\"}", claims("carol", 600, AUD_CLAIM), NULL),
                 "the JWT algorithm 'none' is not accepted (allowed: HS256, RS256, ES256)");
  expect_refused(fx, make_jwt(fx, "{\"alg\": \"HS512\"}", claims("carol", 600, AUD_CLAIM), "HS256"),
                 "the JWT algorithm 'HS512' is not accepted (allowed: HS256, RS256, ES256)");
  expect_refused(fx, make_jwt(fx, "{\"alg\": \"RS256\"}", claims("carol", 600, AUD_CLAIM), "HS256"),
                 "the JWT algorithm 'RS256' is not configured on this server");
  expect_refused(fx, make_jwt(fx, "{\"typ\": \"JWT\"}", claims("carol", 600, AUD_CLAIM), "HS256"),
                 "the JWT header has no 'alg'");
  expect_refused(fx, "Bearer e30.e30.", "the JWT header has no 'alg'");
  expect_refused(fx, "Bearer !!.e30.x", "the bearer token is empty or malformed");
  expect_refused(fx, "Bearer bm90IGpzb24.e30.x", "the JWT header is not base64url-encoded JSON");
  expect_refused(fx, "Bearer a.b.c.d", "the bearer token is not valid");
  /* The message never repeats the token. */
  const dg_principal_t *p;
  dg_errctx_t err;
  assert_int_equal(auth(fx, token, &p, &err), DG_EAUTH);
  assert_null(strstr(err.message, token + 7));
}

static void test_jwt_es256(void **state) {
  fixture_t *fx = *state;
  const dg_principal_t *p;
  dg_errctx_t err;
  char *h = make_jwt(fx, "{\"alg\": \"ES256\"}",
                     claims("admin", 600, AUD_CLAIM ", \"roles\": \"sales\""), "ES256");
  assert_int_equal(auth(fx, h, &p, &err), 0);
  assert_string_equal(dg_principal_name(p), "admin");
  assert_true(dg_principal_has_role(p, "admin"));
  assert_true(dg_principal_has_role(p, "sales"));
  /* The same signature over a different payload does not verify. */
  char token[8192];
  dg_strlcpy(token, h, sizeof(token));
  char *payload = strchr(token, '.') + 1;
  payload[2] = payload[2] == 'A' ? 'B' : 'A';
  expect_refused(fx, token, "the JWT signature does not verify");
  expect_refused(fx, make_jwt(fx, HS, claims("carol", 600, AUD_CLAIM), "HS256"),
                 "the JWT algorithm 'HS256' is not configured on this server");
  expect_refused(fx, make_jwt(fx, "{\"alg\": \"RS256\"}", claims("carol", 600, AUD_CLAIM), "ES256"),
                 "the JWT algorithm 'RS256' is not configured on this server");
}

static void test_jwt_rs256(void **state) {
  fixture_t *fx = *state;
  const dg_principal_t *p;
  dg_errctx_t err;
  char *h = make_jwt(fx, "{\"alg\": \"RS256\"}", claims("auditor", 600, AUD_CLAIM), "RS256");
  assert_int_equal(auth(fx, h, &p, &err), 0);
  assert_true(dg_principal_has_role(p, "auditor"));
  h = make_jwt(fx, "{\"alg\": \"RS256\"}", claims("auditor", -600, AUD_CLAIM), "RS256");
  expect_refused(fx, h, "the JWT has expired");
  expect_refused(fx, make_jwt(fx, "{\"alg\": \"ES256\"}", claims("carol", 600, AUD_CLAIM), "RS256"),
                 "the JWT algorithm 'ES256' is not configured on this server");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_static_tokens, setup_static, teardown),
      cmocka_unit_test_setup_teardown(test_static_refusals, setup_static, teardown),
      cmocka_unit_test_setup_teardown(test_seen_tokens, setup_static, teardown),
      cmocka_unit_test_setup_teardown(test_shared_principals, setup_static, teardown),
      cmocka_unit_test_teardown(test_unset_token_cannot_sign_in, teardown),
      cmocka_unit_test_setup_teardown(test_permissions_admin, setup_static, teardown),
      cmocka_unit_test_setup_teardown(test_permissions_sales, setup_static, teardown),
      cmocka_unit_test_setup_teardown(test_permissions_auditor, setup_static, teardown),
      cmocka_unit_test_setup_teardown(test_principal_copy, setup_static, teardown),
      cmocka_unit_test_setup_teardown(test_permissions_grants_by_list, setup_static, teardown),
      cmocka_unit_test_setup_teardown(test_jwt_hs256_valid, setup_hs256, teardown),
      cmocka_unit_test_setup_teardown(test_jwt_hs256_refusals, setup_hs256, teardown),
      cmocka_unit_test_setup_teardown(test_jwt_signature_and_alg, setup_hs256, teardown),
      cmocka_unit_test_setup_teardown(test_jwt_es256, setup_es256, teardown),
      cmocka_unit_test_setup_teardown(test_jwt_rs256, setup_rs256, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
