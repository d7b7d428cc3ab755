/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* SQL of aggregate_entities, built from a checked dg_store_aggregate_t on
 * top of the filters' FROM and WHERE (sql.c). Keys on the record itself or
 * on Outbound references put each record in exactly one group:
 *
 *   SELECT <keys>, count(*), <one column per aggregation>
 *   FROM "Orders" AS t0 [LEFT JOIN ... AS r<n>: filters]
 *   [LEFT JOIN "Customers" AS g<n> ON g<n>.id = t0."Customer"]      Outbound key
 *   [LEFT JOIN "Customers" AS j<n> ON j<n>.id = t0."Customer"]      joinFilter
 *   WHERE ... [GROUP BY <keys> ORDER BY <keys>]
 *
 * A key on an Inbound reference puts a record in one group per distinct
 * related value (nulls when it has no related entity): the matched
 * records are joined to their related entities through the foreign key's
 * index, made distinct per (record, keys), and grouped outside:
 *
 *   SELECT x.k0, count(*), COALESCE(sum(x.m0), 0)
 *   FROM (SELECT DISTINCT t0."_seq" AS _s, g10."SKU" AS k0, t0."Amount" AS m0
 *         FROM "Orders" AS t0 LEFT JOIN "OrderLines" AS g10 ON g10."Order" = t0.id
 *         WHERE ...) AS x
 *   GROUP BY x.k0 ORDER BY x.k0
 *
 * Every other join is on the joined table's id, so it never multiplies a
 * record. A joinFilter clause aggregates CASE WHEN <the joined entity
 * exists and the condition holds> THEN <value> END, so one statement
 * answers conditional and unconditional clauses together. */
#include <stdio.h>
#include <string.h>

#include "store/internal.h"

#define EXPR_MAX 256

static const char *const functions[] = {
    [DG_STORE_AGG_SUM] = "sum",     [DG_STORE_AGG_AVERAGE] = "avg",
    [DG_STORE_AGG_COUNT] = "count", [DG_STORE_AGG_MIN] = "min",
    [DG_STORE_AGG_MAX] = "max",     [DG_STORE_AGG_DISTINCT_COUNT] = "count",
};

/* ---- Group keys ------------------------------------------------------------------------- */

/* Keys that follow one reference share one join, named after it. */
static bool first_of_reference(const dg_store_aggregate_t *a, size_t i) {
  for (size_t j = 0; j < i; j++) {
    if (a->group_by[j].reference == a->group_by[i].reference)
      return false;
  }
  return true;
}

/* A key's column where the keys' tables are joined. */
static void group_column(dg__sql_t *sql, const dg_store_group_key_t *k) {
  char alias[32];
  if (k->reference == NULL) {
    dg__sql_ident(sql, "t0", k->prop->name);
    return;
  }
  snprintf(alias, sizeof(alias), "g%zu", k->reference->index);
  dg__sql_ident(sql, alias, k->prop->name);
}

/* The keys as the outer statement reads them: their own columns, or the
 * inner statement's k<i>. */
/* The key columns; in ORDER BY each with the dialect's placement of nulls
 * (first, as SQLite sorts them). */
static void key_columns(dg__sql_t *sql, const dg_store_aggregate_t *a, bool outer, bool order) {
  for (size_t i = 0; i < a->ngroup_by; i++) {
    dg__sql_put(sql, i ? ", " : "");
    if (outer)
      dg__sql_putf(sql, "x.k%zu", i);
    else
      group_column(sql, &a->group_by[i]);
    dg__sql_put(sql, order ? sql->dialect->nulls_first : "");
  }
}

static void group_columns(dg__sql_t *sql, const dg_store_aggregate_t *a, bool outer) {
  key_columns(sql, a, outer, false);
}

static bool any_inbound_key(const dg_store_aggregate_t *a) {
  for (size_t i = 0; i < a->ngroup_by; i++) {
    if (dg__store_is_inbound(a->group_by[i].reference))
      return true;
  }
  return false;
}

/* One join per reference the keys follow: Outbound on the related id,
 * Inbound on the related entities' foreign key (indexed). */
