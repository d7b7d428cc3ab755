/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The lines of a record's child lists in a form: which lists a caller may
 * edit with a record (those its form endpoint saves through a child
 * configuration: a list is edited with its record because the record's
 * save carries it upstream; other Inbound references, such as a
 * product's order lines, stay out of the form), and
 * submit_data_entry_form's childLists checked as a whole into the store
 * changes written with the record: lines added (a new id, the reference
 * to the record set here), modified and removed. */
#include <stdio.h>
#include <string.h>

#include "datagate/forms.h"

/* ---- Which lists ---------------------------------------------------------------------- */

static const dg_child_config_t *config_of(const dg_endpoint_t *ep, const dg_property_t *list) {
  for (size_t i = 0; ep != NULL && i < ep->nchildren; i++) {
    if (ep->children[i].list == list)
      return &ep->children[i];
  }
  return NULL;
}

bool dg_forms_line_list(const dg_principal_t *p, const dg_model_t *m, const dg_endpoint_t *ep,
                        const dg_property_t *prop, const dg_child_config_t **config) {
  const dg_reference_t *ref = prop->reference;
  *config = NULL;
  if (ref == NULL || ref->direction != DG_REF_INBOUND || ref->target == NULL ||
      ref->inverse_property == NULL || !dg_auth_can_see_property(p, m, prop) ||
      !dg_auth_can_read_model(p, ref->target) ||
      dg_model_property(ref->target, ref->inverse_property) == NULL)
    return false;
  *config = config_of(ep, prop);
  return *config != NULL;
}

void dg_forms_line_list_names(const dg_principal_t *p, const dg_model_t *m, const dg_endpoint_t *ep,
                              char *out, size_t size) {
  size_t len = 0;
  const dg_child_config_t *c;
  out[0] = '\0';
  for (size_t i = 0; i < m->nproperties && len + 1 < size; i++) {
    if (!dg_forms_line_list(p, m, ep, &m->properties[i], &c))
      continue;
    int n = snprintf(out + len, size - len, "%s%s", len ? ", " : "", m->properties[i].name);
    len = n > 0 && (size_t)n < size - len ? len + (size_t)n : size - 1;
  }
  if (len == 0)
    snprintf(out, size, "none");
}

/* ---- Checking childLists ---------------------------------------------------------------- */

typedef struct check {
  const dg_principal_t *p;
  const dg_model_t *model;
  const dg_endpoint_t *ep;
  const char *parent_id; /* lower case */
  bool create;
  dg_arena_t *arena;
  dg_forms_lines_t *out;
  dg_errctx_t *err;
} check_t;

static int oom(check_t *c) {
  return dg_errctx_set(c->err, DG_ENOMEM, "childLists", "Out of memory while reading childLists.");
}

static int check_list_name(check_t *c, const json_t *item, size_t i, dg_forms_line_list_t *l) {
  const char *name = json_string_value(json_object_get(item, "list"));
  const dg_property_t *prop = dg_model_property(c->model, name);
  char lists[1024];
  dg_forms_line_list_names(c->p, c->model, c->ep, lists, sizeof(lists));
  if (prop == NULL || !dg_forms_line_list(c->p, c->model, c->ep, prop, &l->config))
    return dg_errctx_set(c->err, DG_EINVAL, "childLists",
                         "Invalid argument 'childLists[%zu].list': '%.128s' is not a list of "
                         "lines of the %s form%s%s; its lists are: %s.",
                         i, name, c->model->name, c->ep ? " saved by endpoint " : "",
                         c->ep ? c->ep->name : "", lists);
  l->list = prop;
  l->model = prop->reference->target;
  l->parent = dg_model_property(l->model, prop->reference->inverse_property);
  l->index = i;
  for (size_t j = 0; j < i; j++) {
    if (c->out->lists[j].list == prop)
      return dg_errctx_set(c->err, DG_EINVAL, "childLists",
                           "Invalid argument 'childLists[%zu].list': '%s' is given twice (also "
                           "childLists[%zu]); give all the changes of a list in one entry.",
                           i, prop->name, j);
  }
  if (!dg_auth_can_write_model(c->p, l->model))
    return dg_errctx_set(c->err, DG_EPERM, "childLists",
                         "Invalid argument 'childLists[%zu].list': you may read %s records but "
                         "not create, modify or remove them (none of your roles grants write "
                         "access to '%s'); leave childLists out to save the %s record alone.",
                         i, l->model->name, l->model->name, c->model->name);
  return 0;
}

/* add without id, update or remove with one; the default follows the id. */
static int change_op(check_t *c, const json_t *change, const char *at, const char *id,
                     const char **op) {
  *op = json_string_value(json_object_get(change, "op"));
  if (*op == NULL)
    *op = id ? "update" : "add";
  if (strcmp(*op, "add") == 0 && id != NULL)
    return dg_errctx_set(c->err, DG_EINVAL, at,
                         "Invalid argument '%s.id': an added line gets its id from the gateway; "
                         "leave id out with op \"add\", or give op \"update\" to modify line '%s'.",
                         at, id);
  if (strcmp(*op, "add") != 0 && id == NULL)
    return dg_errctx_set(c->err, DG_EINVAL, at,
                         "Invalid argument '%s.id': op \"%s\" needs the id of the line (from "
                         "get_data_entry_form); leave op out or give \"add\" for a new line.",
                         at, *op);
  if (strcmp(*op, "add") != 0 && c->create)
    return dg_errctx_set(c->err, DG_EINVAL, at,
                         "Invalid argument '%s.op': \"%s\" is not possible while the %s record is "
                         "created (it has no lines yet); allowed: \"add\".",
                         at, *op, c->model->name);
  return 0;
}

static bool has_value(const dg_forms_value_t *v) {
  return v->value.kind != DG_STORE_NULL && !(v->value.kind == DG_STORE_TEXT && v->value.len == 0);
}

/* The line's values: checked, the reference to the record never given,
 * defaults and required fields for an added one, none cleared otherwise. */
static int line_values(check_t *c, dg_forms_line_list_t *l, const json_t *change, const char *at,
                       bool add, dg_forms_value_t **all, size_t *n) {
  char param[160];
  snprintf(param, sizeof(param), "%s.formValues", at);
  dg_forms_value_t *vals = NULL;
  int rc = dg_forms_values(c->p, l->model, json_object_get(change, "formValues"), param, c->arena,
                           &vals, n, c->err);
  if (rc != 0)
    return rc;
  for (size_t k = 0; k < *n; k++) {
    if (vals[k].prop == l->parent)
      return dg_errctx_set(c->err, DG_EINVAL, vals[k].param,
                           "Invalid argument '%s[%zu].key': '%s' is set by the call (the line "
                           "belongs to the submitted %s record); leave it out.",
                           param, k, l->parent->name, c->model->name);
  }
  *all = dg_arena_calloc(c->arena, *n + l->model->nproperties + 2, sizeof(**all));
  if (*all == NULL)
    return oom(c);
  memcpy(*all, vals, *n * sizeof(**all));
  if (add)
    return dg_forms_defaults(c->p, l->model, l->parent, *all, n, param, c->arena, c->err);
  for (size_t k = 0; k < *n; k++) {
    if ((*all)[k].prop->required && !has_value(&(*all)[k]))
      return dg_errctx_set(c->err, DG_EINVAL, (*all)[k].param,
                           "Invalid argument '%s': '%s' is required and cannot be cleared; give "
                           "a value, or remove the line with op \"remove\".",
                           (*all)[k].param, (*all)[k].prop->name);
  }
  return 0;
}

static int add_ref_checks(check_t *c, const dg_forms_value_t *all, size_t n) {
  dg_forms_lines_t *o = c->out;
  for (size_t k = 0; k < n; k++) {
    const dg_property_t *p = all[k].prop;
    if (p->type != DG_TYPE_REFERENCE || p->reference->target == NULL || !has_value(&all[k]))
      continue;
    if (o->nrefs == o->maxrefs)
      return oom(c);
    o->refs[o->nrefs++] =
        (dg_store_ref_check_t){p->reference->target, all[k].value.text, all[k].param};
  }
  return 0;
}

/* The store change of one line. */
static int line_write(check_t *c, dg_forms_line_list_t *l, const char *id, const char *op,
                      dg_forms_value_t *all, size_t n, const char *at) {
  bool add = strcmp(op, "add") == 0;
  dg_store_child_change_t *w = &c->out->changes[c->out->nchanges];
  const dg_property_t **props = dg_arena_calloc(c->arena, n + 2, sizeof(*props));
  dg_store_value_t *values = dg_arena_calloc(c->arena, n + 2, sizeof(*values));
  char *line_id = add ? dg_arena_alloc(c->arena, DG_UUID_LEN + 1) : dg_forms_lower(c->arena, id);
  if (props == NULL || values == NULL || line_id == NULL)
    return oom(c);
  if (add)
    dg_uuid_v4(line_id);
  for (size_t k = 0; k < n; k++) {
    props[k] = all[k].prop;
    values[k] = all[k].value;
  }
  if (add) {
    props[n] = l->parent;
    values[n] = (dg_store_value_t){
        .kind = DG_STORE_TEXT, .text = c->parent_id, .len = strlen(c->parent_id)};
    n++;
  }
  *w = (dg_store_child_change_t){.write = {.model = l->model,
                                           .mode = add ? DG_STORE_CREATE : DG_STORE_UPDATE,
                                           .id = line_id,
                                           .props = props,
                                           .values = values,
                                           .nvalues = n},
                                 .remove = strcmp(op, "remove") == 0,
                                 .parent = l->parent,
                                 .param = dg_arena_sprintf(c->arena, "%s.id", at)};
  c->out->nchanges++;
  json_t *ids = add ? l->added : w->remove ? l->removed : l->updated;
  if (w->param == NULL || json_array_append_new(ids, json_string(line_id)) != 0 ||
      json_object_set_new(l->ops, line_id, json_string(op)) != 0)
    return oom(c);
  return 0;
}

static int check_change(check_t *c, dg_forms_line_list_t *l, const json_t *change, size_t j) {
  char at[96];
  snprintf(at, sizeof(at), "childLists[%zu].changes[%zu]", l->index, j);
  const char *given = json_string_value(json_object_get(change, "id"));
  const char *op = NULL;
  int rc = change_op(c, change, at, given, &op);
  if (rc != 0)
    return rc;
  char *id = dg_forms_lower(c->arena, given);
  if (id != NULL && json_object_get(l->ops, id) != NULL)
    return dg_errctx_set(c->err, DG_EINVAL, at,
                         "Invalid argument '%s.id': line '%s' is given twice in childLists[%zu]; "
                         "give each line once.",
                         at, id, l->index);
  if (strcmp(op, "remove") == 0 && json_array_size(json_object_get(change, "formValues")) > 0)
    return dg_errctx_set(c->err, DG_EINVAL, at,
                         "Invalid argument '%s.formValues': a removed line takes no values; "
                         "leave formValues out with op \"remove\".",
                         at);
  if (strcmp(op, "remove") == 0 && l->config != NULL && !l->config->removable)
    return dg_errctx_set(c->err, DG_EINVAL, at,
                         "Invalid argument '%s.op': endpoint %s cannot carry a removed %s line "
                         "to the external system (its child configuration for %s has no "
                         "removeEndpoint or removeValues); allowed here: \"add\", \"update\".",
                         at, c->ep->name, l->list->name, l->list->name);
  dg_forms_value_t *all = NULL;
  size_t n = 0;
  rc = line_values(c, l, change, at, strcmp(op, "add") == 0, &all, &n);
  if (rc == 0)
    rc = add_ref_checks(c, all, n);
  return rc == 0 ? line_write(c, l, id, op, all, n, at) : rc;
}

static int check_list(check_t *c, const json_t *item, size_t i) {
  dg_forms_line_list_t *l = &c->out->lists[i];
  int rc = check_list_name(c, item, i, l);
  if (rc != 0)
    return rc;
  const json_t *changes = json_object_get(item, "changes");
  size_t j;
  json_t *change;
  json_array_foreach(changes, j, change) {
    rc = check_change(c, l, change, j);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static json_t *kept(dg_arena_t *arena, json_t *a) {
  if (a != NULL && dg_arena_defer(arena, (void (*)(void *))json_decref, a) != 0) {
    json_decref(a);
    return NULL;
  }
  return a;
}

/* Room for every list, change and reference value of the argument. */
static int reserve(check_t *c, const json_t *lists) {
  size_t nchanges = 0, nvalues = 0, i;
  json_t *item;
  json_array_foreach(lists, i, item) {
    /* An added line's defaults may name references too. */
    const dg_property_t *list =
        dg_model_property(c->model, json_string_value(json_object_get(item, "list")));
    size_t defaults = list && list->reference && list->reference->target
                          ? list->reference->target->nproperties
                          : 0;
    size_t j;
    json_t *change;
    json_array_foreach(json_object_get(item, "changes"), j, change) {
      nchanges++;
      nvalues += json_array_size(json_object_get(change, "formValues"));
      nvalues += json_object_get(change, "id") == NULL ? defaults : 0;
    }
  }
  dg_forms_lines_t *o = c->out;
  o->lists = dg_arena_calloc(c->arena, json_array_size(lists) + 1, sizeof(*o->lists));
  o->changes = dg_arena_calloc(c->arena, nchanges + 1, sizeof(*o->changes));
  o->maxrefs = nvalues + 1;
  o->refs = dg_arena_calloc(c->arena, o->maxrefs, sizeof(*o->refs));
  if (o->lists == NULL || o->changes == NULL || o->refs == NULL)
    return oom(c);
  for (i = 0; i < json_array_size(lists); i++) {
    dg_forms_line_list_t *l = &o->lists[i];
    l->added = kept(c->arena, json_array());
    l->updated = kept(c->arena, json_array());
    l->removed = kept(c->arena, json_array());
    l->ops = kept(c->arena, json_object());
    if (l->added == NULL || l->updated == NULL || l->removed == NULL || l->ops == NULL)
      return oom(c);
  }
  return 0;
}

int dg_forms_check_lines(const dg_forms_lines_req_t *req, dg_arena_t *arena, dg_forms_lines_t *out,
                         dg_errctx_t *err) {
  check_t c = {.p = req->principal,
               .model = req->model,
               .ep = req->endpoint,
               .parent_id = req->parent_id,
               .create = req->create,
               .arena = arena,
               .out = out,
               .err = err};
  memset(out, 0, sizeof(*out));
  int rc = reserve(&c, req->lists);
  size_t i;
  json_t *item;
  json_array_foreach(req->lists, i, item) {
    if (rc == 0)
      rc = check_list(&c, item, i);
    if (rc == 0)
      out->nlists = i + 1;
  }
  return rc;
}

json_t *dg_forms_lines_json(const dg_forms_lines_t *lines) {
  json_t *out = json_array();
  for (size_t i = 0; out != NULL && i < lines->nlists; i++) {
    const dg_forms_line_list_t *l = &lines->lists[i];
    json_array_append_new(out, json_pack("{s:s,s:O,s:O,s:O}", "list", l->list->name, "added",
                                         l->added, "updated", l->updated, "removed", l->removed));
  }
  return out;
}
