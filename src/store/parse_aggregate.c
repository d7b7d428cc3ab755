/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The aggregate_entities argument parser: aggregations (function,
 * propertyName, alias, joinFilter), groupBy, and queryParameterGroups
 * exactly as query_entities reads them, into a checked
 * dg_store_aggregate_t. Every name is resolved against the catalog and
 * what the caller may see; every message names the argument path, what
 * was given and what is allowed. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "store/internal.h"

#define NAMES_MAX 640
#define NAME_MAX_CHARS 128

static const char *const agg_names[] = {
#define XX(name, text) text,
    DG_STORE_AGG_MAP(XX)
#undef XX
};

static const char *const clause_fields[] = {"function", "propertyName", "alias", "joinFilter",
                                            "reference"};
static const char *const join_fields[] = {"reference", "entity", "on", "condition"};
static const char *const on_fields[] = {"localProperty", "foreignProperty"};
static const char *const condition_fields[] = {"localProperty", "operator", "foreignProperty",
                                               "value"};
static const char *const key_fields[] = {"propertyName", "reference"};

const char *dg_store_agg_name(dg_store_agg_fn_t fn) {
  return (unsigned)fn < DG_STORE_AGG__COUNT ? agg_names[fn] : "Unknown";
}

/* ---- Small readers ------------------------------------------------------------------ */

/* obj must be an object whose keys are all among fields. */
static int check_object(const dg_store_parse_t *ps, const json_t *obj, const char *path,
                        const char *const *fields, size_t n, const char *allowed) {
  if (!json_is_object(obj))
    return dg__store_got(ps, obj, path, allowed);
  return dg__store_check_fields(ps, obj, path, fields, n, allowed);
}

/* The names of model's properties p may see that pass keep. */
static const char *names_of(const dg_store_parse_t *ps, const dg_model_t *m,
                            bool (*keep)(const dg_property_t *), bool with_id, char *out,
                            size_t size) {
  dg__store_names(out, size, ps->principal, m, keep, with_id);
  return out;
}

/* ---- Property kinds ------------------------------------------------------------------ */

static bool is_stored(const dg_property_t *prop) {
  return dg__store_is_stored(prop);
}

static bool is_numeric(const dg_property_t *prop) {
  return dg_data_type_is_numeric(prop->type);
}

static bool is_ordered(const dg_property_t *prop) {
  return is_numeric(prop) || prop->type == DG_TYPE_DATE || prop->type == DG_TYPE_DATETIME;
}

static bool is_key(const dg_property_t *prop) {
  return prop->type == DG_TYPE_GUID || (prop->type == DG_TYPE_REFERENCE && is_stored(prop));
}

static bool is_reference(const dg_property_t *prop) {
  return prop->reference != NULL && prop->reference->target != NULL;
}

static bool (*const fits[])(const dg_property_t *) = {
    [DG_STORE_AGG_SUM] = is_numeric,  [DG_STORE_AGG_AVERAGE] = is_numeric,
    [DG_STORE_AGG_COUNT] = is_stored, [DG_STORE_AGG_MIN] = is_ordered,
    [DG_STORE_AGG_MAX] = is_ordered,  [DG_STORE_AGG_DISTINCT_COUNT] = is_stored,
};

bool dg_store_agg_fits(dg_store_agg_fn_t fn, const dg_property_t *prop) {
  return (unsigned)fn < DG_STORE_AGG__COUNT && fn != DG_STORE_AGG_COUNT && fits[fn](prop);
}

bool dg_store_can_group(const dg_property_t *prop) {
  return is_stored(prop);
}

static const char *const fits_text[] = {
    [DG_STORE_AGG_SUM] = "a numeric property (Int, Long, Double or Decimal)",
    [DG_STORE_AGG_AVERAGE] = "a numeric property (Int, Long, Double or Decimal)",
    [DG_STORE_AGG_COUNT] = "no property",
    [DG_STORE_AGG_MIN] = "a numeric (Int, Long, Double, Decimal), Date or DateTime property",
    [DG_STORE_AGG_MAX] = "a numeric (Int, Long, Double, Decimal), Date or DateTime property",
    [DG_STORE_AGG_DISTINCT_COUNT] = "a property that holds a value (not an Inbound reference)",
};

/* ---- References ------------------------------------------------------------------------ */

