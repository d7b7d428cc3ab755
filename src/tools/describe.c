/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Describing Data Models to a caller: the results of get_data_models and
 * get_data_model_properties, filtered by the caller's permissions. */
#include <stdio.h>

#include "tools/internal.h"

void dg__tools_put(json_t *obj, const char *key, json_t *value, bool *ok) {
  if (json_object_set_new(obj, key, value) != 0)
    *ok = false;
}

json_t *dg__tools_string_or_null(const char *s) {
  return s ? json_string(s) : json_null();
}

json_t *dg__tools_finish(json_t *o, bool ok) {
  if (ok)
    return o;
  json_decref(o);
  return NULL;
}

const dg_model_t *dg__tools_find_model(const dg_catalog_t *cat, const dg_principal_t *p,
                                       const char *param, const char *given, dg_errctx_t *err) {
  const dg_model_t *m = given ? dg_catalog_model_by_id(cat, given) : NULL;
  if (m != NULL && dg_auth_can_read_model(p, m))
    return m;
  dg_errctx_set(err, DG_EINVAL, param,
                "Invalid argument '%s': no Data Model with id '%.128s'; call get_data_models for "
                "the valid ids.",
                param, given ? given : "");
  return NULL;
}

json_t *dg__tools_model_json(const dg_model_t *m, bool with_description) {
  json_t *o = json_object();
  bool ok = o != NULL;
  if (!ok)
    return NULL;
  dg__tools_put(o, "dataModelId", json_string(m->id), &ok);
  dg__tools_put(o, "name", json_string(m->name), &ok);
  if (with_description)
    dg__tools_put(o, "description", json_string(m->description ? m->description : ""), &ok);
  dg__tools_put(o, "entityType", json_string(m->entity_type), &ok);
  dg__tools_put(o, "entitySubType", dg__tools_string_or_null(m->entity_sub_type), &ok);
  return dg__tools_finish(o, ok);
}

json_t *dg__tools_data_models_json(const dg_catalog_t *cat, const dg_principal_t *p) {
  json_t *list = json_array();
  json_t *result = json_object();
  bool ok = list != NULL && result != NULL;
  for (size_t i = 0; ok && i < cat->nmodels; i++) {
    if (dg_auth_can_read_model(p, &cat->models[i]))
      ok = json_array_append_new(list, dg__tools_model_json(&cat->models[i], true)) == 0;
  }
  if (ok)
    ok = json_object_set(result, "dataModels", list) == 0;
  json_decref(list);
  return dg__tools_finish(result, ok);
}

json_t *dg__tools_reference_json(const dg_reference_t *ref, const dg_principal_t *p) {
  json_t *o = json_object();
  bool ok = o != NULL;
  if (!ok)
    return NULL;
  bool inbound = ref->direction == DG_REF_INBOUND;
  bool readable = ref->target != NULL && dg_auth_can_read_model(p, ref->target);
  dg__tools_put(o, "direction", json_string(inbound ? "Inbound" : "Outbound"), &ok);
  dg__tools_put(o, "cardinality",
                json_string(ref->cardinality == DG_CARD_ONE_TO_MANY ? "OneToMany" : "OneToOne"),
                &ok);
  dg__tools_put(o, "targetEntityType", dg__tools_string_or_null(ref->target_entity_type), &ok);
  dg__tools_put(o, "targetEntitySubType", dg__tools_string_or_null(ref->target_entity_sub_type),
                &ok);
  dg__tools_put(o, "targetDataModelId",
                dg__tools_string_or_null(ref->target ? ref->target->id : NULL), &ok);
  dg__tools_put(o, "expandable", json_boolean(readable), &ok);
  dg__tools_put(o, "derived", json_boolean(ref->derived), &ok);
  return dg__tools_finish(o, ok);
}

static json_t *choices_json(const dg_property_t *prop) {
  json_t *a = json_array();
  for (size_t i = 0; a != NULL && i < prop->nchoices; i++) {
    if (json_array_append_new(a, json_string(prop->choices[i])) != 0) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

/* The aggregate functions that take prop (Count takes none). */
static json_t *aggregate_functions_json(const dg_property_t *prop) {
  json_t *a = json_array();
  for (int fn = 0; a != NULL && fn < DG_STORE_AGG__COUNT; fn++) {
    if (dg_store_agg_fits((dg_store_agg_fn_t)fn, prop) &&
        json_array_append_new(a, json_string(dg_store_agg_name((dg_store_agg_fn_t)fn))) != 0) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

/* What the query tools accept the property for, so that a caller need not
 * learn it from a refusal. */
static void put_uses(json_t *o, const dg_property_t *prop, bool *ok) {
  json_t *fns = aggregate_functions_json(prop);
  dg__tools_put(o, "filterable", json_boolean(dg_store_can_filter(prop)), ok);
  dg__tools_put(o, "sortable", json_boolean(dg_store_can_sort(prop)), ok);
  dg__tools_put(o, "groupable", json_boolean(dg_store_can_group(prop)), ok);
  dg__tools_put(o, "aggregatable", json_boolean(json_array_size(fns) > 0), ok);
  dg__tools_put(o, "aggregateFunctions", fns, ok);
  dg__tools_put(o, "keywordSearchable", json_boolean(prop->keyword), ok);
}

static json_t *property_entry(const dg_property_t *prop, const dg_principal_t *p) {
  json_t *o = json_object();
  bool ok = o != NULL;
  if (!ok)
    return NULL;
  dg__tools_put(o, "propertyName", json_string(prop->name), &ok);
  dg__tools_put(o, "dataType", json_string(dg_data_type_name(prop->type)), &ok);
  dg__tools_put(o, "description", json_string(prop->description ? prop->description : ""), &ok);
  dg__tools_put(o, "required", json_boolean(prop->required), &ok);
  /* An Inbound collection is a reverse view: it cannot be written. */
  bool read_only = prop->read_only || (prop->reference != NULL && prop->reference->derived);
  dg__tools_put(o, "readOnly", json_boolean(read_only), &ok);
  put_uses(o, prop, &ok);
  if (prop->nchoices > 0)
    dg__tools_put(o, "choices", choices_json(prop), &ok);
  if (prop->reference != NULL)
    dg__tools_put(o, "reference", dg__tools_reference_json(prop->reference, p), &ok);
  return dg__tools_finish(o, ok);
}

json_t *dg__tools_model_properties_json(const dg_model_t *model, const dg_principal_t *p) {
  /* The description stays in get_data_models; here it would only repeat. */
  json_t *o = dg__tools_model_json(model, false);
  json_t *props = json_array();
  bool ok = o != NULL && props != NULL;
  for (size_t i = 0; ok && i < model->nproperties; i++) {
    const dg_property_t *prop = &model->properties[i];
    if (dg_auth_can_see_property(p, model, prop))
      ok = json_array_append_new(props, property_entry(prop, p)) == 0;
  }
  if (ok)
    ok = json_object_set(o, "properties", props) == 0;
  json_decref(props);
  return dg__tools_finish(o, ok);
}
