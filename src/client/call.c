/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* One upstream call, as a state machine:
 *
 *   NEW -> QUEUED? -> RESOLVING -> CONNECTING -> HANDSHAKE? -> WAITING -> READING
 *   ^ (next turn)                                                  |
 *   attempts: BACKOFF (retry) or a redirect go back to RESOLVING (or a
 *   pooled connection straight to WAITING); every path ends in FINISHING
 *   (the result is set, resources are released) and, on the next loop
 *   turn, DONE (the callback runs, then the call is freed).
 *
 * One timer per call serves the whole deadline, the current phase's
 * deadline, the end of a backoff and the deferred delivery. */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "client/internal.h"

static void attempt(dg_http_call_t *call);
static void on_timer(uv_timer_t *t);

static bool transition_ok(dg__call_state_t from, dg__call_state_t to) {
  if (to == DG__CALL_FINISHING)
    return from != DG__CALL_FINISHING && from != DG__CALL_DONE;
  /* BACKOFF is the state between attempts, whatever ended the last one. */
  bool attempting = from >= DG__CALL_RESOLVING && from <= DG__CALL_READING;
  if (to == DG__CALL_BACKOFF)
    return attempting;
  switch (from) {
  case DG__CALL_NEW:
  case DG__CALL_QUEUED:
  case DG__CALL_BACKOFF:
    return to == DG__CALL_QUEUED ? from == DG__CALL_NEW
                                 : to == DG__CALL_RESOLVING || to == DG__CALL_WAITING;
  case DG__CALL_RESOLVING:
    return to == DG__CALL_CONNECTING;
  case DG__CALL_CONNECTING:
    return to == DG__CALL_HANDSHAKE || to == DG__CALL_WAITING;
  case DG__CALL_HANDSHAKE:
    return to == DG__CALL_WAITING;
  case DG__CALL_WAITING:
    return to == DG__CALL_READING;
  case DG__CALL_READING:
    return false;
  case DG__CALL_FINISHING:
    return to == DG__CALL_DONE;
  default:
    return false;
  }
}

static void set_state(dg_http_call_t *call, dg__call_state_t to) {
  if (!transition_ok(call->state, to)) {
    dg_logf(DG_LOG_ERROR, "upstream_call_state", "illegal call state change %d -> %d", call->state,
            to);
    abort();
  }
  call->state = to;
}

static bool finished(const dg_http_call_t *call) {
  return call->state == DG__CALL_FINISHING || call->state == DG__CALL_DONE;
}

/* ---- timers ------------------------------------------------------------------ */

/* A timer due no later than the next deadline is left running: when it
 * fires early, on_timer arms it again. This spares a timer update each time
 * a phase moves its deadline later (every read of a response). */
static void arm(dg_http_call_t *call) {
  uint64_t now = dg_now_ms();
  uint64_t next = call->deadline_ms;
  if (call->phase_deadline_ms != 0 && call->phase_deadline_ms < next)
    next = call->phase_deadline_ms;
  if (uv_is_active((uv_handle_t *)&call->timer) && call->armed_ms <= next)
    return;
  call->armed_ms = next;
  uv_timer_start(&call->timer, on_timer, next > now ? next - now : 0, 0);
}

/* The timer fires on the next loop turn (deferred delivery and start). */
static void arm_now(dg_http_call_t *call) {
  call->armed_ms = 0;
  uv_timer_start(&call->timer, on_timer, 0, 0);
}

static void set_phase(dg_http_call_t *call, const char *phase, uint64_t ms) {
  call->phase = phase;
  call->phase_deadline_ms = ms != 0 ? dg_now_ms() + ms : 0;
  arm(call);
}

/* ---- messages ----------------------------------------------------------------- */

/* "upstream 'crm' GET https://api.example.com/orders" (never the query). */
static int describe(const dg_http_call_t *call, char *out, size_t size) {
  char url[512];
  dg__url_display(&call->url, url, sizeof(url));
  return snprintf(out, size, "upstream '%.64s' %s %.400s", call->connector->name, call->method,
                  url);
}

static void set_message(dg_http_call_t *call, const char *fmt, va_list ap) {
  char what[512];
  char why[768];
  describe(call, what, sizeof(what));
  vsnprintf(why, sizeof(why), fmt, ap);
  if (call->attempts > 1)
    dg_errctx_set(&call->err, call->result.rc, "upstream", "%s %s (after %u attempts)", what, why,
                  call->attempts);
  else
    dg_errctx_set(&call->err, call->result.rc, "upstream", "%s %s", what, why);
}

