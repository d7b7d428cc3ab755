/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The gateway's side of an extractor process: started with uv_spawn, the
 * document written to its standard input as it arrives, its text read
 * from its standard output as it grows, all on the loop: no thread waits
 * for the process. Past the wall-time limit the process is killed
 * (SIGKILL) and the caller told at once; the CPU-time and address-space
 * limits are the process's own (worker.c), so the operating system stops
 * it whatever the parser does.
 *
 * Ownership: dg__xproc_close may come at any time, also from inside a
 * callback; the memory goes once every handle is closed, and the process
 * handle is closed only after the process has been reaped. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "extract/internal.h"

extern char **environ;

/* Beyond the extractor's own clock, which reports a clean time-out first. */
#define GRACE_MS 1000

struct dg__xproc {
  uv_loop_t *loop;
  uv_process_t proc;
  uv_pipe_t in, out;
  uv_timer_t timer;
  uv_shutdown_t shutdown;
  int handles; /* open handles; the memory goes when none is left */
  bool spawned;
  bool exited;
  bool eof;
  bool ended; /* ops->end has run */
  bool closed;
  bool in_done; /* standard input is shut or closing */
  bool killed;  /* by the wall-time limit */
  int term_signal;
  int64_t exit_status;
  const dg__xproc_ops_t *ops;
  void *user;
  dg_extract_limits_t limits;
  unsigned cpu_seconds;
  size_t memory_bytes;
  size_t text_total;
  dg_buf_t frames; /* bytes read, not yet a whole frame */
  char piece[DG__WIRE_TEXT];
};

typedef struct wreq {
  uv_write_t req;
  char data[];
} wreq_t;

/* ---- Closing ------------------------------------------------------------------ */

static void on_handle_closed(uv_handle_t *h) {
  dg__xproc_t *p = h->data;
  if (--p->handles > 0)
    return;
  dg_buf_free(&p->frames);
  free(p);
}

static void close_handle(dg__xproc_t *p, uv_handle_t *h) {
  if (!uv_is_closing(h))
    uv_close(h, on_handle_closed);
}

static void kill_process(dg__xproc_t *p) {
  if (p->spawned && !p->exited)
    uv_process_kill(&p->proc, SIGKILL);
}

static void close_stdin(dg__xproc_t *p) {
  p->in_done = true;
  close_handle(p, (uv_handle_t *)&p->in);
}

void dg__xproc_close(dg__xproc_t *p) {
  if (p == NULL || p->closed)
    return;
  p->closed = true;
  kill_process(p);
  close_stdin(p);
  close_handle(p, (uv_handle_t *)&p->out);
  close_handle(p, (uv_handle_t *)&p->timer);
  /* A process handle closed before the exit would leave a zombie. */
  if (!p->spawned || p->exited)
    close_handle(p, (uv_handle_t *)&p->proc);
}

/* ---- The outcome ------------------------------------------------------------------ */

static void end(dg__xproc_t *p, int status, const dg_errctx_t *err, const char *truncated) {
  if (p->ended || p->closed)
    return;
  p->ended = true;
  uv_timer_stop(&p->timer);
  uv_read_stop((uv_stream_t *)&p->out);
  if (status != 0)
    kill_process(p);
  p->ops->end(p->user, status, err, truncated);
}

static void end_error(dg__xproc_t *p, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void end_error(dg__xproc_t *p, int code, const char *fmt, ...) {
  char message[sizeof(((dg_errctx_t *)0)->message)];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message, sizeof(message), fmt, ap);
  va_end(ap);
  dg_errctx_t err;
  dg_errctx_set(&err, code, "url", "%s", message);
  end(p, code, &err, NULL);
}

/* The process is gone without saying how it ended: the signal tells. */
static void end_from_exit(dg__xproc_t *p) {
  if (p->killed)
    end_error(p, DG_ETIMEDOUT, "extracting the text took longer than the limit of %llu ms",
              (unsigned long long)p->limits.max_time_ms);
  else if (p->term_signal == SIGXCPU || p->term_signal == SIGKILL)
    end_error(p, DG_ETIMEDOUT, "extracting the text used more than the CPU-time limit of %u s",
              p->cpu_seconds);
  else if (p->term_signal != 0)
    end_error(p, DG_EIO,
              "the extractor process ended abnormally (signal %d), for example past its memory "
              "limit of %zu MiB",
              p->term_signal, p->memory_bytes >> 20);
  else
    end_error(p, DG_EIO, "the extractor process ended without an answer (exit status %lld)",
              (long long)p->exit_status);
}

static void on_exit_cb(uv_process_t *proc, int64_t exit_status, int term_signal) {
  dg__xproc_t *p = proc->data;
  p->exited = true;
  p->exit_status = exit_status;
  p->term_signal = term_signal;
  if (p->closed) {
    close_handle(p, (uv_handle_t *)&p->proc);
    return;
  }
  if (p->eof)
    end_from_exit(p);
}

