/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* tools internals: the result-building logic of each tool, kept apart from
 * the dg_tool_t run functions so that unit tests can call it without the
 * MCP layer. Never included from outside src/tools. */
#ifndef DATAGATE_TOOLS_INTERNAL_H
#define DATAGATE_TOOLS_INTERNAL_H

#include <jansson.h>

#include "datagate/auth.h"
#include "datagate/catalog.h"
#include "datagate/client.h"
#include "datagate/extract.h"
#include "datagate/files.h"
#include "datagate/forms.h"
#include "datagate/mcp.h"
#include "datagate/save.h"
#include "datagate/store.h"
#include "datagate/tools.h"

/* The model with the given id that p may read, or NULL with err saying
 * "Invalid argument '<param>': no Data Model with id '<given>'; ...". A
 * model p may not read is reported exactly like an unknown one. */
const dg_model_t *dg__tools_find_model(const dg_catalog_t *cat, const dg_principal_t *p,
                                       const char *param, const char *given, dg_errctx_t *err);

/* jansson's constructors return NULL when memory runs out and the setters
 * then fail; one flag per result catches all of them: dg__tools_put sets
 * key to value (stolen) or clears *ok, and dg__tools_finish returns o, or
 * frees it and returns NULL when !ok (describe.c). */
void dg__tools_put(json_t *obj, const char *key, json_t *value, bool *ok);
json_t *dg__tools_finish(json_t *o, bool ok);
/* A JSON string, or null for NULL. */
json_t *dg__tools_string_or_null(const char *s);
/* {dataModelId, name, description?, entityType, entitySubType} of m, as
 * get_data_models lists it and Saved Queries name their model; NULL when
 * out of memory. */
json_t *dg__tools_model_json(const dg_model_t *m, bool with_description);

/* get_data_models: {"dataModels": [...]} with the models p may read.
 * NULL when out of memory. */
json_t *dg__tools_data_models_json(const dg_catalog_t *cat, const dg_principal_t *p);

/* get_data_model_properties: the model and the properties p may see.
 * NULL when out of memory. */
json_t *dg__tools_model_properties_json(const dg_model_t *model, const dg_principal_t *p);

/* The seed's reference object of a Reference property, as p sees it
 * (expandable false when p cannot read the target). */
json_t *dg__tools_reference_json(const dg_reference_t *ref, const dg_principal_t *p);

/* ---- Answers kept as text (answers.c) ----------------------------------------- */
typedef enum dg__tools_answer_kind {
  DG__TOOLS_ANSWER_DATA_MODELS,
  DG__TOOLS_ANSWER_MODEL_PROPERTIES, /* one per model */
  DG__TOOLS_ANSWER_SAVED_QUERIES,
} dg__tools_answer_kind_t;

/* Builds the answer of kind (for model when it takes one) for p. */
typedef json_t *(*dg__tools_answer_build_t)(const dg_catalog_t *cat, const dg_model_t *model,
                                            const dg_principal_t *p);

/* The answer of kind for p: from answers when a caller with the same roles
 * asked for it on the same catalog snapshot, else built, written out once
 * as JSON text (dg_json_raw) and kept. A new reference, or NULL when out
 * of memory; with answers NULL it is built every time. */
json_t *dg__tools_answer(dg_tools_answers_t *answers, dg__tools_answer_kind_t kind,
                         const dg_catalog_t *cat, const dg_model_t *model, const dg_principal_t *p,
                         dg__tools_answer_build_t build);
/* The call's table of answers, NULL when it has none. */
dg_tools_answers_t *dg__tools_answers_of(const dg_mcp_tool_call_t *call);
/* The number of answers held (for tests). */
size_t dg__tools_answers_count(const dg_tools_answers_t *answers);

/* Ends the call with result, or, when result is NULL (out of memory),
 * with "<what>: out of memory." (registry.c). */
void dg__tools_reply(dg_mcp_tool_call_t *call, json_t *result, const char *what);
/* size zeroed bytes in the call's arena for a tool's state; NULL after
 * ending the call with "<what>: out of memory." */
void *dg__tools_call_state(dg_mcp_tool_call_t *call, size_t size, const char *what);
/* Starts a tool that keeps state across callbacks: state is its zeroed
 * state; 0 once started (or already answered), else the error in err. */
typedef int (*dg__tools_start_fn)(dg_mcp_tool_call_t *call, void *state, dg_errctx_t *err);
/* The run() of such a tool: the state (as dg__tools_call_state), then
 * start; a failed start ends the call with its error. */
void dg__tools_start(dg_mcp_tool_call_t *call, size_t size, const char *what,
                     dg__tools_start_fn start);
/* The run() of a tool that answers with a kept answer (dg__tools_answer)
 * for model (NULL for a catalog-wide one). */
