/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Running a Saved Query: its request built from the templates and the
 * caller's inputs, and the upstream response mapped onto entities of its
 * Data Model. Mapping touches only immutable configuration and the JSON it
 * builds, so it may run on a worker thread for large responses. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "datagate/save.h"

#define MAX_PATH_BYTES (16u * 1024u)
#define MAX_HEADER_BYTES (8u * 1024u)
#define MAX_BODY_BYTES (1024u * 1024u)
#define MAX_WARNINGS 10

/* ---- Request ----------------------------------------------------------------- */

typedef struct values {
  const dg_saved_query_t *q;
  const char *const *values;
} values_t;

static int lookup(void *data, const dg_template_var_t *var, dg_template_value_t *out) {
  const values_t *v = data;
  const dg_saved_input_t *in = dg_saved_query_input(v->q, var->name);
  if (in == NULL)
    return DG_ENOENT;
  const char *text = v->values[in - v->q->inputs];
  out->kind = DG_TVAL_STRING;
  if (text == NULL)
    out->kind = DG_TVAL_ABSENT;
  else if (in->type == DG_TYPE_BOOLEAN)
    out->kind = DG_TVAL_BOOL;
  else if (dg_data_type_is_numeric(in->type))
    out->kind = DG_TVAL_NUMBER;
  /* Booleans are accepted in any case; JSON wants them in lower case. */
  if (out->kind == DG_TVAL_BOOL)
    text = strcasecmp(text, "true") == 0 ? "true" : "false";
  out->text = text;
  out->len = text ? strlen(text) : 0;
  return 0;
}

/* Path and query string; a parameter whose inputs were all left out is
 * left out too, so optional filters disappear from the URL. */
static int build_path(const values_t *v, dg_buf_t *out, dg_errctx_t *err) {
  int rc = dg_template_request_path(&v->q->request, lookup, (void *)v, out, err);
  if (rc == DG_E2BIG || rc == DG_ENOMEM)
    dg_errctx_set(err, rc, "inputs",
                  "The request URL of this Saved Query would be longer than %u bytes; give "
                  "shorter input values.",
                  MAX_PATH_BYTES);
  return rc;
}

static int build_body(const values_t *v, dg_buf_t *out, dg_errctx_t *err) {
  const dg_saved_request_t *r = &v->q->request;
  int rc = 0;
  if (r->kind == DG_REQUEST_GRAPHQL)
    rc = dg_template_graphql_body(r, lookup, (void *)v, out, err);
  else if (r->body != NULL)
    rc = dg_template_expand(r->body, DG_TEMPLATE_JSON, lookup, (void *)v, out, err);
  if (rc == DG_E2BIG || rc == DG_ENOMEM)
    dg_errctx_set(err, rc, "inputs",
                  "The request body of this Saved Query would be larger than %u bytes; give "
                  "shorter input values.",
                  MAX_BODY_BYTES);
  return rc;
}

static int build_headers(const values_t *v, dg_arena_t *arena, bool json_body,
                         dg_connector_request_t *req, dg_errctx_t *err) {
  dg_http_header_t *h;
  int rc = dg_template_request_headers(&v->q->request, lookup, (void *)v, json_body,
                                       MAX_HEADER_BYTES, arena, &h, &req->nheaders, err);
  req->headers = h;
  if (rc == DG_ENOMEM)
    dg_errctx_set(err, rc, "inputs", "out of memory");
  return rc;
}

int dg_save_query_request(const dg_saved_query_t *q, const char *const *values, dg_arena_t *arena,
                          dg_connector_request_t *req, dg_errctx_t *err) {
  values_t v = {.q = q, .values = values};
  dg_buf_t path, body;
  dg_buf_init(&path, MAX_PATH_BYTES);
  dg_buf_init(&body, MAX_BODY_BYTES);
  memset(req, 0, sizeof(*req));
  req->method = q->request.method;
  req->retry_unsafe = q->request.retry_unsafe;
  int rc = build_path(&v, &path, err);
  if (rc == 0)
    rc = build_body(&v, &body, err);
  if (rc == 0)
    rc = build_headers(&v, arena, body.len > 0, req, err);
  if (rc == 0) {
    req->path = dg_arena_strdup(arena, path.data ? path.data : "");
    req->body = body.len ? dg_arena_strndup(arena, body.data, body.len) : NULL;
    req->body_len = body.len;
    if (req->path == NULL || (body.len > 0 && req->body == NULL))
      rc = dg_errctx_set(err, DG_ENOMEM, "inputs", "out of memory");
  }
  dg_buf_free(&path);
  dg_buf_free(&body);
  return rc;
}

