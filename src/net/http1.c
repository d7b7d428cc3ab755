/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* HTTP/1.1 requests with llhttp: parsing under limits, the checks of
 * RFC 9112 that llhttp 8.1 leaves to its user (Host, field names, obs-fold,
 * request-target forms, methods, versions, Transfer-Encoding), the
 * pipeline of complete requests handed to the handler one at a time,
 * timeouts, and the error responses that end a connection (400, 408, 413,
 * 414, 431, 501, 503, 505).
 *
 * Input is parsed eagerly until max_pipelined complete requests wait;
 * then parsing pauses and the connection stops reading until the queue
 * has room again, so a client that pipelines is slowed, never refused.
 * The handler is only ever called from a loop callback (a read or the
 * connection timer), never from inside a response call, so an answer
 * given synchronously does not recurse into the next request. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "net/internal.h"

typedef enum phase { PHASE_IDLE, PHASE_HEADERS, PHASE_BODY } phase_t;

struct dg__http1 {
  llhttp_t parser;
  dg_http_request_t *parsing; /* headers or body arriving */
  dg_http_request_t *active;  /* with the handler */
  dg_http_request_t *queue_head, *queue_tail;
  unsigned queued;
  dg_buf_t scratch; /* the URL or the header being read */
  size_t field_len;
  size_t header_bytes;
  unsigned header_count;
  phase_t phase;
  uint64_t phase_start_ms;
  uint64_t idle_since_ms;
  int error_status;      /* an error response owed once earlier requests are answered */
  bool stopped;          /* nothing more is parsed: after an error or an upgrade */
  bool paused;           /* the queue is full: input waits in leftover, reads stop */
  bool have_field;       /* a header name was read and its value not yet */
  bool value_cut;        /* the value's last piece ended before the input did */
  const char *input_end; /* end of the bytes llhttp_execute is parsing */
  bool dispatch_due;
  bool in_dispatch;
  bool detached; /* upgraded while the handler ran: freed when it returns */
  bool draining;
  bool fresh;        /* no request yet */
  bool refused;      /* a request was not admitted: input is ignored */
  dg_buf_t leftover; /* bytes after an upgrade request or a pause */
};

static dg__http1_t *http_of(dg__conn_t *c) {
  return c->proto == &dg__http1_proto ? c->proto_state : NULL;
}

static const dg_http_limits_t *limits_of(dg__conn_t *c) {
  return &c->server->limits;
}

static uint64_t remaining(uint64_t since, uint64_t timeout, uint64_t now) {
  uint64_t end = since + timeout;
  return end > now ? end - now : 0;
}

/* Whether a paused connection may parse again: the same room
 * on_message_complete gives, recomputed now. */
static bool resume_due(dg__conn_t *c, const dg__http1_t *h) {
  unsigned room = limits_of(c)->max_pipelined + (h->active == NULL ? 1u : 0u);
  return h->paused && h->error_status == 0 && h->queued < room;
}

/* Arms the connection timer for whatever the connection waits on now. */
static void http_arm(dg__conn_t *c) {
  dg__http1_t *h = http_of(c);
  if (h == NULL || !dg__conn_is_open(c))
    return;
  const dg_http_limits_t *l = limits_of(c);
  uint64_t now = dg_now_ms();
  if (h->dispatch_due || resume_due(c, h))
    dg__conn_timer(c, 0);
  else if (h->phase == PHASE_HEADERS)
    dg__conn_timer(c, remaining(h->phase_start_ms, l->header_timeout_ms, now));
  else if (h->phase == PHASE_BODY)
    dg__conn_timer(c, remaining(h->phase_start_ms, l->request_timeout_ms, now));
  else if (h->active == NULL && h->queue_head == NULL && h->error_status == 0) {
    uint64_t idle = l->idle_timeout_ms;
    if (h->fresh && l->header_timeout_ms < idle)
      idle = l->header_timeout_ms;
    dg__conn_timer(c, remaining(h->idle_since_ms, idle, now));
  } else
    dg__conn_timer_stop(c);
}

/* ---- requests --------------------------------------------------------- */

static void body_free(void *data) {
  dg_buf_free(&((dg_http_request_t *)data)->body);
}

static dg_http_request_t *request_new(dg__conn_t *c) {
  dg_arena_t *arena = dg_arena_new(4096);
  if (arena == NULL)
    return NULL;
  dg_http_request_t *req = dg_arena_calloc(arena, 1, sizeof(*req));
  if (req == NULL || dg_arena_defer(arena, body_free, req) != 0) {
    dg_arena_destroy(arena);
    return NULL;
  }
  dg_buf_init(&req->body, limits_of(c)->max_body_bytes);
  req->arena = arena;
  req->conn = c;
  req->server_data = c->server->data;
  req->tls = c->tls != NULL;
  req->state = DG__REQ_PARSING;
  req->start_ns = dg_now_ns();
  req->method = "-";
  req->path = "-";
  req->query = "";
  req->http_minor = 1;
  dg_strlcpy(req->peer, c->peer, sizeof(req->peer));
  return req;
}

static void request_free(dg_http_request_t *req) {
  if (req != NULL)
    dg_arena_destroy(req->arena);
}

/* The responses counter of each status, found once (metrics belong to the
 * loop thread, as these do). */
static dg_metrics_ref_t responses_by_status[600];

