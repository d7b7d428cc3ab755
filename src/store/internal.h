/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* store internals: the request and store objects, the driver interface,
 * the SQL generator shared by the drivers, the result builder, and the
 * helpers shared by the parser's files. Never included from outside
 * src/store (unit tests and the fuzz harness excepted). */
#ifndef DATAGATE_STORE_INTERNAL_H
#define DATAGATE_STORE_INTERNAL_H

#include <stdatomic.h>

#include "datagate/store.h"

/* ---- Requests and the store -------------------------------------------------- */
typedef enum dg__store_kind {
  DG__STORE_QUERY,
  DG__STORE_FETCH,
  DG__STORE_LOOKUP,
  DG__STORE_WRITE,
  DG__STORE_AGGREGATE,
  DG__STORE_SUBMIT,
  DG__STORE_FINISH,
  DG__STORE_SUBMISSION,
} dg__store_kind_t;

struct dg_store_req {
  dg_store_t *store;
  dg__store_kind_t kind;
  union {
    const dg_store_query_t *query;
    const dg_store_fetch_t *fetch;
    const dg_store_lookup_t *lookup;
    const dg_store_write_t *write;
    const dg_store_aggregate_t *aggregate;
    const dg_store_submit_t *submit;
    const dg_store_finish_t *finish;
    const dg_store_submission_get_t *submission;
  } in;
  dg_store_cb cb;
  void *data;
  atomic_bool canceled; /* read by the thread running the request */
  bool started;         /* the driver began running it (loop thread) */
  bool primary;         /* must see this gateway's writes: never a hot standby */
  int status;
  json_t *result;
  dg_errctx_t err;
  char *sql; /* the main statement, for the debug log (malloc'd) */
  size_t rows;
  uint64_t start_ns;
  dg_store_req_t *prev, *next; /* the store's requests */
  uv_work_t work;              /* for drivers that run on the threadpool */
};

/* OPENING -> OPEN -> CLOSING -> CLOSED; a failed open goes OPENING -> CLOSED. */
typedef enum dg__store_state {
  DG__STORE_OPENING,
  DG__STORE_OPEN,
  DG__STORE_CLOSING,
  DG__STORE_CLOSED,
} dg__store_state_t;

typedef struct dg__store_driver dg__store_driver_t;

struct dg_store {
  uv_loop_t *loop;
  dg_catalog_t *cat; /* the schema the database was migrated to */
  const dg__store_driver_t *driver;
  void *drv; /* driver state, driver->state_size bytes */
  char *path;
  char *read_path;  /* hot standbys for the read tools; NULL: none */
  char *sample_dir; /* NULL: no sample data */
  size_t max_result_bytes;
  dg__store_state_t state;
  bool driver_closing; /* the driver's close has been started */
  dg_store_req_t *reqs;
  unsigned inflight;
  dg_store_open_cb open_cb;
  void *open_data;
  void (*close_cb)(void *data);
  void *close_data;
  dg_errctx_t open_err;
  json_t *open_notes; /* warnings found while migrating, logged on the loop */
  char owner[128];    /* this process and store instance, for submissions */
  uv_work_t work;     /* open and close on the threadpool */

  dg_store_cancel_cb cancel_cb; /* dg_store_on_cancel */
  void *cancel_data;
};

/* A driver: one file (or a few sqlite*.c), listed in dg__store_drivers.
 * Every entry point is called on the loop thread; completions come back
 * through dg__store_opened, dg__store_done and dg__store_closed, always on
 * the loop thread and on a later turn than the call that started them. */
