/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Cancels between gateways on PostgreSQL (store.h): every store LISTENs on
 * one channel from its open, and a cancel is a NOTIFY on it, sent on a
 * connection of the pool and forgotten. */
#include <stdlib.h>
#include <string.h>

#include "store/pg_internal.h"

typedef struct publish {
  char payload[DG__STORE_CANCEL_PAYLOAD_MAX + 1];
} publish_t;

static void on_notify(const char *channel, const char *payload, void *data) {
  (void)channel;
  dg__store_cancel_heard(data, payload);
}

int dg__pg_cancel_listen(dg__pg_pool_t *pool, dg_store_t *store) {
  return dg__pg_listen(pool, DG__PG_CANCEL_CHANNEL, on_notify, store);
}

static void publish_failed(const char *why) {
  dg_log_json(DG_LOG_WARN, "cancel_not_published",
              json_pack("{s:s}", "msg", why != NULL ? why : "unknown"));
}

static void on_notified(dg__pg_conn_t *conn, int status, PGresult *res, const dg_errctx_t *err,
                        void *data) {
  (void)res;
  if (status != 0)
    publish_failed(err != NULL ? err->message : NULL);
  dg__pg_release(conn);
  free(data);
}

static void on_conn(dg__pg_conn_t *conn, int status, const dg_errctx_t *err, void *data) {
  publish_t *p = data;
  dg_errctx_t e;
  if (status != 0) {
    if (status != DG_ECANCELED) /* the pool closes */
      publish_failed(err != NULL ? err->message : NULL);
    free(p);
    return;
  }
  if (dg__pg_notify(conn, DG__PG_CANCEL_CHANNEL, p->payload, on_notified, p, &e) != 0) {
    publish_failed(e.message);
    dg__pg_release(conn);
    free(p);
  }
}

int dg__pg_cancel_publish(dg__pg_pool_t *pool, const char *payload) {
  publish_t *p = malloc(sizeof(*p));
  if (p == NULL)
    return DG_ENOMEM;
  dg_strlcpy(p->payload, payload, sizeof(p->payload));
  int rc = dg__pg_acquire(pool, on_conn, p);
  if (rc != 0)
    free(p);
  return rc;
}
