/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Form submissions on PostgreSQL (pg_internal.h), on one connection of
 * the pool, statement after statement without blocking the loop.
 *
 * Exactly once across a fleet: the submission row is claimed first, inside
 * the transaction, with INSERT ... ON CONFLICT DO NOTHING on the unique
 * (principal, idempotency_key). A second gateway inserting the same key
 * waits on the first one's uncommitted row; when that commits it inserts
 * nothing and replays the first outcome, when it rolls back it claims the
 * key itself. No timing window: the database's unique index decides.
 *
 * A running submission holds a lease (lease_until) that its gateway
 * renews; when the lease has expired the gateway is taken as gone, and any
 * gateway marks the submission failed ("interrupted"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/pg_internal.h"

typedef enum step {
  S_CLAIM,    /* BEGIN went with it, in one pipeline */
  S_REFS,     /* refs[i] exists */
  S_RECORD,   /* the record to modify exists */
  S_WRITE,    /* the record */
  S_CHILD,    /* children[i] is a line of the record */
  S_CHILD_GO, /* children[i] written or deleted */
  S_COMMIT,
  S_REPLAY_ROLLBACK, /* the key was claimed before: end the transaction */
  S_EARLIER,         /* read the first outcome */
  S_FAIL_ROLLBACK,
} step_t;

typedef struct submit {
  dg__pg_conn_t *conn;
  const dg_store_submit_t *s;
  char id[DG_UUID_LEN + 1];
  char owner[DG__STORE_OWNER_MAX];
  uint64_t lease_ms;
  char now[32]; /* bound by the claim, so kept until it is sent */
  step_t step;
  size_t i;
  json_t *result;
  dg_errctx_t err;
  int status;
  dg__pg_submit_cb cb;
  void *data;
} submit_t;

static void next(submit_t *st);

static void done(submit_t *st) {
  st->cb(st->status, st->status == 0 ? st->result : NULL, &st->err, st->data);
  if (st->status != 0)
    json_decref(st->result);
  free(st);
}

/* Ends with the failure in st->err, rolling back unless the connection
 * is gone (the server has rolled back then). */
static void fail(submit_t *st, int status) {
  st->status = status;
  if (dg__pg_conn_broken(st->conn)) {
    done(st);
    return;
  }
  st->step = S_FAIL_ROLLBACK;
  next(st);
}

/* ---- Statements ----------------------------------------------------------------------- */

static void claim(dg__sql_t *sql, submit_t *st) {
  const dg_store_submit_t *s = st->s;
  const char *now = st->now;
  dg_time_iso8601(st->now, sizeof(st->now));
  bool running = s->endpoint != NULL;
  dg__sql_submission_insert(sql, s, st->id, st->owner, now, true);
  dg__sql_put(sql, running ? ", now() + " : ", NULL");
  if (running) {
    dg__sql_bind_int(sql, (int64_t)st->lease_ms);
    dg__sql_put(sql, " * interval '1 millisecond'");
  }
  dg__sql_put(sql, ")");
  if (s->idempotency_key != NULL)
    dg__sql_put(sql, " ON CONFLICT (principal, idempotency_key) WHERE idempotency_key IS NOT NULL "
                     "DO NOTHING");
  dg__sql_put(sql, " RETURNING id");
}

static void exists(dg__sql_t *sql, const dg_model_t *m, const char *id, const dg_property_t *parent,
                   const char *parent_id) {
  dg__sql_put(sql, "SELECT 1 FROM ");
  dg__sql_ident(sql, NULL, m->name);
  dg__sql_put(sql, " WHERE id = ");
  dg__sql_bind_text(sql, id);
  if (parent != NULL) {
    dg__sql_put(sql, " AND ");
    dg__sql_ident(sql, NULL, parent->name);
    dg__sql_put(sql, " = ");
    dg__sql_bind_text(sql, parent_id);
  }
}

static void child_go(dg__sql_t *sql, const dg_store_child_change_t *c) {
  if (!c->remove) {
    dg__sql_write(sql, &c->write, c->write.id);
    return;
  }
  dg__sql_put(sql, "DELETE FROM ");
  dg__sql_ident(sql, NULL, c->write.model->name);
  dg__sql_put(sql, " WHERE id = ");
  dg__sql_bind_text(sql, c->write.id);
}

static void earlier(dg__sql_t *sql, const dg_store_submit_t *s) {
  dg__sql_submission_earlier(sql, s);
}

/* Skips to the next step that has something to do. */
static void skip_empty(submit_t *st) {
  const dg_store_submit_t *s = st->s;
  for (;;) {
    if (st->step == S_REFS && st->i >= s->nrefs) {
      st->step = S_RECORD;
      st->i = 0;
    } else if (st->step == S_RECORD && s->write.mode != DG_STORE_UPDATE)
      st->step = S_WRITE;
    else if ((st->step == S_CHILD || st->step == S_CHILD_GO) && st->i >= s->nchildren)
      st->step = S_COMMIT;
    else if (st->step == S_CHILD && s->children[st->i].write.mode == DG_STORE_CREATE)
      st->step = S_CHILD_GO;
    else
      return;
  }
}

static void build(submit_t *st, dg__sql_t *sql) {
  const dg_store_submit_t *s = st->s;
  switch (st->step) {
  case S_CLAIM:
    claim(sql, st);
    break;
  case S_REFS:
    exists(sql, s->refs[st->i].model, s->refs[st->i].id, NULL, NULL);
    break;
  case S_RECORD:
    exists(sql, s->write.model, st->id, NULL, NULL);
    break;
  case S_WRITE:
    dg__sql_write(sql, &s->write, st->id);
    break;
  case S_CHILD:
    exists(sql, s->children[st->i].write.model, s->children[st->i].write.id,
           s->children[st->i].parent, st->id);
    break;
  case S_CHILD_GO:
    child_go(sql, &s->children[st->i]);
    break;
  case S_EARLIER:
    earlier(sql, s);
    break;
  default:
    break;
  }
}

static const char *fixed_text(step_t step) {
  switch (step) {
  case S_COMMIT:
    return "COMMIT";
  case S_REPLAY_ROLLBACK:
  case S_FAIL_ROLLBACK:
    return "ROLLBACK";
  default:
    return NULL;
  }
}

static void on_result(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                      void *data);

static void next(submit_t *st) {
  skip_empty(st);
  dg_errctx_t err;
  dg_errctx_clear(&err);
  const char *text = fixed_text(st->step);
  int rc;
  if (text != NULL) {
    rc = dg__pg_exec(st->conn, text, on_result, st, &err);
  } else {
    dg__sql_t sql;
    dg__sql_init(&sql, &dg__sql_postgres);
    build(st, &sql);
    rc = dg__pg_query(st->conn, &sql, on_result, st, &err);
    dg__sql_free(&sql);
  }
  if (rc == 0)
    return;
  if (st->step == S_FAIL_ROLLBACK) {
    done(st);
    return;
  }
  st->err = err;
  fail(st, rc);
}

/* ---- Results ---------------------------------------------------------------------------- */

static const char *cell(const PGresult *res, int col) {
  return PQgetisnull(res, 0, col) ? NULL : PQgetvalue(res, 0, col);
}

static json_t *text_or_null(const PGresult *res, int col) {
  const char *s = cell(res, col);
  return s != NULL ? json_string(s) : json_null();
}

/* The first outcome of the caller's key, or DG_EEXIST when the key was
 * used for another request. Same shape as on SQLite. */
static int replay(submit_t *st, const PGresult *res) {
  const dg_store_submit_t *s = st->s;
  if (PQntuples(res) == 0)
    return dg_errctx_set(&st->err, DG_EIO, "", "The submission of this key disappeared.");
  const char *fp = cell(res, 5);
  if (s->fingerprint != NULL && strcmp(fp != NULL ? fp : "", s->fingerprint) != 0)
    return dg_errctx_set(&st->err, DG_EEXIST, "idempotencyKey",
                         "Invalid argument 'idempotencyKey': '%s' was already used for a "
                         "different submission (%s of %s %s at %s); use a new key for a new "
                         "submission.",
                         s->idempotency_key, cell(res, 2), cell(res, 6), cell(res, 1),
                         cell(res, 7));
  const char *outcome = cell(res, 4);
  json_t *parsed = outcome != NULL ? json_loads(outcome, 0, NULL) : NULL;
  st->result =
      json_pack("{s:s,s:s,s:b,s:s,s:o,s:o,s:o,s:o,s:b,s:o}", "submissionId", cell(res, 0), "id",
                cell(res, 1), "created", strcmp(cell(res, 2), "Create") == 0, "status",
                cell(res, 3), "failedAction", text_or_null(res, 8), "reason", text_or_null(res, 9),
                "endpoint", text_or_null(res, 10), "system", text_or_null(res, 11), "replayed", 1,
                "outcome", parsed != NULL ? parsed : json_null());
  return st->result != NULL ? 0 : dg_errctx_set(&st->err, DG_ENOMEM, "", "Out of memory.");
}

static int missing(submit_t *st) {
  const dg_store_submit_t *s = st->s;
  if (st->step == S_REFS) {
    const dg_store_ref_check_t *c = &s->refs[st->i];
    return dg_errctx_set(&st->err, DG_ENOENT, c->param,
                         "Invalid argument '%s': there is no %s entity with id '%s'; find the "
                         "entity with lookup_by_keyword or query_entities and give its id.",
                         c->param, c->model->name, c->id);
  }
  if (st->step == S_RECORD)
    return dg_errctx_set(&st->err, DG_ENOENT, "id",
                         "Invalid argument 'id': there is no %s entity with id '%s'; leave id "
                         "out to create a record.",
                         s->write.model->name, st->id);
  const dg_store_child_change_t *c = &s->children[st->i];
  return dg_errctx_set(&st->err, DG_ENOENT, c->param,
                       "Invalid argument '%s': '%s' is not a line of this %s record (no %s "
                       "entity with that id has %s = '%s'); give the id of one of its lines, "
                       "from get_data_entry_form.",
                       c->param, c->write.id, s->write.model->name, c->write.model->name,
                       c->parent->name, st->id);
}

static void fresh_result(submit_t *st) {
  const dg_store_submit_t *s = st->s;
  st->result = json_pack("{s:s,s:s,s:b,s:s,s:b}", "submissionId", s->submission_id, "id", st->id,
                         "created", s->write.mode == DG_STORE_CREATE, "status",
                         s->endpoint != NULL ? "running" : "succeeded", "replayed", 0);
}

/* Moves on after a step that succeeded. */
static void advance(submit_t *st, const PGresult *res) {
  switch (st->step) {
  case S_CLAIM:
    st->step = PQntuples(res) == 0 ? S_REPLAY_ROLLBACK : S_REFS;
    st->i = 0;
    break;
  case S_REFS:
  case S_RECORD:
  case S_CHILD:
    if (PQntuples(res) == 0) {
      fail(st, missing(st));
      return;
    }
    if (st->step == S_REFS)
      st->i++;
    else
      st->step = st->step == S_RECORD ? S_WRITE : S_CHILD_GO;
    break;
  case S_WRITE:
    st->step = S_CHILD;
    st->i = 0;
    break;
  case S_CHILD_GO:
    st->step = S_CHILD;
    st->i++;
    break;
  case S_COMMIT:
    fresh_result(st);
    done(st);
    return;
  case S_REPLAY_ROLLBACK:
    st->step = S_EARLIER;
    break;
  case S_EARLIER:
    st->status = replay(st, res);
    done(st);
    return;
  case S_FAIL_ROLLBACK:
    done(st);
    return;
  }
  next(st);
}

static void on_result(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                      void *data) {
  submit_t *st = data;
  (void)conn;
  if (status == 0) {
    advance(st, res);
    return;
  }
  if (st->step == S_FAIL_ROLLBACK) {
    done(st);
    return;
  }
  st->err = *err;
  if (status == DG_EEXIST && st->step == S_WRITE)
    dg_errctx_set(&st->err, DG_EEXIST, "id", "There is already a %s entity with id '%s'.",
                  st->s->write.model->name, st->id);
  fail(st, status);
}

int dg__pg_submit(dg__pg_conn_t *conn, const dg_store_submit_t *s, const char *owner,
                  uint64_t lease_ms, dg__pg_submit_cb cb, void *data, dg_errctx_t *err) {
  submit_t *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "", "Out of memory.");
  st->conn = conn;
  st->s = s;
  st->lease_ms = lease_ms;
  st->cb = cb;
  st->data = data;
  dg_strlcpy(st->owner, owner, sizeof(st->owner));
  if (s->write.id != NULL)
    dg_strlcpy(st->id, s->write.id, sizeof(st->id));
  else
    dg_uuid_v4(st->id);
  /* BEGIN and the claim in one pipeline: nothing is decided between them. */
  st->step = S_CLAIM;
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  claim(&sql, st);
  int rc = dg__pg_pipeline(conn, "BEGIN", &sql, NULL, on_result, st, err);
  dg__sql_free(&sql);
  if (rc != 0)
    free(st);
  return rc;
}

