/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The query argument parser: queryParameterGroups, sortCondition, paging
 * and countOnly of query_entities into a checked dg_store_query_t.
 * (properties and expand are in parse_select.c.) Every name is resolved
 * against the catalog and what the caller may see; every message names
 * the argument path, what was given and what is allowed. */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "store/internal.h"

#define NAMES_MAX 640

static const char *const value_types[] = {"boolean", "string", "number", "null"};
typedef enum value_type { VT_NONE = -1, VT_BOOLEAN, VT_STRING, VT_NUMBER, VT_NULL } value_type_t;

static const char *const param_fields[] = {"operator",  "propertyName", "value",
                                           "valueType", "reference",    "comparisonPropertyName",
                                           "match"};
static const char *const group_fields[] = {"andOrOperator", "parameters"};

/* ---- Small readers ------------------------------------------------------------------ */

int dg__store_check_fields(const dg_store_parse_t *ps, const json_t *obj, const char *base,
                           const char *const *fields, size_t n, const char *allowed) {
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)obj, key, v) {
    bool known = false;
    for (size_t i = 0; i < n && !known; i++)
      known = strcmp(key, fields[i]) == 0;
    dg__path_t p;
    if (!known)
      return dg__store_invalid(ps->err, dg__path_key(&p, base, key),
                               "unknown field; allowed fields here: %s.", allowed);
  }
  return 0;
}

int dg__store_name_field(const dg_store_parse_t *ps, const json_t *obj, const char *key,
                         const char *base, const char **out) {
  const json_t *v = json_object_get(obj, key);
  *out = NULL;
  if (v == NULL || json_is_null(v))
    return 0;
  size_t len = json_string_length(v);
  dg__path_t p;
  if (!json_is_string(v) || len == 0 || len > 128)
    return dg__store_got(ps, v, dg__path_key(&p, base, key), "a name of 1 to 128 characters");
  *out = json_string_value(v);
  return 0;
}

int dg__store_need_name(const dg_store_parse_t *ps, const json_t *obj, const char *key,
                        const char *base, const char *what, const char **out) {
  int rc = dg__store_name_field(ps, obj, key, base, out);
  dg__path_t p;
  if (rc == 0 && *out == NULL)
    return dg__store_invalid(ps->err, dg__path_key(&p, base, key), "missing; give %s.", what);
  return rc;
}

/* A whole number member in [min, max], def when absent or null. */
static int int_field(const dg_store_parse_t *ps, const json_t *obj, const char *key,
                     const char *base, int64_t min, int64_t max, int64_t def, int64_t *out) {
  const json_t *v = json_object_get(obj, key);
  *out = def;
  if (v == NULL || json_is_null(v))
    return 0;
  double d = json_is_number(v) ? json_number_value(v) : 0;
  bool whole_real = json_is_real(v) && d >= -9.2e18 && d <= 9.2e18 && floor(d) == d;
  if (json_is_integer(v) || whole_real) {
    *out = json_is_integer(v) ? json_integer_value(v) : (int64_t)d;
    if (*out >= min && *out <= max)
      return 0;
  }
  char shown[160];
  dg__path_t p;
  dg__store_show(shown, sizeof(shown), v);
  return dg__store_invalid(ps->err, dg__path_key(&p, base, key),
                           "got %s; allowed: a whole number from %lld to %lld (default %lld).",
                           shown, (long long)min, (long long)max, (long long)def);
}

int dg__store_got(const dg_store_parse_t *ps, const json_t *v, const char *param,
                  const char *allowed) {
  char shown[160];
  dg__store_show(shown, sizeof(shown), v);
  return dg__store_invalid(ps->err, param, "got %s; allowed: %s.", shown, allowed);
}

int dg__store_oom(const dg_store_parse_t *ps, const char *param) {
  return dg_errctx_set(ps->err, DG_ENOMEM, param, "Out of memory.");
}

