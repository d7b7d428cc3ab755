/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* get_file_text: the text of a document URL, in chunks. The stages, in
 * order: check the URL against the configured sources; answer from the
 * cache of extracted text when a fresh copy is there; otherwise wait for
 * an extraction slot, download (conditionally when a stale copy is cached:
 * a 304 revalidates it), extract on the threadpool while the body arrives,
 * cache the text and answer the chunk at offset. With a progress token
 * every chunk from offset on is also sent as a progress notification as
 * soon as it is final, before the document is done.
 *
 * The call's state lives in its arena, so the call ends only when neither
 * the download nor the extraction can call back any more. */
#include <stdlib.h>
#include <string.h>

#include "datagate/tools.h"
#include "tools/internal.h"

static const char input_schema[] =
    "{\"type\":\"object\",\"required\":[\"url\"],\"additionalProperties\":false,\"properties\":{"
    "\"url\":{\"type\":\"string\",\"minLength\":1,\"maxLength\":8192,\"description\":\"The "
    "externalFileLocation URL of an entity (an entity of type File)\"},"
    "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"maximum\":4294967295,\"default\":0,"
    "\"description\":\"Character offset of the chunk: 0 at first, then the previous response's "
    "nextOffset\"},"
    "\"maxResultBytes\":" DG__TOOLS_BUDGET_SCHEMA "}}";

static const char output_schema[] =
    "{\"type\":\"object\",\"required\":[\"text\",\"offset\",\"nextOffset\",\"hasMore\","
    "\"format\",\"totalChars\"],\"properties\":{"
    "\"text\":{\"type\":\"string\"},"
    "\"offset\":{\"type\":\"integer\",\"minimum\":0},"
    "\"nextOffset\":{\"type\":[\"integer\",\"null\"],\"minimum\":0},"
    "\"hasMore\":{\"type\":\"boolean\"},"
    "\"format\":{\"type\":\"string\",\"enum\":[\"PDF\",\"DOCX\",\"PPTX\",\"HTML\",\"TXT\",\"MD\","
    "\"CSV\",\"JSON\",\"XML\"]},"
    "\"totalChars\":{\"type\":\"integer\",\"minimum\":0},"
    "\"truncated\":{\"type\":\"boolean\"},"
    "\"truncatedReason\":{\"type\":\"string\"},"
    "\"streamedThrough\":{\"type\":\"integer\",\"minimum\":0},"
    "\"shortened\":{\"type\":\"boolean\",\"description\":\"The chunk is shorter than "
    "chunkChars so that the answer fits its size limit; nextOffset reads on\"},"
    "\"provenance\":{\"type\":\"object\",\"description\":\"Where the text came from: "
    "{kind, source, sourceName, offset, endOffset, untrusted}\"}}}";

typedef enum xstate { X_NONE, X_RUNNING, X_ENDED } xstate_t;

/* One call, in its arena. */
typedef struct ft {
  dg_mcp_tool_call_t *call;
  dg_tools_env_t *env;
  /* Kept apart from env: the process clears env's members while calls
   * that hold a slot are still ending. */
  dg_files_t *files;
  const dg_file_settings_t *cfg;
  dg_files_slot_t slot;
  bool has_slot;
  uint64_t offset;
  dg_http_url_t url;
  const dg_file_source_t *source;
  const char *key;       /* cache key: the URL, normalised */
  const char *etag_sent; /* validators of a stale cached copy, or NULL */
  const char *lm_sent;
  bool refetched; /* a 304 found the copy gone and the download ran again */
  const char *content_type, *etag, *last_modified; /* of the 2xx answer */
  dg_files_fetch_t *fetch;                         /* while the download runs */
  dg_extract_t *x;
  xstate_t xstate;
  bool x_closed;         /* dg_extract_close was called before its on_done */
  dg_extract_doc_t *doc; /* the text, once known */
  bool failed;
  dg_errctx_t err; /* the first failure */
  bool canceled;
  bool ended;
  bool stream; /* the caller gave a progress token */
  bool stream_stopped;
  uint64_t streamed_through; /* nextOffset of the last chunk sent */
} ft_t;

static int start_fetch(ft_t *t);

/* ---- Failures and the answer -------------------------------------------------- */

