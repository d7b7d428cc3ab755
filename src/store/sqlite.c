/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The SQLite driver: one database file in WAL mode, a connection per
 * threadpool thread (opened the first time that thread runs a request of
 * this store, closed when the store closes), prepared statements cached
 * per connection. Every SQLite call runs on the threadpool; the loop only
 * queues work and receives results. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "store/sqlite_internal.h"

#define BUSY_TIMEOUT_MS 10000
#define WAL_RETRY_MS 10
#define PROGRESS_STEPS 1000

/* ---- Connections ------------------------------------------------------------------- */

/* Runs every PROGRESS_STEPS virtual machine steps: a canceled request
 * stops with SQLITE_INTERRUPT. */
static int on_progress(void *data) {
  dg__sqlite_conn_t *conn = data;
  return conn->current != NULL && atomic_load(&conn->current->canceled);
}

static const char *const conn_pragmas =
    "PRAGMA synchronous=FULL; PRAGMA foreign_keys=OFF; PRAGMA temp_store=MEMORY; "
    "PRAGMA cache_size=-32768; PRAGMA mmap_size=268435456;";

int dg__sqlite_connect(const char *path, int flags, dg__sqlite_conn_t **out, dg_errctx_t *err) {
  dg__sqlite_conn_t *conn = calloc(1, sizeof(*conn));
  *out = NULL;
  if (conn == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
  int rc = sqlite3_open_v2(path, &conn->db, flags | SQLITE_OPEN_NOMUTEX, NULL);
  if (rc != SQLITE_OK) {
    rc = dg_errctx_set(err, DG_EIO, "server.database", "cannot open the database %s: %s", path,
                       conn->db ? sqlite3_errmsg(conn->db) : sqlite3_errstr(rc));
    dg__sqlite_disconnect(conn);
    return rc;
  }
  sqlite3_busy_timeout(conn->db, BUSY_TIMEOUT_MS);
  sqlite3_progress_handler(conn->db, PROGRESS_STEPS, on_progress, conn);
  rc = dg__sqlite_exec(conn, conn_pragmas, err);
  if (rc != 0) {
    dg__sqlite_disconnect(conn);
    return rc;
  }
  *out = conn;
  return 0;
}

void dg__sqlite_disconnect(dg__sqlite_conn_t *conn) {
  if (conn == NULL)
    return;
  for (size_t i = 0; i < DG__SQLITE_STMT_CACHE; i++) {
    sqlite3_finalize(conn->cache[i].stmt);
    free(conn->cache[i].sql);
  }
  sqlite3_close(conn->db);
  free(conn);
}

/* This thread's connection to the store, opened on first use. */
static int thread_conn(dg_store_t *store, dg__sqlite_conn_t **out, dg_errctx_t *err) {
  dg__sqlite_t *d = store->drv;
  *out = uv_key_get(&d->key);
  if (*out != NULL)
    return 0;
  int rc = dg__sqlite_connect(store->path, SQLITE_OPEN_READWRITE, out, err);
  if (rc != 0)
    return rc;
  uv_key_set(&d->key, *out);
  uv_mutex_lock(&d->lock);
  (*out)->next = d->conns;
  d->conns = *out;
  uv_mutex_unlock(&d->lock);
  return 0;
}

/* ---- Statements ------------------------------------------------------------------------ */

int dg__sqlite_fail(dg__sqlite_conn_t *conn, int code, dg_errctx_t *err) {
  int primary = code & 0xff;
  if (primary == SQLITE_INTERRUPT)
    return dg_errctx_set(err, DG_ECANCELED, "", "The query was canceled.");
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED)
    return dg_errctx_set(err, DG_EBUSY, "", "The entity store is busy; try again.");
  if (code == SQLITE_CONSTRAINT_UNIQUE || code == SQLITE_CONSTRAINT_PRIMARYKEY)
    return dg_errctx_set(err, DG_EEXIST, "", "An entity with this id already exists.");
  if (primary == SQLITE_NOMEM)
    return dg_errctx_set(err, DG_ENOMEM, "", "The entity store is out of memory.");
  return dg_errctx_set(err, DG_EIO, "", "The entity store failed: %s.",
                       conn != NULL ? sqlite3_errmsg(conn->db) : sqlite3_errstr(code));
}

