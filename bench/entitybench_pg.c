/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* entitybench pg: the reference of bench/query on PostgreSQL. The
 * statements the store's PostgreSQL driver sends for each request
 * (src/store/pg_entities.c; bench/query checks them against the gateway's
 * debug log) are sent straight through libpq, the way the driver sends
 * them: non-blocking connections on one thread, as many as the store's
 * pool holds (8), each request on one connection inside
 * BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY ... COMMIT, each
 * statement with PQsendQueryParams and its values as text, every column of
 * every row read. Clients beyond the connections wait for one in turn, as
 * the gateway's requests wait for its pool.
 *
 * Usage: entitybench pg URI WORKLOAD KIND [--conns N] [--clients N] [--warmup S] [--seconds S]
 *        entitybench pg URI WORKLOAD KIND --print-sql   (the main statement of the first item)
 * KIND: query or fetch. */
#include <libpq-fe.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "entitybench.h"

#define CONNS_MAX 64
#define BEGIN_SQL "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"

/* The store's SQLite statement as the PostgreSQL dialect writes it:
 * placeholders numbered, and a descending sort with NULLS LAST. */
static void numbered(const char *in, char *out, size_t size) {
  size_t n = 0;
  int k = 0;
  for (const char *p = in; *p != '\0' && n + 12 < size; p++) {
    if (*p == '?')
      n += (size_t)snprintf(out + n, size - n, "$%d", ++k);
    else if (strncmp(p, " DESC, ", 7) == 0)
      n += (size_t)snprintf(out + n, size - n, " DESC NULLS LAST"), p += 4;
    else
      out[n++] = *p;
  }
  out[n] = '\0';
}

/* ---- One request: its statements, one after the other ------------------------------------ */

typedef enum step { S_BEGIN, S_MAIN, S_CUSTOMERS, S_LINES, S_COMMIT, S_DONE } step_t;

typedef struct keys {
  char v[PAGE_SIZE + 1][GUID_LEN + 1];
  int n;
} keys_t;

typedef struct client {
  const item_t *item;
  uint64_t start;
  struct client *next; /* waiting for a connection */
} client_t;

typedef struct conn {
  PGconn *pg;
  client_t *client; /* NULL: idle */
  step_t step;
  keys_t ids, fks;
  int rows;
  bool failed;
  PGresult *last;
} conn_t;

typedef struct runner {
  const char *uri;
  kind_t kind;
  workload_t w;
  drive_t d;
  int nconns;
  conn_t conns[CONNS_MAX];
  client_t *clients;
  client_t *wait_head, *wait_tail;
  size_t cursor;
  uint64_t measure_from, measure_to;
  latencies_t lat;
  uint64_t empty;
  size_t sum;
} runner_t;

/* The distinct non-empty keys of k. */
static int distinct(const keys_t *k, const char **out) {
  int m = 0;
  for (int i = 0; i < k->n; i++) {
    bool seen = k->v[i][0] == '\0';
    for (int j = 0; j < m && !seen; j++)
      seen = strcmp(out[j], k->v[i]) == 0;
    if (!seen)
      out[m++] = k->v[i];
  }
  return m;
}

static void keep(keys_t *k, const PGresult *res, int row, int col) {
  if (k->n < PAGE_SIZE)
    snprintf(k->v[k->n++], GUID_LEN + 1, "%s",
             PQgetisnull(res, row, col) ? "" : PQgetvalue(res, row, col));
}

/* The main statement of the item (the page, or the ids) with its values. */
static void main_statement(kind_t kind, const item_t *it, char *sql, size_t size,
                           const char **values, char cells[2][16], int *n) {
  char plain[SQL_MAX];
  if (kind == KIND_QUERY) {
    numbered(page_sql, sql, size);
    snprintf(cells[0], sizeof(cells[0]), "%d", PAGE_SIZE + 1);
    snprintf(cells[1], sizeof(cells[1]), "%d", (it->page - 1) * PAGE_SIZE);
    values[0] = it->status;
    values[1] = it->date;
    values[2] = cells[0];
    values[3] = cells[1];
    *n = 4;
    return;
  }
  fetch_sql(plain, sizeof(plain), fetch_ids());
  numbered(plain, sql, size);
  for (int i = 0; i < fetch_ids(); i++)
    values[i] = it->ids[i];
  *n = fetch_ids();
}