/* ---- finishing --------------------------------------------------------------- */

static void drop_conn(dg_http_call_t *call) {
  if (call->conn == NULL)
    return;
  call->conn->broken = true;
  dg__uconn_close(call->conn);
  call->conn = NULL;
}

static void release_slot(dg_http_call_t *call) {
  if (call->connector == NULL || !call->has_slot)
    return;
  call->has_slot = false;
  dg_http_call_t *next = dg__connector_leave(call->connector, call);
  if (next != NULL)
    dg__call_admitted(next);
}

/* Resources go back at once; the callback follows on the next turn. */
static void finish(dg_http_call_t *call, dg_http_failure_t failure, int rc, const char *phase) {
  call->result.failure = failure;
  call->result.rc = rc;
  call->result.phase = phase;
  set_state(call, DG__CALL_FINISHING);
  dg__dns_cancel(&call->dns);
  drop_conn(call);
  if (call->probe)
    dg__breaker_release_probe(call->connector, call->url.origin);
  call->probe = false;
  release_slot(call);
  call->phase_deadline_ms = 0;
  arm_now(call);
}

void dg__call_fail(dg_http_call_t *call, dg_http_failure_t failure, int rc, const char *phase,
                   const char *fmt, ...) {
  if (finished(call))
    return;
  va_list ap;
  va_start(ap, fmt);
  call->result.rc = rc;
  set_message(call, fmt, ap);
  va_end(ap);
  finish(call, failure, rc, phase);
}

void dg__call_cancel(dg_http_call_t *call) {
  call->canceled = true;
  dg__call_fail(call, DG_HTTP_FAIL_CANCELED, DG_ECANCELED, NULL, "was cancelled");
}

static void finish_response(dg_http_call_t *call) {
  int status = call->response.status;
  if (status < 400) {
    finish(call, DG_HTTP_FAIL_NONE, 0, NULL);
    return;
  }
  char excerpt[DG__CLIENT_EXCERPT + 4];
  dg__excerpt(call->body_buf.data != NULL ? call->body_buf.data : "", call->body_buf.len, excerpt,
              sizeof(excerpt));
  dg__call_fail(call, DG_HTTP_FAIL_STATUS, DG_EUPSTREAM, NULL, "answered %d %s%s%s", status,
                dg_http_status_text(status), excerpt[0] != '\0' ? ": " : "", excerpt);
}

/* ---- retries ------------------------------------------------------------------ */

static uint64_t backoff_ms(dg_http_call_t *call) {
  const dg_http_client_config_t *cfg = &call->client->cfg;
  uint64_t d = cfg->retry_base_ms;
  for (unsigned i = 0; i < call->retries && d < cfg->retry_max_ms; i++)
    d *= 2;
  if (d > cfg->retry_max_ms)
    d = cfg->retry_max_ms;
  /* Equal jitter: half fixed, half random, so that callers that failed
   * together do not come back together. */
  return d / 2 + dg__client_random(call->client, d / 2 + 1);
}

/* Whether another attempt fits; *delay says when it may start. A
 * Retry-After longer than retry_max_ms is honoured by not retrying. */
static bool may_retry(dg_http_call_t *call, bool asked_after, uint64_t after_ms, uint64_t *delay) {
  if (!call->retryable || call->streamed || call->retries >= call->max_retries ||
      call->client->state != DG__CLIENT_RUNNING)
    return false;
  if (asked_after && after_ms > call->client->cfg.retry_max_ms)
    return false;
  *delay = asked_after ? after_ms : backoff_ms(call);
  return dg_now_ms() + *delay < call->deadline_ms;
}

static void retry_after(dg_http_call_t *call, uint64_t delay) {
  call->retries++;
  set_state(call, DG__CALL_BACKOFF);
  call->phase = "backoff";
  call->phase_deadline_ms = dg_now_ms() + delay;
  arm(call);
}

static bool counts_against_breaker(dg_http_failure_t f) {
  return f == DG_HTTP_FAIL_DNS || f == DG_HTTP_FAIL_CONNECT || f == DG_HTTP_FAIL_TLS ||
         f == DG_HTTP_FAIL_TIMEOUT || f == DG_HTTP_FAIL_PROTOCOL;
}

static void record_outcome(dg_http_call_t *call, bool success) {
  dg__breaker_record(call->connector, call->url.origin, success, call->probe, dg_now_ms());
  call->probe = false;
}

/* An attempt failed before a usable response: retried when it was a
 * connection error and the call allows it, else the call fails. */
