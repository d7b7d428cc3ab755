/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Times SQL sent straight to PostgreSQL through libpq, the reference of
 * bench/aggregate on PostgreSQL: sqltime's protocol (sqltime.c) on one
 * connection kept for the whole run. Each unit runs inside
 * BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY ... COMMIT, each
 * statement sent as the store's PostgreSQL driver sends it (one
 * PQexecParams, the values as text, an unnamed statement parsed with its
 * values), so the time includes the parse the driver also pays.
 *
 * Usage: pgtime URI < units */
#include <libpq-fe.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_STMTS 8
#define MAX_VALUES 64
#define LINE_MAX_BYTES 65536

typedef struct stmt {
  char *text; /* the line, cut at its tabs */
  const char *values[MAX_VALUES];
  int n;
} stmt_t;

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void fail(PGconn *pg, const char *what) {
  fprintf(stderr, "pgtime: %s: %s\n", what, pg ? PQerrorMessage(pg) : "error");
  exit(1);
}

/* One line: the SQL, then its values (i:, r:, t: as text; n: as null). */
static void read_line(stmt_t *s, const char *line) {
  s->text = strdup(line);
  if (s->text == NULL)
    fail(NULL, "out of memory");
  s->n = 0;
  /* Each tab ends the text before it; a value ends at the next tab,
   * cut on the next turn. */
  for (char *tab = strchr(s->text, '\t'); tab != NULL && s->n < MAX_VALUES;) {
    *tab = '\0';
    char *v = tab + 1;
    tab = strchr(v, '\t');
    s->values[s->n++] = strncmp(v, "n:", 2) == 0 ? NULL : v + 2;
  }
}

static void run_sql(PGconn *pg, const char *sql) {
  PGresult *res = PQexec(pg, sql);
  if (PQresultStatus(res) != PGRES_COMMAND_OK)
    fail(pg, sql);
  PQclear(res);
}

static void keep_row(const PGresult *res, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (int c = 0; PQntuples(res) > 0 && c < PQnfields(res) && len < size; c++) {
    int n = snprintf(out + len, size - len, "\t%s",
                     PQgetisnull(res, 0, c) ? "null" : PQgetvalue(res, 0, c));
    len += n > 0 ? (size_t)n : 0;
  }
}

static void run_unit(PGconn *pg, stmt_t *u, int n) {
  static char row[LINE_MAX_BYTES];
  row[0] = '\0';
  double start = now_ms();
  run_sql(pg, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  for (int i = 0; i < n; i++) {
    PGresult *res = PQexecParams(pg, u[i].text, u[i].n, NULL, u[i].values, NULL, NULL, 0);
    if (PQresultStatus(res) != PGRES_TUPLES_OK)
      fail(pg, u[i].text);
    if (i == n - 1)
      keep_row(res, row, sizeof(row));
    PQclear(res);
  }
  run_sql(pg, "COMMIT");
  printf("%.3f%s\n", now_ms() - start, row);
  fflush(stdout);
}

int main(int argc, char **argv) {
  static char line[LINE_MAX_BYTES];
  stmt_t u[MAX_STMTS];
  int n = 0;
  if (argc != 2) {
    fprintf(stderr, "usage: pgtime URI < units\n");
    return 2;
  }
  PGconn *pg = PQconnectdb(argv[1]);
  if (PQstatus(pg) != CONNECTION_OK)
    fail(pg, "connect");
  while (fgets(line, sizeof(line), stdin) != NULL) {
    line[strcspn(line, "\n")] = '\0';
    if (line[0] != '\0' && n < MAX_STMTS) {
      read_line(&u[n++], line);
      continue;
    }
    if (n > 0)
      run_unit(pg, u, n);
    for (int i = 0; i < n; i++)
      free(u[i].text);
    n = 0;
  }
  PQfinish(pg);
  return 0;
}