/* A Reference property of m, visible, whose target model p may read. */
static int readable_reference(const dg_store_parse_t *ps, const dg_model_t *m, const char *name,
                              const char *param, const char *use, const dg_property_t **out) {
  const dg_property_t *ref = dg__store_visible(ps->principal, m, name, false, NULL);
  char names[NAMES_MAX];
  *out = NULL;
  if (ref == NULL || ref->reference == NULL)
    return dg__store_invalid(ps->err, param,
                             "%s has no Reference property '%.64s' that you can see; Reference "
                             "properties: %s.",
                             m->name, name, names_of(ps, m, is_reference, false, names, NAMES_MAX));
  if (ref->reference->target == NULL)
    return dg__store_invalid(ps->err, param,
                             "'%s' points at %s entities, which have no Data Model to %s.",
                             ref->name, ref->reference->target_entity_type, use);
  if (!dg_auth_can_read_model(ps->principal, ref->reference->target))
    return dg__store_invalid(ps->err, param,
                             "you may not read the entities that '%s' refers to, so you cannot %s "
                             "them.",
                             ref->name, use);
  *out = ref;
  return 0;
}

/* Aggregating a related collection (a parent's child values) is refused
 * whichever way it is asked for. */
static int related_refused(const dg_store_parse_t *ps, const dg_model_t *m,
                           const dg_property_t *ref, const char *param) {
  const dg_model_t *t = ref->reference->target;
  if (dg__store_is_inbound(ref) && t != NULL && dg_auth_can_read_model(ps->principal, t))
    return dg__store_invalid(
        ps->err, param,
        "'%s' is an Inbound reference (a collection of %s); aggregation over a related "
        "collection (summing a parent's child values) is not supported. Call aggregate_entities "
        "on the %s Data Model (dataModelId %s) instead, filtered or grouped by its reference "
        "'%s'.",
        ref->name, t->name, t->name, t->id, ref->reference->inverse_property);
  if (dg__store_is_inbound(ref))
    return dg__store_invalid(ps->err, param,
                             "'%s' is an Inbound reference (a collection of related entities); "
                             "aggregation over a related collection (summing a parent's child "
                             "values) is not supported.",
                             ref->name);
  return dg__store_invalid(ps->err, param,
                           "aggregations use the properties of %s itself; to aggregate values of "
                           "the entities that '%s' refers to, call aggregate_entities on their "
                           "Data Model.",
                           m->name, ref->name);
}

/* ---- One aggregation ------------------------------------------------------------------- */

static int parse_function(const dg_store_parse_t *ps, const json_t *obj, const char *path,
                          dg_store_agg_fn_t *out) {
  const char *name = NULL;
  dg__path_t p;
  int rc = dg__store_need_name(ps, obj, "function", path,
                               "one of Sum, Average, Count, Min, Max, "
                               "DistinctCount",
                               &name);
  for (int i = 0; rc == 0 && i < DG_STORE_AGG__COUNT; i++) {
    if (strcmp(name, agg_names[i]) == 0) {
      *out = (dg_store_agg_fn_t)i;
      return 0;
    }
  }
  if (rc != 0)
    return rc;
  return dg__store_invalid(ps->err, dg__path_key(&p, path, "function"),
                           "got \"%.64s\"; allowed: Sum, Average, Count, Min, Max, DistinctCount.",
                           name);
}

/* propertyName "OrderLines.Quantity" or an Inbound reference: a related
 * collection. NULL when name is not of that kind. */
static const dg_property_t *related_of(const dg_store_parse_t *ps, const dg_model_t *m,
                                       const char *name) {
  const char *dot = strchr(name, '.');
  char head[NAME_MAX_CHARS + 1];
  if (dot == NULL)
    dg_strlcpy(head, name, sizeof(head));
  else
    snprintf(head, sizeof(head), "%.*s", (int)(dot - name), name);
  const dg_property_t *prop = dg__store_visible(ps->principal, m, head, false, NULL);
  bool related = prop != NULL && prop->reference != NULL && (dot != NULL || !is_stored(prop));
  return related ? prop : NULL;
}

