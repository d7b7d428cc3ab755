/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* `datagate --explain-endpoint NAME`: an endpoint's save action tree in
 * execution order, as the property picker of the configuration screens
 * would show it: for each action the session values it may use (header
 * values of earlier actions, and in a child save the values its parent set
 * on the record), what a Get Session Values action sets, and the child
 * saves between the pre-child and post-child actions, each child endpoint
 * explained in turn. For each save action it also says where the value of
 * each placeholder comes from: this run's extractions, the parent's run,
 * or the stored record (which --check-config prints too). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/internal.h"
#include "datagate/text.h"

#define MAX_NAMES 256

typedef struct names {
  const char *v[MAX_NAMES];
  size_t n;
} names_t;

static void add(names_t *s, const char *name) {
  for (size_t i = 0; i < s->n; i++) {
    if (strcmp(s->v[i], name) == 0)
      return;
  }
  if (s->n < MAX_NAMES)
    s->v[s->n++] = name;
}

static void print_names(FILE *out, const char *indent, const names_t *own, const names_t *parent) {
  fprintf(out, "%s   session values:", indent);
  if (own->n == 0 && parent->n == 0)
    fputs(" none", out);
  for (size_t i = 0; i < own->n; i++)
    fprintf(out, "%s %s", i ? "," : "", own->v[i]);
  for (size_t i = 0; i < parent->n; i++)
    fprintf(out, "%s %s (set by the parent)", i || own->n ? "," : "", parent->v[i]);
  fputc('\n', out);
}

static const char *request_line(const dg_action_t *a) {
  if (a->request.kind == DG_REQUEST_GRAPHQL)
    return "GraphQL";
  return a->request.path ? dg_template_text(a->request.path) : "";
}

static void print_extraction(FILE *out, const char *indent, const dg_extraction_t *x) {
  const char *name = x->model_property ? x->model_property->name : "?";
  const char *from = x->connector_property ? dg_jsonpath_text(x->connector_property) : "?";
  const char *match = x->model_match_property ? x->model_match_property->name : "Id";
  const char *list = x->target_list ? x->target_list->name : "?";
  if (x->kind == DG_EXTRACT_BASIC) {
    fprintf(out, "%s   sets %s (header value) from %s\n", indent, name, from);
    return;
  }
  fprintf(out, "%s   sets %s on each %s record whose %s matches %s, from %s", indent, name, list,
          match, x->connector_match ? dg_jsonpath_text(x->connector_match) : "?", from);
  if (x->kind == DG_EXTRACT_COLLECTION)
    fprintf(out, " of each item of %s\n",
            x->connector_list ? dg_jsonpath_text(x->connector_list) : "?");
  for (size_t i = 0; x->kind == DG_EXTRACT_MULTIPLE_LISTS && i < x->nlists; i++)
    fprintf(out, "%s%s = %s", i ? ", " : " of the lists zipped by position: ", x->lists[i].prefix,
            x->lists[i].path ? dg_jsonpath_text(x->lists[i].path) : "?");
  if (x->kind == DG_EXTRACT_MULTIPLE_LISTS)
    fputc('\n', out);
}

static void print_action(FILE *out, const char *indent, const dg_action_t *a) {
  static const char *const phases[] = {"root", "pre-child", "after child configs"};
  fprintf(out, "%s%zu. %s  [%s, %s]", indent, a->step + 1, a->title,
          a->type == DG_ACTION_ENDPOINT_SAVE ? "EndpointSave" : "GetSessionValues",
          phases[a->phase]);
  if (a->type == DG_ACTION_ENDPOINT_SAVE)
    fprintf(out, "  %s %s%s%s\n", a->request.method ? a->request.method : "", request_line(a),
            a->connector ? " via " : "", a->connector ? a->connector->name : "");
  else
    fprintf(out, "  reads the response of %zu. %s\n", a->source ? a->source->step + 1 : 0,
            a->source ? a->source->title : "?");
  if (!a->on_create || !a->on_update)
    fprintf(out, "%s   only when the submission %s a record\n", indent,
            a->on_create ? "creates" : "modifies");
  if (a->filter != NULL)
    fprintf(out, "%s   skipped unless %s of %zu conditions hold\n", indent,
            a->filter->any ? "one" : "all", a->filter->nconditions);
  if (a->type == DG_ACTION_ENDPOINT_SAVE)
    fprintf(out, "%s   answer: %s\n", indent,
            a->expect_any    ? "any (expect any: a 2xx answer that is not JSON is accepted)"
            : a->answer_read ? "JSON, read by the tree (a 2xx answer that is not JSON fails)"
                             : "JSON or empty (a 2xx answer that is not JSON fails)");
}

