/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* base: the small utilities every other module uses and that depend on
 * nothing but libc and jansson: error codes with caller-facing detail,
 * per-request arenas, bounded buffers, JSON-lines logging, metrics, GUIDs
 * and a few string helpers. */
#ifndef DATAGATE_BASE_H
#define DATAGATE_BASE_H

#include <jansson.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Test builds make DG_TESTABLE functions visible to unit tests. */
#ifdef DG_TEST_BUILD
#define DG_TESTABLE
#else
#define DG_TESTABLE static
#endif

#define DG_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* Intrusive lists: an element carries its own link fields (named by the
 * caller, so one element can sit on several lists), the owner holds the
 * head (and the tail of a queue). Written once here so that every list in
 * the tree links and unlinks the same way. */
#define DG_LIST_PUSH(head, node, prev, next)                                                       \
  do {                                                                                             \
    (node)->prev = NULL;                                                                           \
    (node)->next = (head);                                                                         \
    if ((head) != NULL)                                                                            \
      (head)->prev = (node);                                                                       \
    (head) = (node);                                                                               \
  } while (0)
#define DG_LIST_UNLINK(head, node, prev, next)                                                     \
  do {                                                                                             \
    if ((node)->prev != NULL)                                                                      \
      (node)->prev->next = (node)->next;                                                           \
    else                                                                                           \
      (head) = (node)->next;                                                                       \
    if ((node)->next != NULL)                                                                      \
      (node)->next->prev = (node)->prev;                                                           \
    (node)->prev = (node)->next = NULL;                                                            \
  } while (0)
/* The same with a tail too, for lists used from both ends (LRU caches,
 * wait queues that can also drop a waiter from the middle). */
#define DG_DLIST_PUSH(head, tail, node, prev, next)                                                \
  do {                                                                                             \
    DG_LIST_PUSH(head, node, prev, next);                                                          \
    if ((tail) == NULL)                                                                            \
      (tail) = (node);                                                                             \
  } while (0)
#define DG_DLIST_APPEND(head, tail, node, prev, next)                                              \
  do {                                                                                             \
    (node)->next = NULL;                                                                           \
    (node)->prev = (tail);                                                                         \
    if ((tail) != NULL)                                                                            \
      (tail)->next = (node);                                                                       \
    else                                                                                           \
      (head) = (node);                                                                             \
    (tail) = (node);                                                                               \
  } while (0)
#define DG_DLIST_UNLINK(head, tail, node, prev, next)                                              \
  do {                                                                                             \
    if ((node)->prev != NULL)                                                                      \
      (node)->prev->next = (node)->next;                                                           \
    else                                                                                           \
      (head) = (node)->next;                                                                       \
    if ((node)->next != NULL)                                                                      \
      (node)->next->prev = (node)->prev;                                                           \
    else                                                                                           \
      (tail) = (node)->prev;                                                                       \
    (node)->prev = (node)->next = NULL;                                                            \
  } while (0)
/* A singly linked first-in first-out queue: append at the tail. */
#define DG_QUEUE_PUSH(head, tail, node, next)                                                      \
  do {                                                                                             \
    (node)->next = NULL;                                                                           \
    if ((tail) != NULL)                                                                            \
      (tail)->next = (node);                                                                       \
    else                                                                                           \
      (head) = (node);                                                                             \
    (tail) = (node);                                                                               \
  } while (0)

/* Memory kept for reuse (free lists, caches) is marked unusable while it
 * waits, so that AddressSanitizer still reports a use after release. */
#if defined(__SANITIZE_ADDRESS__)
#define DG_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define DG_ASAN 1
#endif
#endif
#ifdef DG_ASAN
#include <sanitizer/asan_interface.h>
#define DG_POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define DG_UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define DG_POISON(p, n) ((void)(p), (void)(n))
#define DG_UNPOISON(p, n) ((void)(p), (void)(n))
#endif

/* ---- Errors ------------------------------------------------------------
 * Functions return 0 or a negative DG_E* code. One table generates the
 * codes, their names and their default messages. */
