/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for MCP over stdio: newline-delimited messages on pipes and
 * on regular files, answers in order, over-long lines, and on_eof firing
 * once, never from inside dg_mcp_stdio_start, and only after calls still
 * running at end of input have been answered. */
#include <fcntl.h>

#include "mcp/mcp_test.h"

typedef struct st_env {
  uv_loop_t loop;
  dg_catalog_t *cat;
  dg_mcp_server_t *server;
  int eofs;
} st_env_t;

static int setup(void **state) {
  st_env_t *env = calloc(1, sizeof(*env));
  dg_log_init(2, DG_LOG_ERROR);
  uv_loop_init(&env->loop);
  env->cat = mt_catalog();
  assert_int_equal(mt_server_new(&env->loop, env->cat, &env->server), 0);
  *state = env;
  return 0;
}

static int teardown(void **state) {
  st_env_t *env = *state;
  dg_mcp_server_free(env->server);
  uv_run(&env->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&env->loop), 0);
  dg_catalog_unref(env->cat);
  free(env);
  return 0;
}

static void on_eof(void *data) {
  st_env_t *env = data;
  env->eofs++;
}

static void run_until_eof(st_env_t *env) {
  uint64_t deadline = dg_now_ms() + 3000;
  while (env->eofs == 0 && dg_now_ms() < deadline)
    uv_run(&env->loop, UV_RUN_ONCE);
  assert_int_equal(env->eofs, 1);
}

/* Runs input through pipes; returns the output (free it). */
static char *through_pipes(st_env_t *env, const char *input) {
  int in[2], out[2];
  assert_int_equal(pipe(in), 0);
  assert_int_equal(pipe(out), 0);
  assert_int_equal(write(in[1], input, strlen(input)), (ssize_t)strlen(input));
  close(in[1]);
  assert_int_equal(dg_mcp_stdio_start(env->server, in[0], out[1], on_eof, env), 0);
  assert_int_equal(env->eofs, 0);
  run_until_eof(env);
  /* The server closes the descriptors it turned into handles. */
  dg_mcp_server_free(env->server);
  uv_run(&env->loop, UV_RUN_DEFAULT);
  assert_int_equal(mt_server_new(&env->loop, env->cat, &env->server), 0);
  static char buf[1 << 16];
  ssize_t n = read(out[0], buf, sizeof(buf) - 1);
  close(out[0]);
  assert_true(n > 0);
  buf[n] = '\0';
  return strdup(buf);
}

/* Splits output into JSON lines; every line must be JSON. */
static json_t *lines_of(const char *text) {
  json_t *list = json_array();
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    assert_non_null(nl);
    json_t *v = json_loadb(p, (size_t)(nl - p), 0, NULL);
    if (v == NULL)
      fail_msg("output line is not JSON: %.*s", (int)(nl - p), p);
    json_array_append_new(list, v);
    p = nl + 1;
  }
  return list;
}

static const char init_line[] =
    "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"initialize\",\"params\":"
    "{\"protocolVersion\":\"2025-06-18\"}}\n";

static void test_pipe_session(void **state) {
  st_env_t *env = *state;
  char input[2048];
  snprintf(input, sizeof(input),
           "%s{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n"
           "\n"
           "{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"tools/list\"}\r\n"
           "not json\n"
           "{\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"tools/call\",\"params\":{\"name\":\"echo\","
           "\"arguments\":{\"n\":2}}}\n"
           "{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}",
           init_line);
  char *out = through_pipes(env, input);
  json_t *lines = lines_of(out);
  free(out);
  assert_int_equal(json_array_size(lines), 5);
  assert_int_equal(json_integer_value(json_object_get(json_array_get(lines, 0), "id")), 1);
  assert_int_equal(json_integer_value(json_object_get(json_array_get(lines, 1), "id")), 2);
  assert_int_equal(mt_error_code(json_array_get(lines, 2)), -32700);
  json_t *call = json_object_get(json_array_get(lines, 3), "result");
  assert_non_null(json_object_get(call, "structuredContent"));
  /* The last line had no newline: it still counts. */
  assert_int_equal(json_integer_value(json_object_get(json_array_get(lines, 4), "id")), 4);
  json_decref(lines);
}

