/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Tool argument validation against a JSON Schema subset (see mcp.h for the
 * keywords). The messages are written for an assistant that must correct
 * its call: they name the parameter as a path ("paging.pageSize"), show
 * the value given and say what is allowed, in one sentence.
 *
 * Validation also shapes the arguments so tools can read them simply:
 * missing properties get a copy of their schema's default, and a real with
 * no fractional part where the schema asks for an integer becomes a JSON
 * integer (json_integer_value would read 0 from the real otherwise). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/mcp.h"

#define MAX_DEPTH 64
#define PATH_CAP 256
#define TEXT_CAP 1024
#define DESCRIBE_DEPTH 2

enum {
  T_OBJECT = 1 << 0,
  T_ARRAY = 1 << 1,
  T_STRING = 1 << 2,
  T_INTEGER = 1 << 3,
  T_NUMBER = 1 << 4,
  T_BOOLEAN = 1 << 5,
  T_NULL = 1 << 6,
};

static const struct type_name {
  const char *name;
  int bit;
  const char *noun;
} type_names[] = {
    {"object", T_OBJECT, "an object"}, {"array", T_ARRAY, "an array"},
    {"string", T_STRING, "a string"},  {"integer", T_INTEGER, "an integer"},
    {"number", T_NUMBER, "a number"},  {"boolean", T_BOOLEAN, "true or false"},
    {"null", T_NULL, "null"},
};

/* ---- Bounded text ------------------------------------------------------
 * Messages are assembled in fixed buffers; what does not fit is cut, which
 * only shortens a message, never overruns it. */
typedef struct text {
  char s[TEXT_CAP];
  size_t len;
} text_t;

static void text_add(text_t *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void text_add(text_t *t, const char *fmt, ...) {
  if (t->len >= sizeof(t->s) - 1)
    return;
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(t->s + t->len, sizeof(t->s) - t->len, fmt, ap);
  va_end(ap);
  if (n > 0)
    t->len += (size_t)n < sizeof(t->s) - t->len ? (size_t)n : sizeof(t->s) - 1 - t->len;
}

/* ---- The path of the value being checked ------------------------------ */
typedef struct vctx {
  dg_errctx_t *err;
  bool mutate; /* fill defaults and normalise integers */
  char path[PATH_CAP];
  size_t len;
} vctx_t;

/* Pushed for every member checked, so without printf; a path too long
 * for the buffer is cut. */
static size_t path_push_key(vctx_t *c, const char *key) {
  size_t saved = c->len;
  if (c->len > 0 && c->len < sizeof(c->path) - 1)
    c->path[c->len++] = '.';
  size_t k = strnlen(key, sizeof(c->path) - 1 - c->len);
  memcpy(c->path + c->len, key, k);
  c->len += k;
  c->path[c->len] = '\0';
  /* Keys come from the caller: keep control characters out of messages. */
  for (size_t i = saved; i < c->len; i++) {
    if ((unsigned char)c->path[i] < 0x20)
      c->path[i] = '?';
  }
  return saved;
}

/* Pushed for every item of every array checked, so without printf; a
 * path too long for the buffer stays cut where it was. */
static size_t path_push_index(vctx_t *c, size_t index) {
  size_t saved = c->len;
  if (sizeof(c->path) - c->len < DG_DECIMAL_MAX + 3)
    return saved;
  c->path[c->len++] = '[';
  c->len += dg_decimal(c->path + c->len, index);
  c->path[c->len++] = ']';
  c->path[c->len] = '\0';
  return saved;
}

static void path_pop(vctx_t *c, size_t saved) {
  c->len = saved;
  c->path[saved] = '\0';
}

/* ---- Values as text ------------------------------------------------------ */

/* Appends value as compact JSON cut to about 80 characters, at a
 * character boundary, with "..." when cut. */
static void text_json(text_t *t, const json_t *value) {
  char shown[DG_JSON_EXCERPT_CHARS * 4 + 16];
  dg_json_excerpt(value, JSON_REAL_PRECISION(15), shown, sizeof(shown));
  text_add(t, "%s", shown);
}

/* Shortest decimal form of a schema limit that reads back exactly. */
static void text_number(text_t *t, const json_t *n) {
  if (json_is_integer(n)) {
    text_add(t, "%lld", (long long)json_integer_value(n));
    return;
  }
  char buf[40];
  double v = json_number_value(n);
  snprintf(buf, sizeof(buf), "%.15g", v);
  if (strtod(buf, NULL) != v)
    snprintf(buf, sizeof(buf), "%.17g", v);
  text_add(t, "%s", buf);
}

/* Appends the keys of an object, comma-separated, in their order. */
static void text_keys(text_t *t, const json_t *object) {
  const char *key;
  json_t *member;
  bool first = true;
  /* jansson's iterators take a non-const object but do not change it. */
  json_object_foreach((json_t *)object, key, member) {
    text_add(t, "%s%s", first ? "" : ", ", key);
    first = false;
  }
}

/* ---- Reading the schema ------------------------------------------------ */
static int type_bit(const char *name) {
  for (size_t i = 0; i < DG_ARRAY_SIZE(type_names); i++) {
    if (strcmp(type_names[i].name, name) == 0)
      return type_names[i].bit;
  }
  return 0;
}

/* The types a "type" keyword allows as bits, or -1 when there is none. */
static int types_of(const json_t *type) {
  if (json_is_string(type))
    return type_bit(json_string_value(type));
  if (!json_is_array(type))
    return -1;
  int bits = 0;
  for (size_t i = 0; i < json_array_size(type); i++) {
    const json_t *name = json_array_get(type, i);
    if (json_is_string(name))
      bits |= type_bit(json_string_value(name));
  }
  return bits;
}

/* The types a schema allows as bits, or -1 when it has no "type". */
static int schema_types(const json_t *schema) {
  return types_of(json_object_get(schema, "type"));
}

static bool is_integral(const json_t *v) {
  if (json_is_integer(v))
    return true;
  double d = json_real_value(v);
  return json_is_real(v) && isfinite(d) && floor(d) == d;
}

/* The type bits a value satisfies: an integral number is both. */
static int value_kind(const json_t *v) {
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    return T_OBJECT;
  case JSON_ARRAY:
    return T_ARRAY;
  case JSON_STRING:
    return T_STRING;
  case JSON_INTEGER:
  case JSON_REAL:
    return is_integral(v) ? T_INTEGER | T_NUMBER : T_NUMBER;
  case JSON_TRUE:
  case JSON_FALSE:
    return T_BOOLEAN;
  default:
    return T_NULL;
  }
}

