/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* datagate: the command line, start-up, signals and graceful shutdown.
 *
 * One process runs one libuv loop that owns every socket. With --workers N
 * (N > 1) a master process forks N workers before any loop exists; each
 * worker binds the same port with SO_REUSEPORT and runs the same single-loop
 * server. The master never serves a request and has no loop: it waits for
 * signals with sigtimedwait, forwards them to the workers and restarts a
 * worker that dies. */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <uv.h>

#include "datagate/admin.h"
#include "datagate/base.h"
#include "datagate/catalog.h"
#include "datagate/client.h"
#include "datagate/extract.h"
#include "datagate/files.h"
#include "datagate/mcp.h"
#include "datagate/net.h"
#include "datagate/save.h"
#include "datagate/store.h"
#include "datagate/tools.h"

#define EXIT_USAGE 2
/* A worker that cannot start (address in use, bad certificate, ...) exits
 * with this status so that the master stops instead of restarting it in a
 * loop that can never succeed. */
#define EXIT_WORKER_FATAL 3
#define MAX_WORKERS 256
#define HOST_MAX 256
/* How often a draining process looks whether its tool calls have ended. */
#define CALLS_POLL_MS 10
/* Restart backoff of a dying worker, and how long a worker must have lived
 * for its next death to start again from the shortest backoff. */
#define RESTART_MIN_MS 100
#define RESTART_MAX_MS 5000
#define RESTART_STABLE_MS 10000
/* Grace the master adds to the drain timeout before it kills a worker that
 * did not stop. */
#define KILL_GRACE_MS 5000

/* ---- Command line --------------------------------------------------------- */

typedef struct options {
  const char *config_dir;
  bool has_listen; /* --listen overrides server.host and server.port */
  char listen_host[HOST_MAX];
  int listen_port;
  int workers; /* --workers; 0 when not given */
  bool stdio;
  bool check_config;
  const char *explain_endpoint; /* --explain-endpoint NAME */
  bool has_log_level;
  dg_log_level_t log_level;
  const char *database;      /* --database; NULL when not given */
  const char *read_database; /* --read-database; NULL when not given */
} options_t;

typedef enum args_result { ARGS_RUN, ARGS_EXIT_OK, ARGS_EXIT_USAGE } args_result_t;

enum {
  OPT_STDIO = 256,
  OPT_CHECK_CONFIG,
  OPT_LOG_LEVEL,
  OPT_DATABASE,
  OPT_EXPLAIN_ENDPOINT,
  OPT_READ_DATABASE
};

static const struct option long_options[] = {
    {"config", required_argument, NULL, 'c'},
    {"listen", required_argument, NULL, 'l'},
    {"workers", required_argument, NULL, 'w'},
    {"stdio", no_argument, NULL, OPT_STDIO},
    {"check-config", no_argument, NULL, OPT_CHECK_CONFIG},
    {"explain-endpoint", required_argument, NULL, OPT_EXPLAIN_ENDPOINT},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"database", required_argument, NULL, OPT_DATABASE},
    {"read-database", required_argument, NULL, OPT_READ_DATABASE},
    {"version", no_argument, NULL, 'V'},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void print_usage(FILE *out) {
  fputs("Usage: datagate [OPTION]...\n"
        "MCP gateway to Data Models, Saved Queries, data entry forms and documents.\n"
        "\n"
        "  -c, --config DIR       configuration directory (default: conf)\n"
        "  -l, --listen HOST:PORT listen address, overriding server.host and server.port;\n"
        "                         IPv6 in brackets ([::1]:8080); port 0 picks a free port\n"
        "  -w, --workers N        worker processes sharing the port (overrides server.workers)\n"
        "      --stdio            serve MCP on standard input and output instead of HTTP\n"
        "      --check-config [DIR]\n"
        "                         validate the configuration, print every problem, and exit\n"
        "      --explain-endpoint NAME\n"
        "                         print an endpoint's save action tree in execution order\n"
        "                         with the session values each action may use, and exit\n"
        "      --log-level LEVEL  debug, info, warn or error (overrides server.logLevel)\n"
        "      --database FILE|URI  SQLite database file, or a postgresql:// URI\n"
        "                         (overrides server.database)\n"
        "      --read-database URI  postgresql:// URI of hot standbys for the read tools\n"
        "                         (overrides server.readDatabase)\n"
        "      --extract FILE [--content-type T] [--offset N] [--chunk-chars N] [--json]\n"
        "                [--process] [--usage]\n"
        "                         print the text of a document (or its chunks as JSON);\n"
        "                         --process: in an extractor process, as the gateway;\n"
        "                         --usage: then its CPU time and memory on standard error\n"
        "  -V, --version          print the version and exit\n"
        "  -h, --help             print this help and exit\n"
        "\n"
        "Signals: SIGTERM and SIGINT drain and stop; SIGHUP reloads the configuration.\n",
        out);
}

/* Splits "HOST:PORT" or "[IPv6]:PORT"; an IPv6 address must be bracketed
 * so that its colons cannot be mistaken for the port separator. */
static bool parse_listen(const char *text, char host[HOST_MAX], int *port) {
  const char *colon = NULL;
  size_t hostlen = 0;
  if (text[0] == '[') {
    const char *close = strchr(text, ']');
    if (close == NULL || close[1] != ':')
      return false;
    colon = close + 1;
    text++;
    hostlen = (size_t)(close - text);
  } else {
    colon = strrchr(text, ':');
    if (colon == NULL || memchr(text, ':', (size_t)(colon - text)) != NULL)
      return false;
    hostlen = (size_t)(colon - text);
  }
  int64_t value = 0;
  if (hostlen == 0 || hostlen >= HOST_MAX || !dg_parse_int64(colon + 1, 0, 65535, &value))
    return false;
  memcpy(host, text, hostlen);
  host[hostlen] = '\0';
  *port = (int)value;
  return true;
}

