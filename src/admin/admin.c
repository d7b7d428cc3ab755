/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The /admin routes: the page's static files, sign-in checks and the
 * dispatch of the JSON API (api.c). Everything that touches files runs as
 * a job on the threadpool; the request is answered when it comes back. */
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "admin/internal.h"

#define STATIC_MAX (8u * 1024 * 1024)
#define STATIC_PATH_MAX 200
#define JSON_MAX (16u * 1024 * 1024)

static const dg_http_header_t ct_json = {"Content-Type", "application/json"};

int dg_admin_new(uv_loop_t *loop, const dg_admin_config_t *config, dg_catalog_t *cat,
                 dg_admin_t **out) {
  dg_admin_t *a = calloc(1, sizeof(*a));
  char *dir = a != NULL ? strdup(config->config_dir) : NULL;
  if (dir == NULL) {
    free(a);
    return DG_ENOMEM;
  }
  *a = (dg_admin_t){.loop = loop,
                    .config_dir = dir,
                    .reload = config->reload,
                    .reload_data = config->reload_data,
                    .connectors = config->connectors,
                    .cat = dg_catalog_ref(cat)};
  *out = a;
  return 0;
}

void dg_admin_set_catalog(dg_admin_t *admin, dg_catalog_t *cat) {
  dg_catalog_t *old = admin->cat;
  admin->cat = dg_catalog_ref(cat);
  dg_catalog_unref(old);
}

static void admin_release(dg_admin_t *a) {
  dg_catalog_unref(a->cat);
  free(a->config_dir);
  free(a);
}

void dg_admin_free(dg_admin_t *admin) {
  if (admin == NULL)
    return;
  admin->closing = true;
  admin->reload = NULL;
  admin->connectors = NULL;
  if (admin->jobs == 0)
    admin_release(admin);
}

/* ---- Answers ------------------------------------------------------------------- */

void dg__admin_respond_json(dg_http_request_t *req, int status, json_t *body) {
  dg_buf_t out;
  dg_buf_init(&out, JSON_MAX);
  if (body == NULL || dg_json_write(body, &out) != 0) {
    dg_buf_reset(&out);
    dg_buf_append_str(&out, "{\"error\":\"internal error\"}");
    status = 500;
  }
  json_decref(body);
  dg_http_header_t headers[] = {ct_json, {"Cache-Control", "no-store"}};
  dg_http_respond(req, status, headers, DG_ARRAY_SIZE(headers), out.data, out.len);
  dg_buf_free(&out);
}

void dg__admin_error(dg_http_request_t *req, int status, const char *message) {
  dg__admin_respond_json(req, status, json_pack("{s:s}", "error", message));
}

/* ---- Jobs ---------------------------------------------------------------------- */

static void job_free(dg__admin_job_t *job) {
  dg_catalog_unref(job->cat);
  json_decref(job->files);
  dg_buf_free(&job->body);
  free(job->path);
  free(job);
}

static void job_abort(dg_http_request_t *req, void *data) {
  dg__admin_job_t *job = data;
  job->req = NULL;
}

static void job_work(uv_work_t *work) {
  dg__admin_job_t *job = work->data;
  if (job->kind == DG__ADMIN_STATIC) {
    int rc = dg__admin_read_file(job->cat->server.admin_web_dir, job->path, &job->body);
    job->status = rc == 0 ? 200 : 404;
    return;
  }
  dg__admin_api_work(job);
}

static void job_answer(dg__admin_job_t *job) {
  if (job->kind == DG__ADMIN_STATIC && job->status != 200) {
    dg__admin_error(job->req, 404,
                    "not found; the admin page is built into server.adminWebDir by scripts/setup");
    return;
  }
  dg_http_header_t headers[4] = {{"Content-Type", job->content_type},
                                 {"Cache-Control", job->cache ? job->cache : "no-store"}};
  size_t n = 2;
  if (job->etag[0] != '\0')
    headers[n++] = (dg_http_header_t){"ETag", job->etag};
  if (job->kind == DG__ADMIN_STATIC)
    headers[n++] = (dg_http_header_t){
        "Content-Security-Policy", "default-src 'self'; img-src 'self' data:; "
                                   "frame-ancestors 'none'; base-uri 'none'; form-action 'none'"};
  dg_http_respond(job->req, job->status, headers, n, job->body.data ? job->body.data : "",
                  job->body.len);
}

