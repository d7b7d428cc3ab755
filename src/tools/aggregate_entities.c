/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* aggregate_entities: sums, averages, counts, minimums, maximums and
 * distinct counts over the filtered entities of one Data Model, as one
 * totals row or grouped by own or related properties, with joinFilter
 * clauses for conditional ratios. The arguments become a checked
 * dg_store_aggregate_t (store.h); the store answers on the threadpool. */
#include "datagate/tools.h"
#include "tools/internal.h"

/* The arguments with the value schema VALUE: the listed schema and the
 * accepted one differ only in how a comparison value may be written. */
#define INPUT_SCHEMA(VALUE)                                                                        \
  "{\"type\":\"object\",\"required\":[\"dataModelId\",\"aggregations\"],"                          \
  "\"additionalProperties\":false,\"properties\":{"                                                \
  "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\","                                      \
  "\"description\":\"Identifier of a Data Model, from get_data_models\"},"                         \
  "\"aggregations\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":32,"                           \
  "\"description\":\"One or more aggregation clauses, answered together in each row\","            \
  "\"items\":{\"type\":\"object\",\"required\":[\"function\"],\"additionalProperties\":false,"     \
  "\"properties\":{"                                                                               \
  "\"function\":{\"type\":\"string\",\"enum\":[\"Sum\",\"Average\",\"Count\",\"Min\",\"Max\","     \
  "\"DistinctCount\"],\"description\":\"Count counts the matched records and takes no "            \
  "propertyName; DistinctCount counts distinct non-null values\"},"                                \
  "\"propertyName\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"                       \
  "\"description\":\"A property of this Data Model; required except for Count. Sum and Average "   \
  "need Int, Long, Double or Decimal; Min and Max also take Date and DateTime\"},"                 \
  "\"alias\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":64,"                               \
  "\"description\":\"Result key; default {function}_{propertyName} (sum_Amount, count); "          \
  "camelCased at the first letter\"},"                                                             \
  "\"reference\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"                          \
  "\"description\":\"Not supported: aggregation over a related collection (summing a parent's "    \
  "child values) is refused; call aggregate_entities on the related Data Model instead\"},"        \
  "\"joinFilter\":{\"type\":\"object\",\"required\":[\"condition\"],"                              \
  "\"additionalProperties\":false,\"description\":\"Counts or aggregates only the records "        \
  "whose one related entity exists and satisfies condition (one-to-one joins only; not with "      \
  "groupBy)\",\"properties\":{"                                                                    \
  "\"reference\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":"          \
  "\"An Outbound Reference property of this Data Model (preferred); or give entity and on\"},"     \
  "\"entity\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":"             \
  "\"Joined Data Model, by name or entityType; requires on\"},"                                    \
  "\"on\":{\"type\":\"object\",\"required\":[\"localProperty\",\"foreignProperty\"],"              \
  "\"additionalProperties\":false,\"properties\":{"                                                \
  "\"localProperty\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":"      \
  "\"Property of this Data Model holding the joined entity's id\"},"                               \
  "\"foreignProperty\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"                    \
  "\"description\":\"id: the joined entity's key (one-to-one joins only)\"}}},"                    \
  "\"condition\":{\"type\":\"object\",\"required\":[\"localProperty\",\"operator\"],"              \
  "\"additionalProperties\":false,\"properties\":{"                                                \
  "\"localProperty\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,\"description\":"      \
  "\"Property of this Data Model; its type decides how values compare (Date: "                     \
  "chronologically, String: lexicographically)\"},"                                                \
  "\"operator\":{\"type\":\"string\",\"enum\":[\"EqualTo\",\"NotEqualTo\",\"GreaterThan\","        \
  "\"GreaterThanEqualTo\",\"LessThan\",\"LessThanEqualTo\",\"Contains\",\"StartsWith\","           \
  "\"NotStartsWith\",\"EndsWith\",\"NotEndsWith\"]},"                                              \
  "\"foreignProperty\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128,"                    \
  "\"description\":\"Property of the joined entity; give this or value\"},"                        \
  "\"value\":" VALUE(                                                                              \
      "A literal compared with localProperty, written as text as in a filter; "                    \
      "give this or foreignProperty") "}}}}}}},"                                                   \
                                      "\"queryParameterGroups\":" DG__TOOLS_FILTER_GROUPS(         \
                                          VALUE) ","                                               \
                                                 "\"groupBy\":{\"type\":\"array\",\"maxItems\":8," \
                                                 "\"description\":\"Group keys; omit for a "       \
                                                 "single totals row. A grouped call may match at " \
                                                 "most a configured number of records "            \
                                                 "(100,000 by "                                    \
                                                 "default)\",\"items\":{\"type\":\"object\","      \
                                                 "\"required\":[\"propertyName\"],"                \
                                                 "\"additionalProperties\":false,\"properties\":{" \
                                                 "\"propertyName\":{\"type\":\"string\","          \
                                                 "\"minLength\":1,\"maxLength\":128,"              \
                                                 "\"description\":"                                \
                                                 "\"A property of this Data Model, or with "       \
                                                 "reference of the related entity\"},"             \
                                                 "\"reference\":{\"type\":\"string\","             \
                                                 "\"minLength\":1,\"maxLength\":128,"              \
                                                 "\"description\":"                                \
                                                 "\"A Reference property: group by a property of " \
                                                 "the related entity (Outbound: one; "             \
                                                 "Inbound: a row per distinct related "            \
                                                 "value)\"}}}}}}"

