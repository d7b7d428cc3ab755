/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* endpoints.json: endpoints that save records of a Data Model through a
 * save action tree. Each endpoint is parsed on its own (model, connector,
 * child configurations, the tree in endpoint_actions.c); then child
 * configurations are resolved to endpoints by name, cycles and models
 * checked, and the tree is laid out in execution order. Placeholders are
 * checked last (endpoint_scope.c), when every endpoint is known. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog/internal.h"

#define MAX_ENDPOINTS 1000

/* ---- Child configurations ------------------------------------------------------ */

typedef struct child_raw {
  dg_child_config_t c;
  const char *list;
  const char *endpoint;
  const char *add_endpoint;
  const char *remove_endpoint;
  const json_t *remove_values;
  const char *order_by;
} child_raw_t;

#define C(field) offsetof(child_raw_t, field)
static const dg__cfg_field_t child_fields[] = {
    {"list", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, C(list), 0, NULL},
    {"endpoint", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, C(endpoint), 0, NULL},
    {"orderBy", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, C(order_by), 0, NULL},
    {"concurrency", DG__CFG_UINT, false, NULL, 1, 1, 64, NULL, C(c.concurrency), 0, NULL},
    {"maxChildren", DG__CFG_UINT, false, NULL, 1000, 1, 10000, NULL, C(c.max_children), 0, NULL},
    {"addEndpoint", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, C(add_endpoint), 0, NULL},
    {"removeEndpoint", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, C(remove_endpoint), 0, NULL},
    {"removeValues", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, C(remove_values), 0, NULL},
};
#undef C

static void resolve_child_list(dg__cfg_t *cfg, const dg_model_t *m, child_raw_t *raw,
                               const char *path) {
  char at[DG__CFG_PATH_MAX];
  dg__cfg_path_key(at, path, "list");
  const dg_property_t *p = dg_model_property(m, raw->list);
  if (p == NULL || p->reference == NULL || p->reference->direction != DG_REF_INBOUND ||
      p->reference->target == NULL) {
    dg__cfg_error(cfg, at, "'%s' is not an Inbound reference of '%s' to a Data Model", raw->list,
                  m->name);
    return;
  }
  raw->c.list = p;
  if (raw->order_by == NULL)
    return;
  dg__cfg_path_key(at, path, "orderBy");
  const dg_property_t *o = dg_model_property(p->reference->target, raw->order_by);
  if (o == NULL || (o->reference != NULL && o->reference->direction == DG_REF_INBOUND))
    dg__cfg_error(cfg, at, "'%s' is not a stored property of '%s'", raw->order_by,
                  p->reference->target->name);
  raw->c.order_by = o;
}

/* Whether a remove value suits the property's type: a whole number for
 * Int and Long, a number for Double and Decimal, true or false for a
 * Boolean, text otherwise; null clears. */
static bool remove_value_fits(const dg_property_t *p, const json_t *v) {
  switch (p->type) {
  case DG_TYPE_INT:
  case DG_TYPE_LONG:
    return json_is_integer(v) || json_is_null(v);
  case DG_TYPE_DOUBLE:
  case DG_TYPE_DECIMAL:
    return json_is_number(v) || json_is_null(v);
  case DG_TYPE_BOOLEAN:
    return json_is_boolean(v) || json_is_null(v);
  default:
    return json_is_string(v) || json_is_null(v);
  }
}

