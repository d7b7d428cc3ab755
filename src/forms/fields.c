/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* What get_data_entry_form and submit_data_entry_form share: which
 * properties are fields of a model's form, checking [{key, value}] items
 * against them, the text of a stored value, and records read from the
 * store in the shape the save tree uses (values by property name). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "datagate/forms.h"

bool dg_forms_field(const dg_principal_t *p, const dg_model_t *m, const dg_property_t *prop) {
  bool inbound = prop->reference != NULL && prop->reference->direction == DG_REF_INBOUND;
  return !inbound && !prop->read_only && dg_auth_can_see_property(p, m, prop);
}

void dg_forms_field_names(const dg_principal_t *p, const dg_model_t *m, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < m->nproperties && len + 1 < size; i++) {
    if (!dg_forms_field(p, m, &m->properties[i]))
      continue;
    int n = snprintf(out + len, size - len, "%s%s", len ? ", " : "", m->properties[i].name);
    len = n > 0 && (size_t)n < size - len ? len + (size_t)n : size - 1;
  }
}

const char *dg_forms_text(const json_t *v, char *buf, size_t size) {
  return dg_json_scalar_text_digits(v, 15, buf, size);
}

/* ---- Checking form values ---------------------------------------------------------------- */

static int refuse_key(const dg_principal_t *p, const dg_model_t *m, const char *param,
                      const char *key, const dg_property_t *prop, dg_errctx_t *err) {
  char fields[1024];
  dg_forms_field_names(p, m, fields, sizeof(fields));
  bool visible = prop != NULL && dg_auth_can_see_property(p, m, prop);
  const char *why = !visible ? "is not a field of this form"
                    : prop->read_only
                        ? "is read-only (the gateway and its save actions set it)"
                        : "is a list of related records (an Inbound reference) and holds no value "
                          "of its own";
  return dg_errctx_set(err, DG_EINVAL, param,
                       "Invalid argument '%s': '%.128s' %s; the fields of the %s form are: %s.",
                       param, key, why, m->name, fields);
}

/* "" clears a field that is not a String. */
static json_t *given_value(const dg_property_t *prop, const char *text) {
  if (text[0] == '\0' && prop->type != DG_TYPE_STRING)
    return json_null();
  return json_string(text);
}

static int check_item(const dg_principal_t *p, const dg_model_t *m, const json_t *item,
                      const char *param, size_t i, dg_arena_t *arena, dg_forms_value_t *out,
                      dg_errctx_t *err) {
  char at[160];
  const char *key = json_string_value(json_object_get(item, "key"));
  const char *text = json_string_value(json_object_get(item, "value"));
  const dg_property_t *prop = dg_model_property(m, key);
  snprintf(at, sizeof(at), "%s[%zu].key", param, i);
  if (prop == NULL || !dg_forms_field(p, m, prop))
    return refuse_key(p, m, at, key, prop, err);
  snprintf(at, sizeof(at), "%s[%zu].value", param, i);
  json_t *v = given_value(prop, text);
  int rc = v ? dg_store_value_parse(prop, v, at, arena, &out->value, err) : DG_ENOMEM;
  if (rc == 0)
    out->json = v;
  else
    json_decref(v);
  out->prop = prop;
  out->index = i;
  out->param = dg_arena_strdup(arena, at);
  return rc;
}

static void free_json(void *data) {
  json_decref(data);
}

