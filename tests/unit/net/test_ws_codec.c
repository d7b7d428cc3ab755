/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the WebSocket frame codec and the UTF-8 validator. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "datagate/net.h"

#define MAX_FRAMES 16

typedef struct recorded {
  bool fin;
  int opcode;
  unsigned char *payload;
  size_t len;
} recorded_t;

typedef struct recorder {
  recorded_t frames[MAX_FRAMES];
  size_t count;
  int fail_at; /* return -99 from the frame with this index; -1 never */
} recorder_t;

static int record_frame(const dg_ws_frame_t *frame, void *user) {
  recorder_t *r = user;
  assert_true(r->count < MAX_FRAMES);
  assert_non_null(frame->payload);
  recorded_t *f = &r->frames[r->count];
  f->fin = frame->fin;
  f->opcode = frame->opcode;
  f->len = frame->len;
  f->payload = malloc(frame->len + 1);
  assert_non_null(f->payload);
  memcpy(f->payload, frame->payload, frame->len);
  r->count++;
  return (int)r->count - 1 == r->fail_at ? -99 : 0;
}

static void recorder_init(recorder_t *r) {
  memset(r, 0, sizeof(*r));
  r->fail_at = -1;
}

static void recorder_free(recorder_t *r) {
  for (size_t i = 0; i < r->count; i++)
    free(r->frames[i].payload);
  r->count = 0;
}

/* Feeds data in chunks of at most step bytes, checking each call consumed
 * all it was given; returns the first negative result or 0. */
static int64_t feed(dg_ws_parser_t *p, const unsigned char *data, size_t len, size_t step,
                    recorder_t *r, int *close_code) {
  size_t pos = 0;
  while (pos < len) {
    size_t n = len - pos < step ? len - pos : step;
    int64_t rc = dg_ws_parse(p, data + pos, n, record_frame, r, close_code);
    if (rc < 0)
      return rc;
    assert_int_equal(rc, (int64_t)n);
    pos += n;
  }
  return 0;
}

static void assert_frame(const recorder_t *r, size_t i, bool fin, int opcode, const void *payload,
                         size_t len) {
  assert_true(i < r->count);
  assert_int_equal(r->frames[i].fin, fin);
  assert_int_equal(r->frames[i].opcode, opcode);
  assert_int_equal(r->frames[i].len, len);
  assert_memory_equal(r->frames[i].payload, payload, len);
}

/* ---- RFC 6455 section 5.7 examples ------------------------------------ */

