/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* endpoints.json, the second pass: every {SESSION:Name} must name a value
 * that an earlier action of the same run produces, every
 * {SESSION:Reference.Name} a value the parent's run extracts before its
 * child saves, every {Reference.Name} a record that is at hand, and no
 * {Name} may read a property that this run extracts only later (it has no
 * value until then). What reaches an action
 * depends on where its endpoint runs: on its own (forms), or as the child
 * save of a parent's list, which adds the values the parent's collection
 * and Multiple Lists extractions set for that list. Each place an endpoint
 * runs is checked separately, and a problem names it. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "catalog/internal.h"
#include "datagate/text.h"

#define MAX_NAMES (DG__CATALOG_MAX_ACTIONS * DG__CATALOG_MAX_EXTRACTIONS)

/* Where an endpoint runs: parent NULL for on its own. */
typedef struct place {
  const dg__catalog_endpoint_t *parent;
  const dg_child_config_t *via;
  const char *inherited[MAX_NAMES]; /* values the parent sets on each child */
  size_t ninherited;
} place_t;

typedef struct scope {
  dg__cfg_t *cfg;
  const dg__catalog_endpoint_t *ep;
  const place_t *place;
  const char *produced[MAX_NAMES]; /* header-level values of earlier actions */
  size_t nproduced;
} scope_t;

static bool has_name(const char *const *names, size_t n, const char *name) {
  for (size_t i = 0; i < n; i++) {
    if (strcmp(names[i], name) == 0)
      return true;
  }
  return false;
}

static void add_name(const char **names, size_t *n, const char *name) {
  if (*n < MAX_NAMES && !has_name(names, *n, name))
    names[(*n)++] = name;
}

/* "A, B" of what reaches the action, or "none". */
static const char *available(scope_t *s) {
  const char *all[2 * MAX_NAMES];
  size_t n = 0;
  for (size_t i = 0; i < s->nproduced; i++)
    add_name(all, &n, s->produced[i]);
  for (size_t i = 0; i < s->place->ninherited; i++)
    add_name(all, &n, s->place->inherited[i]);
  return n > 0 ? dg__cfg_join(s->cfg, all, n) : "none";
}

static const char *where(scope_t *s) {
  const place_t *p = s->place;
  if (p->parent == NULL)
    return dg_arena_sprintf(s->cfg->arena, "when '%s' runs on its own", s->ep->e.name);
  return dg_arena_sprintf(s->cfg->arena, "when '%s' saves each record of its list '%s'",
                          p->parent->e.name, p->via->list->name);
}

/* A hint for a name that does not reach the action but exists elsewhere in
 * the endpoint: produced later, or a value of the children. */
static const char *hint(scope_t *s, const char *name) {
  const dg_endpoint_t *e = &s->ep->e;
  for (size_t i = 0; i < e->nsteps; i++) {
    const dg_action_t *a = e->steps[i];
    for (size_t j = 0; j < a->nextractions; j++) {
      const dg_extraction_t *x = &a->extractions[j];
      if (x->model_property == NULL || strcmp(x->model_property->name, name) != 0)
        continue;
      if (x->kind != DG_EXTRACT_BASIC)
        return dg_arena_sprintf(s->cfg->arena,
                                "; '%s' is a value of each '%s' child, which only the child "
                                "saves can use",
                                name, x->target_list ? x->target_list->name : "?");
      return dg_arena_sprintf(s->cfg->arena, "; '%s' is produced later, by '%s' (%s)", name,
                              a->title, a->path);
    }
  }
  return "";
}

/* The basic extraction of e's steps [from, to) that writes prop, or NULL;
 * *action gets its action. */
static const dg_extraction_t *basic_writer(const dg_endpoint_t *e, size_t from, size_t to,
                                           const dg_property_t *prop, const dg_action_t **action) {
  for (size_t i = from; prop != NULL && i < to && i < e->nsteps; i++) {
    for (size_t j = 0; j < e->steps[i]->nextractions; j++) {
      const dg_extraction_t *x = &e->steps[i]->extractions[j];
      if (x->kind == DG_EXTRACT_BASIC && x->model_property == prop) {
        *action = e->steps[i];
        return x;
      }
    }
  }
  return NULL;
}

/* The parent record's name in {Reference.Name}: whether the reference is
 * the one the parent's list is made of (reported otherwise). */
static bool check_reference(scope_t *s, const char *pre, const char *name, const char *path);

/* {SESSION:Reference.Name}: a value the parent's run extracted (a basic
 * extraction) before its child saves start. */
