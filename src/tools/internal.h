/* tools internals: the result-building logic of each tool, kept apart from
 * the dg_tool_t run functions so that unit tests can call it without the
 * MCP layer. Never included from outside src/tools. */
#ifndef DATAGATE_TOOLS_INTERNAL_H
#define DATAGATE_TOOLS_INTERNAL_H

#include <jansson.h>

#include "datagate/auth.h"
#include "datagate/catalog.h"
#include "datagate/mcp.h"
#include "datagate/store.h"

/* The model with the given id that p may read, or NULL with err saying
 * "Invalid argument '<param>': no Data Model with id '<given>'; ...". A
 * model p may not read is reported exactly like an unknown one. */
const dg_model_t *dg__tools_find_model(const dg_catalog_t *cat, const dg_principal_t *p,
                                       const char *param, const char *given, dg_errctx_t *err);

/* get_data_models: {"dataModels": [...]} with the models p may read.
 * NULL when out of memory. */
json_t *dg__tools_data_models_json(const dg_catalog_t *cat, const dg_principal_t *p);

/* get_data_model_properties: the model and the properties p may see.
 * NULL when out of memory. */
json_t *dg__tools_model_properties_json(const dg_model_t *model, const dg_principal_t *p);

/* The seed's reference object of a Reference property, as p sees it
 * (expandable false when p cannot read the target). */
json_t *dg__tools_reference_json(const dg_reference_t *ref, const dg_principal_t *p);

/* ---- Entity tools (entities.c) ------------------------------------------------ */
typedef enum dg__tools_store_op {
  DG__TOOLS_QUERY,
  DG__TOOLS_FETCH,
  DG__TOOLS_LOOKUP,
  DG__TOOLS_AGGREGATE,
} dg__tools_store_op_t;

/* JSON Schema fragments the entity tools share. */
#define DG__TOOLS_PROPERTIES_SCHEMA                                                                \
  "{\"type\":\"array\",\"maxItems\":256,\"items\":{\"type\":\"string\",\"minLength\":1,"           \
  "\"maxLength\":128},\"description\":\"Only these properties (plus id) are returned; omit for "   \
  "all. Names from get_data_model_properties, in any case.\"}"

#define DG__TOOLS_EXPAND_SCHEMA                                                                    \
  "{\"type\":\"array\",\"maxItems\":64,\"description\":\"Related entities to load inline, under "  \
  "properties.expanded.<reference>: an object or null for an Outbound reference, an array (at "    \
  "most 100, else properties.expandedTruncated names the reference) for an Inbound one. "          \
  "Shallow: expanded entities are not expanded.\",\"items\":{\"type\":\"object\","                 \
  "\"required\":[\"reference\"],\"additionalProperties\":false,\"properties\":{"                   \
  "\"reference\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":"          \
  "\"Name of a property whose dataType is Reference\"},"                                           \
  "\"properties\":" DG__TOOLS_PROPERTIES_SCHEMA "}}}"

/* queryParameterGroups of query_entities and aggregate_entities. */
#define DG__TOOLS_FILTER_GROUPS_SCHEMA                                                             \
  "{\"type\":\"array\",\"maxItems\":20,"                                                           \
  "\"description\":\"Filter groups, combined with And. Inside a group the parameters combine "     \
  "with the group's andOrOperator.\","                                                             \
  "\"items\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"                 \
  "\"andOrOperator\":{\"type\":\"string\",\"enum\":[\"And\",\"Or\"],\"default\":\"And\"},"         \
  "\"parameters\":{\"type\":\"array\",\"maxItems\":50,\"items\":{\"type\":\"object\","             \
  "\"required\":[\"operator\",\"propertyName\"],\"additionalProperties\":false,\"properties\":{"   \
  "\"operator\":{\"type\":\"string\",\"enum\":[\"EqualTo\",\"NotEqualTo\",\"GreaterThan\","        \
  "\"GreaterThanEqualTo\",\"LessThan\",\"LessThanEqualTo\",\"Contains\",\"StartsWith\","           \
  "\"NotStartsWith\",\"EndsWith\",\"NotEndsWith\"],\"description\":\"Contains, StartsWith, "       \
  "NotStartsWith, EndsWith and NotEndsWith apply to String properties; string comparisons "        \
  "ignore case\"},"                                                                                \
  "\"propertyName\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"                       \
  "\"description\":\"A property from get_data_model_properties (or id); with reference, a "        \
  "property of the related entity\"},"                                                             \
  "\"value\":{\"type\":[\"string\",\"number\",\"boolean\",\"null\"],\"maxLength\":4096,"           \
  "\"description\":\"Comparison value: the related entity's GUID for a Reference; the string "     \
  "null (with valueType null) to test for null; dates as YYYY-MM-DD. Leave out with "              \
  "comparisonPropertyName\"},"                                                                     \
  "\"valueType\":{\"type\":\"string\",\"enum\":[\"boolean\",\"string\",\"number\",\"null\"],"      \
  "\"description\":\"How value is written; null when testing for null\"},"                         \
  "\"comparisonPropertyName\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"             \
  "\"description\":\"Compare propertyName with this property of the same entity instead of a "     \
  "value\"},"                                                                                      \
  "\"reference\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"                          \
  "\"description\":\"A Reference property: the filter applies to the related entity\"},"           \
  "\"match\":{\"type\":\"string\",\"enum\":[\"Any\"],\"description\":\"For an Inbound "            \
  "reference: true when at least one related entity matches\"}}}}}}}"

#define DG__TOOLS_ENTITY_SCHEMA                                                                    \
  "{\"type\":\"object\",\"required\":[\"id\",\"properties\"],\"properties\":{"                     \
  "\"id\":{\"type\":\"string\"},\"properties\":{\"type\":\"object\",\"properties\":{"              \
  "\"expanded\":{\"type\":\"object\"},\"expandedTruncated\":{\"type\":\"array\",\"items\":"        \
  "{\"type\":\"string\"}}}}}}"

/* The parser context of a call: its catalog, principal and arena. */
void dg__tools_parse_ctx(dg_tool_call_t *call, dg_errctx_t *err, dg_store_parse_t *out);
/* The running store, or NULL after failing the call with a clear error. */
dg_store_t *dg__tools_store(dg_tool_call_t *call);
/* Starts op with desc (allocated in the call's arena) and ends the call
 * with the store's result, or its error. A cancelled call cancels the
 * store request; the call still ends from the store's completion. */
void dg__tools_run_store(dg_tool_call_t *call, dg_store_t *store, dg__tools_store_op_t op,
                         const void *desc);

#endif
