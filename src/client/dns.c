/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Name resolution for upstream calls: c-ares driven from the loop (one
 * uv_poll per resolver socket, one uv_timer for c-ares's own timeouts), so
 * no lookup ever blocks the loop thread. Answers are cached for their TTL
 * (capped) in a bounded LRU list, and concurrent lookups of one name share
 * one query: callers wait on the pending entry. Numeric hosts never reach
 * c-ares. */
#include <ares.h>
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/internal.h"

typedef struct entry entry_t;
struct entry {
  entry_t *prev, *next; /* the cache (most recently used first) or the pending list */
  dg__dns_t *dns;
  char host[256];
  bool pending;
  bool answered;
  int rc;
  uint64_t ttl_ms;
  char why[160];
  dg__dns_addrs_t addrs;
  uint64_t expires_ms;
  dg__dns_waiter_t *waiters;
};

typedef struct poller poller_t;
struct poller {
  uv_poll_t poll;
  dg__dns_t *dns;
  ares_socket_t fd;
  poller_t *next;
};

struct dg__dns {
  uv_loop_t *loop;
  ares_channel channel;
  uv_timer_t timer;
  poller_t *pollers;
  entry_t *cache;
  entry_t *cache_tail;
  unsigned ncached;
  entry_t *pending;
  entry_t *querying; /* inside ares_getaddrinfo for this entry */
  unsigned cache_max;
  uint64_t max_ttl_ms;
  unsigned handles;
  bool channel_ready;
  bool closing;
  void (*close_done)(void *data);
  void *close_data;
};

/* ---- lists ---------------------------------------------------------------- */

static entry_t *find(entry_t *list, const char *host) {
  for (entry_t *e = list; e != NULL; e = e->next) {
    if (strcmp(e->host, host) == 0)
      return e;
  }
  return NULL;
}

static void waiter_add(entry_t *e, dg__dns_waiter_t *w) {
  w->entry = e;
  DG_LIST_PUSH(e->waiters, w, prev, next);
}

void dg__dns_cancel(dg__dns_waiter_t *w) {
  entry_t *e = w->entry;
  if (e == NULL)
    return;
  DG_LIST_UNLINK(e->waiters, w, prev, next);
  w->entry = NULL;
}

unsigned dg__dns_cached(const dg__dns_t *dns) {
  return dns->ncached;
}

/* ---- the loop side of c-ares ---------------------------------------------- */

static void handle_closed(uv_handle_t *h);
static void on_timer(uv_timer_t *t);

static void update_timer(dg__dns_t *dns) {
  struct timeval tv;
  if (dns->closing || !dns->channel_ready)
    return;
  struct timeval *next = ares_timeout(dns->channel, NULL, &tv);
  if (next == NULL) {
    uv_timer_stop(&dns->timer);
    return;
  }
  uint64_t ms = (uint64_t)next->tv_sec * 1000 + (uint64_t)next->tv_usec / 1000;
  uv_timer_start(&dns->timer, on_timer, ms + 1, 0);
}

static void on_timer(uv_timer_t *t) {
  dg__dns_t *dns = t->data;
  ares_process_fd(dns->channel, ARES_SOCKET_BAD, ARES_SOCKET_BAD);
  update_timer(dns);
}

static void on_poll(uv_poll_t *p, int status, int events) {
  poller_t *po = p->data;
  dg__dns_t *dns = po->dns;
  ares_socket_t fd = po->fd;
  /* On an error c-ares reads and writes to find out what happened. */
  bool r = status < 0 || (events & UV_READABLE);
  bool w = status < 0 || (events & UV_WRITABLE);
  ares_process_fd(dns->channel, r ? fd : ARES_SOCKET_BAD, w ? fd : ARES_SOCKET_BAD);
  update_timer(dns);
}

static poller_t *poller_find(dg__dns_t *dns, ares_socket_t fd, poller_t ***link) {
  for (poller_t **pp = &dns->pollers; *pp != NULL; pp = &(*pp)->next) {
    if ((*pp)->fd == fd) {
      *link = pp;
      return *pp;
    }
  }
  return NULL;
}

static void poller_close(dg__dns_t *dns, poller_t **link) {
  poller_t *po = *link;
  *link = po->next;
  uv_poll_stop(&po->poll);
  uv_close((uv_handle_t *)&po->poll, handle_closed);
}

static poller_t *poller_open(dg__dns_t *dns, ares_socket_t fd) {
  poller_t *po = calloc(1, sizeof(*po));
  if (po == NULL)
    return NULL;
  if (uv_poll_init_socket(dns->loop, &po->poll, fd) != 0) {
    free(po);
    return NULL;
  }
  po->poll.data = po;
  po->dns = dns;
  po->fd = fd;
  po->next = dns->pollers;
  dns->pollers = po;
  dns->handles++;
  return po;
}

static void on_sock_state(void *data, ares_socket_t fd, int readable, int writable) {
  dg__dns_t *dns = data;
  poller_t **link = NULL;
  poller_t *po = poller_find(dns, fd, &link);
  if (!readable && !writable) {
    if (po != NULL)
      poller_close(dns, link);
    return;
  }
  if (po == NULL)
    po = poller_open(dns, fd);
  /* Without a poller the query simply times out through the timer. */
  if (po != NULL)
    uv_poll_start(&po->poll, (readable ? UV_READABLE : 0) | (writable ? UV_WRITABLE : 0), on_poll);
}

/* ---- answers ----------------------------------------------------------------- */

static void add_addr(dg__dns_addrs_t *out, const struct sockaddr *sa) {
  if (out->n >= DG__DNS_MAX_ADDRS || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6))
    return;
  struct sockaddr_storage *ss = &out->addr[out->n++];
  memset(ss, 0, sizeof(*ss));
  memcpy(ss, sa,
         sa->sa_family == AF_INET ? sizeof(struct sockaddr_in) : sizeof(struct sockaddr_in6));
}

