/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for sqlite_schema.c: a database created from one
 * configuration and migrated to the next (a new property adds a column, a
 * new model adds a table, keyword changes rebuild the keyword index, index
 * flags add and drop indexes, a type change is kept and reported), and
 * sample data loaded only into a new, empty database. */
#include <fcntl.h>

#include "store/sqlite_internal.h"
#include "store/sqlite_test.h"

static const char settings[] = "{\"server\": {}, \"roles\": [{\"name\": \"all\", \"models\": "
                               "[{\"model\": \"*\"}]}], \"users\": [{\"name\": \"u\", "
                               "\"roles\": [\"all\"]}]}";

static const char models_v1[] =
    "{\"models\": [{\"id\": \"5b0c3c2e-8d0f-4a43-9b1c-0e6b7d9a1c01\", \"name\": \"Things\", "
    "\"entityType\": \"Thing\", \"properties\": ["
    " {\"name\": \"Name\", \"dataType\": \"String\", \"keyword\": true},"
    " {\"name\": \"Size\", \"dataType\": \"Int\"},"
    " {\"name\": \"Tag\", \"dataType\": \"String\", \"sortable\": false, \"filterable\": "
    "false}]}]}";

static const char models_v2[] =
    "{\"models\": [{\"id\": \"5b0c3c2e-8d0f-4a43-9b1c-0e6b7d9a1c01\", \"name\": \"Things\", "
    "\"entityType\": \"Thing\", \"properties\": ["
    " {\"name\": \"Name\", \"dataType\": \"String\", \"keyword\": true},"
    " {\"name\": \"Size\", \"dataType\": \"String\", \"sortable\": false, \"filterable\": false},"
    " {\"name\": \"Tag\", \"dataType\": \"String\"},"
    " {\"name\": \"Colour\", \"dataType\": \"String\", \"keyword\": true}]},"
    " {\"id\": \"5b0c3c2e-8d0f-4a43-9b1c-0e6b7d9a1c02\", \"name\": \"Widgets\", "
    "\"entityType\": \"Widget\", \"properties\": [{\"name\": \"Label\", \"dataType\": "
    "\"String\"}]}]}";

static const char things_data[] =
    "{\"model\": \"Things\", \"entities\": ["
    " {\"id\": \"00000000-0000-4000-8000-000000000001\", \"Name\": \"Red Rocket\", \"Size\": 3,"
    "  \"Tag\": \"a\"},"
    " {\"id\": \"00000000-0000-4000-8000-000000000002\", \"Name\": \"Blue Moon\", \"Size\": 5}]}";

