/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for tool argument validation (dg_mcp_schema_validate). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/mcp.h"

/* A realistic argument schema, shaped like query_entities'. */
static const char query_schema[] =
    "{\"type\":\"object\",\"properties\":{"
    "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\","
    "\"description\":\"Identifier of a Data Model, from get_data_models\"},"
    "\"queryParameterGroups\":{\"type\":\"array\",\"maxItems\":10,\"items\":{\"type\":\"object\","
    "\"properties\":{\"logicalOperator\":{\"type\":\"string\",\"enum\":[\"And\",\"Or\"],"
    "\"default\":\"And\"},\"parameters\":{\"type\":\"array\",\"minItems\":1,\"items\":{"
    "\"type\":\"object\",\"properties\":{\"propertyName\":{\"type\":\"string\",\"minLength\":1},"
    "\"operator\":{\"type\":\"string\",\"enum\":[\"Equals\",\"NotEquals\",\"Contains\"]},"
    "\"value\":{\"type\":[\"string\",\"number\",\"boolean\",\"null\"]}},"
    "\"required\":[\"propertyName\",\"operator\"],\"additionalProperties\":false}}},"
    "\"required\":[\"parameters\"],\"additionalProperties\":false}},"
    "\"sortCondition\":{\"type\":\"object\",\"properties\":{\"propertyName\":{\"type\":\"string\"},"
    "\"sortOrder\":{\"type\":\"string\",\"enum\":[\"Ascending\",\"Descending\"],"
    "\"default\":\"Ascending\"}},\"required\":[\"propertyName\"]},"
    "\"paging\":{\"type\":\"object\",\"default\":{},\"properties\":{"
    "\"pageNumber\":{\"type\":\"integer\",\"minimum\":1,\"default\":1},"
    "\"pageSize\":{\"type\":\"integer\",\"minimum\":1,\"maximum\":100,\"default\":50}},"
    "\"additionalProperties\":false},"
    "\"entityIds\":{\"type\":\"array\",\"items\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"minItems\":1,\"maxItems\":50}},"
    "\"required\":[\"dataModelId\"],\"additionalProperties\":false}";

#define MODEL "\"dataModelId\":\"3f2504e0-4f89-41d3-9a0c-0305e82c3301\""

