/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Helpers of the tests that run a real store: a loop, a temporary database
 * loaded with the sample data of conf/data, operations run to completion,
 * and the sample data itself read back from the JSON files so that answers
 * can be computed independently of the store. */
#ifndef DG_TEST_SQLITE_TEST_H
#define DG_TEST_SQLITE_TEST_H

#include <dirent.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "store/store_test.h"

typedef struct sq_fixture {
  st_fixture_t st;
  uv_loop_t loop;
  dg_store_t *store;
  char dir[64];
  char path[128];
  json_t *data; /* model name -> entities array, from conf/data */
  bool closed;
} sq_fixture_t;

/* What an operation ended with. */
typedef struct sq_result {
  int calls;
  int status;
  json_t *json;
  char message[1024];
  bool starting; /* set while the call that started it runs */
  bool early;    /* the callback ran inside that call */
} sq_result_t;

static inline void sq_on_result(int status, json_t *result, const dg_errctx_t *err, void *data) {
  sq_result_t *r = data;
  r->calls++;
  r->early |= r->starting;
  r->status = status;
  /* Results come written out (dg_json_raw): read them back as a client
   * would, and check that the store wrote exactly the bytes that the JSON
   * writer gives for the same value (member order, number forms). */
  const json_t *text = dg_json_raw_text(result);
  r->json = text != NULL ? json_loads(json_string_value(text), 0, NULL) : result;
  if (text != NULL) {
    dg_buf_t again;
    dg_buf_init(&again, 64 * 1024 * 1024);
    if (r->json == NULL || dg_json_write(r->json, &again) != 0 ||
        strcmp(again.data, json_string_value(text)) != 0)
      fail_msg("the store wrote %s", json_string_value(text));
    dg_buf_free(&again);
    json_decref(result);
  }
  snprintf(r->message, sizeof(r->message), "%s", status != 0 && err ? err->message : "");
}

/* Runs the loop until r has been called. */
static inline void sq_wait(sq_fixture_t *fx, sq_result_t *r) {
  while (r->calls == 0 && uv_run(&fx->loop, UV_RUN_ONCE) != 0)
    ;
  assert_int_equal(r->calls, 1);
  assert_false(r->early);
}

typedef struct sq_open_result {
  sq_result_t r;
  dg_store_t *store;
} sq_open_result_t;

static inline void sq_on_open(dg_store_t *store, int status, const dg_errctx_t *err, void *data) {
  sq_open_result_t *res = data;
  res->r.calls++;
  res->r.early |= res->r.starting;
  res->r.status = status;
  res->store = store;
  snprintf(res->r.message, sizeof(res->r.message), "%s", status != 0 ? err->message : "");
}

static inline int sq_open(sq_fixture_t *fx, dg_catalog_t *cat, const dg_store_options_t *o,
                          dg_store_t **out, char *message, size_t size) {
  sq_open_result_t res = {.r = {.starting = true}};
  assert_int_equal(dg_store_open(&fx->loop, cat, o, sq_on_open, &res), 0);
  res.r.starting = false;
  sq_wait(fx, &res.r);
  *out = res.store;
  if (message != NULL)
    snprintf(message, size, "%s", res.r.message);
  return res.r.status;
}

static inline void sq_on_closed(void *data) {
  (*(int *)data)++;
}

/* Closes a store and runs the loop until it is freed. */
static inline void sq_close(sq_fixture_t *fx, dg_store_t *store) {
  int closed = 0;
  dg_store_close(store, sq_on_closed, &closed);
  while (closed == 0 && uv_run(&fx->loop, UV_RUN_ONCE) != 0)
    ;
  assert_int_equal(closed, 1);
}

static inline void sq_read_data(sq_fixture_t *fx) {
  char path[4096];
  fx->data = json_object();
  const char *names[] = {"Customers", "Products", "Orders", "OrderLines", "Files", "Payments"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(names); i++) {
    snprintf(path, sizeof(path), "%s/conf/data/%s.json", st_source_dir(), names[i]);
    json_t *doc = json_load_file(path, 0, NULL);
    assert_non_null(doc);
    json_object_set(fx->data, names[i], json_object_get(doc, "entities"));
    json_decref(doc);
  }
}