struct dg__store_driver {
  const char *name;
  size_t state_size;
  /* Whether this driver serves a database path (a file, "postgresql://..."). */
  bool (*accepts)(const char *path);
  /* Opens, migrates and loads sample data; then dg__store_opened. */
  void (*open)(dg_store_t *store);
  /* Starts req; 0 (dg__store_done follows) or a DG_E* code. */
  int (*submit)(dg_store_req_t *req);
  /* Asks a submitted request to stop early. */
  void (*cancel)(dg_store_req_t *req);
  /* Nothing is in flight: releases connections; then dg__store_closed. */
  void (*close)(dg_store_t *store);
  /* Sends an encoded cancel to every gateway on the database (NULL: the
   * driver serves one process); 0 or a DG_E* code. */
  int (*publish)(dg_store_t *store, const char *payload);
};

extern const dg__store_driver_t dg__store_sqlite;
extern const dg__store_driver_t dg__store_postgres;

/* As dg_store_query and dg_store_fetch for the form tools' reads (records.c),
 * which must see this gateway's own writes: never served by a hot standby. */
int dg__store_query_primary(dg_store_t *s, const dg_store_query_t *q, dg_store_cb cb, void *data,
                            dg_errctx_t *err);
int dg__store_fetch_primary(dg_store_t *s, const dg_store_fetch_t *f, dg_store_cb cb, void *data,
                            dg_errctx_t *err);

void dg__store_opened(dg_store_t *store, int status);
void dg__store_done(dg_store_req_t *req);
void dg__store_closed(dg_store_t *store);

/* A driver heard a cancel's payload: passed on to dg_store_on_cancel's cb
 * when it is well formed, else ignored. */
void dg__store_cancel_heard(dg_store_t *store, const char *payload);

/* ---- Cancel payloads (cancel.c) ----------------------------------------------------
 * "c1 <session>" or "c1 <session> <request>": a version, the session's 64
 * hex digits and the request key, single spaces between. */
#define DG__STORE_CANCEL_PAYLOAD_MAX                                                               \
  (3 + DG_STORE_CANCEL_SESSION_LEN + 1 + DG_STORE_CANCEL_REQUEST_MAX)
/* Writes the payload into out (DG__STORE_CANCEL_PAYLOAD_MAX + 1 bytes);
 * 0 or DG_EINVAL for a session or request dg_store_publish_cancel refuses. */
int dg__store_cancel_encode(const char *session, const char *request,
                            char out[DG__STORE_CANCEL_PAYLOAD_MAX + 1]);
/* Reads a payload back: false for anything encode would not write (then
 * session and request are left empty). request is "" for a whole session. */
bool dg__store_cancel_parse(const char *payload, char session[DG_STORE_CANCEL_SESSION_LEN + 1],
                            char request[DG_STORE_CANCEL_REQUEST_MAX + 1]);

/* ---- SQL generation (sql.c) -----------------------------------------------------
 * Statements are built from checked descriptions only: identifiers are
 * catalog names (letters, digits, _) in double quotes, values are bound. */
typedef struct dg__sql_dialect {
  const char *name;
  bool numbered;     /* $1, $2 ... instead of ? */
  const char *like;  /* case-insensitive LIKE operator */
  const char *instr; /* position of a substring: instr(a, b) */
  /* Text before and after an expression to read it as a Date
   * ("YYYY-MM-DD") or a DateTime ("YYYY-MM-DDTHH:MM:SS.mmmZ"); NULL when
   * the text is no such value. */
  const char *as_date[2];
  const char *as_datetime[2];
  /* Appended to a String expression that lost its column's collation, so
   * that it still compares ignoring case. */
  const char *nocase;
  /* Appended to lower() of a String to compare it byte by byte (empty
   * where a function's result has no collation). */
  const char *binary;
  /* After ASC and DESC in ORDER BY: nulls sort before every value, as
   * SQLite sorts them (PostgreSQL puts them last by default). */
  const char *nulls_first;
  const char *nulls_last;
} dg__sql_dialect_t;

extern const dg__sql_dialect_t dg__sql_sqlite;
/* PostgreSQL: numbered placeholders; String columns are citext in the
 * "C" collation (case-insensitive as SQLite's NOCASE, and a CASE keeps
 * the type), the string operators use ILIKE in the "C" collation (ASCII
 * case folded, as SQLite's LIKE). Dates are kept as the same normalised
 * text as on SQLite. */