static void count_response(int status) {
  dg_metrics_ref_t scratch = {0};
  dg_metrics_ref_t *ref = status >= 0 && status < (int)DG_ARRAY_SIZE(responses_by_status)
                              ? &responses_by_status[status]
                              : &scratch;
  if (!dg_metrics_ref_bound(ref)) {
    char labels[32];
    snprintf(labels, sizeof(labels), "status=\"%d\"", status);
    dg_metrics_ref_counter(ref, "dg_http_responses_total", labels);
  }
  dg_metrics_ref_add(ref, 1);
}

static void access_log(const dg_http_request_t *req) {
  count_response(req->status);
  if (req->conn != NULL)
    dg__access_log_request(req->conn->server->access_log, req);
}

static void queue_push(dg__http1_t *h, dg_http_request_t *req) {
  req->state = DG__REQ_QUEUED;
  DG_QUEUE_PUSH(h->queue_head, h->queue_tail, req, next);
  h->queued++;
}

static dg_http_request_t *queue_pop(dg__http1_t *h) {
  dg_http_request_t *req = h->queue_head;
  if (req == NULL)
    return NULL;
  h->queue_head = req->next;
  if (h->queue_head == NULL)
    h->queue_tail = NULL;
  h->queued--;
  req->next = NULL;
  return req;
}

/* ---- error responses -------------------------------------------------- */

/* Label of dg_http_limit_rejections_total for one limit. */
#define LIMIT(name) "limit=\"" name "\""

/* Sends the owed error response once every earlier request is answered,
 * then closes the connection after it is written. */
static void send_error_if_due(dg__conn_t *c) {
  dg__http1_t *h = http_of(c);
  if (h == NULL || h->error_status == 0 || h->active != NULL || h->queue_head != NULL ||
      !dg__conn_is_open(c))
    return;
  dg_http_request_t *req = h->parsing != NULL ? h->parsing : request_new(c);
  h->parsing = NULL;
  if (req == NULL) {
    dg__conn_close(c);
    return;
  }
  if (req->id[0] == '\0')
    dg_uuid_v4(req->id);
  const char *text = dg_http_status_text(h->error_status);
  char body[64];
  int n = snprintf(body, sizeof(body), "%s\n", text);
  req->state = DG__REQ_ACTIVE;
  dg__http1_respond_close(req, h->error_status, body, (size_t)n);
}

/* Records that the connection ends with status after the requests before
 * the failing one are answered. Parsing stops for good. */
static void http_fail(dg__conn_t *c, int status, const char *limit) {
  dg__http1_t *h = http_of(c);
  if (h == NULL || h->error_status != 0)
    return;
  h->error_status = status;
  h->stopped = true;
  h->phase = PHASE_IDLE;
  if (limit != NULL)
    dg_metrics_counter_add("dg_http_limit_rejections_total", limit, 1);
  dg__conn_noread(c, DG__NOREAD_PROTO, true);
  send_error_if_due(c);
  http_arm(c);
}

/* ---- llhttp callbacks ------------------------------------------------- */

static dg__conn_t *conn_of(llhttp_t *p) {
  return p->data;
}

static int count_bytes(dg__conn_t *c, dg__http1_t *h, size_t n) {
  h->header_bytes += n;
  if (h->header_bytes > limits_of(c)->max_header_bytes) {
    http_fail(c, 431, LIMIT("header_bytes"));
    return HPE_USER;
  }
  return 0;
}

static int scratch_add(dg__conn_t *c, dg__http1_t *h, const char *at, size_t n) {
  int rc = count_bytes(c, h, n);
  if (rc == 0 && dg_buf_append(&h->scratch, at, n) != 0) {
    http_fail(c, 431, LIMIT("header_bytes"));
    rc = HPE_USER;
  }
  return rc;
}

/* ---- RFC 9112 checks llhttp 8.1 leaves to us -------------------------- */

/* tchar of RFC 9110 5.6.2. */
static bool tchar(unsigned char ch) {
  if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9'))
    return true;
  switch (ch) {
  case '!':
  case '#':
  case '$':
  case '%':
  case '&':
  case '\'':
  case '*':
  case '+':
  case '-':
  case '.':
  case '^':
  case '_':
  case '`':
  case '|':
  case '~':
    return true;
  default:
    return false;
  }
}

static bool token_ok(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!tchar((unsigned char)s[i]))
      return false;
  }
  return n > 0;
}

/* A field value is VCHAR, obs-text, SP and HTAB (RFC 9110 5.5). */
static bool value_bytes_ok(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char ch = (unsigned char)s[i];
    if ((ch < 0x20 && ch != '\t') || ch == 0x7f)
      return false;
  }
  return true;
}

/* Eight bytes at a time: a word with no byte below 0x20 and no DEL passes
 * at once (the usual case); one with either, such as a tab, is looked at
 * byte by byte. */
bool dg__http1_value_ok(const char *s, size_t n) {
  const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w, del;
    memcpy(&w, s + i, sizeof(w));
    del = w ^ (0x7f * ones);
    bool suspect = (((w - 0x20 * ones) & ~w) | ((del - ones) & ~del)) & highs;
    if (suspect && !value_bytes_ok(s + i, 8))
      return false;
  }
  return value_bytes_ok(s + i, n - i);
}

/* Methods the gateway knows (RFC 9110 9.3 and PATCH); the others, CONNECT
 * included, are not implemented (501). */
static bool method_known(unsigned m) {
  switch (m) {
  case HTTP_GET:
  case HTTP_HEAD:
  case HTTP_POST:
  case HTTP_PUT:
  case HTTP_DELETE:
  case HTTP_OPTIONS:
  case HTTP_TRACE:
  case HTTP_PATCH:
    return true;
  default:
    return false;
  }
}

