/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Process-local metrics in the Prometheus text exposition format. Series
 * are kept in one open-addressing table keyed by name and labels; the
 * table is bounded so a label explosion cannot grow memory without end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/base.h"

#define MAX_SERIES 4096
#define MAX_DESCRIPTIONS 128

typedef enum { KIND_COUNTER, KIND_GAUGE, KIND_HISTOGRAM } metric_kind_t;

static const double bucket_bounds[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                       0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                       1,      2.5,     5,      10,    30};
#define NBUCKETS DG_ARRAY_SIZE(bucket_bounds)

typedef struct series {
  const char *name; /* static */
  char *labels;     /* owned, "" for none */
  metric_kind_t kind;
  double value; /* counter/gauge value, histogram sum */
  uint64_t count;
  uint64_t buckets[NBUCKETS];
} series_t;

typedef struct description {
  const char *name;
  const char *help;
} description_t;

static series_t *table[MAX_SERIES * 2];
static size_t nseries;
/* Counts resets: a dg_metrics_ref_t found before the last one is stale. */
static unsigned long generation = 1;
static description_t descriptions[MAX_DESCRIPTIONS];
static size_t ndescriptions;

static uint64_t hash_key(const char *name, const char *labels) {
  return dg_hash_bytes(labels, strlen(labels), dg_hash_bytes(name, strlen(name), 0));
}

static series_t *lookup(const char *name, const char *labels, metric_kind_t kind) {
  if (labels == NULL)
    labels = "";
  size_t mask = DG_ARRAY_SIZE(table) - 1;
  size_t i = hash_key(name, labels) & mask;
  for (; table[i] != NULL; i = (i + 1) & mask) {
    if (strcmp(table[i]->name, name) == 0 && strcmp(table[i]->labels, labels) == 0)
      return table[i]->kind == kind ? table[i] : NULL; /* a name keeps its first kind */
  }
  if (nseries >= MAX_SERIES)
    return NULL;
  series_t *s = calloc(1, sizeof(*s));
  char *copy = strdup(labels);
  if (s == NULL || copy == NULL) {
    free(s);
    free(copy);
    return NULL;
  }
  s->labels = copy;
  s->name = name;
  s->kind = kind;
  table[i] = s;
  nseries++;
  return s;
}

/* Adds value to the series (or sets it): what counters and gauges share. */
static void update(const char *name, const char *labels, metric_kind_t kind, double value,
                   bool add) {
  series_t *s = lookup(name, labels, kind);
  if (s != NULL)
    s->value = add ? s->value + value : value;
}

void dg_metrics_counter_add(const char *name, const char *labels, double value) {
  update(name, labels, KIND_COUNTER, value, true);
}

void dg_metrics_counter_set(const char *name, const char *labels, double value) {
  update(name, labels, KIND_COUNTER, value, false);
}

void dg_metrics_gauge_add(const char *name, const char *labels, double delta) {
  update(name, labels, KIND_GAUGE, delta, true);
}

void dg_metrics_gauge_set(const char *name, const char *labels, double value) {
  update(name, labels, KIND_GAUGE, value, false);
}

static void observe(series_t *s, double seconds) {
  s->value += seconds;
  s->count++;
  for (size_t b = 0; b < NBUCKETS; b++) {
    if (seconds <= bucket_bounds[b])
      s->buckets[b]++;
  }
}

void dg_metrics_observe(const char *name, const char *labels, double seconds) {
  series_t *s = lookup(name, labels, KIND_HISTOGRAM);
  if (s != NULL)
    observe(s, seconds);
}

/* ---- Series found once ----------------------------------------------------- */

bool dg_metrics_ref_bound(const dg_metrics_ref_t *ref) {
  return ref->series != NULL && ref->generation == generation;
}

static void ref_bind(dg_metrics_ref_t *ref, const char *name, const char *labels,
                     metric_kind_t kind) {
  ref->series = lookup(name, labels, kind);
  ref->generation = generation;
}

void dg_metrics_ref_counter(dg_metrics_ref_t *ref, const char *name, const char *labels) {
  ref_bind(ref, name, labels, KIND_COUNTER);
}

void dg_metrics_ref_histogram(dg_metrics_ref_t *ref, const char *name, const char *labels) {
  ref_bind(ref, name, labels, KIND_HISTOGRAM);
}