/* Keeps the first failure; later ones are its consequences. */
static void fail(ft_t *t, const dg_errctx_t *err) {
  if (t->failed)
    return;
  t->failed = true;
  t->err = *err;
}

/* An extraction's reason, said of the document. */
static void fail_extraction(ft_t *t, int status, const dg_errctx_t *err) {
  char url[512];
  dg_errctx_t e;
  dg_http_url_display(&t->url, url, sizeof(url));
  dg_errctx_set(&e, status, "url", "The document at '%s' cannot be read: %s.", url,
                err != NULL && err->message[0] ? err->message : dg_strerror(status));
  fail(t, &e);
}

/* Sends one chunk as a progress notification; the first one the client
 * cannot take ends the streaming (the answer says how far it got). */
static void stream_chunk(ft_t *t, const dg_extract_chunk_t *c) {
  if (!t->stream || t->stream_stopped)
    return;
  char *text = malloc(c->len + 1);
  json_t *meta = json_pack("{s:I,s:o,s:b,s:s}", "offset", (json_int_t)c->offset, "nextOffset",
                           c->has_more ? json_integer((json_int_t)c->next_offset) : json_null(),
                           "hasMore", c->has_more, "format", dg_extract_format_name(c->format));
  int rc = text != NULL && meta != NULL ? 0 : DG_ENOMEM;
  if (rc == 0) {
    memcpy(text, c->text, c->len);
    text[c->len] = '\0';
    rc = dg_mcp_tool_call_progress_meta(t->call, (double)c->next_offset,
                                        c->has_more ? -1.0 : (double)c->next_offset, text, meta);
  }
  free(text);
  json_decref(meta);
  t->stream_stopped = rc != 0;
  if (rc == 0)
    t->streamed_through = c->next_offset;
}

/* A cached document streams all its chunks from offset at once. */
static void stream_doc(ft_t *t, dg_extract_doc_t *doc) {
  dg_extract_chunk_t c = {.has_more = true};
  uint64_t at = t->offset;
  dg_errctx_t err;
  while (c.has_more && !t->stream_stopped &&
         dg_extract_doc_chunk(doc, at, t->cfg->chunk_chars, &c, &err) == 0) {
    stream_chunk(t, &c);
    at = c.next_offset;
  }
}

/* The chunk at offset that fits the answer's budget: a shorter one than
 * chunkChars when its text would not (nextOffset then reads on). */
static int fitting_chunk(ft_t *t, dg_extract_doc_t *doc, dg_extract_chunk_t *c, bool *shortened,
                         dg_errctx_t *err) {
  size_t budget = dg__tools_budget(t->call);
  size_t room = dg__tools_document_room(budget ? budget : dg_mcp_tool_call_result_limit(t->call));
  size_t chars = t->cfg->chunk_chars;
  int rc = dg_extract_doc_chunk(doc, t->offset, chars, c, err);
  *shortened = false;
  while (rc == 0 && c->len > room && chars > DG_EXTRACT_CHUNK_MIN) {
    /* Fewer characters in proportion, with a margin for wide ones. */
    size_t next = (size_t)((double)chars * (double)room / (double)c->len * 0.9);
    chars = next > DG_EXTRACT_CHUNK_MIN && next < chars ? next : DG_EXTRACT_CHUNK_MIN;
    rc = dg_extract_doc_chunk(doc, t->offset, chars, c, err);
    *shortened = true;
  }
  return rc;
}

static void answer(ft_t *t, dg_extract_doc_t *doc, bool streamed) {
  dg_extract_chunk_t c;
  dg_errctx_t err;
  bool shortened = false;
  if (fitting_chunk(t, doc, &c, &shortened, &err) != 0) {
    char msg[sizeof(err.message)];
    dg_strlcpy(msg, err.message, sizeof(msg));
    dg_errctx_set(&err, DG_EINVAL, "offset",
                  "Invalid argument 'offset': %s; give 0, or the nextOffset of the previous "
                  "response.",
                  msg);
    dg_mcp_tool_call_fail(t->call, &err);
    return;
  }
  if (t->stream && !streamed)
    stream_doc(t, doc);
  json_t *result = dg_extract_chunk_json(&c);
  if (result != NULL)
    json_object_set_new(result, "totalChars", json_integer((json_int_t)dg_extract_doc_chars(doc)));
  if (result != NULL && t->stream)
    json_object_set_new(result, "streamedThrough", json_integer((json_int_t)t->streamed_through));
  if (result != NULL && shortened)
    json_object_set_new(result, "shortened", json_true());
  char url[2048];
  dg_http_url_display(&t->url, url, sizeof(url));
  dg__tools_reply_document(t->call, result, url, t->source ? t->source->name : NULL);
}

