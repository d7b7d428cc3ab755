/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Upstream response parsing without sockets: every framing fed whole and
 * byte by byte, interim responses, HEAD, keep-alive, trailing bytes, the
 * head and body caps, gzip and deflate (good, corrupt, cut short) and
 * unsupported encodings. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "client/internal.h"

typedef struct seen {
  int heads;
  int completes;
  int status;
  char body[65536];
  size_t len;
  size_t total;    /* body bytes delivered, also past what body keeps */
  int refuse_body; /* error returned from on_body */
} seen_t;

static int on_head(dg__resp_t *r, void *user) {
  seen_t *s = user;
  s->heads++;
  s->status = r->status;
  return 0;
}

static int on_body(dg__resp_t *r, const char *data, size_t len, void *user) {
  seen_t *s = user;
  if (s->refuse_body != 0)
    return s->refuse_body;
  s->total += len;
  if (s->len + len < sizeof(s->body)) {
    memcpy(s->body + s->len, data, len);
    s->len += len;
    s->body[s->len] = '\0';
  }
  return 0;
}

static int on_complete(dg__resp_t *r, void *user) {
  seen_t *s = user;
  s->completes++;
  return 0;
}

static const dg__resp_sink_t sink = {on_head, on_body, on_complete};

typedef struct fixture {
  dg__resp_t r;
  seen_t seen;
} fixture_t;

static fixture_t *fx(size_t max_head, size_t max_body, bool head_only) {
  fixture_t *f = calloc(1, sizeof(*f));
  dg__resp_init(&f->r, max_head, &sink, &f->seen);
  dg__resp_begin(&f->r, head_only, max_body);
  return f;
}

static void fx_free(fixture_t *f) {
  dg__resp_free(&f->r);
  free(f);
}

/* Feeds text whole or byte by byte; returns the first error. */
static int feed(fixture_t *f, const char *text, size_t len, bool bytewise) {
  if (!bytewise)
    return dg__resp_feed(&f->r, text, len, NULL);
  for (size_t i = 0; i < len; i++) {
    int rc = dg__resp_feed(&f->r, text + i, 1, NULL);
    if (rc != 0 || f->r.complete)
      return rc;
  }
  return 0;
}

static void check_framed(const char *text, const char *want, bool close_delimited) {
  for (int bytewise = 0; bytewise < 2; bytewise++) {
    fixture_t *f = fx(65536, 1 << 20, false);
    assert_int_equal(feed(f, text, strlen(text), bytewise), 0);
    if (close_delimited) {
      assert_false(f->r.complete);
      assert_int_equal(dg__resp_eof(&f->r), 0);
    }
    assert_true(f->r.complete);
    assert_int_equal(f->seen.heads, 1);
    assert_int_equal(f->seen.completes, 1);
    assert_string_equal(f->seen.body, want);
    fx_free(f);
  }
}

static void test_framings(void **state) {
  check_framed("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", "hello", false);
  check_framed("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"
               "2\r\nde\r\n0\r\n\r\n",
               "abcde", false);
  check_framed("HTTP/1.1 200 OK\r\n\r\nuntil the end", "until the end", true);
  check_framed("HTTP/1.0 200 OK\r\n\r\nold style", "old style", true);
}

static void test_interim_skipped(void **state) {
  fixture_t *f = fx(65536, 1024, false);
  const char *text = "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n"
                     "X-A: 1\r\n\r\nok";
  assert_int_equal(feed(f, text, strlen(text), false), 0);
  assert_int_equal(f->seen.heads, 1);
  assert_int_equal(f->seen.status, 201);
  assert_string_equal(dg__resp_header(&f->r, "x-a"), "1");
  assert_string_equal(f->seen.body, "ok");
  fx_free(f);
}

static void test_head_has_no_body(void **state) {
  fixture_t *f = fx(65536, 1024, true);
  const char *text = "HTTP/1.1 200 OK\r\nContent-Length: 500\r\n\r\n";
  assert_int_equal(feed(f, text, strlen(text), false), 0);
  assert_true(f->r.complete);
  assert_true(f->r.keep_alive);
  assert_int_equal(f->seen.len, 0);
  fx_free(f);
}

