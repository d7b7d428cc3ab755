/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* aggregate_saved_query's arguments and its arithmetic: aggregations and
 * group keys checked against the fields a Saved Query returns (and the
 * caller may see), then every item of the live answer folded into one
 * accumulator per group and clause, with the rules of aggregate_entities:
 * Sum and Average of numbers, Min and Max of numbers and dates, Count,
 * DistinctCount ignoring case, null groups kept, rows in key order. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "datagate/auth.h"
#include "datagate/save.h"

#define AGGREGATIONS_MAX 32
#define GROUP_BY_MAX 8
#define ALIAS_MAX 64
#define NAMES_MAX 640

static const char *const clause_fields = "function, propertyName, alias";

/* ---- Arguments ------------------------------------------------------------------- */

typedef struct parse {
  const dg_saved_query_t *q;
  const dg_principal_t *p;
  dg_arena_t *arena;
  dg_errctx_t *err;
} parse_t;

static int invalid(parse_t *ps, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* "Invalid argument '<param>': <detail>" */
static int invalid(parse_t *ps, const char *param, const char *fmt, ...) {
  char detail[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof(detail), fmt, ap);
  va_end(ap);
  return dg_errctx_set(ps->err, DG_EINVAL, param, "Invalid argument '%s': %s", param, detail);
}

static bool visible(const parse_t *ps, const dg_saved_field_t *f) {
  return dg_auth_can_see_property(ps->p, ps->q->model, f->property);
}

/* The field called name (exact, then any case) that the caller may see. */
static const dg_saved_field_t *field_named(const parse_t *ps, const char *name) {
  for (int pass = 0; pass < 2; pass++) {
    for (size_t i = 0; i < ps->q->nfields; i++) {
      const dg_saved_field_t *f = &ps->q->fields[i];
      const char *n = f->property->name;
      if (visible(ps, f) && (pass == 0 ? strcmp(n, name) == 0 : strcasecmp(n, name) == 0))
        return f;
    }
  }
  return NULL;
}

/* "A, B, C": the visible fields fn takes (fn < 0: every field). */
static const char *field_names(const parse_t *ps, int fn, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < ps->q->nfields && len < size; i++) {
    const dg_saved_field_t *f = &ps->q->fields[i];
    if (visible(ps, f) && (fn < 0 || dg_store_agg_fits((dg_store_agg_fn_t)fn, f->property)))
      len += (size_t)snprintf(out + len, size - len, "%s%s", len ? ", " : "", f->property->name);
  }
  if (out[0] == '\0')
    snprintf(out, size, "none");
  return out;
}

static const char *path_key(char *buf, size_t size, const char *path, const char *key) {
  snprintf(buf, size, "%s.%s", path, key);
  return buf;
}

/* Members this tool refuses with a reason rather than as unknown. */
static int refused_member(parse_t *ps, const json_t *obj, const char *path, bool group) {
  char param[96];
  if (json_object_get(obj, "joinFilter") != NULL && !group)
    return invalid(ps, path_key(param, sizeof(param), path, "joinFilter"),
                   "aggregate_saved_query takes no joinFilter: a Saved Query's answer has no "
                   "related entities to join; use aggregate_entities on the stored Data Model "
                   "for a conditional count.");
  if (json_object_get(obj, "reference") != NULL)
    return invalid(ps, path_key(param, sizeof(param), path, "reference"),
                   "aggregate_saved_query takes no reference: %s use the fields Saved Query "
                   "'%s' returns.",
                   group ? "group keys" : "aggregations", ps->q->name);
  const char *key;
  json_t *v;
  json_object_foreach((json_t *)obj, key, v) {
    bool known = strcmp(key, "propertyName") == 0 ||
                 (!group && (strcmp(key, "function") == 0 || strcmp(key, "alias") == 0));
    if (!known)
      return invalid(ps, path_key(param, sizeof(param), path, key),
                     "unknown field; allowed fields here: %s.",
                     group ? "propertyName" : clause_fields);
  }
  return 0;
}

static int parse_function(parse_t *ps, const json_t *obj, const char *path,
                          dg_store_agg_fn_t *out) {
  char param[96];
  const char *name = json_string_value(json_object_get(obj, "function"));
  for (int i = 0; name != NULL && i < DG_STORE_AGG__COUNT; i++) {
    if (strcmp(name, dg_store_agg_name((dg_store_agg_fn_t)i)) == 0) {
      *out = (dg_store_agg_fn_t)i;
      return 0;
    }
  }
  return invalid(ps, path_key(param, sizeof(param), path, "function"),
                 "got \"%.64s\"; allowed: Sum, Average, Count, Min, Max, DistinctCount.",
                 name ? name : "");
}