#define DG_ERRNO_MAP(XX)                                                                           \
  XX(EINVAL, -1, "invalid argument")                                                               \
  XX(ENOMEM, -2, "out of memory")                                                                  \
  XX(E2BIG, -3, "over a configured limit")                                                         \
  XX(ENOENT, -4, "not found")                                                                      \
  XX(EPERM, -5, "permission denied")                                                               \
  XX(EAUTH, -6, "authentication required")                                                         \
  XX(ETIMEDOUT, -7, "timed out")                                                                   \
  XX(ECANCELED, -8, "canceled")                                                                    \
  XX(EIO, -9, "input/output error")                                                                \
  XX(EPROTO, -10, "protocol error")                                                                \
  XX(ECONFIG, -11, "invalid configuration")                                                        \
  XX(EBUSY, -12, "overloaded")                                                                     \
  XX(EUPSTREAM, -13, "upstream call failed")                                                       \
  XX(ECLOSED, -14, "connection closed")                                                            \
  XX(ENOTSUP, -15, "not supported")                                                                \
  XX(EEXIST, -16, "already exists")

enum {
#define XX(name, value, msg) DG_##name = (value),
  DG_ERRNO_MAP(XX)
#undef XX
};

/* Name ("DG_EINVAL") and message of a code; "unknown error" otherwise. */
const char *dg_err_name(int code);
const char *dg_strerror(int code);

/* Caller-facing detail of a failure: which parameter, what was given and
 * what is allowed, as one sentence the client can act on. */
typedef struct dg_errctx {
  int code;
  char param[128];
  char message[1024];
} dg_errctx_t;

