/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* PostgreSQL connections on the loop thread (pg_internal.h): a bounded
 * pool of non-blocking libpq connections, each watched with uv_poll.
 *
 * A connection is CONNECTING (PQconnectPoll steps), SETUP (its session
 * settings are being sent), READY (connected, idle or held by a request),
 * BUSY (a statement runs), BROKEN (lost: closed when released) or CLOSING.
 * A cancel connection is an extra connection outside the pool's bound that
 * lives only to send one pg_cancel_backend; the listener is one more that
 * LISTENs on the pool's channel for the whole life of the pool, opened
 * again after a backoff when it is lost. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pg_internal.h"

typedef enum conn_state {
  C_CONNECTING,
  C_SETUP,
  C_READY,
  C_BUSY,
  C_BROKEN,
  C_CLOSING,
} conn_state_t;

typedef struct waiter {
  dg__pg_acquire_cb cb;
  void *data;
  struct waiter *next;
} waiter_t;

struct dg__pg_conn {
  dg__pg_pool_t *pool;
  PGconn *pg;
  conn_state_t state;
  uv_poll_t *poll; /* NULL between sockets */
  int fd;
  int events;       /* what poll watches for */
  uv_timer_t timer; /* connect timeout */
  unsigned handles; /* open uv handles; freed when 0 while CLOSING */
  dg__pg_query_cb cb;
  void *data;
  PGresult *result; /* the statement's last (or first failed) result */
  bool in_use;      /* held by a request */
  bool canceled;    /* a cancel was asked for the running statement */
  bool parked;      /* released while its cancel was pending */
  unsigned cancels; /* cancel connections not yet answered */
  int pid;
  dg__pg_conn_t *target; /* of a cancel connection: the one to cancel */
  bool listener;
  bool piped;          /* a pipeline runs: its results are read up to its sync */
  unsigned pipe_want;  /* of its statements, the one whose result cb gets */
  unsigned pipe_seen;  /* its results read so far */
  dg__pg_conn_t *next; /* the pool's idle list */
};

struct dg__pg_pool {
  uv_loop_t *loop;
  char *uri;
  char *password; /* or NULL */
  unsigned max_conns;
  uint64_t statement_timeout_ms;
  uint64_t backoff_max_ms;
  uint64_t connect_timeout_ms;
  /* The URI's host, hostaddr and port lists (or NULL), and the host the
   * next attempt starts at (0: the URI's order). */
  char *hosts, *hostaddrs, *ports;
  unsigned nhosts, first_host;
  unsigned open;       /* pooled connections not yet freed */
  unsigned connecting; /* of which connecting or in SETUP */
  unsigned extra;      /* cancel connections not yet freed */
  dg__pg_conn_t *idle;
  unsigned nidle;
  waiter_t *waiters, **waiters_tail;
  unsigned nwaiting;
  uint64_t connects;
  uint64_t round_trips;   /* statements and pipelines sent on pooled connections */
  unsigned failures;      /* connect failures in a row */
  uint64_t retry_at;      /* loop time before which no connect is tried */
  dg_errctx_t last_error; /* of the last failed connect */
  uv_timer_t kick;        /* serves the waiters on a later turn */
  bool closing;
  unsigned timers;  /* kick and relisten, until closed */
  char channel[64]; /* "": no listener */
  dg__pg_notify_cb on_notify;
  void *notify_data;
  dg__pg_conn_t *listening; /* the listener, once it listens */
  uv_timer_t relisten;      /* opens the listener again after a backoff */
  void (*close_cb)(void *data);
  void *close_data;
};

static void conn_destroy(dg__pg_conn_t *c);
static void serve(dg__pg_pool_t *pool);
static void cancel_answered(dg__pg_conn_t *aux);
static void listener_lost(dg__pg_conn_t *c);

/* ---- Errors ------------------------------------------------------------------------- */

/* libpq's message without its trailing newline, cut to fit. */
static void pq_message(const char *msg, char *out, size_t size) {
  snprintf(out, size, "%s", msg != NULL && msg[0] ? msg : "no detail");
  size_t n = strlen(out);
  while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
    out[--n] = '\0';
}

#define LOST_MESSAGE "The connection to the PostgreSQL database was lost: %s"

static int lost(dg__pg_conn_t *c, dg_errctx_t *err) {
  char msg[512];
  pq_message(PQerrorMessage(c->pg), msg, sizeof(msg));
  c->state = C_BROKEN;
  return dg_errctx_set(err, DG_EIO, "", LOST_MESSAGE, msg);
}

