/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Resolving an Authorization header: static bearer tokens compared by
 * SHA-256 in constant time, then JWTs when OAuth is enabled. Messages say
 * why a token was refused and never contain the token. */
#include <stdlib.h>
#include <string.h>

#include "auth/internal.h"

/* Tokens kept: a few callers each, direct-mapped by a hash of the bytes. */
#define SEEN_MAX 64
/* A longer static token is matched by its SHA-256 every time. */
#define SEEN_TOKEN_MAX 128

#define PARAM "Authorization"

/* RFC 6750 b64token: ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/",
 * then any "=" padding. */
static bool is_b64token(const char *s, size_t len) {
  size_t i = 0;
  for (; i < len; i++) {
    char c = s[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
              strchr("-._~+/", c) != NULL;
    if (!ok)
      break;
  }
  if (i == 0)
    return false;
  while (i < len && s[i] == '=')
    i++;
  return i == len;
}

/* Splits "Bearer <token>" (scheme in any case, spaces around the token). */
static int parse_bearer(const char *header, const char **token, size_t *len, dg_errctx_t *err) {
  while (*header == ' ' || *header == '\t')
    header++;
  if (*header == '\0')
    return dg_errctx_set(err, DG_EAUTH, PARAM,
                         "missing Authorization header; send 'Authorization: Bearer <token>'");
  if (!dg_strieq_n(header, strcspn(header, " \t"), "Bearer"))
    return dg_errctx_set(err, DG_EAUTH, PARAM,
                         "the Authorization header must use the Bearer scheme");
  const char *t = header + 6;
  t += strspn(t, " \t");
  size_t n = strlen(t);
  while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t'))
    n--;
  if (n > DG__AUTH_TOKEN_MAX)
    return dg_errctx_set(err, DG_EAUTH, PARAM, "the bearer token is longer than %d bytes",
                         DG__AUTH_TOKEN_MAX);
  if (n == 0 || !is_b64token(t, n))
    return dg_errctx_set(err, DG_EAUTH, PARAM, "the bearer token is empty or malformed");
  *token = t;
  *len = n;
  return 0;
}

/* Every user's hash is compared, whether or not one matched already, so
 * the time taken does not tell which user (or how many) exist. */
static const dg_user_t *match_static(const dg_catalog_t *cat, const char *token, size_t len) {
  unsigned char digest[32];
  dg_sha256(token, len, digest);
  const dg_user_t *found = NULL;
  for (size_t i = 0; i < cat->nusers; i++) {
    const dg_user_t *u = &cat->users[i];
    bool eq = dg_ct_equal(digest, u->token_sha256, sizeof(digest));
    if (eq && u->has_token && found == NULL)
      found = u;
  }
  return found;
}

static bool looks_like_jwt(const char *token, size_t len) {
  size_t dots = 0;
  for (size_t i = 0; i < len; i++)
    dots += token[i] == '.';
  return dots == 2;
}

static int authenticate_jwt(const dg_catalog_t *cat, const char *token, size_t len,
                            dg_arena_t *arena, const dg_principal_t **out, dg_errctx_t *err) {
  json_t *claims = NULL;
  int rc = dg__auth_jwt_verify(cat, token, len, &claims, err);
  if (rc == 0)
    rc = dg__auth_jwt_principal(cat, claims, arena, out, err);
  json_decref(claims);
  return rc;
}

/* ---- Tokens already matched ------------------------------------------------- *
 * The SHA-256 of the token was the largest part of a small request's cost.
 * A token that matched a user is kept with that user; the next request
 * with the same bytes (compared in constant time) takes the user without
 * hashing. The table holds a reference to the snapshot its users belong
 * to, so a reload (new users, new tokens) empties it. */

typedef struct seen {
  size_t len; /* 0: free */
  unsigned char token[SEEN_TOKEN_MAX];
  const dg_user_t *user;
} seen_t;

struct dg_auth_tokens {
  dg_catalog_t *cat;         /* reference held; NULL while empty */
  dg__auth_shared_t *shared; /* the principals of cat's users, made on first use */
  seen_t slots[SEEN_MAX];
};

dg_auth_tokens_t *dg_auth_tokens_new(void) {
  return calloc(1, sizeof(dg_auth_tokens_t));
}

/* Tokens are secrets: wiped, in a way the compiler may not drop. */
static void wipe(dg_auth_tokens_t *t) {
  volatile unsigned char *p = (volatile unsigned char *)t->slots;
  for (size_t i = 0; i < sizeof(t->slots); i++)
    p[i] = 0;
  dg_catalog_unref(t->cat);
  t->cat = NULL;
  dg__auth_shared_unref(t->shared);
  t->shared = NULL;
}

void dg_auth_tokens_free(dg_auth_tokens_t *tokens) {
  if (tokens == NULL)
    return;
  wipe(tokens);
  free(tokens);
}

static seen_t *slot_of(dg_auth_tokens_t *t, const char *token, size_t len) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < len; i++)
    h = (h ^ (unsigned char)token[i]) * 1099511628211ULL;
  return &t->slots[h % SEEN_MAX];
}

