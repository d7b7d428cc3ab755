/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for parse_select.c: the entityIds of get_entities_by_ids with
 * properties and expand (the error cases of properties and expand inside
 * query_entities are in test_parse.c). */
#include "store/store_test.h"

/* ---- get_entities_by_ids ------------------------------------------------------------- */

static void test_fetch(void **state) {
  st_fixture_t *fx = *state;
  dg_store_parse_t ps = st_ctx(fx, "admin");
  dg_store_fetch_t f;
  const char *args = "{\"entityIds\": [\"7C08B797-FAC4-5249-874C-557B0F4557F5\","
                     " \"7c08b797-fac4-5249-874c-557b0f4557f5\","
                     " \"00000000-0000-0000-0000-000000000000\"],"
                     " \"properties\": [\"Name\"], \"expand\": [{\"reference\": \"Orders\"}]}";
  assert_int_equal(dg_store_parse_fetch(&ps, st_model(fx, "Customers"), st_json(fx, args), &f), 0);
  assert_int_equal(f.nids, 2);
  assert_string_equal(f.ids[0], "7c08b797-fac4-5249-874c-557b0f4557f5");
  assert_int_equal(f.select.nprops, 1);
  assert_int_equal(f.nexpand, 1);

  const char *bad[][2] = {
      {"{\"entityIds\": []}", "entityIds"},
      {"{}", "entityIds"},
      {"{\"entityIds\": \"7c08b797-fac4-5249-874c-557b0f4557f5\"}", "entityIds"},
      {"{\"entityIds\": [\"7c08b797-fac4-5249-874c-557b0f4557f\"]}", "entityIds[0]"},
      {"{\"entityIds\": [\"7c08b797-fac4-5249-874c-557b0f4557f5\", 12]}", "entityIds[1]"},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++) {
    ps = st_ctx(fx, "admin");
    assert_int_equal(
        dg_store_parse_fetch(&ps, st_model(fx, "Customers"), st_json(fx, bad[i][0]), &f),
        DG_EINVAL);
    assert_string_equal(fx->err.param, bad[i][1]);
  }
  st_contains(fx->err.message, "got 12", "a GUID (8-4-4-4-12 hexadecimal digits)", NULL);
  char many[4096] = "{\"entityIds\": [";
  for (int i = 0; i <= DG_STORE_IDS_MAX; i++) {
    char id[64];
    snprintf(id, sizeof(id), "%s\"00000000-0000-0000-0000-%012d\"", i ? "," : "", i);
    strncat(many, id, sizeof(many) - strlen(many) - 1);
  }
  strncat(many, "]}", sizeof(many) - strlen(many) - 1);
  ps = st_ctx(fx, "admin");
  assert_int_equal(dg_store_parse_fetch(&ps, st_model(fx, "Customers"), st_json(fx, many), &f),
                   DG_EINVAL);
  st_contains(fx->err.message, "an array of 1 to 50 entity ids", NULL);
}

/* Ids the argument schema checked already are not checked again: a string
 * of a GUID's length is taken as it is (lowercased), while a value that is
 * not a string, or a string of another length, is still refused by name. */
static void test_fetch_ids_checked(void **state) {
  st_fixture_t *fx = *state;
  dg_store_parse_t ps = st_ctx(fx, "admin");
  ps.ids_checked = true;
  dg_store_fetch_t f;
  const char *args = "{\"entityIds\": [\"7C08B797-FAC4-5249-874C-557B0F4557F5\"]}";
  assert_int_equal(dg_store_parse_fetch(&ps, st_model(fx, "Customers"), st_json(fx, args), &f), 0);
  assert_string_equal(f.ids[0], "7c08b797-fac4-5249-874c-557b0f4557f5");
  const char *unchecked = "{\"entityIds\": [\"7c08b797-fac4-5249-874c-557b0f4557fx\"]}";
  assert_int_equal(dg_store_parse_fetch(&ps, st_model(fx, "Customers"), st_json(fx, unchecked), &f),
                   0);
  assert_int_equal(f.nids, 1);
  const char *bad[] = {"{\"entityIds\": [12]}", "{\"entityIds\": [\"7c08b797\"]}"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++) {
    ps = st_ctx(fx, "admin");
    ps.ids_checked = true;
    assert_int_equal(dg_store_parse_fetch(&ps, st_model(fx, "Customers"), st_json(fx, bad[i]), &f),
                     DG_EINVAL);
    assert_string_equal(fx->err.param, "entityIds[0]");
  }
  ps = st_ctx(fx, "admin");
  assert_int_equal(dg_store_parse_fetch(&ps, st_model(fx, "Customers"), st_json(fx, unchecked), &f),
                   DG_EINVAL);
  st_contains(fx->err.message, "a GUID (8-4-4-4-12 hexadecimal digits)", NULL);
}

