/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Names as the caller sees them: operators, argument paths for messages,
 * and the properties a principal may see, listed when a name is wrong. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "store/internal.h"

static const char *const op_names[] = {
#define XX(name, text) text,
    DG_STORE_OP_MAP(XX)
#undef XX
};

const char *dg_store_op_name(dg_store_op_t op) {
  return (unsigned)op < DG_STORE_OP__COUNT ? op_names[op] : "Unknown";
}

bool dg_store_op_parse(const char *name, dg_store_op_t *out) {
  for (int i = 0; name != NULL && i < DG_STORE_OP__COUNT; i++) {
    if (strcmp(name, op_names[i]) == 0) {
      *out = (dg_store_op_t)i;
      return true;
    }
  }
  return false;
}

bool dg_store_op_allowed(dg_store_op_t op, dg_data_type_t type) {
  if (type == DG_TYPE_STRING)
    return true;
  if (op >= DG_STORE_OP_CONTAINS)
    return false;
  if (op == DG_STORE_OP_EQ || op == DG_STORE_OP_NE)
    return true;
  return type != DG_TYPE_BOOLEAN && type != DG_TYPE_GUID && type != DG_TYPE_REFERENCE;
}

/* ---- Argument paths ------------------------------------------------------------------ */

/* Made for every member of every argument checked, so without printf; a
 * path too long for the buffer is cut. */
const char *dg__path_key(dg__path_t *p, const char *base, const char *key) {
  size_t n = strnlen(base, sizeof(p->s) - 1);
  memcpy(p->s, base, n);
  if (n > 0 && n < sizeof(p->s) - 1)
    p->s[n++] = '.';
  size_t k = strnlen(key, sizeof(p->s) - 1 - n);
  memcpy(p->s + n, key, k);
  p->s[n + k] = '\0';
  return p->s;
}

/* Made for every item of an array argument, so without printf. */
const char *dg__path_index(dg__path_t *p, const char *base, size_t i) {
  size_t room = sizeof(p->s) - (DG_DECIMAL_MAX + 3);
  size_t n = strnlen(base, room);
  memcpy(p->s, base, n);
  p->s[n++] = '[';
  n += dg_decimal(p->s + n, i);
  p->s[n++] = ']';
  p->s[n] = '\0';
  return p->s;
}

/* ---- Properties ------------------------------------------------------------------------ */

bool dg__store_is_inbound(const dg_property_t *prop) {
  return prop != NULL && prop->reference != NULL && prop->reference->direction == DG_REF_INBOUND;
}

bool dg__store_is_stored(const dg_property_t *prop) {
  return !dg__store_is_inbound(prop);
}

bool dg__store_wants_index(const dg_property_t *p) {
  bool outbound = p->reference != NULL && p->reference->direction == DG_REF_OUTBOUND;
  return dg__store_is_stored(p) && (p->sortable || p->filterable || outbound);
}

const dg_property_t *dg__store_visible(const dg_principal_t *p, const dg_model_t *model,
                                       const char *name, bool allow_id, bool *is_id) {
  if (is_id != NULL)
    *is_id = false;
  if (name == NULL)
    return NULL;
  if (allow_id && strcasecmp(name, "id") == 0) {
    *is_id = true;
    return NULL;
  }
  const dg_property_t *prop = dg_model_property(model, name);
  return prop != NULL && dg_auth_can_see_property(p, model, prop) ? prop : NULL;
}

static void append(char *out, size_t size, size_t *len, const char *name) {
  int n = snprintf(out + *len, size - *len, "%s%s", *len ? ", " : "", name);
  if (n < 0 || (size_t)n >= size - *len) {
    /* Cut at the last whole name and say the list goes on. */
    out[*len] = '\0';
    if (*len + 6 < size)
      snprintf(out + *len, size - *len, ", ...");
    *len = size - 1;
    return;
  }
  *len += (size_t)n;
}

void dg__store_names(char *out, size_t size, const dg_principal_t *p, const dg_model_t *model,
                     bool (*keep)(const dg_property_t *prop), bool with_id) {
  size_t len = 0;
  out[0] = '\0';
  if (with_id)
    append(out, size, &len, "id");
  for (size_t i = 0; i < model->nproperties && len < size - 1; i++) {
    const dg_property_t *prop = &model->properties[i];
    if (dg_auth_can_see_property(p, model, prop) && (keep == NULL || keep(prop)))
      append(out, size, &len, prop->name);
  }
  if (out[0] == '\0')
    snprintf(out, size, "(none)");
}

int dg__store_invalid(dg_errctx_t *err, const char *param, const char *fmt, ...) {
  char rest[sizeof(err->message)];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(rest, sizeof(rest), fmt, ap);
  va_end(ap);
  return dg_errctx_set(err, DG_EINVAL, param, "Invalid argument '%s': %s", param, rest);
}

/* ---- Values in messages ------------------------------------------------------------------ */

void dg__store_show(char *out, size_t size, const json_t *value) {
  if (value == NULL)
    snprintf(out, size, "nothing");
  else
    dg_json_excerpt(value, 0, out, size);
}

static bool leads_to_model(const dg_property_t *prop) {
  return prop->reference != NULL && prop->reference->target != NULL;
}

static int no_such_reference(const dg_principal_t *p, const dg_model_t *m, const char *name,
                             const char *param, dg__store_ref_use_t use, dg_errctx_t *err) {
  char names[640];
  dg__store_names(names, sizeof(names), p, m, leads_to_model, false);
  return dg__store_invalid(err, param,
                           "%s has no Reference property '%.64s' that you can see; Reference "
                           "properties%s: %s.",
                           m->name, name, use == DG__STORE_REF_EXPAND ? " you can expand" : "",
                           names);
}

static int no_model(const dg_property_t *ref, const char *param, dg__store_ref_use_t use,
                    dg_errctx_t *err) {
  if (use == DG__STORE_REF_EXPAND)
    return dg__store_invalid(err, param,
                             "'%s' points at %s entities, which have no Data Model, so it cannot "
                             "be expanded; its value is the related entity's id.",
                             ref->name, ref->reference->target_entity_type);
  return dg__store_invalid(err, param,
                           "'%s' points at %s entities, which have no Data Model to filter "
                           "on; compare propertyName '%s' with the related entity's id instead.",
                           ref->name, ref->reference->target_entity_type, ref->name);
}

int dg__store_followed_reference(const dg_principal_t *p, const dg_model_t *m, const char *name,
                                 const char *param, dg__store_ref_use_t use,
                                 const dg_property_t **out, dg_errctx_t *err) {
  const dg_property_t *ref = dg__store_visible(p, m, name, false, NULL);
  *out = ref;
  if (ref == NULL || ref->reference == NULL)
    return no_such_reference(p, m, name, param, use, err);
  if (ref->reference->target == NULL)
    return no_model(ref, param, use, err);
  if (!dg_auth_can_read_model(p, ref->reference->target))
    return dg__store_invalid(
        err, param, "you may not read the entities that '%s' refers to, %s.", ref->name,
        use == DG__STORE_REF_EXPAND ? "so it cannot be expanded (its expandable flag is false)"
                                    : "so you cannot filter on them");
  return 0;
}
