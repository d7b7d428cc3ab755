/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for parse_lookup.c: the search words, the models searched
 * (readable, narrowed by entityType and entitySubType, with keyword
 * properties the caller may see) and every argument error. */
#include "store/store_test.h"

/* ---- lookup_by_keyword --------------------------------------------------------------- */

static int parse_lookup(st_fixture_t *fx, const char *user, const char *args,
                        dg_store_lookup_t *l) {
  dg_store_parse_t ps = st_ctx(fx, user);
  return dg_store_parse_lookup(&ps, st_json(fx, args), l);
}

static void test_lookup(void **state) {
  st_fixture_t *fx = *state;
  dg_store_lookup_t l;
  assert_int_equal(parse_lookup(fx, "sales", "{\"searchValue\": \"  Acme, corp.-x \"}", &l), 0);
  assert_int_equal(l.nterms, 3);
  assert_string_equal(l.terms[0], "Acme");
  assert_string_equal(l.terms[1], "corp");
  assert_string_equal(l.terms[2], "x");
  assert_int_equal(l.limit, DG_STORE_LOOKUP_LIMIT_DEFAULT);
  /* sales reads five models, each with keyword properties; not Payments. */
  assert_int_equal(l.nmodels, 5);
  for (size_t i = 0; i < l.nmodels; i++)
    assert_string_not_equal(l.models[i].model->name, "Payments");
  assert_int_equal(parse_lookup(fx, "admin",
                                "{\"searchValue\": \"w\", \"entityType\": \"product\", "
                                "\"entitySubType\": \"Item\", \"limit\": 100}",
                                &l),
                   0);
  assert_int_equal(l.nmodels, 1);
  assert_string_equal(l.models[0].model->name, "Products");
  assert_int_equal(l.models[0].nkeywords, 2);
  assert_int_equal(l.limit, 100);
}

static void test_lookup_errors(void **state) {
  st_fixture_t *fx = *state;
  dg_store_lookup_t l;
  const char *cases[][4] = {
      {"admin", "{}", "searchValue", "got nothing"},
      {"admin", "{\"searchValue\": \"\"}", "searchValue", "1 to 256 characters"},
      {"admin", "{\"searchValue\": \"-- !\"}", "searchValue", "no letters or digits"},
      {"admin", "{\"searchValue\": \"a b c d e f g h i j k l m n o p q\"}", "searchValue",
       "at most 16 words"},
      {"admin", "{\"searchValue\": \"x\", \"limit\": 0}", "limit", "from 1 to 100 (default 10)"},
      {"admin", "{\"searchValue\": \"x\", \"limit\": 101}", "limit", "got 101"},
      {"admin", "{\"searchValue\": \"x\", \"entityType\": \"Invoice\"}", "entityType",
       "allowed: Customer, Product, Order, OrderLine, File, Payment"},
      {"sales", "{\"searchValue\": \"x\", \"entityType\": \"Payment\"}", "entityType",
       "allowed: Customer, Product, Order, OrderLine, File."},
      {"admin", "{\"searchValue\": \"x\", \"entityType\": \"Order\", \"entitySubType\": \"Quote\"}",
       "entitySubType", "allowed: SalesOrder"},
      /* Without entityType the sub-types are listed, not the entity types. */
      {"admin", "{\"searchValue\": \"x\", \"entitySubType\": \"Quote\"}", "entitySubType",
       "allowed: Account, Item, SalesOrder, Line, Document, Receipt."},
      {"sales", "{\"searchValue\": \"x\", \"entitySubType\": \"Receipt\"}", "entitySubType",
       "allowed: Account, Item, SalesOrder, Line, Document."},
      {"admin", "{\"searchValue\": \"x\", \"entityType\": 5}", "entityType", "got 5"},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(cases); i++) {
    if (parse_lookup(fx, cases[i][0], cases[i][1], &l) != DG_EINVAL)
      fail_msg("case %zu accepted", i);
    assert_string_equal(fx->err.param, cases[i][2]);
    st_contains(fx->err.message, cases[i][3], NULL);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_lookup, st_setup, st_teardown),
      cmocka_unit_test_setup_teardown(test_lookup_errors, st_setup, st_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