static void attempt_failed(dg_http_call_t *call, dg_http_failure_t failure, int rc,
                           const char *phase, const char *why) {
  if (finished(call))
    return;
  bool attempting = call->state >= DG__CALL_RESOLVING && call->state <= DG__CALL_READING;
  dg__dns_cancel(&call->dns);
  drop_conn(call);
  if (attempting && counts_against_breaker(failure))
    record_outcome(call, false);
  bool connection_error =
      attempting &&
      (failure == DG_HTTP_FAIL_CONNECT ||
       (failure == DG_HTTP_FAIL_TIMEOUT && phase != NULL && strcmp(phase, "connect") == 0));
  uint64_t delay = 0;
  if (connection_error && may_retry(call, false, 0, &delay)) {
    retry_after(call, delay);
    return;
  }
  dg__call_fail(call, failure, rc, phase, "%s", why);
}

/* ---- timeouts ------------------------------------------------------------------- */

static void timed_out(dg_http_call_t *call, const char *phase) {
  const dg_http_timeouts_t *t = &call->timeouts;
  char why[160];
  if (strcmp(phase, "dns") == 0)
    snprintf(why, sizeof(why), "timed out resolving the host name (limit %llu ms)",
             (unsigned long long)t->dns_ms);
  else if (strcmp(phase, "connect") == 0)
    snprintf(why, sizeof(why), "timed out connecting (limit %llu ms)",
             (unsigned long long)t->connect_ms);
  else if (strcmp(phase, "tls") == 0)
    snprintf(why, sizeof(why), "timed out in the TLS handshake (limit %llu ms)",
             (unsigned long long)t->tls_ms);
  else if (strcmp(phase, "first_byte") == 0)
    snprintf(why, sizeof(why),
             "timed out waiting for the first byte of the response (limit %llu "
             "ms)",
             (unsigned long long)t->first_byte_ms);
  else if (strcmp(phase, "body") == 0)
    snprintf(why, sizeof(why), "timed out: the response stalled for %llu ms",
             (unsigned long long)t->first_byte_ms);
  else
    snprintf(why, sizeof(why), "timed out: the whole call took over %llu ms%s",
             (unsigned long long)t->total_ms,
             strcmp(phase, "queue") == 0 ? " waiting for a free slot of the connector" : "");
  attempt_failed(call, DG_HTTP_FAIL_TIMEOUT, DG_ETIMEDOUT, phase, why);
}

static void begin(dg_http_call_t *call);
static void deliver(dg_http_call_t *call);

static void on_timer(uv_timer_t *t) {
  dg_http_call_t *call = t->data;
  uint64_t now = dg_now_ms();
  if (call->state == DG__CALL_FINISHING) {
    deliver(call);
    return;
  }
  if (call->state == DG__CALL_NEW) {
    begin(call);
    return;
  }
  bool total = now >= call->deadline_ms;
  bool phase = call->phase_deadline_ms != 0 && now >= call->phase_deadline_ms;
  if (call->state == DG__CALL_BACKOFF && phase && !total)
    attempt(call);
  else if (phase && call->state != DG__CALL_BACKOFF)
    timed_out(call, call->phase);
  else if (total)
    timed_out(call, call->state == DG__CALL_QUEUED ? "queue" : "call");
  else
    arm(call);
}

/* ---- the request ------------------------------------------------------------------ */

static bool reserved_header(const char *name) {
  static const char *const reserved[] = {
      "host",        "content-length",    "connection", "accept-encoding",
      "traceparent", "transfer-encoding", "keep-alive", "te",
      "upgrade"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(reserved); i++) {
    if (strcasecmp(name, reserved[i]) == 0)
      return true;
  }
  return false;
}

/* Appends the NULL-terminated list of strings: the request is built with
 * plain copies, without printf, as it is written for every call. */
static int put(dg_buf_t *out, ...) {
  va_list ap;
  va_start(ap, out);
  int rc = 0;
  for (const char *s = va_arg(ap, const char *); rc == 0 && s != NULL; s = va_arg(ap, const char *))
    rc = dg_buf_append_str(out, s);
  va_end(ap);
  return rc;
}

/* n as hex digits, width fixed, into out (width + 1 bytes). */
static void hex_u64(uint64_t n, int width, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (int i = width - 1; i >= 0; i--, n >>= 4)
    out[i] = digits[n & 15];
  out[width] = '\0';
}

/* n in decimal into out (at least 21 bytes), terminated. */
static const char *dec_u64(uint64_t n, char *out) {
  out[dg_decimal(out, n)] = '\0';
  return out;
}

