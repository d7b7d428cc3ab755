/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The statements on the "_dg_submissions" table that SQLite and PostgreSQL
 * share, written once; each backend adds its own tail (PostgreSQL's lease
 * column, RETURNING). */
#include "store/internal.h"

void dg__sql_bind_text_or_null(dg__sql_t *sql, const char *text) {
  static const dg_store_value_t null_value = {.kind = DG_STORE_NULL};
  if (text != NULL)
    dg__sql_bind_text(sql, text);
  else
    dg__sql_bind(sql, &null_value);
}

void dg__sql_submission_insert(dg__sql_t *sql, const dg_store_submit_t *s, const char *entity_id,
                               const char *owner, const char *now, bool lease) {
  bool running = s->endpoint != NULL;
  const char *values[] = {s->submission_id,
                          s->write.model->name,
                          entity_id,
                          s->write.mode == DG_STORE_CREATE ? "Create" : "Update",
                          s->endpoint,
                          s->system,
                          s->principal,
                          s->idempotency_key,
                          s->fingerprint,
                          running ? "running" : "succeeded",
                          owner,
                          now,
                          running ? NULL : now};
  dg__sql_put(sql, "INSERT INTO \"_dg_submissions\" (id, model, entity_id, operation, endpoint, "
                   "system, principal, idempotency_key, fingerprint, status, owner, created_at, "
                   "finished_at");
  dg__sql_put(sql, lease ? ", lease_until) VALUES (" : ") VALUES (");
  for (size_t i = 0; i < DG_ARRAY_SIZE(values); i++) {
    dg__sql_put(sql, i ? ", " : "");
    dg__sql_bind_text_or_null(sql, values[i]);
  }
}

void dg__sql_submission_earlier(dg__sql_t *sql, const dg_store_submit_t *s) {
  dg__sql_put(sql, "SELECT id, entity_id, operation, status, outcome, fingerprint, model, "
                   "created_at, failed_action, reason, endpoint, system FROM \"_dg_submissions\" "
                   "WHERE principal = ");
  dg__sql_bind_text(sql, s->principal);
  dg__sql_put(sql, " AND idempotency_key = ");
  dg__sql_bind_text(sql, s->idempotency_key);
}

void dg__sql_submission_outcome(dg__sql_t *sql, const dg_store_finish_t *f, const char *now,
                                bool lease) {
  dg__sql_put(sql, "UPDATE \"_dg_submissions\" SET status = ");
  dg__sql_bind_text(sql, dg_store_submission_status_name(f->status));
  dg__sql_put(sql, ", failed_action = ");
  dg__sql_bind_text_or_null(sql, f->failed_action);
  dg__sql_put(sql, ", reason = ");
  dg__sql_bind_text_or_null(sql, f->reason);
  dg__sql_put(sql, ", outcome = ");
  dg__sql_bind_text_or_null(sql, f->outcome);
  dg__sql_put(sql, ", finished_at = ");
  dg__sql_bind_text(sql, now);
  dg__sql_put(sql, lease ? ", lease_until = NULL WHERE id = " : " WHERE id = ");
  dg__sql_bind_text(sql, f->submission_id);
}

void dg__sql_submission_interrupted(dg__sql_t *sql, const char *now, bool lease) {
  dg__sql_put(sql, "UPDATE \"_dg_submissions\" SET status = 'failed', reason = 'interrupted: the "
                   "gateway process stopped before the save tree finished; the external system "
                   "may hold part of the changes', finished_at = ");
  dg__sql_bind_text(sql, now);
  dg__sql_put(sql, lease ? ", lease_until = NULL WHERE status = 'running' AND "
                         : " WHERE status = 'running' AND ");
}

void dg__sql_submission_get(dg__sql_t *sql, const dg_store_submission_get_t *g,
                            const char *newest) {
  dg__sql_put(sql,
              "SELECT id, model, entity_id, operation, endpoint, system, status, "
              "failed_action, reason, created_at, finished_at FROM \"_dg_submissions\" WHERE ");
  if (g->submission_id != NULL) {
    dg__sql_put(sql, "id = ");
    dg__sql_bind_text(sql, g->submission_id);
    return;
  }
  dg__sql_put(sql, "model = ");
  dg__sql_bind_text(sql, g->model->name);
  dg__sql_put(sql, " AND entity_id = ");
  dg__sql_bind_text(sql, g->entity_id);
  dg__sql_put(sql, " ORDER BY ");
  dg__sql_put(sql, newest);
  dg__sql_put(sql, " DESC LIMIT 1");
}
