/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes the document URL checks of get_file_text: any text as a URL, and
 * as a redirect target resolved against an allowed one. A URL that passes
 * must be under its source (scheme, host, port, prefix) and free of dot
 * segments; a refusal must name "url" and never carry the URL's query. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/files.h"

static const char *const schemes[] = {"https", "http"};
static const dg_file_source_t sources[] = {
    {.name = "a",
     .host = "127.0.0.1",
     .port = 8091,
     .origin = "http://127.0.0.1:8091",
     .path_prefix = "/files/"},
    {.name = "b",
     .https = true,
     .host = "docs.example.com",
     .port = 443,
     .origin = "https://docs.example.com",
     .path_prefix = "/"},
};
static const dg_file_settings_t cfg = {
    .allowed_schemes = schemes, .nallowed_schemes = 2, .sources = sources, .nsources = 2};

static void check(dg_arena_t *arena, const char *text) {
  dg_http_url_t url;
  const dg_file_source_t *s = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_files_check(&cfg, NULL, arena, "Invalid argument 'url':", text, &url, &s, &err);
  if (rc != 0) {
    if (strcmp(err.param, "url") != 0 || err.message[0] == '\0')
      abort();
    const char *q = strchr(text, '?');
    if (q != NULL && strlen(q) > 8 && strstr(err.message, q) != NULL)
      abort();
    return;
  }
  size_t n = strlen(s->path_prefix);
  char path[8200];
  snprintf(path, sizeof(path), "%.*s/", (int)url.path_len, url.target);
  if (s->https != url.https || s->port != url.port || strcmp(s->host, url.host) != 0 ||
      strncmp(url.target, s->path_prefix, n) != 0 || strstr(path, "/../") != NULL ||
      strstr(path, "/./") != NULL)
    abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *text = malloc(size + 1);
  dg_arena_t *arena = dg_arena_new(4096);
  if (text == NULL || arena == NULL) {
    free(text);
    dg_arena_destroy(arena);
    return 0;
  }
  memcpy(text, data, size);
  text[size] = '\0';
  check(arena, text);
  /* The same text as a redirect target of an allowed URL. */
  dg_http_url_t base, next;
  const char *why = NULL;
  if (dg_http_url_parse(arena, "http://127.0.0.1:8091/files/dir/a.pdf", &base, &why) == 0 &&
      dg_http_url_resolve(arena, &base, text, &next, &why) == 0) {
    char *full = dg_http_url_full(arena, &next);
    if (full != NULL)
      check(arena, full);
  }
  dg_arena_destroy(arena);
  free(text);
  return 0;
}