static int write_head(dg_http_call_t *call, dg_buf_t *out) {
  const dg__url_t *u = &call->url;
  /* The span id needs to be unique, not secret: the client's generator
   * spares a system call per request. */
  char span_hex[17], port[21];
  hex_u64(dg__client_random(call->client, UINT64_MAX) | 1, 16, span_hex); /* never all zero */
  bool default_port = u->port == (u->https ? 443 : 80);
  int rc = put(out, call->method, " ", u->target, " HTTP/1.1\r\nHost: ", u->ipv6 ? "[" : "",
               u->host, u->ipv6 ? "]" : "", NULL);
  if (rc == 0 && !default_port)
    rc = put(out, ":", dec_u64(u->port, port), NULL);
  if (rc == 0)
    rc = put(out, "\r\ntraceparent: 00-", call->trace_id, "-", span_hex,
             "-01\r\nAccept-Encoding: gzip, deflate\r\n", NULL);
  return rc;
}

static bool has_header(const dg_http_call_t *call, const char *name) {
  for (size_t i = 0; i < call->nheaders; i++) {
    if (strcasecmp(call->headers[i].name, name) == 0)
      return true;
  }
  return false;
}

static int write_rest(dg_http_call_t *call, dg_buf_t *out) {
  int rc = 0;
  if (!has_header(call, "User-Agent"))
    rc = dg_buf_append_str(out, "User-Agent: datagate/" DG_VERSION "\r\n");
  bool wants_length = call->body_len > 0 || strcmp(call->method, "POST") == 0 ||
                      strcmp(call->method, "PUT") == 0 || strcmp(call->method, "PATCH") == 0;
  char length[21];
  if (rc == 0 && wants_length)
    rc = put(out, "Content-Length: ", dec_u64(call->body_len, length), "\r\n", NULL);
  for (size_t i = 0; rc == 0 && i < call->nheaders; i++) {
    if (!reserved_header(call->headers[i].name))
      rc = put(out, call->headers[i].name, ": ", call->headers[i].value, "\r\n", NULL);
  }
  if (rc == 0)
    rc = dg_buf_append(out, "\r\n", 2);
  if (rc == 0 && call->body_len > 0)
    rc = dg_buf_append(out, call->body, call->body_len);
  return rc;
}

static void send_request(dg_http_call_t *call) {
  dg_buf_t req;
  dg_buf_init(&req, 1024 * 1024 + call->body_len);
  int rc = write_head(call, &req);
  if (rc == 0)
    rc = write_rest(call, &req);
  if (rc == 0)
    rc = dg__uconn_write(call->conn, req.data, req.len);
  dg_buf_free(&req);
  if (rc != 0) {
    attempt_failed(call, DG_HTTP_FAIL_CONNECT, DG_EUPSTREAM, NULL, "could not send the request");
    return;
  }
  call->conn->requests++;
  dg__resp_begin(&call->resp, strcmp(call->method, "HEAD") == 0, call->max_body);
  dg_buf_reset(&call->body_buf);
  call->body_mode = DG__BODY_COLLECT;
  set_state(call, DG__CALL_WAITING);
  set_phase(call, "first_byte", call->timeouts.first_byte_ms);
}

/* ---- connecting --------------------------------------------------------------------- */

static void connect_next(dg_http_call_t *call, const char *last_why) {
  const char *why = last_why;
  while (call->addr_index < call->addrs.n) {
    struct sockaddr_storage *ss = &call->addrs.addr[call->addr_index];
    if (ss->ss_family == AF_INET)
      ((struct sockaddr_in *)ss)->sin_port = htons(call->url.port);
    else
      ((struct sockaddr_in6 *)ss)->sin6_port = htons(call->url.port);
    if (dg__uconn_open(call->client, call, (struct sockaddr *)ss, &call->conn, &why) == 0) {
      call->conn_reused = false;
      return;
    }
    call->conn = NULL;
    call->addr_index++;
  }
  char addr[64] = "";
  if (call->addrs.n > 0)
    dg__addr_text((struct sockaddr *)&call->addrs.addr[call->addrs.n - 1], addr, sizeof(addr));
  char msg[256];
  snprintf(msg, sizeof(msg), "could not connect to %s port %u: %s", addr[0] ? addr : "the host",
           (unsigned)call->url.port, why != NULL ? why : "no address");
  attempt_failed(call, DG_HTTP_FAIL_CONNECT, DG_EUPSTREAM, NULL, msg);
}