static int measured_property(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *obj,
                             const char *path, dg_store_aggregation_t *g) {
  const char *name = NULL, *fn = agg_names[g->fn];
  dg__path_t p;
  const char *param = dg__path_key(&p, path, "propertyName");
  char names[NAMES_MAX];
  int rc = dg__store_need_name(ps, obj, "propertyName", path, "the property to aggregate", &name);
  if (rc != 0)
    return rc;
  const dg_property_t *related = related_of(ps, m, name);
  if (related != NULL)
    return related_refused(ps, m, related, param);
  g->prop = dg__store_visible(ps->principal, m, name, false, NULL);
  names_of(ps, m, fits[g->fn], false, names, sizeof(names));
  if (g->prop == NULL)
    return dg__store_invalid(ps->err, param,
                             "%s has no property '%.64s' that you can see; properties %s can use: "
                             "%s.",
                             m->name, name, fn, names);
  if (!fits[g->fn](g->prop))
    return dg__store_invalid(
        ps->err, param, "%s needs %s, and '%s' is %s; properties %s can use: %s.", fn,
        fits_text[g->fn], g->prop->name, dg_data_type_name(g->prop->type), fn, names);
  return 0;
}

static int parse_measure(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *obj,
                         const char *path, dg_store_aggregation_t *g) {
  const char *ref = NULL;
  dg__path_t p;
  int rc = dg__store_name_field(ps, obj, "reference", path, &ref);
  if (rc != 0)
    return rc;
  if (ref != NULL) {
    const dg_property_t *rp = dg__store_visible(ps->principal, m, ref, false, NULL);
    if (rp != NULL && rp->reference != NULL)
      return related_refused(ps, m, rp, dg__path_key(&p, path, "reference"));
    return dg__store_invalid(ps->err, dg__path_key(&p, path, "reference"),
                             "an aggregation takes no reference: it aggregates a property of %s "
                             "itself; leave reference out.",
                             m->name);
  }
  if (g->fn != DG_STORE_AGG_COUNT)
    return measured_property(ps, m, obj, path, g);
  const json_t *name = json_object_get(obj, "propertyName");
  if (name == NULL || json_is_null(name))
    return 0;
  return dg__store_invalid(ps->err, dg__path_key(&p, path, "propertyName"),
                           "Count counts the matched records and takes no propertyName; leave it "
                           "out, or use DistinctCount to count the distinct non-null values of a "
                           "property.");
}

/* Characters (not bytes) of UTF-8 text; -1 when it holds a control
 * character, which has no place in a result key. */
static long text_chars(const char *s, size_t len) {
  long chars = 0;
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c < 0x20 || c == 0x7f)
      return -1;
    chars += (c & 0xc0) != 0x80;
  }
  return chars;
}

/* The result key: the alias, or Function_Property; camelCased at the
 * first letter either way. */
static int parse_alias(const dg_store_parse_t *ps, const json_t *obj, const char *path,
                       dg_store_aggregation_t *g) {
  const json_t *v = json_object_get(obj, "alias");
  dg__path_t p;
  char def[NAME_MAX_CHARS * 2];
  if (v != NULL && !json_is_null(v)) {
    long chars = json_is_string(v) ? text_chars(json_string_value(v), json_string_length(v)) : -1;
    if (chars < 1 || chars > DG_STORE_ALIAS_MAX)
      return dg__store_got(ps, v, dg__path_key(&p, path, "alias"),
                           "a name of 1 to 64 characters without control characters");
    g->key = dg_camel_first(ps->arena, json_string_value(v));
  } else if (g->prop == NULL) {
    g->key = dg_camel_first(ps->arena, agg_names[g->fn]);
  } else {
    snprintf(def, sizeof(def), "%s_%s", agg_names[g->fn], g->prop->name);
    g->key = dg_camel_first(ps->arena, def);
  }
  return g->key != NULL ? 0 : dg__store_oom(ps, path);
}

/* ---- joinFilter ------------------------------------------------------------------------- */

static bool is_outbound(const dg_property_t *prop) {
  return is_reference(prop) && is_stored(prop);
}

static dg_data_type_t type_of(const dg_property_t *prop) {
  return prop != NULL ? prop->type : DG_TYPE_GUID;
}

/* Numbers compare with numbers, GUIDs with GUIDs (a Reference holds one). */
static int family(dg_data_type_t t) {
  if (dg_data_type_is_numeric(t))
    return DG_TYPE_DOUBLE;
  return t == DG_TYPE_REFERENCE ? DG_TYPE_GUID : (int)t;
}

static bool is_date(dg_data_type_t t) {
  return t == DG_TYPE_DATE || t == DG_TYPE_DATETIME;
}

/* Comparisons are typed off the base property: a Date or DateTime reads
 * the foreign value as its own type (chronologically), a String compares
 * a date's text lexicographically. */
