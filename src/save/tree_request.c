/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The request of a save action for one record: the path and query
 * (URL-encoded), the headers, and the body from a body template, from
 * property mappings, or as a GraphQL document with variables. Placeholders
 * read the record's working values ({Prop}, {id}), the parent record in a
 * child save ({Reference.Prop}), the session values in scope
 * ({SESSION:Name}: the record's header values, then those its parent's
 * extractions set on it) and the header values of the parent's run
 * ({SESSION:Reference.Name}). A property an extraction of the run writes
 * and has not written yet has no value: the one an earlier run stored is
 * never read. A session value that has no value is an error
 * that names it, never an empty segment in a URL. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "save/internal.h"

#define MAX_PATH_BYTES (16u * 1024u)
#define MAX_HEADER_BYTES (8u * 1024u)
#define MAX_BODY_BYTES (1024u * 1024u)

typedef struct lookup {
  const dg__save_node_t *n;
  char num[64];
  char *text; /* compact JSON of an object or array value, freed after each use */
  /* The last placeholder that read a property this run has not produced. */
  const char *missing;
  const char *missing_why;
} lookup_t;

/* The value of a property of a record (by its configured name, in any case).
 * DG_ENOENT for one that an extraction of the run writes and has not
 * written: the value an earlier run stored is never read. */
static int property_value(lookup_t *l, const dg__save_record_t *r, const char *name, bool *id,
                          const json_t **out) {
  *out = NULL;
  *id = strcasecmp(name, "id") == 0;
  if (*id)
    return 0;
  const dg_property_t *p = dg_model_property(r->model, name);
  const json_t *why = p != NULL ? json_object_get(r->pending, p->name) : NULL;
  if (why != NULL) {
    l->missing = p->name;
    l->missing_why = json_string_value(why);
    return DG_ENOENT;
  }
  *out = p != NULL ? json_object_get(r->values, p->name) : NULL;
  return 0;
}

static int scalar(lookup_t *l, const json_t *v, dg_template_value_t *out) {
  free(l->text);
  l->text = NULL;
  out->kind = DG_TVAL_ABSENT;
  if (v == NULL || json_is_null(v))
    return 0;
  if (json_is_object(v) || json_is_array(v)) {
    l->text = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
    if (l->text == NULL)
      return DG_ENOMEM;
    *out = (dg_template_value_t){.kind = DG_TVAL_STRING, .text = l->text, .len = strlen(l->text)};
    return 0;
  }
  const char *text = dg_json_scalar_text(v, l->num, sizeof(l->num));
  out->kind = json_is_string(v)    ? DG_TVAL_STRING
              : json_is_boolean(v) ? DG_TVAL_BOOL
                                   : DG_TVAL_NUMBER;
  out->text = text;
  out->len = json_is_string(v) ? json_string_length(v) : strlen(text);
  return 0;
}

static int id_value(const char *id, dg_template_value_t *out) {
  *out = (dg_template_value_t){.kind = DG_TVAL_STRING, .text = id, .len = strlen(id)};
  return 0;
}

/* The parent record of a child save reached as "Reference." at the start
 * of name, or NULL. */
static const dg__save_node_t *parent_named(const dg__save_node_t *n, const char *name) {
  const char *dot = strchr(name, '.');
  const char *inverse = n->via ? n->via->list->reference->inverse_property : NULL;
  size_t len = (size_t)(dot - name);
  if (n->parent == NULL || inverse == NULL || strlen(inverse) != len ||
      strncasecmp(inverse, name, len) != 0)
    return NULL;
  return n->parent;
}

/* {Reference.Prop}: the parent record, reached through the list's reference. */
static int parent_value(lookup_t *l, const char *name, dg_template_value_t *out) {
  const dg__save_node_t *p = parent_named(l->n, name);
  if (p == NULL)
    return DG_ENOENT;
  bool id = false;
  const json_t *v = NULL;
  int rc = property_value(l, p->rec, strchr(name, '.') + 1, &id, &v);
  if (rc != 0)
    return rc;
  return id ? id_value(p->rec->id, out) : scalar(l, v, out);
}

