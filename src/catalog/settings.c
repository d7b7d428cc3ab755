/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* datagate.json: the "server" and "oauth" objects, and the OAuth keys. */
#include <arpa/inet.h>
#include <mbedtls/pk.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/internal.h"

#define KIB 1024LL
#define MIB (1024LL * 1024LL)
#define HOUR_MS (3600LL * 1000LL)
#define DAY_MS (24LL * HOUR_MS)

/* Browsers on this machine, whatever port their page came from. */
static const char *const default_origins[] = {
    "http://localhost:*",
    "http://127.0.0.1:*",
    "http://[::1]:*",
    "https://localhost:*",
    "https://127.0.0.1:*",
    "https://[::1]:*",
    NULL,
};

static void check_log_level(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  bool ok;
  dg_log_level_parse(json_string_value(v), &ok);
  if (!ok)
    dg__cfg_error(cfg, path, "unknown log level '%s' (allowed: debug, info, warn, error)",
                  json_string_value(v));
}

static void check_confirmation(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  const char *s = json_string_value(v);
  if (s != NULL && strcmp(s, "always") != 0 && strcmp(s, "when-supported") != 0 &&
      strcmp(s, "never") != 0)
    dg__cfg_error(cfg, path, "unknown value '%s' (allowed: always, when-supported, never)", s);
}

/* Reads from hot standbys need a PostgreSQL URI; the password rules are
 * checked when the store opens (libpq reads the URI). */
static void check_read_database(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  const char *s = json_string_value(v);
  if (s != NULL && strncmp(s, "postgresql://", 13) != 0 && strncmp(s, "postgres://", 11) != 0)
    dg__cfg_error(cfg, path,
                  "not a PostgreSQL URI (postgresql://...): reads from standbys need a "
                  "PostgreSQL server.database");
}

static void check_origins(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  const dg_server_settings_t *s = obj;
  for (size_t i = 0; i < s->nallowed_origins; i++) {
    const char *o = s->allowed_origins[i];
    if (o == NULL || strcmp(o, "*") == 0)
      continue;
    /* An origin is scheme://host[:port], without a path or trailing slash;
     * the port may be "*". */
    const char *rest = strstr(o, "://");
    if (rest == NULL || rest[3] == '\0' || !dg_authority_valid(rest + 3, true)) {
      char p[DG__CFG_PATH_MAX];
      dg__cfg_path_index(p, path, i);
      dg__cfg_error(cfg, p,
                    "'%s' is not an origin (scheme://host[:port] or scheme://host:*, no path)", o);
    }
  }
}

static void check_hosts(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  const dg_server_settings_t *s = obj;
  if (s->allowed_hosts != NULL && s->nallowed_hosts == 0)
    dg__cfg_error(cfg, path, "is empty; list host names, or [\"*\"] to accept any Host");
  for (size_t i = 0; i < s->nallowed_hosts; i++) {
    const char *h = s->allowed_hosts[i];
    if (h == NULL || strcmp(h, "*") == 0 || dg_authority_valid(h, false))
      continue;
    char p[DG__CFG_PATH_MAX];
    dg__cfg_path_index(p, path, i);
    dg__cfg_error(cfg, p, "'%s' is not a host (host or host:port, no scheme or path)", h);
  }
}

/* One name server: "1.2.3.4", "1.2.3.4:53", "::1" or "[::1]:53". */
static bool dns_server_ok(const char *item, size_t len) {
  char host[64];
  const char *port = NULL;
  if (len == 0 || len >= sizeof(host))
    return false;
  memcpy(host, item, len);
  host[len] = '\0';
  char *h = host;
  char *close = strchr(host, ']');
  if (host[0] == '[' && close != NULL) {
    *close = '\0';
    h = host + 1;
    port = close[1] == ':' ? close + 2 : (close[1] == '\0' ? NULL : "");
  } else if (strchr(host, ':') == strrchr(host, ':') && strchr(host, ':') != NULL) {
    *strchr(host, ':') = '\0';
    port = h + strlen(h) + 1;
  }
  unsigned char addr[16];
  int64_t n = 0;
  if (port != NULL && !dg_parse_int64(port, 1, 65535, &n))
    return false;
  return inet_pton(AF_INET, h, addr) == 1 || inet_pton(AF_INET6, h, addr) == 1;
}