static json_t *parse(const char *text) {
  json_error_t jerr;
  json_t *v = json_loads(text, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
  if (v == NULL)
    fail_msg("bad JSON in test (%s): %s", jerr.text, text);
  return v;
}

/* Validates value against schema; it must pass and, when after is given,
 * come out equal to it (defaults filled, integers normalised). */
static void expect_ok(const char *schema_text, const char *value_text, const char *after) {
  json_t *schema = parse(schema_text), *value = parse(value_text);
  dg_errctx_t err;
  int rc = dg_mcp_schema_validate(schema, value, &err);
  if (rc != 0)
    fail_msg("expected %s to pass, got: %s", value_text, err.message);
  assert_int_equal(err.code, 0);
  if (after != NULL) {
    json_t *want = parse(after);
    char *got = json_dumps(value, JSON_COMPACT | JSON_ENCODE_ANY | JSON_SORT_KEYS);
    if (!json_equal(want, value))
      fail_msg("after validation: %s, expected %s", got, after);
    free(got);
    json_decref(want);
  }
  json_decref(schema);
  json_decref(value);
}

static void expect_err(const char *schema_text, const char *value_text, const char *param,
                       const char *message) {
  json_t *schema = parse(schema_text), *value = parse(value_text);
  dg_errctx_t err;
  assert_int_equal(dg_mcp_schema_validate(schema, value, &err), DG_EINVAL);
  assert_int_equal(err.code, DG_EINVAL);
  assert_string_equal(err.param, param);
  assert_string_equal(err.message, message);
  json_decref(schema);
  json_decref(value);
}

/* ---- type ------------------------------------------------------------- */

static void test_type_each(void **state) {
  expect_ok("{\"type\":\"object\"}", "{}", NULL);
  expect_ok("{\"type\":\"array\"}", "[]", NULL);
  expect_ok("{\"type\":\"string\"}", "\"x\"", NULL);
  expect_ok("{\"type\":\"integer\"}", "-7", NULL);
  expect_ok("{\"type\":\"number\"}", "2.5", NULL);
  expect_ok("{\"type\":\"number\"}", "3", NULL);
  expect_ok("{\"type\":\"boolean\"}", "false", NULL);
  expect_ok("{\"type\":\"null\"}", "null", NULL);
  expect_err("{\"type\":\"object\"}", "[1]", "", "Invalid arguments: got [1]; allowed: an object.");
  expect_err("{\"type\":\"array\"}", "{}", "", "Invalid arguments: got {}; allowed: an array.");
  expect_err("{\"type\":\"string\"}", "1", "", "Invalid arguments: got 1; allowed: a string.");
  expect_err("{\"type\":\"integer\"}", "1.5", "",
             "Invalid arguments: got 1.5; allowed: an integer.");
  expect_err("{\"type\":\"number\"}", "\"1\"", "",
             "Invalid arguments: got \"1\"; allowed: a number.");
  expect_err("{\"type\":\"boolean\"}", "\"true\"", "",
             "Invalid arguments: got \"true\"; allowed: true or false.");
  expect_err("{\"type\":\"null\"}", "0", "", "Invalid arguments: got 0; allowed: null.");
}

static void test_type_list(void **state) {
  const char *schema = "{\"properties\":{\"v\":{\"type\":[\"string\",\"null\"]}}}";
  expect_ok(schema, "{\"v\":null}", NULL);
  expect_ok(schema, "{\"v\":\"a\"}", NULL);
  expect_err(schema, "{\"v\":true}", "v",
             "Invalid argument 'v': got true; allowed: a string or null.");
}

static void test_integer_accepts_integral_real(void **state) {
  const char *schema = "{\"properties\":{\"n\":{\"type\":\"integer\"},"
                       "\"list\":{\"items\":{\"type\":\"integer\"}},"
                       "\"x\":{\"type\":\"number\"}}}";
  json_t *s = parse(schema), *v = parse("{\"n\":5.0,\"list\":[1,2.0],\"x\":3.0}");
  dg_errctx_t err;
  assert_int_equal(dg_mcp_schema_validate(s, v, &err), 0);
  /* Tools read integers with json_integer_value, so 5.0 becomes 5. */
  assert_true(json_is_integer(json_object_get(v, "n")));
  assert_int_equal(json_integer_value(json_object_get(v, "n")), 5);
  assert_true(json_is_integer(json_array_get(json_object_get(v, "list"), 1)));
  /* A number stays as given. */
  assert_true(json_is_real(json_object_get(v, "x")));
  json_decref(s);
  json_decref(v);
}

/* ---- enum, const -------------------------------------------------------- */

static void test_enum(void **state) {
  char value[256];
  expect_ok(query_schema,
            "{" MODEL ",\"sortCondition\":{\"propertyName\":\"A\","
            "\"sortOrder\":\"Descending\"}}",
            NULL);
  snprintf(value, sizeof(value),
           "{%s,\"sortCondition\":{\"propertyName\":\"A\",\"sortOrder\":\"Up\"}}", MODEL);
  expect_err(query_schema, value, "sortCondition.sortOrder",
             "Invalid argument 'sortCondition.sortOrder': got \"Up\"; allowed: one of "
             "\"Ascending\", \"Descending\".");
  /* Enums compare numbers by value. */
  expect_ok("{\"enum\":[1,2,\"x\",null]}", "2.0", NULL);
  expect_err("{\"enum\":[1,2,\"x\",null]}", "3", "",
             "Invalid arguments: got 3; allowed: one of 1, 2, \"x\", null.");
}

static void test_const(void **state) {
  expect_ok("{\"const\":\"Count\"}", "\"Count\"", NULL);
  expect_ok("{\"const\":{\"a\":[1,2]}}", "{\"a\":[1,2]}", NULL);
  expect_err("{\"properties\":{\"f\":{\"const\":\"Count\"}}}", "{\"f\":\"Sum\"}", "f",
             "Invalid argument 'f': got \"Sum\"; allowed: \"Count\".");
}

/* ---- numbers ------------------------------------------------------------ */

static void test_minimum_maximum(void **state) {
  char value[256];
  snprintf(value, sizeof(value), "{%s,\"paging\":{\"pageSize\":500}}", MODEL);
  expect_err(query_schema, value, "paging.pageSize",
             "Invalid argument 'paging.pageSize': got 500; allowed: an integer from 1 to 100.");
  snprintf(value, sizeof(value), "{%s,\"paging\":{\"pageNumber\":0}}", MODEL);
  expect_err(query_schema, value, "paging.pageNumber",
             "Invalid argument 'paging.pageNumber': got 0; allowed: an integer of at least 1.");
  expect_ok("{\"minimum\":1,\"maximum\":100}", "100", NULL);
  expect_ok("{\"minimum\":1,\"maximum\":100}", "1", NULL);
  expect_err("{\"type\":\"number\",\"maximum\":0.1}", "0.25", "",
             "Invalid arguments: got 0.25; allowed: a number of at most 0.1.");
  /* A type mismatch still says the whole of what is allowed. */
  expect_err("{\"type\":\"integer\",\"minimum\":1,\"maximum\":100}", "\"5\"", "",
             "Invalid arguments: got \"5\"; allowed: an integer from 1 to 100.");
}

static void test_exclusive_bounds(void **state) {
  const char *schema = "{\"type\":\"number\",\"exclusiveMinimum\":0,\"exclusiveMaximum\":1}";
  expect_ok(schema, "0.5", NULL);
  expect_err(schema, "0", "",
             "Invalid arguments: got 0; allowed: a number greater than 0 and less than 1.");
  expect_err(schema, "1", "",
             "Invalid arguments: got 1; allowed: a number greater than 0 and less than 1.");
  /* Draft 4 form: a boolean beside minimum. */
  const char *draft4 = "{\"type\":\"integer\",\"minimum\":0,\"exclusiveMinimum\":true,"
                       "\"maximum\":10}";
  expect_ok(draft4, "1", NULL);
  expect_ok(draft4, "10", NULL);
  expect_err(draft4, "0", "",
             "Invalid arguments: got 0; allowed: an integer greater than 0 and at most 10.");
  expect_err("{\"exclusiveMaximum\":5}", "5", "",
             "Invalid arguments: got 5; allowed: a number less than 5.");
}

/* ---- strings ------------------------------------------------------------ */

static void test_length_in_characters(void **state) {
  /* "κόσμε" is five characters in ten bytes. */
  expect_ok("{\"maxLength\":5,\"minLength\":5}", "\"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\"",
            NULL);
  expect_err("{\"type\":\"string\",\"maxLength\":4}",
             "\"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\"", "",
             "Invalid arguments: got \"\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5\" (5 "
             "characters); allowed: a string of at most 4 characters.");
  expect_err("{\"properties\":{\"k\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":200}}}",
             "{\"k\":\"\"}", "k",
             "Invalid argument 'k': got \"\" (0 characters); allowed: a string of 1 to 200 "
             "characters.");
  expect_err("{\"minLength\":2}", "\"a\"", "",
             "Invalid arguments: got \"a\" (1 character); allowed: a string of at least 2 "
             "characters.");
}

