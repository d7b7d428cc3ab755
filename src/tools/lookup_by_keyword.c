/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* lookup_by_keyword: keyword search over the keyword properties of the
 * Data Models the caller may read, best matches first, each result naming
 * its model. Used to resolve the entity a user means into its id. */
#include "datagate/tools.h"
#include "tools/internal.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"required\":[\"searchValue\"],\"additionalProperties\":false,"
    "\"properties\":{"
    "\"searchValue\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":256,"
    "\"description\":\"Keyword: a name, number or code, or the start of one; every word must "
    "match\"},"
    "\"entityType\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"
    "\"description\":\"Only entities of this type, from get_data_models or "
    "get_data_model_properties\"},"
    "\"entitySubType\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"
    "\"description\":\"Only entities of this sub-type, from the same source\"},"
    "\"limit\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"default\":10},"
    "\"maxResultBytes\":" DG__TOOLS_BUDGET_SCHEMA "}}";

static const char output_schema[] =
    "{\"type\":\"object\",\"required\":[\"entities\"],\"properties\":{"
    "\"entities\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"id\",\"dataModelId\",\"dataModelName\",\"entityType\",\"entitySubType\","
    "\"properties\"],\"properties\":{"
    "\"id\":{\"type\":\"string\"},"
    "\"dataModelId\":{\"type\":\"string\"},"
    "\"dataModelName\":{\"type\":\"string\"},"
    "\"entityType\":{\"type\":\"string\"},"
    "\"entitySubType\":{\"type\":[\"string\",\"null\"]},"
    "\"properties\":{\"type\":\"object\"}}}},"
    "\"truncated\":{\"type\":\"boolean\"},"
    "\"omittedCount\":{\"type\":\"integer\"},"
    "\"omitted\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"properties\":{"
    "\"id\":{\"type\":\"string\"},\"dataModelId\":{\"type\":\"string\"}}}}}}";

const dg_tool_t dg_tool_lookup_by_keyword = {
    .name = "lookup_by_keyword",
    .title = "Look up entities by keyword",
    .description =
        "Searches for entities by keyword in the keyword properties (names, numbers, codes) of "
        "the Data Models you may read, best matches first. Each result has the entity's id, "
        "the model it belongs to (dataModelId, dataModelName, entityType, entitySubType) and its "
        "properties. Use it to resolve a foreign key: the id of the entity the user means is the "
        "value to compare a Reference property with in query_entities. If several entities are "
        "returned, ask the user to choose one. Every word of searchValue must match the start "
        "of a word, ignoring case. Narrow the search with entityType and entitySubType; call "
        "get_data_models first to learn them. limit: 1 to 100, default 10. An answer over the size "
        "limit (or the smaller maxResultBytes you give) keeps the entities that fit whole and "
        "says truncated: true and the omitted ones' id and dataModelId, for get_entities_by_ids.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    DG__TOOLS_READS_GATEWAY,
    .run = dg__tools_run_lookup,
};
