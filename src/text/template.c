/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Templates: "{Name}" and "{SESSION:Name}" placeholders in URL paths, query
 * strings, header values and JSON bodies. A template is compiled once into
 * literal and placeholder segments; expansion only copies and encodes, so
 * it is cheap enough to run on the loop thread for every call. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "datagate/text.h"

#define MAX_SEGS (DG_TEMPLATE_MAX_VARS * 2 + 1)

typedef struct seg {
  bool is_var;
  bool in_string; /* JSON: the placeholder sits inside a string literal */
  bool whole;     /* JSON: the placeholder is the whole string ("{X}") */
  const char *text;
  size_t len;
  size_t var;
} seg_t;

struct dg_template {
  const char *text;
  const seg_t *segs;
  size_t nsegs;
  const dg_template_var_t *vars;
  size_t nvars;
};

/* The compiler's state: literal bytes (unescaped) accumulate in lits, and
 * a JSON string tracker decides where a placeholder sits. */
typedef struct builder {
  const char *text;
  size_t pos;
  char *lits;
  size_t lits_len;
  size_t lit_start; /* where the open literal segment begins in lits */
  seg_t segs[MAX_SEGS];
  size_t nsegs;
  dg_template_var_t vars[DG_TEMPLATE_MAX_VARS];
  size_t nvars;
  bool in_str, esc, just_opened;
  /* JSON containers outside strings: bit i set when level i is an object,
   * so that a placeholder in a key stays a string. */
  uint64_t objects;
  size_t depth;
  bool want_key, in_key;
} builder_t;

/* ---- Compiling ---------------------------------------------------------- */

static bool is_name_start(char c) {
  return isalpha((unsigned char)c) || c == '_';
}

static bool is_name_char(char c) {
  return isalnum((unsigned char)c) || c == '_';
}

static bool in_object(const builder_t *b) {
  return b->depth > 0 && b->depth <= 64 && (b->objects >> (b->depth - 1) & 1) != 0;
}

/* Follows objects, arrays and keys outside strings. */
static void track_structure(builder_t *b, char c) {
  if (c == '{' || c == '[') {
    if (b->depth < 64)
      b->objects = (b->objects & ~(UINT64_C(1) << b->depth)) | ((uint64_t)(c == '{') << b->depth);
    b->depth++;
    b->want_key = c == '{';
  } else if ((c == '}' || c == ']') && b->depth > 0) {
    b->depth--;
    b->want_key = false;
  } else if (c == ',') {
    b->want_key = in_object(b);
  } else if (c == ':') {
    b->want_key = false;
  }
}

/* Tracks JSON string literals through the literal text, so that JSON mode
 * knows whether a placeholder is inside a string, and whether that string
 * is an object key. */
static void track_json(builder_t *b, char c) {
  b->just_opened = false;
  if (b->in_str) {
    if (b->esc)
      b->esc = false;
    else if (c == '\\')
      b->esc = true;
    else if (c == '"')
      b->in_str = false;
  } else if (c == '"') {
    b->in_str = true;
    b->just_opened = true;
    b->in_key = b->want_key;
    b->want_key = false;
  } else {
    track_structure(b, c);
  }
}

static void push_literal_char(builder_t *b, char c) {
  b->lits[b->lits_len++] = c;
  track_json(b, c);
}

static void close_literal(builder_t *b) {
  if (b->lits_len == b->lit_start)
    return;
  seg_t *s = &b->segs[b->nsegs++];
  memset(s, 0, sizeof(*s));
  s->text = b->lits + b->lit_start;
  s->len = b->lits_len - b->lit_start;
  b->lit_start = b->lits_len;
}

static size_t name_len(const char *s) {
  size_t n = 0;
  if (!is_name_start(s[0]))
    return 0;
  while (is_name_char(s[n]))
    n++;
  return n;
}

static int bad_placeholder(builder_t *b, size_t at, dg_errctx_t *err) {
  return dg_errctx_set(err, DG_EINVAL, "template",
                       "placeholder at offset %zu is not closed by '}' right after its name (a "
                       "placeholder is {Name}, {Reference.Name}, {SESSION:Name} or "
                       "{SESSION:Reference.Name}; write {{ "
                       "for a literal '{')",
                       at);
}

