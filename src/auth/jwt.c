/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* JWT bearer tokens (RFC 7519, compact JWS of RFC 7515) for OAuth 2.0
 * resource-server use: HS256, RS256 and ES256 only, so "none" and every
 * algorithm without a configured key are refused before any claim is read. */
#include <math.h>
#include <mbedtls/base64.h>
#include <mbedtls/bignum.h>
#include <mbedtls/ecdsa.h>
#include <mbedtls/md.h>
#include <mbedtls/pk.h>
#include <string.h>
#include <time.h>

#include "auth/internal.h"

#define PARAM "Authorization"
/* Clocks of the issuer and the gateway may differ this much. */
#define LEEWAY_S 60
#define MAX_ROLES 64

typedef struct jwt_parts {
  const char *part[3];
  size_t len[3];
} jwt_parts_t;

static int bad(dg_errctx_t *err, const char *what) {
  return dg_errctx_set(err, DG_EAUTH, PARAM, "the JWT %s", what);
}

/* ---- Decoding --------------------------------------------------------------- */

static bool split(const char *token, size_t len, jwt_parts_t *out) {
  size_t start = 0, n = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && token[i] != '.')
      continue;
    if (n == 3)
      return false;
    out->part[n] = token + start;
    out->len[n++] = i - start;
    start = i + 1;
  }
  return n == 3 && out->len[0] > 0 && out->len[1] > 0;
}

/* base64url without padding into out (at most cap bytes). */
static bool b64url_decode(const char *in, size_t len, unsigned char *out, size_t cap,
                          size_t *olen) {
  unsigned char tmp[DG__AUTH_TOKEN_MAX + 4];
  if (len > DG__AUTH_TOKEN_MAX || len % 4 == 1)
    return false;
  for (size_t i = 0; i < len; i++) {
    char c = in[i];
    if (c == '-')
      c = '+';
    else if (c == '_')
      c = '/';
    else if (c == '+' || c == '/' || c == '=')
      return false;
    tmp[i] = (unsigned char)c;
  }
  size_t n = len;
  while (n % 4 != 0)
    tmp[n++] = '=';
  return mbedtls_base64_decode(out, cap, olen, tmp, n) == 0;
}

static json_t *decode_json(const char *in, size_t len) {
  unsigned char buf[DG__AUTH_TOKEN_MAX];
  size_t n;
  if (!b64url_decode(in, len, buf, sizeof(buf), &n))
    return NULL;
  json_t *v = json_loadb((const char *)buf, n, JSON_REJECT_DUPLICATES, NULL);
  if (v != NULL && !json_is_object(v)) {
    json_decref(v);
    return NULL;
  }
  return v;
}

/* ---- Signatures ----------------------------------------------------------------- */

static int verify_hs256(const dg_oauth_settings_t *o, const jwt_parts_t *jp,
                        const unsigned char *sig, size_t siglen, dg_errctx_t *err) {
  unsigned char mac[32];
  size_t input_len = jp->len[0] + 1 + jp->len[1];
  if (o->hs256_secret == NULL)
    return bad(err, "algorithm 'HS256' is not configured on this server");
  if (mbedtls_md_hmac(mbedtls_md_info_from_type(MBEDTLS_MD_SHA256), o->hs256_secret,
                      o->hs256_secret_len, (const unsigned char *)jp->part[0], input_len, mac) != 0)
    return bad(err, "signature could not be checked");
  if (siglen != sizeof(mac) || !dg_ct_equal(mac, sig, sizeof(mac)))
    return bad(err, "signature does not verify");
  return 0;
}

