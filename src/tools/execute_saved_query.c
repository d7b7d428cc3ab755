/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* execute_saved_query: runs a Saved Query against its connector. The
 * stages, in order: find the query the caller may use, check the inputs
 * against DeclaredInputs and the properties selection, build the request,
 * call the upstream API, map the response onto entities of the Data Model
 * (on a worker thread when it is large), and drop what the caller may not
 * see. Upstream failures end the call with a result that names the
 * connector, the call and why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/save.h"
#include "datagate/tools.h"
#include "tools/internal.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"required\":[\"savedQueryId\"],\"properties\":{"
    "\"savedQueryId\":{\"type\":\"string\",\"format\":\"uuid\","
    "\"description\":\"Identifier of a Saved Query, from get_saved_queries\"},"
    "\"inputs\":{\"type\":\"array\",\"maxItems\":64,\"description\":\"Input values, each "
    "{key, value}; key is an input name from DeclaredInputs\",\"items\":{\"type\":\"object\","
    "\"required\":[\"key\",\"value\"],\"properties\":{"
    "\"key\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128},"
    "\"value\":{\"type\":\"string\",\"maxLength\":4096}},\"additionalProperties\":false}},"
    "\"properties\":{\"type\":\"array\",\"maxItems\":200,\"description\":\"Only these fields "
    "plus id are returned; omit for all\",\"items\":{\"type\":\"string\",\"minLength\":1,"
    "\"maxLength\":128}}},"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"required\":[\"savedQueryId\",\"name\",\"dataModelId\",\"entities\","
    "\"count\",\"truncated\"],\"properties\":{"
    "\"savedQueryId\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"name\":{\"type\":\"string\"},"
    "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"entities\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"id\",\"properties\"],\"properties\":{"
    "\"id\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"properties\":{\"type\":\"object\"}}}},"
    "\"count\":{\"type\":\"integer\",\"minimum\":0},"
    "\"truncated\":{\"type\":\"boolean\"},"
    "\"warnings\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"provenance\":{\"type\":\"object\",\"description\":\"Where the records came from: "
    "{kind, connector, request, savedQueryId, untrusted}\"}}}";

/* One execution, in the call's arena. */
typedef struct exec {
  dg__tools_saved_run_t run;
  const bool *selected;
  size_t max_bytes;
  size_t result_limit; /* for the worker thread: dg_mcp_tool_call_result_limit */
} exec_t;

/* ---- Mapping -------------------------------------------------------------- */

/* The result written out once, here (on a worker thread for a large
 * response): the reply then copies this text instead of walking the values
 * again. A result over the limit stays as it is, for the MCP layer to
 * refuse. */
static json_t *written(json_t *result, size_t limit) {
  if (result == NULL)
    return NULL;
  dg_buf_t text;
  dg_buf_init(&text, limit);
  json_t *raw = dg_json_write(result, &text) == 0
                    ? dg_json_raw(text.data != NULL ? text.data : "", text.len)
                    : NULL;
  dg_buf_free(&text);
  if (raw == NULL)
    return result;
  json_decref(result);
  return raw;
}

/* Where the records came from: the connector and the call that answered
 * (its URL without the query); the records' own ids are in entities.
 * Touches only x's immutable strings, so it may run on a worker thread. */
static json_t *with_provenance(exec_t *x, json_t *result) {
  if (result != NULL)
    json_object_set_new(result, "provenance",
                        json_pack("{s:s,s:s,s:s,s:s,s:b}", "kind", "externalApi", "connector",
                                  x->run.q->connector->name, "request", x->run.where,
                                  "savedQueryId", x->run.q->id, "untrusted", 1));
  return result;
}

/* Maps the answer onto entities (on a worker thread when large). */
static json_t *map(dg__tools_saved_run_t *r, const char *body, size_t len, dg_errctx_t *err) {
  exec_t *x = r->user;
  return written(
      with_provenance(x, dg_save_query_map(r->q, x->selected, body, len, x->max_bytes, err)),
      x->result_limit);
}

/* ---- Stages ------------------------------------------------------------------ */

/* Checks the arguments; on success x has the query and the selection. */
static int check_args(exec_t *x, const char ***values, dg_errctx_t *err) {
  json_t *args = dg_mcp_tool_call_args(x->run.call);
  const dg_principal_t *p = dg_mcp_tool_call_principal(x->run.call);
  dg_arena_t *arena = dg_mcp_tool_call_arena(x->run.call);
  const char *id = json_string_value(json_object_get(args, "savedQueryId"));
  x->run.q =
      dg__tools_find_saved_query(dg_mcp_tool_call_catalog(x->run.call), p, "savedQueryId", id, err);
  if (x->run.q == NULL)
    return err->code;
  int rc = dg__tools_saved_inputs(x->run.q, json_object_get(args, "inputs"), arena, values, err);
  bool *selected = NULL;
  if (rc == 0)
    rc = dg__tools_saved_selection(x->run.q, p, json_object_get(args, "properties"), arena,
                                   &selected, err);
  x->selected = selected;
  return rc;
}

/* Leaves room in the result for the envelope around the entities. */
static size_t entity_budget(const dg_catalog_t *cat) {
  size_t max = cat->server.max_result_bytes;
  return max > 8192 ? max - max / 10 - 4096 : max / 2;
}

static int start(dg_mcp_tool_call_t *call, void *state, dg_errctx_t *err) {
  exec_t *x = state;
  x->run.call = call;
  const char **values = NULL;
  int rc = check_args(x, &values, err);
  if (rc != 0)
    return rc;
  x->max_bytes = entity_budget(dg_mcp_tool_call_catalog(x->run.call));
  x->result_limit = dg_mcp_tool_call_result_limit(x->run.call);
  x->run.answer = map;
  x->run.user = x;
  x->run.local_failure = "failed";
  return dg__tools_saved_run_start(&x->run, values, err);
}

static void run(dg_mcp_tool_call_t *call) {
  dg__tools_start(call, sizeof(exec_t), "The Saved Query could not be run", start);
}

const dg_tool_t dg_tool_execute_saved_query = {
    .name = "execute_saved_query",
    .title = "Run a Saved Query",
    .description =
        "Runs a Saved Query (Live Data Provider) against its external system and returns the "
        "live records as entities of its Data Model: {savedQueryId, name, dataModelId, entities: "
        "[{id, properties}], count, truncated, warnings?}. Give inputs as an array of {key, "
        "value} strings, key being an input name from DeclaredInputs; required inputs must be "
        "given, others take their default. Values must suit the input type (Int: 25, Decimal: "
        "1450.25, Boolean: true, Date: 2025-03-31, Guid: a GUID). properties limits the "
        "returned fields (plus id); property keys in results have their first letter "
        "lowercased. truncated is true when more records existed than are returned. If the "
        "external system fails, the error names the connector, the call and why. Call "
        "get_saved_queries and get_saved_query_details first.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    DG__TOOLS_READS_UPSTREAM,
    .run = run,
};
