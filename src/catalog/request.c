/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* A request description, as Saved Queries (saved_queries.json) and save
 * actions (endpoints.json) both write it: type, method, path, query,
 * headers, body, graphql and retryUnsafe, and for save actions also
 * mappings. One parser for both; what differs (the default method, which
 * placeholders a template may name, the sample values a JSON template is
 * checked with) comes from the caller's dg__cfg_request_use_t. */
#include <stdlib.h>
#include <string.h>

#include "catalog/internal.h"
#include "datagate/text.h"

#define MAX_GRAPHQL_LEN 65536

static const char *const kind_names[] = {"REST", "GraphQL", NULL};
static const char *const method_names[] = {"GET", "POST", "PUT", "PATCH", "DELETE", NULL};

typedef struct request_raw {
  dg_saved_request_t r;
  int kind;
  const char *path;
  const json_t *query, *headers, *body, *graphql, *mappings;
} request_raw_t;

/* "mappings" stays last: a use without mappings reads the table without
 * it, so that the key is reported as unknown there. */
#define R(field) offsetof(request_raw_t, field)
static const dg__cfg_field_t request_fields[] = {
    {"type", DG__CFG_ENUM, false, NULL, 0, 0, 0, kind_names, R(kind), 0, NULL},
    {"method", DG__CFG_STRING, false, NULL, 0, 1, 16, NULL, R(r.method), 0, NULL},
    {"path", DG__CFG_STRING, false, "", 0, 0, 4096, NULL, R(path), 0, NULL},
    {"query", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, R(query), 0, NULL},
    {"headers", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, R(headers), 0, NULL},
    {"body", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, R(body), 0, NULL},
    {"graphql", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, R(graphql), 0, NULL},
    {"retryUnsafe", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, R(r.retry_unsafe), 0, NULL},
    {"mappings", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, R(mappings), 0, NULL},
};
#undef R

/* A field read by its parent rather than by the table. */
static void skip_field(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
}

#define G(field) offsetof(dg_saved_request_t, field)
static const dg__cfg_field_t graphql_fields[] = {
    {"query", DG__CFG_STRING, true, NULL, 0, 1, MAX_GRAPHQL_LEN, NULL, G(graphql_query), 0, NULL},
    {"operationName", DG__CFG_STRING, false, NULL, 0, 1, 256, NULL, G(operation_name), 0, NULL},
    {"variables", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, skip_field},
};
#undef G

/* A JSON body or variables template, written as JSON or as text, that
 * must stay JSON once the use's sample values fill its placeholders. */
static const dg_template_t *compile_json(dg__cfg_t *cfg, const dg__cfg_request_use_t *use,
                                         const json_t *v, const char *path) {
  char *dumped = json_is_string(v) ? NULL : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
  const char *text = json_is_string(v) ? json_string_value(v) : dumped;
  const dg_template_t *t = text ? use->compile(use->data, text, false, path) : NULL;
  free(dumped);
  if (t == NULL)
    return NULL;
  dg__cfg_check_json_template(cfg, t, use->sample, use->sample_data, path);
  return t;
}

/* "query" and "headers": objects of names and template strings. */
static const dg_saved_param_t *compile_params(dg__cfg_t *cfg, const dg__cfg_request_use_t *use,
                                              const json_t *v, bool headers, const char *path,
                                              size_t *count) {
  *count = 0;
  if (v == NULL)
    return NULL;
  if (!json_is_object(v)) {
    dg__cfg_error(cfg, path, "must be an object of names and template strings");
    return NULL;
  }
  dg_saved_param_t *list = dg_arena_calloc(cfg->arena, json_object_size(v) + 1, sizeof(*list));
  if (list == NULL) {
    cfg->oom = true;
    return NULL;
  }
  const char *key;
  json_t *value;
  json_object_foreach((json_t *)v, key, value) {
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_key(at, path, key);
    if (headers ? !dg__cfg_check_header(cfg, key, value, at) : !json_is_string(value)) {
      if (!headers)
        dg__cfg_error(cfg, at, "must be a template string");
      continue;
    }
    list[*count].name = dg_arena_strdup(cfg->arena, key);
    list[(*count)++].value = use->compile(use->data, json_string_value(value), false, at);
  }
  return list;
}

/* Fills the default method; false (reported) for an unknown one. */
static bool check_method(dg__cfg_t *cfg, const dg__cfg_request_use_t *use, request_raw_t *raw,
                         const char *path) {
  char at[DG__CFG_PATH_MAX];
  dg__cfg_path_key(at, path, "method");
  if (raw->r.method == NULL && use->default_method != NULL)
    raw->r.method = use->default_method;
  else if (raw->r.method == NULL)
    raw->r.method = raw->kind == DG_REQUEST_GRAPHQL ? "POST" : "GET";
  for (size_t i = 0; method_names[i] != NULL; i++) {
    if (strcmp(raw->r.method, method_names[i]) == 0)
      return true;
  }
  dg__cfg_error(cfg, at, "unknown method '%s' (allowed: GET, POST, PUT, PATCH, DELETE)",
                raw->r.method);
  return false;
}

