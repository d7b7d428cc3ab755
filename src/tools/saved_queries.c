/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Saved Queries as a caller sees them: the entries of get_saved_queries,
 * the details with mapped fields, and the checks of execute_saved_query's
 * arguments (the query id, inputs against DeclaredInputs, the properties
 * selection), all filtered by the caller's permissions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "tools/internal.h"

bool dg__tools_may_use_saved_query(const dg_principal_t *p, const dg_saved_query_t *q) {
  return dg_auth_can_use_saved_query(p, q->id, q->name) && dg_auth_can_read_model(p, q->model);
}

const dg_saved_query_t *dg__tools_find_saved_query(const dg_catalog_t *cat, const dg_principal_t *p,
                                                   const char *param, const char *given,
                                                   dg_errctx_t *err) {
  const dg_saved_query_t *q = NULL;
  for (size_t i = 0; given != NULL && q == NULL && i < cat->nsaved_queries; i++) {
    if (strcasecmp(cat->saved_queries[i].id, given) == 0)
      q = &cat->saved_queries[i];
  }
  if (q != NULL && dg__tools_may_use_saved_query(p, q))
    return q;
  dg_errctx_set(err, DG_EINVAL, param,
                "Invalid argument '%s': no Saved Query with id '%.128s'; call get_saved_queries "
                "for the valid ids.",
                param, given ? given : "");
  return NULL;
}

/* ---- Describing -------------------------------------------------------------- */

static json_t *connector_json(const dg_connector_t *c) {
  json_t *o = json_object();
  bool ok = o != NULL;
  if (!ok)
    return NULL;
  dg__tools_put(o, "connectorId", json_string(c->id), &ok);
  dg__tools_put(o, "name", json_string(c->name), &ok);
  dg__tools_put(o, "description", json_string(c->description ? c->description : ""), &ok);
  return dg__tools_finish(o, ok);
}

static json_t *input_json(const dg_saved_input_t *in) {
  json_t *o = json_object();
  bool ok = o != NULL;
  if (!ok)
    return NULL;
  dg__tools_put(o, "name", json_string(in->name), &ok);
  dg__tools_put(o, "type", json_string(dg_data_type_name(in->type)), &ok);
  dg__tools_put(o, "required", json_boolean(in->required), &ok);
  dg__tools_put(o, "default", dg__tools_string_or_null(in->default_value), &ok);
  dg__tools_put(o, "description", json_string(in->description ? in->description : ""), &ok);
  return dg__tools_finish(o, ok);
}

static json_t *inputs_json(const dg_saved_query_t *q) {
  json_t *a = json_array();
  for (size_t i = 0; a != NULL && i < q->ninputs; i++) {
    if (json_array_append_new(a, input_json(&q->inputs[i])) != 0) {
      json_decref(a);
      return NULL;
    }
  }
  return a;
}

static json_t *entry_json(const dg_saved_query_t *q) {
  json_t *o = json_object();
  bool ok = o != NULL;
  if (!ok)
    return NULL;
  dg__tools_put(o, "savedQueryId", json_string(q->id), &ok);
  dg__tools_put(o, "name", json_string(q->name), &ok);
  dg__tools_put(o, "description", json_string(q->description ? q->description : ""), &ok);
  dg__tools_put(o, "connector", connector_json(q->connector), &ok);
  dg__tools_put(o, "dataModel", dg__tools_model_json(q->model, false), &ok);
  dg__tools_put(o, "DeclaredInputs", inputs_json(q), &ok);
  return dg__tools_finish(o, ok);
}

json_t *dg__tools_saved_queries_json(const dg_catalog_t *cat, const dg_principal_t *p) {
  json_t *list = json_array();
  json_t *result = json_object();
  bool ok = list != NULL && result != NULL;
  for (size_t i = 0; ok && i < cat->nsaved_queries; i++) {
    if (dg__tools_may_use_saved_query(p, &cat->saved_queries[i]))
      ok = json_array_append_new(list, entry_json(&cat->saved_queries[i])) == 0;
  }
  if (ok)
    ok = json_object_set(result, "savedQueries", list) == 0;
  json_decref(list);
  return dg__tools_finish(result, ok);
}

static json_t *field_json(const dg_saved_field_t *f) {
  json_t *o = json_object();
  bool ok = o != NULL;
  if (!ok)
    return NULL;
  dg__tools_put(o, "name", json_string(f->property->name), &ok);
  dg__tools_put(o, "type", json_string(dg_data_type_name(f->property->type)), &ok);
  dg__tools_put(o, "description", json_string(f->description ? f->description : ""), &ok);
  return dg__tools_finish(o, ok);
}

