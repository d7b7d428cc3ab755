/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* files.json: where get_file_text may download documents from (allowed
 * schemes and sources, each an origin with a path prefix, optionally a
 * connector whose credentials are sent) and the limits of a download, an
 * extraction and the cache of extracted text. Read after connectors.json,
 * which the sources name. A missing file leaves every default and no
 * source, so that nothing is fetched until a source is configured. */
#include <arpa/inet.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "catalog/internal.h"

#define KIB 1024LL
#define MIB (1024LL * 1024LL)
#define GIB (1024LL * MIB)
#define MINUTE_MS (60LL * 1000LL)
#define DAY_MS (24LL * 60LL * MINUTE_MS)

static const char *const default_schemes[] = {"https", NULL};

/* A source as written, before the connector and origin are resolved. */
typedef struct source_raw {
  dg_file_source_t source;
  const char *origin;
  const char *connector;
} source_raw_t;

/* ---- Origins ----------------------------------------------------------------- */

static bool host_char_ok(char c) {
  return isalnum((unsigned char)c) || c == '-' || c == '.' || c == '_';
}

/* host or [v6] into s->host (lower case), NULL or what is wrong. */
static const char *parse_host(dg__cfg_t *cfg, const char *p, size_t n, dg_file_source_t *s) {
  char host[256];
  bool v6 = n > 1 && p[0] == '[' && p[n - 1] == ']';
  if (v6) {
    p++;
    n -= 2;
  }
  if (n == 0 || n >= sizeof(host))
    return "has no host, or one longer than 255 characters";
  for (size_t i = 0; i < n; i++) {
    if (!v6 && !host_char_ok(p[i]))
      return "has a host with characters other than letters, digits, '-', '.' and '_'";
    host[i] = (char)tolower((unsigned char)p[i]);
  }
  host[n] = '\0';
  unsigned char addr[16];
  if (v6 && inet_pton(AF_INET6, host, addr) != 1)
    return "has an IPv6 address in brackets that is not valid";
  s->host = dg_arena_strdup(cfg->arena, host);
  cfg->oom = cfg->oom || s->host == NULL;
  return NULL;
}

static const char *parse_port(const char *p, size_t n, dg_file_source_t *s) {
  char digits[8];
  int64_t port = 0;
  if (n == 0 || n >= sizeof(digits))
    return "has a port that is not a number from 1 to 65535";
  memcpy(digits, p, n);
  digits[n] = '\0';
  if (!dg_parse_int64(digits, 1, 65535, &port))
    return "has a port that is not a number from 1 to 65535";
  s->port = (unsigned)port;
  return NULL;
}

/* "scheme://host[:port]" into the source; NULL or what is wrong. */
static const char *parse_origin(dg__cfg_t *cfg, const char *origin, dg_file_source_t *s) {
  const char *problem = dg__cfg_url_problem(origin, &s->https);
  if (problem != NULL)
    return problem;
  const char *rest = origin + (s->https ? 8 : 7);
  size_t n = strcspn(rest, "/");
  if (rest[n] != '\0')
    return "must be an origin, scheme://host[:port], without a path (use pathPrefix)";
  /* The port follows the host, or the closing bracket of an IPv6 one. */
  const char *after = rest[0] == '[' ? memchr(rest, ']', n) : rest;
  if (after == NULL)
    return "has an IPv6 address that is not closed with ']'";
  const char *colon = memchr(after, ':', (size_t)(rest + n - after));
  size_t hostlen = colon != NULL ? (size_t)(colon - rest) : n;
  s->port = s->https ? 443 : 80;
  problem = parse_host(cfg, rest, hostlen, s);
  if (problem == NULL && colon != NULL)
    problem = parse_port(colon + 1, n - hostlen - 1, s);
  return problem;
}

/* The origin as matched: default ports left out. */
static const char *origin_text(dg__cfg_t *cfg, const dg_file_source_t *s) {
  bool v6 = strchr(s->host, ':') != NULL;
  char port[8] = "";
  if (s->port != (s->https ? 443u : 80u))
    snprintf(port, sizeof(port), ":%u", s->port);
  return dg_arena_sprintf(cfg->arena, "%s://%s%s%s%s", s->https ? "https" : "http", v6 ? "[" : "",
                          s->host, v6 ? "]" : "", port);
}

/* ---- Sources -------------------------------------------------------------------- */

static void check_prefix(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  const char *p = json_string_value(v);
  bool ok = p[0] == '/';
  for (const char *c = p; ok && *c != '\0'; c++)
    ok = (unsigned char)*c > 0x20 && *c != 0x7f && *c != '?' && *c != '#';
  if (!ok)
    dg__cfg_error(cfg, path,
                  "'%s' must start with '/' and hold no spaces, control characters, '?' or '#'", p);
}