/* A count keyword's value (minLength, maxItems, ...) as a non-negative
 * size, when it is one. */
static bool count_value(const json_t *v, size_t *out) {
  if (!json_is_number(v) || json_number_value(v) < 0)
    return false;
  double d = json_number_value(v);
  *out = d >= (double)SIZE_MAX ? SIZE_MAX : (size_t)d;
  return true;
}

/* The count keyword key of schema, when it has one. */
static bool schema_count(const json_t *schema, const char *key, size_t *out) {
  return count_value(json_object_get(schema, key), out);
}

/* The keywords a value is checked against, read in one pass over the
 * schema's members: a schema holds a few of the nineteen, and looking each
 * one up by name was most of what checking a call's arguments cost. The
 * items of an array share one reading. */
typedef struct keywords {
  const json_t *schema;
  int types; /* -1: any */
  const json_t *type, *enum_values, *constant, *any_of, *one_of;
  const json_t *format, *min_length, *max_length;                  /* strings */
  const json_t *minimum, *maximum, *exclusive_min, *exclusive_max; /* numbers */
  const json_t *items, *min_items, *max_items, *unique_items;      /* arrays */
  const json_t *properties, *required, *additional;                /* objects */
} keywords_t;

static bool named(const char *key, size_t klen, const char *name) {
  return klen == strlen(name) && memcmp(key, name, klen) == 0;
}

/* Where keyword key goes in k, or NULL for one the check does not use. */
static const json_t **keyword_slot(keywords_t *k, const char *key, size_t klen) {
  switch (key[0]) {
  case 't':
    return named(key, klen, "type") ? &k->type : NULL;
  case 'e':
    return named(key, klen, "enum")               ? &k->enum_values
           : named(key, klen, "exclusiveMinimum") ? &k->exclusive_min
           : named(key, klen, "exclusiveMaximum") ? &k->exclusive_max
                                                  : NULL;
  case 'c':
    return named(key, klen, "const") ? &k->constant : NULL;
  case 'a':
    return named(key, klen, "anyOf")                  ? &k->any_of
           : named(key, klen, "additionalProperties") ? &k->additional
                                                      : NULL;
  case 'o':
    return named(key, klen, "oneOf") ? &k->one_of : NULL;
  case 'f':
    return named(key, klen, "format") ? &k->format : NULL;
  case 'm':
    return named(key, klen, "minLength")   ? &k->min_length
           : named(key, klen, "maxLength") ? &k->max_length
           : named(key, klen, "minimum")   ? &k->minimum
           : named(key, klen, "maximum")   ? &k->maximum
           : named(key, klen, "minItems")  ? &k->min_items
           : named(key, klen, "maxItems")  ? &k->max_items
                                           : NULL;
  case 'i':
    return named(key, klen, "items") ? &k->items : NULL;
  case 'u':
    return named(key, klen, "uniqueItems") ? &k->unique_items : NULL;
  case 'p':
    return named(key, klen, "properties") ? &k->properties : NULL;
  case 'r':
    return named(key, klen, "required") ? &k->required : NULL;
  default:
    return NULL;
  }
}

