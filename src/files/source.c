/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Which document URLs get_file_text may fetch: the scheme must be allowed
 * and the URL must fall under a configured source (same scheme, host and
 * port, path under the source's prefix; the longest prefix wins). Paths
 * with dot segments are refused, since a server would resolve them to a
 * place outside the prefix. Addresses are judged later, by the client,
 * after the name is resolved. Pure functions, no loop. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "datagate/files.h"

/* Sources listed in a refusal at most. */
#define LISTED_SOURCES 6

/* ---- Messages ------------------------------------------------------------------ */

static bool may_use(const dg_principal_t *p, const dg_file_source_t *s) {
  return p == NULL || dg_auth_can_use_file_source(p, s);
}

/* "http://a/files/, https://b/docs/" for refusals, bounded: only the
 * sources the caller may use, so that others' hosts and ports stay
 * unknown to it. The count of them goes to *listed. */
static const char *allowed_list(const dg_file_settings_t *cfg, const dg_principal_t *p, char *out,
                                size_t size, size_t *listed) {
  size_t n = 0, usable = 0;
  out[0] = '\0';
  for (size_t i = 0; i < cfg->nsources; i++) {
    const dg_file_source_t *s = &cfg->sources[i];
    if (!may_use(p, s))
      continue;
    if (usable++ >= LISTED_SOURCES || n >= size)
      continue;
    int w =
        snprintf(out + n, size - n, "%s%s%s", usable > 1 ? ", " : "", s->origin, s->path_prefix);
    n += w > 0 ? (size_t)w : 0;
  }
  if (usable > LISTED_SOURCES && n < size)
    snprintf(out + n, size - n, " and %zu more", usable - LISTED_SOURCES);
  *listed = usable;
  return out;
}

/* The URL as it may appear in a message: no user info or query (either
 * may hold a secret). The authority follows a "://" that holds the text's
 * first '/' (whatever precedes it, so that a scheme too odd to name still
 * counts) or a leading "//"; without either, it is the text up to its
 * first '/'. */
static void shown(const char *text, char *out, size_t size) {
  size_t first = strcspn(text, "/?#"), lead = 0;
  if (first > 0 && text[first - 1] == ':' && strncmp(text + first, "//", 2) == 0)
    lead = first + 2;
  else if (first == 0 && strncmp(text, "//", 2) == 0)
    lead = 2;
  const char *host = text + lead;
  size_t authority = strcspn(host, "/?#");
  const char *at = memchr(host, '@', authority);
  const char *rest = at != NULL ? at + 1 : host;
  size_t n = strcspn(rest, "?#");
  snprintf(out, size, "%.*s%.*s%s", (int)lead, text, (int)(n > 200 ? 200 : n), rest,
           n > 200 ? "..." : "");
}

static int not_under_a_source(const dg_file_settings_t *cfg, const dg_principal_t *p,
                              const char *what, const char *text, dg_errctx_t *err) {
  char url[256], list[1024];
  size_t usable = 0;
  shown(text, url, sizeof(url));
  allowed_list(cfg, p, list, sizeof(list), &usable);
  if (cfg->nsources == 0)
    return dg_errctx_set(err, DG_EPERM, "url",
                         "%s '%s' cannot be fetched: no document source is "
                         "configured in this gateway (files.json).",
                         what, url);
  if (usable == 0)
    return dg_errctx_set(err, DG_EPERM, "url",
                         "%s '%s' cannot be fetched: none of your roles may read documents from "
                         "any source.",
                         what, url);
  return dg_errctx_set(err, DG_EPERM, "url",
                       "%s '%s' is not under an allowed document source; "
                       "allowed are URLs under %s.",
                       what, url, list);
}

/* ---- Checks ------------------------------------------------------------------------ */

/* Length of text's scheme (letters, digits, '+', '-', '.' after a letter,
 * then ':'), or 0 when it has none. */
static size_t scheme_len(const char *text) {
  size_t n = 0;
  while (isalnum((unsigned char)text[n]) || (text[n] != '\0' && strchr("+-.", text[n]) != NULL))
    n++;
  return n > 0 && text[n] == ':' && isalpha((unsigned char)text[0]) ? n : 0;
}

/* The scheme of text ("" when there is none or it does not fit), lower case. */
static void scheme_of(const char *text, char *out, size_t size) {
  size_t n = scheme_len(text);
  if (n >= size)
    n = 0;
  for (size_t i = 0; i < n; i++)
    out[i] = (char)tolower((unsigned char)text[i]);
  out[n] = '\0';
}

static bool scheme_allowed(const dg_file_settings_t *cfg, const char *scheme) {
  for (size_t i = 0; i < cfg->nallowed_schemes; i++) {
    if (strcmp(cfg->allowed_schemes[i], scheme) == 0)
      return true;
  }
  return false;
}

static int check_scheme(const dg_file_settings_t *cfg, const char *what, const char *text,
                        dg_errctx_t *err) {
  char scheme[32], url[256], list[64] = "";
  scheme_of(text, scheme, sizeof(scheme));
  if (scheme[0] != '\0' && scheme_allowed(cfg, scheme))
    return 0;
  shown(text, url, sizeof(url));
  for (size_t i = 0; i < cfg->nallowed_schemes; i++)
    snprintf(list + strlen(list), sizeof(list) - strlen(list), "%s%s", i ? ", " : "",
             cfg->allowed_schemes[i]);
  if (scheme[0] == '\0')
    return dg_errctx_set(err, DG_EINVAL, "url",
                         "%s '%s' is not an absolute URL; give the "
                         "externalFileLocation of an entity (allowed schemes: %s).",
                         what, url, list);
  return dg_errctx_set(err, DG_EPERM, "url",
                       "%s '%s' uses the scheme '%s', which is not "
                       "allowed; allowed schemes are %s.",
                       what, url, scheme, list);
}

/* How many rounds of percent-decoding a path is checked through: a dot
 * segment encoded twice ("%252e%252e") is caught too. */
#define DECODE_ROUNDS 3

/* True when seg is "." or ".."; a ";params" tail is ignored, as servers
 * that strip path parameters do before resolving ("..;/"). */
static bool dot_segment(const char *seg, size_t n) {
  const char *semi = memchr(seg, ';', n);
  if (semi != NULL)
    n = (size_t)(semi - seg);
  return (n == 1 && seg[0] == '.') || (n == 2 && seg[0] == '.' && seg[1] == '.');
}

/* Segments end at '/' and at '\\', which some servers take for '/'. */
static bool has_dot_segment(const char *path, size_t len) {
  size_t from = 0;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && path[i] != '/' && path[i] != '\\')
      continue;
    if (dot_segment(path + from, i - from))
      return true;
    from = i + 1;
  }
  return false;
}

