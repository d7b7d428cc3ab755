/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for pg_schema.c against a real PostgreSQL 15: the migration
 * of the sample configuration sent by two gateways at once (both succeed,
 * one after the other under the advisory lock) and again (nothing
 * changes); String columns compare ignoring case; the statements of the
 * shared generator in the PostgreSQL dialect run on the migrated tables
 * with the filters' semantics; a sorted page reads its property's index
 * in order; the keyword lookup matches word prefixes,
 * every word required, best first, through the GIN index; writes create,
 * update and upsert saying whether they created; a second submission with the same
 * idempotency key is refused by the database itself. */
#include "store/pg_store_test.h"

typedef struct pg_plan {
  bool done;
  int status;
  char text[4096];
} pg_plan_t;

/* Every row of an EXPLAIN, joined. */
static void on_plan(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                    void *data) {
  pg_plan_t *p = data;
  (void)conn;
  (void)err;
  p->done = true;
  p->status = status;
  size_t len = 0;
  for (int i = 0; res != NULL && i < PQntuples(res) && len < sizeof(p->text) - 1; i++)
    len += (size_t)snprintf(p->text + len, sizeof(p->text) - len, "%s\n", PQgetvalue(res, i, 0));
}

static void migrate(uv_loop_t *loop, dg__pg_conn_t *c, got_t *g) {
  dg_errctx_t err;
  memset(g, 0, sizeof(*g));
  assert_int_equal(dg__pg_migrate(c, g_st->cat, on_query, g, &err), 0);
  wait_for(loop, g);
}

static void run_sql(uv_loop_t *loop, dg__pg_conn_t *c, dg__sql_t *sql, got_t *g) {
  dg_errctx_t err;
  memset(g, 0, sizeof(*g));
  assert_int_equal(sql->rc, 0);
  if (dg__pg_query(c, sql, on_query, g, &err) != 0)
    fail_msg("%s", err.message);
  wait_for(loop, g);
  if (g->status != 0)
    fail_msg("%s\n%s", g->err.message, sql->text.data);
}

/* Both migrations are sent before either is answered. */
static void test_concurrent_migrations(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *one = pool_new(&loop, g_uri, 1, 0);
  dg__pg_pool_t *two = pool_new(&loop, g_uri, 1, 0);
  dg__pg_conn_t *a = acquire(&loop, one);
  dg__pg_conn_t *b = acquire(&loop, two);
  got_t ga = {0}, gb = {0};
  dg_errctx_t err;
  assert_int_equal(dg__pg_migrate(a, g_st->cat, on_query, &ga, &err), 0);
  assert_int_equal(dg__pg_migrate(b, g_st->cat, on_query, &gb, &err), 0);
  wait_for(&loop, &ga);
  wait_for(&loop, &gb);
  if (ga.status != 0 || gb.status != 0)
    fail_msg("%s / %s", ga.err.message, gb.err.message);
  migrate(&loop, a, &ga);
  assert_int_equal(ga.status, 0);
  run_text(&loop, a,
           "SELECT count(*) FROM information_schema.tables WHERE table_schema = "
           "current_schema() AND table_name IN ('Customers', 'Orders', 'Products', "
           "'_dg_submissions', '_dg_meta')",
           &ga);
  assert_int_equal(ga.status, 0);
  assert_string_equal(ga.values[0], "5");
  run_text(&loop, a, "SELECT value FROM \"_dg_meta\" WHERE key = 'schema_version'", &ga);
  assert_string_equal(ga.values[0], "1");
  /* One keyword index per model with keyword properties, however often migrated. */
  run_text(&loop, a,
           "SELECT count(*) FROM pg_indexes WHERE tablename = 'Customers' AND indexname LIKE "
           "'\\_fts\\_%'",
           &ga);
  assert_string_equal(ga.values[0], "1");
  dg__pg_release(a);
  dg__pg_release(b);
  pool_drain(&loop, two);
  pool_close(&loop, one);
}

