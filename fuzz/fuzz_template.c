/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes templates: the input is the template text. A compile failure must come with a message; a
 * compiled template must list only well-formed names (a {Reference.Name} one dot), expand without
 * crashing in every mode within its bound, and, when the template text is valid JSON, expand in
 * JSON mode to valid JSON whatever the values hold. */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/text.h"

/* Values chosen by the name's length: each kind, with characters that
 * need escaping in URLs and JSON. */
static int lookup(void *data, const dg_template_var_t *var, dg_template_value_t *out) {
  (void)data;
  static const char tricky[] = "a \"b\"\\/\n\t\x01{c}%?&=#\xc3\xa9";
  switch (strlen(var->name) % 5) {
  case 0:
    *out = (dg_template_value_t){DG_TVAL_STRING, tricky, sizeof(tricky) - 1};
    return 0;
  case 1:
    *out = (dg_template_value_t){DG_TVAL_NUMBER, "-12.5e3", 7};
    return 0;
  case 2:
    *out = (dg_template_value_t){DG_TVAL_BOOL, "false", 5};
    return 0;
  case 3:
    *out = (dg_template_value_t){DG_TVAL_ABSENT, NULL, 0};
    return 0;
  default:
    return var->session ? DG_ENOENT : 0;
  }
}

/* A name, or two names joined by one '.' ({Ref.Name}, and a parent run's
 * {SESSION:Ref.Name}). */
static void check_names(const dg_template_t *t) {
  for (size_t i = 0; i < dg_template_nvars(t); i++) {
    const dg_template_var_t *var = dg_template_var(t, i);
    const char *name = var->name;
    const char *dot = strchr(name, '.');
    if (dot != NULL &&
        (strchr(dot + 1, '.') != NULL || (!isalpha((unsigned char)dot[1]) && dot[1] != '_')))
      abort();
    if (!isalpha((unsigned char)name[0]) && name[0] != '_')
      abort();
    for (const char *c = name; *c != '\0'; c++) {
      if (!isalnum((unsigned char)*c) && *c != '_' && c != dot)
        abort();
    }
  }
}

static void expand_all(const dg_template_t *t, bool json_in) {
  for (int mode = DG_TEMPLATE_RAW; mode <= DG_TEMPLATE_JSON; mode++) {
    dg_buf_t out;
    dg_buf_init(&out, 1u << 20);
    dg_errctx_t err;
    dg_errctx_clear(&err);
    int rc = dg_template_expand(t, (dg_template_mode_t)mode, lookup, NULL, &out, &err);
    if (rc != 0 && err.message[0] == '\0')
      abort();
    if (rc == 0 && mode == DG_TEMPLATE_JSON && json_in) {
      json_t *doc = json_loadb(out.data ? out.data : "", out.len, JSON_DECODE_ANY, NULL);
      if (doc == NULL)
        abort();
      json_decref(doc);
    }
    dg_buf_free(&out);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  if (text == NULL)
    return 0;
  memcpy(text, data, size);
  text[size] = '\0';
  dg_arena_t *arena = dg_arena_new(4096);
  const dg_template_t *t = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_template_compile(arena, text, &t, &err);
  if (rc != 0 && (t != NULL || err.message[0] == '\0'))
    abort();
  if (rc == 0) {
    check_names(t);
    json_t *in = json_loads(text, JSON_DECODE_ANY, NULL);
    expand_all(t, in != NULL);
    json_decref(in);
  }
  dg_arena_destroy(arena);
  free(text);
  return 0;
}
