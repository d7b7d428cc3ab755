/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* saved_queries.json: Saved Queries (Live Data Providers). Each names a
 * connector and a Data Model, declares its inputs, says how to build the
 * request from them (templates) and how to map the response onto the
 * model's properties (response paths). Templates and paths are compiled
 * here, once, and every placeholder is checked against the inputs. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog/internal.h"
#include "datagate/text.h"

static const char *const input_type_names[] = {
    "String", "Int", "Long", "Double", "Decimal", "Boolean", "Date", "DateTime", "Guid", NULL,
};
static const dg_data_type_t input_types[] = {
    DG_TYPE_STRING,  DG_TYPE_INT,  DG_TYPE_LONG,     DG_TYPE_DOUBLE, DG_TYPE_DECIMAL,
    DG_TYPE_BOOLEAN, DG_TYPE_DATE, DG_TYPE_DATETIME, DG_TYPE_GUID,
};

typedef struct input_raw {
  dg_saved_input_t in;
  int type;
} input_raw_t;

typedef struct field_raw {
  dg_saved_field_t f;
  const char *property;
  const char *path;
} field_raw_t;

typedef struct query_raw {
  dg_saved_query_t q;
  dg__cfg_t *cfg; /* for the request's templates */
  const char *connector;
  const char *model;
  const char *result_path;
  const char *id_path;
} query_raw_t;

/* ---- Input values --------------------------------------------------------- */

static bool all_digits(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)s[i]))
      return false;
  }
  return n > 0;
}

/* The JSON number grammar, so that a value can go into a body unquoted. */
static bool is_json_number(const char *s, bool allow_exponent) {
  const char *p = s + (*s == '-');
  size_t n = strspn(p, "0123456789");
  if (n == 0 || (p[0] == '0' && n > 1))
    return false;
  p += n;
  if (*p == '.') {
    n = strspn(++p, "0123456789");
    if (n == 0)
      return false;
    p += n;
  }
  if (allow_exponent && (*p == 'e' || *p == 'E')) {
    p += (p[1] == '+' || p[1] == '-') ? 2 : 1;
    n = strspn(p, "0123456789");
    if (n == 0)
      return false;
    p += n;
  }
  return *p == '\0' && strlen(s) <= 64;
}

