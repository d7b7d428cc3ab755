/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Principals and permission checks. A principal's permissions are the
 * union over its roles: a grant makes a model readable and shows its
 * listed properties (all when none are listed) minus the grant's "deny"
 * list; another role's grant may show a property that one grant denies. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "auth/internal.h"

static bool grant_shows(const dg_model_grant_t *g, const dg_property_t *prop) {
  for (size_t i = 0; i < g->ndeny; i++) {
    if (dg_model_property(g->model, g->deny[i]) == prop)
      return false;
  }
  if (g->all_properties)
    return true;
  for (size_t i = 0; i < g->nproperties; i++) {
    if (dg_model_property(g->model, g->properties[i]) == prop)
      return true;
  }
  return false;
}

static int apply_grant(dg_principal_t *p, const dg_model_grant_t *g, dg_arena_t *arena) {
  const dg_model_t *m = g->model;
  size_t mi = m->index;
  p->read[mi] = true;
  p->write[mi] = p->write[mi] || g->write;
  if (p->visible[mi] == NULL) {
    p->visible[mi] = dg_arena_calloc(arena, m->nproperties + 1, sizeof(bool));
    if (p->visible[mi] == NULL)
      return DG_ENOMEM;
  }
  for (size_t i = 0; i < m->nproperties; i++) {
    if (grant_shows(g, &m->properties[i]))
      p->visible[mi][i] = true;
  }
  return 0;
}

static int add_saved_queries(dg_principal_t *p, const dg_role_t *r, dg_arena_t *arena) {
  size_t n = p->nsaved_queries + r->nsaved_queries;
  const char **list = dg_arena_calloc(arena, n + 1, sizeof(*list));
  if (list == NULL)
    return DG_ENOMEM;
  if (p->nsaved_queries > 0)
    memcpy(list, p->saved_queries, p->nsaved_queries * sizeof(*list));
  for (size_t i = 0; i < r->nsaved_queries; i++) {
    list[p->nsaved_queries + i] = r->saved_queries[i];
    if (strcmp(r->saved_queries[i], "*") == 0)
      p->all_saved_queries = true;
  }
  p->saved_queries = list;
  p->nsaved_queries = n;
  return 0;
}

static int apply_role(dg_principal_t *p, const dg_role_t *r, dg_arena_t *arena) {
  for (size_t i = 0; i < r->ngrants; i++) {
    int rc = apply_grant(p, &r->grants[i], arena);
    if (rc != 0)
      return rc;
  }
  return add_saved_queries(p, r, arena);
}

static dg_principal_t *principal_alloc(const dg_catalog_t *cat, size_t nroles, dg_arena_t *arena) {
  dg_principal_t *p = dg_arena_calloc(arena, 1, sizeof(*p));
  size_t n = cat->nmodels + 1;
  if (p == NULL)
    return NULL;
  p->read = dg_arena_calloc(arena, n, sizeof(bool));
  p->write = dg_arena_calloc(arena, n, sizeof(bool));
  p->visible = dg_arena_calloc(arena, n, sizeof(bool *));
  p->roles = dg_arena_calloc(arena, nroles + 1, sizeof(*p->roles));
  if (p->read == NULL || p->write == NULL || p->visible == NULL || p->roles == NULL)
    return NULL;
  p->cat = cat;
  return p;
}

int dg__auth_principal_new(const dg_catalog_t *cat, const char *name, const dg_role_t *const *roles,
                           size_t nroles, dg_arena_t *arena, const dg_principal_t **out) {
  dg_principal_t *p = principal_alloc(cat, nroles, arena);
  if (p == NULL)
    return DG_ENOMEM;
  p->name = dg_arena_strdup(arena, name);
  if (p->name == NULL)
    return DG_ENOMEM;
  for (size_t i = 0; i < nroles; i++) {
    p->roles[p->nroles++] = roles[i];
    int rc = apply_role(p, roles[i], arena);
    if (rc != 0)
      return rc;
  }
  *out = p;
  return 0;
}

/* ---- Principals shared per catalog ------------------------------------------ */

struct dg__auth_shared {
  unsigned refs;
  dg_catalog_t *cat; /* reference held */
  dg_arena_t *arena;
  const dg_principal_t **by_user; /* per user index; NULL until first used */
};

dg__auth_shared_t *dg__auth_shared_new(const dg_catalog_t *cat) {
  dg__auth_shared_t *s = calloc(1, sizeof(*s));
  if (s == NULL)
    return NULL;
  s->arena = dg_arena_new(4096);
  s->by_user =
      s->arena != NULL ? dg_arena_calloc(s->arena, cat->nusers + 1, sizeof(*s->by_user)) : NULL;
  if (s->by_user == NULL) {
    dg_arena_destroy(s->arena);
    free(s);
    return NULL;
  }
  s->refs = 1;
  s->cat = dg_catalog_ref((dg_catalog_t *)cat); /* const to callers; only the count changes */
  return s;
}

void dg__auth_shared_unref(dg__auth_shared_t *s) {
  if (s == NULL || __atomic_sub_fetch(&s->refs, 1, __ATOMIC_ACQ_REL) != 0)
    return;
  dg_arena_destroy(s->arena);
  dg_catalog_unref(s->cat);
  free(s);
}

static void unref_deferred(void *s) {
  dg__auth_shared_unref(s);
}

/* One more reference, given back when arena is destroyed. */
static int hold(dg__auth_shared_t *s, dg_arena_t *arena) {
  __atomic_add_fetch(&s->refs, 1, __ATOMIC_RELAXED);
  return dg_arena_defer(arena, unref_deferred, s); /* on failure it is given back at once */
}