static void check_parent_session(scope_t *s, const char *name, const char *path) {
  const place_t *p = s->place;
  if (!check_reference(s, "SESSION:", name, path))
    return;
  const char *field = strchr(name, '.') + 1;
  const dg_endpoint_t *pe = &p->parent->e;
  const dg_property_t *prop = dg_model_property(pe->model, field);
  const dg_action_t *a = NULL;
  if (basic_writer(pe, 0, pe->first_post, prop, &a) != NULL)
    return;
  if (basic_writer(pe, pe->first_post, pe->nsteps, prop, &a) != NULL)
    dg__cfg_error(s->cfg, path,
                  "{SESSION:%s}: %s, '%s' is extracted by '%s' (%s), which runs after the child "
                  "saves; a child can read only what its parent extracted before them",
                  name, where(s), field, a->title, a->path);
  else
    dg__cfg_error(s->cfg, path,
                  "{SESSION:%s}: %s, no action of '%s' extracts '%s' as a header value; "
                  "{SESSION:Reference.Name} reads what the parent's run extracted",
                  name, where(s), pe->name, field);
}

static void check_session(scope_t *s, const char *name, const char *path) {
  if (strchr(name, '.') != NULL) {
    check_parent_session(s, name, path);
    return;
  }
  if (has_name(s->produced, s->nproduced, name) ||
      has_name(s->place->inherited, s->place->ninherited, name))
    return;
  dg__cfg_error(s->cfg, path,
                "{SESSION:%s}: no earlier action produces this session value %s (available "
                "here: %s)%s",
                name, where(s), available(s), hint(s, name));
}

/* {Reference.Name} reads the parent record: the reference must be the one
 * the parent's list is made of. */
static bool check_reference(scope_t *s, const char *pre, const char *name, const char *path) {
  const place_t *p = s->place;
  size_t n = (size_t)(strchr(name, '.') - name);
  const char *inverse = p->via ? p->via->list->reference->inverse_property : NULL;
  if (inverse != NULL && strlen(inverse) == n && strncasecmp(inverse, name, n) == 0)
    return true;
  if (p->parent == NULL)
    dg__cfg_error(s->cfg, path,
                  "{%s%s}: the record of '%.*s' is at hand only in child saves, where it is the "
                  "parent; '%s' also runs on its own (formSubmit, or no parent saves it as a "
                  "child), where the value would be missing",
                  pre, name, (int)n, name, s->ep->e.name);
  else
    dg__cfg_error(s->cfg, path, "{%s%s}: %s, the parent record is reached through '%s', not '%.*s'",
                  pre, name, where(s), inverse ? inverse : "?", (int)n, name);
  return false;
}

/* A property that an extraction of the run writes has no value in the run
 * before that extraction (what an earlier run stored is never read), so a
 * placeholder that reads it earlier would always fail. */
static void check_run_value(scope_t *s, const char *name, const char *path) {
  const place_t *p = s->place;
  const char *dot = strchr(name, '.');
  const dg_endpoint_t *e = dot ? (p->parent ? &p->parent->e : NULL) : &s->ep->e;
  if (e == NULL)
    return;
  const dg_property_t *prop = dg_model_property(e->model, dot ? dot + 1 : name);
  const dg_action_t *a = NULL;
  if (prop == NULL || basic_writer(e, 0, e->nsteps, prop, &a) == NULL)
    return;
  if (dot == NULL && has_name(s->produced, s->nproduced, prop->name))
    return;
  if (dot != NULL && a->step < e->first_post)
    return;
  dg__cfg_error(s->cfg, path,
                "{%s}: %s, '%s' has no value yet: this run sets it only later, by '%s' (%s), "
                "and a value an earlier run stored is never read",
                name, where(s), prop->name, a->title, a->path);
}

static void check_template(scope_t *s, const dg_template_t *t, const char *path) {
  for (size_t j = 0; t != NULL && j < dg_template_nvars(t); j++) {
    const dg_template_var_t *v = dg_template_var(t, j);
    if (v->session)
      check_session(s, v->name, path);
    else if (strchr(v->name, '.') == NULL || check_reference(s, "", v->name, path))
      check_run_value(s, v->name, path);
  }
}