static void keywords_of(const json_t *schema, keywords_t *k) {
  *k = (keywords_t){.schema = schema};
  const char *key;
  size_t klen;
  json_t *v;
  json_object_keylen_foreach((json_t *)schema, key, klen, v) {
    const json_t **slot = klen > 0 ? keyword_slot(k, key, klen) : NULL;
    if (slot != NULL)
      *slot = v;
  }
  k->types = types_of(k->type);
}

static size_t utf8_chars(const char *s, size_t n) {
  size_t chars = 0;
  for (size_t i = 0; i < n; i++)
    chars += ((unsigned char)s[i] & 0xc0) != 0x80;
  return chars;
}

/* ---- Equality ------------------------------------------------------------
 * Numbers compare by value (1 equals 1.0); anything else as jansson does. */
static int compare_numbers(const json_t *a, const json_t *b) {
  if (json_is_integer(a) && json_is_integer(b)) {
    json_int_t x = json_integer_value(a), y = json_integer_value(b);
    return (x > y) - (x < y);
  }
  double x = json_number_value(a), y = json_number_value(b);
  return (x > y) - (x < y);
}

static bool values_equal(const json_t *a, const json_t *b) {
  if (json_is_number(a) && json_is_number(b))
    return compare_numbers(a, b) == 0;
  return json_equal(a, b) != 0;
}

/* ---- Describing what a schema allows --------------------------------- */
static void describe(text_t *t, const json_t *schema, int depth);

static void describe_list(text_t *t, const json_t *values) {
  for (size_t i = 0; i < json_array_size(values); i++) {
    text_add(t, "%s", i ? ", " : "");
    text_json(t, json_array_get(values, i));
  }
}

/* "1 to 50 items", "at least 1 character", "exactly 3 items". */
static void describe_count(text_t *t, const json_t *schema, const char *min_key,
                           const char *max_key, const char *unit) {
  size_t lo = 0, hi = 0;
  bool has_lo = schema_count(schema, min_key, &lo), has_hi = schema_count(schema, max_key, &hi);
  if (has_lo && has_hi && lo == hi)
    text_add(t, "exactly %zu %s%s", lo, unit, lo == 1 ? "" : "s");
  else if (has_lo && has_hi)
    text_add(t, "%zu to %zu %ss", lo, hi, unit);
  else if (has_lo)
    text_add(t, "at least %zu %s%s", lo, unit, lo == 1 ? "" : "s");
  else if (has_hi)
    text_add(t, "at most %zu %s%s", hi, unit, hi == 1 ? "" : "s");
}

static bool has_count(const json_t *schema, const char *min_key, const char *max_key) {
  size_t ignored;
  return schema_count(schema, min_key, &ignored) || schema_count(schema, max_key, &ignored);
}

/* A bound of a number: draft 2020-12 gives exclusive bounds as numbers,
 * draft 4 as a boolean flag beside minimum/maximum; both are read. */
static const json_t *bound_of(const json_t *incl, const json_t *excl, bool *exclusive) {
  *exclusive = json_is_number(excl) || (json_is_true(excl) && json_is_number(incl));
  if (json_is_number(excl))
    return excl;
  return json_is_number(incl) ? incl : NULL;
}

static const json_t *number_bound(const json_t *schema, bool upper, bool *exclusive) {
  return bound_of(json_object_get(schema, upper ? "maximum" : "minimum"),
                  json_object_get(schema, upper ? "exclusiveMaximum" : "exclusiveMinimum"),
                  exclusive);
}

static void describe_range(text_t *t, const json_t *schema) {
  bool lo_ex, hi_ex;
  const json_t *lo = number_bound(schema, false, &lo_ex), *hi = number_bound(schema, true, &hi_ex);
  if (lo != NULL && hi != NULL && !lo_ex && !hi_ex) {
    text_add(t, " from ");
    text_number(t, lo);
    text_add(t, " to ");
    text_number(t, hi);
    return;
  }
  if (lo != NULL) {
    text_add(t, lo_ex ? " greater than " : " of at least ");
    text_number(t, lo);
  }
  if (hi != NULL) {
    text_add(t, "%s", lo != NULL ? " and" : hi_ex ? "" : " of");
    text_add(t, hi_ex ? " less than " : " at most ");
    text_number(t, hi);
  }
}

static const char *format_noun(const char *format) {
  if (strcmp(format, "uuid") == 0)
    return "a GUID (8-4-4-4-12 hexadecimal digits)";
  if (strcmp(format, "uri") == 0)
    return "an absolute URI with a scheme, such as https://example.com/file.pdf";
  if (strcmp(format, "date") == 0)
    return "a date as YYYY-MM-DD";
  if (strcmp(format, "date-time") == 0)
    return "a date and time as in RFC 3339, such as 2025-01-31T13:45:00Z";
  return NULL;
}

static void describe_string(text_t *t, const json_t *schema) {
  const char *format = json_string_value(json_object_get(schema, "format"));
  const char *noun = format != NULL ? format_noun(format) : NULL;
  text_add(t, "%s", noun != NULL ? noun : "a string");
  if (has_count(schema, "minLength", "maxLength")) {
    text_add(t, noun != NULL ? ", " : " of ");
    describe_count(t, schema, "minLength", "maxLength", "character");
  }
}

