/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Shared helpers of the mcp tests: a small configuration written to a
 * temporary directory and loaded with the real catalog, fake tools, and an
 * in-memory transport that records what the server sends and whether it
 * sent it from inside the call that started the work. */
#ifndef DG_TEST_MCP_TEST_H
#define DG_TEST_MCP_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "datagate/tools.h"
#include "mcp/internal.h"

#define MT_TOKEN_ALICE "alice-token-0123456789"
#define MT_TOKEN_BOB "bob-token-0123456789"

static const char mt_config[] =
    "{\"server\": {\"stdioUser\": \"alice\", \"maxSessions\": 3,"
    "  \"allowedOrigins\": [\"http://good.example\"], \"maxInflightPerSession\": 2,"
    "  \"accessLog\": \"-\", \"logLevel\": \"error\"},"
    " \"roles\": [{\"name\": \"reader\", \"models\": [], \"savedQueries\": []}],"
    " \"users\": [{\"name\": \"alice\", \"roles\": [\"reader\"], \"tokenEnv\": \"MT_TOKEN_ALICE\"},"
    "            {\"name\": \"bob\", \"roles\": [\"reader\"], \"tokenEnv\": \"MT_TOKEN_BOB\"}]}";

/* Writes the configuration to a fresh temporary directory and loads it. */
static inline dg_catalog_t *mt_catalog(void) {
  char dir[] = "/tmp/dg-mcp-test-XXXXXX";
  assert_non_null(mkdtemp(dir));
  char path[128];
  snprintf(path, sizeof(path), "%s/datagate.json", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(mt_config, f);
  fclose(f);
  setenv("MT_TOKEN_ALICE", MT_TOKEN_ALICE, 1);
  setenv("MT_TOKEN_BOB", MT_TOKEN_BOB, 1);
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = NULL;
  int rc = dg_catalog_load(dir, &cat, &errors);
  for (size_t i = 0; i < errors.count; i++)
    fprintf(stderr, "config: %s\n", errors.lines[i]);
  dg_config_errors_free(&errors);
  unlink(path);
  rmdir(dir);
  assert_int_equal(rc, 0);
  return cat;
}

/* ---- Fake tools -------------------------------------------------------------- */
static _Atomic int mt_cancels;           /* cancel callbacks heard (the test thread reads it) */
static _Atomic int mt_slow_runs;         /* "slow" calls started (the test thread reads it) */
static dg_mcp_tool_call_t *mt_slow_call; /* the last "slow" call still running */

/* Ends a call on a later loop turn, from a timer of its own. */
typedef struct mt_later {
  uv_timer_t timer;
  dg_mcp_tool_call_t *call;
  json_t *result;
} mt_later_t;

static inline void mt_later_closed(uv_handle_t *h) {
  free(h->data);
}

static inline void mt_later_fire(uv_timer_t *t) {
  mt_later_t *l = t->data;
  dg_mcp_tool_call_succeed(l->call, l->result);
  uv_close((uv_handle_t *)t, mt_later_closed);
}

static inline void mt_succeed_later(dg_mcp_tool_call_t *call, json_t *result, uint64_t ms) {
  mt_later_t *l = calloc(1, sizeof(*l));
  l->call = call;
  l->result = result;
  uv_timer_init(dg_mcp_tool_call_loop(call), &l->timer);
  l->timer.data = l;
  uv_timer_start(&l->timer, mt_later_fire, ms, 0);
}

static inline void mt_echo_run(dg_mcp_tool_call_t *call) {
  dg_mcp_tool_call_succeed(call, json_pack("{s:O}", "echo", dg_mcp_tool_call_args(call)));
}

static inline void mt_slow_cancel(dg_mcp_tool_call_t *call, void *data) {
  mt_cancels++;
  if (mt_slow_call == call)
    mt_slow_call = NULL;
  dg_mcp_tool_call_failf(call, "canceled");
}

static inline void mt_slow_run(dg_mcp_tool_call_t *call) {
  mt_slow_call = call;
  dg_mcp_tool_call_on_cancel(call, mt_slow_cancel, NULL);
  mt_slow_runs++;
}

/* With {"meta": true}: one notification carrying _meta, and what
 * dg_mcp_tool_call_progress_meta returned. */
static inline void mt_progress_meta_run(dg_mcp_tool_call_t *call) {
  json_t *meta = json_pack("{s:i}", "offset", 40);
  int rc = dg_mcp_tool_call_progress_meta(call, 50, -1, "chunk", meta);
  json_decref(meta);
  mt_succeed_later(call, json_pack("{s:s}", "rc", rc == 0 ? "ok" : dg_err_name(rc)), 5);
}

static inline void mt_progress_run(dg_mcp_tool_call_t *call) {
  if (json_is_true(json_object_get(dg_mcp_tool_call_args(call), "meta"))) {
    mt_progress_meta_run(call);
    return;
  }
  dg_mcp_tool_call_progress(call, 1, 3, "one");
  dg_mcp_tool_call_progress(call, 2, -1, NULL);
  mt_succeed_later(call, json_pack("{s:b}", "streamed", dg_mcp_tool_call_wants_progress(call)), 5);
}

static inline void mt_big_run(dg_mcp_tool_call_t *call) {
  size_t n = 10000;
  char *s = malloc(n + 1);
  memset(s, 'x', n);
  s[n] = '\0';
  dg_mcp_tool_call_succeed(call, json_pack("{s:s}", "blob", s));
  free(s);
}

static inline void mt_fail_run(dg_mcp_tool_call_t *call) {
  dg_mcp_tool_call_failf(call, "parameter 'x' was %d; allowed: 1 to 5", 7);
}

static const dg_tool_t mt_echo = {
    .name = "echo",
    .title = "Echo",
    .description = "Returns its arguments.",
    .input_schema = "{\"type\":\"object\",\"properties\":{\"text\":{\"type\":\"string\","
                    "\"default\":\"hi\"},\"n\":{\"type\":\"integer\",\"minimum\":0,"
                    "\"maximum\":10}},\"additionalProperties\":false}",
    .output_schema = "{\"type\":\"object\",\"properties\":{\"echo\":{\"type\":\"object\"}}}",
    .read_only = true,
    .idempotent = true,
    .run = mt_echo_run,
};
static const dg_tool_t mt_slow = {.name = "slow",
                                  .description = "Runs until canceled.",
                                  .input_schema = "{\"type\":\"object\"}",
                                  .open_world = true,
                                  .run = mt_slow_run};
static const dg_tool_t mt_progress = {.name = "progress",
                                      .description = "Sends progress.",
                                      .input_schema = "{\"type\":\"object\"}",
                                      .run = mt_progress_run};
static const dg_tool_t mt_big = {.name = "big",
                                 .description = "Too large.",
                                 .input_schema = "{\"type\":\"object\"}",
                                 .run = mt_big_run};
static const dg_tool_t mt_fail = {.name = "fail",
                                  .description = "Fails.",
                                  .destructive = true,
                                  .input_schema = "{\"type\":\"object\"}",
                                  .run = mt_fail_run};
static const dg_tool_t *const mt_tools[] = {&mt_echo, &mt_slow, &mt_progress, &mt_big, &mt_fail};

/* ---- Asking the user and resources (set up with mt_setup_more) ------------------ */

/* "ask": asks the user; its result is what dg_mcp_tool_call_elicit returned
 * and then what the answer was. */
static inline void mt_ask_answer(dg_mcp_tool_call_t *call, int status, dg_elicit_action_t action,
                                 const json_t *content, void *data) {
  static const char *const names[] = {"accept", "decline", "cancel"};
  if (status == DG_ECANCELED) {
    mt_cancels++;
    dg_mcp_tool_call_failf(call, "abandoned");
    return;
  }
  dg_mcp_tool_call_succeed(call, json_pack("{s:s,s:s,s:O?}", "status", dg_err_name(status),
                                           "action", names[action], "content", content));
}

static inline void mt_ask_run(dg_mcp_tool_call_t *call) {
  json_t *schema =
      json_pack("{s:s,s:{s:{s:s}}}", "type", "object", "properties", "ok", "type", "boolean");
  int rc = dg_mcp_tool_call_elicit(call, "Go ahead?", schema, mt_ask_answer, NULL);
  json_decref(schema);
  if (rc != 0)
    dg_mcp_tool_call_succeed(call, json_pack("{s:s}", "status", dg_err_name(rc)));
}

static const dg_tool_t mt_ask = {.name = "ask",
                                 .description = "Asks the user.",
                                 .input_schema = "{\"type\":\"object\"}",
                                 .elicits = true,
                                 .run = mt_ask_run};

/* Resources read through echo: mt://echo/<text> answers {"echo":
 * {"text": <text>}} as a JSON content; mt://none/<text> runs echo but
 * finds nothing; mt://fail runs fail. */
static inline json_t *mt_echo_contents(const char *uri, const char *text, size_t len) {
  return json_pack("[{s:s,s:s%}]", "uri", uri, "text", text, len);
}

static inline json_t *mt_no_contents(const char *uri, const char *text, size_t len) {
  return NULL;
}

static inline json_t *mt_resource_list(const dg_catalog_t *cat, const dg_principal_t *p) {
  return json_pack("[{s:s,s:s}]", "uri", "mt://echo/listed", "name", dg_principal_name(p));
}

static inline json_t *mt_resource_templates(void) {
  return json_pack("[{s:s,s:s}]", "uriTemplate", "mt://echo/{text}", "name", "echo");
}

static inline int mt_resolve(const char *uri, dg_mcp_resource_read_t *out, dg_errctx_t *err) {
  if (strncmp(uri, "mt://echo/", 10) == 0 || strncmp(uri, "mt://none/", 10) == 0) {
    *out = (dg_mcp_resource_read_t){"echo", json_pack("{s:s}", "text", uri + 10),
                                    uri[5] == 'e' ? mt_echo_contents : mt_no_contents};
    return 0;
  }
  if (strcmp(uri, "mt://fail") == 0) {
    *out = (dg_mcp_resource_read_t){"fail", json_object(), mt_echo_contents};
    return 0;
  }
  return dg_errctx_set(err, DG_ENOENT, "uri", "no resource %s", uri);
}

static const dg_mcp_resources_t mt_resources = {
    .list = mt_resource_list, .templates = mt_resource_templates, .resolve = mt_resolve};

static const dg_tool_t *const mt_more_tools[] = {&mt_echo, &mt_slow, &mt_progress,
                                                 &mt_big,  &mt_fail, &mt_ask};
/* Set by mt_setup_more: the server also has "ask" and the resources. */
static bool mt_more;

/* A server with the fake tools; with shared NULL it makes its own session
 * key and table, otherwise it shares them like a worker. */
static inline int mt_server_new_shared(uv_loop_t *loop, dg_catalog_t *cat, dg_mcp_shared_t *shared,
                                       dg_mcp_server_t **out) {
  dg_mcp_config_t config = {
      .server_name = "datagate",
      .server_version = "9.9.9",
      .instructions = "Call echo first.",
      .tools = mt_more ? mt_more_tools : mt_tools,
      .ntools = mt_more ? DG_ARRAY_SIZE(mt_more_tools) : DG_ARRAY_SIZE(mt_tools),
      .resources = mt_more ? &mt_resources : NULL,
      .shared = shared,
  };
  dg_errctx_t err;
  dg_errctx_clear(&err);
  dg_mcp_limits_t limits = dg_tools_mcp_limits(cat);
  return dg_mcp_server_new(loop, &config, cat, &limits, out, &err);
}

static inline int mt_server_new(uv_loop_t *loop, dg_catalog_t *cat, dg_mcp_server_t **out) {
  return mt_server_new_shared(loop, cat, NULL, out);
}

/* ---- In-memory transport -------------------------------------------------------- */

typedef struct mt_sink {
  json_t *replies;  /* every reply, in order (null for "nothing to send") */
  json_t *notes;    /* every notification */
  bool dispatching; /* set while the test is inside the call that started work */
  int early;        /* replies delivered while dispatching: must stay 0 */
} mt_sink_t;

static mt_sink_t mt_sink;

/* A reply as a client reads it: written out as the transports write it
 * (pre-written parts such as the tools/list array included), then parsed. */
static inline json_t *mt_wire(const json_t *reply) {
  if (reply == NULL)
    return json_null();
  dg_buf_t text;
  dg_buf_init(&text, 1u << 24);
  assert_int_equal(dg__mcp_dump(reply, &text), 0);
  json_t *parsed = json_loadb(text.data, text.len, 0, NULL);
  assert_non_null(parsed);
  dg_buf_free(&text);
  return parsed;
}

static inline void mt_reply(dg__mcp_exchange_t *ex, json_t *reply) {
  if (mt_sink.dispatching)
    mt_sink.early++;
  json_array_append_new(mt_sink.replies, mt_wire(reply));
}

/* Progress may be sent from inside a tool's run: it completes nothing. */
static inline void mt_notify(dg__mcp_exchange_t *ex, json_t *note) {
  json_array_append_new(mt_sink.notes, json_deep_copy(note));
}

static const dg__mcp_transport_t mt_transport = {
    .name = "test", .reply = mt_reply, .notify = mt_notify};

typedef struct mt_env {
  uv_loop_t loop;
  dg_catalog_t *cat;
  dg_mcp_server_t *server;
  dg__mcp_session_t *session;
} mt_env_t;

static inline int mt_setup(void **state) {
  mt_env_t *env = calloc(1, sizeof(*env));
  dg_log_init(2, DG_LOG_ERROR);
  uv_loop_init(&env->loop);
  env->cat = mt_catalog();
  assert_int_equal(mt_server_new(&env->loop, env->cat, &env->server), 0);
  assert_int_equal(dg__mcp_session_new(env->server, &mt_transport, NULL, &env->session), 0);
  mt_sink.replies = json_array();
  mt_sink.notes = json_array();
  mt_sink.early = 0;
  mt_cancels = 0;
  mt_slow_runs = 0;
  mt_slow_call = NULL;
  *state = env;
  return 0;
}

/* mt_setup with the "ask" tool and the resources. */
static inline int mt_setup_more(void **state) {
  mt_more = true;
  int rc = mt_setup(state);
  mt_more = false;
  return rc;
}

/* Frees the server, runs the loop until every handle is closed and checks
 * that nothing is left open. */
static inline int mt_teardown(void **state) {
  mt_env_t *env = *state;
  dg_mcp_server_free(env->server);
  uv_run(&env->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&env->loop), 0);
  dg_catalog_unref(env->cat);
  json_decref(mt_sink.replies);
  json_decref(mt_sink.notes);
  assert_int_equal(mt_sink.early, 0);
  free(env);
  return 0;
}

