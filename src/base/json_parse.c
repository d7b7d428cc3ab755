/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* JSON text to jansson values, for the message that starts every MCP
 * exchange. jansson's own parser reads its input one character at a time
 * and copies each one into a growing token buffer; this one finds the end
 * of each run of plain string bytes a word at a time and hands the whole
 * run to jansson at once, so a string without escapes is copied exactly
 * once. It accepts exactly what json_loadb with JSON_DECODE_ANY accepts and
 * builds equal values (see base.h). Open containers are kept on an explicit
 * stack bounded by the depth limit, so deeply nested input cannot exhaust
 * the thread's stack. */
#include <errno.h>
#include <float.h>
#include <locale.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/base.h"

/* jansson's JSON_PARSER_MAX_DEPTH: the top-level value is at depth 1. */
#define MAX_DEPTH 2048

/* Decoded strings that contain escapes, and the digits of reals handed to
 * strtod, are assembled here. The storage starts inside the parser and
 * moves to the heap only for a long escaped string or number. */
typedef struct scratch {
  char *data;
  size_t cap;
  char local[256];
} scratch_t;

/* A counted string: into the input when it needed no decoding, otherwise
 * into a scratch buffer. */
typedef struct text_span {
  const char *data;
  size_t len;
} text_span_t;

typedef struct parser {
  const unsigned char *start;
  const unsigned char *p;
  const unsigned char *end;
  dg_json_parse_error_t *err;
  bool failed;
  bool message;  /* dg_json_parse_message: duplicates refused, odd values noted */
  bool noted;    /* err holds a refusal already */
  bool replaced; /* the scalar just read stands in for one jansson cannot hold */
  json_t *root;
  /* Open arrays and objects, innermost last. */
  json_t *open[MAX_DEPTH];
  size_t depth;
  /* The key the next value of the innermost object goes under. */
  text_span_t key;
  scratch_t key_scratch;
  scratch_t value_scratch;
} parser_t;

/* What the parser expects next. */
typedef enum step { STEP_VALUE, STEP_AFTER_VALUE, STEP_KEY, STEP_DONE, STEP_FAILED } step_t;

/* Records the first failure only: later ones are consequences of it. */
static step_t fail(parser_t *ps, const unsigned char *at, const char *message) {
  if (!ps->failed && ps->err != NULL) {
    ps->err->offset = (size_t)(at - ps->start);
    dg_strlcpy(ps->err->message, message, sizeof(ps->err->message));
  }
  ps->failed = true;
  return STEP_FAILED;
}

/* Valid JSON a message may not hold: with dg_json_parse_message the first
 * such thing is recorded and parsing goes on; otherwise it fails. */
static bool note(parser_t *ps, const unsigned char *at, dg_json_problem_t kind,
                 const char *message) {
  if (!ps->message) {
    fail(ps, at, message);
    return false;
  }
  if (!ps->noted && ps->err != NULL) {
    ps->err->offset = (size_t)(at - ps->start);
    ps->err->kind = kind;
    dg_strlcpy(ps->err->message, message, sizeof(ps->err->message));
  }
  ps->noted = true;
  ps->replaced = true;
  return true;
}

static void scratch_init(scratch_t *s) {
  s->data = s->local;
  s->cap = sizeof(s->local);
}

static void scratch_free(scratch_t *s) {
  if (s->data != s->local)
    free(s->data);
}

/* Makes room for extra bytes after the used ones. */
static bool scratch_reserve(parser_t *ps, scratch_t *s, size_t used, size_t extra) {
  if (extra <= s->cap - used)
    return true;
  size_t cap = s->cap;
  while (extra > cap - used)
    cap *= 2;
  char *grown = s->data == s->local ? malloc(cap) : realloc(s->data, cap);
  if (grown == NULL) {
    fail(ps, ps->p, "out of memory");
    return false;
  }
  if (s->data == s->local)
    memcpy(grown, s->local, used);
  s->data = grown;
  s->cap = cap;
  return true;
}

static bool scratch_append(parser_t *ps, scratch_t *s, size_t *used, const void *data, size_t len) {
  if (!scratch_reserve(ps, s, *used, len))
    return false;
  memcpy(s->data + *used, data, len);
  *used += len;
  return true;
}

static bool is_digit(unsigned char c) {
  return c >= '0' && c <= '9';
}

static const unsigned char *skip_space(const unsigned char *p, const unsigned char *end) {
  while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
    p++;
  return p;
}

/* ---- Strings ------------------------------------------------------------ */

