/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* entitybench: the entity tool benchmark of bench/query, in three parts.
 *
 *   entitybench workload DB FILE [N]   picks N request parameter sets of each kind from the
 *                                      dataset (deterministically) into FILE
 *   entitybench raw DB FILE KIND ...   runs the store's own SQL for each request directly
 *                                      on the database, from libuv's threadpool
 *   entitybench http PORT FILE KIND ... the same requests as MCP tools/call over HTTP
 *                                      keep-alive, one session per client
 *   entitybench pg URI FILE KIND ...   the store's PostgreSQL statements for each request
 *                                      sent straight through libpq (query and fetch)
 *
 * Both runners keep CLIENTS requests in flight (closed loop: a client sends
 * its next request when the last one is answered), warm up, then measure
 * for a while and print one line:
 *   RESULT who=raw kind=query requests=N seconds=S rps=R p50_ms=X p99_ms=Y errors=E total=T
 *          cpu_s=C
 * (requests: measured ones; total: all answered, warm-up included; cpu_s:
 * this process's CPU time, for the raw runner the database work)
 * so that the gateway's latency can be set against the database's own at
 * the same concurrency. */
#ifndef ENTITYBENCH_H
#define ENTITYBENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define IDS_PER_FETCH 50
#define PAGE_SIZE 25
#define EXPAND_CAP 100
#define SQL_MAX 8192
#define GUID_LEN 36

typedef enum kind { KIND_QUERY, KIND_LOOKUP, KIND_FETCH, KIND__COUNT } kind_t;

/* One request's parameters. query: status, date, page; lookup: the words;
 * fetch: the ids. */
typedef struct item {
  char status[16];
  char date[11];
  int page;
  char words[128];
  char ids[IDS_PER_FETCH][GUID_LEN + 1];
} item_t;

typedef struct workload {
  kind_t kind;
  item_t *items;
  size_t n;
} workload_t;

/* How long and how hard a runner drives. */
typedef struct drive {
  int clients;
  double warmup_s;
  double measure_s;
} drive_t;

/* Latencies of the measured requests, in microseconds. */
typedef struct latencies {
  uint32_t *us;
  size_t n, cap;
  uint64_t errors;
  uint64_t total; /* requests answered, warm-up included (for CPU per request) */
} latencies_t;

const char *kind_name(kind_t kind);
bool kind_parse(const char *name, kind_t *out);
void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* The ids a fetch sends: the first BENCH_FETCH_IDS (1 to IDS_PER_FETCH,
 * the default) of each workload item, the same on every side, so that a
 * fetch of one id shows what a call costs beyond its rows. */
int fetch_ids(void);
uint64_t now_ns(void);
double cpu_seconds(void);

/* Reads the items of one kind from a workload file. */
void workload_read(const char *path, kind_t kind, workload_t *out);
void workload_free(workload_t *w);
/* Options after the kind: --clients N --warmup S --seconds S. */
void drive_parse(int argc, char **argv, drive_t *out);

void latencies_add(latencies_t *l, uint64_t ns);
/* Prints the RESULT line and frees l. */
void latencies_report(const char *who, kind_t kind, latencies_t *l, double seconds);

/* The store's statements on SQLite (entitybench_raw.c), ? for each bound
 * value: the page of a query, its Customer and OrderLines expansions for
 * n keys, and a fetch of n ids. The PostgreSQL reference numbers them. */
extern const char page_sql[];
void customers_sql(char *sql, size_t size, int n);
void lines_sql(char *sql, size_t size, int n);
void fetch_sql(char *sql, size_t size, int n);

int workload_main(int argc, char **argv);
int raw_main(int argc, char **argv);
int http_main(int argc, char **argv);
int pg_main(int argc, char **argv);

#endif
