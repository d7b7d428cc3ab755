/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* endpoints.json, one action tree: the root EndpointSave "save", its inner
 * actions, and the Get Session Values actions an inner save may hold. Each
 * action's request templates are compiled and their plain placeholders
 * checked against the endpoint's model here; session values and parent
 * records depend on where the endpoint runs, so endpoint_scope.c checks
 * those once every endpoint is known. */
#include <ctype.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog/internal.h"
#include "datagate/text.h"

#define MAX_MAPPING_KEYS 8

static const char *const action_type_names[] = {"EndpointSave", "GetSessionValues", NULL};
static const char *const expect_names[] = {"json", "any", NULL};
static const char *const match_names[] = {"All", "Any", NULL};
static const char *const operator_names[] = {"=",       "!=",       ">",     "<",
                                             "isBlank", "notBlank", "regex", NULL};
static const char *const operation_names[] = {"Create", "Update", NULL};

/* The state of one endpoint's tree while it is parsed. */
typedef struct actx {
  dg__cfg_t *cfg;
  dg__catalog_endpoint_t *ep;
  size_t nactions;
} actx_t;

typedef struct action_raw {
  dg_action_t *out;
  int type;
  int expect;
  const char *title;
  bool after;
  const char *connector;
  const json_t *operations, *filter, *request, *responses, *actions, *extractions;
} action_raw_t;

static bool oom(dg__cfg_t *cfg) {
  cfg->oom = true;
  return false;
}

static const char *at_key(dg__cfg_t *cfg, const char *base, const char *key) {
  char p[DG__CFG_PATH_MAX];
  dg__cfg_path_key(p, base, key);
  const char *s = dg_arena_strdup(cfg->arena, p);
  if (s == NULL)
    cfg->oom = true;
  return s ? s : "";
}

bool dg__catalog_is_id(const char *name) {
  return name != NULL && strcasecmp(name, "id") == 0;
}

static bool is_stored(const dg_property_t *p) {
  return p->reference == NULL || p->reference->direction == DG_REF_OUTBOUND;
}

/* The stored property called name (exact, then any case), or NULL with a
 * problem naming what exists. */
static const dg_property_t *stored_property(dg__cfg_t *cfg, const dg_model_t *m, const char *name,
                                            const char *path) {
  const dg_property_t *p = dg_model_property(m, name);
  if (p != NULL && is_stored(p))
    return p;
  if (p != NULL) {
    dg__cfg_error(cfg, path, "'%s' of '%s' is an Inbound reference and holds no value", p->name,
                  m->name);
    return NULL;
  }
  const char **names = dg_arena_calloc(cfg->arena, m->nproperties + 1, sizeof(*names));
  for (size_t i = 0; names != NULL && i < m->nproperties; i++)
    names[i] = m->properties[i].name;
  dg__cfg_error(cfg, path, "model '%s' has no property '%s' (properties: %s)", m->name, name,
                names ? dg__cfg_join(cfg, names, m->nproperties) : "");
  return NULL;
}

/* ---- Placeholders ------------------------------------------------------------ */

/* {Reference.Name}: an Outbound reference of the model to a Data Model
 * that has Name. Whether that record is at hand depends on where the
 * endpoint runs (endpoint_scope.c). */
static void check_reference_var(actx_t *x, const char *name, const char *path) {
  const dg_model_t *m = x->ep->e.model;
  const char *dot = strchr(name, '.');
  char ref[128];
  snprintf(ref, sizeof(ref), "%.*s", (int)(dot - name), name);
  const dg_property_t *p = dg_model_property(m, ref);
  if (p == NULL || p->reference == NULL || p->reference->direction != DG_REF_OUTBOUND ||
      p->reference->target == NULL) {
    dg__cfg_error(x->cfg, path,
                  "placeholder {%s}: '%s' is not an Outbound reference of '%s' to a Data Model",
                  name, ref, m->name);
    return;
  }
  if (!dg__catalog_is_id(dot + 1))
    stored_property(x->cfg, p->reference->target, dot + 1, path);
}

static void check_plain_vars(actx_t *x, const dg_template_t *t, const char *path) {
  for (size_t i = 0; i < dg_template_nvars(t); i++) {
    const dg_template_var_t *v = dg_template_var(t, i);
    if (v->session || dg__catalog_is_id(v->name))
      continue;
    if (strchr(v->name, '.') != NULL) {
      check_reference_var(x, v->name, path);
      continue;
    }
    const dg_property_t *p = dg_model_property(x->ep->e.model, v->name);
    if (p != NULL && is_stored(p))
      continue;
    if (p != NULL)
      dg__cfg_error(x->cfg, path, "placeholder {%s} is an Inbound reference and has no value",
                    v->name);
    else
      dg__cfg_error(x->cfg, path, "placeholder {%s} names no property of '%s'", v->name,
                    x->ep->e.model->name);
  }
}

