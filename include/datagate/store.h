/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* store: the entity store behind lookup_by_keyword, query_entities,
 * get_entities_by_ids, aggregate_entities, submit_data_entry_form.
 *
 * Two halves:
 *
 * 1. The argument parser (loop thread, pure): turns a tool's JSON
 *    arguments into a checked description (dg_store_query_t and friends).
 *    Every model and property name is resolved against the catalog and the
 *    caller's permissions; operators, values, GUIDs and paging are checked.
 *    A failure fills a dg_errctx_t whose param is the argument path
 *    ("queryParameterGroups[0].parameters[1].value") and whose message
 *    names what was given and what is allowed. Only a checked description
 *    reaches SQL: names as catalog identifiers, values as bound parameters.
 *
 * 2. The store (asynchronous): a driver (SQLite now, one database file in
 *    WAL mode, a connection per threadpool thread) runs a description on
 *    the libuv threadpool, builds the result JSON there and hands it back
 *    to the loop. Every operation completes exactly once, on the loop
 *    thread, never from inside the call that started it.
 *
 * Result shapes (the tools' structuredContent; docs/query.md has them all):
 *   query   {"entities": [E...], "pageNumber": n, "pageSize": n,
 *            "hasMore": b, "nextPage": n|null}      or {"count": n}
 *   fetch   {"entities": [E...]}                     (in the order asked)
 *   lookup  {"entities": [L...]}                     (best match first)
 *   write   {"id": "...", "created": b}
 *   aggregate {"matchedCount": n, "groupByProperties": ["Status", ...],
 *            "rows": [{"groupKey": {...}, "aggregates": {...}}]}
 * where E is {"id": "...", "properties": {...}} with camelCased keys, and
 * with expansion properties.expanded.<reference> (Outbound: an object or
 * null; Inbound: an array, possibly []), each expanded entity a flat object
 * with its "id"; properties.expandedTruncated lists the references cut at
 * DG_STORE_EXPAND_MAX. L is E plus dataModelId, dataModelName, entityType
 * and entitySubType. */
#ifndef DATAGATE_STORE_H
#define DATAGATE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <uv.h>

#include "datagate/auth.h"
#include "datagate/base.h"
#include "datagate/catalog.h"

/* ---- Limits (the seed's Limits table, and bounds of our own) ------------- */
#define DG_STORE_PAGE_SIZE_DEFAULT 25
#define DG_STORE_PAGE_SIZE_MAX 100
#define DG_STORE_PAGE_NUMBER_MAX 1000000
#define DG_STORE_IDS_MAX 50
#define DG_STORE_LOOKUP_LIMIT_DEFAULT 10
#define DG_STORE_LOOKUP_LIMIT_MAX 100
#define DG_STORE_EXPAND_MAX 100      /* related entities per parent and reference */
#define DG_STORE_GROUPS_MAX 20       /* queryParameterGroups */
#define DG_STORE_PARAMETERS_MAX 50   /* parameters per group */
#define DG_STORE_VALUE_MAX 4096      /* bytes of one filter value */
#define DG_STORE_SEARCH_MAX 256      /* bytes of a lookup searchValue */
#define DG_STORE_SEARCH_TERMS_MAX 16 /* words of a searchValue */
#define DG_STORE_AGGREGATIONS_MAX 32 /* aggregation clauses of one call */
#define DG_STORE_GROUP_BY_MAX 8      /* groupBy entries */
#define DG_STORE_ALIAS_MAX 64        /* characters of an alias */
/* Records a grouped aggregate may match when server.maxGroupedAggregateRecords
 * is not set; ungrouped totals have no cap. */
#define DG_STORE_GROUPED_CAP_DEFAULT 100000

/* ---- Operators -------------------------------------------------------------- */
#define DG_STORE_OP_MAP(XX)                                                                        \
  XX(EQ, "EqualTo")                                                                                \
  XX(NE, "NotEqualTo")                                                                             \
  XX(GT, "GreaterThan")                                                                            \
  XX(GE, "GreaterThanEqualTo")                                                                     \
  XX(LT, "LessThan")                                                                               \
  XX(LE, "LessThanEqualTo")                                                                        \
  XX(CONTAINS, "Contains")                                                                         \
  XX(STARTS, "StartsWith")                                                                         \
  XX(NOT_STARTS, "NotStartsWith")                                                                  \
  XX(ENDS, "EndsWith")                                                                             \
  XX(NOT_ENDS, "NotEndsWith")

typedef enum dg_store_op {
#define XX(name, text) DG_STORE_OP_##name,
  DG_STORE_OP_MAP(XX)
#undef XX
      DG_STORE_OP__COUNT
} dg_store_op_t;

const char *dg_store_op_name(dg_store_op_t op);
/* Exact names as the seed spells them; false otherwise. */
bool dg_store_op_parse(const char *name, dg_store_op_t *out);
/* Whether op may compare a property of this type (the string operators
 * only String; order operators not Boolean, Guid or Reference). */
bool dg_store_op_allowed(dg_store_op_t op, dg_data_type_t type);

/* ---- Values ------------------------------------------------------------------ */
typedef enum dg_store_vkind {
  DG_STORE_NULL,
  DG_STORE_INT,  /* Int, Long */
  DG_STORE_REAL, /* Double, Decimal */
  DG_STORE_TEXT, /* String; Date "YYYY-MM-DD"; DateTime "YYYY-MM-DDTHH:MM:SS.mmmZ";
                    Guid and Reference as lower-case GUIDs */
  DG_STORE_BOOL,
} dg_store_vkind_t;

typedef struct dg_store_value {
  dg_store_vkind_t kind;
  int64_t i;
  double d;
  bool b;
  const char *text; /* DG_STORE_TEXT: len bytes, NUL-terminated */
  size_t len;
} dg_store_value_t;

/* Converts a JSON value into a value of prop's type, normalised the way the
 * store keeps it (dates in UTC ISO-8601, GUIDs in lower case). A string is
 * parsed per the type ("12.5", "true", "2024-03-01"); a JSON number or
 * boolean is taken as is when the type fits; JSON null is DG_STORE_NULL.
 * Text is copied into arena. On failure err names param, the value given
 * and what the type allows. Inbound references have no value (DG_EINVAL). */
int dg_store_value_parse(const dg_property_t *prop, const json_t *value, const char *param,
                         dg_arena_t *arena, dg_store_value_t *out, dg_errctx_t *err);

/* ---- Checked descriptions ------------------------------------------------------ */

/* One filter parameter. prop NULL stands for the entity's id (a Guid). */
typedef struct dg_store_filter {
  dg_store_op_t op;
  const dg_property_t *reference; /* base model's Reference property, or NULL */
  const dg_model_t *model;        /* the model prop belongs to (the target when reference) */
  const dg_property_t *prop;
  bool compare_property;      /* comparisonPropertyName given: other instead of value */
  const dg_property_t *other; /* NULL with compare_property: the id */
  dg_store_value_t value;     /* DG_STORE_NULL: a null test (EqualTo or NotEqualTo) */
} dg_store_filter_t;

typedef struct dg_store_group {
  bool any; /* andOrOperator Or */
  dg_store_filter_t *filters;
  size_t nfilters;
} dg_store_group_t;

/* Groups combine with And. */
typedef struct dg_store_filters {
  dg_store_group_t *groups;
  size_t ngroups;
} dg_store_filters_t;

/* Properties to return: never Inbound references (they hold no value), never
 * a property the caller may not see. The id is always returned as well. */
typedef struct dg_store_select {
  const dg_property_t **props;
  size_t nprops;
} dg_store_select_t;

typedef struct dg_store_expand {
  const dg_property_t *reference; /* of the base model; its target has a model */
  const dg_model_t *target;
  dg_store_select_t select;
} dg_store_expand_t;

typedef struct dg_store_sort {
  const dg_property_t *prop; /* NULL: the id */
  bool descending;
} dg_store_sort_t;

typedef struct dg_store_query {
  const dg_model_t *model;
  dg_store_filters_t filters;
  bool has_sort; /* without it entities come in id order */
  dg_store_sort_t sort;
  int64_t page_number; /* 1-based */
  int64_t page_size;
  bool count_only;
  dg_store_select_t select;
  dg_store_expand_t *expand;
  size_t nexpand;
  /* The answer's budget in bytes (0: the store's limit; never above it).
   * The entities that do not fit whole are left out, and the answer says
   * so: "truncated": true, "omittedCount" and "continueWith" {pageNumber,
   * pageSize}, the paging that starts at the first entity left out. */
  size_t max_bytes;
} dg_store_query_t;

typedef struct dg_store_fetch {
  const dg_model_t *model;
  const char **ids; /* lower case, without duplicates, in the order given */
  size_t nids;
  dg_store_select_t select;
  dg_store_expand_t *expand;
  size_t nexpand;
} dg_store_fetch_t;

/* Keyword search over the keyword properties the caller may see. */
typedef struct dg_store_lookup_model {
  const dg_model_t *model;
  const dg_property_t **keywords; /* searched */
  size_t nkeywords;
  dg_store_select_t select; /* returned */
} dg_store_lookup_model_t;

typedef struct dg_store_lookup {
  const char *const *terms; /* words of the search value; each matches a word prefix */
  size_t nterms;
  dg_store_lookup_model_t *models;
  size_t nmodels;
  int64_t limit;
  /* As dg_store_query_t.max_bytes; the hits left out are named in
   * "omitted": [{id, dataModelId}] (for get_entities_by_ids). */
  size_t max_bytes;
} dg_store_lookup_t;

typedef enum dg_store_write_mode {
  DG_STORE_CREATE, /* a new entity; DG_EEXIST when the id is taken */
  DG_STORE_UPDATE, /* changes the given properties; DG_ENOENT when the id is unknown */
  DG_STORE_UPSERT, /* creates or replaces the given properties */
} dg_store_write_mode_t;

typedef struct dg_store_write {
  const dg_model_t *model;
  dg_store_write_mode_t mode;
  const char *id;              /* lower-case GUID; NULL with DG_STORE_CREATE picks a new one */
  const dg_property_t **props; /* stored properties (no Inbound references) */
  dg_store_value_t *values;
  size_t nvalues;
} dg_store_write_t;

/* ---- Aggregates ---------------------------------------------------------------- */
#define DG_STORE_AGG_MAP(XX)                                                                       \
  XX(SUM, "Sum")                                                                                   \
  XX(AVERAGE, "Average")                                                                           \
  XX(COUNT, "Count")                                                                               \
  XX(MIN, "Min")                                                                                   \
  XX(MAX, "Max")                                                                                   \
  XX(DISTINCT_COUNT, "DistinctCount")

typedef enum dg_store_agg_fn {
#define XX(name, text) DG_STORE_AGG_##name,
  DG_STORE_AGG_MAP(XX)
#undef XX
      DG_STORE_AGG__COUNT
} dg_store_agg_fn_t;

const char *dg_store_agg_name(dg_store_agg_fn_t fn);
/* Whether fn may aggregate prop (Sum and Average numbers, Min and Max
 * numbers and dates, DistinctCount any stored value); Count takes no
 * property and answers false. */
bool dg_store_agg_fits(dg_store_agg_fn_t fn, const dg_property_t *prop);

/* What a property may be used for, as the parsers decide it, so that a
 * model's description can say it: filters (filterable and stored), a
 * sortCondition (sortable and stored) and a group key (stored: every
 * property but an Inbound reference). */
bool dg_store_can_filter(const dg_property_t *prop);
bool dg_store_can_sort(const dg_property_t *prop);
bool dg_store_can_group(const dg_property_t *prop);

/* A joinFilter: the base row is joined to at most one entity of target,
 * whose id equals the base row's key (1-to-1 joins only), and the clause
 * counts the row only when that entity exists and the condition holds. */
typedef struct dg_store_join {
  const dg_model_t *target;
  const dg_property_t *reference; /* the Outbound reference named, or NULL (entity + on) */
  const dg_property_t *key;       /* base property holding target's id (NULL: the base id) */
  dg_store_op_t op;
  const dg_property_t *local;   /* condition.localProperty (NULL: the base id) */
  bool compare_property;        /* foreignProperty given, else value */
  const dg_property_t *foreign; /* of target (NULL with compare_property: its id) */
  dg_store_value_t value;       /* read as local's type; DG_STORE_NULL: a null test */
} dg_store_join_t;

typedef struct dg_store_aggregation {
  dg_store_agg_fn_t fn;
  const dg_property_t *prop;   /* of the base model; NULL for Count */
  const char *key;             /* result key: the alias (default Function_Property), camelCased */
  const dg_store_join_t *join; /* NULL: every matched record counts */
} dg_store_aggregation_t;

/* A group key: a base property, or with reference a property of the
 * related entities (Outbound: one; Inbound: each distinct value). */
typedef struct dg_store_group_key {
  const dg_property_t *reference;
  const dg_model_t *model; /* the model prop belongs to */
  const dg_property_t *prop;
  const char *name; /* in groupByProperties: "Status", "Customer.Region" */
  const char *key;  /* in groupKey: "status", "customer.Region" */
} dg_store_group_key_t;

typedef struct dg_store_aggregate {
  const dg_model_t *model;
  dg_store_filters_t filters;
  dg_store_aggregation_t *aggs;
  size_t naggs;
  dg_store_group_key_t *group_by; /* none: one totals row; never with a join */
  size_t ngroup_by;
  int64_t grouped_cap;            /* records a grouped aggregate may match */
  const dg_property_t *date_hint; /* a date the caller may filter on, for the cap's message */
} dg_store_aggregate_t;

/* ---- The parser ------------------------------------------------------------------ *
 * Everything is allocated in arena and refers into cat, which must outlive
 * the description (a tool call holds both until it ends). */
typedef struct dg_store_parse {
  const dg_catalog_t *cat;
  const dg_principal_t *principal;
  dg_arena_t *arena;
  dg_errctx_t *err;
  /* entityIds' items were checked as GUIDs already (by the tool's argument
   * schema, which names the item and the value it got): their form is not
   * checked again, only that each is a string of a GUID's length. */
  bool ids_checked;
} dg_store_parse_t;

/* query_entities: queryParameterGroups, sortCondition, paging, countOnly,
 * properties and expand of args (other keys are ignored) against model,
 * which the caller may read. */
int dg_store_parse_query(const dg_store_parse_t *ps, const dg_model_t *model, const json_t *args,
                         dg_store_query_t *out);
/* queryParameterGroups alone (also for aggregate_entities); groups may be
 * NULL (no filter). param is the argument's name in messages. */
int dg_store_parse_filters(const dg_store_parse_t *ps, const dg_model_t *model,
                           const json_t *groups, const char *param, dg_store_filters_t *out);
/* A properties array (NULL: every property the caller may see). */
int dg_store_parse_select(const dg_store_parse_t *ps, const dg_model_t *model,
                          const json_t *properties, const char *param, dg_store_select_t *out);
/* An expand array (NULL: none). */
int dg_store_parse_expand(const dg_store_parse_t *ps, const dg_model_t *model, const json_t *expand,
                          const char *param, dg_store_expand_t **out, size_t *nout);
/* get_entities_by_ids: entityIds, properties and expand. */
int dg_store_parse_fetch(const dg_store_parse_t *ps, const dg_model_t *model, const json_t *args,
                         dg_store_fetch_t *out);
/* lookup_by_keyword: searchValue, entityType, entitySubType and limit, over
 * the models the caller may read. */
int dg_store_parse_lookup(const dg_store_parse_t *ps, const json_t *args, dg_store_lookup_t *out);
/* aggregate_entities: aggregations, queryParameterGroups (as in
 * query_entities) and groupBy of args against model. Refuses a joinFilter
 * together with groupBy, aggregations over a related collection, and
 * functions on properties of the wrong type. grouped_cap comes from
 * ps->cat->server.max_grouped_aggregate_records. */
int dg_store_parse_aggregate(const dg_store_parse_t *ps, const dg_model_t *model,
                             const json_t *args, dg_store_aggregate_t *out);

/* ---- The store ---------------------------------------------------------------------- */
typedef struct dg_store dg_store_t;
typedef struct dg_store_req dg_store_req_t;

typedef struct dg_store_options {
  const char *path; /* database file; NULL: cat->server.database */
  /* PostgreSQL hot standbys for the read tools; NULL: cat->server.read_database. */
  const char *read_path;
  const char *sample_dir;  /* sample data; NULL: "<cat->dir>/data"; "": none */
  size_t max_result_bytes; /* result budget; 0: cat->server.max_result_bytes */
} dg_store_options_t;

/* store is NULL when status is not 0 (err says why). */
typedef void (*dg_store_open_cb)(dg_store_t *store, int status, const dg_errctx_t *err, void *data);

/* Opens the store on the threadpool: creates the database file (and its
 * directory) when missing, creates or migrates one table per Data Model of
 * cat (columns, indexes, keyword search), and loads the sample data when
 * the database is new and empty. A reference to cat is kept: it is the
 * schema the store serves. cb runs once on loop. Returns 0, or DG_ENOMEM
 * (cb is then never called). */
int dg_store_open(uv_loop_t *loop, dg_catalog_t *cat, const dg_store_options_t *options,
                  dg_store_open_cb cb, void *data);

/* Reads the sample data of cat (the .json files of "<cat->dir>/data") as a new store
 * would load it, and stores nothing: for --check-config. 0, or the first
 * problem in err ("<dir>/data/<file>: <path>: <message>"). Blocking. */
int dg_store_check_sample(const dg_catalog_t *cat, dg_errctx_t *err);

/* Closes the store: operations not started end with DG_ECANCELED, running
 * ones are interrupted; when all have ended, the connections are closed on
 * the threadpool, then cb (may be NULL) runs on the loop and the store is
 * freed. Operations started after this fail with DG_ECLOSED. */
void dg_store_close(dg_store_t *store, void (*cb)(void *data), void *data);

/* The driver's name ("sqlite"). */
const char *dg_store_driver(const dg_store_t *store);

/* Completion of an operation: status 0 with result (the callee owns it), or
 * a DG_E* code with err (message for the caller). DG_ECANCELED after
 * dg_store_cancel or dg_store_close. The result of a query, fetch or lookup
 * comes already written out as JSON text on the threadpool (a dg_json_raw
 * value, base.h: pass it on as a tool result, or read its text with
 * dg_json_raw_text); that of a write is an object. */
typedef void (*dg_store_cb)(int status, json_t *result, const dg_errctx_t *err, void *data);

/* Starts an operation. The description (and the catalog and principal it
 * refers to) must stay valid until cb runs. Returns 0 and sets *req (may be
 * NULL) to a handle valid until cb runs; or DG_ECLOSED, DG_ENOTSUP (the
 * description names a model or property the database does not have: the
 * configuration changed since start-up) or DG_ENOMEM, with cb never called
 * and err filled. */
int dg_store_query(dg_store_t *store, const dg_store_query_t *q, dg_store_cb cb, void *data,
                   dg_store_req_t **req, dg_errctx_t *err);
int dg_store_fetch(dg_store_t *store, const dg_store_fetch_t *f, dg_store_cb cb, void *data,
                   dg_store_req_t **req, dg_errctx_t *err);
int dg_store_lookup(dg_store_t *store, const dg_store_lookup_t *l, dg_store_cb cb, void *data,
                    dg_store_req_t **req, dg_errctx_t *err);
/* Counts the records the filters match; when grouping and they are more
 * than a->grouped_cap, fails with DG_E2BIG and a message giving the count
 * and saying how to narrow the request. */
int dg_store_aggregate(dg_store_t *store, const dg_store_aggregate_t *a, dg_store_cb cb, void *data,
                       dg_store_req_t **req, dg_errctx_t *err);
/* Writes with synchronous=FULL: when cb reports 0 the change is durable. */
int dg_store_write(dg_store_t *store, const dg_store_write_t *w, dg_store_cb cb, void *data,
                   dg_store_req_t **req, dg_errctx_t *err);

/* Records as values, for code that works on them rather than passing an
 * answer on: records is [{"id": "<id>", "values": {"<Property>": value}}],
 * keyed by the model's property names (the caller owns it; NULL when
 * status is not 0). No handle: these are not canceled. */
typedef void (*dg_store_records_cb)(int status, json_t *records, const dg_errctx_t *err,
                                    void *data);
/* The records of model with these ids (any case; those missing are left
 * out), with every stored property. ids are copied. */
int dg_store_read_records(dg_store_t *store, const dg_model_t *model, const char *const *ids,
                          size_t nids, dg_store_records_cb cb, void *data, dg_errctx_t *err);
/* The page q selects, as records; q must stay valid until cb runs. */
int dg_store_query_records(dg_store_t *store, const dg_store_query_t *q, dg_store_records_cb cb,
                           void *data, dg_errctx_t *err);

/* Asks an operation to stop: cb still runs once, with DG_ECANCELED unless
 * the operation had already finished. */
void dg_store_cancel(dg_store_req_t *req);

/* ---- Cancels between gateways ------------------------------------------------------ *
 * A fleet's gateways share the database, and a request may reach another
 * gateway than the one running the call it stops (a notifications/cancelled,
 * a DELETE of the session). The gateway that cannot stop it here publishes
 * the cancel; every gateway on the database (this one too) hears it and
 * stops the matching calls it runs.
 *
 * PostgreSQL: a NOTIFY on the channel "datagate_cancel", which every store
 * LISTENs on from its open; a cancel arrives one NOTIFY round trip later.
 * Notifications sent while a gateway's listener reconnects are missed by
 * it. SQLite: one process per database file, nothing to publish to
 * (DG_ENOTSUP).
 *
 * A cancel names a session by the SHA-256 of its id (64 lower-case hex
 * digits), never by the id itself, and a request by a short text key of
 * the caller's (printable ASCII; NULL: every call of the session). */
#define DG_STORE_CANCEL_SESSION_LEN 64
#define DG_STORE_CANCEL_REQUEST_MAX 200 /* bytes of a request key */

/* A cancel heard, on the loop thread; request NULL: the whole session. */
typedef void (*dg_store_cancel_cb)(const char *session, const char *request, void *data);

/* Sends a cancel to every gateway on the database, without waiting: a
 * failure to send is logged, not reported. 0, DG_EINVAL (a session that is
 * not 64 lower-case hex digits, a request key empty, too long or not
 * printable ASCII), DG_ENOTSUP (SQLite), DG_ECLOSED or DG_ENOMEM. */
int dg_store_publish_cancel(dg_store_t *store, const char *session, const char *request);
/* Who hears the cancels (cb NULL: nobody; they are dropped). */
void dg_store_on_cancel(dg_store_t *store, dg_store_cancel_cb cb, void *data);

/* ---- Form submissions ------------------------------------------------------------------ *
 * submit_data_entry_form's record and its save tree's outcome, kept in the
 * table "_dg_submissions" beside the entities:
 *
 * 1. dg_store_submit, before any upstream call: in one durable transaction
 *    (synchronous=FULL), returns the first outcome when the caller's
 *    idempotency key was seen before; else checks that the referenced
 *    entities exist, creates or modifies the record, adds, modifies and
 *    deletes the lines of its child lists that the call changes, and
 *    records the submission ("running" when a save tree follows, else
 *    "succeeded").
 * 2. dg_store_finish, when the tree has ended: its outcome ("succeeded",
 *    or "failed" with the failing action and the reason), the result to
 *    return on a retry, and the values the tree set on records (session
 *    values and response mappings), in one transaction.
 * 3. At open, submissions still "running" whose process is gone (stopped,
 *    killed, the machine restarted) are marked "failed" with the reason
 *    "interrupted", so that a stop never leaves a record looking busy.
 *
 * Result shapes:
 *   submit   {"submissionId", "id", "created": b, "status", "replayed": false}
 *            or, for a key seen before, {"submissionId", "id", "created",
 *            "status", "failedAction", "reason", "endpoint", "system",
 *            "replayed": true, "outcome": {...}|null}
 *   finish   {"submissionId", "status"}
 *   get      {"submission": S|null} with S {"submissionId", "dataModel",
 *            "entityId", "operation", "endpoint", "system", "status",
 *            "failedAction", "reason", "createdAt", "finishedAt"} */
#define DG_STORE_IDEMPOTENCY_KEY_MAX 128

typedef enum dg_store_submission_status {
  DG_STORE_SUBMISSION_RUNNING,
  DG_STORE_SUBMISSION_SUCCEEDED,
  DG_STORE_SUBMISSION_FAILED,
} dg_store_submission_status_t;

/* "running", "succeeded", "failed". */
const char *dg_store_submission_status_name(dg_store_submission_status_t status);

/* An entity that must exist for the submission to be written. */
typedef struct dg_store_ref_check {
  const dg_model_t *model;
  const char *id;    /* lower-case GUID */
  const char *param; /* the argument that names it, for the message */
} dg_store_ref_check_t;

/* A change to one line of a child list of the submitted record, written
 * in the same transaction after the record. A line modified or removed
 * must belong to the record (its Outbound reference `parent` holds the
 * record's id), else DG_ENOENT naming param; an added line's write sets
 * that reference itself. */
typedef struct dg_store_child_change {
  dg_store_write_t write;      /* DG_STORE_CREATE or DG_STORE_UPDATE (with remove: the line) */
  bool remove;                 /* the line is deleted */
  const dg_property_t *parent; /* of write.model: the reference to the submitted record */
  const char *param;           /* the argument that names the line, for the message */
} dg_store_child_change_t;

typedef struct dg_store_submit {
  const char *submission_id; /* lower-case GUID chosen by the caller */
  dg_store_write_t write;    /* DG_STORE_CREATE or DG_STORE_UPDATE */
  const dg_store_ref_check_t *refs;
  size_t nrefs;
  const dg_store_child_change_t *children; /* in order; may be NULL */
  size_t nchildren;
  const char *endpoint;        /* the save tree that follows, or NULL: none */
  const char *system;          /* the submitting client, or NULL */
  const char *principal;       /* who submits */
  const char *idempotency_key; /* NULL: none; unique per principal */
  /* What was asked (a digest of the arguments): a key reused for another
   * request is refused with DG_EEXIST instead of returning an unrelated
   * outcome. */
  const char *fingerprint;
} dg_store_submit_t;

typedef struct dg_store_finish {
  const char *submission_id;
  dg_store_submission_status_t status; /* SUCCEEDED or FAILED */
  const char *failed_action;           /* "title (json/path)", or NULL */
  const char *reason;                  /* why it failed, or NULL */
  const char *outcome;                 /* JSON text returned to a retry, or NULL */
  /* Values the save tree set (DG_STORE_UPDATE each; records deleted in
   * the meantime are skipped). */
  const dg_store_write_t *writes;
  size_t nwrites;
} dg_store_finish_t;

/* The latest submission of a record, or one by its id. */
typedef struct dg_store_submission_get {
  const char *submission_id; /* or NULL, and then: */
  const dg_model_t *model;
  const char *entity_id;
} dg_store_submission_get_t;

/* As dg_store_query. dg_store_submit fails with DG_ENOENT (param: the
 * check's param, "id" for an unknown record to modify, or a child
 * change's param for a line that is not one of the record's) or DG_EEXIST
 * (param "idempotencyKey"), and writes nothing then. */
int dg_store_submit(dg_store_t *store, const dg_store_submit_t *s, dg_store_cb cb, void *data,
                    dg_store_req_t **req, dg_errctx_t *err);
int dg_store_finish(dg_store_t *store, const dg_store_finish_t *f, dg_store_cb cb, void *data,
                    dg_store_req_t **req, dg_errctx_t *err);
int dg_store_submission(dg_store_t *store, const dg_store_submission_get_t *g, dg_store_cb cb,
                        void *data, dg_store_req_t **req, dg_errctx_t *err);

#endif