static void write_file(const char *dir, const char *name, const char *text) {
  char path[512];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static dg_catalog_t *catalog(sq_fixture_t *fx, const char *name, const char *models) {
  char dir[256];
  snprintf(dir, sizeof(dir), "%s/%s", fx->dir, name);
  assert_int_equal(mkdir(dir, 0700), 0);
  write_file(dir, "datagate.json", settings);
  write_file(dir, "models.json", models);
  dg_catalog_t *cat = NULL;
  assert_int_equal(dg_catalog_load(dir, &cat, NULL), 0);
  return cat;
}

/* Runs a query written as JSON against store with catalog cat. */
static json_t *query(sq_fixture_t *fx, dg_store_t *store, dg_catalog_t *cat, const char *model,
                     const char *args) {
  const dg_principal_t *p = NULL;
  assert_int_equal(dg_auth_principal_for_user(cat, "u", fx->st.arena, &p), 0);
  dg_errctx_t err;
  dg_errctx_clear(&err);
  dg_store_parse_t ps = {.cat = cat, .principal = p, .arena = fx->st.arena, .err = &err};
  dg_store_query_t *q = dg_arena_calloc(fx->st.arena, 1, sizeof(*q));
  if (dg_store_parse_query(&ps, dg_catalog_model_by_name(cat, model), st_json(&fx->st, args), q))
    fail_msg("%s", err.message);
  sq_result_t r = {0};
  assert_int_equal(dg_store_query(store, q, sq_on_result, &r, NULL, &err), 0);
  sq_wait(fx, &r);
  if (r.status != 0)
    fail_msg("%s", r.message);
  dg_arena_defer(fx->st.arena, (void (*)(void *))json_decref, r.json);
  return r.json;
}

static size_t lookup_count(sq_fixture_t *fx, dg_store_t *store, dg_catalog_t *cat,
                           const char *word) {
  const dg_principal_t *p = NULL;
  assert_int_equal(dg_auth_principal_for_user(cat, "u", fx->st.arena, &p), 0);
  dg_errctx_t err;
  dg_store_parse_t ps = {.cat = cat, .principal = p, .arena = fx->st.arena, .err = &err};
  dg_store_lookup_t *l = dg_arena_calloc(fx->st.arena, 1, sizeof(*l));
  char args[128];
  snprintf(args, sizeof(args), "{\"searchValue\": \"%s\"}", word);
  assert_int_equal(dg_store_parse_lookup(&ps, st_json(&fx->st, args), l), 0);
  sq_result_t r = {0};
  assert_int_equal(dg_store_lookup(store, l, sq_on_result, &r, NULL, &err), 0);
  sq_wait(fx, &r);
  assert_int_equal(r.status, 0);
  size_t n = json_array_size(json_object_get(r.json, "entities"));
  json_decref(r.json);
  return n;
}

static void set_colour(sq_fixture_t *fx, dg_store_t *store, dg_catalog_t *cat, const char *id,
                       const char *colour) {
  const dg_model_t *m = dg_catalog_model_by_name(cat, "Things");
  const dg_property_t *props[] = {dg_model_property(m, "Colour")};
  dg_store_value_t values[] = {{.kind = DG_STORE_TEXT, .text = colour, .len = strlen(colour)}};
  dg_store_write_t w = {.model = m,
                        .mode = DG_STORE_UPDATE,
                        .id = id,
                        .props = props,
                        .values = values,
                        .nvalues = 1};
  sq_result_t r = {0};
  dg_errctx_t err;
  assert_int_equal(dg_store_write(store, &w, sq_on_result, &r, NULL, &err), 0);
  sq_wait(fx, &r);
  assert_int_equal(r.status, 0);
  json_decref(r.json);
}

static bool has_index(const char *db, const char *name) {
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(h,
                                      "SELECT 1 FROM sqlite_schema WHERE type = 'index' AND "
                                      "name = ?",
                                      -1, &st, NULL),
                   SQLITE_OK);
  sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
  bool found = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  sqlite3_close(h);
  return found;
}

static int64_t count(sq_fixture_t *fx, dg_store_t *s, dg_catalog_t *cat, const char *model) {
  return json_integer_value(
      json_object_get(query(fx, s, cat, model, "{\"countOnly\": true}"), "count"));
}

