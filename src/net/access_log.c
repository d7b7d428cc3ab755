/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The access log: one JSON line per HTTP response, gathered in a bounded
 * buffer and written with one write(2) per loop turn, from a uv_check
 * handle that runs after the turn's I/O callbacks. A busy turn that fills
 * the buffer writes it at once; no request costs a system call of its own.
 * With a flush interval (server.accessLogFlushMs, as nginx's "buffer=64k
 * flush=1s") the lines wait across turns instead, until the buffer fills
 * or the interval after the first waiting line has passed, so that a
 * quiet process with one client at a time also writes rarely; what waits
 * is lost if the process dies.
 * Workers share the descriptor: a file is opened with O_APPEND, so that
 * each write lands whole after the others; to a pipe or socket (standard
 * error) a write is whole only up to PIPE_BUF bytes, so there the lines
 * go out in pieces of whole lines no longer than that. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "net/internal.h"

/* What one turn gathers before it writes early; a line is about 300 bytes. */
#define BUFFER_MAX (64 * 1024)
/* A path longer than this is cut in the line (the limit is the header's). */
#define TEXT_MAX 2048

struct dg_access_log {
  uv_check_t check;
  uv_timer_t timer;  /* the flush interval's, when one is set */
  uint64_t flush_ms; /* 0: written every loop turn */
  int open_handles;  /* freed when both handles are closed */
  int fd;            /* -1: off */
  bool owns_fd;      /* a file opened here, not standard error */
  bool stderr_level; /* "-": the line is an info line of the event log */
  bool pieces;       /* not a regular file: writes of at most PIPE_BUF */
  bool flushing;     /* the check handle is started */
  dg_buf_t buf;
};

/* How much of p[0..n) one write takes: all of it to a file; to a pipe the
 * whole lines that fit in PIPE_BUF (or one longer line by itself). */
DG_TESTABLE size_t dg__access_log_piece(bool pieces, const char *p, size_t n) {
  if (!pieces || n <= PIPE_BUF)
    return n;
  for (size_t i = PIPE_BUF; i > 0; i--) {
    if (p[i - 1] == '\n')
      return i;
  }
  const char *nl = memchr(p, '\n', n);
  return nl != NULL ? (size_t)(nl - p) + 1 : n;
}

/* Writes what is gathered; a failed write drops it (logging must never
 * take the process down, nor grow without bound). */
static void flush(dg_access_log_t *log) {
  const char *p = log->buf.data;
  size_t n = log->buf.len;
  while (n > 0 && log->fd >= 0) {
    ssize_t w = write(log->fd, p, dg__access_log_piece(log->pieces, p, n));
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    p += w;
    n -= (size_t)w;
  }
  dg_buf_reset(&log->buf);
}

/* Writes what waits and stops whichever of the two handles was waiting. */
static void flush_now(dg_access_log_t *log) {
  flush(log);
  uv_check_stop(&log->check);
  uv_timer_stop(&log->timer);
  log->flushing = false;
}

static void on_check(uv_check_t *check) {
  flush_now(check->data);
}

static void on_timer(uv_timer_t *timer) {
  flush_now(timer->data);
}

void dg_access_log_set_flush(dg_access_log_t *log, uint64_t ms) {
  if (log == NULL || log->flush_ms == ms)
    return;
  flush_now(log); /* nothing waits on the old rule */
  log->flush_ms = ms;
}

/* Opens target into *fd: -1 for none, 2 for "-", else the file appended to. */
static int open_target(const char *target, int *fd, dg_errctx_t *err) {
  *fd = -1;
  if (target == NULL)
    return 0;
  if (strcmp(target, "-") == 0) {
    *fd = 2;
    return 0;
  }
  *fd = open(target, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0640);
  if (*fd < 0)
    return dg_errctx_set(err, DG_EIO, "accessLog", "cannot open the access log '%s': %s", target,
                         strerror(errno));
  return 0;
}

static void use_target(dg_access_log_t *log, const char *target, int fd) {
  struct stat st;
  if (log->owns_fd)
    close(log->fd);
  log->fd = fd;
  log->owns_fd = fd > 2;
  log->stderr_level = target != NULL && strcmp(target, "-") == 0;
  log->pieces = fd >= 0 && (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode));
}

int dg_access_log_open(uv_loop_t *loop, const char *target, dg_access_log_t **out,
                       dg_errctx_t *err) {
  int fd = -1;
  int rc = open_target(target, &fd, err);
  dg_access_log_t *log = rc == 0 ? calloc(1, sizeof(*log)) : NULL;
  if (rc == 0 && log == NULL)
    rc = dg_errctx_set(err, DG_ENOMEM, "accessLog", "out of memory");
  if (rc != 0) {
    if (fd > 2)
      close(fd);
    return rc;
  }
  log->fd = -1;
  use_target(log, target, fd);
  dg_buf_init(&log->buf, BUFFER_MAX);
  uv_check_init(loop, &log->check);
  uv_timer_init(loop, &log->timer);
  log->check.data = log;
  log->timer.data = log;
  log->open_handles = 2;
  *out = log;
  return 0;
}

int dg_access_log_reopen(dg_access_log_t *log, const char *target, dg_errctx_t *err) {
  int fd = -1;
  int rc = open_target(target, &fd, err);
  if (rc != 0)
    return rc;
  flush_now(log);
  use_target(log, target, fd);
  return 0;
}

static void on_closed(uv_handle_t *handle) {
  dg_access_log_t *log = handle->data;
  if (--log->open_handles > 0)
    return;
  dg_buf_free(&log->buf);
  free(log);
}

