/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Name resolution through c-ares on the loop, against a small DNS server
 * on a loopback UDP port: answers with their TTL cached (and the cap on
 * it), one query shared by concurrent lookups, a bounded cache, unknown
 * names, a silent server (the DNS timeout) and the address policy applied
 * to what a name resolves to. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "client/client_test.h"
#include "client/internal.h"

/* ---- a tiny DNS server -------------------------------------------------------- */

typedef struct dns_server {
  int fd;
  int port;
  uv_thread_t thread;
  atomic_bool stop;
  atomic_int queries_api; /* questions for api.test, A and AAAA */
} dns_server_t;

static dns_server_t dns;

/* The question name as "a.b.c"; returns the offset after the question. */
static size_t question(const unsigned char *q, size_t n, char *name, size_t size, int *qtype) {
  size_t i = 12;
  size_t k = 0;
  while (i < n && q[i] != 0 && k + q[i] + 1 < size) {
    if (k > 0)
      name[k++] = '.';
    memcpy(name + k, q + i + 1, q[i]);
    k += q[i];
    i += (size_t)q[i] + 1;
  }
  name[k] = '\0';
  *qtype = i + 2 < n ? q[i + 1] << 8 | q[i + 2] : 0;
  return i + 5;
}

static size_t answer_a(unsigned char *r, size_t at, const unsigned char addr[4], uint32_t ttl) {
  const unsigned char rr[] = {0xc0,
                              0x0c,
                              0,
                              1,
                              0,
                              1,
                              (unsigned char)(ttl >> 24),
                              (unsigned char)(ttl >> 16),
                              (unsigned char)(ttl >> 8),
                              (unsigned char)ttl,
                              0,
                              4};
  memcpy(r + at, rr, sizeof(rr));
  memcpy(r + at + sizeof(rr), addr, 4);
  return at + sizeof(rr) + 4;
}

static void dns_answer(dns_server_t *s, const unsigned char *q, size_t n, struct sockaddr *from,
                       socklen_t fromlen) {
  char name[256];
  int qtype = 0;
  size_t end = question(q, n, name, sizeof(name), &qtype);
  if (n < 12 || end > n || strcmp(name, "slow.test") == 0)
    return;
  if (strcmp(name, "api.test") == 0)
    s->queries_api++;
  static const unsigned char loop4[4] = {127, 0, 0, 1};
  static const unsigned char private4[4] = {10, 0, 0, 1};
  bool known = strcmp(name, "api.test") == 0 || strcmp(name, "private.test") == 0 ||
               (strlen(name) == 6 && strcmp(name + 1, ".test") == 0);
  unsigned char r[512];
  memcpy(r, q, end);
  r[2] = 0x81;
  r[3] = known ? 0x80 : 0x83; /* NOERROR or NXDOMAIN */
  r[6] = r[7] = r[8] = r[9] = r[10] = r[11] = 0;
  size_t len = end;
  if (known && qtype == 1) {
    r[7] = 1;
    len = answer_a(r, end, strcmp(name, "private.test") == 0 ? private4 : loop4, 60);
  }
  sendto(s->fd, r, len, 0, from, fromlen);
}

static void dns_thread(void *arg) {
  dns_server_t *s = arg;
  while (!s->stop) {
    unsigned char q[512];
    struct sockaddr_storage from;
    socklen_t fromlen = sizeof(from);
    ssize_t n = recvfrom(s->fd, q, sizeof(q), 0, (struct sockaddr *)&from, &fromlen);
    if (n > 0)
      dns_answer(s, q, (size_t)n, (struct sockaddr *)&from, fromlen);
  }
}

