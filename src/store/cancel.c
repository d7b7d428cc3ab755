/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Cancels between the gateways of one database (store.h): the payload a
 * driver sends and hears, and the store's side of publishing and hearing.
 *
 * A payload comes from the database, which any of its users may write to,
 * so it is read strictly: a known version, exactly 64 lower-case hex
 * digits, an optional key of printable ASCII, nothing longer than a
 * cancel can be. Anything else is dropped without a word. */
#include <stdio.h>
#include <string.h>

#include "store/internal.h"

#define VERSION "c1 "
#define VERSION_LEN 3

static bool session_ok(const char *s, size_t n) {
  if (n != DG_STORE_CANCEL_SESSION_LEN)
    return false;
  for (size_t i = 0; i < n; i++) {
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  }
  return true;
}

static bool request_ok(const char *r, size_t n) {
  if (n == 0 || n > DG_STORE_CANCEL_REQUEST_MAX)
    return false;
  for (size_t i = 0; i < n; i++) {
    if (r[i] < 0x20 || r[i] > 0x7e)
      return false;
  }
  return true;
}

int dg__store_cancel_encode(const char *session, const char *request,
                            char out[DG__STORE_CANCEL_PAYLOAD_MAX + 1]) {
  out[0] = '\0';
  if (session == NULL || !session_ok(session, strnlen(session, DG_STORE_CANCEL_SESSION_LEN + 1)))
    return DG_EINVAL;
  if (request != NULL && !request_ok(request, strnlen(request, DG_STORE_CANCEL_REQUEST_MAX + 1)))
    return DG_EINVAL;
  snprintf(out, DG__STORE_CANCEL_PAYLOAD_MAX + 1, "%s%s%s%s", VERSION, session,
           request != NULL ? " " : "", request != NULL ? request : "");
  return 0;
}

bool dg__store_cancel_parse(const char *payload, char session[DG_STORE_CANCEL_SESSION_LEN + 1],
                            char request[DG_STORE_CANCEL_REQUEST_MAX + 1]) {
  session[0] = request[0] = '\0';
  size_t n = payload != NULL ? strnlen(payload, DG__STORE_CANCEL_PAYLOAD_MAX + 1) : 0;
  if (n < VERSION_LEN + DG_STORE_CANCEL_SESSION_LEN || n > DG__STORE_CANCEL_PAYLOAD_MAX ||
      memcmp(payload, VERSION, VERSION_LEN) != 0)
    return false;
  const char *s = payload + VERSION_LEN;
  const char *rest = s + DG_STORE_CANCEL_SESSION_LEN;
  size_t rest_len = n - VERSION_LEN - DG_STORE_CANCEL_SESSION_LEN;
  if (!session_ok(s, DG_STORE_CANCEL_SESSION_LEN))
    return false;
  if (rest_len > 0 && (rest[0] != ' ' || !request_ok(rest + 1, rest_len - 1)))
    return false;
  memcpy(session, s, DG_STORE_CANCEL_SESSION_LEN);
  session[DG_STORE_CANCEL_SESSION_LEN] = '\0';
  if (rest_len > 0) {
    memcpy(request, rest + 1, rest_len - 1);
    request[rest_len - 1] = '\0';
  }
  return true;
}

int dg_store_publish_cancel(dg_store_t *store, const char *session, const char *request) {
  char payload[DG__STORE_CANCEL_PAYLOAD_MAX + 1];
  int rc = dg__store_cancel_encode(session, request, payload);
  if (rc != 0)
    return rc;
  if (store->state != DG__STORE_OPEN)
    return DG_ECLOSED;
  if (store->driver->publish == NULL)
    return DG_ENOTSUP;
  return store->driver->publish(store, payload);
}

void dg_store_on_cancel(dg_store_t *store, dg_store_cancel_cb cb, void *data) {
  store->cancel_cb = cb;
  store->cancel_data = data;
}

void dg__store_cancel_heard(dg_store_t *store, const char *payload) {
  char session[DG_STORE_CANCEL_SESSION_LEN + 1];
  char request[DG_STORE_CANCEL_REQUEST_MAX + 1];
  if (store->cancel_cb == NULL || store->state != DG__STORE_OPEN ||
      !dg__store_cancel_parse(payload, session, request))
    return;
  store->cancel_cb(session, request[0] != '\0' ? request : NULL, store->cancel_data);
}