/* The DG_E* code of a failed result. */
static int result_error(dg__pg_conn_t *c, const PGresult *res, dg_errctx_t *err) {
  const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);
  char msg[512];
  pq_message(PQresultErrorMessage(res), msg, sizeof(msg));
  if (state == NULL)
    state = "";
  if (strcmp(state, "57014") == 0 && c->canceled)
    return dg_errctx_set(err, DG_ECANCELED, "", "The database statement was canceled.");
  if (strcmp(state, "57014") == 0)
    return dg_errctx_set(err, DG_ETIMEDOUT, "",
                         "The database statement ran longer than its timeout (%" PRIu64 " ms).",
                         c->pool->statement_timeout_ms);
  if (strcmp(state, "23505") == 0)
    return dg_errctx_set(err, DG_EEXIST, "", "%s", msg);
  /* 57P01..57P03: the server is shutting down or terminated this session. */
  if (strncmp(state, "57P0", 4) == 0 || PQstatus(c->pg) == CONNECTION_BAD) {
    c->state = C_BROKEN;
    return dg_errctx_set(err, DG_EIO, "", LOST_MESSAGE, msg);
  }
  /* 25006 on a write: the server no longer takes writes (a primary fenced
   * or demoted for a failover). The connection is not reused: a new one
   * lets libpq find the primary (target_session_attrs=read-write). */
  if (strcmp(state, "25006") == 0) {
    c->state = C_BROKEN;
    return dg_errctx_set(err, DG_EIO, "",
                         "The PostgreSQL server of this connection no longer accepts writes (a "
                         "standby, or a primary being failed over); the next call connects "
                         "again: %s",
                         msg);
  }
  return dg_errctx_set(err, DG_EIO, "", "The database failed the statement (SQLSTATE %s): %s",
                       state, msg);
}

/* ---- Watching the socket ------------------------------------------------------------ */

static void on_handle_closed(uv_handle_t *h) {
  dg__pg_conn_t *c = h->data;
  if (h != (uv_handle_t *)&c->timer)
    free(h); /* a poll handle */
  if (--c->handles > 0 || c->state != C_CLOSING)
    return;
  dg__pg_pool_t *pool = c->pool;
  bool extra = c->target != NULL || c->listener;
  PQclear(c->result);
  PQfinish(c->pg);
  free(c);
  if (extra)
    pool->extra--;
  else
    pool->open--;
  serve(pool);
}

static void drop_poll(dg__pg_conn_t *c) {
  if (c->poll == NULL)
    return;
  uv_poll_stop(c->poll);
  uv_close((uv_handle_t *)c->poll, on_handle_closed);
  c->poll = NULL;
  c->fd = -1;
}

static void on_poll(uv_poll_t *h, int status, int events);

/* Watches the connection's socket for events; a socket libpq replaced
 * (another host of the URI, another attempt) gets a new handle. The same
 * events again change nothing: uv_poll_start would take the socket out
 * of epoll and put it back, two system calls at each statement. */
static int watch(dg__pg_conn_t *c, int events, bool fresh) {
  int fd = PQsocket(c->pg);
  if (fd < 0)
    return DG_EIO;
  if (fresh || fd != c->fd)
    drop_poll(c);
  if (c->poll == NULL) {
    c->poll = malloc(sizeof(*c->poll));
    if (c->poll == NULL || uv_poll_init(c->pool->loop, c->poll, fd) != 0) {
      free(c->poll);
      c->poll = NULL;
      return DG_EIO;
    }
    c->poll->data = c;
    c->fd = fd;
    c->events = 0;
    c->handles++;
  }
  if (events == c->events)
    return 0;
  if (uv_poll_start(c->poll, events, on_poll) != 0)
    return DG_EIO;
  c->events = events;
  return 0;
}

/* ---- Connecting ------------------------------------------------------------------------ */

static void connected(dg__pg_conn_t *c);

static void connect_failed(dg__pg_conn_t *c, const char *why) {
  dg__pg_pool_t *pool = c->pool;
  char msg[512];
  pq_message(why, msg, sizeof(msg));
  if (c->target != NULL) {
    cancel_answered(c);
    return;
  }
  if (c->listener) {
    listener_lost(c);
    return;
  }
  pool->connecting--;
  pool->failures++;
  uint64_t backoff = (uint64_t)DG__PG_BACKOFF_MIN_MS << (pool->failures < 16 ? pool->failures : 16);
  if (backoff > pool->backoff_max_ms)
    backoff = pool->backoff_max_ms;
  pool->retry_at = uv_now(pool->loop) + backoff;
  dg_errctx_set(&pool->last_error, DG_EIO, "",
                "The database cannot be reached: %s (next attempt in %" PRIu64 " ms).", msg,
                backoff);
  conn_destroy(c);
}

static void step_connect(dg__pg_conn_t *c) {
  PostgresPollingStatusType r = PQconnectPoll(c->pg);
  if (r == PGRES_POLLING_OK) {
    uv_timer_stop(&c->timer);
    connected(c);
    return;
  }
  int events = r == PGRES_POLLING_READING ? UV_READABLE : UV_WRITABLE;
  if (r == PGRES_POLLING_FAILED || watch(c, events, true) != 0)
    connect_failed(c, PQerrorMessage(c->pg));
}

/* ---- Multi-host URIs ------------------------------------------------------------------- */

#define HOST_LIST_MAX 1024

static unsigned list_count(const char *list) {
  unsigned n = 1;
  for (const char *p = list; *p != '\0'; p++)
    n += *p == ',';
  return n;
}