static void test_migration(void **state) {
  sq_fixture_t *fx = *state;
  char data[256], db[256], log[256];
  snprintf(data, sizeof(data), "%s/data", fx->dir);
  snprintf(db, sizeof(db), "%s/things.db", fx->dir);
  snprintf(log, sizeof(log), "%s/log.jsonl", fx->dir);
  assert_int_equal(mkdir(data, 0700), 0);
  write_file(data, "Things.json", things_data);
  dg_catalog_t *v1 = catalog(fx, "v1", models_v1);
  dg_catalog_t *v2 = catalog(fx, "v2", models_v2);
  dg_store_options_t o = {.path = db, .sample_dir = data};
  dg_store_t *s = NULL;

  assert_int_equal(sq_open(fx, v1, &o, &s, NULL, 0), 0);
  assert_int_equal(count(fx, s, v1, "Things"), 2);
  assert_int_equal(lookup_count(fx, s, v1, "rocket"), 1);
  sq_close(fx, s);
  assert_true(has_index(db, "_ix_Things_Size"));
  assert_false(has_index(db, "_ix_Things_Tag"));

  /* More sample data now would not be loaded: the database has data. */
  write_file(data, "Things.json",
             "{\"model\": \"Things\", \"entities\": [{\"id\": "
             "\"00000000-0000-4000-8000-000000000003\", \"Name\": \"Green\"}]}");
  int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  dg_log_init(fd, DG_LOG_WARN);
  assert_int_equal(sq_open(fx, v2, &o, &s, NULL, 0), 0);
  dg_log_init(2, DG_LOG_ERROR);
  close(fd);
  assert_int_equal(count(fx, s, v2, "Things"), 2);
  assert_int_equal(count(fx, s, v2, "Widgets"), 0);
  /* The keyword index now covers Colour, and still the old names. */
  assert_int_equal(lookup_count(fx, s, v2, "blue"), 1);
  set_colour(fx, s, v2, "00000000-0000-4000-8000-000000000001", "Turquoise");
  assert_int_equal(lookup_count(fx, s, v2, "turquoise"), 1);
  json_t *r = query(fx, s, v2, "Things",
                    "{\"properties\": [\"Colour\", \"Size\"], \"sortCondition\": "
                    "{\"propertyName\": \"Tag\"}}");
  json_t *first = json_object_get(json_array_get(json_object_get(r, "entities"), 1), "properties");
  assert_string_equal(sq_str(first, "colour"), "Turquoise");
  sq_close(fx, s);
  assert_false(has_index(db, "_ix_Things_Size"));
  assert_true(has_index(db, "_ix_Things_Tag"));
  assert_true(has_index(db, "_ix_Things_Colour"));

  /* The type change was reported, not applied. */
  FILE *f = fopen(log, "r");
  char text[4096] = "";
  size_t n = fread(text, 1, sizeof(text) - 1, f);
  text[n] = '\0';
  fclose(f);
  st_contains(text, "\"event\":\"store_migration\"", "\"property\":\"Size\"",
              "\"column_type\":\"INTEGER\"", NULL);

  /* Opening again with nothing changed is a no-op. */
  assert_int_equal(sq_open(fx, v2, &o, &s, NULL, 0), 0);
  assert_int_equal(count(fx, s, v2, "Things"), 2);
  sq_close(fx, s);
  dg_catalog_unref(v1);
  dg_catalog_unref(v2);
}

/* A keyword property removed: the index goes; the table stays. */
static void test_keywords_removed(void **state) {
  sq_fixture_t *fx = *state;
  char db[256];
  snprintf(db, sizeof(db), "%s/k.db", fx->dir);
  dg_catalog_t *v1 = catalog(fx, "k1", models_v1);
  char plain[sizeof(models_v1)];
  snprintf(plain, sizeof(plain), "%s", models_v1);
  char *kw = strstr(plain, "\"keyword\": true");
  memcpy(kw, "\"keyword\":false", strlen("\"keyword\":false"));
  dg_catalog_t *v2 = catalog(fx, "k2", plain);
  dg_store_options_t o = {.path = db, .sample_dir = ""};
  dg_store_t *s = NULL;
  assert_int_equal(sq_open(fx, v1, &o, &s, NULL, 0), 0);
  sq_close(fx, s);
  assert_int_equal(sq_open(fx, v2, &o, &s, NULL, 0), 0);
  dg_errctx_t err;
  dg_store_parse_t ps = {.cat = v2, .arena = fx->st.arena, .err = &err};
  assert_int_equal(dg_auth_principal_for_user(v2, "u", fx->st.arena, &ps.principal), 0);
  dg_store_lookup_t l;
  /* Nothing left to search: lookup has no model for it. */
  assert_int_equal(dg_store_parse_lookup(&ps, st_json(&fx->st, "{\"searchValue\": \"x\"}"), &l), 0);
  assert_int_equal(l.nmodels, 0);
  sq_close(fx, s);
  sqlite3 *h = NULL;
  sqlite3_stmt *st = NULL;
  assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_prepare_v2(h, "SELECT count(*) FROM sqlite_schema WHERE name LIKE '\\_fts%' ESCAPE '\\'",
                     -1, &st, NULL);
  assert_int_equal(sqlite3_step(st), SQLITE_ROW);
  assert_int_equal(sqlite3_column_int(st, 0), 0);
  sqlite3_finalize(st);
  sqlite3_close(h);
  dg_catalog_unref(v1);
  dg_catalog_unref(v2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_migration, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_keywords_removed, sq_setup, sq_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