/* removeValues: {"<property of the list's model>": scalar}, kept as JSON text. */
static void resolve_remove_values(dg__cfg_t *cfg, child_raw_t *raw, const char *path) {
  char at[DG__CFG_PATH_MAX];
  const json_t *v = raw->remove_values;
  const dg_model_t *m = raw->c.list->reference->target;
  dg__cfg_path_key(at, path, "removeValues");
  if (!json_is_object(v) || json_object_size(v) == 0 || json_object_size(v) > 64) {
    dg__cfg_error(cfg, at, "must be an object of 1 to 64 values, each a property of '%s'", m->name);
    return;
  }
  size_t n = json_object_size(v), k = 0;
  const dg_property_t **props = dg_arena_calloc(cfg->arena, n + 1, sizeof(*props));
  const char **texts = dg_arena_calloc(cfg->arena, n + 1, sizeof(*texts));
  if (props == NULL || texts == NULL) {
    cfg->oom = true;
    return;
  }
  const char *key;
  const json_t *value;
  json_object_foreach((json_t *)v, key, value) {
    char item[DG__CFG_PATH_MAX];
    dg__cfg_path_key(item, at, key);
    const dg_property_t *p = dg_model_property(m, key);
    if (p == NULL || p->type == DG_TYPE_REFERENCE) {
      dg__cfg_error(cfg, item, "'%s' is not a stored property of '%s' (references excluded)", key,
                    m->name);
      continue;
    }
    if (!remove_value_fits(p, value)) {
      dg__cfg_error(cfg, item, "does not suit '%s', a %s property", key,
                    dg_data_type_name(p->type));
      continue;
    }
    char *text = json_dumps(value, JSON_ENCODE_ANY | JSON_COMPACT);
    texts[k] = text ? dg_arena_strdup(cfg->arena, text) : NULL;
    free(text);
    if (texts[k] == NULL) {
      cfg->oom = true;
      return;
    }
    props[k++] = p;
  }
  raw->c.remove_props = props;
  raw->c.remove_values = texts;
  raw->c.nremove_values = k;
}

static void parse_children(dg__cfg_t *cfg, dg__catalog_endpoint_t *ep, const char *path) {
  const json_t *v = ep->children;
  size_t n = json_array_size(v);
  if (!json_is_array(v) || n > DG__CATALOG_MAX_CHILDREN) {
    dg__cfg_error(cfg, path, "must be an array of at most %d child configurations",
                  DG__CATALOG_MAX_CHILDREN);
    return;
  }
  dg_child_config_t *list = dg_arena_calloc(cfg->arena, n + 1, sizeof(*list));
  const char **names = dg_arena_calloc(cfg->arena, n + 1, sizeof(*names));
  const char **adds = dg_arena_calloc(cfg->arena, n + 1, sizeof(*adds));
  const char **removes = dg_arena_calloc(cfg->arena, n + 1, sizeof(*removes));
  if (list == NULL || names == NULL || adds == NULL || removes == NULL) {
    cfg->oom = true;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char at[DG__CFG_PATH_MAX];
    child_raw_t raw;
    memset(&raw, 0, sizeof(raw));
    dg__cfg_path_index(at, path, i);
    dg__cfg_parse_object(cfg, json_array_get(v, i), at, child_fields, DG_ARRAY_SIZE(child_fields),
                         &raw);
    if (raw.list != NULL && ep->e.model != NULL)
      resolve_child_list(cfg, ep->e.model, &raw, at);
    if (raw.c.list != NULL && raw.remove_values != NULL)
      resolve_remove_values(cfg, &raw, at);
    raw.c.removable = raw.remove_endpoint != NULL || raw.remove_values != NULL;
    for (size_t j = 0; raw.c.list != NULL && j < i; j++) {
      if (list[j].list == raw.c.list)
        dg__cfg_error(cfg, at, "list '%s' is saved twice (also %s/%zu)", raw.c.list->name, path, j);
    }
    raw.c.path = dg_arena_strdup(cfg->arena, at);
    list[i] = raw.c;
    names[i] = raw.endpoint;
    adds[i] = raw.add_endpoint;
    removes[i] = raw.remove_endpoint;
  }
  ep->e.children = list;
  ep->e.nchildren = n;
  ep->child_names = names;
  ep->add_names = adds;
  ep->remove_names = removes;
}

/* ---- One endpoint ------------------------------------------------------------------ */

