/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* entitybench raw: the reference of bench/query. The statements the store
 * generates for each request (docs/query.md, "The statements"; bench/query
 * checks them against the gateway's debug log) run directly on the
 * database from libuv's threadpool: one connection per thread with the
 * store's settings and a cache of prepared statements, every request in one
 * read transaction, every column of every row read. What the gateway adds
 * on top (HTTP, JSON-RPC, argument checks, building and writing JSON) is
 * what the comparison measures.
 *
 * Usage: entitybench raw DB WORKLOAD KIND [--clients N] [--warmup S] [--seconds S]
 *        entitybench raw DB WORKLOAD KIND --print-sql   (the statements of the first item) */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <uv.h>

#include "entitybench.h"

#define CACHE 64

/* The columns the admin role sees, in configuration order. */
#define ORDER_COLS                                                                                 \
  "t0.id, t0.\"OrderNumber\", t0.\"Customer\", t0.\"SalesRep\", t0.\"OrderDate\", "                \
  "t0.\"DueDate\", t0.\"Status\", t0.\"Amount\", t0.\"Quantity\", t0.\"WarehouseId\", "            \
  "t0.\"CalculatedOrderId\""
#define CUSTOMER_COLS                                                                              \
  "t0.id, t0.\"Name\", t0.\"Email\", t0.\"Region\", t0.\"CreditLimit\", t0.\"RenewalDate\", "      \
  "t0.\"CreatedAt\""
#define LINE_COLS                                                                                  \
  "t0.id, t0.\"Order\", t0.\"Product\", t0.\"SKU\", t0.\"Quantity\", t0.\"UnitPrice\", "           \
  "t0.\"LineItemId\", t0.\"CalculatedLineItemId\""

const char page_sql[] =
    "SELECT " ORDER_COLS " FROM \"Orders\" AS t0 WHERE (t0.\"Status\" = ? AND t0.\"OrderDate\" >= "
    "?) ORDER BY t0.\"OrderDate\" DESC, t0.id DESC LIMIT ? OFFSET ?";

/* The models lookup_by_keyword searches for the admin role: table, keyword
 * columns, returned columns. */
static const char *const lookup_models[][3] = {
    {"Customers", "Name", CUSTOMER_COLS},
    {"Products", "Name SKU",
     "t0.id, t0.\"Name\", t0.\"SKU\", t0.\"Category\", t0.\"Price\", t0.\"Active\""},
    {"Orders", "OrderNumber", ORDER_COLS},
    {"OrderLines", "SKU", LINE_COLS},
    {"Files", "Name",
     "t0.id, t0.\"Name\", t0.\"ContentType\", t0.\"ExternalFileLocation\", t0.\"SizeBytes\", "
     "t0.\"Order\""},
    {"Payments", "Reference",
     "t0.id, t0.\"Order\", t0.\"Amount\", t0.\"PaidOn\", t0.\"Method\", t0.\"Reference\""},
};
#define LOOKUP_MODELS (sizeof(lookup_models) / sizeof(lookup_models[0]))
#define LOOKUP_LIMIT 10

/* ---- Connections ----------------------------------------------------------------------------- */

typedef struct cached {
  char *sql;
  sqlite3_stmt *st;
} cached_t;

typedef struct conn {
  sqlite3 *db;
  cached_t cache[CACHE];
  size_t next_slot;
  struct conn *next;
} conn_t;

static const char *db_path;
static uv_key_t conn_key;
static uv_mutex_t conns_lock;
static conn_t *conns;

/* This thread's connection, opened on first use with the store's settings
 * (busy timeout and pragmas of src/store/sqlite.c; the memory counts are
 * off, as in the store, see raw_main). */
static conn_t *thread_conn(void) {
  conn_t *c = uv_key_get(&conn_key);
  if (c != NULL)
    return c;
  c = calloc(1, sizeof(*c));
  if (c == NULL || sqlite3_open_v2(db_path, &c->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX,
                                   NULL) != SQLITE_OK)
    die("cannot open %s", db_path);
  sqlite3_busy_timeout(c->db, 10000);
  sqlite3_exec(c->db,
               "PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF; PRAGMA temp_store=MEMORY; "
               "PRAGMA cache_size=-32768; PRAGMA mmap_size=268435456;",
               NULL, NULL, NULL);
  uv_key_set(&conn_key, c);
  uv_mutex_lock(&conns_lock);
  c->next = conns;
  conns = c;
  uv_mutex_unlock(&conns_lock);
  return c;
}

static sqlite3_stmt *prepare(conn_t *c, const char *sql) {
  for (size_t i = 0; i < CACHE; i++) {
    if (c->cache[i].sql != NULL && strcmp(c->cache[i].sql, sql) == 0) {
      sqlite3_reset(c->cache[i].st);
      sqlite3_clear_bindings(c->cache[i].st);
      return c->cache[i].st;
    }
  }
  cached_t *slot = &c->cache[c->next_slot++ % CACHE];
  sqlite3_finalize(slot->st);
  free(slot->sql);
  if (sqlite3_prepare_v3(c->db, sql, -1, SQLITE_PREPARE_PERSISTENT, &slot->st, NULL) != SQLITE_OK)
    die("%s: %s", sql, sqlite3_errmsg(c->db));
  slot->sql = strdup(sql);
  return slot->st;
}

static void close_all(void) {
  for (conn_t *c = conns, *next = NULL; c != NULL; c = next) {
    next = c->next;
    for (size_t i = 0; i < CACHE; i++) {
      sqlite3_finalize(c->cache[i].st);
      free(c->cache[i].sql);
    }
    sqlite3_close(c->db);
    free(c);
  }
  conns = NULL;
}

/* ---- Statements ---------------------------------------------------------------------------------
 */

/* Appends " IN (?, ?, ...)" with n placeholders. */
static void in_list(char *sql, size_t size, int n) {
  size_t len = strlen(sql);
  len += (size_t)snprintf(sql + len, size - len, " IN (");
  for (int i = 0; i < n && len < size; i++)
    len += (size_t)snprintf(sql + len, size - len, "%s?", i ? ", " : "");
  snprintf(sql + len, size - len, ")");
}

void customers_sql(char *sql, size_t size, int n) {
  snprintf(sql, size, "SELECT " CUSTOMER_COLS " FROM \"Customers\" AS t0 WHERE t0.id");
  in_list(sql, size, n);
}

void lines_sql(char *sql, size_t size, int n) {
  snprintf(sql, size,
           "SELECT * FROM (SELECT t0.\"Order\" AS _k, " LINE_COLS
           ", row_number() OVER (PARTITION BY t0.\"Order\" ORDER BY t0.id) AS _rn FROM "
           "\"OrderLines\" AS t0 WHERE t0.\"Order\"");
  in_list(sql, size, n);
  size_t len = strlen(sql);
  snprintf(sql + len, size - len, ") AS x WHERE _rn <= ? ORDER BY _k, _rn");
}

void fetch_sql(char *sql, size_t size, int n) {
  snprintf(sql, size, "SELECT " ORDER_COLS " FROM \"Orders\" AS t0 WHERE t0.id");
  in_list(sql, size, n);
}

static void lookup_sql(char *sql, size_t size, size_t m) {
  snprintf(sql, size,
           "SELECT %s, f.rank FROM \"_fts_%s\" AS f JOIN \"%s\" AS t0 ON t0.\"_seq\" = f.rowid "
           "WHERE \"_fts_%s\" MATCH ? ORDER BY f.rank LIMIT ?",
           lookup_models[m][2], lookup_models[m][0], lookup_models[m][0], lookup_models[m][0]);
}

/* {Name SKU} : "harbor"* "logistics"* */
static void match_text(char *out, size_t size, size_t m, const char *words) {
  size_t len = (size_t)snprintf(out, size, "{%s} :", lookup_models[m][1]);
  for (const char *w = words; *w != '\0' && len < size;) {
    size_t n = strcspn(w, " ");
    len += (size_t)snprintf(out + len, size - len, " \"%.*s\"*", (int)n, w);
    w += n + (w[n] == ' ');
  }
}

/* ---- Running one request
 * ------------------------------------------------------------------------- */

/* Reads every column of the current row as the store does. */
static size_t read_row(sqlite3_stmt *st) {
  size_t sum = 0;
  for (int i = 0, n = sqlite3_column_count(st); i < n; i++) {
    switch (sqlite3_column_type(st, i)) {
    case SQLITE_INTEGER:
      sum += (size_t)sqlite3_column_int64(st, i);
      break;
    case SQLITE_FLOAT:
      sum += (size_t)sqlite3_column_double(st, i);
      break;
    case SQLITE_TEXT:
      sum += (size_t)sqlite3_column_bytes(st, i) + (size_t)sqlite3_column_text(st, i)[0];
      break;
    default:
      break;
    }
  }
  return sum;
}

/* Keys of the rows of a page: the first PAGE_SIZE rows' column col. */
typedef struct keys {
  char v[PAGE_SIZE][GUID_LEN + 1];
  int n;
} keys_t;

static void keep(keys_t *k, sqlite3_stmt *st, int col) {
  const unsigned char *text = sqlite3_column_text(st, col);
  if (k->n < PAGE_SIZE)
    snprintf(k->v[k->n++], GUID_LEN + 1, "%s", text != NULL ? (const char *)text : "");
}

/* Steps st to the end, reading every row; returns the rows or -1. */
static int run(sqlite3_stmt *st, keys_t *ids, keys_t *fks, size_t *sum) {
  int rows = 0, rc = sqlite3_step(st);
  for (; rc == SQLITE_ROW; rc = sqlite3_step(st), rows++) {
    *sum += read_row(st);
    if (ids != NULL)
      keep(ids, st, 0);
    if (fks != NULL)
      keep(fks, st, 2);
  }
  sqlite3_reset(st);
  return rc == SQLITE_DONE ? rows : -1;
}

/* The distinct non-empty keys. */
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

static int run_in(conn_t *c, const char *sql, const char *const *keys, int n, int cap,
                  size_t *sum) {
  sqlite3_stmt *st = prepare(c, sql);
  for (int i = 0; i < n; i++)
    sqlite3_bind_text(st, i + 1, keys[i], -1, SQLITE_STATIC);
  if (cap > 0)
    sqlite3_bind_int(st, n + 1, cap);
  return run(st, NULL, NULL, sum);
}

/* The page (PAGE_SIZE + 1 rows, to see whether more follow), then in one
 * statement each the page's customers and the first EXPAND_CAP + 1 lines
 * of each order. */
static int run_query(conn_t *c, const item_t *it, size_t *sum, bool print) {
  keys_t ids = {.n = 0}, fks = {.n = 0};
  const char *keys[PAGE_SIZE];
  char sql[SQL_MAX];
  sqlite3_stmt *st = prepare(c, page_sql);
  sqlite3_bind_text(st, 1, it->status, -1, SQLITE_STATIC);
  sqlite3_bind_text(st, 2, it->date, -1, SQLITE_STATIC);
  sqlite3_bind_int(st, 3, PAGE_SIZE + 1);
  sqlite3_bind_int(st, 4, (it->page - 1) * PAGE_SIZE);
  int rows = run(st, &ids, &fks, sum), more = 0;
  int m = distinct(&fks, keys);
  customers_sql(sql, sizeof(sql), m);
  if (print)
    printf("query %s\n", page_sql);
  if (rows >= 0 && m > 0)
    more = run_in(c, sql, keys, m, 0, sum);
  for (int i = 0; i < ids.n; i++)
    keys[i] = ids.v[i];
  lines_sql(sql, sizeof(sql), ids.n);
  if (more >= 0 && ids.n > 0)
    more = run_in(c, sql, keys, ids.n, EXPAND_CAP + 1, sum);
  return rows < 0 || more < 0 ? -1 : rows;
}

static int run_fetch(conn_t *c, const item_t *it, size_t *sum, bool print) {
  const char *keys[IDS_PER_FETCH];
  char sql[SQL_MAX];
  for (int i = 0; i < fetch_ids(); i++)
    keys[i] = it->ids[i];
  fetch_sql(sql, sizeof(sql), fetch_ids());
  if (print)
    printf("fetch %s\n", sql);
  return run_in(c, sql, keys, fetch_ids(), 0, sum);
}

/* Each model's best LOOKUP_LIMIT matches (the gateway then keeps the best
 * LOOKUP_LIMIT of all). */
static int run_lookup(conn_t *c, const item_t *it, size_t *sum, bool print) {
  int total = 0;
  for (size_t m = 0; m < LOOKUP_MODELS && total >= 0; m++) {
    char sql[SQL_MAX], match[512];
    lookup_sql(sql, sizeof(sql), m);
    match_text(match, sizeof(match), m, it->words);
    if (print && m == 0)
      printf("lookup %s\n", sql);
    sqlite3_stmt *st = prepare(c, sql);
    sqlite3_bind_text(st, 1, match, -1, SQLITE_TRANSIENT);
    sqlite3_bind_int(st, 2, LOOKUP_LIMIT);
    int rows = run(st, NULL, NULL, sum);
    total = rows < 0 ? -1 : total + rows;
  }
  return total;
}

/* BEGIN or COMMIT from the statement cache, as the store runs them. */
static void exec_cached(conn_t *c, const char *sql) {
  sqlite3_stmt *st = prepare(c, sql);
  if (sqlite3_step(st) != SQLITE_DONE)
    die("%s: %s", sql, sqlite3_errmsg(c->db));
  sqlite3_reset(st);
}

/* One request in one read transaction, as the store runs it. */
static int run_item(kind_t kind, const item_t *it, size_t *sum, bool print) {
  conn_t *c = thread_conn();
  exec_cached(c, "BEGIN");
  int rows = kind == KIND_QUERY   ? run_query(c, it, sum, print)
             : kind == KIND_FETCH ? run_fetch(c, it, sum, print)
                                  : run_lookup(c, it, sum, print);
  exec_cached(c, "COMMIT");
  return rows;
}

/* ---- The closed loop
 * ------------------------------------------------------------------------------ */

typedef struct runner runner_t;

typedef struct client {
  uv_work_t work;
  runner_t *runner;
  const item_t *item;
  uint64_t start;
  int rows;
  size_t sum;
} client_t;

struct runner {
  uv_loop_t loop;
  workload_t w;
  drive_t d;
  client_t *clients;
  size_t cursor;
  uint64_t measure_from, measure_to;
  latencies_t lat;
  uint64_t empty; /* requests that read no row at all */
};

static void on_work(uv_work_t *w) {
  client_t *c = w->data;
  c->sum = 0;
  c->rows = run_item(c->runner->w.kind, c->item, &c->sum, false);
}

static void submit(client_t *c);

static void on_done(uv_work_t *w, int status) {
  client_t *c = w->data;
  runner_t *r = c->runner;
  uint64_t t = now_ns();
  r->lat.total++;
  if (c->start >= r->measure_from && t <= r->measure_to) {
    latencies_add(&r->lat, t - c->start);
    r->lat.errors += status != 0 || c->rows < 0;
    r->empty += c->rows == 0;
  }
  if (t < r->measure_to)
    submit(c);
}

static void submit(client_t *c) {
  runner_t *r = c->runner;
  c->item = &r->w.items[r->cursor++ % r->w.n];
  c->start = now_ns();
  c->work.data = c;
  if (uv_queue_work(&r->loop, &c->work, on_work, on_done) != 0)
    die("uv_queue_work failed");
}

static void drive(runner_t *r) {
  r->clients = calloc((size_t)r->d.clients, sizeof(*r->clients));
  if (r->clients == NULL)
    die("out of memory");
  uint64_t t0 = now_ns();
  r->measure_from = t0 + (uint64_t)(r->d.warmup_s * 1e9);
  r->measure_to = r->measure_from + (uint64_t)(r->d.measure_s * 1e9);
  for (int i = 0; i < r->d.clients; i++) {
    r->clients[i].runner = r;
    submit(&r->clients[i]);
  }
  uv_run(&r->loop, UV_RUN_DEFAULT);
  free(r->clients);
}

int raw_main(int argc, char **argv) {
  runner_t r;
  kind_t kind;
  memset(&r, 0, sizeof(r));
  if (argc < 3 || !kind_parse(argv[2], &kind))
    die("usage: entitybench raw DB WORKLOAD query|lookup|fetch [--print-sql | options]");
  db_path = argv[0];
  /* The store's process-wide setting (src/store/sqlite.c): no memory
   * counts, whose mutex every allocation would take. */
  sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
  workload_read(argv[1], kind, &r.w);
  if (uv_key_create(&conn_key) != 0 || uv_mutex_init(&conns_lock) != 0)
    die("cannot create a thread key");
  if (argc == 4 && strcmp(argv[3], "--print-sql") == 0) {
    size_t sum = 0;
    int rows = run_item(kind, &r.w.items[0], &sum, true);
    close_all();
    return rows > 0 ? 0 : 1;
  }
  drive_parse(argc - 3, argv + 3, &r.d);
  uv_loop_init(&r.loop);
  drive(&r);
  if (r.empty > r.lat.n / 2)
    fprintf(stderr, "entitybench raw: %llu of %zu requests read no row\n",
            (unsigned long long)r.empty, r.lat.n);
  latencies_report("raw", kind, &r.lat, r.d.measure_s);
  uv_loop_close(&r.loop);
  close_all();
  workload_free(&r.w);
  return 0;
}
