/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Connectors: the unit of upstream limits. Each has a concurrency limit
 * with a bounded FIFO queue of waiting calls, and a circuit breaker per
 * origin it reaches:
 *   CLOSED    attempts go through; consecutive failures are counted
 *   OPEN      after breaker_failures of them: attempts fail fast
 *   HALF_OPEN after breaker_cooldown_ms: one probe goes through; its
 *             success closes the breaker, its failure opens it again. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

static const char *breaker_state_name(dg__breaker_state_t s) {
  switch (s) {
  case DG__BREAKER_CLOSED:
    return "closed";
  case DG__BREAKER_OPEN:
    return "open";
  case DG__BREAKER_HALF_OPEN:
    return "half_open";
  }
  return "?";
}

static bool transition_ok(dg__breaker_state_t from, dg__breaker_state_t to) {
  switch (from) {
  case DG__BREAKER_CLOSED:
    return to == DG__BREAKER_OPEN;
  case DG__BREAKER_OPEN:
    return to == DG__BREAKER_HALF_OPEN;
  case DG__BREAKER_HALF_OPEN:
    return to == DG__BREAKER_OPEN || to == DG__BREAKER_CLOSED;
  }
  return false;
}

static void set_state(dg__connector_t *conn, dg__breaker_t *b, dg__breaker_state_t to) {
  if (!transition_ok(b->state, to)) {
    dg_logf(DG_LOG_ERROR, "breaker_state", "illegal breaker state change %d -> %d", b->state, to);
    abort();
  }
  dg_log_json(to == DG__BREAKER_OPEN ? DG_LOG_WARN : DG_LOG_INFO, "upstream_breaker",
              json_pack("{s:s,s:s,s:s,s:s,s:i}", "connector", conn->name, "origin", b->origin,
                        "from", breaker_state_name(b->state), "to", breaker_state_name(to),
                        "failures", (int)b->failures));
  char labels[320];
  snprintf(labels, sizeof(labels), "connector=\"%s\",state=\"%s\"", conn->label,
           breaker_state_name(to));
  dg_metrics_counter_add("dg_upstream_breaker_transitions_total", labels, 1);
  b->state = to;
  b->probing = false;
}

static bool unqueue(dg__connector_t *conn, dg_http_call_t *call);

/* ---- connectors ------------------------------------------------------------ */

/* Connector names are configuration, but a metric label must never break
 * the exposition format whatever they hold. */
static char *label_escape(const char *name) {
  size_t n = strlen(name);
  char *out = malloc(2 * n + 1);
  size_t k = 0;
  for (size_t i = 0; out != NULL && i < n; i++) {
    char c = name[i];
    if (c == '"' || c == '\\')
      out[k++] = '\\';
    out[k++] = c == '\n' ? ' ' : c;
  }
  if (out != NULL)
    out[k] = '\0';
  return out;
}

static void fill_defaults(dg_http_connector_config_t *cfg, const dg_http_connector_config_t *d) {
  if (cfg->max_concurrency == 0)
    cfg->max_concurrency = d->max_concurrency;
  if (cfg->max_queue == 0)
    cfg->max_queue = d->max_queue;
  if (cfg->breaker_failures == 0)
    cfg->breaker_failures = d->breaker_failures;
  if (cfg->breaker_cooldown_ms == 0)
    cfg->breaker_cooldown_ms = d->breaker_cooldown_ms;
}

static dg__connector_t *connector_new(dg_http_client_t *client, const char *name) {
  dg__connector_t *c = calloc(1, sizeof(*c));
  if (c == NULL)
    return NULL;
  c->name = strdup(name);
  c->label = label_escape(name);
  if (c->name == NULL || c->label == NULL) {
    free(c->name);
    free(c->label);
    free(c);
    return NULL;
  }
  c->cfg = client->cfg.connector_defaults;
  c->cfg.name = c->name;
  c->next = client->connectors;
  client->connectors = c;
  client->nconnectors++;
  return c;
}

static dg__connector_t *connector_find(dg_http_client_t *client, const char *name) {
  for (dg__connector_t *c = client->connectors; c != NULL; c = c->next) {
    if (strcmp(c->name, name) == 0)
      return c;
  }
  return NULL;
}

/* Names come from configuration, but the list stays bounded whatever
 * callers pass: past the cap, unknown names share one connector. */
dg__connector_t *dg__connector_get(dg_http_client_t *client, const char *name) {
  if (name == NULL || name[0] == '\0')
    name = "default";
  dg__connector_t *c = connector_find(client, name);
  if (c != NULL)
    return c;
  if (client->nconnectors >= DG__CLIENT_MAX_CONNECTORS) {
    c = connector_find(client, "other");
    return c != NULL ? c : connector_new(client, "other");
  }
  return connector_new(client, name);
}

int dg_http_client_set_connector(dg_http_client_t *client, const dg_http_connector_config_t *cfg) {
  if (cfg == NULL || cfg->name == NULL || cfg->name[0] == '\0')
    return DG_EINVAL;
  dg__connector_t *c = dg__connector_get(client, cfg->name);
  if (c == NULL)
    return DG_ENOMEM;
  c->cfg = *cfg;
  c->cfg.name = c->name;
  fill_defaults(&c->cfg, &client->cfg.connector_defaults);
  /* A raised limit lets waiting calls go now. */
  while (c->queue_head != NULL && c->active < c->cfg.max_concurrency) {
    dg_http_call_t *next = c->queue_head;
    unqueue(c, next);
    c->active++;
    dg__call_admitted(next);
  }
  return 0;
}

