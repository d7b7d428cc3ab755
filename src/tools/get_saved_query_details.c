/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* get_saved_query_details: one Saved Query's metadata with the fields it
 * returns (name, type, description), filtered by the caller's
 * permissions. */
#include "datagate/tools.h"
#include "tools/internal.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"required\":[\"savedQueryId\"],\"properties\":{"
    "\"savedQueryId\":{\"type\":\"string\",\"format\":\"uuid\","
    "\"description\":\"Identifier of a Saved Query, from get_saved_queries\"}},"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"required\":[\"savedQueryId\",\"name\",\"description\",\"connector\","
    "\"dataModel\",\"DeclaredInputs\",\"fields\",\"requestType\",\"maxResults\"],"
    "\"properties\":{" DG__TOOLS_SAVED_QUERY_ENTRY_SCHEMA ","
    "\"fields\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"name\",\"type\",\"description\"],\"properties\":{"
    "\"name\":{\"type\":\"string\"},"
    "\"type\":{\"type\":\"string\",\"enum\":[\"String\",\"Int\",\"Long\",\"Double\",\"Decimal\","
    "\"Boolean\",\"Date\",\"DateTime\",\"Guid\"]},"
    "\"description\":{\"type\":\"string\"}}}},"
    "\"requestType\":{\"type\":\"string\",\"enum\":[\"REST\",\"GraphQL\"]},"
    "\"maxResults\":{\"type\":\"integer\",\"minimum\":1}}}";

static void run(dg_mcp_tool_call_t *call) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  const char *id = json_string_value(json_object_get(dg_mcp_tool_call_args(call), "savedQueryId"));
  const dg_principal_t *p = dg_mcp_tool_call_principal(call);
  const dg_saved_query_t *q =
      dg__tools_find_saved_query(dg_mcp_tool_call_catalog(call), p, "savedQueryId", id, &err);
  if (q == NULL) {
    dg_mcp_tool_call_fail(call, &err);
    return;
  }
  dg__tools_reply(call, dg__tools_saved_query_details_json(q, p),
                  "The Saved Query could not be described");
}

const dg_tool_t dg_tool_get_saved_query_details = {
    .name = "get_saved_query_details",
    .title = "Describe a Saved Query",
    .description =
        "Returns a Saved Query's metadata: savedQueryId, name, description, connector, dataModel, "
        "DeclaredInputs (name, type, required, default, description), requestType (REST or "
        "GraphQL), maxResults (records returned at most) and fields: the properties of the Data "
        "Model it returns, each with name, type and description, limited to those you may see. "
        "Entity results carry these fields under properties with the first letter lowercased. "
        "Call get_saved_queries first for the savedQueryId; then execute_saved_query.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    DG__TOOLS_READS_GATEWAY,
    .run = run,
};