/* The length of the scheme and "://" of an http(s) absolute-form target,
 * else 0. */
static size_t absolute_prefix(const char *url) {
  if (strncasecmp(url, "http://", 7) == 0)
    return 7;
  if (strncasecmp(url, "https://", 8) == 0)
    return 8;
  return 0;
}

/* The request-target forms of RFC 9112 3.2: origin-form, absolute-form
 * (http and https, with an authority that has no user info: RFC 9110
 * 4.2.4), and asterisk-form for OPTIONS only; never a fragment. */
static bool target_ok(const char *url, unsigned method) {
  if (strchr(url, '#') != NULL)
    return false;
  if (url[0] == '/')
    return true;
  size_t skip = absolute_prefix(url);
  if (skip > 0) {
    dg_authority_t a;
    return dg_authority_parse(url + skip, strcspn(url + skip, "/?"), false, &a);
  }
  return strcmp(url, "*") == 0 && method == HTTP_OPTIONS;
}

/* In the order of dg__known_header_t, lower case. */
static const struct {
  const char *name;
  size_t len;
} known_names[DG__H_KNOWN] = {
#define KNOWN(s)                                                                                   \
  { s, sizeof(s) - 1 }
    KNOWN("host"),
    KNOWN("accept"),
    KNOWN("expect"),
    KNOWN("origin"),
    KNOWN("upgrade"),
    KNOWN("if-match"),
    KNOWN("connection"),
    KNOWN("traceparent"),
    KNOWN("content-type"),
    KNOWN("x-request-id"),
    KNOWN("authorization"),
    KNOWN("content-length"),
    KNOWN("mcp-session-id"),
    KNOWN("sec-websocket-key"),
    KNOWN("transfer-encoding"),
    KNOWN("mcp-protocol-version"),
    KNOWN("sec-websocket-version"),
    KNOWN("sec-websocket-protocol"),
#undef KNOWN
};

static unsigned char ascii_lower(unsigned char ch) {
  return ch >= 'A' && ch <= 'Z' ? (unsigned char)(ch + ('a' - 'A')) : ch;
}

/* The one candidate a name's length and first letter leave. */
static dg__known_header_t known_candidate(size_t n, unsigned char first) {
  switch (n) {
  case 4:
    return DG__H_HOST;
  case 6:
    return first == 'a' ? DG__H_ACCEPT : first == 'e' ? DG__H_EXPECT : DG__H_ORIGIN;
  case 7:
    return DG__H_UPGRADE;
  case 8:
    return DG__H_IF_MATCH;
  case 10:
    return DG__H_CONNECTION;
  case 11:
    return DG__H_TRACEPARENT;
  case 12:
    return first == 'c' ? DG__H_CONTENT_TYPE : DG__H_X_REQUEST_ID;
  case 13:
    return DG__H_AUTHORIZATION;
  case 14:
    return first == 'c' ? DG__H_CONTENT_LENGTH : DG__H_MCP_SESSION_ID;
  case 17:
    return first == 's' ? DG__H_SEC_WEBSOCKET_KEY : DG__H_TRANSFER_ENCODING;
  case 20:
    return DG__H_MCP_PROTOCOL_VERSION;
  case 21:
    return DG__H_SEC_WEBSOCKET_VERSION;
  case 22:
    return DG__H_SEC_WEBSOCKET_PROTOCOL;
  default:
    return DG__H_KNOWN;
  }
}

/* Whether name (n bytes, a token) is want (lower case letters and '-') in
 * any case, eight bytes at a time: setting bit 0x20 lowers a letter and
 * leaves '-' as it is (only CR, which no token holds, also becomes '-'). */
static bool same_name(const char *name, const char *want, size_t n) {
  const uint64_t fold = 0x2020202020202020ULL;
  uint64_t a, b;
  if (n < 8) {
    for (size_t i = 0; i < n; i++) {
      if (((unsigned char)name[i] | 0x20) != (unsigned char)want[i])
        return false;
    }
    return true;
  }
  for (size_t i = 0; i + 8 <= n; i += 8) {
    memcpy(&a, name + i, 8);
    memcpy(&b, want + i, 8);
    if ((a | fold) != b)
      return false;
  }
  memcpy(&a, name + n - 8, 8);
  memcpy(&b, want + n - 8, 8);
  return (a | fold) == b;
}

/* By length and first letter, then one comparison. */
dg__known_header_t dg__http1_known_header(const char *name, size_t n) {
  if (n == 0)
    return DG__H_KNOWN;
  dg__known_header_t k = known_candidate(n, ascii_lower((unsigned char)name[0]));
  return k != DG__H_KNOWN && same_name(name, known_names[k].name, n) ? k : DG__H_KNOWN;
}

/* The entry of name (n bytes, known as k), if the request has one. */
static dg__header_t *header_entry(const dg_http_request_t *req, dg__known_header_t k,
                                  const char *name, size_t n) {
  if (k != DG__H_KNOWN)
    return req->known[k];
  for (dg__header_t *hd = req->headers; hd != NULL; hd = hd->next) {
    if (strncasecmp(hd->name, name, n) == 0 && hd->name[n] == '\0')
      return hd;
  }
  return NULL;
}

static const dg__header_t *header_find(const dg_http_request_t *req, const char *name) {
  size_t n = strlen(name);
  return header_entry(req, dg__http1_known_header(name, n), name, n);
}