static void check_request_kind(dg__cfg_t *cfg, request_raw_t *raw, const char *path) {
  bool has_body = strcmp(raw->r.method, "POST") == 0 || strcmp(raw->r.method, "PUT") == 0 ||
                  strcmp(raw->r.method, "PATCH") == 0;
  bool graphql = raw->kind == DG_REQUEST_GRAPHQL;
  char at[DG__CFG_PATH_MAX];
  if (!graphql && raw->graphql != NULL) {
    dg__cfg_path_key(at, path, "graphql");
    dg__cfg_error(cfg, at, "only a request of type GraphQL has 'graphql'");
  }
  if ((raw->body != NULL || raw->mappings != NULL) && (graphql || !has_body)) {
    dg__cfg_path_key(at, path, raw->body != NULL ? "body" : "mappings");
    dg__cfg_error(cfg, at, "a %s request has no body", graphql ? "GraphQL" : raw->r.method);
  }
  if (graphql && strcmp(raw->r.method, "POST") != 0) {
    dg__cfg_path_key(at, path, "method");
    dg__cfg_error(cfg, at, "a GraphQL request is a POST");
  }
  if (raw->body != NULL && raw->mappings != NULL) {
    dg__cfg_path_key(at, path, "mappings");
    dg__cfg_error(cfg, at,
                  "give the body either as 'body' (a template) or as 'mappings', not both");
  }
}

static void parse_graphql(dg__cfg_t *cfg, const dg__cfg_request_use_t *use, request_raw_t *raw,
                          const char *path) {
  if (raw->graphql == NULL) {
    dg__cfg_error(cfg, path, "a GraphQL request needs 'graphql' (query, variables)");
    return;
  }
  char at[DG__CFG_PATH_MAX];
  dg__cfg_path_key(at, path, "graphql");
  dg__cfg_parse_object(cfg, raw->graphql, at, graphql_fields, DG_ARRAY_SIZE(graphql_fields),
                       &raw->r);
  /* "variables" is read here: it is a JSON object template. */
  const json_t *vars =
      json_is_object(raw->graphql) ? json_object_get(raw->graphql, "variables") : NULL;
  dg__cfg_path_key(at, at, "variables");
  if (vars != NULL && !json_is_object(vars) && !json_is_string(vars))
    dg__cfg_error(cfg, at, "must be an object (or a JSON text) of GraphQL variables");
  else if (vars != NULL)
    raw->r.graphql_variables = compile_json(cfg, use, vars, at);
}

void dg__cfg_check_json_template(dg__cfg_t *cfg, const dg_template_t *t,
                                 dg_template_lookup_fn sample, void *data, const char *path) {
  dg_buf_t out;
  dg_buf_init(&out, 4 * DG_TEMPLATE_MAX_LEN);
  dg_errctx_t err;
  json_error_t jerr;
  if (dg_template_expand(t, DG_TEMPLATE_JSON, sample, data, &out, &err) == 0) {
    json_t *doc = json_loadb(out.data ? out.data : "", out.len, JSON_DECODE_ANY, &jerr);
    if (doc == NULL)
      dg__cfg_error(cfg, path, "is not JSON once its placeholders are filled in: %s", jerr.text);
    json_decref(doc);
  }
  dg_buf_free(&out);
}

void dg__cfg_check_path_text(dg__cfg_t *cfg, const char *text, const char *path) {
  if (text[0] != '\0' && text[0] != '/')
    dg__cfg_error(cfg, path, "'%s' must start with '/' (it is appended to the connector's baseUrl)",
                  text);
  else if (strpbrk(text, "?#") != NULL)
    dg__cfg_error(cfg, path, "'%s' must not hold '?' or '#'; give parameters in 'query'", text);
  for (const char *c = text; *c != '\0'; c++) {
    if ((unsigned char)*c <= 0x20 || *c == 0x7f) {
      dg__cfg_error(cfg, path, "'%s' must not hold spaces or control characters", text);
      break;
    }
  }
}

void dg__cfg_parse_request(dg__cfg_t *cfg, const json_t *v, const char *path,
                           const dg__cfg_request_use_t *use, dg_saved_request_t *out,
                           const json_t **mappings) {
  request_raw_t raw;
  memset(&raw, 0, sizeof(raw));
  size_t nfields = DG_ARRAY_SIZE(request_fields) - (mappings != NULL ? 0 : 1);
  dg__cfg_parse_object(cfg, v, path, request_fields, nfields, &raw);
  raw.r.kind = (dg_saved_request_kind_t)raw.kind;
  /* The body and kind checks would only repeat an unknown method. */
  if (check_method(cfg, use, &raw, path))
    check_request_kind(cfg, &raw, path);
  char at[DG__CFG_PATH_MAX];
  dg__cfg_path_key(at, path, "path");
  if (raw.path != NULL) {
    dg__cfg_check_path_text(cfg, raw.path, at);
    raw.r.path = use->compile(use->data, raw.path, true, at);
  }
  dg__cfg_path_key(at, path, "query");
  raw.r.query = compile_params(cfg, use, raw.query, false, at, &raw.r.nquery);
  dg__cfg_path_key(at, path, "headers");
  raw.r.headers = compile_params(cfg, use, raw.headers, true, at, &raw.r.nheaders);
  dg__cfg_path_key(at, path, "body");
  if (raw.body != NULL && raw.kind == DG_REQUEST_REST)
    raw.r.body = compile_json(cfg, use, raw.body, at);
  if (raw.kind == DG_REQUEST_GRAPHQL)
    parse_graphql(cfg, use, &raw, path);
  if (mappings != NULL)
    *mappings = raw.kind == DG_REQUEST_REST ? raw.mappings : NULL;
  *out = raw.r;
}