static void test_keep_alive_and_trailing(void **state) {
  fixture_t *f = fx(65536, 1024, false);
  const char *text = "HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nxHTTP/1.1 200 OK\r\n";
  size_t used = 0;
  assert_int_equal(dg__resp_feed(&f->r, text, strlen(text), &used), 0);
  assert_true(f->r.complete);
  assert_true(f->r.keep_alive);
  assert_true(f->r.trailing);
  assert_int_equal(used, strlen("HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx"));
  fx_free(f);
  f = fx(65536, 1024, false);
  text = "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n";
  assert_int_equal(feed(f, text, strlen(text), false), 0);
  assert_true(f->r.complete);
  assert_false(f->r.keep_alive);
  assert_false(f->r.trailing);
  fx_free(f);
}

static void test_header_trim_and_lookup(void **state) {
  fixture_t *f = fx(65536, 1024, false);
  const char *text = "HTTP/1.1 200 OK\r\nContent-Type:   application/json  \r\nEmpty:\r\n"
                     "Content-Length: 0\r\n\r\n";
  assert_int_equal(feed(f, text, strlen(text), true), 0);
  assert_string_equal(dg__resp_header(&f->r, "content-type"), "application/json");
  assert_string_equal(dg__resp_header(&f->r, "EMPTY"), "");
  assert_null(dg__resp_header(&f->r, "missing"));
  fx_free(f);
}

static void test_limits(void **state) {
  fixture_t *f = fx(64, 1024, false);
  const char *text = "HTTP/1.1 200 OK\r\nX-Long: 0123456789012345678901234567890123456789"
                     "01234567890123456789\r\n\r\n";
  assert_int_equal(feed(f, text, strlen(text), false), DG_E2BIG);
  assert_non_null(strstr(f->r.reason, "head"));
  fx_free(f);
  /* An endless status line. */
  f = fx(65536, 1024, false);
  static char reason[4096];
  memset(reason, 'x', sizeof(reason));
  assert_int_equal(feed(f, "HTTP/1.1 200 ", 13, false), 0);
  assert_int_equal(feed(f, reason, sizeof(reason), false), DG_E2BIG);
  fx_free(f);
  f = fx(65536, 4, false);
  text = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
  assert_int_equal(feed(f, text, strlen(text), false), DG_E2BIG);
  assert_non_null(strstr(f->r.reason, "over the cap of 4 bytes"));
  fx_free(f);
  /* Too many headers. */
  f = fx(1 << 20, 1024, false);
  dg_buf_t many;
  dg_buf_init(&many, 1 << 20);
  dg_buf_append_str(&many, "HTTP/1.1 200 OK\r\n");
  for (int i = 0; i < DG__CLIENT_MAX_HEADERS + 1; i++)
    dg_buf_appendf(&many, "X-%d: v\r\n", i);
  dg_buf_append_str(&many, "\r\n");
  assert_int_equal(feed(f, many.data, many.len, false), DG_E2BIG);
  dg_buf_free(&many);
  fx_free(f);
}

static void test_malformed(void **state) {
  const char *bad[] = {"HTTP/1.1 abc OK\r\n\r\n", "HTTX/1.1 200 OK\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\n",
                       "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
                       "HTTP/1.1 101 Switching Protocols\r\nUpgrade: x\r\n\r\n"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++) {
    fixture_t *f = fx(65536, 1024, false);
    assert_int_equal(feed(f, bad[i], strlen(bad[i]), false), DG_EPROTO);
    assert_true(f->r.reason[0] != '\0');
    fx_free(f);
  }
}