static void test_format_uuid(void **state) {
  const char *schema = "{\"format\":\"uuid\"}";
  expect_ok(schema, "\"3F2504E0-4F89-41D3-9A0C-0305E82C3301\"", NULL);
  expect_err(schema, "\"3f2504e0-4f89-41d3-9a0c-0305e82c330\"", "",
             "Invalid arguments: got \"3f2504e0-4f89-41d3-9a0c-0305e82c330\"; allowed: a GUID "
             "(8-4-4-4-12 hexadecimal digits).");
  expect_err(schema, "\"3f2504e04f8941d39a0c0305e82c3301\"", "",
             "Invalid arguments: got \"3f2504e04f8941d39a0c0305e82c3301\"; allowed: a GUID "
             "(8-4-4-4-12 hexadecimal digits).");
  /* A NUL inside the string is not hidden by the form before it. */
  expect_err(schema, "\"3f2504e0-4f89-41d3-9a0c-0305e82c3301\\u0000\"", "",
             "Invalid arguments: got \"3f2504e0-4f89-41d3-9a0c-0305e82c3301\\u0000\"; allowed: "
             "a GUID (8-4-4-4-12 hexadecimal digits).");
  /* Formats apply to strings only. */
  expect_ok(schema, "12", NULL);
}

static void expect_format(const char *format, const char *value, bool ok) {
  char schema[64], text[256];
  snprintf(schema, sizeof(schema), "{\"format\":\"%s\"}", format);
  json_t *s = parse(schema), *v = json_string(value);
  dg_errctx_t err;
  int rc = dg_mcp_schema_validate(s, v, &err);
  if ((rc == 0) != ok)
    fail_msg("format %s, value \"%s\": expected %s", format, value, ok ? "valid" : "invalid");
  if (!ok) {
    snprintf(text, sizeof(text), "Invalid arguments: got \"%s\"; allowed: ", value);
    assert_memory_equal(err.message, text, strlen(text));
  }
  json_decref(s);
  json_decref(v);
}

static void test_format_uri(void **state) {
  expect_format("uri", "https://example.com/files/report.pdf?x=1#p2", true);
  expect_format("uri", "mailto:someone@example.com", true);
  expect_format("uri", "urn:isbn:0451450523", true);
  expect_format("uri", "s3+https://bucket/key", true);
  expect_format("uri", "/relative/path.pdf", false);
  expect_format("uri", "example.com/file.pdf", false);
  expect_format("uri", "1http://example.com", false);
  expect_format("uri", "http:", false);
  expect_format("uri", "https://example.com/a file.pdf", false);
  expect_format("uri", "https://example.com/<x>", false);
  expect_format("uri", "", false);
}