static int parse_measured(parse_t *ps, const json_t *obj, const char *path,
                          dg_save_agg_clause_t *c) {
  char param[96], names[NAMES_MAX];
  const char *fn = dg_store_agg_name(c->fn);
  const char *name = json_string_value(json_object_get(obj, "propertyName"));
  path_key(param, sizeof(param), path, "propertyName");
  if (c->fn == DG_STORE_AGG_COUNT)
    return name == NULL ? 0
                        : invalid(ps, param,
                                  "Count counts the records and takes no propertyName; leave it "
                                  "out, or use DistinctCount for the distinct values of a "
                                  "field.");
  field_names(ps, (int)c->fn, names, sizeof(names));
  if (name == NULL)
    return invalid(ps, param, "missing; %s needs a field of the Saved Query: %s.", fn, names);
  c->field = field_named(ps, name);
  if (c->field == NULL)
    return invalid(ps, param,
                   "Saved Query '%s' returns no field '%.64s' that you can see; "
                   "fields %s can use: %s.",
                   ps->q->name, name, fn, names);
  if (!dg_store_agg_fits(c->fn, c->field->property))
    return invalid(
        ps, param, "%s needs a %s field, and '%s' is %s; fields %s can use: %s.", fn,
        c->fn == DG_STORE_AGG_MIN || c->fn == DG_STORE_AGG_MAX ? "numeric or date" : "numeric",
        c->field->property->name, dg_data_type_name(c->field->property->type), fn, names);
  return 0;
}

static int parse_alias(parse_t *ps, const json_t *obj, const char *path, dg_save_agg_clause_t *c) {
  char param[96], def[160];
  const json_t *v = json_object_get(obj, "alias");
  const char *alias = json_string_value(v);
  if (v != NULL && (alias == NULL || alias[0] == '\0' || json_string_length(v) > ALIAS_MAX * 4))
    return invalid(ps, path_key(param, sizeof(param), path, "alias"),
                   "allowed: a name of 1 to 64 characters.");
  if (alias == NULL && c->field != NULL)
    snprintf(def, sizeof(def), "%s_%s", dg_store_agg_name(c->fn), c->field->property->name);
  else
    snprintf(def, sizeof(def), "%s", alias ? alias : dg_store_agg_name(c->fn));
  c->key = dg_camel_first(ps->arena, def);
  return c->key != NULL ? 0 : dg_errctx_set(ps->err, DG_ENOMEM, path, "Out of memory.");
}

static int parse_clause(parse_t *ps, const json_t *obj, const char *path, dg_save_agg_clause_t *c) {
  if (!json_is_object(obj))
    return invalid(ps, path, "allowed: an object {%s}.", clause_fields);
  int rc = refused_member(ps, obj, path, false);
  if (rc == 0)
    rc = parse_function(ps, obj, path, &c->fn);
  if (rc == 0)
    rc = parse_measured(ps, obj, path, c);
  if (rc == 0)
    rc = parse_alias(ps, obj, path, c);
  return rc;
}

static int parse_clauses(parse_t *ps, const json_t *list, dg_save_agg_t *a) {
  size_t n = json_array_size(list);
  char path[48], param[64];
  if (!json_is_array(list) || n == 0 || n > AGGREGATIONS_MAX)
    return invalid(ps, "aggregations",
                   "allowed: an array of 1 to 32 clauses {%s}, such as {\"function\": \"Sum\", "
                   "\"propertyName\": \"Amount\"} or {\"function\": \"Count\"}.",
                   clause_fields);
  a->clauses = dg_arena_calloc(ps->arena, n, sizeof(*a->clauses));
  if (a->clauses == NULL)
    return dg_errctx_set(ps->err, DG_ENOMEM, "aggregations", "Out of memory.");
  for (size_t i = 0; i < n; i++) {
    snprintf(path, sizeof(path), "aggregations[%zu]", i);
    int rc = parse_clause(ps, json_array_get(list, i), path, &a->clauses[i]);
    for (size_t j = 0; rc == 0 && j < i; j++) {
      if (strcmp(a->clauses[j].key, a->clauses[i].key) == 0)
        rc = invalid(ps, path_key(param, sizeof(param), path, "alias"),
                     "the result key '%s' is already used by an earlier clause; give this clause "
                     "another alias.",
                     a->clauses[i].key);
    }
    if (rc != 0)
      return rc;
  }
  a->nclauses = n;
  return 0;
}

