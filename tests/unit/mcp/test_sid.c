/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for signed session ids: their form, what they carry, and
 * every way a presented id must be refused: changed in any character, cut
 * or lengthened, presented by another principal, signed with another key.
 * Two instances configured with one key accept each other's ids. */
#include "mcp/mcp_test.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

static dg_mcp_shared_t *shared_with_key(const char *key) {
  dg_mcp_limits_t st = {.max_sessions = 10};
  if (key != NULL) {
    st.session_key = (const unsigned char *)key;
    st.session_key_len = strlen(key);
  }
  dg_mcp_shared_t *sh = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_mcp_shared_new(&st, 1, &sh, &err), 0);
  return sh;
}

static void test_form_and_content(void **state) {
  dg_mcp_shared_t *sh = shared_with_key(NULL);
  static char ids[100][DG__MCP_SESSION_ID_LEN + 1];
  for (int i = 0; i < 100; i++) {
    dg__mcp_sid_t made, read;
    uint64_t before = dg__mcp_wall_ms();
    assert_int_equal(dg__mcp_sid_make(sh, "alice", ids[i], &made), 0);
    uint64_t after = dg__mcp_wall_ms();
    assert_int_equal(strlen(ids[i]), DG__MCP_SESSION_ID_LEN);
    assert_int_equal(strspn(ids[i], alphabet), DG__MCP_SESSION_ID_LEN);
    assert_true(made.issued_ms >= before && made.issued_ms <= after);
    assert_int_equal(made.instance, sh->instance);
    assert_true(dg__mcp_sid_verify(sh, ids[i], "alice", &read));
    assert_true(made.tag == read.tag);
    assert_true(made.issued_ms == read.issued_ms);
    assert_int_equal(made.instance, read.instance);
    for (int j = 0; j < i; j++) {
      assert_string_not_equal(ids[i], ids[j]);
      dg__mcp_sid_t other;
      assert_true(dg__mcp_sid_verify(sh, ids[j], "alice", &other));
      assert_true(other.tag != read.tag);
    }
  }
  dg_mcp_shared_free(sh);
}

/* Every character carries signed bits: any change is refused. */
static void test_tampered(void **state) {
  dg_mcp_shared_t *sh = shared_with_key(NULL);
  char id[DG__MCP_SESSION_ID_LEN + 1], bad[DG__MCP_SESSION_ID_LEN + 8];
  dg__mcp_sid_t info;
  assert_int_equal(dg__mcp_sid_make(sh, "alice", id, &info), 0);
  for (size_t i = 0; i < DG__MCP_SESSION_ID_LEN; i++) {
    for (size_t k = 0; k < sizeof(alphabet) - 1; k += 7) {
      memcpy(bad, id, sizeof(id));
      if (alphabet[k] == id[i])
        continue;
      bad[i] = alphabet[k];
      assert_false(dg__mcp_sid_verify(sh, bad, "alice", &info));
    }
    memcpy(bad, id, sizeof(id));
    bad[i] = '+'; /* standard base64, not base64url */
    assert_false(dg__mcp_sid_verify(sh, bad, "alice", &info));
  }
  snprintf(bad, sizeof(bad), "%.*s", DG__MCP_SESSION_ID_LEN - 1, id);
  assert_false(dg__mcp_sid_verify(sh, bad, "alice", &info));
  snprintf(bad, sizeof(bad), "%sA", id);
  assert_false(dg__mcp_sid_verify(sh, bad, "alice", &info));
  snprintf(bad, sizeof(bad), "%s=", id);
  assert_false(dg__mcp_sid_verify(sh, bad, "alice", &info));
  assert_false(dg__mcp_sid_verify(sh, NULL, "alice", &info));
  assert_false(dg__mcp_sid_verify(sh, "", "alice", &info));
  assert_true(dg__mcp_sid_verify(sh, id, "alice", &info));
  dg_mcp_shared_free(sh);
}

static void test_other_principal(void **state) {
  dg_mcp_shared_t *sh = shared_with_key(NULL);
  char id[DG__MCP_SESSION_ID_LEN + 1];
  dg__mcp_sid_t info;
  assert_int_equal(dg__mcp_sid_make(sh, "alice", id, &info), 0);
  static const char *const others[] = {"bob", "alic", "alice ", "Alice", "", "alicealice"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(others); i++)
    assert_false(dg__mcp_sid_verify(sh, id, others[i], &info));
  assert_int_equal(dg__mcp_sid_make(sh, "", id, &info), 0);
  assert_true(dg__mcp_sid_verify(sh, id, "", &info));
  assert_false(dg__mcp_sid_verify(sh, id, "alice", &info));
  dg_mcp_shared_free(sh);
}

static void test_keys(void **state) {
  static const char key[] = "0123456789abcdef0123456789abcdef-shared-by-every-instance";
  static const char near[] = "0123456789abcdef0123456789abcdef-shared-by-every-instancf";
  static const char long_key[] = "a key longer than one SHA-256 block, which HMAC hashes first: "
                                 "0123456789abcdef0123456789abcdef";
  dg_mcp_shared_t *random1 = shared_with_key(NULL), *random2 = shared_with_key(NULL);
  dg_mcp_shared_t *a = shared_with_key(key), *b = shared_with_key(key);
  dg_mcp_shared_t *c = shared_with_key(near), *d = shared_with_key(long_key);
  dg_mcp_shared_t *e = shared_with_key(long_key);
  char id[DG__MCP_SESSION_ID_LEN + 1];
  dg__mcp_sid_t info, read;
  /* Random keys: each start of a gateway refuses the others' ids. */
  assert_int_equal(dg__mcp_sid_make(random1, "alice", id, &info), 0);
  assert_false(dg__mcp_sid_verify(random2, id, "alice", &read));
  /* One configured key: another instance accepts the id and sees who made it. */
  assert_int_equal(dg__mcp_sid_make(a, "alice", id, &info), 0);
  assert_true(dg__mcp_sid_verify(b, id, "alice", &read));
  assert_int_equal(read.instance, a->instance);
  assert_true(a->instance != b->instance);
  assert_false(dg__mcp_sid_verify(c, id, "alice", &read));
  assert_false(dg__mcp_sid_verify(random1, id, "alice", &read));
  assert_int_equal(dg__mcp_sid_make(d, "alice", id, &info), 0);
  assert_true(dg__mcp_sid_verify(e, id, "alice", &read));
  assert_false(dg__mcp_sid_verify(a, id, "alice", &read));
  dg_mcp_shared_t *all[] = {random1, random2, a, b, c, d, e};
  for (size_t i = 0; i < DG_ARRAY_SIZE(all); i++)
    dg_mcp_shared_free(all[i]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_form_and_content),
      cmocka_unit_test(test_tampered),
      cmocka_unit_test(test_other_principal),
      cmocka_unit_test(test_keys),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
