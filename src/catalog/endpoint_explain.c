/* `datagate --explain-endpoint NAME`: an endpoint's save action tree in
 * execution order, as the property picker of the configuration screens
 * would show it: for each action the session values it may use (header
 * values of earlier actions, and in a child save the values its parent set
 * on the record), what a Get Session Values action sets, and the child
 * saves between the pre-child and post-child actions, each child endpoint
 * explained in turn. */
#include <stdio.h>
#include <string.h>

#include "catalog/internal.h"
#include "datagate/save.h"

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
}

static void explain(FILE *out, const dg_endpoint_t *e, const names_t *parent, int depth);

/* How lines added or removed by a form call reach the upstream. */
static void print_line_changes(FILE *out, const char *indent, const dg_child_config_t *c,
                               const names_t *inherited, int depth) {
  if (c->add_endpoint != NULL) {
    fprintf(out, "%s   %s added by a form call: saved by endpoint '%s'\n", indent, c->list->name,
            c->add_endpoint->name);
    explain(out, c->add_endpoint, inherited, depth + 1);
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
  if (c->remove_endpoint != NULL)
    explain(out, c->remove_endpoint, inherited, depth + 1);
}

static void print_children(FILE *out, const char *indent, const dg_endpoint_t *e, int depth) {
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
    explain(out, c->endpoint, &inherited, depth + 1);
    print_line_changes(out, indent, c, &inherited, depth);
  }
}

static void explain(FILE *out, const dg_endpoint_t *e, const names_t *parent, int depth) {
  char indent[64];
  snprintf(indent, sizeof(indent), "%*s", depth * 6 + 2, "");
  fprintf(out, "%.*sEndpoint '%s' saves %s records%s%s\n", depth * 6, indent, e->name,
          e->model->name, e->connector ? " through " : "", e->connector ? e->connector->name : "");
  names_t own = {0};
  for (size_t i = 0; i < e->nsteps; i++) {
    const dg_action_t *a = e->steps[i];
    print_action(out, indent, a);
    print_names(out, indent, &own, parent);
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
  explain(out, e, &none, 0);
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