static void describe_array(text_t *t, const json_t *schema, int depth) {
  const json_t *items = json_object_get(schema, "items");
  text_add(t, "an array");
  if (has_count(schema, "minItems", "maxItems")) {
    text_add(t, " of ");
    describe_count(t, schema, "minItems", "maxItems", "item");
  }
  if (json_is_object(items) && depth < DESCRIBE_DEPTH) {
    text_add(t, ", each ");
    describe(t, items, depth + 1);
  }
  if (json_is_true(json_object_get(schema, "uniqueItems")))
    text_add(t, ", all different");
}

static void describe_object(text_t *t, const json_t *schema) {
  const json_t *props = json_object_get(schema, "properties");
  text_add(t, "an object");
  if (json_object_size(props) == 0)
    return;
  text_add(t, " with properties ");
  text_keys(t, props);
}

static void describe_type(text_t *t, const json_t *schema, int bit, int depth) {
  if (bit == T_INTEGER || bit == T_NUMBER) {
    text_add(t, bit == T_INTEGER ? "an integer" : "a number");
    describe_range(t, schema);
  } else if (bit == T_STRING) {
    describe_string(t, schema);
  } else if (bit == T_ARRAY) {
    describe_array(t, schema, depth);
  } else if (bit == T_OBJECT) {
    describe_object(t, schema);
  } else {
    for (size_t i = 0; i < DG_ARRAY_SIZE(type_names); i++) {
      if (type_names[i].bit == bit)
        text_add(t, "%s", type_names[i].noun);
    }
  }
}

/* The types a schema without "type" evidently means, from its keywords. */
static int implied_types(const json_t *schema) {
  int bits = 0;
  if (json_object_get(schema, "properties") || json_object_get(schema, "required"))
    bits |= T_OBJECT;
  if (json_object_get(schema, "items") || json_object_get(schema, "uniqueItems") ||
      has_count(schema, "minItems", "maxItems"))
    bits |= T_ARRAY;
  if (json_object_get(schema, "format") || has_count(schema, "minLength", "maxLength"))
    bits |= T_STRING;
  if (json_object_get(schema, "minimum") || json_object_get(schema, "maximum") ||
      json_object_get(schema, "exclusiveMinimum") || json_object_get(schema, "exclusiveMaximum"))
    bits |= T_NUMBER;
  return bits;
}

static const json_t *alternatives(const json_t *schema) {
  const json_t *alts = json_object_get(schema, "anyOf");
  return json_is_array(alts) ? alts : json_object_get(schema, "oneOf");
}

static void describe_alternatives(text_t *t, const json_t *alts, int depth) {
  text_add(t, "one of these forms: ");
  for (size_t i = 0; i < json_array_size(alts); i++) {
    text_add(t, "%s(%zu) ", i ? "; " : "", i + 1);
    describe(t, json_array_get(alts, i), depth + 1);
  }
}

static void describe(text_t *t, const json_t *schema, int depth) {
  const json_t *alts = alternatives(schema);
  int types = schema_types(schema);
  if (json_is_array(json_object_get(schema, "enum"))) {
    text_add(t, "one of ");
    describe_list(t, json_object_get(schema, "enum"));
  } else if (json_object_get(schema, "const") != NULL) {
    text_json(t, json_object_get(schema, "const"));
  } else if (types < 0 && json_is_array(alts) && depth < DESCRIBE_DEPTH) {
    describe_alternatives(t, alts, depth);
  } else {
    types = types < 0 ? implied_types(schema) : types;
    /* "number" already covers integers. */
    if ((types & T_NUMBER) != 0)
      types &= ~T_INTEGER;
    size_t before = t->len;
    for (size_t i = 0; i < DG_ARRAY_SIZE(type_names); i++) {
      if ((types & type_names[i].bit) == 0)
        continue;
      text_add(t, "%s", t->len > before ? " or " : "");
      describe_type(t, schema, type_names[i].bit, depth);
    }
    if (t->len == before)
      text_add(t, "any value");
  }
}

/* ---- Failures ------------------------------------------------------------ */
static int fail_text(vctx_t *c, const text_t *t) {
  return dg_errctx_set(c->err, DG_EINVAL, c->path, "%s", t->s);
}

static void text_subject(text_t *t, const vctx_t *c) {
  if (c->len == 0)
    text_add(t, "Invalid arguments: got ");
  else
    text_add(t, "Invalid argument '%s': got ", c->path);
}

/* The common form: what was given and everything the schema allows. */
static int fail_value(vctx_t *c, const json_t *schema, const json_t *value, const char *note) {
  text_t t = {.len = 0};
  text_subject(&t, c);
  text_json(&t, value);
  text_add(&t, "%s; allowed: ", note);
  describe(&t, schema, 0);
  text_add(&t, ".");
  return fail_text(c, &t);
}

