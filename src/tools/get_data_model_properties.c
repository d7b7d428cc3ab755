/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* get_data_model_properties: the properties of one Data Model that the
 * caller may see, with the seed's reference objects. */
#include "datagate/tools.h"
#include "tools/internal.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"required\":[\"dataModelId\"],\"properties\":{"
    "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\","
    "\"description\":\"Identifier of a Data Model, from get_data_models\"}},"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\","
    "\"required\":[\"dataModelId\",\"name\",\"entityType\",\"entitySubType\",\"properties\"],"
    "\"properties\":{"
    "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"name\":{\"type\":\"string\"},"
    "\"entityType\":{\"type\":\"string\"},"
    "\"entitySubType\":{\"type\":[\"string\",\"null\"]},"
    "\"properties\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"propertyName\",\"dataType\",\"description\",\"required\",\"readOnly\","
    "\"filterable\",\"sortable\",\"groupable\",\"aggregatable\",\"aggregateFunctions\","
    "\"keywordSearchable\"],"
    "\"properties\":{"
    "\"propertyName\":{\"type\":\"string\"},"
    "\"dataType\":{\"type\":\"string\",\"enum\":[\"String\",\"Int\",\"Long\",\"Double\","
    "\"Decimal\",\"Boolean\",\"Date\",\"DateTime\",\"Guid\",\"Reference\"]},"
    "\"description\":{\"type\":\"string\"},"
    "\"required\":{\"type\":\"boolean\"},"
    "\"readOnly\":{\"type\":\"boolean\"},"
    "\"filterable\":{\"type\":\"boolean\"},"
    "\"sortable\":{\"type\":\"boolean\"},"
    "\"groupable\":{\"type\":\"boolean\"},"
    "\"aggregatable\":{\"type\":\"boolean\"},"
    "\"aggregateFunctions\":{\"type\":\"array\",\"items\":{\"type\":\"string\","
    "\"enum\":[\"Sum\",\"Average\",\"Min\",\"Max\",\"DistinctCount\"]}},"
    "\"keywordSearchable\":{\"type\":\"boolean\"},"
    "\"choices\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"reference\":{\"type\":\"object\","
    "\"required\":[\"direction\",\"cardinality\",\"targetEntityType\",\"targetEntitySubType\","
    "\"targetDataModelId\",\"expandable\",\"derived\"],"
    "\"properties\":{"
    "\"direction\":{\"type\":\"string\",\"enum\":[\"Outbound\",\"Inbound\"]},"
    "\"cardinality\":{\"type\":\"string\",\"enum\":[\"OneToOne\",\"OneToMany\"]},"
    "\"targetEntityType\":{\"type\":[\"string\",\"null\"]},"
    "\"targetEntitySubType\":{\"type\":[\"string\",\"null\"]},"
    "\"targetDataModelId\":{\"type\":[\"string\",\"null\"]},"
    "\"expandable\":{\"type\":\"boolean\"},"
    "\"derived\":{\"type\":\"boolean\"}}}}}}}}";

static json_t *build(const dg_catalog_t *cat, const dg_model_t *model, const dg_principal_t *p) {
  return dg__tools_model_properties_json(model, p);
}

static void run(dg_mcp_tool_call_t *call) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  const dg_model_t *model = dg_tools_model_arg(call, "dataModelId", &err);
  if (model == NULL) {
    dg_mcp_tool_call_fail(call, &err);
    return;
  }
  dg__tools_reply_answer(call, DG__TOOLS_ANSWER_MODEL_PROPERTIES, model, build,
                         "The properties could not be listed");
}

const dg_tool_t dg_tool_get_data_model_properties = {
    .name = "get_data_model_properties",
    .title = "Describe a Data Model's properties",
    .description =
        "Returns the properties of a Data Model that you may see: propertyName, dataType (String, "
        "Int, Long, Double, Decimal, Boolean, Date, DateTime, Guid or Reference), description, "
        "required, readOnly, what the property can be used for (filterable in "
        "queryParameterGroups, "
        "sortable in sortCondition, groupable in groupBy, aggregatable with the aggregateFunctions "
        "listed, keywordSearchable by lookup_by_keyword), choices for enumerated values, and for a "
        "Reference (a tie to another "
        "entity) a reference object with direction (Outbound: this entity holds the foreign key; "
        "Inbound: a derived collection of entities pointing at this one), cardinality, "
        "targetEntityType, targetEntitySubType, targetDataModelId (null when the target has no "
        "Data Model) and expandable (false when you cannot read the target). A Reference "
        "property's propertyName is what you pass to expand, to a filter's reference or to a "
        "group key's reference. Property names are accepted in any case, so the camelCased keys "
        "of entity results work too. Call get_data_models first to get the dataModelId.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    DG__TOOLS_READS_GATEWAY,
    .run = run,
};