/* ---- Leases ------------------------------------------------------------------------------ */

/* The ids as one PostgreSQL text[] literal; submission ids are UUIDs, and
 * any other id is left out (its lease is then renewed as before). */
static int id_array(dg_buf_t *b, const char *const *ids, size_t n) {
  int rc = dg_buf_append_str(b, "{");
  size_t kept = 0;
  for (size_t i = 0; i < n && rc == 0; i++) {
    if (ids[i][0] == '\0' || strspn(ids[i], "0123456789abcdefABCDEF-") != strlen(ids[i]))
      continue;
    if (kept++ > 0)
      rc = dg_buf_append_str(b, ",");
    if (rc == 0)
      rc = dg_buf_append_str(b, ids[i]);
  }
  return rc == 0 ? dg_buf_append_str(b, "}") : rc;
}

int dg__pg_renew_leases(dg__pg_conn_t *conn, const char *owner, uint64_t lease_ms,
                        const char *const *skip, size_t nskip, dg__pg_query_cb cb, void *data,
                        dg_errctx_t *err) {
  dg_buf_t ids;
  dg_buf_init(&ids, 64 * 1024);
  int built = id_array(&ids, skip, nskip);
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_put(&sql, "UPDATE \"_dg_submissions\" SET lease_until = now() + ");
  dg__sql_bind_int(&sql, (int64_t)lease_ms);
  dg__sql_put(&sql, " * interval '1 millisecond' WHERE status = 'running' AND owner = ");
  dg__sql_bind_text(&sql, owner);
  dg__sql_put(&sql, " AND lease_until > now() AND NOT (id = ANY(CAST(");
  dg__sql_bind_text(&sql, built == 0 ? ids.data : "{}");
  dg__sql_put(&sql, " AS text[])))");
  int rc = built != 0
               ? dg_errctx_set(err, built, "", "The list of abandoned submissions is too long.")
               : dg__pg_query(conn, &sql, cb, data, err);
  dg__sql_free(&sql);
  dg_buf_free(&ids);
  return rc;
}