static int parse_key(parse_t *ps, const json_t *obj, const char *path,
                     const dg_saved_field_t **out) {
  char param[96], names[NAMES_MAX];
  if (!json_is_object(obj))
    return invalid(ps, path, "allowed: an object {propertyName}.");
  int rc = refused_member(ps, obj, path, true);
  if (rc != 0)
    return rc;
  const char *name = json_string_value(json_object_get(obj, "propertyName"));
  *out = name ? field_named(ps, name) : NULL;
  if (*out != NULL)
    return 0;
  return invalid(ps, path_key(param, sizeof(param), path, "propertyName"),
                 "Saved Query '%s' returns no field '%.64s' that you can see; group keys "
                 "must be fields it returns: %s.",
                 ps->q->name, name ? name : "", field_names(ps, -1, names, sizeof(names)));
}

static int parse_keys(parse_t *ps, const json_t *list, dg_save_agg_t *a) {
  size_t n = json_array_size(list);
  char path[48];
  if (list == NULL || json_is_null(list))
    return 0;
  if (!json_is_array(list) || n > GROUP_BY_MAX)
    return invalid(ps, "groupBy", "allowed: an array of at most 8 group keys {propertyName}.");
  a->keys = dg_arena_calloc(ps->arena, n + 1, sizeof(*a->keys));
  if (a->keys == NULL)
    return dg_errctx_set(ps->err, DG_ENOMEM, "groupBy", "Out of memory.");
  for (size_t i = 0; i < n; i++) {
    snprintf(path, sizeof(path), "groupBy[%zu]", i);
    int rc = parse_key(ps, json_array_get(list, i), path, &a->keys[i]);
    for (size_t j = 0; rc == 0 && j < i; j++) {
      if (a->keys[j] == a->keys[i])
        rc = invalid(ps, path, "'%s' is grouped by twice; give each key once.",
                     a->keys[i]->property->name);
    }
    if (rc != 0)
      return rc;
  }
  a->nkeys = n;
  return 0;
}

/* The fields the mapper must read: those a clause or a key uses. */
static int mark_needed(parse_t *ps, dg_save_agg_t *a) {
  a->needed = dg_arena_calloc(ps->arena, ps->q->nfields + 1, sizeof(*a->needed));
  if (a->needed == NULL)
    return dg_errctx_set(ps->err, DG_ENOMEM, "aggregations", "Out of memory.");
  for (size_t i = 0; i < a->nclauses; i++) {
    if (a->clauses[i].field != NULL)
      a->needed[a->clauses[i].field - ps->q->fields] = true;
  }
  for (size_t i = 0; i < a->nkeys; i++)
    a->needed[a->keys[i] - ps->q->fields] = true;
  return 0;
}

int dg_save_agg_parse(const dg_saved_query_t *q, const dg_principal_t *p, const json_t *args,
                      size_t max_grouped, dg_arena_t *arena, dg_save_agg_t *out, dg_errctx_t *err) {
  parse_t ps = {.q = q, .p = p, .arena = arena, .err = err};
  memset(out, 0, sizeof(*out));
  out->q = q;
  out->max_grouped = max_grouped;
  int rc = parse_clauses(&ps, json_object_get(args, "aggregations"), out);
  if (rc == 0)
    rc = parse_keys(&ps, json_object_get(args, "groupBy"), out);
  return rc == 0 ? mark_needed(&ps, out) : rc;
}

/* ---- Values ---------------------------------------------------------------------- */

