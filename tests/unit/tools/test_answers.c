/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the table of answers kept as text (src/tools/answers.c):
 * callers with the same roles share one written answer, other roles,
 * models and kinds get their own, the text is what building the answer
 * and writing it gives, a new catalog snapshot empties the table, and the
 * table stays within its bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "catalog_test.h"
#include "datagate/auth.h"
#include "tools/internal.h"

static int builds;

static json_t *build_models(const dg_catalog_t *cat, const dg_model_t *model,
                            const dg_principal_t *p) {
  builds++;
  return dg__tools_data_models_json(cat, p);
}

static json_t *build_properties(const dg_catalog_t *cat, const dg_model_t *model,
                                const dg_principal_t *p) {
  builds++;
  return dg__tools_model_properties_json(model, p);
}

/* A small answer that names the model's index, for models made up here. */
static json_t *build_index(const dg_catalog_t *cat, const dg_model_t *model,
                           const dg_principal_t *p) {
  builds++;
  return json_pack("{s:I}", "index", (json_int_t)model->index);
}

/* The text of a kept answer. */
static const char *text_of(const json_t *answer) {
  const json_t *text = dg_json_raw_text(answer);
  assert_non_null(text);
  return json_string_value(text);
}

/* value written out as the reply would write it. */
static char *written(const json_t *value) {
  dg_buf_t out;
  dg_buf_init(&out, 1 << 20);
  assert_int_equal(dg_json_write(value, &out), 0);
  size_t len;
  return dg_buf_steal(&out, &len);
}

static void test_same_roles_share_one_answer(void **state) {
  fixture_t *fx = *state;
  dg_tools_answers_t *a = dg_tools_answers_new();
  builds = 0;
  /* Two principals of the same user, made apart, as two requests make them. */
  json_t *first = dg__tools_answer(a, DG__TOOLS_ANSWER_DATA_MODELS, fx->cat, NULL,
                                   ct_principal(fx, "sales"), build_models);
  json_t *second = dg__tools_answer(a, DG__TOOLS_ANSWER_DATA_MODELS, fx->cat, NULL,
                                    ct_principal(fx, "sales"), build_models);
  assert_non_null(first);
  assert_ptr_equal(first, second);
  assert_int_equal(builds, 1);
  assert_int_equal(dg__tools_answers_count(a), 1);
  json_decref(first);
  json_decref(second);
  dg_tools_answers_free(a);
}

static void test_text_is_the_built_answer(void **state) {
  fixture_t *fx = *state;
  dg_tools_answers_t *a = dg_tools_answers_new();
  static const char *const users[] = {"admin", "sales", "auditor"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(users); i++) {
    const dg_principal_t *p = ct_principal(fx, users[i]);
    json_t *kept =
        dg__tools_answer(a, DG__TOOLS_ANSWER_DATA_MODELS, fx->cat, NULL, p, build_models);
    json_t *built = dg__tools_data_models_json(fx->cat, p);
    char *want = written(built);
    assert_string_equal(text_of(kept), want);
    /* Written into a reply, the kept answer gives the same bytes. */
    char *again = written(kept);
    assert_string_equal(again, want);
    free(again);
    /* Its form as a JSON string is kept too, for the text item. */
    json_t *as_string = json_string(want);
    char *want_quoted = written(as_string);
    char *quoted = written(dg_json_raw_quoted(kept));
    assert_string_equal(quoted, want_quoted);
    free(quoted);
    free(want_quoted);
    json_decref(as_string);
    free(want);
    json_decref(built);
    json_decref(kept);
  }
  assert_int_equal(dg__tools_answers_count(a), 3);
  dg_tools_answers_free(a);
}

