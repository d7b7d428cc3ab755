/* Unit tests for query_entities through the MCP layer: results that match
 * the output schema and the text item, decimals that read back as
 * written, argument errors from the schema and from the parser, models
 * the caller may not read, a store that is not running, and a call
 * cancelled while its query waits. */
#include "tools/entity_tools_test.h"

static void test_page_and_expansion(void **state) {
  et_fixture_t *fx = *state;
  json_t *sc = et_ok(fx, "sales", "query_entities",
                     "{\"dataModelId\": \"" ET_ORDERS "\", \"paging\": {\"pageSize\": 2},"
                     " \"sortCondition\": {\"propertyName\": \"OrderNumber\"},"
                     " \"expand\": [{\"reference\": \"Customer\", \"properties\": [\"Name\"]},"
                     " {\"reference\": \"OrderLines\"}]}");
  json_t *list = json_object_get(sc, "entities");
  assert_int_equal(json_array_size(list), 2);
  assert_true(json_is_true(json_object_get(sc, "hasMore")));
  assert_int_equal(json_integer_value(json_object_get(sc, "nextPage")), 2);
  json_t *first = json_object_get(json_array_get(list, 0), "properties");
  assert_string_equal(json_string_value(json_object_get(first, "orderNumber")), "SO-1001");
  json_t *x = json_object_get(first, "expanded");
  assert_string_equal(json_string_value(json_object_get(json_object_get(x, "customer"), "name")),
                      "Acme Corporation");
  assert_int_equal(json_array_size(json_object_get(x, "orderLines")), DG_STORE_EXPAND_MAX);
  assert_string_equal(
      json_string_value(json_array_get(json_object_get(first, "expandedTruncated"), 0)),
      "orderLines");
}

/* Decimals travel with 15 significant digits: 339.95, not 339.94999... */
static void test_decimal_text(void **state) {
  et_fixture_t *fx = *state;
  json_t *result = et_call(fx, "admin", "query_entities",
                           "{\"dataModelId\": \"" ET_ORDERS "\", \"properties\": [\"Amount\"],"
                           " \"queryParameterGroups\": [{\"parameters\": [{\"operator\": "
                           "\"EqualTo\", \"propertyName\": \"OrderNumber\", \"value\": "
                           "\"SO-1024\"}]}]}");
  const char *text = json_string_value(
      json_object_get(json_array_get(json_object_get(result, "content"), 0), "text"));
  et_contains(text, "\"amount\":339.95}");
}

static void test_count_only(void **state) {
  et_fixture_t *fx = *state;
  json_t *sc = et_ok(fx, "auditor", "query_entities",
                     "{\"dataModelId\": \"" ET_PAYMENTS "\", \"countOnly\": true}");
  assert_int_equal(json_object_size(sc), 1);
  assert_true(json_integer_value(json_object_get(sc, "count")) > 0);
}

static void test_argument_errors(void **state) {
  et_fixture_t *fx = *state;
  /* The schema's check. */
  et_contains(et_error(fx, "admin", "query_entities",
                       "{\"dataModelId\": \"" ET_ORDERS "\", \"paging\": {\"pageSize\": 500}}"),
              "paging.pageSize");
  /* The parser's check. */
  const char *text = et_error(fx, "admin", "query_entities",
                              "{\"dataModelId\": \"" ET_ORDERS "\", \"queryParameterGroups\": "
                              "[{\"parameters\": [{\"operator\": \"Contains\", \"propertyName\": "
                              "\"Amount\", \"value\": \"1\"}]}]}");
  et_contains(text, "Invalid argument 'queryParameterGroups[0].parameters[0].operator'");
  et_contains(text, "allowed for Decimal");
  /* A model the caller may not read is reported like an unknown one. */
  et_contains(et_error(fx, "sales", "query_entities", "{\"dataModelId\": \"" ET_PAYMENTS "\"}"),
              "no Data Model with id '" ET_PAYMENTS "'");
  et_contains(et_error(fx, "admin", "query_entities",
                       "{\"dataModelId\": \"00000000-0000-4000-8000-000000000000\"}"),
              "call get_data_models");
}

static void test_store_not_running(void **state) {
  et_fixture_t *fx = *state;
  fx->env.store = NULL;
  et_contains(et_error(fx, "admin", "query_entities", "{\"dataModelId\": \"" ET_ORDERS "\"}"),
              "The entity store is not running");
  fx->env.store = fx->store;
}

/* ---- Cancellation --------------------------------------------------------------------- */

typedef struct blockers {
  uv_sem_t go;
  uv_work_t work[128];
  int n, done;
} blockers_t;

static void block_work(uv_work_t *w) {
  uv_sem_wait(&((blockers_t *)w->data)->go);
}

static void block_after(uv_work_t *w, int status) {
  ((blockers_t *)w->data)->done++;
}

static void test_cancelled_call(void **state) {
  et_fixture_t *fx = *state;
  blockers_t b = {.n = 4};
  const char *env = getenv("UV_THREADPOOL_SIZE");
  int64_t n = 4;
  if (env != NULL && dg_parse_int64(env, 1, 128, &n))
    b.n = (int)n;
  uv_sem_init(&b.go, 0);
  for (int i = 0; i < b.n; i++) {
    b.work[i].data = &b;
    uv_queue_work(&fx->loop, &b.work[i], block_work, block_after);
  }
  size_t before = json_array_size(fx->replies);
  int id = et_post(fx, "admin", "query_entities", "{\"dataModelId\": \"" ET_ORDERS "\"}");
  assert_int_equal(dg_mcp_server_inflight(fx->server), 1);
  json_t *jid = json_integer(id);
  dg__mcp_call_cancel_id(fx->session, jid);
  json_decref(jid);
  for (int i = 0; i < b.n; i++)
    uv_sem_post(&b.go);
  while (b.done < b.n || dg_mcp_server_inflight(fx->server) > 0)
    uv_run(&fx->loop, UV_RUN_ONCE);
  uv_sem_destroy(&b.go);
  /* A cancelled request gets no response. */
  for (size_t i = before; i < json_array_size(fx->replies); i++)
    assert_true(json_is_null(json_array_get(fx->replies, i)));
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_page_and_expansion, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_decimal_text, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_count_only, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_argument_errors, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_store_not_running, et_setup, et_teardown),
      cmocka_unit_test_setup_teardown(test_cancelled_call, et_setup, et_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
