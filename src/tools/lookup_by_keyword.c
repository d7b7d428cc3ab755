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

static void run(dg_tool_call_t *call) {
  dg_errctx_t err;
  dg_store_parse_t ps;
  dg_errctx_clear(&err);
  dg__tools_parse_ctx(call, &err, &ps);
  dg_store_lookup_t *l = dg_arena_calloc(ps.arena, 1, sizeof(*l));
  if (l == NULL || dg_store_parse_lookup(&ps, dg_tool_call_args(call), l) != 0) {
    dg_tool_call_fail(call, &err);
    return;
  }
  l->max_bytes = dg__tools_budget(call);
  dg_store_t *store = dg__tools_store(call);
  if (store != NULL)
    dg__tools_run_store(call, store, DG__TOOLS_LOOKUP, l);
}

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
    .read_only = true,
    .destructive = false,
    .idempotent = true,
    .open_world = false,
    .run = run,
};