/* Sends the statement of c->step, skipping expansions with no keys. */
static void send_step(runner_t *r, conn_t *c) {
  const char *values[IDS_PER_FETCH + 2];
  const char *keys[PAGE_SIZE + 1];
  char cells[2][16], sql[SQL_MAX], plain[SQL_MAX];
  int n = 0, ok;
  for (;;) {
    if (c->step == S_CUSTOMERS && (r->kind != KIND_QUERY || distinct(&c->fks, keys) == 0))
      c->step = S_LINES;
    else if (c->step == S_LINES && (r->kind != KIND_QUERY || c->ids.n == 0))
      c->step = S_COMMIT;
    else
      break;
  }
  switch (c->step) {
  case S_BEGIN:
    ok = PQsendQuery(c->pg, BEGIN_SQL);
    break;
  case S_COMMIT:
    ok = PQsendQuery(c->pg, "COMMIT");
    break;
  case S_MAIN:
    main_statement(r->kind, c->client->item, sql, sizeof(sql), values, cells, &n);
    ok = PQsendQueryParams(c->pg, sql, n, NULL, values, NULL, NULL, 0);
    break;
  case S_CUSTOMERS:
    n = distinct(&c->fks, keys);
    customers_sql(plain, sizeof(plain), n);
    numbered(plain, sql, sizeof(sql));
    ok = PQsendQueryParams(c->pg, sql, n, NULL, keys, NULL, NULL, 0);
    break;
  default: /* S_LINES */
    for (n = 0; n < c->ids.n; n++)
      values[n] = c->ids.v[n];
    snprintf(cells[0], sizeof(cells[0]), "%d", EXPAND_CAP + 1);
    values[n] = cells[0];
    lines_sql(plain, sizeof(plain), c->ids.n);
    numbered(plain, sql, sizeof(sql));
    ok = PQsendQueryParams(c->pg, sql, n + 1, NULL, values, NULL, NULL, 0);
    break;
  }
  if (!ok)
    die("cannot send: %s", PQerrorMessage(c->pg));
}

/* Every column of every row, as the store reads them. */
static void read_rows(runner_t *r, conn_t *c, const PGresult *res) {
  int rows = PQntuples(res), cols = PQnfields(res);
  for (int i = 0; i < rows; i++) {
    for (int j = 0; j < cols; j++)
      r->sum += (size_t)PQgetlength(res, i, j) + (size_t)PQgetvalue(res, i, j)[0];
    if (c->step == S_MAIN && r->kind == KIND_QUERY) {
      keep(&c->ids, res, i, 0);
      keep(&c->fks, res, i, 2);
    }
  }
  if (c->step == S_MAIN)
    c->rows = rows;
}

static void start_next(runner_t *r, conn_t *c);

static void request_done(runner_t *r, conn_t *c) {
  client_t *cl = c->client;
  uint64_t t = now_ns();
  r->lat.total++;
  if (cl->start >= r->measure_from && t <= r->measure_to) {
    latencies_add(&r->lat, t - cl->start);
    r->lat.errors += c->failed;
    r->empty += c->rows == 0;
  }
  c->client = NULL;
  if (t < r->measure_to) { /* the client asks again at once */
    cl->item = &r->w.items[r->cursor++ % r->w.n];
    cl->start = t;
    cl->next = NULL;
    if (r->wait_tail != NULL)
      r->wait_tail->next = cl;
    else
      r->wait_head = cl;
    r->wait_tail = cl;
  }
  start_next(r, c);
}

/* The statement of c->step has ended with res (its last result). */
static void step_done(runner_t *r, conn_t *c, PGresult *res) {
  ExecStatusType st = PQresultStatus(res);
  if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
    fprintf(stderr, "entitybench pg: %s", PQresultErrorMessage(res));
    c->failed = true;
    c->step = S_COMMIT; /* ends the transaction (a ROLLBACK after an error) */
  } else if (c->step == S_COMMIT) {
    c->step = S_DONE;
  } else {
    read_rows(r, c, res);
    c->step++;
  }
  if (c->step == S_DONE)
    request_done(r, c);
  else
    send_step(r, c);
}

/* Gives an idle connection the next waiting client. */
static void start_next(runner_t *r, conn_t *c) {
  client_t *cl = r->wait_head;
  if (c->client != NULL || cl == NULL)
    return;
  r->wait_head = cl->next;
  if (r->wait_head == NULL)
    r->wait_tail = NULL;
  c->client = cl;
  c->step = S_BEGIN;
  c->ids.n = c->fks.n = 0;
  c->rows = 0;
  c->failed = false;
  send_step(r, c);
}