/* Transfer-Encoding: only "chunked" is implemented (RFC 9112 6.1: 501 for
 * a coding the server does not understand, 400 for a list that is not
 * one). */
static int transfer_coding_status(const char *v) {
  size_t n = strlen(v);
  if (dg_strieq_n(v, n, "chunked"))
    return 0;
  for (const char *p = v; *p != '\0';) {
    p += strspn(p, " \t");
    size_t len = strcspn(p, ",; \t");
    if (!token_ok(p, len))
      return 400;
    p += len;
    p += strcspn(p, ",");
    if (*p == ',')
      p++;
  }
  return n > 0 ? 501 : 400;
}

/* The status a complete header section is refused with, or 0. */
static int head_status(const llhttp_t *p, dg_http_request_t *req) {
  if (p->http_major == 0)
    return 400; /* HTTP/0.9 has neither headers nor a status line to answer with */
  const dg__header_t *host = header_find(req, "Host");
  if (host == NULL ? p->http_minor >= 1
                   : host->lines > 1 || !dg_authority_valid(host->value, false))
    return 400; /* RFC 9112 3.2 */
  const dg__header_t *te = header_find(req, "Transfer-Encoding");
  if (te != NULL && (header_find(req, "Content-Length") != NULL || p->http_minor == 0))
    return 400; /* both framings, or chunked in HTTP/1.0: faulty framing (RFC 9112 6.1, 6.3) */
  return te != NULL ? transfer_coding_status(te->value) : 0;
}

/* The authority the request is for: an absolute-form target's, else the
 * Host field's (RFC 9112 3.2.2). */
static const char *request_host(dg_http_request_t *req) {
  size_t skip = req->url != NULL ? absolute_prefix(req->url) : 0;
  if (skip > 0)
    return dg_arena_strndup(req->arena, req->url + skip, strcspn(req->url + skip, "/?"));
  const char *host = dg_http_request_header(req, "Host");
  return host != NULL ? host : "";
}

/* ---- llhttp callbacks, continued -------------------------------------- */

static int refuse(dg__conn_t *c, int status) {
  http_fail(c, status, NULL);
  return HPE_USER;
}

static int on_message_begin(llhttp_t *p) {
  dg__conn_t *c = conn_of(p);
  dg__http1_t *h = http_of(c);
  if (h->stopped)
    return HPE_USER;
  h->parsing = request_new(c);
  if (h->parsing == NULL) {
    http_fail(c, 503, NULL);
    return HPE_USER;
  }
  h->fresh = false;
  h->phase = PHASE_HEADERS;
  h->phase_start_ms = dg_now_ms();
  h->header_bytes = 0;
  h->header_count = 0;
  h->have_field = false;
  h->value_cut = false;
  dg_buf_reset(&h->scratch);
  h->scratch.max = limits_of(c)->max_header_bytes + 1;
  http_arm(c);
  return 0;
}

/* A scratch buffer of ordinary size stays for the connection's next
 * request, saving an allocation and a free per request; a large one is
 * given back so that an idle connection holds little. */
enum { SCRATCH_KEPT_CAP = 1024 };

static void scratch_release(dg__http1_t *h) {
  if (h->scratch.cap > SCRATCH_KEPT_CAP)
    dg_buf_free(&h->scratch);
  else
    dg_buf_reset(&h->scratch);
}

static int on_text(llhttp_t *p, const char *at, size_t n) {
  dg__conn_t *c = conn_of(p);
  return scratch_add(c, http_of(c), at, n);
}

/* A request-target longer than the header limit is 414 (RFC 9110 15.5.15). */
static int on_target(llhttp_t *p, const char *at, size_t n) {
  dg__conn_t *c = conn_of(p);
  dg__http1_t *h = http_of(c);
  if (h->header_bytes + n > limits_of(c)->max_header_bytes) {
    http_fail(c, 414, LIMIT("target"));
    return HPE_USER;
  }
  return scratch_add(c, h, at, n);
}

/* llhttp hands an obs-fold on as two pieces of one value, the first
 * ending before the input does; a value cut by the end of a read is not a
 * fold. A server must refuse or replace an obs-fold (RFC 9112 5.2). */
static int on_value(llhttp_t *p, const char *at, size_t n) {
  dg__conn_t *c = conn_of(p);
  dg__http1_t *h = http_of(c);
  if (h->value_cut)
    return refuse(c, 400);
  h->value_cut = at + n != h->input_end;
  return scratch_add(c, h, at, n);
}

static int on_method_complete(llhttp_t *p) {
  return method_known(p->method) ? 0 : refuse(conn_of(p), 501);
}

static int on_url_complete(llhttp_t *p) {
  dg__conn_t *c = conn_of(p);
  dg__http1_t *h = http_of(c);
  dg_http_request_t *req = h->parsing;
  req->url = dg_arena_strndup(req->arena, h->scratch.data ? h->scratch.data : "", h->scratch.len);
  dg_buf_reset(&h->scratch);
  if (req->url == NULL)
    return HPE_USER;
  return target_ok(req->url, p->method) ? 0 : refuse(c, 400);
}

/* Only HTTP/1.x is spoken on this port (RFC 9110 15.6.6). */
static int on_version_complete(llhttp_t *p) {
  return p->http_major == 1 ? 0 : refuse(conn_of(p), 505);
}

static int on_counted(llhttp_t *p, const char *at, size_t n) {
  dg__conn_t *c = conn_of(p);
  return count_bytes(c, http_of(c), n);
}

/* A field name is a token: no white space before the colon or inside, and
 * not empty (RFC 9112 5.1); the body of such a request cannot be framed
 * with certainty, so the connection ends with the 400. */