/* One round of percent-decoding in place; false when nothing was encoded. */
static bool decode_round(char *path, size_t *len) {
  size_t o = 0;
  bool changed = false;
  for (size_t i = 0; i < *len; i++) {
    int hi = i + 2 < *len && path[i] == '%' ? dg_hex_value((unsigned char)path[i + 1]) : -1;
    int lo = hi >= 0 ? dg_hex_value((unsigned char)path[i + 2]) : -1;
    if (lo >= 0) {
      path[o++] = (char)(hi << 4 | lo);
      i += 2;
      changed = true;
    } else {
      path[o++] = path[i];
    }
  }
  *len = o;
  return changed;
}

/* True when the path, as it is or decoded once or more, holds a dot
 * segment: a server that decodes before resolving would leave the prefix
 * ("..%2f", "%2e%2e/", "..%5c", "%252e%252e/"). */
static bool path_climbs(dg_arena_t *arena, const char *path, size_t len, bool *oom) {
  *oom = false;
  if (has_dot_segment(path, len))
    return true;
  if (memchr(path, '%', len) == NULL)
    return false;
  char *copy = dg_arena_strndup(arena, path, len);
  if (copy == NULL) {
    *oom = true;
    return false;
  }
  for (int round = 0; round < DECODE_ROUNDS && decode_round(copy, &len); round++) {
    if (has_dot_segment(copy, len))
      return true;
  }
  return false;
}

static bool source_matches(const dg_file_source_t *s, const dg_http_url_t *u) {
  size_t n = strlen(s->path_prefix);
  return s->https == u->https && s->port == u->port && strcmp(s->host, u->host) == 0 &&
         u->path_len >= n && strncmp(u->target, s->path_prefix, n) == 0;
}

const dg_file_source_t *dg_files_match(const dg_file_settings_t *cfg, const dg_http_url_t *url) {
  const dg_file_source_t *best = NULL;
  for (size_t i = 0; i < cfg->nsources; i++) {
    const dg_file_source_t *s = &cfg->sources[i];
    if (source_matches(s, url) &&
        (best == NULL || strlen(s->path_prefix) > strlen(best->path_prefix)))
      best = s;
  }
  return best;
}

/* After the scheme check: parses text and finds its source. */
static int find_source(const dg_file_settings_t *cfg, const dg_principal_t *p, dg_arena_t *arena,
                       const char *what, const char *text, dg_http_url_t *url,
                       const dg_file_source_t **source, dg_errctx_t *err) {
  const char *why = NULL;
  char shown_url[256];
  shown(text, shown_url, sizeof(shown_url));
  int rc = dg_http_url_parse(arena, text, url, &why);
  if (rc == DG_ENOMEM)
    return dg_errctx_set(err, rc, "url", "out of memory");
  if (rc != 0)
    return dg_errctx_set(err, DG_EINVAL, "url", "%s '%s' is not valid: %s.", what, shown_url, why);
  bool oom = false;
  if (path_climbs(arena, url->target, url->path_len, &oom))
    return dg_errctx_set(err, DG_EINVAL, "url",
                         "%s '%s' has '.' or '..' path segments (perhaps percent-encoded, or "
                         "ended by '\\' or ';'), which are not allowed; give the document's URL "
                         "without them.",
                         what, shown_url);
  if (oom)
    return dg_errctx_set(err, DG_ENOMEM, "url", "out of memory");
  /* A source the caller may not use is refused as if it were not there,
   * never by a wider source that would match too. */
  *source = dg_files_match(cfg, url);
  if (*source != NULL && may_use(p, *source))
    return 0;
  *source = NULL;
  return not_under_a_source(cfg, p, what, text, err);
}

int dg_files_check(const dg_file_settings_t *cfg, const dg_principal_t *p, dg_arena_t *arena,
                   const char *what, const char *text, dg_http_url_t *url,
                   const dg_file_source_t **source, dg_errctx_t *err) {
  *source = NULL;
  int rc = check_scheme(cfg, what, text, err);
  return rc != 0 ? rc : find_source(cfg, p, arena, what, text, url, source, err);
}