void dg__connectors_free(dg_http_client_t *client) {
  while (client->connectors != NULL) {
    dg__connector_t *c = client->connectors;
    client->connectors = c->next;
    while (c->breakers != NULL) {
      dg__breaker_t *b = c->breakers;
      c->breakers = b->next;
      free(b);
    }
    free(c->name);
    free(c->label);
    free(c);
  }
}

/* ---- concurrency ----------------------------------------------------------- */

int dg__connector_admit(dg__connector_t *conn, dg_http_call_t *call) {
  if (conn->active < conn->cfg.max_concurrency && conn->queue_head == NULL) {
    conn->active++;
    return 1;
  }
  if (conn->queued >= conn->cfg.max_queue)
    return DG_EBUSY;
  DG_QUEUE_PUSH(conn->queue_head, conn->queue_tail, call, qnext);
  conn->queued++;
  return 0;
}

static bool unqueue(dg__connector_t *conn, dg_http_call_t *call) {
  dg_http_call_t *prev = NULL;
  for (dg_http_call_t *c = conn->queue_head; c != NULL; prev = c, c = c->qnext) {
    if (c != call)
      continue;
    if (prev != NULL)
      prev->qnext = c->qnext;
    else
      conn->queue_head = c->qnext;
    if (conn->queue_tail == c)
      conn->queue_tail = prev;
    conn->queued--;
    c->qnext = NULL;
    return true;
  }
  return false;
}

/* The slot of a call that ends passes straight to the first waiting call,
 * unless a lowered limit says it must go. */
dg_http_call_t *dg__connector_leave(dg__connector_t *conn, dg_http_call_t *call) {
  if (unqueue(conn, call))
    return NULL;
  dg_http_call_t *next = conn->queue_head;
  if (next == NULL || conn->active > conn->cfg.max_concurrency) {
    conn->active--;
    return NULL;
  }
  unqueue(conn, next);
  return next;
}

/* ---- circuit breakers ------------------------------------------------------ */

static dg__breaker_t *breaker_find(dg__connector_t *conn, const char *origin) {
  for (dg__breaker_t *b = conn->breakers; b != NULL; b = b->next) {
    if (strcmp(b->origin, origin) == 0)
      return b;
  }
  return NULL;
}

/* A closed breaker without failures holds nothing worth keeping, so the
 * list stays bounded by dropping one when it is full. */
static void breaker_make_room(dg__connector_t *conn) {
  if (conn->nbreakers < DG__BREAKER_MAX_ORIGINS)
    return;
  for (dg__breaker_t **pp = &conn->breakers; *pp != NULL; pp = &(*pp)->next) {
    dg__breaker_t *b = *pp;
    if (b->state == DG__BREAKER_CLOSED && b->failures == 0) {
      *pp = b->next;
      free(b);
      conn->nbreakers--;
      return;
    }
  }
}

static dg__breaker_t *breaker_get(dg__connector_t *conn, const char *origin) {
  dg__breaker_t *b = breaker_find(conn, origin);
  if (b != NULL)
    return b;
  breaker_make_room(conn);
  if (conn->nbreakers >= DG__BREAKER_MAX_ORIGINS)
    return NULL;
  b = calloc(1, sizeof(*b));
  if (b == NULL)
    return NULL;
  dg_strlcpy(b->origin, origin, sizeof(b->origin));
  b->next = conn->breakers;
  conn->breakers = b;
  conn->nbreakers++;
  return b;
}

dg__breaker_state_t dg__breaker_state(dg__connector_t *conn, const char *origin) {
  dg__breaker_t *b = breaker_find(conn, origin);
  return b != NULL ? b->state : DG__BREAKER_CLOSED;
}

bool dg__breaker_allow(dg__connector_t *conn, const char *origin, uint64_t now_ms, bool *probe,
                       char *why, size_t whysize) {
  dg__breaker_t *b = breaker_find(conn, origin);
  *probe = false;
  if (b == NULL || b->state == DG__BREAKER_CLOSED)
    return true;
  if (b->state == DG__BREAKER_OPEN && now_ms - b->opened_ms >= conn->cfg.breaker_cooldown_ms)
    set_state(conn, b, DG__BREAKER_HALF_OPEN);
  if (b->state == DG__BREAKER_HALF_OPEN && !b->probing) {
    b->probing = true;
    *probe = true;
    return true;
  }
  uint64_t left =
      b->state == DG__BREAKER_OPEN ? conn->cfg.breaker_cooldown_ms - (now_ms - b->opened_ms) : 0;
  if (b->state == DG__BREAKER_OPEN)
    snprintf(why, whysize,
             "the circuit breaker is open after %u consecutive failures; the next try is in "
             "%llu ms",
             b->failures, (unsigned long long)left);
  else
    snprintf(why, whysize, "the circuit breaker is probing the upstream after %u failures",
             b->failures);
  return false;
}

void dg__breaker_record(dg__connector_t *conn, const char *origin, bool success, bool probe,
                        uint64_t now_ms) {
  dg__breaker_t *b = success ? breaker_find(conn, origin) : breaker_get(conn, origin);
  if (b == NULL)
    return;
  if (success) {
    b->failures = 0;
    if (b->state == DG__BREAKER_HALF_OPEN && probe)
      set_state(conn, b, DG__BREAKER_CLOSED);
    return;
  }
  b->failures++;
  bool trip = b->state == DG__BREAKER_CLOSED && b->failures >= conn->cfg.breaker_failures;
  if (trip || (b->state == DG__BREAKER_HALF_OPEN && probe)) {
    b->opened_ms = now_ms;
    set_state(conn, b, DG__BREAKER_OPEN);
  }
}

void dg__breaker_release_probe(dg__connector_t *conn, const char *origin) {
  dg__breaker_t *b = breaker_find(conn, origin);
  if (b != NULL && b->state == DG__BREAKER_HALF_OPEN)
    b->probing = false;
}