static int verify_es256(mbedtls_pk_context *pk, const unsigned char hash[32],
                        const unsigned char *sig, size_t siglen, dg_errctx_t *err) {
  mbedtls_ecp_keypair *ec = mbedtls_pk_ec(*pk);
  if (ec->grp.id != MBEDTLS_ECP_DP_SECP256R1)
    return bad(err, "algorithm 'ES256' needs a P-256 key, and the configured key is not one");
  if (siglen != 64)
    return bad(err, "signature does not verify");
  mbedtls_mpi r, s;
  mbedtls_mpi_init(&r);
  mbedtls_mpi_init(&s);
  /* JWS carries R and S as two fixed-size big-endian halves, not DER. */
  int rc = mbedtls_mpi_read_binary(&r, sig, 32);
  if (rc == 0)
    rc = mbedtls_mpi_read_binary(&s, sig + 32, 32);
  if (rc == 0)
    rc = mbedtls_ecdsa_verify(&ec->grp, hash, 32, &ec->Q, &r, &s);
  mbedtls_mpi_free(&r);
  mbedtls_mpi_free(&s);
  return rc == 0 ? 0 : bad(err, "signature does not verify");
}

static int verify_public(const dg_oauth_settings_t *o, const char *alg, const jwt_parts_t *jp,
                         const unsigned char *sig, size_t siglen, dg_errctx_t *err) {
  mbedtls_pk_context *pk = o->public_key;
  bool rsa = strcmp(alg, "RS256") == 0;
  if (pk == NULL || !mbedtls_pk_can_do(pk, rsa ? MBEDTLS_PK_RSA : MBEDTLS_PK_ECKEY))
    return dg_errctx_set(err, DG_EAUTH, PARAM,
                         "the JWT algorithm '%s' is not configured on this server", alg);
  unsigned char hash[32];
  dg_sha256(jp->part[0], jp->len[0] + 1 + jp->len[1], hash);
  if (!rsa)
    return verify_es256(pk, hash, sig, siglen, err);
  if (mbedtls_pk_verify(pk, MBEDTLS_MD_SHA256, hash, sizeof(hash), sig, siglen) != 0)
    return bad(err, "signature does not verify");
  return 0;
}

static int verify_signature(const dg_catalog_t *cat, const json_t *header, const jwt_parts_t *jp,
                            dg_errctx_t *err) {
  const char *alg = json_string_value(json_object_get(header, "alg"));
  if (alg == NULL)
    return bad(err, "header has no 'alg'");
  if (strcmp(alg, "HS256") != 0 && strcmp(alg, "RS256") != 0 && strcmp(alg, "ES256") != 0)
    return dg_errctx_set(err, DG_EAUTH, PARAM,
                         "the JWT algorithm '%.32s' is not accepted (allowed: HS256, RS256, ES256)",
                         alg);
  /* Extensions the sender marks critical cannot be honoured. */
  if (json_object_get(header, "crit") != NULL)
    return bad(err, "header has a 'crit' extension, which this server does not support");
  unsigned char sig[1024];
  size_t siglen;
  if (jp->len[2] == 0 || !b64url_decode(jp->part[2], jp->len[2], sig, sizeof(sig), &siglen))
    return bad(err, "signature is missing or malformed");
  if (strcmp(alg, "HS256") == 0)
    return verify_hs256(&cat->oauth, jp, sig, siglen, err);
  return verify_public(&cat->oauth, alg, jp, sig, siglen, err);
}

/* ---- Claims --------------------------------------------------------------------- */

static bool audience_matches(const json_t *aud, const char *want) {
  if (json_is_string(aud))
    return strcmp(json_string_value(aud), want) == 0;
  size_t i;
  const json_t *item;
  json_array_foreach(aud, i, item) {
    if (json_is_string(item) && strcmp(json_string_value(item), want) == 0)
      return true;
  }
  return false;
}

static int check_times(const json_t *claims, dg_errctx_t *err) {
  double now = (double)time(NULL);
  const json_t *exp = json_object_get(claims, "exp");
  const json_t *nbf = json_object_get(claims, "nbf");
  if (!json_is_number(exp) || !isfinite(json_number_value(exp)))
    return bad(err, "has no numeric 'exp' (expiry) claim");
  if (now > json_number_value(exp) + LEEWAY_S)
    return bad(err, "has expired");
  if (nbf != NULL && (!json_is_number(nbf) || now + LEEWAY_S < json_number_value(nbf)))
    return bad(err, "is not valid yet ('nbf' is in the future)");
  return 0;
}

