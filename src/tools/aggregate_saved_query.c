/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* aggregate_saved_query: runs a Saved Query against its connector and
 * aggregates its live answer, with the response shape of
 * aggregate_entities. The stages, in order: find the query the caller may
 * use, check the inputs, the aggregations and the group keys (fields the
 * query returns and the caller may see), build the request, call the
 * upstream API, then map and aggregate every item of the answer (on a
 * worker thread when it is large). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/save.h"
#include "datagate/tools.h"
#include "tools/internal.h"

/* The arguments. The accepted schema leaves the clause and key objects
 * open (OPEN empty), so that a joinFilter or reference copied from
 * aggregate_entities gets a message saying why it is refused. */
#define INPUT_SCHEMA(OPEN)                                                                         \
  "{\"type\":\"object\",\"required\":[\"savedQueryId\",\"aggregations\"],"                         \
  "\"additionalProperties\":false,\"properties\":{"                                                \
  "\"savedQueryId\":{\"type\":\"string\",\"format\":\"uuid\","                                     \
  "\"description\":\"Identifier of a Saved Query, from get_saved_queries\"},"                      \
  "\"inputs\":{\"type\":\"array\",\"maxItems\":64,\"description\":\"Input values, each "           \
  "{key, value}; key is an input name from DeclaredInputs\",\"items\":{\"type\":\"object\","       \
  "\"required\":[\"key\",\"value\"],\"properties\":{"                                              \
  "\"key\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128},"                               \
  "\"value\":{\"type\":\"string\",\"maxLength\":4096}},\"additionalProperties\":false}},"          \
  "\"aggregations\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":32,"                           \
  "\"description\":\"One or more aggregation clauses, answered together in each row\","            \
  "\"items\":{\"type\":\"object\",\"required\":[\"function\"]," OPEN "\"properties\":{"            \
  "\"function\":{\"type\":\"string\",\"enum\":[\"Sum\",\"Average\",\"Count\",\"Min\",\"Max\","     \
  "\"DistinctCount\"],\"description\":\"Count counts the records and takes no propertyName; "      \
  "DistinctCount counts distinct non-null values\"},"                                              \
  "\"propertyName\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"                       \
  "\"description\":\"A field the Saved Query returns (get_saved_query_details); required "         \
  "except for Count. Sum and Average need Int, Long, Double or Decimal; Min and Max also take "    \
  "Date and DateTime\"},"                                                                          \
  "\"alias\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,"                               \
  "\"description\":\"Result key; default {function}_{propertyName} (sum_Amount, count); "          \
  "camelCased at the first letter\"}}}},"                                                          \
  "\"groupBy\":{\"type\":\"array\",\"maxItems\":8,\"description\":\"Group keys, fields the "       \
  "Saved Query returns; omit for a single totals row\",\"items\":{\"type\":\"object\","            \
  "\"required\":[\"propertyName\"]," OPEN "\"properties\":{"                                       \
  "\"propertyName\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128}}}}}}"

static const char input_schema[] = INPUT_SCHEMA("\"additionalProperties\":false,");
static const char accepted_schema[] = INPUT_SCHEMA("");

static const char output_schema[] =
    "{\"type\":\"object\",\"required\":[\"matchedCount\",\"groupByProperties\",\"rows\"],"
    "\"properties\":{"
    "\"matchedCount\":{\"type\":\"integer\",\"description\":\"Records in the Saved Query's "
    "answer\"},"
    "\"groupByProperties\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"rows\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"groupKey\",\"aggregates\"],\"properties\":{"
    "\"groupKey\":{\"type\":\"object\",\"description\":\"Group values by key; empty when not "
    "grouping\"},"
    "\"aggregates\":{\"type\":\"object\",\"description\":\"Each alias with its value\"}}}},"
    "\"warnings\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}";

/* One aggregation, in the call's arena. */
typedef struct agg {
  dg__tools_saved_run_t run;
  dg_save_agg_t a;
} agg_t;

/* Aggregates every item of the answer (on a worker thread when large). */
static json_t *aggregate(dg__tools_saved_run_t *r, const char *body, size_t len, dg_errctx_t *err) {
  agg_t *x = r->user;
  return dg_save_agg_run(&x->a, body, len, err);
}

/* ---- Stages ------------------------------------------------------------------------ */

static size_t grouped_cap(const dg_catalog_t *cat) {
  uint64_t cap = cat->server.max_grouped_aggregate_records;
  return cap > 0 && cap <= SIZE_MAX ? (size_t)cap : DG_STORE_GROUPED_CAP_DEFAULT;
}

/* Checks the arguments; on success x->a is the checked request. */
static int check_args(agg_t *x, const char ***values, dg_errctx_t *err) {
  json_t *args = dg_mcp_tool_call_args(x->run.call);
  const dg_principal_t *p = dg_mcp_tool_call_principal(x->run.call);
  const dg_catalog_t *cat = dg_mcp_tool_call_catalog(x->run.call);
  dg_arena_t *arena = dg_mcp_tool_call_arena(x->run.call);
  const char *id = json_string_value(json_object_get(args, "savedQueryId"));
  const dg_saved_query_t *q = dg__tools_find_saved_query(cat, p, "savedQueryId", id, err);
  if (q == NULL)
    return err->code;
  int rc = dg__tools_saved_inputs(q, json_object_get(args, "inputs"), arena, values, err);
  if (rc == 0)
    rc = dg_save_agg_parse(q, p, args, grouped_cap(cat), arena, &x->a, err);
  return rc;
}

static int start(dg_mcp_tool_call_t *call, void *state, dg_errctx_t *err) {
  agg_t *x = state;
  x->run.call = call;
  const char **values = NULL;
  int rc = check_args(x, &values, err);
  if (rc != 0)
    return rc;
  x->run.q = x->a.q;
  x->run.answer = aggregate;
  x->run.user = x;
  x->run.local_failure = "could not be aggregated";
  x->run.too_big_is_local = true;
  return dg__tools_saved_run_start(&x->run, values, err);
}

static void run(dg_mcp_tool_call_t *call) {
  dg__tools_start(call, sizeof(agg_t), "The Saved Query could not be aggregated", start);
}

const dg_tool_t dg_tool_aggregate_saved_query = {
    .name = "aggregate_saved_query",
    .title = "Aggregate a Saved Query's live answer",
    .description =
        "Runs a Saved Query (Live Data Provider) against its external system and aggregates "
        "every record of its live answer, as one totals row or grouped. Call get_saved_queries "
        "and get_saved_query_details first for the savedQueryId, its DeclaredInputs and the "
        "fields it returns. inputs as in execute_saved_query: [{key, value}] strings. "
        "aggregations: clauses {function, propertyName, alias}; functions Sum, Average (numeric "
        "Int, Long, Double, Decimal fields), Min, Max (numeric, Date and DateTime fields), Count "
        "(no propertyName) and DistinctCount (distinct non-null values, strings ignoring case). "
        "Result keys default to {function}_{propertyName} camelCased at the first letter "
        "(sum_Amount, count). groupBy: [{propertyName}], fields the Saved Query returns; records "
        "without a value fall in a null group; rows come in key order, nulls first. No "
        "reference keys and no joinFilter: the answer has no related entities. Result: "
        "{matchedCount, groupByProperties, rows: [{groupKey, aggregates}], warnings?}, as "
        "aggregate_entities answers. If the external system fails, the error names the "
        "connector, the call and why.",
    .input_schema = input_schema,
    .accepted_schema = accepted_schema,
    .output_schema = output_schema,
    DG__TOOLS_READS_UPSTREAM,
    .run = run,
};
