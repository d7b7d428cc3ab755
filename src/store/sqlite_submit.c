/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Form submissions on SQLite (threadpool thread): the "_dg_submissions"
 * table, a submission written with its record in one write transaction,
 * its outcome written with the values the save tree set, the latest
 * submission of a record, and at open the submissions of processes that
 * are gone marked as interrupted. Every statement binds its values. */
#include <stdlib.h>
#include <string.h>

#include "store/sqlite_internal.h"

#define INTERRUPTED_MAX 10000 /* rows marked per start-up; more wait for the next */

static const char *const ddl[] = {
    "CREATE TABLE IF NOT EXISTS \"_dg_submissions\" (id TEXT PRIMARY KEY, model TEXT NOT NULL, "
    "entity_id TEXT NOT NULL, operation TEXT NOT NULL, endpoint TEXT, system TEXT, principal TEXT "
    "NOT NULL, idempotency_key TEXT, fingerprint TEXT, status TEXT NOT NULL, failed_action TEXT, "
    "reason TEXT, outcome TEXT, owner TEXT NOT NULL, created_at TEXT NOT NULL, finished_at TEXT) "
    "STRICT",
    "CREATE UNIQUE INDEX IF NOT EXISTS \"_dg_submissions_key\" ON \"_dg_submissions\" "
    "(principal, idempotency_key) WHERE idempotency_key IS NOT NULL",
    "CREATE INDEX IF NOT EXISTS \"_dg_submissions_entity\" ON \"_dg_submissions\" (model, "
    "entity_id)",
    "CREATE INDEX IF NOT EXISTS \"_dg_submissions_running\" ON \"_dg_submissions\" (status) "
    "WHERE status = 'running'",
};

int dg__sqlite_migrate_submissions(dg__sqlite_conn_t *conn, dg_errctx_t *err) {
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < DG_ARRAY_SIZE(ddl); i++)
    rc = dg__sqlite_exec(conn, ddl[i], err);
  return rc;
}

/* ---- Columns ------------------------------------------------------------------------- */

static const char *text_at(sqlite3_stmt *st, int col) {
  return (const char *)sqlite3_column_text(st, col);
}

static json_t *text_or_null(sqlite3_stmt *st, int col) {
  const char *s = text_at(st, col);
  return s != NULL ? json_string(s) : json_null();
}

/* ---- Submit ------------------------------------------------------------------------------ */

typedef struct earlier {
  json_t *result;
  char fingerprint[128];
  char what[256];
} earlier_t;

static int earlier_row(dg__sqlite_run_t *run, sqlite3_stmt *st, void *data) {
  earlier_t *e = data;
  const char *outcome = text_at(st, 4);
  json_t *parsed = outcome ? json_loads(outcome, 0, NULL) : NULL;
  e->result =
      json_pack("{s:s,s:s,s:b,s:s,s:o,s:o,s:o,s:o,s:b,s:o}", "submissionId", text_at(st, 0), "id",
                text_at(st, 1), "created", strcmp(text_at(st, 2), "Create") == 0, "status",
                text_at(st, 3), "failedAction", text_or_null(st, 8), "reason", text_or_null(st, 9),
                "endpoint", text_or_null(st, 10), "system", text_or_null(st, 11), "replayed", 1,
                "outcome", parsed ? parsed : json_null());
  dg_strlcpy(e->fingerprint, text_at(st, 5) ? text_at(st, 5) : "", sizeof(e->fingerprint));
  snprintf(e->what, sizeof(e->what), "%s of %s %s at %s", text_at(st, 2), text_at(st, 6),
           text_at(st, 1), text_at(st, 7));
  return e->result != NULL ? 0 : DG_ENOMEM;
}