/* {SESSION:Reference.Name}: a header value of the parent's run. */
static int parent_session(lookup_t *l, const char *name, dg_template_value_t *out) {
  const dg__save_node_t *p = parent_named(l->n, name);
  if (p == NULL)
    return DG_ENOENT;
  const char *field = strchr(name, '.') + 1;
  const dg_property_t *prop = dg_model_property(p->rec->model, field);
  const char *key = prop != NULL ? prop->name : field;
  const json_t *v = json_object_get(p->session, key);
  if (v != NULL && !json_is_null(v))
    return scalar(l, v, out);
  const json_t *why = json_object_get(p->rec->pending, key);
  if (why != NULL) {
    l->missing = key;
    l->missing_why = json_string_value(why);
  }
  return DG_ENOENT;
}

static int lookup(void *data, const dg_template_var_t *var, dg_template_value_t *out) {
  lookup_t *l = data;
  const dg__save_node_t *n = l->n;
  l->missing = NULL;
  if (var->session && strchr(var->name, '.') != NULL)
    return parent_session(l, var->name, out);
  if (var->session) {
    const json_t *v = json_object_get(n->session, var->name);
    if (v == NULL)
      v = json_object_get(n->rec->inherited, var->name);
    /* A session value that no extraction set is missing, not empty. */
    if (v == NULL || json_is_null(v))
      return DG_ENOENT;
    return scalar(l, v, out);
  }
  if (strchr(var->name, '.') != NULL)
    return parent_value(l, var->name, out);
  bool id = false;
  const json_t *v = NULL;
  int rc = property_value(l, n->rec, var->name, &id, &v);
  if (rc != 0)
    return rc;
  return id ? id_value(n->rec->id, out) : scalar(l, v, out);
}

/* Frees the last object value's text and says which record lacked a value. */
static int explain(lookup_t *l, int rc, dg_errctx_t *err) {
  free(l->text);
  l->text = NULL;
  static const char prefix[] = "no value for ";
  if (rc == DG_ENOENT && strncmp(err->message, prefix, sizeof(prefix) - 1) == 0) {
    char param[sizeof(err->param)], what[sizeof(err->message)];
    dg_strlcpy(param, err->param, sizeof(param));
    dg_strlcpy(what, err->message + sizeof(prefix) - 1, sizeof(what));
    if (l->missing != NULL)
      dg_errctx_set(err, rc, param,
                    "%s has no value in this run: %s (read as %s); this action sent nothing",
                    l->missing, l->missing_why ? l->missing_why : "no extraction set it", what);
    else
      dg_errctx_set(err, rc, param,
                    "%s has no value for this record (no extraction set it: the answer held "
                    "nothing at its path, or no list item matched this record)",
                    what);
  }
  return rc;
}

static int expand(lookup_t *l, const dg_template_t *t, dg_template_mode_t mode, dg_buf_t *out,
                  dg_errctx_t *err) {
  return explain(l, dg_template_expand(t, mode, lookup, l, out, err), err);
}

/* ---- Parts --------------------------------------------------------------------------- */

static int build_path(lookup_t *l, const dg_saved_request_t *r, dg_buf_t *out, dg_errctx_t *err) {
  return explain(l, dg_template_request_path(r, lookup, l, out, err), err);
}

/* A mapping that is one placeholder keeps the value's JSON type; any
 * other text is a string. */
static json_t *mapping_value(lookup_t *l, const dg_body_mapping_t *m, dg_errctx_t *err, int *rc) {
  const dg_template_t *t = m->value;
  const char *text = dg_template_text(t);
  dg_buf_t buf;
  dg_buf_init(&buf, MAX_BODY_BYTES);
  bool whole = dg_template_nvars(t) == 1 && text[0] == '{' && text[strlen(text) - 1] == '}' &&
               strchr(text + 1, '{') == NULL;
  *rc = expand(l, t, whole ? DG_TEMPLATE_JSON : DG_TEMPLATE_RAW, &buf, err);
  json_t *v = NULL;
  if (*rc == 0 && whole)
    v = json_loadb(buf.data, buf.len, JSON_DECODE_ANY, NULL);
  else if (*rc == 0)
    v = json_stringn(buf.data ? buf.data : "", buf.len);
  dg_buf_free(&buf);
  if (*rc == 0 && v == NULL)
    *rc = dg_errctx_set(err, DG_EINVAL, "mappings",
                        "the value of mapping '%s' is not valid UTF-8 text", m->keys[0]);
  return v;
}