static const unsigned char rfc_unmasked_hello[] = {0x81, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
static const unsigned char rfc_masked_hello[] = {0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d,
                                                 0x7f, 0x9f, 0x4d, 0x51, 0x58};
static const unsigned char rfc_fragments[] = {0x01, 0x03, 0x48, 0x65, 0x6c, 0x80, 0x02, 0x6c, 0x6f};
static const unsigned char rfc_ping[] = {0x89, 0x05, 0x48, 0x65, 0x6c, 0x6c, 0x6f};
static const unsigned char rfc_masked_pong[] = {0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d,
                                                0x7f, 0x9f, 0x4d, 0x51, 0x58};

static void test_rfc_unmasked_text(void **state) {
  dg_ws_parser_t p;
  recorder_t r;
  int close_code = 0;
  recorder_init(&r);
  dg_ws_parser_init(&p, false, 1024);
  assert_int_equal(feed(&p, rfc_unmasked_hello, sizeof(rfc_unmasked_hello), 64, &r, &close_code),
                   0);
  assert_int_equal(r.count, 1);
  assert_frame(&r, 0, true, 1, "Hello", 5);
  recorder_free(&r);
  dg_ws_parser_free(&p);
}

static void test_rfc_masked_text(void **state) {
  dg_ws_parser_t p;
  recorder_t r;
  int close_code = 0;
  recorder_init(&r);
  dg_ws_parser_init(&p, true, 1024);
  assert_int_equal(feed(&p, rfc_masked_hello, sizeof(rfc_masked_hello), 64, &r, &close_code), 0);
  assert_int_equal(r.count, 1);
  assert_frame(&r, 0, true, 1, "Hello", 5);
  recorder_free(&r);
  dg_ws_parser_free(&p);
}

static void test_rfc_fragmented_text(void **state) {
  dg_ws_parser_t p;
  recorder_t r;
  int close_code = 0;
  recorder_init(&r);
  dg_ws_parser_init(&p, false, 1024);
  assert_int_equal(feed(&p, rfc_fragments, sizeof(rfc_fragments), 64, &r, &close_code), 0);
  assert_int_equal(r.count, 2);
  assert_frame(&r, 0, false, 1, "Hel", 3);
  assert_frame(&r, 1, true, 0, "lo", 2);
  recorder_free(&r);
  dg_ws_parser_free(&p);
}

static void test_rfc_ping_pong(void **state) {
  dg_ws_parser_t client, server;
  recorder_t r;
  int close_code = 0;
  recorder_init(&r);
  dg_ws_parser_init(&client, false, 1024);
  dg_ws_parser_init(&server, true, 1024);
  assert_int_equal(feed(&client, rfc_ping, sizeof(rfc_ping), 3, &r, &close_code), 0);
  assert_int_equal(feed(&server, rfc_masked_pong, sizeof(rfc_masked_pong), 3, &r, &close_code), 0);
  assert_int_equal(r.count, 2);
  assert_frame(&r, 0, true, 9, "Hello", 5);
  assert_frame(&r, 1, true, 10, "Hello", 5);
  recorder_free(&r);
  dg_ws_parser_free(&client);
  dg_ws_parser_free(&server);
}

/* Builds a frame: header from dg_ws_frame_header, then optionally the
 * masking bit, key and masked payload. Returns the frame length. */
static size_t build_frame(unsigned char *out, bool fin, int opcode, const unsigned char *payload,
                          size_t len, const unsigned char *key) {
  size_t h = dg_ws_frame_header(out, fin, opcode, len);
  if (key != NULL) {
    out[1] |= 0x80;
    memcpy(out + h, key, 4);
    h += 4;
  }
  for (size_t i = 0; i < len; i++)
    out[h + i] = key != NULL ? (unsigned char)(payload[i] ^ key[i % 4]) : payload[i];
  return h + len;
}

static void test_rfc_256_and_64k_binary(void **state) {
  size_t sizes[] = {256, 65536};
  for (size_t s = 0; s < DG_ARRAY_SIZE(sizes); s++) {
    size_t n = sizes[s];
    unsigned char *payload = malloc(n);
    unsigned char *frame = malloc(n + 14);
    assert_non_null(payload);
    assert_non_null(frame);
    for (size_t i = 0; i < n; i++)
      payload[i] = (unsigned char)(i * 7 + 3);
    size_t flen = build_frame(frame, true, 2, payload, n, NULL);
    /* RFC 6455 5.7 gives the exact headers of these two examples. */
    if (n == 256)
      assert_memory_equal(frame, ((unsigned char[]){0x82, 0x7e, 0x01, 0x00}), 4);
    else
      assert_memory_equal(frame, ((unsigned char[]){0x82, 0x7f, 0, 0, 0, 0, 0, 1, 0, 0}), 10);
    dg_ws_parser_t p;
    recorder_t r;
    int close_code = 0;
    recorder_init(&r);
    dg_ws_parser_init(&p, false, 65536);
    assert_int_equal(feed(&p, frame, flen, 1000, &r, &close_code), 0);
    assert_int_equal(r.count, 1);
    assert_frame(&r, 0, true, 2, payload, n);
    recorder_free(&r);
    dg_ws_parser_free(&p);
    free(payload);
    free(frame);
  }
}

/* ---- Splits ------------------------------------------------------------ */

/* A stream of masked client frames: a 3-byte text, an empty ping, a
 * 300-byte binary (16-bit length) and a close with a status. */
static size_t build_stream(unsigned char *out, unsigned char *big) {
  static const unsigned char key1[4] = {1, 2, 3, 4}, key2[4] = {0xff, 0, 0x80, 0x7f};
  static const unsigned char close_payload[] = {0x03, 0xe8, 'b', 'y', 'e'};
  for (size_t i = 0; i < 300; i++)
    big[i] = (unsigned char)(255 - i);
  size_t n = build_frame(out, true, 1, (const unsigned char *)"abc", 3, key1);
  n += build_frame(out + n, true, 9, NULL, 0, key2);
  n += build_frame(out + n, true, 2, big, 300, key2);
  n += build_frame(out + n, true, 8, close_payload, sizeof(close_payload), key1);
  return n;
}

static void check_stream(const recorder_t *r, const unsigned char *big) {
  assert_int_equal(r->count, 4);
  assert_frame(r, 0, true, 1, "abc", 3);
  assert_frame(r, 1, true, 9, "", 0);
  assert_frame(r, 2, true, 2, big, 300);
  assert_frame(r, 3, true, 8,
               "\x03\xe8"
               "bye",
               5);
}

static void test_byte_by_byte(void **state) {
  unsigned char stream[512], big[300];
  size_t n = build_stream(stream, big);
  dg_ws_parser_t p;
  recorder_t r;
  int close_code = 0;
  recorder_init(&r);
  dg_ws_parser_init(&p, true, 1024);
  assert_int_equal(feed(&p, stream, n, 1, &r, &close_code), 0);
  check_stream(&r, big);
  recorder_free(&r);
  dg_ws_parser_free(&p);
}

static void test_every_two_way_split(void **state) {
  unsigned char stream[512], big[300];
  size_t n = build_stream(stream, big);
  for (size_t cut = 0; cut <= n; cut++) {
    dg_ws_parser_t p;
    recorder_t r;
    int close_code = 0;
    recorder_init(&r);
    dg_ws_parser_init(&p, true, 1024);
    assert_int_equal(dg_ws_parse(&p, stream, cut, record_frame, &r, &close_code), (int64_t)cut);
    assert_int_equal(dg_ws_parse(&p, stream + cut, n - cut, record_frame, &r, &close_code),
                     (int64_t)(n - cut));
    check_stream(&r, big);
    recorder_free(&r);
    dg_ws_parser_free(&p);
  }
}

static void test_length_boundaries_roundtrip(void **state) {
  static const size_t lens[] = {0, 1, 125, 126, 127, 65535, 65536, 70000};
  static const unsigned char key[4] = {9, 8, 7, 6};
  for (size_t i = 0; i < DG_ARRAY_SIZE(lens); i++) {
    size_t n = lens[i];
    unsigned char *payload = calloc(1, n + 1);
    unsigned char *frame = malloc(n + 14);
    assert_non_null(payload);
    assert_non_null(frame);
    for (size_t j = 0; j < n; j++)
      payload[j] = (unsigned char)(j ^ 0x5a);
    size_t flen = build_frame(frame, true, 2, payload, n, key);
    size_t expect_header = n < 126 ? 2 : n <= 65535 ? 4 : 10;
    assert_int_equal(flen, expect_header + 4 + n);
    dg_ws_parser_t p;
    recorder_t r;
    int close_code = 0;
    recorder_init(&r);
    dg_ws_parser_init(&p, true, 70000);
    assert_int_equal(feed(&p, frame, flen, 4093, &r, &close_code), 0);
    assert_int_equal(r.count, 1);
    assert_frame(&r, 0, true, 2, payload, n);
    recorder_free(&r);
    dg_ws_parser_free(&p);
    free(payload);
    free(frame);
  }
}

static void test_frame_header_bytes(void **state) {
  unsigned char h[10];
  assert_int_equal(dg_ws_frame_header(h, true, 1, 0), 2);
  assert_memory_equal(h, ((unsigned char[]){0x81, 0x00}), 2);
  assert_int_equal(dg_ws_frame_header(h, false, 0, 125), 2);
  assert_memory_equal(h, ((unsigned char[]){0x00, 125}), 2);
  assert_int_equal(dg_ws_frame_header(h, true, 8, 126), 4);
  assert_memory_equal(h, ((unsigned char[]){0x88, 126, 0x00, 126}), 4);
  assert_int_equal(dg_ws_frame_header(h, true, 2, 65535), 4);
  assert_memory_equal(h, ((unsigned char[]){0x82, 126, 0xff, 0xff}), 4);
  assert_int_equal(dg_ws_frame_header(h, true, 1, 0x123456789aULL), 10);
  assert_memory_equal(h, ((unsigned char[]){0x81, 127, 0, 0, 0, 0x12, 0x34, 0x56, 0x78, 0x9a}), 10);
}

/* ---- Errors ------------------------------------------------------------ */

/* Parses data whole and byte by byte; both must fail with the same code
 * and close status, and deliver no frame. */
static void expect_error(bool require_mask, size_t max_frame, const unsigned char *data, size_t len,
                         int64_t want_rc, int want_close) {
  const size_t steps[] = {1, len};
  for (size_t s = 0; s < DG_ARRAY_SIZE(steps); s++) {
    size_t step = steps[s];
    dg_ws_parser_t p;
    recorder_t r;
    int close_code = 0;
    recorder_init(&r);
    dg_ws_parser_init(&p, require_mask, max_frame);
    assert_int_equal(feed(&p, data, len, step, &r, &close_code), want_rc);
    assert_int_equal(close_code, want_close);
    assert_int_equal(r.count, 0);
    /* Nothing was buffered for the refused frame. */
    assert_null(p.payload.data);
    /* A failed parser refuses anything further. */
    close_code = 0;
    assert_int_equal(
        dg_ws_parse(&p, rfc_masked_hello, sizeof(rfc_masked_hello), record_frame, &r, &close_code),
        DG_EPROTO);
    assert_int_equal(close_code, 1002);
    assert_int_equal(r.count, 0);
    dg_ws_parser_free(&p);
  }
}

static void test_reserved_bits(void **state) {
  for (unsigned bit = 0x10; bit <= 0x40; bit <<= 1) {
    unsigned char f[] = {(unsigned char)(0x81 | bit), 0x80, 1, 2, 3, 4};
    expect_error(true, 1024, f, sizeof(f), DG_EPROTO, 1002);
  }
}

static void test_unknown_opcodes(void **state) {
  static const int bad[] = {3, 4, 5, 6, 7, 11, 12, 13, 14, 15};
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++) {
    unsigned char f[] = {(unsigned char)(0x80 | bad[i]), 0x80, 1, 2, 3, 4};
    expect_error(true, 1024, f, sizeof(f), DG_EPROTO, 1002);
  }
}

