/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* connectors.json: the external APIs that Saved Queries and save actions
 * call, with their limits and authentication. Credentials are named by
 * environment variable and read here, once; the values live in the
 * catalog's arena and are wiped when the snapshot is freed. */
#include <ctype.h>
#include <mbedtls/x509_crt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "catalog/internal.h"

#define KIB 1024LL
#define MIB (1024LL * 1024LL)
#define HOUR_MS (3600LL * 1000LL)

_Static_assert(sizeof(dg_connector_auth_kind_t) == sizeof(int), "enums are stored as int");

static const char *const auth_kind_names[] = {
    "none", "bearer", "basic", "apiKey", "oauth2ClientCredentials", NULL};
static const char *const key_in_names[] = {"header", "query", NULL};
static const char *const client_auth_names[] = {"basic", "body", NULL};

/* Headers the client itself writes; a configured copy would conflict. */
static const char *const managed_headers[] = {
    "Host", "Content-Length", "Connection", "Transfer-Encoding", "Upgrade", "Traceparent"};

/* auth as written: enums are stored as int before they become fields. */
typedef struct auth_raw {
  dg_connector_auth_t auth;
  int kind;
  int key_in;
  int client_auth;
} auth_raw_t;

/* ---- Validators shared with saved_queries.c --------------------------------- */

void dg__cfg_check_guid(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  if (!dg_uuid_valid(json_string_value(v)))
    dg__cfg_error(cfg, path, "'%s' is not a GUID (8-4-4-4-12 hexadecimal digits)",
                  json_string_value(v));
}

void dg__cfg_check_env_name(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  const char *s = json_string_value(v);
  bool ok = s[0] != '\0' && !isdigit((unsigned char)s[0]);
  for (const char *c = s; ok && *c != '\0'; c++)
    ok = isalnum((unsigned char)*c) || *c == '_';
  if (!ok)
    dg__cfg_error(cfg, path, "'%s' is not an environment variable name", s);
}

bool dg__cfg_is_token(const char *s) {
  static const char extra[] = "!#$%&'*+-.^_`|~";
  if (s[0] == '\0')
    return false;
  for (const char *c = s; *c != '\0'; c++) {
    if (!isalnum((unsigned char)*c) && strchr(extra, *c) == NULL)
      return false;
  }
  return true;
}

/* Checks an absolute http(s) URL without query, fragment or user info;
 * returns NULL or what is wrong. */
const char *dg__cfg_url_problem(const char *url, bool *https) {
  const char *rest = NULL;
  *https = strncmp(url, "https://", 8) == 0;
  if (*https)
    rest = url + 8;
  else if (strncmp(url, "http://", 7) == 0)
    rest = url + 7;
  if (rest == NULL)
    return "must start with http:// or https://";
  size_t host = strcspn(rest, "/");
  if (host == 0 || rest[0] == ':')
    return "has no host";
  if (memchr(rest, '@', host) != NULL)
    return "must not hold user info (put credentials in 'auth')";
  for (const char *c = rest; *c != '\0'; c++) {
    if (*c == '?' || *c == '#')
      return "must not hold a query or fragment";
    if ((unsigned char)*c <= 0x20 || *c == 0x7f)
      return "must not hold spaces or control characters";
  }
  return NULL;
}

/* ---- Field validators ---------------------------------------------------------- */

static void check_base_url(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_connector_t *c = obj;
  const char *problem = dg__cfg_url_problem(json_string_value(v), &c->https);
  if (problem != NULL) {
    dg__cfg_error(cfg, path, "'%s' %s", json_string_value(v), problem);
    return;
  }
  /* Paths are appended to it, each starting with '/'. */
  size_t n = strlen(c->base_url);
  while (n > 0 && c->base_url[n - 1] == '/')
    ((char *)c->base_url)[--n] = '\0';
}

/* The client loads the file when it starts; a file it cannot use is
 * reported here so that --check-config finds it. */