/* IPv4 first: on hosts without IPv6 routes an IPv6 connect may hang until
 * its timeout, while IPv4 fails or works at once. */
static uint64_t collect(const struct ares_addrinfo *ai, dg__dns_addrs_t *out) {
  int ttl = INT32_MAX;
  out->n = 0;
  for (int family = 0; family < 2; family++) {
    for (const struct ares_addrinfo_node *n = ai->nodes; n != NULL; n = n->ai_next) {
      if (n->ai_family != (family == 0 ? AF_INET : AF_INET6))
        continue;
      add_addr(out, n->ai_addr);
      if (n->ai_ttl < ttl)
        ttl = n->ai_ttl;
    }
  }
  return ttl > 0 ? (uint64_t)ttl * 1000 : 0;
}

static void free_entry(entry_t *e) {
  free(e);
}

static void evict_over_max(dg__dns_t *dns) {
  while (dns->ncached > dns->cache_max && dns->cache_tail != NULL) {
    entry_t *old = dns->cache_tail;
    DG_DLIST_UNLINK(dns->cache, dns->cache_tail, old, prev, next);
    dns->ncached--;
    free_entry(old);
  }
}

/* A finished lookup is cached when it has a TTL, else dropped. */
static void settle(dg__dns_t *dns, entry_t *e, uint64_t ttl_ms) {
  DG_LIST_UNLINK(dns->pending, e, prev, next);
  e->pending = false;
  if (e->rc != 0 || ttl_ms == 0 || dns->cache_max == 0 || dns->closing) {
    free_entry(e);
    return;
  }
  e->expires_ms = dg_now_ms() + (ttl_ms < dns->max_ttl_ms ? ttl_ms : dns->max_ttl_ms);
  DG_DLIST_PUSH(dns->cache, dns->cache_tail, e, prev, next);
  dns->ncached++;
  evict_over_max(dns);
}

static int map_status(int status, const char *host, char *why, size_t size) {
  if (status == ARES_EDESTRUCTION || status == ARES_ECANCELLED) {
    snprintf(why, size, "the lookup of '%.100s' was cancelled", host);
    return DG_ECANCELED;
  }
  if (status == ARES_ENOTFOUND || status == ARES_ENODATA)
    snprintf(why, size, "DNS lookup of '%.100s' failed: no such host", host);
  else
    snprintf(why, size, "DNS lookup of '%.100s' failed: %s", host, ares_strerror(status));
  return DG_EUPSTREAM;
}

