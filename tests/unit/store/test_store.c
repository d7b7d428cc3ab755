/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for store.c: opening (and failing to), completions that never
 * come from inside the call that started them, cancellation of a queued
 * request, closing with requests pending, requests after close, and
 * descriptions that name what the database does not have. */
#include <sqlite3.h>

#include "store/sqlite_test.h"

/* ---- Holding the threadpool ------------------------------------------------------------ *
 * Every pool thread is kept busy so that a request stays queued, which
 * makes cancellation deterministic. */
typedef struct blockers {
  uv_sem_t go;
  uv_work_t work[128];
  int n;
  int done;
} blockers_t;

static void block_work(uv_work_t *w) {
  blockers_t *b = w->data;
  uv_sem_wait(&b->go);
}

static void block_after(uv_work_t *w, int status) {
  blockers_t *b = w->data;
  b->done++;
}

static int pool_size(void) {
  const char *env = getenv("UV_THREADPOOL_SIZE");
  int64_t n = 4;
  if (env != NULL && !dg_parse_int64(env, 1, 128, &n))
    n = 4;
  return (int)n;
}

static void block_pool(sq_fixture_t *fx, blockers_t *b) {
  memset(b, 0, sizeof(*b));
  assert_int_equal(uv_sem_init(&b->go, 0), 0);
  b->n = pool_size();
  for (int i = 0; i < b->n; i++) {
    b->work[i].data = b;
    assert_int_equal(uv_queue_work(&fx->loop, &b->work[i], block_work, block_after), 0);
  }
}

static void release_pool(sq_fixture_t *fx, blockers_t *b) {
  for (int i = 0; i < b->n; i++)
    uv_sem_post(&b->go);
  while (b->done < b->n)
    uv_run(&fx->loop, UV_RUN_ONCE);
  uv_sem_destroy(&b->go);
}

static dg_store_query_t *orders_query(sq_fixture_t *fx) {
  dg_store_query_t *q = dg_arena_calloc(fx->st.arena, 1, sizeof(*q));
  assert_int_equal(st_parse_query(&fx->st, "admin", "Orders", "{}", q), 0);
  return q;
}

/* ---- Tests ---------------------------------------------------------------------------------- */

static void test_cancel_queued(void **state) {
  sq_fixture_t *fx = *state;
  blockers_t b;
  block_pool(fx, &b);
  sq_result_t r = {.starting = true};
  dg_store_req_t *req = NULL;
  dg_errctx_t err;
  assert_int_equal(dg_store_query(fx->store, orders_query(fx), sq_on_result, &r, &req, &err), 0);
  assert_non_null(req);
  r.starting = true;
  dg_store_cancel(req);
  dg_store_cancel(req); /* twice is harmless */
  r.starting = false;
  assert_int_equal(r.calls, 0);
  release_pool(fx, &b);
  sq_wait(fx, &r);
  assert_int_equal(r.status, DG_ECANCELED);
  assert_null(r.json);
  st_contains(r.message, "canceled", NULL);
}

static void test_close_with_pending(void **state) {
  sq_fixture_t *fx = *state;
  blockers_t b;
  block_pool(fx, &b);
  sq_result_t r1 = {0}, r2 = {0};
  dg_errctx_t err;
  assert_int_equal(dg_store_query(fx->store, orders_query(fx), sq_on_result, &r1, NULL, &err), 0);
  assert_int_equal(dg_store_query(fx->store, orders_query(fx), sq_on_result, &r2, NULL, &err), 0);
  int closed = 0;
  dg_store_close(fx->store, sq_on_closed, &closed);
  /* Closing: new requests are refused at once, their callback never runs. */
  sq_result_t r3 = {0};
  dg_errctx_clear(&err);
  assert_int_equal(dg_store_query(fx->store, orders_query(fx), sq_on_result, &r3, NULL, &err),
                   DG_ECLOSED);
  st_contains(err.message, "not running", NULL);
  fx->store = NULL;
  release_pool(fx, &b);
  while (closed == 0 && uv_run(&fx->loop, UV_RUN_ONCE) != 0)
    ;
  assert_int_equal(closed, 1);
  assert_int_equal(r1.calls, 1);
  assert_int_equal(r2.calls, 1);
  assert_int_equal(r1.status, DG_ECANCELED);
  assert_int_equal(r2.status, DG_ECANCELED);
  assert_int_equal(r3.calls, 0);
}

