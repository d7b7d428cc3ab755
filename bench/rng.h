/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The deterministic random numbers of the entity benchmarks: the dataset
 * generator (gen_dataset) and the workload (entitybench) draw from the
 * same splitmix64, small, fast and good enough for test data. */
#ifndef BENCH_RNG_H
#define BENCH_RNG_H

#include <stdint.h>

typedef struct rng {
  uint64_t s;
} rng_t;

static inline uint64_t next(rng_t *r) {
  uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

/* A whole number from lo to hi, both included. */
static inline int64_t range(rng_t *r, int64_t lo, int64_t hi) {
  return lo + (int64_t)(next(r) % (uint64_t)(hi - lo + 1));
}

#endif