static int on_header_field_complete(llhttp_t *p) {
  dg__conn_t *c = conn_of(p);
  dg__http1_t *h = http_of(c);
  if (!token_ok(h->scratch.data, h->scratch.len))
    return refuse(c, 400);
  h->have_field = true;
  h->field_len = h->scratch.len;
  /* The name ends with a NUL inside the scratch buffer; the value follows. */
  return scratch_add(c, h, "", 1);
}

/* Field lines with the same name are one comma-separated list (RFC 9110
 * 5.3); how many lines there were stays known for the fields that must
 * occur once. */
static void add_header(dg_http_request_t *req, const char *name, size_t n, const char *value,
                       size_t vlen) {
  while (vlen > 0 && (value[vlen - 1] == ' ' || value[vlen - 1] == '\t'))
    vlen--;
  dg__known_header_t k = dg__http1_known_header(name, n);
  dg__header_t *hd = header_entry(req, k, name, n);
  if (hd != NULL) {
    const char *joined = dg_arena_sprintf(req->arena, "%s, %.*s", hd->value, (int)vlen, value);
    if (joined != NULL)
      hd->value = joined;
    hd->lines++;
    return;
  }
  /* The entry, its name and its value in one allocation. */
  hd = dg_arena_alloc(req->arena, sizeof(*hd) + n + 1 + vlen + 1);
  if (hd == NULL)
    return;
  char *text = (char *)(hd + 1);
  memcpy(text, name, n);
  text[n] = '\0';
  memcpy(text + n + 1, value, vlen);
  text[n + 1 + vlen] = '\0';
  *hd = (dg__header_t){.name = text, .value = text + n + 1, .lines = 1};
  if (k != DG__H_KNOWN)
    req->known[k] = hd;
  DG_QUEUE_PUSH(req->headers, req->headers_tail, hd, next);
}

static int on_header_value_complete(llhttp_t *p) {
  dg__conn_t *c = conn_of(p);
  dg__http1_t *h = http_of(c);
  if (++h->header_count > limits_of(c)->max_headers) {
    http_fail(c, 431, LIMIT("header_count"));
    return HPE_USER;
  }
  int rc = count_bytes(c, h, 4); /* ": " and CRLF */
  if (rc != 0)
    return rc;
  const char *base = h->scratch.data != NULL ? h->scratch.data : "";
  size_t vstart = h->field_len + 1;
  size_t vlen = h->scratch.len > vstart ? h->scratch.len - vstart : 0;
  if (!h->have_field || !dg__http1_value_ok(base + vstart, vlen))
    return refuse(c, 400); /* ": v" has no name, or a control byte */
  h->have_field = false;
  h->value_cut = false;
  add_header(h->parsing, base, h->field_len, vlen > 0 ? base + vstart : "", vlen);
  dg_buf_reset(&h->scratch);
  return 0;
}

static bool id_valid(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > 64)
    return false;
  for (size_t i = 0; i < n; i++) {
    char ch = s[i];
    bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-';
    if (!ok)
      return false;
  }
  return true;
}

/* A request target in absolute form ("http://host/path?q", RFC 9112
 * 3.2.2), which servers must accept, is served by its path and query as
 * the origin form would be. */
static const char *origin_form(dg_arena_t *arena, const char *url) {
  if (url == NULL)
    return "/";
  size_t skip = 0;
  if (strncasecmp(url, "http://", 7) == 0)
    skip = 7;
  else if (strncasecmp(url, "https://", 8) == 0)
    skip = 8;
  if (skip == 0)
    return url;
  const char *rest = url + skip + strcspn(url + skip, "/?");
  if (*rest == '/')
    return rest;
  const char *rooted = dg_arena_sprintf(arena, "/%s", rest); /* "" or "?query" */
  return rooted != NULL ? rooted : "/";
}

static void finish_head(dg__http1_t *h, dg_http_request_t *req) {
  const char *url = origin_form(req->arena, req->url);
  req->host = request_host(req);
  const char *q = strchr(url, '?');
  req->method = llhttp_method_name((llhttp_method_t)h->parser.method);
  req->path = q != NULL ? dg_arena_strndup(req->arena, url, (size_t)(q - url)) : url;
  req->query = q != NULL ? q + 1 : "";
  if (req->path == NULL)
    req->path = "-";
  req->http_minor = h->parser.http_major > 1 ? 1 : h->parser.http_minor;
  req->keep_alive = llhttp_should_keep_alive(&h->parser) != 0;
  req->upgrade = h->parser.upgrade != 0;
  req->is_head = h->parser.method == HTTP_HEAD;
  const char *id = dg_http_request_header(req, "X-Request-Id");
  if (id != NULL && id_valid(id))
    dg_strlcpy(req->id, id, sizeof(req->id));
  else
    dg_uuid_v4(req->id);
  if (!dg_traceparent_trace_id(dg_http_request_header(req, "traceparent"), req->trace_id))
    req->trace_id[0] = '\0';
  const char *expect = dg_http_request_header(req, "Expect");
  req->expect_continue =
      expect != NULL && req->http_minor >= 1 && dg_strieq_n(expect, strlen(expect), "100-continue");
}

/* Interim 100 Continue, only when no earlier response is still owed:
 * it must not land in the middle of another request's response. */
