/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for pg_row.c, as a differential against SQLite: the same
 * entities written to both stores by the shared generator, then the same
 * pages and aggregates read from both and written out by the shared
 * result builder must be the same text (integers, whole and fractional
 * decimals, booleans, dates, GUIDs, nulls, sums, averages, counts); and
 * whole aggregate_entities, query_entities (with expansions, paging and
 * counts), get_entities_by_ids and lookup_by_keyword answers, the grouped cap's refusal
 * included, must be the same from both drivers. The PostgreSQL reads
 * are counted in round trips: BEGIN and COMMIT go in pipelines with the
 * statements. Integers are read at their edges: int64's ends are
 * integers, a whole numeric beyond them a real, as are fractions, NaN and
 * floating point types however whole; decimals and floats are the doubles
 * strtod reads from their text, to the bit. */
#include "store/pg_test.h"
#include "store/sql_test.h"

typedef struct both {
  sql_fixture_t *lite;
  uv_loop_t loop;
  dg__pg_pool_t *pool;
  dg__pg_conn_t *pg;
  uint64_t trips; /* round trips of the last PostgreSQL read */
} both_t;

static uint64_t round_trips(const both_t *b) {
  dg__pg_stats_t st;
  dg__pg_pool_stats(b->pool, &st);
  return st.round_trips;
}

static int setup(void **state) {
  if (server_start(state) != 0)
    return -1;
  return 0;
}

/* ---- Writing the same entities to both ---------------------------------------------------- */

static void write_both(both_t *b, const char *model, const char *id, const char *props) {
  st_fixture_t *st = &b->lite->st;
  const dg_model_t *m = st_model(st, model);
  json_t *obj = st_json(st, props);
  size_t n = json_object_size(obj), i = 0;
  const dg_property_t **ps = dg_arena_calloc(st->arena, n, sizeof(*ps));
  dg_store_value_t *vs = dg_arena_calloc(st->arena, n, sizeof(*vs));
  const char *key;
  json_t *value;
  json_object_foreach(obj, key, value) {
    ps[i] = dg_model_property(m, key);
    assert_non_null(ps[i]);
    if (dg_store_value_parse(ps[i], value, key, st->arena, &vs[i], &st->err) != 0)
      fail_msg("%s", st->err.message);
    i++;
  }
  dg_store_write_t w = {
      .model = m, .mode = DG_STORE_CREATE, .props = ps, .values = vs, .nvalues = n};
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_write(&sql, &w, id);
  sql_runs(b->lite, &sql);
  dg__sql_free(&sql);
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_write(&sql, &w, id);
  got_t g = {0};
  dg_errctx_t err;
  assert_int_equal(dg__pg_query(b->pg, &sql, on_query, &g, &err), 0);
  dg__sql_free(&sql);
  wait_for(&b->loop, &g);
  if (g.status != 0)
    fail_msg("%s", g.err.message);
}

/* ---- Reading rows from both ----------------------------------------------------------------- */

typedef void (*render_fn)(dg_buf_t *out, const void *what, const dg_store_value_t *row);

static void render_lite(both_t *b, const dg__sql_t *sql, size_t ncols, render_fn render,
                        const void *what, dg_buf_t *out) {
  sqlite3_stmt *st = NULL;
  dg_errctx_t err;
  dg_store_value_t row[64];
  assert_true(ncols <= 64);
  assert_int_equal(dg__sqlite_prepare(b->lite->conn, sql, &st, &err), 0);
  while (dg__sqlite_step(b->lite->conn, st, &err) == SQLITE_ROW) {
    dg__sqlite_row(st, 0, ncols, row);
    render(out, what, row);
  }
  dg__sqlite_release(st);
}

typedef struct pg_read {
  bool done;
  int status;
  dg_errctx_t err;
  size_t ncols;
  render_fn render;
  const void *what;
  dg_buf_t *out;
} pg_read_t;

