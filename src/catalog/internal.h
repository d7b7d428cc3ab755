/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* catalog internals: the schema-table parser shared by the files that read
 * datagate.json and models.json. Never included from outside src/catalog. */
#ifndef DATAGATE_CATALOG_INTERNAL_H
#define DATAGATE_CATALOG_INTERNAL_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datagate/catalog.h"
#include "datagate/text.h" /* templates and JSON paths that the catalog compiles */

/* JSON pointers in messages ("/models/2/properties/4/reference/target"). */
#define DG__CFG_PATH_MAX 256

/* State of one load: where memory goes, where problems are collected and
 * which file is being read (the "file" of "file: json/path: message"). */
typedef struct dg__cfg {
  dg_arena_t *arena;
  dg_config_errors_t *errors;
  const char *file;
  const char *dir;
  dg_catalog_t *cat;
  size_t nerrors; /* problems found, even past the list's cap */
  bool oom;
} dg__cfg_t;

typedef enum dg__cfg_kind {
  DG__CFG_STRING,  /* const char *; JSON null allowed when not required */
  DG__CFG_PATH,    /* const char *, resolved against the configuration directory */
  DG__CFG_BOOL,    /* bool */
  DG__CFG_INT,     /* int */
  DG__CFG_UINT,    /* unsigned */
  DG__CFG_SIZE,    /* size_t */
  DG__CFG_U64,     /* uint64_t */
  DG__CFG_ENUM,    /* int, index into names */
  DG__CFG_STRINGS, /* const char *const * at offset, size_t count at count_offset */
  DG__CFG_JSON,    /* const json_t *, the value as written (NULL when absent), read later */
  DG__CFG_CUSTOM,  /* parsed by fn, which also sees an absent field (value NULL) */
} dg__cfg_kind_t;

typedef struct dg__cfg_field dg__cfg_field_t;

/* A custom parser or an extra check. For DG__CFG_CUSTOM it parses value
 * (NULL when absent) into obj; for other kinds it runs after a present
 * value was stored, to validate it. Problems go to dg__cfg_error. */
typedef void (*dg__cfg_fn)(dg__cfg_t *cfg, const json_t *value, void *obj, const char *path);

/* One row of a schema table, in the style of redis static_configs. */
struct dg__cfg_field {
  const char *name; /* camelCase JSON key */
  dg__cfg_kind_t kind;
  bool required;
  const char *def_str;      /* STRING, PATH */
  int64_t def_int;          /* BOOL, integers, ENUM */
  int64_t min, max;         /* integers (inclusive); STRING: length */
  const char *const *names; /* ENUM names, STRINGS default; NULL-terminated */
  size_t offset;            /* where the value goes in the struct */
  size_t count_offset;      /* STRINGS: where the count goes */
  dg__cfg_fn fn;
};