void dg__tools_reply_answer(dg_mcp_tool_call_t *call, dg__tools_answer_kind_t kind,
                            const dg_model_t *model, dg__tools_answer_build_t build,
                            const char *what);

/* The annotations of a tool that only reads: the gateway's own data, or an
 * external system's (open world). */
#define DG__TOOLS_READS_GATEWAY                                                                    \
  .read_only = true, .destructive = false, .idempotent = true, .open_world = false
#define DG__TOOLS_READS_UPSTREAM                                                                   \
  .read_only = true, .destructive = false, .idempotent = true, .open_world = true

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

#define DG__TOOLS_FILTER_VALUE_TEXT                                                                \
  "Comparison value, written as text: a number as 12.5, a boolean as true or false, a date as "    \
  "YYYY-MM-DD, the related entity's GUID for a Reference; the text null with valueType null "      \
  "tests for null. Leave out with comparisonPropertyName"

/* A comparison value as tools/list shows it: text, one type, which
 * function-calling clients that take one type per field accept (null is
 * the text "null" with valueType null). */
#define DG__TOOLS_VALUE_LISTED(what)                                                               \
  "{\"type\":\"string\",\"maxLength\":4096,\"description\":\"" what "\"}"
/* What tools/call accepts for it: JSON numbers, booleans and null too, which
 * mean the same as their text. */
#define DG__TOOLS_VALUE_ACCEPTED(what)                                                             \
  "{\"type\":[\"string\",\"number\",\"boolean\",\"null\"],\"maxLength\":4096,"                     \
  "\"description\":\"" what "\"}"

/* queryParameterGroups of query_entities and aggregate_entities, with the
 * value schema VALUE (one of the two above). */
#define DG__TOOLS_FILTER_GROUPS(VALUE)                                                             \
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
  "\"value\":" VALUE(DG__TOOLS_FILTER_VALUE_TEXT) ","                                              \
                                                  "\"valueType\":{\"type\":\"string\",\"enum\":["  \
                                                  "\"boolean\",\"string\",\"number\",\"null\"],"   \
                                                  "\"description\":\"How value is to be read: "    \
                                                  "number for a numeric property, boolean for a "  \
                                                  "Boolean, null when testing for null; string "   \
                                                  "(the default) otherwise\"},"                    \
                                                  "\"comparisonPropertyName\":{\"type\":"          \
                                                  "\"string\",\"minLength\":1,\"maxLength\":128,"  \
                                                  "\"description\":\"Compare propertyName with "   \
                                                  "this property of the same entity instead of a " \
                                                  "value\"},"                                      \
                                                  "\"reference\":{\"type\":\"string\","            \
                                                  "\"minLength\":1,\"maxLength\":128,"             \
                                                  "\"description\":\"A Reference property: the "   \
                                                  "filter applies to the related entity\"},"       \
                                                  "\"match\":{\"type\":\"string\",\"enum\":["      \
                                                  "\"Any\"],\"description\":\"For an Inbound "     \
                                                  "reference: true when at least one related "     \
                                                  "entity matches\"}}}}}}}"

#define DG__TOOLS_FILTER_GROUPS_SCHEMA DG__TOOLS_FILTER_GROUPS(DG__TOOLS_VALUE_LISTED)
#define DG__TOOLS_FILTER_GROUPS_ACCEPTED DG__TOOLS_FILTER_GROUPS(DG__TOOLS_VALUE_ACCEPTED)

#define DG__TOOLS_ENTITY_SCHEMA                                                                    \
  "{\"type\":\"object\",\"required\":[\"id\",\"properties\"],\"properties\":{"                     \
  "\"id\":{\"type\":\"string\"},\"properties\":{\"type\":\"object\",\"properties\":{"              \
  "\"expanded\":{\"type\":\"object\"},\"expandedTruncated\":{\"type\":\"array\",\"items\":"        \
  "{\"type\":\"string\"}}}}}}"

/* The optional maxResultBytes argument of the tools whose answers are
 * trimmed to fit: a smaller budget for one call (the server's
 * maxResultBytes caps it). */
#define DG__TOOLS_BUDGET_SCHEMA                                                                    \
  "{\"type\":\"integer\",\"minimum\":1024,\"maximum\":1073741824,\"description\":\"Bytes "         \
  "the answer may take, at most the server's limit (maxResultBytes, 1 MiB by default); what does " \
  "not fit whole is left out, and the answer says what and how to get it\"}"
/* The maxResultBytes argument within the server's limit (0: not given). */
size_t dg__tools_budget(dg_mcp_tool_call_t *call);

