/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Response paths: the small subset of JSONPath that configurations use to
 * point into an API response (keys, indexes, wildcards). A path compiles
 * into a list of steps; evaluation walks the parsed response without
 * copying it. */
#include <stdio.h>
#include <string.h>

#include "datagate/text.h"

typedef enum step_kind { STEP_KEY, STEP_INDEX, STEP_ALL } step_kind_t;

typedef struct step {
  step_kind_t kind;
  const char *key; /* STEP_KEY, NUL-terminated (keys with NUL are not reachable) */
  int64_t index;   /* STEP_INDEX; negative counts from the end */
} step_t;

struct dg_jsonpath {
  const char *text;
  const step_t *steps;
  size_t nsteps;
  bool multi;
};

typedef struct parser {
  dg_arena_t *arena;
  const char *text;
  size_t pos;
  step_t steps[DG_JSONPATH_MAX_STEPS];
  size_t nsteps;
  dg_errctx_t *err;
} parser_t;

/* ---- Compiling ---------------------------------------------------------- */

static int fail(parser_t *p, const char *what) {
  return dg_errctx_set(p->err, DG_EINVAL, "path", "'%.200s': %s at offset %zu", p->text, what,
                       p->pos);
}

static int push(parser_t *p, step_t step) {
  if (p->nsteps == DG_JSONPATH_MAX_STEPS)
    return fail(p, "too many steps (at most 64)");
  p->steps[p->nsteps++] = step;
  return 0;
}

static bool is_name_char(char c) {
  return c != '\0' && c != '.' && c != '[' && c != ']' && c != '\'' && c != '"' &&
         (unsigned char)c > 0x20;
}

/* ".name" or a first step without its dot. */
static int parse_name(parser_t *p) {
  size_t start = p->pos;
  while (is_name_char(p->text[p->pos]))
    p->pos++;
  if (p->pos == start)
    return fail(p, "expected a key name");
  char *key = dg_arena_strndup(p->arena, p->text + start, p->pos - start);
  if (key == NULL)
    return dg_errctx_set(p->err, DG_ENOMEM, "path", "out of memory");
  if (strcmp(key, "*") == 0)
    return push(p, (step_t){.kind = STEP_ALL});
  return push(p, (step_t){.kind = STEP_KEY, .key = key});
}

/* "'key'" or "\"key\"" with backslash escapes, after the '['. */
static int parse_quoted(parser_t *p) {
  char quote = p->text[p->pos++];
  size_t len = strlen(p->text + p->pos);
  char *key = dg_arena_alloc(p->arena, len + 1);
  size_t n = 0;
  if (key == NULL)
    return dg_errctx_set(p->err, DG_ENOMEM, "path", "out of memory");
  while (p->text[p->pos] != quote) {
    char c = p->text[p->pos];
    if (c == '\\' && (p->text[p->pos + 1] == quote || p->text[p->pos + 1] == '\\'))
      c = p->text[++p->pos];
    else if (c == '\0')
      return fail(p, "unterminated quoted key");
    key[n++] = c;
    p->pos++;
  }
  key[n] = '\0';
  p->pos++;
  return push(p, (step_t){.kind = STEP_KEY, .key = key});
}

static int parse_index(parser_t *p) {
  const char *s = p->text + p->pos;
  size_t n = (s[0] == '-') ? 1 : 0;
  while (s[n] >= '0' && s[n] <= '9')
    n++;
  char digits[24];
  int64_t v;
  if (n == 0 || n >= sizeof(digits))
    return fail(p, "expected an index, '*' or a quoted key inside [ ]");
  memcpy(digits, s, n);
  digits[n] = '\0';
  if (!dg_parse_int64(digits, -1000000000, 1000000000, &v))
    return fail(p, "index out of range");
  p->pos += n;
  return push(p, (step_t){.kind = STEP_INDEX, .index = v});
}

static int parse_bracket(parser_t *p) {
  p->pos++; /* '[' */
  char c = p->text[p->pos];
  int rc;
  if (c == '\'' || c == '"') {
    rc = parse_quoted(p);
  } else if (c == '*') {
    p->pos++;
    rc = push(p, (step_t){.kind = STEP_ALL});
  } else {
    rc = parse_index(p);
  }
  if (rc == 0 && p->text[p->pos] != ']')
    return fail(p, "expected ']'");
  p->pos++;
  return rc;
}