/* Waiters are taken one at a time: a callback may cancel or add others. */
static void notify(entry_t *snapshot) {
  while (snapshot->waiters != NULL) {
    dg__dns_waiter_t *w = snapshot->waiters;
    dg__dns_cancel(w);
    w->cb(w, snapshot->rc, snapshot->rc == 0 ? &snapshot->addrs : NULL, snapshot->why);
  }
}

static void on_addrinfo(void *arg, int status, int timeouts, struct ares_addrinfo *ai) {
  entry_t *e = arg;
  dg__dns_t *dns = e->dns;
  e->rc = 0;
  if (status == ARES_SUCCESS && ai != NULL)
    e->ttl_ms = collect(ai, &e->addrs);
  if (status == ARES_SUCCESS && e->addrs.n == 0)
    status = ARES_ENODATA;
  if (status != ARES_SUCCESS)
    e->rc = map_status(status, e->host, e->why, sizeof(e->why));
  if (ai != NULL)
    ares_freeaddrinfo(ai);
  e->answered = true;
  if (dns->querying == e)
    return; /* answered inside ares_getaddrinfo: dg__dns_resolve takes it */
  /* The waiters move to a copy so that the entry may be cached or freed
   * before they run. */
  entry_t snapshot = *e;
  for (dg__dns_waiter_t *w = snapshot.waiters; w != NULL; w = w->next)
    w->entry = &snapshot;
  e->waiters = NULL;
  settle(dns, e, e->ttl_ms);
  notify(&snapshot);
}

/* ---- resolving ----------------------------------------------------------------- */

static int numeric(const char *host, dg__dns_addrs_t *out) {
  struct sockaddr_in v4;
  struct sockaddr_in6 v6;
  memset(&v4, 0, sizeof(v4));
  memset(&v6, 0, sizeof(v6));
  out->n = 0;
  if (inet_pton(AF_INET, host, &v4.sin_addr) == 1) {
    v4.sin_family = AF_INET;
    add_addr(out, (struct sockaddr *)&v4);
  } else if (inet_pton(AF_INET6, host, &v6.sin6_addr) == 1) {
    v6.sin6_family = AF_INET6;
    add_addr(out, (struct sockaddr *)&v6);
  }
  return out->n > 0;
}

static entry_t *cached(dg__dns_t *dns, const char *host) {
  entry_t *e = find(dns->cache, host);
  if (e == NULL)
    return NULL;
  DG_DLIST_UNLINK(dns->cache, dns->cache_tail, e, prev, next);
  if (dg_now_ms() >= e->expires_ms) {
    dns->ncached--;
    free_entry(e);
    return NULL;
  }
  DG_DLIST_PUSH(dns->cache, dns->cache_tail, e, prev, next);
  return e;
}

static void query(dg__dns_t *dns, entry_t *e) {
  struct ares_addrinfo_hints hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  /* Sorting would connect probe sockets; the order is ours (IPv4 first). */
  hints.ai_flags = ARES_AI_NOSORT;
  dns->querying = e;
  ares_getaddrinfo(dns->channel, e->host, NULL, &hints, on_addrinfo, e);
  dns->querying = NULL;
  update_timer(dns);
}

/* The hosts file answers inside ares_getaddrinfo: hand that answer back
 * directly rather than calling the waiter from inside the request. */
static int answered_now(dg__dns_t *dns, entry_t *e, dg__dns_addrs_t *out, char *why,
                        size_t whysize) {
  int rc = e->rc;
  if (rc == 0)
    *out = e->addrs;
  else
    dg_strlcpy(why, e->why, whysize);
  settle(dns, e, e->ttl_ms);
  return rc == 0 ? 1 : rc;
}