/* ---- Where a placeholder's value comes from ---------------------------------------- */

/* Where e (as the child save of parent's list via, or on its own with
 * parent NULL) runs. */
typedef struct runs_in {
  const dg_endpoint_t *e;
  const dg_endpoint_t *parent;
  const dg_child_config_t *via;
} runs_in_t;

/* The extraction of e's steps [from, to) that writes prop (basic ones, or
 * with list those that set a value on each record of that list), as
 * "json/path/extractions/N" in buf; NULL when there is none. */
static const char *writer(const dg_endpoint_t *e, size_t from, size_t to, const dg_property_t *prop,
                          const dg_property_t *list, char *buf, size_t size) {
  for (size_t i = from; prop != NULL && i < to && i < e->nsteps; i++) {
    const dg_action_t *a = e->steps[i];
    for (size_t j = 0; j < a->nextractions; j++) {
      const dg_extraction_t *x = &a->extractions[j];
      bool basic = x->kind == DG_EXTRACT_BASIC;
      if (x->model_property == prop && (list == NULL ? basic : !basic && x->target_list == list)) {
        snprintf(buf, size, "%s/extractions/%zu", a->path, j);
        return buf;
      }
    }
  }
  return NULL;
}

/* The parent's run writes prop on each record of r's list, before the
 * child saves. */
static const char *parent_list_writer(const runs_in_t *r, const dg_property_t *prop, char *buf,
                                      size_t size) {
  if (r->parent == NULL)
    return NULL;
  return writer(r->parent, 0, r->parent->first_post, prop, r->via->list, buf, size);
}

/* "this run (...)", "the parent's run (...)", "the stored record" or "the
 * parent's stored record": where the value of placeholder v comes from. */
static void source_of(const runs_in_t *r, const dg_template_var_t *v, char *out, size_t size) {
  char at[512];
  const char *dot = strchr(v->name, '.');
  const char *w = NULL;
  if (dot != NULL) {
    const dg_property_t *p = r->parent ? dg_model_property(r->parent->model, dot + 1) : NULL;
    w = p ? writer(r->parent, 0, r->parent->nsteps, p, NULL, at, sizeof(at)) : NULL;
    snprintf(out, size, "%s%s%s", w ? "the parent's run (" : "the parent's stored record",
             w ? w : "", w ? ")" : "");
    return;
  }
  const dg_property_t *p = dg_model_property(r->e->model, v->name);
  w = writer(r->e, 0, r->e->nsteps, p, NULL, at, sizeof(at));
  if (w != NULL) {
    snprintf(out, size, "this run (%s)", w);
    return;
  }
  w = parent_list_writer(r, p, at, sizeof(at));
  if (w != NULL)
    snprintf(out, size, "the parent's run (%s)", w);
  else
    snprintf(out, size, "%s", v->session ? "no action of this run" : "the stored record");
}

typedef struct seen_vars {
  const dg_template_var_t *v[DG_TEMPLATE_MAX_VARS * 4];
  size_t n;
} seen_vars_t;

static void collect(seen_vars_t *seen, const dg_template_t *t) {
  for (size_t i = 0; t != NULL && i < dg_template_nvars(t); i++) {
    const dg_template_var_t *v = dg_template_var(t, i);
    bool dup = false;
    for (size_t j = 0; j < seen->n && !dup; j++)
      dup = seen->v[j]->session == v->session && strcmp(seen->v[j]->name, v->name) == 0;
    if (!dup && seen->n < DG_ARRAY_SIZE(seen->v))
      seen->v[seen->n++] = v;
  }
}