/* Ends the call once neither the download nor the extraction runs. */
static void maybe_end(ft_t *t) {
  if (t->fetch != NULL || t->xstate == X_RUNNING || t->ended)
    return;
  t->ended = true;
  if (t->has_slot) {
    t->has_slot = false;
    dg_files_release(t->files);
  }
  if (t->doc != NULL && !t->failed && !t->canceled)
    answer(t, t->doc, t->xstate == X_ENDED); /* a revalidated copy was not streamed yet */
  else if (t->canceled && !t->failed)
    dg_mcp_tool_call_failf(t->call, "The document was not read: the call was canceled.");
  else
    dg_mcp_tool_call_fail(t->call, &t->err);
  dg_extract_doc_unref(t->doc);
  t->doc = NULL;
}

/* ---- Extraction ------------------------------------------------------------------ */

static void on_xchunk(dg_extract_t *x, const dg_extract_chunk_t *chunk, void *data) {
  stream_chunk(data, chunk);
}

static void on_xdone(dg_extract_t *x, int status, const dg_errctx_t *err, void *data) {
  ft_t *t = data;
  t->xstate = X_ENDED;
  t->x = NULL;
  if (status == 0) {
    t->doc = dg_extract_result(x);
    dg_extract_cache_t *cache = dg_files_cache(t->files);
    if (cache != NULL && t->doc != NULL)
      dg_extract_cache_put(cache, t->key, t->etag, t->last_modified, t->doc);
  } else if (status != DG_ECANCELED || !t->canceled) {
    fail_extraction(t, status, err);
  }
  if (!t->x_closed)
    dg_extract_close(x);
  /* The rest of the download is of no use once the extraction failed. */
  if (status != 0 && t->fetch != NULL)
    dg_files_fetch_cancel(t->fetch);
  maybe_end(t);
}

static int start_extraction(ft_t *t) {
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_input_bytes = t->cfg->max_download_bytes;
  limits.max_text_bytes = t->cfg->max_text_bytes;
  limits.max_time_ms = t->cfg->extract_timeout_ms;
  /* MuPDF's own cap leaves the other half of the address space to the
   * document, the text and the parsers around it. */
  limits.max_memory_bytes = t->cfg->extract_memory_bytes / 2;
  /* Every document is parsed in an extractor process of its own, with
   * limits the operating system enforces. */
  dg_extract_isolation_t iso = {.worker_path = dg_files_worker(t->files),
                                .cpu_seconds = t->cfg->extract_cpu_seconds,
                                .memory_bytes = t->cfg->extract_memory_bytes};
  /* Without streaming the whole text is cached, whatever the offset. */
  dg_extract_request_t req = {.content_type = t->content_type,
                              .name = t->key,
                              .limits = &limits,
                              .offset = t->stream ? t->offset : 0,
                              .chunk_chars = t->cfg->chunk_chars,
                              .isolation = &iso};
  dg_errctx_t err;
  int rc = iso.worker_path[0] != '\0'
               ? dg_extract_start(dg_mcp_tool_call_loop(t->call), &req, on_xchunk, on_xdone, t,
                                  &t->x, &err)
               : dg_errctx_set(&err, DG_EIO, "url",
                               "the extractor process cannot be started: this program's path "
                               "is unknown");
  if (rc != 0) {
    fail_extraction(t, rc, &err);
    t->xstate = X_ENDED;
    return rc;
  }
  t->xstate = X_RUNNING;
  return 0;
}

static void close_extraction(ft_t *t) {
  if (t->xstate != X_RUNNING || t->x_closed)
    return;
  t->x_closed = true;
  dg_extract_close(t->x);
}

/* ---- Download ---------------------------------------------------------------------- */

static const char *copy(ft_t *t, const char *s) {
  return s != NULL ? dg_arena_strdup(dg_mcp_tool_call_arena(t->call), s) : NULL;
}