static void on_rows(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                    void *data) {
  pg_read_t *r = data;
  dg_store_value_t row[64];
  (void)conn;
  r->done = true;
  r->status = status;
  if (status != 0) {
    r->err = *err;
    return;
  }
  for (int i = 0; i < PQntuples(res); i++) {
    dg__pg_row(res, i, 0, r->ncols, row);
    r->render(r->out, r->what, row);
  }
}

static void render_pg(both_t *b, const dg__sql_t *sql, size_t ncols, render_fn render,
                      const void *what, dg_buf_t *out) {
  pg_read_t r = {.ncols = ncols, .render = render, .what = what, .out = out};
  dg_errctx_t err;
  assert_int_equal(dg__pg_query(b->pg, sql, on_rows, &r, &err), 0);
  while (!r.done)
    uv_run(&b->loop, UV_RUN_ONCE);
  if (r.status != 0)
    fail_msg("%s\n%s", r.err.message, sql->text.data);
}

static void render_entity(dg_buf_t *out, const void *what, const dg_store_value_t *row) {
  dg_buf_append_str(out, "{");
  dg__store_put_value(out, NULL, &row[0]);
  dg_buf_append_str(out, ":");
  dg__store_put_members(out, what, row);
  dg_buf_append_str(out, "}\n");
}

static void render_aggregate(dg_buf_t *out, const void *what, const dg_store_value_t *row) {
  dg__store_put_aggregate_row(out, what, row);
  dg_buf_append_str(out, "\n");
}

static void same_page(both_t *b, const char *model, const char *args) {
  dg_store_query_t q;
  if (st_parse_query(&b->lite->st, "admin", model, args, &q) != 0)
    fail_msg("%s", b->lite->st.err.message);
  dg__sql_cols_t cols;
  assert_int_equal(dg__sql_entity_cols(&q.select, NULL, 0, b->lite->st.arena, &cols), 0);
  dg_buf_t lite, pg;
  dg_buf_init(&lite, 1 << 20);
  dg_buf_init(&pg, 1 << 20);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_page(&sql, &q, &cols);
  render_lite(b, &sql, cols.n, render_entity, &cols, &lite);
  dg__sql_free(&sql);
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_page(&sql, &q, &cols);
  render_pg(b, &sql, cols.n, render_entity, &cols, &pg);
  dg__sql_free(&sql);
  assert_true(lite.len > 0);
  assert_string_equal(pg.data, lite.data);
  dg_buf_free(&lite);
  dg_buf_free(&pg);
}

static void same_aggregate(both_t *b, const char *args) {
  st_fixture_t *st = &b->lite->st;
  dg_store_parse_t ps = st_ctx(st, "admin");
  dg_store_aggregate_t a;
  if (dg_store_parse_aggregate(&ps, st_model(st, "Orders"), st_json(st, args), &a) != 0)
    fail_msg("%s", st->err.message);
  size_t ncols = a.ngroup_by + 1 + a.naggs;
  dg_buf_t lite, pg;
  dg_buf_init(&lite, 1 << 20);
  dg_buf_init(&pg, 1 << 20);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_aggregate(&sql, &a);
  render_lite(b, &sql, ncols, render_aggregate, &a, &lite);
  dg__sql_free(&sql);
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_aggregate(&sql, &a);
  render_pg(b, &sql, ncols, render_aggregate, &a, &pg);
  dg__sql_free(&sql);
  assert_true(lite.len > 0);
  assert_string_equal(pg.data, lite.data);
  dg_buf_free(&lite);
  dg_buf_free(&pg);
}

/* ---- Whole answers ----------------------------------------------------------------------------
 */

typedef struct answer {
  bool done;
  int status;
  json_t *result;
  dg_errctx_t err;
} answer_t;

static void on_answer(int status, json_t *result, const dg_errctx_t *err, void *data) {
  answer_t *x = data;
  x->done = true;
  x->status = status;
  x->result = result;
  if (err != NULL)
    x->err = *err;
}

/* A PostgreSQL statement with its numbered placeholders ($1, $2, ...)
 * written as SQLite's (?), to compare the two drivers' statements. */