/* Each template of a save action, at the JSON pointer it was read from. */
static void check_action(scope_t *s, const dg_action_t *a) {
  const dg_saved_request_t *r = &a->request;
  char at[DG__CFG_PATH_MAX], base[DG__CFG_PATH_MAX];
  dg__cfg_path_key(base, a->path, "request");
  dg__cfg_path_key(at, base, "path");
  check_template(s, r->path, at);
  for (size_t i = 0; i < r->nquery; i++) {
    dg__cfg_path_key(at, base, "query");
    dg__cfg_path_key(at, at, r->query[i].name);
    check_template(s, r->query[i].value, at);
  }
  for (size_t i = 0; i < r->nheaders; i++) {
    dg__cfg_path_key(at, base, "headers");
    dg__cfg_path_key(at, at, r->headers[i].name);
    check_template(s, r->headers[i].value, at);
  }
  dg__cfg_path_key(at, base, "body");
  check_template(s, r->body, at);
  dg__cfg_path_key(at, base, "graphql");
  dg__cfg_path_key(at, at, "variables");
  check_template(s, r->graphql_variables, at);
  for (size_t i = 0; i < a->nmappings; i++) {
    dg__cfg_path_key(at, base, "mappings");
    dg__cfg_path_index(at, at, i);
    dg__cfg_path_key(at, at, "value");
    check_template(s, a->mappings[i].value, at);
  }
}

static void produce(scope_t *s, const dg_action_t *a) {
  for (size_t i = 0; i < a->nextractions; i++) {
    const dg_extraction_t *x = &a->extractions[i];
    if (x->kind == DG_EXTRACT_BASIC && x->model_property != NULL)
      add_name(s->produced, &s->nproduced, x->model_property->name);
  }
}

static void check_place(dg__cfg_t *cfg, const dg__catalog_endpoint_t *ep, const place_t *place) {
  scope_t *s = dg_arena_calloc(cfg->arena, 1, sizeof(*s));
  if (s == NULL) {
    cfg->oom = true;
    return;
  }
  *s = (scope_t){.cfg = cfg, .ep = ep, .place = place};
  for (size_t i = 0; i < ep->e.nsteps; i++) {
    const dg_action_t *a = ep->e.steps[i];
    if (a->type == DG_ACTION_ENDPOINT_SAVE)
      check_action(s, a);
    else
      produce(s, a);
  }
}

/* The values parent's pre-child extractions set on each record of via's list. */
static void inherit(place_t *p, const dg__catalog_endpoint_t *parent,
                    const dg_child_config_t *via) {
  for (size_t i = 0; i < parent->e.first_post; i++) {
    const dg_action_t *a = parent->e.steps[i];
    for (size_t j = 0; j < a->nextractions; j++) {
      const dg_extraction_t *x = &a->extractions[j];
      if (x->kind != DG_EXTRACT_BASIC && x->target_list == via->list && x->model_property)
        add_name(p->inherited, &p->ninherited, x->model_property->name);
    }
  }
}

/* Checks ep as the child save of every list that names it; returns
 * whether any does. */
static bool check_as_child(dg__cfg_t *cfg, const dg__catalog_endpoint_t *list, size_t n,
                           const dg__catalog_endpoint_t *ep, place_t *place) {
  bool child = false;
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < list[i].e.nchildren; j++) {
      const dg_child_config_t *c = &list[i].e.children[j];
      if (c->endpoint != &ep->e && c->add_endpoint != &ep->e && c->remove_endpoint != &ep->e)
        continue;
      child = true;
      if (list[i].broken)
        continue;
      memset(place, 0, sizeof(*place));
      place->parent = &list[i];
      place->via = c;
      inherit(place, &list[i], c);
      check_place(cfg, ep, place);
    }
  }
  return child;
}

void dg__catalog_check_endpoint_scopes(dg__cfg_t *cfg, const dg__catalog_endpoint_t *list,
                                       size_t n) {
  place_t *place = dg_arena_calloc(cfg->arena, 1, sizeof(*place));
  if (place == NULL) {
    cfg->oom = true;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    const dg__catalog_endpoint_t *ep = &list[i];
    if (ep->broken)
      continue;
    bool child = check_as_child(cfg, list, n, ep, place);
    if (ep->e.form_submit || !child) {
      memset(place, 0, sizeof(*place));
      check_place(cfg, ep, place);
    }
  }
}

/* ---- The property picker's Session Values ---------------------------------- */

/* One value as the picker offers it: its name, the placeholder to insert,
 * where it comes from and which action sets it. */
static int push_value(json_t *values, const char *name, const char *insert, const char *origin,
                      const dg_action_t *by) {
  size_t n = json_array_size(values);
  for (size_t i = 0; i < n; i++) {
    if (strcmp(json_string_value(json_object_get(json_array_get(values, i), "insert")), insert) ==
        0)
      return 0;
  }
  json_t *v = json_pack("{s:s,s:s,s:s,s:s,s:s}", "name", name, "insert", insert, "origin", origin,
                        "setBy", by->title ? by->title : "", "setByPath", by->path ? by->path : "");
  return v != NULL && json_array_append_new(values, v) == 0 ? 0 : DG_ENOMEM;
}