static bool is_date(const char *s) {
  static const int days[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (strlen(s) < 10 || !all_digits(s, 4) || s[4] != '-' || !all_digits(s + 5, 2) || s[7] != '-' ||
      !all_digits(s + 8, 2))
    return false;
  int y = (s[0] - '0') * 1000 + (s[1] - '0') * 100 + (s[2] - '0') * 10 + (s[3] - '0');
  int m = (s[5] - '0') * 10 + (s[6] - '0'), d = (s[8] - '0') * 10 + (s[9] - '0');
  bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
  if (m < 1 || m > 12 || d < 1 || d > days[m - 1])
    return false;
  return !(m == 2 && d == 29 && !leap);
}

static bool is_two(const char *s, int max) {
  return all_digits(s, 2) && (s[0] - '0') * 10 + (s[1] - '0') <= max;
}

/* YYYY-MM-DDTHH:MM[:SS[.fraction]][Z|+HH:MM|-HH:MM] */
static bool is_datetime(const char *s) {
  if (!is_date(s) || s[10] != 'T' || !is_two(s + 11, 23) || s[13] != ':' || !is_two(s + 14, 59))
    return false;
  const char *p = s + 16;
  if (*p == ':') {
    if (!is_two(p + 1, 60))
      return false;
    p += 3;
    if (*p == '.') {
      size_t n = strspn(++p, "0123456789");
      if (n == 0 || n > 9)
        return false;
      p += n;
    }
  }
  if (*p == 'Z')
    return p[1] == '\0';
  if (*p == '+' || *p == '-')
    return is_two(p + 1, 23) && p[3] == ':' && is_two(p + 4, 59) && p[6] == '\0';
  return *p == '\0';
}

bool dg_saved_input_value_valid(dg_data_type_t type, const char *text) {
  int64_t v;
  switch (type) {
  case DG_TYPE_STRING:
    return true;
  case DG_TYPE_INT:
    return dg_parse_int64(text, INT32_MIN, INT32_MAX, &v);
  case DG_TYPE_LONG:
    return dg_parse_int64(text, INT64_MIN, INT64_MAX, &v);
  case DG_TYPE_DOUBLE:
    return is_json_number(text, true);
  case DG_TYPE_DECIMAL:
    return is_json_number(text, false);
  case DG_TYPE_BOOLEAN:
    return strcasecmp(text, "true") == 0 || strcasecmp(text, "false") == 0;
  case DG_TYPE_DATE:
    return strlen(text) == 10 && is_date(text);
  case DG_TYPE_DATETIME:
    return is_datetime(text);
  case DG_TYPE_GUID:
    return dg_uuid_valid(text);
  default:
    return false;
  }
}

const char *dg_saved_input_value_hint(dg_data_type_t type) {
  switch (type) {
  case DG_TYPE_STRING:
    return "any text";
  case DG_TYPE_INT:
    return "a whole number from -2147483648 to 2147483647, such as 25";
  case DG_TYPE_LONG:
    return "a whole number from -9223372036854775808 to 9223372036854775807";
  case DG_TYPE_DOUBLE:
    return "a number such as -12.5 or 3e2";
  case DG_TYPE_DECIMAL:
    return "a decimal number such as 1450.25";
  case DG_TYPE_BOOLEAN:
    return "true or false";
  case DG_TYPE_DATE:
    return "a date as YYYY-MM-DD, such as 2025-03-31";
  case DG_TYPE_DATETIME:
    return "a date and time as YYYY-MM-DDTHH:MM:SS with an optional Z or +HH:MM offset";
  case DG_TYPE_GUID:
    return "a GUID such as 8a03cbc2-7f01-4d47-bdf0-0755336a3a70";
  default:
    return "nothing (this type cannot be an input)";
  }
}

/* ---- Inputs ------------------------------------------------------------------ */

static void check_name(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  const char *s = json_string_value(v);
  bool ok = isalpha((unsigned char)s[0]) || s[0] == '_';
  for (const char *c = s; ok && *c != '\0'; c++)
    ok = isalnum((unsigned char)*c) || *c == '_';
  if (!ok)
    dg__cfg_error(cfg, path, "'%s' is not a valid name (a letter or _, then letters, digits or _)",
                  s);
}

/* "default" may be written as a string, a number or a boolean. */
static void parse_default(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  input_raw_t *raw = obj;
  raw->in.default_value = NULL;
  if (v == NULL || json_is_null(v))
    return;
  char *text = NULL;
  if (json_is_string(v))
    text = dg_arena_strdup(cfg->arena, json_string_value(v));
  else if (json_is_integer(v))
    text = dg_arena_sprintf(cfg->arena, "%lld", (long long)json_integer_value(v));
  else if (json_is_real(v))
    text = dg_arena_sprintf(cfg->arena, "%.17g", json_real_value(v));
  else if (json_is_boolean(v))
    text = dg_arena_strdup(cfg->arena, json_is_true(v) ? "true" : "false");
  else {
    dg__cfg_error(cfg, path, "must be a string, a number or a boolean");
    return;
  }
  if (text == NULL)
    cfg->oom = true;
  raw->in.default_value = text;
}

#define I(field) offsetof(input_raw_t, field)
static const dg__cfg_field_t input_fields[] = {
    {"name", DG__CFG_STRING, true, NULL, 0, 1, 64, NULL, I(in.name), 0, check_name},
    {"type", DG__CFG_ENUM, false, NULL, 0, 0, 0, input_type_names, I(type), 0, NULL},
    {"required", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, I(in.required), 0, NULL},
    {"default", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, parse_default},
    {"description", DG__CFG_STRING, false, "", 0, 0, 4096, NULL, I(in.description), 0, NULL},
};
#undef I

static void finish_input(dg__cfg_t *cfg, input_raw_t *raw, const char *path) {
  raw->in.type = input_types[raw->type];
  if (raw->in.name == NULL)
    raw->in.name = "";
  char at[DG__CFG_PATH_MAX];
  dg__cfg_path_key(at, path, "default");
  const char *d = raw->in.default_value;
  if (d != NULL && !dg_saved_input_value_valid(raw->in.type, d))
    dg__cfg_error(cfg, at, "'%s' is not a valid %s (expected %s)", d, input_type_names[raw->type],
                  dg_saved_input_value_hint(raw->in.type));
  if (d != NULL && raw->in.required)
    dg__cfg_error(cfg, at, "a required input has no use for a default");
}

/* data is the list's path. */
static void parse_input(dg__cfg_t *cfg, const json_t *item, void *list, size_t i, const char *at,
                        const void *data) {
  dg_saved_input_t *inputs = list;
  input_raw_t raw;
  memset(&raw, 0, sizeof(raw));
  dg__cfg_parse_object(cfg, item, at, input_fields, DG_ARRAY_SIZE(input_fields), &raw);
  finish_input(cfg, &raw, at);
  inputs[i] = raw.in;
  for (size_t j = 0; j < i; j++) {
    if (strcasecmp(inputs[i].name, inputs[j].name) == 0)
      dg__cfg_error(cfg, at, "duplicate input name '%s' (same as %s/%zu, ignoring case)",
                    inputs[i].name, (const char *)data, j);
  }
}

static void parse_inputs(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_saved_query_t *q = &((query_raw_t *)obj)->q;
  q->inputs = dg__cfg_list(cfg, v, path, "inputs", sizeof(dg_saved_input_t), &q->ninputs,
                           parse_input, path);
}

/* ---- Templates ------------------------------------------------------------------- */

static const char *input_names(dg__cfg_t *cfg, const dg_saved_query_t *q) {
  const char **names = dg_arena_calloc(cfg->arena, q->ninputs + 1, sizeof(*names));
  if (names == NULL)
    return "";
  for (size_t i = 0; i < q->ninputs; i++)
    names[i] = q->inputs[i].name;
  return q->ninputs ? dg__cfg_join(cfg, names, q->ninputs) : "none";
}

/* Every placeholder must name a declared input (exactly as declared); in
 * a path, one that always has a value. */
static void check_vars(dg__cfg_t *cfg, const dg_saved_query_t *q, const dg_template_t *t,
                       bool in_path, const char *path) {
  for (size_t i = 0; i < dg_template_nvars(t); i++) {
    const dg_template_var_t *var = dg_template_var(t, i);
    const dg_saved_input_t *in = NULL;
    for (size_t j = 0; j < q->ninputs && in == NULL; j++)
      in = strcmp(q->inputs[j].name, var->name) == 0 ? &q->inputs[j] : NULL;
    if (var->session)
      dg__cfg_error(cfg, path, "{SESSION:%s}: session values exist only in save action trees",
                    var->name);
    else if (in == NULL)
      dg__cfg_error(cfg, path, "placeholder {%s} names no declared input (declared: %s)", var->name,
                    input_names(cfg, q));
    else if (in_path && !in->required && in->default_value == NULL)
      dg__cfg_error(cfg, path,
                    "placeholder {%s} in the path names an optional input without a default",
                    var->name);
  }
}

static const dg_template_t *compile(dg__cfg_t *cfg, const dg_saved_query_t *q, const char *text,
                                    bool in_path, const char *path) {
  const dg_template_t *t = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_template_compile(cfg->arena, text, &t, &err);
  if (rc == DG_ENOMEM)
    cfg->oom = true;
  else if (rc != 0)
    dg__cfg_error(cfg, path, "%s", err.message);
  else
    check_vars(cfg, q, t, in_path, path);
  return t;
}

/* Sample values by type, to check that a JSON template stays JSON. */
static int sample_value(void *data, const dg_template_var_t *var, dg_template_value_t *out) {
  const dg_saved_input_t *in = dg_saved_query_input(data, var->name);
  static const char *const samples[] = {
      [DG_TYPE_STRING] = "a \"b\"", [DG_TYPE_INT] = "1",       [DG_TYPE_LONG] = "1",
      [DG_TYPE_DOUBLE] = "1.5",     [DG_TYPE_DECIMAL] = "1.5", [DG_TYPE_BOOLEAN] = "true",
      [DG_TYPE_DATE] = "2025-01-31"};
  out->kind = DG_TVAL_STRING;
  out->text = "x";
  if (in == NULL) {
    out->kind = DG_TVAL_ABSENT;
  } else if (dg_data_type_is_numeric(in->type) || in->type == DG_TYPE_BOOLEAN) {
    out->kind = in->type == DG_TYPE_BOOLEAN ? DG_TVAL_BOOL : DG_TVAL_NUMBER;
    out->text = samples[in->type];
  } else if ((size_t)in->type < DG_ARRAY_SIZE(samples) && samples[in->type] != NULL) {
    out->text = samples[in->type];
  }
  out->len = out->text ? strlen(out->text) : 0;
  return 0;
}

/* ---- Request ----------------------------------------------------------------------- */

const dg_jsonpath_t *dg__cfg_compile_jsonpath(dg__cfg_t *cfg, const char *text, const char *path) {
  const dg_jsonpath_t *p = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_jsonpath_compile(cfg->arena, text, &p, &err);
  if (rc == DG_ENOMEM)
    cfg->oom = true;
  else if (rc != 0)
    dg__cfg_error(cfg, path, "%s", err.message);
  return rc == 0 ? p : NULL;
}

static const dg_template_t *compile_request(void *data, const char *text, bool in_path,
                                            const char *path) {
  const query_raw_t *raw = data;
  return compile(raw->cfg, &raw->q, text, in_path, path);
}

static void parse_request(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  query_raw_t *raw = obj;
  if (v == NULL)
    return;
  raw->cfg = cfg;
  dg__cfg_request_use_t use = {
      .compile = compile_request, .data = raw, .sample = sample_value, .sample_data = &raw->q};
  dg__cfg_parse_request(cfg, v, path, &use, &raw->q.request, NULL);
}

/* ---- Response paths and fields ------------------------------------------------------ */

#define F(field) offsetof(field_raw_t, field)
static const dg__cfg_field_t field_fields[] = {
    {"property", DG__CFG_STRING, true, NULL, 0, 1, 64, NULL, F(property), 0, NULL},
    {"path", DG__CFG_STRING, true, NULL, 0, 1, DG_JSONPATH_MAX_LEN, NULL, F(path), 0, NULL},
    {"description", DG__CFG_STRING, false, NULL, 0, 0, 4096, NULL, F(f.description), 0, NULL},
};
#undef F

static void resolve_field(dg__cfg_t *cfg, const dg_model_t *m, field_raw_t *raw, const char *path) {
  char at[DG__CFG_PATH_MAX];
  dg__cfg_path_key(at, path, "property");
  const dg_property_t *prop = raw->property ? dg_model_property(m, raw->property) : NULL;
  if (raw->property != NULL && prop == NULL)
    dg__cfg_error(cfg, at, "model '%s' has no property '%s'", m->name, raw->property);
  else if (prop != NULL && prop->type == DG_TYPE_REFERENCE)
    dg__cfg_error(cfg, at, "'%s' is a Reference; a Saved Query maps only plain properties",
                  prop->name);
  raw->f.property = prop;
  if (prop != NULL && raw->f.description == NULL)
    raw->f.description = prop->description;
  dg__cfg_path_key(at, path, "path");
  if (raw->path != NULL)
    raw->f.path = dg__cfg_compile_jsonpath(cfg, raw->path, at);
}

static void check_unique_fields(dg__cfg_t *cfg, const dg_saved_field_t *list, size_t n,
                                const char *path) {
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < i && list[i].property != NULL; j++) {
      if (list[i].property != list[j].property)
        continue;
      char at[DG__CFG_PATH_MAX];
      dg__cfg_path_index(at, path, i);
      dg__cfg_error(cfg, at, "property '%s' is mapped twice (also %s/%zu)", list[i].property->name,
                    path, j);
    }
  }
}

