/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* PostgreSQL result values as the store's values (pg_internal.h), read
 * from the text format by the column's type so that the result builder
 * writes them exactly as it writes SQLite's: integers as integers
 * (numeric too, when whole, as SQLite's sum of integers is), floating
 * point as reals, booleans as booleans, the rest as text. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "store/pg_internal.h"

/* Type OIDs of pg_type.h, which libpq does not install. */
enum {
  OID_BOOL = 16,
  OID_INT8 = 20,
  OID_INT2 = 21,
  OID_INT4 = 23,
  OID_FLOAT4 = 700,
  OID_FLOAT8 = 701,
  OID_NUMERIC = 1700,
};

static bool parse_int(const char *s, int64_t *out) {
  char *end = NULL;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || end == s || *end != '\0')
    return false;
  *out = v;
  return true;
}

static void read_number(const char *s, Oid type, dg_store_value_t *v) {
  if (type != OID_FLOAT4 && type != OID_FLOAT8 && parse_int(s, &v->i)) {
    v->kind = DG_STORE_INT;
    return;
  }
  v->kind = DG_STORE_REAL;
  v->d = strtod(s, NULL);
}

void dg__pg_row(const PGresult *res, int row, int first, size_t n, dg_store_value_t *out) {
  for (size_t i = 0; i < n; i++) {
    int c = first + (int)i;
    dg_store_value_t *v = &out[i];
    memset(v, 0, sizeof(*v));
    if (PQgetisnull(res, row, c)) {
      v->kind = DG_STORE_NULL;
      continue;
    }
    const char *s = PQgetvalue(res, row, c);
    switch (PQftype(res, c)) {
    case OID_BOOL:
      v->kind = DG_STORE_BOOL;
      v->b = s[0] == 't';
      break;
    case OID_INT2:
    case OID_INT4:
    case OID_INT8:
    case OID_FLOAT4:
    case OID_FLOAT8:
    case OID_NUMERIC:
      read_number(s, PQftype(res, c), v);
      break;
    default:
      v->kind = DG_STORE_TEXT;
      v->text = s;
      v->len = (size_t)PQgetlength(res, row, c);
    }
  }
}