static int object_or_null(const dg_store_parse_t *ps, const json_t *v, const char *param,
                          const char *allowed) {
  if (v == NULL || json_is_null(v) || json_is_object(v))
    return 0;
  return dg__store_got(ps, v, param, allowed);
}

/* ---- Names ------------------------------------------------------------------------------- */

bool dg_store_can_filter(const dg_property_t *prop) {
  return prop->filterable && dg__store_is_stored(prop);
}

static int unknown_property(const dg_store_parse_t *ps, const dg_model_t *m, const char *param,
                            const char *name, bool (*keep)(const dg_property_t *), bool with_id,
                            const char *what) {
  char names[NAMES_MAX];
  dg__store_names(names, sizeof(names), ps->principal, m, keep, with_id);
  return dg__store_invalid(ps->err, param,
                           "%s has no property '%.64s' that you can %s; valid names: %s.", m->name,
                           name, what, names);
}

/* The property a filter compares (NULL with *is_id for the id). */
static int filter_property(const dg_store_parse_t *ps, const dg_model_t *m, const char *name,
                           const char *param, const dg_property_t **out, bool *is_id) {
  const dg_property_t *prop = dg__store_visible(ps->principal, m, name, true, is_id);
  *out = prop;
  if (*is_id)
    return 0;
  if (prop == NULL)
    return unknown_property(ps, m, param, name, dg_store_can_filter, true, "filter on");
  char names[NAMES_MAX];
  if (dg__store_is_inbound(prop)) {
    dg__store_names(names, sizeof(names), ps->principal, prop->reference->target,
                    dg_store_can_filter, true);
    return dg__store_invalid(
        ps->err, param,
        "'%s' is an Inbound reference (a collection of %s); to filter on the related entities "
        "set reference to '%s' and propertyName to one of their properties: %s.",
        prop->name, prop->reference->target->name, prop->name, names);
  }
  if (!prop->filterable) {
    dg__store_names(names, sizeof(names), ps->principal, m, dg_store_can_filter, true);
    return dg__store_invalid(ps->err, param,
                             "'%s' cannot be used in filters; filterable properties of %s: %s.",
                             prop->name, m->name, names);
  }
  return 0;
}

/* The model a filter's reference leads to, which the caller must read. */
static int filter_reference(const dg_store_parse_t *ps, const dg_model_t *model, const char *name,
                            const char *param, const dg_property_t **out) {
  return dg__store_followed_reference(ps->principal, model, name, param, DG__STORE_REF_FILTER, out,
                                      ps->err);
}

/* ---- One filter parameter ------------------------------------------------------------------ */

typedef struct param_in {
  const dg_store_parse_t *ps;
  const json_t *obj;
  const char *path;
  const dg_model_t *model; /* the model propertyName belongs to */
  dg_data_type_t type;     /* of propertyName (Guid for the id) */
} param_in_t;

static int parse_operator(param_in_t *in, dg_store_filter_t *f) {
  const char *name = NULL;
  dg__path_t p;
  const char *param = dg__path_key(&p, in->path, "operator");
  int rc = dg__store_need_name(in->ps, in->obj, "operator", in->path, "an operator such as EqualTo",
                               &name);
  if (rc != 0)
    return rc;
  bool known = dg_store_op_parse(name, &f->op);
  if (known && dg_store_op_allowed(f->op, in->type))
    return 0;
  /* The operators allowed, listed only for the error. */
  char ops[NAMES_MAX];
  size_t len = 0;
  ops[0] = '\0';
  for (int i = 0; i < DG_STORE_OP__COUNT; i++) {
    if (dg_store_op_allowed((dg_store_op_t)i, in->type))
      len += (size_t)snprintf(ops + len, sizeof(ops) - len, "%s%s", len ? ", " : "",
                              dg_store_op_name((dg_store_op_t)i));
  }
  if (!known)
    return dg__store_invalid(in->ps->err, param, "got \"%.64s\"; allowed for %s: %s.", name,
                             dg_data_type_name(in->type), ops);
  return dg__store_invalid(in->ps->err, param,
                           "%s cannot compare '%s', which is %s; allowed for %s: %s.", name,
                           f->prop ? f->prop->name : "id", dg_data_type_name(in->type),
                           dg_data_type_name(in->type), ops);
}