/* Item i of a comma-separated list into out; false when it does not fit. */
static bool list_item(const char *list, unsigned i, char *out, size_t size) {
  const char *p = list;
  for (; i > 0 && p != NULL; i--) {
    p = strchr(p, ',');
    p = p != NULL ? p + 1 : NULL;
  }
  if (p == NULL)
    return false;
  size_t n = strcspn(p, ",");
  if (n >= size)
    return false;
  memcpy(out, p, n);
  out[n] = '\0';
  return true;
}

/* list with its items starting at first (a list of one item, used for
 * every host, is kept as it is); false when it does not fit. */
static bool list_rotated(const char *list, unsigned n, unsigned first, char *out, size_t size) {
  if (list_count(list) != n)
    return dg_strlcpy(out, list, size);
  size_t used = 0;
  out[0] = '\0';
  for (unsigned k = 0; k < n; k++) {
    char item[256];
    if (!list_item(list, (first + k) % n, item, sizeof(item)))
      return false;
    int w = snprintf(out + used, size - used, "%s%s", k ? "," : "", item);
    if (w < 0 || (size_t)w >= size - used)
      return false;
    used += (size_t)w;
  }
  return true;
}

static char *option_dup(const PQconninfoOption *opts, const char *key) {
  for (const PQconninfoOption *o = opts; o->keyword != NULL; o++) {
    if (strcmp(o->keyword, key) == 0 && o->val != NULL && o->val[0] != '\0')
      return strdup(o->val);
  }
  return NULL;
}

/* Keeps the host lists of a multi-host URI (a single host needs none). */
static void hosts_parse(dg__pg_pool_t *pool) {
  PQconninfoOption *opts = PQconninfoParse(pool->uri, NULL);
  if (opts == NULL)
    return;
  pool->hosts = option_dup(opts, "host");
  pool->hostaddrs = option_dup(opts, "hostaddr");
  pool->ports = option_dup(opts, "port");
  PQconninfoFree(opts);
  const char *list = pool->hosts != NULL ? pool->hosts : pool->hostaddrs;
  pool->nhosts = list != NULL ? list_count(list) : 1;
}

/* The index in the URI of the host c was trying, or nhosts. */
static unsigned host_index(const dg__pg_conn_t *c) {
  const dg__pg_pool_t *pool = c->pool;
  const char *host = PQhost(c->pg), *port = PQport(c->pg);
  const char *list = pool->hosts != NULL ? pool->hosts : pool->hostaddrs;
  bool one_port = pool->ports == NULL || list_count(pool->ports) != pool->nhosts;
  for (unsigned i = 0; host != NULL && list != NULL && i < pool->nhosts; i++) {
    char h[256], p[32];
    if (!list_item(list, i, h, sizeof(h)) || strcmp(h, host) != 0)
      continue;
    if (one_port ||
        (port != NULL && list_item(pool->ports, i, p, sizeof(p)) && strcmp(p, port) == 0))
      return i;
  }
  return pool->nhosts;
}

static void on_connect_timeout(uv_timer_t *t) {
  dg__pg_conn_t *c = t->data;
  dg__pg_pool_t *pool = c->pool;
  /* The host that did not answer goes last in the next attempts. */
  unsigned i = pool->nhosts > 1 ? host_index(c) : pool->nhosts;
  if (i < pool->nhosts)
    pool->first_host = (i + 1) % pool->nhosts;
  connect_failed(c, "timed out while connecting");
}

/* Notices ("relation already exists, skipping") are not the gateway's
 * log; libpq would print them on stderr. */
static void ignore_notice(void *arg, const char *message) {
  (void)arg;
  (void)message;
}

/* The URI's host lists starting at pool->first_host (they override the
 * URI's, being given after it); false when one does not fit. */
static bool hosts_rotated(const dg__pg_pool_t *pool, char lists[3][HOST_LIST_MAX]) {
  const char *given[] = {pool->hosts, pool->hostaddrs, pool->ports};
  for (size_t i = 0; i < 3; i++) {
    if (given[i] != NULL &&
        !list_rotated(given[i], pool->nhosts, pool->first_host, lists[i], HOST_LIST_MAX))
      return false;
  }
  return true;
}