static void check_dns_servers(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  const char *s = ((const dg_server_settings_t *)obj)->upstream_dns_servers;
  if (s == NULL)
    return;
  for (;;) {
    size_t len = strcspn(s, ",");
    if (!dns_server_ok(s, len)) {
      dg__cfg_error(cfg, path, "'%.*s' is not a name server (ip, ip:port or [ipv6]:port)",
                    (int)(len > 64 ? 64 : len), s);
      return;
    }
    if (s[len] == '\0')
      return;
    s += len + 1;
  }
}

#define S(field) offsetof(dg_server_settings_t, field)
static const dg__cfg_field_t server_fields[] = {
    {"host", DG__CFG_STRING, false, "127.0.0.1", 0, 1, 255, NULL, S(host), 0, NULL},
    {"port", DG__CFG_INT, false, NULL, 8080, 0, 65535, NULL, S(port), 0, NULL},
    {"workers", DG__CFG_INT, false, NULL, 1, 1, 256, NULL, S(workers), 0, NULL},
    {"publicUrl", DG__CFG_STRING, false, NULL, 0, 1, 2048, NULL, S(public_url), 0, NULL},
    {"tlsCertFile", DG__CFG_PATH, false, NULL, 0, 1, 4096, NULL, S(tls_cert_file), 0, NULL},
    {"tlsKeyFile", DG__CFG_PATH, false, NULL, 0, 1, 4096, NULL, S(tls_key_file), 0, NULL},
    {"upstreamCaFile", DG__CFG_PATH, false, NULL, 0, 1, 4096, NULL, S(upstream_ca_file), 0, NULL},
    {"upstreamDnsServers", DG__CFG_STRING, false, NULL, 0, 1, 1024, NULL, S(upstream_dns_servers),
     0, check_dns_servers},
    {"maxHeaderBytes", DG__CFG_SIZE, false, NULL, 16 * KIB, KIB, MIB, NULL, S(max_header_bytes), 0,
     NULL},
    {"maxHeaders", DG__CFG_UINT, false, NULL, 64, 8, 1000, NULL, S(max_headers), 0, NULL},
    {"maxBodyBytes", DG__CFG_SIZE, false, NULL, MIB, KIB, 1024 * MIB, NULL, S(max_body_bytes), 0,
     NULL},
    {"maxConnections", DG__CFG_UINT, false, NULL, 10000, 1, 1000000, NULL, S(max_connections), 0,
     NULL},
    {"headerTimeoutMs", DG__CFG_U64, false, NULL, 10000, 100, HOUR_MS, NULL, S(header_timeout_ms),
     0, NULL},
    {"requestTimeoutMs", DG__CFG_U64, false, NULL, 30000, 100, HOUR_MS, NULL, S(request_timeout_ms),
     0, NULL},
    {"idleTimeoutMs", DG__CFG_U64, false, NULL, 75000, 100, DAY_MS, NULL, S(idle_timeout_ms), 0,
     NULL},
    {"maxWriteBuffer", DG__CFG_SIZE, false, NULL, MIB, 16 * KIB, 1024 * MIB, NULL,
     S(max_write_buffer), 0, NULL},
    {"maxPipelined", DG__CFG_UINT, false, NULL, 16, 1, 1024, NULL, S(max_pipelined), 0, NULL},
    {"maxWsMessageBytes", DG__CFG_SIZE, false, NULL, MIB, KIB, 1024 * MIB, NULL,
     S(max_ws_message_bytes), 0, NULL},
    {"wsPingIntervalMs", DG__CFG_U64, false, NULL, 30000, 0, HOUR_MS, NULL, S(ws_ping_interval_ms),
     0, NULL},
    {"maxUnauthenticatedBytes", DG__CFG_SIZE, false, NULL, 64 * MIB, 16 * KIB, 64 * 1024 * MIB,
     NULL, S(max_unadmitted_bytes), 0, NULL},
    {"drainTimeoutMs", DG__CFG_U64, false, NULL, 10000, 0, HOUR_MS, NULL, S(drain_timeout_ms), 0,
     NULL},
    {"allowedOrigins", DG__CFG_STRINGS, false, NULL, 0, 0, 0, default_origins, S(allowed_origins),
     S(nallowed_origins), check_origins},
    {"allowedHosts", DG__CFG_STRINGS, false, NULL, 0, 0, 0, NULL, S(allowed_hosts),
     S(nallowed_hosts), check_hosts},
    {"maxSessions", DG__CFG_UINT, false, NULL, 10000, 1, 10000000, NULL, S(max_sessions), 0, NULL},
    {"sessionIdleTimeoutMs", DG__CFG_U64, false, NULL, 30 * 60000, 1000, 7 * DAY_MS, NULL,
     S(session_idle_timeout_ms), 0, NULL},
    {"maxInflightPerSession", DG__CFG_UINT, false, NULL, 32, 1, 10000, NULL,
     S(max_inflight_per_session), 0, NULL},
    {"sessionMaxLifetimeMs", DG__CFG_U64, false, NULL, DAY_MS, 1000, 30 * DAY_MS, NULL,
     S(session_max_lifetime_ms), 0, NULL},
    {"sessionKeyEnv", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, S(session_key_env), 0, NULL},
    {"toolTimeoutMs", DG__CFG_U64, false, NULL, 30000, 100, HOUR_MS, NULL, S(tool_timeout_ms), 0,
     NULL},
    {"maxResultBytes", DG__CFG_SIZE, false, NULL, MIB, 4 * KIB, 1024 * MIB, NULL,
     S(max_result_bytes), 0, NULL},
    {"maxGroupedAggregateRecords", DG__CFG_U64, false, NULL, 100000, 1, 1000000000, NULL,
     S(max_grouped_aggregate_records), 0, NULL},
    {"submitConfirmation", DG__CFG_STRING, false, "when-supported", 0, 1, 16, NULL,
     S(submit_confirmation), 0, check_confirmation},
    {"logLevel", DG__CFG_STRING, false, "info", 0, 1, 16, NULL, S(log_level), 0, check_log_level},
    {"accessLog", DG__CFG_PATH, false, "-", 0, 1, 4096, NULL, S(access_log), 0, NULL},
    {"accessLogFlushMs", DG__CFG_U64, false, NULL, 0, 0, 60000, NULL, S(access_log_flush_ms), 0,
     NULL},
    {"stdioUser", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, S(stdio_user), 0, NULL},
    {"database", DG__CFG_PATH, false, "var/datagate.db", 0, 1, 4096, NULL, S(database), 0, NULL},
    {"databasePool", DG__CFG_UINT, false, NULL, 8, 1, 256, NULL, S(database_pool), 0, NULL},
    {"databasePasswordEnv", DG__CFG_STRING, false, "PGPASSWORD", 0, 1, 128, NULL,
     S(database_password_env), 0, dg__cfg_check_env_name},
    {"readDatabase", DG__CFG_STRING, false, NULL, 0, 1, 4096, NULL, S(read_database), 0,
     check_read_database},
    {"readMaxLagMs", DG__CFG_U64, false, NULL, 1000, 10, HOUR_MS, NULL, S(read_max_lag_ms), 0,
     NULL},
    {"adminWebDir", DG__CFG_PATH, false, "../web/dist", 0, 1, 4096, NULL, S(admin_web_dir), 0,
     NULL},
};
#undef S