static const dg_template_t *compile(actx_t *x, action_raw_t *raw, const char *text,
                                    const char *path) {
  const dg_template_t *t = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_template_compile(x->cfg->arena, text, &t, &err);
  if (rc == DG_ENOMEM) {
    oom(x->cfg);
    return NULL;
  }
  if (rc != 0) {
    dg__cfg_error(x->cfg, path, "%s", err.message);
    return NULL;
  }
  check_plain_vars(x, t, path);
  return t;
}

/* Sample values by type, to check that a JSON template stays JSON. */
static int sample_value(void *data, const dg_template_var_t *var, dg_template_value_t *out) {
  const actx_t *x = data;
  const dg_property_t *p =
      strchr(var->name, '.') ? NULL : dg_model_property(x->ep->e.model, var->name);
  *out = (dg_template_value_t){.kind = DG_TVAL_STRING, .text = "a \"b\"", .len = 5};
  if (var->session || p == NULL)
    return 0;
  if (p->type == DG_TYPE_BOOLEAN)
    *out = (dg_template_value_t){.kind = DG_TVAL_BOOL, .text = "true", .len = 4};
  else if (dg_data_type_is_numeric(p->type))
    *out = (dg_template_value_t){.kind = DG_TVAL_NUMBER, .text = "1.5", .len = 3};
  return 0;
}

/* ---- Body mappings ------------------------------------------------------------------ */

typedef struct mapping_raw {
  const char *property;
  const char *value;
} mapping_raw_t;

#define M(field) offsetof(mapping_raw_t, field)
static const dg__cfg_field_t mapping_fields[] = {
    {"connectorProperty", DG__CFG_STRING, true, NULL, 0, 1, 256, NULL, M(property), 0, NULL},
    {"value", DG__CFG_STRING, true, NULL, 0, 0, DG_TEMPLATE_MAX_LEN, NULL, M(value), 0, NULL},
};
#undef M

static bool split_keys(dg__cfg_t *cfg, const char *text, dg_body_mapping_t *m, const char *path) {
  const char **keys = dg_arena_calloc(cfg->arena, MAX_MAPPING_KEYS + 1, sizeof(*keys));
  if (keys == NULL)
    return oom(cfg);
  size_t n = 0;
  for (const char *s = text; n <= MAX_MAPPING_KEYS; s++) {
    size_t len = strcspn(s, ".");
    if (len == 0 || n == MAX_MAPPING_KEYS) {
      dg__cfg_error(cfg, path, "'%s' must be names joined by '.' (at most %d)", text,
                    MAX_MAPPING_KEYS);
      return false;
    }
    keys[n++] = dg_arena_strndup(cfg->arena, s, len);
    s += len;
    if (*s == '\0')
      break;
  }
  m->keys = keys;
  m->nkeys = n;
  return true;
}

/* "a" and "a.b" cannot both be set: one would overwrite the other. */
static bool keys_clash(const dg_body_mapping_t *a, const dg_body_mapping_t *b) {
  size_t n = a->nkeys < b->nkeys ? a->nkeys : b->nkeys;
  for (size_t i = 0; i < n; i++) {
    if (strcmp(a->keys[i], b->keys[i]) != 0)
      return false;
  }
  return true;
}

static void parse_mappings(actx_t *x, action_raw_t *raw, const json_t *v, const char *path) {
  dg_action_t *a = raw->out;
  if (!json_is_array(v) || json_array_size(v) == 0 || json_array_size(v) > 256) {
    dg__cfg_error(x->cfg, path, "must be an array of 1 to 256 {connectorProperty, value}");
    return;
  }
  size_t n = json_array_size(v);
  dg_body_mapping_t *list = dg_arena_calloc(x->cfg->arena, n, sizeof(*list));
  if (list == NULL) {
    oom(x->cfg);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char at[DG__CFG_PATH_MAX];
    mapping_raw_t mr = {0};
    dg__cfg_path_index(at, path, i);
    dg__cfg_parse_object(x->cfg, json_array_get(v, i), at, mapping_fields,
                         DG_ARRAY_SIZE(mapping_fields), &mr);
    if (mr.property == NULL || mr.value == NULL ||
        !split_keys(x->cfg, mr.property, &list[i], at_key(x->cfg, at, "connectorProperty")))
      continue;
    list[i].value = compile(x, raw, mr.value, at_key(x->cfg, at, "value"));
    for (size_t j = 0; j < i; j++) {
      if (list[j].nkeys > 0 && keys_clash(&list[i], &list[j]))
        dg__cfg_error(x->cfg, at_key(x->cfg, at, "connectorProperty"),
                      "'%s' overlaps the connectorProperty of %s/%zu", mr.property, path, j);
    }
  }
  a->mappings = list;
  a->nmappings = n;
}

/* ---- Request ------------------------------------------------------------------------ */

typedef struct request_use {
  actx_t *x;
  action_raw_t *raw;
} request_use_t;

static const dg_template_t *compile_request(void *data, const char *text, bool in_path,
                                            const char *path) {
  request_use_t *u = data;
  return compile(u->x, u->raw, text, path);
}