static void job_done(uv_work_t *work, int status) {
  dg__admin_job_t *job = work->data;
  dg_admin_t *a = job->admin;
  if (job->kind == DG__ADMIN_SAVE)
    a->saving = false;
  if (job->req != NULL) {
    dg_http_request_watch(job->req, &(dg_http_request_events_t){0});
    if (status != 0)
      dg__admin_error(job->req, 503, "the request was canceled; try again");
    else
      job_answer(job);
  }
  if (job->reload && a->reload != NULL)
    a->reload(a->reload_data);
  job_free(job);
  dg__admin_job_ended(a);
}

void dg__admin_job_ended(dg_admin_t *a) {
  if (--a->jobs == 0 && a->closing)
    admin_release(a);
}

void dg__admin_job_start(dg__admin_job_t *job) {
  dg_admin_t *a = job->admin;
  job->work.data = job;
  dg_http_request_watch(job->req, &(dg_http_request_events_t){.on_abort = job_abort, .data = job});
  if (uv_queue_work(a->loop, &job->work, job_work, job_done) != 0) {
    dg_http_request_watch(job->req, &(dg_http_request_events_t){0});
    dg__admin_error(job->req, 503, "the server is busy; try again");
    job_free(job);
    return;
  }
  a->jobs++;
  if (job->kind == DG__ADMIN_SAVE)
    a->saving = true;
}

static dg__admin_job_t *job_new(dg_admin_t *a, dg_http_request_t *req, dg__admin_job_kind_t kind) {
  dg__admin_job_t *job = calloc(1, sizeof(*job));
  if (job == NULL) {
    dg__admin_error(req, 500, "out of memory");
    return NULL;
  }
  job->admin = a;
  job->req = req;
  job->kind = kind;
  job->cat = dg_catalog_ref(a->cat);
  job->content_type = "application/json";
  dg_buf_init(&job->body, kind == DG__ADMIN_STATIC ? STATIC_MAX : JSON_MAX);
  return job;
}

/* ---- Static files ----------------------------------------------------------------- */

static const char *content_type(const char *path) {
  static const struct {
    const char *ext, *type;
  } types[] = {
      {".html", "text/html; charset=utf-8"},
      {".js", "text/javascript; charset=utf-8"},
      {".css", "text/css; charset=utf-8"},
      {".svg", "image/svg+xml"},
      {".png", "image/png"},
      {".json", "application/json"},
      {".ico", "image/x-icon"},
      {".woff2", "font/woff2"},
  };
  const char *dot = strrchr(path, '.');
  for (size_t i = 0; dot != NULL && i < DG_ARRAY_SIZE(types); i++) {
    if (strcmp(dot, types[i].ext) == 0)
      return types[i].type;
  }
  return "application/octet-stream";
}

/* Only plain names below the directory: letters, digits, '-', '_', '.'
 * and '/', and no segment that starts with a dot. */
static bool static_path_ok(const char *rel) {
  size_t n = strlen(rel);
  if (n == 0 || n > STATIC_PATH_MAX || rel[0] == '/')
    return false;
  for (size_t i = 0; i < n; i++) {
    char c = rel[i];
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '-' || c == '_' || c == '.' || c == '/';
    if (!ok || (c == '.' && (i == 0 || rel[i - 1] == '/')) || (c == '/' && rel[i - 1] == '/'))
      return false;
  }
  return true;
}

static void serve_static(dg_admin_t *a, dg_http_request_t *req, const char *rel) {
  if (!static_path_ok(rel)) {
    dg__admin_error(req, 404, "not found");
    return;
  }
  dg__admin_job_t *job = job_new(a, req, DG__ADMIN_STATIC);
  if (job == NULL)
    return;
  job->path = strdup(rel);
  if (job->path == NULL) {
    dg__admin_error(req, 500, "out of memory");
    job_free(job);
    return;
  }
  job->content_type = content_type(rel);
  /* Built assets carry a content hash in their names; the page does not. */
  job->cache = strncmp(rel, "assets/", 7) == 0 ? "public, max-age=31536000, immutable" : "no-cache";
  dg__admin_job_start(job);
}

