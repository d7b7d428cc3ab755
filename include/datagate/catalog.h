/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* catalog: the configuration in conf/, parsed once into typed, immutable
 * structs. A catalog is a reference-counted snapshot: a reload (SIGHUP)
 * builds a new one and swaps it in; work that started on the old snapshot
 * keeps its reference until it finishes.
 *
 * Files of a configuration directory (each optional except datagate.json):
 *   datagate.json   server settings, logging, auth (users, roles, tokens)
 *   models.json     Data Models with their properties and references
 *   connectors.json external APIs: base URL, headers, limits, authentication
 *   saved_queries.json  Saved Queries (Live Data Providers) over connectors
 *   endpoints.json  endpoints with their save action trees (data entry forms)
 *   files.json      where get_file_text may download documents, and its limits
 */
#ifndef DATAGATE_CATALOG_H
#define DATAGATE_CATALOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "datagate/base.h"

/* ---- Data Models -------------------------------------------------------- */
#define DG_DATA_TYPE_MAP(XX)                                                                       \
  XX(STRING, "String")                                                                             \
  XX(INT, "Int")                                                                                   \
  XX(LONG, "Long")                                                                                 \
  XX(DOUBLE, "Double")                                                                             \
  XX(DECIMAL, "Decimal")                                                                           \
  XX(BOOLEAN, "Boolean")                                                                           \
  XX(DATE, "Date")                                                                                 \
  XX(DATETIME, "DateTime")                                                                         \
  XX(GUID, "Guid")                                                                                 \
  XX(REFERENCE, "Reference")

typedef enum dg_data_type {
#define XX(name, text) DG_TYPE_##name,
  DG_DATA_TYPE_MAP(XX)
#undef XX
      DG_TYPE__COUNT
} dg_data_type_t;

const char *dg_data_type_name(dg_data_type_t type);
/* Parses "Int", "Decimal", ...; false for an unknown name. */
bool dg_data_type_parse(const char *name, dg_data_type_t *out);
/* Int, Long, Double, Decimal. */
bool dg_data_type_is_numeric(dg_data_type_t type);

typedef enum dg_ref_direction { DG_REF_OUTBOUND, DG_REF_INBOUND } dg_ref_direction_t;
typedef enum dg_cardinality { DG_CARD_ONE_TO_ONE, DG_CARD_ONE_TO_MANY } dg_cardinality_t;

struct dg_model;

typedef struct dg_reference {
  dg_ref_direction_t direction;
  dg_cardinality_t cardinality;
  const struct dg_model *target; /* NULL when the target has no Data Model */
  const char *target_entity_type;
  const char *target_entity_sub_type;
  /* Inbound: the Outbound reference property of the target model that
   * points back at this model (the foreign key lives there). Outbound: NULL
   * (the property's own value is the target's id). */
  const char *inverse_property;
  bool derived; /* true for Inbound collections */
} dg_reference_t;

/* How a property appears on a data entry form (PRODUCT-FACTS: control type,
 * label, default value, required, sequence, group). */
typedef struct dg_form_settings {
  const char
      *control; /* "text", "multiline", "number", "date", "toggle", "choice", "lookup" or NULL */
  const char *label;
  const char *default_value;
  int sequence;
  const char *group;
  bool hidden;
} dg_form_settings_t;

typedef struct dg_property {
  const char *name;      /* as configured, e.g. "OrderNumber" */
  const char *json_name; /* first letter lowercased, e.g. "orderNumber" */
  const char *description;
  dg_data_type_t type;
  const dg_reference_t *reference; /* set when type is DG_TYPE_REFERENCE */
  bool required;
  bool read_only;
  bool keyword;               /* searched by lookup_by_keyword */
  bool sortable;              /* indexed for sorting */
  bool filterable;            /* indexed for filtering */
  const char *const *choices; /* enumerated values, or NULL */
  size_t nchoices;
  dg_form_settings_t form;
  size_t index; /* position in the model's property array */
} dg_property_t;

typedef struct dg_model {
  const char *id;   /* GUID, stable across restarts */
  const char *name; /* "Orders" */
  const char *description;
  const char *entity_type;
  const char *entity_sub_type;
  const dg_property_t *properties;
  size_t nproperties;
  size_t index; /* position in the catalog's model array */
} dg_model_t;

