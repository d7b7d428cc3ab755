/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* OAuth 2.0 client credentials (RFC 6749 4.4) for connectors: one cache
 * entry per set of credentials holds the access token until shortly before
 * it expires. Calls that need a token while none is valid wait on the
 * entry; the first of them starts the token request and all of them go on
 * (or fail, saying why) when it ends. A 401 to a cached token drops it and
 * fetches a new one, once per call. Tokens and client secrets are wiped
 * when freed and never logged. */
#include <mbedtls/base64.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "save/internal.h"

/* Without expires_in a token is trusted this long. */
#define DEFAULT_TOKEN_TTL_MS (5u * 60u * 1000u)
#define MAX_TOKEN_BYTES 16384

struct dg__save_token {
  dg_connectors_t *cs;
  char key[65];        /* hex SHA-256 of the credentials and where they go */
  char *value;         /* the access token, or NULL */
  uint64_t expires_ms; /* renewal time: expiry less the connector's skew */
  uint64_t skew_ms;
  uint64_t used_ms;
  dg_http_call_t *fetch; /* token request in flight */
  unsigned users;        /* calls holding this entry, until they complete */
  char *token_url;       /* for messages */
  char *connector;       /* for messages */
  dg_connector_call_t *waiters, *waiters_tail;
  dg__save_token_t *next;
};

/* ---- Entries ----------------------------------------------------------------- */

static void wipe(char *s) {
  if (s != NULL)
    memset(s, 0, strlen(s));
  free(s);
}

static void drop_value(dg__save_token_t *t) {
  wipe(t->value);
  t->value = NULL;
  t->expires_ms = 0;
}

/* Everything that makes a token valid for a connector: a change of any of
 * them (on reload) means a new entry. */
static void credentials_key(const dg_connector_t *conn, char out[65]) {
  static const char hex[] = "0123456789abcdef";
  const dg_connector_auth_t *a = &conn->auth;
  dg_buf_t b;
  dg_buf_init(&b, SIZE_MAX - 1);
  dg_buf_appendf(&b, "%s\n%s\n%s\n%s\n%s\n%d\n", conn->id, a->token_url ? a->token_url : "",
                 a->client_id.value ? a->client_id.value : "",
                 a->client_secret.value ? a->client_secret.value : "",
                 a->audience ? a->audience : "", a->client_secret_in_body);
  for (size_t i = 0; i < a->nscopes; i++)
    dg_buf_appendf(&b, "%s ", a->scopes[i]);
  unsigned char d[32];
  dg_sha256(b.data ? b.data : "", b.len, d);
  if (b.data != NULL)
    memset(b.data, 0, b.len);
  dg_buf_free(&b);
  for (size_t i = 0; i < 32; i++) {
    out[2 * i] = hex[d[i] >> 4];
    out[2 * i + 1] = hex[d[i] & 15];
  }
  out[64] = '\0';
}

static void free_token(dg__save_token_t *t) {
  drop_value(t);
  free(t->token_url);
  free(t->connector);
  free(t);
}

static bool idle(const dg__save_token_t *t) {
  return t->fetch == NULL && t->waiters == NULL && t->users == 0;
}

/* Keeps the cache bounded: drops the least recently used idle entry. */
static void evict(dg_connectors_t *cs) {
  dg__save_token_t **oldest = NULL;
  for (dg__save_token_t **p = &cs->tokens; *p != NULL; p = &(*p)->next) {
    if (idle(*p) && (oldest == NULL || (*p)->used_ms < (*oldest)->used_ms))
      oldest = p;
  }
  if (oldest == NULL)
    return;
  dg__save_token_t *t = *oldest;
  *oldest = t->next;
  free_token(t);
  cs->ntokens--;
}

static dg__save_token_t *find_or_add(dg_connectors_t *cs, const dg_connector_t *conn) {
  char key[65];
  credentials_key(conn, key);
  for (dg__save_token_t *t = cs->tokens; t != NULL; t = t->next) {
    if (strcmp(t->key, key) == 0)
      return t;
  }
  if (cs->ntokens >= DG__SAVE_MAX_TOKENS)
    evict(cs);
  dg__save_token_t *t = calloc(1, sizeof(*t));
  if (t == NULL)
    return NULL;
  memcpy(t->key, key, sizeof(key));
  t->cs = cs;
  t->token_url = strdup(conn->auth.token_url);
  t->connector = strdup(conn->name);
  if (t->token_url == NULL || t->connector == NULL) {
    free_token(t);
    return NULL;
  }
  t->next = cs->tokens;
  cs->tokens = t;
  cs->ntokens++;
  return t;
}