static void group_joins(dg__sql_t *sql, const dg_store_aggregate_t *a) {
  for (size_t i = 0; i < a->ngroup_by; i++) {
    const dg_property_t *ref = a->group_by[i].reference;
    if (ref == NULL || !first_of_reference(a, i))
      continue;
    dg__sql_put(sql, " LEFT JOIN ");
    dg__sql_ident(sql, NULL, ref->reference->target->name);
    dg__sql_putf(sql, " AS g%zu ON ", ref->index);
    if (dg__store_is_inbound(ref)) {
      char alias[32];
      snprintf(alias, sizeof(alias), "g%zu", ref->index);
      dg__sql_ident(sql, alias, ref->reference->inverse_property);
      dg__sql_put(sql, " = t0.id");
    } else {
      dg__sql_putf(sql, "g%zu.id = ", ref->index);
      dg__sql_ident(sql, "t0", ref->name);
    }
  }
}

/* ---- joinFilters -------------------------------------------------------------------------- */

/* Clauses joining the same entity by the same key share the first one's
 * join. */
static size_t join_slot(const dg_store_aggregate_t *a, size_t i) {
  const dg_store_join_t *x = a->aggs[i].join;
  for (size_t j = 0; j < i; j++) {
    const dg_store_join_t *y = a->aggs[j].join;
    if (y != NULL && y->target == x->target && y->key == x->key)
      return j;
  }
  return i;
}

static void join_filters(dg__sql_t *sql, const dg_store_aggregate_t *a) {
  char key[EXPR_MAX];
  for (size_t i = 0; i < a->naggs; i++) {
    const dg_store_join_t *j = a->aggs[i].join;
    if (j == NULL || join_slot(a, i) != i)
      continue;
    dg__sql_column_text(sql, key, sizeof(key), "t0", j->key);
    dg__sql_put(sql, " LEFT JOIN ");
    dg__sql_ident(sql, NULL, j->target->name);
    dg__sql_putf(sql, " AS j%zu ON j%zu.id = %s", i, i, key);
  }
}

/* The foreign side read as the local property's type: comparisons are
 * typed off the base property. */
static void typed_foreign(dg__sql_t *sql, const dg_store_join_t *j, const char *column, char *out,
                          size_t size) {
  dg_data_type_t local = j->local != NULL ? j->local->type : DG_TYPE_GUID;
  dg_data_type_t foreign = j->foreign != NULL ? j->foreign->type : DG_TYPE_GUID;
  const char *const *wrap = NULL;
  if (local != foreign && local == DG_TYPE_DATE)
    wrap = sql->dialect->as_date;
  else if (local != foreign && local == DG_TYPE_DATETIME)
    wrap = sql->dialect->as_datetime;
  int n = wrap != NULL ? snprintf(out, size, "%s%s%s", wrap[0], column, wrap[1])
                       : snprintf(out, size, "%s", column);
  if ((n < 0 || (size_t)n >= size) && sql->rc == 0)
    sql->rc = DG_E2BIG;
}

static void join_condition(dg__sql_t *sql, const dg_store_aggregate_t *a, size_t i) {
  const dg_store_join_t *j = a->aggs[i].join;
  char alias[32], local[EXPR_MAX], column[EXPR_MAX], foreign[EXPR_MAX];
  snprintf(alias, sizeof(alias), "j%zu", join_slot(a, i));
  dg__sql_column_text(sql, local, sizeof(local), "t0", j->local);
  dg__sql_column_text(sql, column, sizeof(column), alias, j->foreign);
  typed_foreign(sql, j, column, foreign, sizeof(foreign));
  dg__sql_putf(sql, "(%s.id IS NOT NULL AND ", alias);
  dg__sql_compare(sql, j->op, local, j->compare_property ? foreign : NULL, &j->value);
  dg__sql_put(sql, ")");
}

/* ---- Measures ------------------------------------------------------------------------------ */

/* One aggregation of value (a column, or the inner statement's m<i>):
 * Sum of nothing is 0, Average, Min and Max of nothing null; the value is
 * counted only where the clause's join condition holds. */
