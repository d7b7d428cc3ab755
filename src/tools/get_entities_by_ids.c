/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* get_entities_by_ids: up to 50 entities of one Data Model by id, with
 * property selection and expansion; ids that do not exist are left out. */
#include "datagate/tools.h"
#include "tools/internal.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"required\":[\"dataModelId\",\"entityIds\"],"
    "\"additionalProperties\":false,\"properties\":{"
    "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\","
    "\"description\":\"Identifier of a Data Model, from get_data_models\"},"
    "\"entityIds\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":50,"
    "\"items\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"description\":\"1 to 50 entity ids; one id is an array of one\"},"
    "\"properties\":" DG__TOOLS_PROPERTIES_SCHEMA ","
    "\"expand\":" DG__TOOLS_EXPAND_SCHEMA "}}";

static const char output_schema[] =
    "{\"type\":\"object\",\"required\":[\"entities\"],\"properties\":{"
    "\"entities\":{\"type\":\"array\",\"items\":" DG__TOOLS_ENTITY_SCHEMA "},"
    "\"truncated\":{\"type\":\"boolean\"},"
    "\"omittedIds\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}";

const dg_tool_t dg_tool_get_entities_by_ids = {
    .name = "get_entities_by_ids",
    .title = "Get entities by id",
    .description =
        "Fetches entities of one Data Model by id: 1 to 50 ids (one id is an array of one), "
        "returned in the order given. Ids that do not exist are silently left out of the "
        "results. Call get_data_models first for the dataModelId; the ids come from "
        "query_entities, lookup_by_keyword or a Reference property's value. properties chooses "
        "the fields returned (id always); expand loads related entities inline under "
        "properties.expanded.<reference>, exactly as in query_entities. An answer over the size "
        "limit keeps the entities that fit whole and lists the others in omittedIds (truncated: "
        "true): ask for those in another call.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    DG__TOOLS_READS_GATEWAY,
    .run = dg__tools_run_fetch,
};