static int dns_start(void **state) {
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t len = sizeof(a);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  dns.fd = socket(AF_INET, SOCK_DGRAM, 0);
  struct timeval tv = {.tv_usec = 20000};
  setsockopt(dns.fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (bind(dns.fd, (struct sockaddr *)&a, sizeof(a)) != 0)
    return -1;
  getsockname(dns.fd, (struct sockaddr *)&a, &len);
  dns.port = ntohs(a.sin_port);
  return uv_thread_create(&dns.thread, dns_thread, &dns);
}

static int dns_stop(void **state) {
  dns.stop = true;
  uv_thread_join(&dns.thread);
  close(dns.fd);
  return 0;
}

/* ---- tests ------------------------------------------------------------------- */

static void serve_ok(raw_conn_t *c) {
  while (raw_read_request(c) > 0)
    raw_send(c, "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
}

static char servers[64];

/* A client that asks the test server and never pools connections, so that
 * every call resolves its host. */
static ctx_t *dns_ctx(void) {
  ctx_t *t = ctx_new();
  snprintf(servers, sizeof(servers), "127.0.0.1:%d", dns.port);
  t->cfg.dns_servers = servers;
  t->cfg.pool_max_per_origin = 0;
  dns.queries_api = 0;
  if (raw_start(&t->srv, serve_ok, NULL) != 0)
    return NULL;
  return t;
}

static const char *url_for(ctx_t *t, const char *host) {
  static char url[128];
  snprintf(url, sizeof(url), "http://%s:%d/", host, t->srv.port);
  return url;
}

static void test_resolved_and_cached(void **state) {
  ctx_t *t = dns_ctx();
  assert_int_equal(ctx_client(t), 0);
  assert_int_equal(call_once(t, "GET", url_for(t, "api.test"), &t->out[0]), 200);
  int asked = dns.queries_api;
  assert_true(asked >= 1);
  assert_int_equal(dg__dns_cached(t->client->dns), 1);
  assert_int_equal(call_once(t, "GET", url_for(t, "api.test"), &t->out[0]), 200);
  assert_int_equal(dns.queries_api, asked);
  assert_int_equal(t->srv.accepted, 2);
  assert_int_equal(ctx_close(t), 0);
}

static void test_ttl_cap_expires(void **state) {
  ctx_t *t = dns_ctx();
  t->cfg.dns_cache_max_ttl_ms = 30;
  assert_int_equal(ctx_client(t), 0);
  assert_int_equal(call_once(t, "GET", url_for(t, "api.test"), &t->out[0]), 200);
  int asked = dns.queries_api;
  run_for(t, 60);
  assert_int_equal(call_once(t, "GET", url_for(t, "api.test"), &t->out[0]), 200);
  assert_int_equal(dns.queries_api, 2 * asked);
  assert_int_equal(ctx_close(t), 0);
}

static void test_concurrent_lookups_share_a_query(void **state) {
  ctx_t *t = dns_ctx();
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  for (int i = 0; i < 5; i++) {
    req_init(&r, "GET", url_for(t, "api.test"), &t->out[0]);
    assert_non_null(start(t, &r));
  }
  assert_true(run_until(t, &t->out[0], 5));
  assert_int_equal(t->out[0].status, 200);
  /* One lookup: an A and an AAAA question. */
  assert_int_equal(dns.queries_api, 2);
  assert_int_equal(ctx_close(t), 0);
}

static void test_cache_bounded(void **state) {
  ctx_t *t = dns_ctx();
  t->cfg.dns_cache_max = 2;
  assert_int_equal(ctx_client(t), 0);
  const char *hosts[] = {"a.test", "b.test", "c.test"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(hosts); i++)
    assert_int_equal(call_once(t, "GET", url_for(t, hosts[i]), &t->out[0]), 200);
  assert_int_equal(dg__dns_cached(t->client->dns), 2);
  assert_int_equal(ctx_close(t), 0);
}

static void test_unknown_name(void **state) {
  ctx_t *t = dns_ctx();
  assert_int_equal(ctx_client(t), 0);
  call_once(t, "GET", url_for(t, "nx.test"), &t->out[0]);
  assert_int_equal(t->out[0].rc, DG_EUPSTREAM);
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_DNS);
  assert_non_null(strstr(t->out[0].msg, "DNS lookup of 'nx.test' failed"));
  assert_int_equal(t->out[0].attempts, 1);
  assert_int_equal(ctx_close(t), 0);
}

static void test_dns_timeout(void **state) {
  ctx_t *t = dns_ctx();
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", url_for(t, "slow.test"), &t->out[0]);
  r.timeouts.dns_ms = 60;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].rc, DG_ETIMEDOUT);
  assert_string_equal(t->out[0].phase, "dns");
  assert_int_equal(ctx_close(t), 0);
}

static void test_policy_on_resolved_address(void **state) {
  ctx_t *t = dns_ctx();
  assert_int_equal(ctx_client(t), 0);
  dg_http_client_request_t r;
  req_init(&r, "GET", url_for(t, "private.test"), &t->out[0]);
  r.addresses.enforce = true;
  assert_non_null(start(t, &r));
  assert_true(run_until(t, &t->out[0], 1));
  assert_int_equal(t->out[0].failure, DG_HTTP_FAIL_POLICY);
  assert_non_null(strstr(t->out[0].msg, "'private.test' resolves to 10.0.0.1"));
  assert_int_equal(ctx_close(t), 0);
}

static void test_bad_servers(void **state) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  dg_http_client_config_t cfg;
  dg_http_client_config_default(&cfg);
  cfg.dns_servers = "not a server";
  dg_http_client_t *client = NULL;
  dg_errctx_t err;
  assert_int_equal(dg_http_client_new(&loop, &cfg, &client, &err), DG_ECONFIG);
  assert_string_equal(err.param, "client.dns_servers");
  uv_run(&loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&loop), 0);
}

int main(void) {
  dg_log_init(2, DG_LOG_ERROR);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_resolved_and_cached),
      cmocka_unit_test(test_ttl_cap_expires),
      cmocka_unit_test(test_concurrent_lookups_share_a_query),
      cmocka_unit_test(test_cache_bounded),
      cmocka_unit_test(test_unknown_name),
      cmocka_unit_test(test_dns_timeout),
      cmocka_unit_test(test_policy_on_resolved_address),
      cmocka_unit_test(test_bad_servers),
  };
  return cmocka_run_group_tests(tests, dns_start, dns_stop);
}
