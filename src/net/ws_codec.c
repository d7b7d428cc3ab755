/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* RFC 6455 frame codec: an incremental frame parser that accepts any split
 * of its input, the header writer for server frames and the handshake's
 * accept key. The codec is pure: it knows nothing of sockets or messages,
 * so the connection reassembles fragments and the fuzzer drives it alone.
 *
 * Memory: the parser owns one payload buffer bounded by max_frame. It is
 * reused for every frame of one dg_ws_parse call and released whenever a
 * call ends between frames, so an idle connection holds no payload memory.
 * An unmasked frame that arrives whole is handed out without any copy. */
#include <mbedtls/base64.h>
#include <mbedtls/sha1.h>
#include <string.h>

#include "datagate/net.h"

#define WS_CLOSE_PROTOCOL 1002
#define WS_CLOSE_TOO_BIG 1009
#define WS_CLOSE_INTERNAL 1011
#define WS_MAX_CONTROL_PAYLOAD 125
#define WS_GUID "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#define WS_KEY_BYTES 16

#define WS_FIN 0x80u
#define WS_RSV 0x70u
#define WS_OPCODE 0x0fu
#define WS_MASK 0x80u
#define WS_LEN7 0x7fu

/* A parser whose need_header is 0 has failed and refuses further input:
 * after an error the stream position is unknown, so nothing after it can
 * be trusted. */
#define WS_FAILED 0

typedef struct parse_ctx {
  int (*on_frame)(const dg_ws_frame_t *frame, void *user);
  void *user;
  int *close_code;
} parse_ctx_t;

static void reset_frame(dg_ws_parser_t *p) {
  p->header_len = 0;
  p->need_header = 2;
  p->payload_len = 0;
  p->in_payload = false;
  dg_buf_reset(&p->payload);
}

void dg_ws_parser_init(dg_ws_parser_t *p, bool require_mask, size_t max_frame) {
  memset(p, 0, sizeof(*p));
  p->require_mask = require_mask;
  p->max_frame = max_frame;
  dg_buf_init(&p->payload, max_frame);
  reset_frame(p);
}

void dg_ws_parser_free(dg_ws_parser_t *p) {
  dg_buf_free(&p->payload);
  reset_frame(p);
}

static int fail(dg_ws_parser_t *p, const parse_ctx_t *c, int close_code) {
  reset_frame(p);
  p->need_header = WS_FAILED;
  *c->close_code = close_code;
  if (close_code == WS_CLOSE_TOO_BIG)
    return DG_E2BIG;
  return close_code == WS_CLOSE_INTERNAL ? DG_ENOMEM : DG_EPROTO;
}

static bool opcode_known(unsigned op) {
  return op <= 2 || (op >= 8 && op <= 10);
}

static bool frame_masked(const dg_ws_parser_t *p) {
  return (p->header[1] & WS_MASK) != 0;
}

/* Checks the first two bytes and works out how long the header is. */
static int check_start(dg_ws_parser_t *p, const parse_ctx_t *c) {
  unsigned b0 = p->header[0], b1 = p->header[1];
  unsigned op = b0 & WS_OPCODE, len7 = b1 & WS_LEN7;
  /* No extension is ever negotiated, so every reserved bit must be clear. */
  if ((b0 & WS_RSV) != 0 || !opcode_known(op))
    return fail(p, c, WS_CLOSE_PROTOCOL);
  if (op >= 8 && ((b0 & WS_FIN) == 0 || len7 > WS_MAX_CONTROL_PAYLOAD))
    return fail(p, c, WS_CLOSE_PROTOCOL);
  if (frame_masked(p) != p->require_mask)
    return fail(p, c, WS_CLOSE_PROTOCOL);
  size_t ext = len7 == 126 ? 2 : len7 == 127 ? 8 : 0;
  p->need_header = 2 + ext + (frame_masked(p) ? 4 : 0);
  return 0;
}

/* Decodes the payload length once the whole header is in. */
static int check_length(dg_ws_parser_t *p, const parse_ctx_t *c) {
  unsigned len7 = p->header[1] & WS_LEN7;
  uint64_t n = len7;
  if (len7 == 126) {
    n = ((uint64_t)p->header[2] << 8) | p->header[3];
    if (n < 126)
      return fail(p, c, WS_CLOSE_PROTOCOL);
  } else if (len7 == 127) {
    n = 0;
    for (int i = 2; i < 10; i++)
      n = (n << 8) | p->header[i];
    if ((n >> 63) != 0 || n <= 0xffff)
      return fail(p, c, WS_CLOSE_PROTOCOL);
  }
  /* Refused before a single payload byte is buffered. */
  if (n > p->max_frame)
    return fail(p, c, WS_CLOSE_TOO_BIG);
  p->payload_len = n;
  return 0;
}

static int deliver(dg_ws_parser_t *p, const unsigned char *payload, size_t len,
                   const parse_ctx_t *c) {
  static const unsigned char empty[1] = {0};
  dg_ws_frame_t frame = {
      .fin = (p->header[0] & WS_FIN) != 0,
      .opcode = (int)(p->header[0] & WS_OPCODE),
      .payload = len > 0 ? payload : empty,
      .len = len,
  };
  int rc = c->on_frame(&frame, c->user);
  /* The payload stays intact until the callback has returned. */
  reset_frame(p);
  if (rc < 0)
    p->need_header = WS_FAILED;
  return rc < 0 ? rc : 0;
}

