/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* execute_saved_query: runs a Saved Query against its connector. The
 * stages, in order: find the query the caller may use, check the inputs
 * against DeclaredInputs and the properties selection, build the request,
 * call the upstream API, map the response onto entities of the Data Model
 * (on a worker thread when it is large), and drop what the caller may not
 * see. Upstream failures end the call with a result that names the
 * connector, the call and why. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/save.h"
#include "datagate/tools.h"
#include "tools/internal.h"

/* Responses up to this size are mapped on the loop thread; larger ones on
 * the threadpool, so that parsing never holds up other connections. */
#define INLINE_MAP_BYTES (64u * 1024u)

static const char input_schema[] =
    "{\"type\":\"object\",\"required\":[\"savedQueryId\"],\"properties\":{"
    "\"savedQueryId\":{\"type\":\"string\",\"format\":\"uuid\","
    "\"description\":\"Identifier of a Saved Query, from get_saved_queries\"},"
    "\"inputs\":{\"type\":\"array\",\"maxItems\":64,\"description\":\"Input values, each "
    "{key, value}; key is an input name from DeclaredInputs\",\"items\":{\"type\":\"object\","
    "\"required\":[\"key\",\"value\"],\"properties\":{"
    "\"key\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128},"
    "\"value\":{\"type\":\"string\",\"maxLength\":4096}},\"additionalProperties\":false}},"
    "\"properties\":{\"type\":\"array\",\"maxItems\":200,\"description\":\"Only these fields "
    "plus id are returned; omit for all\",\"items\":{\"type\":\"string\",\"minLength\":1,"
    "\"maxLength\":128}}},"
    "\"additionalProperties\":false}";

static const char output_schema[] =
    "{\"type\":\"object\",\"required\":[\"savedQueryId\",\"name\",\"dataModelId\",\"entities\","
    "\"count\",\"truncated\"],\"properties\":{"
    "\"savedQueryId\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"name\":{\"type\":\"string\"},"
    "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"entities\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
    "\"required\":[\"id\",\"properties\"],\"properties\":{"
    "\"id\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"properties\":{\"type\":\"object\"}}}},"
    "\"count\":{\"type\":\"integer\",\"minimum\":0},"
    "\"truncated\":{\"type\":\"boolean\"},"
    "\"warnings\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"provenance\":{\"type\":\"object\",\"description\":\"Where the records came from: "
    "{kind, connector, request, savedQueryId, untrusted}\"}}}";

/* One execution, in the call's arena. */
typedef struct exec {
  dg_mcp_tool_call_t *call;
  const dg_saved_query_t *q;
  const bool *selected;
  dg_connector_call_t *upstream; /* while the API call runs */
  uv_work_t work;
  char *body; /* copy of a large response, mapped on the threadpool */
  size_t len;
  size_t max_bytes;
  size_t result_limit; /* for the worker thread: dg_mcp_tool_call_result_limit */
  json_t *result;
  dg_errctx_t err;
  const char *where; /* "GET https://host/path" for mapping errors */
} exec_t;

/* ---- Ending --------------------------------------------------------------- */

static void fail_upstream(exec_t *x, const char *why, int rc) {
  /* A cancellation is the caller's doing, not a problem upstream. */
  dg_log_json(rc == DG_ECANCELED ? DG_LOG_INFO : DG_LOG_WARN, "saved_query_failed",
              json_pack("{s:s,s:s,s:s,s:s}", "request_id", dg_mcp_tool_call_request_id(x->call),
                        "saved_query", x->q->name, "connector", x->q->connector->name, "error",
                        why));
  dg_mcp_tool_call_failf(x->call, "Saved Query '%s' failed: %s", x->q->name, why);
}

static void finish(exec_t *x) {
  if (x->result != NULL) {
    dg_mcp_tool_call_succeed(x->call, x->result);
    x->result = NULL;
    return;
  }
  char why[1200];
  snprintf(why, sizeof(why), "upstream '%s' %s answered, but %s", x->q->connector->name, x->where,
           x->err.message);
  if (x->err.code == DG_ENOMEM)
    dg_mcp_tool_call_failf(x->call, "Saved Query '%s' failed: %s", x->q->name, x->err.message);
  else
    fail_upstream(x, why, x->err.code);
}

/* ---- Mapping -------------------------------------------------------------- */

/* The result written out once, here (on a worker thread for a large
 * response): the reply then copies this text instead of walking the values
 * again. A result over the limit stays as it is, for the MCP layer to
 * refuse. */
static json_t *written(json_t *result, size_t limit) {
  if (result == NULL)
    return NULL;
  dg_buf_t text;
  dg_buf_init(&text, limit);
  json_t *raw = dg_json_write(result, &text) == 0
                    ? dg_json_raw(text.data != NULL ? text.data : "", text.len)
                    : NULL;
  dg_buf_free(&text);
  if (raw == NULL)
    return result;
  json_decref(result);
  return raw;
}

/* Where the records came from: the connector and the call that answered
 * (its URL without the query); the records' own ids are in entities.
 * Touches only x's immutable strings, so it may run on a worker thread. */
static json_t *with_provenance(exec_t *x, json_t *result) {
  if (result != NULL)
    json_object_set_new(result, "provenance",
                        json_pack("{s:s,s:s,s:s,s:s,s:b}", "kind", "externalApi", "connector",
                                  x->q->connector->name, "request", x->where, "savedQueryId",
                                  x->q->id, "untrusted", 1));
  return result;
}

