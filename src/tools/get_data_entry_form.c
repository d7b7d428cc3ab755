/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* get_data_entry_form: the form that creates or modifies a record of a
 * Data Model, as an Adaptive Card 1.5 or as a JSON field list, prefilled
 * from initialValues (each key a field, each value of its type), from the
 * record when id names one (with the outcome of its last submission), and
 * from the fields' default values for a new record. A reference becomes a
 * choice among the related records when there are few of them, otherwise
 * a lookup: the related record's id, found with lookup_by_keyword. The
 * stages, in order: check the arguments, read the record and its last
 * submission, read the choices of each reference field, build the form. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/tools.h"
#include "tools/internal.h"

/* A reference with more related records than this is a lookup. */
#define MAX_REFERENCE_CHOICES 50
/* Lines of a child list shown with a record; more are left out (truncated). */
#define MAX_LINES 200

static const char input_schema[] =
    "{\"type\":\"object\",\"required\":[\"dataModelId\",\"format\"],"
    "\"additionalProperties\":false,\"properties\":{"
    "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\",\"description\":\"Identifier of "
    "a Data Model, from get_data_models\"},"
    "\"format\":{\"type\":\"string\",\"enum\":[\"AdaptiveCard\",\"Json\"],\"description\":"
    "\"AdaptiveCard (an Adaptive Card 1.5 for clients that render cards) or Json (a list of "
    "fields)\"},"
    "\"initialValues\":{\"type\":\"array\",\"maxItems\":256,\"description\":\"Values to prefill, "
    "each {key, value} as strings; key is a property name from get_data_model_properties\","
    "\"items\":{\"type\":\"object\",\"required\":[\"key\",\"value\"],"
    "\"additionalProperties\":false,\"properties\":{"
    "\"key\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":128},"
    "\"value\":{\"type\":\"string\",\"maxLength\":65536}}}},"
    "\"id\":{\"type\":\"string\",\"format\":\"uuid\",\"description\":\"A record to modify: the "
    "form is prefilled with its values; omit it for a new record\"},"
    "\"maxResultBytes\":" DG__TOOLS_BUDGET_SCHEMA "}}";

static const char output_schema[] =
    "{\"type\":\"object\",\"required\":[\"dataModelId\",\"name\",\"format\",\"formValues\"],"
    "\"properties\":{"
    "\"dataModelId\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"name\":{\"type\":\"string\"},"
    "\"format\":{\"type\":\"string\",\"enum\":[\"AdaptiveCard\",\"Json\"]},"
    "\"id\":{\"type\":\"string\",\"format\":\"uuid\"},"
    "\"fields\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"key\","
    "\"label\",\"type\",\"required\",\"value\"]}},"
    "\"card\":{\"type\":\"object\"},"
    "\"formValues\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"key\","
    "\"value\"],\"properties\":{\"key\":{\"type\":\"string\"},\"value\":{\"type\":\"string\"}}}},"
    "\"lastSubmission\":{\"type\":[\"object\",\"null\"]},"
    "\"childLists\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"list\","
    "\"dataModelId\",\"fields\",\"lines\"],\"properties\":{\"list\":{\"type\":\"string\"},"
    "\"dataModelId\":{\"type\":\"string\"},\"removable\":{\"type\":\"boolean\"},"
    "\"fields\":{\"type\":\"array\"},\"truncated\":{\"type\":\"boolean\"},"
    "\"lines\":{\"type\":\"array\",\"items\":{\"type\":\"object\",\"required\":[\"id\","
    "\"formValues\"]}}}}},"
    "\"instructions\":{\"type\":\"string\"},"
    "\"truncated\":{\"type\":\"boolean\"},"
    "\"omittedChoices\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}},"
    "\"omittedFields\":{\"type\":\"array\",\"items\":{\"type\":\"string\"}}}}";

static const char instructions[] =
    "Fill in the fields with the user, then call submit_data_entry_form with this dataModelId, "
    "the values as formValues [{key, value}] (key: the field's key; value: its text) and, to "
    "modify the record, its id. Lines of the record's childLists are changed in the same call: "
    "childLists [{list, changes: [{id, formValues}]}] modifies a line (only the given fields), "
    "a change without id adds one, {id, op: \"remove\"} removes one. Show the user what will "
    "be submitted and ask them to confirm first: submitting changes data in external systems.";

