/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* get_data_models: the Data Models the caller may read. The first tool an
 * assistant calls: it gives the dataModelId, entityType and entitySubType
 * that the other tools take. */
#include "datagate/tools.h"
#include "tools/internal.h"

static const char input_schema[] = "{\"type\":\"object\",\"properties\":{},"
                                   "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"required\":[\"dataModels\"],\"properties\":{"
    "\"dataModels\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"dataModelId\",\"name\",\"description\",\"entityType\",\"entitySubType\"],"
    "\"properties\":{"
    "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"name\":{\"type\":\"string\"},"
    "\"description\":{\"type\":\"string\"},"
    "\"entityType\":{\"type\":\"string\"},"
    "\"entitySubType\":{\"type\":[\"string\",\"null\"]}}}}}}";

static json_t *build(const dg_catalog_t *cat, const dg_model_t *model, const dg_principal_t *p) {
  return dg__tools_data_models_json(cat, p);
}

static void run(dg_mcp_tool_call_t *call) {
  dg__tools_reply_answer(call, DG__TOOLS_ANSWER_DATA_MODELS, NULL, build,
                         "The Data Models could not be listed");
}

const dg_tool_t dg_tool_get_data_models = {
    .name = "get_data_models",
    .title = "List Data Models",
    .description =
        "Returns the configured Data Models (the common model of entities and properties through "
        "which data is exposed) that you may read, each with its dataModelId (a GUID), name, "
        "description, entityType and entitySubType. Call this first: most other tools need a "
        "dataModelId, entityType or entitySubType from it. Next, call get_data_model_properties "
        "with a dataModelId to learn the model's properties.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    DG__TOOLS_READS_GATEWAY,
    .run = run,
};
