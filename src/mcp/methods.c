/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The MCP methods: initialize with version negotiation, ping, tools/list,
 * tools/call (handed to tool_call.c), resources/list, resources/templates/list
 * and resources/read (a read runs a tool through tool_call.c) when the server
 * has resources, and the notifications we act on. Methods of capabilities
 * we do not declare (prompts, logging, resource subscriptions) are unknown
 * methods, as the specification asks. */
#include <stdio.h>
#include <string.h>

#include "mcp/internal.h"

#define TOOL_LIST_MAX 4096
#define TOOLS_TEXT_MAX (1u << 20) /* the written tools/list array */

static const char *const versions[DG__MCP_NVERSIONS] = DG_MCP_VERSIONS;

/* The client's version when we speak it, else the newest we do. */
static const char *negotiate(const char *wanted) {
  for (size_t i = 0; wanted != NULL && i < DG__MCP_NVERSIONS; i++) {
    if (strcmp(wanted, versions[i]) == 0)
      return versions[i];
  }
  return versions[0];
}

/* Implementation.title came with 2025-06-18. */
static json_t *server_info(const dg_mcp_config_t *c, const dg__mcp_session_t *ss) {
  const char *name = c->server_name ? c->server_name : "datagate";
  json_t *info =
      json_pack("{s:s,s:s}", "name", name, "version", c->server_version ? c->server_version : "0");
  if (info != NULL && dg__mcp_session_at_least(ss, DG__MCP_V2025_06_18))
    json_object_set_new(info, "title", json_string("datagate data integration gateway"));
  return info;
}

/* Form elicitation: capabilities.elicitation {} (before 2025-11-25 the
 * only kind) or with "form"; a client that offers only "url" cannot fill
 * in a form. */
static bool form_elicitation(const json_t *caps) {
  const json_t *e = json_object_get(caps, "elicitation");
  return json_is_object(e) && (json_object_size(e) == 0 || json_object_get(e, "form") != NULL);
}

bool dg__mcp_may_elicit(const dg__mcp_exchange_t *ex, const json_t *msg) {
  const dg__mcp_session_t *ss = ex->session;
  if (ss == NULL || !ss->elicitation || !dg__mcp_is_request(msg, "tools/call"))
    return false;
  const char *name = json_string_value(json_object_get(json_object_get(msg, "params"), "name"));
  const dg__mcp_tool_t *tool = name ? dg__mcp_server_tool(ex->server, name) : NULL;
  return tool != NULL && tool->def->elicits;
}

static void do_initialize(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, json_t *params) {
  dg__mcp_session_t *ss = ex->session;
  const char *wanted = json_string_value(json_object_get(params, "protocolVersion"));
  if (ss->version != NULL) {
    dg__mcp_exchange_answer(ex, slot,
                            dg__mcp_error(slot->id, DG__RPC_INVALID_REQUEST,
                                          "Invalid Request: the session is already initialized"));
    return;
  }
  if (wanted == NULL) {
    dg__mcp_exchange_answer(
        ex, slot,
        dg__mcp_error(slot->id, DG__RPC_INVALID_PARAMS,
                      "Invalid params: initialize needs params.protocolVersion, a string such "
                      "as \"%s\"",
                      versions[0]));
    return;
  }
  ss->version = negotiate(wanted);
  ss->elicitation = form_elicitation(json_object_get(params, "capabilities"));
  const dg_mcp_config_t *c = &ex->server->config;
  json_t *result =
      json_pack("{s:s,s:{s:{s:b}},s:o}", "protocolVersion", ss->version, "capabilities", "tools",
                "listChanged", 0, "serverInfo", server_info(c, ss));
  /* Resources are read and listed; no subscriptions, no change notices. */
  if (c->resources != NULL)
    json_object_set_new(json_object_get(result, "capabilities"), "resources", json_object());
  if (c->instructions != NULL)
    json_object_set_new(result, "instructions", json_string(c->instructions));
  dg__mcp_exchange_answer(ex, slot, dg__mcp_result(slot->id, result));
}

static void do_ping(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, json_t *params) {
  dg__mcp_exchange_answer(ex, slot, dg__mcp_result(slot->id, json_object()));
}

/* What a tool entry holds at each version: 2024-11-05 knows name,
 * description and inputSchema; 2025-03-26 adds annotations; 2025-06-18
 * adds title and outputSchema (with structuredContent in results). */
enum { TOOLS_2024_11_05, TOOLS_2025_03_26, TOOLS_2025_06_18 };

static int tool_level(const dg__mcp_session_t *ss) {
  if (dg__mcp_session_at_least(ss, DG__MCP_V2025_06_18))
    return TOOLS_2025_06_18;
  return dg__mcp_session_at_least(ss, DG__MCP_V2025_03_26) ? TOOLS_2025_03_26 : TOOLS_2024_11_05;
}