static void test_early_close(void **state) {
  fixture_t *f = fx(65536, 1024, false);
  assert_int_equal(dg__resp_eof(&f->r), DG_ECLOSED);
  assert_non_null(strstr(f->r.reason, "before a response"));
  fx_free(f);
  f = fx(65536, 1024, false);
  const char *text = "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nabc";
  assert_int_equal(feed(f, text, strlen(text), false), 0);
  assert_int_equal(dg__resp_eof(&f->r), DG_ECLOSED);
  assert_non_null(strstr(f->r.reason, "before the response ended"));
  fx_free(f);
}

static size_t gz(const char *text, int wbits, unsigned char *out, size_t size) {
  z_stream z;
  memset(&z, 0, sizeof(z));
  deflateInit2(&z, 9, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY);
  z.next_in = (Bytef *)(uintptr_t)text;
  z.avail_in = (uInt)strlen(text);
  z.next_out = out;
  z.avail_out = (uInt)size;
  deflate(&z, Z_FINISH);
  size_t n = size - z.avail_out;
  deflateEnd(&z);
  return n;
}

static int feed_encoded(fixture_t *f, const char *coding, const unsigned char *data, size_t n,
                        bool bytewise) {
  char head[160];
  snprintf(head, sizeof(head),
           "HTTP/1.1 200 OK\r\nContent-Encoding: %s\r\nContent-Length: %zu\r\n\r\n", coding, n);
  int rc = feed(f, head, strlen(head), false);
  return rc != 0 ? rc : feed(f, (const char *)data, n, bytewise);
}

static void test_gzip_and_deflate(void **state) {
  const char *text = "{\"items\":[1,2,3,4,5,6,7,8,9,10],\"more\":\"aaaaaaaaaaaaaaaaaaaaaaaa\"}";
  const struct {
    const char *coding;
    int wbits;
  } cases[] = {{"gzip", 31}, {"x-gzip", 31}, {"deflate", 15}, {"deflate", -15}};
  for (size_t i = 0; i < DG_ARRAY_SIZE(cases); i++) {
    for (int bytewise = 0; bytewise < 2; bytewise++) {
      unsigned char packed[512];
      size_t n = gz(text, cases[i].wbits, packed, sizeof(packed));
      fixture_t *f = fx(65536, 4096, false);
      assert_int_equal(feed_encoded(f, cases[i].coding, packed, n, bytewise), 0);
      assert_true(f->r.complete);
      assert_string_equal(f->seen.body, text);
      fx_free(f);
    }
  }
}

static void test_gzip_failures(void **state) {
  unsigned char packed[512];
  const char *text = "some text that compresses, some text that compresses";
  size_t n = gz(text, 31, packed, sizeof(packed));
  /* Cut short: the end marker never comes. */
  fixture_t *f = fx(65536, 4096, false);
  assert_int_equal(feed_encoded(f, "gzip", packed, n - 6, false), DG_EPROTO);
  assert_false(f->r.complete);
  fx_free(f);
  char head[128];
  snprintf(head, sizeof(head), "HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\n\r\n");
  f = fx(65536, 4096, false);
  assert_int_equal(feed(f, head, strlen(head), false), 0);
  assert_int_equal(feed(f, (const char *)packed, n - 6, false), 0);
  assert_int_equal(dg__resp_eof(&f->r), DG_EPROTO);
  assert_non_null(strstr(f->r.reason, "before its end marker"));
  fx_free(f);
  /* Corrupt. */
  packed[12] ^= 0xff;
  packed[13] ^= 0xff;
  f = fx(65536, 4096, false);
  assert_int_equal(feed_encoded(f, "gzip", packed, n, false), DG_EPROTO);
  fx_free(f);
  /* A small body that decodes past the cap. */
  static char zeros[100001];
  memset(zeros, 'z', sizeof(zeros) - 1);
  unsigned char bomb[4096];
  size_t bn = gz(zeros, 31, bomb, sizeof(bomb));
  f = fx(65536, 10000, false);
  assert_int_equal(feed_encoded(f, "gzip", bomb, bn, false), DG_E2BIG);
  fx_free(f);
  f = fx(65536, 4096, false);
  assert_int_equal(feed_encoded(f, "br", (const unsigned char *)"x", 1, false), DG_EPROTO);
  assert_non_null(strstr(f->r.reason, "'br'"));
  fx_free(f);
}