/* ---- Auth configuration ------------------------------------------------- */
typedef struct dg_model_grant {
  const dg_model_t *model;
  bool all_properties;           /* "properties": "*" or absent */
  const char *const *properties; /* allowed property names otherwise */
  size_t nproperties;
  const char *const *deny; /* property names hidden even when all */
  size_t ndeny;
  bool write; /* may submit data entry forms */
} dg_model_grant_t;

typedef struct dg_role {
  const char *name;
  const dg_model_grant_t *grants;
  size_t ngrants;
  const char *const *saved_queries; /* ids or names, "*" for all */
  size_t nsaved_queries;
  bool administration; /* may use the /admin page and its API */
} dg_role_t;

typedef struct dg_user {
  const char *name;
  const dg_role_t *const *roles;
  size_t nroles;
  /* SHA-256 of the bearer token, read from the environment variable named
   * in the configuration at load time; has_token false when the variable is
   * unset (the user cannot sign in with a static token). */
  unsigned char token_sha256[32];
  bool has_token;
  const char *token_env;
} dg_user_t;

/* OAuth 2.0 / JWT resource-server settings (optional). */
typedef struct dg_oauth_settings {
  bool enabled;
  const char *issuer;           /* expected "iss" and advertised authorization server */
  const char *audience;         /* expected "aud"; also the resource URL */
  const char *hs256_secret_env; /* HMAC key from the environment, or NULL */
  const char *public_key_file;  /* PEM RSA/EC public key for RS256/ES256, or NULL */
  const char *roles_claim;      /* claim holding role names (default "roles") */
  const char *user_claim;       /* claim naming the user (default "sub") */
  /* Keys resolved at load time, owned by the catalog: the HMAC secret read
   * from hs256_secret_env (NULL when unset; zeroed when the catalog is
   * freed) and the parsed public key (an mbedtls_pk_context *, or NULL). */
  const unsigned char *hs256_secret;
  size_t hs256_secret_len;
  void *public_key;
} dg_oauth_settings_t;

/* ---- Server settings ------------------------------------------------------ */
typedef struct dg_server_settings {
  const char *host;
  int port;
  int workers;
  const char *public_url; /* advertised base URL (OAuth metadata), or NULL */
  const char *tls_cert_file;
  const char *tls_key_file;
  const char *upstream_ca_file; /* PEM CAs trusted for HTTPS upstreams besides the system's */
  /* Name servers for upstream host names ("ip[:port],..."), or NULL. */
  const char *upstream_dns_servers;
  size_t max_header_bytes;
  unsigned max_headers;
  size_t max_body_bytes;
  unsigned max_connections;
  uint64_t header_timeout_ms;
  uint64_t request_timeout_ms;
  uint64_t idle_timeout_ms;
  size_t max_write_buffer;
  unsigned max_pipelined;
  size_t max_ws_message_bytes;
  uint64_t ws_ping_interval_ms;
  /* Memory of all connections that have sent no signed-in request yet. */
  size_t max_unadmitted_bytes;
  uint64_t drain_timeout_ms;
  /* Origins as scheme://host[:port], the port may be "*"; "*" allows all. */
  const char *const *allowed_origins;
  size_t nallowed_origins;
  /* Host values as host or host:port; "*" allows all. NULL: the loopback
   * names and the listen address when bound to loopback, else any. */
  const char *const *allowed_hosts;
  size_t nallowed_hosts;
  unsigned max_sessions;
  uint64_t session_idle_timeout_ms;
  unsigned max_inflight_per_session;
  uint64_t session_max_lifetime_ms; /* an HTTP session id is refused this long after its issue */
  /* The key that signs HTTP session ids, read once at load time from the
   * variable session_key_env names (NULL when not configured: each start
   * makes a random one); zeroed when the catalog is freed. */
  const char *session_key_env;
  const unsigned char *session_key;
  size_t session_key_len;
  uint64_t tool_timeout_ms;
  size_t max_result_bytes; /* tool results over this are truncated (said in the result) */
  /* A grouped aggregate that matches more records than this is refused. */
  uint64_t max_grouped_aggregate_records;
  /* Whether submit_data_entry_form asks the user to confirm through the
   * client (elicitation): "always" (a client that cannot be asked is
   * refused), "when-supported" (the default) or "never". */
  const char *submit_confirmation;
  const char *log_level;
  const char *access_log;       /* path, "-" for stderr, NULL for off */
  uint64_t access_log_flush_ms; /* 0: lines written every loop turn */
  const char *stdio_user;       /* principal used by --stdio */
  const char *database;         /* SQLite file path (relative to the config dir) or URI */
  /* PostgreSQL: connections per pool of each worker, and the variable
   * holding the password (never a file, never the URI). */
  unsigned database_pool;
  const char *database_password_env;
  /* PostgreSQL: a URI of hot standbys for the read tools (NULL: none), and
   * how far behind the primary a read served there may be. */
  const char *read_database;
  uint64_t read_max_lag_ms;
  const char *admin_web_dir; /* the built /admin page (relative to the config dir) */
} dg_server_settings_t;

