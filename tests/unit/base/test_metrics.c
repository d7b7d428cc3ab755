/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for metrics and their Prometheus text rendering. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "datagate/base.h"

static dg_buf_t out;

static int setup(void **state) {
  dg_metrics_reset();
  dg_buf_init(&out, 4 << 20);
  return 0;
}

static int teardown(void **state) {
  dg_metrics_reset();
  dg_buf_free(&out);
  return 0;
}

static const char *render(void) {
  dg_buf_reset(&out);
  assert_int_equal(dg_metrics_render(&out), 0);
  return out.data != NULL ? out.data : "";
}

static size_t count_lines_with_prefix(const char *text, const char *prefix) {
  size_t n = 0, plen = strlen(prefix);
  for (const char *line = text; *line != '\0';) {
    if (strncmp(line, prefix, plen) == 0)
      n++;
    const char *nl = strchr(line, '\n');
    if (nl == NULL)
      break;
    line = nl + 1;
  }
  return n;
}

static void test_counter_and_help(void **state) {
  dg_metrics_describe("dg_requests_total", "Requests served.");
  dg_metrics_counter_add("dg_requests_total", "route=\"/mcp\"", 1);
  dg_metrics_counter_add("dg_requests_total", "route=\"/mcp\"", 2);
  dg_metrics_counter_add("dg_requests_total", "route=\"/healthz\"", 1);
  assert_string_equal(render(), "# HELP dg_requests_total Requests served.\n"
                                "# TYPE dg_requests_total counter\n"
                                "dg_requests_total{route=\"/healthz\"} 1\n"
                                "dg_requests_total{route=\"/mcp\"} 3\n");
}

/* A ref adds to the series its labels name, the same one the plain calls
 * update; a reset leaves it unbound, and a name of another kind refuses it. */
static void test_refs(void **state) {
  dg_metrics_ref_t calls = {0}, took = {0}, wrong = {0};
  assert_false(dg_metrics_ref_bound(&calls));
  dg_metrics_ref_add(&calls, 1); /* unbound: nothing */
  dg_metrics_ref_counter(&calls, "dg_calls_total", "tool=\"a\"");
  dg_metrics_ref_histogram(&took, "dg_call_seconds", "tool=\"a\"");
  assert_true(dg_metrics_ref_bound(&calls));
  dg_metrics_ref_add(&calls, 2);
  dg_metrics_counter_add("dg_calls_total", "tool=\"a\"", 1);
  dg_metrics_ref_observe(&took, 0.003);
  const char *text = render();
  assert_non_null(strstr(text, "dg_calls_total{tool=\"a\"} 3\n"));
  assert_non_null(strstr(text, "dg_call_seconds_bucket{tool=\"a\",le=\"0.005\"} 1\n"));
  assert_non_null(strstr(text, "dg_call_seconds_count{tool=\"a\"} 1\n"));
  dg_metrics_ref_counter(&wrong, "dg_call_seconds", "tool=\"a\"");
  assert_false(dg_metrics_ref_bound(&wrong));
  dg_metrics_reset();
  assert_false(dg_metrics_ref_bound(&calls));
  dg_metrics_ref_add(&calls, 5); /* stale: nothing, and no freed memory touched */
  assert_null(strstr(render(), "dg_calls_total"));
}

static void test_gauges_sorted_by_name(void **state) {
  dg_metrics_gauge_set("dg_z_open", NULL, 5);
  dg_metrics_gauge_add("dg_z_open", NULL, -2);
  dg_metrics_gauge_add("dg_a_inflight", NULL, 1.5);
  assert_string_equal(render(), "# TYPE dg_a_inflight gauge\n"
                                "dg_a_inflight 1.5\n"
                                "# TYPE dg_z_open gauge\n"
                                "dg_z_open 3\n");
}

static void test_histogram_buckets(void **state) {
  dg_metrics_observe("dg_latency_seconds", NULL, 0.003);
  dg_metrics_observe("dg_latency_seconds", NULL, 0.2);
  dg_metrics_observe("dg_latency_seconds", NULL, 100);
  const char *text = render();
  assert_non_null(strstr(text, "# TYPE dg_latency_seconds histogram\n"));
  /* Buckets are cumulative. */
  assert_non_null(strstr(text, "dg_latency_seconds_bucket{le=\"0.0025\"} 0\n"));
  assert_non_null(strstr(text, "dg_latency_seconds_bucket{le=\"0.005\"} 1\n"));
  assert_non_null(strstr(text, "dg_latency_seconds_bucket{le=\"0.1\"} 1\n"));
  assert_non_null(strstr(text, "dg_latency_seconds_bucket{le=\"0.25\"} 2\n"));
  assert_non_null(strstr(text, "dg_latency_seconds_bucket{le=\"30\"} 2\n"));
  assert_non_null(strstr(text, "dg_latency_seconds_bucket{le=\"+Inf\"} 3\n"));
  assert_non_null(strstr(text, "dg_latency_seconds_sum 100.203\n"));
  assert_non_null(strstr(text, "dg_latency_seconds_count 3\n"));
  assert_int_equal(count_lines_with_prefix(text, "dg_latency_seconds_bucket{"), 18);
  /* No empty braces anywhere. */
  assert_null(strstr(text, "{}"));
}

