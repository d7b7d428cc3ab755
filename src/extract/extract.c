/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* One extraction driven by a download on the loop: bytes are fed as they
 * arrive, the format is detected from the first of them, and the extractor
 * runs either in an extractor process of its own (proc.c, with the limits
 * of the request's isolation) or on the libuv threadpool one bounded step
 * at a time. As the text grows the loop cuts the chunks that have become
 * final and hands them over; the completion comes last, exactly once, never
 * from inside dg_extract_feed, dg_extract_finish or dg_extract_close (a
 * zero-delay timer carries failures found there to a later loop turn).
 * With an extractor process, the threadpool only builds the index of the
 * finished text (linear in it, bounded by max_text_bytes).
 *
 * Ownership: the loop owns the pending input; the step in flight owns the
 * working input and the run's text, which the loop reads only between
 * steps. Memory is freed in the timer's close callback, once no step is in
 * flight. */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "extract/internal.h"

typedef enum xstate {
  X_SNIFFING, /* gathering the first bytes to detect the format */
  X_READING,  /* the extractor runs as input allows */
  X_DONE,     /* the completion has been delivered */
  X_CLOSED,   /* the owner has closed: memory goes once no step runs */
} xstate_t;

struct dg_extract {
  uv_loop_t *loop;
  uv_timer_t timer;
  uv_work_t work;
  xstate_t state;
  bool work_busy;
  bool finished;    /* dg_extract_finish was called */
  bool input_moved; /* a whole-document extractor has its input */
  bool work_last;   /* the step in flight has the last bytes */
  bool at_offset;   /* chunks have reached the requested offset */
  bool delivered;   /* on_done has run */
  dg_extract_chunk_cb on_chunk;
  dg_extract_done_cb on_done;
  void *data;
  char *content_type;
  char *name;
  dg_extract_format_t forced;
  dg_extract_limits_t limits;
  bool isolated; /* runs in an extractor process with iso's limits */
  dg_extract_isolation_t iso;
  char *worker_path;
  dg__xproc_t *proc;  /* while the extractor process runs */
  bool proc_finished; /* the process has the whole document */
  uint64_t offset;
  size_t chunk_chars;
  dg_buf_t pending; /* fed, not yet handed to a step */
  dg_buf_t working; /* read by the step in flight */
  size_t fed;
  dg__xrun_t *run;
  dg_extract_doc_t *doc; /* built by the last step */
  int work_rc;
  int failure; /* the first failure, reported by on_done */
  dg_errctx_t err;
  size_t pos;         /* byte where the next chunk starts */
  uint64_t pos_chars; /* its character offset */
  uint64_t started_ms;
};

static void schedule(dg_extract_t *x);
static void stop_process(dg_extract_t *x);
static void timer_cb(uv_timer_t *t);

static const char *state_name(xstate_t s) {
  static const char *const names[] = {"sniffing", "reading", "done", "closed"};
  return names[s];
}

/* The one place the state changes: checks the transition, logs it. */
static void set_state(dg_extract_t *x, xstate_t next) {
  bool legal = (x->state == X_SNIFFING && next == X_READING) ||
               (x->state < X_DONE && next == X_DONE) || next == X_CLOSED;
  assert(legal && x->state != X_CLOSED);
  (void)legal;
  if (dg_log_enabled(DG_LOG_DEBUG))
    dg_log_json(DG_LOG_DEBUG, "extract_state",
                json_pack("{s:s,s:s}", "from", state_name(x->state), "to", state_name(next)));
  x->state = next;
}

/* Records the first failure; the step in flight, if any, stops early. */
static void fail(dg_extract_t *x, int rc, const dg_errctx_t *err) {
  if (x->failure != 0)
    return;
  x->failure = rc;
  if (err != NULL && err->code != 0)
    x->err = *err;
  else
    dg_errctx_set(&x->err, rc, "url", "%s", dg_strerror(rc));
  if (x->run != NULL)
    atomic_store(&x->run->canceled, true);
}

/* Described at the first extraction: a metric appears once touched. */
static void describe_metrics(void) {
  static bool described;
  if (described)
    return;
  described = true;
  dg_metrics_describe("datagate_extract_total", "Document extractions by format and result.");
  dg_metrics_describe("datagate_extract_seconds",
                      "Document extraction duration, from start to the last chunk.");
}

static void count_result(dg_extract_t *x, int status) {
  char labels[96];
  describe_metrics();
  dg_extract_format_t f = x->run != NULL ? x->run->format : DG_EXTRACT_UNKNOWN;
  snprintf(labels, sizeof(labels), "format=\"%s\",result=\"%s\"", dg_extract_format_name(f),
           status == 0 ? "ok" : dg_err_name(status));
  dg_metrics_counter_add("datagate_extract_total", labels, 1);
  dg_metrics_observe("datagate_extract_seconds", NULL,
                     (double)(dg_now_ms() - x->started_ms) / 1000.0);
}

static void deliver_done(dg_extract_t *x) {
  if (x->delivered)
    return;
  x->delivered = true;
  stop_process(x);
  int status = x->failure;
  count_result(x, status);
  if (x->state != X_CLOSED)
    set_state(x, X_DONE);
  x->on_done(x, status, &x->err, x->data);
}

/* ---- Closing ------------------------------------------------------------------ */

static void free_extract(dg_extract_t *x) {
  stop_process(x);
  if (x->run != NULL) {
    dg__xrun_free(x->run);
    free(x->run);
  }
  dg_extract_doc_unref(x->doc);
  dg_buf_free(&x->pending);
  dg_buf_free(&x->working);
  free(x->content_type);
  free(x->name);
  free(x->worker_path);
  free(x);
}

static void on_closed(uv_handle_t *h) {
  dg_extract_t *x = h->data;
  if (!x->delivered) {
    fail(x, DG_ECANCELED, NULL);
    dg_errctx_set(&x->err, DG_ECANCELED, "url", "the extraction was canceled");
    deliver_done(x);
  }
  free_extract(x);
}

/* Closes the timer once no step is in flight; on_closed frees. */
static void close_when_idle(dg_extract_t *x) {
  if (!x->work_busy && !uv_is_closing((uv_handle_t *)&x->timer))
    uv_close((uv_handle_t *)&x->timer, on_closed);
}

void dg_extract_close(dg_extract_t *x) {
  if (x == NULL || x->state == X_CLOSED)
    return;
  set_state(x, X_CLOSED);
  if (x->run != NULL)
    atomic_store(&x->run->canceled, true);
  stop_process(x);
  close_when_idle(x);
}

/* ---- Chunks ---------------------------------------------------------------------- */

/* The text the loop may read now: the document once built, else the run's
 * growing text (stable between steps). */
static const char *current_text(dg_extract_t *x, size_t *len) {
  if (x->doc != NULL)
    return dg_extract_doc_text(x->doc, len);
  *len = x->run->text.len;
  return x->run->text.data != NULL ? x->run->text.data : "";
}

/* Moves to the requested offset; false while the text is too short. */
static bool reach_offset(dg_extract_t *x, const char *text, size_t len, bool complete) {
  uint64_t taken = 0;
  x->pos = dg__utf8_advance(text, len, x->pos, x->offset - x->pos_chars, &taken);
  x->pos_chars += taken;
  x->at_offset = x->pos_chars == x->offset;
  if (!x->at_offset && complete) {
    dg_errctx_t err;
    dg_errctx_set(&err, DG_EINVAL, "offset",
                  "offset %llu is past the end of the text: allowed are 0 to %llu (the text "
                  "has %llu characters)",
                  (unsigned long long)x->offset, (unsigned long long)x->pos_chars,
                  (unsigned long long)x->pos_chars);
    fail(x, DG_EINVAL, &err);
  }
  return x->at_offset;
}

/* Hands over every chunk that is final; complete once the text is. */
static void emit_chunks(dg_extract_t *x, bool complete) {
  size_t len = 0, end = 0;
  uint64_t chars = 0;
  const char *text = current_text(x, &len);
  if (!x->at_offset && !reach_offset(x, text, len, complete))
    return;
  while (x->state == X_READING &&
         dg__chunk_end(text, len, x->pos, x->chunk_chars, complete, &end, &chars)) {
    dg_extract_chunk_t c = {.text = text + x->pos,
                            .len = end - x->pos,
                            .offset = x->pos_chars,
                            .next_offset = x->pos_chars + chars,
                            .has_more = end < len || !complete,
                            .format = x->run->format};
    /* Every chunk says the text was cut, once that is known. */
    if (x->run->truncated[0] != '\0')
      c.truncated = x->run->truncated;
    x->pos = end;
    x->pos_chars += chars;
    x->on_chunk(x, &c, x->data);
    if (!c.has_more)
      break;
  }
}

/* ---- Steps on the threadpool ---------------------------------------------------------- */

static void work_cb(uv_work_t *req) {
  dg_extract_t *x = req->data;
  dg__xrun_t *run = x->run;
  run->in = (const unsigned char *)x->working.data;
  run->in_len = x->working.len;
  run->in_last = x->work_last;
  x->work_rc = dg__xrun_step(run);
  /* The index over a large text is built here, off the loop. */
  if (x->work_rc == 0 && run->done) {
    x->doc = dg__xrun_finish(run);
    if (x->doc == NULL)
      x->work_rc = dg_errctx_set(&run->err, DG_ENOMEM, "url", "out of memory");
  }
}

static void after_work_cb(uv_work_t *req, int status) {
  dg_extract_t *x = req->data;
  x->work_busy = false;
  if (x->state == X_CLOSED) {
    close_when_idle(x);
    return;
  }
  if (x->work_rc != 0)
    fail(x, x->work_rc, &x->run->err);
  if (x->failure == 0)
    emit_chunks(x, x->doc != NULL);
  if (x->state == X_CLOSED) {
    close_when_idle(x);
    return;
  }
  if (x->failure != 0 || x->doc != NULL) {
    deliver_done(x);
    return;
  }
  if (!x->run->ext->whole)
    dg_buf_reset(&x->working);
  schedule(x);
}

static void queue_step(dg_extract_t *x) {
  x->work.data = x;
  x->work_busy = true;
  int rc = uv_queue_work(x->loop, &x->work, work_cb, after_work_cb);
  if (rc != 0) {
    x->work_busy = false;
    fail(x, DG_EIO, NULL);
  }
}

static void swap(dg_buf_t *a, dg_buf_t *b) {
  dg_buf_t t = *a;
  *a = *b;
  *b = t;
}

/* ---- In an extractor process ------------------------------------------------------------ */

static void stop_process(dg_extract_t *x) {
  dg__xproc_close(x->proc);
  x->proc = NULL;
}

static void on_proc_text(void *user, const char *text, size_t len) {
  dg_extract_t *x = user;
  /* The process bounds its text by max_text_bytes, as the buffer does. */
  if (dg_buf_append(&x->run->text, text, len) != 0) {
    fail(x, DG_ENOMEM, NULL);
    uv_timer_start(&x->timer, timer_cb, 0, 0);
    return;
  }
  emit_chunks(x, false);
}

/* The index over the finished text is built here, off the loop. */
static void index_cb(uv_work_t *req) {
  dg_extract_t *x = req->data;
  x->doc = dg__xrun_finish(x->run);
  x->work_rc = x->doc != NULL ? 0 : dg_errctx_set(&x->run->err, DG_ENOMEM, "url", "out of memory");
}

static void on_proc_end(void *user, int status, const dg_errctx_t *err, const char *truncated) {
  dg_extract_t *x = user;
  stop_process(x);
  if (status != 0) {
    fail(x, status, err);
    uv_timer_start(&x->timer, timer_cb, 0, 0);
    return;
  }
  if (truncated[0] != '\0')
    dg__xrun_cut(x->run, "%s", truncated);
  x->work.data = x;
  x->work_busy = true;
  if (uv_queue_work(x->loop, &x->work, index_cb, after_work_cb) != 0) {
    x->work_busy = false;
    fail(x, DG_EIO, NULL);
    uv_timer_start(&x->timer, timer_cb, 0, 0);
  }
}

static const dg__xproc_ops_t proc_ops = {on_proc_text, on_proc_end};

/* Starts the process once the format is known, then hands it the input. */
static void feed_process(dg_extract_t *x) {
  dg_errctx_t err;
  if (x->proc == NULL && !x->proc_finished &&
      dg__xproc_start(x->loop, &x->iso, x->run->format, x->content_type, &x->limits, &proc_ops, x,
                      &x->proc, &err) != 0) {
    fail(x, err.code, &err);
    return;
  }
  if (x->proc == NULL)
    return;
  if (x->pending.len > 0 && dg__xproc_write(x->proc, x->pending.data, x->pending.len) != 0) {
    fail(x, DG_ENOMEM, NULL);
    return;
  }
  dg_buf_reset(&x->pending);
  if (x->finished && !x->proc_finished) {
    x->proc_finished = true;
    dg__xproc_finish(x->proc);
  }
}

/* ---- Detection and scheduling ----------------------------------------------------------- */

/* Detects the format once enough bytes are in; false to wait for more. */
static bool detect(dg_extract_t *x) {
  if (x->pending.len < DG_EXTRACT_SNIFF_BYTES && !x->finished && x->forced == DG_EXTRACT_UNKNOWN)
    return false;
  dg_extract_format_t format = x->forced;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = format != DG_EXTRACT_UNKNOWN ? 0
                                        : dg_extract_detect(x->content_type, x->pending.data,
                                                            x->pending.len, x->name, &format, &err);
  x->run = rc == 0 ? calloc(1, sizeof(*x->run)) : NULL;
  if (rc == 0 && x->run == NULL)
    rc = dg_errctx_set(&err, DG_ENOMEM, "url", "out of memory");
  if (rc == 0 && dg__xrun_init(x->run, format, &x->limits, x->content_type) != 0)
    rc = x->run->err.code;
  if (rc != 0) {
    fail(x, rc, x->run != NULL ? &x->run->err : &err);
    return false;
  }
  set_state(x, X_READING);
  return true;
}

static void timer_cb(uv_timer_t *t) {
  dg_extract_t *x = t->data;
  if (x->state != X_CLOSED && !x->work_busy)
    deliver_done(x);
}

/* Decides what runs next; never calls the owner's callbacks itself. */
static void schedule(dg_extract_t *x) {
  if (x->state == X_CLOSED || x->delivered || x->work_busy)
    return;
  if (x->failure == 0 && x->state == X_SNIFFING && !detect(x) && x->failure == 0)
    return;
  if (x->failure == 0 && x->isolated)
    feed_process(x);
  if (x->failure != 0) {
    uv_timer_start(&x->timer, timer_cb, 0, 0);
    return;
  }
  if (x->isolated)
    return;
  if (x->run->ext->whole) {
    if (!x->finished)
      return;
    if (!x->input_moved)
      swap(&x->pending, &x->working);
    x->input_moved = true;
  } else {
    if (x->pending.len == 0 && !x->finished)
      return;
    swap(&x->pending, &x->working);
  }
  x->work_last = x->finished;
  queue_step(x);
  if (x->failure != 0)
    uv_timer_start(&x->timer, timer_cb, 0, 0);
}

/* ---- Public ------------------------------------------------------------------------------- */

static int copy_request(dg_extract_t *x, const dg_extract_request_t *req) {
  if (req->limits != NULL)
    x->limits = *req->limits;
  else
    dg_extract_limits_default(&x->limits);
  x->forced = req->format;
  x->offset = req->offset;
  x->chunk_chars = req->chunk_chars != 0 ? req->chunk_chars : DG_EXTRACT_CHUNK_DEFAULT;
  x->content_type = req->content_type != NULL ? strdup(req->content_type) : NULL;
  x->name = req->name != NULL ? strdup(req->name) : NULL;
  if ((req->content_type != NULL && x->content_type == NULL) ||
      (req->name != NULL && x->name == NULL))
    return DG_ENOMEM;
  if (req->isolation != NULL) {
    x->isolated = true;
    x->iso = *req->isolation;
    x->worker_path = strdup(req->isolation->worker_path);
    x->iso.worker_path = x->worker_path;
    if (x->worker_path == NULL)
      return DG_ENOMEM;
  }
  dg_buf_init(&x->pending, x->limits.max_input_bytes);
  dg_buf_init(&x->working, x->limits.max_input_bytes);
  return 0;
}

int dg_extract_start(uv_loop_t *loop, const dg_extract_request_t *req, dg_extract_chunk_cb on_chunk,
                     dg_extract_done_cb on_done, void *data, dg_extract_t **out, dg_errctx_t *err) {
  *out = NULL;
  size_t chunk = req->chunk_chars != 0 ? req->chunk_chars : DG_EXTRACT_CHUNK_DEFAULT;
  int rc = dg__chunk_size_check(chunk, err);
  if (rc != 0)
    return rc;
  dg_extract_t *x = calloc(1, sizeof(*x));
  if (x == NULL || copy_request(x, req) != 0) {
    if (x != NULL)
      free_extract(x);
    return dg_errctx_set(err, DG_ENOMEM, "url", "out of memory");
  }
  x->loop = loop;
  x->on_chunk = on_chunk;
  x->on_done = on_done;
  x->data = data;
  x->started_ms = dg_now_ms();
  uv_timer_init(loop, &x->timer);
  x->timer.data = x;
  *out = x;
  return 0;
}

int dg_extract_feed(dg_extract_t *x, const void *data, size_t len) {
  if (x->state == X_CLOSED || x->finished)
    return DG_EINVAL;
  if (x->failure != 0)
    return x->failure;
  x->fed += len;
  int rc = x->fed > x->limits.max_input_bytes ? DG_E2BIG : dg_buf_append(&x->pending, data, len);
  if (rc != 0) {
    dg_errctx_t err;
    dg_errctx_set(&err, rc, "url", "the document is larger than the limit of %zu bytes",
                  x->limits.max_input_bytes);
    fail(x, rc, rc == DG_E2BIG ? &err : NULL);
  }
  schedule(x);
  return x->failure;
}

int dg_extract_finish(dg_extract_t *x) {
  if (x->state == X_CLOSED || x->finished)
    return DG_EINVAL;
  x->finished = true;
  schedule(x);
  return x->failure;
}

dg_extract_doc_t *dg_extract_result(dg_extract_t *x) {
  if (!x->delivered || x->failure != 0 || x->doc == NULL)
    return NULL;
  return dg_extract_doc_ref(x->doc);
}

/* ---- Blocking ------------------------------------------------------------------------------- */

static int detect_buffer(const dg_extract_request_t *req, const void *data, size_t len,
                         dg_extract_format_t *format, dg_errctx_t *err) {
  *format = req->format;
  if (*format != DG_EXTRACT_UNKNOWN)
    return 0;
  size_t head = len < DG_EXTRACT_SNIFF_BYTES ? len : DG_EXTRACT_SNIFF_BYTES;
  return dg_extract_detect(req->content_type, data, head, req->name, format, err);
}

int dg_extract_buffer(const dg_extract_request_t *req, const void *data, size_t len,
                      dg_extract_doc_t **out, dg_errctx_t *err) {
  dg_extract_limits_t limits;
  dg_extract_format_t format = DG_EXTRACT_UNKNOWN;
  *out = NULL;
  if (req->limits != NULL)
    limits = *req->limits;
  else
    dg_extract_limits_default(&limits);
  if (len > limits.max_input_bytes)
    return dg_errctx_set(err, DG_E2BIG, "url", "the document is larger than the limit of %zu bytes",
                         limits.max_input_bytes);
  int rc = detect_buffer(req, data, len, &format, err);
  dg__xrun_t *run = rc == 0 ? malloc(sizeof(*run)) : NULL;
  if (rc == 0 && run == NULL)
    rc = dg_errctx_set(err, DG_ENOMEM, "url", "out of memory");
  if (run != NULL) {
    rc = dg__xrun_init(run, format, &limits, req->content_type);
    run->in = data != NULL ? data : (const void *)"";
    run->in_len = len;
    run->in_last = true;
    while (rc == 0 && !run->done)
      rc = dg__xrun_step(run);
    *out = rc == 0 ? dg__xrun_finish(run) : NULL;
    if (rc == 0 && *out == NULL)
      rc = dg_errctx_set(&run->err, DG_ENOMEM, "url", "out of memory");
    if (rc != 0)
      *err = run->err;
    dg__xrun_free(run);
    free(run);
  }
  return rc;
}