/* ---- Connectors (connectors.json) ------------------------------------------
 * An external API. Secrets are read from the environment variables the
 * configuration names, once at load time; a secret is NULL when its
 * variable is unset or empty (calls that need it then fail and say so). */
typedef enum dg_connector_auth_kind {
  DG_CONN_AUTH_NONE,
  DG_CONN_AUTH_BEARER, /* Authorization: Bearer <token> */
  DG_CONN_AUTH_BASIC,  /* Authorization: Basic base64(username:password) */
  DG_CONN_AUTH_API_KEY,
  DG_CONN_AUTH_OAUTH2, /* OAuth 2.0 client credentials grant */
} dg_connector_auth_kind_t;

typedef struct dg_connector_secret {
  const char *env;   /* variable name, or NULL when not configured */
  const char *value; /* owned by the catalog, wiped when it is freed */
} dg_connector_secret_t;

typedef struct dg_connector_auth {
  dg_connector_auth_kind_t kind;
  dg_connector_secret_t token;    /* bearer */
  dg_connector_secret_t username; /* basic */
  dg_connector_secret_t password; /* basic */
  dg_connector_secret_t key;      /* apiKey */
  const char *key_name;           /* apiKey: header or query parameter name */
  bool key_in_query;              /* apiKey: in the query string, not a header */
  const char *token_url;          /* oauth2: absolute http(s) URL */
  dg_connector_secret_t client_id;
  dg_connector_secret_t client_secret;
  const char *const *scopes; /* oauth2: sent space-separated as "scope" */
  size_t nscopes;
  const char *audience;           /* oauth2: optional "audience" parameter */
  bool client_secret_in_body;     /* oauth2: credentials in the form, not Basic */
  uint64_t token_refresh_skew_ms; /* oauth2: renew this long before expiry */
} dg_connector_auth_t;

typedef struct dg_connector_header {
  const char *name;
  const char *value;
} dg_connector_header_t;

typedef struct dg_connector {
  const char *id; /* GUID */
  const char *name;
  const char *description;
  const char *base_url; /* scheme://host[:port][/path], no trailing '/' */
  bool https;
  const dg_connector_header_t *headers; /* sent with every call */
  size_t nheaders;
  uint64_t dns_timeout_ms;
  uint64_t connect_timeout_ms;
  uint64_t tls_timeout_ms;
  uint64_t first_byte_timeout_ms;
  uint64_t timeout_ms; /* the whole call, retries included */
  unsigned max_concurrency;
  unsigned max_queue;           /* calls waiting beyond max_concurrency */
  unsigned breaker_failures;    /* consecutive failures that open the breaker */
  uint64_t breaker_cooldown_ms; /* open time before one probe call */
  unsigned retry_max_attempts;  /* 1 = no retry; backoff is the client's */
  unsigned max_redirects;
  size_t max_response_bytes;
  bool allow_private_addresses; /* may reach loopback and private networks */
  const char *ca_file;          /* extra trusted CA (PEM), or NULL */
  dg_connector_auth_t auth;
  size_t index;
} dg_connector_t;

/* ---- Saved Queries (saved_queries.json) ------------------------------------ */
struct dg_template; /* text.h */
struct dg_jsonpath; /* text.h */

/* A declared input (DeclaredInputs): values arrive as strings and are
 * checked against type. */
typedef struct dg_saved_input {
  const char *name;
  const char *description;
  dg_data_type_t type; /* any type but Reference */
  bool required;
  const char *default_value; /* valid for type, or NULL */
} dg_saved_input_t;