static dg__pg_conn_t *conn_start(dg__pg_pool_t *pool, dg__pg_conn_t *target, bool listener) {
  dg__pg_conn_t *c = calloc(1, sizeof(*c));
  if (c == NULL)
    return NULL;
  c->pool = pool;
  c->fd = -1;
  c->target = target;
  c->listener = listener;
  /* passfile names a path that can never exist (libpq skips a missing one
   * silently, and warns on /dev/null): a password comes only from the
   * options or the environment, never from ~/.pgpass. */
  /* fallback_application_name: operators find the gateway's sessions in
   * pg_stat_activity unless the URI names an application_name itself. */
  const char *keys[8] = {"dbname", "passfile", "fallback_application_name"};
  const char *values[8] = {pool->uri, "/proc/self/fd/-1", DG__PG_APPLICATION_NAME};
  size_t n = 3;
  char lists[3][HOST_LIST_MAX];
  if (pool->first_host != 0 && hosts_rotated(pool, lists)) {
    const char *names[] = {"host", "hostaddr", "port"};
    const char *given[] = {pool->hosts, pool->hostaddrs, pool->ports};
    for (size_t i = 0; i < 3; i++) {
      if (given[i] != NULL) {
        keys[n] = names[i];
        values[n++] = lists[i];
      }
    }
  }
  if (pool->password != NULL) {
    keys[n] = "password";
    values[n++] = pool->password;
  }
  c->pg = PQconnectStartParams(keys, values, 1);
  if (c->pg == NULL) {
    free(c);
    return NULL;
  }
  PQsetNoticeProcessor(c->pg, ignore_notice, NULL);
  uv_timer_init(pool->loop, &c->timer);
  c->timer.data = c;
  c->handles++;
  if (target != NULL || listener)
    pool->extra++;
  else {
    pool->open++;
    pool->connecting++;
  }
  if (PQstatus(c->pg) == CONNECTION_BAD || watch(c, UV_WRITABLE, true) != 0) {
    connect_failed(c, PQerrorMessage(c->pg));
    return c;
  }
  uv_timer_start(&c->timer, on_connect_timeout, pool->connect_timeout_ms, 0);
  return c;
}

/* ---- Statements ------------------------------------------------------------------------- */

static void flush(dg__pg_conn_t *c);
static void collect(dg__pg_conn_t *c);

static int send_done(dg__pg_conn_t *c, int sent, dg__pg_query_cb cb, void *data, dg_errctx_t *err) {
  if (!sent)
    return lost(c, err);
  PQclear(c->result);
  c->result = NULL;
  c->cb = cb;
  c->data = data;
  c->canceled = false;
  c->state = C_BUSY;
  if (c->target == NULL && !c->listener)
    c->pool->round_trips++;
  flush(c);
  return 0;
}

/* The text of each bound value; numbers are written into cells. */
typedef struct params {
  const char **values;
  char (*cells)[32];
} params_t;

static int params_build(const dg__sql_t *sql, params_t *p) {
  size_t n = sql->nbinds ? sql->nbinds : 1;
  p->values = calloc(n, sizeof(*p->values));
  p->cells = calloc(n, sizeof(*p->cells));
  if (p->values == NULL || p->cells == NULL)
    return DG_ENOMEM;
  for (size_t i = 0; i < sql->nbinds; i++) {
    const dg_store_value_t *v = &sql->binds[i];
    p->values[i] = p->cells[i];
    if (v->kind == DG_STORE_NULL)
      p->values[i] = NULL;
    else if (v->kind == DG_STORE_TEXT)
      p->values[i] = v->text;
    else if (v->kind == DG_STORE_INT)
      snprintf(p->cells[i], sizeof(p->cells[i]), "%" PRId64, v->i);
    else if (v->kind == DG_STORE_REAL)
      snprintf(p->cells[i], sizeof(p->cells[i]), "%.17g", v->d);
    else
      snprintf(p->cells[i], sizeof(p->cells[i]), "%s", v->b ? "true" : "false");
  }
  return 0;
}

static int ready_for(dg__pg_conn_t *c, dg_errctx_t *err) {
  if (c->state == C_BROKEN)
    return lost(c, err);
  if (c->state != C_READY && c->state != C_SETUP)
    return dg_errctx_set(err, DG_EBUSY, "", "A statement is already running on the connection.");
  return 0;
}

static bool send_fixed(PGconn *pg, const char *text) {
  return text == NULL || PQsendQueryParams(pg, text, 0, NULL, NULL, NULL, NULL, 0);
}

/* Sends sql alone, or in a pipeline between before and after: one
 * statement with its bound values, one way for both. */
static int send_sql(dg__pg_conn_t *conn, bool piped, const char *before, const dg__sql_t *sql,
                    const char *after, dg__pg_query_cb cb, void *data, dg_errctx_t *err) {
  int rc = ready_for(conn, err);
  if (rc != 0)
    return rc;
  if (sql->rc != 0)
    return dg_errctx_set(err, sql->rc, "", "The statement could not be built.");
  params_t p = {0};
  if (params_build(sql, &p) != 0) {
    free(p.values);
    free(p.cells);
    return dg_errctx_set(err, DG_ENOMEM, "", "Out of memory.");
  }
  PGconn *pg = conn->pg;
  int sent =
      (!piped || (PQenterPipelineMode(pg) && send_fixed(pg, before))) &&
      PQsendQueryParams(pg, sql->text.data, (int)sql->nbinds, NULL, p.values, NULL, NULL, 0) &&
      (!piped || (send_fixed(pg, after) && PQpipelineSync(pg)));
  free(p.values);
  free(p.cells);
  if (piped) {
    conn->piped = true;
    conn->pipe_want = before != NULL ? 1 : 0;
    conn->pipe_seen = 0;
  }
  return send_done(conn, sent, cb, data, err);
}

int dg__pg_query(dg__pg_conn_t *conn, const dg__sql_t *sql, dg__pg_query_cb cb, void *data,
                 dg_errctx_t *err) {
  return send_sql(conn, false, NULL, sql, NULL, cb, data, err);
}