static void map_work(uv_work_t *req) {
  exec_t *x = req->data;
  x->result = written(with_provenance(x, dg_save_query_map(x->q, x->selected, x->body, x->len,
                                                           x->max_bytes, &x->err)),
                      x->result_limit);
}

static void map_done(uv_work_t *req, int status) {
  exec_t *x = req->data;
  free(x->body);
  x->body = NULL;
  finish(x);
}

/* "GET http://host/path" of the answering URL, without its query (which
 * may hold an API key). */
static const char *where(exec_t *x, const dg_http_response_t *res) {
  const char *url = res && res->url ? res->url : x->q->connector->base_url;
  size_t n = strcspn(url, "?#");
  return dg_arena_sprintf(dg_mcp_tool_call_arena(x->call), "%s %.*s", x->q->request.method, (int)n,
                          url);
}

static void on_upstream(dg_connector_call_t *call, const dg_connector_result_t *result,
                        void *user) {
  exec_t *x = user;
  x->upstream = NULL;
  if (result->rc != 0) {
    fail_upstream(x, result->err->message, result->rc);
    return;
  }
  const dg_http_response_t *res = result->response;
  x->where = where(x, res);
  if (res->body_len <= INLINE_MAP_BYTES) {
    x->result = written(with_provenance(x, dg_save_query_map(x->q, x->selected, res->body,
                                                             res->body_len, x->max_bytes, &x->err)),
                        x->result_limit);
    finish(x);
    return;
  }
  x->body = malloc(res->body_len);
  x->len = res->body_len;
  x->work.data = x;
  if (x->body != NULL)
    memcpy(x->body, res->body, res->body_len);
  if (x->body == NULL ||
      uv_queue_work(dg_mcp_tool_call_loop(x->call), &x->work, map_work, map_done) != 0) {
    free(x->body);
    x->body = NULL;
    dg_mcp_tool_call_failf(x->call, "Saved Query '%s' failed: out of memory.", x->q->name);
  }
}

static void on_cancel(dg_mcp_tool_call_t *call, void *data) {
  exec_t *x = data;
  if (x->upstream != NULL)
    dg_connector_call_cancel(x->upstream);
}

/* ---- Stages ------------------------------------------------------------------ */

/* Checks the arguments; on success x has the query and the selection. */
static int check_args(exec_t *x, const char ***values, dg_errctx_t *err) {
  json_t *args = dg_mcp_tool_call_args(x->call);
  const dg_principal_t *p = dg_mcp_tool_call_principal(x->call);
  dg_arena_t *arena = dg_mcp_tool_call_arena(x->call);
  const char *id = json_string_value(json_object_get(args, "savedQueryId"));
  x->q = dg__tools_find_saved_query(dg_mcp_tool_call_catalog(x->call), p, "savedQueryId", id, err);
  if (x->q == NULL)
    return err->code;
  int rc = dg__tools_saved_inputs(x->q, json_object_get(args, "inputs"), arena, values, err);
  bool *selected = NULL;
  if (rc == 0)
    rc = dg__tools_saved_selection(x->q, p, json_object_get(args, "properties"), arena, &selected,
                                   err);
  x->selected = selected;
  return rc;
}

/* Leaves room in the result for the envelope around the entities. */
static size_t entity_budget(const dg_catalog_t *cat) {
  size_t max = cat->server.max_result_bytes;
  return max > 8192 ? max - max / 10 - 4096 : max / 2;
}

static int start(exec_t *x, dg_errctx_t *err) {
  const char **values = NULL;
  int rc = check_args(x, &values, err);
  if (rc != 0)
    return rc;
  x->max_bytes = entity_budget(dg_mcp_tool_call_catalog(x->call));
  x->result_limit = dg_mcp_tool_call_result_limit(x->call);
  rc = dg__tools_saved_call(x->call, x->q, values, on_upstream, x, &x->upstream, err);
  if (rc == 0)
    dg_mcp_tool_call_on_cancel(x->call, on_cancel, x);
  return rc;
}

static void run(dg_mcp_tool_call_t *call) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  exec_t *x = dg__tools_call_state(call, sizeof(*x), "The Saved Query could not be run");
  if (x == NULL)
    return;
  x->call = call;
  if (start(x, &err) != 0)
    dg_mcp_tool_call_fail(call, &err);
}

const dg_tool_t dg_tool_execute_saved_query = {
    .name = "execute_saved_query",
    .title = "Run a Saved Query",
    .description =
        "Runs a Saved Query (Live Data Provider) against its external system and returns the "
        "live records as entities of its Data Model: {savedQueryId, name, dataModelId, entities: "
        "[{id, properties}], count, truncated, warnings?}. Give inputs as an array of {key, "
        "value} strings, key being an input name from DeclaredInputs; required inputs must be "
        "given, others take their default. Values must suit the input type (Int: 25, Decimal: "
        "1450.25, Boolean: true, Date: 2025-03-31, Guid: a GUID). properties limits the "
        "returned fields (plus id); property keys in results have their first letter "
        "lowercased. truncated is true when more records existed than are returned. If the "
        "external system fails, the error names the connector, the call and why. Call "
        "get_saved_queries and get_saved_query_details first.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    DG__TOOLS_READS_UPSTREAM,
    .run = run,
};
