/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The parts of a configured request (a Saved Query's or a save action's)
 * expanded with the templates of text: path and query string, GraphQL
 * body and header values. */
#include <string.h>

#include "datagate/save.h"

static int graphql_head(dg_buf_t *out, const char *query, const char *operation_name) {
  int rc = dg_buf_append_str(out, "{\"query\":");
  if (rc == 0)
    rc = dg_template_append_json_string(out, query, strlen(query), true);
  if (rc == 0 && operation_name != NULL) {
    rc = dg_buf_append_str(out, ",\"operationName\":");
    if (rc == 0)
      rc = dg_template_append_json_string(out, operation_name, strlen(operation_name), true);
  }
  return rc == 0 ? dg_buf_append_str(out, ",\"variables\":") : rc;
}

int dg_template_graphql_body(const dg_saved_request_t *r, dg_template_lookup_fn lookup, void *data,
                             dg_buf_t *out, dg_errctx_t *err) {
  int rc = graphql_head(out, r->graphql_query, r->operation_name);
  if (rc == 0 && r->graphql_variables != NULL)
    rc = dg_template_expand(r->graphql_variables, DG_TEMPLATE_JSON, lookup, data, out, err);
  else if (rc == 0)
    rc = dg_buf_append_str(out, "{}");
  return rc == 0 ? dg_buf_append_str(out, "}") : rc;
}

static bool all_absent(const dg_template_t *t, dg_template_lookup_fn lookup, void *data) {
  for (size_t i = 0; i < dg_template_nvars(t); i++) {
    dg_template_value_t v;
    if (lookup(data, dg_template_var(t, i), &v) != 0 || v.kind != DG_TVAL_ABSENT)
      return false;
  }
  return dg_template_nvars(t) > 0;
}

int dg_template_request_path(const dg_saved_request_t *r, dg_template_lookup_fn lookup, void *data,
                             dg_buf_t *out, dg_errctx_t *err) {
  int rc = r->path ? dg_template_expand(r->path, DG_TEMPLATE_PATH, lookup, data, out, err) : 0;
  bool first = true;
  for (size_t i = 0; rc == 0 && i < r->nquery; i++) {
    /* Optional filters whose inputs were left out disappear from the URL. */
    if (all_absent(r->query[i].value, lookup, data))
      continue;
    rc = dg_buf_append(out, first ? "?" : "&", 1);
    if (rc == 0)
      rc = dg_template_append_encoded(out, r->query[i].name, strlen(r->query[i].name), false);
    if (rc == 0)
      rc = dg_buf_append(out, "=", 1);
    if (rc == 0)
      rc = dg_template_expand(r->query[i].value, DG_TEMPLATE_QUERY, lookup, data, out, err);
    first = false;
  }
  return rc;
}

int dg_template_request_headers(const dg_saved_request_t *r, dg_template_lookup_fn lookup,
                                void *data, bool json_body, size_t max, dg_arena_t *arena,
                                dg_http_header_t **out, size_t *nout, dg_errctx_t *err) {
  *out = NULL;
  *nout = 0;
  dg_http_header_t *h = dg_arena_calloc(arena, r->nheaders + 2, sizeof(*h));
  if (h == NULL)
    return DG_ENOMEM;
  size_t n = 0;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < r->nheaders; i++) {
    dg_buf_t value;
    dg_buf_init(&value, max);
    rc = dg_template_expand(r->headers[i].value, DG_TEMPLATE_RAW, lookup, data, &value, err);
    h[n].name = r->headers[i].name;
    h[n].value = dg_arena_strdup(arena, value.data ? value.data : "");
    if (rc == 0 && h[n].value == NULL)
      rc = DG_ENOMEM;
    n++;
    dg_buf_free(&value);
  }
  if (json_body)
    h[n++] = (dg_http_header_t){"Content-Type", "application/json"};
  *out = h;
  *nout = n;
  return rc;
}
