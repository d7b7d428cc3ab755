/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes the WebSocket frame parser. The first input byte chooses the
 * side (server parsers require masked frames) and how the rest is split
 * into reads; the same bytes are then parsed whole by a second parser,
 * and both runs must agree frame for frame, since a frame's meaning must
 * not depend on how the network happened to cut it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/net.h"

#define MAX_FRAME 4096

typedef struct summary {
  size_t frames;
  uint64_t digest;
} summary_t;

static int on_frame(const dg_ws_frame_t *frame, void *user) {
  summary_t *s = user;
  if (frame->len > MAX_FRAME || frame->payload == NULL)
    abort();
  if (frame->opcode >= 8 && (!frame->fin || frame->len > 125))
    abort();
  if (frame->opcode == 1)
    (void)dg_utf8_valid(frame->payload, frame->len);
  s->frames++;
  s->digest = s->digest * 1099511628211ULL + (uint64_t)frame->opcode * 2 + frame->fin;
  for (size_t i = 0; i < frame->len; i++)
    s->digest = (s->digest ^ frame->payload[i]) * 1099511628211ULL;
  /* Stopping at a close frame exercises the abort path. */
  return frame->opcode == 8 && frame->len == 1 ? -1 : 0;
}

static int64_t parse_split(dg_ws_parser_t *p, const uint8_t *data, size_t len, size_t step,
                           summary_t *s, int *close_code) {
  size_t pos = 0;
  while (pos < len) {
    size_t n = len - pos < step ? len - pos : step;
    int64_t rc = dg_ws_parse(p, data + pos, n, on_frame, s, close_code);
    if (rc < 0)
      return rc;
    if ((size_t)rc != n)
      abort();
    pos += n;
  }
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  bool require_mask = (data[0] & 1) != 0;
  size_t step = (size_t)(data[0] >> 1) + 1;
  dg_ws_parser_t a, b;
  summary_t sa = {0, 0}, sb = {0, 0};
  int ca = 0, cb = 0;
  dg_ws_parser_init(&a, require_mask, MAX_FRAME);
  dg_ws_parser_init(&b, require_mask, MAX_FRAME);
  int64_t ra = parse_split(&a, data + 1, size - 1, step, &sa, &ca);
  int64_t rb = dg_ws_parse(&b, data + 1, size - 1, on_frame, &sb, &cb);
  if (rb >= 0)
    rb = 0;
  if (ra != rb || ca != cb || sa.frames != sb.frames || sa.digest != sb.digest)
    abort();
  dg_ws_parser_free(&a);
  dg_ws_parser_free(&b);
  return 0;
}