typedef enum form_stage {
  STAGE_RECORD,
  STAGE_SUBMISSION,
  STAGE_CHOICES,
  STAGE_LINES,
  STAGE_BUILD
} form_stage_t;

/* One form, in the call's arena. */
typedef struct form {
  dg_mcp_tool_call_t *call;
  dg_store_t *store;
  const dg_model_t *model;
  const char *id;
  bool card;
  dg_forms_value_t *initial;
  size_t ninitial;
  form_stage_t stage;
  size_t ref; /* the property whose choices are read next */
  json_t *record;
  json_t *last;
  json_t *choices;               /* property name -> [{title, value}] */
  const dg_endpoint_t *endpoint; /* the model's form endpoint, or NULL */
  size_t list;                   /* the child list whose lines are read next */
  json_t *lines;                 /* [{list, dataModelId, removable, fields, lines}] */
  dg_store_query_t q;
  dg_store_group_t group;
  dg_store_filter_t filter;
} form_t;

static void next(form_t *f);

static void keep(form_t *f, json_t *v) {
  dg_arena_defer(dg_mcp_tool_call_arena(f->call), (void (*)(void *))json_decref, v);
}

/* ---- Fields -------------------------------------------------------------------------------- */

static bool on_form(const dg_principal_t *p, const dg_model_t *m, const dg_property_t *prop) {
  return dg_forms_field(p, m, prop) && !prop->form.hidden;
}