static void check_ca_file(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  const dg_connector_t *c = obj;
  FILE *f = fopen(c->ca_file, "rb");
  if (f == NULL) {
    dg__cfg_error(cfg, path, "cannot read '%s'", c->ca_file);
    return;
  }
  fclose(f);
  mbedtls_x509_crt crt;
  mbedtls_x509_crt_init(&crt);
  int rc = mbedtls_x509_crt_parse_file(&crt, c->ca_file);
  if (rc < 0 || crt.version == 0)
    dg__cfg_error(cfg, path, "'%s' holds no PEM certificate (mbedTLS error -0x%04x)", c->ca_file,
                  (unsigned)(rc < 0 ? -rc : 0));
  mbedtls_x509_crt_free(&crt);
}

static bool is_managed(const char *name) {
  for (size_t i = 0; i < DG_ARRAY_SIZE(managed_headers); i++) {
    if (strcasecmp(name, managed_headers[i]) == 0)
      return true;
  }
  return false;
}

/* Checks one header; returns false (after reporting) when it is unusable. */
bool dg__cfg_check_header(dg__cfg_t *cfg, const char *name, const json_t *value, const char *path) {
  if (!dg__cfg_is_token(name)) {
    dg__cfg_error(cfg, path, "'%s' is not a valid header name", name);
    return false;
  }
  if (is_managed(name)) {
    dg__cfg_error(cfg, path, "header '%s' is set by the connector client and cannot be configured",
                  name);
    return false;
  }
  const char *s = json_string_value(value);
  if (s == NULL || strpbrk(s, "\r\n") != NULL) {
    dg__cfg_error(cfg, path, "must be a string without line breaks");
    return false;
  }
  return true;
}

static void parse_headers(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_connector_t *c = obj;
  if (v == NULL)
    return;
  if (!json_is_object(v)) {
    dg__cfg_error(cfg, path, "must be an object of header names and values");
    return;
  }
  dg_connector_header_t *h = dg_arena_calloc(cfg->arena, json_object_size(v) + 1, sizeof(*h));
  if (h == NULL) {
    cfg->oom = true;
    return;
  }
  const char *key;
  json_t *value;
  size_t n = 0;
  json_object_foreach((json_t *)v, key, value) {
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_key(at, path, key);
    if (!dg__cfg_check_header(cfg, key, value, at))
      continue;
    h[n].name = dg_arena_strdup(cfg->arena, key);
    h[n++].value = dg_arena_strdup(cfg->arena, json_string_value(value));
  }
  c->headers = h;
  c->nheaders = n;
}

/* ---- Tables ---------------------------------------------------------------------- */

#define C(field) offsetof(dg_connector_t, field)
static const dg__cfg_field_t timeout_fields[] = {
    {"dnsMs", DG__CFG_U64, false, NULL, 5000, 10, HOUR_MS, NULL, C(dns_timeout_ms), 0, NULL},
    {"connectMs", DG__CFG_U64, false, NULL, 5000, 10, HOUR_MS, NULL, C(connect_timeout_ms), 0,
     NULL},
    {"tlsMs", DG__CFG_U64, false, NULL, 10000, 10, HOUR_MS, NULL, C(tls_timeout_ms), 0, NULL},
    {"firstByteMs", DG__CFG_U64, false, NULL, 15000, 10, HOUR_MS, NULL, C(first_byte_timeout_ms), 0,
     NULL},
    {"totalMs", DG__CFG_U64, false, NULL, 20000, 10, HOUR_MS, NULL, C(timeout_ms), 0, NULL},
};

static const dg__cfg_field_t breaker_fields[] = {
    {"failures", DG__CFG_UINT, false, NULL, 5, 1, 1000, NULL, C(breaker_failures), 0, NULL},
    {"cooldownMs", DG__CFG_U64, false, NULL, 30000, 100, HOUR_MS, NULL, C(breaker_cooldown_ms), 0,
     NULL},
};