static void parse_request(actx_t *x, action_raw_t *raw, const char *path) {
  request_use_t u = {x, raw};
  dg__cfg_request_use_t use = {.compile = compile_request,
                               .data = &u,
                               .sample = sample_value,
                               .sample_data = x,
                               .default_method = "POST"};
  const json_t *mappings = NULL;
  dg__cfg_parse_request(x->cfg, raw->request, path, &use, &raw->out->request, &mappings);
  if (mappings != NULL)
    parse_mappings(x, raw, mappings, at_key(x->cfg, path, "mappings"));
}

/* ---- Paths -------------------------------------------------------------------------- */

/* "$.a.b" and "a.b" are the same path. */
static const char *bare(const char *path) {
  if (path[0] == '$')
    path++;
  return path[0] == '.' ? path + 1 : path;
}

/* The part of text after the list path ("calculatedOrder.lineItems.id"
 * with list "calculatedOrder.lineItems" is "id"); text itself when it does
 * not start with the list path (it is relative to an item already). */
static const char *after_list(dg__cfg_t *cfg, const char *text, const char *list) {
  const char *t = bare(text), *l = bare(list);
  size_t n = strlen(l);
  if (n == 0 || strncmp(t, l, n) != 0 || (t[n] != '.' && t[n] != '['))
    return text;
  const char *rest = t + n;
  if (strncmp(rest, "[*]", 3) == 0 && (n < 3 || strcmp(l + n - 3, "[*]") != 0))
    rest += 3;
  if (*rest == '\0')
    return "$";
  return rest[0] == '.' ? rest + 1 : dg_arena_sprintf(cfg->arena, "$%s", rest);
}

/* ---- Response mappings -------------------------------------------------------------- */

typedef struct response_raw {
  const char *property;
  const char *path;
} response_raw_t;

#define S(field) offsetof(response_raw_t, field)
static const dg__cfg_field_t response_fields[] = {
    {"modelProperty", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, S(property), 0, NULL},
    {"connectorProperty", DG__CFG_STRING, true, NULL, 0, 1, DG_JSONPATH_MAX_LEN, NULL, S(path), 0,
     NULL},
};
#undef S

static void parse_responses(actx_t *x, action_raw_t *raw, const char *path) {
  const json_t *v = raw->responses;
  if (!json_is_array(v) || json_array_size(v) > 64) {
    dg__cfg_error(x->cfg, path,
                  "must be an array of at most 64 {modelProperty, connectorProperty}");
    return;
  }
  size_t n = json_array_size(v);
  dg_response_mapping_t *list = dg_arena_calloc(x->cfg->arena, n + 1, sizeof(*list));
  if (list == NULL) {
    oom(x->cfg);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char at[DG__CFG_PATH_MAX];
    response_raw_t rr = {0};
    dg__cfg_path_index(at, path, i);
    dg__cfg_parse_object(x->cfg, json_array_get(v, i), at, response_fields,
                         DG_ARRAY_SIZE(response_fields), &rr);
    if (rr.property != NULL)
      list[i].property =
          stored_property(x->cfg, x->ep->e.model, rr.property, at_key(x->cfg, at, "modelProperty"));
    if (rr.path != NULL)
      list[i].path =
          dg__cfg_compile_jsonpath(x->cfg, rr.path, at_key(x->cfg, at, "connectorProperty"));
  }
  raw->out->responses = list;
  raw->out->nresponses = n;
}

/* ---- Extractions -------------------------------------------------------------------- */

typedef struct extraction_raw {
  dg_extraction_t x;
  const char *model_property, *connector_property, *target_list, *model_match;
  const char *connector_list, *connector_match;
  bool map_to_children, multiple;
  const json_t *lists;
  const char *path;
} extraction_raw_t;

#define X(field) offsetof(extraction_raw_t, field)
static const dg__cfg_field_t extraction_fields[] = {
    {"modelProperty", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, X(model_property), 0, NULL},
    {"connectorProperty", DG__CFG_STRING, true, NULL, 0, 1, DG_JSONPATH_MAX_LEN, NULL,
     X(connector_property), 0, NULL},
    {"mapToChildren", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, X(map_to_children), 0, NULL},
    {"useMultipleLists", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, X(multiple), 0, NULL},
    {"targetList", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, X(target_list), 0, NULL},
    {"modelMatchProperty", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, X(model_match), 0, NULL},
    {"connectorListProperty", DG__CFG_STRING, false, NULL, 0, 1, DG_JSONPATH_MAX_LEN, NULL,
     X(connector_list), 0, NULL},
    {"connectorMatchProperty", DG__CFG_STRING, false, NULL, 0, 1, DG_JSONPATH_MAX_LEN, NULL,
     X(connector_match), 0, NULL},
    {"connectorLists", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, X(lists), 0, NULL},
};
#undef X

typedef struct list_raw {
  const char *prefix;
  const char *path;
} list_raw_t;

#define L(field) offsetof(list_raw_t, field)
static const dg__cfg_field_t list_fields[] = {
    {"prefix", DG__CFG_STRING, true, NULL, 0, 1, 64, NULL, L(prefix), 0, NULL},
    {"path", DG__CFG_STRING, true, NULL, 0, 1, DG_JSONPATH_MAX_LEN, NULL, L(path), 0, NULL},
};
#undef L

