/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Values as the store keeps them: each property type has one normal form,
 * so that comparisons in SQL are right (dates compare chronologically as
 * text because they are all written the same way, GUIDs compare equal in
 * any case because they are all lower case). */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "store/internal.h"

/* Longest text value the store accepts from anywhere. */
#define TEXT_VALUE_MAX (64 * 1024)
#define DATETIME_LEN 24 /* "2024-03-01T09:30:00.000Z" */

typedef struct datetime {
  int year, month, day, hour, minute, second, millis;
  int offset_minutes;
} datetime_t;

static bool is_leap(int y) {
  return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
}

static int days_in_month(int y, int m) {
  static const int days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

/* Reads exactly n digits. */
static bool digits(const char **s, int n, int *out) {
  int v = 0;
  for (int i = 0; i < n; i++) {
    if (!isdigit((unsigned char)(*s)[i]))
      return false;
    v = v * 10 + ((*s)[i] - '0');
  }
  *s += n;
  *out = v;
  return true;
}

static bool expect(const char **s, char c) {
  if (**s != c)
    return false;
  (*s)++;
  return true;
}

static bool parse_date_part(const char **s, datetime_t *t) {
  if (!digits(s, 4, &t->year) || !expect(s, '-') || !digits(s, 2, &t->month) || !expect(s, '-') ||
      !digits(s, 2, &t->day))
    return false;
  return t->year >= 1 && t->month >= 1 && t->month <= 12 && t->day >= 1 &&
         t->day <= days_in_month(t->year, t->month);
}

/* ".123456" -> 123 milliseconds (more digits are cut, not rounded). */
static bool parse_fraction(const char **s, datetime_t *t) {
  if (**s != '.' && **s != ',')
    return true;
  (*s)++;
  int n = 0, ms = 0;
  while (isdigit((unsigned char)**s)) {
    if (n < 3)
      ms = ms * 10 + (**s - '0');
    n++;
    (*s)++;
  }
  for (int i = n; i < 3; i++)
    ms *= 10;
  t->millis = ms;
  return n >= 1 && n <= 9;
}

static bool parse_time_part(const char **s, datetime_t *t) {
  if (!digits(s, 2, &t->hour) || !expect(s, ':') || !digits(s, 2, &t->minute))
    return false;
  if (**s == ':' && (!expect(s, ':') || !digits(s, 2, &t->second) || !parse_fraction(s, t)))
    return false;
  return t->hour <= 23 && t->minute <= 59 && t->second <= 59;
}

/* "Z", "+02:00", "-0530", "+02" or nothing (UTC). */
static bool parse_zone(const char **s, datetime_t *t) {
  if (**s == '\0')
    return true;
  if (**s == 'Z' || **s == 'z') {
    (*s)++;
    return **s == '\0';
  }
  int sign = **s == '-' ? -1 : 1, h = 0, m = 0;
  if (**s != '+' && **s != '-')
    return false;
  (*s)++;
  if (!digits(s, 2, &h))
    return false;
  if (**s == ':')
    (*s)++;
  if (**s != '\0' && !digits(s, 2, &m))
    return false;
  t->offset_minutes = sign * (h * 60 + m);
  return **s == '\0' && h <= 23 && m <= 59;
}

/* Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant). */
static int64_t days_from_civil(int64_t y, int m, int d) {
  y -= m <= 2;
  int64_t era = (y >= 0 ? y : y - 399) / 400;
  int64_t yoe = y - era * 400;
  int64_t doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  int64_t doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + doe - 719468;
}

/* Writes t shifted to UTC as "YYYY-MM-DDTHH:MM:SS.mmmZ". */
static bool format_utc(const datetime_t *t, char out[DATETIME_LEN + 1]) {
  int64_t secs = days_from_civil(t->year, t->month, t->day) * 86400 + t->hour * 3600 +
                 t->minute * 60 + t->second - (int64_t)t->offset_minutes * 60;
  time_t tt = (time_t)secs;
  struct tm tm;
  if (gmtime_r(&tt, &tm) == NULL || tm.tm_year + 1900 < 1 || tm.tm_year + 1900 > 9999)
    return false;
  char ms[8];
  snprintf(ms, sizeof(ms), ".%03dZ", t->millis % 1000);
  return strftime(out, DATETIME_LEN + 1 - 5, "%Y-%m-%dT%H:%M:%S", &tm) == DATETIME_LEN - 5 &&
         dg_strlcpy(out + DATETIME_LEN - 5, ms, 6);
}

static bool parse_datetime(const char *s, char out[DATETIME_LEN + 1]) {
  datetime_t t = {0};
  if (!parse_date_part(&s, &t))
    return false;
  if (*s == 'T' || *s == 't' || *s == ' ') {
    s++;
    if (!parse_time_part(&s, &t) || !parse_zone(&s, &t))
      return false;
  } else if (*s != '\0') {
    return false;
  }
  return format_utc(&t, out);
}

static bool parse_date(const char *s) {
  datetime_t t = {0};
  return parse_date_part(&s, &t) && *s == '\0';
}

/* A decimal number: digits with an optional sign, point and exponent; no
 * hexadecimal, infinity or NaN, which strtod would also accept. */
static bool parse_number(const char *s, double *out) {
  if (*s == '\0' || strspn(s, "+-0123456789.eE") != strlen(s))
    return false;
  char *end = NULL;
  errno = 0;
  double d = strtod(s, &end);
  if (*end != '\0' || errno == ERANGE || !isfinite(d))
    return false;
  *out = d;
  return true;
}

static const char *allowed_text(dg_data_type_t type) {
  switch (type) {
  case DG_TYPE_STRING:
    return "a string";
  case DG_TYPE_INT:
    return "a whole number from -2147483648 to 2147483647";
  case DG_TYPE_LONG:
    return "a whole number";
  case DG_TYPE_DOUBLE:
  case DG_TYPE_DECIMAL:
    return "a number such as 12.5";
  case DG_TYPE_BOOLEAN:
    return "true or false";
  case DG_TYPE_DATE:
    return "a date written YYYY-MM-DD, such as 2024-03-01";
  case DG_TYPE_DATETIME:
    return "a date and time in ISO 8601, such as 2024-03-01T09:30:00Z";
  case DG_TYPE_GUID:
    return "a GUID (8-4-4-4-12 hexadecimal digits)";
  default:
    return "a GUID (8-4-4-4-12 hexadecimal digits): the related entity's id, for example from "
           "lookup_by_keyword";
  }
}

static int bad_value(const dg_property_t *prop, const json_t *value, const char *param,
                     dg_errctx_t *err) {
  char shown[160];
  dg__store_show(shown, sizeof(shown), value);
  dg_data_type_t type = prop ? prop->type : DG_TYPE_GUID;
  return dg_errctx_set(
      err, DG_EINVAL, param, "Invalid argument '%s': got %s; %s is %s, so allowed: %s, or null.",
      param, shown, prop ? prop->name : "id", dg_data_type_name(type), allowed_text(type));
}

static int set_text(dg_store_value_t *out, const char *s, size_t len, dg_arena_t *arena) {
  char *copy = dg_arena_strndup(arena, s, len);
  if (copy == NULL)
    return DG_ENOMEM;
  out->kind = DG_STORE_TEXT;
  out->text = copy;
  out->len = len;
  return 0;
}

/* The text of a JSON scalar: strings as they are, numbers and booleans
 * written out, so that "value": 5 and "value": "5" mean the same. */
static bool scalar_text(const json_t *v, char *buf, size_t size, const char **text, size_t *len) {
  if (json_is_string(v)) {
    *text = json_string_value(v);
    *len = json_string_length(v);
    return *len <= TEXT_VALUE_MAX && strlen(*text) == *len;
  }
  if (dg_json_scalar_text(v, buf, size) == NULL)
    return false;
  *text = buf;
  *len = strlen(buf);
  return true;
}

static bool parse_int(const dg_property_t *prop, const json_t *v, const char *text,
                      dg_store_value_t *out) {
  int64_t min = prop->type == DG_TYPE_INT ? INT32_MIN : INT64_MIN;
  int64_t max = prop->type == DG_TYPE_INT ? INT32_MAX : INT64_MAX;
  if (json_is_real(v)) {
    double d = json_real_value(v);
    if (floor(d) != d || d < -9.2e18 || d > 9.2e18)
      return false;
    out->i = (int64_t)d;
  } else if (!dg_parse_int64(text, min, max, &out->i)) {
    return false;
  }
  out->kind = DG_STORE_INT;
  return out->i >= min && out->i <= max;
}

static bool parse_bool(const char *text, dg_store_value_t *out) {
  out->kind = DG_STORE_BOOL;
  out->b = dg_strieq_n(text, strlen(text), "true");
  return out->b || dg_strieq_n(text, strlen(text), "false");
}

static int parse_textual(const dg_property_t *prop, const char *text, size_t len, dg_arena_t *arena,
                         dg_store_value_t *out) {
  dg_data_type_t type = prop ? prop->type : DG_TYPE_GUID;
  char dt[DATETIME_LEN + 1];
  switch (type) {
  case DG_TYPE_STRING:
    return set_text(out, text, len, arena);
  case DG_TYPE_DATE:
    return parse_date(text) ? set_text(out, text, len, arena) : DG_EINVAL;
  case DG_TYPE_DATETIME:
    return parse_datetime(text, dt) ? set_text(out, dt, strlen(dt), arena) : DG_EINVAL;
  default:
    if (!dg_uuid_valid(text) || len != DG_UUID_LEN)
      return DG_EINVAL;
    int rc = set_text(out, text, len, arena);
    for (size_t i = 0; rc == 0 && i < len; i++)
      ((char *)out->text)[i] = (char)tolower((unsigned char)text[i]);
    return rc;
  }
}

static int parse_typed(const dg_property_t *prop, const json_t *v, const char *text, size_t len,
                       dg_arena_t *arena, dg_store_value_t *out) {
  dg_data_type_t type = prop ? prop->type : DG_TYPE_GUID;
  switch (type) {
  case DG_TYPE_INT:
  case DG_TYPE_LONG:
    return parse_int(prop, v, text, out) ? 0 : DG_EINVAL;
  case DG_TYPE_DOUBLE:
  case DG_TYPE_DECIMAL:
    out->kind = DG_STORE_REAL;
    if (json_is_number(v)) {
      out->d = json_number_value(v);
      return 0;
    }
    return parse_number(text, &out->d) ? 0 : DG_EINVAL;
  case DG_TYPE_BOOLEAN:
    return parse_bool(text, out) ? 0 : DG_EINVAL;
  default:
    return json_is_string(v) || type == DG_TYPE_STRING ? parse_textual(prop, text, len, arena, out)
                                                       : DG_EINVAL;
  }
}

int dg_store_value_parse(const dg_property_t *prop, const json_t *value, const char *param,
                         dg_arena_t *arena, dg_store_value_t *out, dg_errctx_t *err) {
  memset(out, 0, sizeof(*out));
  out->kind = DG_STORE_NULL;
  if (prop != NULL && dg__store_is_inbound(prop))
    return dg_errctx_set(err, DG_EINVAL, param,
                         "Invalid argument '%s': %s is an Inbound reference (a collection derived "
                         "from the related entities) and holds no value of its own.",
                         param, prop->name);
  if (value == NULL || json_is_null(value))
    return 0;
  char buf[64];
  const char *text = NULL;
  size_t len = 0;
  if (!scalar_text(value, buf, sizeof(buf), &text, &len))
    return bad_value(prop, value, param, err);
  int rc = parse_typed(prop, value, text, len, arena, out);
  if (rc == DG_ENOMEM)
    return dg_errctx_set(err, rc, param, "Out of memory while reading '%s'.", param);
  return rc != 0 ? bad_value(prop, value, param, err) : 0;
}