static const dg__cfg_field_t retry_fields[] = {
    {"maxAttempts", DG__CFG_UINT, false, NULL, 3, 1, 10, NULL, C(retry_max_attempts), 0, NULL},
};
#undef C

static void parse_timeouts(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg__cfg_parse_object(cfg, v, path, timeout_fields, DG_ARRAY_SIZE(timeout_fields), obj);
}

static void parse_breaker(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg__cfg_parse_object(cfg, v, path, breaker_fields, DG_ARRAY_SIZE(breaker_fields), obj);
}

static void parse_retry(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg__cfg_parse_object(cfg, v, path, retry_fields, DG_ARRAY_SIZE(retry_fields), obj);
}

#define A(field) offsetof(auth_raw_t, field)
static const dg__cfg_field_t auth_fields[] = {
    {"type", DG__CFG_ENUM, true, NULL, 0, 0, 0, auth_kind_names, A(kind), 0, NULL},
    {"tokenEnv", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, A(auth.token.env), 0,
     dg__cfg_check_env_name},
    {"usernameEnv", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, A(auth.username.env), 0,
     dg__cfg_check_env_name},
    {"passwordEnv", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, A(auth.password.env), 0,
     dg__cfg_check_env_name},
    {"keyEnv", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, A(auth.key.env), 0,
     dg__cfg_check_env_name},
    {"keyName", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, A(auth.key_name), 0, NULL},
    {"in", DG__CFG_ENUM, false, NULL, 0, 0, 0, key_in_names, A(key_in), 0, NULL},
    {"tokenUrl", DG__CFG_STRING, false, NULL, 0, 1, 2048, NULL, A(auth.token_url), 0, NULL},
    {"clientIdEnv", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, A(auth.client_id.env), 0,
     dg__cfg_check_env_name},
    {"clientSecretEnv", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, A(auth.client_secret.env), 0,
     dg__cfg_check_env_name},
    {"scopes", DG__CFG_STRINGS, false, NULL, 0, 0, 0, NULL, A(auth.scopes), A(auth.nscopes), NULL},
    {"audience", DG__CFG_STRING, false, NULL, 0, 1, 2048, NULL, A(auth.audience), 0, NULL},
    {"clientAuth", DG__CFG_ENUM, false, NULL, 0, 0, 0, client_auth_names, A(client_auth), 0, NULL},
    {"refreshSkewMs", DG__CFG_U64, false, NULL, 30000, 0, HOUR_MS, NULL,
     A(auth.token_refresh_skew_ms), 0, NULL},
};
#undef A

/* ---- Authentication ------------------------------------------------------------- */

/* The fields each kind needs; everything else is refused for that kind so
 * that a half-edited configuration does not silently do something else. */
typedef struct auth_need {
  const char *field;
  unsigned kinds; /* bit per dg_connector_auth_kind_t that needs it */
  unsigned allowed;
} auth_need_t;

#define K(kind) (1u << (kind))
static const auth_need_t auth_needs[] = {
    {"tokenEnv", K(DG_CONN_AUTH_BEARER), K(DG_CONN_AUTH_BEARER)},
    {"usernameEnv", K(DG_CONN_AUTH_BASIC), K(DG_CONN_AUTH_BASIC)},
    {"passwordEnv", K(DG_CONN_AUTH_BASIC), K(DG_CONN_AUTH_BASIC)},
    {"keyEnv", K(DG_CONN_AUTH_API_KEY), K(DG_CONN_AUTH_API_KEY)},
    {"keyName", K(DG_CONN_AUTH_API_KEY), K(DG_CONN_AUTH_API_KEY)},
    {"in", 0, K(DG_CONN_AUTH_API_KEY)},
    {"tokenUrl", K(DG_CONN_AUTH_OAUTH2), K(DG_CONN_AUTH_OAUTH2)},
    {"clientIdEnv", K(DG_CONN_AUTH_OAUTH2), K(DG_CONN_AUTH_OAUTH2)},
    {"clientSecretEnv", K(DG_CONN_AUTH_OAUTH2), K(DG_CONN_AUTH_OAUTH2)},
    {"scopes", 0, K(DG_CONN_AUTH_OAUTH2)},
    {"audience", 0, K(DG_CONN_AUTH_OAUTH2)},
    {"clientAuth", 0, K(DG_CONN_AUTH_OAUTH2)},
    {"refreshSkewMs", 0, K(DG_CONN_AUTH_OAUTH2)},
};
#undef K

