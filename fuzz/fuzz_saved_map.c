/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes the mapping of upstream responses onto entities: the input is a
 * response body, mapped by two Saved Queries (one object by a plain path,
 * a list by a wildcard path with GraphQL error handling). A failure must
 * come with a message; a result must keep its bounds (count, maxResults),
 * give every entity a GUID and only the configured keys, each value of its
 * property's type or null. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/save.h"
#include "fuzz_catalog.h"

static const char models[] =
    "{\"models\": [{\"id\": \"8a03cbc2-7f01-4d47-bdf0-0755336a3a70\", \"name\": \"Orders\", "
    "\"entityType\": \"Order\", \"properties\": ["
    "{\"name\": \"Number\", \"dataType\": \"String\"}, {\"name\": \"Count\", \"dataType\": "
    "\"Int\"},"
    "{\"name\": \"Big\", \"dataType\": \"Long\"}, {\"name\": \"Amount\", \"dataType\": "
    "\"Decimal\"},"
    "{\"name\": \"Ratio\", \"dataType\": \"Double\"}, {\"name\": \"Open\", \"dataType\": "
    "\"Boolean\"}, {\"name\": \"Day\", \"dataType\": \"Date\"}, {\"name\": \"At\", \"dataType\": "
    "\"DateTime\"}, {\"name\": \"Ref\", \"dataType\": \"Guid\"}]}]}";

static const char connectors[] =
    "{\"connectors\": [{\"id\": \"1f0c1a52-9d1e-4c43-9b4e-0e6f1c2f0a01\", \"name\": \"Api\", "
    "\"baseUrl\": \"http://api.example.com\"}]}";

#define FIELDS                                                                                     \
  "[{\"property\": \"Number\", \"path\": \"n\"}, {\"property\": \"Count\", \"path\": \"c\"},"      \
  "{\"property\": \"Big\", \"path\": \"b\"}, {\"property\": \"Amount\", \"path\": \"a.v\"},"       \
  "{\"property\": \"Ratio\", \"path\": \"['r']\"}, {\"property\": \"Open\", \"path\": \"o\"},"     \
  "{\"property\": \"Day\", \"path\": \"d\"}, {\"property\": \"At\", \"path\": \"t\"},"             \
  "{\"property\": \"Ref\", \"path\": \"g[0]\"}]"

static const char queries[] =
    "{\"savedQueries\": [{\"id\": \"5b7d0c6e-2f49-4a51-9d0e-3c1e7a9b0001\", \"name\": \"One\", "
    "\"connector\": \"Api\", \"dataModel\": \"Orders\", \"request\": {}, \"resultPath\": "
    "\"$.order\", \"idPath\": \"id\", \"maxResults\": 5, \"fields\": " FIELDS "},"
    "{\"id\": \"5b7d0c6e-2f49-4a51-9d0e-3c1e7a9b0002\", \"name\": \"Many\", \"connector\": "
    "\"Api\", \"dataModel\": \"Orders\", \"request\": {\"type\": \"GraphQL\", \"graphql\": "
    "{\"query\": \"{ items }\"}}, \"resultPath\": \"data.items[*].node\", \"maxResults\": 20, "
    "\"fields\": " FIELDS "}]}";

static dg_catalog_t *cat;

static void load(void) {
  static const fuzz_file_t files[] = {{"datagate.json", "{}"},
                                      {"models.json", models},
                                      {"connectors.json", connectors},
                                      {"saved_queries.json", queries}};
  cat = fuzz_catalog_load(files, DG_ARRAY_SIZE(files));
}

/* A value must be null or of the JSON kind its property's type maps to. */
static void check_value(const dg_property_t *p, const json_t *v) {
  if (json_is_null(v))
    return;
  bool ok = false;
  switch (p->type) {
  case DG_TYPE_INT:
  case DG_TYPE_LONG:
    ok = json_is_integer(v);
    break;
  case DG_TYPE_DOUBLE:
  case DG_TYPE_DECIMAL:
    ok = json_is_number(v);
    break;
  case DG_TYPE_BOOLEAN:
    ok = json_is_boolean(v);
    break;
  case DG_TYPE_GUID:
    ok = json_is_string(v) && dg_uuid_valid(json_string_value(v));
    break;
  case DG_TYPE_DATE:
    ok = json_is_string(v) && dg_saved_input_value_valid(DG_TYPE_DATE, json_string_value(v));
    break;
  default:
    ok = json_is_string(v);
  }
  if (!ok)
    abort();
}

static void check_result(const dg_saved_query_t *q, const json_t *r, bool all) {
  const json_t *entities = json_object_get(r, "entities");
  size_t n = json_array_size(entities);
  if (!json_is_array(entities) || n > q->max_results ||
      json_integer_value(json_object_get(r, "count")) != (json_int_t)n)
    abort();
  for (size_t i = 0; i < n; i++) {
    const json_t *e = json_array_get(entities, i);
    const json_t *props = json_object_get(e, "properties");
    if (!dg_uuid_valid(json_string_value(json_object_get(e, "id"))))
      abort();
    if (json_object_size(props) != (all ? q->nfields : 2))
      abort();
    for (size_t f = 0; f < q->nfields; f++) {
      const json_t *v = json_object_get(props, q->fields[f].property->json_name);
      if (v != NULL)
        check_value(q->fields[f].property, v);
    }
  }
}

static void map(const dg_saved_query_t *q, const uint8_t *data, size_t size, bool all) {
  bool sel[16];
  for (size_t i = 0; i < q->nfields; i++)
    sel[i] = all || i == 1 || i == 6;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  json_t *r = dg_save_query_map(q, sel, (const char *)data, size, 1 << 20, &err);
  if (r == NULL && err.message[0] == '\0')
    abort();
  if (r != NULL)
    check_result(q, r, all);
  json_decref(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (cat == NULL)
    load();
  map(dg_catalog_saved_query(cat, "One"), data, size, true);
  map(dg_catalog_saved_query(cat, "Many"), data, size, size % 2 == 0);
  return 0;
}