static void maybe_continue(dg__conn_t *c) {
  static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";
  dg__http1_t *h = http_of(c);
  dg_http_request_t *req = h != NULL ? h->parsing : NULL;
  if (req == NULL || !req->expect_continue || h->phase != PHASE_BODY || h->active != NULL ||
      h->queue_head != NULL)
    return;
  req->expect_continue = false;
  dg__conn_write(c, cont, sizeof(cont) - 1);
}

/* Queues a complete request; 503 when the pipeline is full. */
static int complete(dg__conn_t *c, dg__http1_t *h, bool upgrade) {
  /* The first waiting request goes to the handler at once when it is free. */
  unsigned room = limits_of(c)->max_pipelined + (h->active == NULL ? 1u : 0u);
  dg_http_request_t *req = h->parsing;
  h->phase = PHASE_IDLE;
  h->idle_since_ms = dg_now_ms();
  req->expect_continue = false;
  h->parsing = NULL;
  queue_push(h, req);
  /* A full queue pauses the parser; an upgrade stops it anyway. */
  return h->queued >= room && !upgrade ? HPE_PAUSED : 0;
}

static bool has_body(const llhttp_t *p) {
  return (p->flags & F_CHUNKED) || ((p->flags & F_CONTENT_LENGTH) && p->content_length > 0);
}

/* The server decides on the head alone whether the body may be read, so a
 * caller without a valid token never makes us hold its body. A refused
 * request goes to the handler bodiless and the connection reads no more. */
static int admit(dg__conn_t *c, dg__http1_t *h, llhttp_t *p) {
  dg_http_server_t *s = c->server;
  dg_http_request_t *req = h->parsing;
  if (s->admit == NULL || s->admit(req)) {
    dg__server_admitted(s, c);
    return 0;
  }
  if (!has_body(p))
    return 0;
  req->body_refused = true;
  req->keep_alive = false;
  req->expect_continue = false;
  dg_metrics_counter_add("dg_http_limit_rejections_total", LIMIT("unadmitted_body"), 1);
  complete(c, h, false); /* nothing more is read, so a full queue need not pause */
  h->stopped = true;
  h->refused = true;
  dg__conn_noread(c, DG__NOREAD_PROTO, true);
  return HPE_USER;
}

static int on_headers_complete(llhttp_t *p) {
  dg__conn_t *c = conn_of(p);
  dg__http1_t *h = http_of(c);
  dg_http_request_t *req = h->parsing;
  int refusal = head_status(p, req);
  if (refusal != 0)
    return refuse(c, refusal);
  finish_head(h, req);
  scratch_release(h);
  int rc = admit(c, h, p);
  if (rc != 0)
    return rc;
  if ((p->flags & F_CONTENT_LENGTH) && p->content_length > limits_of(c)->max_body_bytes) {
    http_fail(c, 413, LIMIT("body"));
    return HPE_USER;
  }
  h->phase = PHASE_BODY;
  h->phase_start_ms = dg_now_ms();
  maybe_continue(c);
  http_arm(c);
  return 0;
}

static int on_body(llhttp_t *p, const char *at, size_t n) {
  dg__conn_t *c = conn_of(p);
  dg__http1_t *h = http_of(c);
  int rc = dg_buf_append(&h->parsing->body, at, n);
  if (rc == 0)
    return 0;
  http_fail(c, rc == DG_E2BIG ? 413 : 503, rc == DG_E2BIG ? LIMIT("body") : NULL);
  return HPE_USER;
}

static int on_message_complete(llhttp_t *p) {
  dg__conn_t *c = conn_of(p);
  return complete(c, http_of(c), p->upgrade);
}

static const llhttp_settings_t settings = {
    .on_message_begin = on_message_begin,
    .on_url = on_target,
    .on_method = on_counted,
    .on_version = on_counted,
    .on_header_field = on_text,
    .on_header_value = on_value,
    .on_method_complete = on_method_complete,
    .on_url_complete = on_url_complete,
    .on_version_complete = on_version_complete,
    .on_header_field_complete = on_header_field_complete,
    .on_header_value_complete = on_header_value_complete,
    .on_headers_complete = on_headers_complete,
    .on_body = on_body,
    .on_message_complete = on_message_complete,
};

/* ---- the pipeline ----------------------------------------------------- */

static void http_free(dg__http1_t *h) {
  request_free(h->parsing);
  request_free(h->active);
  for (dg_http_request_t *req = queue_pop(h); req != NULL; req = queue_pop(h))
    request_free(req);
  dg_buf_free(&h->scratch);
  dg_buf_free(&h->leftover);
  free(h);
}

/* Hands the next waiting request to the handler. Returns false when the
 * connection no longer speaks HTTP afterwards (it was upgraded). */
static bool http_dispatch(dg__conn_t *c) {
  dg__http1_t *h = http_of(c);
  h->dispatch_due = false;
  if (h->active != NULL || h->queue_head == NULL || !dg__conn_is_open(c))
    return true;
  dg_http_request_t *req = queue_pop(h);
  req->state = DG__REQ_ACTIVE;
  h->active = req;
  h->in_dispatch = true;
  c->server->handler(req);
  h->in_dispatch = false;
  if (h->detached) {
    http_free(h);
    return false;
  }
  return true;
}

static int stash_leftover(dg__conn_t *c, dg__http1_t *h, const char *data, size_t len) {
  if (dg_buf_append(&h->leftover, data, len) == 0)
    return 0;
  dg__conn_close(c);
  return DG_E2BIG;
}

/* A method llhttp does not know is 501 when the rest is a request line
 * (token SP target SP HTTP/d.d: an unknown method, RFC 9110 15.5.2 and
 * 15.6.2), 400 otherwise (not a request line at all, or cut by the end of
 * a read). */