static void test_control_frames_rules(void **state) {
  /* A fragmented ping, close and pong. */
  for (int op = 8; op <= 10; op++) {
    unsigned char f[] = {(unsigned char)op, 0x80, 1, 2, 3, 4};
    expect_error(true, 1024, f, sizeof(f), DG_EPROTO, 1002);
  }
  /* Control payloads over 125 bytes, announced with 126 or 127. */
  unsigned char ping126[] = {0x89, 0xfe, 0x00, 0x7e, 1, 2, 3, 4};
  expect_error(true, 1024, ping126, sizeof(ping126), DG_EPROTO, 1002);
  unsigned char close127[] = {0x88, 0xff, 0, 0, 0, 0, 0, 1, 0, 0, 1, 2, 3, 4};
  expect_error(true, 1 << 20, close127, sizeof(close127), DG_EPROTO, 1002);
}

static void test_control_frame_125_accepted(void **state) {
  unsigned char payload[125], frame[256];
  static const unsigned char key[4] = {0xde, 0xad, 0xbe, 0xef};
  memset(payload, 'p', sizeof(payload));
  size_t n = build_frame(frame, true, 9, payload, sizeof(payload), key);
  dg_ws_parser_t p;
  recorder_t r;
  int close_code = 0;
  recorder_init(&r);
  dg_ws_parser_init(&p, true, 1024);
  assert_int_equal(feed(&p, frame, n, 7, &r, &close_code), 0);
  assert_frame(&r, 0, true, 9, payload, sizeof(payload));
  recorder_free(&r);
  dg_ws_parser_free(&p);
}