void dg_metrics_ref_add(const dg_metrics_ref_t *ref, double value) {
  if (dg_metrics_ref_bound(ref))
    ((series_t *)ref->series)->value += value;
}

void dg_metrics_ref_observe(const dg_metrics_ref_t *ref, double seconds) {
  if (dg_metrics_ref_bound(ref))
    observe(ref->series, seconds);
}

void dg_metrics_describe(const char *name, const char *help) {
  for (size_t i = 0; i < ndescriptions; i++) {
    if (strcmp(descriptions[i].name, name) == 0) {
      descriptions[i].help = help;
      return;
    }
  }
  if (ndescriptions < MAX_DESCRIPTIONS)
    descriptions[ndescriptions++] = (description_t){name, help};
}

static const char *help_of(const char *name) {
  for (size_t i = 0; i < ndescriptions; i++) {
    if (strcmp(descriptions[i].name, name) == 0)
      return descriptions[i].help;
  }
  return NULL;
}

static int cmp_series(const void *a, const void *b) {
  const series_t *x = *(series_t *const *)a, *y = *(series_t *const *)b;
  int c = strcmp(x->name, y->name);
  return c != 0 ? c : strcmp(x->labels, y->labels);
}

static int render_histogram(dg_buf_t *out, const series_t *s) {
  const char *sep = s->labels[0] ? "," : "";
  int rc = 0;
  for (size_t b = 0; b < NBUCKETS && rc == 0; b++)
    rc = dg_buf_appendf(out, "%s_bucket{%s%sle=\"%g\"} %llu\n", s->name, s->labels, sep,
                        bucket_bounds[b], (unsigned long long)s->buckets[b]);
  if (rc == 0)
    rc = dg_buf_appendf(out, "%s_bucket{%s%sle=\"+Inf\"} %llu\n", s->name, s->labels, sep,
                        (unsigned long long)s->count);
  /* Braces only around labels that exist: "name_sum{} 1" is not valid text format. */
  const char *open = s->labels[0] ? "{" : "", *close = s->labels[0] ? "}" : "";
  if (rc == 0)
    rc = dg_buf_appendf(out, "%s_sum%s%s%s %.9g\n", s->name, open, s->labels, close, s->value);
  if (rc == 0)
    rc = dg_buf_appendf(out, "%s_count%s%s%s %llu\n", s->name, open, s->labels, close,
                        (unsigned long long)s->count);
  return rc;
}

static int render_header(dg_buf_t *out, const series_t *s) {
  static const char *const kinds[] = {"counter", "gauge", "histogram"};
  const char *help = help_of(s->name);
  int rc = 0;
  if (help != NULL)
    rc = dg_buf_appendf(out, "# HELP %s %s\n", s->name, help);
  if (rc == 0)
    rc = dg_buf_appendf(out, "# TYPE %s %s\n", s->name, kinds[s->kind]);
  return rc;
}

int dg_metrics_render(dg_buf_t *out) {
  series_t **all = malloc((nseries ? nseries : 1) * sizeof(*all));
  if (all == NULL)
    return DG_ENOMEM;
  size_t n = 0;
  for (size_t i = 0; i < DG_ARRAY_SIZE(table); i++) {
    if (table[i] != NULL)
      all[n++] = table[i];
  }
  qsort(all, n, sizeof(*all), cmp_series);
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    const series_t *s = all[i];
    if (i == 0 || strcmp(all[i - 1]->name, s->name) != 0)
      rc = render_header(out, s);
    if (rc != 0)
      break;
    if (s->kind == KIND_HISTOGRAM)
      rc = render_histogram(out, s);
    else if (s->labels[0])
      rc = dg_buf_appendf(out, "%s{%s} %.17g\n", s->name, s->labels, s->value);
    else
      rc = dg_buf_appendf(out, "%s %.17g\n", s->name, s->value);
  }
  free(all);
  return rc;
}

void dg_metrics_reset(void) {
  for (size_t i = 0; i < DG_ARRAY_SIZE(table); i++) {
    if (table[i] != NULL) {
      free(table[i]->labels);
      free(table[i]);
      table[i] = NULL;
    }
  }
  nseries = 0;
  generation++;
}
