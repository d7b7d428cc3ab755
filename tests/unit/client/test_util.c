/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The HTTP client's pure pieces: URL parsing and redirect resolution, the
 * trace id derived from a request id, Retry-After in both forms, header
 * checks, excerpts and the address policy's classes. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "client/internal.h"

static dg_arena_t *arena;

static int setup(void **state) {
  arena = dg_arena_new(4096);
  return arena != NULL ? 0 : -1;
}

static int teardown(void **state) {
  dg_arena_destroy(arena);
  return 0;
}

static void test_url_parse(void **state) {
  dg__url_t u;
  const char *why = NULL;
  assert_int_equal(dg__url_parse(arena, "HTTPS://API.Example.com/v1/orders?id=1#frag", &u, &why),
                   0);
  assert_true(u.https);
  assert_int_equal(u.port, 443);
  assert_string_equal(u.host, "api.example.com");
  assert_string_equal(u.target, "/v1/orders?id=1");
  assert_int_equal(u.path_len, strlen("/v1/orders"));
  assert_string_equal(u.origin, "https://api.example.com:443");
  assert_int_equal(dg__url_parse(arena, "http://[::1]:8080", &u, &why), 0);
  assert_true(u.ipv6);
  assert_string_equal(u.host, "::1");
  assert_int_equal(u.port, 8080);
  assert_string_equal(u.target, "/");
  assert_int_equal(dg__url_parse(arena, "http://h?q=1", &u, &why), 0);
  assert_string_equal(u.target, "/?q=1");
  char shown[128];
  dg__url_parse(arena, "https://h:8443/p?secret=1", &u, &why);
  dg__url_display(&u, shown, sizeof(shown));
  assert_string_equal(shown, "https://h:8443/p");
}

static void test_url_refused(void **state) {
  dg__url_t u;
  const char *why = NULL;
  const char *bad[] = {"ftp://h/",        "http://",      "http://u:p@h/", "http://h:0/",
                       "http://h:70000/", "http://h:x/",  "http://[::1/",  "http://[zz]/",
                       "http://h/a b",    "http://h%41/", "//h/",          "http://h/\x01"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++) {
    why = NULL;
    assert_int_equal(dg__url_parse(arena, bad[i], &u, &why), DG_EINVAL);
    assert_non_null(why);
  }
  assert_int_equal(dg__url_parse(arena, NULL, &u, &why), DG_EINVAL);
}

static void test_url_resolve(void **state) {
  dg__url_t base;
  dg__url_t u;
  const char *why = NULL;
  assert_int_equal(dg__url_parse(arena, "https://a.example:8443/x/y/z?q=1", &base, &why), 0);
  const struct {
    const char *loc;
    const char *origin;
    const char *target;
  } cases[] = {
      {"http://b.example/p", "http://b.example:80", "/p"},
      {"//c.example/p", "https://c.example:443", "/p"},
      {"/abs?k=v", "https://a.example:8443", "/abs?k=v"},
      {"rel", "https://a.example:8443", "/x/y/rel"},
      {"?only", "https://a.example:8443", "/x/y/z?only"},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(cases); i++) {
    assert_int_equal(dg__url_resolve(arena, &base, cases[i].loc, &u, &why), 0);
    assert_string_equal(u.origin, cases[i].origin);
    assert_string_equal(u.target, cases[i].target);
  }
  assert_int_equal(dg__url_resolve(arena, &base, "javascript:alert(1)", &u, &why), DG_EINVAL);
  assert_int_equal(dg__url_resolve(arena, &base, "  ", &u, &why), DG_EINVAL);
}

static void test_retry_after(void **state) {
  uint64_t ms = 0;
  assert_true(dg__retry_after_ms("120", 0, &ms));
  assert_int_equal(ms, 120000);
  assert_true(dg__retry_after_ms(" 0", 0, &ms));
  assert_int_equal(ms, 0);
  /* Wed, 21 Oct 2015 07:28:00 GMT is 1445412480. */
  assert_true(dg__retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT", 1445412470, &ms));
  assert_int_equal(ms, 10000);
  assert_true(dg__retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT", 1445412490, &ms));
  assert_int_equal(ms, 0);
  assert_false(dg__retry_after_ms("soon", 0, &ms));
  assert_false(dg__retry_after_ms("-5", 0, &ms));
  assert_false(dg__retry_after_ms("", 0, &ms));
  assert_false(dg__retry_after_ms(NULL, 0, &ms));
  assert_false(dg__retry_after_ms("Wed, 21 Oct 2015 07:28:00 GMT junk", 0, &ms));
}

static void test_methods_and_headers(void **state) {
  assert_true(dg__method_idempotent("GET"));
  assert_true(dg__method_idempotent("PUT"));
  assert_true(dg__method_idempotent("DELETE"));
  assert_true(dg__method_idempotent("HEAD"));
  assert_true(dg__method_idempotent("OPTIONS"));
  assert_false(dg__method_idempotent("POST"));
  assert_false(dg__method_idempotent("PATCH"));
  assert_true(dg__header_name_ok("X-Api-Key"));
  assert_false(dg__header_name_ok("Bad Name"));
  assert_false(dg__header_name_ok(""));
  assert_false(dg__header_name_ok("a:b"));
  assert_true(dg__header_value_ok("Bearer abc\tdef"));
  assert_false(dg__header_value_ok("a\r\nb"));
  assert_false(dg__header_value_ok(NULL));
}

static void test_excerpt(void **state) {
  char out[16];
  dg__excerpt("line\none", 8, out, sizeof(out));
  assert_string_equal(out, "line one");
  dg__excerpt("0123456789abcdefghij", 20, out, sizeof(out));
  assert_string_equal(out, "0123456789ab...");
  dg__excerpt("", 0, out, sizeof(out));
  assert_string_equal(out, "");
}

static bool allowed(const dg_http_address_policy_t *p, const char *text) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, text, &v4->sin_addr) == 1)
    v4->sin_family = AF_INET;
  else if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1)
    v6->sin6_family = AF_INET6;
  return dg_http_address_allowed(p, (struct sockaddr *)&ss);
}