json_t *dg__tools_saved_query_details_json(const dg_saved_query_t *q, const dg_principal_t *p) {
  json_t *o = entry_json(q);
  json_t *fields = json_array();
  bool ok = o != NULL && fields != NULL;
  for (size_t i = 0; ok && i < q->nfields; i++) {
    if (dg_auth_can_see_property(p, q->model, q->fields[i].property))
      ok = json_array_append_new(fields, field_json(&q->fields[i])) == 0;
  }
  if (ok)
    ok = json_object_set(o, "fields", fields) == 0;
  json_decref(fields);
  if (o != NULL) {
    bool graphql = q->request.kind == DG_REQUEST_GRAPHQL;
    dg__tools_put(o, "requestType", json_string(graphql ? "GraphQL" : "REST"), &ok);
    dg__tools_put(o, "maxResults", json_integer(q->max_results), &ok);
  }
  return dg__tools_finish(o, ok);
}

/* ---- Inputs ------------------------------------------------------------------ */

/* "OrderNumber (String, required), Limit (Int, default 25)", bounded. */
static void describe_inputs(const dg_saved_query_t *q, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < q->ninputs && len + 1 < size; i++) {
    const dg_saved_input_t *in = &q->inputs[i];
    int n =
        snprintf(out + len, size - len, "%s%s (%s%s%s%s)", i ? ", " : "", in->name,
                 dg_data_type_name(in->type), in->required ? ", required" : "",
                 in->default_value ? ", default " : "", in->default_value ? in->default_value : "");
    len = n < 0 ? size : len + (size_t)n;
  }
  if (q->ninputs == 0)
    snprintf(out, size, "none");
}

static int unknown_input(const dg_saved_query_t *q, size_t i, const char *key, dg_errctx_t *err) {
  char declared[600];
  char param[64];
  describe_inputs(q, declared, sizeof(declared));
  snprintf(param, sizeof(param), "inputs[%zu].key", i);
  return dg_errctx_set(err, DG_EINVAL, param,
                       "Invalid argument '%s': '%.128s' is not an input of Saved Query '%s'; "
                       "declared inputs: %s.",
                       param, key, q->name, declared);
}

static int bad_value(const dg_saved_input_t *in, size_t i, const char *value, dg_errctx_t *err) {
  char param[64];
  snprintf(param, sizeof(param), "inputs[%zu].value", i);
  if (value[0] == '\0')
    return dg_errctx_set(err, DG_EINVAL, param,
                         "Invalid argument '%s': input '%s' is required and may not be empty.",
                         param, in->name);
  return dg_errctx_set(err, DG_EINVAL, param,
                       "Invalid argument '%s': '%.128s' is not a valid %s for input '%s'; "
                       "expected %s.",
                       param, value, dg_data_type_name(in->type), in->name,
                       dg_saved_input_value_hint(in->type));
}

/* Checks one {key, value} item and stores its value at the input's index. */
static int take_input(const dg_saved_query_t *q, const json_t *item, size_t i, const char **values,
                      size_t *given_at, dg_errctx_t *err) {
  const char *key = json_string_value(json_object_get(item, "key"));
  const char *value = json_string_value(json_object_get(item, "value"));
  const dg_saved_input_t *in = dg_saved_query_input(q, key);
  if (in == NULL)
    return unknown_input(q, i, key ? key : "", err);
  size_t at = (size_t)(in - q->inputs);
  if (values[at] != NULL) {
    char param[64];
    snprintf(param, sizeof(param), "inputs[%zu].key", i);
    return dg_errctx_set(err, DG_EINVAL, param,
                         "Invalid argument '%s': input '%s' is given twice (also inputs[%zu]); "
                         "give each input once.",
                         param, in->name, given_at[at]);
  }
  bool empty_required = in->required && value[0] == '\0';
  if (empty_required || (value[0] != '\0' && !dg_saved_input_value_valid(in->type, value)))
    return bad_value(in, i, value, err);
  values[at] = value;
  given_at[at] = i;
  return 0;
}