static args_result_t usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static args_result_t usage_error(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("datagate: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputs("\nTry 'datagate --help' for more information.\n", stderr);
  va_end(ap);
  return ARGS_EXIT_USAGE;
}

static args_result_t apply_option(int c, const char *arg, options_t *o) {
  int64_t n = 0;
  bool ok = false;
  switch (c) {
  case 'c':
    o->config_dir = arg;
    return ARGS_RUN;
  case 'l':
    o->has_listen = parse_listen(arg, o->listen_host, &o->listen_port);
    return o->has_listen ? ARGS_RUN : usage_error("--listen '%s' is not HOST:PORT", arg);
  case 'w':
    ok = dg_parse_int64(arg, 1, MAX_WORKERS, &n);
    o->workers = (int)n;
    return ok ? ARGS_RUN : usage_error("--workers '%s' is not a number from 1 to 256", arg);
  case OPT_STDIO:
    o->stdio = true;
    return ARGS_RUN;
  case OPT_CHECK_CONFIG:
    o->check_config = true;
    return ARGS_RUN;
  case OPT_EXPLAIN_ENDPOINT:
    o->explain_endpoint = arg;
    return ARGS_RUN;
  case OPT_DATABASE:
    o->database = arg;
    return ARGS_RUN;
  case OPT_READ_DATABASE:
    o->read_database = arg;
    return ARGS_RUN;
  case OPT_LOG_LEVEL:
    o->log_level = dg_log_level_parse(arg, &ok);
    o->has_log_level = ok;
    return ok ? ARGS_RUN : usage_error("--log-level '%s' is not debug, info, warn or error", arg);
  case 'V':
    printf("datagate %s\n", DG_VERSION);
    return ARGS_EXIT_OK;
  case 'h':
    print_usage(stdout);
    return ARGS_EXIT_OK;
  default:
    /* getopt_long has already said what was wrong. */
    fputs("Try 'datagate --help' for more information.\n", stderr);
    return ARGS_EXIT_USAGE;
  }
}

static args_result_t parse_args(int argc, char **argv, options_t *o) {
  memset(o, 0, sizeof(*o));
  o->config_dir = "conf";
  for (;;) {
    int c = getopt_long(argc, argv, "c:l:w:Vh", long_options, NULL);
    if (c == -1)
      break;
    args_result_t r = apply_option(c, optarg, o);
    if (r != ARGS_RUN)
      return r;
  }
  /* "datagate --check-config conf" reads naturally, so a lone directory
   * argument is accepted there. */
  if (o->check_config && optind == argc - 1)
    o->config_dir = argv[optind++];
  if (optind < argc)
    return usage_error("unexpected argument '%s'", argv[optind]);
  return ARGS_RUN;
}

/* ---- Shared start-up helpers ---------------------------------------------- */

/* The level named on the command line wins over the configuration's. */
static void apply_log_level(const options_t *o, const dg_catalog_t *cat) {
  bool ok = false;
  dg_log_level_t level = DG_LOG_INFO;
  if (o->has_log_level)
    level = o->log_level;
  else if (cat->server.log_level != NULL)
    level = dg_log_level_parse(cat->server.log_level, &ok);
  dg_log_init(2, level);
}

/* Each WebSocket client holds a descriptor, so the soft limit is raised to
 * the hard one; the kernel's own ceiling applies when the hard limit is
 * unlimited. */
static void raise_nofile_limit(void) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == rl.rlim_max)
    return;
  rlim_t wanted = rl.rlim_max == RLIM_INFINITY ? (rlim_t)1048576 : rl.rlim_max;
  rl.rlim_cur = wanted;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) {
    dg_logf(DG_LOG_WARN, "nofile_limit", "cannot raise the open file limit to %llu: %s",
            (unsigned long long)wanted, strerror(errno));
    return;
  }
  dg_log_json(DG_LOG_DEBUG, "nofile_limit", json_pack("{s:I}", "limit", (json_int_t)wanted));
}

/* A peer that closes while we write (a socket or the stdio pipe) must cost
 * an EPIPE, not the process. */
static void ignore_sigpipe(void) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_IGN;
  sigaction(SIGPIPE, &sa, NULL);
}

/* Loads the catalog from dir, printing every problem line to stderr. */
static int load_catalog(const char *dir, dg_catalog_t **out) {
  dg_config_errors_t errors = {0};
  int rc = dg_catalog_load(dir, out, &errors);
  for (size_t i = 0; i < errors.count; i++)
    fprintf(stderr, "%s\n", errors.lines[i]);
  if (rc != 0)
    fprintf(stderr, "datagate: the configuration in %s is invalid (%zu problem%s)\n", dir,
            errors.count, errors.count == 1 ? "" : "s");
  dg_config_errors_free(&errors);
  return rc;
}

static void limits_from_settings(const dg_server_settings_t *s, dg_http_limits_t *l) {
  dg_http_limits_default(l);
  l->max_header_bytes = s->max_header_bytes;
  l->max_headers = s->max_headers;
  l->max_body_bytes = s->max_body_bytes;
  l->max_connections = s->max_connections;
  l->header_timeout_ms = s->header_timeout_ms;
  l->request_timeout_ms = s->request_timeout_ms;
  l->idle_timeout_ms = s->idle_timeout_ms;
  l->max_write_buffer = s->max_write_buffer;
  l->max_pipelined = s->max_pipelined;
  l->max_ws_message_bytes = s->max_ws_message_bytes;
  l->ws_ping_interval_ms = s->ws_ping_interval_ms;
  l->max_unadmitted_bytes = s->max_unadmitted_bytes;
}

/* ---- One serving process -------------------------------------------------- */

/* Where a serving process listens, fixed at start-up. */
typedef struct listen_plan {
  char host[HOST_MAX];
  int port;
  bool reuse_port;
  int worker;  /* this process's worker number (0 without --workers) */
  bool forked; /* a worker of a master process */
} listen_plan_t;

/* RUNNING -> DRAINING (HTTP stops accepting, requests finish) ->
 * WAITING_CALLS (tool calls finish) -> CLOSING (everything is closed and
 * the loop runs out). stdio skips DRAINING; a failed start goes straight
 * to CLOSING. */
typedef enum app_state {
  APP_RUNNING,
  APP_DRAINING,
  APP_WAITING_CALLS,
  APP_CLOSING,
} app_state_t;

static const char *const app_state_names[] = {"running", "draining", "waiting_calls", "closing"};