static int header_step(dg_ws_parser_t *p, const unsigned char *in, size_t n, size_t *used,
                       const parse_ctx_t *c) {
  size_t want = p->need_header - p->header_len;
  size_t take = n < want ? n : want;
  memcpy(p->header + p->header_len, in, take);
  p->header_len += take;
  *used = take;
  if (p->header_len < p->need_header)
    return 0;
  if (p->header_len == 2) {
    int rc = check_start(p, c);
    if (rc != 0 || p->header_len < p->need_header)
      return rc;
  }
  int rc = check_length(p, c);
  if (rc != 0)
    return rc;
  p->in_payload = true;
  return p->payload_len == 0 ? deliver(p, NULL, 0, c) : 0;
}

/* XORs the bytes buffered from offset on with the frame's masking key;
 * the key position follows the byte's position in the payload. Eight bytes
 * at a time: the key repeats every four, so a word of it in the payload's
 * phase fits every word. */
static void unmask(dg_ws_parser_t *p, size_t offset, size_t n) {
  const unsigned char *key = p->header + p->need_header - 4;
  unsigned char *b = (unsigned char *)p->payload.data + offset;
  unsigned char phased[8];
  for (size_t j = 0; j < sizeof(phased); j++)
    phased[j] = key[(offset + j) & 3];
  uint64_t k, w;
  memcpy(&k, phased, sizeof(k));
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    memcpy(&w, b + i, sizeof(w));
    w ^= k;
    memcpy(b + i, &w, sizeof(w));
  }
  for (; i < n; i++)
    b[i] ^= phased[i & 7];
}

static int payload_step(dg_ws_parser_t *p, const unsigned char *in, size_t n, size_t *used,
                        const parse_ctx_t *c) {
  size_t have = p->payload.len;
  size_t want = (size_t)p->payload_len - have;
  bool masked = frame_masked(p);
  if (have == 0 && !masked && n >= want) {
    *used = want;
    return deliver(p, in, want, c);
  }
  size_t take = n < want ? n : want;
  /* One reservation per frame: the buffer then never moves mid-frame. */
  if (have == 0 && dg_buf_reserve(&p->payload, (size_t)p->payload_len) != 0)
    return fail(p, c, WS_CLOSE_INTERNAL);
  if (dg_buf_append(&p->payload, in, take) != 0)
    return fail(p, c, WS_CLOSE_INTERNAL);
  if (masked)
    unmask(p, have, take);
  *used = take;
  if (p->payload.len < p->payload_len)
    return 0;
  return deliver(p, (const unsigned char *)p->payload.data, p->payload.len, c);
}

int64_t dg_ws_parse(dg_ws_parser_t *p, const unsigned char *data, size_t len,
                    int (*on_frame)(const dg_ws_frame_t *frame, void *user), void *user,
                    int *close_code) {
  parse_ctx_t c = {on_frame, user, close_code};
  if (p->need_header == WS_FAILED) {
    *close_code = WS_CLOSE_PROTOCOL;
    return DG_EPROTO;
  }
  size_t pos = 0;
  int rc = 0;
  while (rc == 0 && pos < len) {
    size_t used = 0;
    if (p->in_payload)
      rc = payload_step(p, data + pos, len - pos, &used, &c);
    else
      rc = header_step(p, data + pos, len - pos, &used, &c);
    pos += used;
  }
  if (!p->in_payload)
    dg_buf_free(&p->payload);
  return rc < 0 ? rc : (int64_t)pos;
}

size_t dg_ws_frame_header(unsigned char *out, bool fin, int opcode, uint64_t len) {
  out[0] = (unsigned char)((fin ? WS_FIN : 0) | ((unsigned)opcode & WS_OPCODE));
  if (len < 126) {
    out[1] = (unsigned char)len;
    return 2;
  }
  if (len <= 0xffff) {
    out[1] = 126;
    out[2] = (unsigned char)(len >> 8);
    out[3] = (unsigned char)len;
    return 4;
  }
  out[1] = 127;
  for (int i = 0; i < 8; i++)
    out[2 + i] = (unsigned char)(len >> (56 - 8 * i));
  return 10;
}

/* A client key is the base64 form of 16 random bytes (RFC 6455 4.1). */
static bool client_key_valid(const char *key, size_t n) {
  unsigned char raw[WS_KEY_BYTES + 3];
  size_t olen = 0;
  if (n != 24)
    return false;
  int rc = mbedtls_base64_decode(raw, sizeof(raw), &olen, (const unsigned char *)key, n);
  return rc == 0 && olen == WS_KEY_BYTES;
}

int dg_ws_accept_key(const char *client_key, char out[29]) {
  unsigned char digest[20];
  unsigned char text[64];
  size_t olen = 0;
  size_t n = client_key != NULL ? strlen(client_key) : 0;
  if (client_key == NULL || !client_key_valid(client_key, n))
    return DG_EINVAL;
  memcpy(text, client_key, n);
  memcpy(text + n, WS_GUID, sizeof(WS_GUID) - 1);
  if (mbedtls_sha1_ret(text, n + sizeof(WS_GUID) - 1, digest) != 0)
    return DG_EIO;
  if (mbedtls_base64_encode((unsigned char *)out, 29, &olen, digest, sizeof(digest)) != 0)
    return DG_EIO;
  return 0;
}
