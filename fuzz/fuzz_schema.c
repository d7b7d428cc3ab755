/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes argument validation: the input, parsed as JSON, is checked
 * against a fixed schema shaped like query_entities' arguments (nested
 * groups, enums, ranges, formats, alternatives, defaults). A failure must
 * come with a message; a success must be stable, since validating the
 * filled-in arguments again may neither fail nor change them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/mcp.h"

static const char schema_text[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\","
    "\"description\":\"Identifier of a Data Model, from get_data_models\"},"
    "\"queryParameterGroups\":{\"type\":\"array\",\"maxItems\":10,\"items\":{\"type\":\"object\","
    "\"properties\":{\"logicalOperator\":{\"type\":\"string\",\"enum\":[\"And\",\"Or\"],"
    "\"default\":\"And\"},\"parameters\":{\"type\":\"array\",\"minItems\":1,\"maxItems\":20,"
    "\"items\":{\"anyOf\":[{\"type\":\"object\",\"properties\":{"
    "\"propertyName\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128},"
    "\"operator\":{\"type\":\"string\",\"enum\":[\"Equals\",\"NotEquals\",\"GreaterThan\","
    "\"LessThan\",\"Contains\",\"IsNull\"]},"
    "\"value\":{\"type\":[\"string\",\"number\",\"boolean\",\"null\"]}},"
    "\"required\":[\"propertyName\",\"operator\"],\"additionalProperties\":false},"
    "{\"type\":\"object\",\"properties\":{\"reference\":{\"type\":\"string\"},"
    "\"operator\":{\"const\":\"Exists\"}},\"required\":[\"reference\"],"
    "\"additionalProperties\":false}]}}},"
    "\"required\":[\"parameters\"],\"additionalProperties\":false}},"
    "\"sortCondition\":{\"type\":\"object\",\"properties\":{\"propertyName\":{\"type\":\"string\"},"
    "\"sortOrder\":{\"type\":\"string\",\"enum\":[\"Ascending\",\"Descending\"],"
    "\"default\":\"Ascending\"}},\"required\":[\"propertyName\"],\"additionalProperties\":false},"
    "\"paging\":{\"type\":\"object\",\"default\":{},\"properties\":{"
    "\"pageNumber\":{\"type\":\"integer\",\"minimum\":1,\"default\":1},"
    "\"pageSize\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"default\":50}},"
    "\"additionalProperties\":false},"
    "\"properties\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"uniqueItems\":true,"
    "\"maxItems\":100},"
    "\"expand\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"score\":{\"type\":\"number\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":1},"
    "\"since\":{\"type\":\"string\",\"format\":\"date-time\"},"
    "\"day\":{\"type\":\"string\",\"format\":\"date\"},"
    "\"source\":{\"type\":\"string\",\"format\":\"uri\"},"
    "\"options\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"boolean\"}},"
    "\"entityIds\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"minItems\":1,\"maxItems\":50}},"
    "\"required\":[\"dataModelId\"],\"additionalProperties\":false}";

static json_t *schema;

static void check_error(const dg_errctx_t *err, int rc) {
  if (rc != DG_EINVAL && rc != DG_ENOMEM)
    abort();
  if (err->code != rc || err->message[0] == '\0')
    abort();
  if (memchr(err->message, '\0', sizeof(err->message)) == NULL)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (schema == NULL) {
    schema = json_loads(schema_text, 0, NULL);
    if (schema == NULL)
      abort();
  }
  json_t *value = json_loadb((const char *)data, size, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
  if (value == NULL)
    return 0;
  dg_errctx_t err;
  int rc = dg_mcp_schema_validate(schema, value, &err);
  if (rc != 0) {
    check_error(&err, rc);
  } else {
    json_t *first = json_deep_copy(value);
    if (dg_mcp_schema_validate(schema, value, &err) != 0 || !json_equal(first, value))
      abort();
    json_decref(first);
  }
  json_decref(value);
  return 0;
}
