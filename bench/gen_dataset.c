/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* gen_dataset: fills a database that the gateway has just created (and
 * migrated from conf/) with a large, deterministic dataset for conf/'s
 * domain: Customers, Products, Orders with their OrderLines, Payments and
 * Files. The same seed and sizes always give the same bytes of data.
 *
 * The schema stays the gateway's own: the program checks that every table
 * and column it writes exists, and the indexes and keyword triggers it
 * drops for the bulk load are created again from the very statements the
 * migration stored in sqlite_schema. Everything is inserted in one
 * transaction with prepared statements; indexes are then built in one pass
 * each and the keyword indexes rebuilt, which is several times faster than
 * keeping them up to date row by row.
 *
 * Usage: gen_dataset [--orders N] [--seed N] FILE
 * bench/dataset runs the migration and then this program. */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "rng.h"

#define DDL_MAX 256
#define GUID_LEN 36
#define TEXT_MAX 256
#define SALES_REPS 50
#define WAREHOUSES 8
#define LINES_MAX 5

/* Random GUIDs that ascend: each takes a random place in its own slice of
 * the range, so that rows go into the id index in order (appending, not
 * inserting at random places, which slows a large load several times). */
typedef struct guid_seq {
  uint64_t base, stride;
} guid_seq_t;

/* The sizes of one dataset; every count derives from the orders. */
typedef struct sizes {
  int64_t orders;
  int64_t customers;
  int64_t products;
  uint64_t seed;
} sizes_t;

typedef struct gen {
  sqlite3 *db;
  sizes_t n;
  char (*customer_ids)[GUID_LEN + 1];
  char (*product_ids)[GUID_LEN + 1];
  char (*product_skus)[24];
  double *product_prices;
  char sales_reps[SALES_REPS][GUID_LEN + 1];
  char warehouses[WAREHOUSES][GUID_LEN + 1];
  guid_seq_t ids[6]; /* per table */
  sqlite3_stmt *ins_order, *ins_line, *ins_payment, *ins_file;
  int64_t rows[6]; /* per table, for the summary */
  char *ddl[DDL_MAX];
  size_t nddl;
} gen_t;

enum { T_CUSTOMERS, T_PRODUCTS, T_ORDERS, T_LINES, T_PAYMENTS, T_FILES };

static const char *const table_names[] = {"Customers",  "Products", "Orders",
                                          "OrderLines", "Payments", "Files"};

/* The columns written, per table, in the order of the INSERT statements. */
static const char *const table_columns[][11] = {
    {"id", "Name", "Email", "Region", "CreditLimit", "RenewalDate", "CreatedAt"},
    {"id", "Name", "SKU", "Category", "Price", "Active"},
    {"id", "OrderNumber", "Customer", "SalesRep", "OrderDate", "DueDate", "Status", "Amount",
     "Quantity", "WarehouseId", "CalculatedOrderId"},
    {"id", "Order", "Product", "SKU", "Quantity", "UnitPrice", "LineItemId"},
    {"id", "Order", "Amount", "PaidOn", "Method", "Reference"},
    {"id", "Name", "ContentType", "ExternalFileLocation", "SizeBytes", "Order"},
};
static const int table_ncolumns[] = {7, 6, 11, 7, 6, 6};

static const char *const name_first[] = {
    "Acme",     "Globex",    "Initech",  "Umbrella", "Stark",     "Wayne",    "Hooli",
    "Quiet",    "Northwind", "Contoso",  "Fabrikam", "Tailspin",  "Wingtip",  "Litware",
    "Adatum",   "Proseware", "Lucerne",  "Margie",   "Woodgrove", "Fourth",   "Alpine",
    "Blue",     "Coho",      "Consolid", "Graphic",  "Humongous", "Northern", "Southridge",
    "Trey",     "Wide",      "Cobalt",   "Crimson",  "Golden",    "Silver",   "Granite",
    "Harbor",   "Maple",     "Cedar",    "Summit",   "Pioneer",   "Vertex",   "Orbit",
    "Nimbus",   "Aurora",    "Beacon",   "Falcon",   "Jupiter",   "Keystone", "Lumen",
    "Meridian", "Nova",      "Oakridge", "Pinnacle", "Quantum",   "Redwood",  "Sterling",
    "Titan",    "Unity",     "Vista",    "Zenith"};
