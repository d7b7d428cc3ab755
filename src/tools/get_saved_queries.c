/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* get_saved_queries: the Saved Queries (Live Data Providers) the caller may
 * use, each with its connector, Data Model and DeclaredInputs. */
#include "datagate/tools.h"
#include "tools/internal.h"

static const char input_schema[] = "{\"type\":\"object\",\"properties\":{},"
                                   "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"required\":[\"savedQueries\"],\"properties\":{"
    "\"savedQueries\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"savedQueryId\",\"name\",\"description\",\"connector\",\"dataModel\","
    "\"DeclaredInputs\"],"
    "\"properties\":{" DG__TOOLS_SAVED_QUERY_ENTRY_SCHEMA "}}}}}";

static json_t *build(const dg_catalog_t *cat, const dg_model_t *model, const dg_principal_t *p) {
  return dg__tools_saved_queries_json(cat, p);
}

static void run(dg_mcp_tool_call_t *call) {
  dg__tools_reply_answer(call, DG__TOOLS_ANSWER_SAVED_QUERIES, NULL, build,
                         "The Saved Queries could not be listed");
}

const dg_tool_t dg_tool_get_saved_queries = {
    .name = "get_saved_queries",
    .title = "List Saved Queries",
    .description =
        "Returns the Saved Queries (Live Data Providers) you may run: queries that fetch live "
        "records from an external system through a configured connector and return them as "
        "entities of a Data Model. Each has a savedQueryId (a GUID), name, description, connector "
        "(connectorId, name, description), dataModel (dataModelId, name, entityType, "
        "entitySubType) and DeclaredInputs: the inputs it takes, each with name, type (String, "
        "Int, Long, Double, Decimal, Boolean, Date, DateTime or Guid), required, default (null "
        "when none) and description. Call this first for Saved Queries; the dataModel's "
        "properties are described by get_data_model_properties. Next, call get_saved_query_details "
        "for the fields a query "
        "returns, then execute_saved_query with the savedQueryId and inputs.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    DG__TOOLS_READS_GATEWAY,
    .run = run,
};
