/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Documents by URL for get_file_text: which URLs may be read (the sources
 * of files.json and who may use them), the download itself with its
 * redirects checked like the first URL, and the process-wide state (the
 * cache of extracted text and the slots that bound how many documents are
 * downloaded and extracted at once). Loop thread only. */
#ifndef DATAGATE_FILES_H
#define DATAGATE_FILES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "datagate/auth.h"
#include "datagate/base.h"
#include "datagate/catalog.h"
#include "datagate/client.h"
#include "datagate/extract.h"

struct dg_connectors;

/* get_file_text's process-wide state: the cache of extracted text and the
 * slots that bound how many documents are downloaded and extracted at once
 * (files.c). Loop thread only. */
typedef struct dg_files dg_files_t;

/* Creates get_file_text's state with the cache budget of cat's files.json
 * (kept for the life of the process: a reload does not resize it). NULL
 * when out of memory. */
dg_files_t *dg_files_new(const dg_catalog_t *cat);
/* Frees it once no call holds a slot any more (at once when none does);
 * waiting calls must have been canceled first (the MCP server's free does
 * that). */
void dg_files_close(dg_files_t *files);

/* Checks a document URL (source.c): the scheme must be allowed, the URL valid and
 * without dot segments, and under a source of cfg that p may use (any
 * source when p is NULL). On success *url is parsed (strings in arena) and
 * *source set; otherwise err (param "url") says, after the lead-in what
 * ("Invalid argument 'url':"), the URL without its query, what is wrong
 * and what is allowed: only the sources p may use (DG_EINVAL or
 * DG_EPERM). */
int dg_files_check(const dg_file_settings_t *cfg, const dg_principal_t *p, dg_arena_t *arena,
                   const char *what, const char *text, dg_http_url_t *url,
                   const dg_file_source_t **source, dg_errctx_t *err);
/* The source url falls under (the longest prefix), or NULL. */
const dg_file_source_t *dg_files_match(const dg_file_settings_t *cfg, const dg_http_url_t *url);

/* A call waiting for one of the extraction slots (files.c). */
typedef struct dg_files_slot {
  void (*start)(struct dg_files_slot *slot); /* called when the slot is granted */
  struct dg_files_slot *prev, *next;
  bool queued;
} dg_files_slot_t;

/* Takes a slot now (0, start is not called), queues the waiter (1, start
 * is called from a later release) or refuses (DG_EBUSY) when max_queued
 * wait already; DG_ECLOSED while closing. */
int dg_files_acquire(dg_files_t *files, dg_files_slot_t *slot, unsigned max_active,
                     unsigned max_queued);
/* Gives a slot back; the longest waiting call gets it. */
void dg_files_release(dg_files_t *files);
/* Takes a waiter out of the queue (its call was canceled). */
void dg_files_forget(dg_files_t *files, dg_files_slot_t *slot);
/* The cache of extracted text, or NULL when caching is off. */
dg_extract_cache_t *dg_files_cache(dg_files_t *files);
/* The executable started as the extractor process ("" when unknown). */
const char *dg_files_worker(const dg_files_t *files);

/* One download with redirects followed here, so that each target is
 * checked against the sources like the first URL (fetch.c). */
typedef struct dg_files_fetch dg_files_fetch_t;

typedef struct dg_files_fetch_ops {
  /* The head of the 2xx answer: its content type, validators (each may be
   * NULL) and declared length (-1 when unknown). A negative DG_E* code
   * aborts the download. */
  int (*on_head)(void *user, const char *content_type, const char *etag, const char *last_modified,
                 int64_t length);
  /* Bytes of the body as they arrive; a negative DG_E* code aborts. */
  int (*on_body)(void *user, const char *data, size_t len);
  /* Once, on a later loop turn: rc 0 after the whole body, or 0 with
   * not_modified after a 304 to the validators given; otherwise a DG_E*
   * code with err saying why (for an abort by on_head or on_body, the
   * code they returned, with aborted true). */
  void (*on_done)(void *user, int rc, bool not_modified, bool aborted, const dg_errctx_t *err);
} dg_files_fetch_ops_t;

typedef struct dg_files_fetch_req {
  uv_loop_t *loop;
  /* Where the process keeps its client (plain downloads) and its connector
   * calls (sources with a connector): read again at each hop, as the
   * process clears them while calls are still ending. */
  struct dg_http_client *const *client;
  struct dg_connectors *const *connectors;
  const dg_file_settings_t *cfg;
  dg_arena_t *arena; /* where the fetch lives */
  const char *request_id;
  const char *trace_id;     /* a trace continued, or NULL */
  const dg_http_url_t *url; /* already checked, under source */
  const dg_file_source_t *source;
  const dg_principal_t *principal; /* whose sources redirects may lead to */
  const char *etag; /* validators of a cached copy (may be NULL): a conditional request */
  const char *last_modified;
  const dg_files_fetch_ops_t *ops;
  void *user;
} dg_files_fetch_req_t;

/* Starts downloading req->url with the environment's client or the
 * source's connector. Returns 0 (on_done follows), or a DG_E* code with err
 * (nothing started). */
int dg_files_fetch_start(const dg_files_fetch_req_t *req, dg_files_fetch_t **out, dg_errctx_t *err);
/* Stops the download; on_done follows with DG_ECANCELED. */
void dg_files_fetch_cancel(dg_files_fetch_t *fetch);

#endif