static void test_masking_enforced(void **state) {
  /* A server refuses an unmasked client frame... */
  expect_error(true, 1024, rfc_unmasked_hello, sizeof(rfc_unmasked_hello), DG_EPROTO, 1002);
  /* ...and a client refuses a masked server frame. */
  expect_error(false, 1024, rfc_masked_hello, sizeof(rfc_masked_hello), DG_EPROTO, 1002);
}

static void test_non_minimal_lengths(void **state) {
  unsigned char len16[] = {0x82, 0xfe, 0x00, 0x7d, 1, 2, 3, 4};
  expect_error(true, 1 << 20, len16, sizeof(len16), DG_EPROTO, 1002);
  unsigned char len16_zero[] = {0x82, 0xfe, 0x00, 0x00, 1, 2, 3, 4};
  expect_error(true, 1 << 20, len16_zero, sizeof(len16_zero), DG_EPROTO, 1002);
  unsigned char len64[] = {0x82, 0xff, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 1, 2, 3, 4};
  expect_error(true, 1 << 20, len64, sizeof(len64), DG_EPROTO, 1002);
  unsigned char len64_small[] = {0x82, 0xff, 0, 0, 0, 0, 0, 0, 0, 5, 1, 2, 3, 4};
  expect_error(true, 1 << 20, len64_small, sizeof(len64_small), DG_EPROTO, 1002);
}