static bool comparable(dg_data_type_t local, dg_data_type_t foreign) {
  if (family(local) == family(foreign))
    return true;
  if (is_date(local))
    return foreign == DG_TYPE_STRING || is_date(foreign);
  return local == DG_TYPE_STRING && is_date(foreign);
}

static void readable_models(const dg_store_parse_t *ps, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < ps->cat->nmodels && len < size; i++) {
    const dg_model_t *m = &ps->cat->models[i];
    if (dg_auth_can_read_model(ps->principal, m))
      len += (size_t)snprintf(out + len, size - len, "%s%s (%s)", len ? ", " : "", m->name,
                              m->entity_type);
  }
}

/* entity: a model the caller may read, by name or entity type (any case). */
static int join_entity(const dg_store_parse_t *ps, const char *name, const char *param,
                       dg_store_join_t *j) {
  size_t matches = 0;
  char names[NAMES_MAX];
  for (size_t i = 0; i < ps->cat->nmodels; i++) {
    const dg_model_t *m = &ps->cat->models[i];
    if (!dg_auth_can_read_model(ps->principal, m))
      continue;
    bool by_name = strcasecmp(m->name, name) == 0;
    if (by_name || strcasecmp(m->entity_type, name) == 0) {
      j->target = m;
      matches = by_name ? 1 : matches + 1;
    }
    if (by_name)
      break;
  }
  readable_models(ps, names, sizeof(names));
  if (matches > 1)
    return dg__store_invalid(ps->err, param,
                             "several Data Models have the entity type '%.64s'; name one of them: "
                             "%s.",
                             name, names);
  if (matches == 0)
    return dg__store_invalid(ps->err, param,
                             "no Data Model you can read is called '%.64s' or has that entity "
                             "type; allowed: %s.",
                             name, names);
  return 0;
}

static int join_reference(const dg_store_parse_t *ps, const dg_model_t *m, const char *name,
                          const char *param, dg_store_join_t *j) {
  char names[NAMES_MAX];
  int rc = readable_reference(ps, m, name, param, "join", &j->reference);
  if (rc != 0)
    return rc;
  j->target = j->reference->reference->target;
  j->key = j->reference;
  if (!dg__store_is_inbound(j->reference))
    return 0;
  return dg__store_invalid(ps->err, param,
                           "'%s' is an Inbound reference (many %s entities for one %s entity), "
                           "and a joinFilter joins one-to-one only; Outbound references of %s: "
                           "%s.",
                           j->reference->name, j->target->name, m->name, m->name,
                           names_of(ps, m, is_outbound, false, names, sizeof(names)));
}

/* on: the base property holding the joined entity's id, and that id. */
static int parse_on(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *on,
                    const char *path, dg_store_join_t *j) {
  const char *local = NULL, *foreign = NULL;
  char names[NAMES_MAX];
  dg__path_t p;
  bool is_id = false;
  int rc = check_object(ps, on, path, on_fields, DG_ARRAY_SIZE(on_fields),
                        "localProperty, foreignProperty");
  if (rc == 0)
    rc = dg__store_need_name(ps, on, "localProperty", path, "the base property holding the key",
                             &local);
  if (rc == 0)
    rc = dg__store_need_name(ps, on, "foreignProperty", path, "id, the joined entity's key",
                             &foreign);
  if (rc != 0)
    return rc;
  j->key = dg__store_visible(ps->principal, m, local, true, &is_id);
  if (!is_id && (j->key == NULL || !is_key(j->key)))
    return dg__store_invalid(ps->err, dg__path_key(&p, path, "localProperty"),
                             "%s has no property '%.64s' that you can see holding the id of a %s "
                             "entity; allowed: id and the Guid or Outbound Reference properties: "
                             "%s.",
                             m->name, local, j->target->entity_type,
                             names_of(ps, m, is_key, false, names, sizeof(names)));
  const dg_reference_t *r = j->key != NULL ? j->key->reference : NULL;
  if (r != NULL && r->target != j->target)
    return dg__store_invalid(ps->err, dg__path_key(&p, path, "localProperty"),
                             "'%s' holds ids of %s entities, not of %s; name a property that "
                             "holds the id of a %s entity.",
                             j->key->name, r->target_entity_type, j->target->entity_type,
                             j->target->entity_type);
  if (strcasecmp(foreign, "id") != 0)
    return dg__store_invalid(ps->err, dg__path_key(&p, path, "foreignProperty"),
                             "got '%.64s', but a joinFilter joins one-to-one only: the joined %s "
                             "entity is found by its key, so foreignProperty must be id.",
                             foreign, j->target->name);
  return 0;
}

