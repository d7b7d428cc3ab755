/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Shared helpers of the store tests: the sample configuration in conf/,
 * principals of its users, and parsing tool arguments written as JSON. */
#ifndef DG_TEST_STORE_TEST_H
#define DG_TEST_STORE_TEST_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/store.h"

typedef struct st_fixture {
  dg_catalog_t *cat;
  dg_arena_t *arena;
  dg_errctx_t err;
} st_fixture_t;

static inline const char *st_source_dir(void) {
  const char *src = getenv("DG_SOURCE_DIR");
  return src ? src : ".";
}

static inline int st_setup(void **state) {
  st_fixture_t *fx = calloc(1, sizeof(*fx));
  char dir[4096];
  snprintf(dir, sizeof(dir), "%s/conf", st_source_dir());
  dg_log_init(2, DG_LOG_ERROR);
  assert_int_equal(dg_catalog_load(dir, &fx->cat, NULL), 0);
  fx->arena = dg_arena_new(4096);
  *state = fx;
  return 0;
}

static inline int st_teardown(void **state) {
  st_fixture_t *fx = *state;
  dg_arena_destroy(fx->arena);
  dg_catalog_unref(fx->cat);
  free(fx);
  return 0;
}

static inline const dg_principal_t *st_principal(st_fixture_t *fx, const char *user) {
  const dg_principal_t *p = NULL;
  assert_int_equal(dg_auth_principal_for_user(fx->cat, user, fx->arena, &p), 0);
  return p;
}

static inline const dg_model_t *st_model(st_fixture_t *fx, const char *name) {
  const dg_model_t *m = dg_catalog_model_by_name(fx->cat, name);
  assert_non_null(m);
  return m;
}

static inline dg_store_parse_t st_ctx(st_fixture_t *fx, const char *user) {
  dg_errctx_clear(&fx->err);
  dg_store_parse_t ps = {
      .cat = fx->cat, .principal = st_principal(fx, user), .arena = fx->arena, .err = &fx->err};
  return ps;
}

/* Parses JSON text that the test itself wrote; kept alive by the arena. */
static inline json_t *st_json(st_fixture_t *fx, const char *text) {
  json_error_t jerr;
  json_t *v = json_loads(text, JSON_DECODE_ANY, &jerr);
  if (v == NULL)
    fail_msg("bad test JSON: %s: %s", jerr.text, text);
  dg_arena_defer(fx->arena, (void (*)(void *))json_decref, v);
  return v;
}

static inline int st_parse_query(st_fixture_t *fx, const char *user, const char *model,
                                 const char *args, dg_store_query_t *q) {
  dg_store_parse_t ps = st_ctx(fx, user);
  return dg_store_parse_query(&ps, st_model(fx, model), st_json(fx, args), q);
}

/* Fails unless text contains every one of the NULL-terminated needles. */
static inline void st_contains(const char *text, ...) {
  va_list ap;
  va_start(ap, text);
  for (const char *n = va_arg(ap, const char *); n != NULL; n = va_arg(ap, const char *)) {
    if (strstr(text, n) == NULL)
      fail_msg("'%s' not found in: %s", n, text);
  }
  va_end(ap);
}

#endif