static void mark_interrupted(dg__sql_t *sql, const char *now) {
  dg__sql_submission_interrupted(sql, now, true);
}

int dg__pg_interrupt(dg__pg_conn_t *conn, const char *const *ids, size_t n, dg__pg_query_cb cb,
                     void *data, dg_errctx_t *err) {
  char now[32];
  dg_time_iso8601(now, sizeof(now));
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  mark_interrupted(&sql, now);
  dg__sql_put(&sql, "id IN (");
  for (size_t i = 0; i < n; i++) {
    dg__sql_put(&sql, i ? ", " : "");
    dg__sql_bind_text(&sql, ids[i]);
  }
  dg__sql_put(&sql, n == 0 ? "NULL) RETURNING id" : ") RETURNING id");
  int rc = dg__pg_query(conn, &sql, cb, data, err);
  dg__sql_free(&sql);
  return rc;
}

int dg__pg_recover_submissions(dg__pg_conn_t *conn, dg__pg_query_cb cb, void *data,
                               dg_errctx_t *err) {
  char now[32];
  dg_time_iso8601(now, sizeof(now));
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  mark_interrupted(&sql, now);
  dg__sql_put(&sql, "lease_until <= now() RETURNING id");
  int rc = dg__pg_query(conn, &sql, cb, data, err);
  dg__sql_free(&sql);
  return rc;
}