static void unnumbered(const char *pg, char *out, size_t size) {
  size_t n = 0;
  for (const char *p = pg; *p != '\0' && n + 1 < size; p++) {
    if (*p == '$' && p[1] >= '0' && p[1] <= '9') {
      out[n++] = '?';
      while (p[1] >= '0' && p[1] <= '9')
        p++;
    } else {
      out[n++] = *p;
    }
  }
  out[n] = '\0';
}

/* aggregate_entities answered by both drivers: the same status, the
 * same message or the same JSON text. */
static void same_answer(both_t *b, const char *args, int64_t cap, int want_status) {
  st_fixture_t *st = &b->lite->st;
  dg_store_parse_t ps = st_ctx(st, "admin");
  dg_store_aggregate_t a;
  if (dg_store_parse_aggregate(&ps, st_model(st, "Orders"), st_json(st, args), &a) != 0)
    fail_msg("%s", st->err.message);
  if (cap > 0)
    a.grouped_cap = cap;
  dg_store_req_t req = {0};
  dg_errctx_t lite_err;
  dg_errctx_clear(&lite_err);
  dg__sqlite_run_t run = {.conn = b->lite->conn,
                          .r = &req,
                          .log = &req,
                          .arena = st->arena,
                          .max = 1 << 20,
                          .err = &lite_err};
  int lite_status = dg__sqlite_read_aggregate(&run, &a);
  answer_t x = {0};
  dg_errctx_t err;
  char *pg_sql = NULL;
  uint64_t before = round_trips(b);
  assert_int_equal(dg__pg_aggregate(b->pg, &a, 1 << 20, &pg_sql, on_answer, &x, &err), 0);
  while (!x.done)
    uv_run(&b->loop, UV_RUN_ONCE);
  b->trips = round_trips(b) - before;
  assert_int_equal(lite_status, want_status);
  assert_int_equal(x.status, want_status);
  /* The debug log shows the aggregate statement on both, not the count
   * before it (none when the count refused the call). */
  assert_true((pg_sql != NULL) == (req.sql != NULL));
  if (pg_sql != NULL)
    assert_true((strstr(pg_sql, "GROUP BY") != NULL) == (a.ngroup_by > 0));
  free(pg_sql);
  if (want_status != 0) {
    assert_string_equal(x.err.message, lite_err.message);
  } else {
    const char *lite_text = json_string_value(dg_json_raw_text(req.result));
    const char *pg_text = json_string_value(dg_json_raw_text(x.result));
    assert_non_null(pg_text);
    assert_string_equal(pg_text, lite_text);
  }
  json_decref(req.result);
  json_decref(x.result);
  free(req.sql);
}

/* A query_entities or get_entities_by_ids answer from both drivers. */
static void same_entities(both_t *b, const char *model, const char *args, bool fetch) {
  st_fixture_t *st = &b->lite->st;
  dg_store_parse_t ps = st_ctx(st, "admin");
  dg_store_query_t q;
  dg_store_fetch_t f;
  int prc = fetch ? dg_store_parse_fetch(&ps, st_model(st, model), st_json(st, args), &f)
                  : dg_store_parse_query(&ps, st_model(st, model), st_json(st, args), &q);
  if (prc != 0)
    fail_msg("%s", st->err.message);
  dg_store_req_t req = {0};
  dg_errctx_t lite_err;
  dg_errctx_clear(&lite_err);
  dg__sqlite_run_t run = {.conn = b->lite->conn,
                          .r = &req,
                          .log = &req,
                          .arena = st->arena,
                          .max = 1 << 20,
                          .err = &lite_err};
  int lite_status = fetch ? dg__sqlite_read_fetch(&run, &f) : dg__sqlite_read_query(&run, &q);
  if (lite_status != 0)
    fail_msg("%s", lite_err.message);
  answer_t x = {0};
  dg_errctx_t err;
  char *pg_sql = NULL;
  uint64_t before = round_trips(b);
  int rc = fetch ? dg__pg_fetch(b->pg, &f, 1 << 20, &pg_sql, on_answer, &x, &err)
                 : dg__pg_query_entities(b->pg, &q, 1 << 20, &pg_sql, on_answer, &x, &err);
  assert_int_equal(rc, 0);
  while (!x.done)
    uv_run(&b->loop, UV_RUN_ONCE);
  b->trips = round_trips(b) - before;
  if (x.status != 0)
    fail_msg("%s", x.err.message);
  /* The debug log's statement: the page or the ids, as on SQLite. */
  char plain[8192];
  assert_non_null(pg_sql);
  assert_non_null(req.sql);
  unnumbered(pg_sql, plain, sizeof(plain));
  if (fetch)
    assert_string_equal(plain, req.sql);
  else
    assert_int_equal(strncmp(plain, req.sql, (size_t)(strstr(req.sql, " FROM ") - req.sql)), 0);
  free(pg_sql);
  const char *lite_text = json_string_value(dg_json_raw_text(req.result));
  const char *pg_text = json_string_value(dg_json_raw_text(x.result));
  assert_non_null(pg_text);
  assert_string_equal(pg_text, lite_text);
  json_decref(req.result);
  json_decref(x.result);
  free(req.sql);
}