/* ---- Sign-in and request checks ------------------------------------------------------- */

/* 401 without a valid token, 403 for a user whose roles do not grant
 * administration. */
static bool signed_in(dg_admin_t *a, dg_http_request_t *req) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  const dg_principal_t *p = NULL;
  const char *authz = dg_http_request_header(req, "Authorization");
  if (dg_auth_authenticate(a->cat, authz, dg_http_request_arena(req), &p, &err) != 0) {
    json_t *body =
        json_pack("{s:s}", "error", err.message[0] ? err.message : "authentication required");
    dg_buf_t out;
    dg_buf_init(&out, 4096);
    dg_json_write(body, &out);
    json_decref(body);
    dg_http_header_t headers[] = {ct_json, {"WWW-Authenticate", "Bearer"}};
    dg_http_respond(req, 401, headers, DG_ARRAY_SIZE(headers), out.data, out.len);
    dg_buf_free(&out);
    return false;
  }
  if (!dg_auth_can_administer(p)) {
    dg__admin_error(req, 403,
                    "forbidden: none of your roles grants administration (a role with "
                    "\"administration\": true in datagate.json)");
    return false;
  }
  return true;
}

/* An Origin other than the page's own (or one configured) is refused. */
static bool origin_ok(const dg_catalog_t *cat, dg_http_request_t *req) {
  const char *origin = dg_http_request_header(req, "Origin");
  const char *host = dg_http_request_header(req, "Host");
  if (origin == NULL)
    return true;
  const char *rest = strstr(origin, "://");
  if (host != NULL && rest != NULL && strcmp(rest + 3, host) == 0)
    return true;
  for (size_t i = 0; i < cat->server.nallowed_origins; i++) {
    if (strcmp(cat->server.allowed_origins[i], origin) == 0)
      return true;
  }
  return false;
}

/* A change must come as JSON from the page's origin: a form of another
 * site can send neither, even through a proxy that adds the token. */
static bool change_allowed(dg_admin_t *a, dg_http_request_t *req) {
  const char *ct = dg_http_request_header(req, "Content-Type");
  if (ct == NULL || strncasecmp(ct, "application/json", 16) != 0) {
    dg__admin_error(req, 415, "Content-Type must be application/json");
    return false;
  }
  if (!origin_ok(a->cat, req)) {
    dg__admin_error(req, 403, "forbidden: the Origin header names another site");
    return false;
  }
  return true;
}

/* {"files": {"endpoints.json": {...}, ...}} with writable names only. */
static json_t *parse_files(dg_http_request_t *req) {
  size_t len = 0;
  const char *body = dg_http_request_body(req, &len);
  json_error_t jerr;
  json_t *root = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, &jerr);
  json_t *files = root ? json_object_get(root, "files") : NULL;
  const char *problem = root == NULL                   ? "the body is not JSON"
                        : !json_is_object(files)       ? "files: must be an object of file name to "
                                                         "content"
                        : json_object_size(files) == 0 ? "files: names no file"
                                                       : NULL;
  const char *name;
  json_t *value;
  json_object_foreach(problem ? NULL : files, name, value) {
    if (!dg_admin_file_writable(name))
      problem = dg_arena_sprintf(dg_http_request_arena(req),
                                 "files: '%.64s' cannot be changed here (allowed: models.json, "
                                 "endpoints.json)",
                                 name);
    else if (!json_is_object(value))
      problem =
          dg_arena_sprintf(dg_http_request_arena(req), "files: '%s' must be a JSON object", name);
  }
  if (problem != NULL) {
    dg__admin_error(req, 400, problem);
    json_decref(root);
    return NULL;
  }
  json_incref(files);
  json_decref(root);
  return files;
}

/* ---- The API --------------------------------------------------------------------- */

static void api_info(dg_admin_t *a, dg_http_request_t *req) {
  const dg_oauth_settings_t *o = &a->cat->oauth;
  dg__admin_respond_json(req, 200,
                         json_pack("{s:s,s:{s:b,s:s?}}", "version", DG_VERSION, "oauth", "enabled",
                                   o->enabled, "issuer", o->enabled ? o->issuer : NULL));
}

