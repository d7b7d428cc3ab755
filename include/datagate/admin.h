/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* admin: the administration page under /admin and its JSON API under
 * /admin/api/ (docs/admin.md). The page's files are served from the
 * directory server.adminWebDir names; every API call needs a bearer token
 * of a user whose role grants administration. A change is checked by the
 * catalog loader exactly as --check-config checks files, written to the
 * configuration directory atomically (the previous version kept beside
 * it as NAME.prev) and then reloaded as SIGHUP reloads. File work runs on
 * the threadpool, never on the loop thread. */
#ifndef DATAGATE_ADMIN_H
#define DATAGATE_ADMIN_H

#include <stdbool.h>
#include <uv.h>

#include "datagate/base.h"
#include "datagate/catalog.h"
#include "datagate/net.h"

typedef struct dg_admin dg_admin_t;

typedef struct dg_admin_config {
  const char *config_dir; /* the directory the gateway was started with */
  /* Reloads the configuration as SIGHUP does; called on the loop thread
   * after a change was written. */
  void (*reload)(void *data);
  void *reload_data;
  /* The Test panel's real runs call upstreams through it; NULL: only dry
   * runs. */
  struct dg_connectors *connectors;
} dg_admin_config_t;

/* Creates the module with the first catalog snapshot (a reference is
 * taken). Returns 0 or DG_ENOMEM. */
int dg_admin_new(uv_loop_t *loop, const dg_admin_config_t *config, dg_catalog_t *cat,
                 dg_admin_t **out);
/* Swaps the snapshot that authenticates and names the page's directory. */
void dg_admin_set_catalog(dg_admin_t *admin, dg_catalog_t *cat);
/* Frees the module once the file work still running has ended. */
void dg_admin_free(dg_admin_t *admin);

/* The administration API's paths: its requests carry JSON bodies. */
#define DG_ADMIN_API_PREFIX "/admin/api/"

/* Answers req when its path is /admin or below it and returns true;
 * returns false (req untouched) for every other path. */
bool dg_admin_route(dg_http_request_t *req, void *admin);

/* ---- Configuration files (exposed for tests; run off the loop thread) --- */

/* The files the page reads, in version order; the last two are written
 * only by hand. */
#define DG_ADMIN_NFILES 6
extern const char *const dg_admin_files[DG_ADMIN_NFILES];
/* True for the files a change may replace: models.json, endpoints.json. */
bool dg_admin_file_writable(const char *name);

/* The version of dir's configuration files: 32 hex digits of the SHA-256
 * of their names and contents (a missing file counts as missing). */
int dg_admin_version(const char *dir, char out[33]);

/* Loads dir with files (an object of file name to JSON content) in place
 * of the files on disk, without writing to dir. Returns 0 with *cat (one
 * reference) or DG_ECONFIG with errors, each line naming the file and
 * JSON pointer as --check-config does. */
int dg_admin_check(const char *dir, const json_t *files, dg_catalog_t **cat,
                   dg_config_errors_t *errors);

/* Writes each file of files into dir: a temporary file, synced, renamed
 * over NAME after the current NAME was linked to NAME.prev. */
int dg_admin_write(const char *dir, const json_t *files, dg_errctx_t *err);

#endif