#define E(field) offsetof(dg__catalog_endpoint_t, field)
static const dg__cfg_field_t endpoint_fields[] = {
    {"id", DG__CFG_STRING, true, NULL, 0, 1, 64, NULL, E(e.id), 0, dg__cfg_check_guid},
    {"name", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, E(e.name), 0, NULL},
    {"description", DG__CFG_STRING, false, "", 0, 0, 4096, NULL, E(e.description), 0, NULL},
    {"dataModel", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, E(model), 0, NULL},
    {"connector", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, E(connector), 0, NULL},
    {"formSubmit", DG__CFG_BOOL, false, NULL, 1, 0, 0, NULL, E(e.form_submit), 0, NULL},
    {"save", DG__CFG_JSON, true, NULL, 0, 0, 0, NULL, E(save), 0, NULL},
    {"childConfigs", DG__CFG_JSON, false, NULL, 0, 0, 0, NULL, E(children), 0, NULL},
};
#undef E

static void resolve_names(dg__cfg_t *cfg, dg__catalog_endpoint_t *ep) {
  char at[DG__CFG_PATH_MAX];
  if (ep->model != NULL) {
    ep->e.model = dg__catalog_find_model(cfg->cat, ep->model);
    dg__cfg_path_key(at, ep->path, "dataModel");
    if (ep->e.model == NULL)
      dg__cfg_error(cfg, at, "unknown model '%s' (known: %s)", ep->model,
                    dg__catalog_model_names(cfg));
  }
  if (ep->connector != NULL) {
    ep->e.connector = dg_catalog_connector(cfg->cat, ep->connector);
    dg__cfg_path_key(at, ep->path, "connector");
    if (ep->e.connector == NULL)
      dg__cfg_error(cfg, at, "unknown connector '%s'", ep->connector);
  }
}

/* Execution order: the root, the pre-child actions (each inner save
 * followed by its own Get Session Values actions), then the post-child
 * ones. */
static void add_step(const dg_action_t **steps, size_t *n, const dg_action_t *a) {
  ((dg_action_t *)a)->step = *n;
  steps[(*n)++] = a;
  for (size_t i = 0;
       i < a->nactions && a->type == DG_ACTION_ENDPOINT_SAVE && a->phase != DG_PHASE_ROOT; i++)
    add_step(steps, n, &a->actions[i]);
}

static void lay_out(dg__cfg_t *cfg, dg__catalog_endpoint_t *ep) {
  const dg_action_t *root = ep->e.root;
  const dg_action_t **steps =
      dg_arena_calloc(cfg->arena, DG__CATALOG_MAX_ACTIONS + 1, sizeof(*steps));
  if (steps == NULL || root == NULL) {
    cfg->oom = cfg->oom || steps == NULL;
    return;
  }
  size_t n = 0;
  add_step(steps, &n, root);
  for (size_t i = 0; i < root->nactions; i++) {
    if (root->actions[i].phase == DG_PHASE_PRE_CHILD)
      add_step(steps, &n, &root->actions[i]);
  }
  ep->e.first_post = n;
  for (size_t i = 0; i < root->nactions; i++) {
    if (root->actions[i].phase == DG_PHASE_POST_CHILD)
      add_step(steps, &n, &root->actions[i]);
  }
  ep->e.steps = steps;
  ep->e.nsteps = n;
}

static void parse_endpoint(dg__cfg_t *cfg, const json_t *v, dg__catalog_endpoint_t *ep,
                           const char *path) {
  ep->path = dg_arena_strdup(cfg->arena, path);
  dg__cfg_parse_object(cfg, v, path, endpoint_fields, DG_ARRAY_SIZE(endpoint_fields), ep);
  if (ep->e.name == NULL)
    ep->e.name = "";
  resolve_names(cfg, ep);
  char at[DG__CFG_PATH_MAX];
  dg__cfg_path_key(at, path, "childConfigs");
  if (ep->children != NULL)
    parse_children(cfg, ep, at);
  dg__cfg_path_key(at, path, "save");
  if (ep->save != NULL && ep->e.model != NULL)
    dg__catalog_parse_save_tree(cfg, ep, ep->save, at);
  lay_out(cfg, ep);
  ep->broken = ep->e.model == NULL || ep->e.steps == NULL;
}

