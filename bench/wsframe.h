/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* RFC 6455 frames for the benchmark programs (wsload and wsecho): just
 * enough to build and parse single-frame messages, control frames and the
 * masking of client frames. Not part of the datagate library: the
 * benchmarks must not measure the gateway's own codec against itself. */
#ifndef DATAGATE_BENCH_WSFRAME_H
#define DATAGATE_BENCH_WSFRAME_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

enum { WSF_TEXT = 1, WSF_BINARY = 2, WSF_CLOSE = 8, WSF_PING = 9, WSF_PONG = 10 };

/* The largest frame header: 2 bytes, 8 of extended length, 4 of mask. */
#define WSF_HEADER_MAX 14

typedef struct wsf_frame {
  bool fin;
  int opcode;
  unsigned char *payload; /* unmasked in place; points into the parsed data */
  size_t len;
} wsf_frame_t;

/* Builds one final frame of opcode with payload into out (cap bytes).
 * When rng is not NULL the frame is masked with a key drawn from *rng (a
 * client frame); otherwise it is unmasked (a server frame). Returns the
 * frame's length, or 0 when it does not fit. */
size_t wsf_build(unsigned char *out, size_t cap, int opcode, const void *payload, size_t len,
                 uint32_t *rng);

/* Parses the frame at the start of data, unmasking its payload in place.
 * Returns the whole frame's length, 0 when more bytes are needed, or -1
 * when the frame is malformed or longer than max_payload. */
long wsf_parse(unsigned char *data, size_t len, size_t max_payload, wsf_frame_t *frame);

/* A fast pseudo-random generator for masking keys (xorshift32; the seed
 * must not be 0). */
uint32_t wsf_random(uint32_t *state);

#endif