/* A property of m that holds a value, or the id (NULL, *is_id). */
static int condition_property(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *obj,
                              const char *path, const char *key, const dg_property_t **out) {
  const char *name = NULL;
  bool is_id = false;
  char names[NAMES_MAX];
  dg__path_t p;
  int rc = dg__store_need_name(ps, obj, key, path, "a property name", &name);
  if (rc != 0)
    return rc;
  *out = dg__store_visible(ps->principal, m, name, true, &is_id);
  if (is_id || (*out != NULL && is_stored(*out)))
    return 0;
  return dg__store_invalid(ps->err, dg__path_key(&p, path, key),
                           "%s has no property '%.64s' with a value that you can see; valid "
                           "names: %s.",
                           m->name, name, names_of(ps, m, is_stored, true, names, sizeof(names)));
}

static int condition_operator(const dg_store_parse_t *ps, const json_t *obj, const char *path,
                              dg_store_join_t *j) {
  const char *name = NULL;
  char ops[NAMES_MAX];
  size_t len = 0;
  dg__path_t p;
  dg_data_type_t t = type_of(j->local);
  int rc =
      dg__store_need_name(ps, obj, "operator", path, "an operator such as LessThanEqualTo", &name);
  if (rc != 0)
    return rc;
  ops[0] = '\0';
  for (int i = 0; i < DG_STORE_OP__COUNT; i++) {
    if (dg_store_op_allowed((dg_store_op_t)i, t))
      len += (size_t)snprintf(ops + len, sizeof(ops) - len, "%s%s", len ? ", " : "",
                              dg_store_op_name((dg_store_op_t)i));
  }
  if (dg_store_op_parse(name, &j->op) && dg_store_op_allowed(j->op, t))
    return 0;
  return dg__store_invalid(ps->err, dg__path_key(&p, path, "operator"),
                           "got \"%.64s\" for '%s', which is %s; allowed for %s: %s.", name,
                           j->local ? j->local->name : "id", dg_data_type_name(t),
                           dg_data_type_name(t), ops);
}

static int condition_foreign(const dg_store_parse_t *ps, const json_t *obj, const char *path,
                             dg_store_join_t *j) {
  dg__path_t p;
  j->compare_property = true;
  int rc = condition_property(ps, j->target, obj, path, "foreignProperty", &j->foreign);
  dg_data_type_t lt = type_of(j->local), ft = type_of(j->foreign);
  if (rc != 0 || comparable(lt, ft))
    return rc;
  return dg__store_invalid(ps->err, dg__path_key(&p, path, "foreignProperty"),
                           "'%s' of %s is %s and cannot be compared with '%s', which is %s; "
                           "compare numbers with numbers, dates with dates or strings, and "
                           "otherwise properties of the same type.",
                           j->foreign ? j->foreign->name : "id", j->target->name,
                           dg_data_type_name(ft), j->local ? j->local->name : "id",
                           dg_data_type_name(lt));
}

/* value: read as the local property's type; null (or "null" for a type
 * that has no such text) tests for null. */
static int condition_value(const dg_store_parse_t *ps, const json_t *obj, const char *path,
                           dg_store_join_t *j) {
  const json_t *v = json_object_get(obj, "value");
  dg__path_t p;
  const char *param = dg__path_key(&p, path, "value");
  if (json_is_string(v) && json_string_length(v) > DG_STORE_VALUE_MAX)
    return dg__store_invalid(ps->err, param, "is %zu bytes long; allowed: at most %d bytes.",
                             json_string_length(v), DG_STORE_VALUE_MAX);
  bool null_word = json_is_string(v) && strcasecmp(json_string_value(v), "null") == 0 &&
                   type_of(j->local) != DG_TYPE_STRING;
  if (!json_is_null(v) && !null_word)
    return dg_store_value_parse(j->local, v, param, ps->arena, &j->value, ps->err);
  j->value.kind = DG_STORE_NULL;
  if (j->op == DG_STORE_OP_EQ || j->op == DG_STORE_OP_NE)
    return 0;
  dg__path_t po;
  return dg__store_invalid(ps->err, dg__path_key(&po, path, "operator"),
                           "got %s with a null value; allowed: EqualTo (is null) or NotEqualTo "
                           "(is not null).",
                           dg_store_op_name(j->op));
}