typedef struct app {
  uv_loop_t loop;
  const options_t *opt;
  const listen_plan_t *plan;
  app_state_t state;
  dg_catalog_t *cat;  /* the snapshot new calls use; one reference */
  dg_catalog_t *boot; /* the settings the process started with; one reference */
  dg_mcp_server_t *mcp;
  dg_http_server_t *http;
  dg_access_log_t *access_log; /* server.accessLog; NULL with --stdio */
  dg_admin_t *admin;           /* the /admin page and API (HTTP only) */
  dg_tools_env_t env;          /* what tools reach: store, connector client */
  /* The session key and table, shared with the other workers. */
  dg_mcp_shared_t *shared;
  uv_signal_t sig_term;
  uv_signal_t sig_int;
  uv_signal_t sig_hup;
  uv_work_t pool_start; /* see start_pool_without_signals */
  uv_timer_t calls_timer;
  uint64_t deadline_ms; /* when draining gives up on what is still running */
  int exit_code;
  int fail_code; /* exit code when the start fails */
} app_t;

static void app_set_state(app_t *app, app_state_t next) {
  static const bool legal[4][4] = {
      [APP_RUNNING] = {[APP_DRAINING] = true, [APP_WAITING_CALLS] = true, [APP_CLOSING] = true},
      [APP_DRAINING] = {[APP_WAITING_CALLS] = true},
      [APP_WAITING_CALLS] = {[APP_CLOSING] = true},
  };
  if (!legal[app->state][next]) {
    dg_log_json(
        DG_LOG_ERROR, "illegal_state",
        json_pack("{s:s,s:s}", "from", app_state_names[app->state], "to", app_state_names[next]));
    abort();
  }
  dg_log_json(
      DG_LOG_DEBUG, "state",
      json_pack("{s:s,s:s}", "from", app_state_names[app->state], "to", app_state_names[next]));
  app->state = next;
}

static void close_handle(uv_handle_t *handle) {
  if (!uv_is_closing(handle))
    uv_close(handle, NULL);
}

/* Closing a uv_signal handle gives its signal the default action back,
 * which would turn a clean exit into death by signal when a supervisor
 * repeats its SIGTERM while the process finishes. The signals are blocked
 * while the handles close and then ignored, which also discards one that
 * arrived in between. SIGINT keeps its default so that a second Ctrl-C
 * still ends an exit that hangs. */
static void close_signals(app_t *app) {
  sigset_t late, old;
  sigemptyset(&late);
  sigaddset(&late, SIGTERM);
  sigaddset(&late, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &late, &old);
  close_handle((uv_handle_t *)&app->sig_term);
  close_handle((uv_handle_t *)&app->sig_int);
  close_handle((uv_handle_t *)&app->sig_hup);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_IGN;
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Signals are for the loop thread alone. The threadpool's threads, and the
 * threads they start, are made with SIGTERM, SIGINT and SIGHUP blocked (a
 * thread inherits its creator's mask), so that blocking them in the loop
 * thread holds them off for the whole process: close_signals relies on it.
 * Without it, a SIGTERM delivered to a pool thread at the moment the closed
 * handles give the default action back killed a process that was exiting
 * cleanly. libuv starts its threads on the first work queued, all at once. */
static void pool_start_work(uv_work_t *work) {
  (void)work;
}

static void pool_start_done(uv_work_t *work, int status) {
  (void)work;
  (void)status;
}

static void start_pool_without_signals(app_t *app) {
  sigset_t held, old;
  sigemptyset(&held);
  sigaddset(&held, SIGTERM);
  sigaddset(&held, SIGINT);
  sigaddset(&held, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &held, &old);
  uv_queue_work(&app->loop, &app->pool_start, pool_start_work, pool_start_done);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
}

/* Releases everything; the loop then runs out of handles and returns. The
 * HTTP server is closed first: by now it has no connections, so nothing
 * can call into the MCP server while it is freed. */
static void app_finish(app_t *app) {
  app_set_state(app, APP_CLOSING);
  unsigned left = app->mcp != NULL ? dg_mcp_server_inflight(app->mcp) : 0;
  if (app->mcp != NULL)
    dg_mcp_server_attach_http(app->mcp, NULL);
  dg_http_server_close(app->http);
  app->http = NULL;
  dg_access_log_close(app->access_log);
  app->access_log = NULL;
  dg_admin_free(app->admin);
  app->admin = NULL;
  if (app->env.store != NULL)
    dg_store_on_cancel(app->env.store, NULL, NULL);
  if (app->mcp != NULL)
    dg_mcp_server_free(app->mcp);
  app->mcp = NULL;
  /* Freed once the document calls the MCP server canceled have ended. */
  dg_files_close(app->env.files);
  app->env.files = NULL;
  /* The tool calls have ended: nothing reads the answers any more. */
  dg_tools_answers_free(app->env.answers);
  app->env.answers = NULL;
  /* Upstream calls still running are cancelled; their callbacks follow. */
  dg_connectors_close(app->env.connectors);
  app->env.connectors = NULL;
  dg_http_client_close(app->env.client);
  app->env.client = NULL;
  /* After the calls: a request still running is interrupted, and the loop
   * runs until the store's connections are closed. */
  dg_store_close(app->env.store, NULL, NULL);
  app->env.store = NULL;
  close_signals(app);
  close_handle((uv_handle_t *)&app->calls_timer);
  dg_log_json(DG_LOG_INFO, "stopped",
              json_pack("{s:i,s:i,s:i}", "pid", (int)getpid(), "canceled_calls", (int)left,
                        "exit_code", app->exit_code));
}

static void check_calls(uv_timer_t *timer) {
  app_t *app = timer->data;
  unsigned inflight = dg_mcp_server_inflight(app->mcp);
  if (app->env.client != NULL)
    inflight += dg_http_client_active(app->env.client);
  if (inflight > 0 && dg_now_ms() < app->deadline_ms)
    return;
  uv_timer_stop(timer);
  app_finish(app);
}

/* Lets the tool calls still running end on their own, up to the deadline. */
static void app_wait_calls(app_t *app) {
  app_set_state(app, APP_WAITING_CALLS);
  uv_timer_start(&app->calls_timer, check_calls, 0, CALLS_POLL_MS);
}

static void on_drained(dg_http_server_t *server, void *data) {
  app_t *app = data;
  dg_mcp_server_attach_http(app->mcp, NULL);
  dg_http_server_close(server);
  app->http = NULL;
  app_wait_calls(app);
}

static void app_stop(app_t *app, const char *why) {
  if (app->state != APP_RUNNING)
    return;
  uint64_t timeout = app->cat->server.drain_timeout_ms;
  app->deadline_ms = dg_now_ms() + timeout;
  dg_mcp_server_set_ready(app->mcp, false);
  dg_log_json(DG_LOG_INFO, "draining",
              json_pack("{s:s,s:I,s:i,s:i}", "reason", why, "timeout_ms", (json_int_t)timeout,
                        "connections", app->http ? (int)dg_http_server_connections(app->http) : 0,
                        "inflight", (int)dg_mcp_server_inflight(app->mcp)));
  if (app->http == NULL) {
    app_wait_calls(app);
    return;
  }
  app_set_state(app, APP_DRAINING);
  dg_http_server_drain(app->http, timeout, on_drained, app);
}

/* ---- Reload (SIGHUP) ------------------------------------------------------ */

static void log_config_errors(const char *event, const dg_config_errors_t *errors) {
  for (size_t i = 0; i < errors->count; i++)
    dg_log_json(DG_LOG_ERROR, event, json_pack("{s:s}", "problem", errors->lines[i]));
}

static bool str_changed(const char *a, const char *b) {
  if (a == NULL || b == NULL)
    return a != b;
  return strcmp(a, b) != 0;
}

static void log_restart_required(const char *setting) {
  dg_log_json(DG_LOG_WARN, "restart_required",
              json_pack("{s:s,s:s}", "setting", setting, "msg",
                        "changed in the configuration; restart required to apply it"));
}

/* Settings bound at start-up (the socket, the process count, TLS) keep
 * their old values until a restart; say so instead of ignoring the edit. */
static void check_restart_settings(const options_t *o, const dg_server_settings_t *old,
                                   const dg_server_settings_t *cur) {
  if (!o->has_listen && str_changed(old->host, cur->host))
    log_restart_required("server.host");
  if (!o->has_listen && old->port != cur->port)
    log_restart_required("server.port");
  if (o->workers == 0 && old->workers != cur->workers)
    log_restart_required("server.workers");
  if (str_changed(old->tls_cert_file, cur->tls_cert_file))
    log_restart_required("server.tlsCertFile");
  if (str_changed(old->tls_key_file, cur->tls_key_file))
    log_restart_required("server.tlsKeyFile");
  if (str_changed(old->upstream_ca_file, cur->upstream_ca_file))
    log_restart_required("server.upstreamCaFile");
  if (str_changed(old->upstream_dns_servers, cur->upstream_dns_servers))
    log_restart_required("server.upstreamDnsServers");
  if (o->database == NULL && str_changed(old->database, cur->database))
    log_restart_required("server.database");
  if (o->read_database == NULL && str_changed(old->read_database, cur->read_database))
    log_restart_required("server.readDatabase");
  if (old->read_max_lag_ms != cur->read_max_lag_ms)
    log_restart_required("server.readMaxLagMs");
  if (old->database_pool != cur->database_pool)
    log_restart_required("server.databasePool");
  if (str_changed(old->database_password_env, cur->database_password_env))
    log_restart_required("server.databasePasswordEnv");
  if (str_changed(old->session_key_env, cur->session_key_env))
    log_restart_required("server.sessionKeyEnv");
}

/* Connector limits and CA files follow the configuration; a failure is
 * logged and the connectors keep their previous limits. */
static void configure_connectors(app_t *app, const dg_catalog_t *cat) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  if (app->env.connectors != NULL && dg_connectors_configure(app->env.connectors, cat, &err) != 0)
    dg_log_json(DG_LOG_ERROR, "connectors_failed",
                json_pack("{s:s,s:s}", "param", err.param, "msg", err.message));
}

/* The access log is opened anew on every SIGHUP, whether the reload
 * succeeded or not, so that logrotate can move the file away. */
static void reopen_access_log(app_t *app) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  if (app->access_log != NULL &&
      dg_access_log_reopen(app->access_log, app->cat->server.access_log, &err) != 0)
    dg_log_json(DG_LOG_ERROR, "access_log_failed",
                json_pack("{s:s,s:s}", "param", err.param, "msg", err.message));
  dg_access_log_set_flush(app->access_log, app->cat->server.access_log_flush_ms);
}