static void insert(uv_loop_t *loop, dg__pg_conn_t *c, const char *model, const char *id,
                   const char *prop, const char *text) {
  const dg_model_t *m = st_model(g_st, model);
  const dg_property_t *p = dg_model_property(m, prop);
  assert_non_null(p);
  dg_store_value_t v = {.kind = DG_STORE_TEXT, .text = text, .len = strlen(text)};
  dg_store_write_t w = {
      .model = m, .mode = DG_STORE_UPSERT, .props = &p, .values = &v, .nvalues = 1};
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_write(&sql, &w, id);
  got_t g;
  run_sql(loop, c, &sql, &g);
  dg__sql_free(&sql);
}

/* Appends query_entities' page statement for args on model to sql. */
static void page_statement(dg__sql_t *sql, const char *model, const char *args) {
  dg_store_query_t q;
  if (st_parse_query(g_st, "admin", model, args, &q) != 0)
    fail_msg("%s", g_st->err.message);
  dg__sql_cols_t cols;
  assert_int_equal(dg__sql_entity_cols(&q.select, q.expand, q.nexpand, g_st->arena, &cols), 0);
  dg__sql_page(sql, &q, &cols);
}

/* The page statement of query_entities for args, run; the ids returned. */
static void page_ids(uv_loop_t *loop, dg__pg_conn_t *c, const char *model, const char *args,
                     char *out, size_t size) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  page_statement(&sql, model, args);
  dg_errctx_t err;
  got_t g = {0};
  assert_int_equal(dg__pg_query(c, &sql, on_query, &g, &err), 0);
  dg__sql_free(&sql);
  wait_for(loop, &g);
  if (g.status != 0)
    fail_msg("%s", g.err.message);
  snprintf(out, size, "%s", g.nvalues > 0 ? g.values[0] : "");
}

static void test_generated_statements_run(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 1, 0);
  dg__pg_conn_t *c = acquire(&loop, pool);
  got_t g;
  migrate(&loop, c, &g);
  assert_int_equal(g.status, 0);
  const char *id = "0b5e7f0c-7d7c-4d55-9a51-1b1c2c3d4e5f";
  insert(&loop, c, "Customers", id, "Name", "Acme 100% Widgets");
  char got[64];
  /* EqualTo on a String ignores case; StartsWith escapes % and ignores case. */
  page_ids(&loop, c, "Customers",
           "{\"properties\": [], \"queryParameterGroups\": [{\"parameters\": ["
           " {\"operator\": \"EqualTo\", \"propertyName\": \"Name\", \"value\": "
           "\"ACME 100% widgets\"},"
           " {\"operator\": \"Contains\", \"propertyName\": \"Name\", \"value\": \"100%\"}]}]}",
           got, sizeof(got));
  assert_string_equal(got, id);
  page_ids(&loop, c, "Customers",
           "{\"properties\": [], \"queryParameterGroups\": [{\"parameters\": ["
           " {\"operator\": \"Contains\", \"propertyName\": \"Name\", \"value\": \"100_\"}]}]}",
           got, sizeof(got));
  assert_string_equal(got, "");
  /* A negative operator holds where the positive does not, nulls included. */
  page_ids(&loop, c, "Customers",
           "{\"properties\": [], \"queryParameterGroups\": [{\"parameters\": ["
           " {\"operator\": \"NotStartsWith\", \"propertyName\": \"Email\", \"value\": \"x\"},"
           " {\"operator\": \"Contains\", \"propertyName\": \"Name\", \"comparisonPropertyName\": "
           "\"Name\"}]}]}",
           got, sizeof(got));
  assert_string_equal(got, id);
  /* The lookup's document matches a word prefix through the keyword index. */
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_put(&sql, "SELECT t0.id FROM \"Customers\" AS t0 WHERE ");
  dg__pg_keyword_document(&sql, st_model(g_st, "Customers"), "t0");
  dg__sql_put(&sql, " @@ to_tsquery('simple'::regconfig, ");
  dg__sql_bind_text(&sql, "widg:*");
  dg__sql_put(&sql, ")");
  run_sql(&loop, c, &sql, &g);
  dg__sql_free(&sql);
  assert_int_equal(g.nvalues, 1);
  assert_string_equal(g.values[0], id);
  dg__pg_release(c);
  pool_close(&loop, pool);
}

