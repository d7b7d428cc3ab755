/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Responses: whole (Content-Length) or streamed (chunked), with the
 * headers the server always adds and checks on the ones the handler
 * gives, so that no handler can split a response with a stray CR/LF. */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "net/internal.h"

#define HEAD_MAX (64 * 1024)
#define HEAD_USUAL 511 /* a head with a few headers, without growing */

static bool name_ok(const char *s) {
  if (s == NULL || *s == '\0')
    return false;
  for (; *s; s++) {
    unsigned char ch = (unsigned char)*s;
    bool alnum = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9');
    if (!alnum && ch != '-' && strchr("!#$%&'*+.^_`|~", ch) == NULL)
      return false;
  }
  return true;
}

static bool value_ok(const char *s) {
  if (s == NULL)
    return false;
  for (; *s; s++) {
    if (*s == '\r' || *s == '\n')
      return false;
  }
  return true;
}

/* Headers the server owns; a handler's copy is dropped rather than sent
 * twice, which would make the framing ambiguous. */
static bool managed(const char *name) {
  static const struct {
    const char *name;
    size_t len;
  } names[] = {{"Content-Length", 14}, {"Transfer-Encoding", 17}, {"Connection", 10}, {"Date", 4},
               {"Server", 6},          {"X-Request-Id", 12}};
  size_t n = strlen(name);
  for (size_t i = 0; i < DG_ARRAY_SIZE(names); i++) {
    if (n == names[i].len && strcasecmp(name, names[i].name) == 0)
      return true;
  }
  return false;
}

/* The head is written with plain copies: a formatted print of it cost
 * more than everything else in the head together. */
static int put_line(dg_buf_t *out, const char *name, const char *value) {
  size_t nlen = strlen(name);
  size_t vlen = strlen(value);
  int rc = dg_buf_reserve(out, nlen + vlen + 4); /* one reservation for the line */
  if (rc != 0)
    return rc;
  char *p = out->data + out->len;
  memcpy(p, name, nlen);
  memcpy(p + nlen, ": ", 2);
  memcpy(p + nlen + 2, value, vlen);
  memcpy(p + nlen + 2 + vlen, "\r\n", 3); /* with the terminator */
  out->len += nlen + vlen + 4;
  return 0;
}

/* n in decimal into out (at least 21 bytes); returns out. */
static char *decimal(uint64_t n, char *out) {
  char tmp[21];
  size_t len = 0;
  do {
    tmp[len++] = (char)('0' + n % 10);
    n /= 10;
  } while (n > 0);
  for (size_t i = 0; i < len; i++)
    out[i] = tmp[len - 1 - i];
  out[len] = '\0';
  return out;
}

static int put_status(dg_buf_t *out, int status) {
  char code[24];
  int rc = dg_buf_append(out, "HTTP/1.1 ", 9);
  if (rc == 0)
    rc = dg_buf_append_str(out, decimal((uint64_t)status, code));
  if (rc == 0)
    rc = dg_buf_append(out, " ", 1);
  if (rc == 0)
    rc = dg_buf_append_str(out, dg_http_status_text(status));
  return rc == 0 ? dg_buf_append(out, "\r\n", 2) : rc;
}

static int append_headers(dg_buf_t *out, const dg_http_header_t *headers, size_t n) {
  int rc = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    if (!name_ok(headers[i].name) || !value_ok(headers[i].value))
      return DG_EINVAL;
    if (!managed(headers[i].name))
      rc = put_line(out, headers[i].name, headers[i].value);
  }
  return rc;
}

int dg__http1_head(dg_http_request_t *req, dg_buf_t *out, int status,
                   const dg_http_header_t *headers, size_t nheaders, const char *framing,
                   bool keep_alive) {
  if (status < 100 || status > 999)
    return DG_EINVAL;
  const char *conn = "";
  if (!keep_alive)
    conn = "Connection: close\r\n";
  else if (req->http_minor == 0)
    conn = "Connection: keep-alive\r\n";
  int rc = put_status(out, status);
  if (rc == 0)
    rc = put_line(out, "Date", dg__server_date(req->conn->server));
  if (rc == 0)
    rc = dg_buf_append_str(out, "Server: datagate\r\n");
  if (rc == 0)
    rc = dg_buf_append_str(out, framing);
  if (rc == 0)
    rc = dg_buf_append_str(out, conn);
  if (rc == 0)
    rc = put_line(out, "X-Request-Id", req->id);
  if (rc == 0)
    rc = append_headers(out, headers, nheaders);
  for (const dg__header_t *hd = req->extra; hd != NULL && rc == 0; hd = hd->next)
    rc = put_line(out, hd->name, hd->value);
  if (rc == 0)
    rc = dg_buf_append(out, "\r\n", 2);
  return rc;
}

int dg_http_request_add_response_header(dg_http_request_t *req, const char *name,
                                        const char *value) {
  if (!name_ok(name) || !value_ok(value) || managed(name))
    return DG_EINVAL;
  dg__header_t *hd = dg_arena_calloc(req->arena, 1, sizeof(*hd));
  if (hd == NULL)
    return DG_ENOMEM;
  hd->name = dg_arena_strdup(req->arena, name);
  hd->value = dg_arena_strdup(req->arena, value);
  if (hd->name == NULL || hd->value == NULL)
    return DG_ENOMEM;
  hd->lines = 1;
  dg__header_t **tail = &req->extra;
  while (*tail != NULL)
    tail = &(*tail)->next;
  *tail = hd;
  return 0;
}

static bool status_has_body(int status) {
  return status >= 200 && status != 204 && status != 304;
}