/* True when some byte of w is a quote, a backslash, a control character or
 * not ASCII. Each test is the classic "has a zero byte" / "has a byte less
 * than n" trick; they may not say which byte, only whether there is one. */
static bool word_has_special(uint64_t w) {
  const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
  uint64_t quote = w ^ (ones * '"'), backslash = w ^ (ones * '\\');
  uint64_t found =
      ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash) | ((w - ones * 0x20) & ~w) | w;
  return (found & highs) != 0;
}

static bool is_plain(unsigned char c) {
  return c >= 0x20 && c < 0x80 && c != '"' && c != '\\';
}

/* The first byte from p on that a string cannot take as it is, or end. */
static const unsigned char *plain_run_end(const unsigned char *p, const unsigned char *end) {
  while (end - p >= 8) {
    uint64_t w;
    memcpy(&w, p, sizeof(w));
    if (word_has_special(w))
      break;
    p += 8;
  }
  while (p < end && is_plain(*p))
    p++;
  return p;
}

/* The value of four hexadecimal digits at p, or -1. */
static long hex4(const unsigned char *p, const unsigned char *end) {
  if (end - p < 4)
    return -1;
  long v = 0;
  for (int i = 0; i < 4; i++) {
    int d = dg_hex_value(p[i]);
    if (d < 0)
      return -1;
    v = v * 16 + d;
  }
  return v;
}

/* The character a one-letter escape stands for, or 0. */
static char simple_escape(unsigned char c) {
  switch (c) {
  case '"':
  case '\\':
  case '/':
    return (char)c;
  case 'b':
    return '\b';
  case 'f':
    return '\f';
  case 'n':
    return '\n';
  case 'r':
    return '\r';
  case 't':
    return '\t';
  default:
    return 0;
  }
}

/* The code point of the \u escape at p (a high surrogate must be followed
 * by a low one, which is then consumed too); sets *next past it. -1 with
 * the failure recorded otherwise. */
static long unicode_escape(parser_t *ps, const unsigned char *p, const unsigned char **next) {
  long cp = hex4(p + 2, ps->end);
  if (cp < 0)
    return fail(ps, p, "invalid \\u escape"), -1;
  if (cp == 0 && !note(ps, p, DG_JSON_UNSUPPORTED, "\\u0000 is not allowed in a string"))
    return -1;
  *next = p + 6;
  if (cp == 0)
    return 0xfffd; /* U+FFFD stands in for it */
  if (cp >= 0xdc00 && cp <= 0xdfff)
    return fail(ps, p, "lone low surrogate in \\u escape"), -1;
  if (cp < 0xd800 || cp > 0xdbff)
    return cp;
  const unsigned char *q = *next;
  long low = ps->end - q >= 2 && q[0] == '\\' && q[1] == 'u' ? hex4(q + 2, ps->end) : -1;
  if (low < 0xdc00 || low > 0xdfff)
    return fail(ps, p, "high surrogate in \\u escape not followed by a low one"), -1;
  *next = q + 6;
  return 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
}

/* Decodes the escape sequence at *pp (its backslash) into s and moves *pp
 * past it. */
static bool decode_escape(parser_t *ps, scratch_t *s, size_t *used, const unsigned char **pp) {
  const unsigned char *p = *pp;
  if (ps->end - p < 2)
    return fail(ps, ps->end, "unterminated string"), false;
  char simple = simple_escape(p[1]);
  if (simple != 0) {
    *pp = p + 2;
    return scratch_append(ps, s, used, &simple, 1);
  }
  if (p[1] != 'u')
    return fail(ps, p, "invalid escape in string"), false;
  long cp = unicode_escape(ps, p, pp);
  if (cp < 0)
    return false;
  char utf8[4];
  return scratch_append(ps, s, used, utf8, dg_utf8_encode((uint32_t)cp, utf8));
}

/* Reads the string whose opening quote is at ps->p into *out: straight
 * from the input when it has no escapes, otherwise decoded into s. */
static bool read_string(parser_t *ps, scratch_t *s, text_span_t *out) {
  const unsigned char *first = ps->p + 1, *run = first, *p = first;
  size_t used = 0;
  bool decoded = false;
  for (;;) {
    p = plain_run_end(p, ps->end);
    if (p == ps->end)
      return fail(ps, p, "unterminated string"), false;
    if (*p == '"')
      break;
    if (*p >= 0x80) {
      uint32_t cp;
      int n = dg_utf8_decode(p, (size_t)(ps->end - p), &cp);
      if (n <= 0)
        return fail(ps, p, "invalid UTF-8 in string"), false;
      p += n;
      continue;
    }
    if (*p < 0x20)
      return fail(ps, p, "control character in string"), false;
    if (!scratch_append(ps, s, &used, run, (size_t)(p - run)) || !decode_escape(ps, s, &used, &p))
      return false;
    run = p;
    decoded = true;
  }
  if (decoded && !scratch_append(ps, s, &used, run, (size_t)(p - run)))
    return false;
  out->data = decoded ? s->data : (const char *)first;
  out->len = decoded ? used : (size_t)(p - first);
  ps->p = p + 1;
  return true;
}

