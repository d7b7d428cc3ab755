/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* datagate.json: roles (what each may read, see and write) and users (their
 * roles and the environment variable holding their bearer token). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog/internal.h"

/* A grant as written: the model is named, and "*" stands for every model. */
typedef struct grant_raw {
  dg_model_grant_t grant;
  const char *model;
} grant_raw_t;

/* A user as written: role names are resolved once every role is known. */
typedef struct user_raw {
  dg_user_t user;
  const char **role_names;
  size_t nrole_names;
} user_raw_t;

static void parse_grant_properties(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  grant_raw_t *g = obj;
  g->grant.all_properties = v == NULL;
  if (v == NULL)
    return;
  if (json_is_string(v) && strcmp(json_string_value(v), "*") == 0) {
    g->grant.all_properties = true;
    return;
  }
  if (!json_is_array(v)) {
    dg__cfg_error(cfg, path, "must be \"*\" or an array of property names");
    return;
  }
  const char **list;
  dg__cfg_strings(cfg, v, path, &list, &g->grant.nproperties);
  g->grant.properties = list;
}

#define G(field) offsetof(grant_raw_t, field)
static const dg__cfg_field_t grant_fields[] = {
    {"model", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, G(model), 0, NULL},
    {"properties", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, parse_grant_properties},
    {"deny", DG__CFG_STRINGS, false, NULL, 0, 0, 0, NULL, G(grant.deny), G(grant.ndeny), NULL},
    {"write", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, G(grant.write), 0, NULL},
};
#undef G

/* ---- Grants ------------------------------------------------------------------ */

static void check_names_exist(dg__cfg_t *cfg, const dg_model_t *m, const char *const *names,
                              size_t n, const char *path) {
  for (size_t i = 0; i < n; i++) {
    if (names[i] == NULL || dg_model_property(m, names[i]) != NULL)
      continue;
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_index(at, path, i);
    dg__cfg_error(cfg, at, "model '%s' has no property '%s'", m->name, names[i]);
  }
}

/* Resolves one grant into out[]; "*" expands into one grant per model.
 * Returns how many grants were written. */
static size_t resolve_grant(dg__cfg_t *cfg, const grant_raw_t *g, dg_model_grant_t *out,
                            const char *path) {
  char at[DG__CFG_PATH_MAX];
  const dg_catalog_t *cat = cfg->cat;
  if (g->model == NULL)
    return 0;
  if (strcmp(g->model, "*") == 0) {
    if (!g->grant.all_properties || g->grant.ndeny > 0)
      dg__cfg_error(cfg, path, "a grant on every model (\"*\") cannot list or deny properties");
    for (size_t i = 0; i < cat->nmodels; i++) {
      out[i] = g->grant;
      out[i].model = &cat->models[i];
    }
    return cat->nmodels;
  }
  const dg_model_t *m = dg__catalog_find_model(cat, g->model);
  if (m == NULL) {
    dg__cfg_path_key(at, path, "model");
    dg__cfg_error(cfg, at, "unknown model '%s' (known: %s)", g->model,
                  dg__catalog_model_names(cfg));
    return 0;
  }
  dg__cfg_path_key(at, path, "properties");
  check_names_exist(cfg, m, g->grant.properties, g->grant.nproperties, at);
  dg__cfg_path_key(at, path, "deny");
  check_names_exist(cfg, m, g->grant.deny, g->grant.ndeny, at);
  out[0] = g->grant;
  out[0].model = m;
  return 1;
}

static void check_unique_grants(dg__cfg_t *cfg, const dg_role_t *r, const char *path) {
  for (size_t i = 0; i < r->ngrants; i++) {
    for (size_t j = 0; j < i; j++) {
      if (r->grants[i].model == r->grants[j].model) {
        dg__cfg_error(cfg, path, "model '%s' is granted more than once", r->grants[i].model->name);
        return;
      }
    }
  }
}

static void parse_grants(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_role_t *r = obj;
  if (v == NULL)
    return;
  if (!json_is_array(v)) {
    dg__cfg_error(cfg, path, "must be an array of model grants");
    return;
  }
  size_t n = json_array_size(v), total = 0;
  /* "*" grants expand, so room for every model per entry is the bound. */
  dg_model_grant_t *grants =
      dg_arena_calloc(cfg->arena, n * (cfg->cat->nmodels + 1) + 1, sizeof(*grants));
  if (grants == NULL) {
    cfg->oom = true;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char at[DG__CFG_PATH_MAX];
    grant_raw_t g;
    memset(&g, 0, sizeof(g));
    dg__cfg_path_index(at, path, i);
    dg__cfg_parse_object(cfg, json_array_get(v, i), at, grant_fields, DG_ARRAY_SIZE(grant_fields),
                         &g);
    total += resolve_grant(cfg, &g, grants + total, at);
  }
  r->grants = grants;
  r->ngrants = total;
  check_unique_grants(cfg, r, path);
}

/* ---- Roles --------------------------------------------------------------------- */