static void test_open_failures(void **state) {
  sq_fixture_t *fx = *state;
  dg_store_t *s = NULL;
  char msg[1024], path[256];
  /* A directory where the database file should be. */
  snprintf(path, sizeof(path), "%s/adir", fx->dir);
  assert_int_equal(mkdir(path, 0700), 0);
  dg_store_options_t o = {.path = path, .sample_dir = ""};
  assert_int_not_equal(sq_open(fx, fx->st.cat, &o, &s, msg, sizeof(msg)), 0);
  assert_null(s);
  st_contains(msg, path, NULL);
  /* A sample data file that does not fit the models. */
  char data[256], file[300], db[300];
  snprintf(data, sizeof(data), "%s/data", fx->dir);
  assert_int_equal(mkdir(data, 0700), 0);
  snprintf(file, sizeof(file), "%s/Orders.json", data);
  FILE *f = fopen(file, "w");
  fputs("{\"model\": \"Orders\", \"entities\": [{\"id\": \"00000000-0000-4000-8000-000000000001\","
        " \"Amount\": \"a lot\"}]}",
        f);
  fclose(f);
  snprintf(db, sizeof(db), "%s/fresh.db", fx->dir);
  o = (dg_store_options_t){.path = db, .sample_dir = data};
  assert_int_equal(sq_open(fx, fx->st.cat, &o, &s, msg, sizeof(msg)), DG_ECONFIG);
  assert_null(s);
  st_contains(msg, "Orders.json", "entities[0].Amount", "got \"a lot\"", NULL);
}

/* A sibling process creating the same new database holds the write lock
 * of the rollback journal until it has switched to WAL, and SQLite refuses
 * a second switch at once while it does: opening waits for the lock. */
typedef struct held_lock {
  sqlite3 *db;
  uv_timer_t timer;
  int released;
} held_lock_t;

static void release_lock(uv_timer_t *t) {
  held_lock_t *h = t->data;
  h->released = sqlite3_exec(h->db, "COMMIT", NULL, NULL, NULL) == SQLITE_OK ? 1 : -1;
  uv_close((uv_handle_t *)t, NULL);
}

static void test_open_while_locked(void **state) {
  sq_fixture_t *fx = *state;
  char db[256], msg[1024];
  snprintf(db, sizeof(db), "%s/locked.db", fx->dir);
  held_lock_t h = {0};
  assert_int_equal(sqlite3_open(db, &h.db), SQLITE_OK);
  assert_int_equal(sqlite3_exec(h.db, "BEGIN IMMEDIATE; CREATE TABLE t(x)", NULL, NULL, NULL),
                   SQLITE_OK);
  /* Released from the loop while the store opens on the threadpool. */
  assert_int_equal(uv_timer_init(&fx->loop, &h.timer), 0);
  h.timer.data = &h;
  assert_int_equal(uv_timer_start(&h.timer, release_lock, 200, 0), 0);
  dg_store_t *s = NULL;
  dg_store_options_t o = {.path = db, .sample_dir = ""};
  int rc = sq_open(fx, fx->st.cat, &o, &s, msg, sizeof(msg));
  while (h.released == 0 && uv_run(&fx->loop, UV_RUN_ONCE) != 0)
    ;
  assert_int_equal(sqlite3_close(h.db), SQLITE_OK);
  if (s != NULL)
    sq_close(fx, s);
  assert_int_equal(h.released, 1);
  if (rc != 0)
    fail_msg("open failed: %s", msg);
}

/* A configuration reloaded after start-up may name a model or property
 * the database has no table or column for: refused before SQL. */
static const char v2_models[] =
    "{\"models\": ["
    " {\"id\": \"8a03cbc2-7f01-4d47-bdf0-0755336a3a70\", \"name\": \"Orders\", \"entityType\": "
    "\"Order\", \"properties\": [{\"name\": \"OrderNumber\", \"dataType\": \"String\"},"
    "  {\"name\": \"Priority\", \"dataType\": \"Int\"}]},"
    " {\"id\": \"3d1f6a52-2f7c-4d53-9c55-7c1b1d1e0a01\", \"name\": \"Gadgets\", \"entityType\": "
    "\"Gadget\", \"properties\": [{\"name\": \"Name\", \"dataType\": \"String\"}]}]}";
static const char v2_settings[] = "{\"server\": {}, \"roles\": [{\"name\": \"all\", \"models\": "
                                  "[{\"model\": \"*\"}]}], \"users\": [{\"name\": \"u\", "
                                  "\"roles\": [\"all\"]}]}";

static dg_catalog_t *write_catalog(sq_fixture_t *fx, const char *settings, const char *models) {
  char dir[256], path[300];
  snprintf(dir, sizeof(dir), "%s/conf2", fx->dir);
  mkdir(dir, 0700);
  snprintf(path, sizeof(path), "%s/datagate.json", dir);
  FILE *f = fopen(path, "w");
  fputs(settings, f);
  fclose(f);
  snprintf(path, sizeof(path), "%s/models.json", dir);
  f = fopen(path, "w");
  fputs(models, f);
  fclose(f);
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = NULL;
  int rc = dg_catalog_load(dir, &cat, &errors);
  for (size_t i = 0; i < errors.count; i++)
    fprintf(stderr, "config: %s\n", errors.lines[i]);
  dg_config_errors_free(&errors);
  assert_int_equal(rc, 0);
  return cat;
}