typedef struct dg_saved_param {
  const char *name;
  const struct dg_template *value;
} dg_saved_param_t;

typedef enum dg_saved_request_kind { DG_REQUEST_REST, DG_REQUEST_GRAPHQL } dg_saved_request_kind_t;

typedef struct dg_saved_request {
  dg_saved_request_kind_t kind;
  const char *method;              /* GET, POST, PUT, PATCH or DELETE */
  const struct dg_template *path;  /* appended to the connector's base URL */
  const dg_saved_param_t *query;   /* query parameters; one whose inputs are all */
  size_t nquery;                   /* absent is left out */
  const dg_saved_param_t *headers; /* besides the connector's */
  size_t nheaders;
  const struct dg_template *body;              /* REST: JSON body template, or NULL */
  const char *graphql_query;                   /* GraphQL: the document, sent as is */
  const char *operation_name;                  /* GraphQL: optional */
  const struct dg_template *graphql_variables; /* GraphQL: JSON object template, or NULL */
  bool retry_unsafe;                           /* a POST, PUT or PATCH that may still be retried */
} dg_saved_request_t;

/* A mapped field: the value at path in each result item becomes the
 * property of the Data Model. */
typedef struct dg_saved_field {
  const dg_property_t *property;
  const struct dg_jsonpath *path;
  const char *description; /* the property's unless configured */
} dg_saved_field_t;

typedef struct dg_saved_query {
  const char *id; /* GUID */
  const char *name;
  const char *description;
  const dg_connector_t *connector;
  const dg_model_t *model;
  const dg_saved_input_t *inputs;
  size_t ninputs;
  dg_saved_request_t request;
  const struct dg_jsonpath *result_path; /* the result list (or one object) */
  const struct dg_jsonpath *id_path;     /* item id, relative to an item, or NULL */
  const dg_saved_field_t *fields;
  size_t nfields;
  unsigned max_results; /* items mapped at most; more are reported as truncated */
  size_t index;
} dg_saved_query_t;

/* ---- Document sources (files.json) ------------------------------------------
 * Where get_file_text may download documents from. A URL is fetched only
 * when its scheme is allowed and it falls under a source: the same scheme,
 * host and port, and a path under the source's prefix (the longest prefix
 * wins). The source says whether loopback, link-local and private addresses
 * may be reached, and which connector's headers, credentials and limits
 * apply. Without files.json no source is configured and nothing is fetched. */
typedef struct dg_file_source {
  const char *name;
  bool https;
  const char *host;        /* lower case; an IPv6 literal without brackets */
  unsigned port;           /* explicit or the scheme's default */
  const char *origin;      /* "https://host[:port]" as matched, for messages */
  const char *path_prefix; /* starts with '/'; "/" matches every path */
  /* Connector whose headers, authentication and limits are used, or NULL.
   * Its base URL is a prefix of every URL the source matches, so the rest
   * of the URL is the path of the connector call. */
  const dg_connector_t *connector;
  bool allow_private_addresses; /* loopback, link-local and private networks */
  /* The roles that may read documents from the source. Without a "roles"
   * list (roles_given false): the roles that may read a model whose
   * entities hold document URLs (an ExternalFileLocation property). */
  const char *const *roles;
  size_t nroles;
  bool roles_given;
  size_t index;
} dg_file_source_t;

typedef struct dg_file_settings {
  const char *const *allowed_schemes; /* "https" and/or "http" */
  size_t nallowed_schemes;
  const dg_file_source_t *sources;
  size_t nsources;
  size_t max_download_bytes;    /* decoded document bytes */
  uint64_t download_timeout_ms; /* one download, redirects included */
  unsigned max_redirects;       /* each target is checked like the first URL */
  size_t chunk_chars;           /* characters of text per chunk */
  size_t max_text_bytes;        /* extracted text kept; the rest is cut */
  uint64_t extract_timeout_ms;  /* parsing one document (wall time; killed past it) */
  unsigned extract_cpu_seconds; /* CPU time of one extractor process */
  size_t extract_memory_bytes;  /* address space of one extractor process */
  unsigned max_concurrent;      /* documents downloaded and extracted at once */
  unsigned max_queued;          /* calls waiting for a slot beyond that */
  size_t cache_bytes;           /* extracted text cached (0: no cache) */
  unsigned cache_entries;
  uint64_t cache_ttl_ms; /* served without asking the source again */
} dg_file_settings_t;