static void parse_fields(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_saved_query_t *q = &((query_raw_t *)obj)->q;
  if (v == NULL)
    return;
  if (!json_is_array(v) || json_array_size(v) == 0) {
    dg__cfg_error(cfg, path, "must be a non-empty array of field mappings");
    return;
  }
  size_t n = json_array_size(v);
  dg_saved_field_t *list = dg_arena_calloc(cfg->arena, n + 1, sizeof(*list));
  if (list == NULL) {
    cfg->oom = true;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char at[DG__CFG_PATH_MAX];
    field_raw_t raw;
    memset(&raw, 0, sizeof(raw));
    dg__cfg_path_index(at, path, i);
    dg__cfg_parse_object(cfg, json_array_get(v, i), at, field_fields, DG_ARRAY_SIZE(field_fields),
                         &raw);
    if (q->model != NULL)
      resolve_field(cfg, q->model, &raw, at);
    list[i] = raw.f;
  }
  q->fields = list;
  q->nfields = n;
  check_unique_fields(cfg, list, n, path);
}

/* ---- One Saved Query ---------------------------------------------------------------- */

static void resolve_connector(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  query_raw_t *raw = obj;
  raw->q.connector = dg_catalog_connector(cfg->cat, raw->connector);
  if (raw->q.connector != NULL)
    return;
  const char **names = dg_arena_calloc(cfg->arena, cfg->cat->nconnectors + 1, sizeof(*names));
  for (size_t i = 0; names != NULL && i < cfg->cat->nconnectors; i++)
    names[i] = cfg->cat->connectors[i].name;
  dg__cfg_error(cfg, path, "unknown connector '%s' (known: %s)", raw->connector,
                names && cfg->cat->nconnectors ? dg__cfg_join(cfg, names, cfg->cat->nconnectors)
                                               : "none; see connectors.json");
}