static const char input_schema[] = INPUT_SCHEMA(DG__TOOLS_VALUE_LISTED);
static const char accepted_schema[] = INPUT_SCHEMA(DG__TOOLS_VALUE_ACCEPTED);

static const char output_schema[] =
    "{\"type\":\"object\",\"required\":[\"matchedCount\",\"groupByProperties\",\"rows\"],"
    "\"properties\":{"
    "\"matchedCount\":{\"type\":\"integer\",\"description\":\"Records matched by the filter\"},"
    "\"groupByProperties\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"rows\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"groupKey\",\"aggregates\"],\"properties\":{"
    "\"groupKey\":{\"type\":\"object\",\"description\":\"Group values by key; empty when not "
    "grouping\"},"
    "\"aggregates\":{\"type\":\"object\",\"description\":\"Each alias with its value\"}}}}}}";

const dg_tool_t dg_tool_aggregate_entities = {
    .name = "aggregate_entities",
    .title = "Aggregate entities",
    .description =
        "Computes aggregates over the filtered entities of one Data Model, as one totals row or "
        "grouped. Call get_data_models first for the dataModelId and get_data_model_properties "
        "for property names, types and references. aggregations: clauses {function, "
        "propertyName, alias}; functions Sum, Average, Min, Max (numeric Int, Long, Double, "
        "Decimal properties; Min and Max also Date and DateTime), Count (no propertyName) and "
        "DistinctCount (distinct non-null values). Result keys default to "
        "{function}_{propertyName} camelCased at the first letter (sum_Amount, count). "
        "queryParameterGroups filter first, exactly as in query_entities (reference filters "
        "too). groupBy: [{propertyName, reference?}]; with reference the key is a related "
        "entity's property, labelled reference.propertyName (customer.Region); records without a "
        "related value fall in a null group; an Inbound reference gives a row per distinct "
        "related value, each record counted once per value. Grouped calls may match at most "
        "100,000 records by default: narrow queryParameterGroups (a date range) when refused; "
        "ungrouped totals have no cap. For a ratio request numerator and denominator in one "
        "call and divide; for a conditional ratio put joinFilter {reference (or entity + on), "
        "condition {localProperty, operator, foreignProperty or value}} on one clause: it "
        "counts only records whose one related entity satisfies the condition. joinFilter "
        "cannot be combined with groupBy (request them separately). Summing a parent's child "
        "values (a related collection) is not supported: aggregate the related Data Model. "
        "Result: {matchedCount, groupByProperties, rows: [{groupKey, aggregates}]}.",
    .input_schema = input_schema,
    .accepted_schema = accepted_schema,
    .output_schema = output_schema,
    DG__TOOLS_READS_GATEWAY,
    .run = dg__tools_run_aggregate,
};