/* ---- Endpoints and their save action trees (endpoints.json) ---------------
 * An endpoint saves records of one Data Model through a tree of actions:
 * a root EndpointSave, then its inner actions with afterChildConfigs false
 * (pre-child, in array order), then the child configurations (one save per
 * child record of a list), then the inner actions with afterChildConfigs
 * true (post-child, in array order). An inner EndpointSave may hold
 * GetSessionValues actions of its own, which run right after it and read
 * its response. Everything is resolved and checked at load time. */
struct dg_endpoint;

typedef enum dg_action_type {
  DG_ACTION_ENDPOINT_SAVE,
  DG_ACTION_GET_SESSION_VALUES,
} dg_action_type_t;

/* Where an action runs in its endpoint's execution order. */
typedef enum dg_action_phase {
  DG_PHASE_ROOT,
  DG_PHASE_PRE_CHILD,
  DG_PHASE_POST_CHILD,
} dg_action_phase_t;

typedef enum dg_extraction_kind {
  DG_EXTRACT_BASIC,          /* a header-level value of the record */
  DG_EXTRACT_COLLECTION,     /* mapToChildren: one list matched to the children */
  DG_EXTRACT_MULTIPLE_LISTS, /* useMultipleLists: lists zipped by position */
} dg_extraction_kind_t;

/* A Multiple Lists row: prefix -> a path that ends in a wildcard. An
 * extraction has 2 to DG_EXTRACTION_MAX_LISTS of them. */
#define DG_EXTRACTION_MAX_LISTS 8
typedef struct dg_connector_list {
  const char *prefix;
  const struct dg_jsonpath *path;
} dg_connector_list_t;

typedef struct dg_extraction {
  dg_extraction_kind_t kind;
  /* The session value's name: a property of the endpoint's model (basic)
   * or of the target list's model (collection, multiple lists). */
  const dg_property_t *model_property;
  /* Basic: read from the response. Collection: relative to a list item
   * (the list path it was written with is taken off). Multiple lists:
   * relative to the composite of the lists' items at one position. */
  const struct dg_jsonpath *connector_property;
  const dg_property_t *target_list;          /* Inbound reference of the endpoint's model */
  const dg_property_t *model_match_property; /* of the target model; NULL: the child's id */
  const struct dg_jsonpath *connector_list;  /* collection: the list in the response */
  const struct dg_jsonpath *connector_match; /* relative, like connector_property */
  const dg_connector_list_t *lists;          /* multiple lists */
  size_t nlists;
} dg_extraction_t;

/* A body field built from a template: connectorProperty "a.b" -> {"a": {"b": value}}. */
typedef struct dg_body_mapping {
  const char *const *keys; /* connectorProperty split at '.' */
  size_t nkeys;
  const struct dg_template *value;
} dg_body_mapping_t;

/* An upstream value written back to the record after a successful call. */
typedef struct dg_response_mapping {
  const dg_property_t *property;
  const struct dg_jsonpath *path;
} dg_response_mapping_t;

/* An inner action's filter: when it does not hold, the action is skipped. */
typedef enum dg_filter_op {
  DG_FILTER_EQ,        /* = */
  DG_FILTER_NE,        /* != */
  DG_FILTER_GT,        /* > (numbers as numbers, else text) */
  DG_FILTER_LT,        /* < */
  DG_FILTER_BLANK,     /* is blank: absent, null or "" */
  DG_FILTER_NOT_BLANK, /* not blank */
  DG_FILTER_REGEX,     /* POSIX extended regular expression, anywhere in the text */
} dg_filter_op_t;

typedef struct dg_filter_condition {
  const dg_property_t *property;
  dg_filter_op_t op;
  const char *value; /* NULL for the blank tests */
  const void *regex; /* a compiled regex_t for DG_FILTER_REGEX */
} dg_filter_condition_t;

typedef struct dg_action_filter {
  bool any; /* "Or": one condition is enough; otherwise all must hold */
  const dg_filter_condition_t *conditions;
  size_t nconditions;
} dg_action_filter_t;

