/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Session values and response mappings: what a Get Session Values action
 * reads from the answer of its save action, and what a save action writes
 * back to its record. The three extraction kinds follow the seed:
 *   basic        the value at the connector property becomes a header
 *                value of the record (and the record's property);
 *   collection   each item of the connector list is matched to the child
 *                records whose model match property equals the item's
 *                connector match property, and sets their value;
 *   multiple     the prefixed lists are zipped by position into composites
 *   lists        {"<prefix>": item, ...} that are matched the same way;
 *                lists of different lengths skip the extraction with a
 *                warning, logged and reported. */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "save/internal.h"

void dg__save_record_set(dg__save_record_t *r, const char *name, json_t *value) {
  json_object_set(r->values, name, value);
  json_object_set_new(r->changed, name, value);
  json_object_del(r->pending, name);
}

void dg__save_record_unset(dg__save_record_t *r, const char *name, json_t *why) {
  if (json_object_get(r->changed, name) != NULL) {
    json_decref(why);
    return;
  }
  json_object_del(r->values, name);
  json_object_set_new(r->pending, name, why ? why : json_string("an extraction did not set it"));
}

/* "the extraction at /endpoints/0/save/actions/0/extractions/1" */
static json_t *extraction_why(const dg_action_t *a, size_t i, const char *what) {
  return json_sprintf("the extraction at %s/extractions/%zu %s", a->path, i, what);
}

void dg__save_unset_extracted(const dg_endpoint_t *ep, const dg_property_t *list,
                              dg__save_record_t *r) {
  for (size_t s = 0; s < ep->nsteps; s++) {
    const dg_action_t *a = ep->steps[s];
    for (size_t i = 0; i < a->nextractions; i++) {
      const dg_extraction_t *x = &a->extractions[i];
      bool basic = x->kind == DG_EXTRACT_BASIC;
      if (x->model_property != NULL && (list == NULL ? basic : !basic && x->target_list == list))
        dg__save_record_unset(r, x->model_property->name, extraction_why(a, i, "did not run"));
    }
  }
}

static json_t *entry_object(json_t *entry, const char *key) {
  json_t *o = json_object_get(entry, key);
  if (o == NULL) {
    o = json_object();
    json_object_set_new(entry, key, o);
  }
  return o;
}

/* ---- Lists ------------------------------------------------------------------------------ */

typedef struct collect {
  json_t *items;
  bool expand; /* one value that is an array stands for its elements */
} collect_t;

static int collect_one(void *data, json_t *value) {
  collect_t *c = data;
  if (c->expand && json_is_array(value)) {
    size_t i;
    json_t *v;
    json_array_foreach(value, i, v) {
      if (json_array_size(c->items) >= DG_SAVE_MAX_LIST_ITEMS)
        return DG_E2BIG;
      json_array_append(c->items, v);
    }
    return 0;
  }
  if (json_array_size(c->items) >= DG_SAVE_MAX_LIST_ITEMS)
    return DG_E2BIG;
  return json_array_append(c->items, value) == 0 ? 0 : DG_ENOMEM;
}

/* The items a list path reaches: each match of a wildcard path, or the
 * elements of the array a plain path reaches. */
static json_t *items_of(dg__save_node_t *n, json_t *entry, const dg_jsonpath_t *path,
                        const json_t *response) {
  collect_t c = {.items = json_array(), .expand = !dg_jsonpath_is_multi(path)};
  if (c.items == NULL)
    return NULL;
  int rc = dg_jsonpath_each(path, response, DG_SAVE_MAX_LIST_ITEMS + 1, collect_one, &c, NULL);
  if (rc == DG_E2BIG)
    dg__save_warn(n, entry, "save_warning", "%s holds more than %d items; only the first are read",
                  dg_jsonpath_text(path), DG_SAVE_MAX_LIST_ITEMS);
  return c.items;
}

/* ---- Matching items to children ------------------------------------------------------------ */

static dg__save_list_t *list_of(dg__save_node_t *n, const dg_property_t *list) {
  for (size_t i = 0; i < n->nlists; i++) {
    if (n->lists[i].config->list == list)
      return &n->lists[i];
  }
  return NULL;
}

static bool same(const dg_extraction_t *x, const dg__save_record_t *child, const char *want) {
  char buf[64];
  if (x->model_match_property == NULL)
    return strcasecmp(child->id, want) == 0;
  const char *have = dg_json_scalar_text(
      json_object_get(child->values, x->model_match_property->name), buf, sizeof(buf));
  return have != NULL && strcmp(have, want) == 0;
}

typedef struct tally {
  size_t items, matched_items, records;
} tally_t;

/* Sets the value of one item on every child it matches. */
static void match_item(dg__save_list_t *l, const dg_extraction_t *x, const json_t *item,
                       tally_t *t) {
  char buf[64];
  const char *want =
      dg_json_scalar_text(dg_jsonpath_get(x->connector_match, item), buf, sizeof(buf));
  const json_t *value = dg_jsonpath_get(x->connector_property, item);
  bool matched = false;
  for (size_t i = 0; want != NULL && l != NULL && i < l->n; i++) {
    dg__save_record_t *child = l->records[i];
    if (!same(x, child, want))
      continue;
    matched = true;
    json_t *v = value ? json_deep_copy(value) : json_null();
    if (json_object_get(child->inherited, x->model_property->name) == NULL)
      t->records++;
    json_object_set(child->inherited, x->model_property->name, v);
    dg__save_record_set(child, x->model_property->name, v);
  }
  t->matched_items += matched;
}

/* The children of l that x left without a value say why. */
static void explain_unmatched(dg__save_list_t *l, const dg_extraction_t *x, json_t *why) {
  const char *name = x->model_property->name;
  for (size_t i = 0; l != NULL && i < l->n; i++) {
    if (json_object_get(l->records[i]->pending, name) != NULL)
      json_object_set(l->records[i]->pending, name, why);
  }
  json_decref(why);
}

static void match_items(dg__save_node_t *n, const dg_action_t *a, size_t xi,
                        const dg_extraction_t *x, const json_t *items, json_t *entry) {
  dg__save_list_t *l = list_of(n, x->target_list);
  tally_t t = {.items = json_array_size(items)};
  size_t i;
  json_t *item;
  json_array_foreach(items, i, item) {
    match_item(l, x, item, &t);
  }
  const char *name = x->model_property->name, *list = x->target_list->name;
  json_object_set_new(entry_object(entry, "matched"), name,
                      json_pack("{s:s,s:I,s:I,s:I,s:I}", "list", list, "items", (json_int_t)t.items,
                                "matchedItems", (json_int_t)t.matched_items, "records",
                                (json_int_t)t.records, "listRecords", (json_int_t)(l ? l->n : 0)));
  if (t.matched_items < t.items)
    dg__save_warn(n, entry, "save_warning", "%s: %zu of %zu items matched no %s record", name,
                  t.items - t.matched_items, t.items, list);
  if (l != NULL && t.records < l->n)
    dg__save_warn(n, entry, "save_warning", "%s: %zu of %zu %s records got no value", name,
                  l->n - t.records, l->n, list);
  explain_unmatched(l, x, extraction_why(a, xi, "matched no item of the answer to this record"));
}

/* ---- The three kinds ------------------------------------------------------------------------- */

static void extract_basic(dg__save_node_t *n, const dg_action_t *a, size_t xi,
                          const dg_extraction_t *x, const json_t *response, json_t *entry) {
  const char *name = x->model_property->name;
  const json_t *v = dg_jsonpath_get(x->connector_property, response);
  if (v == NULL) {
    const char *at = dg_jsonpath_text(x->connector_property);
    dg__save_warn(n, entry, "save_warning", "%s: the answer holds nothing at %s", name, at);
    char what[600];
    snprintf(what, sizeof(what), "found nothing at %s", at);
    dg__save_record_unset(n->rec, name, extraction_why(a, xi, what));
    return;
  }
  json_t *copy = json_deep_copy(v);
  json_object_set(n->session, name, copy);
  json_object_set(entry_object(entry, "sessionValues"), name, copy);
  dg__save_record_set(n->rec, name, copy);
}

static void extract_collection(dg__save_node_t *n, const dg_action_t *a, size_t xi,
                               const dg_extraction_t *x, const json_t *response, json_t *entry) {
  json_t *items = items_of(n, entry, x->connector_list, response);
  if (items != NULL && json_array_size(items) == 0)
    dg__save_warn(n, entry, "save_warning", "%s: the answer holds no list at %s",
                  x->model_property->name, dg_jsonpath_text(x->connector_list));
  if (items != NULL)
    match_items(n, a, xi, x, items, entry);
  json_decref(items);
}

/* Composites {"<prefix>": item, ...}, one per position; NULL (after the
 * warning) when the lists differ in length. */
static json_t *zip(dg__save_node_t *n, const dg_extraction_t *x, json_t **lists, json_t *entry) {
  char sizes[512];
  size_t len = 0, count = json_array_size(lists[0]);
  bool equal = true;
  for (size_t i = 0; i < x->nlists; i++) {
    equal = equal && json_array_size(lists[i]) == count;
    int w = snprintf(sizes + len, sizeof(sizes) - len, "%s%s %zu", i ? ", " : "",
                     x->lists[i].prefix, json_array_size(lists[i]));
    len = w > 0 && (size_t)w < sizeof(sizes) - len ? len + (size_t)w : len;
  }
  if (!equal) {
    dg__save_warn(n, entry, "session_values_skipped",
                  "%s: the lists have different numbers of items (%s); the extraction is "
                  "skipped",
                  x->model_property->name, sizes);
    return NULL;
  }
  json_t *out = json_array();
  for (size_t p = 0; out != NULL && p < count; p++) {
    json_t *composite = json_object();
    for (size_t i = 0; composite != NULL && i < x->nlists; i++)
      json_object_set(composite, x->lists[i].prefix, json_array_get(lists[i], p));
    json_array_append_new(out, composite);
  }
  return out;
}

static void extract_multiple(dg__save_node_t *n, const dg_action_t *a, size_t xi,
                             const dg_extraction_t *x, const json_t *response, json_t *entry) {
  json_t *lists[DG_EXTRACTION_MAX_LISTS] = {0};
  size_t nlists = x->nlists < DG_EXTRACTION_MAX_LISTS ? x->nlists : DG_EXTRACTION_MAX_LISTS;
  bool ok = true;
  for (size_t i = 0; i < nlists; i++) {
    lists[i] = items_of(n, entry, x->lists[i].path, response);
    ok = ok && lists[i] != NULL;
  }
  json_t *composites = ok ? zip(n, x, lists, entry) : NULL;
  if (composites != NULL)
    match_items(n, a, xi, x, composites, entry);
  else
    explain_unmatched(list_of(n, x->target_list), x,
                      extraction_why(a, xi, "was skipped (its lists differ in length)"));
  json_decref(composites);
  for (size_t i = 0; i < nlists; i++)
    json_decref(lists[i]);
}

void dg__save_extract(dg__save_node_t *n, const dg_action_t *a, const json_t *response,
                      json_t *entry) {
  for (size_t i = 0; i < a->nextractions; i++) {
    const dg_extraction_t *x = &a->extractions[i];
    if (x->kind == DG_EXTRACT_BASIC)
      extract_basic(n, a, i, x, response, entry);
    else if (x->kind == DG_EXTRACT_COLLECTION)
      extract_collection(n, a, i, x, response, entry);
    else
      extract_multiple(n, a, i, x, response, entry);
  }
}

/* ---- Response mappings
 * --------------------------------------------------------------------------- */

void dg__save_map_response(dg__save_node_t *n, const dg_action_t *a, const json_t *response,
                           json_t *entry) {
  if (a->nresponses > 0 && response == NULL) {
    dg__save_warn(n, entry, "save_warning",
                  "the answer is not JSON; its response mappings are skipped");
    return;
  }
  for (size_t i = 0; i < a->nresponses; i++) {
    const dg_response_mapping_t *m = &a->responses[i];
    const json_t *v = dg_jsonpath_get(m->path, response);
    if (v == NULL) {
      dg__save_warn(n, entry, "save_warning", "%s: the answer holds nothing at %s",
                    m->property->name, dg_jsonpath_text(m->path));
      continue;
    }
    json_t *copy = json_deep_copy(v);
    json_object_set(entry_object(entry, "mapped"), m->property->name, copy);
    dg__save_record_set(n->rec, m->property->name, copy);
  }
}

/* ---- Filters -----------------------------------------------------------------------------------
 */

static bool as_number(const char *s, double *out) {
  char *end = NULL;
  if (s == NULL || *s == '\0')
    return false;
  *out = strtod(s, &end);
  return *end == '\0';
}

static int compare(const char *have, const char *want) {
  double a, b;
  if (as_number(have, &a) && as_number(want, &b))
    return a < b ? -1 : a > b;
  return strcmp(have, want);
}

static bool condition_holds(const dg_filter_condition_t *c, const dg__save_record_t *r) {
  char buf[64];
  const char *text =
      dg_json_scalar_text(json_object_get(r->values, c->property->name), buf, sizeof(buf));
  bool blank = text == NULL || text[0] == '\0';
  switch (c->op) {
  case DG_FILTER_EQ:
    return text != NULL && strcmp(text, c->value) == 0;
  case DG_FILTER_NE:
    return text == NULL || strcmp(text, c->value) != 0;
  case DG_FILTER_GT:
    return text != NULL && compare(text, c->value) > 0;
  case DG_FILTER_LT:
    return text != NULL && compare(text, c->value) < 0;
  case DG_FILTER_BLANK:
    return blank;
  case DG_FILTER_NOT_BLANK:
    return !blank;
  case DG_FILTER_REGEX:
    return text != NULL && regexec(c->regex, text, 0, NULL, 0) == 0;
  }
  return false;
}

bool dg__save_filter_holds(const dg_action_filter_t *f, const dg__save_record_t *r) {
  for (size_t i = 0; i < f->nconditions; i++) {
    bool holds = condition_holds(&f->conditions[i], r);
    if (holds == f->any)
      return holds;
  }
  return !f->any;
}