static dg__sqlite_stmt_t *cache_find(dg__sqlite_conn_t *conn, const char *sql, size_t n,
                                     uint64_t h) {
  for (size_t i = 0; i < DG__SQLITE_STMT_CACHE; i++) {
    dg__sqlite_stmt_t *e = &conn->cache[i];
    if (e->stmt != NULL && e->hash == h && strncmp(e->sql, sql, n) == 0 && e->sql[n] == '\0')
      return e;
  }
  return NULL;
}

/* The least recently used slot, emptied. */
static dg__sqlite_stmt_t *cache_slot(dg__sqlite_conn_t *conn) {
  dg__sqlite_stmt_t *slot = &conn->cache[0];
  for (size_t i = 1; i < DG__SQLITE_STMT_CACHE; i++) {
    if (conn->cache[i].used < slot->used)
      slot = &conn->cache[i];
  }
  sqlite3_finalize(slot->stmt);
  free(slot->sql);
  memset(slot, 0, sizeof(*slot));
  return slot;
}

static int bind_one(sqlite3_stmt *stmt, int i, const dg_store_value_t *v) {
  switch (v->kind) {
  case DG_STORE_INT:
    return sqlite3_bind_int64(stmt, i, v->i);
  case DG_STORE_REAL:
    return sqlite3_bind_double(stmt, i, v->d);
  case DG_STORE_BOOL:
    return sqlite3_bind_int(stmt, i, v->b ? 1 : 0);
  case DG_STORE_TEXT:
    return sqlite3_bind_text(stmt, i, v->text, (int)v->len, SQLITE_STATIC);
  default:
    return sqlite3_bind_null(stmt, i);
  }
}

static int cached_stmt(dg__sqlite_conn_t *conn, const char *text, size_t n, sqlite3_stmt **out,
                       dg_errctx_t *err) {
  uint64_t h = dg_hash_bytes(text, n, 0);
  dg__sqlite_stmt_t *e = cache_find(conn, text, n, h);
  if (e == NULL) {
    e = cache_slot(conn);
    e->sql = strndup(text, n);
    if (e->sql == NULL)
      return dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
    int rc = sqlite3_prepare_v3(conn->db, text, (int)n, SQLITE_PREPARE_PERSISTENT, &e->stmt, NULL);
    if (rc != SQLITE_OK) {
      free(e->sql);
      e->sql = NULL;
      return dg__sqlite_fail(conn, rc, err);
    }
    e->hash = h;
  }
  e->used = ++conn->tick;
  *out = e->stmt;
  return 0;
}

int dg__sqlite_prepare(dg__sqlite_conn_t *conn, const dg__sql_t *sql, sqlite3_stmt **out,
                       dg_errctx_t *err) {
  if (sql->rc != 0)
    return dg_errctx_set(err, sql->rc, "", "The query is too large to run: %s.",
                         dg_strerror(sql->rc));
  int rc = cached_stmt(conn, sql->text.data, sql->text.len, out, err);
  for (size_t i = 0; rc == 0 && i < sql->nbinds; i++) {
    int brc = bind_one(*out, (int)i + 1, &sql->binds[i]);
    if (brc != SQLITE_OK) {
      dg__sqlite_release(*out);
      rc = dg__sqlite_fail(conn, brc, err);
    }
  }
  return rc;
}

void dg__sqlite_release(sqlite3_stmt *stmt) {
  sqlite3_reset(stmt);
  sqlite3_clear_bindings(stmt);
}

int dg__sqlite_exec(dg__sqlite_conn_t *conn, const char *sql, dg_errctx_t *err) {
  int rc = sqlite3_exec(conn->db, sql, NULL, NULL, NULL);
  return rc == SQLITE_OK ? 0 : dg__sqlite_fail(conn, rc, err);
}

int dg__sqlite_exec_cached(dg__sqlite_conn_t *conn, const char *sql, dg_errctx_t *err) {
  sqlite3_stmt *stmt = NULL;
  int rc = cached_stmt(conn, sql, strlen(sql), &stmt, err);
  if (rc != 0)
    return rc;
  int step = sqlite3_step(stmt);
  sqlite3_reset(stmt);
  return step == SQLITE_DONE ? 0 : dg__sqlite_fail(conn, step, err);
}