/* ---- Checks by keyword --------------------------------------------------- */
static int validate(vctx_t *c, const json_t *schema, json_t *value, int depth);

static int check_enum_const(vctx_t *c, const keywords_t *k, const json_t *value) {
  const json_t *options = k->enum_values, *schema = k->schema;
  if (k->constant != NULL && !values_equal(k->constant, value))
    return fail_value(c, schema, value, "");
  if (!json_is_array(options))
    return 0;
  for (size_t i = 0; i < json_array_size(options); i++) {
    if (values_equal(json_array_get(options, i), value))
      return 0;
  }
  return fail_value(c, schema, value, "");
}

static int check_number(vctx_t *c, const keywords_t *k, const json_t *value) {
  bool lo_ex, hi_ex;
  const json_t *lo = bound_of(k->minimum, k->exclusive_min, &lo_ex);
  const json_t *hi = bound_of(k->maximum, k->exclusive_max, &hi_ex);
  if (lo != NULL && compare_numbers(value, lo) < (lo_ex ? 1 : 0))
    return fail_value(c, k->schema, value, "");
  if (hi != NULL && compare_numbers(value, hi) > (hi_ex ? -1 : 0))
    return fail_value(c, k->schema, value, "");
  return 0;
}

static bool scan_digits(const char *s, size_t n, int *out) {
  int v = 0;
  for (size_t i = 0; i < n; i++) {
    if (s[i] < '0' || s[i] > '9')
      return false;
    v = v * 10 + (s[i] - '0');
  }
  *out = v;
  return true;
}

static bool date_valid(const char *s) {
  static const int days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  int y, m, d;
  if (s[4] != '-' || s[7] != '-' || !scan_digits(s, 4, &y) || !scan_digits(s + 5, 2, &m) ||
      !scan_digits(s + 8, 2, &d) || m < 1 || m > 12 || d < 1 || d > days[m - 1])
    return false;
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  return m != 2 || d <= 28 || leap;
}

/* RFC 3339 time: HH:MM:SS[.frac](Z|+HH:MM|-HH:MM), whole string. */
static bool time_valid(const char *s) {
  int h, m, sec;
  if (strlen(s) < 9 || s[2] != ':' || s[5] != ':' || !scan_digits(s, 2, &h) ||
      !scan_digits(s + 3, 2, &m) || !scan_digits(s + 6, 2, &sec) || h > 23 || m > 59 || sec > 60)
    return false;
  s += 8;
  if (*s == '.') {
    size_t n = strspn(s + 1, "0123456789");
    if (n == 0)
      return false;
    s += 1 + n;
  }
  if ((*s == 'Z' || *s == 'z') && s[1] == '\0')
    return true;
  int oh, om;
  return (*s == '+' || *s == '-') && strlen(s) == 6 && s[3] == ':' && scan_digits(s + 1, 2, &oh) &&
         scan_digits(s + 4, 2, &om) && oh <= 23 && om <= 59;
}

static bool date_time_valid(const char *s) {
  if (strlen(s) < 20 || (s[10] != 'T' && s[10] != 't'))
    return false;
  char date[11];
  memcpy(date, s, 10);
  date[10] = '\0';
  return date_valid(date) && time_valid(s + 11);
}

/* An absolute URI: a scheme (RFC 3986 3.1), a colon, then something, and
 * no whitespace, control or unsafe character anywhere. */
static bool uri_valid(const char *s) {
  size_t scheme = strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");
  bool alpha = (s[0] >= 'a' && s[0] <= 'z') || (s[0] >= 'A' && s[0] <= 'Z');
  if (scheme == 0 || !alpha || s[scheme] != ':' || s[scheme + 1] == '\0')
    return false;
  for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
    if (*p <= 0x20 || *p == 0x7f || strchr("\"<>\\^`{|}", *p) != NULL)
      return false;
  }
  return true;
}

static bool format_valid(const char *format, const char *s, size_t len) {
  /* An embedded NUL never belongs in any of these forms. */
  if (strlen(s) != len)
    return false;
  if (strcmp(format, "uuid") == 0)
    return dg_uuid_valid(s);
  if (strcmp(format, "uri") == 0)
    return uri_valid(s);
  if (strcmp(format, "date") == 0)
    return len == 10 && date_valid(s);
  if (strcmp(format, "date-time") == 0)
    return date_time_valid(s);
  return true;
}

static int check_string(vctx_t *c, const keywords_t *k, const json_t *value) {
  const char *s = json_string_value(value), *format = json_string_value(k->format);
  size_t len = json_string_length(value), lo, hi;
  bool counted = k->min_length != NULL || k->max_length != NULL;
  size_t chars = counted ? utf8_chars(s, len) : 0;
  if (counted && ((count_value(k->min_length, &lo) && chars < lo) ||
                  (count_value(k->max_length, &hi) && chars > hi))) {
    char note[48];
    snprintf(note, sizeof(note), " (%zu character%s)", chars, chars == 1 ? "" : "s");
    return fail_value(c, k->schema, value, note);
  }
  if (format != NULL && !format_valid(format, s, len))
    return fail_value(c, k->schema, value, "");
  return 0;
}