/* Types that compare with each other: numbers with numbers, GUIDs with
 * GUIDs (a Reference's value is a GUID), and otherwise the same type. */
static int type_family(dg_data_type_t t) {
  if (dg_data_type_is_numeric(t))
    return DG_TYPE_DOUBLE;
  if (t == DG_TYPE_REFERENCE)
    return DG_TYPE_GUID;
  return t;
}

static int parse_comparison(param_in_t *in, const char *name, dg_store_filter_t *f) {
  dg__path_t p;
  const char *param = dg__path_key(&p, in->path, "comparisonPropertyName");
  const json_t *value = json_object_get(in->obj, "value");
  if (value != NULL && !json_is_null(value)) {
    dg__path_t pv;
    return dg__store_invalid(in->ps->err, dg__path_key(&pv, in->path, "value"),
                             "leave value (and valueType) out when comparisonPropertyName is set.");
  }
  bool is_id = false;
  f->compare_property = true;
  int rc = filter_property(in->ps, in->model, name, param, &f->other, &is_id);
  if (rc != 0)
    return rc;
  dg_data_type_t other = is_id ? DG_TYPE_GUID : f->other->type;
  if (type_family(other) != type_family(in->type))
    return dg__store_invalid(in->ps->err, param,
                             "'%s' is %s and cannot be compared with '%s', which is %s; compare "
                             "properties of the same kind (numbers with numbers).",
                             is_id ? "id" : f->other->name, dg_data_type_name(other),
                             f->prop ? f->prop->name : "id", dg_data_type_name(in->type));
  return 0;
}

static int parse_value_type(param_in_t *in, value_type_t *out) {
  const char *name = NULL;
  dg__path_t p;
  int rc = dg__store_name_field(in->ps, in->obj, "valueType", in->path, &name);
  *out = VT_NONE;
  for (size_t i = 0; rc == 0 && name != NULL && i < DG_ARRAY_SIZE(value_types); i++) {
    if (strcmp(name, value_types[i]) == 0)
      *out = (value_type_t)i;
  }
  if (rc == 0 && name != NULL && *out == VT_NONE)
    return dg__store_invalid(in->ps->err, dg__path_key(&p, in->path, "valueType"),
                             "got \"%.64s\"; allowed: boolean, string, number or null.", name);
  return rc;
}

static bool is_null_text(const json_t *v) {
  return json_is_string(v) && strcasecmp(json_string_value(v), "null") == 0;
}

/* valueType says how the value is written; it must suit the property. */
static int check_value_type(param_in_t *in, value_type_t vt) {
  bool ok = vt == VT_NONE || vt == VT_STRING || vt == VT_NULL ||
            (vt == VT_BOOLEAN && in->type == DG_TYPE_BOOLEAN) ||
            (vt == VT_NUMBER && dg_data_type_is_numeric(in->type));
  if (ok)
    return 0;
  dg__path_t p;
  const char *fits = in->type == DG_TYPE_BOOLEAN         ? "boolean, string or null"
                     : dg_data_type_is_numeric(in->type) ? "number, string or null"
                                                         : "string or null";
  return dg__store_invalid(in->ps->err, dg__path_key(&p, in->path, "valueType"),
                           "got \"%s\" but the property is %s; allowed valueType for %s: %s.",
                           value_types[vt], dg_data_type_name(in->type),
                           dg_data_type_name(in->type), fits);
}

static int null_test(param_in_t *in, dg_store_filter_t *f) {
  f->value.kind = DG_STORE_NULL;
  if (f->op == DG_STORE_OP_EQ || f->op == DG_STORE_OP_NE)
    return 0;
  dg__path_t p;
  return dg__store_invalid(in->ps->err, dg__path_key(&p, in->path, "operator"),
                           "got %s with a null value; allowed: EqualTo (is null) or NotEqualTo "
                           "(is not null).",
                           dg_store_op_name(f->op));
}