void dg_access_log_close(dg_access_log_t *log) {
  if (log == NULL)
    return;
  flush_now(log);
  use_target(log, NULL, -1);
  uv_close((uv_handle_t *)&log->check, on_closed);
  uv_close((uv_handle_t *)&log->timer, on_closed);
}

static bool ascii_only(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if ((unsigned char)s[i] >= 0x80)
      return false;
  }
  return true;
}

/* A string as JSON, cut at TEXT_MAX bytes, with invalid UTF-8 replaced
 * (a request path may hold any byte). ASCII, the usual, is valid as it is. */
static int put_text(dg_buf_t *out, const char *s) {
  size_t left = strlen(s);
  if (left <= TEXT_MAX && ascii_only(s, left))
    return dg_json_write_string(out, s, left);
  char clean[TEXT_MAX + 8];
  size_t n = 0;
  const unsigned char *p = (const unsigned char *)s;
  while (left > 0 && n < TEXT_MAX) {
    uint32_t cp = 0;
    int len = dg_utf8_decode(p, left, &cp);
    size_t used = len > 0 ? (size_t)len : len < 0 ? (size_t)-len : left;
    if (len > 0)
      memcpy(clean + n, p, used);
    n += len > 0 ? used : dg_utf8_encode(0xFFFD, clean + n);
    p += used;
    left -= used;
  }
  return dg_json_write_string(out, clean, n);
}

static int put_field(dg_buf_t *out, const char *name, const char *value) {
  int rc = dg_buf_append_str(out, name);
  return rc == 0 ? put_text(out, value) : rc;
}

static int put_number(dg_buf_t *out, const char *name, int64_t value) {
  int rc = dg_buf_append_str(out, name);
  return rc == 0 ? dg_json_write_integer(out, value) : rc;
}

/* Durations under this many microseconds are written by put_ms; longer
 * ones (over three years) as any real. */
#define MS_DIGITS_MAX 100000000000000ULL

/* duration_ms as dg_json_write_real writes dg_log_ms(ns) (whole
 * microseconds, trailing zeros left out, ".0" when whole), without
 * printf: the integer part, then up to three decimals. */
DG_TESTABLE int dg__access_log_ms(dg_buf_t *out, uint64_t ns) {
  uint64_t us = (ns + 500) / 1000;
  if (us >= MS_DIGITS_MAX)
    return dg_json_write_real(out, dg_log_ms(ns));
  char text[DG_DECIMAL_MAX + 8];
  size_t n = dg_decimal(text, us / 1000);
  unsigned frac = (unsigned)(us % 1000);
  text[n++] = '.';
  text[n++] = (char)('0' + frac / 100);
  if (frac % 100 != 0)
    text[n++] = (char)('0' + frac / 10 % 10);
  if (frac % 10 != 0)
    text[n++] = (char)('0' + frac % 10);
  return dg_buf_append(out, text, n);
}

/* A literal's bytes, its length known when compiled. */
#define PUT_LIT(out, s) dg_buf_append((out), (s), sizeof(s) - 1)

/* The line's fields, in the order docs/operations.md lists them. */
static int put_line(dg_buf_t *out, const dg_http_request_t *req, uint64_t ns) {
  char ts[32];
  dg_time_iso8601(ts, sizeof(ts));
  int rc = PUT_LIT(out, "{\"ts\":\"");
  rc = rc ? rc : dg_buf_append_str(out, ts);
  rc = rc ? rc : PUT_LIT(out, "\",\"level\":\"info\",\"event\":\"access\"");
  rc = rc ? rc : dg_log_write_common(out);
  rc = rc ? rc : put_field(out, ",\"request_id\":", req->id);
  rc = rc ? rc : put_field(out, ",\"method\":", req->method);
  rc = rc ? rc : put_field(out, ",\"path\":", req->path);
  rc = rc ? rc : put_number(out, ",\"status\":", req->status);
  rc = rc ? rc : put_number(out, ",\"bytes\":", (int64_t)req->bytes_out);
  rc = rc ? rc : PUT_LIT(out, ",\"duration_ms\":");
  rc = rc ? rc : dg__access_log_ms(out, ns);
  rc = rc ? rc : put_field(out, ",\"peer\":", req->peer);
  rc = rc ? rc : put_field(out, ",\"transport\":", req->tls ? "https" : "http");
  if (rc == 0 && req->trace_id[0] != '\0')
    rc = put_field(out, ",\"trace_id\":", req->trace_id);
  return rc ? rc : dg_buf_append(out, "}\n", 2);
}

void dg__access_log_request(dg_access_log_t *log, const dg_http_request_t *req) {
  if (log == NULL || log->fd < 0 || (log->stderr_level && !dg_log_enabled(DG_LOG_INFO)))
    return;
  uint64_t ns = dg_now_ns() - req->start_ns;
  size_t mark = log->buf.len;
  if (put_line(&log->buf, req, ns) != 0) {
    /* Full: write what the turn gathered, then try once more. */
    log->buf.len = mark;
    if (log->buf.data != NULL)
      log->buf.data[mark] = '\0';
    flush_now(log);
    if (put_line(&log->buf, req, ns) != 0)
      dg_buf_reset(&log->buf);
  }
  if (log->buf.len > 0 && !log->flushing) {
    log->flushing = true;
    if (log->flush_ms > 0)
      uv_timer_start(&log->timer, on_timer, log->flush_ms, 0);
    else
      uv_check_start(&log->check, on_check);
  }
}