#define R(field) offsetof(source_raw_t, field)
static const dg__cfg_field_t source_fields[] = {
    {"name", DG__CFG_STRING, true, NULL, 0, 1, 64, NULL, R(source.name), 0, NULL},
    {"origin", DG__CFG_STRING, false, NULL, 0, 8, 300, NULL, R(origin), 0, NULL},
    {"pathPrefix", DG__CFG_STRING, false, NULL, 0, 1, 2048, NULL, R(source.path_prefix), 0,
     check_prefix},
    {"connector", DG__CFG_STRING, false, NULL, 0, 1, 64, NULL, R(connector), 0, NULL},
    {"allowPrivateAddresses", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL,
     R(source.allow_private_addresses), 0, NULL},
    {"roles", DG__CFG_STRINGS, false, NULL, 0, 0, 0, NULL, R(source.roles), R(source.nroles), NULL},
};
#undef R

static bool scheme_allowed(const dg_file_settings_t *f, bool https) {
  for (size_t i = 0; i < f->nallowed_schemes; i++) {
    if (strcmp(f->allowed_schemes[i], https ? "https" : "http") == 0)
      return true;
  }
  return false;
}

/* A connector source takes the connector's origin, and its prefix must lie
 * under the connector's base path. */
static void resolve_connector(dg__cfg_t *cfg, source_raw_t *raw, const char *path) {
  dg_file_source_t *s = &raw->source;
  char at[DG__CFG_PATH_MAX];
  dg__cfg_path_key(at, path, "connector");
  s->connector = dg_catalog_connector(cfg->cat, raw->connector);
  if (s->connector == NULL) {
    dg__cfg_error(cfg, at, "unknown connector '%s' (connectors.json)", raw->connector);
    return;
  }
  const char *base = s->connector->base_url;
  const char *base_path = strchr(base + (s->connector->https ? 8 : 7), '/');
  size_t origin_len = base_path != NULL ? (size_t)(base_path - base) : strlen(base);
  dg_file_source_t conn_origin = {0};
  char *origin = dg_arena_strndup(cfg->arena, base, origin_len);
  if (origin == NULL || parse_origin(cfg, origin, &conn_origin) != NULL) {
    cfg->oom = cfg->oom || origin == NULL;
    return;
  }
  if (raw->origin == NULL) {
    s->https = conn_origin.https;
    s->host = conn_origin.host;
    s->port = conn_origin.port;
  } else if (s->https != conn_origin.https || s->port != conn_origin.port ||
             strcmp(s->host, conn_origin.host) != 0) {
    dg__cfg_error(cfg, at, "connector '%s' has the origin %s, not the source's origin",
                  s->connector->name, origin);
  }
  const char *bp = base_path != NULL ? base_path : "";
  size_t bn = strlen(bp);
  if (s->path_prefix == NULL)
    s->path_prefix = dg_arena_sprintf(cfg->arena, "%s/", bp);
  else if (strncmp(s->path_prefix, bp, bn) != 0 || (s->path_prefix[bn] != '/' && bn > 0))
    dg__cfg_error(cfg, at, "pathPrefix '%s' is not under the base URL of connector '%s' (%s)",
                  s->path_prefix, s->connector->name, base);
}

static void resolve_source(dg__cfg_t *cfg, source_raw_t *raw, const char *path) {
  dg_file_source_t *s = &raw->source;
  char at[DG__CFG_PATH_MAX];
  dg__cfg_path_key(at, path, "origin");
  const char *problem = raw->origin != NULL ? parse_origin(cfg, raw->origin, s) : NULL;
  if (problem != NULL) {
    dg__cfg_error(cfg, at, "'%s' %s", raw->origin, problem);
    return;
  }
  if (raw->connector != NULL)
    resolve_connector(cfg, raw, path);
  else if (raw->origin == NULL)
    dg__cfg_error(cfg, path, "a source needs 'origin', 'connector' or both");
  if (s->host == NULL)
    return;
  if (s->path_prefix == NULL)
    s->path_prefix = "/";
  s->origin = origin_text(cfg, s);
  cfg->oom = cfg->oom || s->origin == NULL || s->path_prefix == NULL;
  if (s->origin != NULL && !scheme_allowed(&cfg->cat->files, s->https))
    dg__cfg_error(cfg, path, "the scheme of %s is not in allowedSchemes", s->origin);
}

static void check_unique_sources(dg__cfg_t *cfg, const dg_file_source_t *list, size_t n) {
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < i; j++)
      dg__cfg_check_unique(cfg, "sources", "name", "source", i, j, list[i].name, list[j].name);
  }
}

static void parse_source(dg__cfg_t *cfg, const json_t *item, void *list, size_t i, const char *at,
                         const void *data) {
  dg_file_source_t *out = (dg_file_source_t *)list + i;
  source_raw_t raw;
  memset(&raw, 0, sizeof(raw));
  dg__cfg_parse_object(cfg, item, at, source_fields, DG_ARRAY_SIZE(source_fields), &raw);
  if (json_is_object(item))
    resolve_source(cfg, &raw, at);
  /* A connector's own setting decides which addresses its calls reach. */
  if (raw.source.connector != NULL && json_object_get(item, "allowPrivateAddresses") != NULL)
    dg__cfg_error(cfg, at,
                  "allowPrivateAddresses does not apply to a source with a connector (the "
                  "connector's own setting does)");
  if (raw.source.connector != NULL)
    raw.source.allow_private_addresses = raw.source.connector->allow_private_addresses;
  *out = raw.source;
  out->roles_given = json_is_object(item) && json_object_get(item, "roles") != NULL;
  out->index = i;
}

