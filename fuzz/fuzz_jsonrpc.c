/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes the JSON-RPC dispatcher: the input is one transport message fed
 * into a fresh session of a real MCP server through an in-memory
 * transport, with one fake tool. The input's length picks the session's
 * state (not initialized, or initialized at one of the three versions) so
 * batches, lifecycle gating and tool calls are all reached. Every reply
 * must be a JSON-RPC response (or array of them) that serialises, must
 * come on a later loop turn, and the loop must end with nothing running. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datagate/tools.h"
#include "mcp/internal.h"

static const char config[] = "{\"server\":{\"stdioUser\":\"fuzz\",\"maxResultBytes\":65536},"
                             "\"roles\":[{\"name\":\"r\",\"models\":[]}],"
                             "\"users\":[{\"name\":\"fuzz\",\"roles\":[\"r\"]}]}";

static void echo_run(dg_mcp_tool_call_t *call) {
  dg_mcp_tool_call_progress(call, 1, 2, "half");
  dg_mcp_tool_call_succeed(call, json_pack("{s:O}", "echo", dg_mcp_tool_call_args(call)));
}

static const dg_tool_t echo = {
    .name = "echo",
    .description = "Returns its arguments.",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\","
                    "\"maxLength\":64,\"default\":\"hi\"},\"n\":{\"type\":\"integer\","
                    "\"minimum\":0,\"maximum\":10},\"list\":{\"type\":\"array\",\"items\":"
                    "{\"type\":\"string\"},\"maxItems\":4}},\"additionalProperties\":false}",
    .output_schema = "{\"type\":\"object\"}",
    .read_only = true,
    .run = echo_run,
};
static const dg_tool_t *const tools[] = {&echo};

static uv_loop_t loop;
static dg_catalog_t *cat;
static dg_mcp_server_t *server;
static bool dispatching;

static void check_message(const json_t *m) {
  if (!json_is_object(m) || json_object_get(m, "jsonrpc") == NULL)
    abort();
  if ((json_object_get(m, "result") == NULL) == (json_object_get(m, "error") == NULL))
    abort();
}

static void on_reply(dg__mcp_exchange_t *ex, json_t *reply) {
  if (dispatching)
    abort(); /* a reply from inside the call that received the message */
  if (reply == NULL)
    return;
  size_t i;
  json_t *m;
  if (json_is_array(reply)) {
    json_array_foreach(reply, i, m) check_message(m);
  } else {
    check_message(reply);
  }
  char *text = json_dumps(reply, JSON_COMPACT);
  if (text == NULL)
    abort();
  free(text);
}

static void on_notify(dg__mcp_exchange_t *ex, json_t *note) {
  if (json_object_get(note, "method") == NULL)
    abort();
}

static const dg__mcp_transport_t transport = {
    .name = "fuzz", .reply = on_reply, .notify = on_notify};

static void load_catalog(void) {
  char dir[] = "/tmp/dg-fuzz-jsonrpc-XXXXXX";
  char path[128];
  if (mkdtemp(dir) == NULL)
    abort();
  snprintf(path, sizeof(path), "%s/datagate.json", dir);
  FILE *f = fopen(path, "w");
  if (f == NULL)
    abort();
  fputs(config, f);
  fclose(f);
  dg_config_errors_t errors = {0};
  if (dg_catalog_load(dir, &cat, &errors) != 0)
    abort();
  dg_config_errors_free(&errors);
  unlink(path);
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  dg_log_init(2, DG_LOG_ERROR);
  uv_loop_init(&loop);
  load_catalog();
  dg_mcp_config_t cfg = {.server_name = "datagate", .tools = tools, .ntools = 1};
  dg_errctx_t err;
  dg_errctx_clear(&err);
  dg_mcp_limits_t limits = dg_tools_mcp_limits(cat);
  if (dg_mcp_server_new(&loop, &cfg, cat, &limits, &server, &err) != 0)
    abort();
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const versions[] = {NULL, "2025-11-25", "2025-06-18", "2025-03-26"};
  dg__mcp_session_t *ss;
  if (dg__mcp_session_new(server, &transport, NULL, &ss) != 0)
    abort();
  ss->version = versions[size % 4];
  dg__mcp_exchange_t *ex = dg__mcp_exchange_new(server);
  if (ex == NULL || dg_auth_principal_for_user(ex->cat, "fuzz", ex->arena, &ex->principal) != 0)
    abort();
  dg__mcp_exchange_bind(ex, ss, &transport, NULL);
  dispatching = true;
  dg__mcp_exchange_run_text(ex, (const char *)data, size);
  dispatching = false;
  uv_run(&loop, UV_RUN_DEFAULT);
  if (ss->exchanges != NULL || dg_mcp_server_inflight(server) != 0)
    abort();
  dg__mcp_session_end(ss);
  uv_run(&loop, UV_RUN_DEFAULT);
  return 0;
}
