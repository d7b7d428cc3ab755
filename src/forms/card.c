/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* A data entry form as an Adaptive Card 1.5: a heading, the fields in
 * their groups (each group a Container under its heading), one input per
 * field with its label, required flag and error message, and an
 * Action.Submit whose data names the Data Model (and the record). The
 * input follows the field: Input.ChoiceSet for enumerated values and for
 * references with few related records (filtered), Input.Number for
 * numbers, Input.Toggle for booleans, Input.Date for dates, Input.Text
 * with a pattern for date-times, GUIDs and references to look up, and
 * Input.Text (multiline when the form says so) for text. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/forms.h"

#define GUID_REGEX "^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
#define DATETIME_REGEX                                                                             \
  "^\\d{4}-\\d{2}-\\d{2}T\\d{2}:\\d{2}(:\\d{2}(\\.\\d+)?)?(Z|[+-]\\d{2}:\\d{2})?$"

static const char *str(const json_t *o, const char *key) {
  return json_string_value(json_object_get(o, key));
}

static json_t *input(const char *type, const json_t *f) {
  const char *label = str(f, "label");
  bool required = json_is_true(json_object_get(f, "required"));
  return json_pack("{s:s,s:O,s:s,s:b}", "type", type, "id", json_object_get(f, "key"), "label",
                   label, "isRequired", required);
}

static void set_error(json_t *in, const char *label, const char *what) {
  char message[256];
  snprintf(message, sizeof(message), "%s: enter %s.", label, what);
  json_object_set_new(in, "errorMessage", json_string(message));
}

static json_t *choice_set(const json_t *f, const char *style) {
  json_t *in = input("Input.ChoiceSet", f);
  json_object_set_new(in, "style", json_string(style));
  json_object_set(in, "choices", json_object_get(f, "choices"));
  if (str(f, "value") != NULL)
    json_object_set(in, "value", json_object_get(f, "value"));
  set_error(in, str(f, "label"), "one of the choices");
  return in;
}

static json_t *text_input(const json_t *f, const char *regex, const char *placeholder,
                          const char *what) {
  json_t *in = input("Input.Text", f);
  if (regex != NULL)
    json_object_set_new(in, "regex", json_string(regex));
  if (placeholder != NULL)
    json_object_set_new(in, "placeholder", json_string(placeholder));
  if (strcmp(str(f, "control"), "multiline") == 0)
    json_object_set_new(in, "isMultiline", json_true());
  if (str(f, "value") != NULL)
    json_object_set(in, "value", json_object_get(f, "value"));
  set_error(in, str(f, "label"), what);
  return in;
}

static json_t *number_input(const json_t *f, bool whole) {
  json_t *in = input("Input.Number", f);
  const char *value = str(f, "value");
  char *end = NULL;
  double d = value ? strtod(value, &end) : 0;
  if (value != NULL && end != value && *end == '\0')
    json_object_set_new(in, "value", whole ? json_integer((json_int_t)d) : json_real(d));
  if (strcmp(str(f, "type"), "Int") == 0) {
    json_object_set_new(in, "min", json_integer(-2147483648LL));
    json_object_set_new(in, "max", json_integer(2147483647LL));
  }
  set_error(in, str(f, "label"), whole ? "a whole number" : "a number");
  return in;
}

static json_t *toggle(const json_t *f) {
  json_t *in = input("Input.Toggle", f);
  const char *value = str(f, "value");
  json_object_set_new(in, "title", json_string(str(f, "label")));
  json_object_set_new(in, "valueOn", json_string("true"));
  json_object_set_new(in, "valueOff", json_string("false"));
  json_object_set_new(in, "value",
                      json_string(value && strcmp(value, "true") == 0 ? "true" : "false"));
  return in;
}

static json_t *date_input(const json_t *f) {
  json_t *in = input("Input.Date", f);
  if (str(f, "value") != NULL)
    json_object_set(in, "value", json_object_get(f, "value"));
  set_error(in, str(f, "label"), "a date");
  return in;
}

static json_t *reference_input(const json_t *f) {
  if (json_object_get(f, "choices") != NULL)
    return choice_set(f, "filtered");
  return text_input(f, GUID_REGEX, "Id of the related record (find it with lookup_by_keyword)",
                    "the related record's id, a GUID");
}

static json_t *field_input(const json_t *f) {
  const char *type = str(f, "type");
  if (strcmp(type, "Reference") == 0)
    return reference_input(f);
  if (json_object_get(f, "choices") != NULL)
    return choice_set(f, "compact");
  if (strcmp(type, "Int") == 0 || strcmp(type, "Long") == 0)
    return number_input(f, true);
  if (strcmp(type, "Double") == 0 || strcmp(type, "Decimal") == 0)
    return number_input(f, false);
  if (strcmp(type, "Boolean") == 0)
    return toggle(f);
  if (strcmp(type, "Date") == 0)
    return date_input(f);
  if (strcmp(type, "DateTime") == 0)
    return text_input(f, DATETIME_REGEX, "2024-03-01T09:30:00Z", "a date and time");
  if (strcmp(type, "Guid") == 0)
    return text_input(f, GUID_REGEX, "8a03cbc2-7f01-4d47-bdf0-0755336a3a70", "a GUID");
  return text_input(f, NULL, NULL, "some text");
}