/* Only addresses the policy allows are tried; none left is a refusal. */
static bool apply_policy(dg_http_call_t *call) {
  unsigned kept = 0;
  char refused[64] = "";
  for (unsigned i = 0; i < call->addrs.n; i++) {
    struct sockaddr *sa = (struct sockaddr *)&call->addrs.addr[i];
    if (dg_http_address_allowed(&call->policy, sa))
      call->addrs.addr[kept++] = call->addrs.addr[i];
    else if (refused[0] == '\0')
      dg__addr_text(sa, refused, sizeof(refused));
  }
  call->addrs.n = kept;
  if (kept > 0)
    return true;
  dg__call_fail(call, DG_HTTP_FAIL_POLICY, DG_EPERM, NULL,
                "was refused: host '%s' resolves to %s, an address this call may not reach "
                "(loopback, link-local and private addresses are refused unless allowed)",
                call->url.host, refused);
  return false;
}

static void resolved(dg_http_call_t *call) {
  if (!apply_policy(call))
    return;
  call->addr_index = 0;
  set_state(call, DG__CALL_CONNECTING);
  set_phase(call, "connect", call->timeouts.connect_ms);
  connect_next(call, NULL);
}

static void on_dns(dg__dns_waiter_t *w, int rc, const dg__dns_addrs_t *addrs, const char *why) {
  dg_http_call_t *call = (dg_http_call_t *)((char *)w - offsetof(dg_http_call_t, dns));
  if (finished(call))
    return;
  if (rc != 0) {
    attempt_failed(call, rc == DG_ECANCELED ? DG_HTTP_FAIL_CANCELED : DG_HTTP_FAIL_DNS,
                   rc == DG_ECANCELED ? DG_ECANCELED : DG_EUPSTREAM, NULL, why);
    return;
  }
  call->addrs = *addrs;
  resolved(call);
}

static void resolve(dg_http_call_t *call) {
  char why[256] = "";
  set_state(call, DG__CALL_RESOLVING);
  set_phase(call, "dns", call->timeouts.dns_ms);
  call->dns.cb = on_dns;
  int rc = dg__dns_resolve(call->client->dns, call->url.host, &call->dns, &call->addrs, why,
                           sizeof(why));
  if (rc == 1)
    resolved(call);
  else if (rc < 0)
    attempt_failed(call, DG_HTTP_FAIL_DNS, rc == DG_ECANCELED ? DG_ECANCELED : DG_EUPSTREAM, NULL,
                   why[0] != '\0' ? why : "the host name could not be resolved");
}

/* A pooled connection is used only if this call's policy allows its peer. */
static bool reuse_pooled(dg_http_call_t *call) {
  dg__uconn_t *c = dg__pool_checkout(call->client, call->url.origin, call);
  if (c == NULL)
    return false;
  if (call->policy.enforce &&
      !dg_http_address_allowed(&call->policy, (struct sockaddr *)&c->peer)) {
    dg__uconn_release(c, true);
    return false;
  }
  call->conn = c;
  call->conn_reused = true;
  send_request(call);
  return true;
}

static void attempt(dg_http_call_t *call) {
  char why[256];
  bool probe = false;
  if (call->client->state != DG__CLIENT_RUNNING) {
    dg__call_fail(call, DG_HTTP_FAIL_CANCELED, DG_ECANCELED, NULL,
                  "was cancelled: the gateway is stopping");
    return;
  }
  if (!dg__breaker_allow(call->connector, call->url.origin, dg_now_ms(), &probe, why,
                         sizeof(why))) {
    dg__call_fail(call, DG_HTTP_FAIL_BREAKER, DG_EBUSY, NULL, "was not tried: %s", why);
    return;
  }
  call->probe = probe;
  call->attempts++;
  call->addrs.n = 0;
  call->result.response = NULL;
  if (!reuse_pooled(call))
    resolve(call);
}

void dg__call_admitted(dg_http_call_t *call) {
  call->has_slot = true;
  attempt(call);
}

static void begin(dg_http_call_t *call) {
  int rc = dg__connector_admit(call->connector, call);
  if (rc == 1) {
    dg__call_admitted(call);
    return;
  }
  if (rc == 0) {
    set_state(call, DG__CALL_QUEUED);
    set_phase(call, "queue", 0);
    return;
  }
  dg__call_fail(call, DG_HTTP_FAIL_OVERLOADED, DG_EBUSY, NULL,
                "was refused: the connector already has %u calls running and %u waiting",
                call->connector->cfg.max_concurrency, call->connector->cfg.max_queue);
}

void dg__call_start(dg_http_call_t *call) {
  call->timer.data = call;
  arm_now(call);
}