static int parse_value(param_in_t *in, dg_store_filter_t *f) {
  value_type_t vt = VT_NONE;
  const json_t *value = json_object_get(in->obj, "value");
  dg__path_t p;
  const char *param = dg__path_key(&p, in->path, "value");
  int rc = parse_value_type(in, &vt);
  if (rc == 0)
    rc = check_value_type(in, vt);
  if (rc != 0)
    return rc;
  if (value == NULL)
    return dg__store_invalid(in->ps->err, param,
                             "missing; give a value (with valueType), the string \"null\" with "
                             "valueType null, or comparisonPropertyName.");
  if (json_is_string(value) && json_string_length(value) > DG_STORE_VALUE_MAX)
    return dg__store_invalid(in->ps->err, param, "is %zu bytes long; allowed: at most %d bytes.",
                             json_string_length(value), DG_STORE_VALUE_MAX);
  /* The string "null" tests for null with valueType null, and also where
   * no other reading is possible (any type but String). */
  bool null_word = is_null_text(value) && (vt == VT_NULL || in->type != DG_TYPE_STRING);
  if (vt == VT_NULL && !null_word && !json_is_null(value))
    return dg__store_invalid(in->ps->err, param,
                             "with valueType null the value must be the string \"null\".");
  if (null_word || json_is_null(value))
    return null_test(in, f);
  return dg_store_value_parse(f->prop, value, param, in->ps->arena, &f->value, in->ps->err);
}

static int parse_reference_part(param_in_t *in, const dg_model_t *base, dg_store_filter_t *f) {
  const char *name = NULL;
  dg__path_t p;
  int rc = dg__store_name_field(in->ps, in->obj, "reference", in->path, &name);
  const json_t *match = json_object_get(in->obj, "match");
  if (rc == 0 && match != NULL && !json_is_null(match) &&
      !(json_is_string(match) && strcmp(json_string_value(match), "Any") == 0)) {
    char shown[160];
    dg__store_show(shown, sizeof(shown), match);
    return dg__store_invalid(in->ps->err, dg__path_key(&p, in->path, "match"),
                             "got %s; allowed: Any (at least one related entity matches).", shown);
  }
  in->model = base;
  if (rc != 0 || name == NULL)
    return rc;
  rc = filter_reference(in->ps, base, name, dg__path_key(&p, in->path, "reference"), &f->reference);
  if (rc == 0)
    in->model = f->reference->reference->target;
  return rc;
}

static int parse_param(const dg_store_parse_t *ps, const dg_model_t *base, const json_t *obj,
                       const char *path, dg_store_filter_t *f) {
  param_in_t in = {.ps = ps, .obj = obj, .path = path};
  memset(f, 0, sizeof(*f));
  if (!json_is_object(obj))
    return dg__store_got(ps, obj, path,
                         "an object with operator, propertyName and value (or "
                         "comparisonPropertyName)");
  int rc =
      dg__store_check_fields(ps, obj, path, param_fields, DG_ARRAY_SIZE(param_fields),
                             "operator, propertyName, value, valueType, comparisonPropertyName, "
                             "reference, match");
  if (rc == 0)
    rc = parse_reference_part(&in, base, f);
  const char *name = NULL, *other = NULL;
  bool is_id = false;
  dg__path_t p;
  if (rc == 0)
    rc = dg__store_need_name(ps, obj, "propertyName", path, "the name of the property to compare",
                             &name);
  if (rc == 0)
    rc = filter_property(ps, in.model, name, dg__path_key(&p, path, "propertyName"), &f->prop,
                         &is_id);
  f->model = in.model;
  in.type = f->prop ? f->prop->type : DG_TYPE_GUID;
  if (rc == 0)
    rc = parse_operator(&in, f);
  if (rc == 0)
    rc = dg__store_name_field(ps, obj, "comparisonPropertyName", path, &other);
  if (rc == 0)
    rc = other != NULL ? parse_comparison(&in, other, f) : parse_value(&in, f);
  return rc;
}