/* The first submission with the caller's key, when there is one. */
static int find_earlier(dg__sqlite_run_t *run, const dg_store_submit_t *s, earlier_t *e) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_submission_earlier(&sql, s);
  int rc = dg__sqlite_each_row(run, &sql, earlier_row, e);
  dg__sql_free(&sql);
  if (rc == DG_ENOMEM)
    return dg__sqlite_oom(run);
  if (rc == 0 && e->result != NULL && s->fingerprint != NULL &&
      strcmp(e->fingerprint, s->fingerprint) != 0)
    rc = dg_errctx_set(run->err, DG_EEXIST, "idempotencyKey",
                       "Invalid argument 'idempotencyKey': '%s' was already used for a different "
                       "submission (%s); use a new key for a new submission.",
                       s->idempotency_key, e->what);
  return rc;
}

/* Whether m has an entity with this id. A write checks with the by-id
 * SELECT its debug log shows (sqlite_exec.c); submissions keep their own,
 * shorter statement, which is never logged. */
static int exists(dg__sqlite_run_t *run, const dg_model_t *m, const char *id, bool *found) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_put(&sql, "SELECT 1 FROM ");
  dg__sql_ident(&sql, NULL, m->name);
  dg__sql_put(&sql, " WHERE id = ");
  dg__sql_bind_text(&sql, id);
  int rc = dg__sqlite_has_row(run, &sql, found);
  dg__sql_free(&sql);
  return rc;
}

static int check_refs(dg__sqlite_run_t *run, const dg_store_submit_t *s) {
  for (size_t i = 0; i < s->nrefs; i++) {
    const dg_store_ref_check_t *c = &s->refs[i];
    bool found = false;
    int rc = exists(run, c->model, c->id, &found);
    if (rc != 0)
      return rc;
    if (!found)
      return dg_errctx_set(run->err, DG_ENOENT, c->param,
                           "Invalid argument '%s': there is no %s entity with id '%s'; find the "
                           "entity with lookup_by_keyword or query_entities and give its id.",
                           c->param, c->model->name, c->id);
  }
  return 0;
}

static int write_record(dg__sqlite_run_t *run, const dg_store_write_t *w, const char *id) {
  if (w->mode == DG_STORE_UPDATE) {
    bool found = false;
    int rc = exists(run, w->model, id, &found);
    if (rc != 0)
      return rc;
    if (!found)
      return dg_errctx_set(run->err, DG_ENOENT, "id",
                           "Invalid argument 'id': there is no %s entity with id '%s'; leave id "
                           "out to create a record.",
                           w->model->name, id);
  }
  return dg__sqlite_write_entity(run, w, id);
}

/* Whether the line id of the child model has its parent reference set to parent_id. */
static int child_of(dg__sqlite_run_t *run, const dg_store_child_change_t *c, const char *parent_id,
                    bool *found) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_put(&sql, "SELECT 1 FROM ");
  dg__sql_ident(&sql, NULL, c->write.model->name);
  dg__sql_put(&sql, " WHERE id = ");
  dg__sql_bind_text(&sql, c->write.id);
  dg__sql_put(&sql, " AND ");
  dg__sql_ident(&sql, NULL, c->parent->name);
  dg__sql_put(&sql, " = ");
  dg__sql_bind_text(&sql, parent_id);
  int rc = dg__sqlite_has_row(run, &sql, found);
  dg__sql_free(&sql);
  return rc;
}

static int delete_line(dg__sqlite_run_t *run, const dg_store_child_change_t *c) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_put(&sql, "DELETE FROM ");
  dg__sql_ident(&sql, NULL, c->write.model->name);
  dg__sql_put(&sql, " WHERE id = ");
  dg__sql_bind_text(&sql, c->write.id);
  int rc = dg__sqlite_each_row(run, &sql, NULL, NULL);
  dg__sql_free(&sql);
  return rc;
}

/* One line of a child list: added, or modified or removed when it is a
 * line of the record (checked here too, inside the transaction). */