/* Records "file: path: message" for the file being read. */
void dg__cfg_error(dg__cfg_t *cfg, const char *path, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A request path template: starts with '/', holds no '?', '#', spaces or
 * control characters (saved_queries.c; Saved Queries and save actions). */
void dg__cfg_check_path_text(dg__cfg_t *cfg, const char *text, const char *path);
/* Checks that t, a JSON body or variables template, is JSON once sample
 * fills its placeholders (saved_queries.c; Saved Queries and save actions). */
void dg__cfg_check_json_template(dg__cfg_t *cfg, const dg_template_t *t,
                                 dg_template_lookup_fn sample, void *data, const char *path);
/* What a user of a request description brings (request.c): how its
 * templates compile (in_path: the request's path) and check their
 * placeholders, the sample values a JSON template is checked with, and the
 * method when none is given (NULL: GET, or POST for GraphQL). */
typedef struct dg__cfg_request_use {
  const dg_template_t *(*compile)(void *data, const char *text, bool in_path, const char *path);
  void *data;
  dg_template_lookup_fn sample;
  void *sample_data;
  const char *default_method;
} dg__cfg_request_use_t;
/* Parses the request description v at path into out. With mappings
 * non-NULL the description may also hold "mappings" (a save action's body
 * by field), handed back unparsed for a REST request (else NULL). */
void dg__cfg_parse_request(dg__cfg_t *cfg, const json_t *v, const char *path,
                           const dg__cfg_request_use_t *use, dg_saved_request_t *out,
                           const json_t **mappings);
/* A response path ("$.data.items"), compiled into cfg's arena; NULL with
 * the error recorded at path when text is not one (saved_queries.c). */
const dg_jsonpath_t *dg__cfg_compile_jsonpath(dg__cfg_t *cfg, const char *text, const char *path);
/* Joins base and a key or index into a JSON pointer (escaping ~ and /). */
void dg__cfg_path_key(char *out, const char *base, const char *key);
void dg__cfg_path_index(char *out, const char *base, size_t index);

/* Parses obj with a schema table into dst: defaults for absent fields,
 * type and range checks, and every key not in the table reported as an
 * unknown field. A non-object is reported and leaves the defaults. */
void dg__cfg_parse_object(dg__cfg_t *cfg, const json_t *obj, const char *path,
                          const dg__cfg_field_t *fields, size_t nfields, void *dst);
/* Allocates the arena list for the JSON array v of `what` items (count in
 * *n). NULL when v is absent, not an array (reported) or memory ran out. */
void *dg__cfg_array(dg__cfg_t *cfg, const json_t *v, const char *path, const char *what,
                    size_t size, size_t *n);
/* Parses item i of a configuration list (at is its path, list the array
 * being filled) with what the caller passed as data. */
typedef void (*dg__cfg_item_fn)(dg__cfg_t *cfg, const json_t *item, void *list, size_t i,
                                const char *at, const void *data);
/* dg__cfg_array, then fn on each item in order: the one loop every list of
 * the configuration files is read with. NULL as for dg__cfg_array. */
void *dg__cfg_list(dg__cfg_t *cfg, const json_t *v, const char *path, const char *what, size_t size,
                   size_t *n, dg__cfg_item_fn fn, const void *data);
/* Reports /<list>/<i>/<field> when a and b are both set and equal ignoring
 * case: the duplicate check every named configuration list makes. */
void dg__cfg_check_unique(dg__cfg_t *cfg, const char *list, const char *field, const char *what,
                          size_t i, size_t j, const char *a, const char *b);
/* Reads an array of strings into an arena copy; reports non-strings. */
bool dg__cfg_strings(dg__cfg_t *cfg, const json_t *arr, const char *path, const char ***out,
                     size_t *count);
/* Joins a relative path to the configuration directory. */
const char *dg__cfg_resolve_path(dg__cfg_t *cfg, const char *path);
/* Comma-separated list of names for "known: ..." hints, bounded. */
const char *dg__cfg_join(dg__cfg_t *cfg, const char *const *names, size_t n);

/* The parts of a load. models.json is read first so that roles can name
 * models; the other parsers are the custom fields of datagate.json's root
 * table (obj is the catalog). */
void dg__catalog_parse_models(dg__cfg_t *cfg, const json_t *root);
void dg__catalog_parse_server(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path);
void dg__catalog_parse_oauth(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path);
void dg__catalog_parse_roles(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path);
void dg__catalog_parse_users(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path);
/* Model by name (exact, then any case) or by GUID, for configured names. */
const dg_model_t *dg__catalog_find_model(const dg_catalog_t *cat, const char *key);
/* Lookups over the catalog's arrays: n items size bytes apart, each with a
 * const char * name at offset name_off (and an id at id_off). By name:
 * exact first, then ignoring case. By id or name: the first item whose id
 * matches ignoring case or whose name matches exactly. NULL when none. */
const void *dg__catalog_find_name(const void *list, size_t n, size_t size, size_t name_off,
                                  const char *name);
const void *dg__catalog_find_id_or_name(const void *list, size_t n, size_t size, size_t id_off,
                                        size_t name_off, const char *key);
/* "Customers, Orders, ..." for hints. */
const char *dg__catalog_model_names(dg__cfg_t *cfg);
/* Loads the OAuth keys (secret from the environment, PEM public key). */
void dg__catalog_load_keys(dg__cfg_t *cfg, const char *path);

/* connectors.json and saved_queries.json, read after models.json (Saved
 * Queries name models and connectors); roles' savedQueries are checked
 * once datagate.json is read too. */
void dg__catalog_parse_connectors(dg__cfg_t *cfg, const json_t *root);
void dg__catalog_parse_saved_queries(dg__cfg_t *cfg, const json_t *root);
void dg__catalog_check_role_queries(dg__cfg_t *cfg);
/* The roles document sources name exist (files.json is read before the
 * roles). */
void dg__catalog_check_source_roles(dg__cfg_t *cfg);
/* files.json, read after connectors.json (sources name connectors); also
 * called without the file (root NULL) so that the defaults are set. */
void dg__catalog_parse_files(dg__cfg_t *cfg, const json_t *root);
/* Validators shared by the connector and Saved Query tables. */
void dg__cfg_check_guid(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path);
void dg__cfg_check_env_name(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path);
bool dg__cfg_is_token(const char *s);
/* NULL when url is an absolute http(s) URL without query, fragment or user
 * info; otherwise what is wrong. *https tells the scheme. */
const char *dg__cfg_url_problem(const char *url, bool *https);
/* Reports and returns false when a configured header cannot be sent. */
bool dg__cfg_check_header(dg__cfg_t *cfg, const char *name, const json_t *value, const char *path);

/* ---- endpoints.json (endpoints.c, endpoint_actions.c, endpoint_scope.c) ----
 * Read after saved_queries.json. Each endpoint is parsed on its own first
 * (its model, connector, child lists and action tree); then child
 * endpoints are resolved by name, cycles refused, and every placeholder
 * checked against the session values that reach it. */
#define DG__CATALOG_MAX_ACTIONS 64     /* actions of one endpoint, nested ones included */
#define DG__CATALOG_MAX_EXTRACTIONS 32 /* per Get Session Values action */
#define DG__CATALOG_MAX_LISTS DG_EXTRACTION_MAX_LISTS
#define DG__CATALOG_MAX_CHILDREN 16 /* child configurations of one endpoint */
#define DG__CATALOG_MAX_DEPTH 8     /* endpoints nested through child configurations */

/* An endpoint as parsed: child endpoints are still names. */
typedef struct dg__catalog_endpoint {
  dg_endpoint_t e;
  const char *model;
  const char *connector;
  const char **child_names;  /* per child configuration */
  const char **add_names;    /* per child configuration: addEndpoint, or NULL */
  const char **remove_names; /* per child configuration: removeEndpoint, or NULL */
  const json_t *save;
  const json_t *children;
  const char *path; /* "/endpoints/<i>" */
  bool broken;      /* no model or no tree: nothing further can be checked */
} dg__catalog_endpoint_t;

void dg__catalog_parse_endpoints(dg__cfg_t *cfg, const json_t *root);
/* Parses the root action "save" of ep (and its inner actions) into
 * ep->e.root; child configurations must be parsed already. */
void dg__catalog_parse_save_tree(dg__cfg_t *cfg, dg__catalog_endpoint_t *ep, const json_t *v,
                                 const char *path);
/* endpoint_explain.c: one line per save action of every endpoint: where
 * the value of each of its placeholders comes from. */
void dg__catalog_print_reads(const dg_catalog_t *cat, FILE *out);
/* The second pass over every endpoint: placeholders against the session
 * values and parent records that reach them. */
void dg__catalog_check_endpoint_scopes(dg__cfg_t *cfg, const dg__catalog_endpoint_t *list,
                                       size_t n);
/* True when name is "id" in any case (the record's own id). */
bool dg__catalog_is_id(const char *name);

#endif