/* ---- Waiters ---------------------------------------------------------------- */

static void add_waiter(dg__save_token_t *t, dg_connector_call_t *call) {
  DG_QUEUE_PUSH(t->waiters, t->waiters_tail, call, next_waiter);
}

void dg__save_oauth_forget(dg_connector_call_t *call) {
  dg__save_token_t *t = call->token;
  if (t == NULL || call->state != DG__SAVE_CALL_WAIT_TOKEN)
    return;
  dg_connector_call_t *prev = NULL;
  for (dg_connector_call_t *c = t->waiters; c != NULL; prev = c, c = c->next_waiter) {
    if (c != call)
      continue;
    if (prev != NULL)
      prev->next_waiter = c->next_waiter;
    else
      t->waiters = c->next_waiter;
    if (t->waiters_tail == c)
      t->waiters_tail = prev;
    return;
  }
}

/* Takes the waiters off the entry, so that what they do next (a new
 * acquire, a cancel) sees a clean list. */
static dg_connector_call_t *take_waiters(dg__save_token_t *t) {
  dg_connector_call_t *list = t->waiters;
  t->waiters = t->waiters_tail = NULL;
  return list;
}

static void fail_waiters(dg__save_token_t *t, int rc, const dg_errctx_t *err) {
  dg_connector_call_t *c = take_waiters(t);
  while (c != NULL) {
    dg_connector_call_t *next = c->next_waiter;
    c->err = *err;
    dg__save_call_defer(c, rc);
    c = next;
  }
}

static void wipe_string(void *data) {
  memset(data, 0, strlen(data));
}

static void send_with_token(dg_connector_call_t *call, const dg__save_token_t *t) {
  call->bearer = dg_arena_strdup(call->arena, t->value);
  if (call->bearer != NULL && dg_arena_defer(call->arena, wipe_string, call->bearer) != 0)
    call->bearer = NULL;
  if (call->bearer == NULL) {
    dg_errctx_set(&call->err, DG_ENOMEM, "upstream", "upstream '%s': out of memory",
                  call->conn->name);
    dg__save_call_defer(call, DG_ENOMEM);
    return;
  }
  dg__save_call_send(call);
}

static void release_waiters(dg__save_token_t *t) {
  dg_connector_call_t *c = take_waiters(t);
  while (c != NULL) {
    dg_connector_call_t *next = c->next_waiter;
    send_with_token(c, t);
    c = next;
  }
}

/* ---- The token response ------------------------------------------------------------ */

static int token_problem(dg__save_token_t *t, dg_errctx_t *err, const char *what) {
  return dg_errctx_set(err, DG_EAUTH, "upstream",
                       "upstream '%s' could not get an OAuth access token: the response of POST "
                       "%s %s",
                       t->connector, t->token_url, what);
}

/* Reads access_token, token_type and expires_in (a number or a numeric
 * string) from a token response. */
static int read_token(dg__save_token_t *t, const dg_http_response_t *res, dg_errctx_t *err) {
  json_t *doc = json_loadb(res->body, res->body_len, 0, NULL);
  const char *token = json_string_value(json_object_get(doc, "access_token"));
  const char *type = json_string_value(json_object_get(doc, "token_type"));
  const json_t *expires = json_object_get(doc, "expires_in");
  int64_t secs = -1;
  if (json_is_integer(expires))
    secs = json_integer_value(expires);
  else if (json_is_string(expires) &&
           !dg_parse_int64(json_string_value(expires), 0, INT32_MAX, &secs))
    secs = -2;
  int rc = 0;
  if (doc == NULL)
    rc = token_problem(t, err, "is not a JSON object");
  else if (token == NULL || token[0] == '\0' || strlen(token) > MAX_TOKEN_BYTES ||
           strpbrk(token, "\r\n") != NULL)
    rc = token_problem(t, err, "has no usable access_token");
  else if (type != NULL && strcasecmp(type, "bearer") != 0)
    rc = token_problem(t, err, "has a token_type other than Bearer");
  else if (secs == -2 || secs == 0 || secs < -1)
    rc = token_problem(t, err, "has an invalid expires_in");
  if (rc == 0) {
    uint64_t now = dg_now_ms();
    uint64_t ttl = secs > 0 ? (uint64_t)secs * 1000u : DEFAULT_TOKEN_TTL_MS;
    /* Renew early, but never spend more than half a token's life. */
    uint64_t skew = t->skew_ms < ttl / 2 ? t->skew_ms : ttl / 2;
    drop_value(t);
    t->value = strdup(token);
    t->expires_ms = now + ttl - skew;
    rc = t->value ? 0 : dg_errctx_set(err, DG_ENOMEM, "upstream", "out of memory");
  }
  json_decref(doc);
  return rc;
}