static const char *const name_second[] = {
    "Pacific",  "Atlantic",  "Industries", "Trading",   "Logistics", "Retail",   "Systems",
    "Fields",   "Traders",   "Foods",      "Motors",    "Textiles",  "Energy",   "Pharma",
    "Software", "Networks",  "Holdings",   "Ventures",  "Partners",  "Supplies", "Metals",
    "Plastics", "Chemicals", "Airlines",   "Shipping",  "Farms",     "Outdoors", "Media",
    "Studios",  "Robotics",  "Dynamics",   "Analytics", "Labs",      "Works",    "Brewing",
    "Bakery",   "Garden",    "Marine",     "Mining",    "Textiles"};
static const char *const name_suffix[] = {"Ltd", "LLC", "Inc", "GmbH", "SA", "BV", "Co", "Group"};
static const char *const product_adjective[] = {
    "Steel",   "Compact", "Deluxe", "Mini",  "Pro",     "Classic", "Smart",  "Heavy",
    "Light",   "Rapid",   "Silent", "Eco",   "Ultra",   "Basic",   "Prime",  "Titan",
    "Nano",    "Mega",    "Flex",   "Solid", "Digital", "Analog",  "Wooden", "Carbon",
    "Premium", "Rugged",  "Slim",   "Turbo", "Hybrid",  "Modular"};
static const char *const product_noun[] = {
    "Widget",  "Gadget",  "Sprocket", "Gizmo",   "Doohickey",   "Thingamajig", "Cable",
    "Adapter", "Manual",  "Bracket",  "Hinge",   "Valve",       "Sensor",      "Switch",
    "Router",  "Monitor", "Keyboard", "Charger", "Battery",     "Lamp",        "Drill",
    "Wrench",  "Printer", "Scanner",  "Speaker", "Camera",      "Pump",        "Filter",
    "Gear",    "Bearing", "Spring",   "Clamp",   "Fan",         "Motor",       "Panel",
    "Display", "Antenna", "Module",   "Relay",   "Service Plan"};
static const char *const categories[] = {"Hardware",    "Electronics", "Accessories", "Services",
                                         "Tools",       "Office",      "Outdoor",     "Spare Parts",
                                         "Peripherals", "Lighting"};
static const char *const regions[] = {"APAC", "EMEA", "AMER"};
static const char *const methods[] = {"Card", "Transfer", "Cash"};
/* File name word, the same in a URL, extension and media type. */
static const char *const file_kinds[][4] = {
    {"invoice", "invoice", "pdf", "application/pdf"},
    {"delivery note", "delivery%20note", "docx",
     "application/vnd.openxmlformats-officedocument.wordprocessingml.document"},
    {"packing list", "packing%20list", "csv", "text/csv"},
    {"quote", "quote", "pdf", "application/pdf"},
    {"presentation", "presentation", "pptx",
     "application/vnd.openxmlformats-officedocument.presentationml.presentation"}};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

/* ---- Deterministic values ----------------------------------------------------------------- */

static bool chance(rng_t *r, int percent) {
  return range(r, 0, 99) < percent;
}

static double cents(rng_t *r, int64_t lo, int64_t hi) {
  return (double)range(r, lo * 100, hi * 100) / 100.0;
}

static const char *pick(rng_t *r, const char *const *list, size_t n) {
  return list[next(r) % n];
}