static int parse_condition(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *obj,
                           const char *path, dg_store_join_t *j) {
  dg__path_t p;
  int rc = check_object(ps, obj, path, condition_fields, DG_ARRAY_SIZE(condition_fields),
                        "localProperty, operator, foreignProperty, value");
  if (rc == 0)
    rc = condition_property(ps, m, obj, path, "localProperty", &j->local);
  if (rc == 0)
    rc = condition_operator(ps, obj, path, j);
  if (rc != 0)
    return rc;
  const json_t *foreign = json_object_get(obj, "foreignProperty");
  bool has_foreign = foreign != NULL && !json_is_null(foreign);
  bool has_value = json_object_get(obj, "value") != NULL;
  if (has_foreign && has_value)
    return dg__store_invalid(ps->err, dg__path_key(&p, path, "value"),
                             "give foreignProperty or value, not both.");
  if (!has_foreign && !has_value)
    return dg__store_invalid(ps->err, path,
                             "missing foreignProperty or value; give foreignProperty (a property "
                             "of %s) or value (a literal).",
                             j->target->name);
  return has_foreign ? condition_foreign(ps, obj, path, j) : condition_value(ps, obj, path, j);
}

static int join_target(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *obj,
                       const char *path, dg_store_join_t *j) {
  const char *ref = NULL, *entity = NULL;
  char names[NAMES_MAX];
  dg__path_t p;
  int rc = dg__store_name_field(ps, obj, "reference", path, &ref);
  if (rc == 0)
    rc = dg__store_name_field(ps, obj, "entity", path, &entity);
  const json_t *on = json_object_get(obj, "on");
  bool has_on = on != NULL && !json_is_null(on);
  if (rc == 0 && ref != NULL && entity != NULL)
    return dg__store_invalid(ps->err, dg__path_key(&p, path, "entity"),
                             "give reference, or entity with on, not both.");
  if (rc == 0 && ref != NULL && has_on)
    return dg__store_invalid(ps->err, dg__path_key(&p, path, "on"),
                             "leave on out with reference: the reference gives the join.");
  if (rc == 0 && ref == NULL && entity == NULL)
    return dg__store_invalid(ps->err, path,
                             "missing reference; give reference (an Outbound reference of %s: %s) "
                             "or entity with on.",
                             m->name, names_of(ps, m, is_outbound, false, names, sizeof(names)));
  if (rc != 0 || ref != NULL)
    return rc != 0 ? rc : join_reference(ps, m, ref, dg__path_key(&p, path, "reference"), j);
  rc = join_entity(ps, entity, dg__path_key(&p, path, "entity"), j);
  if (rc == 0 && !has_on)
    return dg__store_invalid(ps->err, dg__path_key(&p, path, "on"),
                             "missing; with entity give on {localProperty, foreignProperty: "
                             "\"id\"}.");
  return rc != 0 ? rc : parse_on(ps, m, on, dg__path_key(&p, path, "on"), j);
}

static int parse_join(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *obj,
                      const char *path, dg_store_aggregation_t *g) {
  dg__path_t p;
  dg_store_join_t *j = dg_arena_calloc(ps->arena, 1, sizeof(*j));
  if (j == NULL)
    return dg__store_oom(ps, path);
  int rc = check_object(ps, obj, path, join_fields, DG_ARRAY_SIZE(join_fields),
                        "reference, entity, on, condition");
  if (rc == 0)
    rc = join_target(ps, m, obj, path, j);
  const json_t *cond = json_object_get(obj, "condition");
  if (rc == 0 && (cond == NULL || json_is_null(cond)))
    return dg__store_invalid(ps->err, dg__path_key(&p, path, "condition"),
                             "missing; give {localProperty, operator, foreignProperty or value}.");
  if (rc == 0)
    rc = parse_condition(ps, m, cond, dg__path_key(&p, path, "condition"), j);
  g->join = j;
  return rc;
}

/* ---- aggregations ----------------------------------------------------------------------- */

static int parse_clause(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *obj,
                        const char *path, dg_store_aggregation_t *g) {
  dg__path_t p;
  int rc = check_object(ps, obj, path, clause_fields, DG_ARRAY_SIZE(clause_fields),
                        "function, propertyName, alias, joinFilter");
  if (rc == 0)
    rc = parse_function(ps, obj, path, &g->fn);
  if (rc == 0)
    rc = parse_measure(ps, m, obj, path, g);
  if (rc == 0)
    rc = parse_alias(ps, obj, path, g);
  const json_t *join = json_object_get(obj, "joinFilter");
  if (rc == 0 && join != NULL && !json_is_null(join))
    rc = parse_join(ps, m, join, dg__path_key(&p, path, "joinFilter"), g);
  return rc;
}