/* Runs the loop until n replies have arrived (or two seconds passed). */
static inline void mt_wait_replies(mt_env_t *env, size_t n) {
  uint64_t deadline = dg_now_ms() + 2000;
  while (json_array_size(mt_sink.replies) < n && dg_now_ms() < deadline)
    uv_run(&env->loop, UV_RUN_ONCE);
}

/* Sends one message on the session as alice; the reply is not waited for. */
static inline void mt_post(mt_env_t *env, const char *text) {
  dg__mcp_exchange_t *ex = dg__mcp_exchange_new(env->server);
  assert_non_null(ex);
  assert_int_equal(dg_auth_principal_for_user(ex->cat, "alice", ex->arena, &ex->principal), 0);
  dg__mcp_exchange_bind(ex, env->session, &mt_transport, NULL);
  mt_sink.dispatching = true;
  dg__mcp_exchange_run_text(ex, text, strlen(text));
  mt_sink.dispatching = false;
}

/* Sends one message and returns its reply (borrowed; null when none). */
static inline json_t *mt_call(mt_env_t *env, const char *text) {
  size_t before = json_array_size(mt_sink.replies);
  mt_post(env, text);
  assert_int_equal(json_array_size(mt_sink.replies), before);
  mt_wait_replies(env, before + 1);
  assert_int_equal(json_array_size(mt_sink.replies), before + 1);
  return json_array_get(mt_sink.replies, before);
}

/* initialize at version, declaring the client capabilities caps (JSON). */
static inline void mt_initialize_with(mt_env_t *env, const char *version, const char *caps) {
  char text[512];
  snprintf(text, sizeof(text),
           "{\"jsonrpc\":\"2.0\",\"id\":0,\"method\":\"initialize\",\"params\":"
           "{\"protocolVersion\":\"%s\",\"capabilities\":%s,\"clientInfo\":{\"name\":\"t\","
           "\"version\":\"1\"}}}",
           version, caps);
  json_t *r = mt_call(env, text);
  assert_string_equal(
      json_string_value(json_object_get(json_object_get(r, "result"), "protocolVersion")), version);
}

static inline void mt_initialize(mt_env_t *env, const char *version) {
  mt_initialize_with(env, version, "{}");
}

static inline int mt_error_code(const json_t *reply) {
  return (int)json_integer_value(json_object_get(json_object_get(reply, "error"), "code"));
}

static inline const char *mt_error_message(const json_t *reply) {
  return json_string_value(json_object_get(json_object_get(reply, "error"), "message"));
}

#endif