static void measure(dg__sql_t *sql, const dg_store_aggregate_t *a, size_t i, const char *value) {
  const dg_store_aggregation_t *g = &a->aggs[i];
  if (g->fn == DG_STORE_AGG_COUNT && g->join == NULL) {
    dg__sql_put(sql, "count(*)");
    return;
  }
  dg__sql_put(sql, g->fn == DG_STORE_AGG_SUM ? "COALESCE(" : "");
  dg__sql_putf(sql, "%s(%s", functions[g->fn],
               g->fn == DG_STORE_AGG_DISTINCT_COUNT ? "DISTINCT " : "");
  if (g->join == NULL) {
    dg__sql_put(sql, value);
  } else {
    dg__sql_put(sql, "CASE WHEN ");
    join_condition(sql, a, i);
    dg__sql_putf(sql, " THEN %s END", value);
    /* CASE drops the column's collation: distinct strings still ignore case. */
    if (g->prop != NULL && g->prop->type == DG_TYPE_STRING)
      dg__sql_put(sql, sql->dialect->nocase);
  }
  dg__sql_put(sql, g->fn == DG_STORE_AGG_SUM ? "), 0)" : ")");
}

static void measures(dg__sql_t *sql, const dg_store_aggregate_t *a, bool outer) {
  char value[EXPR_MAX];
  for (size_t i = 0; i < a->naggs; i++) {
    if (a->aggs[i].prop == NULL)
      snprintf(value, sizeof(value), "1");
    else if (outer)
      snprintf(value, sizeof(value), "x.m%zu", i);
    else
      dg__sql_column_text(sql, value, sizeof(value), "t0", a->aggs[i].prop);
    dg__sql_put(sql, ", ");
    measure(sql, a, i, value);
  }
}

/* ---- Statements ------------------------------------------------------------------------------ */

static void group_by(dg__sql_t *sql, const dg_store_aggregate_t *a, bool outer) {
  if (a->ngroup_by == 0)
    return;
  dg__sql_put(sql, " GROUP BY ");
  group_columns(sql, a, outer);
  dg__sql_put(sql, " ORDER BY ");
  key_columns(sql, a, outer, true);
}

/* Each matched record once per distinct combination of its keys, with
 * the values the aggregations read. */
static void distinct_rows(dg__sql_t *sql, const dg_store_aggregate_t *a) {
  dg__sql_put(sql, "SELECT DISTINCT t0.\"_seq\" AS _s");
  for (size_t i = 0; i < a->ngroup_by; i++) {
    dg__sql_put(sql, ", ");
    group_column(sql, &a->group_by[i]);
    dg__sql_putf(sql, " AS k%zu", i);
  }
  for (size_t i = 0; i < a->naggs; i++) {
    if (a->aggs[i].prop == NULL)
      continue;
    dg__sql_put(sql, ", ");
    dg__sql_ident(sql, "t0", a->aggs[i].prop->name);
    dg__sql_putf(sql, " AS m%zu", i);
  }
  dg__sql_from(sql, a->model, &a->filters);
  group_joins(sql, a);
  dg__sql_where(sql, &a->filters);
}

void dg__sql_aggregate(dg__sql_t *sql, const dg_store_aggregate_t *a) {
  bool outer = any_inbound_key(a);
  dg__sql_put(sql, "SELECT ");
  group_columns(sql, a, outer);
  dg__sql_put(sql, a->ngroup_by > 0 ? ", count(*)" : "count(*)");
  measures(sql, a, outer);
  if (outer) {
    dg__sql_put(sql, " FROM (");
    distinct_rows(sql, a);
    dg__sql_put(sql, ") AS x");
  } else {
    dg__sql_from(sql, a->model, &a->filters);
    group_joins(sql, a);
    join_filters(sql, a);
    dg__sql_where(sql, &a->filters);
  }
  group_by(sql, a, outer);
}

void dg__sql_aggregate_count(dg__sql_t *sql, const dg_store_aggregate_t *a) {
  dg__sql_put(sql, "SELECT count(*)");
  dg__sql_from_where(sql, a->model, &a->filters);
}
