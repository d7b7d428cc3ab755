/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the HTTP facts in base: reason phrases and trace ids. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/base.h"

static void test_status_text(void **state) {
  assert_string_equal(dg_http_status_text(404), "Not Found");
  assert_string_equal(dg_http_status_text(431), "Request Header Fields Too Large");
  assert_string_equal(dg_http_status_text(299), "Unknown");
}

static void test_trace_id(void **state) {
  char id[33];
  dg_trace_id("4BF92F35-77B3-4DA6-A3CE-929D0E0E4736", id);
  assert_string_equal(id, "4bf92f3577b34da6a3ce929d0e0e4736");
  dg_trace_id("0af7651916cd43dd8448eb211c80319c", id);
  assert_string_equal(id, "0af7651916cd43dd8448eb211c80319c");
  /* Any other id: the same id gives the same trace, another a different one. */
  char a[33];
  char b[33];
  dg_trace_id("call-17", a);
  dg_trace_id("call-17", id);
  dg_trace_id("call-18", b);
  assert_string_equal(a, id);
  assert_string_not_equal(a, b);
  assert_int_equal(strspn(a, "0123456789abcdef"), 32);
  /* All zeros is not a valid trace id. */
  dg_trace_id("00000000000000000000000000000000", id);
  assert_string_not_equal(id, "00000000000000000000000000000000");
  dg_trace_id(NULL, a);
  dg_trace_id(NULL, b);
  assert_string_not_equal(a, b);
}

static void test_traceparent(void **state) {
  char id[33];
  static const char *const good[] = {
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-00",
      /* A later version may carry more fields after a '-'. */
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-more",
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(good); i++) {
    memset(id, 'x', sizeof(id));
    assert_true(dg_traceparent_trace_id(good[i], id));
    assert_string_equal(id, "4bf92f3577b34da6a3ce929d0e0e4736");
  }
  static const char *const bad[] = {
      "",
      "garbage",
      "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01",
      "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
      "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01-extra",
      "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
      "00-4bf92f3577b34da6a3ce929d0e0e473-600f067aa0ba902b7-01",
      "00_4bf92f3577b34da6a3ce929d0e0e4736_00f067aa0ba902b7_01",
      "01-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01x",
      "0g-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++) {
    if (dg_traceparent_trace_id(bad[i], id))
      fail_msg("accepted '%s'", bad[i]);
  }
  assert_false(dg_traceparent_trace_id(NULL, id));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_status_text),
      cmocka_unit_test(test_trace_id),
      cmocka_unit_test(test_traceparent),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