static void test_length_top_bit(void **state) {
  unsigned char f[] = {0x82, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 1, 1, 2, 3, 4};
  expect_error(true, SIZE_MAX, f, sizeof(f), DG_EPROTO, 1002);
}

static void test_too_big(void **state) {
  /* 1001 bytes announced, limit 1000: refused from the header alone. */
  unsigned char f16[] = {0x82, 0xfe, 0x03, 0xe9, 1, 2, 3, 4};
  expect_error(true, 1000, f16, sizeof(f16), DG_E2BIG, 1009);
  unsigned char f64[] = {0x81, 0xff, 0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1, 2, 3, 4};
  expect_error(true, 1 << 20, f64, sizeof(f64), DG_E2BIG, 1009);
  unsigned char f7[] = {0x81, 0x86, 1, 2, 3, 4};
  expect_error(true, 5, f7, sizeof(f7), DG_E2BIG, 1009);
}

static void test_exact_max_frame_accepted(void **state) {
  unsigned char payload[1000], frame[1100];
  static const unsigned char key[4] = {1, 1, 1, 1};
  memset(payload, 'x', sizeof(payload));
  size_t n = build_frame(frame, true, 1, payload, sizeof(payload), key);
  dg_ws_parser_t p;
  recorder_t r;
  int close_code = 0;
  recorder_init(&r);
  dg_ws_parser_init(&p, true, 1000);
  assert_int_equal(feed(&p, frame, n - 1, 100, &r, &close_code), 0);
  /* The buffer holds the frame and never more than its maximum. */
  assert_int_equal(r.count, 0);
  assert_true(p.payload.cap >= 1000 && p.payload.cap <= 1001);
  assert_int_equal(feed(&p, frame + n - 1, 1, 1, &r, &close_code), 0);
  assert_frame(&r, 0, true, 1, payload, sizeof(payload));
  recorder_free(&r);
  dg_ws_parser_free(&p);
}