int dg_forms_values(const dg_principal_t *p, const dg_model_t *m, const json_t *items,
                    const char *param, dg_arena_t *arena, dg_forms_value_t **out, size_t *n,
                    dg_errctx_t *err) {
  size_t count = json_array_size(items);
  dg_forms_value_t *list = dg_arena_calloc(arena, count + 1, sizeof(*list));
  *out = list;
  *n = 0;
  if (list == NULL)
    return dg_errctx_set(err, DG_ENOMEM, param, "Out of memory while reading '%s'.", param);
  for (size_t i = 0; i < count; i++) {
    int rc = check_item(p, m, json_array_get(items, i), param, i, arena, &list[i], err);
    if (rc == 0 && dg_arena_defer(arena, free_json, list[i].json) != 0)
      rc = dg_errctx_set(err, DG_ENOMEM, param, "Out of memory while reading '%s'.", param);
    if (rc != 0)
      return rc;
    *n = i + 1;
    for (size_t j = 0; j < i; j++) {
      if (list[j].prop == list[i].prop)
        return dg_errctx_set(err, DG_EINVAL, param,
                             "Invalid argument '%s[%zu].key': '%s' is given twice (also "
                             "%s[%zu]); give each field once.",
                             param, i, list[i].prop->name, param, j);
    }
  }
  return 0;
}

static bool has_value(const dg_forms_value_t *v) {
  return v->value.kind != DG_STORE_NULL && !(v->value.kind == DG_STORE_TEXT && v->value.len == 0);
}

static bool given(const dg_forms_value_t *vals, size_t n, const dg_property_t *prop) {
  for (size_t j = 0; j < n; j++) {
    if (vals[j].prop == prop && has_value(&vals[j]))
      return true;
  }
  return false;
}

/* Adds prop's form default to vals; false when it has none that parses. */
static bool add_default(const dg_property_t *prop, dg_forms_value_t *vals, size_t *n,
                        dg_arena_t *arena) {
  json_t *d = prop->form.default_value ? json_string(prop->form.default_value) : NULL;
  dg_errctx_t ignored;
  if (d == NULL ||
      dg_store_value_parse(prop, d, "default", arena, &vals[*n].value, &ignored) != 0 ||
      dg_arena_defer(arena, free_json, d) != 0) {
    json_decref(d);
    return false;
  }
  vals[*n].prop = prop;
  vals[*n].json = d;
  (*n)++;
  return true;
}

int dg_forms_defaults(const dg_principal_t *p, const dg_model_t *m, const dg_property_t *except,
                      dg_forms_value_t *vals, size_t *n, const char *param, dg_arena_t *arena,
                      dg_errctx_t *err) {
  char missing[1024] = "";
  size_t len = 0;
  for (size_t i = 0; i < m->nproperties; i++) {
    const dg_property_t *prop = &m->properties[i];
    if (prop == except || given(vals, *n, prop) || !dg_forms_field(p, m, prop) ||
        add_default(prop, vals, n, arena) || !prop->required || len + 1 >= sizeof(missing))
      continue;
    int w = snprintf(missing + len, sizeof(missing) - len, "%s%s", len ? ", " : "", prop->name);
    len = w > 0 && (size_t)w < sizeof(missing) - len ? len + (size_t)w : sizeof(missing) - 1;
  }
  if (len > 0)
    return dg_errctx_set(err, DG_EINVAL, param,
                         "Invalid argument '%s': a new %s record needs a value for every "
                         "required field; missing: %s.",
                         param, m->name, missing);
  return 0;
}

/* ---- Records ------------------------------------------------------------------------------------
 */

int dg_forms_stored_select(const dg_model_t *m, dg_arena_t *arena, dg_store_select_t *out) {
  const dg_property_t **props = dg_arena_calloc(arena, m->nproperties + 1, sizeof(*props));
  if (props == NULL)
    return DG_ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < m->nproperties; i++) {
    const dg_property_t *p = &m->properties[i];
    if (p->reference == NULL || p->reference->direction == DG_REF_OUTBOUND)
      props[n++] = p;
  }
  *out = (dg_store_select_t){.props = props, .nprops = n};
  return 0;
}

char *dg_forms_lower(dg_arena_t *arena, const char *s) {
  char *out = s ? dg_arena_strdup(arena, s) : NULL;
  for (char *c = out; c != NULL && *c != '\0'; c++)
    *c = (char)(*c >= 'A' && *c <= 'Z' ? *c + 32 : *c);
  return out;
}
