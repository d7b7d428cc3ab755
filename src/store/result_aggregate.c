/* Aggregate results shared by the drivers: a row of values becomes
 * {"groupKey": {...}, "aggregates": {...}}, each value typed by its
 * property and function, its size counted against the result budget. */
#include <math.h>
#include <string.h>

#include "store/internal.h"

/* Bytes of JSON punctuation counted per key and value. */
#define VALUE_OVERHEAD 8

static size_t value_size(const char *key, const dg_store_value_t *v) {
  return VALUE_OVERHEAD + strlen(key) + (v->kind == DG_STORE_TEXT ? v->len : 24);
}

static bool whole(const dg_store_aggregation_t *g) {
  if (g->fn == DG_STORE_AGG_COUNT || g->fn == DG_STORE_AGG_DISTINCT_COUNT)
    return true;
  return g->fn != DG_STORE_AGG_AVERAGE &&
         (g->prop->type == DG_TYPE_INT || g->prop->type == DG_TYPE_LONG);
}

/* Counts and sums of whole numbers are integers, an average a number,
 * Min and Max of a date its text; a sum too large for a double is null. */
static json_t *measure_json(const dg_store_aggregation_t *g, const dg_store_value_t *v) {
  if (v->kind == DG_STORE_TEXT)
    return json_stringn(v->text, v->len);
  if (v->kind != DG_STORE_INT && v->kind != DG_STORE_REAL)
    return json_null();
  if (whole(g))
    return json_integer(v->kind == DG_STORE_INT ? v->i : (json_int_t)v->d);
  double d = v->kind == DG_STORE_REAL ? v->d : (double)v->i;
  return isfinite(d) ? json_real(d) : json_null();
}

static bool put(json_t *obj, const char *key, json_t *value) {
  return value != NULL && json_object_set_new(obj, key, value) == 0;
}

json_t *dg__store_aggregate_row(const dg_store_aggregate_t *a, const dg_store_value_t *row,
                                dg__store_budget_t *budget, int *rc) {
  json_t *keys = json_object(), *measures = json_object(), *out = json_object();
  bool ok = keys != NULL && measures != NULL && out != NULL;
  size_t size = VALUE_OVERHEAD * 4;
  for (size_t i = 0; ok && i < a->ngroup_by; i++) {
    const dg_store_group_key_t *k = &a->group_by[i];
    ok = put(keys, k->key, dg__store_json_value(k->prop, &row[i]));
    size += value_size(k->key, &row[i]);
  }
  const dg_store_value_t *values = row + a->ngroup_by + 1;
  for (size_t i = 0; ok && i < a->naggs; i++) {
    ok = put(measures, a->aggs[i].key, measure_json(&a->aggs[i], &values[i]));
    size += value_size(a->aggs[i].key, &values[i]);
  }
  ok = ok && json_object_set(out, "groupKey", keys) == 0 &&
       json_object_set(out, "aggregates", measures) == 0;
  json_decref(keys);
  json_decref(measures);
  budget->used += size;
  *rc = !ok ? DG_ENOMEM : budget->used > budget->max ? DG_E2BIG : 0;
  if (*rc != 0) {
    json_decref(out);
    return NULL;
  }
  return out;
}

json_t *dg__store_aggregate_result(const dg_store_aggregate_t *a, int64_t matched, json_t *rows) {
  json_t *names = json_array(), *out = json_object();
  bool ok = names != NULL && out != NULL && rows != NULL;
  for (size_t i = 0; ok && i < a->ngroup_by; i++)
    ok = json_array_append_new(names, json_string(a->group_by[i].name)) == 0;
  ok = ok && put(out, "matchedCount", json_integer(matched)) &&
       json_object_set(out, "groupByProperties", names) == 0 &&
       json_object_set(out, "rows", rows) == 0;
  json_decref(names);
  json_decref(rows);
  if (!ok) {
    json_decref(out);
    return NULL;
  }
  return out;
}

int dg__store_over_cap(const dg_store_aggregate_t *a, int64_t matched, dg_errctx_t *err) {
  char hint[256];
  if (a->date_hint != NULL)
    snprintf(hint, sizeof(hint),
             "for example with a date range on %s (GreaterThanEqualTo and LessThan)",
             a->date_hint->name);
  else
    snprintf(hint, sizeof(hint), "for example with a date range");
  return dg_errctx_set(err, DG_E2BIG, "queryParameterGroups",
                       "The grouped aggregate matches %lld %s records, more than the %lld that a "
                       "grouped aggregate may match (server.maxGroupedAggregateRecords). Narrow "
                       "queryParameterGroups, %s, and call again; ungrouped totals (no groupBy) "
                       "have no record cap.",
                       (long long)matched, a->model->name, (long long)a->grouped_cap, hint);
}
