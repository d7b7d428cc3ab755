/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* MCP over stdio: newline-delimited JSON-RPC on two file descriptors, one
 * session, as the configured stdio user. Input may be a pipe, a socket, a
 * terminal or a regular file (files are read and written through the
 * libuv threadpool, as they cannot be polled). Lines are bounded by
 * server.max_body_bytes: a longer one is answered with -32600 and skipped
 * up to its newline. Output leaves in order; when too much of it waits,
 * input pauses until the reader catches up. on_eof fires once input has
 * ended, every call has finished and all output is written.
 *
 * Nothing but JSON-RPC is written to the output descriptor. */
#include <stdlib.h>
#include <string.h>

#include "mcp/internal.h"

#define READ_CHUNK (64 * 1024)
#define DEFAULT_MAX_PENDING (1024 * 1024)

typedef enum io_kind { IO_NONE, IO_STREAM, IO_FILE } io_kind_t;

typedef union io_handle {
  uv_handle_t handle;
  uv_stream_t stream;
  uv_pipe_t pipe;
  uv_tty_t tty;
  uv_tcp_t tcp;
} io_handle_t;

typedef struct out_chunk {
  struct out_chunk *next;
  struct stdio_conn *conn;
  uv_write_t write;
  size_t len;
  size_t done; /* bytes a partial file write already wrote */
  char data[];
} out_chunk_t;

typedef struct stdio_conn {
  dg__mcp_session_t *session; /* reference held until the conn is freed */
  io_kind_t in_kind, out_kind;
  io_handle_t in, out;
  int in_fd, out_fd;
  uv_fs_t read_req, write_req;
  uv_timer_t check;               /* the deferred end-of-input check */
  out_chunk_t *fs_head, *fs_tail; /* file output waiting its turn */
  char *rbuf;
  dg_buf_t line;
  size_t pending; /* output bytes queued and not yet written */
  unsigned busy;  /* open handles and file requests in flight */
  bool file_reading, file_writing;
  bool paused, skipping, eof, eof_fired, closing;
  void (*on_eof)(void *data);
  void *data;
} stdio_conn_t;

static void read_more(stdio_conn_t *c);
static void write_file_next(stdio_conn_t *c);

/* ---- Release ----------------------------------------------------------------- */

static void conn_free(stdio_conn_t *c) {
  while (c->fs_head != NULL) {
    out_chunk_t *next = c->fs_head->next;
    free(c->fs_head);
    c->fs_head = next;
  }
  if (c->session != NULL)
    dg__mcp_session_unref(c->session);
  dg_buf_free(&c->line);
  free(c->rbuf);
  free(c);
}

static void release(stdio_conn_t *c) {
  if (--c->busy == 0)
    conn_free(c);
}

static void on_closed(uv_handle_t *handle) {
  release(handle->data);
}

static void stdio_close(dg__mcp_session_t *ss) {
  stdio_conn_t *c = ss->transport_data;
  if (c->closing)
    return;
  c->closing = true;
  if (c->in_kind == IO_STREAM)
    uv_close(&c->in.handle, on_closed);
  if (c->out_kind == IO_STREAM)
    uv_close(&c->out.handle, on_closed);
  uv_close((uv_handle_t *)&c->check, on_closed);
}

/* ---- End of input ---------------------------------------------------------------- */

static void on_check(uv_timer_t *timer) {
  stdio_conn_t *c = timer->data;
  dg__mcp_session_t *ss = c->session;
  if (!c->eof || c->eof_fired || c->closing || ss->exchanges != NULL || ss->ncalls > 0 ||
      c->pending > 0)
    return;
  c->eof_fired = true;
  if (c->on_eof != NULL)
    c->on_eof(c->data);
}

static void schedule_check(stdio_conn_t *c) {
  if (!c->closing)
    uv_timer_start(&c->check, on_check, 0, 0);
}

static void call_ended(dg__mcp_session_t *ss) {
  schedule_check(ss->transport_data);
}

/* ---- Output ------------------------------------------------------------------------ */

static size_t max_pending(const stdio_conn_t *c) {
  size_t max = c->session->server->limits.max_write_buffer;
  return max > 0 ? max : DEFAULT_MAX_PENDING;
}

static void output_done(stdio_conn_t *c, out_chunk_t *chunk, bool failed) {
  c->pending -= chunk->len - chunk->done;
  free(chunk);
  if (failed) /* the reader is gone: nothing more can be said */
    c->eof = true;
  if (c->paused && (c->pending <= max_pending(c) / 2 || failed)) {
    c->paused = false;
    read_more(c);
  }
  schedule_check(c);
}

static void on_stream_written(uv_write_t *w, int status) {
  out_chunk_t *chunk = w->data;
  stdio_conn_t *c = chunk->conn;
  chunk->done = 0;
  output_done(c, chunk, status < 0);
}