static void test_callback_abort_propagates(void **state) {
  unsigned char stream[512], big[300];
  size_t n = build_stream(stream, big);
  dg_ws_parser_t p;
  recorder_t r;
  int close_code = 4321;
  recorder_init(&r);
  r.fail_at = 1;
  dg_ws_parser_init(&p, true, 1024);
  assert_int_equal(dg_ws_parse(&p, stream, n, record_frame, &r, &close_code), -99);
  /* The frames after the refused one were not delivered, and the status
   * stays the callback's business. */
  assert_int_equal(r.count, 2);
  assert_int_equal(close_code, 4321);
  assert_int_equal(dg_ws_parse(&p, stream, n, record_frame, &r, &close_code), DG_EPROTO);
  assert_int_equal(r.count, 2);
  recorder_free(&r);
  dg_ws_parser_free(&p);
}

static void test_buffer_released_when_idle(void **state) {
  static const unsigned char key[4] = {5, 6, 7, 8};
  unsigned char payload[200], frame[256];
  memset(payload, 'q', sizeof(payload));
  size_t n = build_frame(frame, true, 1, payload, sizeof(payload), key);
  dg_ws_parser_t p;
  recorder_t r;
  int close_code = 0;
  recorder_init(&r);
  dg_ws_parser_init(&p, true, 1024);
  assert_null(p.payload.data);
  /* Mid-payload the buffer holds what arrived so far. */
  assert_int_equal(dg_ws_parse(&p, frame, 50, record_frame, &r, &close_code), 50);
  assert_non_null(p.payload.data);
  assert_int_equal(p.payload.len, 50 - 8);
  assert_int_equal(dg_ws_parse(&p, frame + 50, n - 50, record_frame, &r, &close_code),
                   (int64_t)(n - 50));
  assert_int_equal(r.count, 1);
  assert_null(p.payload.data);
  /* Mid-header no buffer is needed either. */
  assert_int_equal(dg_ws_parse(&p, frame, 3, record_frame, &r, &close_code), 3);
  assert_null(p.payload.data);
  recorder_free(&r);
  dg_ws_parser_free(&p);
}

/* ---- Accept key --------------------------------------------------------- */