int dg__auth_shared_principal(dg__auth_shared_t *s, const dg_user_t *u, dg_arena_t *arena,
                              const dg_principal_t **out) {
  if (u < s->cat->users || u >= s->cat->users + s->cat->nusers)
    return DG_EINVAL;
  size_t i = (size_t)(u - s->cat->users);
  if (s->by_user[i] == NULL) {
    const dg_principal_t *p = NULL;
    int rc = dg__auth_principal_new(s->cat, u->name, u->roles, u->nroles, s->arena, &p);
    if (rc != 0)
      return rc;
    ((dg_principal_t *)p)->shared = s;
    s->by_user[i] = p;
  }
  int rc = hold(s, arena);
  if (rc == 0)
    *out = s->by_user[i];
  return rc;
}

/* Copies n elements of size bytes into the arena (NULL stays NULL). */
static void *arena_dup(dg_arena_t *arena, const void *src, size_t n, size_t size, bool *failed) {
  if (src == NULL)
    return NULL;
  void *copy = dg_arena_alloc(arena, n * size);
  if (copy == NULL) {
    *failed = true;
    return NULL;
  }
  return memcpy(copy, src, n * size);
}

/* The permissions are copied as they are rather than worked out from the
 * roles again: the copy is made on every request the admit hook admitted. */
int dg_auth_principal_copy(const dg_catalog_t *cat, const dg_principal_t *p, dg_arena_t *arena,
                           const dg_principal_t **out) {
  if (p == NULL || p->cat != cat)
    return DG_EINVAL;
  if (p->shared != NULL) { /* nothing to copy: held as long as arena */
    int rc = hold(p->shared, arena);
    if (rc == 0)
      *out = p;
    return rc;
  }
  size_t n = cat->nmodels + 1;
  bool failed = false;
  dg_principal_t *c = arena_dup(arena, p, 1, sizeof(*p), &failed);
  if (c == NULL)
    return DG_ENOMEM;
  c->name = dg_arena_strdup(arena, p->name);
  c->roles = arena_dup(arena, p->roles, p->nroles + 1, sizeof(*p->roles), &failed);
  c->read = arena_dup(arena, p->read, n, sizeof(bool), &failed);
  c->write = arena_dup(arena, p->write, n, sizeof(bool), &failed);
  c->visible = arena_dup(arena, p->visible, n, sizeof(bool *), &failed);
  c->saved_queries =
      arena_dup(arena, p->saved_queries, p->nsaved_queries + 1, sizeof(*p->saved_queries), &failed);
  for (size_t i = 0; !failed && c->visible != NULL && i < cat->nmodels; i++)
    c->visible[i] =
        arena_dup(arena, p->visible[i], cat->models[i].nproperties + 1, sizeof(bool), &failed);
  if (failed || c->name == NULL)
    return DG_ENOMEM;
  *out = c;
  return 0;
}

int dg_auth_principal_for_user(const dg_catalog_t *cat, const char *user, dg_arena_t *arena,
                               const dg_principal_t **out) {
  const dg_user_t *u = dg_catalog_user(cat, user);
  if (u == NULL)
    return DG_ENOENT;
  return dg__auth_principal_new(cat, u->name, u->roles, u->nroles, arena, out);
}

/* ---- Checks ----------------------------------------------------------------- */

const char *dg_principal_name(const dg_principal_t *p) {
  return p->name;
}

bool dg_principal_has_role(const dg_principal_t *p, const char *role) {
  for (size_t i = 0; role != NULL && i < p->nroles; i++) {
    if (strcmp(p->roles[i]->name, role) == 0)
      return true;
  }
  return false;
}

bool dg_auth_can_administer(const dg_principal_t *p) {
  for (size_t i = 0; i < p->nroles; i++) {
    if (p->roles[i]->administration)
      return true;
  }
  return false;
}

size_t dg_principal_roles(const dg_principal_t *p, const dg_role_t *const **roles) {
  *roles = (const dg_role_t *const *)p->roles;
  return p->nroles;
}

/* A model of another snapshot is never readable: the indexes would lie. */
static bool own_model(const dg_principal_t *p, const dg_model_t *m) {
  return m != NULL && m->index < p->cat->nmodels && &p->cat->models[m->index] == m;
}

bool dg_auth_can_read_model(const dg_principal_t *p, const dg_model_t *model) {
  return own_model(p, model) && p->read[model->index];
}

bool dg_auth_can_see_property(const dg_principal_t *p, const dg_model_t *model,
                              const dg_property_t *prop) {
  if (!dg_auth_can_read_model(p, model) || prop == NULL || prop->index >= model->nproperties ||
      &model->properties[prop->index] != prop)
    return false;
  return p->visible[model->index][prop->index];
}

bool dg_auth_can_write_model(const dg_principal_t *p, const dg_model_t *model) {
  return own_model(p, model) && p->write[model->index];
}

bool dg_auth_can_use_saved_query(const dg_principal_t *p, const char *id, const char *name) {
  if (p->all_saved_queries)
    return true;
  for (size_t i = 0; i < p->nsaved_queries; i++) {
    const char *g = p->saved_queries[i];
    /* Ids are GUIDs and compare in any case; names compare exactly. */
    if ((id != NULL && strcasecmp(g, id) == 0) || (name != NULL && strcmp(g, name) == 0))
      return true;
  }
  return false;
}

bool dg_auth_can_use_file_source(const dg_principal_t *p, const dg_file_source_t *source) {
  if (source->roles_given) {
    for (size_t i = 0; i < source->nroles; i++) {
      if (dg_principal_has_role(p, source->roles[i]))
        return true;
    }
    return false;
  }
  for (size_t i = 0; i < p->cat->nmodels; i++) {
    const dg_model_t *m = &p->cat->models[i];
    if (dg_model_has_documents(m) && dg_auth_can_read_model(p, m))
      return true;
  }
  return false;
}
