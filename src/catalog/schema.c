/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The schema-table parser: one table per kind of configuration object
 * (name, type, required, default, range, validator, offset), so every
 * field is read, defaulted, range-checked and reported the same way. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/internal.h"

/* A broken file could otherwise produce an unbounded list of problems. */
#define CONFIG_ERRORS_MAX 1000

void dg_config_errors_free(dg_config_errors_t *errors) {
  if (errors == NULL)
    return;
  for (size_t i = 0; i < errors->count; i++)
    free(errors->lines[i]);
  free(errors->lines);
  errors->lines = NULL;
  errors->count = 0;
  errors->cap = 0;
}

static bool errors_grow(dg_config_errors_t *errors) {
  if (errors->count < errors->cap)
    return true;
  char **lines = dg_array_grow(errors->lines, &errors->cap, sizeof(*lines), 16, SIZE_MAX);
  if (lines != NULL)
    errors->lines = lines;
  return lines != NULL;
}

static void errors_addv(dg_config_errors_t *errors, const char *file, const char *path,
                        const char *fmt, va_list ap) {
  if (errors == NULL || errors->count >= CONFIG_ERRORS_MAX || !errors_grow(errors))
    return;
  char msg[1024];
  vsnprintf(msg, sizeof(msg), fmt, ap);
  size_t n = strlen(file) + strlen(path) + strlen(msg) + 5;
  char *line = malloc(n);
  if (line == NULL)
    return;
  snprintf(line, n, "%s: %s: %s", file, path, msg);
  errors->lines[errors->count++] = line;
}

void dg_config_errors_add(dg_config_errors_t *errors, const char *file, const char *path,
                          const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  errors_addv(errors, file, path, fmt, ap);
  va_end(ap);
}

void dg__cfg_error(dg__cfg_t *cfg, const char *path, const char *fmt, ...) {
  cfg->nerrors++;
  va_list ap;
  va_start(ap, fmt);
  errors_addv(cfg->errors, cfg->file, path[0] ? path : "/", fmt, ap);
  va_end(ap);
}

void dg__cfg_path_key(char *out, const char *base, const char *key) {
  size_t n = strlen(base);
  char tmp[DG__CFG_PATH_MAX];
  dg_strlcpy(tmp, base, sizeof(tmp));
  if (n < sizeof(tmp) - 1)
    tmp[n++] = '/';
  /* RFC 6901: '~' is written "~0" and '/' is written "~1". */
  for (const char *k = key; *k != '\0' && n < sizeof(tmp) - 3; k++) {
    if (*k == '~' || *k == '/') {
      tmp[n++] = '~';
      tmp[n++] = *k == '~' ? '0' : '1';
    } else {
      tmp[n++] = *k;
    }
  }
  tmp[n] = '\0';
  memcpy(out, tmp, n + 1);
}

void dg__cfg_path_index(char *out, const char *base, size_t index) {
  char key[24];
  snprintf(key, sizeof(key), "%zu", index);
  dg__cfg_path_key(out, base, key);
}

void *dg__cfg_array(dg__cfg_t *cfg, const json_t *v, const char *path, const char *what,
                    size_t size, size_t *n) {
  *n = 0;
  if (v == NULL)
    return NULL;
  if (!json_is_array(v)) {
    dg__cfg_error(cfg, path, "must be an array of %s", what);
    return NULL;
  }
  size_t count = json_array_size(v);
  void *list = dg_arena_calloc(cfg->arena, count ? count : 1, size);
  if (list == NULL) {
    cfg->oom = true;
    return NULL;
  }
  *n = count;
  return list;
}

void *dg__cfg_list(dg__cfg_t *cfg, const json_t *v, const char *path, const char *what, size_t size,
                   size_t *n, dg__cfg_item_fn fn, const void *data) {
  size_t count;
  void *list = dg__cfg_array(cfg, v, path, what, size, &count);
  for (size_t i = 0; list != NULL && i < count; i++) {
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_index(at, path, i);
    fn(cfg, json_array_get(v, i), list, i, at, data);
  }
  *n = count; /* only now: the items see the list as not there yet */
  return list;
}

void dg__cfg_check_unique(dg__cfg_t *cfg, const char *list, const char *field, const char *what,
                          size_t i, size_t j, const char *a, const char *b) {
  if (a == NULL || b == NULL || strcasecmp(a, b) != 0)
    return;
  char at[DG__CFG_PATH_MAX];
  snprintf(at, sizeof(at), "/%s/%zu/%s", list, i, field);
  dg__cfg_error(cfg, at, "duplicate %s %s '%s' (same as /%s/%zu)", what, field, a, list, j);
}

const char *dg__cfg_resolve_path(dg__cfg_t *cfg, const char *path) {
  /* A database URI (server.database) is no file: kept as written. */
  bool uri = path != NULL &&
             (strncmp(path, "postgresql://", 13) == 0 || strncmp(path, "postgres://", 11) == 0);
  if (path == NULL || path[0] == '/' || cfg->dir == NULL || uri)
    return path;
  return dg_arena_sprintf(cfg->arena, "%s/%s", cfg->dir, path);
}

