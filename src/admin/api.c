/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The JSON API's file work, run on the threadpool: the configuration as
 * the page edits it, the check of a change and its save. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "admin/internal.h"

/* The files the page shows, by the names the API uses for them. */
static const char *const shown[] = {"models.json", "endpoints.json", "connectors.json",
                                    "saved_queries.json"};

void dg__admin_job_json(dg__admin_job_t *job, int status, json_t *body) {
  job->status = status;
  job->content_type = "application/json";
  dg_buf_reset(&job->body);
  if (body == NULL || dg_json_write(body, &job->body) != 0) {
    dg_buf_reset(&job->body);
    dg_buf_append_str(&job->body, "{\"error\":\"out of memory\"}");
    job->status = 500;
  }
  json_decref(body);
}

json_t *dg__admin_scopes(const dg_catalog_t *cat) {
  json_t *out = json_object();
  for (size_t i = 0; out != NULL && i < cat->nendpoints; i++) {
    json_t *scope = dg_catalog_endpoint_scope(cat, &cat->endpoints[i]);
    if (scope == NULL || json_object_set_new(out, cat->endpoints[i].name, scope) != 0) {
      json_decref(out);
      return NULL;
    }
  }
  return out;
}

/* "file: /json/pointer: message" as the loader writes each problem. */
json_t *dg__admin_errors(const dg_config_errors_t *errors) {
  json_t *out = json_array();
  for (size_t i = 0; out != NULL && i < errors->count; i++) {
    const char *line = errors->lines[i];
    const char *a = strstr(line, ": ");
    const char *b = a ? strstr(a + 2, ": ") : NULL;
    json_t *e = b ? json_pack("{s:s%,s:s%,s:s}", "file", line, (size_t)(a - line), "path", a + 2,
                              (size_t)(b - a - 2), "message", b + 2)
                  : json_pack("{s:s,s:s,s:s}", "file", "", "path", "", "message", line);
    if (e == NULL || json_array_append_new(out, e) != 0) {
      json_decref(out);
      return NULL;
    }
  }
  return out;
}

static void set_etag(dg__admin_job_t *job, const char *version) {
  snprintf(job->etag, sizeof(job->etag), "\"%s\"", version);
}

/* The files as JSON; a file that is missing or not JSON is null (the
 * loader's errors say why). */
static json_t *read_shown(const char *dir) {
  json_t *files = json_object();
  for (size_t i = 0; files != NULL && i < DG_ARRAY_SIZE(shown); i++) {
    dg_buf_t buf;
    dg_buf_init(&buf, 16u * 1024 * 1024);
    json_t *v = NULL;
    if (dg__admin_read_file(dir, shown[i], &buf) == 0)
      v = json_loadb(buf.data ? buf.data : "", buf.len, JSON_REJECT_DUPLICATES, NULL);
    dg_buf_free(&buf);
    json_object_set_new(files, shown[i], v ? v : json_null());
  }
  return files;
}

/* Scopes of a valid catalog, or the loader's problems. */
static json_t *result(int rc, dg_catalog_t *cat, const dg_config_errors_t *errors) {
  json_t *scopes = rc == 0 ? dg__admin_scopes(cat) : json_object();
  return json_pack("{s:b,s:o*,s:o*}", "ok", rc == 0, "errors", dg__admin_errors(errors), "scopes",
                   scopes);
}

static void get_config(dg__admin_job_t *job, const char *dir) {
  char version[33];
  int rc = dg_admin_version(dir, version);
  if (rc != 0) {
    dg__admin_job_json(
        job, 500, json_pack("{s:s+}", "error", "cannot read the configuration: ", dg_strerror(rc)));
    return;
  }
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = NULL;
  rc = dg_catalog_load(dir, &cat, &errors);
  json_t *body = result(rc, cat, &errors);
  dg_catalog_unref(cat);
  dg_config_errors_free(&errors);
  if (body != NULL) {
    json_object_set_new(body, "version", json_string(version));
    json_object_set_new(body, "files", read_shown(dir));
  }
  set_etag(job, version);
  dg__admin_job_json(job, 200, body);
}

static void check(dg__admin_job_t *job, const char *dir) {
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = NULL;
  int rc = dg_admin_check(dir, job->files, &cat, &errors);
  json_t *body = result(rc, cat, &errors);
  dg_catalog_unref(cat);
  dg_config_errors_free(&errors);
  dg__admin_job_json(job, 200, body);
}

/* The version a change was made from, as sent: "v", "\"v\"" or W/"v". */
static bool same_version(const char *sent, const char *version) {
  if (strncmp(sent, "W/", 2) == 0)
    sent += 2;
  size_t n = strlen(sent);
  if (n >= 2 && sent[0] == '"' && sent[n - 1] == '"') {
    sent++;
    n -= 2;
  }
  return n == strlen(version) && strncmp(sent, version, n) == 0;
}

/* Under the lock: the version, the check, the write. */
static void save_locked(dg__admin_job_t *job, const char *dir) {
  char version[33];
  int rc = dg_admin_version(dir, version);
  if (rc != 0) {
    dg__admin_job_json(job, 500, json_pack("{s:s}", "error", "cannot read the configuration"));
    return;
  }
  if (!same_version(job->if_match, version)) {
    set_etag(job, version);
    dg__admin_job_json(
        job, 412,
        json_pack("{s:s,s:s}", "error",
                  "the configuration changed since you loaded it (another save, or an edit of the "
                  "files); nothing was written. Reload to see the current version and make your "
                  "change again.",
                  "version", version));
    return;
  }
  dg_config_errors_t errors = {0};
  dg_catalog_t *cat = NULL;
  rc = dg_admin_check(dir, job->files, &cat, &errors);
  if (rc != 0) {
    json_t *body = result(rc, cat, &errors);
    dg_config_errors_free(&errors);
    json_object_set_new(body, "error", json_string("the change is not valid; nothing was written"));
    dg__admin_job_json(job, 422, body);
    return;
  }
  json_t *body = result(rc, cat, &errors);
  dg_catalog_unref(cat);
  dg_config_errors_free(&errors);
  dg_errctx_t err;
  dg_errctx_clear(&err);
  rc = dg_admin_write(dir, job->files, &err);
  if (rc == 0)
    rc = dg_admin_version(dir, version);
  if (rc != 0) {
    json_decref(body);
    dg__admin_job_json(job, 500, json_pack("{s:s}", "error", err.message[0] ? err.message : ""));
    return;
  }
  json_object_set_new(body, "version", json_string(version));
  set_etag(job, version);
  job->reload = true;
  dg__admin_job_json(job, 200, body);
}

/* Saves of other processes (--workers) wait on the directory's lock. */
static void save(dg__admin_job_t *job, const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0 || flock(fd, LOCK_EX) != 0) {
    if (fd >= 0)
      close(fd);
    dg__admin_job_json(job, 500,
                       json_pack("{s:s}", "error", "cannot lock the configuration directory"));
    return;
  }
  save_locked(job, dir);
  close(fd);
}

void dg__admin_api_work(dg__admin_job_t *job) {
  const char *dir = job->admin->config_dir;
  if (job->kind == DG__ADMIN_CONFIG)
    get_config(job, dir);
  else if (job->kind == DG__ADMIN_CHECK)
    check(job, dir);
  else
    save(job, dir);
}