extern const dg__sql_dialect_t dg__sql_postgres;

#define DG__SQL_TEXT_MAX (256 * 1024)
#define DG__SQL_BINDS_MAX 2048

typedef struct dg__sql {
  const dg__sql_dialect_t *dialect;
  dg_buf_t text;
  dg_store_value_t *binds;
  size_t nbinds;
  size_t cap;
  int rc;         /* the first failure; appends after it do nothing */
  unsigned alias; /* counter for subquery aliases */
  char **owned;   /* strings that binds point at (LIKE patterns) */
  size_t nowned;
} dg__sql_t;

void dg__sql_init(dg__sql_t *sql, const dg__sql_dialect_t *dialect);
void dg__sql_free(dg__sql_t *sql);
void dg__sql_reset(dg__sql_t *sql);
void dg__sql_put(dg__sql_t *sql, const char *text);
void dg__sql_putf(dg__sql_t *sql, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "name" as a quoted identifier, optionally qualified: alias."name". */
void dg__sql_ident(dg__sql_t *sql, const char *alias, const char *name);
/* A placeholder bound to value (copied; text is borrowed). */
void dg__sql_bind(dg__sql_t *sql, const dg_store_value_t *value);
void dg__sql_bind_text(dg__sql_t *sql, const char *text);
void dg__sql_bind_int(dg__sql_t *sql, int64_t i);

/* A column of a result: a property (NULL: the id) and whether it is part of
 * the entity (false: read only to load an expansion). */
typedef struct dg__sql_col {
  const dg_property_t *prop;
  bool emit;
  size_t key_len; /* strlen(prop->json_name), measured once per request; 0: not measured */
} dg__sql_col_t;

typedef struct dg__sql_cols {
  dg__sql_col_t *cols;
  size_t n;
} dg__sql_cols_t;

/* The columns of a page or fetch: id, the selection, then the foreign keys
 * that Outbound expansions need. Allocated in arena. */
int dg__sql_entity_cols(const dg_store_select_t *select, const dg_store_expand_t *expand,
                        size_t nexpand, dg_arena_t *arena, dg__sql_cols_t *out);
/* The column of cols that reads prop, or -1. */
int dg__sql_col_of(const dg__sql_cols_t *cols, const dg_property_t *prop);
/* "a.id, a.\"Name\", ...": the columns of cols read from the table aliased
 * alias, as every SELECT of entities lists them (both backends). */
void dg__sql_column_list(dg__sql_t *sql, const char *alias, const dg__sql_cols_t *cols);

/* " FROM ... [LEFT JOIN ...] [WHERE ...]" of model with filters (t0 is the
 * model's alias). */
void dg__sql_from_where(dg__sql_t *sql, const dg_model_t *model, const dg_store_filters_t *f);
/* Its two halves, for statements that join more tables in between: the
 * FROM with the joins the filters need (aliases r<n>), then the WHERE. */
void dg__sql_from(dg__sql_t *sql, const dg_model_t *model, const dg_store_filters_t *f);
void dg__sql_where(dg__sql_t *sql, const dg_store_filters_t *f);
/* "alias.id" or alias."name" into out (prop NULL: the id). */
void dg__sql_column_text(dg__sql_t *sql, char *out, size_t size, const char *alias,
                         const dg_property_t *prop);
/* a op b for two SQL expressions, or a op value when b is NULL (a null
 * value: IS NULL, or IS NOT NULL for NotEqualTo), with the filters'
 * semantics: string operators ignore case, a negative operator is true
 * exactly where its positive one is not, other comparisons with a null are
 * false. */
void dg__sql_compare(dg__sql_t *sql, dg_store_op_t op, const char *a, const char *b,
                     const dg_store_value_t *value);
/* An aggregate (sql_aggregate.c): the group key columns, count(*), then one
 * column per aggregation; grouped and ordered by the keys when there are
 * any. Joins: r<n> for filters, g<n> for group keys, j<n> for joinFilters. */
void dg__sql_aggregate(dg__sql_t *sql, const dg_store_aggregate_t *a);
/* SELECT count(*) of the records an aggregate's filters match. */
void dg__sql_aggregate_count(dg__sql_t *sql, const dg_store_aggregate_t *a);
/* The page of a query: SELECT cols ... ORDER BY ... LIMIT page_size + 1
 * OFFSET (page - 1) * page_size; the extra row tells whether there is more. */
void dg__sql_page(dg__sql_t *sql, const dg_store_query_t *q, const dg__sql_cols_t *cols);
/* SELECT count(*) of a query. */
void dg__sql_count(dg__sql_t *sql, const dg_store_query_t *q);
/* SELECT cols FROM model WHERE id IN (ids). */
void dg__sql_by_ids(dg__sql_t *sql, const dg_model_t *model, const dg__sql_cols_t *cols,
                    const char *const *ids, size_t nids);
/* An Inbound expansion: the related rows of the parents keys, at most cap
 * + 1 per parent (the extra one marks truncation): columns are the parent
 * key, then cols, then the row's position under its parent (1-based). */
void dg__sql_expand_many(dg__sql_t *sql, const dg_store_expand_t *e, const dg__sql_cols_t *cols,
                         const char *const *keys, size_t nkeys, int64_t cap);
/* A write: INSERT, UPDATE or INSERT ... ON CONFLICT (id) DO UPDATE. */
void dg__sql_write(dg__sql_t *sql, const dg_store_write_t *w, const char *id);

/* ---- Results (result.c) ----------------------------------------------------------- *
 * Results are written as JSON text on the worker thread. */

/* One value of prop (NULL prop: the id) written into out as JSON (0 or
 * DG_E2BIG). */
int dg__store_put_value(dg_buf_t *out, const dg_property_t *prop, const dg_store_value_t *v);
/* "key":value,... of the emitted columns of a row (not the id, column 0). */
int dg__store_put_members(dg_buf_t *out, const dg__sql_cols_t *cols, const dg_store_value_t *row);
/* A flat entity, as expansions show them: {...members, "id": ...}. */
int dg__store_put_flat(dg_buf_t *out, const dg__sql_cols_t *cols, const dg_store_value_t *row);
/* Fills err for a result over the budget. */
int dg__store_too_big(dg_errctx_t *err, size_t max);
/* The key of a reference under "expanded" (camelCased). */
const char *dg__store_ref_key(const dg_property_t *ref);
/* Aggregate results (result_aggregate.c), written as JSON text. One row of
 * dg__sql_aggregate as {"groupKey":{...},"aggregates":{...}}; then the
 * whole answer around the rows' text (comma-separated); 0 or DG_E2BIG. */
int dg__store_put_aggregate_row(dg_buf_t *out, const dg_store_aggregate_t *a,
                                const dg_store_value_t *row);
int dg__store_put_aggregate(dg_buf_t *out, const dg_store_aggregate_t *a, int64_t matched,
                            const dg_buf_t *rows);
/* Fills err for a grouped aggregate over its cap. */
int dg__store_over_cap(const dg_store_aggregate_t *a, int64_t matched, dg_errctx_t *err);

/* ---- Ids of one request (id_index.c) --------------------------------------------------- */
/* A hash index over an array of ids the caller fills, for at most the cap
 * given at init (arena memory, freed with the arena). */
typedef struct dg__id_index {
  const char *const *ids;
  uint32_t *slots; /* 1 + the position in ids of each slot's id; 0: free */
  size_t mask;
} dg__id_index_t;

int dg__id_index_init(dg__id_index_t *ix, dg_arena_t *arena, const char *const *ids, size_t cap);
/* Indexes ids[i]; returns the position of an equal id indexed before, or i. */
size_t dg__id_index_add(dg__id_index_t *ix, size_t i);
/* The position in ids of key, or SIZE_MAX. */
size_t dg__id_index_find(const dg__id_index_t *ix, const char *key);

/* ---- Entity answers (read.c) --------------------------------------------------------------
 * query_entities and get_entities_by_ids put together from rows the
 * driver reads: the parents (the page or the ids asked for), then for each
 * expansion one batched statement (dg__related_start builds it) whose rows
 * are attached to their parents, then the answer as JSON text. */
typedef struct dg__read {
  dg_arena_t *arena;
  size_t max; /* bytes the result may take */
  dg_errctx_t *err;
} dg__read_t;

/* Fill err for out of memory, or for a result over the budget (rc
 * DG_E2BIG); return the code. */
int dg__read_oom(dg__read_t *rd);
int dg__read_put_failed(dg__read_t *rd, int rc);

/* Bytes [off, off + len) of a pieces buffer (offsets stay right when the
 * buffer moves as it grows). */
typedef struct dg__span {
  size_t off, len;
  bool set;
} dg__span_t;

typedef struct dg__parents {
  const char **ids;
  dg__span_t *bodies;  /* "key":value,... of each parent */
  const char **fks;    /* [i * nexpand + j]: parent i's key for Outbound expansion j */
  dg__span_t *related; /* [i * nexpand + j]: the related entity, or the list's entities */
  bool *cut;           /* [i * nexpand + j]: the list went past DG_STORE_EXPAND_MAX */
  size_t n, cap;
  dg__id_index_t index; /* over ids */
  const dg_store_expand_t *expand;
  size_t nexpand;
  dg_buf_t pieces;
} dg__parents_t;

int dg__parents_init(dg__read_t *rd, dg__parents_t *p, size_t cap, const dg_store_expand_t *expand,
                     size_t nexpand);
void dg__parents_free(dg__parents_t *p);
/* One row of the page or fetch statement (the values of cols); 1 when cap
 * rows were kept already (*more is set: the page has more). */
int dg__parents_add(dg__read_t *rd, dg__parents_t *p, const dg__sql_cols_t *cols,
                    const dg_store_value_t *row, bool *more);

typedef struct dg__related {
  dg__parents_t *p;
  size_t j;
  bool many; /* Inbound: rows are the parent key, cols, the position */
  dg__sql_cols_t cols;
  const char **ids;     /* Outbound: the related entities read, with their text */
  dg__id_index_t index; /* over ids */
  dg__span_t *texts;
  size_t n, cap;
} dg__related_t;

/* Expansion j of the parents: its statement into sql (initialised with
 * the driver's dialect); 1 when there is nothing to read. */
int dg__related_start(dg__read_t *rd, dg__parents_t *p, size_t j, dg__related_t *rr,
                      dg__sql_t *sql);
/* Values in a row of that statement. */
size_t dg__related_ncols(const dg__related_t *rr);
/* One row; 1 when no more rows are wanted. */
int dg__related_row(dg__read_t *rd, dg__related_t *rr, const dg_store_value_t *row);
/* After the last row: Outbound entities go to their parents. */
void dg__related_end(dg__related_t *rr);
/* {"entities": [...], "pageNumber", ...} and {"entities": [...]} (in the
 * order of ids); 0 or DG_E2BIG / DG_ENOMEM. */
/* Both write the entities that fit whole within the budget (the query's
 * maxBytes within max, the store's limit) and say what was left out;
 * DG_E2BIG when not even the first entity fits. */
int dg__parents_put_page(dg_buf_t *out, const dg_store_query_t *q, const dg__parents_t *p,
                         bool more, size_t max);
int dg__parents_put_fetch(dg_buf_t *out, const dg__parents_t *p, const char *const *ids,
                          size_t nids, size_t max);

/* lookup_by_keyword: the hits of every model searched, best first. Each
 * model's rows come after dg__hits_next_model, best first, with a score
 * (lower is better). */
typedef struct dg__hit {
  double score;
  size_t model; /* index into the lookup's models */
  size_t seq;   /* rank order within its model */
  dg__span_t text;
  const char *id; /* in the reader's arena */
} dg__hit_t;

typedef struct dg__hits {
  const dg_store_lookup_t *l;
  dg__hit_t *items;
  size_t n, cap;
  dg_buf_t pieces;
} dg__hits_t;

int dg__hits_init(dg__read_t *rd, dg__hits_t *h, const dg_store_lookup_t *l);
void dg__hits_free(dg__hits_t *h);
void dg__hits_next_model(dg__hits_t *h);
/* One row of model (the values of cols); 1 when the model gave limit. */
int dg__hits_add(dg__read_t *rd, dg__hits_t *h, size_t model, const dg__sql_cols_t *cols,
                 const dg_store_value_t *row, double score);
/* {"entities": [...]}, the best limit hits of all models. */
/* The hits that fit within the lookup's budget (within max), and the ids
 * of some of those left out; DG_E2BIG when not even the best one fits. */
int dg__hits_put(dg_buf_t *out, dg__hits_t *h, size_t max);

/* ---- Parsing helpers shared by parse*.c --------------------------------------------- */
typedef struct dg__path {
  char s[128];
} dg__path_t;

/* "base.key" and "base[i]" (base may be empty). */
const char *dg__path_key(dg__path_t *p, const char *base, const char *key);
const char *dg__path_index(dg__path_t *p, const char *base, size_t i);

/* What a Reference property is followed for: its messages say so. */
typedef enum dg__store_ref_use { DG__STORE_REF_FILTER, DG__STORE_REF_EXPAND } dg__store_ref_use_t;
/* The Reference property called name in m that p may see and whose target
 * model p may read, in *out; else DG_EINVAL with err naming param and, for
 * a wrong name, the Reference properties that lead to a model. */
int dg__store_followed_reference(const dg_principal_t *p, const dg_model_t *m, const char *name,
                                 const char *param, dg__store_ref_use_t use,
                                 const dg_property_t **out, dg_errctx_t *err);
/* The "properties" and "expand" arguments of a query or a fetch: what each
 * returned entity holds (parse_select.c). */
int dg__store_parse_shape(const dg_store_parse_t *ps, const dg_model_t *model, const json_t *args,
                          dg_store_select_t *select, dg_store_expand_t **expand, size_t *nexpand);
/* Appends the names of model's properties that p may see and that pass
 * keep (NULL: all), comma-separated, cut to fit size. */
void dg__store_names(char *out, size_t size, const dg_principal_t *p, const dg_model_t *model,
                     bool (*keep)(const dg_property_t *prop), bool with_id);
/* The property called name that p may see, or NULL. "id" is reported with
 * *is_id set (and NULL returned) when allow_id. */
const dg_property_t *dg__store_visible(const dg_principal_t *p, const dg_model_t *model,
                                       const char *name, bool allow_id, bool *is_id);
/* Fills err with DG_EINVAL, param, and "Invalid argument '<param>': " and
 * the formatted rest; returns DG_EINVAL. */
int dg__store_invalid(dg_errctx_t *err, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* A short JSON rendering of a given value for messages. */
void dg__store_show(char *out, size_t size, const json_t *value);
/* The parsers' two common refusals: "Invalid argument '<param>': got
 * <value>; allowed: <allowed>." (DG_EINVAL), and out of memory at param
 * (DG_ENOMEM). */
int dg__store_got(const dg_store_parse_t *ps, const json_t *v, const char *param,
                  const char *allowed);
int dg__store_oom(const dg_store_parse_t *ps, const char *param);
/* A name member of obj (key, at <base>/<key>): NULL when absent or null,
 * else a string of 1 to 128 bytes; need_name also refuses it missing
 * ("missing; give <what>."). */
int dg__store_name_field(const dg_store_parse_t *ps, const json_t *obj, const char *key,
                         const char *base, const char **out);
int dg__store_need_name(const dg_store_parse_t *ps, const json_t *obj, const char *key,
                        const char *base, const char *what, const char **out);
/* Every key of obj must be one of the n fields: else "unknown field;
 * allowed fields here: <allowed>." at <base>/<key>. */
int dg__store_check_fields(const dg_store_parse_t *ps, const json_t *obj, const char *base,
                           const char *const *fields, size_t n, const char *allowed);
bool dg__store_is_stored(const dg_property_t *prop);
bool dg__store_is_inbound(const dg_property_t *prop);
/* Whether a stored property gets an index "_ix_<model>_<property>": it is
 * sorted or filtered on, or an outbound reference that joins follow. */
bool dg__store_wants_index(const dg_property_t *prop);
/* "CREATE INDEX IF NOT EXISTS <name> ON <m> (<p>, id)", no terminator:
 * the index of dg__store_wants_index, in either dialect; its nulls come
 * first as in ORDER BY, so that a page sorted either way reads it forwards
 * or backwards instead of sorting every matching row. */
void dg__sql_create_index(dg__sql_t *sql, const char *name, const dg_model_t *m,
                          const dg_property_t *p);

/* ---- Submissions (submissions.c) -------------------------------------------------------- *
 * A running submission names its owner: "boot/pid/start/instance", the
 * machine's boot id, the process id and start time (so a reused pid is not
 * mistaken for the old process) and a GUID of the store instance. */
#define DG__STORE_OWNER_MAX 128

/* Fills out with a new owner token for a store of this process. */
void dg__store_owner(char out[DG__STORE_OWNER_MAX]);
/* False when the owner's process is gone (or is this process, but another
 * store instance than self, which has closed). */
bool dg__store_owner_alive(const char *owner, const char *self);
/* Whether owner ran on this machine (the same boot id), where
 * dg__store_owner_alive can tell; others only a lease can tell. */
bool dg__store_owner_same_machine(const char *owner, const char *self);

/* ---- Submission statements (submission_sql.c) ----------------------------------------- *
 * The SQL on "_dg_submissions" both backends share; lease adds
 * PostgreSQL's lease_until column. */

/* Binds text, or NULL when text is NULL. */
void dg__sql_bind_text_or_null(dg__sql_t *sql, const char *text);
/* INSERT of s's row up to its last value: the caller closes the list. */
void dg__sql_submission_insert(dg__sql_t *sql, const dg_store_submit_t *s, const char *entity_id,
                               const char *owner, const char *now, bool lease);
/* SELECT of the submission with s's principal and idempotency key. */
void dg__sql_submission_earlier(dg__sql_t *sql, const dg_store_submit_t *s);
/* UPDATE recording f's outcome, finished at now. */
void dg__sql_submission_outcome(dg__sql_t *sql, const dg_store_finish_t *f, const char *now,
                                bool lease);
/* UPDATE marking running rows interrupted, up to "... AND ": the caller
 * names which. */
void dg__sql_submission_interrupted(dg__sql_t *sql, const char *now, bool lease);
/* SELECT of g's submission; newest is the column that orders an entity's. */
void dg__sql_submission_get(dg__sql_t *sql, const dg_store_submission_get_t *g, const char *newest);

/* ---- Sample data (sample.c) --------------------------------------------------------- *
 * Reads every *.json file of dir ({"model": name, "entities": [...]}) into
 * writes (DG_STORE_CREATE, allocated in arena), in file name order. A
 * missing dir is no data. Problems name the file and the entity path. */
int dg__store_sample_read(const dg_catalog_t *cat, const char *dir, dg_arena_t *arena,
                          dg_store_write_t **writes, size_t *nwrites, dg_errctx_t *err);

#endif