static void test_format_date(void **state) {
  expect_format("date", "2024-02-29", true);
  expect_format("date", "2025-12-31", true);
  expect_format("date", "2000-02-29", true);
  expect_format("date", "1900-02-29", false);
  expect_format("date", "2023-02-29", false);
  expect_format("date", "2024-04-31", false);
  expect_format("date", "2024-13-01", false);
  expect_format("date", "2024-00-10", false);
  expect_format("date", "2024-1-01", false);
  expect_format("date", "2024-01-01T00:00:00Z", false);
  expect_format("date", "20240101", false);
}

static void test_format_date_time(void **state) {
  expect_format("date-time", "2025-01-31T13:45:00Z", true);
  expect_format("date-time", "2025-01-31t13:45:00.123456+05:30", true);
  expect_format("date-time", "2016-12-31T23:59:60Z", true);
  expect_format("date-time", "2025-01-31T13:45:00-08:00", true);
  expect_format("date-time", "2025-01-31 13:45:00Z", false);
  expect_format("date-time", "2025-01-31T24:00:00Z", false);
  expect_format("date-time", "2025-01-31T13:60:00Z", false);
  expect_format("date-time", "2025-01-31T13:45:00", false);
  expect_format("date-time", "2025-01-31T13:45:00+0530", false);
  expect_format("date-time", "2025-01-31T13:45:00.Z", false);
  expect_format("date-time", "2025-01-31T13:45:00+24:00", false);
  expect_format("date-time", "2025-01-31T13:45:00-05:60", false);
  expect_format("date-time", "2025-01-31T13:45:00Z ", false);
  expect_format("date-time", "2025-02-30T13:45:00Z", false);
  expect_format("date-time", "2025-01-31", false);
}

static void test_unknown_format_ignored(void **state) {
  expect_ok("{\"format\":\"email\"}", "\"not an email\"", NULL);
}

/* ---- arrays ------------------------------------------------------------- */

static void test_items_nested_path(void **state) {
  char value[512];
  snprintf(
      value, sizeof(value),
      "{%s,\"queryParameterGroups\":[{\"parameters\":[{\"propertyName\":\"A\","
      "\"operator\":\"Equals\",\"value\":1},{\"propertyName\":\"B\",\"operator\":\"Like\"}]}]}",
      MODEL);
  expect_err(query_schema, value, "queryParameterGroups[0].parameters[1].operator",
             "Invalid argument 'queryParameterGroups[0].parameters[1].operator': got \"Like\"; "
             "allowed: one of \"Equals\", \"NotEquals\", \"Contains\".");
}

static void test_min_max_items(void **state) {
  char *value = malloc(64 * 64);
  assert_non_null(value);
  size_t n = (size_t)snprintf(value, 64 * 64, "{%s,\"entityIds\":[", MODEL);
  for (int i = 0; i < 51; i++)
    n += (size_t)snprintf(value + n, 64 * 64 - n, "%s\"3f2504e0-4f89-41d3-9a0c-%012d\"",
                          i ? "," : "", i);
  snprintf(value + n, 64 * 64 - n, "]}");
  expect_err(query_schema, value, "entityIds",
             "Invalid argument 'entityIds': got 51 items; allowed: 1 to 50 items.");
  snprintf(value, 64 * 64, "{%s,\"entityIds\":[]}", MODEL);
  expect_err(query_schema, value, "entityIds",
             "Invalid argument 'entityIds': got 0 items; allowed: 1 to 50 items.");
  expect_err("{\"minItems\":2}", "[1]", "",
             "Invalid arguments: got 1 item; allowed: at least 2 items.");
  expect_err("{\"maxItems\":1}", "[1,2]", "",
             "Invalid arguments: got 2 items; allowed: at most 1 item.");
  expect_err("{\"minItems\":3,\"maxItems\":3}", "[1,2]", "",
             "Invalid arguments: got 2 items; allowed: exactly 3 items.");
  free(value);
}

static void test_items_error_inside(void **state) {
  char value[256];
  snprintf(value, sizeof(value), "{%s,\"entityIds\":[\"3f2504e0-4f89-41d3-9a0c-0305e82c3301\",7]}",
           MODEL);
  expect_err(query_schema, value, "entityIds[1]",
             "Invalid argument 'entityIds[1]': got 7; allowed: a GUID (8-4-4-4-12 hexadecimal "
             "digits).");
}