#define RO(field) offsetof(dg_role_t, field)
static const dg__cfg_field_t role_fields[] = {
    {"name", DG__CFG_STRING, true, NULL, 0, 1, 64, NULL, RO(name), 0, NULL},
    {"models", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, parse_grants},
    {"savedQueries", DG__CFG_STRINGS, false, NULL, 0, 0, 0, NULL, RO(saved_queries),
     RO(nsaved_queries), NULL},
    {"administration", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, RO(administration), 0, NULL},
};
#undef RO

/* data is the list's path. */
static void parse_role(dg__cfg_t *cfg, const json_t *item, void *list, size_t i, const char *at,
                       const void *data) {
  dg_role_t *roles = list;
  dg__cfg_parse_object(cfg, item, at, role_fields, DG_ARRAY_SIZE(role_fields), &roles[i]);
  for (size_t j = 0; j < i && roles[i].name != NULL; j++) {
    if (roles[j].name != NULL && strcmp(roles[i].name, roles[j].name) == 0)
      dg__cfg_error(cfg, at, "duplicate role name '%s' (same as %s/%zu)", roles[i].name,
                    (const char *)data, j);
  }
}

void dg__catalog_parse_roles(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_catalog_t *cat = obj;
  cat->roles =
      dg__cfg_list(cfg, v, path, "roles", sizeof(dg_role_t), &cat->nroles, parse_role, path);
}

/* ---- Users ---------------------------------------------------------------------- */

static const char *role_names(dg__cfg_t *cfg) {
  const dg_catalog_t *cat = cfg->cat;
  const char **names = dg_arena_calloc(cfg->arena, cat->nroles + 1, sizeof(*names));
  if (names == NULL)
    return "";
  for (size_t i = 0; i < cat->nroles; i++)
    names[i] = cat->roles[i].name ? cat->roles[i].name : "?";
  return dg__cfg_join(cfg, names, cat->nroles);
}

static void check_token_env(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  const char *s = json_string_value(v);
  for (const char *c = s; *c != '\0'; c++) {
    if (!(*c == '_' || (*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') ||
          (c > s && *c >= '0' && *c <= '9'))) {
      dg__cfg_error(cfg, path, "'%s' is not an environment variable name", s);
      return;
    }
  }
}

#define U(field) offsetof(user_raw_t, field)
static const dg__cfg_field_t user_fields[] = {
    {"name", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, U(user.name), 0, NULL},
    {"roles", DG__CFG_STRINGS, true, NULL, 0, 0, 0, NULL, U(role_names), U(nrole_names), NULL},
    {"tokenEnv", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, U(user.token_env), 0,
     check_token_env},
};
#undef U

/* Reads the token from the environment and keeps only its SHA-256: the
 * token itself is never stored or logged. */
static void hash_token(dg_user_t *u) {
  const char *token = u->token_env ? getenv(u->token_env) : NULL;
  u->has_token = token != NULL && token[0] != '\0';
  if (u->has_token)
    dg_sha256(token, strlen(token), u->token_sha256);
}

static void resolve_user_roles(dg__cfg_t *cfg, user_raw_t *raw, const char *path) {
  const dg_role_t **roles = dg_arena_calloc(cfg->arena, raw->nrole_names + 1, sizeof(*roles));
  if (roles == NULL) {
    cfg->oom = true;
    return;
  }
  size_t n = 0;
  for (size_t i = 0; i < raw->nrole_names; i++) {
    const char *name = raw->role_names[i];
    const dg_role_t *r = name ? dg_catalog_role(cfg->cat, name) : NULL;
    if (r != NULL) {
      roles[n++] = r;
    } else if (name != NULL) {
      char at[DG__CFG_PATH_MAX];
      dg__cfg_path_key(at, path, "roles");
      dg__cfg_path_index(at, at, i);
      dg__cfg_error(cfg, at, "unknown role '%s' (known: %s)", name, role_names(cfg));
    }
  }
  raw->user.roles = roles;
  raw->user.nroles = n;
}

/* data is the list's path. */
static void parse_user(dg__cfg_t *cfg, const json_t *item, void *list, size_t i, const char *at,
                       const void *data) {
  dg_user_t *users = list;
  user_raw_t raw;
  memset(&raw, 0, sizeof(raw));
  dg__cfg_parse_object(cfg, item, at, user_fields, DG_ARRAY_SIZE(user_fields), &raw);
  resolve_user_roles(cfg, &raw, at);
  hash_token(&raw.user);
  users[i] = raw.user;
  for (size_t j = 0; j < i && users[i].name != NULL; j++) {
    if (users[j].name != NULL && strcmp(users[i].name, users[j].name) == 0)
      dg__cfg_error(cfg, at, "duplicate user name '%s' (same as %s/%zu)", users[i].name,
                    (const char *)data, j);
  }
}

void dg__catalog_parse_users(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_catalog_t *cat = obj;
  cat->users =
      dg__cfg_list(cfg, v, path, "users", sizeof(dg_user_t), &cat->nusers, parse_user, path);
}