static int write_child(dg__sqlite_run_t *run, const dg_store_child_change_t *c,
                       const char *parent_id) {
  if (c->write.mode == DG_STORE_CREATE)
    return dg__sqlite_write_entity(run, &c->write, c->write.id);
  bool found = false;
  int rc = child_of(run, c, parent_id, &found);
  if (rc == 0 && !found)
    rc = dg_errctx_set(run->err, DG_ENOENT, c->param,
                       "Invalid argument '%s': '%s' is not a line of this %s record (no %s "
                       "entity with that id has %s = '%s'); give the id of one of its lines, "
                       "from get_data_entry_form.",
                       c->param, c->write.id, run->r->in.submit->write.model->name,
                       c->write.model->name, c->parent->name, parent_id);
  if (rc == 0)
    rc = c->remove ? delete_line(run, c) : dg__sqlite_write_entity(run, &c->write, c->write.id);
  return rc;
}

static int insert_row(dg__sqlite_run_t *run, const char *id) {
  const dg_store_submit_t *s = run->r->in.submit;
  char now[32];
  dg_time_iso8601(now, sizeof(now));
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_submission_insert(&sql, s, id, run->r->store->owner, now, false);
  dg__sql_put(&sql, ")");
  int rc = dg__sqlite_each_row(run, &sql, NULL, NULL);
  dg__sql_free(&sql);
  return rc;
}

static int submit_locked(dg__sqlite_run_t *run, const char *id, earlier_t *e) {
  const dg_store_submit_t *s = run->r->in.submit;
  int rc = s->idempotency_key != NULL ? find_earlier(run, s, e) : 0;
  if (rc != 0 || e->result != NULL)
    return rc;
  rc = check_refs(run, s);
  if (rc == 0)
    rc = write_record(run, &s->write, id);
  for (size_t i = 0; rc == 0 && i < s->nchildren; i++)
    rc = write_child(run, &s->children[i], id);
  if (rc == 0)
    rc = insert_row(run, id);
  return rc;
}

int dg__sqlite_submit(dg__sqlite_run_t *run) {
  dg_store_req_t *r = run->r;
  const dg_store_submit_t *s = r->in.submit;
  char fresh[DG_UUID_LEN + 1];
  const char *id = s->write.id;
  if (id == NULL) {
    dg_uuid_v4(fresh);
    id = fresh;
  }
  earlier_t e = {0};
  int rc = dg__sqlite_begin_write(run);
  if (rc == 0)
    rc = dg__sqlite_end_write(run, submit_locked(run, id, &e));
  if (rc == 0 && e.result != NULL) {
    r->result = e.result;
    return 0;
  }
  json_decref(e.result);
  if (rc == 0)
    r->result = json_pack("{s:s,s:s,s:b,s:s,s:b}", "submissionId", s->submission_id, "id", id,
                          "created", s->write.mode == DG_STORE_CREATE, "status",
                          s->endpoint != NULL ? "running" : "succeeded", "replayed", 0);
  return rc;
}

/* ---- Finish -------------------------------------------------------------------------------- */

/* Writes the outcome; 0 changes means there is no such submission. */
static int write_outcome(dg__sqlite_run_t *run, const dg_store_finish_t *f, int *changes) {
  char now[32];
  dg_time_iso8601(now, sizeof(now));
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_submission_outcome(&sql, f, now, false);
  int rc = dg__sqlite_each_row(run, &sql, NULL, NULL);
  *changes = sqlite3_changes(run->conn->db);
  dg__sql_free(&sql);
  return rc;
}

static int finish_locked(dg__sqlite_run_t *run, const dg_store_finish_t *f) {
  int changes = 0;
  int rc = write_outcome(run, f, &changes);
  if (rc == 0 && changes == 0)
    rc = dg_errctx_set(run->err, DG_ENOENT, "submissionId", "There is no submission '%s'.",
                       f->submission_id);
  for (size_t i = 0; rc == 0 && i < f->nwrites; i++)
    rc = dg__sqlite_write_entity(run, &f->writes[i], f->writes[i].id);
  return rc;
}

int dg__sqlite_finish(dg__sqlite_run_t *run) {
  const dg_store_finish_t *f = run->r->in.finish;
  int rc = dg__sqlite_begin_write(run);
  if (rc == 0)
    rc = dg__sqlite_end_write(run, finish_locked(run, f));
  if (rc == 0)
    run->r->result = json_pack("{s:s,s:s}", "submissionId", f->submission_id, "status",
                               dg_store_submission_status_name(f->status));
  return rc;
}

