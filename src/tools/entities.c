/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The one run() of the entity tools (lookup_by_keyword, query_entities,
 * get_entities_by_ids, aggregate_entities): their arguments parsed into a
 * store request, the request run to the end of the call. */
#include "datagate/tools.h"
#include "tools/internal.h"

typedef struct pending {
  dg_mcp_tool_call_t *call;
  dg_store_req_t *req; /* NULL once the store has answered */
} pending_t;

void dg__tools_parse_ctx(dg_mcp_tool_call_t *call, dg_errctx_t *err, dg_store_parse_t *out) {
  out->cat = dg_mcp_tool_call_catalog(call);
  out->principal = dg_mcp_tool_call_principal(call);
  out->arena = dg_mcp_tool_call_arena(call);
  out->err = err;
  out->ids_checked = false;
}

dg_store_t *dg__tools_store(dg_mcp_tool_call_t *call) {
  dg_tools_env_t *env = dg_tools_env(call);
  if (env != NULL && env->store != NULL)
    return env->store;
  dg_mcp_tool_call_failf(call, "The entity store is not running on this gateway; try again later.");
  return NULL;
}

static void on_done(int status, json_t *result, const dg_errctx_t *err, void *data) {
  pending_t *p = data;
  p->req = NULL;
  if (status == 0)
    dg_mcp_tool_call_succeed(p->call, result);
  else
    dg_mcp_tool_call_fail(p->call, err);
}

/* The call is ending early (client gone, cancelled, timed out): the store
 * stops the request, and its completion then ends the call. */
static void on_cancel(dg_mcp_tool_call_t *call, void *data) {
  pending_t *p = data;
  if (p->req != NULL)
    dg_store_cancel(p->req);
}

static int start(dg_store_t *store, dg__tools_store_op_t op, const void *desc, pending_t *p,
                 dg_errctx_t *err) {
  switch (op) {
  case DG__TOOLS_QUERY:
    return dg_store_query(store, desc, on_done, p, &p->req, err);
  case DG__TOOLS_FETCH:
    return dg_store_fetch(store, desc, on_done, p, &p->req, err);
  case DG__TOOLS_AGGREGATE:
    return dg_store_aggregate(store, desc, on_done, p, &p->req, err);
  default:
    return dg_store_lookup(store, desc, on_done, p, &p->req, err);
  }
}

static void run_store(dg_mcp_tool_call_t *call, dg_store_t *store, dg__tools_store_op_t op,
                      const void *desc) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  pending_t *p = dg__tools_call_state(call, sizeof(*p), "The request could not be started");
  if (p == NULL)
    return;
  p->call = call;
  if (start(store, op, desc, p, &err) != 0) {
    dg_mcp_tool_call_fail(call, &err);
    return;
  }
  dg_mcp_tool_call_on_cancel(call, on_cancel, p);
}

static const size_t request_size[] = {
    [DG__TOOLS_QUERY] = sizeof(dg_store_query_t),
    [DG__TOOLS_FETCH] = sizeof(dg_store_fetch_t),
    [DG__TOOLS_LOOKUP] = sizeof(dg_store_lookup_t),
    [DG__TOOLS_AGGREGATE] = sizeof(dg_store_aggregate_t),
};

/* Parses args into out, an empty request of op; the answers of query and
 * lookup are bounded by the call's budget (set after the parser, which
 * clears the request). */
static int parse(dg_mcp_tool_call_t *call, const dg_store_parse_t *ps, const dg_model_t *model,
                 dg__tools_store_op_t op, void *out) {
  const json_t *args = dg_mcp_tool_call_args(call);
  int rc;
  switch (op) {
  case DG__TOOLS_QUERY:
    rc = dg_store_parse_query(ps, model, args, out);
    ((dg_store_query_t *)out)->max_bytes = dg__tools_budget(call);
    return rc;
  case DG__TOOLS_FETCH:
    return dg_store_parse_fetch(ps, model, args, out);
  case DG__TOOLS_AGGREGATE:
    return dg_store_parse_aggregate(ps, model, args, out);
  default:
    rc = dg_store_parse_lookup(ps, args, out);
    ((dg_store_lookup_t *)out)->max_bytes = dg__tools_budget(call);
    return rc;
  }
}

static void run_entities(dg_mcp_tool_call_t *call, dg__tools_store_op_t op) {
  dg_errctx_t err;
  dg_store_parse_t ps;
  dg_errctx_clear(&err);
  dg__tools_parse_ctx(call, &err, &ps);
  ps.ids_checked = op == DG__TOOLS_FETCH; /* "format": "uuid" in its schema */
  const dg_model_t *model = NULL;
  if (op != DG__TOOLS_LOOKUP)
    model = dg_tools_model_arg(call, "dataModelId", &err);
  void *desc = model != NULL || op == DG__TOOLS_LOOKUP
                   ? dg_arena_calloc(ps.arena, 1, request_size[op])
                   : NULL;
  if (desc == NULL || parse(call, &ps, model, op, desc) != 0) {
    dg_mcp_tool_call_fail(call, &err);
    return;
  }
  dg_store_t *store = dg__tools_store(call);
  if (store != NULL)
    run_store(call, store, op, desc);
}

void dg__tools_run_query(dg_mcp_tool_call_t *call) {
  run_entities(call, DG__TOOLS_QUERY);
}

void dg__tools_run_fetch(dg_mcp_tool_call_t *call) {
  run_entities(call, DG__TOOLS_FETCH);
}

void dg__tools_run_lookup(dg_mcp_tool_call_t *call) {
  run_entities(call, DG__TOOLS_LOOKUP);
}

void dg__tools_run_aggregate(dg_mcp_tool_call_t *call) {
  run_entities(call, DG__TOOLS_AGGREGATE);
}