/* ---- Numbers ------------------------------------------------------------ */

/* Reals are read in the C locale whatever the process's locale is, as
 * jansson does: the decimal point is always '.'. */
static locale_t c_locale;
static pthread_once_t c_locale_once = PTHREAD_ONCE_INIT;

static void make_c_locale(void) {
  c_locale = newlocale(LC_ALL_MASK, "C", (locale_t)0);
}

static double strtod_c(const char *s) {
  pthread_once(&c_locale_once, make_c_locale);
  return c_locale != (locale_t)0 ? strtod_l(s, NULL, c_locale) : strtod(s, NULL);
}

/* Most reals in requests have few digits and a small exponent. Then the
 * digits as a whole number and the power of ten are both exact doubles, and
 * one correctly rounded multiplication or division gives the very double
 * strtod gives. False when the number is not of that kind. The text is
 * known to follow the JSON number grammar. */
static bool exact_small_real(const unsigned char *p, const unsigned char *end, double *out) {
#if FLT_EVAL_METHOD == 0
  static const double powers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                  1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                  1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
  bool negative = *p == '-';
  p += negative;
  /* At most 15 digits: 10^15 < 2^53, below which every whole number is an
   * exact double. */
  uint64_t mantissa = 0;
  int digits = 0, scale = 0;
  for (; p < end && is_digit(*p); p++) {
    if (++digits > 15)
      return false;
    mantissa = mantissa * 10 + (uint64_t)(*p - '0');
  }
  if (p < end && *p == '.') {
    for (p++; p < end && is_digit(*p); p++, scale--) {
      if (++digits > 15)
        return false;
      mantissa = mantissa * 10 + (uint64_t)(*p - '0');
    }
  }
  if (p < end) { /* the exponent */
    p++;
    bool exp_negative = *p == '-';
    p += *p == '-' || *p == '+';
    if (end - p > 2)
      return false;
    int e = 0;
    for (; p < end; p++)
      e = e * 10 + (*p - '0');
    scale += exp_negative ? -e : e;
  }
  if (scale < -22 || scale > 22)
    return false;
  double d = (double)mantissa;
  d = scale < 0 ? d / powers[-scale] : d * powers[scale];
  *out = negative ? -d : d;
  return true;
#else
  (void)p;
  (void)end;
  (void)out;
  return false;
#endif
}

static json_t *make_real(parser_t *ps, const unsigned char *first, const unsigned char *end) {
  double d;
  if (!exact_small_real(first, end, &d)) {
    size_t n = (size_t)(end - first);
    if (!scratch_reserve(ps, &ps->value_scratch, 0, n + 1))
      return NULL;
    memcpy(ps->value_scratch.data, first, n);
    ps->value_scratch.data[n] = '\0';
    errno = 0;
    d = strtod_c(ps->value_scratch.data);
    /* Underflow to zero or a subnormal is accepted, as jansson does. */
    if (errno == ERANGE && isinf(d))
      return note(ps, first, DG_JSON_UNSUPPORTED, "real number out of range") ? json_null() : NULL;
  }
  json_t *v = json_real(d);
  if (v == NULL)
    fail(ps, first, "out of memory");
  return v;
}

static json_t *out_of_range(parser_t *ps, const unsigned char *first) {
  return note(ps, first, DG_JSON_UNSUPPORTED, "integer out of range") ? json_null() : NULL;
}

/* A whole number: the digits (no leading zero but for 0 itself) must fit
 * an int64 with the sign. */
static json_t *make_integer(parser_t *ps, const unsigned char *first, bool negative,
                            const unsigned char *digits, const unsigned char *end) {
  uint64_t limit = negative ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
  uint64_t magnitude = 0;
  if (end - digits > 19) /* more than any int64 has */
    return out_of_range(ps, first);
  for (const unsigned char *p = digits; p < end; p++)
    magnitude = magnitude * 10 + (uint64_t)(*p - '0');
  if (magnitude > limit)
    return out_of_range(ps, first);
  /* -(magnitude - 1) - 1 reaches INT64_MIN without overflowing. */
  json_int_t v =
      negative && magnitude > 0 ? -(json_int_t)(magnitude - 1) - 1 : (json_int_t)magnitude;
  json_t *value = json_integer(v);
  if (value == NULL)
    fail(ps, first, "out of memory");
  return value;
}