/* ---- The token request ---------------------------------------------------------------- */

static void on_fetch_done(dg_http_call_t *http, const dg_http_result_t *result, void *user) {
  dg__save_token_t *t = user;
  dg_connectors_t *cs = t->cs;
  dg_errctx_t err;
  t->fetch = NULL;
  cs->nfetches--;
  int rc = result->rc;
  if (rc != 0)
    dg_errctx_set(&err, rc == DG_ECANCELED ? rc : DG_EAUTH, "upstream",
                  "upstream '%s' could not get an OAuth access token: %s", t->connector,
                  result->err->message);
  else
    rc = read_token(t, result->response, &err);
  if (rc == 0)
    release_waiters(t);
  else
    fail_waiters(t, err.code, &err);
  dg__save_maybe_free(cs);
}

static int append_param(dg_buf_t *b, const char *name, const char *value) {
  int rc = dg_buf_appendf(b, "&%s=", name);
  return rc == 0 ? dg_template_append_encoded(b, value, strlen(value), false) : rc;
}

/* grant_type, scope and audience; the client's credentials too when the
 * connector sends them in the form rather than with Basic. */
static int token_form(const dg_connector_auth_t *a, dg_buf_t *b) {
  int rc = dg_buf_append_str(b, "grant_type=client_credentials");
  if (rc == 0 && a->nscopes > 0) {
    rc = dg_buf_append_str(b, "&scope=");
    for (size_t i = 0; rc == 0 && i < a->nscopes; i++) {
      rc = i > 0 ? dg_buf_append_str(b, "%20") : 0;
      if (rc == 0)
        rc = dg_template_append_encoded(b, a->scopes[i], strlen(a->scopes[i]), false);
    }
  }
  if (rc == 0 && a->audience != NULL)
    rc = append_param(b, "audience", a->audience);
  if (rc == 0 && a->client_secret_in_body)
    rc = append_param(b, "client_id", a->client_id.value);
  if (rc == 0 && a->client_secret_in_body)
    rc = append_param(b, "client_secret", a->client_secret.value);
  return rc;
}

/* "Basic base64(urlencode(id):urlencode(secret))" (RFC 6749 2.3.1). */
static int basic_header(const dg_connector_auth_t *a, dg_buf_t *out) {
  dg_buf_t pair;
  dg_buf_init(&pair, 8192);
  int rc = dg_template_append_encoded(&pair, a->client_id.value, strlen(a->client_id.value), false);
  if (rc == 0)
    rc = dg_buf_append(&pair, ":", 1);
  if (rc == 0)
    rc = dg_template_append_encoded(&pair, a->client_secret.value, strlen(a->client_secret.value),
                                    false);
  size_t need = (pair.len + 2) / 3 * 4 + 1, olen = 0;
  if (rc == 0)
    rc = dg_buf_append_str(out, "Basic ");
  if (rc == 0)
    rc = dg_buf_reserve(out, need);
  if (rc == 0 && mbedtls_base64_encode((unsigned char *)out->data + out->len, need, &olen,
                                       (const unsigned char *)pair.data, pair.len) != 0)
    rc = DG_EINVAL;
  if (rc == 0) {
    out->len += olen;
    out->data[out->len] = '\0';
  }
  if (pair.data != NULL)
    memset(pair.data, 0, pair.len);
  dg_buf_free(&pair);
  return rc;
}

static void wipe_buf(dg_buf_t *b) {
  if (b->data != NULL)
    memset(b->data, 0, b->len);
  dg_buf_free(b);
}