/* ---- Get ------------------------------------------------------------------------------------- */

static int submission_row(dg__sqlite_run_t *run, sqlite3_stmt *st, void *data) {
  static const char *const keys[] = {"submissionId", "dataModel", "entityId",  "operation",
                                     "endpoint",     "system",    "status",    "failedAction",
                                     "reason",       "createdAt", "finishedAt"};
  json_t *s = json_object();
  for (size_t i = 0; s != NULL && i < DG_ARRAY_SIZE(keys); i++) {
    if (json_object_set_new(s, keys[i], text_or_null(st, (int)i)) != 0) {
      json_decref(s);
      s = NULL;
    }
  }
  *(json_t **)data = s;
  return s != NULL ? 0 : DG_ENOMEM;
}

int dg__sqlite_submission(dg__sqlite_run_t *run) {
  dg_store_req_t *r = run->r;
  const dg_store_submission_get_t *g = r->in.submission;
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_submission_get(&sql, g, "rowid");
  json_t *found = NULL;
  int rc = dg__sqlite_each_row(run, &sql, submission_row, &found);
  dg__sql_free(&sql);
  if (rc == DG_ENOMEM)
    rc = dg__sqlite_oom(run);
  if (rc == 0)
    r->result = json_pack("{s:o}", "submission", found ? found : json_null());
  else
    json_decref(found);
  return rc;
}

/* ---- Recovery at open ------------------------------------------------------------------------ */

typedef struct running {
  json_t *dead; /* ids */
  const char *self;
} running_t;

static int running_row(dg__sqlite_run_t *run, sqlite3_stmt *st, void *data) {
  running_t *rr = data;
  if (json_array_size(rr->dead) >= INTERRUPTED_MAX ||
      dg__store_owner_alive(text_at(st, 1), rr->self))
    return 0;
  return json_array_append_new(rr->dead, json_string(text_at(st, 0))) == 0 ? 0 : DG_ENOMEM;
}

static int mark_interrupted(dg__sqlite_run_t *run, const char *id) {
  char now[32];
  dg_time_iso8601(now, sizeof(now));
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_submission_interrupted(&sql, now, false);
  dg__sql_put(&sql, "id = ");
  dg__sql_bind_text(&sql, id);
  int rc = dg__sqlite_each_row(run, &sql, NULL, NULL);
  dg__sql_free(&sql);
  return rc;
}

static int find_running(dg__sqlite_run_t *run, running_t *rr) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_put(&sql, "SELECT id, owner FROM \"_dg_submissions\" WHERE status = 'running'");
  int rc = dg__sqlite_each_row(run, &sql, running_row, rr);
  dg__sql_free(&sql);
  return rc == DG_ENOMEM ? dg__sqlite_oom(run) : rc;
}

static int recover_locked(dg__sqlite_run_t *run, running_t *rr) {
  int rc = find_running(run, rr);
  for (size_t i = 0; rc == 0 && i < json_array_size(rr->dead); i++)
    rc = mark_interrupted(run, json_string_value(json_array_get(rr->dead, i)));
  return rc;
}

int dg__sqlite_recover_submissions(dg__sqlite_conn_t *conn, const char *self, json_t *notes,
                                   dg_errctx_t *err) {
  dg__sqlite_run_t run = {.conn = conn, .err = err}; /* no request: nothing logged */
  running_t rr = {.dead = json_array(), .self = self};
  if (rr.dead == NULL)
    return dg__sqlite_oom(&run);
  int rc = dg__sqlite_begin_write(&run);
  if (rc == 0)
    rc = dg__sqlite_end_write(&run, recover_locked(&run, &rr));
  size_t n = json_array_size(rr.dead);
  if (rc == 0 && n > 0)
    json_array_append_new(
        notes, json_pack("{s:s,s:I,s:O,s:s}", "event", "submissions_interrupted", "count",
                         (json_int_t)n, "submissions", rr.dead, "msg",
                         "submissions left running by a process that stopped are marked failed"));
  json_decref(rr.dead);
  return rc;
}