static const unsigned char *skip_digits(const unsigned char *p, const unsigned char *end) {
  while (p < end && is_digit(*p))
    p++;
  return p;
}

/* Reads the number at ps->p, following the JSON grammar exactly. */
static json_t *read_number(parser_t *ps) {
  const unsigned char *first = ps->p, *p = first, *end = ps->end;
  bool negative = *p == '-';
  p += negative;
  const unsigned char *digits = p;
  if (p == end || !is_digit(*p))
    return fail(ps, p, "invalid number"), NULL;
  p = *p == '0' ? p + 1 : skip_digits(p, end);
  if (p < end && is_digit(*p))
    return fail(ps, p, "invalid number: leading zero"), NULL;
  const unsigned char *int_end = p;
  if (p < end && *p == '.') {
    const unsigned char *fraction = ++p;
    p = skip_digits(p, end);
    if (p == fraction)
      return fail(ps, p, "invalid number: no digit after '.'"), NULL;
  }
  if (p < end && (*p == 'e' || *p == 'E')) {
    p++;
    p += p < end && (*p == '+' || *p == '-');
    const unsigned char *exponent = p;
    p = skip_digits(p, end);
    if (p == exponent)
      return fail(ps, p, "invalid number: no digit in the exponent"), NULL;
  }
  ps->p = p;
  if (p == int_end)
    return make_integer(ps, first, negative, digits, int_end);
  return make_real(ps, first, p);
}

/* ---- Values ------------------------------------------------------------- */

static json_t *read_literal(parser_t *ps) {
  const unsigned char *p = ps->p;
  size_t avail = (size_t)(ps->end - p);
  if (avail >= 4 && memcmp(p, "true", 4) == 0) {
    ps->p += 4;
    return json_true();
  }
  if (avail >= 5 && memcmp(p, "false", 5) == 0) {
    ps->p += 5;
    return json_false();
  }
  if (avail >= 4 && memcmp(p, "null", 4) == 0) {
    ps->p += 4;
    return json_null();
  }
  return fail(ps, p, "invalid value"), NULL;
}

static json_t *read_scalar(parser_t *ps) {
  unsigned char c = *ps->p;
  if (c == '"') {
    const unsigned char *first = ps->p;
    text_span_t s;
    if (!read_string(ps, &ps->value_scratch, &s))
      return NULL;
    json_t *v = json_stringn_nocheck(s.data, s.len);
    if (v == NULL)
      fail(ps, first, "out of memory");
    return v;
  }
  if (c == '-' || is_digit(c))
    return read_number(ps);
  return read_literal(ps);
}

/* A message's keys are unique, as the configuration's are. The "id" of a
 * message must be read exactly, or nothing can be answered to it. */
static bool check_key(parser_t *ps, const json_t *object, const unsigned char *at, bool replaced) {
  bool repeated = json_object_getn(object, ps->key.data, ps->key.len) != NULL;
  bool id = ps->depth == 1 && ps->key.len == 2 && memcmp(ps->key.data, "id", 2) == 0;
  if (id && (repeated || replaced)) {
    fail(ps, at,
         repeated ? "the key \"id\" is repeated" : "the \"id\" is out of range or holds \\u0000");
    if (ps->err != NULL)
      ps->err->kind = repeated ? DG_JSON_DUPLICATE : DG_JSON_UNSUPPORTED;
    return false;
  }
  if (!repeated)
    return true;
  char message[80];
  snprintf(message, sizeof(message), "the key \"%.*s\" is repeated",
           (int)(ps->key.len > 32 ? 32 : ps->key.len), ps->key.data);
  bool ok = note(ps, at, DG_JSON_DUPLICATE, message);
  ps->replaced = false; /* the value itself is whole */
  return ok;
}

/* Puts a new value where the text has it: as the root, at the end of the
 * innermost array or under the pending key of the innermost object.
 * Steals value (NULL: its failure is recorded already). */