int dg__pg_exec(dg__pg_conn_t *conn, const char *text, dg__pg_query_cb cb, void *data,
                dg_errctx_t *err) {
  int rc = ready_for(conn, err);
  if (rc != 0)
    return rc;
  return send_done(conn, PQsendQuery(conn->pg, text), cb, data, err);
}

int dg__pg_pipeline(dg__pg_conn_t *conn, const char *before, const dg__sql_t *sql,
                    const char *after, dg__pg_query_cb cb, void *data, dg_errctx_t *err) {
  return send_sql(conn, true, before, sql, after, cb, data, err);
}

/* The statement has ended (res NULL: the connection failed, in err). */
static void finish(dg__pg_conn_t *c, int status, const dg_errctx_t *err) {
  dg__pg_query_cb cb = c->cb;
  PGresult *res = status == 0 ? c->result : NULL;
  c->cb = NULL;
  if (c->state == C_BUSY)
    c->state = C_READY;
  cb(c, status, res, err, c->data);
  /* cb may have sent the next statement, which owns c->result now. */
  if (res != NULL && res == c->result) {
    PQclear(res);
    c->result = NULL;
  }
}

static void fail_statement(dg__pg_conn_t *c) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  lost(c, &err);
  drop_poll(c);
  finish(c, DG_EIO, &err);
}

static void flush(dg__pg_conn_t *c) {
  int r = PQflush(c->pg);
  if (r < 0 || watch(c, UV_READABLE | (r == 1 ? UV_WRITABLE : 0), false) != 0)
    fail_statement(c);
}

/* Keeps the first failed result, else the last one. */
static void keep(dg__pg_conn_t *c, PGresult *res) {
  bool kept_failed = c->result != NULL && (PQresultStatus(c->result) == PGRES_FATAL_ERROR ||
                                           PQresultStatus(c->result) == PGRES_BAD_RESPONSE);
  if (kept_failed) {
    PQclear(res);
    return;
  }
  PQclear(c->result);
  c->result = res;
}

/* The statement (or pipeline) has been answered; without a result, the
 * connection failed. */
static void answered(dg__pg_conn_t *c) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  ExecStatusType s = c->result != NULL ? PQresultStatus(c->result) : PGRES_FATAL_ERROR;
  int status = 0;
  if (c->result == NULL)
    status = lost(c, &err);
  else if (s != PGRES_COMMAND_OK && s != PGRES_TUPLES_OK && s != PGRES_EMPTY_QUERY)
    status = result_error(c, c->result, &err);
  if (c->state == C_BROKEN)
    drop_poll(c);
  else
    watch(c, UV_READABLE, false);
  finish(c, status, &err);
}

/* One result of a pipeline: kept when it is the wanted statement's or the
 * first failure (those after a failure are PGRES_PIPELINE_ABORTED);
 * true at the sync that ends it. */
static bool piped_result(dg__pg_conn_t *c, PGresult *res) {
  ExecStatusType s = PQresultStatus(res);
  if (s == PGRES_PIPELINE_SYNC) {
    PQclear(res);
    return true;
  }
  bool failed = s == PGRES_FATAL_ERROR || s == PGRES_BAD_RESPONSE;
  bool wanted = c->pipe_seen++ == c->pipe_want;
  if (failed || wanted)
    keep(c, res);
  else
    PQclear(res);
  return false;
}

/* Reads a pipeline's results in order. PQgetResult gives NULL after each
 * statement's results; twice in a row, nothing more is buffered. */
static void collect_piped(dg__pg_conn_t *c) {
  if (!PQconsumeInput(c->pg)) {
    fail_statement(c);
    return;
  }
  bool synced = false;
  int nulls = 0;
  while (!synced && nulls < 2 && !PQisBusy(c->pg)) {
    PGresult *res = PQgetResult(c->pg);
    nulls = res == NULL ? nulls + 1 : 0;
    if (res != NULL)
      synced = piped_result(c, res);
  }
  if (!synced && PQstatus(c->pg) != CONNECTION_BAD)
    return;
  c->piped = false;
  ExecStatusType s = c->result != NULL ? PQresultStatus(c->result) : PGRES_EMPTY_QUERY;
  bool failed = s == PGRES_FATAL_ERROR || s == PGRES_BAD_RESPONSE;
  /* Lost before the sync: the call fails as lost unless a statement's
   * error came first. */
  if ((!synced || !PQexitPipelineMode(c->pg)) && !failed) {
    PQclear(c->result);
    c->result = NULL;
  }
  answered(c);
}

static void collect(dg__pg_conn_t *c) {
  if (c->piped) {
    collect_piped(c);
    return;
  }
  if (!PQconsumeInput(c->pg)) {
    fail_statement(c);
    return;
  }
  while (!PQisBusy(c->pg)) {
    PGresult *res = PQgetResult(c->pg);
    if (res == NULL)
      break;
    keep(c, res);
  }
  if (!PQisBusy(c->pg))
    answered(c);
}

/* An idle connection became readable: the server closed it (a restart, a
 * failover, pg_terminate_backend) or sent a notice. */
