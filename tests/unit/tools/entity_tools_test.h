/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Helpers of the entity tool tests: the real MCP server with the tool
 * registry and a store on a temporary database loaded with the sample
 * data, driven through an in-memory transport as the configured users. */
#ifndef DG_TEST_ENTITY_TOOLS_TEST_H
#define DG_TEST_ENTITY_TOOLS_TEST_H

#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "datagate/tools.h"

#include "datagate/store.h"
#include "datagate/tools.h"
#include "mcp/internal.h"

#define ET_ORDERS "8a03cbc2-7f01-4d47-bdf0-0755336a3a70"
#define ET_CUSTOMERS "cb94c4ab-8c1d-4fae-b582-9746427cad35"
#define ET_PAYMENTS "097d00c2-bc00-45fc-8b3b-5be0bae92720"

typedef struct et_fixture {
  uv_loop_t loop;
  dg_catalog_t *cat;
  dg_tools_env_t env;
  dg_store_t *store;
  dg_mcp_server_t *server;
  dg__mcp_session_t *session;
  char dir[64];
  json_t *replies;
  int next_id;
} et_fixture_t;

static et_fixture_t *et_current; /* the transport has no other way back */

/* Keeps each reply as a client reads it: written out, then parsed. */
static inline void et_reply(dg__mcp_exchange_t *ex, json_t *reply) {
  json_t *seen = json_null();
  dg_buf_t text;
  dg_buf_init(&text, 64 * 1024 * 1024);
  if (reply != NULL && dg_json_write(reply, &text) == 0)
    seen = json_loads(text.data, 0, NULL);
  dg_buf_free(&text);
  json_array_append_new(et_current->replies, seen);
}

static inline void et_notify(dg__mcp_exchange_t *ex, json_t *note) {
}

static const dg__mcp_transport_t et_transport = {
    .name = "test", .reply = et_reply, .notify = et_notify};

static inline void et_opened(dg_store_t *store, int status, const dg_errctx_t *err, void *data) {
  et_fixture_t *fx = data;
  if (status != 0)
    fail_msg("store: %s", err->message);
  fx->store = store;
}