static void test_eof_waits_for_running_call(void **state) {
  st_env_t *env = *state;
  char input[1024];
  snprintf(input, sizeof(input),
           "%s{\"jsonrpc\":\"2.0\",\"id\":9,\"method\":\"tools/call\",\"params\":"
           "{\"name\":\"progress\",\"_meta\":{\"progressToken\":1}}}\n",
           init_line);
  char *out = through_pipes(env, input);
  json_t *lines = lines_of(out);
  free(out);
  /* initialize, two progress notifications, the response. */
  assert_int_equal(json_array_size(lines), 4);
  assert_string_equal(json_string_value(json_object_get(json_array_get(lines, 1), "method")),
                      "notifications/progress");
  assert_int_equal(json_integer_value(json_object_get(json_array_get(lines, 3), "id")), 9);
  json_decref(lines);
}

static void test_long_line_skipped(void **state) {
  st_env_t *env = *state;
  env->server->limits.max_body_bytes = 2048;
  size_t big = 5000;
  char *input = malloc(big + 256);
  memset(input, 'x', big);
  snprintf(input + big, 256, "\n{\"jsonrpc\":\"2.0\",\"id\":5,\"method\":\"ping\"}\n");
  char *out = through_pipes(env, input);
  free(input);
  json_t *lines = lines_of(out);
  free(out);
  assert_int_equal(json_array_size(lines), 2);
  assert_int_equal(mt_error_code(json_array_get(lines, 0)), -32600);
  assert_non_null(strstr(mt_error_message(json_array_get(lines, 0)), "2048"));
  assert_int_equal(json_integer_value(json_object_get(json_array_get(lines, 1), "id")), 5);
  json_decref(lines);
}

static int temp_file(const char *content) {
  char path[] = "/tmp/dg-stdio-XXXXXX";
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  unlink(path);
  if (content != NULL) {
    assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    lseek(fd, 0, SEEK_SET);
  }
  return fd;
}

static void test_regular_files(void **state) {
  st_env_t *env = *state;
  char input[1024];
  snprintf(input, sizeof(input),
           "%s[{\"jsonrpc\":\"2.0\",\"id\":6,\"method\":\"ping\"}]\n"
           "{\"jsonrpc\":\"2.0\",\"id\":7,\"method\":\"ping\"}\n",
           init_line);
  int in = temp_file(input), out = temp_file(NULL);
  assert_int_equal(dg_mcp_stdio_start(env->server, in, out, on_eof, env), 0);
  assert_int_equal(env->eofs, 0);
  run_until_eof(env);
  char buf[4096];
  ssize_t n = pread(out, buf, sizeof(buf) - 1, 0);
  assert_true(n > 0);
  buf[n] = '\0';
  close(in);
  close(out);
  json_t *lines = lines_of(buf);
  assert_int_equal(json_array_size(lines), 3);
  /* A batch at 2025-06-18 is refused; the session goes on. */
  assert_int_equal(mt_error_code(json_array_get(lines, 1)), -32600);
  assert_int_equal(json_integer_value(json_object_get(json_array_get(lines, 2), "id")), 7);
  json_decref(lines);
}

static void test_empty_input_eof_is_deferred(void **state) {
  st_env_t *env = *state;
  int in = temp_file(""), out = temp_file(NULL);
  assert_int_equal(dg_mcp_stdio_start(env->server, in, out, on_eof, env), 0);
  assert_int_equal(env->eofs, 0);
  run_until_eof(env);
  for (int i = 0; i < 5; i++)
    uv_run(&env->loop, UV_RUN_NOWAIT);
  assert_int_equal(env->eofs, 1);
  assert_int_equal(lseek(out, 0, SEEK_END), 0);
  close(in);
  close(out);
}

static void test_unknown_stdio_user(void **state) {
  st_env_t *env = *state;
  env->cat->server.stdio_user = "nobody";
  env->server->limits = dg_tools_mcp_limits(env->cat);
  assert_int_equal(dg_mcp_stdio_start(env->server, 0, 1, on_eof, env), DG_ECONFIG);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_pipe_session, setup, teardown),
      cmocka_unit_test_setup_teardown(test_eof_waits_for_running_call, setup, teardown),
      cmocka_unit_test_setup_teardown(test_long_line_skipped, setup, teardown),
      cmocka_unit_test_setup_teardown(test_regular_files, setup, teardown),
      cmocka_unit_test_setup_teardown(test_empty_input_eof_is_deferred, setup, teardown),
      cmocka_unit_test_setup_teardown(test_unknown_stdio_user, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
