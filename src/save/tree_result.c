/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The result of a save tree: one entry per action in execution order,
 * with its status, when it started (milliseconds after the run began) and
 * how long it took, the upstream call it made (method, URL without query,
 * status, attempts, and for a failure a short excerpt of the answer), the
 * session values it set and its warnings. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "save/internal.h"

#define MAX_RUN_WARNINGS 100

static const char *const phase_names[] = {"root", "preChild", "postChild"};

json_t *dg__save_entry(const dg__save_node_t *n, const dg_action_t *a) {
  return json_pack("{s:I,s:s,s:s,s:s,s:s}", "step", (json_int_t)(a->step + 1), "title", a->title,
                   "type", a->type == DG_ACTION_ENDPOINT_SAVE ? "EndpointSave" : "GetSessionValues",
                   "phase", phase_names[a->phase], "path", a->path);
}

void dg__save_entry_end(const dg__save_node_t *n, json_t *entry, const char *status,
                        uint64_t start_ms) {
  uint64_t now = dg_now_ms();
  json_object_set_new(entry, "status", json_string(status));
  json_object_set_new(entry, "startMs", json_integer((json_int_t)(start_ms - n->run->start_ms)));
  json_object_set_new(entry, "durationMs", json_integer((json_int_t)(now - start_ms)));
}

/* Printable ASCII of the first bytes of an answer: enough to see why, and
 * always valid in a JSON string. */
static json_t *excerpt(const char *body, size_t len) {
  char out[DG_SAVE_EXCERPT_BYTES + 4];
  size_t n = len < DG_SAVE_EXCERPT_BYTES ? len : DG_SAVE_EXCERPT_BYTES;
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)body[i];
    out[i] = c >= 0x20 && c < 0x7f ? (char)c : ' ';
  }
  memcpy(out + n, len > n ? "..." : "", len > n ? 4 : 1);
  return json_string(out);
}

void dg__save_entry_upstream(json_t *entry, const dg_connector_t *conn, const char *method,
                             const char *path, const dg_connector_result_t *result) {
  const dg_http_response_t *res = result->response;
  const char *p = path ? path : "";
  json_t *up =
      json_pack("{s:s,s:s,s:s+#,s:I}", "connector", conn->name, "method", method, "url",
                conn->base_url, p, (int)strcspn(p, "?#"), "attempts", (json_int_t)result->attempts);
  if (up == NULL)
    return;
  json_object_set_new(up, "status", res ? json_integer(res->status) : json_null());
  if (result->rc != 0 && res != NULL && res->body_len > 0)
    json_object_set_new(up, "excerpt", excerpt(res->body, res->body_len));
  json_object_set_new(entry, "upstream", up);
}

char *dg__save_not_json(const dg_action_t *a, const char *url, int status, const char *content_type,
                        const char *body, size_t len, json_t **upstream) {
  json_t *first = excerpt(body, len);
  *upstream = json_pack("{s:s?,s:O}", "contentType", content_type, "excerpt", first);
  const char *bytes = json_string_value(first);
  char why[1536];
  snprintf(why, sizeof(why),
           "the answer of %s (%s) is not JSON: upstream '%s' %s %.600s answered %d with "
           "Content-Type %.100s and %zu bytes%s%.100s%s",
           a->title, a->path, a->connector->name, a->request.method, url, status,
           content_type ? content_type : "(none)", len, len ? ", starting '" : "",
           bytes ? bytes : "", len ? "'" : "");
  json_decref(first);
  return strdup(why);
}

void dg__save_warn(dg__save_node_t *n, json_t *entry, const char *event, const char *fmt, ...) {
  char text[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof(text), fmt, ap);
  va_end(ap);
  const char *title = json_string_value(json_object_get(entry, "title"));
  json_t *list = json_object_get(entry, "warnings");
  if (list == NULL) {
    list = json_array();
    json_object_set_new(entry, "warnings", list);
  }
  json_array_append_new(list, json_string(text));
  dg_save_run_t *run = n->run;
  if (json_array_size(run->warnings) < MAX_RUN_WARNINGS)
    json_array_append_new(run->warnings,
                          json_sprintf("%s, %s %s, %s: %s", n->ep->name, n->rec->model->name,
                                       n->rec->id, title ? title : "?", text));
  dg_log_json(DG_LOG_WARN, event,
              json_pack("{s:s?,s:s,s:s,s:s?,s:s}", "request_id", run->opt.request_id, "endpoint",
                        n->ep->name, "record", n->rec->id, "action", title, "msg", text));
}