static void api_change(dg_admin_t *a, dg_http_request_t *req, dg__admin_job_kind_t kind) {
  if (!change_allowed(a, req))
    return;
  const char *match = kind == DG__ADMIN_SAVE ? dg_http_request_header(req, "If-Match") : NULL;
  if (kind == DG__ADMIN_SAVE && match == NULL) {
    dg__admin_error(req, 428,
                    "If-Match: required; send the ETag of GET /admin/api/config that the change "
                    "was made from");
    return;
  }
  if (kind == DG__ADMIN_SAVE && a->saving) {
    dg__admin_error(req, 409, "another change is being saved; reload and try again");
    return;
  }
  json_t *files = parse_files(req);
  dg__admin_job_t *job = files ? job_new(a, req, kind) : NULL;
  if (job == NULL) {
    json_decref(files);
    return;
  }
  job->files = files;
  if (match != NULL)
    dg_strlcpy(job->if_match, match, sizeof(job->if_match));
  dg__admin_job_start(job);
}

static bool method_is(dg_http_request_t *req, const char *m) {
  const char *have = dg_http_request_method(req);
  return strcmp(have, m) == 0 || (strcmp(m, "GET") == 0 && strcmp(have, "HEAD") == 0);
}

static void method_not_allowed(dg_http_request_t *req, const char *allow) {
  json_t *body = json_pack("{s:s+}", "error", "method not allowed; use ", allow);
  dg_buf_t out;
  dg_buf_init(&out, 4096);
  dg_json_write(body, &out);
  json_decref(body);
  dg_http_header_t headers[] = {ct_json, {"Allow", allow}};
  dg_http_respond(req, 405, headers, DG_ARRAY_SIZE(headers), out.data, out.len);
  dg_buf_free(&out);
}

static void api_test(dg_admin_t *a, dg_http_request_t *req) {
  if (!method_is(req, "POST")) {
    method_not_allowed(req, "POST");
    return;
  }
  if (!signed_in(a, req) || !change_allowed(a, req))
    return;
  size_t len = 0;
  const char *body = dg_http_request_body(req, &len);
  json_t *in = json_loadb(body ? body : "", len, JSON_REJECT_DUPLICATES, NULL);
  if (!json_is_object(in)) {
    json_decref(in);
    dg__admin_error(req, 400, "the body must be a JSON object");
    return;
  }
  dg__admin_test(a, req, in);
}

static void api(dg_admin_t *a, dg_http_request_t *req, const char *what) {
  bool info = strcmp(what, "info") == 0, config = strcmp(what, "config") == 0,
       check = strcmp(what, "check") == 0, test = strcmp(what, "test") == 0;
  if (test) {
    api_test(a, req);
    return;
  }
  if (!info && !config && !check) {
    dg__admin_error(req, 404, "not found; the API is described in docs/admin.md");
    return;
  }
  if (info) {
    if (method_is(req, "GET"))
      api_info(a, req);
    else
      method_not_allowed(req, "GET");
    return;
  }
  bool get = config && method_is(req, "GET"), put = config && method_is(req, "PUT");
  bool post = check && method_is(req, "POST");
  if (!get && !put && !post) {
    method_not_allowed(req, config ? "GET, PUT" : "POST");
    return;
  }
  if (!signed_in(a, req))
    return;
  if (get) {
    dg__admin_job_t *job = job_new(a, req, DG__ADMIN_CONFIG);
    if (job != NULL)
      dg__admin_job_start(job);
    return;
  }
  api_change(a, req, put ? DG__ADMIN_SAVE : DG__ADMIN_CHECK);
}

bool dg_admin_route(dg_http_request_t *req, void *data) {
  dg_admin_t *a = data;
  const char *path = dg_http_request_path(req);
  if (strncmp(path, "/admin", 6) != 0 || (path[6] != '\0' && path[6] != '/'))
    return false;
  if (strncmp(path, DG_ADMIN_API_PREFIX, strlen(DG_ADMIN_API_PREFIX)) == 0) {
    api(a, req, path + 11);
    return true;
  }
  if (!method_is(req, "GET")) {
    method_not_allowed(req, "GET");
    return true;
  }
  serve_static(a, req, path[6] == '\0' || path[7] == '\0' ? "index.html" : path + 7);
  return true;
}