static void format_guid(uint64_t hi, uint64_t lo, char out[GUID_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  size_t o = 0;
  lo = (lo & 0x3fffffffffffffffULL) | 0x8000000000000000ULL; /* RFC 4122 variant */
  for (int i = 0; i < 32; i++) {
    uint64_t word = i < 16 ? hi : lo;
    int shift = 60 - 4 * (i % 16);
    if (i == 8 || i == 12 || i == 16 || i == 20)
      out[o++] = '-';
    out[o++] = hex[(word >> shift) & 0xf];
  }
  out[o] = '\0';
}

/* A version 4 GUID in lower case, as the store keeps GUIDs. */
static void guid(rng_t *r, char out[GUID_LEN + 1]) {
  uint64_t hi = (next(r) & ~0xf000ULL) | 0x4000ULL;
  format_guid(hi, next(r), out);
}

/* Rows take random GUIDs that ascend (guid_next). */
static void guid_seq_init(guid_seq_t *s, int64_t most) {
  s->base = 0;
  s->stride = (UINT64_MAX / (uint64_t)(most + 1)) & ~0xffffULL; /* low 16 bits stay free */
}

static void guid_next(rng_t *r, guid_seq_t *s, char out[GUID_LEN + 1]) {
  uint64_t slots = s->stride >> 16; /* the low 16 bits hold the version */
  uint64_t hi = (s->base + ((next(r) % slots) << 16)) | 0x4000ULL | (next(r) & 0xfffULL);
  s->base += s->stride;
  format_guid(hi, next(r), out);
}

/* "YYYY-MM-DD" of a day counted from 1970-01-01 (the civil calendar). */
static void date_of(int64_t days, char out[11]) {
  int64_t z = days + 719468, era = (z >= 0 ? z : z - 146096) / 146097;
  int64_t doe = z - era * 146097;
  int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100), mp = (5 * doy + 2) / 153;
  int64_t d = doy - (153 * mp + 2) / 5 + 1, m = mp < 10 ? mp + 3 : mp - 9;
  int64_t y = yoe + era * 400 + (m <= 2);
  snprintf(out, 11, "%04d-%02d-%02d", (int)y, (int)m, (int)d);
}

/* 2019-01-01 and 2024-12-31 as days since 1970-01-01. */
#define DAY_FIRST 17897
#define DAY_LAST 20088

/* ---- SQLite helpers ----------------------------------------------------------------------- */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("gen_dataset: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  exit(1);
}

static void exec(sqlite3 *db, const char *sql) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK)
    die("%s: %s", sql, msg != NULL ? msg : sqlite3_errmsg(db));
}

static sqlite3_stmt *prepare(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK)
    die("%s: %s", sql, sqlite3_errmsg(db));
  return st;
}

static int64_t scalar(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = prepare(db, sql);
  int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : -1;
  sqlite3_finalize(st);
  return v;
}

/* "INSERT INTO "T" ("c1", ...) VALUES (?, ...)" for table t. */
static sqlite3_stmt *insert_for(sqlite3 *db, int t) {
  char sql[1024];
  size_t len = (size_t)snprintf(sql, sizeof(sql), "INSERT INTO \"%s\" (", table_names[t]);
  for (int c = 0; c < table_ncolumns[t]; c++)
    len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s\"%s\"", c ? ", " : "",
                            table_columns[t][c]);
  len += (size_t)snprintf(sql + len, sizeof(sql) - len, ") VALUES (");
  for (int c = 0; c < table_ncolumns[t]; c++)
    len += (size_t)snprintf(sql + len, sizeof(sql) - len, "%s?", c ? ", " : "");
  snprintf(sql + len, sizeof(sql) - len, ")");
  return prepare(db, sql);
}

static void bind_text(sqlite3_stmt *st, int col, const char *text) {
  if (text == NULL)
    sqlite3_bind_null(st, col);
  else
    sqlite3_bind_text(st, col, text, -1, SQLITE_TRANSIENT);
}

static void bind_real(sqlite3_stmt *st, int col, bool null, double v) {
  if (null)
    sqlite3_bind_null(st, col);
  else
    sqlite3_bind_double(st, col, v);
}

static void step_insert(gen_t *g, sqlite3_stmt *st, int t) {
  if (sqlite3_step(st) != SQLITE_DONE)
    die("insert into %s: %s", table_names[t], sqlite3_errmsg(g->db));
  sqlite3_reset(st);
  g->rows[t]++;
}

/* ---- The schema ---------------------------------------------------------------------------- */

/* Every table and column written must be the migration's, and empty. */
static void check_schema(sqlite3 *db) {
  for (size_t t = 0; t < COUNT(table_names); t++) {
    for (int c = 0; c < table_ncolumns[t]; c++) {
      sqlite3_stmt *st = prepare(db, "SELECT 1 FROM pragma_table_info(?1) WHERE name = ?2");
      sqlite3_bind_text(st, 1, table_names[t], -1, SQLITE_STATIC);
      sqlite3_bind_text(st, 2, table_columns[t][c], -1, SQLITE_STATIC);
      bool found = sqlite3_step(st) == SQLITE_ROW;
      sqlite3_finalize(st);
      if (!found)
        die("%s has no column %s: create the database with the gateway first (bench/dataset)",
            table_names[t], table_columns[t][c]);
    }
    char sql[128];
    snprintf(sql, sizeof(sql), "SELECT count(*) FROM \"%s\"", table_names[t]);
    if (scalar(db, sql) != 0)
      die("%s is not empty: start from a new database", table_names[t]);
  }
}