typedef struct dg_action {
  dg_action_type_t type;
  const char *title;
  const char *path; /* JSON pointer in endpoints.json, for messages */
  bool after_child_configs;
  dg_action_phase_t phase;
  bool on_create;                   /* operations: runs when the submission creates a record */
  bool on_update;                   /* ... and when it modifies one */
  const dg_action_filter_t *filter; /* inner actions only; NULL: always */
  /* EndpointSave */
  const dg_connector_t *connector;
  dg_saved_request_t request;        /* REST or GraphQL; query and headers as templates */
  const dg_body_mapping_t *mappings; /* REST body built from mappings (body is NULL) */
  size_t nmappings;
  const dg_response_mapping_t *responses;
  size_t nresponses;
  /* "expect": "any": a 2xx answer that is not JSON is accepted (only when
   * nothing reads the answer); by default it fails the action. */
  bool expect_any;
  bool answer_read; /* response mappings, a GraphQL errors check or extractions read it */
  const struct dg_action *actions; /* root: the inner actions; inner save: its GetSessionValues */
  size_t nactions;
  /* GetSessionValues */
  const struct dg_action *source; /* the save action whose response it reads */
  const dg_extraction_t *extractions;
  size_t nextractions;
  size_t step; /* position in the endpoint's execution order */
} dg_action_t;

/* Saves each child record of a list with another endpoint. */
typedef struct dg_child_config {
  const dg_property_t *list; /* Inbound reference of the parent endpoint's model */
  const struct dg_endpoint *endpoint;
  const dg_property_t *order_by; /* of the child model; NULL: id order */
  unsigned concurrency;          /* child saves running at once (1: in order) */
  unsigned max_children;         /* more children than this fail the submission */
  const char *path;              /* JSON pointer, for messages */
  /* A line added by a form call (submit_data_entry_form's childLists) is
   * saved by add_endpoint (NULL: endpoint), and its actions run as for a
   * created record. A line removed by a form call is saved by
   * remove_endpoint (NULL: endpoint) with the remove values over its
   * stored ones (each a property of the list's model and a JSON scalar's
   * text); a list with neither refuses removals. */
  const struct dg_endpoint *add_endpoint;
  const struct dg_endpoint *remove_endpoint;
  const dg_property_t *const *remove_props;
  const char *const *remove_values;
  size_t nremove_values;
  bool removable;
} dg_child_config_t;

typedef struct dg_endpoint {
  const char *id; /* GUID */
  const char *name;
  const char *description;
  const dg_model_t *model;
  const dg_connector_t *connector; /* default of the save actions */
  bool form_submit;                /* submit_data_entry_form of the model runs it */
  const dg_action_t *root;
  /* Every action in execution order (root, pre-child, post-child; an inner
   * save's GetSessionValues right after it); child saves run before
   * steps[first_post]. */
  const dg_action_t *const *steps;
  size_t nsteps;
  size_t first_post;
  const dg_child_config_t *children;
  size_t nchildren;
  size_t index;
} dg_endpoint_t;

/* ---- The snapshot -------------------------------------------------------- */
typedef struct dg_catalog {
  const char *dir; /* configuration directory it was loaded from */
  dg_server_settings_t server;
  dg_oauth_settings_t oauth;
  const dg_model_t *models;
  size_t nmodels;
  const dg_role_t *roles;
  size_t nroles;
  const dg_user_t *users;
  size_t nusers;
  const dg_connector_t *connectors;
  size_t nconnectors;
  const dg_saved_query_t *saved_queries;
  size_t nsaved_queries;
  const dg_endpoint_t *endpoints;
  size_t nendpoints;
  dg_file_settings_t files;
  /* private: reference count and the memory everything above lives in */
  int refs;
  dg_arena_t *arena;
} dg_catalog_t;

/* Problems found while loading, each as "file: json/path: message". */
typedef struct dg_config_errors {
  char **lines;
  size_t count;
  size_t cap;
} dg_config_errors_t;

void dg_config_errors_free(dg_config_errors_t *errors);
void dg_config_errors_add(dg_config_errors_t *errors, const char *file, const char *path,
                          const char *fmt, ...) __attribute__((format(printf, 4, 5)));

/* Loads and validates every file of dir. Returns 0 with *out holding one
 * reference, or DG_ECONFIG with every problem in errors (nothing in *out). */
