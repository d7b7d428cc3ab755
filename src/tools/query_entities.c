/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* query_entities: filters, sorting, paging, property selection and inline
 * expansion over the entities of one Data Model. The arguments become a
 * checked dg_store_query_t (store.h); the store answers on the threadpool. */
#include "datagate/tools.h"
#include "tools/internal.h"

/* The arguments with the filter groups GROUPS: the listed schema and the
 * accepted one differ only in how a filter value may be written. */
#define INPUT_SCHEMA(GROUPS)                                                                       \
  "{\"type\":\"object\",\"required\":[\"dataModelId\"],\"additionalProperties\":false,"            \
  "\"properties\":{"                                                                               \
  "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\","                                      \
  "\"description\":\"Identifier of a Data Model, from get_data_models\"},"                         \
  "\"queryParameterGroups\":" GROUPS ","                                                           \
  "\"paging\":{\"type\":\"object\",\"additionalProperties\":false,\"properties\":{"                \
  "\"pageNumber\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":1000000,\"default\":1,"          \
  "\"description\":\"1-based; pass the previous response's nextPage\"},"                           \
  "\"pageSize\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"default\":25}}},"            \
  "\"sortCondition\":{\"type\":\"object\",\"required\":[\"propertyName\"],"                        \
  "\"additionalProperties\":false,\"properties\":{"                                                \
  "\"propertyName\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128},"                      \
  "\"sortOrder\":{\"type\":\"string\",\"enum\":[\"Ascending\",\"Descending\"],"                    \
  "\"default\":\"Ascending\"}}},"                                                                  \
  "\"countOnly\":{\"type\":\"boolean\",\"default\":false,"                                         \
  "\"description\":\"When true only {count} is returned\"},"                                       \
  "\"properties\":" DG__TOOLS_PROPERTIES_SCHEMA ","                                                \
  "\"expand\":" DG__TOOLS_EXPAND_SCHEMA ","                                                        \
  "\"maxResultBytes\":" DG__TOOLS_BUDGET_SCHEMA "}}"

static const char input_schema[] = INPUT_SCHEMA(DG__TOOLS_FILTER_GROUPS_SCHEMA);
static const char accepted_schema[] = INPUT_SCHEMA(DG__TOOLS_FILTER_GROUPS_ACCEPTED);

static const char output_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"entities\":{\"type\":\"array\",\"items\":" DG__TOOLS_ENTITY_SCHEMA "},"
    "\"pageNumber\":{\"type\":\"integer\"},"
    "\"pageSize\":{\"type\":\"integer\"},"
    "\"hasMore\":{\"type\":\"boolean\"},"
    "\"nextPage\":{\"type\":[\"integer\",\"null\"]},"
    "\"count\":{\"type\":\"integer\"},"
    "\"truncated\":{\"type\":\"boolean\"},"
    "\"omittedCount\":{\"type\":\"integer\"},"
    "\"continueWith\":{\"type\":\"object\",\"properties\":{"
    "\"pageNumber\":{\"type\":\"integer\"},\"pageSize\":{\"type\":\"integer\"}}}},"
    "\"anyOf\":[{\"required\":[\"entities\",\"pageNumber\",\"pageSize\",\"hasMore\",\"nextPage\"]},"
    "{\"required\":[\"count\"]}]}";

const dg_tool_t dg_tool_query_entities = {
    .name = "query_entities",
    .title = "Query entities",
    .description =
        "Queries the entities of one Data Model with filters, sorting, paging, property "
        "selection and inline expansion of related entities. Call get_data_models first for the "
        "dataModelId and get_data_model_properties for property names, data types and "
        "references; to compare a foreign key, find the related entity's id with "
        "lookup_by_keyword and compare the Reference property with it. Filters: "
        "queryParameterGroups is a list of groups, all of which must hold (And); inside a group "
        "the parameters combine with andOrOperator (And or Or). A parameter compares "
        "propertyName with value (valueType string, number or boolean; valueType null with the "
        "value \"null\" tests for null) or, with comparisonPropertyName, with another property "
        "of the same entity. With reference (a Reference property) it tests a property of the "
        "related entity; for an Inbound reference it holds when at least one related entity "
        "matches. String comparisons ignore case; dates compare chronologically (YYYY-MM-DD). "
        "sortCondition orders the results (ties broken by id). paging is 1-based (pageSize 1 to "
        "100, default 25): while hasMore is true, pass nextPage as pageNumber. countOnly returns "
        "only {count}. properties chooses the fields returned (id always). expand loads related "
        "entities under properties.expanded.<reference>: an object or null for an Outbound "
        "reference, an array of at most 100 for an Inbound one (properties.expandedTruncated "
        "then names the references that were cut). An answer over the size limit (or the "
        "smaller maxResultBytes you give) keeps the entities that fit whole and says truncated: "
        "true, omittedCount and continueWith, the paging that reads on from the first entity "
        "left out.",
    .input_schema = input_schema,
    .accepted_schema = accepted_schema,
    .output_schema = output_schema,
    DG__TOOLS_READS_GATEWAY,
    .run = dg__tools_run_query,
};