static void test_accept_key(void **state) {
  char out[29];
  memset(out, 'z', sizeof(out));
  assert_int_equal(dg_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ==", out), 0);
  assert_string_equal(out, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
  /* A second key from a real client handshake. */
  assert_int_equal(dg_ws_accept_key("x3JJHMbDL1EzLkh9GBhXDw==", out), 0);
  assert_string_equal(out, "HSmrc0sMlYUkAGmm5OPpG2HaGWk=");
}

static void test_accept_key_invalid(void **state) {
  char out[29];
  assert_int_equal(dg_ws_accept_key(NULL, out), DG_EINVAL);
  assert_int_equal(dg_ws_accept_key("", out), DG_EINVAL);
  assert_int_equal(dg_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ=", out), DG_EINVAL);
  assert_int_equal(dg_ws_accept_key("dGhlIHNhbXBsZSBub25jZQ===", out), DG_EINVAL);
  assert_int_equal(dg_ws_accept_key("dGhlIHNhbXBsZSBub25j!Q==", out), DG_EINVAL);
  /* 24 characters of base64 that decode to 18 bytes, not 16. */
  assert_int_equal(dg_ws_accept_key("dGhlIHNhbXBsZSBub25jZQab", out), DG_EINVAL);
}

/* ---- UTF-8 --------------------------------------------------------------- */

static bool valid_str(const char *s, size_t n) {
  return dg_utf8_valid((const unsigned char *)s, n);
}

#define VALID(lit) assert_true(valid_str(lit, sizeof(lit) - 1))
#define INVALID(lit) assert_false(valid_str(lit, sizeof(lit) - 1))

static void test_utf8_valid_vectors(void **state) {
  assert_true(dg_utf8_valid((const unsigned char *)"", 0));
  VALID("plain ASCII text, long enough for the eight-byte path");
  VALID("\xce\xba\xe1\xbd\xb9\xcf\x83\xce\xbc\xce\xb5"); /* κόσμε */
  VALID("\x00\x01\x7f");                                 /* NUL is a character */
  VALID("\xc2\x80");                                     /* U+0080 */
  VALID("\xdf\xbf");                                     /* U+07FF */
  VALID("\xe0\xa0\x80");                                 /* U+0800 */
  VALID("\xed\x9f\xbf");                                 /* U+D7FF */
  VALID("\xee\x80\x80");                                 /* U+E000 */
  VALID("\xef\xbb\xbf");                                 /* U+FEFF */
  VALID("\xef\xbf\xbd");                                 /* U+FFFD */
  VALID("\xef\xbf\xbf");                                 /* U+FFFF */
  VALID("\xf0\x90\x80\x80");                             /* U+10000 */
  VALID("\xf0\x9f\x98\x80");                             /* U+1F600 */
  VALID("\xf4\x8f\xbf\xbf");                             /* U+10FFFF */
  VALID("abcdefg\xf0\x9f\x98\x80hijklmnop\xc3\xa9");
}

static void test_utf8_invalid_vectors(void **state) {
  INVALID("\x80");
  INVALID("\xbf");
  INVALID("\x80\xbf\x80");
  INVALID("\xc0\xaf");                 /* overlong '/' */
  INVALID("\xe0\x80\xaf");             /* overlong '/' */
  INVALID("\xf0\x80\x80\xaf");         /* overlong '/' */
  INVALID("\xc1\xbf");                 /* largest 2-byte overlong */
  INVALID("\xe0\x9f\xbf");             /* largest 3-byte overlong */
  INVALID("\xf0\x8f\xbf\xbf");         /* largest 4-byte overlong */
  INVALID("\xc0\x80");                 /* overlong NUL */
  INVALID("\xed\xa0\x80");             /* U+D800 */
  INVALID("\xed\xbf\xbf");             /* U+DFFF */
  INVALID("\xed\xa0\x80\xed\xb0\x80"); /* a surrogate pair */
  INVALID("\xf4\x90\x80\x80");         /* U+110000 */
  INVALID("\xf5\x80\x80\x80");
  INVALID("\xf7\xbf\xbf\xbf");
  INVALID("\xf8\x88\x80\x80\x80"); /* five-byte form */
  INVALID("\xfc\x84\x80\x80\x80\x80");
  INVALID("\xfe");
  INVALID("\xff");
  INVALID("\xc3"); /* truncated at the end */
  INVALID("\xe2\x82");
  INVALID("\xf0\x9f\x98");
  INVALID("\xe2\x82\x41"); /* cut short by ASCII */
  INVALID("\xc3\xc3\xa9");
  INVALID("\xf0\x9f\x98\xc0");
}

/* An invalid byte anywhere in a long ASCII run is found, whatever its
 * position relative to the eight-byte steps. */
static void test_utf8_fast_path_positions(void **state) {
  unsigned char buf[203];
  for (size_t at = 0; at < sizeof(buf); at++) {
    memset(buf, 'a', sizeof(buf));
    assert_true(dg_utf8_valid(buf, sizeof(buf)));
    buf[at] = 0xc3;
    assert_false(dg_utf8_valid(buf, sizeof(buf)));
    if (at + 1 < sizeof(buf)) {
      buf[at + 1] = 0xa9;
      assert_true(dg_utf8_valid(buf, sizeof(buf)));
    }
  }
}

/* Reference decoder: the scalar value that s encodes if it is a
 * well-formed, shortest sequence of exactly n bytes, or -1. */
static long reference_decode(const unsigned char *s, size_t n) {
  static const long min_of_len[] = {0, 0, 0x80, 0x800, 0x10000};
  static const unsigned char lead_mask[] = {0, 0, 0x1f, 0x0f, 0x07};
  static const unsigned char lead_bits[] = {0, 0, 0xc0, 0xe0, 0xf0};
  if ((s[0] & (unsigned char)~lead_mask[n]) != lead_bits[n])
    return -1;
  long v = s[0] & lead_mask[n];
  for (size_t i = 1; i < n; i++) {
    if ((s[i] & 0xc0) != 0x80)
      return -1;
    v = (v << 6) | (s[i] & 0x3f);
  }
  if (v < min_of_len[n] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff))
    return -1;
  return v;
}

static void test_utf8_exhaustive_two_and_three_bytes(void **state) {
  unsigned char s[3];
  for (unsigned a = 0x80; a <= 0xff; a++) {
    for (unsigned b = 0; b <= 0xff; b++) {
      s[0] = (unsigned char)a;
      s[1] = (unsigned char)b;
      assert_int_equal(dg_utf8_valid(s, 2), reference_decode(s, 2) >= 0);
      for (unsigned c = 0; c <= 0xff && a >= 0xe0 && a <= 0xef; c++) {
        s[2] = (unsigned char)c;
        assert_int_equal(dg_utf8_valid(s, 3), reference_decode(s, 3) >= 0);
      }
    }
  }
}

/* Every scalar value encodes to a valid sequence; every surrogate
 * encoded the same way is refused. */
static size_t encode(unsigned long v, unsigned char *out) {
  if (v < 0x80) {
    out[0] = (unsigned char)v;
    return 1;
  }
  if (v < 0x800) {
    out[0] = (unsigned char)(0xc0 | (v >> 6));
    out[1] = (unsigned char)(0x80 | (v & 0x3f));
    return 2;
  }
  if (v < 0x10000) {
    out[0] = (unsigned char)(0xe0 | (v >> 12));
    out[1] = (unsigned char)(0x80 | ((v >> 6) & 0x3f));
    out[2] = (unsigned char)(0x80 | (v & 0x3f));
    return 3;
  }
  out[0] = (unsigned char)(0xf0 | (v >> 18));
  out[1] = (unsigned char)(0x80 | ((v >> 12) & 0x3f));
  out[2] = (unsigned char)(0x80 | ((v >> 6) & 0x3f));
  out[3] = (unsigned char)(0x80 | (v & 0x3f));
  return 4;
}

static void test_utf8_every_code_point(void **state) {
  unsigned char s[4];
  for (unsigned long v = 0; v <= 0x10ffff + 0x100; v++) {
    size_t n = encode(v, s);
    bool want = v <= 0x10ffff && (v < 0xd800 || v > 0xdfff);
    if (dg_utf8_valid(s, n) != want)
      fail_msg("code point U+%04lX: expected %s", v, want ? "valid" : "invalid");
    if (n > 1 && dg_utf8_valid(s, n - 1))
      fail_msg("code point U+%04lX cut short was accepted", v);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rfc_unmasked_text),
      cmocka_unit_test(test_rfc_masked_text),
      cmocka_unit_test(test_rfc_fragmented_text),
      cmocka_unit_test(test_rfc_ping_pong),
      cmocka_unit_test(test_rfc_256_and_64k_binary),
      cmocka_unit_test(test_byte_by_byte),
      cmocka_unit_test(test_every_two_way_split),
      cmocka_unit_test(test_length_boundaries_roundtrip),
      cmocka_unit_test(test_frame_header_bytes),
      cmocka_unit_test(test_reserved_bits),
      cmocka_unit_test(test_unknown_opcodes),
      cmocka_unit_test(test_control_frames_rules),
      cmocka_unit_test(test_control_frame_125_accepted),
      cmocka_unit_test(test_masking_enforced),
      cmocka_unit_test(test_non_minimal_lengths),
      cmocka_unit_test(test_length_top_bit),
      cmocka_unit_test(test_too_big),
      cmocka_unit_test(test_exact_max_frame_accepted),
      cmocka_unit_test(test_callback_abort_propagates),
      cmocka_unit_test(test_buffer_released_when_idle),
      cmocka_unit_test(test_accept_key),
      cmocka_unit_test(test_accept_key_invalid),
      cmocka_unit_test(test_utf8_valid_vectors),
      cmocka_unit_test(test_utf8_invalid_vectors),
      cmocka_unit_test(test_utf8_fast_path_positions),
      cmocka_unit_test(test_utf8_exhaustive_two_and_three_bytes),
      cmocka_unit_test(test_utf8_every_code_point),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
