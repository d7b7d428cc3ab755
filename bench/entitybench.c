/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* entitybench: what the runners share (workload files, timing, the RESULT
 * line) and the workload generator. See entitybench.h. */
#include "entitybench.h"
#include "rng.h"

#include <inttypes.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#define LINE_MAX_BYTES 4096

static const char *const kind_names[] = {"query", "lookup", "fetch"};
static const char *const statuses[] = {"Open", "Shipped", "Draft", "Cancelled"};

const char *kind_name(kind_t kind) {
  return kind_names[kind];
}

bool kind_parse(const char *name, kind_t *out) {
  for (int k = 0; k < KIND__COUNT; k++) {
    if (strcmp(name, kind_names[k]) == 0) {
      *out = (kind_t)k;
      return true;
    }
  }
  return false;
}

void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("entitybench: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

int fetch_ids(void) {
  static int n;
  if (n == 0) {
    const char *text = getenv("BENCH_FETCH_IDS");
    char *end = NULL;
    long v = text != NULL && *text != '\0' ? strtol(text, &end, 10) : IDS_PER_FETCH;
    if (end != NULL && (*end != '\0' || v < 1 || v > IDS_PER_FETCH))
      die("BENCH_FETCH_IDS is 1 to %d, not '%s'", IDS_PER_FETCH, text);
    n = (int)v;
  }
  return n;
}

uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

double cpu_seconds(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

/* ---- Workload files ------------------------------------------------------------------------ */

/* Splits line at tabs in place; returns the number of fields. */
static int fields(char *line, char **out, int max) {
  int n = 0;
  line[strcspn(line, "\r\n")] = '\0';
  for (char *p = line; n < max && p != NULL; n++) {
    out[n] = p;
    p = strchr(p, '\t');
    if (p != NULL)
      *p++ = '\0';
  }
  return n;
}

static bool parse_ids(char *text, item_t *it) {
  int n = 0;
  for (char *p = text; p != NULL && n < IDS_PER_FETCH; n++) {
    char *comma = strchr(p, ',');
    if (comma != NULL)
      *comma = '\0';
    if (strlen(p) != GUID_LEN)
      return false;
    memcpy(it->ids[n], p, GUID_LEN + 1);
    p = comma != NULL ? comma + 1 : NULL;
  }
  return n == IDS_PER_FETCH;
}

static bool parse_item(kind_t kind, char **f, int n, item_t *it) {
  memset(it, 0, sizeof(*it));
  if (kind == KIND_QUERY && n == 4) {
    snprintf(it->status, sizeof(it->status), "%s", f[1]);
    snprintf(it->date, sizeof(it->date), "%s", f[2]);
    it->page = (int)strtol(f[3], NULL, 10);
    return it->page >= 1 && strlen(it->date) == 10;
  }
  if (kind == KIND_LOOKUP && n == 2)
    return snprintf(it->words, sizeof(it->words), "%s", f[1]) < (int)sizeof(it->words);
  return kind == KIND_FETCH && n == 2 && parse_ids(f[1], it);
}

void workload_read(const char *path, kind_t kind, workload_t *out) {
  FILE *fp = fopen(path, "r");
  char line[LINE_MAX_BYTES];
  size_t cap = 0;
  memset(out, 0, sizeof(*out));
  out->kind = kind;
  if (fp == NULL)
    die("cannot read %s", path);
  while (fgets(line, sizeof(line), fp) != NULL) {
    char *f[4];
    int n = fields(line, f, 4);
    if (strcmp(f[0], kind_name(kind)) != 0)
      continue;
    if (out->n == cap) {
      cap = cap ? cap * 2 : 256;
      out->items = realloc(out->items, cap * sizeof(*out->items));
      if (out->items == NULL)
        die("out of memory");
    }
    if (!parse_item(kind, f, n, &out->items[out->n++]))
      die("%s: a malformed %s line", path, kind_name(kind));
  }
  fclose(fp);
  if (out->n == 0)
    die("%s has no %s lines", path, kind_name(kind));
}

void workload_free(workload_t *w) {
  free(w->items);
  memset(w, 0, sizeof(*w));
}

static double positive(const char *text, const char *what) {
  char *end = NULL;
  double v = strtod(text, &end);
  if (end == text || *end != '\0' || !(v > 0 && v < 1e6))
    die("bad %s '%s'", what, text);
  return v;
}

void drive_parse(int argc, char **argv, drive_t *out) {
  *out = (drive_t){.clients = 64, .warmup_s = 2, .measure_s = 10};
  for (int i = 0; i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--clients") == 0)
      out->clients = (int)positive(argv[i + 1], "--clients");
    else if (strcmp(argv[i], "--warmup") == 0)
      out->warmup_s = positive(argv[i + 1], "--warmup");
    else if (strcmp(argv[i], "--seconds") == 0)
      out->measure_s = positive(argv[i + 1], "--seconds");
    else
      die("unknown option %s (--clients N, --warmup S, --seconds S)", argv[i]);
  }
  if (argc % 2 != 0)
    die("option %s has no value", argv[argc - 1]);
}

/* ---- Latencies ------------------------------------------------------------------------------ */

void latencies_add(latencies_t *l, uint64_t ns) {
  if (l->n == l->cap) {
    l->cap = l->cap ? l->cap * 2 : 65536;
    l->us = realloc(l->us, l->cap * sizeof(*l->us));
    if (l->us == NULL)
      die("out of memory");
  }
  uint64_t us = ns / 1000;
  l->us[l->n++] = us > UINT32_MAX ? UINT32_MAX : (uint32_t)us;
}

static int compare_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return x < y ? -1 : x > y;
}

static double percentile_ms(const latencies_t *l, double p) {
  if (l->n == 0)
    return 0;
  size_t i = (size_t)(p * (double)(l->n - 1) + 0.5);
  return l->us[i] / 1000.0;
}

static double mean_ms(const latencies_t *l) {
  double sum = 0;
  for (size_t i = 0; i < l->n; i++)
    sum += l->us[i];
  return l->n > 0 ? sum / (double)l->n / 1000.0 : 0;
}

void latencies_report(const char *who, kind_t kind, latencies_t *l, double seconds) {
  qsort(l->us, l->n, sizeof(*l->us), compare_u32);
  printf("RESULT who=%s kind=%s requests=%zu seconds=%.3f rps=%.1f p50_ms=%.3f p99_ms=%.3f "
         "mean_ms=%.3f errors=%" PRIu64 " total=%" PRIu64 " cpu_s=%.2f\n",
         who, kind_name(kind), l->n, seconds, (double)l->n / seconds, percentile_ms(l, 0.50),
         percentile_ms(l, 0.99), mean_ms(l), l->errors, l->total, cpu_seconds());
  fflush(stdout);
  free(l->us);
  memset(l, 0, sizeof(*l));
}

/* ---- The workload generator ------------------------------------------------------------------ */

static int64_t count_rows(sqlite3 *db, const char *table) {
  char sql[128];
  sqlite3_stmt *st = NULL;
  snprintf(sql, sizeof(sql), "SELECT max(\"_seq\") FROM \"%s\"", table);
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK || sqlite3_step(st) != SQLITE_ROW)
    die("%s: %s", sql, sqlite3_errmsg(db));
  int64_t n = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  if (n < 1)
    die("%s is empty: build the dataset with bench/dataset", table);
  return n;
}