static int build_whole(dg_http_request_t *req, dg_buf_t *head, int status,
                       const dg_http_header_t *headers, size_t n, size_t len, bool keep_alive) {
  char framing[48] = "";
  char digits[24];
  if (status_has_body(status)) {
    memcpy(framing, "Content-Length: ", 16);
    size_t w = strlen(decimal(len, digits));
    memcpy(framing + 16, digits, w);
    memcpy(framing + 16 + w, "\r\n", 3);
  }
  return dg__http1_head(req, head, status, headers, n, framing, keep_alive);
}

static int respond(dg_http_request_t *req, int status, const dg_http_header_t *headers, size_t n,
                   const void *body, size_t len, bool force_close) {
  static const char failed[] = "Internal Server Error\n";
  if (req == NULL || req->state != DG__REQ_ACTIVE)
    return DG_EINVAL;
  dg__conn_t *c = req->conn;
  if (!dg__conn_is_open(c)) {
    dg__http1_request_done(req, false);
    return DG_ECLOSED;
  }
  bool keep_alive = !force_close && dg__http1_keep_alive(req);
  dg_buf_t head;
  dg_buf_init(&head, HEAD_MAX);
  (void)dg_buf_reserve(&head, HEAD_USUAL); /* a hint: the head grows if it must */
  int rc = build_whole(req, &head, status, headers, n, len, keep_alive);
  if (rc != 0) {
    /* The handler's answer cannot be sent as given; say so instead. */
    dg_buf_reset(&head);
    status = 500;
    body = failed;
    len = sizeof(failed) - 1;
    build_whole(req, &head, status, NULL, 0, len, keep_alive);
  }
  size_t sent = !req->is_head && status_has_body(status) ? len : 0;
  uv_buf_t parts[2] = {uv_buf_init(head.data, (unsigned)head.len),
                       uv_buf_init((char *)body, (unsigned)sent)};
  int wrc = dg__conn_writev(c, parts, sent > 0 ? 2 : 1);
  dg_buf_free(&head);
  req->status = status;
  req->bytes_out = sent;
  dg__http1_request_done(req, keep_alive && wrc == 0);
  return rc != 0 ? rc : wrc;
}

int dg_http_respond(dg_http_request_t *req, int status, const dg_http_header_t *headers,
                    size_t nheaders, const void *body, size_t len) {
  return respond(req, status, headers, nheaders, body, len, false);
}

int dg__http1_respond_close(dg_http_request_t *req, int status, const void *body, size_t len) {
  return respond(req, status, NULL, 0, body, len, true);
}

int dg_http_stream_begin(dg_http_request_t *req, int status, const dg_http_header_t *headers,
                         size_t nheaders) {
  if (req == NULL || req->state != DG__REQ_ACTIVE)
    return DG_EINVAL;
  dg__conn_t *c = req->conn;
  if (!dg__conn_is_open(c)) {
    dg__http1_request_done(req, false);
    return DG_ECLOSED;
  }
  /* HTTP/1.0 has no chunked encoding: the body ends when the connection does. */
  bool chunked = req->http_minor >= 1;
  bool keep_alive = chunked && dg__http1_keep_alive(req);
  dg_buf_t head;
  dg_buf_init(&head, HEAD_MAX);
  int rc = dg__http1_head(req, &head, status, headers, nheaders,
                          chunked ? "Transfer-Encoding: chunked\r\n" : "", keep_alive);
  if (rc == 0)
    rc = dg__conn_write(c, head.data, head.len);
  dg_buf_free(&head);
  if (rc != 0)
    return rc; /* still unanswered: the handler may respond otherwise */
  req->state = DG__REQ_STREAMING;
  req->status = status;
  req->chunked_out = chunked;
  req->keep_alive = keep_alive;
  return 0;
}

int dg_http_stream_write(dg_http_request_t *req, const void *data, size_t len) {
  if (req == NULL || req->state != DG__REQ_STREAMING)
    return DG_EINVAL;
  dg__conn_t *c = req->conn;
  if (!dg__conn_is_open(c))
    return DG_ECLOSED;
  if (len == 0 || req->is_head)
    return 0; /* an empty chunk would end the stream */
  if (!dg__conn_can_write(c, len + 16))
    return DG_E2BIG;
  char size[24];
  int n = snprintf(size, sizeof(size), "%zx\r\n", len);
  uv_buf_t parts[3] = {uv_buf_init(size, (unsigned)n), uv_buf_init((char *)data, (unsigned)len),
                       uv_buf_init("\r\n", 2)};
  int rc = req->chunked_out ? dg__conn_writev(c, parts, 3) : dg__conn_writev(c, parts + 1, 1);
  if (rc == 0)
    req->bytes_out += len;
  return rc;
}

int dg_http_stream_end(dg_http_request_t *req) {
  static const char last[] = "0\r\n\r\n";
  if (req == NULL || req->state != DG__REQ_STREAMING)
    return DG_EINVAL;
  dg__conn_t *c = req->conn;
  bool open = dg__conn_is_open(c);
  int rc = open ? 0 : DG_ECLOSED;
  if (open && req->chunked_out && !req->is_head)
    rc = dg__conn_write(c, last, sizeof(last) - 1);
  dg__http1_request_done(req, open && rc == 0 && req->keep_alive);
  return rc;
}

size_t dg_http_stream_pending(const dg_http_request_t *req) {
  return req->conn != NULL ? req->conn->pending : 0;
}

void dg_http_request_watch(dg_http_request_t *req, const dg_http_request_events_t *events) {
  if (events != NULL)
    req->events = *events;
  else
    memset(&req->events, 0, sizeof(req->events));
}