/* ---- Across endpoints ------------------------------------------------------------------- */

static void check_unique(dg__cfg_t *cfg, dg__catalog_endpoint_t *list, size_t n) {
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < i; j++) {
      const dg_endpoint_t *a = &list[i].e, *b = &list[j].e;
      char at[DG__CFG_PATH_MAX];
      if (a->id && b->id && strcasecmp(a->id, b->id) == 0) {
        dg__cfg_path_key(at, list[i].path, "id");
        dg__cfg_error(cfg, at, "duplicate endpoint id '%s' (same as %s)", a->id, list[j].path);
      }
      if (a->name[0] != '\0' && strcasecmp(a->name, b->name) == 0) {
        dg__cfg_path_key(at, list[i].path, "name");
        dg__cfg_error(cfg, at, "duplicate endpoint name '%s' (same as %s)", a->name, list[j].path);
      }
      if (a->form_submit && b->form_submit && a->model != NULL && a->model == b->model) {
        dg__cfg_path_key(at, list[i].path, "formSubmit");
        dg__cfg_error(cfg, at,
                      "'%s' already saves the forms of '%s' (%s); set formSubmit false on one",
                      b->name, a->model->name, list[j].path);
      }
    }
  }
}

static dg__catalog_endpoint_t *find_raw(dg__catalog_endpoint_t *list, size_t n, const char *name) {
  for (size_t i = 0; name != NULL && i < n; i++) {
    if (strcmp(list[i].e.name, name) == 0 || (list[i].e.id && strcasecmp(list[i].e.id, name) == 0))
      return &list[i];
  }
  return NULL;
}

/* The endpoint named at key of a child configuration, which must save
 * the list's model; NULL (reported) otherwise. */
static const dg_endpoint_t *child_endpoint(dg__cfg_t *cfg, dg__catalog_endpoint_t *list, size_t n,
                                           const dg_child_config_t *c, const char *key,
                                           const char *name) {
  char at[DG__CFG_PATH_MAX];
  dg__cfg_path_key(at, c->path, key);
  dg__catalog_endpoint_t *child = find_raw(list, n, name);
  if (child == NULL) {
    dg__cfg_error(cfg, at, "unknown endpoint '%s'", name ? name : "");
    return NULL;
  }
  /* Without its list (already reported) the child cannot be checked. */
  const dg_model_t *want = c->list ? c->list->reference->target : NULL;
  if (want != NULL && child->e.model != NULL && child->e.model != want) {
    dg__cfg_error(cfg, at, "endpoint '%s' saves '%s', but list '%s' holds '%s'", child->e.name,
                  child->e.model->name, c->list->name, want->name);
    return NULL;
  }
  return c->list != NULL ? &child->e : NULL;
}

static void resolve_child(dg__cfg_t *cfg, dg__catalog_endpoint_t *list, size_t n,
                          dg__catalog_endpoint_t *ep, size_t i) {
  dg_child_config_t *c = (dg_child_config_t *)&ep->e.children[i];
  c->endpoint = child_endpoint(cfg, list, n, c, "endpoint", ep->child_names[i]);
  if (ep->add_names[i] != NULL)
    c->add_endpoint = child_endpoint(cfg, list, n, c, "addEndpoint", ep->add_names[i]);
  if (ep->remove_names[i] != NULL)
    c->remove_endpoint = child_endpoint(cfg, list, n, c, "removeEndpoint", ep->remove_names[i]);
}

/* Depth-first: an endpoint reached again on its own path is a cycle. */
static bool check_cycles(dg__cfg_t *cfg, const dg_endpoint_t *e, const dg_endpoint_t **path,
                         size_t depth) {
  for (size_t i = 0; i < depth; i++) {
    if (path[i] == e)
      return false;
  }
  if (depth == DG__CATALOG_MAX_DEPTH)
    return false;
  path[depth] = e;
  for (size_t i = 0; i < e->nchildren; i++) {
    const dg_endpoint_t *each[] = {e->children[i].endpoint, e->children[i].add_endpoint,
                                   e->children[i].remove_endpoint};
    for (size_t k = 0; k < DG_ARRAY_SIZE(each); k++) {
      if (each[k] != NULL && !check_cycles(cfg, each[k], path, depth + 1))
        return false;
    }
  }
  return true;
}