/* The text of column 0 of the row with a random _seq of table. */
static void random_text(sqlite3_stmt *st, rng_t *r, int64_t rows, char *out, size_t size) {
  sqlite3_reset(st);
  sqlite3_bind_int64(st, 1, range(r, 1, rows));
  if (sqlite3_step(st) != SQLITE_ROW)
    die("a row is missing from the dataset");
  snprintf(out, size, "%s", (const char *)sqlite3_column_text(st, 0));
}

/* "harbor logistics": the first two words of a customer's name, lower case. */
static void lookup_words(sqlite3_stmt *st, rng_t *r, int64_t rows, char *out, size_t size) {
  random_text(st, r, rows, out, size);
  char *second = strchr(out, ' ');
  char *third = second != NULL ? strchr(second + 1, ' ') : NULL;
  if (third != NULL)
    *third = '\0';
  for (char *p = out; *p != '\0'; p++)
    *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
}

static void write_items(sqlite3 *db, FILE *out, int n, rng_t *r) {
  int64_t orders = count_rows(db, "Orders"), customers = count_rows(db, "Customers");
  sqlite3_stmt *order = NULL, *customer = NULL;
  if (sqlite3_prepare_v2(db, "SELECT id FROM \"Orders\" WHERE \"_seq\" = ?", -1, &order, NULL) ||
      sqlite3_prepare_v2(db, "SELECT \"Name\" FROM \"Customers\" WHERE \"_seq\" = ?", -1, &customer,
                         NULL))
    die("the dataset has no Orders or Customers table: %s", sqlite3_errmsg(db));
  char text[256];
  for (int i = 0; i < n; i++) {
    /* Order dates span 2019-2024: a day in 2019-2024, pages 1 to 4. */
    fprintf(out, "query\t%s\t%04d-%02d-%02d\t%d\n", statuses[range(r, 0, 3)],
            (int)range(r, 2019, 2024), (int)range(r, 1, 12), (int)range(r, 1, 28),
            (int)range(r, 1, 4));
    lookup_words(customer, r, customers, text, sizeof(text));
    fprintf(out, "lookup\t%s\n", text);
    fputs("fetch\t", out);
    for (int k = 0; k < IDS_PER_FETCH; k++) {
      random_text(order, r, orders, text, sizeof(text));
      fprintf(out, "%s%s", k ? "," : "", text);
    }
    fputc('\n', out);
  }
  sqlite3_finalize(order);
  sqlite3_finalize(customer);
}

int workload_main(int argc, char **argv) {
  if (argc < 2 || argc > 3)
    die("usage: entitybench workload DB FILE [N]");
  int n = argc == 3 ? (int)positive(argv[2], "N") : 1000;
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(argv[0], &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
    die("cannot open %s: %s", argv[0], sqlite3_errmsg(db));
  FILE *out = fopen(argv[1], "w");
  if (out == NULL)
    die("cannot write %s", argv[1]);
  rng_t r = {42};
  write_items(db, out, n, &r);
  if (fclose(out) != 0)
    die("cannot write %s", argv[1]);
  sqlite3_close(db);
  return 0;
}

int main(int argc, char **argv) {
  (void)fetch_ids(); /* read before any thread starts */
  if (argc >= 2 && strcmp(argv[1], "workload") == 0)
    return workload_main(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "raw") == 0)
    return raw_main(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "http") == 0)
    return http_main(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "pg") == 0)
    return pg_main(argc - 2, argv + 2);
  die("usage: entitybench workload|raw|http|pg ... (see entitybench.h)");
}
