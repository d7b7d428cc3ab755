/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Aggregate results shared by the drivers, written as JSON text on the
 * worker thread like the other reads (result.c): a row of values becomes
 * {"groupKey":{...},"aggregates":{...}}, each value typed by its property
 * and function; every buffer stops at the result budget. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "store/internal.h"

static bool whole(const dg_store_aggregation_t *g) {
  if (g->fn == DG_STORE_AGG_COUNT || g->fn == DG_STORE_AGG_DISTINCT_COUNT)
    return true;
  return g->fn != DG_STORE_AGG_AVERAGE &&
         (g->prop->type == DG_TYPE_INT || g->prop->type == DG_TYPE_LONG);
}

/* Counts and sums of whole numbers are integers, an average a number,
 * Min and Max of a date its text; a sum too large for a double is null. */
static int put_measure(dg_buf_t *out, const dg_store_aggregation_t *g, const dg_store_value_t *v) {
  if (v->kind == DG_STORE_TEXT)
    return dg_json_write_string(out, v->text, v->len);
  if (v->kind != DG_STORE_INT && v->kind != DG_STORE_REAL)
    return dg_buf_append_str(out, "null");
  if (whole(g))
    return dg_json_write_integer(out, v->kind == DG_STORE_INT ? v->i : (int64_t)v->d);
  double d = v->kind == DG_STORE_REAL ? v->d : (double)v->i;
  return isfinite(d) ? dg_json_write_real(out, d) : dg_buf_append_str(out, "null");
}

static int put_key(dg_buf_t *out, bool first, const char *key) {
  int rc = first ? 0 : dg_buf_append(out, ",", 1);
  if (rc == 0)
    rc = dg_json_write_string(out, key, strlen(key));
  return rc == 0 ? dg_buf_append(out, ":", 1) : rc;
}

int dg__store_put_aggregate_row(dg_buf_t *out, const dg_store_aggregate_t *a,
                                const dg_store_value_t *row) {
  int rc = dg_buf_append_str(out, "{\"groupKey\":{");
  for (size_t i = 0; rc == 0 && i < a->ngroup_by; i++) {
    rc = put_key(out, i == 0, a->group_by[i].key);
    if (rc == 0)
      rc = dg__store_put_value(out, a->group_by[i].prop, &row[i]);
  }
  if (rc == 0)
    rc = dg_buf_append_str(out, "},\"aggregates\":{");
  /* count(*) sits between the keys and the aggregations. */
  const dg_store_value_t *values = row + a->ngroup_by + 1;
  for (size_t i = 0; rc == 0 && i < a->naggs; i++) {
    rc = put_key(out, i == 0, a->aggs[i].key);
    if (rc == 0)
      rc = put_measure(out, &a->aggs[i], &values[i]);
  }
  return rc == 0 ? dg_buf_append_str(out, "}}") : rc;
}

int dg__store_put_aggregate(dg_buf_t *out, const dg_store_aggregate_t *a, int64_t matched,
                            const dg_buf_t *rows) {
  int rc = dg_buf_append_str(out, "{\"matchedCount\":");
  if (rc == 0)
    rc = dg_json_write_integer(out, matched);
  if (rc == 0)
    rc = dg_buf_append_str(out, ",\"groupByProperties\":[");
  for (size_t i = 0; rc == 0 && i < a->ngroup_by; i++) {
    rc = i == 0 ? 0 : dg_buf_append(out, ",", 1);
    if (rc == 0)
      rc = dg_json_write_string(out, a->group_by[i].name, strlen(a->group_by[i].name));
  }
  if (rc == 0)
    rc = dg_buf_append_str(out, "],\"rows\":[");
  if (rc == 0 && rows->len > 0)
    rc = dg_buf_append(out, rows->data, rows->len);
  return rc == 0 ? dg_buf_append_str(out, "]}") : rc;
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