static int fold(int c) {
  return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

/* Strings ignoring ASCII case, then by bytes, as query_entities sorts. */
static int compare_text(const char *a, size_t alen, const char *b, size_t blen) {
  size_t n = alen < blen ? alen : blen;
  for (size_t i = 0; i < n; i++) {
    int d = fold((unsigned char)a[i]) - fold((unsigned char)b[i]);
    if (d != 0)
      return d;
  }
  if (alen != blen)
    return alen < blen ? -1 : 1;
  return memcmp(a, b, n);
}

/* Nulls first; numbers by value, strings as above, false before true. */
static int compare_values(const json_t *a, const json_t *b) {
  bool an = a == NULL || json_is_null(a), bn = b == NULL || json_is_null(b);
  if (an || bn)
    return an == bn ? 0 : an ? -1 : 1;
  if (json_is_number(a) && json_is_number(b)) {
    double x = json_number_value(a), y = json_number_value(b);
    return x < y ? -1 : x > y ? 1 : 0;
  }
  if (json_is_string(a) && json_is_string(b))
    return compare_text(json_string_value(a), json_string_length(a), json_string_value(b),
                        json_string_length(b));
  return (int)json_is_true(a) - (int)json_is_true(b);
}

/* The text a value is grouped and counted by: strings in lower case, so
 * that values differing only in case fall together; a type letter keeps
 * 1 and "1" apart. */
static int value_key(const json_t *v, dg_buf_t *out) {
  char num[40];
  if (v == NULL || json_is_null(v))
    return dg_buf_append(out, "n;", 2);
  if (json_is_string(v)) {
    const char *s = json_string_value(v);
    size_t len = json_string_length(v);
    int rc = dg_buf_appendf(out, "s%zu:", len);
    for (size_t i = 0; rc == 0 && i < len; i++) {
      char c = (char)fold((unsigned char)s[i]);
      rc = dg_buf_append(out, &c, 1);
    }
    return rc;
  }
  if (json_is_integer(v))
    snprintf(num, sizeof(num), "i%lld;", (long long)json_integer_value(v));
  else if (json_is_real(v))
    snprintf(num, sizeof(num), "r%.17g;", json_real_value(v));
  else
    snprintf(num, sizeof(num), "%c;", json_is_true(v) ? 't' : 'f');
  return dg_buf_append_str(out, num);
}

/* ---- Accumulating ---------------------------------------------------------------- */

typedef struct acc {
  int64_t isum;  /* whole sums of Int and Long, while they fit */
  double sum;    /* every other sum, and whole sums that overflowed */
  bool overflow; /* isum no longer holds the sum */
  size_t n;      /* non-null values */
  json_t *best;  /* Min, Max */
  json_t *seen;  /* DistinctCount: the keys of the values seen */
} acc_t;

typedef struct group {
  size_t nkeys;
  json_t **values; /* the key values, as first seen */
  size_t rows;
  acc_t *accs;
} group_t;

typedef struct run {
  const dg_save_agg_t *a;
  json_t *index; /* group key text -> position in groups */
  group_t **groups;
  size_t ngroups, cap;
  size_t matched;
  dg_buf_t key;
} run_t;

static const json_t *field_of(const json_t *entity, const dg_saved_field_t *f) {
  return json_object_get(json_object_get(entity, "properties"), f->property->json_name);
}

static group_t *group_new(run_t *r, const json_t *entity) {
  const dg_save_agg_t *a = r->a;
  group_t *g = calloc(1, sizeof(*g));
  if (g == NULL)
    return NULL;
  g->values = calloc(a->nkeys + 1, sizeof(*g->values));
  g->accs = calloc(a->nclauses, sizeof(*g->accs));
  if (g->values == NULL || g->accs == NULL) {
    free(g->values);
    free(g->accs);
    free(g);
    return NULL;
  }
  g->nkeys = a->nkeys;
  for (size_t i = 0; i < a->nkeys; i++) {
    const json_t *v = field_of(entity, a->keys[i]);
    g->values[i] = v != NULL ? json_incref((json_t *)v) : json_null();
  }
  return g;
}

static void group_free(const dg_save_agg_t *a, group_t *g) {
  for (size_t i = 0; i < a->nkeys; i++)
    json_decref(g->values[i]);
  for (size_t i = 0; i < a->nclauses; i++) {
    json_decref(g->accs[i].best);
    json_decref(g->accs[i].seen);
  }
  free(g->values);
  free(g->accs);
  free(g);
}

/* The group of entity, made when it is the first of its key. */
static group_t *group_of(run_t *r, const json_t *entity) {
  dg_buf_reset(&r->key);
  for (size_t i = 0; i < r->a->nkeys; i++) {
    if (value_key(field_of(entity, r->a->keys[i]), &r->key) != 0)
      return NULL;
  }
  const char *text = r->key.data ? r->key.data : "";
  json_t *at = json_object_getn(r->index, text, r->key.len);
  if (at != NULL)
    return r->groups[json_integer_value(at)];
  if (r->ngroups == r->cap) {
    group_t **grown = dg_array_grow(r->groups, &r->cap, sizeof(*grown), 16, SIZE_MAX);
    if (grown == NULL)
      return NULL;
    r->groups = grown;
  }
  group_t *g = group_new(r, entity);
  if (g == NULL || json_object_setn_new_nocheck(r->index, text, r->key.len,
                                                json_integer((json_int_t)r->ngroups)) != 0) {
    if (g != NULL)
      group_free(r->a, g);
    return NULL;
  }
  r->groups[r->ngroups++] = g;
  return g;
}

static bool is_whole(const dg_saved_field_t *f) {
  return f->property->type == DG_TYPE_INT || f->property->type == DG_TYPE_LONG;
}

static void add_sum(acc_t *acc, const dg_saved_field_t *f, const json_t *v) {
  if (is_whole(f) && json_is_integer(v) && !acc->overflow &&
      !__builtin_add_overflow(acc->isum, (int64_t)json_integer_value(v), &acc->isum))
    return;
  if (is_whole(f) && !acc->overflow) {
    acc->overflow = true;
    acc->sum = (double)acc->isum;
  }
  acc->sum += json_number_value(v);
}

static int add_distinct(acc_t *acc, const json_t *v, dg_buf_t *scratch) {
  if (acc->seen == NULL)
    acc->seen = json_object();
  if (acc->seen == NULL)
    return DG_ENOMEM;
  dg_buf_reset(scratch);
  if (value_key(v, scratch) != 0)
    return DG_ENOMEM;
  const char *text = scratch->data ? scratch->data : "";
  if (json_object_getn(acc->seen, text, scratch->len) != NULL)
    return 0;
  return json_object_setn_nocheck(acc->seen, text, scratch->len, json_true()) == 0 ? 0 : DG_ENOMEM;
}

static int add_value(acc_t *acc, const dg_save_agg_clause_t *c, const json_t *v,
                     dg_buf_t *scratch) {
  if (c->field == NULL || v == NULL || json_is_null(v))
    return 0;
  acc->n++;
  switch (c->fn) {
  case DG_STORE_AGG_SUM:
  case DG_STORE_AGG_AVERAGE:
    add_sum(acc, c->field, v);
    return 0;
  case DG_STORE_AGG_MIN:
  case DG_STORE_AGG_MAX: {
    int order = acc->best == NULL ? 0 : compare_values(v, acc->best);
    bool better = acc->best == NULL || (c->fn == DG_STORE_AGG_MIN ? order < 0 : order > 0);
    if (better) {
      json_decref(acc->best);
      acc->best = json_incref((json_t *)v);
    }
    return 0;
  }
  case DG_STORE_AGG_DISTINCT_COUNT:
    return add_distinct(acc, v, scratch);
  default:
    return 0;
  }
}

typedef struct sink {
  run_t *run;
  dg_buf_t scratch;
  size_t max_items;
} sink_t;

static int add_entity(void *user, const json_t *entity) {
  sink_t *s = user;
  run_t *r = s->run;
  group_t *g = group_of(r, entity);
  if (g == NULL)
    return DG_ENOMEM;
  r->matched++;
  g->rows++;
  for (size_t i = 0; i < r->a->nclauses; i++) {
    const dg_save_agg_clause_t *c = &r->a->clauses[i];
    const json_t *v = c->field ? field_of(entity, c->field) : NULL;
    if (add_value(&g->accs[i], c, v, &s->scratch) != 0)
      return DG_ENOMEM;
  }
  return 0;
}

/* ---- The answer ------------------------------------------------------------------ */

static json_t *sum_json(const acc_t *acc, const dg_saved_field_t *f) {
  if (is_whole(f) && !acc->overflow)
    return json_integer((json_int_t)acc->isum);
  return json_real(acc->sum);
}

static json_t *measure_json(const acc_t *acc, const dg_save_agg_clause_t *c, size_t rows) {
  switch (c->fn) {
  case DG_STORE_AGG_COUNT:
    return json_integer((json_int_t)rows);
  case DG_STORE_AGG_SUM:
    return sum_json(acc, c->field);
  case DG_STORE_AGG_AVERAGE:
    if (acc->n == 0)
      return json_null();
    return json_real((is_whole(c->field) && !acc->overflow ? (double)acc->isum : acc->sum) /
                     (double)acc->n);
  case DG_STORE_AGG_MIN:
  case DG_STORE_AGG_MAX:
    return acc->best ? json_incref(acc->best) : json_null();
  default:
    return json_integer((json_int_t)json_object_size(acc->seen));
  }
}

static json_t *row_json(const dg_save_agg_t *a, const group_t *g) {
  json_t *key = json_object(), *aggs = json_object();
  bool ok = key != NULL && aggs != NULL;
  for (size_t i = 0; ok && i < a->nkeys; i++)
    ok = json_object_set(key, a->keys[i]->property->json_name, g->values[i]) == 0;
  for (size_t i = 0; ok && i < a->nclauses; i++)
    ok = json_object_set_new(aggs, a->clauses[i].key,
                             measure_json(&g->accs[i], &a->clauses[i], g->rows)) == 0;
  json_t *row = ok ? json_pack("{s:o,s:o}", "groupKey", key, "aggregates", aggs) : NULL;
  if (row == NULL && !ok) {
    json_decref(key);
    json_decref(aggs);
  }
  return row;
}

static int compare_groups(const void *x, const void *y) {
  const group_t *a = *(group_t *const *)x, *b = *(group_t *const *)y;
  for (size_t i = 0; i < a->nkeys; i++) {
    int c = compare_values(a->values[i], b->values[i]);
    if (c != 0)
      return c;
  }
  return 0;
}

static json_t *answer(run_t *r, json_t *warnings) {
  const dg_save_agg_t *a = r->a;
  if (r->ngroups > 1)
    qsort(r->groups, r->ngroups, sizeof(*r->groups), compare_groups);
  json_t *names = json_array(), *rows = json_array();
  bool ok = names != NULL && rows != NULL;
  for (size_t i = 0; ok && i < a->nkeys; i++)
    ok = json_array_append_new(names, json_string(a->keys[i]->property->name)) == 0;
  for (size_t i = 0; ok && i < r->ngroups; i++)
    ok = json_array_append_new(rows, row_json(a, r->groups[i])) == 0;
  json_t *out = ok ? json_pack("{s:I,s:O,s:O}", "matchedCount", (json_int_t)r->matched,
                               "groupByProperties", names, "rows", rows)
                   : NULL;
  if (out != NULL && warnings != NULL && json_object_set(out, "warnings", warnings) != 0) {
    json_decref(out);
    out = NULL;
  }
  json_decref(names);
  json_decref(rows);
  return out;
}

static void run_free(run_t *r) {
  for (size_t i = 0; i < r->ngroups; i++)
    group_free(r->a, r->groups[i]);
  free(r->groups);
  json_decref(r->index);
  dg_buf_free(&r->key);
}

/* Without groupBy there is one row, also when the answer holds nothing. */
static int totals_row(run_t *r) {
  if (r->a->nkeys > 0 || r->ngroups > 0)
    return 0;
  group_t *g = group_new(r, NULL);
  r->groups = calloc(1, sizeof(*r->groups));
  if (g == NULL || r->groups == NULL) {
    if (g != NULL)
      group_free(r->a, g);
    return DG_ENOMEM;
  }
  r->groups[0] = g;
  r->ngroups = r->cap = 1;
  return 0;
}

json_t *dg_save_agg_run(const dg_save_agg_t *a, const char *body, size_t len, dg_errctx_t *err) {
  run_t r = {.a = a, .index = json_object()};
  sink_t s = {.run = &r};
  dg_buf_init(&r.key, SIZE_MAX - 1);
  dg_buf_init(&s.scratch, SIZE_MAX - 1);
  dg_save_query_each_t each = {.q = a->q,
                               .selected = a->needed,
                               .max_items = a->nkeys > 0 ? a->max_grouped : SIZE_MAX,
                               .sink = add_entity,
                               .user = &s};
  bool more = false;
  json_t *warnings = NULL, *out = NULL;
  int rc =
      r.index != NULL ? dg_save_query_each(&each, body, len, &more, &warnings, err) : DG_ENOMEM;
  if (rc == 0 && more)
    dg_errctx_set(err, DG_E2BIG, "groupBy",
                  "the answer holds more than %zu records, more than a grouped aggregate may "
                  "cover (server.maxGroupedAggregateRecords); give inputs that narrow the "
                  "answer, or leave groupBy out for totals.",
                  a->max_grouped);
  if (rc == 0 && !more)
    rc = totals_row(&r);
  if (rc == 0 && !more)
    out = answer(&r, warnings);
  if (rc == DG_ENOMEM || (rc == 0 && !more && out == NULL))
    dg_errctx_set(err, DG_ENOMEM, "upstream", "the answer could not be aggregated: out of memory");
  json_decref(warnings);
  dg_buf_free(&s.scratch);
  run_free(&r);
  return out;
}