/* Reads "{[SESSION:]name}" at b->pos into a placeholder segment. */
static int add_var(builder_t *b, dg_arena_t *arena, dg_errctx_t *err) {
  size_t at = b->pos;
  const char *p = b->text + at + 1;
  bool session = strncmp(p, "SESSION:", 8) == 0 && is_name_start(p[8]);
  if (session)
    p += 8;
  size_t n = name_len(p);
  /* {Reference.Name}: a property of the record a reference points at;
   * {SESSION:Reference.Name}: a value of that record's run. */
  if (n > 0 && p[n] == '.' && name_len(p + n + 1) > 0)
    n += 1 + name_len(p + n + 1);
  if (p[n] != '}')
    return bad_placeholder(b, at, err);
  if (b->nvars == DG_TEMPLATE_MAX_VARS)
    return dg_errctx_set(err, DG_EINVAL, "template", "more than %d placeholders",
                         DG_TEMPLATE_MAX_VARS);
  bool whole = b->in_str && !b->in_key && b->just_opened && p[n + 1] == '"';
  if (whole) /* the opening quote belongs to the value now */
    b->lits_len--;
  close_literal(b);
  char *name = dg_arena_strndup(arena, p, n);
  if (name == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "template", "out of memory");
  b->vars[b->nvars] = (dg_template_var_t){.name = name, .session = session};
  b->segs[b->nsegs++] =
      (seg_t){.is_var = true, .in_string = b->in_str, .whole = whole, .var = b->nvars++};
  b->pos = (size_t)(p + n + 1 - b->text) + (whole ? 1 : 0);
  if (whole)
    b->in_str = false;
  b->just_opened = false;
  b->lit_start = b->lits_len;
  return 0;
}

static int scan(builder_t *b, dg_arena_t *arena, dg_errctx_t *err) {
  while (b->text[b->pos] != '\0') {
    const char *c = b->text + b->pos;
    if (c[0] == '{' && c[1] == '{') {
      push_literal_char(b, '{');
      b->pos += 2;
    } else if (c[0] == '{' && (is_name_start(c[1]))) {
      int rc = add_var(b, arena, err);
      if (rc != 0)
        return rc;
    } else {
      push_literal_char(b, c[0]);
      b->pos++;
    }
  }
  close_literal(b);
  return 0;
}

static int finish(builder_t *b, dg_arena_t *arena, const dg_template_t **out, dg_errctx_t *err) {
  dg_template_t *t = dg_arena_calloc(arena, 1, sizeof(*t));
  seg_t *segs = dg_arena_calloc(arena, b->nsegs + 1, sizeof(*segs));
  dg_template_var_t *vars = dg_arena_calloc(arena, b->nvars + 1, sizeof(*vars));
  char *text = dg_arena_strdup(arena, b->text);
  if (t == NULL || segs == NULL || vars == NULL || text == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "template", "out of memory");
  memcpy(segs, b->segs, b->nsegs * sizeof(*segs));
  memcpy(vars, b->vars, b->nvars * sizeof(*vars));
  *t = (dg_template_t){
      .text = text, .segs = segs, .nsegs = b->nsegs, .vars = vars, .nvars = b->nvars};
  *out = t;
  return 0;
}

int dg_template_compile(dg_arena_t *arena, const char *text, const dg_template_t **out,
                        dg_errctx_t *err) {
  *out = NULL;
  size_t len = strlen(text);
  if (len > DG_TEMPLATE_MAX_LEN)
    return dg_errctx_set(err, DG_EINVAL, "template", "is %zu bytes long; at most %d are allowed",
                         len, DG_TEMPLATE_MAX_LEN);
  builder_t *b = dg_arena_calloc(arena, 1, sizeof(*b));
  char *lits = dg_arena_alloc(arena, len + 1);
  if (b == NULL || lits == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "template", "out of memory");
  b->text = text;
  b->lits = lits;
  int rc = scan(b, arena, err);
  if (rc == 0)
    rc = finish(b, arena, out, err);
  return rc;
}

const char *dg_template_text(const dg_template_t *t) {
  return t->text;
}

size_t dg_template_nvars(const dg_template_t *t) {
  return t->nvars;
}

const dg_template_var_t *dg_template_var(const dg_template_t *t, size_t i) {
  return i < t->nvars ? &t->vars[i] : NULL;
}

/* ---- Encoders ---------------------------------------------------------------- */

