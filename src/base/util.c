/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* GUIDs, clocks and small string helpers. */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "datagate/base.h"

int dg_random_bytes(void *buf, size_t n) {
  unsigned char *p = buf;
  while (n > 0) {
    ssize_t got = getrandom(p, n, 0);
    if (got < 0) {
      if (errno == EINTR)
        continue;
      return DG_EIO;
    }
    p += got;
    n -= (size_t)got;
  }
  return 0;
}

/* Every HTTP request takes a GUID for its id. Their bytes come from a
 * per-thread pool filled by one getrandom(2) for 64 GUIDs, instead of a
 * system call per request. A forked child empties its pool, so that
 * workers never hand out the same GUIDs. */
#define UUID_POOL_BYTES (64 * 16)

static _Thread_local unsigned char uuid_pool[UUID_POOL_BYTES];
static _Thread_local size_t uuid_pool_left;
static pthread_once_t uuid_fork_once = PTHREAD_ONCE_INIT;

static void uuid_pool_forget(void) {
  uuid_pool_left = 0;
}

static void uuid_fork_register(void) {
  pthread_atfork(NULL, NULL, uuid_pool_forget);
}

static int uuid_bytes(unsigned char b[16]) {
  pthread_once(&uuid_fork_once, uuid_fork_register);
  if (uuid_pool_left < 16) {
    if (dg_random_bytes(uuid_pool, sizeof(uuid_pool)) != 0)
      return DG_EIO;
    uuid_pool_left = sizeof(uuid_pool);
  }
  uuid_pool_left -= 16;
  memcpy(b, uuid_pool + uuid_pool_left, 16);
  /* Bytes handed out are not kept. */
  memset(uuid_pool + uuid_pool_left, 0, 16);
  return 0;
}

void dg_uuid_v4(char out[DG_UUID_LEN + 1]) {
  static const char hex[] = "0123456789abcdef";
  unsigned char b[16];
  if (uuid_bytes(b) != 0) {
    /* getrandom does not fail on a running Linux system; fall back to a
     * time-seeded value rather than abort. */
    uint64_t t = dg_now_ns();
    for (size_t i = 0; i < sizeof(b); i++)
      b[i] = (unsigned char)(t >> ((i % 8) * 8)) ^ (unsigned char)(i * 31);
  }
  b[6] = (unsigned char)((b[6] & 0x0f) | 0x40);
  b[8] = (unsigned char)((b[8] & 0x3f) | 0x80);
  char *o = out;
  for (int i = 0; i < 16; i++) {
    if (i == 4 || i == 6 || i == 8 || i == 10)
      *o++ = '-';
    *o++ = hex[b[i] >> 4];
    *o++ = hex[b[i] & 15];
  }
  *o = '\0';
}

/* Without branches on the digits: ids are random, and a branch per digit
 * is mispredicted half the time, which made checking the 50 ids of a
 * request cost more than parsing them. With SSE2 (every x86-64) sixteen
 * bytes are classified at once; otherwise each byte's class is looked up
 * and compared with the class its position wants. */
#if defined(__SSE2__)
/* The high bit of each byte of the sixteen at p that is in its place: a
 * dash where dashes (0xff bytes) has one, a hexadecimal digit elsewhere. */
static unsigned uuid_block(const unsigned char *p, __m128i dashes) {
  __m128i x = _mm_loadu_si128((const __m128i *)(const void *)p);
  __m128i d = _mm_sub_epi8(x, _mm_set1_epi8('0'));
  __m128i l = _mm_sub_epi8(_mm_or_si128(x, _mm_set1_epi8(0x20)), _mm_set1_epi8('a'));
  __m128i hex = _mm_or_si128(_mm_cmpeq_epi8(_mm_min_epu8(d, _mm_set1_epi8(9)), d),
                             _mm_cmpeq_epi8(_mm_min_epu8(l, _mm_set1_epi8(5)), l));
  __m128i dash = _mm_cmpeq_epi8(x, _mm_set1_epi8('-'));
  __m128i ok = _mm_or_si128(_mm_and_si128(dashes, dash), _mm_andnot_si128(dashes, hex));
  return (unsigned)_mm_movemask_epi8(ok);
}

/* Sixteen bytes at a time: 0-15, 16-31 and 20-35 (overlapping), each
 * compared with where its dashes belong. */
