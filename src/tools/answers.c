/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Answers that depend only on the catalog snapshot and the caller's roles:
 * get_data_models, get_data_model_properties and get_saved_queries. The
 * first caller with a given role set builds the answer and writes it out
 * once as JSON text (dg_json_raw); later callers with the same roles get
 * that text, which the reply copies into structuredContent, and its form
 * as a JSON string, kept beside it, which the reply copies into the text
 * item, instead of building, serialising and escaping the objects again. The table is bounded: when
 * it is full the oldest entry makes room. It holds a reference to the one catalog its answers were
 * made for, and empties itself when a call brings another snapshot (a reload), so an answer never
 * outlives the configuration it describes. */
#include <stdlib.h>
#include <string.h>

#include "tools/internal.h"

/* Role sets times answers: a few roles, a few dozen models. */
#define ANSWERS_MAX 128
/* A principal with more roles than this is answered without the table. */
#define ROLES_MAX 16
/* A written answer larger than this is not kept (nor is it common). */
#define TEXT_MAX (4u * 1024 * 1024)

typedef struct answer {
  dg__tools_answer_kind_t kind;
  size_t model; /* the model's index, SIZE_MAX for none */
  const dg_role_t *roles[ROLES_MAX];
  size_t nroles;
  json_t *value; /* a dg_json_raw value; NULL: the slot is free */
} answer_t;

struct dg_tools_answers {
  dg_catalog_t *cat; /* reference held; NULL while empty */
  answer_t slots[ANSWERS_MAX];
  size_t used; /* slots filled, in order */
  size_t next; /* the slot replaced when every slot is filled */
};

dg_tools_answers_t *dg_tools_answers_new(void) {
  return calloc(1, sizeof(dg_tools_answers_t));
}

static void clear(dg_tools_answers_t *a) {
  for (size_t i = 0; i < a->used; i++)
    json_decref(a->slots[i].value);
  memset(a->slots, 0, sizeof(a->slots));
  a->used = a->next = 0;
  dg_catalog_unref(a->cat);
  a->cat = NULL;
}

void dg_tools_answers_free(dg_tools_answers_t *answers) {
  if (answers == NULL)
    return;
  clear(answers);
  free(answers);
}

size_t dg__tools_answers_count(const dg_tools_answers_t *answers) {
  return answers != NULL ? answers->used : 0;
}

static bool same_key(const answer_t *e, dg__tools_answer_kind_t kind, size_t model,
                     const dg_role_t *const *roles, size_t nroles) {
  return e->kind == kind && e->model == model && e->nroles == nroles &&
         memcmp(e->roles, roles, nroles * sizeof(*roles)) == 0;
}

static json_t *written(json_t *built) {
  dg_buf_t text;
  dg_buf_init(&text, TEXT_MAX);
  json_t *raw = dg_json_write(built, &text) == 0 ? dg_json_raw(text.data, text.len) : NULL;
  dg_buf_free(&text);
  /* The text item's escaped form, kept too: without it (out of memory or
   * too large) the reply escapes the text itself. */
  if (raw != NULL)
    (void)dg_json_raw_keep_quoted(raw, TEXT_MAX + TEXT_MAX / 4);
  return raw;
}

static void keep(dg_tools_answers_t *a, dg__tools_answer_kind_t kind, size_t model,
                 const dg_role_t *const *roles, size_t nroles, json_t *value) {
  size_t i = a->used < ANSWERS_MAX ? a->used++ : a->next++ % ANSWERS_MAX;
  answer_t *e = &a->slots[i];
  json_decref(e->value);
  e->kind = kind;
  e->model = model;
  memcpy(e->roles, roles, nroles * sizeof(*roles));
  e->nroles = nroles;
  e->value = json_incref(value);
}

/* The catalog is const to tools; only its reference count changes here. */
static void bind_catalog(dg_tools_answers_t *a, const dg_catalog_t *cat) {
  if (a->cat == cat)
    return;
  clear(a);
  a->cat = dg_catalog_ref((dg_catalog_t *)cat);
}

json_t *dg__tools_answer(dg_tools_answers_t *answers, dg__tools_answer_kind_t kind,
                         const dg_catalog_t *cat, const dg_model_t *model, const dg_principal_t *p,
                         dg__tools_answer_build_t build) {
  const dg_role_t *const *roles;
  size_t nroles = dg_principal_roles(p, &roles);
  if (answers == NULL || nroles > ROLES_MAX)
    return build(cat, model, p);
  size_t mi = model != NULL ? model->index : SIZE_MAX;
  bind_catalog(answers, cat);
  for (size_t i = 0; i < answers->used; i++) {
    if (same_key(&answers->slots[i], kind, mi, roles, nroles))
      return json_incref(answers->slots[i].value);
  }
  json_t *built = build(cat, model, p);
  json_t *raw = built != NULL ? written(built) : NULL;
  if (raw == NULL)
    return built; /* too large to keep, or out of memory: answered as built */
  json_decref(built);
  keep(answers, kind, mi, roles, nroles, raw);
  return raw;
}
