/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The tool registry: every implemented tool in tools/list order, the
 * instructions that tell assistants which tool to call first, and helpers
 * shared by the tool files. */
#include "datagate/tools.h"
#include "tools/internal.h"

extern const dg_tool_t dg_tool_get_data_models;
extern const dg_tool_t dg_tool_get_data_model_properties;
extern const dg_tool_t dg_tool_lookup_by_keyword;
extern const dg_tool_t dg_tool_query_entities;
extern const dg_tool_t dg_tool_get_entities_by_ids;
extern const dg_tool_t dg_tool_aggregate_entities;
extern const dg_tool_t dg_tool_get_saved_queries;
extern const dg_tool_t dg_tool_get_saved_query_details;
extern const dg_tool_t dg_tool_execute_saved_query;
extern const dg_tool_t dg_tool_aggregate_saved_query;
extern const dg_tool_t dg_tool_get_data_entry_form;
extern const dg_tool_t dg_tool_submit_data_entry_form;
extern const dg_tool_t dg_tool_get_file_text;

const dg_tool_t *const dg_tools_registry[] = {
    &dg_tool_get_data_models,     &dg_tool_get_data_model_properties,
    &dg_tool_lookup_by_keyword,   &dg_tool_query_entities,
    &dg_tool_aggregate_entities,  &dg_tool_get_entities_by_ids,
    &dg_tool_get_saved_queries,   &dg_tool_get_saved_query_details,
    &dg_tool_execute_saved_query, &dg_tool_aggregate_saved_query,
    &dg_tool_get_data_entry_form, &dg_tool_submit_data_entry_form,
    &dg_tool_get_file_text,
};

const size_t dg_tools_count = DG_ARRAY_SIZE(dg_tools_registry);

const char dg_tools_instructions[] =
    "datagate exposes business data as Data Models. Call get_data_models first to learn the "
    "models and their dataModelId, entityType and entitySubType, then get_data_model_properties "
    "for the property names, data types and references of a model. To compare a foreign key, "
    "resolve the related entity with lookup_by_keyword and use its id. Then read data with "
    "query_entities (filters, sorting, paging, expand), aggregate_entities (sums, counts, "
    "averages, grouped or not) or get_entities_by_ids. For Saved Queries call get_saved_queries, "
    "then get_saved_query_details, then execute_saved_query, or aggregate_saved_query for sums, "
    "counts and averages over a Saved Query's live answer. To create or change a record, call "
    "get_data_entry_form before submit_data_entry_form; submit_data_entry_form is destructive, so "
    "confirm with the user before calling it. To read a document, pass an entity's "
    "externalFileLocation to get_file_text and repeat with nextOffset while hasMore is true.";

const dg_model_t *dg_tools_model_arg(dg_mcp_tool_call_t *call, const char *param,
                                     dg_errctx_t *err) {
  const char *given = json_string_value(json_object_get(dg_mcp_tool_call_args(call), param));
  return dg__tools_find_model(dg_mcp_tool_call_catalog(call), dg_mcp_tool_call_principal(call),
                              param, given, err);
}

dg_tools_env_t *dg_tools_env(const dg_mcp_tool_call_t *call) {
  return dg_mcp_tool_call_context(call);
}

dg_tools_answers_t *dg__tools_answers_of(const dg_mcp_tool_call_t *call) {
  const dg_tools_env_t *env = dg_tools_env(call);
  return env != NULL ? env->answers : NULL;
}

void dg__tools_reply(dg_mcp_tool_call_t *call, json_t *result, const char *what) {
  if (result == NULL)
    dg_mcp_tool_call_failf(call, "%s: out of memory.", what);
  else
    dg_mcp_tool_call_succeed(call, result);
}

size_t dg__tools_budget(dg_mcp_tool_call_t *call) {
  json_int_t asked =
      json_integer_value(json_object_get(dg_mcp_tool_call_args(call), "maxResultBytes"));
  size_t limit = dg_mcp_tool_call_result_limit(call);
  return asked > 0 && (uint64_t)asked < limit ? (size_t)asked : 0;
}

void *dg__tools_call_state(dg_mcp_tool_call_t *call, size_t size, const char *what) {
  void *state = dg_arena_calloc(dg_mcp_tool_call_arena(call), 1, size);
  if (state == NULL)
    dg_mcp_tool_call_failf(call, "%s: out of memory.", what);
  return state;
}

void dg__tools_start(dg_mcp_tool_call_t *call, size_t size, const char *what,
                     dg__tools_start_fn start) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  void *state = dg__tools_call_state(call, size, what);
  if (state != NULL && start(call, state, &err) != 0)
    dg_mcp_tool_call_fail(call, &err);
}

void dg__tools_reply_answer(dg_mcp_tool_call_t *call, dg__tools_answer_kind_t kind,
                            const dg_model_t *model, dg__tools_answer_build_t build,
                            const char *what) {
  json_t *answer =
      dg__tools_answer(dg__tools_answers_of(call), kind, dg_mcp_tool_call_catalog(call), model,
                       dg_mcp_tool_call_principal(call), build);
  dg__tools_reply(call, answer, what);
}
