/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for error codes and the error context. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/base.h"

static void test_names_and_messages(void **state) {
  static const struct {
    int code;
    const char *name;
    const char *msg;
  } all[] = {
#define XX(name, value, msg) {value, "DG_" #name, msg},
      DG_ERRNO_MAP(XX)
#undef XX
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(all); i++) {
    assert_true(all[i].code < 0);
    assert_string_equal(dg_err_name(all[i].code), all[i].name);
    assert_string_equal(dg_strerror(all[i].code), all[i].msg);
    /* Codes are distinct. */
    for (size_t j = 0; j < i; j++)
      assert_int_not_equal(all[i].code, all[j].code);
  }
  assert_string_equal(dg_err_name(DG_EINVAL), "DG_EINVAL");
  assert_string_equal(dg_strerror(DG_E2BIG), "over a configured limit");
  assert_string_equal(dg_err_name(0), "DG_UNKNOWN");
  assert_string_equal(dg_err_name(-9999), "DG_UNKNOWN");
  assert_string_equal(dg_strerror(12345), "unknown error");
}

static void test_errctx_set(void **state) {
  dg_errctx_t e;
  dg_errctx_clear(&e);
  assert_int_equal(e.code, 0);
  assert_string_equal(e.param, "");
  assert_string_equal(e.message, "");
  int rc = dg_errctx_set(&e, DG_EINVAL, "paging.pageSize", "got %d; allowed: %s", 500, "1 to 100");
  assert_int_equal(rc, DG_EINVAL);
  assert_int_equal(e.code, DG_EINVAL);
  assert_string_equal(e.param, "paging.pageSize");
  assert_string_equal(e.message, "got 500; allowed: 1 to 100");
  dg_errctx_set(&e, DG_ENOENT, NULL, "none");
  assert_string_equal(e.param, "");
  assert_int_equal(e.code, DG_ENOENT);
}

static void test_errctx_truncates(void **state) {
  dg_errctx_t e;
  char param[300], message[3000];
  memset(param, 'p', sizeof(param) - 1);
  param[sizeof(param) - 1] = '\0';
  memset(message, 'm', sizeof(message) - 1);
  message[sizeof(message) - 1] = '\0';
  dg_errctx_set(&e, DG_E2BIG, param, "%s", message);
  assert_int_equal(strlen(e.param), sizeof(e.param) - 1);
  assert_int_equal(strlen(e.message), sizeof(e.message) - 1);
}

static void test_errctx_null(void **state) {
  assert_int_equal(dg_errctx_set(NULL, DG_EIO, "x", "y"), DG_EIO);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_names_and_messages),
      cmocka_unit_test(test_errctx_set),
      cmocka_unit_test(test_errctx_truncates),
      cmocka_unit_test(test_errctx_null),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