static void on_file_written(uv_fs_t *req) {
  stdio_conn_t *c = req->data;
  ssize_t n = req->result;
  uv_fs_req_cleanup(req);
  c->file_writing = false;
  out_chunk_t *chunk = c->fs_head;
  if (n > 0 && chunk->done + (size_t)n < chunk->len && !c->closing) {
    chunk->done += (size_t)n;
    c->pending -= (size_t)n;
  } else {
    c->fs_head = chunk->next;
    if (c->fs_head == NULL)
      c->fs_tail = NULL;
    output_done(c, chunk, n < 0);
  }
  write_file_next(c);
  release(c);
}

static void write_file_next(stdio_conn_t *c) {
  out_chunk_t *chunk = c->fs_head;
  if (c->file_writing || chunk == NULL || c->closing)
    return;
  uv_buf_t buf = uv_buf_init(chunk->data + chunk->done, (unsigned)(chunk->len - chunk->done));
  c->write_req.data = c;
  if (uv_fs_write(c->session->server->loop, &c->write_req, c->out_fd, &buf, 1, -1,
                  on_file_written) != 0)
    return;
  c->file_writing = true;
  c->busy++;
}

static void enqueue(stdio_conn_t *c, out_chunk_t *chunk) {
  c->pending += chunk->len;
  if (c->out_kind == IO_FILE) {
    DG_QUEUE_PUSH(c->fs_head, c->fs_tail, chunk, next);
    write_file_next(c);
  } else {
    uv_buf_t buf = uv_buf_init(chunk->data, (unsigned)chunk->len);
    chunk->write.data = chunk;
    if (uv_write(&chunk->write, &c->out.stream, &buf, 1, on_stream_written) != 0)
      output_done(c, chunk, true);
  }
  if (c->pending > max_pending(c) && !c->paused) {
    c->paused = true;
    if (c->in_kind == IO_STREAM && !c->eof)
      uv_read_stop(&c->in.stream);
  }
}

static void stdio_send(dg__mcp_exchange_t *ex, json_t *msg) {
  stdio_conn_t *c = ex->data;
  if (msg == NULL || c->closing)
    return;
  dg_buf_t out;
  dg_buf_init(&out, dg__mcp_reply_limit(ex));
  if (dg__mcp_dump(msg, &out) != 0 || dg_buf_append(&out, "\n", 1) != 0) {
    dg_buf_free(&out);
    return;
  }
  out_chunk_t *chunk = malloc(sizeof(*chunk) + out.len);
  if (chunk != NULL) {
    memset(chunk, 0, sizeof(*chunk));
    chunk->conn = c;
    chunk->len = out.len;
    memcpy(chunk->data, out.data, out.len);
    enqueue(c, chunk);
  }
  dg_buf_free(&out);
}

static int stdio_can_notify(dg__mcp_exchange_t *ex) {
  stdio_conn_t *c = ex->data;
  if (c->closing)
    return DG_ECLOSED;
  return c->pending > max_pending(c) / 2 ? DG_E2BIG : 0;
}

static void stdio_reply(dg__mcp_exchange_t *ex, json_t *reply) {
  stdio_send(ex, reply);
  schedule_check(ex->data);
}

static const dg__mcp_transport_t stdio_transport = {
    .name = "stdio",
    .reply = stdio_reply,
    .notify = stdio_send,
    .can_notify = stdio_can_notify,
    .close = stdio_close,
    .call_ended = call_ended,
};

/* ---- Input ------------------------------------------------------------------------- */

static void run_line(stdio_conn_t *c, const char *text, size_t len, bool too_long) {
  dg__mcp_session_t *ss = c->session;
  dg__mcp_exchange_t *ex = dg__mcp_exchange_new(ss->server);
  if (ex == NULL)
    return;
  dg__mcp_exchange_bind(ex, ss, &stdio_transport, c);
  if (too_long) {
    char msg[128];
    snprintf(msg, sizeof(msg), "Invalid Request: the message is longer than %zu bytes",
             c->line.max);
    dg__mcp_exchange_fail(ex, DG__RPC_INVALID_REQUEST, msg);
    return;
  }
  const char *user = ex->limits.stdio_user;
  if (user == NULL || dg_auth_principal_for_user(ex->cat, user, ex->arena, &ex->principal) != 0) {
    dg__mcp_exchange_refuse_text(ex, DG__RPC_UNAUTHORIZED,
                                 "the stdio user (server.stdioUser) is not a configured user", text,
                                 len);
    return;
  }
  dg__mcp_exchange_run_text(ex, text, len);
}

static void line_done(stdio_conn_t *c) {
  size_t n = c->line.len;
  while (n > 0 && (c->line.data[n - 1] == '\r' || c->line.data[n - 1] == ' '))
    n--;
  if (n > 0 && c->session->open)
    run_line(c, c->line.data, n, false);
  dg_buf_reset(&c->line);
}

static void feed(stdio_conn_t *c, const char *data, size_t n) {
  while (n > 0) {
    const char *nl = memchr(data, '\n', n);
    size_t take = nl != NULL ? (size_t)(nl - data) : n;
    if (!c->skipping && dg_buf_append(&c->line, data, take) != 0) {
      run_line(c, NULL, 0, true);
      dg_buf_reset(&c->line);
      c->skipping = true;
    }
    if (nl != NULL) {
      if (!c->skipping)
        line_done(c);
      c->skipping = false;
      take++;
    }
    data += take;
    n -= take;
  }
}

