/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* One run of an extractor, shared by the threadpool path and the blocking
 * path: limits, deadline, cancel flag, output buffer and sink, and the
 * open-then-step sequence. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "extract/internal.h"

void dg_extract_limits_default(dg_extract_limits_t *l) {
  l->max_input_bytes = (size_t)64 << 20;
  l->max_text_bytes = (size_t)32 << 20;
  l->max_zip_entries = 10000;
  l->max_zip_entry_bytes = (size_t)128 << 20;
  l->max_zip_total_bytes = (size_t)256 << 20;
  l->max_zip_ratio = 200;
  l->max_depth = 200;
  l->max_units = 10000;
  l->max_memory_bytes = (size_t)512 << 20;
  l->max_time_ms = 20000;
  l->max_pages_per_step = 64;
  l->max_attributes = 1024;
}

int dg__xrun_init(dg__xrun_t *run, dg_extract_format_t format, const dg_extract_limits_t *limits,
                  const char *content_type) {
  memset(run, 0, sizeof(*run));
  atomic_init(&run->canceled, false);
  if (limits != NULL)
    run->limits = *limits;
  else
    dg_extract_limits_default(&run->limits);
  run->format = format;
  run->ext = dg__extract_extractor(format);
  dg__extract_charset(content_type, run->charset, sizeof(run->charset));
  dg_buf_init(&run->text, run->limits.max_text_bytes);
  dg__sink_init(&run->sink, &run->text);
  if (run->ext == NULL)
    return dg_errctx_set(&run->err, DG_ENOTSUP, "url", "no extractor for format %s",
                         dg_extract_format_name(format));
  run->state = calloc(1, run->ext->state_size > 0 ? run->ext->state_size : 1);
  if (run->state == NULL)
    return dg_errctx_set(&run->err, DG_ENOMEM, "url", "out of memory");
  return 0;
}

int dg__xrun_check(dg__xrun_t *run) {
  if (atomic_load_explicit(&run->canceled, memory_order_relaxed))
    return dg_errctx_set(&run->err, DG_ECANCELED, "url", "the extraction was canceled");
  if (run->deadline_ms != 0 && dg_now_ms() > run->deadline_ms)
    return dg_errctx_set(&run->err, DG_ETIMEDOUT, "url",
                         "extracting the text took longer than the limit of %llu ms",
                         (unsigned long long)run->limits.max_time_ms);
  return 0;
}

bool dg__xrun_full(const dg__xrun_t *run) {
  return run->sink.truncated;
}

void dg__xrun_cut(dg__xrun_t *run, const char *fmt, ...) {
  if (run->truncated[0] != '\0')
    return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(run->truncated, sizeof(run->truncated), fmt, ap);
  va_end(ap);
}

int dg__xrun_step(dg__xrun_t *run) {
  int rc = 0;
  if (!run->opened) {
    /* The clock starts with the parsing, not with the download. */
    run->deadline_ms = dg_now_ms() + run->limits.max_time_ms;
    run->opened = true;
    rc = run->ext->open(run);
  }
  rc = rc != 0 ? rc : dg__xrun_check(run);
  bool done = false;
  if (rc == 0)
    rc = run->ext->step(run, &done);
  if (rc == 0 && run->sink.truncated)
    dg__xrun_cut(run, "the text is longer than the limit of %zu bytes; the rest was cut",
                 run->limits.max_text_bytes);
  run->done = rc == 0 && (done || dg__xrun_full(run));
  if (rc != 0 && run->err.code == 0)
    dg_errctx_set(&run->err, rc, "url", "%s", dg_strerror(rc));
  return rc;
}

size_t dg__xrun_forget(dg__xrun_t *run, size_t upto) {
  if (upto > run->text.len)
    upto = run->text.len;
  if (upto <= DG__SINK_LOOKBACK)
    return 0;
  size_t drop = upto - DG__SINK_LOOKBACK;
  dg_buf_consume(&run->text, drop);
  run->text.max -= drop;
  return drop;
}

dg_extract_doc_t *dg__xrun_finish(dg__xrun_t *run) {
  size_t len = 0;
  char *text = dg_buf_steal(&run->text, &len);
  if (text == NULL)
    return NULL;
  return dg__extract_doc_new(text, len, run->format, run->truncated);
}

void dg__xrun_free(dg__xrun_t *run) {
  if (run->opened && run->ext != NULL)
    run->ext->close(run);
  if (run->in_file != NULL)
    fclose(run->in_file);
  run->in_file = NULL;
  free(run->state);
  run->state = NULL;
  dg_buf_free(&run->text);
}
