/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Times SQL run directly on a database, the reference of bench/aggregate.
 * Opens DB with the settings of the gateway's store connections (the same
 * pragmas, a read transaction around each unit) and keeps the connection,
 * and so its page cache, for the whole run, as the gateway does.
 *
 * Reads units from stdin: one statement per line, written as the SQL and
 * then its bound values, separated by tabs; a value is i:<integer>,
 * r:<real>, t:<text> or n: (null). An empty line runs the statements read
 * since the last one (prepared before the clock starts), in one read
 * transaction, and prints one line:
 *
 *   <milliseconds><TAB><the first row of the last statement, tab-separated>
 *
 * Usage: sqltime DB */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_STMTS 8
#define LINE_MAX_BYTES 65536

static const char pragmas[] =
    "PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF; PRAGMA temp_store=MEMORY; "
    "PRAGMA cache_size=-32768; PRAGMA mmap_size=268435456;";

typedef struct unit {
  sqlite3_stmt *stmts[MAX_STMTS];
  int n;
} unit_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void fail(sqlite3 *db, const char *what) {
  fprintf(stderr, "sqltime: %s: %s\n", what, db ? sqlite3_errmsg(db) : "error");
  exit(1);
}

static void bind_value(sqlite3 *db, sqlite3_stmt *st, int i, const char *v) {
  int rc;
  if (strncmp(v, "i:", 2) == 0)
    rc = sqlite3_bind_int64(st, i, strtoll(v + 2, NULL, 10));
  else if (strncmp(v, "r:", 2) == 0)
    rc = sqlite3_bind_double(st, i, strtod(v + 2, NULL));
  else if (strncmp(v, "t:", 2) == 0)
    rc = sqlite3_bind_text(st, i, v + 2, -1, SQLITE_TRANSIENT);
  else
    rc = sqlite3_bind_null(st, i);
  if (rc != SQLITE_OK)
    fail(db, "bind");
}

/* One line: the SQL, then its values; tabs separate them. */
static sqlite3_stmt *prepare_line(sqlite3 *db, char *line) {
  char *tab = strchr(line, '\t');
  if (tab != NULL)
    *tab = '\0';
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v3(db, line, -1, SQLITE_PREPARE_PERSISTENT, &st, NULL) != SQLITE_OK)
    fail(db, line);
  for (int i = 1; tab != NULL; i++) {
    char *v = tab + 1;
    tab = strchr(v, '\t');
    if (tab != NULL)
      *tab = '\0';
    bind_value(db, st, i, v);
  }
  return st;
}

/* The first row of st, tab-separated, into out. */
static void keep_row(sqlite3_stmt *st, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (int c = 0; c < sqlite3_column_count(st) && len < size; c++) {
    const unsigned char *t = sqlite3_column_text(st, c);
    int n = snprintf(out + len, size - len, "\t%s", t != NULL ? (const char *)t : "null");
    len += n > 0 ? (size_t)n : 0;
  }
}

/* Runs every statement of the unit to its end inside one read
 * transaction; prints the time taken and the last statement's first row.
 * Preparing is left out of the time: the gateway keeps its statements
 * prepared. */
static void run_unit(sqlite3 *db, unit_t *u) {
  static char row[LINE_MAX_BYTES];
  row[0] = '\0';
  double start = now_ms();
  if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK)
    fail(db, "BEGIN");
  for (int i = 0; i < u->n; i++) {
    int rc = sqlite3_step(u->stmts[i]);
    if (rc == SQLITE_ROW && i == u->n - 1)
      keep_row(u->stmts[i], row, sizeof(row));
    while (rc == SQLITE_ROW)
      rc = sqlite3_step(u->stmts[i]);
    if (rc != SQLITE_DONE)
      fail(db, "step");
  }
  if (sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
    fail(db, "COMMIT");
  printf("%.3f%s\n", now_ms() - start, row);
  fflush(stdout);
}

int main(int argc, char **argv) {
  sqlite3 *db = NULL;
  static char line[LINE_MAX_BYTES];
  unit_t u = {.n = 0};
  if (argc != 2) {
    fprintf(stderr, "usage: sqltime DB < units\n");
    return 2;
  }
  if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
    fail(db, argv[1]);
  if (sqlite3_exec(db, pragmas, NULL, NULL, NULL) != SQLITE_OK)
    fail(db, "pragmas");
  while (fgets(line, sizeof(line), stdin) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    if (line[0] != '\0' && u.n < MAX_STMTS) {
      u.stmts[u.n++] = prepare_line(db, line);
      continue;
    }
    if (u.n > 0)
      run_unit(db, &u);
    for (int i = 0; i < u.n; i++)
      sqlite3_finalize(u.stmts[i]);
    u.n = 0;
  }
  sqlite3_close(db);
  return 0;
}