/* A bad configuration never replaces a good one: the old snapshot stays. */
static void app_reload(app_t *app) {
  dg_config_errors_t errors = {0};
  dg_catalog_t *next = NULL;
  int rc = dg_catalog_load(app->opt->config_dir, &next, &errors);
  if (rc != 0) {
    log_config_errors("reload_failed", &errors);
    dg_config_errors_free(&errors);
    reopen_access_log(app);
    return;
  }
  dg_config_errors_free(&errors);
  check_restart_settings(app->opt, &app->boot->server, &next->server);
  dg_mcp_limits_t mcp_limits = dg_tools_mcp_limits(next);
  dg_mcp_server_set_catalog(app->mcp, next, &mcp_limits);
  if (app->admin != NULL)
    dg_admin_set_catalog(app->admin, next);
  configure_connectors(app, next);
  if (app->http != NULL) {
    dg_http_limits_t limits;
    limits_from_settings(&next->server, &limits);
    dg_http_server_set_limits(app->http, &limits);
  }
  dg_catalog_unref(app->cat);
  app->cat = next;
  apply_log_level(app->opt, next);
  reopen_access_log(app);
  dg_log_json(DG_LOG_INFO, "reloaded",
              json_pack("{s:s,s:i,s:i,s:i}", "config", app->opt->config_dir, "models",
                        (int)next->nmodels, "roles", (int)next->nroles, "users",
                        (int)next->nusers));
}

static const char *signal_name(int signum) {
  return signum == SIGINT ? "SIGINT" : signum == SIGTERM ? "SIGTERM" : "SIGHUP";
}

static void on_signal(uv_signal_t *handle, int signum) {
  app_t *app = handle->data;
  if (signum == SIGHUP) {
    if (app->state == APP_RUNNING)
      app_reload(app);
    return;
  }
  app_stop(app, signal_name(signum));
}

static void start_signal(app_t *app, uv_signal_t *handle, int signum) {
  handle->data = app;
  uv_signal_start(handle, on_signal, signum);
}

/* ---- Transports ----------------------------------------------------------- */

/* The URL a client on this machine uses: a wildcard address is reached
 * through loopback, and an IPv6 literal goes in brackets. */
static void format_url(char *out, size_t size, const char *host, int port, bool tls) {
  if (strcmp(host, "0.0.0.0") == 0)
    host = "127.0.0.1";
  else if (strcmp(host, "::") == 0)
    host = "::1";
  bool v6 = strchr(host, ':') != NULL;
  snprintf(out, size, "%s://%s%s%s:%d/mcp", tls ? "https" : "http", v6 ? "[" : "", host,
           v6 ? "]" : "", port);
}