static bool is_identifier(const char *s) {
  bool ok = isalpha((unsigned char)s[0]) || s[0] == '_';
  for (const char *c = s; ok && *c != '\0'; c++)
    ok = isalnum((unsigned char)*c) || *c == '_';
  return ok;
}

static bool ends_with_wildcard(const char *text) {
  size_t n = strlen(text);
  return (n >= 3 && strcmp(text + n - 3, "[*]") == 0) ||
         (n >= 2 && strcmp(text + n - 2, ".*") == 0);
}

static void parse_list_row(actx_t *x, extraction_raw_t *er, size_t i, dg_connector_list_t *out,
                           const char *path) {
  list_raw_t lr = {0};
  dg__cfg_parse_object(x->cfg, json_array_get(er->lists, i), path, list_fields,
                       DG_ARRAY_SIZE(list_fields), &lr);
  if (lr.prefix != NULL && !is_identifier(lr.prefix))
    dg__cfg_error(x->cfg, at_key(x->cfg, path, "prefix"),
                  "'%s' is not a valid prefix (a letter or _, then letters, digits or _)",
                  lr.prefix);
  for (size_t j = 0; lr.prefix != NULL && j < i; j++) {
    if (er->x.lists[j].prefix != NULL && strcmp(er->x.lists[j].prefix, lr.prefix) == 0)
      dg__cfg_error(x->cfg, at_key(x->cfg, path, "prefix"), "prefix '%s' is used twice", lr.prefix);
  }
  out->prefix = lr.prefix;
  if (lr.path != NULL && !ends_with_wildcard(lr.path))
    dg__cfg_error(x->cfg, at_key(x->cfg, path, "path"),
                  "'%s' must end in a wildcard list selector such as [*]", lr.path);
  else if (lr.path != NULL)
    out->path = dg__cfg_compile_jsonpath(x->cfg, lr.path, at_key(x->cfg, path, "path"));
}

static void parse_lists(actx_t *x, extraction_raw_t *er) {
  const char *path = at_key(x->cfg, er->path, "connectorLists");
  size_t n = json_array_size(er->lists);
  if (!json_is_array(er->lists) || n < 2 || n > DG__CATALOG_MAX_LISTS) {
    dg__cfg_error(
        x->cfg, er->lists ? path : er->path, "%s 'connectorLists': 2 to %d rows of {prefix, path}",
        er->lists ? "must hold" : "a Multiple Lists extraction needs", DG__CATALOG_MAX_LISTS);
    return;
  }
  dg_connector_list_t *list = dg_arena_calloc(x->cfg->arena, n, sizeof(*list));
  if (list == NULL) {
    oom(x->cfg);
    return;
  }
  er->x.lists = list;
  for (size_t i = 0; i < n; i++) {
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_index(at, path, i);
    parse_list_row(x, er, i, &list[i], at);
  }
  er->x.nlists = n;
}

/* A composite path must start with one of the prefixes. */
static const dg_jsonpath_t *composite_path(actx_t *x, extraction_raw_t *er, const char *text,
                                           const char *field) {
  const char *t = bare(text), *at = at_key(x->cfg, er->path, field);
  for (size_t i = 0; i < er->x.nlists; i++) {
    const char *p = er->x.lists[i].prefix;
    size_t n = p ? strlen(p) : 0;
    if (n > 0 && strncmp(t, p, n) == 0 && (t[n] == '.' || t[n] == '[' || t[n] == '\0'))
      return dg__cfg_compile_jsonpath(x->cfg, text, at);
  }
  const char **names = dg_arena_calloc(x->cfg->arena, er->x.nlists + 1, sizeof(*names));
  for (size_t i = 0; names != NULL && i < er->x.nlists; i++)
    names[i] = er->x.lists[i].prefix;
  dg__cfg_error(x->cfg, at, "'%s' must start with a list prefix (%s)", text,
                names ? dg__cfg_join(x->cfg, names, er->x.nlists) : "");
  return NULL;
}

static bool has_child_config(const dg__catalog_endpoint_t *ep, const dg_property_t *list) {
  for (size_t i = 0; i < ep->e.nchildren; i++) {
    if (ep->e.children[i].list == list)
      return true;
  }
  return false;
}

/* targetList: an Inbound reference of the model that a child configuration saves. */
static const dg_model_t *resolve_target(actx_t *x, extraction_raw_t *er) {
  const char *at = at_key(x->cfg, er->path, "targetList");
  const dg_model_t *m = x->ep->e.model;
  if (er->target_list == NULL) {
    dg__cfg_error(x->cfg, er->path, "a %s extraction needs 'targetList'",
                  er->multiple ? "Multiple Lists" : "Map to Children");
    return NULL;
  }
  const dg_property_t *p = dg_model_property(m, er->target_list);
  if (p == NULL || p->reference == NULL || p->reference->direction != DG_REF_INBOUND ||
      p->reference->target == NULL) {
    dg__cfg_error(x->cfg, at, "'%s' is not an Inbound reference of '%s' to a Data Model",
                  er->target_list, m->name);
    return NULL;
  }
  er->x.target_list = p;
  if (!has_child_config(x->ep, p))
    dg__cfg_error(x->cfg, at,
                  "no child configuration saves '%s'; its session values would never be used "
                  "(add it to childConfigs)",
                  p->name);
  return p->reference->target;
}