static void check_auth_fields(dg__cfg_t *cfg, const json_t *v, int kind, const char *path) {
  for (size_t i = 0; i < DG_ARRAY_SIZE(auth_needs); i++) {
    const auth_need_t *n = &auth_needs[i];
    bool present = json_object_get(v, n->field) != NULL;
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_key(at, path, n->field);
    if (!present && (n->kinds & (1u << kind)) != 0)
      dg__cfg_error(cfg, path, "auth type '%s' needs '%s'", auth_kind_names[kind], n->field);
    if (present && (n->allowed & (1u << kind)) == 0)
      dg__cfg_error(cfg, at, "'%s' does not apply to auth type '%s'", n->field,
                    auth_kind_names[kind]);
  }
}

static void wipe_secret(void *data) {
  dg_connector_secret_t *s = data;
  if (s->value != NULL)
    memset((void *)s->value, 0, strlen(s->value));
}

/* Reads a secret from its variable; an unset one stays NULL. */
static void load_secret(dg__cfg_t *cfg, dg_connector_secret_t *s) {
  const char *value = s->env ? getenv(s->env) : NULL;
  if (value == NULL || value[0] == '\0')
    return;
  char *copy = dg_arena_strdup(cfg->arena, value);
  if (copy == NULL || dg_arena_defer(cfg->arena, wipe_secret, s) != 0) {
    cfg->oom = true;
    return;
  }
  s->value = copy;
}

static void check_token_url(dg__cfg_t *cfg, const dg_connector_auth_t *a, const char *path) {
  bool https;
  const char *problem = a->token_url ? dg__cfg_url_problem(a->token_url, &https) : NULL;
  if (problem != NULL) {
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_key(at, path, "tokenUrl");
    dg__cfg_error(cfg, at, "'%s' %s", a->token_url, problem);
  }
}

static void parse_auth(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_connector_t *c = obj;
  auth_raw_t raw;
  memset(&raw, 0, sizeof(raw));
  if (v != NULL) {
    dg__cfg_parse_object(cfg, v, path, auth_fields, DG_ARRAY_SIZE(auth_fields), &raw);
    if (json_is_object(v))
      check_auth_fields(cfg, v, raw.kind, path);
  }
  raw.auth.kind = (dg_connector_auth_kind_t)raw.kind;
  raw.auth.key_in_query = raw.key_in == 1;
  raw.auth.client_secret_in_body = raw.client_auth == 1;
  check_token_url(cfg, &raw.auth, path);
  c->auth = raw.auth;
  if (raw.auth.key_name != NULL && !raw.auth.key_in_query && !dg__cfg_is_token(raw.auth.key_name))
    dg__cfg_error(cfg, path, "keyName '%s' is not a valid header name", raw.auth.key_name);
  load_secret(cfg, &c->auth.token);
  load_secret(cfg, &c->auth.username);
  load_secret(cfg, &c->auth.password);
  load_secret(cfg, &c->auth.key);
  load_secret(cfg, &c->auth.client_id);
  load_secret(cfg, &c->auth.client_secret);
}