/* Every placeholder of a save action, once, in the order of its parts. */
static void action_vars(const dg_action_t *a, seen_vars_t *seen) {
  const dg_saved_request_t *q = &a->request;
  seen->n = 0;
  collect(seen, q->path);
  for (size_t i = 0; i < q->nquery; i++)
    collect(seen, q->query[i].value);
  for (size_t i = 0; i < q->nheaders; i++)
    collect(seen, q->headers[i].value);
  collect(seen, q->body);
  collect(seen, q->graphql_variables);
  for (size_t i = 0; i < a->nmappings; i++)
    collect(seen, a->mappings[i].value);
}

/* "{A} from the stored record, {B} from this run (...)"; false for an
 * action without placeholders. */
static bool print_sources(FILE *out, const runs_in_t *r, const dg_action_t *a) {
  seen_vars_t *seen = calloc(1, sizeof(*seen));
  if (seen == NULL)
    return false;
  action_vars(a, seen);
  for (size_t i = 0; i < seen->n; i++) {
    char from[700];
    source_of(r, seen->v[i], from, sizeof(from));
    fprintf(out, "%s{%s%s} from %s", i ? ", " : "", seen->v[i]->session ? "SESSION:" : "",
            seen->v[i]->name, from);
  }
  bool any = seen->n > 0;
  free(seen);
  return any;
}

/* The first endpoint that saves e as a child, for showing e's reads. */
static runs_in_t runs_in(const dg_catalog_t *cat, const dg_endpoint_t *e) {
  runs_in_t r = {.e = e};
  for (size_t i = 0; cat != NULL && i < cat->nendpoints && !e->form_submit; i++) {
    for (size_t j = 0; j < cat->endpoints[i].nchildren; j++) {
      const dg_child_config_t *c = &cat->endpoints[i].children[j];
      bool saves_e = c->endpoint == e || c->add_endpoint == e || c->remove_endpoint == e;
      if (saves_e && r.parent == NULL) {
        r.parent = &cat->endpoints[i];
        r.via = &cat->endpoints[i].children[j];
      }
    }
  }
  return r;
}

void dg__catalog_print_reads(const dg_catalog_t *cat, FILE *out) {
  for (size_t i = 0; i < cat->nendpoints; i++) {
    const dg_endpoint_t *e = &cat->endpoints[i];
    runs_in_t r = runs_in(cat, e);
    for (size_t k = 0; k < e->nsteps; k++) {
      const dg_action_t *a = e->steps[k];
      if (a->type != DG_ACTION_ENDPOINT_SAVE)
        continue;
      fprintf(out, "endpoints.json: %s: %s reads ", a->path, e->name);
      if (!print_sources(out, &r, a))
        fputs("no placeholders", out);
      fputc('\n', out);
    }
  }
}

static void explain(FILE *out, const runs_in_t *r, const names_t *parent, int depth);

/* How lines added or removed by a form call reach the upstream. */
static void print_line_changes(FILE *out, const char *indent, const runs_in_t *line,
                               const names_t *inherited, int depth) {
  const dg_child_config_t *c = line->via;
  runs_in_t r = *line;
  if (c->add_endpoint != NULL) {
    fprintf(out, "%s   %s added by a form call: saved by endpoint '%s'\n", indent, c->list->name,
            c->add_endpoint->name);
    r.e = c->add_endpoint;
    explain(out, &r, inherited, depth + 1);
  }
  if (!c->removable) {
    fprintf(out, "%s   %s removed by a form call: refused (no removeEndpoint or removeValues)\n",
            indent, c->list->name);
    return;
  }
  const dg_endpoint_t *e = c->remove_endpoint ? c->remove_endpoint : c->endpoint;
  fprintf(out, "%s   %s removed by a form call: deleted from the store, saved by endpoint '%s'",
          indent, c->list->name, e->name);
  for (size_t i = 0; i < c->nremove_values; i++)
    fprintf(out, "%s%s = %s", i ? ", " : " with ", c->remove_props[i]->name, c->remove_values[i]);
  fprintf(out, "\n");
  if (c->remove_endpoint != NULL) {
    r.e = c->remove_endpoint;
    explain(out, &r, inherited, depth + 1);
  }
}