/* ---- Groups ------------------------------------------------------------------------------ */

static int parse_group(const dg_store_parse_t *ps, const dg_model_t *model, const json_t *obj,
                       const char *path, dg_store_group_t *g) {
  char shown[160];
  dg__path_t p;
  if (!json_is_object(obj))
    return dg__store_got(ps, obj, path,
                         "an object with andOrOperator (And or Or) and parameters (an array of "
                         "filters)");
  int rc = dg__store_check_fields(ps, obj, path, group_fields, DG_ARRAY_SIZE(group_fields),
                                  "andOrOperator, parameters");
  const char *op = NULL;
  if (rc == 0)
    rc = dg__store_name_field(ps, obj, "andOrOperator", path, &op);
  if (rc == 0 && op != NULL && strcmp(op, "And") != 0 && strcmp(op, "Or") != 0)
    return dg__store_invalid(ps->err, dg__path_key(&p, path, "andOrOperator"),
                             "got \"%.64s\"; allowed: And or Or (default And).", op);
  g->any = op != NULL && strcmp(op, "Or") == 0;
  const json_t *params = json_object_get(obj, "parameters");
  const char *ppath = dg__path_key(&p, path, "parameters");
  if (rc != 0 || params == NULL || json_is_null(params))
    return rc;
  if (!json_is_array(params) || json_array_size(params) > DG_STORE_PARAMETERS_MAX) {
    dg__store_show(shown, sizeof(shown), params);
    return dg__store_invalid(ps->err, ppath, "got %s; allowed: an array of at most %d filters.",
                             shown, DG_STORE_PARAMETERS_MAX);
  }
  g->nfilters = json_array_size(params);
  g->filters = dg_arena_calloc(ps->arena, g->nfilters + 1, sizeof(*g->filters));
  if (g->filters == NULL)
    return dg__store_oom(ps, path);
  dg__path_t ip;
  char base[sizeof(p.s)];
  dg_strlcpy(base, ppath, sizeof(base));
  for (size_t i = 0; rc == 0 && i < g->nfilters; i++)
    rc = parse_param(ps, model, json_array_get(params, i), dg__path_index(&ip, base, i),
                     &g->filters[i]);
  return rc;
}

int dg_store_parse_filters(const dg_store_parse_t *ps, const dg_model_t *model,
                           const json_t *groups, const char *param, dg_store_filters_t *out) {
  memset(out, 0, sizeof(*out));
  if (groups == NULL || json_is_null(groups))
    return 0;
  if (!json_is_array(groups) || json_array_size(groups) > DG_STORE_GROUPS_MAX) {
    char shown[160];
    dg__store_show(shown, sizeof(shown), groups);
    return dg__store_invalid(ps->err, param,
                             "got %s; allowed: an array of at most %d groups, each {andOrOperator, "
                             "parameters}.",
                             shown, DG_STORE_GROUPS_MAX);
  }
  out->ngroups = json_array_size(groups);
  out->groups = dg_arena_calloc(ps->arena, out->ngroups + 1, sizeof(*out->groups));
  if (out->groups == NULL)
    return dg__store_oom(ps, param);
  int rc = 0;
  dg__path_t p;
  for (size_t i = 0; rc == 0 && i < out->ngroups; i++)
    rc = parse_group(ps, model, json_array_get(groups, i), dg__path_index(&p, param, i),
                     &out->groups[i]);
  return rc;
}

/* ---- Sort, paging, countOnly ------------------------------------------------------------- */

bool dg_store_can_sort(const dg_property_t *prop) {
  return prop->sortable && dg__store_is_stored(prop);
}

