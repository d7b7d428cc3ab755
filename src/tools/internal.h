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

/* ---- Saved Queries ------------------------------------------------------ */
struct dg_connector_request;

/* JSON Schema properties of a get_saved_queries entry, which
 * get_saved_query_details extends. */
#define DG__TOOLS_SAVED_QUERY_ENTRY_SCHEMA                                                         \
  "\"savedQueryId\":{\"type\":\"string\",\"format\":\"uuid\"},"                                    \
  "\"name\":{\"type\":\"string\"},"                                                                \
  "\"description\":{\"type\":\"string\"},"                                                         \
  "\"connector\":{\"type\":\"object\",\"required\":[\"connectorId\",\"name\",\"description\"],"    \
  "\"properties\":{\"connectorId\":{\"type\":\"string\",\"format\":\"uuid\"},"                     \
  "\"name\":{\"type\":\"string\"},\"description\":{\"type\":\"string\"}}},"                        \
  "\"dataModel\":{\"type\":\"object\","                                                            \
  "\"required\":[\"dataModelId\",\"name\",\"entityType\",\"entitySubType\"],"                      \
  "\"properties\":{\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\"},"                     \
  "\"name\":{\"type\":\"string\"},\"entityType\":{\"type\":\"string\"},"                           \
  "\"entitySubType\":{\"type\":[\"string\",\"null\"]}}},"                                          \
  "\"DeclaredInputs\":{\"type\":\"array\",\"items\":{\"type\":\"object\","                         \
  "\"required\":[\"name\",\"type\",\"required\",\"default\",\"description\"],"                     \
  "\"properties\":{\"name\":{\"type\":\"string\"},"                                                \
  "\"type\":{\"type\":\"string\",\"enum\":[\"String\",\"Int\",\"Long\",\"Double\",\"Decimal\","    \
  "\"Boolean\",\"Date\",\"DateTime\",\"Guid\"]},"                                                  \
  "\"required\":{\"type\":\"boolean\"},\"default\":{\"type\":[\"string\",\"null\"]},"              \
  "\"description\":{\"type\":\"string\"}}}}"

/* True when p may list and run q: the role grants the query and p may
 * read its Data Model. */
bool dg__tools_may_use_saved_query(const dg_principal_t *p, const dg_saved_query_t *q);
/* The Saved Query with the given id that p may use, or NULL with err
 * saying "Invalid argument '<param>': no Saved Query with id ..." (one p
 * may not use is reported exactly like an unknown one). */
const dg_saved_query_t *dg__tools_find_saved_query(const dg_catalog_t *cat, const dg_principal_t *p,
                                                   const char *param, const char *given,
                                                   dg_errctx_t *err);
/* get_saved_queries: {"savedQueries": [...]}; NULL when out of memory. */
json_t *dg__tools_saved_queries_json(const dg_catalog_t *cat, const dg_principal_t *p);
/* get_saved_query_details: the entry plus the fields p may see. */
json_t *dg__tools_saved_query_details_json(const dg_saved_query_t *q, const dg_principal_t *p);
/* Checks execute_saved_query's inputs ([{key, value}], already shaped by
 * the schema) against q's DeclaredInputs. On success *values (in arena)
 * holds one value per declared input, in order: the given one, else the
 * default, else NULL; the values point into inputs and the catalog. On
 * failure err names the item, what was given and what is allowed. */
int dg__tools_saved_inputs(const dg_saved_query_t *q, const json_t *inputs, dg_arena_t *arena,
                           const char ***values, dg_errctx_t *err);
/* Checks the properties selection (NULL: every field) and fills *selected
 * (in arena), one flag per field of q, false for fields p may not see. */
int dg__tools_saved_selection(const dg_saved_query_t *q, const dg_principal_t *p,
                              const json_t *properties, dg_arena_t *arena, bool **selected,
                              dg_errctx_t *err);
/* Builds the connector request of q from the values (path and query
 * URL-encoded, body JSON-encoded, headers); strings live in arena. */
int dg__tools_saved_request(const dg_saved_query_t *q, const char *const *values, dg_arena_t *arena,
                            struct dg_connector_request *req, dg_errctx_t *err);
/* Maps a response body onto entities of q's model: {"savedQueryId", "name",
 * "dataModelId", "entities": [{"id", "properties"}], "count", "truncated",
 * "warnings"?}. Stops at q->max_results items or when the entities pass
 * max_bytes (truncated true). NULL with err when the body is not JSON or
 * a GraphQL API answered only errors. Safe on a worker thread. */
json_t *dg__tools_saved_map(const dg_saved_query_t *q, const bool *selected, const char *body,
                            size_t len, size_t max_bytes, dg_errctx_t *err);

/* ---- Data entry forms (forms.c) ------------------------------------------------ */

/* A field of a model's form for p: a stored property p may see that is
 * not read-only (a hidden one too: hidden only keeps it off the form). */
bool dg__tools_form_field(const dg_principal_t *p, const dg_model_t *m, const dg_property_t *prop);
/* "A, B, C": the names of the form fields, cut to fit. */
void dg__tools_form_field_names(const dg_principal_t *p, const dg_model_t *m, char *out,
                                size_t size);
/* The text of a stored value ("12.5", "true", "2024-03-01"); NULL for null. */
const char *dg__tools_form_text(const json_t *v, char *buf, size_t size);

/* One checked {key, value} item. */
typedef struct dg__tools_form_value {
  const dg_property_t *prop;
  dg_store_value_t value; /* DG_STORE_NULL when cleared */
  json_t *json;           /* the value as given (null when cleared) */
  size_t index;           /* position in the argument */
  const char *param;      /* "formValues[2].value" */
} dg__tools_form_value_t;

/* Checks [{key, value}] items (already shaped by the schema) against m's
 * form fields for p: unknown, read-only and Inbound keys, keys given twice
 * and values that are not of the field's type are refused, with err
 * naming the item, what was given and what is allowed; "" clears a field
 * that is not a String. The list and values live in arena. */
int dg__tools_form_values(const dg_principal_t *p, const dg_model_t *m, const json_t *items,
                          const char *param, dg_arena_t *arena, dg__tools_form_value_t **out,
                          size_t *n, dg_errctx_t *err);

/* {"<Property>": value} from an entity's "properties" (camelCased keys). */
json_t *dg__tools_record_values(const dg_model_t *m, const json_t *properties);
/* Every stored property of m (Inbound references hold no value). */
int dg__tools_stored_select(const dg_model_t *m, dg_arena_t *arena, dg_store_select_t *out);
/* A store answer as jansson values: the parsed text of a query's or
 * fetch's answer (written out as JSON text on the threadpool), or the
 * value itself; the caller releases it; NULL when it cannot be read. For
 * small answers: one record, a page of choices. */
json_t *dg__tools_store_json(json_t *result);
/* A copy of s in lower case (GUIDs), in arena. */
char *dg__tools_lower(dg_arena_t *arena, const char *s);
/* A fetch of one record with every stored property; NULL out of memory. */
dg_store_fetch_t *dg__tools_record_fetch(const dg_model_t *m, const char *id, dg_arena_t *arena);

/* get_data_entry_form's fields ({key, label, type, control, required,
 * group, value, choices?, lookup?}) as an Adaptive Card 1.5 (form_card.c). */
json_t *dg__tools_form_card(const dg_model_t *m, const json_t *fields, const char *id);

#endif