static void test_unique_items(void **state) {
  const char *schema = "{\"uniqueItems\":true}";
  expect_ok(schema, "[1,2,\"1\",[1],{\"a\":1},{\"a\":2},null,true,false]", NULL);
  expect_err(schema, "[\"a\",\"b\",\"a\"]", "",
             "Invalid arguments: got [\"a\",\"b\",\"a\"] (item 2 repeats item 0); allowed: an "
             "array, all different.");
  /* Objects are equal whatever the order of their members; numbers by value. */
  expect_err("{\"type\":\"array\",\"uniqueItems\":true}", "[{\"a\":1,\"b\":2},{\"b\":2,\"a\":1}]",
             "",
             "Invalid arguments: got [{\"a\":1,\"b\":2},{\"b\":2,\"a\":1}] (item 1 repeats item "
             "0); allowed: an array, all different.");
  expect_err(schema, "[3,1,1.0]", "",
             "Invalid arguments: got [3,1,1.0] (item 2 repeats item 1); allowed: an array, all "
             "different.");
  expect_ok("{\"uniqueItems\":false}", "[1,1]", NULL);
}

static void test_unique_items_long_array(void **state) {
  json_t *schema = parse("{\"uniqueItems\":true}"), *value = json_array();
  dg_errctx_t err;
  for (int i = 0; i < 20000; i++)
    json_array_append_new(value, json_integer(i));
  assert_int_equal(dg_mcp_schema_validate(schema, value, &err), 0);
  json_array_append_new(value, json_integer(12345));
  json_array_append_new(value, json_integer(7));
  assert_int_equal(dg_mcp_schema_validate(schema, value, &err), DG_EINVAL);
  assert_non_null(strstr(err.message, "(item 20000 repeats item 12345)"));
  json_decref(schema);
  json_decref(value);
}

static void test_items_false(void **state) {
  expect_ok("{\"items\":false}", "[]", NULL);
  expect_err("{\"items\":false}", "[1]", "[0]",
             "Invalid argument '[0]': got 1; allowed: nothing here (leave it out).");
}

/* ---- objects ------------------------------------------------------------- */

static void test_required(void **state) {
  expect_err(query_schema, "{}", "dataModelId",
             "Missing required argument 'dataModelId' (Identifier of a Data Model, from "
             "get_data_models).");
  expect_err("{\"required\":[\"a\"]}", "{\"b\":1}", "a", "Missing required argument 'a'.");
  char value[256];
  snprintf(value, sizeof(value), "{%s,\"sortCondition\":{\"sortOrder\":\"Ascending\"}}", MODEL);
  expect_err(query_schema, value, "sortCondition.propertyName",
             "Missing required argument 'sortCondition.propertyName'.");
}

static void test_additional_properties_false(void **state) {
  char value[256];
  snprintf(value, sizeof(value), "{%s,\"paging\":{\"size\":10}}", MODEL);
  expect_err(query_schema, value, "paging.size",
             "Unknown argument 'size' in 'paging'; allowed: pageNumber, pageSize.");
  snprintf(value, sizeof(value), "{%s,\"foo\":1}", MODEL);
  expect_err(query_schema, value, "foo",
             "Unknown argument 'foo'; allowed: dataModelId, queryParameterGroups, sortCondition, "
             "paging, entityIds.");
  expect_err("{\"type\":\"object\",\"additionalProperties\":false}", "{\"x\":1}", "x",
             "Unknown argument 'x'; allowed: none.");
  /* Control characters in a caller's key never reach the message. */
  expect_err("{\"properties\":{\"a\":{}},\"additionalProperties\":false}", "{\"b\\nc\":1}", "b?c",
             "Unknown argument 'b?c'; allowed: a.");
}

static void test_additional_properties_schema(void **state) {
  const char *schema = "{\"properties\":{\"a\":{}},\"additionalProperties\":{\"type\":\"string\"}}";
  expect_ok(schema, "{\"a\":1,\"b\":\"x\",\"c\":\"y\"}", NULL);
  expect_err(schema, "{\"a\":1,\"b\":\"x\",\"c\":2}", "c",
             "Invalid argument 'c': got 2; allowed: a string.");
  expect_ok("{\"additionalProperties\":true}", "{\"z\":[]}", NULL);
}

static void test_properties_nested(void **state) {
  const char *schema = "{\"properties\":{\"a\":{\"properties\":{\"b\":{\"type\":\"object\","
                       "\"properties\":{"
                       "\"c\":{\"type\":\"boolean\"}}}}}}}";
  expect_ok(schema, "{\"a\":{\"b\":{\"c\":true}}}", NULL);
  expect_err(schema, "{\"a\":{\"b\":{\"c\":\"yes\"}}}", "a.b.c",
             "Invalid argument 'a.b.c': got \"yes\"; allowed: true or false.");
  expect_err(schema, "{\"a\":{\"b\":[]}}", "a.b",
             "Invalid argument 'a.b': got []; allowed: an object with properties c.");
}

