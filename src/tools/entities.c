/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* What the entity tools (lookup_by_keyword, query_entities,
 * get_entities_by_ids, aggregate_entities) share: the parser context of a
 * call, and running a store operation to the end of the call. */
#include "datagate/tools.h"
#include "tools/internal.h"

typedef struct pending {
  dg_tool_call_t *call;
  dg_store_req_t *req; /* NULL once the store has answered */
} pending_t;

void dg__tools_parse_ctx(dg_tool_call_t *call, dg_errctx_t *err, dg_store_parse_t *out) {
  out->cat = dg_tool_call_catalog(call);
  out->principal = dg_tool_call_principal(call);
  out->arena = dg_tool_call_arena(call);
  out->err = err;
}

dg_store_t *dg__tools_store(dg_tool_call_t *call) {
  dg_tools_env_t *env = dg_tools_env(call);
  if (env != NULL && env->store != NULL)
    return env->store;
  dg_tool_call_failf(call, "The entity store is not running on this gateway; try again later.");
  return NULL;
}

static void on_done(int status, json_t *result, const dg_errctx_t *err, void *data) {
  pending_t *p = data;
  p->req = NULL;
  if (status == 0)
    dg_tool_call_succeed(p->call, result);
  else
    dg_tool_call_fail(p->call, err);
}

/* The call is ending early (client gone, cancelled, timed out): the store
 * stops the request, and its completion then ends the call. */
static void on_cancel(dg_tool_call_t *call, void *data) {
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

void dg__tools_run_store(dg_tool_call_t *call, dg_store_t *store, dg__tools_store_op_t op,
                         const void *desc) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  pending_t *p = dg__tools_call_state(call, sizeof(*p), "The request could not be started");
  if (p == NULL)
    return;
  p->call = call;
  if (start(store, op, desc, p, &err) != 0) {
    dg_tool_call_fail(call, &err);
    return;
  }
  dg_tool_call_on_cancel(call, on_cancel, p);
}