/* A lookup_by_keyword answer from both drivers (searches with one hit
 * or none: the two rankings differ in their scores). */
static void same_lookup(both_t *b, const char *search) {
  st_fixture_t *st = &b->lite->st;
  dg_store_parse_t ps = st_ctx(st, "admin");
  dg_store_lookup_t l;
  char args[256];
  snprintf(args, sizeof(args), "{\"searchValue\": \"%s\"}", search);
  if (dg_store_parse_lookup(&ps, st_json(st, args), &l) != 0)
    fail_msg("%s", st->err.message);
  dg_store_req_t req = {0};
  dg_errctx_t lite_err;
  dg__sqlite_run_t run = {.conn = b->lite->conn,
                          .r = &req,
                          .log = &req,
                          .arena = st->arena,
                          .max = 1 << 20,
                          .err = &lite_err};
  assert_int_equal(dg__sqlite_read_lookup(&run, &l), 0);
  answer_t x = {0};
  dg_errctx_t err;
  char *pg_sql = NULL;
  assert_int_equal(dg__pg_lookup(b->pg, &l, 1 << 20, &pg_sql, on_answer, &x, &err), 0);
  /* The debug log's statement: the first model's keyword search. */
  assert_non_null(pg_sql);
  assert_non_null(strstr(pg_sql, "to_tsquery"));
  free(pg_sql);
  assert_false(x.done);
  while (!x.done)
    uv_run(&b->loop, UV_RUN_ONCE);
  if (x.status != 0)
    fail_msg("%s", x.err.message);
  assert_string_equal(json_string_value(dg_json_raw_text(x.result)),
                      json_string_value(dg_json_raw_text(req.result)));
  json_decref(req.result);
  json_decref(x.result);
  free(req.sql);
}

/* ---- The test ----------------------------------------------------------------------------------
 */

static void migrated(both_t *b) {
  got_t g = {0};
  dg_errctx_t err;
  assert_int_equal(dg__pg_migrate(b->pg, b->lite->st.cat, on_query, &g, &err), 0);
  wait_for(&b->loop, &g);
  if (g.status != 0)
    fail_msg("%s", g.err.message);
}