/* ---- Arrays -------------------------------------------------------------- */
static int fail_count(vctx_t *c, const json_t *schema, size_t n) {
  text_t t = {.len = 0};
  text_subject(&t, c);
  text_add(&t, "%zu item%s; allowed: ", n, n == 1 ? "" : "s");
  describe_count(&t, schema, "minItems", "maxItems", "item");
  text_add(&t, ".");
  return fail_text(c, &t);
}

static uint64_t hash_mix(uint64_t h, uint64_t v) {
  return (h ^ v) * 0x100000001b3ULL;
}

/* A hash that agrees with values_equal: equal values hash alike (numbers
 * by value, object members in any order). Deep parts are not hashed,
 * which only makes collisions likelier; equality is always checked. */
static uint64_t value_hash(const json_t *v, int depth) {
  const char *key;
  json_t *member;
  uint64_t h = (uint64_t)json_typeof(v) + 1;
  if (depth > MAX_DEPTH)
    return h;
  if (json_is_number(v)) {
    double d = json_number_value(v);
    d = d == 0 ? 0 : d; /* -0.0 equals 0 */
    memcpy(&h, &d, sizeof(h));
    return hash_mix(0xcbf29ce484222325ULL, h);
  }
  if (json_is_string(v))
    return dg_hash_bytes(json_string_value(v), json_string_length(v), 0);
  for (size_t i = 0; i < json_array_size(v); i++)
    h = hash_mix(h, value_hash(json_array_get(v, i), depth + 1));
  json_object_foreach((json_t *)v, key, member) {
    h += dg_hash_bytes(key, strlen(key), 0) * 31 + value_hash(member, depth + 1);
  }
  return h;
}

typedef struct hashed {
  uint64_t hash;
  size_t index;
} hashed_t;

static int cmp_hashed(const void *a, const void *b) {
  const hashed_t *x = a, *y = b;
  if (x->hash != y->hash)
    return x->hash < y->hash ? -1 : 1;
  return (x->index > y->index) - (x->index < y->index);
}

/* Finds the duplicate whose later item comes first: hashing and sorting
 * keeps this O(n log n) for the longest array a request can carry. */
static int find_duplicate(const json_t *array, size_t *first, size_t *second) {
  size_t n = json_array_size(array);
  hashed_t *h = malloc((n ? n : 1) * sizeof(*h));
  if (h == NULL)
    return DG_ENOMEM;
  for (size_t i = 0; i < n; i++)
    h[i] = (hashed_t){value_hash(json_array_get(array, i), 0), i};
  qsort(h, n, sizeof(*h), cmp_hashed);
  *second = SIZE_MAX;
  for (size_t k = 1; k < n; k++) {
    for (size_t l = k; l-- > 0 && h[l].hash == h[k].hash;) {
      if (h[k].index < *second &&
          values_equal(json_array_get(array, h[l].index), json_array_get(array, h[k].index))) {
        *first = h[l].index;
        *second = h[k].index;
      }
    }
  }
  free(h);
  return 0;
}

static int check_unique(vctx_t *c, const json_t *schema, const json_t *value) {
  size_t first = 0, second = 0;
  if (find_duplicate(value, &first, &second) != 0)
    return dg_errctx_set(c->err, DG_ENOMEM, c->path, "Out of memory checking '%s'.", c->path);
  if (second == SIZE_MAX)
    return 0;
  char note[96];
  snprintf(note, sizeof(note), " (item %zu repeats item %zu)", second, first);
  return fail_value(c, schema, value, note);
}

/* A real with no fractional part where only integers are allowed, as a
 * JSON integer; NULL when nothing needs to change. */
static json_t *normalized(const json_t *schema, const json_t *value) {
  if (!json_is_real(value) || !is_integral(value)) /* the common case: spare the schema */
    return NULL;
  int types = schema_types(schema);
  if (types < 0 || (types & T_INTEGER) == 0 || (types & T_NUMBER) != 0)
    return NULL;
  double d = json_real_value(value);
  return d > -9.2e18 && d < 9.2e18 ? json_integer((json_int_t)d) : NULL;
}

static int validate_with(vctx_t *c, const keywords_t *k, json_t *value, int depth);

static int check_items(vctx_t *c, const json_t *items, json_t *array, int depth) {
  keywords_t k;
  if (json_is_object(items))
    keywords_of(items, &k);
  for (size_t i = 0; i < json_array_size(array); i++) {
    json_t *item = json_array_get(array, i);
    size_t saved = path_push_index(c, i);
    int rc = json_is_object(items) ? validate_with(c, &k, item, depth + 1)
                                   : validate(c, items, item, depth + 1);
    path_pop(c, saved);
    if (rc != 0)
      return rc;
    json_t *n = c->mutate ? normalized(items, item) : NULL;
    if (n != NULL)
      json_array_set_new(array, i, n);
  }
  return 0;
}