static bool refuse_all(const struct sockaddr *sa, void *data) {
  (*(int *)data)++;
  return false;
}

static void test_address_classes(void **state) {
  dg_http_address_policy_t p = {.enforce = true};
  const char *public_ones[] = {"8.8.8.8", "172.32.0.1", "100.128.0.1", "2001:4860::8888",
                               "::ffff:8.8.8.8"};
  const char *loopback[] = {"127.0.0.1", "127.255.0.3", "::1", "::ffff:127.0.0.1"};
  const char *link_local[] = {"169.254.169.254", "fe80::1"};
  const char *private_ones[] = {"10.1.2.3",   "172.16.0.1", "172.31.255.255", "192.168.1.1",
                                "100.64.0.1", "fd00::1",    "::ffff:10.0.0.1"};
  const char *never[] = {"0.0.0.0", "224.0.0.1", "255.255.255.255", "::", "ff02::1"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(public_ones); i++)
    assert_true(allowed(&p, public_ones[i]));
  for (size_t i = 0; i < DG_ARRAY_SIZE(loopback); i++)
    assert_false(allowed(&p, loopback[i]));
  for (size_t i = 0; i < DG_ARRAY_SIZE(link_local); i++)
    assert_false(allowed(&p, link_local[i]));
  for (size_t i = 0; i < DG_ARRAY_SIZE(private_ones); i++)
    assert_false(allowed(&p, private_ones[i]));
  p.allow_loopback = p.allow_link_local = p.allow_private = true;
  for (size_t i = 0; i < DG_ARRAY_SIZE(loopback); i++)
    assert_true(allowed(&p, loopback[i]));
  assert_true(allowed(&p, "169.254.169.254"));
  assert_true(allowed(&p, "10.1.2.3"));
  for (size_t i = 0; i < DG_ARRAY_SIZE(never); i++)
    assert_false(allowed(&p, never[i]));
  /* The hook refuses what the classes let through. */
  int asked = 0;
  p.allow = refuse_all;
  p.data = &asked;
  assert_false(allowed(&p, "8.8.8.8"));
  assert_int_equal(asked, 1);
  /* Without enforce, anything goes. */
  dg_http_address_policy_t off = {.enforce = false};
  assert_true(allowed(&off, "127.0.0.1"));
}

static dg_http_address_class_t class_of(const char *text) {
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof(ss));
  struct sockaddr_in *v4 = (struct sockaddr_in *)&ss;
  struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&ss;
  if (inet_pton(AF_INET, text, &v4->sin_addr) == 1)
    v4->sin_family = AF_INET;
  else if (inet_pton(AF_INET6, text, &v6->sin6_addr) == 1)
    v6->sin6_family = AF_INET6;
  else
    fail_msg("'%s' is not an address", text);
  return dg_http_address_class((struct sockaddr *)&ss);
}

/* The special-purpose registries, and IPv6 addresses judged by the IPv4
 * address they carry. */