static void deliver(dg__pg_conn_t *c) {
  dg__pg_pool_t *pool = c->pool;
  for (PGnotify *n = PQnotifies(c->pg); n != NULL; n = PQnotifies(c->pg)) {
    if (c->listener && pool->on_notify != NULL && !pool->closing)
      pool->on_notify(n->relname, n->extra, pool->notify_data);
    PQfreemem(n);
  }
}

static void idle_input(dg__pg_conn_t *c) {
  if (PQconsumeInput(c->pg) && PQstatus(c->pg) == CONNECTION_OK) {
    deliver(c);
    return;
  }
  c->state = C_BROKEN;
  drop_poll(c);
  if (c->listener) {
    listener_lost(c);
    return;
  }
  if (c->in_use)
    return;
  /* Out of the idle list, then closed. */
  dg__pg_conn_t **p = &c->pool->idle;
  while (*p != NULL && *p != c)
    p = &(*p)->next;
  if (*p == c) {
    *p = c->next;
    c->pool->nidle--;
  }
  conn_destroy(c);
}

static void on_poll(uv_poll_t *h, int status, int events) {
  dg__pg_conn_t *c = h->data;
  if (c->state == C_CONNECTING) {
    step_connect(c);
    return;
  }
  if (c->state == C_READY || c->state == C_BROKEN) {
    idle_input(c);
    return;
  }
  if (c->state != C_BUSY && c->state != C_SETUP)
    return;
  if (status < 0) {
    fail_statement(c);
    return;
  }
  if (events & UV_WRITABLE) {
    int r = PQflush(c->pg);
    if (r < 0) {
      fail_statement(c);
      return;
    }
    if (r == 0)
      watch(c, UV_READABLE, false);
  }
  if (events & UV_READABLE)
    collect(c);
}

/* ---- Session set-up ---------------------------------------------------------------------- */

static void make_ready(dg__pg_conn_t *c) {
  dg__pg_pool_t *pool = c->pool;
  c->state = C_READY;
  pool->connecting--;
  pool->failures = 0;
  pool->retry_at = 0;
  pool->connects++;
  /* Connected after the pool began closing: nothing will take it. */
  if (pool->closing) {
    conn_destroy(c);
    return;
  }
  c->next = pool->idle;
  pool->idle = c;
  pool->nidle++;
  serve(pool);
}

static void on_setup(dg__pg_conn_t *c, int status, PGresult *res, const dg_errctx_t *err,
                     void *data) {
  (void)res;
  (void)data;
  if (status != 0) {
    connect_failed(c, err->message);
    return;
  }
  make_ready(c);
}

static void on_cancel_sent(dg__pg_conn_t *aux, int status, PGresult *res, const dg_errctx_t *err,
                           void *data) {
  (void)status;
  (void)res;
  (void)err;
  (void)data;
  cancel_answered(aux);
}

/* The listener listens: notifications from now on reach the pool's cb. */
static void on_listening(dg__pg_conn_t *c, int status, PGresult *res, const dg_errctx_t *err,
                         void *data) {
  (void)res;
  (void)err;
  (void)data;
  if (status != 0) {
    listener_lost(c);
    return;
  }
  c->pool->listening = c;
  c->pool->failures = 0;
  deliver(c);
}

static void connected(dg__pg_conn_t *c) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  PQsetnonblocking(c->pg, 1);
  c->pid = PQbackendPID(c->pg);
  c->state = C_SETUP;
  char text[160];
  if (c->listener) {
    snprintf(text, sizeof(text), "LISTEN %s", c->pool->channel);
    if (dg__pg_exec(c, text, on_listening, NULL, &err) != 0)
      listener_lost(c);
    return;
  }
  if (c->target != NULL) {
    snprintf(text, sizeof(text), "SELECT pg_cancel_backend(%d)", c->target->pid);
    if (dg__pg_exec(c, text, on_cancel_sent, NULL, &err) != 0)
      cancel_answered(c);
    return;
  }
  /* Every statement of the gateway is bounded by the tool timeout. */
  snprintf(text, sizeof(text), "SET statement_timeout = %" PRIu64, c->pool->statement_timeout_ms);
  if (c->pool->statement_timeout_ms == 0) {
    make_ready(c);
    return;
  }
  if (dg__pg_exec(c, text, on_setup, NULL, &err) != 0)
    connect_failed(c, err.message);
}

/* ---- Cancel ------------------------------------------------------------------------------ */

static void cancel_answered(dg__pg_conn_t *aux) {
  dg__pg_conn_t *target = aux->target;
  conn_destroy(aux);
  if (--target->cancels == 0 && target->parked) {
    target->parked = false;
    dg__pg_release(target);
  }
}

void dg__pg_cancel(dg__pg_conn_t *conn) {
  if (conn->state != C_BUSY || conn->canceled)
    return;
  conn->canceled = true;
  if (conn_start(conn->pool, conn, false) != NULL)
    conn->cancels++;
}

/* ---- The pool ------------------------------------------------------------------------------ */

