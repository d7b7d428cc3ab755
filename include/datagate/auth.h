/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* auth: who is calling and what they may see. A principal is resolved from
 * a bearer token (a static token from the configuration, or a JWT when
 * OAuth is configured) against one catalog snapshot, and lives in the
 * arena it was resolved into. Permission checks are pure functions of the
 * principal. */
#ifndef DATAGATE_AUTH_H
#define DATAGATE_AUTH_H

#include <stdbool.h>

#include "datagate/base.h"
#include "datagate/catalog.h"

typedef struct dg_principal dg_principal_t;

/* Resolves an Authorization header value ("Bearer <token>"). Returns 0, or
 * DG_EAUTH with err->message saying why (missing, malformed, unknown,
 * expired, bad signature), never echoing the token. The principal is
 * allocated in arena and refers into cat. */
int dg_auth_authenticate(const dg_catalog_t *cat, const char *authorization, dg_arena_t *arena,
                         const dg_principal_t **out, dg_errctx_t *err);
/* Static bearer tokens already matched, found again by their bytes
 * without hashing them (bearer.c): a bounded table bound to one catalog
 * snapshot, emptied (and its tokens wiped) when used with another. Loop
 * thread only. JWTs are never kept: their expiry is checked every time. */
typedef struct dg_auth_tokens dg_auth_tokens_t;
dg_auth_tokens_t *dg_auth_tokens_new(void);
void dg_auth_tokens_free(dg_auth_tokens_t *tokens);
/* dg_auth_authenticate, looking in tokens first and keeping there a
 * static token it matched; tokens may be NULL. */
int dg_auth_authenticate_seen(dg_auth_tokens_t *tokens, const dg_catalog_t *cat,
                              const char *authorization, dg_arena_t *arena,
                              const dg_principal_t **out, dg_errctx_t *err);

/* A copy of p in arena, or DG_EINVAL when p was made from another
 * catalog snapshot than cat (the caller then authenticates again),
 * DG_ENOMEM. Cheaper than authenticating: no token is hashed or checked. */
int dg_auth_principal_copy(const dg_catalog_t *cat, const dg_principal_t *p, dg_arena_t *arena,
                           const dg_principal_t **out);
/* The principal of a configured user (for --stdio), or DG_ENOENT. */
int dg_auth_principal_for_user(const dg_catalog_t *cat, const char *user, dg_arena_t *arena,
                               const dg_principal_t **out);

const char *dg_principal_name(const dg_principal_t *p);
bool dg_principal_has_role(const dg_principal_t *p, const char *role);
/* The principal's roles, in the order they were given; its permissions
 * are a function of these and the catalog alone. Returns their number. */
size_t dg_principal_roles(const dg_principal_t *p, const dg_role_t *const **roles);

/* May use the administration page and its API (a role with
 * "administration": true). */
bool dg_auth_can_administer(const dg_principal_t *p);
/* Model-level read access. */
bool dg_auth_can_read_model(const dg_principal_t *p, const dg_model_t *model);
/* Property visibility (implies model read access). */
bool dg_auth_can_see_property(const dg_principal_t *p, const dg_model_t *model,
                              const dg_property_t *prop);
/* May create or modify records of the model (data entry forms). */
bool dg_auth_can_write_model(const dg_principal_t *p, const dg_model_t *model);
/* May read documents from a source (get_file_text): one of the source's
 * roles, or without a list, read access to a model with documents. */
bool dg_auth_can_use_file_source(const dg_principal_t *p, const dg_file_source_t *source);
/* May list and run a saved query, given its id and name. */
bool dg_auth_can_use_saved_query(const dg_principal_t *p, const char *id, const char *name);

#endif
