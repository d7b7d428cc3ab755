/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fixture of the tool logic tests: the sample catalog of conf/ (found
 * through DG_SOURCE_DIR), an arena and an array that keeps JSON inputs
 * alive (checked values may point into their strings), fresh for each
 * test, and the principal of a configured user. Include after <cmocka.h>. */
#ifndef DG_TEST_CATALOG_TEST_H
#define DG_TEST_CATALOG_TEST_H

#include <stdio.h>
#include <stdlib.h>

#include "datagate/auth.h"
#include "datagate/base.h"
#include "datagate/catalog.h"

typedef struct fixture {
  dg_catalog_t *cat;
  dg_arena_t *arena;
  json_t *keep;
} fixture_t;

static inline int ct_setup(void **state) {
  fixture_t *fx = calloc(1, sizeof(*fx));
  char dir[4096];
  const char *src = getenv("DG_SOURCE_DIR");
  snprintf(dir, sizeof(dir), "%s/conf", src ? src : ".");
  assert_int_equal(dg_catalog_load(dir, &fx->cat, NULL), 0);
  fx->arena = dg_arena_new(4096);
  fx->keep = json_array();
  *state = fx;
  return 0;
}

static inline int ct_teardown(void **state) {
  fixture_t *fx = *state;
  dg_arena_destroy(fx->arena);
  dg_catalog_unref(fx->cat);
  json_decref(fx->keep);
  free(fx);
  return 0;
}

/* The principal of the configured user (in the fixture's arena). */
static inline const dg_principal_t *ct_principal(fixture_t *fx, const char *user) {
  const dg_principal_t *p = NULL;
  assert_int_equal(dg_auth_principal_for_user(fx->cat, user, fx->arena, &p), 0);
  return p;
}

#endif