static int check_array(vctx_t *c, const keywords_t *k, json_t *value, int depth) {
  size_t n = json_array_size(value), lo, hi;
  if ((count_value(k->min_items, &lo) && n < lo) || (count_value(k->max_items, &hi) && n > hi))
    return fail_count(c, k->schema, n);
  if (json_is_true(k->unique_items)) {
    int rc = check_unique(c, k->schema, value);
    if (rc != 0)
      return rc;
  }
  const json_t *items = k->items;
  return json_is_object(items) || json_is_boolean(items) ? check_items(c, items, value, depth) : 0;
}

/* ---- Objects ------------------------------------------------------------- */
static int check_member(vctx_t *c, const json_t *schema, json_t *object, const char *key,
                        int depth) {
  json_t *member = json_object_get(object, key);
  size_t saved = path_push_key(c, key);
  int rc = validate(c, schema, member, depth + 1);
  path_pop(c, saved);
  json_t *n = rc == 0 && c->mutate ? normalized(schema, member) : NULL;
  if (n != NULL)
    json_object_set_new(object, key, n);
  return rc;
}

static int check_required(vctx_t *c, const keywords_t *k, const json_t *value) {
  const json_t *required = k->required, *props = k->properties;
  for (size_t i = 0; i < json_array_size(required); i++) {
    const char *name = json_string_value(json_array_get(required, i));
    if (name == NULL || json_object_get(value, name) != NULL)
      continue;
    const char *about =
        json_string_value(json_object_get(json_object_get(props, name), "description"));
    path_push_key(c, name);
    return dg_errctx_set(c->err, DG_EINVAL, c->path, "Missing required argument '%s'%s%s%s.",
                         c->path, about ? " (" : "", about ? about : "", about ? ")" : "");
  }
  return 0;
}

static int fail_unknown(vctx_t *c, const json_t *props, const char *key) {
  text_t t = {.len = 0};
  size_t saved = c->len;
  text_add(&t, "Unknown argument '");
  path_push_key(c, key);
  /* The key as pushed onto the path, where control characters are gone. */
  text_add(&t, "%s'", c->path + saved + (saved > 0));
  if (saved > 0)
    text_add(&t, " in '%.*s'", (int)saved, c->path);
  text_add(&t, "; allowed: ");
  if (json_object_size(props) == 0)
    text_add(&t, "none");
  text_keys(&t, props);
  text_add(&t, ".");
  return fail_text(c, &t);
}

/* Members that "properties" does not name: refused when
 * additionalProperties is false, checked against it when it is a schema. */