static void resolve_match(actx_t *x, extraction_raw_t *er, const dg_model_t *target) {
  const char *at = at_key(x->cfg, er->path, "modelMatchProperty");
  if (er->model_match == NULL)
    dg__cfg_error(x->cfg, er->path, "a %s extraction needs 'modelMatchProperty'",
                  er->multiple ? "Multiple Lists" : "Map to Children");
  else if (!dg__catalog_is_id(er->model_match))
    er->x.model_match_property = stored_property(x->cfg, target, er->model_match, at);
  if (er->connector_match == NULL)
    dg__cfg_error(x->cfg, er->path, "a %s extraction needs 'connectorMatchProperty'",
                  er->multiple ? "Multiple Lists" : "Map to Children");
}

static void resolve_collection(actx_t *x, extraction_raw_t *er, const dg_model_t *target) {
  if (er->connector_list == NULL) {
    dg__cfg_error(x->cfg, er->path, "a Map to Children extraction needs 'connectorListProperty'");
    return;
  }
  er->x.connector_list = dg__cfg_compile_jsonpath(
      x->cfg, er->connector_list, at_key(x->cfg, er->path, "connectorListProperty"));
  const char *value = after_list(x->cfg, er->connector_property, er->connector_list);
  er->x.connector_property =
      value ? dg__cfg_compile_jsonpath(x->cfg, value, at_key(x->cfg, er->path, "connectorProperty"))
            : NULL;
  if (er->connector_match != NULL) {
    const char *match = after_list(x->cfg, er->connector_match, er->connector_list);
    er->x.connector_match =
        match ? dg__cfg_compile_jsonpath(x->cfg, match,
                                         at_key(x->cfg, er->path, "connectorMatchProperty"))
              : NULL;
  }
}

static void resolve_multiple(actx_t *x, extraction_raw_t *er) {
  if (er->connector_list != NULL)
    dg__cfg_error(x->cfg, at_key(x->cfg, er->path, "connectorListProperty"),
                  "a Multiple Lists extraction reads 'connectorLists' instead");
  parse_lists(x, er);
  if (er->x.nlists == 0)
    return;
  er->x.connector_property = composite_path(x, er, er->connector_property, "connectorProperty");
  if (er->connector_match != NULL)
    er->x.connector_match = composite_path(x, er, er->connector_match, "connectorMatchProperty");
}

/* The fields of one kind must not appear on another. */
static void check_basic_fields(actx_t *x, extraction_raw_t *er) {
  const char *extra = er->target_list       ? "targetList"
                      : er->model_match     ? "modelMatchProperty"
                      : er->connector_list  ? "connectorListProperty"
                      : er->connector_match ? "connectorMatchProperty"
                      : er->lists           ? "connectorLists"
                                            : NULL;
  if (extra != NULL)
    dg__cfg_error(x->cfg, at_key(x->cfg, er->path, extra),
                  "a basic extraction has no '%s' (set mapToChildren or useMultipleLists)", extra);
}

static void resolve_extraction(actx_t *x, extraction_raw_t *er, dg_action_phase_t phase) {
  const char *at = at_key(x->cfg, er->path, "modelProperty");
  if (er->map_to_children && er->multiple) {
    dg__cfg_error(x->cfg, er->path, "mapToChildren and useMultipleLists exclude each other");
    return;
  }
  if (!er->map_to_children && !er->multiple) {
    er->x.kind = DG_EXTRACT_BASIC;
    check_basic_fields(x, er);
    er->x.model_property = stored_property(x->cfg, x->ep->e.model, er->model_property, at);
    er->x.connector_property = dg__cfg_compile_jsonpath(
        x->cfg, er->connector_property, at_key(x->cfg, er->path, "connectorProperty"));
    return;
  }
  er->x.kind = er->multiple ? DG_EXTRACT_MULTIPLE_LISTS : DG_EXTRACT_COLLECTION;
  if (phase == DG_PHASE_POST_CHILD)
    dg__cfg_error(x->cfg, er->path,
                  "values for children are of no use after the child saves; this action runs "
                  "after child configs");
  const dg_model_t *target = resolve_target(x, er);
  if (target == NULL)
    return;
  er->x.model_property = stored_property(x->cfg, target, er->model_property, at);
  resolve_match(x, er, target);
  if (er->multiple)
    resolve_multiple(x, er);
  else
    resolve_collection(x, er, target);
}

