/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The fixture of the PostgreSQL tests that also need the sample catalog: a
 * throw-away server (pg_test.h) and the store fixture (store_test.h). */
#ifndef DG_TEST_PG_STORE_TEST_H
#define DG_TEST_PG_STORE_TEST_H

#include "store/pg_test.h"
#include "store/store_test.h"

static st_fixture_t *g_st;

static int setup(void **state) {
  if (server_start(state) != 0)
    return -1;
  void *st = NULL;
  st_setup(&st);
  g_st = st;
  return 0;
}

static int teardown(void **state) {
  void *st = g_st;
  st_teardown(&st);
  return server_stop(state);
}

#endif
