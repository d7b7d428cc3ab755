/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Loading a configuration directory into a catalog snapshot, the snapshot's
 * reference count, and lookups. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "catalog/internal.h"

/* Configuration files are small; a bigger one is a mistake, not a config. */
#define CONFIG_FILE_MAX (16u * 1024u * 1024u)

static const dg__cfg_field_t root_fields[] = {
    {"server", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, dg__catalog_parse_server},
    {"oauth", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, dg__catalog_parse_oauth},
    {"roles", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, dg__catalog_parse_roles},
    {"users", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, dg__catalog_parse_users},
};

/* ---- Reading files --------------------------------------------------------- */

/* Parses dir/name; NULL (with the reason recorded) when it cannot be read
 * or is not JSON. A missing optional file is NULL with *missing set. */
static json_t *load_json(dg__cfg_t *cfg, const char *name, bool *missing) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", cfg->dir, name);
  dg_buf_t buf;
  dg_buf_init(&buf, CONFIG_FILE_MAX);
  json_t *root = NULL;
  int rc = dg_buf_read_file(&buf, path);
  *missing = rc == DG_ENOENT;
  if (rc == DG_E2BIG) {
    dg__cfg_error(cfg, "/", "file is larger than %u bytes", CONFIG_FILE_MAX);
  } else if (rc < 0 && !*missing) {
    dg__cfg_error(cfg, "/", "cannot read '%s': %s", path, strerror(errno));
  } else if (rc == 0) {
    json_error_t jerr;
    root = json_loadb(buf.data ? buf.data : "", buf.len, JSON_REJECT_DUPLICATES, &jerr);
    if (root == NULL)
      dg__cfg_error(cfg, "/", "invalid JSON at line %d, column %d: %s", jerr.line, jerr.column,
                    jerr.text);
  }
  dg_buf_free(&buf);
  return root;
}

/* ---- Cross-file checks ---------------------------------------------------- */

static void check_stdio_user(dg__cfg_t *cfg) {
  const char *name = cfg->cat->server.stdio_user;
  if (name != NULL && dg_catalog_user(cfg->cat, name) == NULL)
    dg__cfg_error(cfg, "/server/stdioUser", "unknown user '%s'", name);
}

/* Two users sharing a token would make the principal ambiguous. The
 * message names the variables, never the token. */
static void check_distinct_tokens(dg__cfg_t *cfg) {
  const dg_catalog_t *cat = cfg->cat;
  for (size_t i = 0; i < cat->nusers; i++) {
    for (size_t j = 0; j < i; j++) {
      const dg_user_t *a = &cat->users[i], *b = &cat->users[j];
      if (!a->has_token || !b->has_token || memcmp(a->token_sha256, b->token_sha256, 32) != 0)
        continue;
      char at[DG__CFG_PATH_MAX];
      snprintf(at, sizeof(at), "/users/%zu/tokenEnv", i);
      dg__cfg_error(cfg, at, "user '%s' has the same token as user '%s' (%s and %s)", a->name,
                    b->name, a->token_env, b->token_env);
    }
  }
}

/* Reads an optional file of the directory with its parser. */
static void load_optional(dg__cfg_t *cfg, const char *name,
                          void (*parse)(dg__cfg_t *cfg, const json_t *root)) {
  bool missing;
  cfg->file = name;
  json_t *root = load_json(cfg, name, &missing);
  if (root != NULL)
    parse(cfg, root);
  json_decref(root);
}

/* files.json is optional, but its defaults apply without it. */
static void load_files_json(dg__cfg_t *cfg) {
  bool missing;
  cfg->file = "files.json";
  json_t *root = load_json(cfg, "files.json", &missing);
  if (root != NULL || missing)
    dg__catalog_parse_files(cfg, root);
  json_decref(root);
}