static void test_schema_check(void **state) {
  sq_fixture_t *fx = *state;
  dg_catalog_t *v2 = write_catalog(fx, v2_settings, v2_models);
  const dg_principal_t *p = NULL;
  assert_int_equal(dg_auth_principal_for_user(v2, "u", fx->st.arena, &p), 0);
  dg_errctx_t err;
  dg_errctx_clear(&err);
  dg_store_parse_t ps = {.cat = v2, .principal = p, .arena = fx->st.arena, .err = &err};
  const char *cases[][3] = {
      {"Orders", "{\"properties\": [\"Priority\"]}", "'Priority' of 'Orders'"},
      {"Gadgets", "{}", "'Gadgets' was added"},
      {"Orders",
       "{\"properties\": [\"OrderNumber\"], \"queryParameterGroups\": [{\"parameters\": "
       "[{\"operator\": \"EqualTo\", \"propertyName\": \"Priority\", \"value\": 1}]}]}",
       "restart the gateway"},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(cases); i++) {
    dg_store_query_t *q = dg_arena_calloc(fx->st.arena, 1, sizeof(*q));
    const dg_model_t *m = dg_catalog_model_by_name(v2, cases[i][0]);
    assert_int_equal(dg_store_parse_query(&ps, m, st_json(&fx->st, cases[i][1]), q), 0);
    sq_result_t r = {0};
    dg_errctx_clear(&err);
    assert_int_equal(dg_store_query(fx->store, q, sq_on_result, &r, NULL, &err), DG_ENOTSUP);
    st_contains(err.message, cases[i][2], NULL);
    assert_int_equal(r.calls, 0);
  }
  /* What both configurations have still works. */
  dg_store_query_t *q = dg_arena_calloc(fx->st.arena, 1, sizeof(*q));
  assert_int_equal(dg_store_parse_query(&ps, dg_catalog_model_by_name(v2, "Orders"),
                                        st_json(&fx->st, "{\"properties\": [\"OrderNumber\"]}"), q),
                   0);
  sq_result_t r = {.starting = true};
  assert_int_equal(dg_store_query(fx->store, q, sq_on_result, &r, NULL, &err), 0);
  r.starting = false;
  sq_wait(fx, &r);
  assert_int_equal(r.status, 0);
  json_decref(r.json);
  dg_catalog_unref(v2);
}

/* Aggregates share the request machinery: a queued one is canceled, and
 * one naming what the database lacks is refused before SQL. */
static void test_aggregate_cancel_and_schema(void **state) {
  sq_fixture_t *fx = *state;
  dg_store_parse_t ps = st_ctx(&fx->st, "admin");
  dg_store_aggregate_t *a = dg_arena_calloc(fx->st.arena, 1, sizeof(*a));
  assert_int_equal(dg_store_parse_aggregate(&ps, st_model(&fx->st, "Orders"),
                                            st_json(&fx->st, "{\"aggregations\": [{\"function\": "
                                                             "\"Count\"}]}"),
                                            a),
                   0);
  blockers_t b;
  block_pool(fx, &b);
  sq_result_t r = {.starting = true};
  dg_store_req_t *req = NULL;
  dg_errctx_t err;
  assert_int_equal(dg_store_aggregate(fx->store, a, sq_on_result, &r, &req, &err), 0);
  dg_store_cancel(req);
  r.starting = false;
  release_pool(fx, &b);
  sq_wait(fx, &r);
  assert_int_equal(r.status, DG_ECANCELED);
  assert_null(r.json);
  dg_catalog_t *v2 = write_catalog(fx, v2_settings, v2_models);
  const dg_principal_t *p = NULL;
  assert_int_equal(dg_auth_principal_for_user(v2, "u", fx->st.arena, &p), 0);
  ps = (dg_store_parse_t){.cat = v2, .principal = p, .arena = fx->st.arena, .err = &err};
  assert_int_equal(
      dg_store_parse_aggregate(&ps, dg_catalog_model_by_name(v2, "Orders"),
                               st_json(&fx->st, "{\"aggregations\": [{\"function\": \"Sum\", "
                                                "\"propertyName\": \"Priority\"}]}"),
                               a),
      0);
  sq_result_t r2 = {0};
  dg_errctx_clear(&err);
  assert_int_equal(dg_store_aggregate(fx->store, a, sq_on_result, &r2, NULL, &err), DG_ENOTSUP);
  st_contains(err.message, "'Priority' of 'Orders'", "restart the gateway", NULL);
  assert_int_equal(r2.calls, 0);
  dg_catalog_unref(v2);
}

static void test_driver_name(void **state) {
  sq_fixture_t *fx = *state;
  assert_string_equal(dg_store_driver(fx->store), "sqlite");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_cancel_queued, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_close_with_pending, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_open_failures, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_open_while_locked, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_schema_check, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_aggregate_cancel_and_schema, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_driver_name, sq_setup, sq_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