void dg_errctx_clear(dg_errctx_t *ctx);
/* Sets code, param and a formatted message; returns code for tail calls. */
int dg_errctx_set(dg_errctx_t *ctx, int code, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* ---- Arena -------------------------------------------------------------
 * Per-request memory: everything allocated from an arena is released at
 * once by dg_arena_destroy, after the destructors registered with
 * dg_arena_defer have run (last registered first). Allocation failure
 * returns NULL. */
typedef struct dg_arena dg_arena_t;

dg_arena_t *dg_arena_new(size_t block_size);
void dg_arena_destroy(dg_arena_t *arena);
void *dg_arena_alloc(dg_arena_t *arena, size_t size);
void *dg_arena_calloc(dg_arena_t *arena, size_t n, size_t size);
char *dg_arena_strdup(dg_arena_t *arena, const char *s);
char *dg_arena_strndup(dg_arena_t *arena, const char *s, size_t n);
char *dg_arena_sprintf(dg_arena_t *arena, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Runs fn(data) when the arena is destroyed; returns DG_ENOMEM on failure
 * (in which case fn is called at once so nothing leaks). */
int dg_arena_defer(dg_arena_t *arena, void (*fn)(void *), void *data);
/* Bytes handed out so far (for limits and metrics). */
size_t dg_arena_used(const dg_arena_t *arena);

/* ---- Spare blocks --------------------------------------------------------
 * Freed objects of one size kept for the next ones (a client's calls, the
 * connector calls), at most max of them: a waiting block is poisoned but
 * for its first bytes, which link it to the next. Loop thread only. */
typedef struct dg_spare {
  void *head;
  size_t count, max, size;
} dg_spare_t;

void dg_spare_init(dg_spare_t *s, size_t size, size_t max);
/* A kept block (not zeroed) or a new one; NULL when out of memory. */
void *dg_spare_alloc(dg_spare_t *s);
/* Keeps p for reuse when keep is true and there is room, else frees it. */
void dg_spare_release(dg_spare_t *s, void *p, bool keep);
/* Frees every kept block. */
void dg_spare_free_all(dg_spare_t *s);

/* ---- Bounded buffer ----------------------------------------------------
 * A growable byte buffer created with its maximum: growing past it fails
 * with DG_E2BIG and leaves the buffer unchanged. data is always
 * NUL-terminated (the terminator is not counted in len). */
typedef struct dg_buf {
  char *data;
  size_t len;
  size_t cap;
  size_t max;
} dg_buf_t;

void dg_buf_init(dg_buf_t *buf, size_t max);
void dg_buf_free(dg_buf_t *buf);
void dg_buf_reset(dg_buf_t *buf);
int dg_buf_reserve(dg_buf_t *buf, size_t extra);
/* Whether extra more bytes and the terminator fit without growing and
 * within the maximum: dg_buf_reserve would then do nothing. Inline for
 * writers that append thousands of small pieces per answer. */
static inline bool dg_buf_has_room(const dg_buf_t *buf, size_t extra) {
  return buf->data != NULL && extra < buf->cap - buf->len && buf->len + extra <= buf->max;
}
/* dg_buf_reserve, called only when the buffer must grow. */
static inline int dg_buf_room(dg_buf_t *buf, size_t extra) {
  return dg_buf_has_room(buf, extra) ? 0 : dg_buf_reserve(buf, extra);
}
int dg_buf_append(dg_buf_t *buf, const void *data, size_t len);
int dg_buf_append_str(dg_buf_t *buf, const char *s);
int dg_buf_appendf(dg_buf_t *buf, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Appends the whole file at path: 0, DG_ENOENT when it does not exist,
 * DG_E2BIG past the buffer's maximum, or DG_EIO (errno then says why). */
int dg_buf_read_file(dg_buf_t *buf, const char *path);
/* Drops the first n bytes (n <= len). */
void dg_buf_consume(dg_buf_t *buf, size_t n);
/* Hands the memory to the caller (free() it) and resets the buffer. */
char *dg_buf_steal(dg_buf_t *buf, size_t *len);

/* ---- UTF-8 ----------------------------------------------------------------
 * Decodes the UTF-8 sequence at s (RFC 3629): its length (> 0) with *cp set when valid; 0
 * when s holds the start of a valid sequence cut short by avail (more bytes
 * may complete it); otherwise minus the length of the invalid part that one
 * U+FFFD replaces (the maximal subpart, as Unicode recommends). */
int dg_utf8_decode(const unsigned char *s, size_t avail, uint32_t *cp);
/* Writes cp as UTF-8 into out and returns its length (1 to 4); a surrogate
 * or a value past U+10FFFF is written as U+FFFD. */
size_t dg_utf8_encode(uint32_t cp, char out[4]);
/* True when data is valid UTF-8 (no overlongs, surrogates or > U+10FFFF). */
bool dg_utf8_valid(const unsigned char *data, size_t len);

/* ---- JSON output ---------------------------------------------------------
 * Appends value as compact JSON: the same bytes as json_dumps with
 * JSON_COMPACT | JSON_REAL_PRECISION(15) (members in insertion order, reals
 * with 15 significant digits), written faster. Returns 0,
 * DG_E2BIG when out's maximum is reached, DG_EINVAL for a value nested
 * deeper than 2048 levels; on failure out is left as it was. */
int dg_json_write(const json_t *value, dg_buf_t *out);

/* Pieces for writers that build JSON text themselves, with the bytes
 * dg_json_write gives: a string (quoted and escaped; s is UTF-8), a whole
 * number and a real (15 significant digits, ".0" on whole numbers). 0 or
 * DG_E2BIG. */
int dg_json_write_string(dg_buf_t *out, const char *s, size_t len);
int dg_json_write_integer(dg_buf_t *out, int64_t v);
int dg_json_write_real(dg_buf_t *out, double d);

/* The text of a JSON scalar, so that 5 and "5" can be compared or stored
 * alike: a string's own bytes (borrowed), an integer, real (17 significant
 * digits) or boolean written into buf. NULL for null, objects and arrays. */
const char *dg_json_scalar_text(const json_t *v, char *buf, size_t size);
/* The same with reals to digits significant digits: 15 reads as a person
 * wrote the number (0.1), 17 reads back exactly. */
const char *dg_json_scalar_text_digits(const json_t *v, int digits, char *buf, size_t size);

/* A given value for a message: compact JSON (with jansson's extra flags,
 * such as a real precision) cut to DG_JSON_EXCERPT_CHARS characters at a
 * character boundary, "..." marking the cut, control bytes shown as '?'. */
#define DG_JSON_EXCERPT_CHARS 80
void dg_json_excerpt(const json_t *value, size_t flags, char *out, size_t size);
/* A value already written as JSON text, which dg_json_write copies as it
 * is: a large result serialised once on a worker thread instead of again on
 * the loop. The text (len bytes, UTF-8, one complete JSON value; the caller
 * vouches for it) is copied. Anything else that reads the returned value
 * sees an array holding a private marker and the text, so only
 * dg_json_write and dg_json_raw_text should be given it. NULL when out of
 * memory. */
json_t *dg_json_raw(const char *text, size_t len);
/* The text of a dg_json_raw value (borrowed, a JSON string), or NULL for
 * any other value. */
const json_t *dg_json_raw_text(const json_t *value);
/* Keeps beside a dg_json_raw value its text written as a JSON string (at
 * most max bytes), so that a reply carrying the text as a string (a tool
 * result's text item) copies it instead of escaping it each time. For
 * values made once and sent many times; not thread-safe on a shared value.
 * 0, DG_EINVAL (not a raw value), DG_E2BIG or DG_ENOMEM. */
int dg_json_raw_keep_quoted(json_t *raw, size_t max);
/* The kept JSON-string form of a raw value's text, itself a raw value
 * (borrowed) that dg_json_write copies as it is; NULL when none is kept. */
const json_t *dg_json_raw_quoted(const json_t *value);
/* About the bytes dg_json_write gives for value, escapes left out, from at
 * most its first 64 values (deeper or later ones are not counted): room to
 * reserve before writing a reply that carries a large string or raw text. */
size_t dg_json_size_hint(const json_t *value);

/* Makes jansson take its memory from per-thread caches of small blocks (a
 * bounded number per size), sparing the allocator's slower paths for the
 * hundreds of small values each request parses and builds. Blocks remain
 * ordinary malloc blocks (free() works on what jansson returns). Call once,
 * at start-up, before other threads exist. */
void dg_json_use_block_cache(void);

/* ---- JSON input ----------------------------------------------------------
 * Where and why dg_json_parse refused its input: a short English message and
 * the offset of the byte at which it went wrong (the text's length when the
 * text ended too soon). */
typedef enum dg_json_problem {
  DG_JSON_SYNTAX,      /* not JSON */
  DG_JSON_UNSUPPORTED, /* valid JSON jansson cannot hold: \u0000, a number out of range */
  DG_JSON_DUPLICATE,   /* a repeated object key (dg_json_parse_message) */
} dg_json_problem_t;

typedef struct dg_json_parse_error {
  size_t offset;
  char message[80];
  dg_json_problem_t kind;
} dg_json_parse_error_t;

/* Parses text (len bytes, need not be NUL-terminated) as exactly one JSON
 * value of any type, with optional whitespace around it, and returns it as a
 * new reference: the value json_loadb with JSON_DECODE_ANY gives for the same
 * text, only faster. It accepts and refuses the same texts: strings must be
 * valid UTF-8 with no unescaped control character and no \u0000, surrogate
 * escapes must pair up, whole numbers become integers (out of the int64
 * range is an error, -0 is 0), other numbers become reals (overflow to
 * infinity is an error), a repeated object key keeps its last value, and
 * values nested deeper than 2048 levels are refused. One exception: jansson
 * ignores a NUL byte right after a number or literal, while here a NUL byte
 * outside a string is always an error. Returns NULL on invalid input or when
 * out of memory, with err (may be NULL) filled in. */
json_t *dg_json_parse(const char *text, size_t len, dg_json_parse_error_t *err);

/* dg_json_parse for a JSON-RPC message, which is answered whenever its id
 * can be read. A repeated object key is refused (as the configuration
 * parser does), and so is valid JSON that jansson cannot hold; but the
 * first such problem below the top level, or in a top-level member other
 * than "id", is only recorded in err (kind, message, offset) and the value
 * is returned: a string with \u0000 holds U+FFFD in its place, a number
 * out of range is null, a repeated key keeps its last value. The caller
 * checks err->message[0] and refuses the message with its id. NULL (err
 * says why) when the text is not JSON, or when "id" is repeated or cannot
 * be read. */
json_t *dg_json_parse_message(const char *text, size_t len, dg_json_parse_error_t *err);

/* ---- Logging -----------------------------------------------------------
 * JSON lines on one file descriptor (stderr by default): one object per
 * line with ts, level, event and the given fields. Never pass secrets. */
typedef enum dg_log_level {
  DG_LOG_DEBUG,
  DG_LOG_INFO,
  DG_LOG_WARN,
  DG_LOG_ERROR,
  /* Lines other programs wait for (the bound address): written whatever
   * the minimum level is, never chosen as a minimum. */
  DG_LOG_NOTICE
} dg_log_level_t;

void dg_log_init(int fd, dg_log_level_t min_level);
/* Fields every line carries from now on (for example the worker number);
 * the object is copied. */
void dg_log_set_common(json_t *fields);
bool dg_log_enabled(dg_log_level_t level);
/* Writes one line; fields (may be NULL) is stolen. */
void dg_log_json(dg_log_level_t level, const char *event, json_t *fields);
/* The end of every state machine's illegal move (a bug worth a stop):
 * an "illegal_state" line naming what moved, from and to, then abort. */
void dg_log_illegal_state(const char *what, const char *from, const char *to)
    __attribute__((noreturn));
/* Writes one line with a formatted "msg" field. */
void dg_logf(dg_log_level_t level, const char *event, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
dg_log_level_t dg_log_level_parse(const char *name, bool *ok);
/* A duration in nanoseconds as milliseconds rounded to the microsecond,
 * for the duration_ms fields (written with three decimals at most). */
double dg_log_ms(uint64_t ns);
/* Appends the common fields as ",\"name\":value" pairs, for lines written
 * by another writer (the access log); 0 or DG_E2BIG. */
int dg_log_write_common(dg_buf_t *out);

/* ---- Metrics -----------------------------------------------------------
 * Per-process counters, gauges and latency histograms rendered in the
 * Prometheus text format. Names are static strings; labels is the inside
 * of the braces, e.g. "tool=\"get_data_models\",transport=\"http\"" or
 * NULL. Only the loop thread updates metrics. */
void dg_metrics_counter_add(const char *name, const char *labels, double value);
void dg_metrics_gauge_add(const char *name, const char *labels, double delta);
void dg_metrics_gauge_set(const char *name, const char *labels, double value);
/* Sets a counter kept elsewhere (the process's CPU time). */
void dg_metrics_counter_set(const char *name, const char *labels, double value);
void dg_metrics_observe(const char *name, const char *labels, double seconds);
/* A series looked up once and then updated without building its labels
 * again (a hot path's counters): bind it, then add or observe through it.
 * A ref stays valid until dg_metrics_reset; unbound (all zero), stale or
 * refused (the table full, the name of another kind) it does nothing. */
typedef struct dg_metrics_ref {
  void *series;
  unsigned long generation;
} dg_metrics_ref_t;
bool dg_metrics_ref_bound(const dg_metrics_ref_t *ref);
void dg_metrics_ref_counter(dg_metrics_ref_t *ref, const char *name, const char *labels);
void dg_metrics_ref_histogram(dg_metrics_ref_t *ref, const char *name, const char *labels);
void dg_metrics_ref_add(const dg_metrics_ref_t *ref, double value);
void dg_metrics_ref_observe(const dg_metrics_ref_t *ref, double seconds);
/* Help text shown for a metric name (optional). */
void dg_metrics_describe(const char *name, const char *help);
int dg_metrics_render(dg_buf_t *out);
/* Sets the process_* metrics of the Prometheus conventions (resident
 * memory, open descriptors, CPU seconds, start time) from /proc; called
 * before a scrape is rendered. */
void dg_metrics_update_process(void);
void dg_metrics_reset(void);

/* ---- Growing arrays ------------------------------------------------------ */
/* The larger block for an array of *cap items of size bytes that is full:
 * first items at first, then twice as many, never more than max. NULL
 * (the array left as it is) when out of memory or past max; else *cap is
 * the new capacity. */
void *dg_array_grow(void *items, size_t *cap, size_t size, size_t first, size_t max);

/* ---- GUIDs, time, strings ---------------------------------------------- */
#define DG_UUID_LEN 36
/* Random (version 4) GUID, lower case, NUL-terminated. */
void dg_uuid_v4(char out[DG_UUID_LEN + 1]);
/* True for the 8-4-4-4-12 hexadecimal form (either case). */
bool dg_uuid_valid(const char *s);
/* Fills buf with n random bytes from the kernel; 0 or DG_EIO. */
int dg_random_bytes(void *buf, size_t n);

/* SHA-256 digest (mbedTLS), for token lookups. */
void dg_sha256(const void *data, size_t len, unsigned char out[32]);
/* A counted byte string, as one part of a message to hash. */
typedef struct dg_bytes {
  const void *data;
  size_t len;
} dg_bytes_t;

/* HMAC-SHA256 (RFC 2104) under key of the concatenation of the n parts. */
void dg_hmac_sha256(const void *key, size_t key_len, const dg_bytes_t *parts, size_t n,
                    unsigned char out[32]);
/* Constant-time comparison of two equal-length byte strings. */
bool dg_ct_equal(const void *a, const void *b, size_t len);

/* Monotonic milliseconds and nanoseconds. */
uint64_t dg_now_ms(void);
uint64_t dg_now_ns(void);
/* UTC time as "2026-11-23T05:25:12.123Z" into out (at least 32 bytes). */
void dg_time_iso8601(char *out, size_t size);

/* Copies name with its first letter lowercased ("OrderNumber" ->
 * "orderNumber"), as the seed's result keys are. */
char *dg_camel_first(dg_arena_t *arena, const char *name);
/* strncpy that always terminates and reports truncation (returns false). */
bool dg_strlcpy(char *dst, const char *src, size_t size);
/* Case-insensitive ASCII comparison of a counted string with a C string. */
bool dg_strieq_n(const char *a, size_t alen, const char *b);
/* An authority "host[:port]" of RFC 3986 3.2.2 (a reg-name, an IPv4
 * address or a bracketed IP literal), as in Host and in origins. host
 * points into the text without brackets; port is "" when absent. */
typedef struct dg_authority {
  const char *host;
  size_t host_len;
  const char *port;
  size_t port_len;
} dg_authority_t;
/* Splits s[0..n); port_wildcard lets the port be "*". False when s is not
 * an authority (empty, user info, a path, white space, a bad port). */
bool dg_authority_parse(const char *s, size_t n, bool port_wildcard, dg_authority_t *out);
bool dg_authority_valid(const char *s, bool port_wildcard);
/* Parses a whole decimal integer in [min, max]; false otherwise. */
bool dg_parse_int64(const char *s, int64_t min, int64_t max, int64_t *out);
/* The value of a hexadecimal digit (either case), or -1. */
int dg_hex_value(unsigned char c);
/* Writes v in decimal at out, without printf and without a NUL; returns
 * how many digits (at most DG_DECIMAL_MAX) were written. */
#define DG_DECIMAL_MAX 20
size_t dg_decimal(char *out, uint64_t v);
/* A 64-bit hash of n bytes, read eight at a time, continuing from seed (0
 * to start; a previous hash to chain pieces). For the gateway's own tables
 * (statements, ids of one request, metric names), whose sizes are bounded:
 * it is not meant to resist chosen collisions. */
uint64_t dg_hash_bytes(const void *data, size_t n, uint64_t seed);

/* A header field of an HTTP message, as the server and the client hand
 * them over. */
typedef struct dg_http_header {
  const char *name;
  const char *value;
} dg_http_header_t;

/* Reason phrase of a status code ("Not Found"). */
const char *dg_http_status_text(int status);
/* The trace id of a request id: its 32 hex digits when it is a GUID (or
 * already 32 hex digits), else the first half of its SHA-256; random when
 * absent. */
void dg_trace_id(const char *request_id, char out[33]);
/* The trace id of a W3C traceparent header value (version 00, or a later
 * version read as 00 says); false for an invalid value, which is ignored. */
bool dg_traceparent_trace_id(const char *value, char out[33]);

#endif