/* 4 MiB of one byte, gzipped into a few kilobytes. */
static unsigned char *bomb_of(size_t size, size_t *n) {
  char *plain = malloc(size + 1);
  unsigned char *packed = malloc(size / 100 + 4096);
  assert_non_null(plain);
  assert_non_null(packed);
  memset(plain, 'y', size);
  plain[size] = '\0';
  *n = gz(plain, 31, packed, size / 100 + 4096);
  free(plain);
  return packed;
}

static void test_gzip_is_decoded_a_share_per_turn(void **state) {
  size_t n = 0, size = (size_t)4 << 20;
  unsigned char *packed = bomb_of(size, &n);
  fixture_t *f = fx(65536, (size_t)64 << 20, false);
  /* The whole body in one read: only a share is decoded, the rest held. */
  assert_int_equal(feed_encoded(f, "gzip", packed, n, false), 0);
  assert_false(f->r.complete);
  assert_true(dg__resp_held(&f->r));
  assert_true(f->seen.total > 0 && f->seen.total <= (size_t)512 << 10);
  int turns = 0;
  while (dg__resp_held(&f->r)) {
    size_t before = f->seen.total;
    assert_int_equal(dg__resp_drain(&f->r), 0);
    assert_true(f->seen.total - before <= (size_t)512 << 10);
    turns++;
  }
  assert_true(turns >= 4);
  /* The message's end came with the bytes; it is settled once decoded. */
  assert_int_equal(f->seen.completes, 0);
  assert_int_equal(dg__resp_settle(&f->r), 0);
  assert_true(f->r.complete);
  assert_int_equal(f->seen.completes, 1);
  assert_int_equal(f->seen.total, size);
  fx_free(f);
  free(packed);
}

static void test_gzip_bomb_stops_at_the_cap_while_decoding(void **state) {
  size_t n = 0;
  unsigned char *packed = bomb_of((size_t)16 << 20, &n);
  fixture_t *f = fx(65536, (size_t)1 << 20, false);
  int rc = feed_encoded(f, "gzip", packed, n, false);
  while (rc == 0 && dg__resp_held(&f->r))
    rc = dg__resp_drain(&f->r);
  assert_int_equal(rc, DG_E2BIG);
  assert_non_null(strstr(f->r.reason, "over the cap of 1048576 bytes"));
  assert_true(f->seen.total <= (size_t)1 << 20);
  assert_int_equal(f->seen.completes, 0);
  fx_free(f);
  free(packed);
}

static void test_sink_errors_stop(void **state) {
  fixture_t *f = fx(65536, 4096, false);
  f->seen.refuse_body = DG_ECANCELED;
  const char *text = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
  assert_int_equal(feed(f, text, strlen(text), false), DG_ECANCELED);
  assert_true(f->r.sink_failed);
  assert_int_equal(f->seen.completes, 0);
  /* Reused for the next response. */
  dg__resp_begin(&f->r, false, 4096);
  f->seen.refuse_body = 0;
  assert_int_equal(feed(f, text, strlen(text), false), 0);
  assert_int_equal(f->seen.completes, 1);
  fx_free(f);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_framings),
      cmocka_unit_test(test_interim_skipped),
      cmocka_unit_test(test_head_has_no_body),
      cmocka_unit_test(test_keep_alive_and_trailing),
      cmocka_unit_test(test_header_trim_and_lookup),
      cmocka_unit_test(test_limits),
      cmocka_unit_test(test_malformed),
      cmocka_unit_test(test_early_close),
      cmocka_unit_test(test_gzip_and_deflate),
      cmocka_unit_test(test_gzip_failures),
      cmocka_unit_test(test_gzip_is_decoded_a_share_per_turn),
      cmocka_unit_test(test_gzip_bomb_stops_at_the_cap_while_decoding),
      cmocka_unit_test(test_sink_errors_stop),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