static void log_listening(const app_t *app, bool tls) {
  char url[HOST_MAX + 64];
  int port = dg_http_server_port(app->http);
  format_url(url, sizeof(url), app->plan->host, port, tls);
  dg_log_json(DG_LOG_NOTICE, "listening",
              json_pack("{s:s,s:i,s:i,s:i}", "url", url, "port", port, "pid", (int)getpid(),
                        "worker", app->plan->worker));
}

/* A change saved through /admin: a worker asks its master, which reloads
 * every worker; a lone process reloads itself. */
static void admin_reload(void *data) {
  app_t *app = data;
  if (app->plan->forked)
    kill(getppid(), SIGHUP);
  else if (app->state == APP_RUNNING)
    app_reload(app);
}

static int start_admin(app_t *app, dg_errctx_t *err) {
  dg_admin_config_t config = {
      .config_dir = app->opt->config_dir,
      .reload = admin_reload,
      .reload_data = app,
      .connectors = app->env.connectors,
  };
  if (dg_admin_new(&app->loop, &config, app->cat, &app->admin) != 0)
    return dg_errctx_set(err, DG_ENOMEM, "admin", "out of memory");
  dg_mcp_server_set_route(app->mcp, dg_admin_route, app->admin, DG_ADMIN_API_PREFIX);
  return 0;
}

static int start_http(app_t *app, dg_errctx_t *err) {
  const dg_server_settings_t *s = &app->boot->server;
  dg_tls_server_config_t tls = {.cert_file = s->tls_cert_file, .key_file = s->tls_key_file};
  bool use_tls = s->tls_cert_file != NULL && s->tls_key_file != NULL;
  dg_http_server_config_t config = {
      .host = app->plan->host,
      .port = app->plan->port,
      .reuse_port = app->plan->reuse_port,
      .tls = use_tls ? &tls : NULL,
      .handler = dg_mcp_http_handler,
      .admit = dg_mcp_http_admit,
      .data = app->mcp,
  };
  limits_from_settings(&app->cat->server, &config.limits);
  int rc = dg_access_log_open(&app->loop, app->cat->server.access_log, &app->access_log, err);
  if (rc == 0)
    dg_access_log_set_flush(app->access_log, app->cat->server.access_log_flush_ms);
  if (rc == 0)
    rc = start_admin(app, err);
  if (rc != 0)
    return rc;
  config.access_log = app->access_log;
  rc = dg_http_server_start(&app->loop, &config, &app->http, err);
  if (rc != 0) {
    app->http = NULL;
    return rc;
  }
  /* /healthz reports this server's connections. */
  dg_mcp_server_attach_http(app->mcp, app->http);
  log_listening(app, use_tls);
  return 0;
}

/* Input ended: answer what is still running, then stop. */
static void on_stdio_eof(void *data) {
  app_t *app = data;
  app_stop(app, "eof");
}

static int start_stdio(app_t *app, dg_errctx_t *err) {
  int rc = dg_mcp_stdio_start(app->mcp, 0, 1, on_stdio_eof, app);
  if (rc != 0)
    return dg_errctx_set(err, rc, "stdio", "cannot serve MCP on stdio: %s", dg_strerror(rc));
  return 0;
}

/* The connector client for upstream calls (saved queries, save actions,
 * document downloads). */
static int start_client(app_t *app, dg_errctx_t *err) {
  dg_http_client_config_t config;
  dg_http_client_config_default(&config);
  config.ca_file = app->boot->server.upstream_ca_file;
  config.dns_servers = app->boot->server.upstream_dns_servers;
  int rc = dg_http_client_new(&app->loop, &config, &app->env.client, err);
  if (rc == 0)
    rc = dg_connectors_new(&app->loop, app->env.client, &app->env.connectors, err);
  if (rc == 0)
    rc = dg_connectors_configure(app->env.connectors, app->cat, err);
  app->env.files = rc == 0 ? dg_files_new(app->boot) : NULL;
  if (rc == 0 && app->env.files == NULL)
    rc = dg_errctx_set(err, DG_ENOMEM, "files", "out of memory");
  app->env.answers = rc == 0 ? dg_tools_answers_new() : NULL;
  if (rc == 0 && app->env.answers == NULL)
    rc = dg_errctx_set(err, DG_ENOMEM, "answers", "out of memory");
  return rc;
}

/* Cancels between gateways: what mcp cannot stop in this process is
 * published through the store (PostgreSQL: NOTIFY; SQLite: one machine,
 * nothing to publish to, so it goes to the other workers through the map
 * they share), and what the store hears goes back to mcp. */
_Static_assert(DG_MCP_RELAY_REQUEST_MAX == DG_STORE_CANCEL_REQUEST_MAX,
               "every request id mcp relays fits a published cancel");

static void relay_cancel(const char *session, const char *request, void *data) {
  app_t *app = data;
  int rc = app->env.store != NULL ? dg_store_publish_cancel(app->env.store, session, request)
                                  : DG_ECLOSED;
  if (rc == DG_ENOTSUP && app->mcp != NULL)
    dg_mcp_server_share_cancel(app->mcp, session, request);
  else if (rc != 0)
    dg_log_json(DG_LOG_WARN, "cancel_not_published",
                json_pack("{s:s,s:s}", "error", dg_err_name(rc), "msg", dg_strerror(rc)));
}

static void on_store_cancel(const char *session, const char *request, void *data) {
  app_t *app = data;
  if (app->mcp != NULL)
    dg_mcp_server_cancel_relayed(app->mcp, session, request);
}

static int start_mcp(app_t *app, dg_errctx_t *err) {
  dg_mcp_config_t config = {
      .server_name = "datagate",
      .server_version = DG_VERSION,
      .instructions = dg_tools_instructions,
      .tools = dg_tools_registry,
      .ntools = dg_tools_count,
      .tool_context = &app->env,
      .resources = &dg_tools_resources,
      .shared = app->shared,
  };
  dg_mcp_limits_t limits = dg_tools_mcp_limits(app->cat);
  int rc = dg_mcp_server_new(&app->loop, &config, app->cat, &limits, &app->mcp, err);
  if (rc == 0 && app->env.store != NULL) {
    dg_mcp_server_set_relay(app->mcp, relay_cancel, app);
    dg_store_on_cancel(app->env.store, on_store_cancel, app);
  }
  return rc;
}