static int by_sequence(const void *a, const void *b) {
  const dg_property_t *x = *(const dg_property_t *const *)a, *y = *(const dg_property_t *const *)b;
  if (x->form.sequence != y->form.sequence)
    return x->form.sequence < y->form.sequence ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

/* The value to show: given, else the record's, else the default for a new record. */
static const char *field_value(form_t *f, const dg_property_t *p, char *buf, size_t size) {
  for (size_t i = 0; i < f->ninitial; i++) {
    if (f->initial[i].prop == p)
      return dg_forms_text(f->initial[i].json, buf, size);
  }
  if (f->record != NULL)
    return dg_forms_text(json_object_get(f->record, p->name), buf, size);
  return p->form.default_value;
}

static json_t *string_choices(const dg_property_t *p) {
  json_t *list = json_array();
  for (size_t i = 0; list != NULL && i < p->nchoices; i++)
    json_array_append_new(list,
                          json_pack("{s:s,s:s}", "title", p->choices[i], "value", p->choices[i]));
  return list;
}

/* The target model's id, or NULL when there is none the caller may read. */
static const char *readable_target(form_t *f, const dg_property_t *p) {
  const dg_model_t *t = p->reference->target;
  return t != NULL && dg_auth_can_read_model(dg_mcp_tool_call_principal(f->call), t) ? t->id : NULL;
}

static json_t *field(form_t *f, const dg_property_t *p) {
  char buf[64];
  const char *value = field_value(f, p, buf, sizeof(buf));
  json_t *o = json_pack("{s:s,s:s,s:s,s:s,s:b,s:s?,s:s,s:s?}", "key", p->name, "label",
                        p->form.label, "type", dg_data_type_name(p->type), "control",
                        p->form.control, "required", p->required, "group", p->form.group,
                        "description", p->description ? p->description : "", "value", value);
  if (o == NULL)
    return NULL;
  json_t *choices = json_object_get(f->choices, p->name);
  if (p->nchoices > 0)
    json_object_set_new(o, "choices", string_choices(p));
  else if (choices != NULL)
    json_object_set(o, "choices", choices);
  else if (p->type == DG_TYPE_REFERENCE)
    json_object_set_new(o, "lookup",
                        json_pack("{s:s?,s:s?,s:s}", "targetDataModelId", readable_target(f, p),
                                  "targetEntityType", p->reference->target_entity_type, "hint",
                                  "the related record's id; find it with lookup_by_keyword"));
  return o;
}

static json_t *fields(form_t *f) {
  const dg_principal_t *p = dg_mcp_tool_call_principal(f->call);
  const dg_property_t **list =
      dg_arena_calloc(dg_mcp_tool_call_arena(f->call), f->model->nproperties + 1, sizeof(*list));
  json_t *out = json_array();
  if (list == NULL || out == NULL) {
    json_decref(out);
    return NULL;
  }
  size_t n = 0;
  for (size_t i = 0; i < f->model->nproperties; i++) {
    if (on_form(p, f->model, &f->model->properties[i]))
      list[n++] = &f->model->properties[i];
  }
  qsort(list, n, sizeof(*list), by_sequence);
  for (size_t i = 0; i < n; i++)
    json_array_append_new(out, field(f, list[i]));
  return out;
}

/* [{key, value}] of the fields that have a value: what to submit as is. */
static json_t *form_values(const json_t *list) {
  json_t *out = json_array();
  size_t i;
  json_t *fl;
  json_array_foreach(list, i, fl) {
    json_t *v = json_object_get(fl, "value");
    if (json_is_string(v))
      json_array_append_new(out,
                            json_pack("{s:O,s:O}", "key", json_object_get(fl, "key"), "value", v));
  }
  return out;
}

/* The form of the fields in list (stolen); NULL when out of memory. */
static json_t *form_of(form_t *f, json_t *list) {
  json_t *r =
      list ? json_pack("{s:s,s:s,s:s,s:o}", "dataModelId", f->model->id, "name", f->model->name,
                       "format", f->card ? "AdaptiveCard" : "Json", "formValues", form_values(list))
           : NULL;
  if (r == NULL) {
    json_decref(list);
    return NULL;
  }
  if (f->id != NULL)
    json_object_set_new(r, "id", json_string(f->id));
  if (f->id != NULL)
    json_object_set(r, "lastSubmission", f->last ? f->last : json_null());
  if (f->card)
    json_object_set_new(r, "card", dg_forms_card(f->model, list, f->id, f->lines));
  json_object_set(r, "childLists", f->lines);
  json_object_set_new(r, "fields", list);
  json_object_set_new(r, "instructions", json_string(instructions));
  return r;
}

/* Whether the form written out is over budget bytes. */
static bool over(const json_t *r, size_t budget) {
  dg_buf_t text;
  dg_buf_init(&text, budget);
  bool too_big = dg_json_write(r, &text) != 0;
  dg_buf_free(&text);
  return too_big;
}

/* Drops the longest list of related records; the field then asks for the
 * record's id instead. False when none is left. */
static bool drop_choices(form_t *f, json_t *omitted) {
  const char *key, *longest = NULL;
  json_t *v;
  json_object_foreach(f->choices, key, v) {
    if (longest == NULL ||
        json_array_size(v) > json_array_size(json_object_get(f->choices, longest)))
      longest = key;
  }
  if (longest == NULL)
    return false;
  json_array_append_new(omitted, json_string(longest));
  json_object_del(f->choices, longest);
  return true;
}

/* The form within budget: lists of related records are dropped first
 * (longest first), then whole fields from the end; what was left out is
 * named. */
static json_t *fitting_form(form_t *f, size_t budget) {
  json_t *r = form_of(f, fields(f));
  json_t *choices = json_array(), *dropped = json_array();
  while (r != NULL && over(r, budget) && drop_choices(f, choices)) {
    json_decref(r);
    r = form_of(f, fields(f));
  }
  while (r != NULL && over(r, budget) && json_array_size(json_object_get(r, "fields")) > 1) {
    json_t *list = json_deep_copy(json_object_get(r, "fields"));
    size_t last = json_array_size(list) - 1;
    json_array_append(dropped, json_object_get(json_array_get(list, last), "key"));
    json_array_remove(list, last);
    json_decref(r);
    r = form_of(f, list);
  }
  if (r != NULL && (json_array_size(choices) > 0 || json_array_size(dropped) > 0)) {
    json_object_set_new(r, "truncated", json_true());
    json_object_set(r, "omittedChoices", choices);
    json_object_set(r, "omittedFields", dropped);
  }
  json_decref(choices);
  json_decref(dropped);
  return r;
}

static void build(form_t *f) {
  size_t budget = dg__tools_budget(f->call);
  json_t *r = fitting_form(f, budget ? budget : dg_mcp_tool_call_result_limit(f->call));
  if (r == NULL) {
    dg_mcp_tool_call_failf(f->call, "The form could not be built: out of memory.");
    return;
  }
  dg_mcp_tool_call_succeed(f->call, r);
}

/* ---- Reading the record and the choices ---------------------------------------------------------
 */

static void on_record(int status, json_t *records, const dg_errctx_t *err, void *data) {
  form_t *f = data;
  json_t *values = json_object_get(json_array_get(records, 0), "values");
  if (status == 0 && values == NULL) {
    json_decref(records);
    dg_mcp_tool_call_failf(
        f->call,
        "Invalid argument 'id': there is no %s entity with id '%s'; leave id out "
        "for a new record.",
        f->model->name, f->id);
    return;
  }
  if (status != 0) {
    dg_mcp_tool_call_fail(f->call, err);
    return;
  }
  f->record = json_incref(values);
  keep(f, f->record);
  json_decref(records);
  f->stage = STAGE_SUBMISSION;
  next(f);
}

static void on_submission(int status, json_t *result, const dg_errctx_t *err, void *data) {
  form_t *f = data;
  if (status != 0) {
    dg_mcp_tool_call_fail(f->call, err);
    return;
  }
  keep(f, result);
  f->last = json_object_get(result, "submission");
  f->stage = STAGE_CHOICES;
  next(f);
}

static const dg_property_t *label_property(const dg_model_t *m) {
  for (size_t i = 0; i < m->nproperties; i++) {
    if (m->properties[i].keyword)
      return &m->properties[i];
  }
  for (size_t i = 0; i < m->nproperties; i++) {
    if (m->properties[i].type == DG_TYPE_STRING)
      return &m->properties[i];
  }
  return NULL;
}

static void on_choices(int status, json_t *list, const dg_errctx_t *err, void *data) {
  form_t *f = data;
  const dg_property_t *p = &f->model->properties[f->ref];
  const dg_property_t *label = label_property(p->reference->target);
  if (status == 0 && json_array_size(list) <= MAX_REFERENCE_CHOICES) {
    json_t *choices = json_array();
    size_t i;
    json_t *e;
    json_array_foreach(list, i, e) {
      json_t *values = json_object_get(e, "values");
      const char *title = label ? json_string_value(json_object_get(values, label->name)) : NULL;
      json_t *id = json_object_get(e, "id");
      json_array_append_new(choices, json_pack("{s:s,s:O}", "title",
                                               title ? title : json_string_value(id), "value", id));
    }
    json_object_set_new(f->choices, p->name, choices);
  }
  /* A store that cannot list them leaves the field a lookup. */
  json_decref(list);
  (void)err;
  f->ref++;
  next(f);
}

/* The first related records of a reference field, sorted by their label. */
static int read_choices(form_t *f, const dg_property_t *p, dg_errctx_t *err) {
  const dg_model_t *target = p->reference->target;
  dg_arena_t *arena = dg_mcp_tool_call_arena(f->call);
  const dg_property_t *label = label_property(target);
  const dg_property_t **props = dg_arena_calloc(arena, 2, sizeof(*props));
  if (props == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
  props[0] = label;
  memset(&f->q, 0, sizeof(f->q));
  f->q = (dg_store_query_t){.model = target,
                            .has_sort = label != NULL,
                            .sort = {.prop = label},
                            .page_number = 1,
                            .page_size = MAX_REFERENCE_CHOICES + 1,
                            .select = {.props = props, .nprops = label ? 1 : 0}};
  return dg_store_query_records(f->store, &f->q, on_choices, f, err);
}

/* The next reference field whose related records the caller may read. */
static const dg_property_t *next_reference(form_t *f) {
  const dg_principal_t *p = dg_mcp_tool_call_principal(f->call);
  for (; f->ref < f->model->nproperties; f->ref++) {
    const dg_property_t *prop = &f->model->properties[f->ref];
    if (prop->type == DG_TYPE_REFERENCE && on_form(p, f->model, prop) &&
        prop->reference->target != NULL && dg_auth_can_read_model(p, prop->reference->target))
      return prop;
  }
  return NULL;
}

/* ---- Lines of the child lists ------------------------------------------------------------- */

/* A line's form fields: those of its model's form but the reference to
 * this record, which the list implies. */
static bool line_field(const dg_principal_t *p, const dg_model_t *m, const dg_property_t *parent,
                       const dg_property_t *prop) {
  return prop != parent && on_form(p, m, prop);
}

static json_t *line_fields(form_t *f, const dg_model_t *m, const dg_property_t *parent) {
  const dg_principal_t *p = dg_mcp_tool_call_principal(f->call);
  json_t *out = json_array();
  for (size_t i = 0; out != NULL && i < m->nproperties; i++) {
    const dg_property_t *prop = &m->properties[i];
    if (line_field(p, m, parent, prop))
      json_array_append_new(out,
                            json_pack("{s:s,s:s,s:s,s:s,s:b,s:s}", "key", prop->name, "label",
                                      prop->form.label, "type", dg_data_type_name(prop->type),
                                      "control", prop->form.control, "required", prop->required,
                                      "description", prop->description ? prop->description : ""));
  }
  return out;
}

/* {id, formValues} of a stored line: what submit takes back. */
static json_t *line_json(form_t *f, const dg_model_t *m, const dg_property_t *parent,
                         const json_t *e) {
  const dg_principal_t *p = dg_mcp_tool_call_principal(f->call);
  const json_t *stored = json_object_get(e, "values");
  json_t *values = json_array();
  for (size_t i = 0; values != NULL && i < m->nproperties; i++) {
    const dg_property_t *prop = &m->properties[i];
    char buf[64];
    const char *text = line_field(p, m, parent, prop)
                           ? dg_forms_text(json_object_get(stored, prop->name), buf, sizeof(buf))
                           : NULL;
    if (text != NULL)
      json_array_append_new(values, json_pack("{s:s,s:s}", "key", prop->name, "value", text));
  }
  return json_pack("{s:O,s:o}", "id", json_object_get(e, "id"), "formValues", values);
}

static void on_lines(int status, json_t *records, const dg_errctx_t *err, void *data) {
  form_t *f = data;
  if (status != 0) {
    dg_mcp_tool_call_fail(f->call, err);
    return;
  }
  json_t *entry = json_array_get(f->lines, json_array_size(f->lines) - 1);
  json_t *lines = json_object_get(entry, "lines");
  const dg_model_t *m = f->q.model;
  size_t i;
  json_t *e;
  json_array_foreach(records, i, e) {
    if (i == MAX_LINES) {
      json_object_set_new(entry, "truncated", json_true());
      break;
    }
    json_array_append_new(lines, line_json(f, m, f->filter.prop, e));
  }
  json_decref(records);
  f->list++;
  next(f);
}

/* The next list of lines the caller may edit with the record, listed in
 * f->lines; its lines are read when the record exists. */
static int read_lines(form_t *f, const dg_property_t *prop, const dg_child_config_t *c,
                      dg_errctx_t *err) {
  const dg_model_t *m = prop->reference->target;
  const dg_property_t *parent = dg_model_property(m, prop->reference->inverse_property);
  bool removable = c->removable;
  json_t *entry = json_pack("{s:s,s:s,s:b,s:o,s:[]}", "list", prop->name, "dataModelId", m->id,
                            "removable", removable, "fields", line_fields(f, m, parent), "lines");
  if (entry == NULL || json_array_append_new(f->lines, entry) != 0)
    return dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
  if (f->id == NULL) {
    f->list++;
    next(f);
    return 0;
  }
  memset(&f->q, 0, sizeof(f->q));
  if (dg_forms_stored_select(m, dg_mcp_tool_call_arena(f->call), &f->q.select) != 0)
    return dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
  f->filter =
      (dg_store_filter_t){.op = DG_STORE_OP_EQ,
                          .model = m,
                          .prop = parent,
                          .value = {.kind = DG_STORE_TEXT, .text = f->id, .len = strlen(f->id)}};
  f->group = (dg_store_group_t){.filters = &f->filter, .nfilters = 1};
  f->q.model = m;
  f->q.filters = (dg_store_filters_t){.groups = &f->group, .ngroups = 1};
  f->q.has_sort = c != NULL && c->order_by != NULL;
  f->q.sort.prop = c ? c->order_by : NULL;
  f->q.page_number = 1;
  f->q.page_size = MAX_LINES + 1;
  return dg_store_query_records(f->store, &f->q, on_lines, f, err);
}

/* The next child list the caller may edit with the record, or NULL. */
static const dg_property_t *next_list(form_t *f, const dg_child_config_t **c) {
  const dg_principal_t *p = dg_mcp_tool_call_principal(f->call);
  for (; f->list < f->model->nproperties; f->list++) {
    const dg_property_t *prop = &f->model->properties[f->list];
    if (dg_forms_line_list(p, f->model, f->endpoint, prop, c) &&
        dg_auth_can_write_model(p, prop->reference->target))
      return prop;
  }
  return NULL;
}

/* Starts the next read, or builds the form when none is left. */
static void next(form_t *f) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = 0;
  const dg_child_config_t *c = NULL;
  if (f->stage == STAGE_RECORD && f->id == NULL)
    f->stage = STAGE_CHOICES;
  if (f->stage == STAGE_RECORD) {
    const char *ids[] = {f->id};
    rc = dg_store_read_records(f->store, f->model, ids, 1, on_record, f, &err);
  } else if (f->stage == STAGE_SUBMISSION) {
    dg_store_submission_get_t *g = dg_arena_calloc(dg_mcp_tool_call_arena(f->call), 1, sizeof(*g));
    if (g != NULL)
      *g = (dg_store_submission_get_t){.model = f->model, .entity_id = f->id};
    rc = g ? dg_store_submission(f->store, g, on_submission, f, NULL, &err) : DG_ENOMEM;
  } else if (f->stage == STAGE_CHOICES && next_reference(f) != NULL) {
    rc = read_choices(f, &f->model->properties[f->ref], &err);
  } else if (f->stage <= STAGE_LINES && next_list(f, &c) != NULL) {
    f->stage = STAGE_LINES;
    rc = read_lines(f, &f->model->properties[f->list], c, &err);
  } else {
    build(f);
    return;
  }
  if (rc != 0 && err.message[0] == '\0')
    dg_errctx_set(&err, rc, "", "The form could not be read: %s.", dg_strerror(rc));
  if (rc != 0)
    dg_mcp_tool_call_fail(f->call, &err);
}

/* ---- Stages ---------------------------------------------------------------------------------- */

static int check_args(form_t *f, dg_errctx_t *err) {
  json_t *args = dg_mcp_tool_call_args(f->call);
  const dg_principal_t *p = dg_mcp_tool_call_principal(f->call);
  dg_arena_t *arena = dg_mcp_tool_call_arena(f->call);
  f->model = dg_tools_model_arg(f->call, "dataModelId", err);
  if (f->model == NULL)
    return err->code;
  if (!dg_auth_can_write_model(p, f->model))
    return dg_errctx_set(err, DG_EPERM, "dataModelId",
                         "Invalid argument 'dataModelId': you may read %s records but not create "
                         "or modify them (none of your roles grants write access to '%s'), so "
                         "there is no form to fill in.",
                         f->model->name, f->model->name);
  f->card = strcmp(json_string_value(json_object_get(args, "format")), "AdaptiveCard") == 0;
  f->id = dg_forms_lower(arena, json_string_value(json_object_get(args, "id")));
  f->choices = json_object();
  f->lines = json_array();
  if (f->choices == NULL || f->lines == NULL) {
    json_decref(f->choices);
    json_decref(f->lines);
    return dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
  }
  keep(f, f->choices);
  keep(f, f->lines);
  f->endpoint = dg_catalog_form_endpoint(dg_mcp_tool_call_catalog(f->call), f->model);
  return dg_forms_values(p, f->model, json_object_get(args, "initialValues"), "initialValues",
                         arena, &f->initial, &f->ninitial, err);
}

static int start(dg_mcp_tool_call_t *call, void *state, dg_errctx_t *err) {
  form_t *f = state;
  f->call = call;
  int rc = check_args(f, err);
  if (rc != 0)
    return rc;
  f->store = dg__tools_store(call);
  if (f->store != NULL)
    next(f);
  return 0;
}

static void run(dg_mcp_tool_call_t *call) {
  dg__tools_start(call, sizeof(form_t), "The form could not be built", start);
}

const dg_tool_t dg_tool_get_data_entry_form = {
    .name = "get_data_entry_form",
    .title = "Get a data entry form",
    .description =
        "Returns the form that creates or modifies a record of a Data Model: format "
        "AdaptiveCard gives an Adaptive Card 1.5 (card) to show in clients that render cards, "
        "Json a list of fields (key, label, type, control, required, group, value, choices or "
        "lookup). Prefill it with initialValues [{key, value}] (keys from "
        "get_data_model_properties) and, to modify a record, its id (the form then holds the "
        "record's values and lastSubmission, the outcome of its last submission). A reference "
        "field lists the related records as choices, or asks for the related record's id "
        "(lookup: find it with lookup_by_keyword). childLists holds the record's lists of lines "
        "(an order's OrderLines) with each line's id and formValues, which "
        "submit_data_entry_form changes, adds and removes in the same call. formValues is what "
        "to send to submit_data_entry_form once the user has filled in and confirmed the form. "
        "A form over the size limit (or the smaller maxResultBytes you give) drops lists of "
        "related records first (those fields then take an id, found with lookup_by_keyword), "
        "then whole fields from the end, and says truncated: true with omittedChoices and "
        "omittedFields. Call get_data_models first.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    DG__TOOLS_READS_GATEWAY,
    .run = run,
};