/* ---- connection events ---------------------------------------------------------- */

void dg__call_conn_connected(dg_http_call_t *call) {
  set_state(call, DG__CALL_HANDSHAKE);
  set_phase(call, "tls", call->timeouts.tls_ms);
}

void dg__call_conn_ready(dg_http_call_t *call) {
  send_request(call);
}

static bool stale_connection(dg_http_call_t *call) {
  return call->conn_reused && !call->resp.started && call->state == DG__CALL_WAITING &&
         !call->stale_retried && call->retryable;
}

/* A reused keep-alive connection that the server closed as we sent on it
 * is the client's race, not a failure: one fresh attempt follows at once.
 * The request was sent, so it counts as an attempt (the count reported is
 * the number of requests sent), and it uses up a retry when one is left so
 * that no more requests go out than the connector's maxAttempts allow; a
 * call without retries still gets this one fresh attempt. */
static void retry_stale(dg_http_call_t *call) {
  call->stale_retried = true;
  drop_conn(call);
  if (call->retries < call->max_retries)
    call->retries++;
  set_state(call, DG__CALL_BACKOFF);
  attempt(call);
}

void dg__call_conn_failed(dg_http_call_t *call, dg_http_failure_t failure, const char *why) {
  if (finished(call))
    return;
  if (call->state == DG__CALL_CONNECTING && call->addr_index + 1 < call->addrs.n) {
    drop_conn(call);
    call->addr_index++;
    connect_next(call, why);
    return;
  }
  if (stale_connection(call)) {
    retry_stale(call);
    return;
  }
  char msg[400];
  char addr[64] = "";
  if (call->state == DG__CALL_CONNECTING && call->addr_index < call->addrs.n)
    dg__addr_text((struct sockaddr *)&call->addrs.addr[call->addr_index], addr, sizeof(addr));
  if (addr[0] != '\0')
    snprintf(msg, sizeof(msg), "could not connect to %s port %u: %s", addr,
             (unsigned)call->url.port, why);
  else
    snprintf(msg, sizeof(msg), "failed: %s", why);
  attempt_failed(call, failure, DG_EUPSTREAM, NULL, msg);
}

static void response_failed(dg_http_call_t *call, int rc) {
  const char *why = call->resp.reason[0] != '\0' ? call->resp.reason : dg_strerror(rc);
  if (call->resp.sink_failed)
    dg__call_fail(call, DG_HTTP_FAIL_ABORTED, rc, NULL,
                  "was stopped by its caller while reading the response: %s", dg_strerror(rc));
  else if (rc == DG_E2BIG)
    dg__call_fail(call, DG_HTTP_FAIL_TOO_BIG, DG_E2BIG, NULL, "failed: %s", why);
  else if (rc == DG_EPROTO)
    attempt_failed(call, DG_HTTP_FAIL_PROTOCOL, DG_EPROTO, NULL, why);
  else if (rc == DG_ECLOSED)
    attempt_failed(call, DG_HTTP_FAIL_CONNECT, DG_EUPSTREAM, NULL, why);
  else
    dg__call_fail(call, DG_HTTP_FAIL_ABORTED, rc, NULL,
                  "was stopped by its caller while reading the response: %s", dg_strerror(rc));
}

void dg__call_conn_eof(dg_http_call_t *call) {
  if (finished(call))
    return;
  if (call->state == DG__CALL_HANDSHAKE) {
    attempt_failed(call, DG_HTTP_FAIL_TLS, DG_EUPSTREAM, NULL,
                   "failed: the connection closed during the TLS handshake");
    return;
  }
  if (stale_connection(call)) {
    retry_stale(call);
    return;
  }
  int rc = dg__resp_eof(&call->resp);
  if (rc != 0 && !finished(call))
    response_failed(call, rc);
}

void dg__call_conn_data(dg_http_call_t *call, const char *data, size_t len) {
  if (call->state != DG__CALL_WAITING && call->state != DG__CALL_READING)
    return;
  if (call->state == DG__CALL_WAITING)
    set_state(call, DG__CALL_READING);
  set_phase(call, "body", call->timeouts.first_byte_ms);
  int rc = dg__resp_feed(&call->resp, data, len, NULL);
  if (rc != 0 && !finished(call) && call->state == DG__CALL_READING)
    response_failed(call, rc);
  else if (call->state == DG__CALL_READING && call->conn != NULL && dg__resp_held(&call->resp))
    dg__uconn_pause(call->conn);
}