static int check_additional(vctx_t *c, const keywords_t *k, json_t *value, int depth) {
  const json_t *props = k->properties, *extra = k->additional;
  const char *key;
  json_t *member;
  if (extra == NULL || json_is_true(extra))
    return 0;
  json_object_foreach(value, key, member) {
    if (json_object_get(props, key) != NULL)
      continue;
    int rc = json_is_false(extra) ? fail_unknown(c, props, key)
                                  : check_member(c, extra, value, key, depth);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static int check_properties(vctx_t *c, const keywords_t *k, json_t *value, int depth) {
  const json_t *props = k->properties;
  const char *key;
  json_t *sub;
  json_object_foreach((json_t *)props, key, sub) {
    if (json_object_get(value, key) == NULL)
      continue;
    int rc = check_member(c, sub, value, key, depth);
    if (rc != 0)
      return rc;
  }
  return 0;
}

/* Missing members get a copy of their default, itself then checked so
 * that defaults nested inside it are filled too. */
static int fill_defaults(vctx_t *c, const keywords_t *k, json_t *value, int depth) {
  const json_t *props = k->properties;
  const char *key;
  json_t *sub;
  json_object_foreach((json_t *)props, key, sub) {
    const json_t *def = json_object_get(sub, "default");
    if (def == NULL || json_object_get(value, key) != NULL)
      continue;
    if (json_object_set_new(value, key, json_deep_copy(def)) != 0)
      return dg_errctx_set(c->err, DG_ENOMEM, c->path, "Out of memory filling defaults.");
    int rc = check_member(c, sub, value, key, depth);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static int check_object(vctx_t *c, const keywords_t *k, json_t *value, int depth) {
  int rc = check_required(c, k, value);
  if (rc == 0)
    rc = check_additional(c, k, value, depth);
  if (rc == 0)
    rc = check_properties(c, k, value, depth);
  if (rc == 0 && c->mutate)
    rc = fill_defaults(c, k, value, depth);
  return rc;
}

/* ---- anyOf / oneOf --------------------------------------------------------
 * The simple form: the first branch that validates wins (oneOf does not
 * insist that only one does). Branches are tried without changing the
 * value; the winner is then applied for its defaults. */

/* How well a failed branch fits the value: 0 not at all (another type),
 * 1 by type, 2 an object carrying every property the branch requires. */
static int branch_fit(const json_t *branch, const json_t *value) {
  int types = schema_types(branch);
  const json_t *constant = json_object_get(branch, "const");
  if (types < 0)
    types = constant != NULL ? value_kind(constant) : implied_types(branch);
  if (types != 0 && (types & value_kind(value)) == 0)
    return 0;
  const json_t *required = json_object_get(branch, "required");
  if (!json_is_object(value) || json_array_size(required) == 0)
    return 1;
  for (size_t i = 0; i < json_array_size(required); i++) {
    const char *name = json_string_value(json_array_get(required, i));
    if (name != NULL && json_object_get(value, name) == NULL)
      return 1;
  }
  return 2;
}

static int fail_alternatives(vctx_t *c, const json_t *alts, const json_t *value, int closest,
                             const dg_errctx_t *detail) {
  text_t t = {.len = 0};
  text_subject(&t, c);
  text_json(&t, value);
  text_add(&t, "; allowed: ");
  describe_alternatives(&t, alts, 0);
  text_add(&t, ".");
  if (closest >= 0)
    text_add(&t, " As form (%d): %s", closest + 1, detail->message);
  return fail_text(c, &t);
}

static int check_alternatives(vctx_t *c, const json_t *alts, json_t *value, int depth) {
  dg_errctx_t trial_err, closest_err;
  int closest = -1, best = 0;
  for (size_t i = 0; i < json_array_size(alts); i++) {
    const json_t *branch = json_array_get(alts, i);
    vctx_t trial = *c;
    trial.err = &trial_err;
    trial.mutate = false;
    if (validate(&trial, branch, value, depth + 1) == 0)
      return c->mutate ? validate(c, branch, value, depth + 1) : 0;
    int fit = branch_fit(branch, value);
    /* Only a single best-fitting branch is worth explaining. */
    if (fit > best) {
      best = fit;
      closest = (int)i;
      closest_err = trial_err;
    } else if (fit == best && fit > 0) {
      closest = -1;
    }
  }
  return fail_alternatives(c, alts, value, closest, &closest_err);
}

/* ---- The walk ------------------------------------------------------------ */
static int fail_depth(vctx_t *c) {
  return dg_errctx_set(c->err, DG_EINVAL, c->path,
                       "Invalid argument '%s': nested too deeply; allowed: at most %d levels.",
                       c->path, MAX_DEPTH);
}

static int fail_forbidden(vctx_t *c, const json_t *value) {
  text_t t = {.len = 0};
  text_subject(&t, c);
  text_json(&t, value);
  text_add(&t, "; allowed: nothing here (leave it out).");
  return fail_text(c, &t);
}

static int check_by_kind(vctx_t *c, const keywords_t *k, json_t *value, int depth) {
  switch (json_typeof(value)) {
  case JSON_INTEGER:
  case JSON_REAL:
    return check_number(c, k, value);
  case JSON_STRING:
    return check_string(c, k, value);
  case JSON_ARRAY:
    return check_array(c, k, value, depth);
  case JSON_OBJECT:
    return check_object(c, k, value, depth);
  default:
    return 0;
  }
}

/* value against an object schema whose keywords k holds. */
static int validate_with(vctx_t *c, const keywords_t *k, json_t *value, int depth) {
  if (depth > MAX_DEPTH)
    return fail_depth(c);
  if (k->types >= 0 && (k->types & value_kind(value)) == 0)
    return fail_value(c, k->schema, value, "");
  int rc = check_enum_const(c, k, value);
  if (rc == 0)
    rc = check_by_kind(c, k, value, depth);
  if (rc == 0 && json_is_array(k->any_of))
    rc = check_alternatives(c, k->any_of, value, depth);
  if (rc == 0 && json_is_array(k->one_of))
    rc = check_alternatives(c, k->one_of, value, depth);
  return rc;
}

static int validate(vctx_t *c, const json_t *schema, json_t *value, int depth) {
  if (depth > MAX_DEPTH)
    return fail_depth(c);
  if (json_is_false(schema))
    return fail_forbidden(c, value);
  if (!json_is_object(schema))
    return 0;
  keywords_t k;
  keywords_of(schema, &k);
  return validate_with(c, &k, value, depth);
}

int dg_mcp_schema_validate(const json_t *schema, json_t *value, dg_errctx_t *err) {
  vctx_t c = {.err = err, .mutate = true, .len = 0};
  c.path[0] = '\0';
  if (err != NULL)
    dg_errctx_clear(err);
  if (value == NULL) {
    text_t t = {.len = 0};
    text_add(&t, "Invalid arguments: none given; allowed: ");
    describe(&t, schema, 0);
    text_add(&t, ".");
    return fail_text(&c, &t);
  }
  return validate(&c, schema, value, 0);
}