static void parse_extractions(actx_t *x, action_raw_t *raw, const char *path) {
  const json_t *v = raw->extractions;
  size_t n = json_array_size(v);
  if (!json_is_array(v) || n == 0 || n > DG__CATALOG_MAX_EXTRACTIONS) {
    dg__cfg_error(x->cfg, v ? path : raw->out->path,
                  "a Get Session Values action needs 'extractions': 1 to %d extractions",
                  DG__CATALOG_MAX_EXTRACTIONS);
    return;
  }
  dg_extraction_t *list = dg_arena_calloc(x->cfg->arena, n, sizeof(*list));
  if (list == NULL) {
    oom(x->cfg);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char at[DG__CFG_PATH_MAX];
    extraction_raw_t er;
    memset(&er, 0, sizeof(er));
    dg__cfg_path_index(at, path, i);
    er.path = at;
    size_t before = x->cfg->nerrors;
    dg__cfg_parse_object(x->cfg, json_array_get(v, i), at, extraction_fields,
                         DG_ARRAY_SIZE(extraction_fields), &er);
    if (x->cfg->nerrors == before && er.model_property != NULL && er.connector_property != NULL)
      resolve_extraction(x, &er, raw->out->phase);
    list[i] = er.x;
  }
  raw->out->extractions = list;
  raw->out->nextractions = n;
}

/* ---- Filters and operations --------------------------------------------------------- */

typedef struct condition_raw {
  const char *property;
  int op;
  const char *value;
} condition_raw_t;

#define C(field) offsetof(condition_raw_t, field)
static const dg__cfg_field_t condition_fields[] = {
    {"property", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, C(property), 0, NULL},
    {"operator", DG__CFG_ENUM, true, NULL, 0, 0, 0, operator_names, C(op), 0, NULL},
    {"value", DG__CFG_STRING, false, NULL, 0, 0, 4096, NULL, C(value), 0, NULL},
};
#undef C

static void free_regex(void *data) {
  regfree(data);
}

static void finish_condition(actx_t *x, condition_raw_t *cr, dg_filter_condition_t *out,
                             const char *path) {
  out->op = (dg_filter_op_t)cr->op;
  out->value = cr->value;
  if (cr->property != NULL)
    out->property =
        stored_property(x->cfg, x->ep->e.model, cr->property, at_key(x->cfg, path, "property"));
  bool blank = out->op == DG_FILTER_BLANK || out->op == DG_FILTER_NOT_BLANK;
  if (blank != (cr->value == NULL)) {
    dg__cfg_error(x->cfg, path, blank ? "'%s' takes no 'value'" : "'%s' needs a 'value'",
                  operator_names[cr->op]);
    return;
  }
  if (out->op != DG_FILTER_REGEX)
    return;
  regex_t *re = dg_arena_calloc(x->cfg->arena, 1, sizeof(*re));
  if (re == NULL) {
    oom(x->cfg);
    return;
  }
  int rc = regcomp(re, cr->value, REG_EXTENDED | REG_NOSUB);
  if (rc != 0) {
    char why[256];
    regerror(rc, re, why, sizeof(why));
    dg__cfg_error(x->cfg, at_key(x->cfg, path, "value"), "'%s' is not a regular expression: %s",
                  cr->value, why);
    return;
  }
  if (dg_arena_defer(x->cfg->arena, free_regex, re) != 0)
    oom(x->cfg);
  out->regex = re;
}

typedef struct filter_raw {
  int match;
  const json_t *conditions;
} filter_raw_t;

static const dg__cfg_field_t filter_fields[] = {
    {"match", DG__CFG_ENUM, false, NULL, 0, 0, 0, match_names, offsetof(filter_raw_t, match), 0,
     NULL},
    {"conditions", DG__CFG_JSON, true, NULL, 0, 0, 0, NULL, offsetof(filter_raw_t, conditions), 0,
     NULL},
};

static void parse_filter(actx_t *x, action_raw_t *raw, const char *path) {
  filter_raw_t fr = {0};
  dg__cfg_parse_object(x->cfg, raw->filter, path, filter_fields, DG_ARRAY_SIZE(filter_fields), &fr);
  size_t n = json_array_size(fr.conditions);
  if (fr.conditions != NULL && (!json_is_array(fr.conditions) || n == 0 || n > 16)) {
    dg__cfg_error(x->cfg, at_key(x->cfg, path, "conditions"),
                  "must be an array of 1 to 16 conditions");
    return;
  }
  dg_action_filter_t *f = dg_arena_calloc(x->cfg->arena, 1, sizeof(*f));
  dg_filter_condition_t *list = dg_arena_calloc(x->cfg->arena, n + 1, sizeof(*list));
  if (f == NULL || list == NULL) {
    oom(x->cfg);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char at[DG__CFG_PATH_MAX];
    condition_raw_t cr = {0};
    dg__cfg_path_index(at, at_key(x->cfg, path, "conditions"), i);
    dg__cfg_parse_object(x->cfg, json_array_get(fr.conditions, i), at, condition_fields,
                         DG_ARRAY_SIZE(condition_fields), &cr);
    finish_condition(x, &cr, &list[i], at);
  }
  *f = (dg_action_filter_t){.any = fr.match == 1, .conditions = list, .nconditions = n};
  raw->out->filter = f;
}

