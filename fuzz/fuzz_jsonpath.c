/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes response paths: the input's first line is the path, the rest a
 * JSON document. A compile failure must come with a message; a compiled
 * path must keep its text, and evaluating it must stay within the match
 * bound and agree with dg_jsonpath_get on the first match. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/text.h"

static int first(void *data, json_t *value) {
  json_t **slot = data;
  if (*slot == NULL)
    *slot = value;
  return 0;
}

static void evaluate(const dg_jsonpath_t *p, const uint8_t *doc, size_t len) {
  json_t *root = json_loadb((const char *)doc, len, JSON_DECODE_ANY, NULL);
  if (root == NULL)
    return;
  json_t *seen = NULL;
  size_t count = 0;
  int rc = dg_jsonpath_each(p, root, 64, first, &seen, &count);
  if ((rc != 0 && rc != DG_E2BIG) || count > 64 || (rc == DG_E2BIG && count != 64))
    abort();
  if (dg_jsonpath_get(p, root) != seen)
    abort();
  if (!dg_jsonpath_is_multi(p) && count > 1)
    abort();
  json_decref(root);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const uint8_t *nl = memchr(data, '\n', size);
  size_t plen = nl ? (size_t)(nl - data) : size;
  char *text = malloc(plen + 1);
  if (text == NULL)
    return 0;
  memcpy(text, data, plen);
  text[plen] = '\0';
  dg_arena_t *arena = dg_arena_new(1024);
  const dg_jsonpath_t *p = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_jsonpath_compile(arena, text, &p, &err);
  if (rc != 0 && (p != NULL || err.message[0] == '\0'))
    abort();
  if (rc == 0 && strcmp(dg_jsonpath_text(p), text) != 0)
    abort();
  if (rc == 0 && nl != NULL)
    evaluate(p, nl + 1, size - plen - 1);
  dg_arena_destroy(arena);
  free(text);
  return 0;
}