static void test_top_level_not_object(void **state) {
  expect_err("{\"type\":\"object\",\"properties\":{\"a\":{},\"b\":{}}}", "[1,2]", "",
             "Invalid arguments: got [1,2]; allowed: an object with properties a, b.");
}

/* ---- default ------------------------------------------------------------- */

static void test_defaults_filled(void **state) {
  expect_ok(query_schema, "{" MODEL "}",
            "{" MODEL ",\"paging\":{\"pageNumber\":1,\"pageSize\":50}}");
  expect_ok(query_schema, "{" MODEL ",\"paging\":{\"pageSize\":10}}",
            "{" MODEL ",\"paging\":{\"pageNumber\":1,\"pageSize\":10}}");
  expect_ok(query_schema,
            "{" MODEL ",\"sortCondition\":{\"propertyName\":\"Name\"},"
            "\"queryParameterGroups\":[{\"parameters\":[{\"propertyName\":\"A\","
            "\"operator\":\"Equals\"}]},{\"logicalOperator\":\"Or\",\"parameters\":[{"
            "\"propertyName\":\"B\",\"operator\":\"Contains\",\"value\":\"x\"}]}]}",
            "{" MODEL ",\"sortCondition\":{\"propertyName\":\"Name\",\"sortOrder\":\"Ascending\"},"
            "\"queryParameterGroups\":[{\"logicalOperator\":\"And\",\"parameters\":[{"
            "\"propertyName\":\"A\",\"operator\":\"Equals\"}]},{\"logicalOperator\":\"Or\","
            "\"parameters\":[{\"propertyName\":\"B\",\"operator\":\"Contains\",\"value\":\"x\"}]}],"
            "\"paging\":{\"pageNumber\":1,\"pageSize\":50}}");
}

static void test_default_is_copied(void **state) {
  json_t *schema = parse("{\"properties\":{\"tags\":{\"default\":[\"a\"]}}}");
  json_t *v1 = parse("{}"), *v2 = parse("{}");
  dg_errctx_t err;
  assert_int_equal(dg_mcp_schema_validate(schema, v1, &err), 0);
  json_array_append_new(json_object_get(v1, "tags"), json_string("changed"));
  assert_int_equal(dg_mcp_schema_validate(schema, v2, &err), 0);
  assert_int_equal(json_array_size(json_object_get(v2, "tags")), 1);
  assert_int_equal(json_array_size(json_object_get(
                       json_object_get(json_object_get(schema, "properties"), "tags"), "default")),
                   1);
  json_decref(schema);
  json_decref(v1);
  json_decref(v2);
}

/* ---- anyOf / oneOf --------------------------------------------------------- */

static const char alt_schema[] =
    "{\"properties\":{\"v\":{\"anyOf\":[{\"type\":\"string\",\"format\":\"uuid\"},"
    "{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"maxItems\":2}]}}}";

static void test_any_of(void **state) {
  expect_ok(alt_schema, "{\"v\":\"3f2504e0-4f89-41d3-9a0c-0305e82c3301\"}", NULL);
  expect_ok(alt_schema, "{\"v\":[\"a\",\"b\"]}", NULL);
  expect_err(alt_schema, "{\"v\":5}", "v",
             "Invalid argument 'v': got 5; allowed: one of these forms: (1) a GUID (8-4-4-4-12 "
             "hexadecimal digits); (2) an array of at most 2 items, each a string.");
  /* One form fits the value's type: its own complaint is added. */
  expect_err(alt_schema, "{\"v\":[\"a\",\"b\",\"c\"]}", "v",
             "Invalid argument 'v': got [\"a\",\"b\",\"c\"]; allowed: one of these forms: (1) a "
             "GUID (8-4-4-4-12 hexadecimal digits); (2) an array of at most 2 items, each a "
             "string. As form (2): Invalid argument 'v': got 3 items; allowed: at most 2 items.");
}

static void test_one_of_first_wins_and_defaults(void **state) {
  /* The first form fails after it would have filled a default; only the
   * winning second form's default may appear. */
  const char *schema = "{\"oneOf\":[{\"properties\":{\"a\":{\"default\":1},\"k\":{\"const\":1}}},"
                       "{\"properties\":{\"b\":{\"default\":2},\"k\":{\"const\":2}}}]}";
  expect_ok(schema, "{\"k\":2}", "{\"k\":2,\"b\":2}");
  expect_ok(schema, "{\"k\":1}", "{\"k\":1,\"a\":1}");
  expect_err(schema, "{\"k\":3}", "",
             "Invalid arguments: got {\"k\":3}; allowed: one of these forms: (1) an object with "
             "properties a, k; (2) an object with properties b, k.");
}