static int check_claims(const dg_oauth_settings_t *o, const json_t *claims, dg_errctx_t *err) {
  int rc = check_times(claims, err);
  if (rc != 0)
    return rc;
  const char *iss = json_string_value(json_object_get(claims, "iss"));
  if (o->issuer != NULL && (iss == NULL || strcmp(iss, o->issuer) != 0))
    return bad(err, "issuer ('iss') is not the configured issuer");
  if (o->audience != NULL && !audience_matches(json_object_get(claims, "aud"), o->audience))
    return bad(err, "audience ('aud') does not include this server");
  return 0;
}

int dg__auth_jwt_verify(const dg_catalog_t *cat, const char *token, size_t len, json_t **claims,
                        dg_errctx_t *err) {
  jwt_parts_t jp;
  *claims = NULL;
  if (!split(token, len, &jp))
    return bad(err, "is malformed (expected header.payload.signature)");
  json_t *header = decode_json(jp.part[0], jp.len[0]);
  if (header == NULL)
    return bad(err, "header is not base64url-encoded JSON");
  int rc = verify_signature(cat, header, &jp, err);
  json_decref(header);
  if (rc != 0)
    return rc;
  json_t *payload = decode_json(jp.part[1], jp.len[1]);
  if (payload == NULL)
    return bad(err, "payload is not base64url-encoded JSON");
  rc = check_claims(&cat->oauth, payload, err);
  if (rc != 0) {
    json_decref(payload);
    return rc;
  }
  *claims = payload;
  return 0;
}

/* ---- Principal ---------------------------------------------------------------- */

static size_t add_role(const dg_role_t **roles, size_t n, const dg_role_t *r) {
  for (size_t i = 0; i < n; i++) {
    if (roles[i] == r)
      return n;
  }
  if (r != NULL && n < MAX_ROLES)
    roles[n++] = r;
  return n;
}

/* Roles named in the roles claim (a list, or one name), unknown names
 * ignored, plus the roles of a configured user of the same name. */
static size_t collect_roles(const dg_catalog_t *cat, const json_t *claim, const char *user,
                            const dg_role_t **roles) {
  size_t n = 0;
  if (json_is_string(claim))
    n = add_role(roles, n, dg_catalog_role(cat, json_string_value(claim)));
  size_t i;
  const json_t *item;
  json_array_foreach(claim, i, item) {
    if (json_is_string(item))
      n = add_role(roles, n, dg_catalog_role(cat, json_string_value(item)));
  }
  const dg_user_t *u = dg_catalog_user(cat, user);
  for (size_t k = 0; u != NULL && k < u->nroles; k++)
    n = add_role(roles, n, u->roles[k]);
  return n;
}

int dg__auth_jwt_principal(const dg_catalog_t *cat, const json_t *claims, dg_arena_t *arena,
                           const dg_principal_t **out, dg_errctx_t *err) {
  const dg_oauth_settings_t *o = &cat->oauth;
  const char *user_claim = o->user_claim ? o->user_claim : "sub";
  const char *roles_claim = o->roles_claim ? o->roles_claim : "roles";
  const char *user = json_string_value(json_object_get(claims, user_claim));
  if (user == NULL || user[0] == '\0' || strlen(user) > 256)
    return dg_errctx_set(err, DG_EAUTH, PARAM, "the JWT has no usable '%s' claim naming the user",
                         user_claim);
  const dg_role_t *roles[MAX_ROLES];
  size_t n = collect_roles(cat, json_object_get(claims, roles_claim), user, roles);
  int rc = dg__auth_principal_new(cat, user, roles, n, arena, out);
  return rc == 0 ? 0 : dg_errctx_set(err, rc, PARAM, "out of memory");
}