const char *dg__cfg_join(dg__cfg_t *cfg, const char *const *names, size_t n) {
  /* Long lists end in "..." so that one message stays one readable line. */
  dg_buf_t buf;
  dg_buf_init(&buf, 512);
  for (size_t i = 0; i < n; i++) {
    if (buf.len > 400) {
      dg_buf_append_str(&buf, ", ...");
      break;
    }
    dg_buf_appendf(&buf, "%s%s", i ? ", " : "", names[i] ? names[i] : "?");
  }
  char *s = dg_arena_strdup(cfg->arena, buf.data ? buf.data : "");
  dg_buf_free(&buf);
  return s ? s : "";
}

bool dg__cfg_strings(dg__cfg_t *cfg, const json_t *arr, const char *path, const char ***out,
                     size_t *count) {
  *out = NULL;
  *count = 0;
  if (!json_is_array(arr)) {
    dg__cfg_error(cfg, path, "must be an array of strings");
    return false;
  }
  size_t n = json_array_size(arr);
  const char **list = dg_arena_calloc(cfg->arena, n + 1, sizeof(*list));
  if (list == NULL) {
    cfg->oom = true;
    return false;
  }
  bool ok = true;
  for (size_t i = 0; i < n; i++) {
    const json_t *item = json_array_get(arr, i);
    char p[DG__CFG_PATH_MAX];
    dg__cfg_path_index(p, path, i);
    if (!json_is_string(item)) {
      dg__cfg_error(cfg, p, "must be a string");
      ok = false;
      continue;
    }
    list[i] = dg_arena_strdup(cfg->arena, json_string_value(item));
  }
  *out = list;
  *count = n;
  return ok;
}

/* ---- Unknown fields ------------------------------------------------------ */

/* Edit distance, to suggest the field a typo was meant to be. */
static size_t edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63)
    return 99;
  size_t row[64];
  for (size_t j = 0; j <= lb; j++)
    row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      if (up + 1 < best)
        best = up + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}

static const char *closest_field(const char *key, const dg__cfg_field_t *fields, size_t n) {
  const char *best = NULL;
  size_t best_d = 3;
  for (size_t i = 0; i < n; i++) {
    size_t d =
        dg_strieq_n(key, strlen(key), fields[i].name) ? 0 : edit_distance(key, fields[i].name);
    if (d < best_d) {
      best_d = d;
      best = fields[i].name;
    }
  }
  return best;
}

static void report_unknown(dg__cfg_t *cfg, const json_t *obj, const char *path,
                           const dg__cfg_field_t *fields, size_t nfields) {
  const char *key;
  json_t *value;
  json_object_foreach((json_t *)obj, key, value) {
    bool known = false;
    for (size_t i = 0; i < nfields && !known; i++)
      known = strcmp(key, fields[i].name) == 0;
    if (known)
      continue;
    char p[DG__CFG_PATH_MAX];
    dg__cfg_path_key(p, path, key);
    const char *hint = closest_field(key, fields, nfields);
    if (hint != NULL)
      dg__cfg_error(cfg, p, "unknown field '%s' (did you mean '%s'?)", key, hint);
    else
      dg__cfg_error(cfg, p, "unknown field '%s'", key);
  }
}

/* ---- Typed fields ------------------------------------------------------- */

static void store_int(const dg__cfg_field_t *f, void *dst, int64_t v) {
  char *at = (char *)dst + f->offset;
  switch (f->kind) {
  case DG__CFG_BOOL:
    *(bool *)at = v != 0;
    break;
  case DG__CFG_INT:
  case DG__CFG_ENUM:
    *(int *)at = (int)v;
    break;
  case DG__CFG_UINT:
    *(unsigned *)at = (unsigned)v;
    break;
  case DG__CFG_SIZE:
    *(size_t *)at = (size_t)v;
    break;
  case DG__CFG_U64:
    *(uint64_t *)at = (uint64_t)v;
    break;
  default:
    break;
  }
}

static void store_str(dg__cfg_t *cfg, const dg__cfg_field_t *f, void *dst, const char *s) {
  const char *v = s;
  if (s != NULL) {
    v = dg_arena_strdup(cfg->arena, s);
    if (v == NULL)
      cfg->oom = true;
    else if (f->kind == DG__CFG_PATH)
      v = dg__cfg_resolve_path(cfg, v);
  }
  *(const char **)((char *)dst + f->offset) = v;
}

static void set_default(dg__cfg_t *cfg, const dg__cfg_field_t *f, void *dst) {
  switch (f->kind) {
  case DG__CFG_STRING:
  case DG__CFG_PATH:
    store_str(cfg, f, dst, f->def_str);
    break;
  case DG__CFG_STRINGS: {
    size_t n = 0;
    while (f->names != NULL && f->names[n] != NULL)
      n++;
    *(const char *const **)((char *)dst + f->offset) = f->names;
    *(size_t *)((char *)dst + f->count_offset) = n;
    break;
  }
  case DG__CFG_JSON:
    *(const json_t **)((char *)dst + f->offset) = NULL;
    break;
  case DG__CFG_CUSTOM:
    f->fn(cfg, NULL, dst, "");
    break;
  default:
    store_int(f, dst, f->def_int);
    break;
  }
}