static inline int sq_setup(void **state) {
  st_setup(state);
  sq_fixture_t *fx = calloc(1, sizeof(*fx));
  fx->st = *(st_fixture_t *)*state;
  free(*state);
  assert_int_equal(uv_loop_init(&fx->loop), 0);
  snprintf(fx->dir, sizeof(fx->dir), "/tmp/dg-store-XXXXXX");
  assert_non_null(mkdtemp(fx->dir));
  snprintf(fx->path, sizeof(fx->path), "%s/db/gateway.db", fx->dir);
  char sample[4096];
  snprintf(sample, sizeof(sample), "%s/conf/data", st_source_dir());
  dg_store_options_t o = {.path = fx->path, .sample_dir = sample};
  char msg[1024];
  int rc = sq_open(fx, fx->st.cat, &o, &fx->store, msg, sizeof(msg));
  if (rc != 0)
    fail_msg("open failed: %s", msg);
  sq_read_data(fx);
  *state = fx;
  return 0;
}

static inline void sq_remove_tree(const char *dir) {
  DIR *d = opendir(dir);
  if (d == NULL)
    return;
  for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
    char p[512];
    struct stat st;
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    int n = snprintf(p, sizeof(p), "%s/%s", dir, e->d_name);
    if (n < 0 || (size_t)n >= sizeof(p))
      continue; /* a name this long is none of the fixture's */
    if (lstat(p, &st) == 0 && S_ISDIR(st.st_mode))
      sq_remove_tree(p);
    else
      unlink(p);
  }
  closedir(d);
  rmdir(dir);
}

/* Closes the store, runs the loop out and checks nothing is left open. */
static inline int sq_teardown(void **state) {
  sq_fixture_t *fx = *state;
  if (fx->store != NULL)
    sq_close(fx, fx->store);
  uv_run(&fx->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&fx->loop), 0);
  sq_remove_tree(fx->dir);
  json_decref(fx->data);
  dg_arena_destroy(fx->st.arena);
  dg_catalog_unref(fx->st.cat);
  free(fx);
  return 0;
}

/* ---- Running operations ------------------------------------------------------------- */

static inline sq_result_t sq_query(sq_fixture_t *fx, const char *user, const char *model,
                                   const char *args) {
  dg_store_query_t *q = dg_arena_calloc(fx->st.arena, 1, sizeof(*q));
  if (st_parse_query(&fx->st, user, model, args, q) != 0)
    fail_msg("query refused: %s", fx->st.err.message);
  sq_result_t r = {.starting = true};
  dg_errctx_t err;
  dg_errctx_clear(&err);
  assert_int_equal(dg_store_query(fx->store, q, sq_on_result, &r, NULL, &err), 0);
  r.starting = false;
  sq_wait(fx, &r);
  dg_arena_defer(fx->st.arena, (void (*)(void *))json_decref, r.json);
  return r;
}

static inline json_t *sq_ok(sq_result_t r) {
  if (r.status != 0)
    fail_msg("failed: %s", r.message);
  assert_non_null(r.json);
  return r.json;
}

/* The sample entities of a model (borrowed). */
static inline json_t *sq_data(sq_fixture_t *fx, const char *model) {
  json_t *list = json_object_get(fx->data, model);
  assert_non_null(list);
  return list;
}

static inline json_t *sq_find(sq_fixture_t *fx, const char *model, const char *key,
                              const char *value) {
  size_t i;
  json_t *e;
  json_array_foreach(sq_data(fx, model), i, e) {
    const char *v = json_string_value(json_object_get(e, key));
    if (v != NULL && strcmp(v, value) == 0)
      return e;
  }
  return NULL;
}

static inline const char *sq_str(const json_t *e, const char *key) {
  return json_string_value(json_object_get(e, key));
}

#endif