static void parse_sources(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_file_settings_t *f = obj;
  size_t n;
  dg_file_source_t *list =
      dg__cfg_list(cfg, v, path, "sources", sizeof(*list), &n, parse_source, NULL);
  if (list == NULL)
    return;
  f->sources = list;
  f->nsources = n;
  check_unique_sources(cfg, list, n);
}

static void check_schemes(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  const dg_file_settings_t *f = obj;
  for (size_t i = 0; i < f->nallowed_schemes; i++) {
    const char *s = f->allowed_schemes[i];
    if (s != NULL && strcmp(s, "https") != 0 && strcmp(s, "http") != 0) {
      char at[DG__CFG_PATH_MAX];
      dg__cfg_path_index(at, path, i);
      dg__cfg_error(cfg, at, "unknown scheme '%s' (allowed: https, http)", s);
    }
  }
}

void dg__catalog_check_source_roles(dg__cfg_t *cfg) {
  const dg_file_settings_t *f = &cfg->cat->files;
  for (size_t i = 0; i < f->nsources; i++) {
    for (size_t j = 0; j < f->sources[i].nroles; j++) {
      const char *name = f->sources[i].roles[j];
      if (name == NULL || dg_catalog_role(cfg->cat, name) != NULL)
        continue;
      char at[DG__CFG_PATH_MAX];
      snprintf(at, sizeof(at), "/sources/%zu/roles/%zu", i, j);
      const char *file = cfg->file;
      cfg->file = "files.json";
      dg__cfg_error(cfg, at, "unknown role '%s' (give a role name from datagate.json)", name);
      cfg->file = file;
    }
  }
}

/* ---- The file ---------------------------------------------------------------------- */

#define F(field) offsetof(dg_file_settings_t, field)
static const dg__cfg_field_t file_fields[] = {
    {"allowedSchemes", DG__CFG_STRINGS, false, NULL, 0, 0, 0, default_schemes, F(allowed_schemes),
     F(nallowed_schemes), check_schemes},
    {"sources", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, parse_sources},
    {"maxDownloadBytes", DG__CFG_SIZE, false, NULL, 64 * MIB, KIB, GIB, NULL, F(max_download_bytes),
     0, NULL},
    {"downloadTimeoutMs", DG__CFG_U64, false, NULL, 20000, 100, 10 * MINUTE_MS, NULL,
     F(download_timeout_ms), 0, NULL},
    {"maxRedirects", DG__CFG_UINT, false, NULL, 5, 0, 20, NULL, F(max_redirects), 0, NULL},
    {"chunkChars", DG__CFG_SIZE, false, NULL, 10000, 16, 1000000, NULL, F(chunk_chars), 0, NULL},
    {"maxTextBytes", DG__CFG_SIZE, false, NULL, 32 * MIB, KIB, GIB, NULL, F(max_text_bytes), 0,
     NULL},
    {"extractTimeoutMs", DG__CFG_U64, false, NULL, 20000, 100, 10 * MINUTE_MS, NULL,
     F(extract_timeout_ms), 0, NULL},
    {"extractCpuSeconds", DG__CFG_UINT, false, NULL, 30, 1, 3600, NULL, F(extract_cpu_seconds), 0,
     NULL},
    {"extractMemoryBytes", DG__CFG_SIZE, false, NULL, GIB, 128 * MIB, 64 * GIB, NULL,
     F(extract_memory_bytes), 0, NULL},
    {"maxConcurrentExtractions", DG__CFG_UINT, false, NULL, 4, 1, 1024, NULL, F(max_concurrent), 0,
     NULL},
    {"maxQueuedExtractions", DG__CFG_UINT, false, NULL, 64, 0, 100000, NULL, F(max_queued), 0,
     NULL},
    {"cacheBytes", DG__CFG_SIZE, false, NULL, 256 * MIB, 0, 64 * GIB, NULL, F(cache_bytes), 0,
     NULL},
    {"cacheEntries", DG__CFG_UINT, false, NULL, 1024, 1, 1000000, NULL, F(cache_entries), 0, NULL},
    {"cacheTtlMs", DG__CFG_U64, false, NULL, 5 * MINUTE_MS, 0, DAY_MS, NULL, F(cache_ttl_ms), 0,
     NULL},
};
#undef F

void dg__catalog_parse_files(dg__cfg_t *cfg, const json_t *root) {
  /* The schemes come first in the table, so sources can be checked
   * against them. */
  dg__cfg_parse_object(cfg, root, "", file_fields, DG_ARRAY_SIZE(file_fields), &cfg->cat->files);
}