static void test_same_values_as_sqlite(void **state) {
  both_t b = {0};
  void *lite = NULL;
  (void)state;
  sql_setup(&lite);
  b.lite = lite;
  uv_loop_init(&b.loop);
  b.pool = pool_new(&b.loop, g_uri, 1, 0);
  b.pg = acquire(&b.loop, b.pool);
  migrated(&b);
  const char *c1 = "11111111-1111-4111-8111-111111111111";
  const char *c2 = "22222222-2222-4222-8222-222222222222";
  write_both(&b, "Customers", c1,
             "{\"Name\": \"Ada\", \"CreditLimit\": 1500.5, \"RenewalDate\": \"2025-01-31\", "
             "\"CreatedAt\": \"2024-03-01T10:00:00Z\"}");
  write_both(&b, "Customers", c2, "{\"Name\": \"bob\", \"CreditLimit\": 100, \"Region\": \"EU\"}");
  write_both(&b, "Orders", "33333333-3333-4333-8333-333333333333",
             "{\"OrderNumber\": \"A-1\", \"Customer\": \"11111111-1111-4111-8111-111111111111\", "
             "\"OrderDate\": \"2024-05-01\", \"Amount\": 20.25, \"Quantity\": 3, \"Status\": "
             "\"Open\", \"WarehouseId\": \"AAAAAAAA-0000-4000-8000-000000000001\"}");
  write_both(
      &b, "Orders", "44444444-4444-4444-8444-444444444444",
      "{\"OrderNumber\": \"A-2\", \"Customer\": \"22222222-2222-4222-8222-222222222222\", "
      "\"OrderDate\": \"2024-06-01\", \"Amount\": 10, \"Quantity\": 5, \"Status\": \"open\"}");
  write_both(&b, "Products", "55555555-5555-4555-8555-555555555555",
             "{\"Name\": \"Bolt\", \"Price\": 0.1, \"Active\": true}");
  same_page(&b, "Customers", "{\"sortCondition\": {\"propertyName\": \"Name\"}}");
  same_page(&b, "Orders",
            "{\"queryParameterGroups\": [{\"parameters\": [{\"operator\": \"GreaterThanEqualTo\", "
            "\"propertyName\": \"Quantity\", \"value\": 3}]}], \"sortCondition\": "
            "{\"propertyName\": \"Amount\", \"sortOrder\": \"Descending\"}}");
  same_page(&b, "Products", "{}");
  /* Nulls sort first ascending and last descending, on both. */
  same_page(&b, "Customers", "{\"sortCondition\": {\"propertyName\": \"Region\"}}");
  same_page(&b, "Customers",
            "{\"sortCondition\": {\"propertyName\": \"Region\", \"sortOrder\": "
            "\"Descending\"}}");
  same_aggregate(&b, "{\"aggregations\": ["
                     " {\"function\": \"Sum\", \"propertyName\": \"Amount\"},"
                     " {\"function\": \"Sum\", \"propertyName\": \"Quantity\"},"
                     " {\"function\": \"Average\", \"propertyName\": \"Quantity\"},"
                     " {\"function\": \"Min\", \"propertyName\": \"OrderDate\"},"
                     " {\"function\": \"Max\", \"propertyName\": \"Amount\"},"
                     " {\"function\": \"DistinctCount\", \"propertyName\": \"Status\"},"
                     " {\"function\": \"Count\"}]}");
  same_aggregate(&b, "{\"aggregations\": [{\"function\": \"Sum\", \"propertyName\": "
                     "\"Amount\"}], \"groupBy\": [{\"propertyName\": \"Name\", \"reference\": "
                     "\"Customer\"}, {\"propertyName\": \"Status\"}]}");
  same_answer(&b,
              "{\"aggregations\": [{\"function\": \"Sum\", \"propertyName\": \"Amount\"}, "
              "{\"function\": \"Average\", \"propertyName\": \"Quantity\"}], \"groupBy\": "
              "[{\"propertyName\": \"Region\", \"reference\": \"Customer\"}]}",
              0, 0);
  /* Grouped: BEGIN and the count, then the rows and COMMIT (four before
   * pipelines). */
  assert_int_equal(b.trips, 2);
  same_answer(&b, "{\"aggregations\": [{\"function\": \"Count\"}]}", 0, 0);
  /* Ungrouped: BEGIN, the rows and COMMIT in one (three before). */
  assert_int_equal(b.trips, 1);
  /* Whole answers: pages with Outbound and Inbound expansions, paging,
   * counts, fetches in the order asked. */
  same_entities(&b, "Orders",
                "{\"expand\": [{\"reference\": \"Customer\"}], \"pageSize\": 1, "
                "\"sortCondition\": {\"propertyName\": \"OrderNumber\"}}",
                false);
  /* BEGIN and the page, then the expansion and COMMIT (four before
   * pipelines, three before COMMIT went with the last expansion). */
  assert_int_equal(b.trips, 2);
  same_entities(&b, "Customers",
                "{\"expand\": [{\"reference\": \"Orders\", \"properties\": [\"Amount\"]}], "
                "\"pageNumber\": 1}",
                false);
  assert_int_equal(b.trips, 2);
  same_entities(&b, "Orders",
                "{\"expand\": [{\"reference\": \"Customer\"}, {\"reference\": "
                "\"OrderLines\"}], \"pageSize\": 2}",
                false);
  /* One more for the first expansion, which COMMIT does not follow. */
  assert_int_equal(b.trips, 3);
  same_entities(&b, "Orders", "{\"countOnly\": true}", false);
  assert_int_equal(b.trips, 1);
  same_entities(&b, "Customers", "{\"pageSize\": 1}", false);
  assert_int_equal(b.trips, 1);
  same_entities(&b, "Customers", "{\"entityIds\": [\"22222222-2222-4222-8222-222222222222\"]}",
                true);
  assert_int_equal(b.trips, 1);
  same_lookup(&b, "ADA");
  same_lookup(&b, "bol");
  same_lookup(&b, "a-1");
  same_lookup(&b, "nothing");
  same_entities(&b, "Customers",
                "{\"entityIds\": [\"22222222-2222-4222-8222-222222222222\", "
                "\"11111111-1111-4111-8111-111111111111\", "
                "\"99999999-9999-4999-8999-999999999999\"], \"expand\": [{\"reference\": "
                "\"Orders\"}]}",
                true);
  assert_int_equal(b.trips, 2);
  same_answer(&b,
              "{\"aggregations\": [{\"function\": \"Count\"}], \"groupBy\": "
              "[{\"propertyName\": \"Status\"}]}",
              1, DG_E2BIG);
  /* The count refused the call: its pipeline, then ROLLBACK; the
   * connection is out of the transaction. */
  assert_int_equal(b.trips, 2);
  got_t g;
  run_text(&b.loop, b.pg, "SELECT current_setting('transaction_isolation')", &g);
  assert_int_equal(g.status, 0);
  assert_string_equal(g.values[0], "read committed");
  dg__pg_release(b.pg);
  pool_close(&b.loop, b.pool);
  sql_teardown(&lite);
}