static int missing_input(const dg_saved_query_t *q, const dg_saved_input_t *in, dg_errctx_t *err) {
  char declared[600];
  describe_inputs(q, declared, sizeof(declared));
  return dg_errctx_set(err, DG_EINVAL, "inputs",
                       "Invalid argument 'inputs': the required input '%s' (%s) is missing; add "
                       "{\"key\": \"%s\", \"value\": ...}. Declared inputs: %s.",
                       in->name, dg_data_type_name(in->type), in->name, declared);
}

int dg__tools_saved_inputs(const dg_saved_query_t *q, const json_t *inputs, dg_arena_t *arena,
                           const char ***out, dg_errctx_t *err) {
  const char **values = dg_arena_calloc(arena, q->ninputs + 1, sizeof(*values));
  size_t *given_at = dg_arena_calloc(arena, q->ninputs + 1, sizeof(*given_at));
  if (values == NULL || given_at == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "inputs", "The inputs could not be read: out of memory.");
  for (size_t i = 0; i < json_array_size(inputs); i++) {
    int rc = take_input(q, json_array_get(inputs, i), i, values, given_at, err);
    if (rc != 0)
      return rc;
  }
  for (size_t i = 0; i < q->ninputs; i++) {
    const dg_saved_input_t *in = &q->inputs[i];
    /* An empty optional value counts as not given. */
    if (values[i] != NULL && values[i][0] == '\0' && !in->required)
      values[i] = NULL;
    if (values[i] == NULL && in->required)
      return missing_input(q, in, err);
    if (values[i] == NULL)
      values[i] = in->default_value;
  }
  *out = values;
  return 0;
}

/* ---- Properties selection -------------------------------------------------------- */

static void visible_fields(const dg_saved_query_t *q, const dg_principal_t *p, char *out,
                           size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < q->nfields && len + 1 < size; i++) {
    if (!dg_auth_can_see_property(p, q->model, q->fields[i].property))
      continue;
    int n = snprintf(out + len, size - len, "%s%s", len ? ", " : "", q->fields[i].property->name);
    len = n < 0 ? size : len + (size_t)n;
  }
}

/* The visible field that name selects (property name in any case). */
static const dg_saved_field_t *select_field(const dg_saved_query_t *q, const dg_principal_t *p,
                                            const char *name) {
  for (size_t i = 0; name != NULL && i < q->nfields; i++) {
    const dg_property_t *prop = q->fields[i].property;
    if (strcasecmp(prop->name, name) == 0 && dg_auth_can_see_property(p, q->model, prop))
      return &q->fields[i];
  }
  return NULL;
}

int dg__tools_saved_selection(const dg_saved_query_t *q, const dg_principal_t *p,
                              const json_t *properties, dg_arena_t *arena, bool **out,
                              dg_errctx_t *err) {
  bool *selected = dg_arena_calloc(arena, q->nfields + 1, sizeof(*selected));
  if (selected == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "properties", "out of memory");
  for (size_t i = 0; i < q->nfields; i++)
    selected[i] = properties == NULL;
  for (size_t i = 0; i < json_array_size(properties); i++) {
    const char *name = json_string_value(json_array_get(properties, i));
    const dg_saved_field_t *f = select_field(q, p, name);
    if (f == NULL && name != NULL && strcmp(name, "id") == 0)
      continue; /* id is always returned */
    if (f == NULL) {
      char fields[600], param[64];
      visible_fields(q, p, fields, sizeof(fields));
      snprintf(param, sizeof(param), "properties[%zu]", i);
      return dg_errctx_set(err, DG_EINVAL, param,
                           "Invalid argument '%s': '%.128s' is not a field of Saved Query '%s'; "
                           "its fields are: %s (and id, always returned).",
                           param, name ? name : "", q->name, fields);
    }
    selected[f - q->fields] = true;
  }
  for (size_t i = 0; i < q->nfields; i++)
    selected[i] = selected[i] && dg_auth_can_see_property(p, q->model, q->fields[i].property);
  *out = selected;
  return 0;
}

int dg__tools_saved_call(dg_mcp_tool_call_t *call, const dg_saved_query_t *q,
                         const char *const *values, dg_connector_done_fn done, void *user,
                         dg_connector_call_t **out, dg_errctx_t *err) {
  dg_tools_env_t *env = dg_tools_env(call);
  if (env == NULL || env->connectors == NULL)
    return dg_errctx_set(err, DG_ENOTSUP, "savedQueryId",
                         "Saved Query '%s' cannot run: the connector client is not running in "
                         "this gateway.",
                         q->name);
  dg_connector_request_t req;
  int rc = dg_save_query_request(q, values, dg_mcp_tool_call_arena(call), &req, err);
  if (rc != 0)
    return rc;
  req.request_id = dg_mcp_tool_call_request_id(call);
  req.trace_id = dg_mcp_tool_call_trace_id(call);
  return dg_connectors_call(env->connectors, q->connector, &req, done, user, out, err);
}