static int on_head(void *user, const char *content_type, const char *etag,
                   const char *last_modified, int64_t length) {
  ft_t *t = user;
  t->content_type = copy(t, content_type);
  t->etag = copy(t, etag);
  t->last_modified = copy(t, last_modified);
  if (length < 0 || (uint64_t)length <= t->cfg->max_download_bytes)
    return 0;
  char url[512];
  dg_errctx_t err;
  dg_http_url_display(&t->url, url, sizeof(url));
  dg_errctx_set(&err, DG_E2BIG, "url",
                "The document at '%s' is larger than the download limit of %zu bytes (it has "
                "%lld).",
                url, t->cfg->max_download_bytes, (long long)length);
  fail(t, &err);
  return DG_E2BIG;
}

static int on_body(void *user, const char *data, size_t len) {
  ft_t *t = user;
  if (t->xstate == X_NONE && start_extraction(t) != 0)
    return t->err.code;
  if (t->xstate != X_RUNNING || t->x_closed)
    return DG_ECANCELED;
  return dg_extract_feed(t->x, data, len);
}

/* A 304 to the validators of the stale copy: it is fresh again. */
static void revalidated(ft_t *t) {
  dg_extract_cache_t *cache = dg_files_cache(t->files);
  t->doc = cache != NULL ? dg_extract_cache_get(cache, t->key, t->etag_sent, t->lm_sent) : NULL;
  if (t->doc != NULL || t->refetched)
    return;
  /* The copy was evicted meanwhile: download it whole, once. */
  t->refetched = true;
  t->etag_sent = t->lm_sent = NULL;
  start_fetch(t); /* a failure is recorded, and the call ends below */
}

static void on_fetch_done(void *user, int rc, bool not_modified, bool aborted,
                          const dg_errctx_t *err) {
  ft_t *t = user;
  t->fetch = NULL;
  if (rc == 0 && not_modified) {
    revalidated(t);
  } else if (rc == 0) {
    if (t->xstate == X_NONE)
      start_extraction(t); /* an empty body */
    if (t->xstate == X_RUNNING && !t->x_closed)
      dg_extract_finish(t->x);
  } else {
    if (!aborted && !(rc == DG_ECANCELED && t->canceled))
      fail(t, err);
    close_extraction(t);
  }
  maybe_end(t);
}

static const dg_files_fetch_ops_t fetch_ops = {on_head, on_body, on_fetch_done};

static int start_fetch(ft_t *t) {
  dg_files_fetch_req_t req = {.loop = dg_mcp_tool_call_loop(t->call),
                              .client = &t->env->client,
                              .connectors = &t->env->connectors,
                              .cfg = t->cfg,
                              .arena = dg_mcp_tool_call_arena(t->call),
                              .request_id = dg_mcp_tool_call_request_id(t->call),
                              .trace_id = dg_mcp_tool_call_trace_id(t->call),
                              .url = &t->url,
                              .source = t->source,
                              .principal = dg_mcp_tool_call_principal(t->call),
                              .etag = t->etag_sent,
                              .last_modified = t->lm_sent,
                              .ops = &fetch_ops,
                              .user = t};
  dg_errctx_t err;
  int rc = dg_files_fetch_start(&req, &t->fetch, &err);
  if (rc != 0) {
    t->fetch = NULL;
    fail(t, &err);
  }
  return rc;
}

/* ---- Stages ---------------------------------------------------------------------------- */

static void on_cancel(dg_mcp_tool_call_t *call, void *data) {
  ft_t *t = data;
  t->canceled = true;
  if (t->slot.queued) {
    dg_files_forget(t->files, &t->slot);
    maybe_end(t);
    return;
  }
  if (t->fetch != NULL)
    dg_files_fetch_cancel(t->fetch);
  close_extraction(t);
}

/* Granted a slot: a stale copy's validators make the download conditional. */
static void slot_granted(dg_files_slot_t *slot) {
  ft_t *t = (ft_t *)((char *)slot - offsetof(ft_t, slot));
  dg_extract_cache_t *cache = dg_files_cache(t->files);
  const char *etag = NULL, *lm = NULL;
  t->has_slot = true;
  if (cache != NULL && dg_extract_cache_validators(cache, t->key, &etag, &lm)) {
    t->etag_sent = copy(t, etag);
    t->lm_sent = copy(t, lm);
  }
  if (start_fetch(t) != 0)
    maybe_end(t);
}