static int add_placeholder(json_t *values, const char *prefix, const char *name, const char *origin,
                           const dg_action_t *by) {
  char insert[512];
  snprintf(insert, sizeof(insert), "{%s%s}", prefix, name);
  return push_value(values, name, insert, origin, by);
}

/* What the parent of a child save hands over: the values its pre-child
 * collection and Multiple Lists extractions set on each record of the
 * list (as {SESSION:Name}), and its header values, which the child reads
 * from the parent record through the list's reference ({Parent.Name}). */
static int place_values(json_t *values, const dg_endpoint_t *parent, const dg_child_config_t *via) {
  const char *inverse = via->list->reference ? via->list->reference->inverse_property : NULL;
  int rc = 0;
  for (size_t i = 0; i < parent->first_post && rc == 0; i++) {
    const dg_action_t *a = parent->steps[i];
    for (size_t j = 0; j < a->nextractions && rc == 0; j++) {
      const dg_extraction_t *x = &a->extractions[j];
      if (x->model_property == NULL)
        continue;
      if (x->kind != DG_EXTRACT_BASIC && x->target_list == via->list) {
        rc = add_placeholder(values, "SESSION:", x->model_property->name, "parentList", a);
      } else if (x->kind == DG_EXTRACT_BASIC && inverse != NULL) {
        char prefix[256];
        snprintf(prefix, sizeof(prefix), "SESSION:%s.", inverse);
        rc = add_placeholder(values, prefix, x->model_property->name, "parentHeader", a);
      }
    }
  }
  return rc;
}

/* The header values of e's actions that run before step. */
static int own_values(json_t *values, const dg_endpoint_t *e, size_t step) {
  int rc = 0;
  for (size_t i = 0; i < step && rc == 0; i++) {
    const dg_action_t *a = e->steps[i];
    for (size_t j = 0; j < a->nextractions && rc == 0; j++) {
      const dg_extraction_t *x = &a->extractions[j];
      if (x->kind == DG_EXTRACT_BASIC && x->model_property != NULL)
        rc = add_placeholder(values, "SESSION:", x->model_property->name, "header", a);
    }
  }
  return rc;
}

static json_t *place_json(const dg_endpoint_t *e, const dg_endpoint_t *parent,
                          const dg_child_config_t *via) {
  json_t *steps = json_array();
  json_t *place = json_pack("{s:s?,s:s?,s:o}", "parent", parent ? parent->name : NULL, "list",
                            via ? via->list->name : NULL, "steps", steps);
  if (place == NULL)
    return NULL;
  for (size_t i = 0; i < e->nsteps; i++) {
    const dg_action_t *a = e->steps[i];
    json_t *values = json_array();
    json_t *step = json_pack("{s:s,s:s,s:o}", "path", a->path ? a->path : "", "title",
                             a->title ? a->title : "", "sessionValues", values);
    if (step == NULL || json_array_append_new(steps, step) != 0 ||
        (via != NULL && place_values(values, parent, via) != 0) || own_values(values, e, i) != 0) {
      json_decref(place);
      return NULL;
    }
  }
  return place;
}

static int append_place(json_t *places, const dg_endpoint_t *e, const dg_endpoint_t *parent,
                        const dg_child_config_t *via) {
  json_t *p = place_json(e, parent, via);
  return p != NULL && json_array_append_new(places, p) == 0 ? 0 : DG_ENOMEM;
}

json_t *dg_catalog_endpoint_scope(const dg_catalog_t *cat, const dg_endpoint_t *e) {
  json_t *places = json_array();
  json_t *out = json_pack("{s:s,s:o}", "endpoint", e->name, "places", places);
  bool child = false;
  int rc = out != NULL ? 0 : DG_ENOMEM;
  for (size_t i = 0; i < cat->nendpoints && rc == 0; i++) {
    for (size_t j = 0; j < cat->endpoints[i].nchildren && rc == 0; j++) {
      const dg_child_config_t *c = &cat->endpoints[i].children[j];
      if (c->endpoint != e && c->add_endpoint != e && c->remove_endpoint != e)
        continue;
      child = true;
      rc = append_place(places, e, &cat->endpoints[i], c);
    }
  }
  if (rc == 0 && (e->form_submit || !child))
    rc = append_place(places, e, NULL, NULL);
  if (rc != 0) {
    json_decref(out);
    return NULL;
  }
  return out;
}
