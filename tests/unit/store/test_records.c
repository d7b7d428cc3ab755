/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for records.c: records read as values keyed by the model's
 * property names, by ids and by query, on a SQLite store. */
#include "store/sqlite_test.h"

typedef struct rec_result {
  int calls;
  int status;
  json_t *records;
  char message[1024];
} rec_result_t;

static void on_records(int status, json_t *records, const dg_errctx_t *err, void *data) {
  rec_result_t *r = data;
  r->calls++;
  r->status = status;
  r->records = records;
  snprintf(r->message, sizeof(r->message), "%s", status != 0 && err ? err->message : "");
}

static void wait_records(sq_fixture_t *fx, rec_result_t *r) {
  while (r->calls == 0 && uv_run(&fx->loop, UV_RUN_ONCE) != 0)
    ;
  assert_int_equal(r->calls, 1);
  if (r->status != 0)
    fail_msg("failed: %s", r->message);
  assert_true(json_is_array(r->records));
}

static void test_read_by_ids(void **state) {
  sq_fixture_t *fx = *state;
  const dg_model_t *m = st_model(&fx->st, "Orders");
  json_t *order = sq_find(fx, "Orders", "OrderNumber", "SO-1001");
  assert_non_null(order);
  char upper[64];
  snprintf(upper, sizeof(upper), "%s", sq_str(order, "id"));
  for (char *c = upper; *c != '\0'; c++)
    *c = (char)(*c >= 'a' && *c <= 'z' ? *c - 32 : *c);
  const char *ids[] = {upper, "00000000-0000-0000-0000-000000000000"};
  rec_result_t r = {0};
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_store_read_records(fx->store, m, ids, 2, on_records, &r, &err), 0);
  assert_int_equal(r.calls, 0);
  wait_records(fx, &r);
  /* The missing id is left out; the other is found in any case. */
  assert_int_equal(json_array_size(r.records), 1);
  json_t *rec = json_array_get(r.records, 0);
  assert_string_equal(sq_str(rec, "id"), sq_str(order, "id"));
  json_t *values = json_object_get(rec, "values");
  assert_string_equal(sq_str(values, "OrderNumber"), "SO-1001");
  assert_string_equal(sq_str(values, "Customer"), sq_str(order, "Customer"));
  assert_true(json_number_value(json_object_get(values, "Amount")) ==
              json_number_value(json_object_get(order, "Amount")));
  assert_null(json_object_get(values, "orderNumber"));
  json_decref(r.records);
}

static void test_query_records(void **state) {
  sq_fixture_t *fx = *state;
  const char *args = "{\"queryParameterGroups\":[{\"parameters\":[{\"propertyName\":"
                     "\"OrderNumber\",\"operator\":\"EqualTo\",\"value\":\"SO-1001\"}]}]}";
  dg_store_query_t *q = dg_arena_calloc(fx->st.arena, 1, sizeof(*q));
  if (st_parse_query(&fx->st, "admin", "Orders", args, q) != 0)
    fail_msg("query refused: %s", fx->st.err.message);
  rec_result_t r = {0};
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_store_query_records(fx->store, q, on_records, &r, &err), 0);
  wait_records(fx, &r);
  assert_int_equal(json_array_size(r.records), 1);
  json_t *values = json_object_get(json_array_get(r.records, 0), "values");
  assert_string_equal(sq_str(values, "OrderNumber"), "SO-1001");
  assert_string_equal(sq_str(values, "Status"),
                      sq_str(sq_find(fx, "Orders", "OrderNumber", "SO-1001"), "Status"));
  json_decref(r.records);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_read_by_ids, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_query_records, sq_setup, sq_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