static void load_files(dg__cfg_t *cfg) {
  bool missing;
  cfg->file = "models.json";
  json_t *models = load_json(cfg, "models.json", &missing);
  if (models != NULL)
    dg__catalog_parse_models(cfg, models);
  json_decref(models);
  load_optional(cfg, "connectors.json", dg__catalog_parse_connectors);
  load_optional(cfg, "saved_queries.json", dg__catalog_parse_saved_queries);
  load_optional(cfg, "endpoints.json", dg__catalog_parse_endpoints);
  load_files_json(cfg);

  cfg->file = "datagate.json";
  json_t *root = load_json(cfg, "datagate.json", &missing);
  if (missing)
    dg__cfg_error(cfg, "/", "file not found in '%s' (it is required)", cfg->dir);
  /* Without the file the defaults still fill the settings, so that every
   * field has a value even in a failed load. */
  dg__cfg_parse_object(cfg, root, "", root_fields, DG_ARRAY_SIZE(root_fields), cfg->cat);
  json_decref(root);
  check_stdio_user(cfg);
  check_distinct_tokens(cfg);
  dg__catalog_check_role_queries(cfg);
  dg__catalog_check_source_roles(cfg);
}

/* ---- Load, ref, unref --------------------------------------------------------- */

static int load(const char *dir, dg_catalog_t **out, dg_config_errors_t *errors) {
  dg_arena_t *arena = dg_arena_new(16384);
  dg_catalog_t *cat = arena ? dg_arena_calloc(arena, 1, sizeof(*cat)) : NULL;
  const char *dir_copy = cat ? dg_arena_strdup(arena, dir) : NULL;
  if (dir_copy == NULL) {
    dg_arena_destroy(arena);
    dg_config_errors_add(errors, "datagate.json", "/", "out of memory");
    return DG_ENOMEM;
  }
  cat->dir = dir_copy;
  cat->arena = arena;
  cat->refs = 1;
  dg__cfg_t cfg = {.arena = arena, .errors = errors, .dir = dir_copy, .cat = cat};
  load_files(&cfg);
  if (cfg.oom)
    dg_config_errors_add(errors, cfg.file, "/", "out of memory");
  if (cfg.oom || cfg.nerrors > 0) {
    dg_arena_destroy(arena);
    return cfg.oom ? DG_ENOMEM : DG_ECONFIG;
  }
  *out = cat;
  return 0;
}

int dg_catalog_load(const char *dir, dg_catalog_t **out, dg_config_errors_t *errors) {
  *out = NULL;
  if (errors != NULL)
    return load(dir, out, errors);
  /* Callers that do not want the details still need them to decide. */
  dg_config_errors_t local = {0};
  int rc = load(dir, out, &local);
  dg_config_errors_free(&local);
  return rc;
}

/* Snapshots are shared by calls that may end on other threads' behalf, so
 * the count changes atomically. */
dg_catalog_t *dg_catalog_ref(dg_catalog_t *cat) {
  if (cat != NULL)
    __atomic_add_fetch(&cat->refs, 1, __ATOMIC_RELAXED);
  return cat;
}

void dg_catalog_unref(dg_catalog_t *cat) {
  if (cat == NULL)
    return;
  if (__atomic_sub_fetch(&cat->refs, 1, __ATOMIC_ACQ_REL) == 0)
    dg_arena_destroy(cat->arena);
}

/* ---- Lookups -------------------------------------------------------------------- */

const dg_model_t *dg_catalog_model_by_id(const dg_catalog_t *cat, const char *id) {
  for (size_t i = 0; id != NULL && i < cat->nmodels; i++) {
    if (cat->models[i].id != NULL && strcasecmp(cat->models[i].id, id) == 0)
      return &cat->models[i];
  }
  return NULL;
}

static const char *field_at(const void *list, size_t i, size_t size, size_t off) {
  return *(const char *const *)((const char *)list + i * size + off);
}