static int bad_method_status(const char *pos, const char *end) {
  const char *p = pos;
  while (p < end && tchar((unsigned char)*p))
    p++;
  if (p == pos || p >= end || *p++ != ' ')
    return 400;
  const char *target = p;
  while (p < end && (unsigned char)*p > ' ' && *p != 0x7f)
    p++;
  if (p == target || end - p < 10 || memcmp(p, " HTTP/", 6) != 0)
    return 400;
  p += 6;
  bool version = p[0] >= '0' && p[0] <= '9' && p[1] == '.' && p[2] >= '0' && p[2] <= '9';
  return version && (p[3] == '\r' || p[3] == '\n') ? 501 : 400;
}

static void parse_error(dg__conn_t *c, llhttp_errno_t err, const char *pos, const char *end) {
  const dg__http1_t *h = http_of(c);
  /* A check or a limit already chose the status, or a refused request is
   * answered alone (llhttp reports a callback's refusal in its own codes). */
  if (err == HPE_USER || h->error_status != 0 || h->refused)
    return;
  http_fail(c, err == HPE_INVALID_METHOD && pos != NULL ? bad_method_status(pos, end) : 400, NULL);
}

/* Parses input; stops at an upgrade or a pause, keeping what follows. */
static void parse_input(dg__conn_t *c, const char *data, size_t len) {
  dg__http1_t *h = http_of(c);
  if (h->stopped || h->paused) {
    if (h->error_status == 0 && !h->refused)
      stash_leftover(c, h, data, len);
    return;
  }
  h->input_end = data + len;
  llhttp_errno_t err = llhttp_execute(&h->parser, data, len);
  const char *pos = llhttp_get_error_pos(&h->parser);
  bool inside = pos != NULL && pos >= data && pos <= data + len;
  if (err == HPE_PAUSED_UPGRADE || err == HPE_PAUSED) {
    size_t used = inside ? (size_t)(pos - data) : len;
    if (err == HPE_PAUSED_UPGRADE)
      h->stopped = true;
    else
      h->paused = true;
    dg__conn_noread(c, DG__NOREAD_PROTO, true);
    stash_leftover(c, h, data + used, len - used);
  } else if (err != HPE_OK) {
    parse_error(c, err, inside ? pos : NULL, data + len);
  }
}

/* The queue has room again: parse what waited, then read again unless
 * the parser paused or stopped once more. */
static void http_resume(dg__conn_t *c) {
  dg__http1_t *h = http_of(c);
  dg_buf_t early = h->leftover;
  dg_buf_init(&h->leftover, early.max);
  h->paused = false;
  llhttp_resume(&h->parser);
  if (early.len > 0)
    parse_input(c, early.data, early.len);
  dg_buf_free(&early);
  if (!h->paused && !h->stopped)
    dg__conn_noread(c, DG__NOREAD_PROTO, false);
  if (h->active == NULL && h->queue_head != NULL)
    h->dispatch_due = true;
}

static void http_on_data(dg__conn_t *c, const char *data, size_t len) {
  parse_input(c, data, len);
  if (dg__conn_is_open(c) && http_dispatch(c))
    http_arm(c);
}

static void http_on_timer(dg__conn_t *c) {
  dg__http1_t *h = http_of(c);
  const dg_http_limits_t *l = limits_of(c);
  uint64_t now = dg_now_ms();
  if (resume_due(c, h))
    http_resume(c);
  if (h->dispatch_due || !dg__conn_is_open(c)) {
    if (dg__conn_is_open(c) && http_dispatch(c))
      http_arm(c);
    return;
  }
  if (h->phase == PHASE_HEADERS && now >= h->phase_start_ms + l->header_timeout_ms)
    http_fail(c, 408, LIMIT("timeout"));
  else if (h->phase == PHASE_BODY && now >= h->phase_start_ms + l->request_timeout_ms)
    http_fail(c, 408, LIMIT("timeout"));
  else if (h->phase == PHASE_IDLE && h->active == NULL && h->queue_head == NULL &&
           h->error_status == 0)
    dg__conn_close(c); /* idle keep-alive: closed silently */
  http_arm(c);
}

/* The peer stopped sending. A request still being parsed or answered is
 * abandoned, as a browser closing a tab means. */
static void http_on_eof(dg__conn_t *c) {
  dg__http1_t *h = http_of(c);
  if (h->active == NULL && h->queue_head == NULL && h->parsing == NULL)
    dg__conn_finish(c); /* answered responses still go out */
  else
    dg__conn_close(c);
}

static void http_on_drain(dg__conn_t *c) {
  dg__http1_t *h = http_of(c);
  dg_http_request_t *req = h->active;
  if (req != NULL && req->events.on_drain != NULL)
    req->events.on_drain(req, req->events.data);
}

static void http_on_server_drain(dg__conn_t *c) {
  dg__http1_t *h = http_of(c);
  h->draining = true;
  if (h->active == NULL && h->queue_head == NULL && h->parsing == NULL)
    dg__conn_close(c);
}

/* The connection is gone: the request with the handler hears on_abort
 * (or, unwatched, waits for its answer, which then fails); the others
 * are dropped. */
static void http_on_closed(dg__conn_t *c) {
  dg__http1_t *h = c->proto_state;
  dg_http_request_t *req = h->active;
  h->active = NULL;
  c->proto_state = NULL;
  if (req != NULL) {
    req->conn = NULL;
    if (req->events.on_abort != NULL) {
      req->events.on_abort(req, req->events.data);
      request_free(req);
    }
  }
  http_free(h);
}