static int parse_sort(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *obj,
                      dg_store_query_t *q) {
  static const char *const fields[] = {"propertyName", "sortOrder"};
  const char *name = NULL, *order = NULL;
  bool is_id = false;
  dg__path_t p;
  int rc = object_or_null(ps, obj, "sortCondition", "an object {propertyName, sortOrder}");
  if (rc != 0 || obj == NULL || json_is_null(obj))
    return rc;
  rc = dg__store_check_fields(ps, obj, "sortCondition", fields, 2, "propertyName, sortOrder");
  if (rc == 0)
    rc = dg__store_need_name(ps, obj, "propertyName", "sortCondition", "the property to sort by",
                             &name);
  if (rc == 0)
    rc = dg__store_name_field(ps, obj, "sortOrder", "sortCondition", &order);
  if (rc != 0)
    return rc;
  if (order != NULL && strcmp(order, "Ascending") != 0 && strcmp(order, "Descending") != 0)
    return dg__store_invalid(ps->err, "sortCondition.sortOrder",
                             "got \"%.64s\"; allowed: Ascending or Descending (default "
                             "Ascending).",
                             order);
  const dg_property_t *prop = dg__store_visible(ps->principal, m, name, true, &is_id);
  if (!is_id && (prop == NULL || !dg_store_can_sort(prop))) {
    char names[NAMES_MAX];
    dg__store_names(names, sizeof(names), ps->principal, m, dg_store_can_sort, true);
    if (prop != NULL)
      return dg__store_invalid(ps->err, dg__path_key(&p, "sortCondition", "propertyName"),
                               "'%s' cannot be sorted by; sortable properties of %s: %s.",
                               prop->name, m->name, names);
    return dg__store_invalid(ps->err, dg__path_key(&p, "sortCondition", "propertyName"),
                             "%s has no property '%.64s' that you can sort by; sortable "
                             "properties: %s.",
                             m->name, name, names);
  }
  q->has_sort = true;
  q->sort.prop = prop;
  q->sort.descending = order != NULL && strcmp(order, "Descending") == 0;
  return 0;
}

static int parse_paging(const dg_store_parse_t *ps, const json_t *obj, dg_store_query_t *q) {
  static const char *const fields[] = {"pageNumber", "pageSize"};
  q->page_number = 1;
  q->page_size = DG_STORE_PAGE_SIZE_DEFAULT;
  int rc = object_or_null(ps, obj, "paging", "an object {pageNumber, pageSize}");
  if (rc != 0 || obj == NULL || json_is_null(obj))
    return rc;
  rc = dg__store_check_fields(ps, obj, "paging", fields, 2, "pageNumber, pageSize");
  if (rc == 0)
    rc =
        int_field(ps, obj, "pageNumber", "paging", 1, DG_STORE_PAGE_NUMBER_MAX, 1, &q->page_number);
  if (rc == 0)
    rc = int_field(ps, obj, "pageSize", "paging", 1, DG_STORE_PAGE_SIZE_MAX,
                   DG_STORE_PAGE_SIZE_DEFAULT, &q->page_size);
  return rc;
}

static int parse_count_only(const dg_store_parse_t *ps, const json_t *v, dg_store_query_t *q) {
  q->count_only = json_is_true(v);
  if (v == NULL || json_is_null(v) || json_is_boolean(v))
    return 0;
  char shown[160];
  dg__store_show(shown, sizeof(shown), v);
  return dg__store_invalid(ps->err, "countOnly", "got %s; allowed: true or false (default false).",
                           shown);
}

int dg_store_parse_query(const dg_store_parse_t *ps, const dg_model_t *model, const json_t *args,
                         dg_store_query_t *out) {
  memset(out, 0, sizeof(*out));
  out->model = model;
  int rc = dg_store_parse_filters(ps, model, json_object_get(args, "queryParameterGroups"),
                                  "queryParameterGroups", &out->filters);
  if (rc == 0)
    rc = parse_sort(ps, model, json_object_get(args, "sortCondition"), out);
  if (rc == 0)
    rc = parse_paging(ps, json_object_get(args, "paging"), out);
  if (rc == 0)
    rc = parse_count_only(ps, json_object_get(args, "countOnly"), out);
  if (rc == 0)
    rc = dg__store_parse_shape(ps, model, args, &out->select, &out->expand, &out->nexpand);
  return rc;
}