static void submission(uv_loop_t *loop, dg__pg_conn_t *c, const char *id, got_t *g) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_put(&sql, "INSERT INTO \"_dg_submissions\" (id, model, entity_id, operation, "
                    "principal, idempotency_key, status, owner, created_at) VALUES (");
  dg__sql_bind_text(&sql, id);
  dg__sql_put(&sql, ", 'Orders', 'e', 'Create', 'admin', 'key-1', 'running', 'o', 'now')");
  dg_errctx_t err;
  memset(g, 0, sizeof(*g));
  assert_int_equal(dg__pg_query(c, &sql, on_query, g, &err), 0);
  dg__sql_free(&sql);
  wait_for(loop, g);
}

/* Two gateways insert the same key at once: exactly one row, the other
 * told DG_EEXIST. */
static void test_idempotency_key_unique(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 2, 0);
  dg__pg_conn_t *a = acquire(&loop, pool);
  dg__pg_conn_t *b = acquire(&loop, pool);
  got_t ga, gb;
  migrate(&loop, a, &ga);
  assert_int_equal(ga.status, 0);
  submission(&loop, a, "s1", &ga);
  submission(&loop, b, "s2", &gb);
  assert_int_equal(ga.status, 0);
  assert_int_equal(gb.status, DG_EEXIST);
  run_text(&loop, a, "SELECT count(*) FROM \"_dg_submissions\" WHERE idempotency_key = 'key-1'",
           &ga);
  assert_string_equal(ga.values[0], "1");
  dg__pg_release(a);
  dg__pg_release(b);
  pool_close(&loop, pool);
}

/* The names a keyword search of Customers finds, best first, joined by |. */
static void lookup(uv_loop_t *loop, dg__pg_conn_t *c, const char *const *terms, size_t n, char *out,
                   size_t size) {
  const dg_model_t *m = st_model(g_st, "Customers");
  const dg_property_t *name = dg_model_property(m, "Name");
  dg_store_select_t select = {.props = &name, .nprops = 1};
  dg__sql_cols_t cols;
  assert_int_equal(dg__sql_entity_cols(&select, NULL, 0, g_st->arena, &cols), 0);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_put(&sql, "SELECT coalesce(string_agg(x.\"Name\", '|' ORDER BY x.n), '') FROM (SELECT "
                    "l.*, row_number() OVER () AS n FROM (");
  dg__pg_lookup_sql(&sql, m, &cols, terms, n, 10);
  dg__sql_put(&sql, ") AS l) AS x");
  got_t g;
  run_sql(loop, c, &sql, &g);
  dg__sql_free(&sql);
  snprintf(out, size, "%s", g.values[0]);
}