static int parse_steps(parser_t *p) {
  int rc = 0;
  if (p->text[p->pos] == '$')
    p->pos++;
  else if (p->text[p->pos] != '[' && p->text[p->pos] != '\0')
    rc = parse_name(p); /* "a.b" means "$.a.b" */
  while (rc == 0 && p->text[p->pos] != '\0') {
    char c = p->text[p->pos];
    if (c == '.' && p->text[p->pos + 1] == '.')
      return fail(p, "recursive descent '..' is not supported");
    if (c == '.') {
      p->pos++;
      rc = parse_name(p);
    } else if (c == '[') {
      rc = parse_bracket(p);
    } else {
      return fail(p, "expected '.' or '['");
    }
  }
  return rc;
}

int dg_jsonpath_compile(dg_arena_t *arena, const char *text, const dg_jsonpath_t **out,
                        dg_errctx_t *err) {
  *out = NULL;
  size_t len = strlen(text);
  if (len == 0 || len > DG_JSONPATH_MAX_LEN)
    return dg_errctx_set(err, DG_EINVAL, "path", "must be 1 to %d characters long, got %zu",
                         DG_JSONPATH_MAX_LEN, len);
  parser_t *p = dg_arena_calloc(arena, 1, sizeof(*p));
  if (p == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "path", "out of memory");
  *p = (parser_t){.arena = arena, .text = text, .err = err};
  int rc = parse_steps(p);
  if (rc != 0)
    return rc;
  dg_jsonpath_t *path = dg_arena_calloc(arena, 1, sizeof(*path));
  step_t *steps = dg_arena_calloc(arena, p->nsteps + 1, sizeof(*steps));
  const char *copy = dg_arena_strdup(arena, text);
  if (path == NULL || steps == NULL || copy == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "path", "out of memory");
  memcpy(steps, p->steps, p->nsteps * sizeof(*steps));
  *path = (dg_jsonpath_t){.text = copy, .steps = steps, .nsteps = p->nsteps};
  for (size_t i = 0; i < p->nsteps; i++)
    path->multi = path->multi || steps[i].kind == STEP_ALL;
  *out = path;
  return 0;
}

const char *dg_jsonpath_text(const dg_jsonpath_t *p) {
  return p->text;
}

bool dg_jsonpath_is_multi(const dg_jsonpath_t *p) {
  return p->multi;
}

/* ---- Evaluating ---------------------------------------------------------- */

typedef struct walk {
  const dg_jsonpath_t *path;
  size_t max;
  size_t count;
  int (*fn)(void *data, json_t *value);
  void *data;
} walk_t;

static int visit(walk_t *w, json_t *v, size_t depth);

static int visit_all(walk_t *w, json_t *v, size_t depth) {
  int rc = 0;
  if (json_is_array(v)) {
    for (size_t i = 0; rc == 0 && i < json_array_size(v); i++)
      rc = visit(w, json_array_get(v, i), depth + 1);
  } else if (json_is_object(v)) {
    const char *key;
    json_t *child;
    json_object_foreach(v, key, child) {
      rc = visit(w, child, depth + 1);
      if (rc != 0)
        break;
    }
  }
  return rc;
}

static json_t *index_of(json_t *v, int64_t index) {
  if (!json_is_array(v))
    return NULL;
  int64_t n = (int64_t)json_array_size(v);
  int64_t at = index < 0 ? n + index : index;
  return at >= 0 && at < n ? json_array_get(v, (size_t)at) : NULL;
}

static int visit(walk_t *w, json_t *v, size_t depth) {
  if (v == NULL)
    return 0;
  if (depth == w->path->nsteps) {
    if (w->count == w->max)
      return DG_E2BIG;
    w->count++;
    return w->fn(w->data, v);
  }
  const step_t *s = &w->path->steps[depth];
  switch (s->kind) {
  case STEP_KEY:
    return visit(w, json_is_object(v) ? json_object_get(v, s->key) : NULL, depth + 1);
  case STEP_INDEX:
    return visit(w, index_of(v, s->index), depth + 1);
  default:
    return visit_all(w, v, depth);
  }
}

int dg_jsonpath_each(const dg_jsonpath_t *p, const json_t *root, size_t max,
                     int (*fn)(void *data, json_t *value), void *data, size_t *count) {
  walk_t w = {.path = p, .max = max, .fn = fn, .data = data};
  int rc = visit(&w, (json_t *)root, 0);
  if (count != NULL)
    *count = w.count;
  return rc;
}

static int take_first(void *data, json_t *value) {
  *(json_t **)data = value;
  return 1;
}

json_t *dg_jsonpath_get(const dg_jsonpath_t *p, const json_t *root) {
  json_t *found = NULL;
  dg_jsonpath_each(p, root, 1, take_first, &found, NULL);
  return found;
}