int dg__sqlite_step(dg__sqlite_conn_t *conn, sqlite3_stmt *stmt, dg_errctx_t *err) {
  int rc = sqlite3_step(stmt);
  if (rc == SQLITE_ROW || rc == SQLITE_DONE)
    return rc;
  return dg__sqlite_fail(conn, sqlite3_extended_errcode(conn->db), err);
}

void dg__sqlite_row(sqlite3_stmt *stmt, int first, size_t n, dg_store_value_t *out) {
  for (size_t i = 0; i < n; i++) {
    int c = first + (int)i;
    dg_store_value_t *v = &out[i];
    memset(v, 0, sizeof(*v));
    switch (sqlite3_column_type(stmt, c)) {
    case SQLITE_INTEGER:
      v->kind = DG_STORE_INT;
      v->i = sqlite3_column_int64(stmt, c);
      break;
    case SQLITE_FLOAT:
      v->kind = DG_STORE_REAL;
      v->d = sqlite3_column_double(stmt, c);
      break;
    case SQLITE_TEXT:
      v->kind = DG_STORE_TEXT;
      v->text = (const char *)sqlite3_column_text(stmt, c);
      v->len = (size_t)sqlite3_column_bytes(stmt, c);
      break;
    default:
      v->kind = DG_STORE_NULL;
    }
  }
}

/* ---- Requests ------------------------------------------------------------------------------ */

static void req_work(uv_work_t *w) {
  dg_store_req_t *r = w->data;
  dg__sqlite_conn_t *conn = NULL;
  if (atomic_load(&r->canceled)) {
    r->status = dg_errctx_set(&r->err, DG_ECANCELED, "", "The query was canceled.");
    return;
  }
  r->status = thread_conn(r->store, &conn, &r->err);
  if (r->status != 0)
    return;
  conn->current = r;
  r->status = dg__sqlite_run(conn, r);
  conn->current = NULL;
}

static void req_after(uv_work_t *w, int status) {
  dg_store_req_t *r = w->data;
  if (status == UV_ECANCELED)
    r->status = dg_errctx_set(&r->err, DG_ECANCELED, "", "The query was canceled.");
  dg__store_done(r);
}

static int submit(dg_store_req_t *r) {
  r->work.data = r;
  int rc = uv_queue_work(r->store->loop, &r->work, req_work, req_after);
  return rc == 0 ? 0 : DG_ENOMEM;
}

/* Not started yet: the threadpool drops it. Running: the progress handler
 * sees the flag that dg_store_cancel set. */
static void cancel(dg_store_req_t *r) {
  uv_cancel((uv_req_t *)&r->work);
}

/* ---- Opening -------------------------------------------------------------------------------- */

/* Creates the directories of the database path that are missing. */
static int make_parent_dirs(const char *path, dg_errctx_t *err) {
  char dir[4096];
  if (!dg_strlcpy(dir, path, sizeof(dir)))
    return dg_errctx_set(err, DG_EINVAL, "server.database", "the database path is too long");
  for (char *p = dir + 1; *p != '\0'; p++) {
    if (*p != '/')
      continue;
    *p = '\0';
    if (mkdir(dir, 0750) != 0 && errno != EEXIST)
      return dg_errctx_set(err, DG_EIO, "server.database", "cannot create the directory %s: %s",
                           dir, strerror(errno));
    *p = '/';
  }
  return 0;
}

/* Switching the database to WAL fails at once, without the busy handler,
 * while another connection holds the write lock of the old rollback
 * journal: a sibling process creating the same new database. So the switch
 * is retried here (on the threadpool) for as long as the busy timeout. */
static int enable_wal(dg__sqlite_conn_t *conn, dg_errctx_t *err) {
  int rc = dg__sqlite_exec(conn, "PRAGMA journal_mode=WAL", err);
  for (int waited = 0; rc == DG_EBUSY && waited < BUSY_TIMEOUT_MS; waited += WAL_RETRY_MS) {
    sqlite3_sleep(WAL_RETRY_MS);
    rc = dg__sqlite_exec(conn, "PRAGMA journal_mode=WAL", err);
  }
  return rc;
}