static void test_failed_branch_changes_nothing(void **state) {
  /* The first form fills inner.d and turns n and list[0] into integers
   * before k fails; the value must come out as the second form leaves it. */
  const char *schema =
      "{\"anyOf\":[{\"properties\":{\"inner\":{\"properties\":{\"d\":{\"default\":1}}},"
      "\"n\":{\"type\":\"integer\"},\"list\":{\"items\":{\"type\":\"integer\"}},"
      "\"k\":{\"const\":1}}},"
      "{\"properties\":{\"n\":{\"type\":\"number\"},\"k\":{\"const\":2}}}]}";
  json_t *s = parse(schema), *v = parse("{\"inner\":{},\"n\":5.0,\"list\":[6.0],\"k\":2}");
  dg_errctx_t err;
  assert_int_equal(dg_mcp_schema_validate(s, v, &err), 0);
  assert_int_equal(json_object_size(json_object_get(v, "inner")), 0);
  assert_true(json_is_real(json_object_get(v, "n")));
  assert_true(json_is_real(json_array_get(json_object_get(v, "list"), 0)));
  json_decref(s);
  json_decref(v);
}

static void test_any_of_closest_by_required(void **state) {
  const char *schema =
      "{\"anyOf\":[{\"type\":\"object\",\"required\":[\"property\"],\"properties\":{"
      "\"property\":{\"type\":\"string\"}}},{\"type\":\"object\",\"required\":[\"reference\"],"
      "\"properties\":{\"reference\":{\"type\":\"string\"}}}]}";
  expect_err(schema, "{\"reference\":5}", "",
             "Invalid arguments: got {\"reference\":5}; allowed: one of these forms: (1) an object "
             "with properties property; (2) an object with properties reference. As form (2): "
             "Invalid argument 'reference': got 5; allowed: a string.");
}

/* ---- the rest ---------------------------------------------------------------- */

static void test_ignored_keywords(void **state) {
  expect_ok("{\"title\":\"T\",\"description\":\"D\",\"x-custom\":1,\"pattern\":\"^a$\","
            "\"$schema\":\"https://json-schema.org/draft/2020-12/schema\"}",
            "\"bbb\"", NULL);
}

/* Keywords are recognised by their whole name, wherever they stand among
 * others that share their first letter or length. */
static void test_keywords_by_whole_name(void **state) {
  const char *schema = "{\"typ\":\"string\",\"maximumX\":1,\"m\":0,\"\":2,\"items2\":false,"
                       "\"maximum\":5,\"requiredX\":[\"a\"],\"type\":\"integer\"}";
  expect_ok(schema, "5", NULL);
  expect_err(schema, "6", "", "Invalid arguments: got 6; allowed: an integer of at most 5.");
  expect_err(schema, "\"x\"", "",
             "Invalid arguments: got \"x\"; allowed: an integer of at most 5.");
  expect_ok("{\"properties\":{\"a\":{\"minLength\":2}},\"additionalProperties\":false,"
            "\"required\":[\"a\"],\"maxItems\":0,\"type\":[\"object\",\"array\"]}",
            "{\"a\":\"ab\"}", NULL);
  expect_err("{\"properties\":{\"a\":{\"minLength\":2}},\"additionalProperties\":false,"
             "\"required\":[\"a\"],\"maxItems\":0,\"type\":[\"object\",\"array\"]}",
             "[1]", "", "Invalid arguments: got 1 item; allowed: at most 0 items.");
}

static void test_got_is_truncated(void **state) {
  char long_text[400], value[512];
  memset(long_text, 'x', 300);
  long_text[300] = '\0';
  snprintf(value, sizeof(value), "\"%s\"", long_text);
  json_t *s = parse("{\"type\":\"integer\"}"), *v = parse(value);
  dg_errctx_t err;
  assert_int_equal(dg_mcp_schema_validate(s, v, &err), DG_EINVAL);
  char want[256];
  snprintf(want, sizeof(want), "Invalid arguments: got \"%.79s...; allowed: an integer.",
           long_text);
  assert_string_equal(err.message, want);
  json_decref(s);
  json_decref(v);
}