/* The container of a group, created under its heading on first use. */
static json_t *group_items(json_t *body, json_t *groups, const char *name) {
  const char *key = name ? name : "";
  json_t *items = json_object_get(groups, key);
  if (items != NULL)
    return items;
  items = json_array();
  if (name != NULL)
    json_array_append_new(items,
                          json_pack("{s:s,s:s,s:s,s:s,s:b}", "type", "TextBlock", "text", name,
                                    "weight", "Bolder", "style", "heading", "wrap", 1));
  json_array_append_new(body, json_pack("{s:s,s:O}", "type", "Container", "items", items));
  json_object_set_new(groups, key, items);
  return items;
}

/* ---- Lines of child lists ------------------------------------------------------------- */

static const char *line_value(const json_t *line, const char *key) {
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(line, "formValues"), i, v) {
    if (strcmp(str(v, "key"), key) == 0)
      return str(v, "value");
  }
  return NULL;
}

/* One line as a group: its id (hidden) and an input per field, each
 * named "<List>[<n>].<Key>" so that a card's answer maps back onto
 * childLists[...].changes[n]. */
static json_t *line_group(const char *list, size_t n, const json_t *fields, const json_t *line) {
  char name[300];
  json_t *items = json_array();
  snprintf(name, sizeof(name), "%s[%zu].id", list, n);
  json_array_append_new(items, json_pack("{s:s,s:s,s:O,s:b}", "type", "Input.Text", "id", name,
                                         "value", json_object_get(line, "id"), "isVisible", 0));
  size_t i;
  json_t *f;
  json_array_foreach(fields, i, f) {
    json_t *copy = json_copy(f);
    const char *value = line_value(line, str(f, "key"));
    snprintf(name, sizeof(name), "%s[%zu].%s", list, n, str(f, "key"));
    json_object_set_new(copy, "key", json_string(name));
    json_object_set_new(copy, "value", value ? json_string(value) : json_null());
    json_array_append_new(items, field_input(copy));
    json_decref(copy);
  }
  return json_pack("{s:s,s:s,s:b,s:o}", "type", "Container", "style", "emphasis", "separator", 1,
                   "items", items);
}

static void add_lines(json_t *body, const json_t *child_lists) {
  size_t i;
  json_t *l;
  json_array_foreach(child_lists, i, l) {
    const json_t *lines = json_object_get(l, "lines");
    char heading[300];
    snprintf(heading, sizeof(heading), "%s (%zu)", str(l, "list"), json_array_size(lines));
    json_t *items = json_array();
    json_array_append_new(items,
                          json_pack("{s:s,s:s,s:s,s:s,s:b}", "type", "TextBlock", "text", heading,
                                    "weight", "Bolder", "style", "heading", "wrap", 1));
    size_t n;
    json_t *line;
    json_array_foreach(lines, n, line) {
      json_array_append_new(items,
                            line_group(str(l, "list"), n, json_object_get(l, "fields"), line));
    }
    json_array_append_new(body, json_pack("{s:s,s:o}", "type", "Container", "items", items));
  }
}

json_t *dg_forms_card(const dg_model_t *m, const json_t *fields, const char *id,
                      const json_t *child_lists) {
  json_t *body = json_array(), *groups = json_object();
  json_array_append_new(body, json_pack("{s:s,s:s,s:s,s:s,s:s,s:b}", "type", "TextBlock", "text",
                                        m->name, "size", "Large", "weight", "Bolder", "style",
                                        "heading", "wrap", 1));
  if (m->description != NULL && m->description[0] != '\0')
    json_array_append_new(body, json_pack("{s:s,s:s,s:b,s:b}", "type", "TextBlock", "text",
                                          m->description, "isSubtle", 1, "wrap", 1));
  size_t i;
  json_t *f;
  json_array_foreach(fields, i, f) {
    json_array_append_new(group_items(body, groups, str(f, "group")), field_input(f));
  }
  json_decref(groups);
  add_lines(body, child_lists);
  json_t *data = json_pack("{s:s,s:s}", "tool", "submit_data_entry_form", "dataModelId", m->id);
  if (id != NULL)
    json_object_set_new(data, "id", json_string(id));
  return json_pack("{s:s,s:s,s:s,s:o,s:[{s:s,s:s,s:o}]}", "type", "AdaptiveCard", "$schema",
                   "http://adaptivecards.io/schemas/adaptive-card.json", "version", "1.5", "body",
                   body, "actions", "type", "Action.Submit", "title", "Submit", "data", data);
}