/* ---- Finish ------------------------------------------------------------------------------- */

typedef enum fstep {
  F_OUTCOME, /* BEGIN went with it, in one pipeline */
  F_WRITE,   /* writes[i], the values the save tree set */
  F_COMMIT,
  F_ROLLBACK,
} fstep_t;

typedef struct finish {
  dg__pg_conn_t *conn;
  const dg_store_finish_t *f;
  char now[32];
  fstep_t step;
  size_t i;
  int status;
  dg_errctx_t err;
  dg__pg_submit_cb cb;
  void *data;
} finish_t;

static void finish_next(finish_t *st);

static void finish_done(finish_t *st) {
  json_t *result = NULL;
  if (st->status == 0)
    result = json_pack("{s:s,s:s}", "submissionId", st->f->submission_id, "status",
                       dg_store_submission_status_name(st->f->status));
  st->cb(st->status, result, &st->err, st->data);
  free(st);
}

static void finish_fail(finish_t *st, int status) {
  st->status = status;
  if (dg__pg_conn_broken(st->conn)) {
    finish_done(st);
    return;
  }
  st->step = F_ROLLBACK;
  finish_next(st);
}

static void outcome(dg__sql_t *sql, finish_t *st) {
  const dg_store_finish_t *f = st->f;
  dg_time_iso8601(st->now, sizeof(st->now));
  dg__sql_submission_outcome(sql, f, st->now, true);
  dg__sql_put(sql, " RETURNING id");
}