static int app_start(app_t *app) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = start_client(app, &err);
  if (rc == 0)
    rc = start_mcp(app, &err);
  if (rc == 0)
    rc = app->opt->stdio ? start_stdio(app, &err) : start_http(app, &err);
  if (rc != 0) {
    dg_log_json(DG_LOG_ERROR, "start_failed",
                json_pack("{s:s,s:s,s:s}", "error", dg_err_name(rc), "param", err.param, "msg",
                          err.message[0] ? err.message : dg_strerror(rc)));
    return rc;
  }
  start_signal(app, &app->sig_term, SIGTERM);
  start_signal(app, &app->sig_int, SIGINT);
  start_signal(app, &app->sig_hup, SIGHUP);
  /* The store is open and the catalog loaded: /readyz answers 200. */
  dg_mcp_server_set_ready(app->mcp, true);
  return 0;
}

/* The store opens (and migrates) on the threadpool; serving starts once it
 * is ready, so that no call finds it missing. */
static void on_store_open(dg_store_t *store, int status, const dg_errctx_t *err, void *data) {
  app_t *app = data;
  app->env.store = store;
  if (status != 0)
    dg_log_json(DG_LOG_ERROR, "start_failed",
                json_pack("{s:s,s:s,s:s}", "error", dg_err_name(status), "param", err->param, "msg",
                          err->message[0] ? err->message : dg_strerror(status)));
  if (status != 0 || app_start(app) != 0) {
    app->exit_code = app->fail_code;
    app_finish(app);
  }
}

static int app_open_store(app_t *app) {
  dg_store_options_t options = {.path = app->opt->database, .read_path = app->opt->read_database};
  int rc = dg_store_open(&app->loop, app->boot, &options, on_store_open, app);
  if (rc != 0)
    dg_logf(DG_LOG_ERROR, "start_failed", "cannot open the entity store: %s", dg_strerror(rc));
  return rc;
}

/* A handle still open here is a bug elsewhere: it is reported and closed so
 * that the loop can be closed. */
static void close_stray(uv_handle_t *handle, void *arg) {
  unsigned *count = arg;
  (*count)++;
  close_handle(handle);
}

static void close_loop(uv_loop_t *loop) {
  if (uv_loop_close(loop) == 0)
    return;
  unsigned count = 0;
  uv_walk(loop, close_stray, &count);
  dg_log_json(DG_LOG_ERROR, "handles_left_open", json_pack("{s:i}", "count", (int)count));
  uv_run(loop, UV_RUN_DEFAULT);
  uv_loop_close(loop);
}

/* Serves until stopped; takes over the references in cat and boot. */
static int app_run(const options_t *opt, const listen_plan_t *plan, dg_catalog_t *cat,
                   dg_catalog_t *boot, dg_mcp_shared_t *shared, int fail_code) {
  app_t app = {.opt = opt,
               .plan = plan,
               .state = APP_RUNNING,
               .cat = cat,
               .boot = boot,
               .shared = shared,
               .fail_code = fail_code};
  app.calls_timer.data = &app;
  int rc = uv_loop_init(&app.loop);
  if (rc != 0) {
    dg_logf(DG_LOG_ERROR, "start_failed", "cannot create the event loop: %s", uv_strerror(rc));
    app.exit_code = fail_code;
    goto cleanup;
  }
  uv_signal_init(&app.loop, &app.sig_term);
  uv_signal_init(&app.loop, &app.sig_int);
  uv_signal_init(&app.loop, &app.sig_hup);
  uv_timer_init(&app.loop, &app.calls_timer);
  start_pool_without_signals(&app);
  if (app_open_store(&app) != 0) {
    app.exit_code = fail_code;
    app_finish(&app);
  }
  uv_run(&app.loop, UV_RUN_DEFAULT);
  close_loop(&app.loop);
cleanup:
  dg_catalog_unref(app.cat);
  dg_catalog_unref(app.boot);
  return app.exit_code;
}

/* ---- Master of --workers ---------------------------------------------------- */

typedef struct worker_slot {
  pid_t pid; /* 0 while not running */
  uint64_t started_ms;
  uint64_t restart_at_ms; /* 0: no restart pending */
  uint64_t backoff_ms;
} worker_slot_t;

typedef struct master {
  const options_t *opt;
  listen_plan_t plan;
  dg_catalog_t *boot; /* settings the workers were started with */
  dg_catalog_t *cat;  /* latest valid snapshot, inherited by restarted workers */
  /* Made before the first fork, inherited by every worker. */
  dg_mcp_shared_t *shared;
  worker_slot_t slots[MAX_WORKERS];
  int nworkers;
  pid_t pid;
  int port_fd; /* keeps the port picked for port 0 reserved, or -1 */
  sigset_t signals;
  bool stopping;
  uint64_t kill_at_ms;
  int exit_code;
} master_t;

static int resolve_address(const char *host, int port, struct sockaddr_storage *ss,
                           socklen_t *len) {
  memset(ss, 0, sizeof(*ss));
  struct sockaddr_in *v4 = (struct sockaddr_in *)ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)ss;
  if (strcmp(host, "localhost") == 0)
    host = "127.0.0.1";
  if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
    v4->sin_family = AF_INET;
    v4->sin_port = htons((uint16_t)port);
    *len = sizeof(*v4);
    return 0;
  }
  if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
    v6->sin6_family = AF_INET6;
    v6->sin6_port = htons((uint16_t)port);
    *len = sizeof(*v6);
    return 0;
  }
  return DG_EINVAL;
}

/* With port 0 every worker must still share one port, so the master binds
 * a SO_REUSEPORT socket to pick it and keeps it bound, without listening,
 * so that nothing else can take the port while workers come and go. */
static int master_reserve_port(master_t *m) {
  struct sockaddr_storage ss;
  socklen_t len = 0;
  int on = 1;
  if (resolve_address(m->plan.host, 0, &ss, &len) != 0) {
    dg_logf(DG_LOG_ERROR, "start_failed", "host '%s' is not a numeric address", m->plan.host);
    return DG_ECONFIG;
  }
  m->port_fd = socket(ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (m->port_fd < 0 || setsockopt(m->port_fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) != 0 ||
      setsockopt(m->port_fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on)) != 0 ||
      bind(m->port_fd, (struct sockaddr *)&ss, len) != 0 ||
      getsockname(m->port_fd, (struct sockaddr *)&ss, &len) != 0) {
    dg_logf(DG_LOG_ERROR, "start_failed", "cannot reserve a port: %s", strerror(errno));
    return DG_EIO;
  }
  m->plan.port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                                : ((struct sockaddr_in *)&ss)->sin_port);
  return 0;
}