static void resolve_model(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  query_raw_t *raw = obj;
  raw->q.model = dg__catalog_find_model(cfg->cat, raw->model);
  if (raw->q.model == NULL)
    dg__cfg_error(cfg, path, "unknown model '%s' (known: %s)", raw->model,
                  dg__catalog_model_names(cfg));
}

#define Q(field) offsetof(query_raw_t, field)
static const dg__cfg_field_t query_fields[] = {
    {"id", DG__CFG_STRING, true, NULL, 0, 1, 64, NULL, Q(q.id), 0, dg__cfg_check_guid},
    {"name", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, Q(q.name), 0, NULL},
    {"description", DG__CFG_STRING, false, "", 0, 0, 4096, NULL, Q(q.description), 0, NULL},
    {"connector", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, Q(connector), 0, resolve_connector},
    {"dataModel", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, Q(model), 0, resolve_model},
    {"inputs", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, parse_inputs},
    {"request", DG__CFG_CUSTOM, true, NULL, 0, 0, 0, NULL, 0, 0, parse_request},
    {"resultPath", DG__CFG_STRING, false, "$", 0, 1, DG_JSONPATH_MAX_LEN, NULL, Q(result_path), 0,
     NULL},
    {"idPath", DG__CFG_STRING, false, NULL, 0, 1, DG_JSONPATH_MAX_LEN, NULL, Q(id_path), 0, NULL},
    {"maxResults", DG__CFG_UINT, false, NULL, 100, 1, 1000, NULL, Q(q.max_results), 0, NULL},
    {"fields", DG__CFG_CUSTOM, true, NULL, 0, 0, 0, NULL, 0, 0, parse_fields},
};
#undef Q