static json_t *tool_entry(const dg__mcp_tool_t *t, int level) {
  const dg_tool_t *d = t->def;
  const char *title = d->title ? d->title : d->name;
  json_t *entry = json_pack("{s:s,s:s,s:O}", "name", d->name, "description",
                            d->description ? d->description : "", "inputSchema", t->input_schema);
  if (entry == NULL || level < TOOLS_2025_03_26)
    return entry;
  json_object_set_new(entry, "annotations",
                      json_pack("{s:s,s:b,s:b,s:b,s:b}", "title", title, "readOnlyHint",
                                d->read_only, "destructiveHint", d->destructive, "idempotentHint",
                                d->idempotent, "openWorldHint", d->open_world));
  if (level < TOOLS_2025_06_18)
    return entry;
  json_object_set_new(entry, "title", json_string(title));
  if (t->output_schema != NULL)
    json_object_set(entry, "outputSchema", t->output_schema);
  return entry;
}

/* The list is built and written out as JSON text once per variant and
 * shared: an answer copies the text instead of serialising every schema
 * again (the list of thirteen tools is about 22 KB). */
static json_t *tool_list(dg_mcp_server_t *s, int level) {
  json_t **cached = &s->tool_list[level];
  if (*cached != NULL)
    return *cached;
  json_t *tools = json_array();
  for (size_t i = 0; tools != NULL && i < s->ntools; i++)
    json_array_append_new(tools, tool_entry(&s->tools[i], level));
  dg_buf_t text;
  dg_buf_init(&text, TOOLS_TEXT_MAX);
  if (tools != NULL && dg__mcp_dump(tools, &text) == 0)
    *cached = dg_json_raw(text.data, text.len);
  dg_buf_free(&text);
  json_decref(tools);
  return *cached;
}

/* A cursor is accepted and ignored: the whole list always fits one page. */
static void do_tools_list(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, json_t *params) {
  json_t *tools = tool_list(ex->server, tool_level(ex->session));
  json_t *result = tools != NULL ? json_pack("{s:O}", "tools", tools) : NULL;
  /* An answer without the list would read as a server with no tools. */
  if (result == NULL) {
    dg__mcp_exchange_answer(ex, slot,
                            dg__mcp_error(slot->id, DG__RPC_INTERNAL,
                                          "Internal error: the tool list could not be written"));
    return;
  }
  dg__mcp_exchange_answer(ex, slot, dg__mcp_result(slot->id, result));
}

static void unknown_tool(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, const char *name) {
  dg_buf_t names;
  dg_buf_init(&names, TOOL_LIST_MAX);
  for (size_t i = 0; i < ex->server->ntools; i++)
    dg_buf_appendf(&names, "%s%s", i ? ", " : "", ex->server->tools[i].def->name);
  dg__mcp_exchange_answer(ex, slot,
                          dg__mcp_error(slot->id, DG__RPC_INVALID_PARAMS,
                                        "Unknown tool: %.200s; available tools: %s", name,
                                        names.data ? names.data : "(none)"));
  dg_buf_free(&names);
}

static void do_tools_call(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, json_t *params) {
  const char *name = json_string_value(json_object_get(params, "name"));
  if (!json_is_object(params) || name == NULL) {
    dg__mcp_exchange_answer(
        ex, slot,
        dg__mcp_error(slot->id, DG__RPC_INVALID_PARAMS,
                      "Invalid params: tools/call needs params {\"name\": <tool name>, "
                      "\"arguments\": {...}}"));
    return;
  }
  const dg__mcp_tool_t *tool = dg__mcp_server_tool(ex->server, name);
  if (tool == NULL) {
    unknown_tool(ex, slot, name);
    return;
  }
  dg__mcp_call_start(ex, slot, tool, params, NULL);
}

/* ---- Resources ---------------------------------------------------------------- */

static const dg_mcp_resources_t *resources_of(dg__mcp_exchange_t *ex) {
  return ex->server->config.resources;
}

static void do_resources_list(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, json_t *params) {
  json_t *list = resources_of(ex)->list(ex->cat, ex->principal);
  json_t *result = list ? json_pack("{s:o}", "resources", list) : NULL;
  dg__mcp_exchange_answer(ex, slot,
                          result ? dg__mcp_result(slot->id, result)
                                 : dg__mcp_error(slot->id, DG__RPC_INTERNAL,
                                                 "Internal error: the resource list could not be "
                                                 "written"));
}

