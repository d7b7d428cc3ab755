/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* text: templates and response paths, below both the catalog (which
 * compiles and checks the configured ones) and save (which expands and
 * reads them on each call).
 *
 *   - templates: text with {Name} and {SESSION:Name} placeholders, expanded
 *     with URL-encoding (paths, query strings) or JSON-encoding (bodies);
 *   - response paths: "$.a.b", "a.b", "[n]", "[*]" and quoted keys, read
 *     from a parsed JSON response.
 *
 * Templates and paths are compiled once (at configuration load) into an
 * arena and are immutable afterwards, so one compiled form is shared by
 * every call on every thread. They depend on base only. */
#ifndef DATAGATE_TEXT_H
#define DATAGATE_TEXT_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "datagate/base.h"

/* ---- Templates -----------------------------------------------------------
 * Syntax: a placeholder is '{', an optional "SESSION:" prefix, a name (a
 * letter or '_', then letters, digits or '_') and '}'. The name may be two
 * such names joined by '.' ("{Order.OrderNumber}": a property of the record
 * a reference points at; "{SESSION:Order.CalculatedOrderId}": a value that
 * record's run extracted). "{{" is a literal
 * '{'. Any other '{' is literal text (so JSON bodies need no escaping), but
 * a '{' followed by a letter or '_' must form a placeholder: "{Order Id}"
 * is a compile error rather than text that silently never expands. */
#define DG_TEMPLATE_MAX_LEN 16384
#define DG_TEMPLATE_MAX_VARS 64

typedef struct dg_template dg_template_t;

/* One placeholder of a compiled template. */
typedef struct dg_template_var {
  const char *name; /* without braces or prefix, NUL-terminated; may hold one '.' */
  bool session;     /* written {SESSION:name} */
} dg_template_var_t;

/* How a value is written into the text. */
typedef enum dg_template_mode {
  DG_TEMPLATE_RAW,   /* as is (header values: CR, LF and NUL are refused) */
  DG_TEMPLATE_PATH,  /* percent-encoded path segment: '/' is encoded too */
  DG_TEMPLATE_QUERY, /* percent-encoded query component (RFC 3986 unreserved kept) */
  /* JSON text. A placeholder that is a whole JSON string ("{Limit}") is
   * replaced, quotes included, by the value as JSON: a number or boolean
   * unquoted, a string quoted, an absent value null. A placeholder outside
   * any string is written the same way; one inside a longer string is
   * written as escaped string content (absent: nothing), and so is one in
   * an object key, which must stay a string. */
  DG_TEMPLATE_JSON,
} dg_template_mode_t;

typedef enum dg_template_kind {
  DG_TVAL_ABSENT, /* no value: RAW/PATH/QUERY write nothing, JSON writes null */
  DG_TVAL_STRING,
  DG_TVAL_NUMBER, /* text is a valid JSON number */
  DG_TVAL_BOOL,   /* text is "true" or "false" */
} dg_template_kind_t;

typedef struct dg_template_value {
  dg_template_kind_t kind;
  const char *text; /* not NUL-terminated necessarily; len bytes */
  size_t len;
} dg_template_value_t;

/* Supplies the value of one placeholder. Returns 0 with *out filled, or a
 * negative DG_E* code that stops the expansion (DG_ENOENT: "no value"). */
typedef int (*dg_template_lookup_fn)(void *data, const dg_template_var_t *var,
                                     dg_template_value_t *out);

/* Compiles text (NUL-terminated, at most DG_TEMPLATE_MAX_LEN bytes and
 * DG_TEMPLATE_MAX_VARS placeholders) into arena. Returns 0, DG_EINVAL with
 * err saying where and why (param is "template"), or DG_ENOMEM. */
int dg_template_compile(dg_arena_t *arena, const char *text, const dg_template_t **out,
                        dg_errctx_t *err);
/* The text the template was compiled from. */
const char *dg_template_text(const dg_template_t *t);
/* Placeholders in order of appearance (repeats included). */
size_t dg_template_nvars(const dg_template_t *t);
const dg_template_var_t *dg_template_var(const dg_template_t *t, size_t i);

/* Appends the expansion to out (bounded by out->max). Returns 0; the
 * lookup's code; DG_EINVAL for a RAW value holding CR, LF or NUL; DG_E2BIG
 * when out would pass its maximum (out keeps what it had); DG_ENOMEM. err
 * names the placeholder in each case. */
int dg_template_expand(const dg_template_t *t, dg_template_mode_t mode,
                       dg_template_lookup_fn lookup, void *data, dg_buf_t *out, dg_errctx_t *err);

/* Encoders the expander uses, for callers that build URLs themselves. */
int dg_template_append_encoded(dg_buf_t *out, const char *s, size_t len, bool keep_slash);
int dg_template_append_json_string(dg_buf_t *out, const char *s, size_t len, bool quoted);

/* ---- Response paths ------------------------------------------------------
 * Syntax: an optional '$', then steps: ".name", "['name']" or "[\"name\"]"
 * (quoted keys may hold any character; \\ and the quote are escaped with a
 * backslash), "[n]" (0-based; negative counts from the end), "[*]" or ".*"
 * (every element of an array or value of an object). The first step may
 * omit its dot ("a.b" is "$.a.b"). "$" alone is the whole response. */
#define DG_JSONPATH_MAX_LEN 1024
#define DG_JSONPATH_MAX_STEPS 64

typedef struct dg_jsonpath dg_jsonpath_t;

/* Compiles text into arena. Returns 0, DG_EINVAL with err saying where and
 * why (param is "path"), or DG_ENOMEM. */
int dg_jsonpath_compile(dg_arena_t *arena, const char *text, const dg_jsonpath_t **out,
                        dg_errctx_t *err);
const char *dg_jsonpath_text(const dg_jsonpath_t *p);
/* True when the path has a wildcard and may match several values. */
bool dg_jsonpath_is_multi(const dg_jsonpath_t *p);

/* The first value the path reaches in root (borrowed), or NULL. */
json_t *dg_jsonpath_get(const dg_jsonpath_t *p, const json_t *root);
/* Calls fn for each value the path reaches, in document order, with the
 * value borrowed. Stops early when fn returns non-zero (that value is
 * returned). Returns 0 when done, or DG_E2BIG after max matches when there
 * are more. *count (may be NULL) gets the number of calls made. */
int dg_jsonpath_each(const dg_jsonpath_t *p, const json_t *root, size_t max,
                     int (*fn)(void *data, json_t *value), void *data, size_t *count);

#endif