static void on_finish_result(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                             void *data) {
  finish_t *st = data;
  (void)conn;
  if (st->step == F_ROLLBACK || (status == 0 && st->step == F_COMMIT)) {
    finish_done(st);
    return;
  }
  if (status != 0) {
    st->err = *err;
    finish_fail(st, status);
    return;
  }
  if (st->step == F_OUTCOME && PQntuples(res) == 0) {
    finish_fail(st, dg_errctx_set(&st->err, DG_ENOENT, "submissionId",
                                  "There is no submission '%s'.", st->f->submission_id));
    return;
  }
  if (st->step == F_WRITE && st->i + 1 >= st->f->nwrites) {
    finish_done(st); /* COMMIT went with the last write */
    return;
  }
  if (st->step == F_WRITE)
    st->i++;
  else
    st->step = st->f->nwrites > 0 ? F_WRITE : F_COMMIT;
  finish_next(st);
}

static void finish_next(finish_t *st) {
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc;
  if (st->step == F_COMMIT || st->step == F_ROLLBACK) {
    const char *text = st->step == F_COMMIT ? "COMMIT" : "ROLLBACK";
    rc = dg__pg_exec(st->conn, text, on_finish_result, st, &err);
  } else {
    dg__sql_t sql;
    dg__sql_init(&sql, &dg__sql_postgres);
    if (st->step == F_OUTCOME)
      outcome(&sql, st);
    else
      dg__sql_write(&sql, &st->f->writes[st->i], st->f->writes[st->i].id);
    /* The last write takes COMMIT along: nothing is decided after it. */
    bool last = st->step == F_WRITE && st->i + 1 >= st->f->nwrites;
    rc = last ? dg__pg_pipeline(st->conn, NULL, &sql, "COMMIT", on_finish_result, st, &err)
              : dg__pg_query(st->conn, &sql, on_finish_result, st, &err);
    dg__sql_free(&sql);
  }
  if (rc == 0)
    return;
  if (st->step == F_ROLLBACK) {
    finish_done(st);
    return;
  }
  st->err = err;
  finish_fail(st, rc);
}

int dg__pg_finish(dg__pg_conn_t *conn, const dg_store_finish_t *f, dg__pg_submit_cb cb, void *data,
                  dg_errctx_t *err) {
  finish_t *st = calloc(1, sizeof(*st));
  if (st == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "", "Out of memory.");
  st->conn = conn;
  st->f = f;
  st->cb = cb;
  st->data = data;
  /* BEGIN and the outcome in one pipeline. */
  st->step = F_OUTCOME;
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  outcome(&sql, st);
  int rc = dg__pg_pipeline(conn, "BEGIN", &sql, NULL, on_finish_result, st, err);
  dg__sql_free(&sql);
  if (rc != 0)
    free(st);
  return rc;
}

/* ---- Get ------------------------------------------------------------------------------------ */

int dg__pg_submission(dg__pg_conn_t *conn, const dg_store_submission_get_t *g, dg__pg_query_cb cb,
                      void *data, dg_errctx_t *err) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__sql_submission_get(&sql, g, "\"_seq\"");
  int rc = dg__pg_query(conn, &sql, cb, data, err);
  dg__sql_free(&sql);
  return rc;
}