#define O(field) offsetof(dg_oauth_settings_t, field)
static const dg__cfg_field_t oauth_fields[] = {
    {"enabled", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, O(enabled), 0, NULL},
    {"issuer", DG__CFG_STRING, false, NULL, 0, 1, 2048, NULL, O(issuer), 0, NULL},
    {"audience", DG__CFG_STRING, false, NULL, 0, 1, 2048, NULL, O(audience), 0, NULL},
    {"hs256SecretEnv", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, O(hs256_secret_env), 0, NULL},
    {"publicKeyFile", DG__CFG_PATH, false, NULL, 0, 1, 4096, NULL, O(public_key_file), 0, NULL},
    {"rolesClaim", DG__CFG_STRING, false, "roles", 0, 1, 128, NULL, O(roles_claim), 0, NULL},
    {"userClaim", DG__CFG_STRING, false, "sub", 0, 1, 128, NULL, O(user_claim), 0, NULL},
};
#undef O

/* "-" for the access log means stderr, not a file next to the config. */
static void fix_access_log(dg__cfg_t *cfg, const json_t *server) {
  const json_t *v = server ? json_object_get(server, "accessLog") : NULL;
  if (v == NULL || (json_is_string(v) && strcmp(json_string_value(v), "-") == 0))
    cfg->cat->server.access_log = "-";
}

/* A session key shorter than SHA-256's output would weaken every id. */
#define SESSION_KEY_MIN 32

static void wipe_session_key(void *data) {
  dg_server_settings_t *s = data;
  if (s->session_key != NULL)
    memset((void *)s->session_key, 0, s->session_key_len);
}