static void test_roles_models_and_kinds_apart(void **state) {
  fixture_t *fx = *state;
  dg_tools_answers_t *a = dg_tools_answers_new();
  const dg_model_t *orders = &fx->cat->models[2];
  const dg_model_t *customers = &fx->cat->models[0];
  const dg_principal_t *admin = ct_principal(fx, "admin");
  const dg_principal_t *auditor = ct_principal(fx, "auditor");
  builds = 0;
  json_t *m_admin =
      dg__tools_answer(a, DG__TOOLS_ANSWER_DATA_MODELS, fx->cat, NULL, admin, build_models);
  json_t *m_auditor =
      dg__tools_answer(a, DG__TOOLS_ANSWER_DATA_MODELS, fx->cat, NULL, auditor, build_models);
  json_t *p_orders = dg__tools_answer(a, DG__TOOLS_ANSWER_MODEL_PROPERTIES, fx->cat, orders, admin,
                                      build_properties);
  json_t *p_customers = dg__tools_answer(a, DG__TOOLS_ANSWER_MODEL_PROPERTIES, fx->cat, customers,
                                         admin, build_properties);
  json_t *p_orders_auditor = dg__tools_answer(a, DG__TOOLS_ANSWER_MODEL_PROPERTIES, fx->cat, orders,
                                              auditor, build_properties);
  assert_int_equal(builds, 5);
  assert_int_equal(dg__tools_answers_count(a), 5);
  assert_string_not_equal(text_of(m_admin), text_of(m_auditor));
  assert_string_not_equal(text_of(p_orders), text_of(p_customers));
  /* The auditor sees Orders without the Customer it may not read. */
  json_t *built = dg__tools_model_properties_json(orders, auditor);
  char *want = written(built);
  assert_string_equal(text_of(p_orders_auditor), want);
  free(want);
  json_decref(built);
  json_t *all[] = {m_admin, m_auditor, p_orders, p_customers, p_orders_auditor};
  for (size_t i = 0; i < DG_ARRAY_SIZE(all); i++)
    json_decref(all[i]);
  dg_tools_answers_free(a);
}

static void test_new_catalog_empties_the_table(void **state) {
  fixture_t *fx = *state;
  dg_tools_answers_t *a = dg_tools_answers_new();
  builds = 0;
  int refs = fx->cat->refs;
  json_t *old = dg__tools_answer(a, DG__TOOLS_ANSWER_DATA_MODELS, fx->cat, NULL,
                                 ct_principal(fx, "admin"), build_models);
  assert_int_equal(fx->cat->refs, refs + 1); /* held while its answers are */
  char dir[4096];
  const char *src = getenv("DG_SOURCE_DIR");
  snprintf(dir, sizeof(dir), "%s/conf", src ? src : ".");
  dg_catalog_t *next = NULL;
  assert_int_equal(dg_catalog_load(dir, &next, NULL), 0);
  const dg_principal_t *p = NULL;
  assert_int_equal(dg_auth_principal_for_user(next, "admin", fx->arena, &p), 0);
  json_t *fresh = dg__tools_answer(a, DG__TOOLS_ANSWER_DATA_MODELS, next, NULL, p, build_models);
  assert_int_equal(builds, 2);
  assert_ptr_not_equal(old, fresh);
  assert_int_equal(dg__tools_answers_count(a), 1);
  assert_int_equal(fx->cat->refs, refs); /* the old snapshot is let go */
  json_decref(old);
  json_decref(fresh);
  dg_tools_answers_free(a);
  assert_int_equal(next->refs, 1);
  dg_catalog_unref(next);
}

static void test_table_is_bounded(void **state) {
  fixture_t *fx = *state;
  dg_tools_answers_t *a = dg_tools_answers_new();
  const dg_principal_t *admin = ct_principal(fx, "admin");
  enum { MODELS = 400 };
  dg_model_t *models = calloc(MODELS, sizeof(*models));
  size_t most = 0;
  builds = 0;
  for (size_t round = 0; round < 2; round++) {
    for (size_t i = 0; i < MODELS; i++) {
      models[i].index = i;
      json_t *v = dg__tools_answer(a, DG__TOOLS_ANSWER_MODEL_PROPERTIES, fx->cat, &models[i], admin,
                                   build_index);
      char want[32];
      snprintf(want, sizeof(want), "{\"index\":%zu}", i);
      assert_string_equal(text_of(v), want); /* never another model's answer */
      json_decref(v);
      size_t n = dg__tools_answers_count(a);
      most = n > most ? n : most;
    }
  }
  assert_true(most < MODELS);
  assert_int_equal(builds, 2 * MODELS); /* older answers made room */
  free(models);
  dg_tools_answers_free(a);
}

static void test_without_a_table_every_answer_is_built(void **state) {
  fixture_t *fx = *state;
  builds = 0;
  const dg_principal_t *p = ct_principal(fx, "sales");
  json_t *a = dg__tools_answer(NULL, DG__TOOLS_ANSWER_DATA_MODELS, fx->cat, NULL, p, build_models);
  json_t *b = dg__tools_answer(NULL, DG__TOOLS_ANSWER_DATA_MODELS, fx->cat, NULL, p, build_models);
  assert_int_equal(builds, 2);
  assert_null(dg_json_raw_text(a));
  assert_true(json_equal(a, b));
  json_decref(a);
  json_decref(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_same_roles_share_one_answer, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_text_is_the_built_answer, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_roles_models_and_kinds_apart, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_new_catalog_empties_the_table, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_table_is_bounded, ct_setup, ct_teardown),
      cmocka_unit_test_setup_teardown(test_without_a_table_every_answer_is_built, ct_setup,
                                      ct_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