/* Keeps the migration's index and keyword trigger statements, then drops
 * them: rows go in faster without them. */
static void drop_derived(gen_t *g) {
  sqlite3_stmt *st = prepare(g->db, "SELECT type, name, sql FROM sqlite_schema WHERE "
                                    "(type = 'index' AND name LIKE '\\_ix\\_%' ESCAPE '\\') OR "
                                    "(type = 'trigger' AND name LIKE '\\_fts\\_%' ESCAPE '\\')");
  char drops[DDL_MAX][TEXT_MAX];
  size_t n = 0;
  while (sqlite3_step(st) == SQLITE_ROW && n < DDL_MAX) {
    const char *type = (const char *)sqlite3_column_text(st, 0);
    snprintf(drops[n], TEXT_MAX, "DROP %s \"%s\"", strcmp(type, "index") ? "TRIGGER" : "INDEX",
             (const char *)sqlite3_column_text(st, 1));
    g->ddl[n++] = strdup((const char *)sqlite3_column_text(st, 2));
  }
  sqlite3_finalize(st);
  g->nddl = n;
  for (size_t i = 0; i < n; i++)
    exec(g->db, drops[i]);
}

/* The indexes and triggers again, then every keyword index rebuilt. */
static void restore_derived(gen_t *g) {
  for (size_t i = 0; i < g->nddl; i++) {
    exec(g->db, g->ddl[i]);
    free(g->ddl[i]);
  }
  sqlite3_stmt *st = prepare(g->db, "SELECT name FROM sqlite_schema WHERE type = 'table' AND "
                                    "sql LIKE 'CREATE VIRTUAL TABLE%fts5%'");
  while (sqlite3_step(st) == SQLITE_ROW) {
    char sql[TEXT_MAX];
    const char *name = (const char *)sqlite3_column_text(st, 0);
    snprintf(sql, sizeof(sql), "INSERT INTO \"%s\" (\"%s\") VALUES ('rebuild')", name, name);
    exec(g->db, sql);
  }
  sqlite3_finalize(st);
}

/* ---- Customers and products ------------------------------------------------------------- */

static void insert_customer(gen_t *g, sqlite3_stmt *st, rng_t *r, int64_t i) {
  char name[TEXT_MAX], email[TEXT_MAX], renewal[11], created[32];
  const char *a = pick(r, name_first, COUNT(name_first));
  const char *b = pick(r, name_second, COUNT(name_second));
  snprintf(name, sizeof(name), "%s %s %s", a, b, pick(r, name_suffix, COUNT(name_suffix)));
  snprintf(email, sizeof(email), "billing%" PRId64 "@%s-%s.example", i, a, b);
  for (char *p = email; *p != '\0'; p++)
    *p = (char)(*p >= 'A' && *p <= 'Z' ? *p + 32 : *p);
  date_of(range(r, DAY_LAST - 365, DAY_LAST + 3 * 365), renewal);
  int64_t secs = range(r, 0, 86399);
  date_of(range(r, DAY_FIRST - 365, DAY_LAST - 30), created);
  snprintf(created + 10, sizeof(created) - 10, "T%02d:%02d:%02d.%03dZ", (int)(secs / 3600),
           (int)(secs / 60 % 60), (int)(secs % 60), (int)range(r, 0, 999));
  guid_next(r, &g->ids[T_CUSTOMERS], g->customer_ids[i]);
  bind_text(st, 1, g->customer_ids[i]);
  bind_text(st, 2, name);
  bind_text(st, 3, chance(r, 5) ? NULL : email);
  bind_text(st, 4, chance(r, 3) ? NULL : pick(r, regions, COUNT(regions)));
  bind_real(st, 5, chance(r, 5), cents(r, 0, 500000));
  bind_text(st, 6, chance(r, 10) ? NULL : renewal);
  bind_text(st, 7, created);
  step_insert(g, st, T_CUSTOMERS);
}