static void parse_operations(actx_t *x, action_raw_t *raw, const char *path) {
  dg_action_t *a = raw->out;
  a->on_create = a->on_update = raw->operations == NULL;
  if (raw->operations == NULL)
    return;
  size_t n = json_array_size(raw->operations);
  if (!json_is_array(raw->operations) || n == 0) {
    dg__cfg_error(x->cfg, path, "must be a non-empty array of \"Create\" and \"Update\"");
    return;
  }
  for (size_t i = 0; i < n; i++) {
    const char *s = json_string_value(json_array_get(raw->operations, i));
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_index(at, path, i);
    if (s != NULL && strcmp(s, operation_names[0]) == 0)
      a->on_create = true;
    else if (s != NULL && strcmp(s, operation_names[1]) == 0)
      a->on_update = true;
    else
      dg__cfg_error(x->cfg, at, "must be \"Create\" or \"Update\"");
  }
}

/* ---- Actions ------------------------------------------------------------------------ */

#define A(field) offsetof(action_raw_t, field)
static const dg__cfg_field_t action_fields[] = {
    {"type", DG__CFG_ENUM, true, NULL, -1, 0, 0, action_type_names, A(type), 0, NULL},
    {"title", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, A(title), 0, NULL},
    {"afterChildConfigs", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, A(after), 0, NULL},
    {"expect", DG__CFG_ENUM, false, NULL, 0, 0, 0, expect_names, A(expect), 0, NULL},
    {"operations", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, A(operations), 0, NULL},
    {"connector", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, A(connector), 0, NULL},
    {"filter", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, A(filter), 0, NULL},
    {"request", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, A(request), 0, NULL},
    {"responseMappings", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, A(responses), 0, NULL},
    {"actions", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, A(actions), 0, NULL},
    {"extractions", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, A(extractions), 0, NULL},
};
#undef A

static bool shape_error(actx_t *x, const char *path, const char *field, const char *why) {
  dg__cfg_error(x->cfg, at_key(x->cfg, path, field), "%s", why);
  return false;
}

/* Fields a GetSessionValues action cannot have: it calls nothing. */
static bool check_reader_shape(actx_t *x, action_raw_t *raw, const char *path) {
  static const char why[] =
      "a GetSessionValues action calls nothing; it reads the response of its save action";
  if (raw->request != NULL)
    return shape_error(x, path, "request", why);
  if (raw->responses != NULL)
    return shape_error(x, path, "responseMappings", why);
  if (raw->actions != NULL)
    return shape_error(x, path, "actions", why);
  if (raw->connector != NULL)
    return shape_error(x, path, "connector", why);
  return true;
}

/* Fields that one type of action or one place in the tree cannot have. */
static bool check_shape(actx_t *x, action_raw_t *raw, int depth, const char *path) {
  /* Fields that do not belong are reported; the others are still read. */
  if (depth == 0 && raw->type != DG_ACTION_ENDPOINT_SAVE) {
    /* Read on as the save it must be, so that its inner actions are checked. */
    raw->type = DG_ACTION_ENDPOINT_SAVE;
    raw->out->type = DG_ACTION_ENDPOINT_SAVE;
    return shape_error(x, path, "type", "the root action of an endpoint is an EndpointSave");
  }
  bool save = raw->type == DG_ACTION_ENDPOINT_SAVE;
  if (!save && !check_reader_shape(x, raw, path))
    return false;
  if (save && raw->extractions != NULL)
    return shape_error(x, path, "extractions", "only a GetSessionValues action has extractions");
  if (depth == 0 && raw->after)
    return shape_error(x, path, "afterChildConfigs", "the root action always runs first");
  if (depth == 0 && raw->filter != NULL)
    return shape_error(x, path, "filter",
                       "the root action always runs; filters are for inner "
                       "actions");
  if (depth == 2 && save)
    return shape_error(x, path, "type", "an inner save action holds only GetSessionValues actions");
  if (depth == 2 && raw->after)
    return shape_error(x, path, "afterChildConfigs",
                       "it runs right after the save action it belongs to");
  if (save && raw->request == NULL) {
    dg__cfg_error(x->cfg, path, "an EndpointSave action needs 'request'");
    return false;
  }
  return true;
}

static void resolve_connector(actx_t *x, action_raw_t *raw, const char *path) {
  dg_action_t *a = raw->out;
  a->connector = x->ep->e.connector;
  if (raw->connector != NULL) {
    a->connector = dg_catalog_connector(x->cfg->cat, raw->connector);
    if (a->connector == NULL)
      dg__cfg_error(x->cfg, at_key(x->cfg, path, "connector"), "unknown connector '%s'",
                    raw->connector);
  } else if (a->connector == NULL && x->ep->connector == NULL) {
    dg__cfg_error(x->cfg, path, "no connector: give 'connector' on the action or on the endpoint");
  }
}

static const dg_action_t *parse_action(actx_t *x, const json_t *v, const char *path, int depth,
                                       const dg_action_t *parent);