static void test_got_truncated_at_character(void **state) {
  /* 100 two-byte characters: the cut falls between characters. */
  char value[512];
  size_t n = 0;
  value[n++] = '"';
  for (int i = 0; i < 100; i++) {
    value[n++] = '\xc3';
    value[n++] = '\xa9';
  }
  value[n++] = '"';
  value[n] = '\0';
  json_t *s = parse("{\"type\":\"null\"}"), *v = parse(value);
  dg_errctx_t err;
  assert_int_equal(dg_mcp_schema_validate(s, v, &err), DG_EINVAL);
  const char *got = strstr(err.message, "got \"") + 5;
  const char *end = strstr(got, "...");
  assert_non_null(end);
  assert_int_equal(end - got, 79 * 2);
  json_decref(s);
  json_decref(v);
}

static void test_depth_bounded(void **state) {
  /* A schema and a value nested 100 levels: an error, not a crash. */
  char schema[4096], value[512];
  size_t s = 0, v = 0;
  for (int i = 0; i < 100; i++) {
    s += (size_t)snprintf(schema + s, sizeof(schema) - s, "{\"items\":");
    value[v++] = '[';
  }
  s += (size_t)snprintf(schema + s, sizeof(schema) - s, "{}");
  for (int i = 0; i < 100; i++) {
    schema[s++] = '}';
    value[v++] = ']';
  }
  schema[s] = '\0';
  value[v] = '\0';
  json_t *js = parse(schema), *jv = parse(value);
  dg_errctx_t err;
  assert_int_equal(dg_mcp_schema_validate(js, jv, &err), DG_EINVAL);
  assert_non_null(strstr(err.message, "nested too deeply; allowed: at most 64 levels."));
  assert_memory_equal(err.param, "[0][0][0]", 9);
  json_decref(js);
  json_decref(jv);
  /* 60 levels are fine. */
  memset(value, '[', 60);
  memset(value + 60, ']', 60);
  value[120] = '\0';
  expect_ok(schema, value, NULL);
}

static void test_missing_value_and_null_err(void **state) {
  json_t *s = parse("{\"type\":\"object\"}");
  dg_errctx_t err;
  assert_int_equal(dg_mcp_schema_validate(s, NULL, &err), DG_EINVAL);
  assert_string_equal(err.message, "Invalid arguments: none given; allowed: an object.");
  json_t *v = parse("[]");
  assert_int_equal(dg_mcp_schema_validate(s, v, NULL), DG_EINVAL);
  json_decref(v);
  json_decref(s);
}

static void test_error_context_cleared_on_success(void **state) {
  json_t *s = parse("{}"), *v = parse("{}");
  dg_errctx_t err;
  dg_errctx_set(&err, DG_EIO, "stale", "stale message");
  assert_int_equal(dg_mcp_schema_validate(s, v, &err), 0);
  assert_int_equal(err.code, 0);
  assert_string_equal(err.param, "");
  assert_string_equal(err.message, "");
  json_decref(s);
  json_decref(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_type_each),
      cmocka_unit_test(test_type_list),
      cmocka_unit_test(test_integer_accepts_integral_real),
      cmocka_unit_test(test_enum),
      cmocka_unit_test(test_const),
      cmocka_unit_test(test_minimum_maximum),
      cmocka_unit_test(test_exclusive_bounds),
      cmocka_unit_test(test_length_in_characters),
      cmocka_unit_test(test_format_uuid),
      cmocka_unit_test(test_format_uri),
      cmocka_unit_test(test_format_date),
      cmocka_unit_test(test_format_date_time),
      cmocka_unit_test(test_unknown_format_ignored),
      cmocka_unit_test(test_items_nested_path),
      cmocka_unit_test(test_min_max_items),
      cmocka_unit_test(test_items_error_inside),
      cmocka_unit_test(test_unique_items),
      cmocka_unit_test(test_unique_items_long_array),
      cmocka_unit_test(test_items_false),
      cmocka_unit_test(test_required),
      cmocka_unit_test(test_additional_properties_false),
      cmocka_unit_test(test_additional_properties_schema),
      cmocka_unit_test(test_properties_nested),
      cmocka_unit_test(test_top_level_not_object),
      cmocka_unit_test(test_defaults_filled),
      cmocka_unit_test(test_default_is_copied),
      cmocka_unit_test(test_any_of),
      cmocka_unit_test(test_one_of_first_wins_and_defaults),
      cmocka_unit_test(test_failed_branch_changes_nothing),
      cmocka_unit_test(test_any_of_closest_by_required),
      cmocka_unit_test(test_ignored_keywords),
      cmocka_unit_test(test_keywords_by_whole_name),
      cmocka_unit_test(test_got_is_truncated),
      cmocka_unit_test(test_got_truncated_at_character),
      cmocka_unit_test(test_depth_bounded),
      cmocka_unit_test(test_missing_value_and_null_err),
      cmocka_unit_test(test_error_context_cleared_on_success),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