static void insert_product(gen_t *g, sqlite3_stmt *st, rng_t *r, int64_t i) {
  char name[TEXT_MAX];
  const char *noun = pick(r, product_noun, COUNT(product_noun));
  snprintf(name, sizeof(name), "%s %s", pick(r, product_adjective, COUNT(product_adjective)), noun);
  snprintf(g->product_skus[i], sizeof(g->product_skus[i]), "%c-%05" PRId64, noun[0], 10000 + i);
  g->product_prices[i] = cents(r, 1, 2000);
  guid_next(r, &g->ids[T_PRODUCTS], g->product_ids[i]);
  bind_text(st, 1, g->product_ids[i]);
  bind_text(st, 2, name);
  bind_text(st, 3, g->product_skus[i]);
  bind_text(st, 4, chance(r, 10) ? NULL : pick(r, categories, COUNT(categories)));
  sqlite3_bind_double(st, 5, g->product_prices[i]);
  if (chance(r, 5))
    sqlite3_bind_null(st, 6);
  else
    sqlite3_bind_int(st, 6, !chance(r, 15));
  step_insert(g, st, T_PRODUCTS);
}

static void insert_parties(gen_t *g) {
  rng_t r = {g->n.seed ^ 0x1111};
  sqlite3_stmt *st = insert_for(g->db, T_CUSTOMERS);
  for (int64_t i = 0; i < g->n.customers; i++)
    insert_customer(g, st, &r, i);
  sqlite3_finalize(st);
  st = insert_for(g->db, T_PRODUCTS);
  for (int64_t i = 0; i < g->n.products; i++)
    insert_product(g, st, &r, i);
  sqlite3_finalize(st);
  for (int i = 0; i < SALES_REPS; i++)
    guid(&r, g->sales_reps[i]);
  for (int i = 0; i < WAREHOUSES; i++)
    guid(&r, g->warehouses[i]);
}

/* ---- Orders and what hangs off them ------------------------------------------------------ */

typedef struct order {
  char id[GUID_LEN + 1];
  char number[24];
  int64_t day; /* OrderDate, days since 1970-01-01 */
  const char *status;
  double amount;
  int64_t quantity;
} order_t;

static const char *order_status(rng_t *r) {
  int64_t x = range(r, 0, 99);
  return x < 2 ? NULL : x < 12 ? "Draft" : x < 42 ? "Open" : x < 92 ? "Shipped" : "Cancelled";
}

/* The order's lines; their totals become the order's Amount and Quantity. */
static void insert_lines(gen_t *g, rng_t *r, order_t *o) {
  sqlite3_stmt *st = g->ins_line;
  int64_t n = range(r, 1, LINES_MAX);
  for (int64_t l = 0; l < n; l++) {
    char id[GUID_LEN + 1];
    int64_t p = range(r, 0, g->n.products - 1), q = range(r, 1, 20);
    double price = chance(r, 20) ? g->product_prices[p] * 0.9 : g->product_prices[p];
    price = (double)(int64_t)(price * 100.0 + 0.5) / 100.0;
    guid_next(r, &g->ids[T_LINES], id);
    bind_text(st, 1, id);
    bind_text(st, 2, o->id);
    bind_text(st, 3, g->product_ids[p]);
    bind_text(st, 4, g->product_skus[p]);
    sqlite3_bind_int64(st, 5, q);
    sqlite3_bind_double(st, 6, price);
    sqlite3_bind_null(st, 7);
    step_insert(g, st, T_LINES);
    o->amount += price * (double)q;
    o->quantity += q;
  }
  o->amount = (double)(int64_t)(o->amount * 100.0 + 0.5) / 100.0;
}