static bool parse_integer(dg__cfg_t *cfg, const dg__cfg_field_t *f, const json_t *v,
                          const char *path, void *dst) {
  if (!json_is_integer(v) || json_integer_value(v) < f->min || json_integer_value(v) > f->max) {
    char got[64];
    if (json_is_integer(v))
      snprintf(got, sizeof(got), "%lld", (long long)json_integer_value(v));
    else
      snprintf(got, sizeof(got), "a %s",
               json_is_real(v)     ? "fraction"
               : json_is_string(v) ? "string"
                                   : "non-number");
    dg__cfg_error(cfg, path, "must be an integer from %lld to %lld, got %s", (long long)f->min,
                  (long long)f->max, got);
    return false;
  }
  store_int(f, dst, json_integer_value(v));
  return true;
}

static bool parse_enum(dg__cfg_t *cfg, const dg__cfg_field_t *f, const json_t *v, const char *path,
                       void *dst) {
  size_t n = 0;
  while (f->names[n] != NULL)
    n++;
  const char *s = json_string_value(v);
  for (size_t i = 0; s != NULL && i < n; i++) {
    if (strcmp(s, f->names[i]) == 0) {
      store_int(f, dst, (int64_t)i);
      return true;
    }
  }
  if (s == NULL)
    dg__cfg_error(cfg, path, "must be a string, one of: %s", dg__cfg_join(cfg, f->names, n));
  else
    dg__cfg_error(cfg, path, "unknown value '%s' (allowed: %s)", s, dg__cfg_join(cfg, f->names, n));
  return false;
}

static bool parse_string(dg__cfg_t *cfg, const dg__cfg_field_t *f, const json_t *v,
                         const char *path, void *dst) {
  if (json_is_null(v) && !f->required) {
    store_str(cfg, f, dst, NULL);
    return true;
  }
  if (!json_is_string(v)) {
    dg__cfg_error(cfg, path, "must be a string");
    return false;
  }
  size_t len = json_string_length(v);
  int64_t min = f->min, max = f->max ? f->max : 4096;
  if ((int64_t)len < min || (int64_t)len > max) {
    if (min > 0 && len == 0)
      dg__cfg_error(cfg, path, "must not be empty");
    else
      dg__cfg_error(cfg, path, "must be %lld to %lld characters long, got %zu", (long long)min,
                    (long long)max, len);
    return false;
  }
  store_str(cfg, f, dst, json_string_value(v));
  return true;
}

static bool parse_field(dg__cfg_t *cfg, const dg__cfg_field_t *f, const json_t *v, const char *path,
                        void *dst) {
  switch (f->kind) {
  case DG__CFG_STRING:
  case DG__CFG_PATH:
    return parse_string(cfg, f, v, path, dst);
  case DG__CFG_BOOL:
    if (!json_is_boolean(v)) {
      dg__cfg_error(cfg, path, "must be true or false");
      return false;
    }
    store_int(f, dst, json_is_true(v));
    return true;
  case DG__CFG_ENUM:
    return parse_enum(cfg, f, v, path, dst);
  case DG__CFG_STRINGS: {
    const char **list;
    size_t n;
    bool ok = dg__cfg_strings(cfg, v, path, &list, &n);
    *(const char *const **)((char *)dst + f->offset) = list;
    *(size_t *)((char *)dst + f->count_offset) = n;
    return ok;
  }
  case DG__CFG_JSON:
    *(const json_t **)((char *)dst + f->offset) = v;
    return true;
  case DG__CFG_CUSTOM:
    f->fn(cfg, v, dst, path);
    return false; /* the custom parser already did everything */
  default:
    return parse_integer(cfg, f, v, path, dst);
  }
}

void dg__cfg_parse_object(dg__cfg_t *cfg, const json_t *obj, const char *path,
                          const dg__cfg_field_t *fields, size_t nfields, void *dst) {
  if (obj != NULL && !json_is_object(obj)) {
    dg__cfg_error(cfg, path, "must be an object");
    obj = NULL;
  }
  for (size_t i = 0; i < nfields; i++) {
    const dg__cfg_field_t *f = &fields[i];
    const json_t *v = obj ? json_object_get(obj, f->name) : NULL;
    char p[DG__CFG_PATH_MAX];
    dg__cfg_path_key(p, path, f->name);
    if (v == NULL) {
      if (f->required && obj != NULL)
        dg__cfg_error(cfg, path, "missing required field '%s'", f->name);
      set_default(cfg, f, dst);
      continue;
    }
    bool ok = parse_field(cfg, f, v, p, dst);
    if (!ok && f->kind != DG__CFG_CUSTOM && f->kind != DG__CFG_STRINGS)
      set_default(cfg, f, dst);
    /* A list with one bad item still has its other items checked. */
    bool check = ok || (f->kind == DG__CFG_STRINGS && json_is_array(v));
    if (check && f->fn != NULL)
      f->fn(cfg, v, dst, p);
  }
  if (obj != NULL)
    report_unknown(cfg, obj, path, fields, nfields);
}