static const void *find_by(const void *list, size_t n, size_t size, size_t off, const char *key,
                           int (*cmp)(const char *, const char *)) {
  for (size_t i = 0; key != NULL && i < n; i++) {
    const char *s = field_at(list, i, size, off);
    if (s != NULL && cmp(s, key) == 0)
      return (const char *)list + i * size;
  }
  return NULL;
}

const void *dg__catalog_find_name(const void *list, size_t n, size_t size, size_t name_off,
                                  const char *name) {
  const void *found = find_by(list, n, size, name_off, name, strcmp);
  return found ? found : find_by(list, n, size, name_off, name, strcasecmp);
}

const void *dg__catalog_find_id_or_name(const void *list, size_t n, size_t size, size_t id_off,
                                        size_t name_off, const char *key) {
  for (size_t i = 0; key != NULL && i < n; i++) {
    const char *id = field_at(list, i, size, id_off), *name = field_at(list, i, size, name_off);
    if ((id != NULL && strcasecmp(id, key) == 0) || (name != NULL && strcmp(name, key) == 0))
      return (const char *)list + i * size;
  }
  return NULL;
}

const dg_model_t *dg_catalog_model_by_name(const dg_catalog_t *cat, const char *name) {
  return dg__catalog_find_name(cat->models, cat->nmodels, sizeof(dg_model_t),
                               offsetof(dg_model_t, name), name);
}

const dg_model_t *dg__catalog_find_model(const dg_catalog_t *cat, const char *key) {
  const dg_model_t *m = dg_catalog_model_by_name(cat, key);
  return m ? m : dg_catalog_model_by_id(cat, key);
}

const dg_property_t *dg_model_property(const dg_model_t *model, const char *name) {
  return dg__catalog_find_name(model->properties, model->nproperties, sizeof(dg_property_t),
                               offsetof(dg_property_t, name), name);
}

bool dg_model_has_documents(const dg_model_t *model) {
  return dg_model_property(model, "ExternalFileLocation") != NULL;
}

const dg_role_t *dg_catalog_role(const dg_catalog_t *cat, const char *name) {
  for (size_t i = 0; name != NULL && i < cat->nroles; i++) {
    if (cat->roles[i].name != NULL && strcmp(cat->roles[i].name, name) == 0)
      return &cat->roles[i];
  }
  return NULL;
}

const dg_user_t *dg_catalog_user(const dg_catalog_t *cat, const char *name) {
  for (size_t i = 0; name != NULL && i < cat->nusers; i++) {
    if (cat->users[i].name != NULL && strcmp(cat->users[i].name, name) == 0)
      return &cat->users[i];
  }
  return NULL;
}

/* ---- --check-config ------------------------------------------------------------ */

/* A problem as "data/Orders.json: ...", like the files' "models.json: ...". */
static void print_relative(FILE *out, const char *dir, const char *message) {
  size_t n = strlen(dir);
  if (strncmp(message, dir, n) == 0 && message[n] == '/')
    message += n + 1;
  fprintf(out, "%s\n", message);
}

int dg_catalog_check(const char *dir, dg_catalog_check_fn more, FILE *out) {
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = NULL;
  int rc = dg_catalog_load(dir, &cat, &errors);
  for (size_t i = 0; i < errors.count; i++)
    fprintf(out, "%s\n", errors.lines[i]);
  size_t problems = errors.count;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  if (rc == 0 && more != NULL && more(cat, &err) != 0) {
    print_relative(out, dir, err.message[0] ? err.message : dg_strerror(err.code));
    problems++;
    rc = DG_ECONFIG;
  }
  if (rc == 0) {
    dg__catalog_print_reads(cat, out);
    fprintf(out, "%s: %zu models, %zu roles, %zu users: OK\n", dir, cat->nmodels, cat->nroles,
            cat->nusers);
  } else {
    fprintf(out, "%s: %zu problem%s found\n", dir, problems, problems == 1 ? "" : "s");
  }
  dg_catalog_unref(cat);
  dg_config_errors_free(&errors);
  return rc == 0 ? 0 : 1;
}