static int take_slot(ft_t *t, dg_errctx_t *err) {
  t->slot.start = slot_granted;
  int rc = dg_files_acquire(t->files, &t->slot, t->cfg->max_concurrent, t->cfg->max_queued);
  if (rc == 0)
    slot_granted(&t->slot);
  if (rc >= 0)
    return 0;
  return dg_errctx_set(err, rc, "url",
                       "The document cannot be read now: %u documents are being read and %u "
                       "calls wait; try again in a moment.",
                       t->cfg->max_concurrent, t->cfg->max_queued);
}

/* A fresh cached copy answers at once. */
static bool serve_cached(ft_t *t) {
  dg_extract_cache_t *cache = dg_files_cache(t->files);
  dg_extract_doc_t *doc = cache != NULL ? dg_extract_cache_get(cache, t->key, NULL, NULL) : NULL;
  if (doc == NULL)
    return false;
  answer(t, doc, false);
  dg_extract_doc_unref(doc);
  return true;
}

static int check_args(ft_t *t, dg_errctx_t *err) {
  json_t *args = dg_mcp_tool_call_args(t->call);
  const char *url = json_string_value(json_object_get(args, "url"));
  t->offset = (uint64_t)json_integer_value(json_object_get(args, "offset"));
  t->streamed_through = t->offset; /* nothing streamed yet */
  t->cfg = &dg_mcp_tool_call_catalog(t->call)->files;
  t->stream = dg_mcp_tool_call_wants_progress(t->call);
  if (t->files == NULL)
    return dg_errctx_set(err, DG_ENOTSUP, "url",
                         "Documents cannot be read: get_file_text is not running in this "
                         "gateway.");
  int rc =
      dg_files_check(t->cfg, dg_mcp_tool_call_principal(t->call), dg_mcp_tool_call_arena(t->call),
                     "Invalid argument 'url':", url, &t->url, &t->source, err);
  if (rc == 0)
    t->key = dg_http_url_full(dg_mcp_tool_call_arena(t->call), &t->url);
  if (rc == 0 && t->key == NULL)
    rc = dg_errctx_set(err, DG_ENOMEM, "url", "out of memory");
  return rc;
}

static int start(dg_mcp_tool_call_t *call, void *state, dg_errctx_t *err) {
  ft_t *t = state;
  t->call = call;
  t->env = dg_tools_env(call);
  t->files = t->env != NULL ? t->env->files : NULL;
  int rc = check_args(t, err);
  if (rc != 0 || serve_cached(t))
    return rc;
  dg_mcp_tool_call_on_cancel(call, on_cancel, t);
  return take_slot(t, err);
}

static void run(dg_mcp_tool_call_t *call) {
  dg__tools_start(call, sizeof(ft_t), "The document could not be read", start);
}

const dg_tool_t dg_tool_get_file_text = {
    .name = "get_file_text",
    .title = "Read the text of a document",
    .description =
        "Extracts readable text from a document URL: pass the externalFileLocation of an entity "
        "of type File (call get_data_models first, then query_entities or get_entities_by_ids "
        "on the Files model). Supported "
        "formats: PDF, DOCX, PPTX, HTML, TXT, MD, CSV, JSON, XML. The text comes in chunks "
        "(10000 characters unless configured otherwise): {text, offset, nextOffset, hasMore, "
        "format, totalChars}. Call "
        "again with offset set to the returned nextOffset until hasMore is false; offsets count "
        "characters. PDF pages are marked '--- Page N ---' and slides '--- Slide N ---'; table "
        "cells are separated by ' | '. truncated is true when the document's text was longer "
        "than the gateway keeps. Only URLs under the gateway's configured document sources can "
        "be read. With a progress token, every chunk from offset on is also sent as a progress "
        "notification (message: the chunk's text; _meta: offset, nextOffset, hasMore, format) as "
        "soon as it is extracted, and streamedThrough tells how far that stream got.",
    .input_schema = input_schema,
    .output_schema = output_schema,
    DG__TOOLS_READS_UPSTREAM,
    .run = run,
};