/* The catalog is const to callers; only its reference count changes. */
static const dg_user_t *seen_user(dg_auth_tokens_t *t, const dg_catalog_t *cat, const char *token,
                                  size_t len) {
  if (t == NULL || len > SEEN_TOKEN_MAX)
    return NULL;
  if (t->cat != cat) {
    wipe(t);
    t->cat = dg_catalog_ref((dg_catalog_t *)cat);
  }
  const seen_t *s = slot_of(t, token, len);
  return s->len == len && dg_ct_equal(s->token, token, len) ? s->user : NULL;
}

static void keep_seen(dg_auth_tokens_t *t, const char *token, size_t len, const dg_user_t *u) {
  if (t == NULL || len > SEEN_TOKEN_MAX || t->cat == NULL)
    return;
  seen_t *s = slot_of(t, token, len);
  memcpy(s->token, token, len);
  s->len = len;
  s->user = u;
}

/* User u's principal: the table's, built once per catalog snapshot, or
 * one of its own in arena when there is no table (or no memory for one). */
static int principal_of(dg_auth_tokens_t *t, const dg_catalog_t *cat, const dg_user_t *u,
                        dg_arena_t *arena, const dg_principal_t **out) {
  bool table = t != NULL && t->cat == cat;
  if (table && t->shared == NULL)
    t->shared = dg__auth_shared_new(cat);
  if (table && t->shared != NULL)
    return dg__auth_shared_principal(t->shared, u, arena, out);
  return dg__auth_principal_new(cat, u->name, u->roles, u->nroles, arena, out);
}

int dg_auth_authenticate(const dg_catalog_t *cat, const char *authorization, dg_arena_t *arena,
                         const dg_principal_t **out, dg_errctx_t *err) {
  return dg_auth_authenticate_seen(NULL, cat, authorization, arena, out, err);
}

int dg_auth_authenticate_seen(dg_auth_tokens_t *tokens, const dg_catalog_t *cat,
                              const char *authorization, dg_arena_t *arena,
                              const dg_principal_t **out, dg_errctx_t *err) {
  const char *token = NULL;
  size_t len = 0;
  *out = NULL;
  int rc = parse_bearer(authorization ? authorization : "", &token, &len, err);
  if (rc != 0)
    return rc;
  const dg_user_t *u = seen_user(tokens, cat, token, len);
  if (u == NULL) {
    u = match_static(cat, token, len);
    if (u != NULL)
      keep_seen(tokens, token, len, u);
  }
  if (u != NULL) {
    rc = principal_of(tokens, cat, u, arena, out);
    return rc == 0 ? 0 : dg_errctx_set(err, rc, PARAM, "out of memory");
  }
  if (cat->oauth.enabled && looks_like_jwt(token, len))
    return authenticate_jwt(cat, token, len, arena, out, err);
  return dg_errctx_set(err, DG_EAUTH, PARAM, "the bearer token is not valid");
}