/* The child starts with the signals the master blocked unblocked and their
 * default actions back, so its loop can install its own handlers. */
static void worker_reset_signals(const master_t *m) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = SIG_DFL;
  int signals[] = {SIGTERM, SIGINT, SIGHUP, SIGCHLD};
  for (size_t i = 0; i < DG_ARRAY_SIZE(signals); i++)
    sigaction(signals[i], &sa, NULL);
  sigprocmask(SIG_UNBLOCK, &m->signals, NULL);
}

/* Runs in the child: one serving process on the shared port. */
static int worker_main(master_t *m, int index) {
  /* A worker must not outlive a master that was killed outright. */
  prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (getppid() != m->pid)
    return 0;
  worker_reset_signals(m);
  if (m->port_fd >= 0)
    close(m->port_fd);
  json_t *common = json_pack("{s:i}", "worker", index);
  dg_log_set_common(common);
  json_decref(common);
  m->plan.worker = index;
  m->plan.forked = true;
  m->plan.reuse_port = true;
  int code = app_run(m->opt, &m->plan, m->cat, m->boot, m->shared, EXIT_WORKER_FATAL);
  dg_log_set_common(NULL);
  /* Only this process's view: the master and the other workers keep theirs. */
  dg_mcp_shared_free(m->shared);
  return code;
}

static int master_spawn(master_t *m, int index) {
  worker_slot_t *slot = &m->slots[index];
  /* Buffered output would otherwise be written by both processes. */
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    dg_logf(DG_LOG_ERROR, "worker_spawn_failed", "cannot fork worker %d: %s", index,
            strerror(errno));
    return DG_EIO;
  }
  if (pid == 0)
    exit(worker_main(m, index));
  slot->pid = pid;
  slot->started_ms = dg_now_ms();
  slot->restart_at_ms = 0;
  dg_log_json(DG_LOG_INFO, "worker_started", json_pack("{s:i,s:i}", "worker", index, "pid", pid));
  return 0;
}

static int master_live_workers(const master_t *m) {
  int live = 0;
  for (int i = 0; i < m->nworkers; i++)
    live += m->slots[i].pid != 0;
  return live;
}

static void master_signal_workers(const master_t *m, int signum) {
  for (int i = 0; i < m->nworkers; i++) {
    if (m->slots[i].pid != 0)
      kill(m->slots[i].pid, signum);
  }
}

static void master_stop(master_t *m, int signum, int exit_code) {
  if (!m->stopping) {
    m->stopping = true;
    m->kill_at_ms = dg_now_ms() + m->cat->server.drain_timeout_ms + KILL_GRACE_MS;
    m->exit_code = exit_code;
    for (int i = 0; i < m->nworkers; i++)
      m->slots[i].restart_at_ms = 0;
    dg_log_json(
        DG_LOG_INFO, "stopping",
        json_pack("{s:s,s:i}", "signal", signal_name(signum), "workers", master_live_workers(m)));
  }
  master_signal_workers(m, signum);
}

/* The master keeps the latest valid snapshot so that a restarted worker
 * serves what the others serve; the workers report problems themselves. */
static void master_reload(master_t *m) {
  dg_config_errors_t errors = {0};
  dg_catalog_t *next = NULL;
  if (dg_catalog_load(m->opt->config_dir, &next, &errors) == 0) {
    dg_catalog_unref(m->cat);
    m->cat = next;
    apply_log_level(m->opt, next);
  }
  dg_config_errors_free(&errors);
  master_signal_workers(m, SIGHUP);
}

static void master_schedule_restart(master_t *m, int index, int status) {
  worker_slot_t *slot = &m->slots[index];
  uint64_t now = dg_now_ms();
  bool stable = now - slot->started_ms >= RESTART_STABLE_MS;
  slot->backoff_ms = stable || slot->backoff_ms == 0 ? RESTART_MIN_MS : slot->backoff_ms * 2;
  if (slot->backoff_ms > RESTART_MAX_MS)
    slot->backoff_ms = RESTART_MAX_MS;
  slot->restart_at_ms = now + slot->backoff_ms;
  dg_log_json(DG_LOG_WARN, "worker_died",
              json_pack("{s:i,s:i,s:i,s:i,s:I}", "worker", index, "pid", slot->pid, "status",
                        WIFEXITED(status) ? WEXITSTATUS(status) : -1, "signal",
                        WIFSIGNALED(status) ? WTERMSIG(status) : 0, "restart_in_ms",
                        (json_int_t)slot->backoff_ms));
}

static void master_worker_exited(master_t *m, int index, int status) {
  bool clean = WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (m->stopping) {
    if (!clean)
      m->exit_code = 1;
    dg_log_json(
        DG_LOG_INFO, "worker_exited",
        json_pack("{s:i,s:i,s:b}", "worker", index, "pid", m->slots[index].pid, "clean", clean));
  } else if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_WORKER_FATAL) {
    dg_log_json(DG_LOG_ERROR, "worker_cannot_start", json_pack("{s:i}", "worker", index));
    m->slots[index].pid = 0;
    master_stop(m, SIGTERM, 1);
  } else {
    master_schedule_restart(m, index, status);
  }
  m->slots[index].pid = 0;
}

static void master_reap(master_t *m) {
  int status = 0;
  for (;;) {
    pid_t pid = waitpid(-1, &status, WNOHANG);
    if (pid <= 0)
      return;
    for (int i = 0; i < m->nworkers; i++) {
      if (m->slots[i].pid == pid)
        master_worker_exited(m, i, status);
    }
  }
}

/* Restarts that are due, and the last resort for workers that did not stop
 * within the drain timeout. */
static uint64_t master_timers(master_t *m) {
  uint64_t now = dg_now_ms();
  uint64_t next = now + 1000;
  for (int i = 0; i < m->nworkers && !m->stopping; i++) {
    worker_slot_t *slot = &m->slots[i];
    if (slot->restart_at_ms != 0 && slot->restart_at_ms <= now && master_spawn(m, i) != 0)
      slot->restart_at_ms = now + RESTART_MAX_MS;
    if (slot->restart_at_ms != 0 && slot->restart_at_ms < next)
      next = slot->restart_at_ms;
  }
  if (m->stopping && now >= m->kill_at_ms && master_live_workers(m) > 0) {
    dg_log_json(DG_LOG_ERROR, "workers_killed",
                json_pack("{s:i}", "count", master_live_workers(m)));
    master_signal_workers(m, SIGKILL);
    m->exit_code = 1;
    m->kill_at_ms = now + 1000;
  }
  return next;
}