int dg_catalog_load(const char *dir, dg_catalog_t **out, dg_config_errors_t *errors);
dg_catalog_t *dg_catalog_ref(dg_catalog_t *cat);
void dg_catalog_unref(dg_catalog_t *cat);

/* Lookups. Models by GUID (any case) or name; properties by exact name,
 * then case-insensitively (so "orderNumber" finds "OrderNumber"). */
const dg_model_t *dg_catalog_model_by_id(const dg_catalog_t *cat, const char *id);
const dg_model_t *dg_catalog_model_by_name(const dg_catalog_t *cat, const char *name);
const dg_property_t *dg_model_property(const dg_model_t *model, const char *name);
const dg_role_t *dg_catalog_role(const dg_catalog_t *cat, const char *name);
/* Whether the model's entities hold document URLs (an ExternalFileLocation
 * property), which get_file_text reads. */
bool dg_model_has_documents(const dg_model_t *model);
const dg_user_t *dg_catalog_user(const dg_catalog_t *cat, const char *name);
/* Connectors and Saved Queries by GUID (any case) or exact name. */
const dg_connector_t *dg_catalog_connector(const dg_catalog_t *cat, const char *id_or_name);
const dg_saved_query_t *dg_catalog_saved_query(const dg_catalog_t *cat, const char *id_or_name);
/* Endpoints by GUID (any case) or exact name; the endpoint that
 * submit_data_entry_form runs for a model (NULL: forms only write the
 * store). */
const dg_endpoint_t *dg_catalog_endpoint(const dg_catalog_t *cat, const char *id_or_name);
const dg_endpoint_t *dg_catalog_form_endpoint(const dg_catalog_t *cat, const dg_model_t *model);
/* A declared input by exact name, then in any case; NULL when unknown. */
const dg_saved_input_t *dg_saved_query_input(const dg_saved_query_t *q, const char *name);
/* True when text is a valid value for an input of type: Int and Long whole
 * numbers in range, Double a JSON number, Decimal one without exponent,
 * Boolean true or false (any case), Date YYYY-MM-DD, DateTime ISO 8601
 * (YYYY-MM-DDTHH:MM[:SS[.f]][Z|+HH:MM]), Guid 8-4-4-4-12; any String. */
bool dg_saved_input_value_valid(dg_data_type_t type, const char *text);
/* What a valid value of type looks like, for error messages. */
const char *dg_saved_input_value_hint(dg_data_type_t type);

/* For `datagate --explain-endpoint NAME`: prints the endpoint's action tree
 * in execution order with the session values each action may use, its
 * child configurations recursively, to out. Returns 0, or 1 (with a
 * message) when the endpoint is unknown. */
int dg_catalog_explain_endpoint(const dg_catalog_t *cat, const char *name, FILE *out);

/* The session values the property picker offers for each action of e, by
 * the rules the loader checks placeholders with: for every place e runs
 * (on its own, and as the child save of each list that names it) and every
 * action in execution order, the values set before it, each with the
 * placeholder to insert. A new JSON object, or NULL when out of memory:
 *   {"endpoint", "places": [{"parent", "list", "steps": [{"path", "title",
 *    "sessionValues": [{"name", "insert", "origin", "setBy", "setByPath"}]}]}]}
 * origin: "header" (an earlier action of e), "parentList" (set by the
 * parent on each record of its list), "parentHeader" (a header value the
 * parent's run extracted before its child saves, as {SESSION:Ref.Name}). */
json_t *dg_catalog_endpoint_scope(const dg_catalog_t *cat, const dg_endpoint_t *e);

/* A check of what start-up reads besides the configuration files (the
 * sample data), run on a valid catalog: 0 or a problem in err. */
typedef int (*dg_catalog_check_fn)(const dg_catalog_t *cat, dg_errctx_t *err);

/* For `datagate --check-config`: loads dir, prints every problem line,
 * runs more (may be NULL) when the files are valid and prints its problem
 * (with dir's path taken off), then a one-line summary ("conf: 6 models,
 * 3 roles, 3 users: OK") to out. Returns 0 when all is valid, 1 otherwise. */
int dg_catalog_check(const char *dir, dg_catalog_check_fn more, FILE *out);

#endif