void dg__call_conn_drain(dg_http_call_t *call) {
  if (call->state != DG__CALL_READING || call->conn == NULL)
    return;
  int rc = dg__resp_drain(&call->resp);
  if (rc == 0 && dg__resp_held(&call->resp)) {
    dg__uconn_pause(call->conn);
    return;
  }
  /* Reading again before the message ends lets the connection be reused. */
  if (rc == 0) {
    dg__uconn_resume(call->conn);
    rc = dg__resp_settle(&call->resp);
  }
  if (rc != 0 && !finished(call) && call->state == DG__CALL_READING)
    response_failed(call, rc);
}

/* ---- responses ----------------------------------------------------------------------- */

static bool is_redirect(int status) {
  return status == 301 || status == 302 || status == 303 || status == 307 || status == 308;
}

static int keep_head(dg_http_call_t *call, dg__resp_t *r) {
  dg_http_header_t *h = dg_arena_calloc(call->arena, r->nheaders + 1, sizeof(*h));
  if (h == NULL)
    return DG_ENOMEM;
  for (size_t i = 0; i < r->nheaders; i++) {
    const char *name, *value;
    dg__resp_header_at(r, i, &name, &value);
    h[i].name = dg_arena_strdup(call->arena, name);
    h[i].value = dg_arena_strdup(call->arena, value);
    if (h[i].name == NULL || h[i].value == NULL)
      return DG_ENOMEM;
  }
  call->response.status = r->status;
  call->response.headers = h;
  call->response.nheaders = r->nheaders;
  call->result.response = &call->response;
  return 0;
}

/* Whether this response only leads to another request. */
static bool leads_on(dg_http_call_t *call, dg__resp_t *r) {
  const char *location = dg__resp_header(r, "Location");
  if (is_redirect(r->status) && location != NULL && call->max_redirects > 0)
    return true;
  if (r->status != 429 && r->status != 503)
    return false;
  uint64_t after = 0;
  call->has_retry_after =
      dg__retry_after_ms(dg__resp_header(r, "Retry-After"), (int64_t)time(NULL), &after);
  call->retry_after_ms = after;
  uint64_t delay = 0;
  return may_retry(call, call->has_retry_after, after, &delay);
}

static int on_head(dg__resp_t *r, void *user) {
  dg_http_call_t *call = user;
  if (leads_on(call, r)) {
    call->body_mode = DG__BODY_DISCARD;
    return 0;
  }
  int rc = keep_head(call, r);
  if (rc == 0 && call->on_head != NULL)
    rc =
        call->on_head(call, r->status, call->response.headers, call->response.nheaders, call->user);
  if (finished(call))
    return DG_ECANCELED;
  bool ok = r->status >= 200 && r->status < 300;
  call->body_mode = ok && call->on_chunk != NULL ? DG__BODY_STREAM : DG__BODY_COLLECT;
  return rc;
}

static int on_body(dg__resp_t *r, const char *data, size_t len, void *user) {
  dg_http_call_t *call = user;
  if (call->body_mode == DG__BODY_DISCARD)
    return 0;
  if (call->body_mode == DG__BODY_COLLECT)
    return dg_buf_append(&call->body_buf, data, len);
  call->streamed = true;
  int rc = call->on_chunk(call, data, len, call->user);
  return finished(call) ? DG_ECANCELED : rc;
}

static void strip_on_origin_change(dg_http_call_t *call, const dg__url_t *next) {
  if (strcmp(call->url.origin, next->origin) == 0)
    return;
  static const char *const secret[] = {"Authorization", "Cookie", "Proxy-Authorization"};
  size_t kept = 0;
  for (size_t i = 0; i < call->nheaders; i++) {
    bool drop = false;
    for (size_t k = 0; k < DG_ARRAY_SIZE(secret); k++)
      drop = drop || strcasecmp(call->headers[i].name, secret[k]) == 0;
    if (!drop)
      call->headers[kept++] = call->headers[i];
  }
  call->nheaders = kept;
}

/* 303 turns any method but HEAD into GET, and drops the body; 301 and 302
 * turn POST into GET (as browsers do); 307 and 308 keep method and body. */
static void redirect_method(dg_http_call_t *call, int status) {
  bool to_get =
      status == 303 || ((status == 301 || status == 302) && strcmp(call->method, "POST") == 0);
  if (!to_get)
    return;
  call->method = strcmp(call->method, "HEAD") == 0 ? "HEAD" : "GET";
  call->body = NULL;
  call->body_len = 0;
  size_t kept = 0;
  for (size_t i = 0; i < call->nheaders; i++) {
    if (strcasecmp(call->headers[i].name, "Content-Type") != 0)
      call->headers[kept++] = call->headers[i];
  }
  call->nheaders = kept;
  call->retryable = true; /* GET and HEAD are idempotent */
}