static void input_ended(stdio_conn_t *c) {
  if (c->eof && c->line.len == 0)
    return;
  if (!c->skipping && c->line.len > 0)
    line_done(c); /* a last line without its newline */
  c->eof = true;
  if (c->in_kind == IO_STREAM)
    uv_read_stop(&c->in.stream);
  schedule_check(c);
}

static void on_alloc(uv_handle_t *handle, size_t suggested, uv_buf_t *buf) {
  stdio_conn_t *c = handle->data;
  *buf = uv_buf_init(c->rbuf, READ_CHUNK);
}

static void on_stream_read(uv_stream_t *stream, ssize_t nread, const uv_buf_t *buf) {
  stdio_conn_t *c = stream->data;
  if (nread < 0)
    input_ended(c);
  else if (nread > 0)
    feed(c, buf->base, (size_t)nread);
}

static void on_file_read(uv_fs_t *req) {
  stdio_conn_t *c = req->data;
  ssize_t n = req->result;
  uv_fs_req_cleanup(req);
  c->file_reading = false;
  if (!c->closing) {
    if (n <= 0)
      input_ended(c);
    else
      feed(c, c->rbuf, (size_t)n);
    read_more(c);
  }
  release(c);
}

static void read_more(stdio_conn_t *c) {
  if (c->closing || c->eof || c->paused)
    return;
  if (c->in_kind == IO_STREAM) {
    uv_read_start(&c->in.stream, on_alloc, on_stream_read);
    return;
  }
  if (c->file_reading)
    return;
  uv_buf_t buf = uv_buf_init(c->rbuf, READ_CHUNK);
  c->read_req.data = c;
  if (uv_fs_read(c->session->server->loop, &c->read_req, c->in_fd, &buf, 1, -1, on_file_read) !=
      0) {
    input_ended(c);
    return;
  }
  c->file_reading = true;
  c->busy++;
}

/* ---- Start ----------------------------------------------------------------------- */

/* Sets *kind to IO_STREAM once a handle was initialized (it must then be
 * closed, even when opening the descriptor failed). */
static int open_handle(uv_loop_t *loop, int fd, bool readable, io_handle_t *h, io_kind_t *kind) {
  switch (uv_guess_handle(fd)) {
  case UV_NAMED_PIPE:
    uv_pipe_init(loop, &h->pipe, 0);
    *kind = IO_STREAM;
    return uv_pipe_open(&h->pipe, fd) == 0 ? 0 : DG_EIO;
  case UV_TTY:
    if (uv_tty_init(loop, &h->tty, fd, readable) != 0)
      return DG_EIO;
    *kind = IO_STREAM;
    return 0;
  case UV_TCP:
    uv_tcp_init(loop, &h->tcp);
    *kind = IO_STREAM;
    return uv_tcp_open(&h->tcp, fd) == 0 ? 0 : DG_EIO;
  case UV_FILE:
    *kind = IO_FILE;
    return 0;
  default:
    return DG_EINVAL;
  }
}

static int conn_open(stdio_conn_t *c, uv_loop_t *loop) {
  int rc = open_handle(loop, c->in_fd, true, &c->in, &c->in_kind);
  c->busy += c->in_kind == IO_STREAM;
  c->in.handle.data = c;
  if (rc != 0)
    return rc;
  rc = open_handle(loop, c->out_fd, false, &c->out, &c->out_kind);
  c->busy += c->out_kind == IO_STREAM;
  c->out.handle.data = c;
  return rc;
}

int dg_mcp_stdio_start(dg_mcp_server_t *server, int in_fd, int out_fd, void (*on_eof)(void *data),
                       void *data) {
  const char *user = server->limits.stdio_user;
  /* The owner leaves stdio_user NULL when it names no configured user. */
  if (user == NULL)
    return DG_ECONFIG;
  if (in_fd == out_fd) /* one descriptor cannot be watched by two handles */
    return DG_EINVAL;
  stdio_conn_t *c = calloc(1, sizeof(*c));
  char *rbuf = malloc(READ_CHUNK);
  if (c == NULL || rbuf == NULL) {
    free(c);
    free(rbuf);
    return DG_ENOMEM;
  }
  c->rbuf = rbuf;
  c->in_fd = in_fd;
  c->out_fd = out_fd;
  c->on_eof = on_eof;
  c->data = data;
  size_t max = server->limits.max_body_bytes;
  dg_buf_init(&c->line, max > 0 ? max : 1024 * 1024);
  uv_timer_init(server->loop, &c->check);
  c->check.data = c;
  c->busy = 1;
  int rc = dg__mcp_session_new(server, &stdio_transport, c, &c->session);
  if (rc == 0) {
    dg__mcp_session_ref(c->session); /* the connection's own reference */
    rc = conn_open(c, server->loop);
  }
  if (rc != 0) {
    if (c->session != NULL)
      dg__mcp_session_end(c->session); /* closes what was opened; frees c */
    else
      uv_close((uv_handle_t *)&c->check, on_closed);
    return rc;
  }
  read_more(c);
  return 0;
}
