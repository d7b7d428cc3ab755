/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Private declarations shared by the files of the admin module. Never
 * included from outside src/admin/ (unit tests excepted).
 *
 *   admin.c  the module, routing, sign-in checks, static files
 *   api.c    the JSON API: its jobs run on the threadpool
 *   files.c  versions, checks and atomic writes of the configuration */
#ifndef DATAGATE_ADMIN_INTERNAL_H
#define DATAGATE_ADMIN_INTERNAL_H

#include "datagate/admin.h"
#include "datagate/auth.h"

struct dg_admin {
  uv_loop_t *loop;
  char *config_dir;
  void (*reload)(void *data);
  void *reload_data;
  struct dg_connectors *connectors; /* real test runs; NULL: dry runs only */
  dg_catalog_t *cat;                /* one reference */
  unsigned jobs;                    /* threadpool jobs not yet finished */
  bool saving;                      /* one change at a time */
  bool closing;                     /* freed when the last job ends */
};

typedef enum dg__admin_job_kind {
  DG__ADMIN_STATIC,
  DG__ADMIN_CONFIG,
  DG__ADMIN_CHECK,
  DG__ADMIN_SAVE,
} dg__admin_job_kind_t;

/* One request's file work: filled on the loop thread, run on the
 * threadpool, answered back on the loop thread. */
typedef struct dg__admin_job {
  uv_work_t work;
  dg_admin_t *admin;
  dg_http_request_t *req; /* NULL once the client went away */
  dg__admin_job_kind_t kind;
  dg_catalog_t *cat; /* the snapshot at the request (a reference) */
  char *path;        /* static: the file */
  json_t *files;     /* check, save: file name -> content */
  char if_match[40]; /* save: the version the change was made from */
  /* The answer */
  int status;
  const char *content_type;
  const char *cache;
  dg_buf_t body;
  char etag[40];
  bool reload; /* a change was written */
} dg__admin_job_t;

int dg__admin_read_file(const char *dir, const char *name, dg_buf_t *out);

/* Queues job; answers 503 when the threadpool refuses it. */
void dg__admin_job_start(dg__admin_job_t *job);
void dg__admin_api_work(dg__admin_job_t *job);
/* The answer as JSON: body is stolen. */
void dg__admin_job_json(dg__admin_job_t *job, int status, json_t *body);

/* Answers req with status and a JSON body (stolen). */
void dg__admin_respond_json(dg_http_request_t *req, int status, json_t *body);
void dg__admin_error(dg_http_request_t *req, int status, const char *message);

/* Ends one unit of work counted in admin->jobs (frees a closing module). */
void dg__admin_job_ended(dg_admin_t *a);
/* POST /admin/api/test with its parsed body (stolen): test_run.c. */
void dg__admin_test(dg_admin_t *a, dg_http_request_t *req, json_t *in);

/* The session values of every endpoint of cat: name -> dg_catalog_endpoint_scope. */
json_t *dg__admin_scopes(const dg_catalog_t *cat);
/* Config error lines as [{"file", "path", "message"}]. */
json_t *dg__admin_errors(const dg_config_errors_t *errors);

#endif