static void on_readable(runner_t *r, conn_t *c) {
  if (!PQconsumeInput(c->pg))
    die("connection lost: %s", PQerrorMessage(c->pg));
  while (c->client != NULL && !PQisBusy(c->pg)) {
    PGresult *res = PQgetResult(c->pg);
    if (res != NULL) {
      PQclear(c->last);
      c->last = res;
      continue;
    }
    res = c->last;
    c->last = NULL;
    if (res == NULL)
      die("a statement ended without a result");
    step_done(r, c, res);
    PQclear(res);
  }
}

static void open_conns(runner_t *r) {
  for (int i = 0; i < r->nconns; i++) {
    conn_t *c = &r->conns[i];
    c->pg = PQconnectdb(r->uri);
    if (PQstatus(c->pg) != CONNECTION_OK)
      die("cannot connect: %s", PQerrorMessage(c->pg));
    if (PQsetnonblocking(c->pg, 1) != 0)
      die("cannot make the connection non-blocking");
  }
}

static void drive(runner_t *r) {
  r->clients = calloc((size_t)r->d.clients, sizeof(*r->clients));
  if (r->clients == NULL)
    die("out of memory");
  uint64_t t0 = now_ns();
  r->measure_from = t0 + (uint64_t)(r->d.warmup_s * 1e9);
  r->measure_to = r->measure_from + (uint64_t)(r->d.measure_s * 1e9);
  for (int i = 0; i < r->d.clients; i++) {
    client_t *cl = &r->clients[i];
    cl->item = &r->w.items[r->cursor++ % r->w.n];
    cl->start = t0;
    if (r->wait_tail != NULL)
      r->wait_tail->next = cl;
    else
      r->wait_head = cl;
    r->wait_tail = cl;
  }
  for (int i = 0; i < r->nconns; i++)
    start_next(r, &r->conns[i]);
  struct pollfd fds[CONNS_MAX];
  for (;;) {
    int busy = 0;
    for (int i = 0; i < r->nconns; i++) {
      conn_t *c = &r->conns[i];
      busy += c->client != NULL;
      fds[i] = (struct pollfd){.fd = c->client != NULL ? PQsocket(c->pg) : -1,
                               .events = POLLIN | (PQflush(c->pg) == 1 ? POLLOUT : 0)};
    }
    if (busy == 0)
      break;
    if (poll(fds, (nfds_t)r->nconns, 1000) < 0)
      die("poll failed");
    for (int i = 0; i < r->nconns; i++)
      if (fds[i].revents & (POLLIN | POLLERR | POLLHUP))
        on_readable(r, &r->conns[i]);
  }
  free(r->clients);
}

/* Takes --conns N out of the options; the rest are drive_parse's. */
static int take_conns(int *argc, char **argv) {
  int conns = 8;
  for (int i = 0; i + 1 < *argc; i++) {
    if (strcmp(argv[i], "--conns") != 0)
      continue;
    conns = (int)strtol(argv[i + 1], NULL, 10);
    if (conns < 1 || conns > CONNS_MAX)
      die("--conns takes 1 to %d, not %s", CONNS_MAX, argv[i + 1]);
    memmove(&argv[i], &argv[i + 2], (size_t)(*argc - i - 2) * sizeof(*argv));
    *argc -= 2;
    break;
  }
  return conns;
}

int pg_main(int argc, char **argv) {
  static runner_t r;
  if (argc < 3 || !kind_parse(argv[2], &r.kind) || r.kind == KIND_LOOKUP)
    die("usage: entitybench pg URI WORKLOAD query|fetch [--print-sql | options]");
  r.uri = argv[0];
  workload_read(argv[1], r.kind, &r.w);
  if (argc == 4 && strcmp(argv[3], "--print-sql") == 0) {
    const char *values[IDS_PER_FETCH + 2];
    char cells[2][16], sql[SQL_MAX];
    int n;
    main_statement(r.kind, &r.w.items[0], sql, sizeof(sql), values, cells, &n);
    printf("%s %s\n", kind_name(r.kind), sql);
    workload_free(&r.w);
    return 0;
  }
  argc -= 3;
  argv += 3;
  r.nconns = take_conns(&argc, argv);
  drive_parse(argc, argv, &r.d);
  open_conns(&r);
  drive(&r);
  if (r.empty > r.lat.n / 2)
    fprintf(stderr, "entitybench pg: %llu of %zu requests read no row\n",
            (unsigned long long)r.empty, r.lat.n);
  latencies_report("pg", r.kind, &r.lat, r.d.measure_s);
  for (int i = 0; i < r.nconns; i++)
    PQfinish(r.conns[i].pg);
  workload_free(&r.w);
  return 0;
}