static void insert_payments(gen_t *g, rng_t *r, const order_t *o) {
  bool paid = o->status != NULL && (!strcmp(o->status, "Shipped") || !strcmp(o->status, "Open"));
  int64_t n = paid && chance(r, 25) ? range(r, 1, 2) : 0;
  for (int64_t i = 0; i < n; i++) {
    char id[GUID_LEN + 1], day[11], ref[32];
    const char *method = pick(r, methods, COUNT(methods));
    guid_next(r, &g->ids[T_PAYMENTS], id);
    date_of(o->day + range(r, 0, 60), day);
    snprintf(ref, sizeof(ref), "%s-%07" PRId64, strcmp(method, "Card") ? "TRX" : "CARD",
             range(r, 0, 9999999));
    bind_text(g->ins_payment, 1, id);
    bind_text(g->ins_payment, 2, o->id);
    sqlite3_bind_double(g->ins_payment, 3, n == 1 ? o->amount : cents(r, 1, 5000));
    bind_text(g->ins_payment, 4, day);
    bind_text(g->ins_payment, 5, method);
    bind_text(g->ins_payment, 6, chance(r, 10) ? NULL : ref);
    step_insert(g, g->ins_payment, T_PAYMENTS);
  }
}

static void insert_files(gen_t *g, rng_t *r, const order_t *o) {
  int64_t n = chance(r, 5) ? range(r, 1, 2) : 0;
  for (int64_t i = 0; i < n; i++) {
    char id[GUID_LEN + 1], name[TEXT_MAX], url[TEXT_MAX * 2];
    const char *const *kind = file_kinds[next(r) % COUNT(file_kinds)];
    guid_next(r, &g->ids[T_FILES], id);
    snprintf(name, sizeof(name), "%s %s.%s", o->number, kind[0], kind[2]);
    snprintf(url, sizeof(url), "https://files.example.com/documents/%s/%s%%20%s.%s", id, o->number,
             kind[1], kind[2]);
    bind_text(g->ins_file, 1, id);
    bind_text(g->ins_file, 2, name);
    bind_text(g->ins_file, 3, kind[3]);
    bind_text(g->ins_file, 4, url);
    sqlite3_bind_int64(g->ins_file, 5, range(r, 2000, 5000000));
    bind_text(g->ins_file, 6, o->id);
    step_insert(g, g->ins_file, T_FILES);
  }
}

static void bind_order(gen_t *g, rng_t *r, const order_t *o) {
  sqlite3_stmt *st = g->ins_order;
  char day[11], due[11], calc[48];
  date_of(o->day, day);
  date_of(o->day + range(r, 7, 45), due);
  snprintf(calc, sizeof(calc), "gid://shop/CalculatedOrder/%" PRId64, range(r, 1, 999999999));
  bind_text(st, 1, o->id);
  bind_text(st, 2, o->number);
  bind_text(st, 3, chance(r, 1) ? NULL : g->customer_ids[range(r, 0, g->n.customers - 1)]);
  bind_text(st, 4, chance(r, 5) ? NULL : g->sales_reps[range(r, 0, SALES_REPS - 1)]);
  bind_text(st, 5, day);
  bind_text(st, 6, chance(r, 5) ? NULL : due);
  bind_text(st, 7, o->status);
  bind_real(st, 8, chance(r, 2), o->amount);
  sqlite3_bind_int64(st, 9, o->quantity);
  bind_text(st, 10, chance(r, 3) ? NULL : g->warehouses[range(r, 0, WAREHOUSES - 1)]);
  bind_text(st, 11, chance(r, 1) ? calc : NULL);
}

static void insert_orders(gen_t *g) {
  rng_t r = {g->n.seed ^ 0x2222};
  g->ins_order = insert_for(g->db, T_ORDERS);
  g->ins_line = insert_for(g->db, T_LINES);
  g->ins_payment = insert_for(g->db, T_PAYMENTS);
  g->ins_file = insert_for(g->db, T_FILES);
  for (int64_t i = 0; i < g->n.orders; i++) {
    order_t o = {.day = range(&r, DAY_FIRST, DAY_LAST), .status = order_status(&r)};
    guid_next(&r, &g->ids[T_ORDERS], o.id);
    snprintf(o.number, sizeof(o.number), "SO-%07" PRId64, 1000001 + i);
    insert_lines(g, &r, &o);
    bind_order(g, &r, &o);
    step_insert(g, g->ins_order, T_ORDERS);
    insert_payments(g, &r, &o);
    insert_files(g, &r, &o);
  }
  sqlite3_finalize(g->ins_order);
  sqlite3_finalize(g->ins_line);
  sqlite3_finalize(g->ins_payment);
  sqlite3_finalize(g->ins_file);
}

