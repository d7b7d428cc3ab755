/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* What a result holds: the properties argument, expand entries, and the
 * entityIds of get_entities_by_ids. */
#include <stdio.h>
#include <string.h>

#include "store/internal.h"

#define NAMES_MAX 640
#define SELECT_MAX 256

/* ---- properties --------------------------------------------------------------------- */

static int select_all(const dg_store_parse_t *ps, const dg_model_t *m, const char *param,
                      dg_store_select_t *out) {
  out->props = dg_arena_calloc(ps->arena, m->nproperties + 1, sizeof(*out->props));
  if (out->props == NULL)
    return dg__store_oom(ps, param);
  for (size_t i = 0; i < m->nproperties; i++) {
    const dg_property_t *prop = &m->properties[i];
    if (dg__store_is_stored(prop) && dg_auth_can_see_property(ps->principal, m, prop))
      out->props[out->nprops++] = prop;
  }
  return 0;
}

static bool selected(const dg_store_select_t *s, const dg_property_t *prop) {
  for (size_t i = 0; i < s->nprops; i++) {
    if (s->props[i] == prop)
      return true;
  }
  return false;
}

static int select_one(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *item,
                      const char *param, dg_store_select_t *out) {
  const char *name = json_string_value(item);
  bool is_id = false;
  char names[NAMES_MAX];
  if (name == NULL || json_string_length(item) > 128)
    return dg__store_got(ps, item, param, "a property name (a string)");
  const dg_property_t *prop = dg__store_visible(ps->principal, m, name, true, &is_id);
  if (is_id || (prop != NULL && selected(out, prop)))
    return 0;
  if (prop == NULL) {
    dg__store_names(names, sizeof(names), ps->principal, m, NULL, true);
    return dg__store_invalid(ps->err, param,
                             "%s has no property '%.64s' that you can see; valid names: %s.",
                             m->name, name, names);
  }
  if (dg__store_is_inbound(prop))
    return dg__store_invalid(ps->err, param,
                             "'%s' is an Inbound reference (a collection of related entities); "
                             "load it with expand: [{\"reference\": \"%s\"}].",
                             prop->name, prop->name);
  out->props[out->nprops++] = prop;
  return 0;
}

int dg_store_parse_select(const dg_store_parse_t *ps, const dg_model_t *model,
                          const json_t *properties, const char *param, dg_store_select_t *out) {
  memset(out, 0, sizeof(*out));
  if (properties == NULL || json_is_null(properties))
    return select_all(ps, model, param, out);
  if (!json_is_array(properties) || json_array_size(properties) > SELECT_MAX)
    return dg__store_got(ps, properties, param, "an array of property names (at most 256)");
  out->props = dg_arena_calloc(ps->arena, json_array_size(properties) + 1, sizeof(*out->props));
  if (out->props == NULL)
    return dg__store_oom(ps, param);
  int rc = 0;
  dg__path_t p;
  for (size_t i = 0; rc == 0 && i < json_array_size(properties); i++)
    rc = select_one(ps, model, json_array_get(properties, i), dg__path_index(&p, param, i), out);
  return rc;
}

/* ---- expand ---------------------------------------------------------------------------- */

static int expand_reference(const dg_store_parse_t *ps, const dg_model_t *m, const char *name,
                            const char *param, dg_store_expand_t *e) {
  const dg_property_t *ref = NULL;
  int rc = dg__store_followed_reference(ps->principal, m, name, param, DG__STORE_REF_EXPAND, &ref,
                                        ps->err);
  if (rc != 0)
    return rc;
  e->reference = ref;
  e->target = ref->reference->target;
  return 0;
}

static int expand_entry(const dg_store_parse_t *ps, const dg_model_t *m, const json_t *obj,
                        const char *param, dg_store_expand_t *all, size_t n) {
  dg__path_t p;
  const char *key;
  json_t *v;
  if (!json_is_object(obj))
    return dg__store_got(ps, obj, param, "an object {reference, properties}");
  json_object_foreach((json_t *)obj, key, v) {
    if (strcmp(key, "reference") != 0 && strcmp(key, "properties") != 0)
      return dg__store_invalid(ps->err, dg__path_key(&p, param, key),
                               "unknown field; allowed fields here: reference, properties.");
  }
  const json_t *ref = json_object_get(obj, "reference");
  const char *ref_param = dg__path_key(&p, param, "reference");
  if (!json_is_string(ref) || json_string_length(ref) == 0 || json_string_length(ref) > 128)
    return dg__store_got(ps, ref, ref_param,
                         "the name of a Reference property, from get_data_model_properties");
  int rc = expand_reference(ps, m, json_string_value(ref), ref_param, &all[n]);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    if (all[i].reference == all[n].reference)
      return dg__store_invalid(ps->err, ref_param,
                               "'%s' is expanded twice; give each reference once.",
                               all[n].reference->name);
  }
  if (rc == 0)
    rc = dg_store_parse_select(ps, all[n].target, json_object_get(obj, "properties"),
                               dg__path_key(&p, param, "properties"), &all[n].select);
  return rc;
}

