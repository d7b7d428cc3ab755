/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* MCP resources, each read through the tool that answers the same
 * question, so that a read has the tool's permissions, limits and
 * truncation:
 *   datagate://models/{dataModelId}          get_data_model_properties
 *   datagate://entities/{dataModelId}/{id}   get_entities_by_ids of that id
 *   http(s)://... (a document URL)           get_file_text, first chunk
 * resources/list names the Data Models the caller may read; entities come
 * through the template, documents by their own URL. */
#include <string.h>
#include <strings.h>

#include "datagate/tools.h"
#include "tools/internal.h"

#define MODELS_PREFIX "datagate://models/"
#define ENTITIES_PREFIX "datagate://entities/"
#define JSON_TYPE "application/json"

/* ---- Listing ----------------------------------------------------------------------- */

static json_t *model_resource(const dg_model_t *m) {
  return json_pack("{s:s+,s:s,s:s+,s:s,s:s}", "uri", MODELS_PREFIX, m->id, "name", m->name, "title",
                   m->name, " (Data Model)", "description", m->description ? m->description : "",
                   "mimeType", JSON_TYPE);
}

static json_t *list(const dg_catalog_t *cat, const dg_principal_t *p) {
  json_t *out = json_array();
  for (size_t i = 0; out != NULL && i < cat->nmodels; i++) {
    if (dg_auth_can_read_model(p, &cat->models[i]) &&
        json_array_append_new(out, model_resource(&cat->models[i])) != 0) {
      json_decref(out);
      return NULL;
    }
  }
  return out;
}

static json_t *templates(void) {
  return json_pack("[{s:s,s:s,s:s,s:s,s:s},{s:s,s:s,s:s,s:s,s:s}]", "uriTemplate",
                   ENTITIES_PREFIX "{dataModelId}/{id}", "name", "entity", "title",
                   "An entity by id", "description",
                   "One entity of a Data Model, as get_entities_by_ids answers for that id: "
                   "{\"entities\": [{\"id\", \"properties\"}]}. dataModelId from get_data_models.",
                   "mimeType", JSON_TYPE, "uriTemplate", MODELS_PREFIX "{dataModelId}", "name",
                   "dataModel", "title", "A Data Model's properties", "description",
                   "The properties of a Data Model, as get_data_model_properties answers.",
                   "mimeType", JSON_TYPE);
}

/* ---- Contents ---------------------------------------------------------------------- */

static json_t *json_contents(const char *uri, const char *text, size_t len) {
  return json_pack("[{s:s,s:s,s:s%}]", "uri", uri, "mimeType", JSON_TYPE, "text", text, len);
}

/* The entity's answer as get_entities_by_ids gives it; none: not found. */
static json_t *entity_contents(const char *uri, const char *text, size_t len) {
  json_t *doc = json_loadb(text, len, 0, NULL);
  bool found = json_array_size(json_object_get(doc, "entities")) > 0;
  json_decref(doc);
  return found ? json_contents(uri, text, len) : NULL;
}

/* The document's text, with where it stops and how to read on in _meta. */
static json_t *document_contents(const char *uri, const char *text, size_t len) {
  json_t *doc = json_loadb(text, len, 0, NULL);
  json_t *body = json_object_get(doc, "text");
  json_t *meta = json_object();
  const char *key;
  json_t *v;
  json_object_foreach(doc, key, v) {
    if (strcmp(key, "text") != 0)
      json_object_set(meta, key, v);
  }
  json_t *out = json_is_string(body) && meta != NULL
                    ? json_pack("[{s:s,s:s,s:O,s:{s:O}}]", "uri", uri, "mimeType", "text/plain",
                                "text", body, "_meta", "datagate/document", meta)
                    : NULL;
  json_decref(meta);
  json_decref(doc);
  return out;
}

/* ---- Reading ----------------------------------------------------------------------- */

static int not_found(const char *uri, dg_errctx_t *err) {
  return dg_errctx_set(err, DG_ENOENT, "uri",
                       "Resource not found: '%.200s' is not a datagate resource; use "
                       "datagate://models/{dataModelId}, datagate://entities/{dataModelId}/{id} "
                       "or a document URL (an entity's externalFileLocation).",
                       uri);
}

static bool is_document_url(const char *uri) {
  return strncasecmp(uri, "https://", 8) == 0 || strncasecmp(uri, "http://", 7) == 0;
}

/* "<model>/<id>" after the entities prefix, each part one path segment. */
static int entity_read(const char *rest, const char *uri, dg_mcp_resource_read_t *out,
                       dg_errctx_t *err) {
  const char *slash = strchr(rest, '/');
  if (slash == NULL || slash == rest || slash[1] == '\0' || strchr(slash + 1, '/') != NULL)
    return not_found(uri, err);
  out->tool = "get_entities_by_ids";
  out->args = json_pack("{s:s%,s:[s]}", "dataModelId", rest, (size_t)(slash - rest), "entityIds",
                        slash + 1);
  out->contents = entity_contents;
  return out->args ? 0 : dg_errctx_set(err, DG_ENOMEM, "uri", "out of memory");
}

static int resolve(const char *uri, dg_mcp_resource_read_t *out, dg_errctx_t *err) {
  memset(out, 0, sizeof(*out));
  if (strncmp(uri, ENTITIES_PREFIX, strlen(ENTITIES_PREFIX)) == 0)
    return entity_read(uri + strlen(ENTITIES_PREFIX), uri, out, err);
  if (strncmp(uri, MODELS_PREFIX, strlen(MODELS_PREFIX)) == 0) {
    const char *id = uri + strlen(MODELS_PREFIX);
    if (id[0] == '\0' || strchr(id, '/') != NULL)
      return not_found(uri, err);
    out->tool = "get_data_model_properties";
    out->args = json_pack("{s:s}", "dataModelId", id);
    out->contents = json_contents;
  } else if (is_document_url(uri)) {
    out->tool = "get_file_text";
    out->args = json_pack("{s:s}", "url", uri);
    out->contents = document_contents;
  } else {
    return not_found(uri, err);
  }
  return out->args ? 0 : dg_errctx_set(err, DG_ENOMEM, "uri", "out of memory");
}

const dg_mcp_resources_t dg_tools_resources = {
    .list = list,
    .templates = templates,
    .resolve = resolve,
};
