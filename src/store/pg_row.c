/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* PostgreSQL result values as the store's values (pg_internal.h), read
 * from the text format by the column's type so that the result builder
 * writes them exactly as it writes SQLite's: integers as integers
 * (numeric too, when whole, as SQLite's sum of integers is), floating
 * point as reals, booleans as booleans, the rest as text. */
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

/* An integer as PostgreSQL writes one (an optional minus, then digits),
 * read without strtoll's locale and whitespace handling; false for
 * anything else or beyond int64, which then goes as a real. */
static bool parse_int(const char *s, size_t len, int64_t *out) {
  bool neg = len > 0 && s[0] == '-';
  size_t i = neg ? 1 : 0;
  if (i == len)
    return false;
  /* Accumulated negative: INT64_MIN has no positive counterpart. */
  int64_t v = 0;
  for (; i < len; i++) {
    unsigned d = (unsigned)(s[i] - '0');
    if (d > 9 || v < (INT64_MIN + (int64_t)d) / 10)
      return false;
    v = v * 10 - (int64_t)d;
  }
  if (!neg && v == INT64_MIN)
    return false;
  *out = neg ? v : -v;
  return true;
}

/* A decimal of at most 15 digits and 22 decimals (PostgreSQL writes
 * numeric and floats so), as strtod would read it but without its general
 * case: the digits and the power of ten are both exact doubles, so their
 * quotient is the correctly rounded value (Clinger's fast path). False
 * for anything else (exponents, NaN, longer), which goes to strtod. */
static bool parse_short_decimal(const char *s, size_t len, double *out) {
  static const double pow10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                 1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  bool neg = len > 0 && s[0] == '-';
  size_t i = neg ? 1 : 0, digits = 0, decimals = 0;
  bool point = false;
  int64_t m = 0;
  if (i == len)
    return false;
  for (; i < len; i++) {
    if (s[i] == '.' && !point) {
      point = true;
      continue;
    }
    unsigned d = (unsigned)(s[i] - '0');
    if (d > 9 || ++digits > 15)
      return false;
    m = m * 10 + (int64_t)d;
    decimals += point;
  }
  if (digits == 0 || decimals >= DG_ARRAY_SIZE(pow10))
    return false;
  double v = (double)m / pow10[decimals];
  *out = neg ? -v : v;
  return true;
}

static void read_number(const char *s, size_t len, Oid type, dg_store_value_t *v) {
  if (type != OID_FLOAT4 && type != OID_FLOAT8 && parse_int(s, len, &v->i)) {
    v->kind = DG_STORE_INT;
    return;
  }
  v->kind = DG_STORE_REAL;
  if (!parse_short_decimal(s, len, &v->d))
    v->d = strtod(s, NULL);
}

void dg__pg_row(const PGresult *res, int row, int first, size_t n, dg_store_value_t *out) {
  for (size_t i = 0; i < n; i++) {
    int c = first + (int)i;
    dg_store_value_t *v = &out[i];
    memset(v, 0, sizeof(*v));
    /* A null has length 0: only an empty value needs the null flag asked. */
    size_t len = (size_t)PQgetlength(res, row, c);
    if (len == 0 && PQgetisnull(res, row, c)) {
      v->kind = DG_STORE_NULL;
      continue;
    }
    const char *s = PQgetvalue(res, row, c);
    Oid type = PQftype(res, c);
    switch (type) {
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
      read_number(s, len, type, v);
      break;
    default:
      v->kind = DG_STORE_TEXT;
      v->text = s;
      v->len = len;
    }
  }
}