static bool place(parser_t *ps, json_t *value, const unsigned char *at) {
  bool replaced = ps->replaced;
  ps->replaced = false;
  if (value == NULL)
    return false;
  if (ps->depth == 0) {
    ps->root = value;
    return true;
  }
  json_t *open = ps->open[ps->depth - 1];
  if (ps->message && json_is_object(open) && !check_key(ps, open, at, replaced)) {
    json_decref(value);
    return false;
  }
  int rc = json_is_array(open)
               ? json_array_append_new(open, value)
               : json_object_setn_new_nocheck(open, ps->key.data, ps->key.len, value);
  if (rc != 0)
    return fail(ps, at, "out of memory"), false;
  return true;
}

/* An array or object is placed as soon as it opens, so that everything
 * built so far hangs from the root and one decref cleans up on failure. */
static step_t open_container(parser_t *ps) {
  const unsigned char *at = ps->p;
  bool array = *at == '[';
  json_t *v = array ? json_array() : json_object();
  if (v == NULL)
    return fail(ps, at, "out of memory");
  if (!place(ps, v, at))
    return STEP_FAILED;
  ps->p = skip_space(at + 1, ps->end);
  if (ps->p < ps->end && *ps->p == (array ? ']' : '}')) {
    ps->p++;
    return STEP_AFTER_VALUE;
  }
  ps->open[ps->depth++] = v;
  return array ? STEP_VALUE : STEP_KEY;
}

static step_t step_value(parser_t *ps) {
  ps->p = skip_space(ps->p, ps->end);
  if (ps->p == ps->end)
    return fail(ps, ps->p, "unexpected end of input");
  if (ps->depth == MAX_DEPTH)
    return fail(ps, ps->p, "nested deeper than 2048 levels");
  if (*ps->p == '[' || *ps->p == '{')
    return open_container(ps);
  const unsigned char *at = ps->p;
  return place(ps, read_scalar(ps), at) ? STEP_AFTER_VALUE : STEP_FAILED;
}

static step_t step_after_value(parser_t *ps) {
  ps->p = skip_space(ps->p, ps->end);
  if (ps->depth == 0)
    return ps->p == ps->end ? STEP_DONE : fail(ps, ps->p, "unexpected data after the value");
  if (ps->p == ps->end)
    return fail(ps, ps->p, "unexpected end of input");
  bool array = json_is_array(ps->open[ps->depth - 1]);
  unsigned char c = *ps->p++;
  if (c == ',')
    return array ? STEP_VALUE : STEP_KEY;
  if (c == (array ? ']' : '}')) {
    ps->depth--;
    return STEP_AFTER_VALUE;
  }
  return fail(ps, ps->p - 1, array ? "expected ',' or ']'" : "expected ',' or '}'");
}

static step_t step_key(parser_t *ps) {
  ps->p = skip_space(ps->p, ps->end);
  if (ps->p == ps->end)
    return fail(ps, ps->p, "unexpected end of input");
  if (*ps->p != '"')
    return fail(ps, ps->p, "expected a string as object key");
  if (!read_string(ps, &ps->key_scratch, &ps->key))
    return STEP_FAILED;
  ps->p = skip_space(ps->p, ps->end);
  if (ps->p == ps->end || *ps->p != ':')
    return fail(ps, ps->p, "expected ':' after object key");
  ps->p++;
  return STEP_VALUE;
}

static json_t *parse(const char *text, size_t len, bool message, dg_json_parse_error_t *err) {
  parser_t ps;
  ps.message = message;
  ps.noted = false;
  ps.replaced = false;
  ps.start = (const unsigned char *)(text != NULL ? text : "");
  ps.p = ps.start;
  ps.end = ps.start + (text != NULL ? len : 0);
  ps.err = err;
  ps.failed = false;
  ps.root = NULL;
  ps.depth = 0;
  scratch_init(&ps.key_scratch);
  scratch_init(&ps.value_scratch);
  if (err != NULL) {
    err->offset = 0;
    err->message[0] = '\0';
    err->kind = DG_JSON_SYNTAX;
  }
  step_t step = STEP_VALUE;
  while (step != STEP_DONE && step != STEP_FAILED) {
    if (step == STEP_VALUE)
      step = step_value(&ps);
    else if (step == STEP_AFTER_VALUE)
      step = step_after_value(&ps);
    else
      step = step_key(&ps);
  }
  scratch_free(&ps.key_scratch);
  scratch_free(&ps.value_scratch);
  if (step == STEP_FAILED) {
    json_decref(ps.root);
    return NULL;
  }
  return ps.root;
}

json_t *dg_json_parse(const char *text, size_t len, dg_json_parse_error_t *err) {
  return parse(text, len, false, err);
}

json_t *dg_json_parse_message(const char *text, size_t len, dg_json_parse_error_t *err) {
  return parse(text, len, true, err);
}
