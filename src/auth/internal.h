/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* auth internals shared by the bearer-token, JWT and permission files.
 * Never included from outside src/auth. */
#ifndef DATAGATE_AUTH_INTERNAL_H
#define DATAGATE_AUTH_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "datagate/auth.h"

/* Longest bearer token accepted; longer ones are refused before any work. */
#define DG__AUTH_TOKEN_MAX 8192

typedef struct dg__auth_shared dg__auth_shared_t;

/* Everything a permission check needs, computed once per principal so that
 * checks are array lookups by model and property index. */
struct dg_principal {
  const dg_catalog_t *cat;
  dg__auth_shared_t *shared; /* the table it belongs to; NULL: it lives in an arena */
  const char *name;
  const dg_role_t **roles;
  size_t nroles;
  bool *read;     /* per model index */
  bool *write;    /* per model index */
  bool **visible; /* per model index: per property index, NULL when unreadable */
  bool all_saved_queries;
  const char **saved_queries; /* ids or names granted by any role */
  size_t nsaved_queries;
};

/* Builds a principal with the union of the given roles' permissions. The
 * roles array is copied. DG_ENOMEM on allocation failure. */
int dg__auth_principal_new(const dg_catalog_t *cat, const char *name, const dg_role_t *const *roles,
                           size_t nroles, dg_arena_t *arena, const dg_principal_t **out);

/* The principals of one catalog's static users, each built the first time
 * its user signs in and then shared by every request that authenticates as
 * that user (principal.c), instead of being worked out from the roles per
 * request. Reference counted: the token table holds one reference, and
 * every arena a principal is handed to holds one until it is destroyed, so
 * that requests and calls in flight keep theirs across a reload. */
dg__auth_shared_t *dg__auth_shared_new(const dg_catalog_t *cat);
void dg__auth_shared_unref(dg__auth_shared_t *shared);
/* User u's principal (u one of shared's catalog's users), held for arena. */
int dg__auth_shared_principal(dg__auth_shared_t *shared, const dg_user_t *u, dg_arena_t *arena,
                              const dg_principal_t **out);

/* Verifies a compact JWS against cat->oauth and returns its claims (a new
 * reference) in *claims, or DG_EAUTH with err saying why. */
int dg__auth_jwt_verify(const dg_catalog_t *cat, const char *token, size_t len, json_t **claims,
                        dg_errctx_t *err);
/* Resolves verified claims into a principal (user and role claims). */
int dg__auth_jwt_principal(const dg_catalog_t *cat, const json_t *claims, dg_arena_t *arena,
                           const dg_principal_t **out, dg_errctx_t *err);

#endif