static void do_resource_templates(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, json_t *params) {
  json_t *list = resources_of(ex)->templates();
  json_t *result = list ? json_pack("{s:o}", "resourceTemplates", list) : NULL;
  dg__mcp_exchange_answer(
      ex, slot,
      result ? dg__mcp_result(slot->id, result)
             : dg__mcp_error(slot->id, DG__RPC_INTERNAL, "Internal error: out of memory"));
}

/* A read runs the tool the provider names, with the call's params held by
 * the exchange for as long as the call may read them. */
static void read_through(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, const char *uri,
                         dg_mcp_resource_read_t *r) {
  const dg__mcp_tool_t *tool = dg__mcp_server_tool(ex->server, r->tool);
  json_t *params = tool ? json_pack("{s:s,s:o}", "name", r->tool, "arguments", r->args) : NULL;
  const char *copy = dg_arena_strdup(ex->arena, uri);
  if (tool == NULL)
    json_decref(r->args);
  if (params == NULL || copy == NULL) {
    json_decref(params);
    params = NULL;
  }
  /* A failed defer has released params already. */
  if (params == NULL || dg_arena_defer(ex->arena, (void (*)(void *))json_decref, params) != 0) {
    dg__mcp_exchange_answer(ex, slot,
                            dg__mcp_error(slot->id, DG__RPC_INTERNAL,
                                          "Internal error: the resource could not be read"));
    return;
  }
  dg__mcp_read_t read = {.uri = copy, .contents = r->contents};
  dg__mcp_call_start(ex, slot, tool, params, &read);
}

static void do_resources_read(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, json_t *params) {
  const char *uri = json_string_value(json_object_get(params, "uri"));
  if (uri == NULL) {
    dg__mcp_exchange_answer(ex, slot,
                            dg__mcp_error(slot->id, DG__RPC_INVALID_PARAMS,
                                          "Invalid params: resources/read needs params {\"uri\": "
                                          "<a URI from resources/list or a template>}"));
    return;
  }
  dg_mcp_resource_read_t r = {0};
  dg_errctx_t err;
  dg_errctx_clear(&err);
  if (resources_of(ex)->resolve(uri, &r, &err) != 0) {
    dg__mcp_exchange_answer(ex, slot,
                            dg__mcp_error(slot->id, DG__RPC_RESOURCE_NOT_FOUND, "%s", err.message));
    return;
  }
  read_through(ex, slot, uri, &r);
}

typedef struct method {
  const char *name;
  void (*fn)(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, json_t *params);
  bool before_initialize; /* allowed before initialize */
  bool resources;         /* only when the server has resources */
} method_t;

static const method_t methods[] = {
    {"initialize", do_initialize, true, false},
    {"ping", do_ping, true, false},
    {"tools/list", do_tools_list, false, false},
    {"tools/call", do_tools_call, false, false},
    {"resources/list", do_resources_list, false, true},
    {"resources/templates/list", do_resource_templates, false, true},
    {"resources/read", do_resources_read, false, true},
};

void dg__mcp_handle_request(dg__mcp_exchange_t *ex, dg__mcp_slot_t *slot, const char *method,
                            json_t *params) {
  for (size_t i = 0; i < DG_ARRAY_SIZE(methods); i++) {
    const method_t *m = &methods[i];
    if (strcmp(m->name, method) != 0 || (m->resources && resources_of(ex) == NULL))
      continue;
    if (!m->before_initialize && ex->session->version == NULL) {
      dg__mcp_exchange_answer(ex, slot,
                              dg__mcp_error(slot->id, DG__RPC_INVALID_REQUEST,
                                            "Invalid Request: send initialize before %s", m->name));
      return;
    }
    m->fn(ex, slot, params);
    return;
  }
  dg__mcp_exchange_answer(ex, slot,
                          dg__mcp_error(slot->id, DG__RPC_METHOD_NOT_FOUND,
                                        "Method not found: %.200s (this server offers initialize, "
                                        "ping, tools/list, tools/call%s)",
                                        method,
                                        resources_of(ex) != NULL
                                            ? ", resources/list, resources/templates/list, "
                                              "resources/read"
                                            : ""));
}

void dg__mcp_handle_notification(dg__mcp_exchange_t *ex, const char *method, json_t *params) {
  dg__mcp_session_t *ss = ex->session;
  if (strcmp(method, "notifications/initialized") == 0) {
    ss->initialized = true;
  } else if (strcmp(method, "notifications/cancelled") == 0) {
    json_t *id = json_object_get(params, "requestId");
    /* Not running here: it may run on another worker or gateway. */
    if (id != NULL && !dg__mcp_call_cancel_id(ss, id) && ss->http)
      dg__mcp_relay_cancel(ss, id);
  }
}