static void open_work(uv_work_t *w) {
  dg_store_t *s = w->data;
  dg__sqlite_t *d = s->drv;
  dg__sqlite_conn_t *conn = NULL;
  if (d->open_status != 0)
    return;
  /* The owner token reads /proc, so it is made here rather than on the
   * loop; no request runs before the open completes. */
  dg__store_owner(s->owner);
  int rc = make_parent_dirs(s->path, &s->open_err);
  if (rc == 0)
    rc = dg__sqlite_connect(s->path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, &conn,
                            &s->open_err);
  if (rc == 0)
    rc = enable_wal(conn, &s->open_err);
  if (rc == 0)
    rc = dg__sqlite_migrate(conn, s->cat, s->open_notes, &s->open_err);
  if (rc == 0 && s->sample_dir != NULL)
    rc = dg__sqlite_load_sample(conn, s->cat, s->sample_dir, &s->open_err);
  if (rc == 0)
    rc = dg__sqlite_recover_submissions(conn, s->owner, s->open_notes, &s->open_err);
  dg__sqlite_disconnect(conn);
  d->open_status = rc;
}

static void open_after(uv_work_t *w, int status) {
  dg_store_t *s = w->data;
  dg__sqlite_t *d = s->drv;
  int rc = status != 0 ? DG_ECANCELED : d->open_status;
  if (rc != 0 && d->ready) {
    uv_key_delete(&d->key);
    uv_mutex_destroy(&d->lock);
  }
  dg__store_opened(s, rc);
}

/* SQLite counts the memory it allocates under one process-wide mutex, on
 * every allocation of every connection: about 3 % of a page query's time
 * went to taking and releasing it, and the pool threads waited for each
 * other there. Nothing here reads those counts (no soft heap limit, no
 * sqlite3_memory_used), so they are turned off. SQLite takes settings
 * only before its first use, which in this process is the first store's
 * open below, on the loop, before any of its work is queued. */
static uv_once_t config_once = UV_ONCE_INIT;

static void configure_sqlite(void) {
  (void)sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0); /* refused if already in use: harmless */
}

static void open_db(dg_store_t *s) {
  dg__sqlite_t *d = s->drv;
  uv_once(&config_once, configure_sqlite);
  s->work.data = s;
  if (s->read_path != NULL) {
    d->open_status = dg_errctx_set(&s->open_err, DG_ECONFIG, "server.readDatabase",
                                   "server.readDatabase: reads from hot standbys need a "
                                   "PostgreSQL server.database (postgresql://...), not a SQLite "
                                   "file");
  } else if (uv_key_create(&d->key) != 0) {
    d->open_status = dg_errctx_set(&s->open_err, DG_ENOMEM, "", "no thread-local key left");
  } else if (uv_mutex_init(&d->lock) != 0) {
    uv_key_delete(&d->key);
    d->open_status = dg_errctx_set(&s->open_err, DG_ENOMEM, "", "cannot create a lock");
  } else {
    d->ready = true;
  }
  /* Even a failed start completes through the threadpool, on a later turn. */
  uv_queue_work(s->loop, &s->work, open_work, open_after);
}

/* ---- Closing -------------------------------------------------------------------------------- */

static void close_work(uv_work_t *w) {
  dg_store_t *s = w->data;
  dg__sqlite_t *d = s->drv;
  uv_mutex_lock(&d->lock);
  while (d->conns != NULL) {
    dg__sqlite_conn_t *c = d->conns;
    d->conns = c->next;
    /* As SQLite advises before closing: refresh the planner's statistics
     * where the queries of this run showed a need, with a bounded scan. */
    sqlite3_exec(c->db, "PRAGMA analysis_limit=1000; PRAGMA optimize;", NULL, NULL, NULL);
    dg__sqlite_disconnect(c);
  }
  uv_mutex_unlock(&d->lock);
}

static void close_after(uv_work_t *w, int status) {
  dg_store_t *s = w->data;
  dg__sqlite_t *d = s->drv;
  uv_key_delete(&d->key);
  uv_mutex_destroy(&d->lock);
  dg__store_closed(s);
}

static void close_db(dg_store_t *s) {
  s->work.data = s;
  uv_queue_work(s->loop, &s->work, close_work, close_after);
}

static bool accepts(const char *path) {
  return strstr(path, "://") == NULL;
}

const dg__store_driver_t dg__store_sqlite = {
    .name = "sqlite",
    .state_size = sizeof(dg__sqlite_t),
    .accepts = accepts,
    .open = open_db,
    .submit = submit,
    .cancel = cancel,
    .close = close_db,
};