typedef struct edges {
  got_t g;
  dg_store_value_t row[12];
} edges_t;

static void on_edges(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                     void *data) {
  edges_t *e = data;
  (void)conn;
  (void)err;
  e->g.done = true;
  e->g.status = status;
  if (status == 0 && PQntuples(res) == 1 && PQnfields(res) == 12)
    dg__pg_row(res, 0, 0, 12, e->row);
}

static void test_integer_edges(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 1, 0);
  dg__pg_conn_t *conn = acquire(&loop, pool);
  edges_t e = {0};
  dg_errctx_t err;
  assert_int_equal(
      dg__pg_exec(conn,
                  "SELECT (-9223372036854775807 - 1)::int8, 9223372036854775807::int8, "
                  "(-32768)::int2, 0::int4, 9223372036854775808::numeric, "
                  "(-9223372036854775809)::numeric, 42::numeric, (-0.0)::numeric, "
                  "12.50::numeric, 'NaN'::numeric, 3::float8, -7::float4",
                  on_edges, &e, &err),
      0);
  wait_for(&loop, &e.g);
  assert_int_equal(e.g.status, 0);
  const dg_store_value_t *r = e.row;
  assert_int_equal(r[0].kind, DG_STORE_INT);
  assert_true(r[0].i == INT64_MIN);
  assert_int_equal(r[1].kind, DG_STORE_INT);
  assert_true(r[1].i == INT64_MAX);
  assert_int_equal(r[2].kind, DG_STORE_INT);
  assert_int_equal(r[2].i, -32768);
  assert_int_equal(r[3].kind, DG_STORE_INT);
  assert_int_equal(r[3].i, 0);
  assert_int_equal(r[4].kind, DG_STORE_REAL);
  assert_true(r[4].d == 9223372036854775808.0);
  assert_int_equal(r[5].kind, DG_STORE_REAL);
  assert_true(r[5].d == -9223372036854775809.0);
  assert_int_equal(r[6].kind, DG_STORE_INT);
  assert_int_equal(r[6].i, 42);
  assert_int_equal(r[7].kind, DG_STORE_REAL); /* "0.0" */
  assert_true(r[7].d == 0.0);
  assert_int_equal(r[8].kind, DG_STORE_REAL);
  assert_true(r[8].d == 12.5);
  assert_int_equal(r[9].kind, DG_STORE_REAL);
  assert_true(r[9].d != r[9].d);
  assert_int_equal(r[10].kind, DG_STORE_REAL);
  assert_true(r[10].d == 3.0);
  assert_int_equal(r[11].kind, DG_STORE_REAL);
  assert_true(r[11].d == -7.0);
  dg__pg_release(conn);
  pool_close(&loop, pool);
}

