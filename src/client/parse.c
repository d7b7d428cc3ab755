/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Upstream responses: llhttp in response mode, headers gathered into one
 * bounded buffer, bodies framed by Content-Length, chunked encoding or the
 * end of the connection, gzip and deflate decoded with zlib, and caps on
 * head and body sizes. Interim 1xx responses are skipped. Pure: the
 * connection feeds bytes in, the sink hears the head, decoded body bytes
 * and the end; the fuzzer drives it directly. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "client/internal.h"

#define INFLATE_CHUNK (16 * 1024)
/* Decoded bytes per feed or drain: a gzip bomb expands a thousandfold, so
 * one read of 64 KiB could otherwise cost the loop 64 MiB of inflating. */
#define INFLATE_TURN (256 * 1024)
/* Compressed bytes held: the connection stops reading while any are, so
 * at most what one read brought (and its TLS records) is ever held. */
#define HELD_MAX ((size_t)1 << 20)

static dg__resp_t *of(llhttp_t *p) {
  return p->data;
}

static int fail(dg__resp_t *r, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int fail(dg__resp_t *r, int code, const char *fmt, ...) {
  if (r->error == 0) {
    va_list ap;
    va_start(ap, fmt);
    r->error = code;
    vsnprintf(r->reason, sizeof(r->reason), fmt, ap);
    va_end(ap);
  }
  return -1;
}

static int append_head(dg__resp_t *r, const char *at, size_t len) {
  if (dg_buf_append(&r->head, at, len) != 0)
    return fail(r, DG_E2BIG, "the response head is over the cap of %zu bytes", r->head.max);
  return 0;
}

static int on_message_begin(llhttp_t *p) {
  dg__resp_t *r = of(p);
  dg_buf_reset(&r->head);
  r->nheaders = 0;
  r->in_value = false;
  r->status_len = 0;
  return 0;
}

/* The reason phrase is not kept, but it must not be endless either. */
static int on_status(llhttp_t *p, const char *at, size_t len) {
  dg__resp_t *r = of(p);
  r->status_len += len;
  if (r->status_len > DG__CLIENT_MAX_STATUS_LINE)
    return fail(r, DG_E2BIG, "the response status line is over %d bytes",
                DG__CLIENT_MAX_STATUS_LINE);
  return 0;
}

static int on_header_field(llhttp_t *p, const char *at, size_t len) {
  dg__resp_t *r = of(p);
  if (r->nheaders >= DG__CLIENT_MAX_HEADERS)
    return fail(r, DG_E2BIG, "the response has more than %d headers", DG__CLIENT_MAX_HEADERS);
  if (!r->in_value) {
    r->name_off[r->nheaders] = (uint32_t)r->head.len;
    r->in_value = true;
  }
  return append_head(r, at, len);
}

static int on_header_field_complete(llhttp_t *p) {
  dg__resp_t *r = of(p);
  r->in_value = false;
  r->value_off[r->nheaders] = UINT32_MAX;
  return append_head(r, "", 1);
}

static int on_header_value(llhttp_t *p, const char *at, size_t len) {
  dg__resp_t *r = of(p);
  if (r->value_off[r->nheaders] == UINT32_MAX)
    r->value_off[r->nheaders] = (uint32_t)r->head.len;
  return append_head(r, at, len);
}

static int on_header_value_complete(llhttp_t *p) {
  dg__resp_t *r = of(p);
  if (r->value_off[r->nheaders] == UINT32_MAX)
    r->value_off[r->nheaders] = (uint32_t)r->head.len;
  if (append_head(r, "", 1) != 0)
    return -1;
  r->nheaders++;
  return 0;
}

/* The head buffer no longer grows for this message: trailing white space
 * is cut from the values in place. */
static void build_headers(dg__resp_t *r) {
  for (size_t i = 0; i < r->nheaders; i++) {
    char *value = r->head.data + r->value_off[i];
    size_t n = strlen(value);
    while (n > 0 && (value[n - 1] == ' ' || value[n - 1] == '\t'))
      value[--n] = '\0';
  }
}

void dg__resp_header_at(const dg__resp_t *r, size_t i, const char **name, const char **value) {
  *name = r->head.data + r->name_off[i];
  *value = r->head.data + r->value_off[i];
}

const char *dg__resp_header(const dg__resp_t *r, const char *name) {
  for (size_t i = 0; i < r->nheaders; i++) {
    if (strcasecmp(r->head.data + r->name_off[i], name) == 0)
      return r->head.data + r->value_off[i];
  }
  return NULL;
}

static int pick_coding(dg__resp_t *r) {
  const char *enc = dg__resp_header(r, "Content-Encoding");
  r->coding = 0;
  if (enc == NULL || enc[0] == '\0' || strcasecmp(enc, "identity") == 0)
    return 0;
  if (strcasecmp(enc, "gzip") == 0 || strcasecmp(enc, "x-gzip") == 0)
    r->coding = 1;
  else if (strcasecmp(enc, "deflate") == 0)
    r->coding = 2;
  else
    return fail(r, DG_EPROTO,
                "the response uses Content-Encoding '%.40s' (gzip and deflate are "
                "supported)",
                enc);
  return 0;
}

static int on_headers_complete(llhttp_t *p) {
  dg__resp_t *r = of(p);
  r->status = llhttp_get_status_code(p);
  build_headers(r);
  if (r->status == 101)
    return fail(r, DG_EPROTO, "the upstream switched protocols unasked");
  /* Interim responses carry no body; the real one follows. */
  if (r->status < 200)
    return 0;
  if (pick_coding(r) != 0)
    return -1;
  int rc = r->sink->on_head(r, r->user);
  if (rc != 0) {
    r->error = rc;
    r->sink_failed = true;
    return -1;
  }
  return r->head_only ? 1 : 0;
}

static int deliver(dg__resp_t *r, const char *data, size_t len) {
  if (len == 0)
    return 0;
  if (len > r->max_body - r->body_len)
    return fail(r, DG_E2BIG, "the response body is over the cap of %zu bytes", r->max_body);
  r->body_len += len;
  int rc = r->sink->on_body(r, data, len, r->user);
  if (rc != 0) {
    r->error = rc;
    r->sink_failed = true;
    return -1;
  }
  return 0;
}

/* A zlib header says deflate with a zlib wrapper; servers also send raw
 * deflate under that name, so the first bytes decide. */
static int start_inflate(dg__resp_t *r, const char *at, size_t len) {
  int bits = 15 + 16;
  if (r->coding == 2) {
    unsigned char cmf = (unsigned char)at[0];
    bool wrapped =
        (cmf & 0x0f) == 8 && (len < 2 || ((unsigned)cmf * 256 + (unsigned char)at[1]) % 31 == 0);
    bits = wrapped ? 15 : -15;
  }
  memset(&r->z, 0, sizeof(r->z));
  if (inflateInit2(&r->z, bits) != Z_OK)
    return fail(r, DG_ENOMEM, "out of memory for decoding the body");
  r->z_ready = true;
  return 0;
}

/* Decodes from at until this turn's share is decoded; *used says how many
 * bytes were taken (the decoded size is checked as it grows). */
static int inflate_turn(dg__resp_t *r, const char *at, size_t len, size_t *used) {
  char out[INFLATE_CHUNK];
  r->z.next_in = (Bytef *)(uintptr_t)at;
  r->z.avail_in = (uInt)len;
  *used = 0;
  while (r->z.avail_in > 0 && r->coding != 0 && r->turn_out < INFLATE_TURN) {
    r->z.next_out = (Bytef *)out;
    r->z.avail_out = sizeof(out);
    int zrc = inflate(&r->z, Z_NO_FLUSH);
    if (zrc != Z_OK && zrc != Z_STREAM_END && zrc != Z_BUF_ERROR)
      return fail(r, DG_EPROTO, "the %s body does not decode", r->coding == 1 ? "gzip" : "deflate");
    r->turn_out += sizeof(out) - r->z.avail_out;
    if (deliver(r, out, sizeof(out) - r->z.avail_out) != 0)
      return -1;
    r->z_end = zrc == Z_STREAM_END;
    if (r->z_end && r->coding == 1 && r->z.avail_in > 0)
      inflateReset(&r->z); /* concatenated gzip members */
    else if (r->z_end)
      r->z.avail_in = 0; /* bytes after a deflate stream are ignored */
  }
  *used = len - r->z.avail_in;
  return 0;
}

static int hold(dg__resp_t *r, const char *at, size_t len) {
  if (dg_buf_append(&r->zheld, at, len) != 0)
    return fail(r, DG_E2BIG, "the compressed body arrived faster than it could be decoded");
  return 0;
}

static int inflate_some(dg__resp_t *r, const char *at, size_t len) {
  /* Bytes already held come first. */
  if (r->zheld.len > 0)
    return hold(r, at, len);
  size_t used = 0;
  if (inflate_turn(r, at, len, &used) != 0)
    return -1;
  return used < len ? hold(r, at + used, len - used) : 0;
}

bool dg__resp_held(const dg__resp_t *r) {
  return r->zheld.len > 0;
}

int dg__resp_drain(dg__resp_t *r) {
  if (r->error != 0)
    return r->error;
  size_t used = 0;
  r->turn_out = 0;
  if (r->zheld.len > 0 && inflate_turn(r, r->zheld.data, r->zheld.len, &used) != 0)
    return r->error;
  dg_buf_consume(&r->zheld, used);
  return 0;
}

static int end_marker(dg__resp_t *r) {
  if (r->z_ready && !r->z_end)
    return fail(r, DG_EPROTO, "the %s body ended before its end marker",
                r->coding == 1 ? "gzip" : "deflate");
  return 0;
}

int dg__resp_settle(dg__resp_t *r) {
  if (r->error != 0)
    return r->error;
  if (!r->msg_done || r->zheld.len > 0)
    return 0;
  r->msg_done = false;
  if (end_marker(r) != 0)
    return r->error;
  r->complete = true;
  return r->sink->on_complete(r, r->user);
}

static int on_body(llhttp_t *p, const char *at, size_t len) {
  dg__resp_t *r = of(p);
  /* Compressed bytes are bounded too: a stream of empty blocks decodes to
   * nothing but must not run forever. */
  r->raw_len += len;
  size_t raw_cap = r->max_body > SIZE_MAX / 4 ? SIZE_MAX : r->max_body * 2 + 65536;
  if (r->raw_len > raw_cap)
    return fail(r, DG_E2BIG, "the response body is over the cap of %zu bytes", r->max_body);
  if (r->coding == 0)
    return deliver(r, at, len);
  if (!r->z_ready && start_inflate(r, at, len) != 0)
    return -1;
  return inflate_some(r, at, len);
}

static int on_message_complete(llhttp_t *p) {
  dg__resp_t *r = of(p);
  if (r->status > 0 && r->status < 200)
    return 0; /* an interim response ended; the real one follows */
  r->keep_alive = llhttp_should_keep_alive(p) != 0;
  if (r->zheld.len > 0) {
    /* Complete once what is held is decoded (dg__resp_settle). */
    r->msg_done = true;
    return HPE_PAUSED;
  }
  if (end_marker(r) != 0)
    return -1;
  r->complete = true;
  /* Whatever follows belongs to no request of ours. */
  return HPE_PAUSED;
}

void dg__resp_init(dg__resp_t *r, size_t max_header_bytes, const dg__resp_sink_t *sink,
                   void *user) {
  /* Only the first nheaders entries of the header tables are ever read:
   * they are left as they are, sparing 4 KiB of zeroing per call. */
  memset(r, 0, offsetof(dg__resp_t, name_off));
  llhttp_settings_init(&r->settings);
  r->settings.on_message_begin = on_message_begin;
  r->settings.on_status = on_status;
  r->settings.on_header_field = on_header_field;
  r->settings.on_header_field_complete = on_header_field_complete;
  r->settings.on_header_value = on_header_value;
  r->settings.on_header_value_complete = on_header_value_complete;
  r->settings.on_headers_complete = on_headers_complete;
  r->settings.on_body = on_body;
  r->settings.on_message_complete = on_message_complete;
  /* Header offsets are 32-bit. */
  dg_buf_init(&r->head, max_header_bytes < UINT32_MAX ? max_header_bytes : UINT32_MAX - 1);
  dg_buf_init(&r->zheld, HELD_MAX);
  r->sink = sink;
  r->user = user;
}

static void end_inflate(dg__resp_t *r) {
  if (r->z_ready)
    inflateEnd(&r->z);
  r->z_ready = false;
}

void dg__resp_begin(dg__resp_t *r, bool head_only, size_t max_body) {
  end_inflate(r);
  llhttp_init(&r->parser, HTTP_RESPONSE, &r->settings);
  r->parser.data = r;
  dg_buf_reset(&r->head);
  r->nheaders = 0;
  r->status = 0;
  r->max_body = max_body;
  r->body_len = 0;
  r->raw_len = 0;
  r->coding = 0;
  r->z_end = false;
  r->msg_done = false;
  dg_buf_reset(&r->zheld);
  r->head_only = head_only;
  r->started = false;
  r->complete = false;
  r->keep_alive = false;
  r->trailing = false;
  r->in_value = false;
  r->error = 0;
  r->sink_failed = false;
  r->reason[0] = '\0';
}

static int parse_error(dg__resp_t *r, llhttp_errno_t e) {
  if (r->error != 0)
    return r->error;
  r->error = DG_EPROTO;
  snprintf(r->reason, sizeof(r->reason), "malformed response (%s: %s)", llhttp_errno_name(e),
           llhttp_get_error_reason(&r->parser) != NULL ? llhttp_get_error_reason(&r->parser) : "");
  return r->error;
}

int dg__resp_feed(dg__resp_t *r, const char *data, size_t len, size_t *used) {
  if (used != NULL)
    *used = 0;
  if (r->error != 0)
    return r->error;
  if (r->complete || len == 0)
    return 0;
  r->started = true;
  r->turn_out = 0;
  llhttp_errno_t e = llhttp_execute(&r->parser, data, len);
  size_t taken = len;
  if (e == HPE_PAUSED) {
    const char *pos = llhttp_get_error_pos(&r->parser);
    taken = pos != NULL && pos >= data && pos <= data + len ? (size_t)(pos - data) : len;
  } else if (e != HPE_OK)
    return parse_error(r, e);
  if (used != NULL)
    *used = taken;
  r->trailing = taken < len;
  if (r->complete)
    return r->sink->on_complete(r, r->user);
  return 0;
}

int dg__resp_eof(dg__resp_t *r) {
  if (r->error != 0)
    return r->error;
  if (r->complete)
    return 0;
  if (!r->started) {
    r->error = DG_ECLOSED;
    dg_strlcpy(r->reason, "the connection closed before a response", sizeof(r->reason));
    return r->error;
  }
  llhttp_errno_t e = llhttp_finish(&r->parser);
  if ((e == HPE_OK || e == HPE_PAUSED) && r->complete)
    return r->sink->on_complete(r, r->user);
  if (r->error == 0) {
    r->error = DG_ECLOSED;
    dg_strlcpy(r->reason, "the connection closed before the response ended", sizeof(r->reason));
  }
  return r->error;
}

void dg__resp_free(dg__resp_t *r) {
  end_inflate(r);
  dg_buf_free(&r->head);
  dg_buf_free(&r->zheld);
}