static void test_keyword_lookup(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 1, 0);
  dg__pg_conn_t *c = acquire(&loop, pool);
  got_t g;
  migrate(&loop, c, &g);
  assert_int_equal(g.status, 0);
  run_text(&loop, c, "DELETE FROM \"Customers\"", &g);
  insert(&loop, c, "Customers", "a0000000-0000-4000-8000-000000000001", "Name", "Acme Widgets");
  insert(&loop, c, "Customers", "a0000000-0000-4000-8000-000000000002", "Name",
         "Widget World Widgets");
  insert(&loop, c, "Customers", "a0000000-0000-4000-8000-000000000003", "Name", "Bolt Co");
  char got[256];
  const char *widg[] = {"WIDG"};
  lookup(&loop, c, widg, 1, got, sizeof(got));
  assert_string_equal(got, "Widget World Widgets|Acme Widgets"); /* more matches rank first */
  const char *two[] = {"acme", "wid"};
  lookup(&loop, c, two, 2, got, sizeof(got));
  assert_string_equal(got, "Acme Widgets");
  const char *inner[] = {"idget"}; /* a prefix of a word, not any substring */
  lookup(&loop, c, inner, 1, got, sizeof(got));
  assert_string_equal(got, "");
  const char *syntax[] = {"bolt|acme"}; /* one lexeme, not tsquery operators */
  lookup(&loop, c, syntax, 1, got, sizeof(got));
  assert_string_equal(got, "");
  /* The GIN index answers. */
  run_text(&loop, c, "SET enable_seqscan = off", &g);
  const dg_model_t *m = st_model(g_st, "Customers");
  dg__sql_cols_t cols;
  dg_store_select_t none = {0};
  assert_int_equal(dg__sql_entity_cols(&none, NULL, 0, g_st->arena, &cols), 0);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_put(&sql, "EXPLAIN ");
  dg__pg_lookup_sql(&sql, m, &cols, widg, 1, 10);
  dg_errctx_t err;
  memset(&g, 0, sizeof(g));
  pg_plan_t plan = {0};
  assert_int_equal(dg__pg_query(c, &sql, on_plan, &plan, &err), 0);
  dg__sql_free(&sql);
  while (!plan.done)
    uv_run(&loop, UV_RUN_ONCE);
  assert_int_equal(plan.status, 0);
  if (strstr(plan.text, "_fts_Customers_") == NULL)
    fail_msg("no keyword index in the plan:\n%s", plan.text);
  run_text(&loop, c, "RESET enable_seqscan", &g);
  dg__pg_release(c);
  pool_close(&loop, pool);
}

/* The plan of query_entities' page statement for args on model. */
static void page_plan(uv_loop_t *loop, dg__pg_conn_t *c, const char *model, const char *args,
                      pg_plan_t *plan) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_put(&sql, "EXPLAIN ");
  page_statement(&sql, model, args);
  dg_errctx_t err;
  memset(plan, 0, sizeof(*plan));
  assert_int_equal(dg__pg_query(c, &sql, on_plan, plan, &err), 0);
  dg__sql_free(&sql);
  while (!plan->done)
    uv_run(loop, UV_RUN_ONCE);
  assert_int_equal(plan->status, 0);
}

/* A page sorted either way reads the property's index in its order
 * (nulls first ascending, last descending) instead of sorting the rows,
 * and an index of the older form is rebuilt by the next migration. */
static void test_sorted_pages_read_the_index(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 1, 0);
  dg__pg_conn_t *c = acquire(&loop, pool);
  got_t g;
  run_text(&loop, c, "DROP INDEX IF EXISTS \"_ix_Orders_OrderDate\"", &g);
  run_text(&loop, c, "CREATE TABLE IF NOT EXISTS \"Orders\" (id text)", &g);
  run_text(&loop, c, "ALTER TABLE \"Orders\" ADD COLUMN IF NOT EXISTS \"OrderDate\" text", &g);
  run_text(&loop, c, "CREATE INDEX \"_ix_Orders_OrderDate\" ON \"Orders\" (\"OrderDate\", id)", &g);
  assert_int_equal(g.status, 0);
  migrate(&loop, c, &g);
  assert_int_equal(g.status, 0);
  run_text(&loop, c,
           "SELECT indexdef LIKE '%NULLS FIRST%' FROM pg_indexes WHERE schemaname = "
           "current_schema() AND indexname = '_ix_Orders_OrderDate'",
           &g);
  assert_int_equal(g.nvalues, 1);
  assert_string_equal(g.values[0], "t"); /* the old index was rebuilt */
  run_text(&loop, c, "SET enable_seqscan = off", &g);
  pg_plan_t plan;
  const char *sorts[] = {"Descending", "Ascending"};
  for (size_t i = 0; i < 2; i++) {
    char args[256];
    snprintf(args, sizeof(args),
             "{\"properties\": [], \"sortCondition\": {\"propertyName\": \"OrderDate\", "
             "\"sortOrder\": \"%s\"}, \"paging\": {\"pageNumber\": 1, \"pageSize\": 25}}",
             sorts[i]);
    page_plan(&loop, c, "Orders", args, &plan);
    if (strstr(plan.text, "_ix_Orders_OrderDate") == NULL || strstr(plan.text, "Sort") != NULL)
      fail_msg("%s page sorts instead of reading the index:\n%s", sorts[i], plan.text);
  }
  run_text(&loop, c, "RESET enable_seqscan", &g);
  dg__pg_release(c);
  pool_close(&loop, pool);
}