int dg_template_append_encoded(dg_buf_t *out, const char *s, size_t len, bool keep_slash) {
  static const char hex[] = "0123456789ABCDEF";
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    bool keep =
        isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~' || (keep_slash && c == '/');
    char enc[3] = {'%', hex[c >> 4], hex[c & 15]};
    int rc = keep ? dg_buf_append(out, &s[i], 1) : dg_buf_append(out, enc, 3);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static int append_json_escape(dg_buf_t *out, unsigned char c) {
  switch (c) {
  case '"':
    return dg_buf_append(out, "\\\"", 2);
  case '\\':
    return dg_buf_append(out, "\\\\", 2);
  case '\n':
    return dg_buf_append(out, "\\n", 2);
  case '\r':
    return dg_buf_append(out, "\\r", 2);
  case '\t':
    return dg_buf_append(out, "\\t", 2);
  default:
    return dg_buf_appendf(out, "\\u%04x", c);
  }
}

int dg_template_append_json_string(dg_buf_t *out, const char *s, size_t len, bool quoted) {
  int rc = quoted ? dg_buf_append(out, "\"", 1) : 0;
  size_t run = 0; /* bytes copied as they are, in one append */
  for (size_t i = 0; rc == 0 && i < len; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != '"' && c != '\\')
      continue;
    rc = dg_buf_append(out, s + run, i - run);
    if (rc == 0)
      rc = append_json_escape(out, c);
    run = i + 1;
  }
  if (rc == 0)
    rc = dg_buf_append(out, s + run, len - run);
  if (rc == 0 && quoted)
    rc = dg_buf_append(out, "\"", 1);
  return rc;
}

/* ---- Expanding ------------------------------------------------------------------ */

static int append_json_value(dg_buf_t *out, const dg_template_value_t *v) {
  switch (v->kind) {
  case DG_TVAL_ABSENT:
    return dg_buf_append(out, "null", 4);
  case DG_TVAL_STRING:
    return dg_template_append_json_string(out, v->text, v->len, true);
  default:
    return dg_buf_append(out, v->text, v->len);
  }
}

static int append_value(dg_buf_t *out, dg_template_mode_t mode, const seg_t *s,
                        const dg_template_value_t *v) {
  const char *text = v->kind == DG_TVAL_ABSENT ? "" : v->text;
  size_t len = v->kind == DG_TVAL_ABSENT ? 0 : v->len;
  if (mode == DG_TEMPLATE_JSON && (s->whole || !s->in_string))
    return append_json_value(out, v);
  if (mode == DG_TEMPLATE_JSON)
    return dg_template_append_json_string(out, text, len, false);
  int rc = s->whole ? dg_buf_append(out, "\"", 1) : 0;
  if (rc == 0 && mode == DG_TEMPLATE_RAW)
    rc = dg_buf_append(out, text, len);
  else if (rc == 0)
    rc = dg_template_append_encoded(out, text, len, false);
  if (rc == 0 && s->whole)
    rc = dg_buf_append(out, "\"", 1);
  return rc;
}

static bool has_line_break(const dg_template_value_t *v) {
  if (v->kind == DG_TVAL_ABSENT)
    return false;
  for (size_t i = 0; i < v->len; i++) {
    if (v->text[i] == '\r' || v->text[i] == '\n' || v->text[i] == '\0')
      return true;
  }
  return false;
}

static bool is_dot_segment(const char *s, size_t len) {
  return (len == 1 && s[0] == '.') || (len == 2 && s[0] == '.' && s[1] == '.');
}

/* A path value with a "." or ".." between slashes or backslashes: encoded
 * it is one segment, but a server that decodes %2F or %5C before resolving
 * dot segments would climb out of it. */
static bool has_dot_piece(const dg_template_value_t *v) {
  if (v->kind == DG_TVAL_ABSENT)
    return false;
  size_t from = 0;
  for (size_t i = 0; i <= v->len; i++) {
    if (i < v->len && v->text[i] != '/' && v->text[i] != '\\')
      continue;
    if (is_dot_segment(v->text + from, i - from) && i - from < v->len)
      return true;
    from = i + 1;
  }
  return false;
}