static void conn_destroy(dg__pg_conn_t *c) {
  if (c->state == C_CLOSING)
    return;
  c->state = C_CLOSING;
  drop_poll(c);
  uv_timer_stop(&c->timer);
  uv_close((uv_handle_t *)&c->timer, on_handle_closed);
}

static void pop_waiter(dg__pg_pool_t *pool, waiter_t *w) {
  pool->waiters = w->next;
  if (pool->waiters == NULL)
    pool->waiters_tail = &pool->waiters;
  pool->nwaiting--;
}

static void fail_waiters(dg__pg_pool_t *pool, int code, const dg_errctx_t *err) {
  while (pool->waiters != NULL) {
    waiter_t *w = pool->waiters;
    pop_waiter(pool, w);
    w->cb(NULL, code, err, w->data);
    free(w);
  }
}

static void maybe_closed(dg__pg_pool_t *pool) {
  if (!pool->closing || pool->open > 0 || pool->extra > 0 || pool->timers > 0)
    return;
  void (*cb)(void *) = pool->close_cb;
  void *data = pool->close_data;
  free(pool->uri);
  free(pool->password);
  free(pool->hosts);
  free(pool->hostaddrs);
  free(pool->ports);
  free(pool);
  if (cb != NULL)
    cb(data);
}

/* Hands idle connections to waiters, opens connections for the others up
 * to the bound, and fails them while the database cannot be reached. */
static void serve(dg__pg_pool_t *pool) {
  if (pool->closing) {
    maybe_closed(pool);
    return;
  }
  while (pool->waiters != NULL && pool->idle != NULL) {
    waiter_t *w = pool->waiters;
    dg__pg_conn_t *c = pool->idle;
    pool->idle = c->next;
    pool->nidle--;
    pop_waiter(pool, w);
    c->in_use = true;
    w->cb(c, 0, NULL, w->data);
    free(w);
  }
  bool backing_off = uv_now(pool->loop) < pool->retry_at;
  while (!backing_off && pool->nwaiting > pool->connecting && pool->open < pool->max_conns) {
    if (conn_start(pool, NULL, false) == NULL)
      break;
    backing_off = uv_now(pool->loop) < pool->retry_at;
  }
  /* Nothing open will serve them: say why at once rather than wait. */
  if (backing_off && pool->open == 0)
    fail_waiters(pool, DG_EIO, &pool->last_error);
}

static void on_kick(uv_timer_t *t) {
  serve(t->data);
}

int dg__pg_pool_new(uv_loop_t *loop, const dg__pg_options_t *o, dg__pg_pool_t **out) {
  dg__pg_pool_t *pool = calloc(1, sizeof(*pool));
  char *uri = strdup(o->uri);
  if (pool == NULL || uri == NULL) {
    free(pool);
    free(uri);
    return DG_ENOMEM;
  }
  pool->uri = uri;
  pool->password = o->password != NULL ? strdup(o->password) : NULL;
  if (o->password != NULL && pool->password == NULL) {
    free(uri);
    free(pool);
    return DG_ENOMEM;
  }
  pool->loop = loop;
  pool->max_conns = o->max_conns ? o->max_conns : 1;
  pool->statement_timeout_ms = o->statement_timeout_ms;
  pool->backoff_max_ms = o->backoff_max_ms ? o->backoff_max_ms : DG__PG_BACKOFF_MAX_MS;
  pool->connect_timeout_ms =
      o->connect_timeout_ms ? o->connect_timeout_ms : DG__PG_CONNECT_TIMEOUT_MS;
  hosts_parse(pool);
  pool->waiters_tail = &pool->waiters;
  uv_timer_init(loop, &pool->kick);
  pool->kick.data = pool;
  uv_timer_init(loop, &pool->relisten);
  pool->relisten.data = pool;
  pool->timers = 2;
  *out = pool;
  return 0;
}

int dg__pg_acquire(dg__pg_pool_t *pool, dg__pg_acquire_cb cb, void *data) {
  if (pool->closing)
    return DG_ECLOSED;
  if (pool->nwaiting >= DG__PG_WAITERS_MAX)
    return DG_EBUSY;
  waiter_t *w = calloc(1, sizeof(*w));
  if (w == NULL)
    return DG_ENOMEM;
  w->cb = cb;
  w->data = data;
  *pool->waiters_tail = w;
  pool->waiters_tail = &w->next;
  pool->nwaiting++;
  uv_timer_start(&pool->kick, on_kick, 0, 0);
  return 0;
}

void dg__pg_release(dg__pg_conn_t *conn) {
  dg__pg_pool_t *pool = conn->pool;
  conn->cb = NULL;
  if (conn->cancels > 0) {
    conn->parked = true;
    return;
  }
  conn->in_use = false;
  if (conn->state != C_READY || pool->closing) {
    conn_destroy(conn);
    return;
  }
  conn->next = pool->idle;
  pool->idle = conn;
  pool->nidle++;
  uv_timer_start(&pool->kick, on_kick, 0, 0);
}

static void on_timer_closed(uv_handle_t *h) {
  dg__pg_pool_t *pool = h->data;
  pool->timers--;
  maybe_closed(pool);
}

