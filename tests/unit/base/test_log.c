/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for JSON-lines logging: lines are written to a pipe and read
 * back with jansson. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "datagate/base.h"

static int fds[2];

static int setup(void **state) {
  if (pipe(fds) != 0)
    return -1;
  fcntl(fds[0], F_SETFL, O_NONBLOCK);
  dg_log_init(fds[1], DG_LOG_INFO);
  return 0;
}

static int teardown(void **state) {
  dg_log_set_common(NULL);
  dg_log_init(2, DG_LOG_INFO);
  close(fds[0]);
  close(fds[1]);
  return 0;
}

/* Everything written so far, as text. */
static size_t drain(char *out, size_t size) {
  size_t n = 0;
  while (n < size - 1) {
    ssize_t r = read(fds[0], out + n, size - 1 - n);
    if (r <= 0)
      break;
    n += (size_t)r;
  }
  out[n] = '\0';
  return n;
}

/* Reads exactly one line and parses it. */
static json_t *read_line(void) {
  char text[8192];
  size_t n = drain(text, sizeof(text));
  assert_true(n > 0);
  assert_int_equal(text[n - 1], '\n');
  assert_ptr_equal(strchr(text, '\n'), text + n - 1);
  json_error_t jerr;
  json_t *line = json_loadb(text, n - 1, 0, &jerr);
  if (line == NULL)
    fail_msg("not JSON (%s): %s", jerr.text, text);
  return line;
}

static const char *field(json_t *line, const char *key) {
  return json_string_value(json_object_get(line, key));
}

static void test_line_fields(void **state) {
  dg_log_json(DG_LOG_WARN, "upstream_slow", json_pack("{s:i,s:s}", "ms", 1500, "host", "api"));
  json_t *line = read_line();
  assert_string_equal(field(line, "level"), "warn");
  assert_string_equal(field(line, "event"), "upstream_slow");
  assert_string_equal(field(line, "host"), "api");
  assert_int_equal(json_integer_value(json_object_get(line, "ms")), 1500);
  /* "2026-11-23T05:25:12.123Z" */
  const char *ts = field(line, "ts");
  assert_non_null(ts);
  assert_int_equal(strlen(ts), 24);
  assert_int_equal(ts[10], 'T');
  assert_int_equal(ts[19], '.');
  assert_int_equal(ts[23], 'Z');
  json_decref(line);
}

static void test_level_filter(void **state) {
  char text[256];
  assert_false(dg_log_enabled(DG_LOG_DEBUG));
  assert_true(dg_log_enabled(DG_LOG_INFO));
  dg_log_json(DG_LOG_DEBUG, "hidden", json_pack("{s:s}", "k", "v"));
  dg_logf(DG_LOG_DEBUG, "hidden", "%s", "also hidden");
  assert_int_equal(drain(text, sizeof(text)), 0);
  dg_log_init(fds[1], DG_LOG_DEBUG);
  dg_log_json(DG_LOG_DEBUG, "shown", NULL);
  json_t *line = read_line();
  assert_string_equal(field(line, "level"), "debug");
  assert_string_equal(field(line, "event"), "shown");
  json_decref(line);
  dg_log_init(fds[1], DG_LOG_ERROR);
  dg_log_json(DG_LOG_WARN, "hidden", NULL);
  assert_int_equal(drain(text, sizeof(text)), 0);
  dg_log_init(fds[1], DG_LOG_INFO);
}

static void test_logf_escapes_newlines(void **state) {
  dg_logf(DG_LOG_ERROR, "config", "bad value %d\nsecond line \"quoted\"", 7);
  json_t *line = read_line();
  assert_string_equal(field(line, "level"), "error");
  assert_string_equal(field(line, "msg"), "bad value 7\nsecond line \"quoted\"");
  json_decref(line);
}

static void test_common_fields(void **state) {
  json_t *common = json_pack("{s:i,s:s}", "worker", 3, "role", "common");
  dg_log_set_common(common);
  /* The fields were copied: later changes to the caller's object do not show. */
  json_object_set_new(common, "worker", json_integer(99));
  json_decref(common);
  dg_log_json(DG_LOG_INFO, "start", json_pack("{s:s}", "role", "own"));
  json_t *line = read_line();
  assert_int_equal(json_integer_value(json_object_get(line, "worker")), 3);
  /* A line's own field wins over a common one. */
  assert_string_equal(field(line, "role"), "own");
  json_decref(line);
  dg_log_set_common(NULL);
  dg_log_json(DG_LOG_INFO, "after", NULL);
  line = read_line();
  assert_null(json_object_get(line, "worker"));
  json_decref(line);
}

static void test_out_of_range_level(void **state) {
  dg_log_json((dg_log_level_t)42, "odd", NULL);
  json_t *line = read_line();
  assert_string_equal(field(line, "level"), "error");
  json_decref(line);
}

static void test_level_parse(void **state) {
  bool ok = false;
  assert_int_equal(dg_log_level_parse("debug", &ok), DG_LOG_DEBUG);
  assert_true(ok);
  assert_int_equal(dg_log_level_parse("warn", &ok), DG_LOG_WARN);
  assert_int_equal(dg_log_level_parse("error", &ok), DG_LOG_ERROR);
  assert_int_equal(dg_log_level_parse("info", &ok), DG_LOG_INFO);
  assert_true(ok);
  dg_log_level_parse("verbose", &ok);
  assert_false(ok);
  dg_log_level_parse("WARN", &ok);
  assert_false(ok);
}

/* Durations are milliseconds rounded to the microsecond, written without
 * the float noise of 17 significant digits. */
static void test_duration_ms(void **state) {
  assert_true(dg_log_ms(655597) == 0.656);
  assert_true(dg_log_ms(655497) == 0.655);
  assert_true(dg_log_ms(0) == 0);
  assert_true(dg_log_ms(12345678901) == 12345.679);
  dg_log_json(DG_LOG_INFO, "timed", json_pack("{s:f}", "duration_ms", dg_log_ms(655597)));
  char text[512];
  drain(text, sizeof(text));
  assert_non_null(strstr(text, "\"duration_ms\":0.656}"));
}

static void test_write_common(void **state) {
  dg_buf_t out;
  dg_buf_init(&out, 256);
  assert_int_equal(dg_log_write_common(&out), 0);
  assert_int_equal(out.len, 0);
  json_t *common = json_pack("{s:i,s:s}", "worker", 2, "role", "a\"b");
  dg_log_set_common(common);
  json_decref(common);
  assert_int_equal(dg_log_write_common(&out), 0);
  assert_string_equal(out.data, ",\"worker\":2,\"role\":\"a\\\"b\"");
  dg_buf_free(&out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_line_fields, setup, teardown),
      cmocka_unit_test_setup_teardown(test_level_filter, setup, teardown),
      cmocka_unit_test_setup_teardown(test_logf_escapes_newlines, setup, teardown),
      cmocka_unit_test_setup_teardown(test_common_fields, setup, teardown),
      cmocka_unit_test_setup_teardown(test_out_of_range_level, setup, teardown),
      cmocka_unit_test(test_level_parse),
      cmocka_unit_test_setup_teardown(test_duration_ms, setup, teardown),
      cmocka_unit_test_setup_teardown(test_write_common, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