int dg__dns_resolve(dg__dns_t *dns, const char *host, dg__dns_waiter_t *w, dg__dns_addrs_t *out,
                    char *why, size_t whysize) {
  if (numeric(host, out))
    return 1;
  entry_t *e = cached(dns, host);
  if (e != NULL) {
    *out = e->addrs;
    return 1;
  }
  e = find(dns->pending, host);
  if (e != NULL) {
    waiter_add(e, w);
    return 0;
  }
  if (dns->closing)
    return DG_ECANCELED;
  e = calloc(1, sizeof(*e));
  if (e == NULL)
    return DG_ENOMEM;
  e->dns = dns;
  e->pending = true;
  dg_strlcpy(e->host, host, sizeof(e->host));
  DG_LIST_PUSH(dns->pending, e, prev, next);
  query(dns, e);
  if (e->answered)
    return answered_now(dns, e, out, why, whysize);
  waiter_add(e, w);
  return 0;
}

/* ---- life ------------------------------------------------------------------------ */

static void maybe_free(dg__dns_t *dns) {
  if (!dns->closing || dns->handles > 0)
    return;
  void (*done)(void *) = dns->close_done;
  void *data = dns->close_data;
  free(dns);
  if (done != NULL)
    done(data);
}

static void handle_closed(uv_handle_t *h) {
  dg__dns_t *dns = NULL;
  if (h->type == UV_POLL) {
    poller_t *po = h->data;
    dns = po->dns;
    free(po);
  } else {
    dns = h->data;
  }
  dns->handles--;
  maybe_free(dns);
}

static int init_channel(dg__dns_t *dns, const char *servers, dg_errctx_t *err) {
  struct ares_options opts;
  memset(&opts, 0, sizeof(opts));
  opts.sock_state_cb = on_sock_state;
  opts.sock_state_cb_data = dns;
  opts.timeout = 1000;
  opts.tries = 3;
  int mask = ARES_OPT_SOCK_STATE_CB | ARES_OPT_TIMEOUTMS | ARES_OPT_TRIES;
  int rc = ares_init_options(&dns->channel, &opts, mask);
  if (rc != ARES_SUCCESS)
    return dg_errctx_set(err, DG_ECONFIG, "client.dns", "cannot start the DNS resolver: %s",
                         ares_strerror(rc));
  dns->channel_ready = true;
  if (servers != NULL && servers[0] != '\0') {
    rc = ares_set_servers_ports_csv(dns->channel, servers);
    if (rc != ARES_SUCCESS)
      return dg_errctx_set(err, DG_ECONFIG, "client.dns_servers",
                           "'%s' is not a list of name servers (ip[:port],...): %s", servers,
                           ares_strerror(rc));
  }
  return 0;
}

int dg__dns_new(uv_loop_t *loop, const char *servers, unsigned cache_max, uint64_t max_ttl_ms,
                dg__dns_t **out, dg_errctx_t *err) {
  static bool library_ready;
  if (!library_ready && ares_library_init(ARES_LIB_INIT_ALL) != ARES_SUCCESS)
    return dg_errctx_set(err, DG_ECONFIG, "client.dns", "cannot initialise c-ares");
  library_ready = true;
  dg__dns_t *dns = calloc(1, sizeof(*dns));
  if (dns == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "client.dns", "out of memory");
  dns->loop = loop;
  dns->cache_max = cache_max;
  dns->max_ttl_ms = max_ttl_ms;
  int rc = init_channel(dns, servers, err);
  if (rc != 0) {
    if (dns->channel_ready)
      ares_destroy(dns->channel);
    free(dns);
    return rc;
  }
  uv_timer_init(loop, &dns->timer);
  dns->timer.data = dns;
  dns->handles = 1;
  *out = dns;
  return 0;
}

static void free_list(entry_t *e) {
  while (e != NULL) {
    entry_t *next = e->next;
    free_entry(e);
    e = next;
  }
}

void dg__dns_close(dg__dns_t *dns, void (*done)(void *data), void *data) {
  dns->closing = true;
  dns->close_done = done;
  dns->close_data = data;
  /* Pending lookups end with ARES_EDESTRUCTION; their waiters hear
   * DG_ECANCELED and the entries are freed as they settle. */
  ares_destroy(dns->channel);
  dns->channel_ready = false;
  while (dns->pollers != NULL)
    poller_close(dns, &dns->pollers);
  free_list(dns->cache);
  dns->cache = dns->cache_tail = NULL;
  dns->ncached = 0;
  uv_timer_stop(&dns->timer);
  uv_close((uv_handle_t *)&dns->timer, handle_closed);
}