static void master_wait(master_t *m, uint64_t until_ms) {
  uint64_t now = dg_now_ms();
  uint64_t wait = until_ms > now ? until_ms - now : 0;
  struct timespec ts = {.tv_sec = (time_t)(wait / 1000), .tv_nsec = (long)(wait % 1000) * 1000000};
  int signum = sigtimedwait(&m->signals, NULL, &ts);
  if (signum == SIGTERM || signum == SIGINT)
    master_stop(m, signum, 0);
  else if (signum == SIGHUP && !m->stopping)
    master_reload(m);
}

/* Blocked signals stay pending for sigtimedwait; SIGCHLD gets a handler
 * because a signal whose action is to be ignored may never be queued. */
static void noop_handler(int signum) {
  (void)signum;
}

static void master_block_signals(master_t *m) {
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = noop_handler;
  sigaction(SIGCHLD, &sa, NULL);
  sigemptyset(&m->signals);
  sigaddset(&m->signals, SIGTERM);
  sigaddset(&m->signals, SIGINT);
  sigaddset(&m->signals, SIGHUP);
  sigaddset(&m->signals, SIGCHLD);
  sigprocmask(SIG_BLOCK, &m->signals, NULL);
}

static int master_start(master_t *m) {
  master_block_signals(m);
  if (m->plan.port == 0 && master_reserve_port(m) != 0)
    return 1;
  dg_log_json(
      DG_LOG_INFO, "master_started",
      json_pack("{s:i,s:i,s:i}", "pid", (int)m->pid, "workers", m->nworkers, "port", m->plan.port));
  for (int i = 0; i < m->nworkers; i++) {
    if (master_spawn(m, i) != 0) {
      master_stop(m, SIGTERM, 1);
      break;
    }
  }
  return 0;
}

/* Takes over the references in cat and boot. */
static int master_run(const options_t *opt, const listen_plan_t *plan, int nworkers,
                      dg_catalog_t *cat, dg_mcp_shared_t *shared) {
  master_t m = {.opt = opt, .plan = *plan, .nworkers = nworkers, .pid = getpid(), .port_fd = -1};
  m.cat = cat;
  m.shared = shared;
  m.boot = dg_catalog_ref(cat);
  int rc = master_start(&m);
  while (rc == 0 && !(m.stopping && master_live_workers(&m) == 0)) {
    master_wait(&m, master_timers(&m));
    master_reap(&m);
  }
  if (rc == 0)
    dg_log_json(DG_LOG_INFO, "stopped",
                json_pack("{s:i,s:i}", "pid", (int)m.pid, "exit_code", m.exit_code));
  if (m.port_fd >= 0)
    close(m.port_fd);
  dg_catalog_unref(m.cat);
  dg_catalog_unref(m.boot);
  return rc != 0 ? rc : m.exit_code;
}

/* ---- main ------------------------------------------------------------------- */

static int explain_endpoint(const options_t *o) {
  dg_catalog_t *cat = NULL;
  if (load_catalog(o->config_dir, &cat) != 0)
    return 1;
  int rc = dg_catalog_explain_endpoint(cat, o->explain_endpoint, stdout);
  dg_catalog_unref(cat);
  return rc;
}

static void plan_listen(const options_t *o, const dg_catalog_t *cat, listen_plan_t *plan) {
  memset(plan, 0, sizeof(*plan));
  if (o->has_listen) {
    dg_strlcpy(plan->host, o->listen_host, sizeof(plan->host));
    plan->port = o->listen_port;
  } else {
    dg_strlcpy(plan->host, cat->server.host ? cat->server.host : "127.0.0.1", sizeof(plan->host));
    plan->port = cat->server.port;
  }
}

/* The session key and table exist before any worker is forked, so that
 * every worker shares them. */
static int serve(const options_t *o, dg_catalog_t *cat) {
  listen_plan_t plan;
  plan_listen(o, cat, &plan);
  int workers = o->workers > 0 ? o->workers : cat->server.workers;
  bool forks = !o->stdio && workers > 1;
  dg_mcp_shared_t *shared = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  dg_mcp_limits_t mcp_limits = dg_tools_mcp_limits(cat);
  if (dg_mcp_shared_new(&mcp_limits, forks ? (unsigned)workers : 1, &shared, &err) != 0) {
    dg_log_json(DG_LOG_ERROR, "start_failed",
                json_pack("{s:s,s:s}", "param", err.param, "msg", err.message));
    dg_catalog_unref(cat);
    return 1;
  }
  int code = forks ? master_run(o, &plan, workers, cat, shared)
                   : app_run(o, &plan, cat, dg_catalog_ref(cat), shared, 1);
  dg_mcp_shared_free(shared);
  return code;
}

int main(int argc, char **argv) {
  /* "datagate --extract FILE ..." extracts one document and exits. */
  if (argc > 1 && strcmp(argv[1], "--extract") == 0)
    return dg_extract_main(argc - 1, argv + 1, stdout, stderr);
  /* An extractor process started by get_file_text (src/extract/worker.c). */
  if (argc == 2 && strcmp(argv[1], "--extract-worker") == 0)
    return dg_extract_worker_main();
  options_t opt;
  args_result_t args = parse_args(argc, argv, &opt);
  if (args != ARGS_RUN)
    return args == ARGS_EXIT_OK ? 0 : EXIT_USAGE;
  if (opt.check_config)
    return dg_catalog_check(opt.config_dir, dg_store_check_sample, stdout);
  if (opt.explain_endpoint != NULL)
    return explain_endpoint(&opt);
  /* Seeded once, before any thread exists, as jansson asks. */
  json_object_seed(0);
  dg_json_use_block_cache();
  dg_log_init(2, opt.has_log_level ? opt.log_level : DG_LOG_INFO);
  dg_catalog_t *cat = NULL;
  if (load_catalog(opt.config_dir, &cat) != 0)
    return 1;
  apply_log_level(&opt, cat);
  raise_nofile_limit();
  ignore_sigpipe();
  return serve(&opt, cat);
}