static bool uuid_form_ok(const unsigned char *p) {
  const __m128i first = _mm_setr_epi8(0, 0, 0, 0, 0, 0, 0, 0, -1, 0, 0, 0, 0, -1, 0, 0);
  const __m128i second = _mm_setr_epi8(0, 0, -1, 0, 0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0);
  const __m128i last = _mm_setr_epi8(0, 0, 0, -1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0);
  return (uuid_block(p, first) & uuid_block(p + 16, second) & uuid_block(p + 20, last)) == 0xffff;
}
#else
static const unsigned char uuid_class[256] = {
    ['0'] = 1, ['1'] = 1, ['2'] = 1, ['3'] = 1, ['4'] = 1, ['5'] = 1, ['6'] = 1, ['7'] = 1,
    ['8'] = 1, ['9'] = 1, ['a'] = 1, ['b'] = 1, ['c'] = 1, ['d'] = 1, ['e'] = 1, ['f'] = 1,
    ['A'] = 1, ['B'] = 1, ['C'] = 1, ['D'] = 1, ['E'] = 1, ['F'] = 1, ['-'] = 2};

/* The class each position of 8-4-4-4-12 wants: 1 a digit, 2 a dash. */
static const unsigned char uuid_form[DG_UUID_LEN] = {1, 1, 1, 1, 1, 1, 1, 1, 2, 1, 1, 1,
                                                     1, 2, 1, 1, 1, 1, 2, 1, 1, 1, 1, 2,
                                                     1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};

static bool uuid_form_ok(const unsigned char *p) {
  unsigned bad = 0;
  for (int i = 0; i < DG_UUID_LEN; i++)
    bad |= uuid_class[p[i]] ^ uuid_form[i];
  return bad == 0;
}
#endif

bool dg_uuid_valid(const char *s) {
  /* One measured length, so that no byte past a shorter string's
   * terminator is read. */
  if (s == NULL || strnlen(s, DG_UUID_LEN + 1) != DG_UUID_LEN)
    return false;
  return uuid_form_ok((const unsigned char *)s);
}

uint64_t dg_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

uint64_t dg_now_ms(void) {
  return dg_now_ns() / 1000000ULL;
}

/* The date and time to the second, formatted once per second per thread:
 * every log line asks, and strftime costs more than the rest of a line. */
static _Thread_local time_t iso_second = -1;
static _Thread_local char iso_base[24];

void dg_time_iso8601(char *out, size_t size) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  if (ts.tv_sec != iso_second) {
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    if (strftime(iso_base, sizeof(iso_base), "%Y-%m-%dT%H:%M:%S", &tm) == 0)
      iso_base[0] = '\0';
    iso_second = ts.tv_sec;
  }
  char text[32];
  size_t n = strlen(iso_base);
  memcpy(text, iso_base, n);
  unsigned ms = (unsigned)(ts.tv_nsec / 1000000L);
  text[n++] = '.';
  text[n++] = (char)('0' + ms / 100);
  text[n++] = (char)('0' + ms / 10 % 10);
  text[n++] = (char)('0' + ms % 10);
  text[n++] = 'Z';
  text[n] = '\0';
  if (size > 0)
    dg_strlcpy(out, text, size);
}

char *dg_camel_first(dg_arena_t *arena, const char *name) {
  char *s = dg_arena_strdup(arena, name);
  if (s != NULL && s[0] != '\0')
    s[0] = (char)tolower((unsigned char)s[0]);
  return s;
}

bool dg_strlcpy(char *dst, const char *src, size_t size) {
  if (size == 0)
    return false;
  size_t n = strlen(src);
  bool fits = n < size;
  if (!fits)
    n = size - 1;
  memcpy(dst, src, n);
  dst[n] = '\0';
  return fits;
}

bool dg_strieq_n(const char *a, size_t alen, const char *b) {
  size_t blen = strlen(b);
  if (alen != blen)
    return false;
  for (size_t i = 0; i < alen; i++) {
    if (tolower((unsigned char)a[i]) != tolower((unsigned char)b[i]))
      return false;
  }
  return true;
}

static bool reg_name_char(unsigned char ch) {
  return isalnum(ch) || (ch != '\0' && strchr("-._~%!$&'()*+,;=", ch) != NULL);
}

