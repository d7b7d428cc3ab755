/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Result JSON shared by the drivers, written as text on the worker thread:
 * a row's values become an entity with camelCased keys, typed by the
 * property (a Boolean stored as an integer comes back as true or false).
 * Writing text directly, rather than building jansson values and
 * serialising them later, is most of what an answer costs beyond its SQL.
 * Every buffer has the result budget as its maximum, so a huge answer stops
 * early with a clear error instead of filling memory. */
#include <stdint.h>
#include <string.h>

#include "store/internal.h"

static int put_null(dg_buf_t *out) {
  int rc = dg_buf_room(out, 4);
  if (rc != 0)
    return rc;
  memcpy(out->data + out->len, "null", 5);
  out->len += 4;
  return 0;
}

int dg__store_put_value(dg_buf_t *out, const dg_property_t *prop, const dg_store_value_t *v) {
  bool boolean = prop != NULL && prop->type == DG_TYPE_BOOLEAN;
  switch (v->kind) {
  case DG_STORE_INT:
    if (boolean)
      return dg_buf_append_str(out, v->i != 0 ? "true" : "false");
    return dg_json_write_integer(out, v->i);
  case DG_STORE_REAL:
    return dg_json_write_real(out, v->d);
  case DG_STORE_BOOL:
    return dg_buf_append_str(out, v->b ? "true" : "false");
  case DG_STORE_TEXT:
    return dg_json_write_string(out, v->text, v->len);
  default:
    return put_null(out);
  }
}

/* ,"key": of one member, the comma unless it is the first, in one
 * reservation: a page of entities writes thousands of members, and a call
 * per piece was most of their cost. Keys are catalog names (a letter, then
 * letters, digits or _, checked at load), so they need no escaping. */
static int put_key(dg_buf_t *out, const char *key, size_t len, bool comma) {
  int rc = dg_buf_room(out, len + 3 + (comma ? 1 : 0));
  if (rc != 0)
    return rc;
  char *w = out->data + out->len;
  if (comma)
    *w++ = ',';
  *w++ = '"';
  memcpy(w, key, len);
  w += len;
  *w++ = '"';
  *w++ = ':';
  *w = '\0';
  out->len = (size_t)(w - out->data);
  return 0;
}

/* "key":value of one property. */
static int put_member(dg_buf_t *out, const char *key, const dg_property_t *prop,
                      const dg_store_value_t *v) {
  int rc = put_key(out, key, strlen(key), false);
  return rc == 0 ? dg__store_put_value(out, prop, v) : rc;
}

int dg__store_put_members(dg_buf_t *out, const dg__sql_cols_t *cols, const dg_store_value_t *row) {
  int rc = 0;
  bool first = true;
  for (size_t i = 1; rc == 0 && i < cols->n; i++) {
    const dg__sql_col_t *col = &cols->cols[i];
    if (!col->emit)
      continue;
    const char *key = col->prop->json_name;
    rc = put_key(out, key, col->key_len > 0 ? col->key_len : strlen(key), !first);
    if (rc == 0)
      rc = dg__store_put_value(out, col->prop, &row[i]);
    first = false;
  }
  return rc;
}

int dg__store_put_flat(dg_buf_t *out, const dg__sql_cols_t *cols, const dg_store_value_t *row) {
  int rc = dg_buf_append(out, "{", 1);
  size_t before = out->len;
  if (rc == 0)
    rc = dg__store_put_members(out, cols, row);
  if (rc == 0 && out->len > before)
    rc = dg_buf_append(out, ",", 1);
  if (rc == 0)
    rc = put_member(out, "id", NULL, &row[0]);
  return rc == 0 ? dg_buf_append(out, "}", 1) : rc;
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