static void load_session_key(dg__cfg_t *cfg, dg_server_settings_t *s) {
  if (s->session_key_env == NULL)
    return;
  const char *value = getenv(s->session_key_env);
  size_t n = value != NULL ? strlen(value) : 0;
  if (n < SESSION_KEY_MIN) {
    dg__cfg_error(cfg, "/server/sessionKeyEnv",
                  "environment variable '%s' %s; it must hold a random secret of at least %d "
                  "characters, the same on every instance",
                  s->session_key_env, n == 0 ? "is not set" : "is too short", SESSION_KEY_MIN);
    return;
  }
  unsigned char *copy = dg_arena_alloc(cfg->arena, n);
  if (copy == NULL || dg_arena_defer(cfg->arena, wipe_session_key, s) != 0) {
    cfg->oom = true;
    return;
  }
  memcpy(copy, value, n);
  s->session_key = copy;
  s->session_key_len = n;
}

void dg__catalog_parse_server(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_catalog_t *cat = obj;
  dg__cfg_parse_object(cfg, v, "/server", server_fields, DG_ARRAY_SIZE(server_fields),
                       &cat->server);
  fix_access_log(cfg, v);
  load_session_key(cfg, &cat->server);
  const dg_server_settings_t *s = &cat->server;
  if ((s->tls_cert_file == NULL) != (s->tls_key_file == NULL))
    dg__cfg_error(cfg, "/server", "tlsCertFile and tlsKeyFile must be given together");
}

void dg__catalog_parse_oauth(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_catalog_t *cat = obj;
  dg__cfg_parse_object(cfg, v, "/oauth", oauth_fields, DG_ARRAY_SIZE(oauth_fields), &cat->oauth);
  if (cat->oauth.enabled)
    dg__catalog_load_keys(cfg, "/oauth");
}

/* ---- Keys ------------------------------------------------------------------ */

static void wipe_secret(void *data) {
  dg_oauth_settings_t *o = data;
  if (o->hs256_secret != NULL)
    memset((void *)o->hs256_secret, 0, o->hs256_secret_len);
}

static void free_pk(void *data) {
  mbedtls_pk_free(data);
  free(data);
}

static void load_secret(dg__cfg_t *cfg, dg_oauth_settings_t *o) {
  const char *value = o->hs256_secret_env ? getenv(o->hs256_secret_env) : NULL;
  if (value == NULL || value[0] == '\0')
    return;
  size_t n = strlen(value);
  unsigned char *copy = dg_arena_alloc(cfg->arena, n);
  if (copy == NULL || dg_arena_defer(cfg->arena, wipe_secret, o) != 0) {
    cfg->oom = true;
    return;
  }
  memcpy(copy, value, n);
  o->hs256_secret = copy;
  o->hs256_secret_len = n;
}

static void load_public_key(dg__cfg_t *cfg, dg_oauth_settings_t *o, const char *path) {
  mbedtls_pk_context *pk = malloc(sizeof(*pk));
  if (pk == NULL) {
    cfg->oom = true;
    return;
  }
  mbedtls_pk_init(pk);
  if (dg_arena_defer(cfg->arena, free_pk, pk) != 0) {
    cfg->oom = true;
    return;
  }
  int rc = mbedtls_pk_parse_public_keyfile(pk, o->public_key_file);
  if (rc != 0) {
    dg__cfg_error(cfg, path, "cannot read a PEM public key from '%s' (mbedTLS error -0x%04x)",
                  o->public_key_file, (unsigned)-rc);
    return;
  }
  mbedtls_pk_type_t type = mbedtls_pk_get_type(pk);
  if (type != MBEDTLS_PK_RSA && type != MBEDTLS_PK_ECKEY) {
    dg__cfg_error(cfg, path, "'%s' holds neither an RSA nor an EC public key", o->public_key_file);
    return;
  }
  o->public_key = pk;
}

void dg__catalog_load_keys(dg__cfg_t *cfg, const char *path) {
  dg_oauth_settings_t *o = &cfg->cat->oauth;
  char p[DG__CFG_PATH_MAX];
  load_secret(cfg, o);
  if (o->public_key_file != NULL) {
    dg__cfg_path_key(p, path, "publicKeyFile");
    load_public_key(cfg, o, p);
  }
  if (o->hs256_secret == NULL && o->public_key == NULL && o->public_key_file == NULL) {
    if (o->hs256_secret_env != NULL) {
      dg__cfg_path_key(p, path, "hs256SecretEnv");
      dg__cfg_error(cfg, p, "environment variable '%s' is not set and no publicKeyFile is given",
                    o->hs256_secret_env);
    } else {
      dg__cfg_error(cfg, path, "enabled OAuth needs hs256SecretEnv or publicKeyFile");
    }
  }
}
