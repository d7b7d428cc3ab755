/* Result JSON shared by the drivers: a row's values become an entity with
 * camelCased keys, typed by the property (a Boolean stored as an integer
 * comes back as true or false). Sizes are counted against the result
 * budget as the result grows, so a huge answer stops early with a clear
 * error instead of filling memory. */
#include <string.h>

#include "store/internal.h"

/* Bytes of JSON punctuation counted per key and value. */
#define VALUE_OVERHEAD 8

json_t *dg__store_json_value(const dg_property_t *prop, const dg_store_value_t *v) {
  switch (v->kind) {
  case DG_STORE_NULL:
    return json_null();
  case DG_STORE_INT:
    if (prop != NULL && prop->type == DG_TYPE_BOOLEAN)
      return json_boolean(v->i != 0);
    return json_integer(v->i);
  case DG_STORE_REAL:
    return json_real(v->d);
  case DG_STORE_BOOL:
    return json_boolean(v->b);
  case DG_STORE_TEXT:
    return json_stringn(v->text, v->len);
  }
  return json_null();
}

static size_t value_size(const dg_store_value_t *v) {
  return VALUE_OVERHEAD + (v->kind == DG_STORE_TEXT ? v->len : 20);
}

static bool put(json_t *obj, const char *key, json_t *value) {
  return value != NULL && json_object_set_new(obj, key, value) == 0;
}

json_t *dg__store_entity(const dg__sql_cols_t *cols, const dg_store_value_t *row, bool flat,
                         dg__store_budget_t *budget, int *rc) {
  json_t *props = json_object();
  bool ok = props != NULL;
  size_t size = VALUE_OVERHEAD * 2;
  for (size_t i = 1; ok && i < cols->n; i++) {
    const dg_property_t *prop = cols->cols[i].prop;
    if (!cols->cols[i].emit)
      continue;
    ok = put(props, prop->json_name, dg__store_json_value(prop, &row[i]));
    size += strlen(prop->json_name) + value_size(&row[i]);
  }
  size += value_size(&row[0]);
  json_t *entity = flat ? props : json_object();
  if (ok && flat)
    ok = put(props, "id", dg__store_json_value(NULL, &row[0]));
  else if (ok)
    ok = put(entity, "id", dg__store_json_value(NULL, &row[0])) &&
         json_object_set(entity, "properties", props) == 0;
  if (!flat)
    json_decref(props);
  budget->used += size;
  *rc = !ok ? DG_ENOMEM : budget->used > budget->max ? DG_E2BIG : 0;
  if (*rc != 0) {
    json_decref(entity);
    return NULL;
  }
  return entity;
}

int dg__store_too_big(dg_errctx_t *err, size_t max) {
  return dg_errctx_set(err, DG_E2BIG, "",
                       "The result is larger than the limit of %zu bytes. Narrow the request: "
                       "select fewer properties or expansions, use a smaller page size or a more "
                       "specific filter.",
                       max);
}

const char *dg__store_ref_key(const dg_property_t *ref) {
  return ref->json_name;
}