static int start_fetch(dg__save_token_t *t, dg_connector_call_t *call, dg_errctx_t *err) {
  const dg_connector_auth_t *a = &call->conn->auth;
  dg_buf_t form, basic;
  dg_buf_init(&form, 16384);
  dg_buf_init(&basic, 8192);
  int rc = token_form(a, &form);
  if (rc == 0 && !a->client_secret_in_body)
    rc = basic_header(a, &basic);
  dg_http_header_t h[3] = {{"Content-Type", "application/x-www-form-urlencoded"},
                           {"Accept", "application/json"},
                           {"Authorization", basic.data}};
  dg_http_client_request_t r;
  dg_http_client_request_init(&r);
  dg__save_request_options(call->conn, &r);
  r.method = "POST";
  r.url = a->token_url;
  r.headers = h;
  r.nheaders = a->client_secret_in_body ? 2 : 3;
  r.body = form.data;
  r.body_len = form.len;
  r.request_id = call->req.request_id;
  r.trace_id = call->req.trace_id;
  r.retry_unsafe = true; /* asking for a token again changes nothing */
  r.done = on_fetch_done;
  r.user = t;
  if (rc == 0)
    rc = dg_http_client_request(call->client, &r, &t->fetch, err);
  else
    dg_errctx_set(err, rc, "upstream", "upstream '%s': the token request is too large",
                  t->connector);
  wipe_buf(&form);
  wipe_buf(&basic);
  if (rc == 0) {
    t->skew_ms = a->token_refresh_skew_ms;
    t->cs->nfetches++;
  }
  return rc;
}

/* ---- Acquiring ---------------------------------------------------------------------------- */

void dg__save_oauth_acquire(dg_connector_call_t *call) {
  dg_connectors_t *cs = call->cs;
  dg__save_token_t *t = call->token ? call->token : find_or_add(cs, call->conn);
  if (t == NULL) {
    dg_errctx_set(&call->err, DG_ENOMEM, "upstream", "upstream '%s': out of memory",
                  call->conn->name);
    dg__save_call_defer(call, DG_ENOMEM);
    return;
  }
  if (call->token == NULL)
    t->users++;
  call->token = t;
  t->used_ms = dg_now_ms();
  if (t->value != NULL && t->used_ms < t->expires_ms) {
    send_with_token(call, t);
    return;
  }
  dg__save_call_set_state(call, DG__SAVE_CALL_WAIT_TOKEN);
  add_waiter(t, call);
  dg_errctx_t err;
  if (t->fetch == NULL && start_fetch(t, call, &err) != 0)
    fail_waiters(t, err.code, &err);
}

void dg__save_oauth_refresh(dg_connector_call_t *call) {
  dg__save_token_t *t = call->token;
  call->refreshed = true;
  /* Another call may have replaced the token already; then it is used. */
  if (t->value != NULL && call->bearer != NULL && strcmp(t->value, call->bearer) == 0)
    drop_value(t);
  dg_log_json(DG_LOG_INFO, "oauth_token_refresh",
              json_pack("{s:s,s:s}", "connector", call->conn->name, "reason",
                        "the API answered 401 to a cached token"));
  dg__save_oauth_acquire(call);
}

void dg__save_oauth_release(dg_connector_call_t *call) {
  if (call->token != NULL)
    call->token->users--;
  call->token = NULL;
}

/* ---- The cache as a whole ------------------------------------------------------------------- */

void dg__save_oauth_cancel_all(dg_connectors_t *cs) {
  for (dg__save_token_t *t = cs->tokens; t != NULL; t = t->next) {
    if (t->fetch != NULL)
      dg_http_call_cancel(t->fetch);
  }
}

void dg__save_oauth_free_all(dg_connectors_t *cs) {
  while (cs->tokens != NULL) {
    dg__save_token_t *t = cs->tokens;
    cs->tokens = t->next;
    free_token(t);
  }
  cs->ntokens = 0;
}

static bool still_configured(const dg__save_token_t *t, const dg_catalog_t *cat) {
  for (size_t i = 0; i < cat->nconnectors; i++) {
    char key[65];
    if (cat->connectors[i].auth.kind != DG_CONN_AUTH_OAUTH2)
      continue;
    credentials_key(&cat->connectors[i], key);
    if (strcmp(key, t->key) == 0)
      return true;
  }
  return false;
}

void dg__save_oauth_prune(dg_connectors_t *cs, const dg_catalog_t *cat) {
  dg__save_token_t **p = &cs->tokens;
  while (*p != NULL) {
    dg__save_token_t *t = *p;
    if (!idle(t) || still_configured(t, cat)) {
      p = &t->next;
      continue;
    }
    *p = t->next;
    free_token(t);
    cs->ntokens--;
  }
}
