/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Sample data: the JSON files of a directory, each
 *   {"model": "Orders", "entities": [{"id": "<GUID>", "OrderNumber": "SO-1001", ...}]}
 * read into create writes. Property names are those of the configuration
 * (any case); values are checked by type exactly like tool arguments.
 * Runs on the threadpool while the store opens. */
#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/internal.h"

#define FILES_MAX 256
#define FILE_BYTES_MAX (64 * 1024 * 1024)
#define PATH_CHARS 4096

typedef struct sample {
  const dg_catalog_t *cat;
  const char *dir;
  dg_arena_t *arena;
  dg_errctx_t *err;
  char *names[FILES_MAX];
  json_t *docs[FILES_MAX];
  const dg_model_t *models[FILES_MAX];
  size_t nfiles;
} sample_t;

static int compare_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_json_name(const char *name) {
  size_t n = strlen(name);
  return name[0] != '.' && n > 5 && strcmp(name + n - 5, ".json") == 0;
}

static int add_name(sample_t *s, const char *name) {
  if (s->nfiles == FILES_MAX)
    return dg_errctx_set(s->err, DG_E2BIG, s->dir, "%s: more than %d sample data files", s->dir,
                         FILES_MAX);
  s->names[s->nfiles] = dg_arena_strdup(s->arena, name);
  if (s->names[s->nfiles] == NULL)
    return dg_errctx_set(s->err, DG_ENOMEM, s->dir, "out of memory");
  s->nfiles++;
  return 0;
}

static int list_files(sample_t *s) {
  DIR *d = opendir(s->dir);
  if (d == NULL && errno == ENOENT)
    return 0;
  if (d == NULL)
    return dg_errctx_set(s->err, DG_EIO, s->dir, "%s: cannot read the sample data directory: %s",
                         s->dir, strerror(errno));
  int rc = 0;
  for (struct dirent *e = readdir(d); rc == 0 && e != NULL; e = readdir(d)) {
    if (is_json_name(e->d_name))
      rc = add_name(s, e->d_name);
  }
  closedir(d);
  qsort(s->names, s->nfiles, sizeof(s->names[0]), compare_names);
  return rc;
}

/* ---- One file ---------------------------------------------------------------------- */

static int file_error(sample_t *s, size_t i, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int file_error(sample_t *s, size_t i, const char *fmt, ...) {
  char msg[768];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  return dg_errctx_set(s->err, DG_ECONFIG, s->names[i], "%s/%s: %s", s->dir, s->names[i], msg);
}

static int load_doc(sample_t *s, size_t i) {
  char path[PATH_CHARS];
  struct stat st;
  snprintf(path, sizeof(path), "%s/%s", s->dir, s->names[i]);
  if (stat(path, &st) != 0 || st.st_size > FILE_BYTES_MAX)
    return file_error(s, i, "cannot be read or is larger than %d bytes", FILE_BYTES_MAX);
  json_error_t jerr;
  s->docs[i] = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (s->docs[i] == NULL)
    return file_error(s, i, "line %d, column %d: %s", jerr.line, jerr.column, jerr.text);
  const json_t *model = json_object_get(s->docs[i], "model");
  const json_t *entities = json_object_get(s->docs[i], "entities");
  if (!json_is_object(s->docs[i]) || json_object_size(s->docs[i]) != 2 || !json_is_string(model) ||
      !json_is_array(entities))
    return file_error(s, i, "must be an object {\"model\": name, \"entities\": [...]}");
  const char *name = json_string_value(model);
  s->models[i] = dg_catalog_model_by_name(s->cat, name);
  if (s->models[i] == NULL)
    s->models[i] = dg_catalog_model_by_id(s->cat, name);
  if (s->models[i] == NULL)
    return file_error(s, i, "/model: no Data Model named '%.64s'", name);
  return 0;
}

static int entity_value(sample_t *s, size_t i, const char *path, const char *key,
                        const json_t *value, dg_store_write_t *w) {
  dg__path_t p;
  const dg_property_t *prop = dg_model_property(w->model, key);
  if (prop == NULL)
    return file_error(s, i, "%s: %s has no property '%.64s'", dg__path_key(&p, path, key),
                      w->model->name, key);
  int rc = dg_store_value_parse(prop, value, dg__path_key(&p, path, key), s->arena,
                                &w->values[w->nvalues], s->err);
  if (rc != 0)
    return file_error(s, i, "%s", s->err->message);
  w->props[w->nvalues++] = prop;
  return 0;
}

static int entity_write(sample_t *s, size_t i, size_t k, const json_t *obj, dg_store_write_t *w) {
  dg__path_t p;
  const char *path = dg__path_index(&p, "entities", k);
  char at[sizeof(p.s)];
  dg_strlcpy(at, path, sizeof(at));
  const char *id = json_string_value(json_object_get(obj, "id"));
  if (!json_is_object(obj) || id == NULL || !dg_uuid_valid(id) || strlen(id) != DG_UUID_LEN)
    return file_error(s, i, "%s: must be an object with an \"id\" GUID", at);
  char *lower = dg_arena_strdup(s->arena, id);
  w->model = s->models[i];
  w->mode = DG_STORE_CREATE;
  w->id = lower;
  w->props = dg_arena_calloc(s->arena, json_object_size(obj), sizeof(*w->props));
  w->values = dg_arena_calloc(s->arena, json_object_size(obj), sizeof(*w->values));
  if (lower == NULL || w->props == NULL || w->values == NULL)
    return dg_errctx_set(s->err, DG_ENOMEM, "", "out of memory");
  for (char *c = lower; *c != '\0'; c++)
    *c = (char)(*c >= 'A' && *c <= 'F' ? *c - 'A' + 'a' : *c);
  const char *key;
  json_t *value;
  int rc = 0;
  json_object_foreach((json_t *)obj, key, value) {
    if (rc == 0 && strcmp(key, "id") != 0)
      rc = entity_value(s, i, at, key, value, w);
  }
  return rc;
}

static void free_docs(sample_t *s) {
  for (size_t i = 0; i < s->nfiles; i++)
    json_decref(s->docs[i]);
}

static int fill(sample_t *s, dg_store_write_t *writes) {
  size_t n = 0;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < s->nfiles; i++) {
    const json_t *entities = json_object_get(s->docs[i], "entities");
    for (size_t k = 0; rc == 0 && k < json_array_size(entities); k++)
      rc = entity_write(s, i, k, json_array_get(entities, k), &writes[n++]);
  }
  return rc;
}

int dg__store_sample_read(const dg_catalog_t *cat, const char *dir, dg_arena_t *arena,
                          dg_store_write_t **writes, size_t *nwrites, dg_errctx_t *err) {
  sample_t s = {.cat = cat, .dir = dir, .arena = arena, .err = err};
  *writes = NULL;
  *nwrites = 0;
  int rc = list_files(&s);
  size_t total = 0;
  for (size_t i = 0; rc == 0 && i < s.nfiles; i++) {
    rc = load_doc(&s, i);
    total += json_array_size(json_object_get(s.docs[i], "entities"));
  }
  dg_store_write_t *all = rc == 0 ? dg_arena_calloc(arena, total + 1, sizeof(*all)) : NULL;
  if (rc == 0 && all == NULL)
    rc = dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
  if (rc == 0)
    rc = fill(&s, all);
  free_docs(&s);
  if (rc == 0) {
    *writes = all;
    *nwrites = total;
  }
  return rc;
}