static void print_children(FILE *out, const char *indent, const dg_endpoint_t *e, int depth) {
  runs_in_t child = {.parent = e};
  for (size_t i = 0; i < e->nchildren; i++) {
    const dg_child_config_t *c = &e->children[i];
    names_t inherited = {0};
    for (size_t s = 0; s < e->first_post; s++) {
      for (size_t j = 0; j < e->steps[s]->nextractions; j++) {
        const dg_extraction_t *x = &e->steps[s]->extractions[j];
        if (x->kind != DG_EXTRACT_BASIC && x->target_list == c->list && x->model_property)
          add(&inherited, x->model_property->name);
      }
    }
    fprintf(out, "%s   %s: each record saved by endpoint '%s', %u at a time%s%s\n", indent,
            c->list->name, c->endpoint->name, c->concurrency, c->order_by ? ", in order of " : "",
            c->order_by ? c->order_by->name : "");
    child.e = c->endpoint;
    child.via = c;
    explain(out, &child, &inherited, depth + 1);
    print_line_changes(out, indent, &child, &inherited, depth);
  }
}

static void explain(FILE *out, const runs_in_t *r, const names_t *parent, int depth) {
  const dg_endpoint_t *e = r->e;
  char indent[64];
  snprintf(indent, sizeof(indent), "%*s", depth * 6 + 2, "");
  fprintf(out, "%.*sEndpoint '%s' saves %s records%s%s\n", depth * 6, indent, e->name,
          e->model->name, e->connector ? " through " : "", e->connector ? e->connector->name : "");
  names_t own = {0};
  for (size_t i = 0; i < e->nsteps; i++) {
    const dg_action_t *a = e->steps[i];
    print_action(out, indent, a);
    print_names(out, indent, &own, parent);
    if (a->type == DG_ACTION_ENDPOINT_SAVE) {
      fprintf(out, "%s   reads: ", indent);
      if (!print_sources(out, r, a))
        fputs("no placeholders", out);
      fputc('\n', out);
    }
    for (size_t j = 0; j < a->nextractions; j++) {
      print_extraction(out, indent, &a->extractions[j]);
      if (a->extractions[j].kind == DG_EXTRACT_BASIC && a->extractions[j].model_property)
        add(&own, a->extractions[j].model_property->name);
    }
    if (i + 1 == e->first_post && e->first_post < e->nsteps)
      fprintf(out, "%s\u2014 Child Saves \u2014\n", indent);
    if (i + 1 == e->first_post)
      print_children(out, indent, e, depth);
  }
}

int dg_catalog_explain_endpoint(const dg_catalog_t *cat, const char *name, FILE *out) {
  const dg_endpoint_t *e = dg_catalog_endpoint(cat, name);
  if (e == NULL) {
    fprintf(out, "datagate: no endpoint named '%s' in %s/endpoints.json\n", name, cat->dir);
    return 1;
  }
  names_t none = {0};
  runs_in_t r = runs_in(cat, e);
  explain(out, &r, &none, 0);
  for (size_t i = 0; i < cat->nendpoints; i++) {
    for (size_t j = 0; j < cat->endpoints[i].nchildren; j++) {
      const dg_child_config_t *c = &cat->endpoints[i].children[j];
      if (c->endpoint == e || c->add_endpoint == e || c->remove_endpoint == e)
        fprintf(out, "Also saved as a child of '%s' (list %s)\n", cat->endpoints[i].name,
                cat->endpoints[i].children[j].list->name);
    }
  }
  return 0;
}
