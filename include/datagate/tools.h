/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* tools: one file per MCP tool (src/tools/<tool_name>.c), each a
 * const dg_tool_t named dg_tool_<tool_name>, listed in one registry array
 * in the order tools/list shows them. A tool validates its arguments beyond
 * the schema (catalog names, permissions), calls store, save or extract,
 * and shapes the seed's response object. */
#ifndef DATAGATE_TOOLS_H
#define DATAGATE_TOOLS_H

#include <stddef.h>

#include "datagate/mcp.h"

struct dg_store;
struct dg_http_client;
struct dg_connectors;

/* Answers that depend only on the catalog snapshot and the caller's roles
 * (get_data_models, get_data_model_properties, get_saved_queries), kept
 * as written JSON text per role set in a bounded table (answers.c). Loop
 * thread only. */
typedef struct dg_tools_answers dg_tools_answers_t;

/* What tools reach beyond the call itself. main.c owns it, starts each
 * member with the process and passes it as dg_mcp_config_t.tool_context;
 * a member is NULL when its module is not running. */
typedef struct dg_tools_env {
  struct dg_store *store;        /* entity store (store.h) */
  struct dg_http_client *client; /* connector client for upstream calls (client.h) */
  /* Connector calls with authentication, for Saved Queries (save.h). */
  struct dg_connectors *connectors;
  struct dg_files *files;      /* get_file_text's cache and slots (files.h) */
  dg_tools_answers_t *answers; /* NULL: every answer is built anew */
} dg_tools_env_t;

/* What mcp needs of a catalog snapshot (dg_mcp_limits_t), handed to mcp with
 * the snapshot; its strings are borrowed from cat. The stdio user is left
 * out when it names no configured user. */
dg_mcp_limits_t dg_tools_mcp_limits(const dg_catalog_t *cat);

/* An empty table of answers, or NULL when out of memory; freeing it drops
 * its answers and the catalog reference they were made for. */
dg_tools_answers_t *dg_tools_answers_new(void);
void dg_tools_answers_free(dg_tools_answers_t *answers);

/* The environment of a call (never NULL inside a running gateway). */
dg_tools_env_t *dg_tools_env(const dg_mcp_tool_call_t *call);

/* Every implemented tool, in tools/list order. */
extern const dg_tool_t *const dg_tools_registry[];
extern const size_t dg_tools_count;

/* MCP resources (resources.c): the Data Models the caller may read,
 * entities by id and documents by URL, each read through its tool. */
extern const dg_mcp_resources_t dg_tools_resources;

/* The initialize result's instructions: which tool to call first. */
extern const char dg_tools_instructions[];

/* Shared helpers for tool files. */
/* Looks up args.dataModelId and checks read access; on failure fills err
 * (unknown id lists nothing secret; a model the caller may not read is
 * reported as not found to avoid disclosing it). */
const dg_model_t *dg_tools_model_arg(dg_mcp_tool_call_t *call, const char *param, dg_errctx_t *err);

#endif