static void on_deadline(uv_timer_t *t) {
  dg__xproc_t *p = t->data;
  p->killed = true;
  kill_process(p);
  /* The caller is freed now; the reaping follows on its own. */
  end_from_exit(p);
}

/* ---- Frames from the process --------------------------------------------------------- */

static uint32_t le32(const unsigned char *b) {
  return (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
}

static void on_failure_frame(dg__xproc_t *p, const unsigned char *b, size_t len) {
  if (len < 4) {
    end_error(p, DG_EIO, "the extractor process answered something unreadable");
    return;
  }
  int code = (int)le32(b);
  if (code >= 0)
    code = DG_EIO;
  end_error(p, code, "%.*s", (int)(len - 4), (const char *)b + 4);
}

static void on_done_frame(dg__xproc_t *p, const unsigned char *b, size_t len) {
  char truncated[256];
  size_t n = len < sizeof(truncated) - 1 ? len : sizeof(truncated) - 1;
  memcpy(truncated, b, n);
  truncated[n] = '\0';
  end(p, 0, NULL, truncated);
}

/* Handles one frame; false when nothing more is to be read. */
static bool on_frame(dg__xproc_t *p, char type, const unsigned char *b, size_t len) {
  if (type == 'T') {
    p->text_total += len;
    if (p->text_total > p->limits.max_text_bytes) {
      end_error(p, DG_EIO, "the extractor process wrote more text than the limit");
      return false;
    }
    p->ops->text(p->user, (const char *)b, len);
    return !p->closed && !p->ended;
  }
  if (type == 'D')
    on_done_frame(p, b, len);
  else if (type == 'E')
    on_failure_frame(p, b, len);
  else
    end_error(p, DG_EIO, "the extractor process answered something unreadable");
  return false;
}

static void take_frames(dg__xproc_t *p) {
  const unsigned char *b = (const unsigned char *)p->frames.data;
  size_t at = 0;
  bool more = true;
  while (more && p->frames.len - at >= DG__WIRE_FRAME) {
    size_t len = le32(b + at + 1);
    if (len > DG__WIRE_TEXT) {
      end_error(p, DG_EIO, "the extractor process answered something unreadable");
      return;
    }
    if (p->frames.len - at < DG__WIRE_FRAME + len)
      break;
    more = on_frame(p, (char)b[at], b + at + DG__WIRE_FRAME, len);
    at += DG__WIRE_FRAME + len;
  }
  if (!p->closed)
    dg_buf_consume(&p->frames, at);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  dg__xproc_t *p = h->data;
  *buf = uv_buf_init(p->piece, sizeof(p->piece));
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  dg__xproc_t *p = s->data;
  if (nread > 0) {
    if (dg_buf_append(&p->frames, buf->base, (size_t)nread) != 0)
      end_error(p, DG_EIO, "the extractor process answered something unreadable");
    else
      take_frames(p);
    return;
  }
  if (nread == 0)
    return;
  p->eof = true;
  uv_read_stop(s);
  if (p->exited)
    end_from_exit(p);
}

/* ---- The document to the process ------------------------------------------------------ */

static void on_written(uv_write_t *req, int status) {
  /* A write refused because the process ended is reported by its exit. */
  free(req->data);
}

static int write_bytes(dg__xproc_t *p, const void *data, size_t len) {
  if (p->in_done || len == 0)
    return 0;
  wreq_t *w = malloc(sizeof(*w) + len);
  if (w == NULL)
    return DG_ENOMEM;
  memcpy(w->data, data, len);
  w->req.data = w;
  uv_buf_t buf = uv_buf_init(w->data, (unsigned)len);
  if (uv_write(&w->req, (uv_stream_t *)&p->in, &buf, 1, on_written) != 0) {
    free(w);
    return DG_EIO;
  }
  return 0;
}

int dg__xproc_write(dg__xproc_t *p, const void *data, size_t len) {
  /* uv_buf_t lengths are unsigned int. */
  const char *at = data;
  int rc = 0;
  while (rc == 0 && len > 0) {
    size_t n = len < ((size_t)1 << 30) ? len : ((size_t)1 << 30);
    rc = write_bytes(p, at, n);
    at += n;
    len -= n;
  }
  return rc;
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  dg__xproc_t *p = req->data;
  close_handle(p, (uv_handle_t *)&p->in);
}

void dg__xproc_finish(dg__xproc_t *p) {
  if (p->in_done || p->closed)
    return;
  p->in_done = true;
  p->shutdown.data = p;
  if (uv_shutdown(&p->shutdown, (uv_stream_t *)&p->in, on_shutdown) != 0)
    close_handle(p, (uv_handle_t *)&p->in);
  uv_timer_start(&p->timer, on_deadline, p->limits.max_time_ms + GRACE_MS, 0);
}

/* ---- Start ------------------------------------------------------------------------------- */

static int write_head(dg__xproc_t *p, dg_extract_format_t format, const char *content_type) {
  size_t ct = content_type != NULL ? strlen(content_type) : 0;
  if (ct >= DG__WIRE_CONTENT_TYPE)
    ct = 0; /* only its charset matters, and no charset is that long */
  dg__wire_head_t head;
  memset(&head, 0, sizeof(head));
  head.magic = DG__WIRE_MAGIC;
  head.size = (uint32_t)sizeof(head);
  head.format = (uint32_t)format;
  head.content_type_len = (uint32_t)ct;
  head.cpu_seconds = p->cpu_seconds;
  head.memory_bytes = p->memory_bytes;
  head.parent = (int64_t)getpid();
  head.limits = p->limits;
  int rc = write_bytes(p, &head, sizeof(head));
  return rc == 0 ? write_bytes(p, content_type, ct) : rc;
}

/* The process gets none of the gateway's environment (tokens and client
 * secrets may be there), only the sanitizers' options of a test build. */
#define ENV_MAX 8

static void worker_env(char **env) {
  static const char *const kept[] = {
      "ASAN_OPTIONS=", "UBSAN_OPTIONS=", "LSAN_OPTIONS=", "TSAN_OPTIONS="};
  size_t n = 0;
  for (char **e = environ; e != NULL && *e != NULL && n < ENV_MAX - 1; e++) {
    for (size_t k = 0; k < DG_ARRAY_SIZE(kept); k++) {
      if (strncmp(*e, kept[k], strlen(kept[k])) == 0 && n < ENV_MAX - 1)
        env[n++] = *e;
    }
  }
  env[n] = NULL;
}

static int spawn(dg__xproc_t *p, const char *path) {
  char *args[] = {(char *)path, "--extract-worker", NULL};
  char *env[ENV_MAX];
  worker_env(env);
  uv_stdio_container_t stdio[3];
  stdio[0].flags = UV_CREATE_PIPE | UV_READABLE_PIPE;
  stdio[0].data.stream = (uv_stream_t *)&p->in;
  stdio[1].flags = UV_CREATE_PIPE | UV_WRITABLE_PIPE;
  stdio[1].data.stream = (uv_stream_t *)&p->out;
  stdio[2].flags = UV_INHERIT_FD;
  stdio[2].data.fd = 2;
  uv_process_options_t opt;
  memset(&opt, 0, sizeof(opt));
  opt.file = path;
  opt.args = args;
  opt.env = env;
  opt.exit_cb = on_exit_cb;
  opt.stdio = stdio;
  opt.stdio_count = 3;
  p->proc.data = p;
  int rc = uv_spawn(p->loop, &p->proc, &opt);
  p->handles++; /* the process handle, closed in any case */
  p->spawned = rc == 0;
  return rc;
}

static void init_handles(dg__xproc_t *p) {
  uv_pipe_init(p->loop, &p->in, 0);
  uv_pipe_init(p->loop, &p->out, 0);
  uv_timer_init(p->loop, &p->timer);
  p->in.data = p->out.data = p->timer.data = p;
  p->handles = 3;
}

int dg__xproc_start(uv_loop_t *loop, const dg_extract_isolation_t *iso, dg_extract_format_t format,
                    const char *content_type, const dg_extract_limits_t *limits,
                    const dg__xproc_ops_t *ops, void *user, dg__xproc_t **out, dg_errctx_t *err) {
  *out = NULL;
  dg__xproc_t *p = calloc(1, sizeof(*p));
  if (p == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "url", "out of memory");
  p->loop = loop;
  p->ops = ops;
  p->user = user;
  p->limits = *limits;
  p->cpu_seconds = iso->cpu_seconds > 0 ? iso->cpu_seconds : 1;
  p->memory_bytes = iso->memory_bytes;
  dg_buf_init(&p->frames, DG__WIRE_TEXT + 2 * DG__WIRE_FRAME + sizeof(p->piece));
  init_handles(p);
  int rc = spawn(p, iso->worker_path);
  if (rc == 0)
    rc = uv_read_start((uv_stream_t *)&p->out, on_alloc, on_read);
  const char *why = rc != 0 ? uv_strerror(rc) : NULL;
  if (rc == 0 && write_head(p, format, content_type) != 0) {
    rc = DG_EIO;
    why = "its request could not be written";
  }
  if (rc != 0) {
    dg__xproc_close(p);
    return dg_errctx_set(err, DG_EIO, "url", "the extractor process could not be started: %s", why);
  }
  *out = p;
  return 0;
}