static int unique_key(const dg_store_parse_t *ps, const dg_store_aggregate_t *a, size_t i,
                      const char *path) {
  dg__path_t p;
  for (size_t j = 0; j < i; j++) {
    if (strcmp(a->aggs[j].key, a->aggs[i].key) == 0)
      return dg__store_invalid(ps->err, dg__path_key(&p, path, "alias"),
                               "the result key '%s' is already used by aggregations[%zu]; give "
                               "this clause another alias.",
                               a->aggs[i].key, j);
  }
  return 0;
}

static int parse_aggregations(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *list,
                              dg_store_aggregate_t *a) {
  if (list == NULL || json_is_null(list))
    return dg__store_invalid(ps->err, "aggregations",
                             "missing; give 1 to %d clauses such as {\"function\": \"Sum\", "
                             "\"propertyName\": \"Amount\"} or {\"function\": \"Count\"}.",
                             DG_STORE_AGGREGATIONS_MAX);
  size_t n = json_array_size(list);
  if (!json_is_array(list) || n == 0 || n > DG_STORE_AGGREGATIONS_MAX)
    return dg__store_got(ps, list, "aggregations",
                         "an array of 1 to 32 clauses {function, propertyName, alias, joinFilter}");
  a->aggs = dg_arena_calloc(ps->arena, n, sizeof(*a->aggs));
  if (a->aggs == NULL)
    return dg__store_oom(ps, "aggregations");
  int rc = 0;
  dg__path_t p;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    const char *path = dg__path_index(&p, "aggregations", i);
    rc = parse_clause(ps, m, json_array_get(list, i), path, &a->aggs[i]);
    if (rc == 0)
      rc = unique_key(ps, a, i, path);
  }
  a->naggs = rc == 0 ? n : 0;
  return rc;
}

/* ---- groupBy ------------------------------------------------------------------------------ */

/* "Customer.Region" given as a name: say how to ask for it. */
static void dotted_hint(const dg_store_parse_t *ps, const dg_model_t *m, const char *name,
                        char *out, size_t size) {
  const dg_property_t *ref = related_of(ps, m, name);
  const char *dot = strchr(name, '.');
  out[0] = '\0';
  if (ref != NULL && dot != NULL)
    snprintf(out, size,
             " To group by a related entity's property set reference to '%s' and propertyName "
             "to '%.64s'.",
             ref->name, dot + 1);
}

static int key_property(const dg_store_parse_t *ps, const dg_model_t *m, const char *name,
                        const char *param, dg_store_group_key_t *k) {
  char names[NAMES_MAX], hint[256];
  k->prop = dg__store_visible(ps->principal, m, name, false, NULL);
  names_of(ps, m, dg_store_can_group, false, names, sizeof(names));
  if (k->prop != NULL && dg_store_can_group(k->prop))
    return 0;
  if (k->prop == NULL) {
    dotted_hint(ps, m, name, hint, sizeof(hint));
    return dg__store_invalid(ps->err, param,
                             "%s has no property '%.64s' that you can see; properties to group "
                             "by: %s.%s",
                             m->name, name, names, hint);
  }
  if (k->reference == NULL && is_reference(k->prop))
    return dg__store_invalid(ps->err, param,
                             "'%s' is an Inbound reference (a collection of %s); to group by its "
                             "entities set reference to '%s' and propertyName to one of their "
                             "properties.",
                             k->prop->name, k->prop->reference->target->name, k->prop->name);
  return dg__store_invalid(ps->err, param,
                           "'%s' of %s is an Inbound reference and holds no value to group by; "
                           "properties to group by: %s.",
                           k->prop->name, m->name, names);
}

static int key_labels(const dg_store_parse_t *ps, dg_store_group_key_t *k, const char *path) {
  if (k->reference == NULL) {
    k->name = k->prop->name;
    k->key = k->prop->json_name;
    return 0;
  }
  k->name = dg_arena_sprintf(ps->arena, "%s.%s", k->reference->name, k->prop->name);
  k->key = dg_arena_sprintf(ps->arena, "%s.%s", k->reference->json_name, k->prop->name);
  return k->name != NULL && k->key != NULL ? 0 : dg__store_oom(ps, path);
}