void dg__pg_pool_close(dg__pg_pool_t *pool, void (*cb)(void *data), void *data) {
  pool->closing = true;
  pool->close_cb = cb;
  pool->close_data = data;
  dg_errctx_t err;
  dg_errctx_set(&err, DG_ECANCELED, "", "The store is closing.");
  fail_waiters(pool, DG_ECANCELED, &err);
  while (pool->idle != NULL) {
    dg__pg_conn_t *c = pool->idle;
    pool->idle = c->next;
    pool->nidle--;
    conn_destroy(c);
  }
  if (pool->listening != NULL) {
    conn_destroy(pool->listening);
    pool->listening = NULL;
  }
  uv_timer_stop(&pool->kick);
  uv_close((uv_handle_t *)&pool->kick, on_timer_closed);
  uv_timer_stop(&pool->relisten);
  uv_close((uv_handle_t *)&pool->relisten, on_timer_closed);
}

int dg__pg_conn_pid(const dg__pg_conn_t *conn) {
  return conn->pid;
}

bool dg__pg_conn_broken(const dg__pg_conn_t *conn) {
  return conn->state == C_BROKEN;
}

void dg__pg_pool_stats(const dg__pg_pool_t *pool, dg__pg_stats_t *out) {
  out->open = pool->open;
  out->idle = pool->nidle;
  out->waiting = pool->nwaiting;
  out->connects = pool->connects;
  out->round_trips = pool->round_trips;
}

/* ---- Notifications ---------------------------------------------------------------------- */

static void on_relisten(uv_timer_t *t) {
  dg__pg_pool_t *pool = t->data;
  if (!pool->closing && conn_start(pool, NULL, true) == NULL)
    uv_timer_start(&pool->relisten, on_relisten, pool->backoff_max_ms, 0);
}

/* The listener failed to connect or was lost: notifications sent until it
 * listens again are missed; it is opened again after a backoff. */
static void listener_lost(dg__pg_conn_t *c) {
  dg__pg_pool_t *pool = c->pool;
  if (pool->listening == c)
    pool->listening = NULL;
  conn_destroy(c);
  if (pool->closing)
    return;
  pool->failures++;
  uint64_t backoff = (uint64_t)DG__PG_BACKOFF_MIN_MS << (pool->failures < 16 ? pool->failures : 16);
  uv_timer_start(&pool->relisten, on_relisten,
                 backoff < pool->backoff_max_ms ? backoff : pool->backoff_max_ms, 0);
}

static bool channel_ok(const char *channel) {
  size_t n = strlen(channel);
  if (n == 0 || n >= 64)
    return false;
  for (size_t i = 0; i < n; i++) {
    char ch = channel[i];
    if (!((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') || ch == '_'))
      return false;
  }
  return true;
}

int dg__pg_listen(dg__pg_pool_t *pool, const char *channel, dg__pg_notify_cb cb, void *data) {
  if (pool->closing)
    return DG_ECLOSED;
  if (!channel_ok(channel) || pool->channel[0] != '\0')
    return DG_EINVAL;
  snprintf(pool->channel, sizeof(pool->channel), "%s", channel);
  pool->on_notify = cb;
  pool->notify_data = data;
  return conn_start(pool, NULL, true) != NULL ? 0 : DG_ENOMEM;
}

bool dg__pg_listening(const dg__pg_pool_t *pool) {
  return pool->listening != NULL;
}

int dg__pg_notify(dg__pg_conn_t *conn, const char *channel, const char *payload, dg__pg_query_cb cb,
                  void *data, dg_errctx_t *err) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_put(&sql, "SELECT pg_notify(");
  dg__sql_bind_text(&sql, channel);
  dg__sql_put(&sql, ", ");
  dg__sql_bind_text(&sql, payload);
  dg__sql_put(&sql, ")");
  int rc = dg__pg_query(conn, &sql, cb, data, err);
  dg__sql_free(&sql);
  return rc;
}

/* ---- Connection URIs ---------------------------------------------------------------------- */

int dg__pg_uri_check(const char *uri, const char *param, dg_errctx_t *err) {
  char *why = NULL;
  PQconninfoOption *opts = PQconninfoParse(uri, &why);
  if (opts == NULL) {
    char msg[256];
    pq_message(why != NULL ? why : "out of memory", msg, sizeof(msg));
    PQfreemem(why);
    return dg_errctx_set(err, DG_ECONFIG, param,
                         "%s: not a PostgreSQL connection URI libpq can read: %s", param, msg);
  }
  int rc = 0;
  for (PQconninfoOption *o = opts; rc == 0 && o->keyword != NULL; o++) {
    bool secret = strcmp(o->keyword, "password") == 0 || strcmp(o->keyword, "passfile") == 0;
    if (secret && o->val != NULL && o->val[0] != '\0')
      rc = dg_errctx_set(err, DG_ECONFIG, param,
                         "%s: the URI names a %s; give the password in the environment "
                         "(the variable server.databasePasswordEnv names, PGPASSWORD by "
                         "default) instead, never in a file",
                         param, o->keyword);
  }
  PQconninfoFree(opts);
  return rc;
}