static void parse_query(dg__cfg_t *cfg, const json_t *item, void *list, size_t i, const char *path,
                        const void *data) {
  query_raw_t raw;
  memset(&raw, 0, sizeof(raw));
  dg__cfg_parse_object(cfg, item, path, query_fields, DG_ARRAY_SIZE(query_fields), &raw);
  char at[DG__CFG_PATH_MAX];
  dg__cfg_path_key(at, path, "resultPath");
  if (raw.result_path != NULL)
    raw.q.result_path = dg__cfg_compile_jsonpath(cfg, raw.result_path, at);
  dg__cfg_path_key(at, path, "idPath");
  if (raw.id_path != NULL)
    raw.q.id_path = dg__cfg_compile_jsonpath(cfg, raw.id_path, at);
  if (raw.q.name == NULL)
    raw.q.name = "";
  raw.q.index = i;
  ((dg_saved_query_t *)list)[i] = raw.q;
}

/* ---- The file ------------------------------------------------------------------------- */

static void check_unique_queries(dg__cfg_t *cfg, const dg_saved_query_t *list, size_t n) {
  for (size_t i = 0; i < n; i++) {
    /* An empty name is reported as missing, not as a duplicate. */
    const char *name = list[i].name[0] != '\0' ? list[i].name : NULL;
    for (size_t j = 0; j < i; j++) {
      dg__cfg_check_unique(cfg, "savedQueries", "id", "Saved Query", i, j, list[i].id, list[j].id);
      dg__cfg_check_unique(cfg, "savedQueries", "name", "Saved Query", i, j, name, list[j].name);
    }
  }
}