static int parse_key(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *obj,
                     const char *path, dg_store_group_key_t *k) {
  const char *ref = NULL, *name = NULL;
  dg__path_t p;
  int rc =
      check_object(ps, obj, path, key_fields, DG_ARRAY_SIZE(key_fields), "propertyName, reference");
  if (rc == 0)
    rc = dg__store_name_field(ps, obj, "reference", path, &ref);
  if (rc == 0 && ref != NULL)
    rc = readable_reference(ps, m, ref, dg__path_key(&p, path, "reference"), "group by",
                            &k->reference);
  if (rc != 0)
    return rc;
  k->model = k->reference != NULL ? k->reference->reference->target : m;
  rc = dg__store_need_name(ps, obj, "propertyName", path, "the property to group by", &name);
  if (rc == 0)
    rc = key_property(ps, k->model, name, dg__path_key(&p, path, "propertyName"), k);
  return rc == 0 ? key_labels(ps, k, path) : rc;
}

static int parse_group_by(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *list,
                          dg_store_aggregate_t *a) {
  size_t n = json_array_size(list);
  if (list == NULL || json_is_null(list))
    return 0;
  if (!json_is_array(list) || n > DG_STORE_GROUP_BY_MAX)
    return dg__store_got(ps, list, "groupBy",
                         "an array of at most 8 group keys {propertyName, reference}");
  a->group_by = dg_arena_calloc(ps->arena, n + 1, sizeof(*a->group_by));
  if (a->group_by == NULL)
    return dg__store_oom(ps, "groupBy");
  int rc = 0;
  dg__path_t p;
  for (size_t i = 0; rc == 0 && i < n; i++) {
    dg_store_group_key_t *k = &a->group_by[i];
    const char *path = dg__path_index(&p, "groupBy", i);
    rc = parse_key(ps, m, json_array_get(list, i), path, k);
    for (size_t j = 0; rc == 0 && j < i; j++) {
      if (a->group_by[j].prop == k->prop && a->group_by[j].reference == k->reference)
        rc = dg__store_invalid(ps->err, path, "'%s' is grouped by twice; give each key once.",
                               k->name);
    }
  }
  a->ngroup_by = rc == 0 ? n : 0;
  return rc;
}

/* ---- The whole call ------------------------------------------------------------------------ */

static int join_with_groups(const dg_store_parse_t *ps, const dg_store_aggregate_t *a) {
  dg__path_t p, q;
  for (size_t i = 0; a->ngroup_by > 0 && i < a->naggs; i++) {
    if (a->aggs[i].join != NULL)
      return dg__store_invalid(
          ps->err, dg__path_key(&p, dg__path_index(&q, "aggregations", i), "joinFilter"),
          "a joinFilter cannot be combined with groupBy; request them separately: one call with "
          "groupBy and no joinFilter, and another with the joinFilter and no groupBy.");
  }
  return 0;
}

/* A date the caller may filter on, named when a grouped aggregate matches
 * too much. */
static const dg_property_t *date_hint(const dg_store_parse_t *ps, const dg_model_t *m) {
  for (size_t i = 0; i < m->nproperties; i++) {
    const dg_property_t *prop = &m->properties[i];
    if (is_date(prop->type) && prop->filterable && dg_auth_can_see_property(ps->principal, m, prop))
      return prop;
  }
  return NULL;
}

int dg_store_parse_aggregate(const dg_store_parse_t *ps, const dg_model_t *model,
                             const json_t *args, dg_store_aggregate_t *out) {
  memset(out, 0, sizeof(*out));
  out->model = model;
  uint64_t cap = ps->cat->server.max_grouped_aggregate_records;
  out->grouped_cap = cap > 0 && cap <= INT64_MAX ? (int64_t)cap : DG_STORE_GROUPED_CAP_DEFAULT;
  out->date_hint = date_hint(ps, model);
  int rc = parse_aggregations(ps, model, json_object_get(args, "aggregations"), out);
  if (rc == 0)
    rc = dg_store_parse_filters(ps, model, json_object_get(args, "queryParameterGroups"),
                                "queryParameterGroups", &out->filters);
  if (rc == 0)
    rc = parse_group_by(ps, model, json_object_get(args, "groupBy"), out);
  if (rc == 0)
    rc = join_with_groups(ps, out);
  return rc;
}
