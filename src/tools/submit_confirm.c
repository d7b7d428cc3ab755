/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The user's confirmation of a submission, asked through the client
 * (elicitation/create) before anything is stored or sent: the question
 * shows the record, the changes and the endpoint whose save actions will
 * run. server.submitConfirmation decides when to ask: always (a client
 * that cannot be asked is refused), when-supported (ask a client that
 * can; go ahead otherwise) or never. */
#include <stdio.h>
#include <string.h>

#include "tools/internal.h"

#define MESSAGE_MAX (16u * 1024u)
#define VALUE_CHARS 200

typedef struct confirm {
  dg__tools_confirm_fn done;
  void *data;
} confirm_t;

/* ---- The question --------------------------------------------------------------- */

/* The text of a checked value, as the user would type it. */
static void value_text(const dg_store_value_t *v, dg_buf_t *out) {
  switch (v->kind) {
  case DG_STORE_NULL:
    dg_buf_append_str(out, "(cleared)");
    return;
  case DG_STORE_INT:
    dg_buf_appendf(out, "%lld", (long long)v->i);
    return;
  case DG_STORE_REAL:
    dg_buf_appendf(out, "%.15g", v->d);
    return;
  case DG_STORE_BOOL:
    dg_buf_append_str(out, v->b ? "true" : "false");
    return;
  default:
    if (v->len == 0)
      dg_buf_append_str(out, "(cleared)");
    else
      dg_buf_appendf(out, "%.*s%s", (int)(v->len > VALUE_CHARS ? VALUE_CHARS : v->len), v->text,
                     v->len > VALUE_CHARS ? "..." : "");
  }
}

/* The lines a childLists call adds, changes and removes, by list. */
static void describe_lines(const dg_forms_lines_t *lines, dg_buf_t *out) {
  for (size_t i = 0; lines != NULL && i < lines->nlists; i++) {
    const dg_forms_line_list_t *l = &lines->lists[i];
    dg_buf_appendf(out, "- %s: %zu line(s) added, %zu changed, %zu removed\n", l->list->name,
                   json_array_size(l->added), json_array_size(l->updated),
                   json_array_size(l->removed));
  }
}

static void describe_record(const dg__tools_confirm_view_t *v, dg_buf_t *out) {
  const dg_store_write_t *w = v->write;
  if (w->mode == DG_STORE_CREATE)
    dg_buf_appendf(out, "Create a new %s record", w->model->name);
  else
    dg_buf_appendf(out, "Change the %s record %s", w->model->name, w->id);
  dg_buf_appendf(out, "%s%s%s.\n\nChanges:\n", v->system ? " (submitted by " : "",
                 v->system ? v->system : "", v->system ? ")" : "");
  for (size_t i = 0; i < w->nvalues; i++) {
    dg_buf_appendf(out, "- %s: ", w->props[i]->name);
    value_text(&w->values[i], out);
    dg_buf_append_str(out, "\n");
  }
  if (w->nvalues == 0)
    dg_buf_append_str(out, "- (no field changes)\n");
  describe_lines(v->lines, out);
}

static void describe_endpoint(const dg_endpoint_t *e, dg_buf_t *out) {
  if (e == NULL) {
    dg_buf_append_str(out, "\nOnly the gateway's copy changes: no save actions run and no "
                           "external system is called.");
    return;
  }
  dg_buf_appendf(out, "\nSave actions of endpoint '%s'", e->name);
  if (e->connector != NULL)
    dg_buf_appendf(out, " run against %s (%s)", e->connector->name, e->connector->base_url);
  dg_buf_append_str(out, " and change data there:");
  for (size_t i = 0; i < e->nsteps; i++) {
    const dg_action_t *a = e->steps[i];
    if (a->type == DG_ACTION_ENDPOINT_SAVE)
      dg_buf_appendf(out, "%s %s", i ? "," : "", a->title);
  }
  if (e->nchildren > 0)
    dg_buf_appendf(out, ", and the saves of %zu child list%s", e->nchildren,
                   e->nchildren == 1 ? "" : "s");
  dg_buf_append_str(out, ".");
}

/* ---- The answer ------------------------------------------------------------------ */

static void on_answer(dg_mcp_tool_call_t *call, int status, dg_elicit_action_t action,
                      const json_t *content, void *data) {
  confirm_t *c = data;
  dg__tools_confirmation_t outcome = DG__TOOLS_CANCELLED;
  if (status == 0 && action == DG_ELICIT_ACCEPT)
    outcome = json_is_true(json_object_get(content, "confirm")) ? DG__TOOLS_CONFIRMED
                                                                : DG__TOOLS_DECLINED;
  else if (status == 0 && action == DG_ELICIT_DECLINE)
    outcome = DG__TOOLS_DECLINED;
  c->done(c->data, status == DG_ECANCELED ? DG__TOOLS_ABANDONED : outcome);
}

static int cannot_ask(dg_errctx_t *err) {
  return dg_errctx_set(err, DG_EPERM, "",
                       "This gateway asks the user to confirm every submission "
                       "(server.submitConfirmation is always), and this client cannot be asked: "
                       "it did not declare the elicitation capability at initialize, its protocol "
                       "version is older than 2025-06-18, or (over HTTP) it does not accept an "
                       "event stream. Nothing was stored or sent.");
}

int dg__tools_confirm_submit(dg_mcp_tool_call_t *call, const dg__tools_confirm_view_t *view,
                             dg__tools_confirm_fn done, void *data, dg_errctx_t *err) {
  const char *mode = dg_mcp_tool_call_catalog(call)->server.submit_confirmation;
  if (mode != NULL && strcmp(mode, "never") == 0)
    return 1;
  bool always = mode != NULL && strcmp(mode, "always") == 0;
  if (!dg_mcp_tool_call_can_elicit(call))
    return always ? cannot_ask(err) : 1;
  confirm_t *c = dg_arena_calloc(dg_mcp_tool_call_arena(call), 1, sizeof(*c));
  json_t *schema = json_pack(
      "{s:s,s:{s:{s:s,s:s,s:s,s:b}},s:[s]}", "type", "object", "properties", "confirm", "type",
      "boolean", "title", "Submit these changes", "description",
      "Check to store the record and run its save actions; leave unchecked or decline to drop "
      "the submission.",
      "default", 0, "required", "confirm");
  dg_buf_t text;
  dg_buf_init(&text, MESSAGE_MAX);
  describe_record(view, &text);
  describe_endpoint(view->endpoint, &text);
  int rc = c != NULL && schema != NULL && text.data != NULL ? 0 : DG_ENOMEM;
  if (rc == 0) {
    *c = (confirm_t){.done = done, .data = data};
    rc = dg_mcp_tool_call_elicit(call, text.data, schema, on_answer, c);
  }
  json_decref(schema);
  dg_buf_free(&text);
  if (rc == DG_ENOTSUP)
    return always ? cannot_ask(err) : 1;
  return rc == 0 ? 0
                 : dg_errctx_set(err, rc, "", "The confirmation could not be asked: %s.",
                                 dg_strerror(rc));
}