static void test_address_registry(void **state) {
  static const struct {
    const char *addr;
    dg_http_address_class_t cls;
  } table[] = {
      {"8.8.8.8", DG_ADDR_PUBLIC},
      {"1.1.1.1", DG_ADDR_PUBLIC},
      {"192.0.3.1", DG_ADDR_PUBLIC},
      {"198.20.0.1", DG_ADDR_PUBLIC},
      {"0.1.2.3", DG_ADDR_RESERVED},
      {"10.255.0.1", DG_ADDR_PRIVATE},
      {"100.64.0.1", DG_ADDR_PRIVATE},
      {"100.127.255.255", DG_ADDR_PRIVATE},
      {"100.128.0.1", DG_ADDR_PUBLIC},
      {"127.0.0.1", DG_ADDR_LOOPBACK},
      {"169.254.169.254", DG_ADDR_LINK_LOCAL},
      {"172.16.0.1", DG_ADDR_PRIVATE},
      {"172.32.0.1", DG_ADDR_PUBLIC},
      {"192.0.0.8", DG_ADDR_RESERVED},
      {"192.0.2.1", DG_ADDR_RESERVED},
      {"192.88.99.1", DG_ADDR_RESERVED},
      {"192.168.0.1", DG_ADDR_PRIVATE},
      {"198.18.0.1", DG_ADDR_PRIVATE},
      {"198.19.255.255", DG_ADDR_PRIVATE},
      {"198.51.100.7", DG_ADDR_RESERVED},
      {"203.0.113.9", DG_ADDR_RESERVED},
      {"224.0.0.1", DG_ADDR_RESERVED},
      {"240.0.0.1", DG_ADDR_RESERVED},
      {"255.255.255.255", DG_ADDR_RESERVED},
      {"::", DG_ADDR_RESERVED},
      {"::1", DG_ADDR_LOOPBACK},
      {"::127.0.0.1", DG_ADDR_LOOPBACK},
      {"::10.0.0.1", DG_ADDR_PRIVATE},
      {"::8.8.8.8", DG_ADDR_PUBLIC},
      {"::ffff:127.0.0.1", DG_ADDR_LOOPBACK},
      {"::ffff:169.254.169.254", DG_ADDR_LINK_LOCAL},
      {"::ffff:8.8.8.8", DG_ADDR_PUBLIC},
      {"::ffff:0:7f00:1", DG_ADDR_LOOPBACK},
      {"::ffff:0:a9fe:a9fe", DG_ADDR_LINK_LOCAL},
      {"64:ff9b::7f00:1", DG_ADDR_LOOPBACK},
      {"64:ff9b::a00:1", DG_ADDR_PRIVATE},
      {"64:ff9b::808:808", DG_ADDR_PUBLIC},
      {"64:ff9b:1::7f00:1", DG_ADDR_LOOPBACK},
      {"64:ff9b:1::808:808", DG_ADDR_PRIVATE},
      {"2002:7f00:1::1", DG_ADDR_LOOPBACK},
      {"2002:c0a8:101::1", DG_ADDR_PRIVATE},
      {"2002:a9fe:a9fe::", DG_ADDR_LINK_LOCAL},
      {"2002:808:808::1", DG_ADDR_PUBLIC},
      {"100::1", DG_ADDR_RESERVED},
      {"2001::1", DG_ADDR_RESERVED},
      {"2001:0:4136:e378:8000:63bf:80ff:fffe", DG_ADDR_RESERVED},
      {"2001:2::1", DG_ADDR_PRIVATE},
      {"2001:10::1", DG_ADDR_RESERVED},
      {"2001:db8::1", DG_ADDR_RESERVED},
      {"3fff::1", DG_ADDR_RESERVED},
      {"5f00::1", DG_ADDR_RESERVED},
      {"fc00::1", DG_ADDR_PRIVATE},
      {"fdff::1", DG_ADDR_PRIVATE},
      {"fe80::1", DG_ADDR_LINK_LOCAL},
      {"febf::1", DG_ADDR_LINK_LOCAL},
      {"fec0::1", DG_ADDR_PRIVATE},
      {"ff02::1", DG_ADDR_RESERVED},
      {"2001:4860:4860::8888", DG_ADDR_PUBLIC},
      {"2a00:1450::1", DG_ADDR_PUBLIC},
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(table); i++) {
    dg_http_address_class_t got = class_of(table[i].addr);
    if (got != table[i].cls)
      fail_msg("%s: class %d, want %d", table[i].addr, (int)got, (int)table[i].cls);
  }
  /* The policy refuses what embeds a refused IPv4 address. */
  dg_http_address_policy_t p = {.enforce = true};
  const char *refused[] = {"64:ff9b::7f00:1", "2002:7f00:1::1", "::127.0.0.1", "::ffff:0:7f00:1",
                           "fec0::1"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(refused); i++)
    assert_false(allowed(&p, refused[i]));
}

static void test_failure_names(void **state) {
  assert_string_equal(dg_http_failure_name(DG_HTTP_FAIL_NONE), "ok");
  assert_string_equal(dg_http_failure_name(DG_HTTP_FAIL_TIMEOUT), "timeout");
  assert_string_equal(dg_http_failure_name(DG_HTTP_FAIL_ABORTED), "aborted");
  assert_string_equal(dg_http_failure_name((dg_http_failure_t)99), "unknown");
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_url_parse),           cmocka_unit_test(test_url_refused),
      cmocka_unit_test(test_url_resolve),         cmocka_unit_test(test_retry_after),
      cmocka_unit_test(test_methods_and_headers), cmocka_unit_test(test_excerpt),
      cmocka_unit_test(test_address_classes),     cmocka_unit_test(test_address_registry),
      cmocka_unit_test(test_failure_names),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