/* The port after the host: empty, digits, or "*" when allowed. */
static bool port_ok(const char *p, size_t n, bool wildcard) {
  if (n == 1 && p[0] == '*')
    return wildcard;
  if (n > 5)
    return false;
  for (size_t i = 0; i < n; i++) {
    if (!isdigit((unsigned char)p[i]))
      return false;
  }
  return true;
}

bool dg_authority_parse(const char *s, size_t n, bool port_wildcard, dg_authority_t *out) {
  size_t i = 0;
  if (n > 0 && s[0] == '[') {
    for (i = 1; i < n && s[i] != ']'; i++) {
      if (!isxdigit((unsigned char)s[i]) && s[i] != ':' && s[i] != '.')
        return false;
    }
    if (i >= n || i == 1)
      return false;
    out->host = s + 1;
    out->host_len = i - 1;
    i++;
  } else {
    while (i < n && s[i] != ':' && reg_name_char((unsigned char)s[i]))
      i++;
    out->host = s;
    out->host_len = i;
    if (i == 0)
      return false;
  }
  out->port = s + n;
  out->port_len = 0;
  if (i == n)
    return true;
  if (s[i] != ':')
    return false;
  out->port = s + i + 1;
  out->port_len = n - i - 1;
  return port_ok(out->port, out->port_len, port_wildcard);
}

bool dg_authority_valid(const char *s, bool port_wildcard) {
  dg_authority_t a;
  return s != NULL && dg_authority_parse(s, strlen(s), port_wildcard, &a);
}

bool dg_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out) {
  if (s == NULL || *s == '\0' || isspace((unsigned char)*s))
    return false;
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (errno != 0 || *end != '\0' || v < min || v > max)
    return false;
  *out = v;
  return true;
}

#include <mbedtls/sha256.h>

void dg_sha256(const void *data, size_t len, unsigned char out[32]) {
  mbedtls_sha256_ret(data, len, out, 0);
}

bool dg_ct_equal(const void *a, const void *b, size_t len) {
  const unsigned char *x = a, *y = b;
  unsigned char diff = 0;
  for (size_t i = 0; i < len; i++)
    diff |= (unsigned char)(x[i] ^ y[i]);
  return diff == 0;
}

int dg_hex_value(unsigned char c) {
  if (c >= '0' && c <= '9')
    return c - '0';
  if (c >= 'a' && c <= 'f')
    return c - 'a' + 10;
  if (c >= 'A' && c <= 'F')
    return c - 'A' + 10;
  return -1;
}

/* Two digits at a time from the end, into place: counting the digits
 * first spares the reversal. */
size_t dg_decimal(char *out, uint64_t v) {
  static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233"
                              "34353637383940414243444546474849505152535455565758596061626364656667"
                              "6869707172737475767778798081828384858687888990919293949596979899";
  size_t n = 1;
  for (uint64_t t = v; t >= 10; t /= 10)
    n++;
  char *w = out + n;
  while (v >= 100) {
    w -= 2;
    memcpy(w, pairs + 2 * (v % 100), 2);
    v /= 100;
  }
  if (v >= 10)
    memcpy(w - 2, pairs + 2 * v, 2);
  else
    w[-1] = (char)('0' + v);
  return n;
}

uint64_t dg_hash_bytes(const void *data, size_t n, uint64_t seed) {
  const unsigned char *s = data;
  uint64_t h = (seed ^ 0x9e3779b97f4a7c15ULL ^ n) * 0xff51afd7ed558ccdULL;
  for (; n >= 8; s += 8, n -= 8) {
    uint64_t w;
    memcpy(&w, s, sizeof(w));
    h = (h ^ w) * 0xff51afd7ed558ccdULL;
    h ^= h >> 32;
  }
  uint64_t w = 0;
  if (n > 0)
    memcpy(&w, s, n);
  h = (h ^ w) * 0xc4ceb9fe1a85ec53ULL;
  return h ^ (h >> 29);
}

void *dg_array_grow(void *items, size_t *cap, size_t size, size_t first, size_t max) {
  size_t want = *cap > 0 ? *cap * 2 : first;
  if (want > max || want < *cap || want > SIZE_MAX / size)
    return NULL;
  void *grown = realloc(items, want * size);
  if (grown != NULL)
    *cap = want;
  return grown;
}