/* Fifty ids, each given twice in a row and in another case the second
 * time: the first of each pair is kept, in the order given. */
static void test_fetch_repeats(void **state) {
  st_fixture_t *fx = *state;
  char args[4096] = "{\"entityIds\": [";
  for (int i = 0; i < 25; i++) {
    char pair[96];
    snprintf(pair, sizeof(pair),
             "%s\"0000%04d-aaaa-4000-8000-00000000000a\","
             "\"0000%04d-AAAA-4000-8000-00000000000A\"",
             i ? "," : "", 7 * i, 7 * i);
    strncat(args, pair, sizeof(args) - strlen(args) - 1);
  }
  strncat(args, "]}", sizeof(args) - strlen(args) - 1);
  dg_store_parse_t ps = st_ctx(fx, "admin");
  dg_store_fetch_t f;
  assert_int_equal(dg_store_parse_fetch(&ps, st_model(fx, "Customers"), st_json(fx, args), &f), 0);
  assert_int_equal(f.nids, 25);
  for (int i = 0; i < 25; i++) {
    char want[40];
    snprintf(want, sizeof(want), "0000%04d-aaaa-4000-8000-00000000000a", 7 * i);
    assert_string_equal(f.ids[i], want);
  }
  assert_null(f.ids[25]);
}

static void test_select_all_and_empty(void **state) {
  st_fixture_t *fx = *state;
  dg_store_parse_t ps = st_ctx(fx, "admin");
  dg_store_select_t sel;
  const dg_model_t *m = st_model(fx, "Orders");
  assert_int_equal(dg_store_parse_select(&ps, m, NULL, "properties", &sel), 0);
  /* Every stored property: three of Orders' properties are Inbound. */
  assert_int_equal(sel.nprops, m->nproperties - 3);
  assert_int_equal(dg_store_parse_select(&ps, m, st_json(fx, "[]"), "properties", &sel), 0);
  assert_int_equal(sel.nprops, 0);
  assert_int_equal(dg_store_parse_select(&ps, m, st_json(fx, "[\"ID\"]"), "properties", &sel), 0);
  assert_int_equal(sel.nprops, 0);
}

static void test_expand_targets(void **state) {
  st_fixture_t *fx = *state;
  dg_store_parse_t ps = st_ctx(fx, "auditor");
  dg_store_expand_t *e = NULL;
  size_t n = 0;
  /* The auditor reads Orders and Payments only. */
  const dg_model_t *m = st_model(fx, "Orders");
  assert_int_equal(dg_store_parse_expand(&ps, m, st_json(fx, "[{\"reference\": \"payments\"}]"),
                                         "expand", &e, &n),
                   0);
  assert_int_equal(n, 1);
  assert_string_equal(e[0].reference->name, "Payments");
  assert_string_equal(e[0].target->name, "Payments");
  ps = st_ctx(fx, "auditor");
  assert_int_equal(dg_store_parse_expand(&ps, m, st_json(fx, "[{\"reference\": \"Customer\"}]"),
                                         "expand", &e, &n),
                   DG_EINVAL);
  assert_int_equal(n, 0);
  st_contains(fx->err.message, "you may not read the entities that 'Customer' refers to", NULL);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_fetch, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_fetch_ids_checked, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_fetch_repeats, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_select_all_and_empty, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_expand_targets, st_setup, st_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