/* ---- Response ------------------------------------------------------------------ */

typedef struct mapper {
  const dg_saved_query_t *q;
  const bool *selected;
  size_t max_items;
  /* When set, each entity goes to sink (and is released) instead of
   * into entities, and no size limit applies. */
  int (*sink)(void *user, const json_t *entity);
  void *user;
  size_t nitems; /* entities made */
  json_t *entities;
  json_t *warnings;
  size_t nwarnings; /* all of them, also those past MAX_WARNINGS */
  size_t bytes;     /* approximate size of the entities so far */
  size_t max_bytes;
  size_t item;
  bool truncated;
} mapper_t;

static void warn(mapper_t *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void warn(mapper_t *m, const char *fmt, ...) {
  if (m->nwarnings++ >= MAX_WARNINGS)
    return;
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  json_array_append_new(m->warnings, json_string(text));
}

/* A GUID made from a name: the first 16 bytes of SHA-256(query id, name),
 * marked as version 8 (RFC 9562, custom), so that an upstream record keeps
 * the same id on every call. */
static json_t *name_guid(const dg_saved_query_t *q, const char *name, size_t len) {
  static const char hex[] = "0123456789abcdef";
  dg_buf_t in;
  dg_buf_init(&in, SIZE_MAX - 1);
  if (dg_buf_appendf(&in, "%s/", q->id) != 0 || dg_buf_append(&in, name, len) != 0) {
    dg_buf_free(&in);
    return NULL;
  }
  unsigned char d[32];
  dg_sha256(in.data, in.len, d);
  dg_buf_free(&in);
  d[6] = (unsigned char)((d[6] & 0x0f) | 0x80);
  d[8] = (unsigned char)((d[8] & 0x3f) | 0x80);
  char out[DG_UUID_LEN + 1];
  for (size_t i = 0, o = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      out[o++] = '-';
    out[o++] = hex[d[i] >> 4];
    out[o++] = hex[d[i] & 15];
  }
  out[DG_UUID_LEN] = '\0';
  return json_string(out);
}

static json_t *entity_id(mapper_t *m, const json_t *item) {
  const json_t *v = m->q->id_path ? dg_jsonpath_get(m->q->id_path, item) : NULL;
  const char *s = json_string_value(v);
  char num[32];
  if (s != NULL && dg_uuid_valid(s)) {
    char lower[DG_UUID_LEN + 1];
    for (size_t i = 0; i <= DG_UUID_LEN; i++)
      lower[i] = (char)(s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 'a' : s[i]);
    return json_string(lower);
  }
  if (s != NULL)
    return name_guid(m->q, s, strlen(s));
  if (json_is_integer(v)) {
    snprintf(num, sizeof(num), "%lld", (long long)json_integer_value(v));
    return name_guid(m->q, num, strlen(num));
  }
  /* No usable id: the item's own content names it. */
  char *text = json_dumps(item, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENCODE_ANY);
  json_t *id = text ? name_guid(m->q, text, strlen(text)) : NULL;
  free(text);
  return id;
}

/* ---- Values ----------------------------------------------------------------------- */

/* Text of a scalar for String properties; objects and arrays as JSON. */
static json_t *as_string(const json_t *v) {
  if (json_is_string(v))
    return json_incref((json_t *)v);
  char *text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
  json_t *s = text ? json_string(text) : NULL;
  free(text);
  return s;
}

static json_t *as_integer(const json_t *v, int64_t min, int64_t max) {
  int64_t n = 0;
  if (json_is_integer(v))
    n = json_integer_value(v);
  else if (json_is_real(v) && json_real_value(v) == floor(json_real_value(v)) &&
           fabs(json_real_value(v)) < 9e15)
    n = (int64_t)json_real_value(v);
  else if (!(json_is_string(v) && dg_parse_int64(json_string_value(v), min, max, &n)))
    return NULL;
  return n >= min && n <= max ? json_integer(n) : NULL;
}

/* Numbers written as strings ("250.75") become numbers; whole ones stay
 * integers. */
static json_t *as_number(const json_t *v) {
  if (json_is_number(v))
    return json_incref((json_t *)v);
  const char *s = json_string_value(v);
  int64_t n;
  if (s == NULL || !dg_saved_input_value_valid(DG_TYPE_DOUBLE, s))
    return NULL;
  if (dg_parse_int64(s, INT64_MIN, INT64_MAX, &n))
    return json_integer(n);
  return json_real(strtod(s, NULL));
}

static json_t *as_boolean(const json_t *v) {
  const char *s = json_string_value(v);
  if (json_is_boolean(v))
    return json_incref((json_t *)v);
  if (s != NULL && (strcasecmp(s, "true") == 0 || strcasecmp(s, "false") == 0))
    return json_boolean(strcasecmp(s, "true") == 0);
  if (json_is_integer(v) && (json_integer_value(v) == 0 || json_integer_value(v) == 1))
    return json_boolean(json_integer_value(v) == 1);
  return NULL;
}

/* Dates keep their first ten characters when the rest is a time. */
static json_t *as_date(const json_t *v, dg_data_type_t type) {
  const char *s = json_string_value(v);
  if (s == NULL)
    return NULL;
  if (type == DG_TYPE_DATETIME)
    return dg_saved_input_value_valid(DG_TYPE_DATETIME, s) ||
                   dg_saved_input_value_valid(DG_TYPE_DATE, s)
               ? json_string(s)
               : NULL;
  char day[11];
  dg_strlcpy(day, s, sizeof(day));
  bool date_only = strlen(s) == 10 || dg_saved_input_value_valid(DG_TYPE_DATETIME, s);
  return date_only && dg_saved_input_value_valid(DG_TYPE_DATE, day) ? json_string(day) : NULL;
}

static json_t *as_guid(const json_t *v) {
  const char *s = json_string_value(v);
  if (s == NULL || !dg_uuid_valid(s))
    return NULL;
  char lower[DG_UUID_LEN + 1];
  for (size_t i = 0; i <= DG_UUID_LEN; i++)
    lower[i] = (char)(s[i] >= 'A' && s[i] <= 'F' ? s[i] - 'A' + 'a' : s[i]);
  return json_string(lower);
}

/* The upstream value as the property's type, or NULL when it is not one. */
static json_t *convert(const json_t *v, dg_data_type_t type) {
  switch (type) {
  case DG_TYPE_STRING:
    return as_string(v);
  case DG_TYPE_INT:
    return as_integer(v, INT32_MIN, INT32_MAX);
  case DG_TYPE_LONG:
    return as_integer(v, INT64_MIN, INT64_MAX);
  case DG_TYPE_DOUBLE:
  case DG_TYPE_DECIMAL:
    return as_number(v);
  case DG_TYPE_BOOLEAN:
    return as_boolean(v);
  case DG_TYPE_DATE:
  case DG_TYPE_DATETIME:
    return as_date(v, type);
  case DG_TYPE_GUID:
    return as_guid(v);
  default:
    return NULL;
  }
}

/* ---- Entities ---------------------------------------------------------------------- */

static json_t *field_value(mapper_t *m, const dg_saved_field_t *f, const json_t *item) {
  const json_t *raw = dg_jsonpath_get(f->path, item);
  if (raw == NULL || json_is_null(raw))
    return json_null();
  json_t *v = convert(raw, f->property->type);
  if (v != NULL)
    return v;
  char *text = json_dumps(raw, JSON_COMPACT | JSON_ENCODE_ANY);
  warn(m, "item %zu: the value %.60s%s at '%s' is not a %s; %s is null", m->item, text ? text : "?",
       text && strlen(text) > 60 ? "..." : "", dg_jsonpath_text(f->path),
       dg_data_type_name(f->property->type), f->property->json_name);
  free(text);
  return json_null();
}

static json_t *entity(mapper_t *m, const json_t *item) {
  json_t *e = json_object();
  json_t *props = json_object();
  bool ok = e != NULL && props != NULL;
  for (size_t i = 0; ok && i < m->q->nfields; i++) {
    const dg_saved_field_t *f = &m->q->fields[i];
    if (m->selected[i])
      ok = json_object_set_new(props, f->property->json_name, field_value(m, f, item)) == 0;
  }
  /* An aggregate reads the fields only; the id costs a hash. */
  if (m->sink == NULL)
    ok = ok && json_object_set_new(e, "id", entity_id(m, item)) == 0;
  ok = ok && json_object_set(e, "properties", props) == 0;
  json_decref(props);
  if (!ok) {
    json_decref(e);
    return NULL;
  }
  return e;
}

/* An upper bound of a string's JSON text: quotes, and six bytes for each
 * byte that may need an escape. */
static size_t string_bound(const char *s, size_t len) {
  size_t n = len + 2;
  for (size_t i = 0; i < len; i++) {
    unsigned char ch = (unsigned char)s[i];
    if (ch < 0x20 || ch == '"' || ch == '\\')
      n += 5;
  }
  return n;
}

static size_t integer_bound(json_int_t v) {
  size_t n = v < 0 ? 2 : 1;
  for (; v >= 10 || v <= -10; v /= 10)
    n++;
  return n;
}

/* An upper bound of the bytes the result writer gives for v, found without
 * writing it: each entity is measured so, and the result is written once,
 * later. Entities are shallow (values are scalars or strings), so the
 * recursion is too. */
static size_t json_size_bound(const json_t *v) {
  size_t n = 2;
  const char *key;
  json_t *member;
  switch (json_typeof(v)) {
  case JSON_OBJECT:
    json_object_foreach((json_t *)v, key, member) {
      n += string_bound(key, strlen(key)) + json_size_bound(member) + 2;
    }
    return n;
  case JSON_ARRAY:
    for (size_t i = 0; i < json_array_size(v); i++)
      n += json_size_bound(json_array_get(v, i)) + 1;
    return n;
  case JSON_STRING:
    return string_bound(json_string_value(v), json_string_length(v));
  case JSON_INTEGER:
    return integer_bound(json_integer_value(v));
  case JSON_REAL:
    return 24; /* 15 significant digits, sign, point and exponent */
  case JSON_FALSE:
    return 5;
  default:
    return 4; /* true, null */
  }
}

/* Hands one entity to the sink; a sink's error stops the mapping. */
static int to_sink(mapper_t *m, json_t *e) {
  int rc = m->sink(m->user, e);
  json_decref(e);
  return rc;
}

/* Adds one item, unless the count or size limit is reached. */
static int add_item(void *data, json_t *item) {
  mapper_t *m = data;
  if (m->nitems == m->max_items) {
    m->truncated = true;
    return 1;
  }
  m->item++;
  json_t *e = entity(m, item);
  if (e == NULL)
    return DG_ENOMEM;
  m->nitems++;
  if (m->sink != NULL)
    return to_sink(m, e);
  size_t size = json_size_bound(e) + 1;
  if (m->bytes + size > m->max_bytes) {
    json_decref(e);
    m->truncated = true;
    return 1;
  }
  m->bytes += size;
  return json_array_append_new(m->entities, e) == 0 ? 0 : DG_ENOMEM;
}

/* Calls add_item for each item: the matches of a path with a wildcard,
 * the elements of one array, or one object. */
static int each_item(mapper_t *m, const json_t *doc) {
  const dg_jsonpath_t *p = m->q->result_path;
  if (dg_jsonpath_is_multi(p)) {
    size_t max = m->max_items < SIZE_MAX ? m->max_items + 1 : SIZE_MAX;
    int rc = dg_jsonpath_each(p, doc, max, add_item, m, NULL);
    return rc == DG_E2BIG || rc == 1 ? 0 : rc;
  }
  json_t *found = dg_jsonpath_get(p, doc);
  if (found == NULL || json_is_null(found))
    return 0;
  if (!json_is_array(found)) {
    int rc = add_item(m, found);
    return rc == 1 ? 0 : rc;
  }
  for (size_t i = 0; i < json_array_size(found); i++) {
    int rc = add_item(m, json_array_get(found, i));
    if (rc != 0)
      return rc == 1 ? 0 : rc;
  }
  return 0;
}

/* GraphQL reports failures in "errors"; without data they fail the call. */
static int graphql_errors(mapper_t *m, const json_t *doc, dg_errctx_t *err) {
  const json_t *errors = json_object_get(doc, "errors");
  if (!json_is_array(errors) || json_array_size(errors) == 0)
    return 0;
  const char *first = json_string_value(json_object_get(json_array_get(errors, 0), "message"));
  const json_t *data = json_object_get(doc, "data");
  if (data == NULL || json_is_null(data))
    return dg_errctx_set(err, DG_EUPSTREAM, "upstream",
                         "the GraphQL API answered with %zu error%s and no data: %.300s",
                         json_array_size(errors), json_array_size(errors) == 1 ? "" : "s",
                         first ? first : "(no message)");
  warn(m, "the GraphQL API reported %zu error%s along with data: %.300s", json_array_size(errors),
       json_array_size(errors) == 1 ? "" : "s", first ? first : "(no message)");
  return 0;
}

static json_t *envelope(mapper_t *m) {
  const dg_saved_query_t *q = m->q;
  if (m->nwarnings > MAX_WARNINGS)
    json_array_append_new(m->warnings,
                          json_sprintf("... and %zu more warnings", m->nwarnings - MAX_WARNINGS));
  json_t *r = json_pack("{s:s,s:s,s:s,s:O,s:I,s:b}", "savedQueryId", q->id, "name", q->name,
                        "dataModelId", q->model->id, "entities", m->entities, "count",
                        (json_int_t)json_array_size(m->entities), "truncated", m->truncated);
  if (r != NULL && m->nwarnings > 0)
    json_object_set(r, "warnings", m->warnings);
  return r;
}

/* Parses the body and maps its items through m; the warnings are in m. */
static int map_body(mapper_t *m, const char *body, size_t len, dg_errctx_t *err) {
  json_error_t jerr;
  json_t *doc = json_loadb(body, len, JSON_DECODE_ANY, &jerr);
  if (doc == NULL)
    return dg_errctx_set(err, DG_EPROTO, "upstream",
                         "the response is not JSON (line %d, column %d: %s)", jerr.line,
                         jerr.column, jerr.text);
  int rc = m->entities && m->warnings ? graphql_errors(m, doc, err) : DG_ENOMEM;
  if (rc == 0)
    rc = each_item(m, doc);
  json_decref(doc);
  if (rc == DG_ENOMEM)
    dg_errctx_set(err, DG_ENOMEM, "upstream", "the response could not be mapped: out of memory");
  return rc;
}

json_t *dg_save_query_map(const dg_saved_query_t *q, const bool *selected, const char *body,
                          size_t len, size_t max_bytes, dg_errctx_t *err) {
  mapper_t m = {.q = q,
                .selected = selected,
                .max_items = q->max_results,
                .entities = json_array(),
                .warnings = json_array(),
                .max_bytes = max_bytes};
  int rc = map_body(&m, body, len, err);
  json_t *result = rc == 0 ? envelope(&m) : NULL;
  if (rc == 0 && result == NULL)
    dg_errctx_set(err, DG_ENOMEM, "upstream", "the response could not be mapped: out of memory");
  json_decref(m.entities);
  json_decref(m.warnings);
  return result;
}

int dg_save_query_each(const dg_save_query_each_t *each, const char *body, size_t len, bool *more,
                       json_t **warnings, dg_errctx_t *err) {
  mapper_t m = {.q = each->q,
                .selected = each->selected,
                .max_items = each->max_items,
                .sink = each->sink,
                .user = each->user,
                .entities = json_array(),
                .warnings = json_array()};
  int rc = map_body(&m, body, len, err);
  if (rc == 0 && m.nwarnings > MAX_WARNINGS)
    json_array_append_new(m.warnings,
                          json_sprintf("... and %zu more warnings", m.nwarnings - MAX_WARNINGS));
  *more = m.truncated;
  *warnings = rc == 0 && m.nwarnings > 0 ? json_incref(m.warnings) : NULL;
  json_decref(m.entities);
  json_decref(m.warnings);
  return rc;
}