/* ---- Running a Saved Query for a tool ------------------------------------------------ */

/* Answers up to this size are handled on the loop thread; larger ones on
 * the threadpool, so that parsing never holds up other connections. */
#define SAVED_INLINE_BYTES (64u * 1024u)

static void saved_fail_upstream(dg__tools_saved_run_t *r, const char *why, int rc) {
  /* A cancellation is the caller's doing, not a problem upstream. */
  dg_log_json(rc == DG_ECANCELED ? DG_LOG_INFO : DG_LOG_WARN, "saved_query_failed",
              json_pack("{s:s,s:s,s:s,s:s}", "request_id", dg_mcp_tool_call_request_id(r->call),
                        "saved_query", r->q->name, "connector", r->q->connector->name, "error",
                        why));
  dg_mcp_tool_call_failf(r->call, "Saved Query '%s' failed: %s", r->q->name, why);
}

static void saved_finish(dg__tools_saved_run_t *r) {
  if (r->result != NULL) {
    dg_mcp_tool_call_succeed(r->call, r->result);
    r->result = NULL;
    return;
  }
  if (r->err.code == DG_ENOMEM || (r->too_big_is_local && r->err.code == DG_E2BIG)) {
    dg_mcp_tool_call_failf(r->call, "Saved Query '%s' %s: %s", r->q->name, r->local_failure,
                           r->err.message);
    return;
  }
  char why[1200];
  snprintf(why, sizeof(why), "upstream '%s' %s answered, but %s", r->q->connector->name, r->where,
           r->err.message);
  saved_fail_upstream(r, why, r->err.code);
}

static void saved_work(uv_work_t *req) {
  dg__tools_saved_run_t *r = req->data;
  r->result = r->answer(r, r->body, r->len, &r->err);
}

static void saved_work_done(uv_work_t *req, int status) {
  dg__tools_saved_run_t *r = req->data;
  free(r->body);
  r->body = NULL;
  saved_finish(r);
}

/* "GET http://host/path" of the answering URL, without its query (which
 * may hold an API key). */
static const char *saved_where(dg__tools_saved_run_t *r, const dg_http_response_t *res) {
  const char *url = res && res->url ? res->url : r->q->connector->base_url;
  size_t n = strcspn(url, "?#");
  return dg_arena_sprintf(dg_mcp_tool_call_arena(r->call), "%s %.*s", r->q->request.method, (int)n,
                          url);
}

static void saved_on_upstream(dg_connector_call_t *call, const dg_connector_result_t *result,
                              void *user) {
  dg__tools_saved_run_t *r = user;
  r->upstream = NULL;
  if (result->rc != 0) {
    saved_fail_upstream(r, result->err->message, result->rc);
    return;
  }
  const dg_http_response_t *res = result->response;
  r->where = saved_where(r, res);
  if (res->body_len <= SAVED_INLINE_BYTES) {
    r->result = r->answer(r, res->body, res->body_len, &r->err);
    saved_finish(r);
    return;
  }
  r->body = malloc(res->body_len);
  r->len = res->body_len;
  r->work.data = r;
  if (r->body != NULL)
    memcpy(r->body, res->body, res->body_len);
  if (r->body == NULL ||
      uv_queue_work(dg_mcp_tool_call_loop(r->call), &r->work, saved_work, saved_work_done) != 0) {
    free(r->body);
    r->body = NULL;
    dg_mcp_tool_call_failf(r->call, "Saved Query '%s' failed: out of memory.", r->q->name);
  }
}

static void saved_on_cancel(dg_mcp_tool_call_t *call, void *data) {
  dg__tools_saved_run_t *r = data;
  if (r->upstream != NULL)
    dg_connector_call_cancel(r->upstream);
}

int dg__tools_saved_run_start(dg__tools_saved_run_t *r, const char *const *values,
                              dg_errctx_t *err) {
  int rc = dg__tools_saved_call(r->call, r->q, values, saved_on_upstream, r, &r->upstream, err);
  if (rc == 0)
    dg_mcp_tool_call_on_cancel(r->call, saved_on_cancel, r);
  return rc;
}