int dg_store_parse_expand(const dg_store_parse_t *ps, const dg_model_t *model, const json_t *expand,
                          const char *param, dg_store_expand_t **out, size_t *nout) {
  *out = NULL;
  *nout = 0;
  if (expand == NULL || json_is_null(expand))
    return 0;
  size_t n = json_array_size(expand);
  if (!json_is_array(expand) || n > model->nproperties)
    return dg__store_got(ps, expand, param,
                         "an array of {reference, properties}, each reference at most once");
  dg_store_expand_t *all = dg_arena_calloc(ps->arena, n + 1, sizeof(*all));
  if (all == NULL)
    return dg__store_oom(ps, param);
  int rc = 0;
  dg__path_t p;
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = expand_entry(ps, model, json_array_get(expand, i), dg__path_index(&p, param, i), all, i);
  *out = all;
  *nout = rc == 0 ? n : 0;
  return rc;
}

/* ---- get_entities_by_ids ------------------------------------------------------------------ */

static int one_id(const dg_store_parse_t *ps, const json_t *item, const char *param,
                  dg_store_fetch_t *out, dg__id_index_t *seen) {
  const char *s = json_string_value(item);
  if (s == NULL || json_string_length(item) != DG_UUID_LEN ||
      (!ps->ids_checked && !dg_uuid_valid(s)))
    return dg__store_got(ps, item, param,
                         "a GUID (8-4-4-4-12 hexadecimal digits), the id of an entity from "
                         "query_entities or lookup_by_keyword");
  char *id = dg_arena_alloc(ps->arena, DG_UUID_LEN + 1);
  if (id == NULL)
    return dg__store_oom(ps, param);
  /* Lowercased while copied: in a checked GUID the 0x20 bit is already
   * set in every byte but A-F (digits, a-f and the dash). */
  for (size_t i = 0; i < DG_UUID_LEN; i++)
    id[i] = (char)(s[i] | 0x20);
  id[DG_UUID_LEN] = '\0';
  out->ids[out->nids] = id;
  if (dg__id_index_add(seen, out->nids) == out->nids) /* else a repeat, left out */
    out->nids++;
  return 0;
}

static int parse_ids(const dg_store_parse_t *ps, const json_t *ids, dg_store_fetch_t *out) {
  size_t n = json_array_size(ids);
  if (!json_is_array(ids) || n < 1 || n > DG_STORE_IDS_MAX)
    return dg__store_got(ps, ids, "entityIds",
                         "an array of 1 to 50 entity ids (GUIDs); one id is an array of one");
  dg__id_index_t seen;
  out->ids = dg_arena_calloc(ps->arena, n + 1, sizeof(*out->ids));
  if (out->ids == NULL ||
      dg__id_index_init(&seen, ps->arena, (const char *const *)out->ids, n) != 0)
    return dg__store_oom(ps, "entityIds");
  int rc = 0;
  dg__path_t p;
  for (size_t i = 0; rc == 0 && i < n; i++)
    rc = one_id(ps, json_array_get(ids, i), dg__path_index(&p, "entityIds", i), out, &seen);
  out->ids[out->nids] = NULL;
  return rc;
}

int dg__store_parse_shape(const dg_store_parse_t *ps, const dg_model_t *model, const json_t *args,
                          dg_store_select_t *select, dg_store_expand_t **expand, size_t *nexpand) {
  int rc =
      dg_store_parse_select(ps, model, json_object_get(args, "properties"), "properties", select);
  if (rc == 0)
    rc = dg_store_parse_expand(ps, model, json_object_get(args, "expand"), "expand", expand,
                               nexpand);
  return rc;
}

int dg_store_parse_fetch(const dg_store_parse_t *ps, const dg_model_t *model, const json_t *args,
                         dg_store_fetch_t *out) {
  memset(out, 0, sizeof(*out));
  out->model = model;
  int rc = parse_ids(ps, json_object_get(args, "entityIds"), out);
  if (rc == 0)
    rc = dg__store_parse_shape(ps, model, args, &out->select, &out->expand, &out->nexpand);
  return rc;
}