static void test_histogram_with_labels(void **state) {
  dg_metrics_observe("dg_tool_seconds", "tool=\"get_data_models\"", 0.0001);
  const char *text = render();
  assert_non_null(
      strstr(text, "dg_tool_seconds_bucket{tool=\"get_data_models\",le=\"0.0001\"} 1\n"));
  assert_non_null(strstr(text, "dg_tool_seconds_sum{tool=\"get_data_models\"} 0.0001\n"));
  assert_non_null(strstr(text, "dg_tool_seconds_count{tool=\"get_data_models\"} 1\n"));
}

static void test_one_kind_per_name(void **state) {
  dg_metrics_counter_add("dg_mixed", NULL, 1);
  dg_metrics_observe("dg_mixed", NULL, 0.5);
  dg_metrics_gauge_set("dg_mixed", NULL, 10);
  assert_string_equal(render(), "# TYPE dg_mixed counter\n"
                                "dg_mixed 1\n");
}

static void test_series_are_bounded(void **state) {
  char labels[32];
  for (int i = 0; i < 5000; i++) {
    snprintf(labels, sizeof(labels), "id=\"%d\"", i);
    dg_metrics_counter_add("dg_many", labels, 1);
  }
  const char *text = render();
  assert_int_equal(count_lines_with_prefix(text, "dg_many{"), 4096);
  assert_int_equal(count_lines_with_prefix(text, "# TYPE dg_many "), 1);
  /* Existing series still count once the table is full. */
  dg_metrics_counter_add("dg_many", "id=\"7\"", 1);
  assert_non_null(strstr(render(), "dg_many{id=\"7\"} 2\n"));
}

static void test_render_reports_full_buffer(void **state) {
  dg_buf_t small;
  dg_metrics_counter_add("dg_some_counter_with_a_long_name", "a=\"b\"", 1);
  dg_buf_init(&small, 16);
  assert_int_equal(dg_metrics_render(&small), DG_E2BIG);
  dg_buf_free(&small);
}

static void test_reset(void **state) {
  dg_metrics_counter_add("dg_gone", NULL, 1);
  dg_metrics_reset();
  assert_string_equal(render(), "");
  dg_metrics_counter_add("dg_gone", NULL, 1);
  assert_string_equal(render(), "# TYPE dg_gone counter\ndg_gone 1\n");
}

static void test_counter_set(void **state) {
  dg_metrics_counter_set("dg_kept_total", NULL, 2.5);
  dg_metrics_counter_set("dg_kept_total", NULL, 3.5);
  assert_string_equal(render(), "# TYPE dg_kept_total counter\ndg_kept_total 3.5\n");
}

/* The value rendered for a series without labels. */
static double value_of(const char *text, const char *name) {
  char prefix[128];
  snprintf(prefix, sizeof(prefix), "\n%s ", name);
  const char *p = strstr(text, prefix);
  if (p == NULL)
    fail_msg("no %s in:\n%s", name, text);
  return strtod(p + strlen(prefix), NULL);
}

static void test_process_metrics(void **state) {
  FILE *f = fopen("/dev/null", "r"); /* one more descriptor must be counted */
  assert_non_null(f);
  dg_metrics_update_process();
  const char *text = render();
  double fds = value_of(text, "process_open_fds");
  assert_true(value_of(text, "process_resident_memory_bytes") > 1024 * 1024);
  assert_true(value_of(text, "process_cpu_seconds_total") > 0);
  double start = value_of(text, "process_start_time_seconds");
  double now = (double)time(NULL);
  assert_true(start > now - 3600 && start <= now + 1);
  fclose(f);
  dg_metrics_update_process();
  assert_true(value_of(render(), "process_open_fds") == fds - 1);
  assert_non_null(strstr(render(), "# HELP process_cpu_seconds_total "));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_counter_and_help, setup, teardown),
      cmocka_unit_test_setup_teardown(test_refs, setup, teardown),
      cmocka_unit_test_setup_teardown(test_gauges_sorted_by_name, setup, teardown),
      cmocka_unit_test_setup_teardown(test_histogram_buckets, setup, teardown),
      cmocka_unit_test_setup_teardown(test_histogram_with_labels, setup, teardown),
      cmocka_unit_test_setup_teardown(test_one_kind_per_name, setup, teardown),
      cmocka_unit_test_setup_teardown(test_series_are_bounded, setup, teardown),
      cmocka_unit_test_setup_teardown(test_render_reports_full_buffer, setup, teardown),
      cmocka_unit_test_setup_teardown(test_reset, setup, teardown),
      cmocka_unit_test_setup_teardown(test_counter_set, setup, teardown),
      cmocka_unit_test_setup_teardown(test_process_metrics, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
