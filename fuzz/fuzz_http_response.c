/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Feeds arbitrary bytes to the upstream response parser as the connector
 * client does: framing by Content-Length, chunks or the end of the
 * connection, interim responses, gzip and deflate decoding under a body
 * cap, and what the client reads from a response head to decide what comes
 * next (Location resolved against the request URL, Retry-After).
 *
 * The first input byte chooses how the rest is cut into reads (low four
 * bits: 0 means one read, else reads of 1..15 bytes), whether the request
 * was HEAD (bit 4), whether the peer ends with EOF (bit 5) and whether the
 * body cap is small (bit 6). */
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "client/internal.h"

typedef struct sink_state {
  dg_arena_t *arena;
  dg__url_t base;
  size_t body;
} sink_state_t;

static int on_head(dg__resp_t *r, void *user) {
  sink_state_t *s = user;
  const char *location = dg__resp_header(r, "Location");
  dg__url_t next;
  const char *why = NULL;
  if (location != NULL)
    dg__url_resolve(s->arena, &s->base, location, &next, &why);
  uint64_t after = 0;
  dg__retry_after_ms(dg__resp_header(r, "Retry-After"), (int64_t)time(NULL), &after);
  char excerpt[64];
  dg__excerpt(r->head.data, r->head.len, excerpt, sizeof(excerpt));
  return 0;
}

static int on_body(dg__resp_t *r, const char *data, size_t len, void *user) {
  sink_state_t *s = user;
  s->body += len;
  return 0;
}

static int on_complete(dg__resp_t *r, void *user) {
  return 0;
}

static const dg__resp_sink_t sink = {on_head, on_body, on_complete};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0)
    return 0;
  uint8_t mode = data[0];
  size_t step = mode & 0x0f;
  const char *p = (const char *)data + 1;
  size_t left = size - 1;
  sink_state_t s = {.arena = dg_arena_new(4096)};
  const char *why = NULL;
  dg__url_parse(s.arena, "https://api.example.com/v1/items?page=2", &s.base, &why);
  static dg__resp_t r;
  dg__resp_init(&r, 4096, &sink, &s);
  dg__resp_begin(&r, (mode & 0x10) != 0, (mode & 0x40) ? 256 : 1 << 20);
  int rc = 0;
  while (left > 0 && rc == 0 && !r.complete) {
    size_t n = step == 0 || step > left ? left : step;
    rc = dg__resp_feed(&r, p, n, NULL);
    p += n;
    left -= n;
  }
  if (rc == 0 && (mode & 0x20))
    dg__resp_eof(&r);
  dg__resp_free(&r);
  dg_arena_destroy(s.arena);
  return 0;
}