/* ---- The run ----------------------------------------------------------------------------------
 */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Seconds of CPU this process used, its sorter threads included: the
 * figure that a busy machine disturbs least. */
static double cpu(void) {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

static bool parse_count(const char *text, int64_t lo, int64_t hi, int64_t *out) {
  char *end = NULL;
  long long v = strtoll(text, &end, 10);
  if (end == text || *end != '\0' || v < lo || v > hi)
    return false;
  *out = v;
  return true;
}

static const char *parse_args(int argc, char **argv, sizes_t *n) {
  int64_t seed = 1;
  n->orders = 1000000;
  int i = 1;
  for (; i + 1 < argc && argv[i][0] == '-'; i += 2) {
    bool ok = !strcmp(argv[i], "--orders")
                  ? parse_count(argv[i + 1], 1, INT64_C(100000000), &n->orders)
              : !strcmp(argv[i], "--seed") ? parse_count(argv[i + 1], 0, INT64_MAX, &seed)
                                           : false;
    if (!ok)
      die("bad option %s %s (--orders 1..100000000, --seed >= 0)", argv[i], argv[i + 1]);
  }
  if (i != argc - 1)
    die("usage: gen_dataset [--orders N] [--seed N] FILE");
  /* 50 orders per customer, 500 per product; at least a few of each. */
  n->customers = n->orders / 50 > 10 ? n->orders / 50 : 10;
  n->products = n->orders / 500 > 10 ? n->orders / 500 : 10;
  n->seed = (uint64_t)seed;
  return argv[i];
}

static void allocate(gen_t *g) {
  g->customer_ids = calloc((size_t)g->n.customers, sizeof(*g->customer_ids));
  g->product_ids = calloc((size_t)g->n.products, sizeof(*g->product_ids));
  g->product_skus = calloc((size_t)g->n.products, sizeof(*g->product_skus));
  g->product_prices = calloc((size_t)g->n.products, sizeof(*g->product_prices));
  if (!g->customer_ids || !g->product_ids || !g->product_skus || !g->product_prices)
    die("out of memory");
  int64_t most[] = {g->n.customers,          g->n.products,   g->n.orders,
                    g->n.orders * LINES_MAX, g->n.orders * 2, g->n.orders * 2};
  for (size_t t = 0; t < COUNT(most); t++)
    guid_seq_init(&g->ids[t], most[t]);
}

/* Bulk-load settings: no journal (a failed run is simply run again on a new
 * file), a large cache, sorter threads for the index builds. */
static void open_db(gen_t *g, const char *path) {
  if (sqlite3_open_v2(path, &g->db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
    die("cannot open %s: %s", path, sqlite3_errmsg(g->db));
  exec(g->db, "PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF; PRAGMA locking_mode=EXCLUSIVE; "
              "PRAGMA cache_size=-2097152; PRAGMA mmap_size=8589934592; PRAGMA temp_store=MEMORY; "
              "PRAGMA threads=2");
}

static void summary(const gen_t *g, double t0, double t1, double t2) {
  printf("gen_dataset: seed %" PRIu64, g->n.seed);
  for (size_t t = 0; t < COUNT(table_names); t++)
    printf(", %" PRId64 " %s", g->rows[t], table_names[t]);
  printf("\ngen_dataset: rows %.1f s, indexes and keyword indexes %.1f s, total %.1f s "
         "(%.1f s of CPU)\n",
         t1 - t0, t2 - t1, now() - t0, cpu());
}

int main(int argc, char **argv) {
  gen_t g = {0};
  const char *path = parse_args(argc, argv, &g.n);
  double t0 = now();
  allocate(&g);
  open_db(&g, path);
  check_schema(g.db);
  drop_derived(&g);
  exec(g.db, "BEGIN");
  insert_parties(&g);
  insert_orders(&g);
  exec(g.db, "COMMIT");
  double t1 = now();
  restore_derived(&g);
  /* A full ANALYZE: a sampled one reads only the first rows of each index
   * and takes Status (five values) for a selective column. */
  exec(g.db, "ANALYZE; PRAGMA journal_mode=WAL");
  double t2 = now();
  sqlite3_close(g.db);
  summary(&g, t0, t1, t2);
  free(g.customer_ids);
  free(g.product_ids);
  free(g.product_skus);
  free(g.product_prices);
  return 0;
}