static void resolve_all(dg__cfg_t *cfg, dg__catalog_endpoint_t *list, size_t n) {
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < list[i].e.nchildren; j++)
      resolve_child(cfg, list, n, &list[i], j);
  }
  for (size_t i = 0; i < n; i++) {
    const dg_endpoint_t *path[DG__CATALOG_MAX_DEPTH + 1];
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_key(at, list[i].path, "childConfigs");
    if (!check_cycles(cfg, &list[i].e, path, 0)) {
      dg__cfg_error(cfg, at,
                    "child configurations of '%s' lead back to an endpoint already being saved, "
                    "or nest deeper than %d endpoints",
                    list[i].e.name, DG__CATALOG_MAX_DEPTH);
    }
  }
}

static void parse_endpoint_list(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_catalog_t *cat = obj;
  if (v == NULL)
    return;
  size_t n = json_array_size(v);
  if (!json_is_array(v) || n > MAX_ENDPOINTS) {
    dg__cfg_error(cfg, path, "must be an array of at most %d endpoints", MAX_ENDPOINTS);
    return;
  }
  dg__catalog_endpoint_t *list = dg_arena_calloc(cfg->arena, n ? n : 1, sizeof(*list));
  dg_endpoint_t *out = dg_arena_calloc(cfg->arena, n ? n : 1, sizeof(*out));
  if (list == NULL || out == NULL) {
    cfg->oom = true;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_index(at, path, i);
    parse_endpoint(cfg, json_array_get(v, i), &list[i], at);
    list[i].e.index = i;
  }
  check_unique(cfg, list, n);
  resolve_all(cfg, list, n);
  dg__catalog_check_endpoint_scopes(cfg, list, n);
  /* The public array, with child configurations pointing into it. */
  for (size_t i = 0; i < n; i++)
    out[i] = list[i].e;
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < out[i].nchildren; j++) {
      dg_child_config_t *c = (dg_child_config_t *)&out[i].children[j];
      if (c->endpoint != NULL)
        c->endpoint = &out[c->endpoint->index];
      if (c->add_endpoint != NULL)
        c->add_endpoint = &out[c->add_endpoint->index];
      if (c->remove_endpoint != NULL)
        c->remove_endpoint = &out[c->remove_endpoint->index];
    }
  }
  cat->endpoints = out;
  cat->nendpoints = n;
}

static const dg__cfg_field_t file_fields[] = {
    {"endpoints", DG__CFG_CUSTOM, true, NULL, 0, 0, 0, NULL, 0, 0, parse_endpoint_list},
};

void dg__catalog_parse_endpoints(dg__cfg_t *cfg, const json_t *root) {
  dg__cfg_parse_object(cfg, root, "", file_fields, DG_ARRAY_SIZE(file_fields), cfg->cat);
}

/* ---- Lookups -------------------------------------------------------------------------- */

const dg_endpoint_t *dg_catalog_endpoint(const dg_catalog_t *cat, const char *id_or_name) {
  return dg__catalog_find_id_or_name(cat->endpoints, cat->nendpoints, sizeof(dg_endpoint_t),
                                     offsetof(dg_endpoint_t, id), offsetof(dg_endpoint_t, name),
                                     id_or_name);
}

const dg_endpoint_t *dg_catalog_form_endpoint(const dg_catalog_t *cat, const dg_model_t *model) {
  for (size_t i = 0; model != NULL && i < cat->nendpoints; i++) {
    const dg_endpoint_t *e = &cat->endpoints[i];
    if (e->form_submit && e->model == model)
      return e;
  }
  return NULL;
}