static void parse_query_list(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_catalog_t *cat = obj;
  cat->saved_queries = dg__cfg_list(cfg, v, path, "Saved Queries", sizeof(dg_saved_query_t),
                                    &cat->nsaved_queries, parse_query, NULL);
  check_unique_queries(cfg, cat->saved_queries, cat->nsaved_queries);
}

static const dg__cfg_field_t queries_file_fields[] = {
    {"savedQueries", DG__CFG_CUSTOM, true, NULL, 0, 0, 0, NULL, 0, 0, parse_query_list},
};

void dg__catalog_parse_saved_queries(dg__cfg_t *cfg, const json_t *root) {
  dg__cfg_parse_object(cfg, root, "", queries_file_fields, DG_ARRAY_SIZE(queries_file_fields),
                       cfg->cat);
}

/* Roles name Saved Queries by id or name; "*" grants them all. */
void dg__catalog_check_role_queries(dg__cfg_t *cfg) {
  const dg_catalog_t *cat = cfg->cat;
  for (size_t i = 0; i < cat->nroles; i++) {
    const dg_role_t *r = &cat->roles[i];
    for (size_t j = 0; j < r->nsaved_queries; j++) {
      const char *name = r->saved_queries[j];
      if (name == NULL || strcmp(name, "*") == 0 || dg_catalog_saved_query(cat, name) != NULL)
        continue;
      char at[DG__CFG_PATH_MAX];
      snprintf(at, sizeof(at), "/roles/%zu/savedQueries/%zu", i, j);
      dg__cfg_error(cfg, at,
                    "unknown Saved Query '%s' (give an id or name from "
                    "saved_queries.json, or \"*\")",
                    name);
    }
  }
}

/* ---- Lookups ---------------------------------------------------------------------------- */

const dg_saved_query_t *dg_catalog_saved_query(const dg_catalog_t *cat, const char *id_or_name) {
  return dg__catalog_find_id_or_name(cat->saved_queries, cat->nsaved_queries,
                                     sizeof(dg_saved_query_t), offsetof(dg_saved_query_t, id),
                                     offsetof(dg_saved_query_t, name), id_or_name);
}

const dg_saved_input_t *dg_saved_query_input(const dg_saved_query_t *q, const char *name) {
  return dg__catalog_find_name(q->inputs, q->ninputs, sizeof(dg_saved_input_t),
                               offsetof(dg_saved_input_t, name), name);
}