typedef struct decimals {
  got_t g;
  int rows, reals;
} decimals_t;

static void on_decimals(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                        void *data) {
  decimals_t *d = data;
  (void)conn;
  (void)err;
  d->g.done = true;
  d->g.status = status;
  for (int i = 0; status == 0 && i < PQntuples(res); i++) {
    dg_store_value_t v;
    dg__pg_row(res, i, 0, 1, &v);
    d->rows++;
    if (v.kind != DG_STORE_REAL)
      continue;
    double want = strtod(PQgetvalue(res, i, 0), NULL);
    if (memcmp(&want, &v.d, sizeof(want)) != 0)
      fail_msg("%s read as %.17g", PQgetvalue(res, i, 0), v.d);
    d->reals++;
  }
}

static void test_decimals_as_strtod(void **state) {
  (void)state;
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg__pg_pool_t *pool = pool_new(&loop, g_uri, 1, 0);
  dg__pg_conn_t *conn = acquire(&loop, pool);
  /* Every scale to 22 decimals and beyond, both signs, numeric and
   * float8 (shortest text, exponents past 1e15) and float4, and the
   * texts at the fast path's limits. */
  const char *sql =
      "SELECT round((g * 1.37911)::numeric / 7, abs(g) % 25) FROM generate_series(-3000, 3000) g "
      "UNION ALL SELECT (g * 0.1 + g * 1e13)::float8 FROM generate_series(-500, 500) g "
      "UNION ALL SELECT (g * 3.3)::float4 FROM generate_series(-100, 100) g "
      "UNION ALL SELECT v::numeric FROM unnest(ARRAY['999999999999999', '99999999999999.9', "
      "'0.999999999999999', '9999999999999999.5', '0.0000000000000000000001', "
      "'0.00000000000000000000001', '-0.0', '1.5', '-0.1', 'NaN']) v "
      "UNION ALL SELECT v::float8 FROM unnest(ARRAY['1e300', '-2.5e-300', 'Infinity', "
      "'0.30000000000000004', '-0']) v";
  decimals_t d = {0};
  dg_errctx_t err;
  assert_int_equal(dg__pg_exec(conn, sql, on_decimals, &d, &err), 0);
  wait_for(&loop, &d.g);
  assert_int_equal(d.g.status, 0);
  assert_int_equal(d.rows, 6001 + 1001 + 201 + 10 + 5);
  assert_true(d.reals > 6000);
  dg__pg_release(conn);
  pool_close(&loop, pool);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_same_values_as_sqlite),
      cmocka_unit_test(test_integer_edges),
      cmocka_unit_test(test_decimals_as_strtod),
  };
  return cmocka_run_group_tests(tests, setup, server_stop);
}