static size_t request_memory(const dg_http_request_t *req) {
  return req != NULL ? dg_arena_used(req->arena) + req->body.cap : 0;
}

static size_t http_memory(const dg__conn_t *c) {
  const dg__http1_t *h = c->proto_state;
  size_t n = sizeof(*h) + h->scratch.cap + h->leftover.cap;
  n += request_memory(h->parsing) + request_memory(h->active);
  for (const dg_http_request_t *req = h->queue_head; req != NULL; req = req->next)
    n += request_memory(req);
  return n;
}

static void http_on_open(dg__conn_t *c) {
  dg__http1_t *h = http_of(c);
  h->idle_since_ms = dg_now_ms();
  http_arm(c);
}

const dg__proto_t dg__http1_proto = {
    .name = "http",
    .on_open = http_on_open,
    .on_data = http_on_data,
    .on_eof = http_on_eof,
    .on_timer = http_on_timer,
    .on_drain = http_on_drain,
    .on_server_drain = http_on_server_drain,
    .on_closed = http_on_closed,
    .memory = http_memory,
};

int dg__http1_attach(dg__conn_t *c) {
  dg__http1_t *h = calloc(1, sizeof(*h));
  if (h == NULL)
    return DG_ENOMEM;
  llhttp_init(&h->parser, HTTP_REQUEST, &settings);
  h->parser.data = c;
  h->fresh = true;
  h->idle_since_ms = dg_now_ms();
  dg_buf_init(&h->scratch, 0);
  /* Input that waits: after an upgrade, or after a pause (the rest of one
   * read, and of one TLS record decrypted from it). */
  dg_buf_init(&h->leftover,
              limits_of(c)->max_header_bytes + DG__READ_BUF_SIZE + DG__TLS_PLAIN_SIZE);
  c->proto = &dg__http1_proto;
  c->proto_state = h;
  return 0;
}

bool dg__http1_keep_alive(const dg_http_request_t *req) {
  dg__conn_t *c = req->conn;
  dg__http1_t *h = c != NULL ? http_of(c) : NULL;
  if (h == NULL || !req->keep_alive || req->upgrade || h->draining)
    return false;
  return c->server->state == DG__SERVER_RUNNING;
}

void dg__http1_request_done(dg_http_request_t *req, bool keep_alive) {
  dg__conn_t *c = req->conn;
  dg__http1_t *h = c != NULL ? http_of(c) : NULL;
  if (c != NULL)
    access_log(req);
  req->state = DG__REQ_DONE;
  if (h != NULL && h->active == req)
    h->active = NULL;
  request_free(req);
  if (h == NULL || !dg__conn_is_open(c))
    return;
  if (!keep_alive) {
    dg__conn_finish(c);
    return;
  }
  h->idle_since_ms = dg_now_ms();
  if (h->queue_head != NULL)
    h->dispatch_due = true;
  else
    send_error_if_due(c);
  maybe_continue(c);
  http_arm(c);
}

void dg__http1_detach(dg__conn_t *c, dg_buf_t *leftover) {
  dg__http1_t *h = http_of(c);
  *leftover = h->leftover;
  dg_buf_init(&h->leftover, 0);
  dg_http_request_t *req = h->active;
  h->active = NULL;
  if (req != NULL) {
    access_log(req);
    request_free(req);
  }
  c->proto = NULL;
  c->proto_state = NULL;
  if (h->in_dispatch)
    h->detached = true;
  else
    http_free(h);
}

/* ---- request accessors ------------------------------------------------ */

const char *dg_http_request_method(const dg_http_request_t *req) {
  return req->method;
}

const char *dg_http_request_path(const dg_http_request_t *req) {
  return req->path;
}

const char *dg_http_request_query(const dg_http_request_t *req) {
  return req->query;
}

const char *dg_http_request_header(const dg_http_request_t *req, const char *name) {
  const dg__header_t *hd = header_find(req, name);
  return hd != NULL ? hd->value : NULL;
}

unsigned dg_http_request_header_lines(const dg_http_request_t *req, const char *name) {
  const dg__header_t *hd = header_find(req, name);
  return hd != NULL ? hd->lines : 0;
}

const char *dg_http_request_host(const dg_http_request_t *req) {
  return req->host != NULL ? req->host : "";
}

const char *dg_http_request_body(const dg_http_request_t *req, size_t *len) {
  if (len != NULL)
    *len = req->body.len;
  return req->body.data != NULL ? req->body.data : "";
}

const char *dg_http_request_id(const dg_http_request_t *req) {
  return req->id;
}

const char *dg_http_request_trace_id(const dg_http_request_t *req) {
  return req->trace_id[0] != '\0' ? req->trace_id : NULL;
}

const char *dg_http_request_peer(const dg_http_request_t *req) {
  return req->peer;
}

bool dg_http_request_is_tls(const dg_http_request_t *req) {
  return req->tls;
}

dg_arena_t *dg_http_request_arena(dg_http_request_t *req) {
  return req->arena;
}

void *dg_http_request_server_data(const dg_http_request_t *req) {
  return req->server_data;
}

bool dg_http_request_body_refused(const dg_http_request_t *req) {
  return req->body_refused;
}

void dg_http_request_set_admitted(dg_http_request_t *req, const void *data) {
  req->admitted = data;
}

const void *dg_http_request_admitted(const dg_http_request_t *req) {
  return req->admitted;
}