/* The parser context of a call: its catalog, principal and arena. */
void dg__tools_parse_ctx(dg_mcp_tool_call_t *call, dg_errctx_t *err, dg_store_parse_t *out);
/* The running store, or NULL after failing the call with a clear error. */
dg_store_t *dg__tools_store(dg_mcp_tool_call_t *call);
/* The run() of each entity tool: parses the call's arguments for its
 * operation (a dataModelId first, except for a lookup), starts it in the
 * store and ends the call with the store's result or its error. A
 * cancelled call cancels the store request; the call still ends from its
 * completion. */
void dg__tools_run_query(dg_mcp_tool_call_t *call);
void dg__tools_run_fetch(dg_mcp_tool_call_t *call);
void dg__tools_run_lookup(dg_mcp_tool_call_t *call);
void dg__tools_run_aggregate(dg_mcp_tool_call_t *call);

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
/* Starts q's API call for call with the values (dg__tools_saved_inputs),
 * carrying the call's request and trace ids: 0 (done follows, *out is the
 * handle) or a DG_E* code with err (DG_ENOTSUP when the gateway runs no
 * connector client). */
int dg__tools_saved_call(dg_mcp_tool_call_t *call, const dg_saved_query_t *q,
                         const char *const *values, dg_connector_done_fn done, void *user,
                         dg_connector_call_t **out, dg_errctx_t *err);

/* One Saved Query API call of a tool (execute_saved_query and
 * aggregate_saved_query), in the call's arena: answer turns the response
 * body into the result, on the loop thread for a small body and on the
 * threadpool for a large one; the result, or an error naming the
 * connector and the call, ends the tool call. */
typedef struct dg__tools_saved_run dg__tools_saved_run_t;
typedef json_t *(*dg__tools_saved_answer_fn)(dg__tools_saved_run_t *r, const char *body, size_t len,
                                             dg_errctx_t *err);
struct dg__tools_saved_run {
  dg_mcp_tool_call_t *call;
  const dg_saved_query_t *q;
  dg__tools_saved_answer_fn answer; /* may run on a worker thread */
  void *user;                       /* the tool's own state, for answer */
  const char *local_failure;        /* "failed", "could not be aggregated" */
  bool too_big_is_local;            /* DG_E2BIG from answer is no upstream fault */
  dg_connector_call_t *upstream;    /* while the API call runs */
  uv_work_t work;
  char *body; /* copy of a large answer, for the threadpool */
  size_t len;
  json_t *result;
  dg_errctx_t err;
  const char *where; /* "GET https://host/path" for errors about the answer */
};
/* Starts r's API call (r->call, r->q and r->answer set) with the values of
 * dg__tools_saved_inputs: 0, or a DG_E* code with err. */
int dg__tools_saved_run_start(dg__tools_saved_run_t *r, const char *const *values,
                              dg_errctx_t *err);

/* ---- Provenance (provenance.c) ------------------------------------------- */

/* Ends a get_file_text call with result (a chunk, stolen; NULL: out of
 * memory): structuredContent gains "provenance" {kind "document", source
 * (the URL without its query), sourceName, offset, endOffset, untrusted},
 * and the text item is the result without its text followed by the text
 * between BEGIN and END markers that name the source and share a random
 * tag. */
void dg__tools_reply_document(dg_mcp_tool_call_t *call, json_t *result, const char *source,
                              const char *source_name);
/* Bytes of document text that an answer of budget bytes has room for
 * beside its envelope and fence. */
size_t dg__tools_document_room(size_t budget);

/* ---- Confirming a submission (submit_confirm.c) ------------------------------ */

typedef enum dg__tools_confirmation {
  DG__TOOLS_CONFIRMED,
  DG__TOOLS_DECLINED,  /* the user said no */
  DG__TOOLS_CANCELLED, /* the user dismissed the question, or the client failed to ask */
  DG__TOOLS_ABANDONED, /* the call was canceled or timed out while the user decided */
} dg__tools_confirmation_t;

typedef void (*dg__tools_confirm_fn)(void *data, dg__tools_confirmation_t outcome);

/* What the question shows: the record's write (its values already
 * checked), the endpoint whose save actions will run (NULL: none), the
 * submitting system (may be NULL) and the call's line changes (may be
 * NULL). */
typedef struct dg__tools_confirm_view {
  const dg_store_write_t *write;
  const dg_endpoint_t *endpoint;
  const char *system;
  const dg_forms_lines_t *lines;
} dg__tools_confirm_view_t;

/* Asks the caller's user to confirm, as server.submitConfirmation says.
 * Returns 1 when the submission may go ahead without a question, 0 when the
 * user is being asked (done follows, once, on a later loop turn), or a
 * negative DG_E* code with err when it may not go ahead (confirmation is
 * required and this client cannot be asked). */
int dg__tools_confirm_submit(dg_mcp_tool_call_t *call, const dg__tools_confirm_view_t *view,
                             dg__tools_confirm_fn done, void *data, dg_errctx_t *err);

#endif