static void follow(dg_http_call_t *call, const char *location, int status) {
  dg__url_t next;
  const char *why = NULL;
  if (call->redirects >= call->max_redirects) {
    dg__call_fail(call, DG_HTTP_FAIL_REDIRECTS, DG_EUPSTREAM, NULL,
                  "was redirected more than %u times", call->max_redirects);
    return;
  }
  if (dg__url_resolve(call->arena, &call->url, location, &next, &why) != 0) {
    dg__call_fail(call, DG_HTTP_FAIL_PROTOCOL, DG_EPROTO, NULL,
                  "answered %d with an unusable Location: %s", status, why);
    return;
  }
  if (call->url.https && !next.https) {
    dg__call_fail(call, DG_HTTP_FAIL_REDIRECTS, DG_EUPSTREAM, NULL,
                  "was redirected from https to http, which is refused");
    return;
  }
  call->redirects++;
  strip_on_origin_change(call, &next);
  redirect_method(call, status);
  call->url = next;
  set_state(call, DG__CALL_BACKOFF);
  attempt(call);
}

static int on_complete(dg__resp_t *r, void *user) {
  dg_http_call_t *call = user;
  bool reusable = r->keep_alive && !r->trailing;
  if (call->conn != NULL)
    dg__uconn_release(call->conn, reusable);
  call->conn = NULL;
  record_outcome(call, r->status < 500);
  if (call->body_mode != DG__BODY_DISCARD) {
    finish_response(call);
    return 0;
  }
  const char *location = dg__resp_header(r, "Location");
  uint64_t delay = 0;
  if (is_redirect(r->status) && location != NULL)
    follow(call, location, r->status);
  else if (may_retry(call, call->has_retry_after, call->retry_after_ms, &delay))
    retry_after(call, delay);
  else
    dg__call_fail(call, DG_HTTP_FAIL_STATUS, DG_EUPSTREAM, NULL, "answered %d %s", r->status,
                  dg_http_status_text(r->status));
  return 0;
}

const dg__resp_sink_t dg__call_sink = {on_head, on_body, on_complete};

/* ---- delivery ---------------------------------------------------------------------- */

static void on_call_closed(uv_handle_t *h) {
  dg_http_call_t *call = h->data;
  dg_http_client_t *client = call->client;
  dg__resp_free(&call->resp);
  dg_buf_free(&call->body_buf);
  dg_arena_destroy(call->arena);
  dg__client_call_free(client, call);
  dg__client_handle_gone(client);
}

static void count(dg_http_call_t *call) {
  char labels[384];
  const char *outcome = call->result.rc == 0 ? "ok" : dg_http_failure_name(call->result.failure);
  snprintf(labels, sizeof(labels), "connector=\"%s\",outcome=\"%s\"", call->connector->label,
           outcome);
  dg_metrics_counter_add("dg_upstream_calls_total", labels, 1);
  snprintf(labels, sizeof(labels), "connector=\"%s\"", call->connector->label);
  dg_metrics_observe("dg_upstream_call_duration_seconds", labels,
                     (double)call->result.elapsed_ms / 1000.0);
  if (call->result.rc != 0 && dg_log_enabled(DG_LOG_INFO))
    dg_log_json(DG_LOG_INFO, "upstream_call_failed",
                json_pack("{s:s,s:s,s:i,s:s}", "connector", call->connector->name, "outcome",
                          outcome, "attempts", (int)call->attempts, "msg", call->err.message));
}

static void deliver(dg_http_call_t *call) {
  dg_http_client_t *client = call->client;
  set_state(call, DG__CALL_DONE);
  call->result.err = call->result.rc != 0 ? &call->err : NULL;
  call->result.attempts = call->attempts;
  call->result.redirects = call->redirects;
  call->result.elapsed_ms = dg_now_ms() - call->start_ms;
  /* A response cut short (timeout, cap) is handed over with what came. */
  if (call->result.response != NULL) {
    call->response.url = dg__url_full(call->arena, &call->url);
    call->response.body = call->body_buf.data != NULL ? call->body_buf.data : "";
    call->response.body_len = call->body_buf.len;
  }
  count(call);
  call->done(call, &call->result, call->user);
  /* Unlinked after the callback: the client waits for it when closing. */
  DG_LIST_UNLINK(client->calls, call, prev, next);
  client->ncalls--;
  uv_close((uv_handle_t *)&call->timer, on_call_closed);
}