#define C(field) offsetof(dg_connector_t, field)
static const dg__cfg_field_t connector_fields[] = {
    {"id", DG__CFG_STRING, true, NULL, 0, 1, 64, NULL, C(id), 0, dg__cfg_check_guid},
    {"name", DG__CFG_STRING, true, NULL, 0, 1, 64, NULL, C(name), 0, NULL},
    {"description", DG__CFG_STRING, false, "", 0, 0, 4096, NULL, C(description), 0, NULL},
    {"baseUrl", DG__CFG_STRING, true, NULL, 0, 8, 2048, NULL, C(base_url), 0, check_base_url},
    {"headers", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, parse_headers},
    {"timeouts", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, parse_timeouts},
    {"maxConcurrency", DG__CFG_UINT, false, NULL, 64, 1, 100000, NULL, C(max_concurrency), 0, NULL},
    {"maxQueue", DG__CFG_UINT, false, NULL, 256, 1, 1000000, NULL, C(max_queue), 0, NULL},
    {"breaker", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, parse_breaker},
    {"retry", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, parse_retry},
    {"maxRedirects", DG__CFG_UINT, false, NULL, 5, 0, 20, NULL, C(max_redirects), 0, NULL},
    {"maxResponseBytes", DG__CFG_SIZE, false, NULL, 8 * MIB, KIB, 1024 * MIB, NULL,
     C(max_response_bytes), 0, NULL},
    {"allowPrivateAddresses", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, C(allow_private_addresses),
     0, NULL},
    {"caFile", DG__CFG_PATH, false, NULL, 0, 1, 4096, NULL, C(ca_file), 0, check_ca_file},
    {"auth", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, parse_auth},
};
#undef C

/* ---- The file ----------------------------------------------------------------------- */

static void check_connector(dg__cfg_t *cfg, const dg_connector_t *c, const char *path) {
  char at[DG__CFG_PATH_MAX];
  bool https_token = c->auth.token_url != NULL && strncmp(c->auth.token_url, "https:", 6) == 0;
  if (c->ca_file != NULL && !c->https && !https_token) {
    dg__cfg_path_key(at, path, "caFile");
    dg__cfg_error(cfg, at, "a CA file is used only with https:// URLs");
  }
}

static void check_unique_connectors(dg__cfg_t *cfg, const dg_connector_t *list, size_t n) {
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < i; j++) {
      dg__cfg_check_unique(cfg, "connectors", "id", "connector", i, j, list[i].id, list[j].id);
      dg__cfg_check_unique(cfg, "connectors", "name", "connector", i, j, list[i].name,
                           list[j].name);
    }
  }
}

static void parse_connector(dg__cfg_t *cfg, const json_t *item, void *list, size_t i,
                            const char *at, const void *data) {
  dg_connector_t *c = (dg_connector_t *)list + i;
  dg__cfg_parse_object(cfg, item, at, connector_fields, DG_ARRAY_SIZE(connector_fields), c);
  c->index = i;
  if (c->name == NULL)
    c->name = "";
  check_connector(cfg, c, at);
}

static void parse_connector_list(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_catalog_t *cat = obj;
  cat->connectors = dg__cfg_list(cfg, v, path, "connectors", sizeof(dg_connector_t),
                                 &cat->nconnectors, parse_connector, NULL);
  check_unique_connectors(cfg, cat->connectors, cat->nconnectors);
}

static const dg__cfg_field_t connectors_file_fields[] = {
    {"connectors", DG__CFG_CUSTOM, true, NULL, 0, 0, 0, NULL, 0, 0, parse_connector_list},
};

void dg__catalog_parse_connectors(dg__cfg_t *cfg, const json_t *root) {
  dg__cfg_parse_object(cfg, root, "", connectors_file_fields, DG_ARRAY_SIZE(connectors_file_fields),
                       cfg->cat);
}

const dg_connector_t *dg_catalog_connector(const dg_catalog_t *cat, const char *id_or_name) {
  return dg__catalog_find_id_or_name(cat->connectors, cat->nconnectors, sizeof(dg_connector_t),
                                     offsetof(dg_connector_t, id), offsetof(dg_connector_t, name),
                                     id_or_name);
}