static void parse_inner(actx_t *x, action_raw_t *raw, int depth, const char *path) {
  dg_action_t *a = raw->out;
  size_t n = json_array_size(raw->actions);
  if (!json_is_array(raw->actions)) {
    dg__cfg_error(x->cfg, path, "must be an array of actions");
    return;
  }
  dg_action_t *list = dg_arena_calloc(x->cfg->arena, n + 1, sizeof(*list));
  if (list == NULL) {
    oom(x->cfg);
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_index(at, path, i);
    const dg_action_t *inner = parse_action(x, json_array_get(raw->actions, i), at, depth + 1, a);
    if (inner != NULL)
      list[i] = *inner;
  }
  /* The actions of an inner save read its response: they point at its
   * copy in this array, which does not move. */
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < list[i].nactions; j++)
      ((dg_action_t *)&list[i].actions[j])->source = &list[i];
  }
  a->actions = list;
  a->nactions = n;
}

static void parse_kind(actx_t *x, action_raw_t *raw, int depth, const char *path) {
  if (raw->type == DG_ACTION_GET_SESSION_VALUES) {
    parse_extractions(x, raw, at_key(x->cfg, path, "extractions"));
    return;
  }
  resolve_connector(x, raw, path);
  if (raw->request != NULL)
    parse_request(x, raw, at_key(x->cfg, path, "request"));
  if (raw->responses != NULL)
    parse_responses(x, raw, at_key(x->cfg, path, "responseMappings"));
  if (raw->actions != NULL && depth < 2)
    parse_inner(x, raw, depth, at_key(x->cfg, path, "actions"));
}

/* What reads a save action's answer, or NULL when nothing does. */
static const char *answer_reader(const dg_action_t *a) {
  if (a->nresponses > 0)
    return "its responseMappings read it";
  if (a->request.kind == DG_REQUEST_GRAPHQL)
    return "a GraphQL answer is checked for 'errors'";
  for (size_t i = 0; i < a->nactions; i++) {
    if (a->actions[i].type == DG_ACTION_GET_SESSION_VALUES)
      return "its GetSessionValues actions read it";
  }
  return NULL;
}

/* "expect": "any" only where nothing reads the answer: an answer that is
 * read must be JSON, or the values read from it would silently be missing. */
static void check_expect(actx_t *x, action_raw_t *raw, const char *path) {
  dg_action_t *a = raw->out;
  const char *reader = a->type == DG_ACTION_ENDPOINT_SAVE ? answer_reader(a) : NULL;
  a->answer_read = reader != NULL;
  if (raw->expect != 1)
    return;
  if (a->type != DG_ACTION_ENDPOINT_SAVE)
    shape_error(x, path, "expect", "only an EndpointSave action gets an answer to expect");
  else if (reader != NULL)
    dg__cfg_error(x->cfg, at_key(x->cfg, path, "expect"),
                  "'any' is for an action whose answer nothing reads, and %s; leave 'expect' "
                  "out (an answer that is read must be JSON)",
                  reader);
  else
    a->expect_any = true;
}

static dg_action_phase_t phase_of(int depth, bool after, const dg_action_t *parent) {
  if (depth == 0)
    return DG_PHASE_ROOT;
  if (depth == 1)
    return after ? DG_PHASE_POST_CHILD : DG_PHASE_PRE_CHILD;
  return parent->phase;
}

static const dg_action_t *parse_action(actx_t *x, const json_t *v, const char *path, int depth,
                                       const dg_action_t *parent) {
  if (++x->nactions > DG__CATALOG_MAX_ACTIONS) {
    if (x->nactions == DG__CATALOG_MAX_ACTIONS + 1)
      dg__cfg_error(x->cfg, path, "an endpoint has at most %d actions", DG__CATALOG_MAX_ACTIONS);
    return NULL;
  }
  action_raw_t raw;
  memset(&raw, 0, sizeof(raw));
  raw.out = dg_arena_calloc(x->cfg->arena, 1, sizeof(*raw.out));
  if (raw.out == NULL) {
    oom(x->cfg);
    return NULL;
  }
  dg__cfg_parse_object(x->cfg, v, path, action_fields, DG_ARRAY_SIZE(action_fields), &raw);
  dg_action_t *a = raw.out;
  /* An unknown type (reported) is read as an action that calls nothing. */
  a->type = raw.type < 0 ? DG_ACTION_GET_SESSION_VALUES : (dg_action_type_t)raw.type;
  a->title = raw.title ? raw.title : "";
  a->path = dg_arena_strdup(x->cfg->arena, path);
  a->after_child_configs = raw.after;
  a->phase = phase_of(depth, raw.after, parent);
  a->source = depth > 0 ? parent : NULL;
  if (raw.type < 0)
    return a; /* reported; nothing else can be checked */
  check_shape(x, &raw, depth, path);
  parse_operations(x, &raw, at_key(x->cfg, path, "operations"));
  if (raw.filter != NULL && depth > 0)
    parse_filter(x, &raw, at_key(x->cfg, path, "filter"));
  parse_kind(x, &raw, depth, path);
  check_expect(x, &raw, path);
  return a;
}

void dg__catalog_parse_save_tree(dg__cfg_t *cfg, dg__catalog_endpoint_t *ep, const json_t *v,
                                 const char *path) {
  actx_t x = {.cfg = cfg, .ep = ep};
  ep->e.root = parse_action(&x, v, path, 0, NULL);
}