static inline int et_setup(void **state) {
  et_fixture_t *fx = calloc(1, sizeof(*fx));
  char conf[4096], sample[4096], db[128];
  const char *src = getenv("DG_SOURCE_DIR");
  snprintf(conf, sizeof(conf), "%s/conf", src ? src : ".");
  snprintf(sample, sizeof(sample), "%s/conf/data", src ? src : ".");
  dg_log_init(2, DG_LOG_ERROR);
  assert_int_equal(uv_loop_init(&fx->loop), 0);
  assert_int_equal(dg_catalog_load(conf, &fx->cat, NULL), 0);
  snprintf(fx->dir, sizeof(fx->dir), "/tmp/dg-tools-XXXXXX");
  assert_non_null(mkdtemp(fx->dir));
  snprintf(db, sizeof(db), "%s/db.sqlite", fx->dir);
  dg_store_options_t o = {.path = db, .sample_dir = sample};
  assert_int_equal(dg_store_open(&fx->loop, fx->cat, &o, et_opened, fx), 0);
  while (fx->store == NULL)
    uv_run(&fx->loop, UV_RUN_ONCE);
  fx->env.store = fx->store;
  dg_mcp_config_t config = {.server_name = "datagate",
                            .server_version = "test",
                            .instructions = dg_tools_instructions,
                            .tools = dg_tools_registry,
                            .ntools = dg_tools_count,
                            .tool_context = &fx->env};
  dg_errctx_t err;
  dg_mcp_limits_t limits = dg_tools_mcp_limits(fx->cat);
  assert_int_equal(dg_mcp_server_new(&fx->loop, &config, fx->cat, &limits, &fx->server, &err), 0);
  assert_int_equal(dg__mcp_session_new(fx->server, &et_transport, NULL, &fx->session), 0);
  fx->replies = json_array();
  et_current = fx;
  static const char init[] =
      "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":{\"protocolVersion\":"
      "\"2025-06-18\",\"capabilities\":{},\"clientInfo\":{\"name\":\"t\",\"version\":\"1\"}}}";
  dg__mcp_exchange_t *ex = dg__mcp_exchange_new(fx->server);
  assert_int_equal(dg_auth_principal_for_user(ex->cat, "admin", ex->arena, &ex->principal), 0);
  dg__mcp_exchange_bind(ex, fx->session, &et_transport, NULL);
  dg__mcp_exchange_run_text(ex, init, strlen(init));
  while (json_array_size(fx->replies) == 0)
    uv_run(&fx->loop, UV_RUN_ONCE);
  *state = fx;
  return 0;
}

static inline void et_closed(void *data) {
  *(bool *)data = true;
}

static inline void et_remove_dir(const char *dir) {
  DIR *d = opendir(dir);
  for (struct dirent *e = d ? readdir(d) : NULL; e != NULL; e = readdir(d)) {
    char p[512];
    snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
    unlink(p);
  }
  if (d != NULL)
    closedir(d);
  rmdir(dir);
}

/* Frees the server and the store, runs the loop out, and checks that
 * nothing is left open. */
static inline int et_teardown(void **state) {
  et_fixture_t *fx = *state;
  bool closed = false;
  dg_mcp_server_free(fx->server);
  dg_store_close(fx->store, et_closed, &closed);
  uv_run(&fx->loop, UV_RUN_DEFAULT);
  assert_true(closed);
  assert_int_equal(uv_loop_close(&fx->loop), 0);
  dg_catalog_unref(fx->cat);
  json_decref(fx->replies);
  et_remove_dir(fx->dir);
  free(fx);
  return 0;
}

/* Sends a tools/call as user; returns its request id (the reply comes
 * later). */
static inline int et_post(et_fixture_t *fx, const char *user, const char *tool, const char *args) {
  char text[8192];
  int id = ++fx->next_id;
  snprintf(text, sizeof(text),
           "{\"jsonrpc\":\"2.0\",\"id\":%d,\"method\":\"tools/call\",\"params\":{\"name\":\"%s\","
           "\"arguments\":%s}}",
           id, tool, args);
  dg__mcp_exchange_t *ex = dg__mcp_exchange_new(fx->server);
  assert_non_null(ex);
  assert_int_equal(dg_auth_principal_for_user(ex->cat, user, ex->arena, &ex->principal), 0);
  dg__mcp_exchange_bind(ex, fx->session, &et_transport, NULL);
  size_t before = json_array_size(fx->replies);
  dg__mcp_exchange_run_text(ex, text, strlen(text));
  /* Replies never come from inside the call that started the work. */
  assert_int_equal(json_array_size(fx->replies), before);
  return id;
}

/* The tool result (borrowed) of a call: runs the loop until it arrives. */
static inline json_t *et_call(et_fixture_t *fx, const char *user, const char *tool,
                              const char *args) {
  size_t before = json_array_size(fx->replies);
  et_post(fx, user, tool, args);
  while (json_array_size(fx->replies) == before)
    uv_run(&fx->loop, UV_RUN_ONCE);
  json_t *reply = json_array_get(fx->replies, before);
  json_t *result = json_object_get(reply, "result");
  if (result == NULL)
    fail_msg("no result: %s", json_dumps(reply, 0));
  return result;
}

/* structuredContent of a successful call, checked against the tool's
 * outputSchema and against its text item. */
static inline json_t *et_ok(et_fixture_t *fx, const char *user, const char *tool,
                            const char *args) {
  json_t *result = et_call(fx, user, tool, args);
  const char *text = json_string_value(
      json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
  if (json_is_true(json_object_get(result, "isError")))
    fail_msg("%s failed: %s", tool, text);
  json_t *sc = json_object_get(result, "structuredContent");
  assert_non_null(sc);
  const dg__mcp_tool_t *t = dg__mcp_server_tool(fx->server, tool);
  dg_errctx_t err;
  if (dg_mcp_schema_validate(t->output_schema, sc, &err) != 0)
    fail_msg("result does not match the output schema: %s", err.message);
  json_t *parsed = json_loads(text, 0, NULL);
  assert_true(json_equal(parsed, sc));
  json_decref(parsed);
  return sc;
}

/* The error text of a call that must fail. */
static inline const char *et_error(et_fixture_t *fx, const char *user, const char *tool,
                                   const char *args) {
  json_t *result = et_call(fx, user, tool, args);
  assert_true(json_is_true(json_object_get(result, "isError")));
  assert_null(json_object_get(result, "structuredContent"));
  return json_string_value(
      json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
}

static inline void et_contains(const char *text, const char *needle) {
  if (text == NULL || strstr(text, needle) == NULL)
    fail_msg("'%s' not found in: %s", needle, text ? text : "(null)");
}

/* Calls tool with args while every threadpool thread is held, cancels the
 * call before its store work can run, then lets the threads go: the call
 * ends, and a cancelled request gets no response. */
typedef struct et_blockers {
  uv_sem_t go;
  uv_work_t work[128];
  int n, done;
} et_blockers_t;

static inline void et_block_work(uv_work_t *w) {
  uv_sem_wait(&((et_blockers_t *)w->data)->go);
}

static inline void et_block_after(uv_work_t *w, int status) {
  ((et_blockers_t *)w->data)->done++;
}

static inline void et_cancelled_call(et_fixture_t *fx, const char *tool, const char *args) {
  et_blockers_t b = {.n = 4};
  const char *env = getenv("UV_THREADPOOL_SIZE");
  int64_t n = 4;
  if (env != NULL && dg_parse_int64(env, 1, 128, &n))
    b.n = (int)n;
  uv_sem_init(&b.go, 0);
  for (int i = 0; i < b.n; i++) {
    b.work[i].data = &b;
    uv_queue_work(&fx->loop, &b.work[i], et_block_work, et_block_after);
  }
  size_t before = json_array_size(fx->replies);
  int id = et_post(fx, "admin", tool, args);
  assert_int_equal(dg_mcp_server_inflight(fx->server), 1);
  json_t *jid = json_integer(id);
  dg__mcp_call_cancel_id(fx->session, jid);
  json_decref(jid);
  for (int i = 0; i < b.n; i++)
    uv_sem_post(&b.go);
  while (b.done < b.n || dg_mcp_server_inflight(fx->server) > 0)
    uv_run(&fx->loop, UV_RUN_ONCE);
  uv_sem_destroy(&b.go);
  for (size_t i = before; i < json_array_size(fx->replies); i++)
    assert_true(json_is_null(json_array_get(fx->replies, i)));
}

#endif
