/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the shared mbedTLS set-up: the configuration for both
 * ends and the BIO's receive side. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/tls.h"

static void test_conf_both_ends(void **state) {
  const int ends[] = {MBEDTLS_SSL_IS_SERVER, MBEDTLS_SSL_IS_CLIENT};
  for (size_t i = 0; i < DG_ARRAY_SIZE(ends); i++) {
    dg_tls_conf_t tc;
    dg_tls_conf_init(&tc);
    assert_int_equal(dg_tls_conf_setup(&tc, ends[i], "datagate-test"), 0);
    assert_int_equal(tc.conf.endpoint, ends[i]);
    assert_int_equal(tc.conf.min_minor_ver, MBEDTLS_SSL_MINOR_VERSION_3);
    assert_int_equal(tc.conf.disable_renegotiation, MBEDTLS_SSL_RENEGOTIATION_DISABLED);
    assert_string_equal(tc.conf.alpn_list[0], "http/1.1");
    assert_null(tc.conf.alpn_list[1]);
    dg_tls_conf_free(&tc);
  }
  /* Freeing a configuration that was never set up is safe. */
  dg_tls_conf_t idle;
  dg_tls_conf_init(&idle);
  dg_tls_conf_free(&idle);
}

static void test_bio_recv(void **state) {
  dg_tls_input_t input = {(const unsigned char *)"abcdef", 6};
  unsigned char buf[8];
  assert_int_equal(dg_tls_bio_recv(&input, buf, 4), 4);
  assert_memory_equal(buf, "abcd", 4);
  assert_int_equal(dg_tls_bio_recv(&input, buf, sizeof(buf)), 2);
  assert_memory_equal(buf, "ef", 2);
  int rc = dg_tls_bio_recv(&input, buf, sizeof(buf));
  assert_int_equal(rc, MBEDTLS_ERR_SSL_WANT_READ);
  assert_true(dg_tls_would_block(rc));
  assert_true(dg_tls_would_block(MBEDTLS_ERR_SSL_WANT_WRITE));
  assert_false(dg_tls_would_block(MBEDTLS_ERR_SSL_PEER_CLOSE_NOTIFY));
  assert_false(dg_tls_would_block(0));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_conf_both_ends),
      cmocka_unit_test(test_bio_recv),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