typedef struct wrote {
  bool done;
  int status;
  json_t *result;
  dg_errctx_t err;
} wrote_t;

static void on_wrote(int status, json_t *result, const dg_errctx_t *err, void *data) {
  wrote_t *w = data;
  w->done = true;
  w->status = status;
  w->result = result;
  w->err = *err;
}

/* Writes Name of a Customers entity; the status, and created when 0. */
static int write_name(uv_loop_t *loop, dg__pg_conn_t *c, dg_store_write_mode_t mode, const char *id,
                      const char *name, bool *created) {
  const dg_model_t *m = st_model(g_st, "Customers");
  const dg_property_t *p = dg_model_property(m, "Name");
  dg_store_value_t v = {.kind = DG_STORE_TEXT, .text = name, .len = strlen(name)};
  dg_store_write_t w = {
      .model = m, .mode = mode, .id = id, .props = &p, .values = &v, .nvalues = 1};
  wrote_t out = {0};
  dg_errctx_t err;
  assert_int_equal(dg__pg_write(c, &w, on_wrote, &out, &err), 0);
  while (!out.done)
    uv_run(loop, UV_RUN_ONCE);
  if (out.status == 0) {
    *created = json_is_true(json_object_get(out.result, "created"));
    assert_string_equal(json_string_value(json_object_get(out.result, "id")), id);
  } else {
    assert_string_equal(out.err.param, "id");
  }
  json_decref(out.result);
  return out.status;
}

static void test_writes(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 1, 0);
  dg__pg_conn_t *c = acquire(&loop, pool);
  got_t g;
  migrate(&loop, c, &g);
  assert_int_equal(g.status, 0);
  const char *id = "b0000000-0000-4000-8000-000000000001";
  const char *other = "b0000000-0000-4000-8000-000000000002";
  bool created = false;
  assert_int_equal(write_name(&loop, c, DG_STORE_CREATE, id, "First", &created), 0);
  assert_true(created);
  assert_int_equal(write_name(&loop, c, DG_STORE_CREATE, id, "Again", &created), DG_EEXIST);
  assert_int_equal(write_name(&loop, c, DG_STORE_UPDATE, other, "Nobody", &created), DG_ENOENT);
  assert_int_equal(write_name(&loop, c, DG_STORE_UPDATE, id, "Second", &created), 0);
  assert_false(created);
  assert_int_equal(write_name(&loop, c, DG_STORE_UPSERT, other, "Third", &created), 0);
  assert_true(created);
  assert_int_equal(write_name(&loop, c, DG_STORE_UPSERT, other, "Fourth", &created), 0);
  assert_false(created);
  run_text(&loop, c,
           "SELECT string_agg(\"Name\", ',' ORDER BY id) FROM \"Customers\" WHERE id LIKE "
           "'b0000000-%'",
           &g);
  assert_string_equal(g.values[0], "Second,Fourth");
  dg__pg_release(c);
  pool_close(&loop, pool);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_concurrent_migrations),
      cmocka_unit_test(test_generated_statements_run),
      cmocka_unit_test(test_idempotency_key_unique),
      cmocka_unit_test(test_keyword_lookup),
      cmocka_unit_test(test_sorted_pages_read_the_index),
      cmocka_unit_test(test_writes),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