static int set_path(json_t *root, const dg_body_mapping_t *m, json_t *value) {
  json_t *at = root;
  for (size_t k = 0; k + 1 < m->nkeys; k++) {
    json_t *next = json_object_get(at, m->keys[k]);
    if (!json_is_object(next)) {
      next = json_object();
      if (json_object_set_new(at, m->keys[k], next) != 0)
        break;
    }
    at = next;
  }
  return json_object_set_new(at, m->keys[m->nkeys - 1], value) == 0 ? 0 : DG_ENOMEM;
}

static int build_mappings(lookup_t *l, const dg_action_t *a, dg_buf_t *out, dg_errctx_t *err) {
  json_t *body = json_object();
  int rc = body ? 0 : DG_ENOMEM;
  for (size_t i = 0; rc == 0 && i < a->nmappings; i++) {
    json_t *v = mapping_value(l, &a->mappings[i], err, &rc);
    if (rc == 0)
      rc = set_path(body, &a->mappings[i], v);
  }
  if (rc == 0)
    rc = dg_json_write(body, out);
  json_decref(body);
  return rc;
}

static int build_graphql(lookup_t *l, const dg_saved_request_t *r, dg_buf_t *out,
                         dg_errctx_t *err) {
  return explain(l, dg_template_graphql_body(r, lookup, l, out, err), err);
}

static int build_body(lookup_t *l, const dg_action_t *a, dg_buf_t *out, dg_errctx_t *err) {
  const dg_saved_request_t *r = &a->request;
  if (r->kind == DG_REQUEST_GRAPHQL)
    return build_graphql(l, r, out, err);
  if (r->body != NULL)
    return expand(l, r->body, DG_TEMPLATE_JSON, out, err);
  return a->nmappings > 0 ? build_mappings(l, a, out, err) : 0;
}

static int build_headers(lookup_t *l, const dg_saved_request_t *r, dg_arena_t *arena,
                         bool json_body, dg_connector_request_t *req, dg_errctx_t *err) {
  dg_http_header_t *h;
  int rc = dg_template_request_headers(r, lookup, l, json_body, MAX_HEADER_BYTES, arena, &h,
                                       &req->nheaders, err);
  req->headers = h;
  return explain(l, rc, err);
}

/* Names the part that went over its limit, when the expansion did not. */
static int limit_error(int rc, dg_errctx_t *err, const char *what, unsigned max) {
  if (rc == DG_E2BIG && err->message[0] == '\0')
    dg_errctx_set(err, rc, what, "the request %s would be larger than %u bytes", what, max);
  else if (rc == DG_ENOMEM && err->message[0] == '\0')
    dg_errctx_set(err, rc, what, "out of memory building the request %s", what);
  return rc;
}

int dg__save_build_request(const dg__save_node_t *n, const dg_action_t *a, dg_arena_t *arena,
                           dg_connector_request_t *req, dg_errctx_t *err) {
  lookup_t l = {.n = n};
  const dg_saved_request_t *r = &a->request;
  dg_buf_t path, body;
  dg_buf_init(&path, MAX_PATH_BYTES);
  dg_buf_init(&body, MAX_BODY_BYTES);
  memset(req, 0, sizeof(*req));
  req->method = r->method;
  req->retry_unsafe = r->retry_unsafe;
  int rc = limit_error(build_path(&l, r, &path, err), err, "path", MAX_PATH_BYTES);
  if (rc == 0)
    rc = limit_error(build_body(&l, a, &body, err), err, "body", MAX_BODY_BYTES);
  if (rc == 0)
    rc = limit_error(build_headers(&l, r, arena, body.len > 0, req, err), err, "headers",
                     MAX_HEADER_BYTES);
  if (rc == 0) {
    req->path = dg_arena_strdup(arena, path.data ? path.data : "");
    req->body = body.len ? dg_arena_strndup(arena, body.data, body.len) : NULL;
    req->body_len = body.len;
    if (req->path == NULL || (body.len > 0 && req->body == NULL))
      rc = limit_error(DG_ENOMEM, err, "body", MAX_BODY_BYTES);
  }
  dg_buf_free(&path);
  dg_buf_free(&body);
  free(l.text);
  return rc;
}