static int expand_var(const dg_template_t *t, const seg_t *s, dg_template_mode_t mode,
                      dg_template_lookup_fn lookup, void *data, dg_buf_t *out, dg_errctx_t *err) {
  const dg_template_var_t *var = &t->vars[s->var];
  const char *pre = var->session ? "SESSION:" : "";
  dg_template_value_t v = {.kind = DG_TVAL_ABSENT};
  int rc = lookup(data, var, &v);
  if (rc == DG_ENOENT)
    return dg_errctx_set(err, rc, var->name, "no value for {%s%s}", pre, var->name);
  if (rc != 0)
    return dg_errctx_set(err, rc, var->name, "{%s%s}: %s", pre, var->name, dg_strerror(rc));
  if (mode == DG_TEMPLATE_RAW && has_line_break(&v))
    return dg_errctx_set(err, DG_EINVAL, var->name,
                         "the value of {%s%s} holds a line break or NUL, which a header cannot",
                         pre, var->name);
  if (mode == DG_TEMPLATE_PATH && has_dot_piece(&v))
    return dg_errctx_set(err, DG_EINVAL, var->name,
                         "the value of {%s%s} holds a '.' or '..' between slashes, which must "
                         "not reach a URL path",
                         pre, var->name);
  rc = append_value(out, mode, s, &v);
  if (rc != 0)
    return dg_errctx_set(err, rc, var->name, "expanding {%s%s}: %s", pre, var->name,
                         rc == DG_E2BIG ? "the result is over its size limit" : dg_strerror(rc));
  return 0;
}

/* Where one placeholder's value landed in the output. */
typedef struct span {
  size_t var, from, to;
} span_t;

/* A value must stay inside its segment: "." or ".." would climb to
 * another endpoint (and many servers decode "%2E" before resolving, so
 * encoding is no help), and an empty segment may reach a list or another
 * route. Values cannot add '/', which the encoder escapes. */
static int check_segment(const dg_template_t *t, const char *seg, size_t from, size_t to,
                         const span_t *spans, size_t nspans, dg_errctx_t *err) {
  const dg_template_var_t *var = NULL;
  for (size_t i = 0; i < nspans && var == NULL; i++) {
    if (spans[i].from >= from && spans[i].to <= to)
      var = &t->vars[spans[i].var];
  }
  bool dots = is_dot_segment(seg, to - from);
  if (var == NULL && !dots)
    return 0;
  if (var == NULL)
    return dg_errctx_set(err, DG_EINVAL, "template",
                         "the path '%s' holds a '.' or '..' segment, which is not allowed",
                         t->text);
  if (!dots && to > from)
    return 0;
  const char *pre = var->session ? "SESSION:" : "";
  return dg_errctx_set(err, DG_EINVAL, var->name,
                       "the value of {%s%s} would make the path segment '%.*s' in '%s'; a path "
                       "value must not be empty, '.' or '..'",
                       pre, var->name, (int)(to - from), seg, t->text);
}

static int check_path(const dg_template_t *t, const dg_buf_t *out, size_t start,
                      const span_t *spans, size_t nspans, dg_errctx_t *err) {
  const char *text = out->data != NULL ? out->data : "";
  size_t from = start;
  for (size_t i = start; i <= out->len; i++) {
    if (i < out->len && text[i] != '/')
      continue;
    int rc = check_segment(t, text + from, from, i, spans, nspans, err);
    if (rc != 0)
      return rc;
    from = i + 1;
  }
  return 0;
}

int dg_template_expand(const dg_template_t *t, dg_template_mode_t mode,
                       dg_template_lookup_fn lookup, void *data, dg_buf_t *out, dg_errctx_t *err) {
  size_t start = out->len;
  span_t spans[DG_TEMPLATE_MAX_VARS];
  size_t nspans = 0;
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < t->nsegs; i++) {
    const seg_t *s = &t->segs[i];
    if (!s->is_var) {
      rc = dg_buf_append(out, s->text, s->len);
      if (rc != 0)
        dg_errctx_set(err, rc, "template", "expanding the template: %s",
                      rc == DG_E2BIG ? "the result is over its size limit" : dg_strerror(rc));
      continue;
    }
    size_t from = out->len;
    rc = expand_var(t, s, mode, lookup, data, out, err);
    if (nspans < DG_TEMPLATE_MAX_VARS)
      spans[nspans++] = (span_t){s->var, from, out->len};
  }
  if (rc == 0 && mode == DG_TEMPLATE_PATH)
    rc = check_path(t, out, start, spans, nspans, err);
  if (rc != 0 && out->data != NULL) {
    out->len = start;
    out->data[start] = '\0';
  }
  return rc;
}
