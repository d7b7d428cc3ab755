/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Small pure pieces of the HTTP client: URL parsing and redirect
 * resolution, Retry-After, header checks, the address
 * policy and text helpers for messages. Nothing here touches the loop. */
#include <arpa/inet.h>
#include <ctype.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <time.h>

#include "client/internal.h"

/* ---- URLs ---------------------------------------------------------------- */

static bool host_char_ok(char c) {
  return isalnum((unsigned char)c) || c == '-' || c == '.' || c == '_';
}

/* Printable ASCII without spaces: callers encode anything else. */
static bool target_ok(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c <= 0x20 || c >= 0x7f)
      return false;
  }
  return true;
}

static int parse_scheme(const char *text, dg__url_t *out, const char **rest) {
  if (strncasecmp(text, "https://", 8) == 0) {
    out->https = true;
    out->port = 443;
    *rest = text + 8;
    return 0;
  }
  if (strncasecmp(text, "http://", 7) == 0) {
    out->https = false;
    out->port = 80;
    *rest = text + 7;
    return 0;
  }
  return DG_EINVAL;
}

static int parse_ipv6(const char *p, size_t n, dg__url_t *out, const char **why) {
  struct in6_addr a;
  if (n < 2 || p[n - 1] != ']' || n - 2 >= sizeof(out->host)) {
    *why = "the IPv6 address is not closed with ']'";
    return DG_EINVAL;
  }
  memcpy(out->host, p + 1, n - 2);
  out->host[n - 2] = '\0';
  if (inet_pton(AF_INET6, out->host, &a) != 1) {
    *why = "the IPv6 address in brackets is not valid";
    return DG_EINVAL;
  }
  out->ipv6 = true;
  return 0;
}

static int parse_hostname(const char *p, size_t n, dg__url_t *out, const char **why) {
  if (n == 0 || n > 253) {
    *why = n == 0 ? "the host is empty" : "the host is longer than 253 characters";
    return DG_EINVAL;
  }
  for (size_t i = 0; i < n; i++) {
    if (!host_char_ok(p[i])) {
      *why = "the host may hold only letters, digits, '-', '.' and '_'";
      return DG_EINVAL;
    }
    out->host[i] = (char)tolower((unsigned char)p[i]);
  }
  out->host[n] = '\0';
  out->ipv6 = false;
  return 0;
}

static int parse_port(const char *p, size_t n, dg__url_t *out, const char **why) {
  char digits[8];
  int64_t port = 0;
  if (n == 0 || n >= sizeof(digits)) {
    *why = "the port is not a number from 1 to 65535";
    return DG_EINVAL;
  }
  memcpy(digits, p, n);
  digits[n] = '\0';
  if (!dg_parse_int64(digits, 1, 65535, &port)) {
    *why = "the port is not a number from 1 to 65535";
    return DG_EINVAL;
  }
  out->port = (uint16_t)port;
  return 0;
}

/* host[:port] or [v6][:port]; userinfo is refused so that credentials
 * never travel in a URL that may be logged. */
static int parse_authority(const char *p, size_t n, dg__url_t *out, const char **why) {
  if (memchr(p, '@', n) != NULL) {
    *why = "user names and passwords in URLs are not allowed (use the connector's authentication)";
    return DG_EINVAL;
  }
  const char *colon = NULL;
  size_t hostlen = n;
  if (n > 0 && p[0] == '[') {
    const char *close = memchr(p, ']', n);
    hostlen = close != NULL ? (size_t)(close - p) + 1 : n;
    colon = hostlen < n && p[hostlen] == ':' ? p + hostlen : NULL;
    if (hostlen < n && colon == NULL) {
      *why = "unexpected characters after the IPv6 address";
      return DG_EINVAL;
    }
  } else {
    colon = memchr(p, ':', n);
    hostlen = colon != NULL ? (size_t)(colon - p) : n;
  }
  int rc = p[0] == '[' ? parse_ipv6(p, hostlen, out, why) : parse_hostname(p, hostlen, out, why);
  if (rc == 0 && colon != NULL)
    rc = parse_port(colon + 1, n - hostlen - 1, out, why);
  return rc;
}

static void set_origin(dg__url_t *u) {
  snprintf(u->origin, sizeof(u->origin), "%s://%s%s%s:%u", u->https ? "https" : "http",
           u->ipv6 ? "[" : "", u->host, u->ipv6 ? "]" : "", (unsigned)u->port);
}

static int set_target(dg_arena_t *arena, const char *p, size_t n, dg__url_t *out,
                      const char **why) {
  const char *hash = memchr(p, '#', n);
  if (hash != NULL)
    n = (size_t)(hash - p);
  if (!target_ok(p, n)) {
    *why = "the path and query may hold only printable ASCII without spaces (percent-encode "
           "the rest)";
    return DG_EINVAL;
  }
  bool slash = n > 0 && p[0] == '/';
  char *t = dg_arena_sprintf(arena, "%s%.*s", slash ? "" : "/", (int)n, p);
  if (t == NULL)
    return DG_ENOMEM;
  out->target = t;
  const char *q = strchr(t, '?');
  out->path_len = q != NULL ? (size_t)(q - t) : strlen(t);
  return 0;
}

int dg__url_parse(dg_arena_t *arena, const char *text, dg__url_t *out, const char **why) {
  const char *p = NULL;
  memset(out, 0, sizeof(*out));
  *why = NULL;
  if (text == NULL || strlen(text) > DG__CLIENT_MAX_URL) {
    *why = text == NULL ? "no URL was given" : "the URL is longer than 8192 characters";
    return DG_EINVAL;
  }
  if (parse_scheme(text, out, &p) != 0) {
    *why = "the URL must start with http:// or https://";
    return DG_EINVAL;
  }
  size_t n = strcspn(p, "/?#");
  int rc = parse_authority(p, n, out, why);
  if (rc == 0)
    rc = set_target(arena, p + n, strlen(p + n), out, why);
  if (rc == 0)
    set_origin(out);
  return rc;
}

/* A relative reference: "//host/x", "/x", "?q" or "x" against base. */
static int resolve_relative(dg_arena_t *arena, const dg__url_t *base, const char *loc,
                            dg__url_t *out, const char **why) {
  char prefix[320];
  snprintf(prefix, sizeof(prefix), "%s://%s%s%s:%u", base->https ? "https" : "http",
           base->ipv6 ? "[" : "", base->host, base->ipv6 ? "]" : "", (unsigned)base->port);
  const char *full = NULL;
  if (loc[0] == '/' && loc[1] == '/')
    full = dg_arena_sprintf(arena, "%s:%s", base->https ? "https" : "http", loc);
  else if (loc[0] == '/')
    full = dg_arena_sprintf(arena, "%s%s", prefix, loc);
  else if (loc[0] == '?')
    full = dg_arena_sprintf(arena, "%s%.*s%s", prefix, (int)base->path_len, base->target, loc);
  else {
    const char *slash = memrchr(base->target, '/', base->path_len);
    int dir = slash != NULL ? (int)(slash - base->target) + 1 : 1;
    full = dg_arena_sprintf(arena, "%s%.*s%s", prefix, dir, base->target, loc);
  }
  if (full == NULL)
    return DG_ENOMEM;
  return dg__url_parse(arena, full, out, why);
}

int dg__url_resolve(dg_arena_t *arena, const dg__url_t *base, const char *location, dg__url_t *out,
                    const char **why) {
  while (*location == ' ' || *location == '\t')
    location++;
  if (*location == '\0') {
    *why = "the Location header is empty";
    return DG_EINVAL;
  }
  const char *colon = strchr(location, ':');
  size_t scheme_end = strcspn(location, ":/?#");
  if (colon != NULL && location + scheme_end == colon) {
    if (strncasecmp(location, "http:", 5) != 0 && strncasecmp(location, "https:", 6) != 0) {
      *why = "the redirect target is not an http or https URL";
      return DG_EINVAL;
    }
    return dg__url_parse(arena, location, out, why);
  }
  return resolve_relative(arena, base, location, out, why);
}

void dg__url_display(const dg__url_t *url, char *out, size_t size) {
  bool default_port = url->port == (url->https ? 443 : 80);
  char port[8] = "";
  if (!default_port)
    snprintf(port, sizeof(port), ":%u", (unsigned)url->port);
  snprintf(out, size, "%s://%s%s%s%s%.*s", url->https ? "https" : "http", url->ipv6 ? "[" : "",
           url->host, url->ipv6 ? "]" : "", port, (int)url->path_len,
           url->target != NULL ? url->target : "/");
}

char *dg__url_full(dg_arena_t *arena, const dg__url_t *url) {
  bool default_port = url->port == (url->https ? 443 : 80);
  char port[8] = "";
  if (!default_port)
    snprintf(port, sizeof(port), ":%u", (unsigned)url->port);
  return dg_arena_sprintf(arena, "%s://%s%s%s%s%s", url->https ? "https" : "http",
                          url->ipv6 ? "[" : "", url->host, url->ipv6 ? "]" : "", port,
                          url->target != NULL ? url->target : "/");
}

/* The public names of the URL helpers. */
int dg_http_url_parse(dg_arena_t *arena, const char *text, dg_http_url_t *out, const char **why) {
  return dg__url_parse(arena, text, out, why);
}

int dg_http_url_resolve(dg_arena_t *arena, const dg_http_url_t *base, const char *location,
                        dg_http_url_t *out, const char **why) {
  return dg__url_resolve(arena, base, location, out, why);
}

void dg_http_url_display(const dg_http_url_t *url, char *out, size_t size) {
  dg__url_display(url, out, size);
}

char *dg_http_url_full(dg_arena_t *arena, const dg_http_url_t *url) {
  return dg__url_full(arena, url);
}

/* ---- Retry-After --------------------------------------------------------- */

bool dg__retry_after_ms(const char *value, int64_t now_sec, uint64_t *out) {
  int64_t secs = 0;
  while (value != NULL && (*value == ' ' || *value == '\t'))
    value++;
  if (value == NULL || *value == '\0')
    return false;
  if (isdigit((unsigned char)value[0])) {
    if (!dg_parse_int64(value, 0, INT32_MAX, &secs))
      return false;
    *out = (uint64_t)secs * 1000;
    return true;
  }
  struct tm tm;
  memset(&tm, 0, sizeof(tm));
  const char *end = strptime(value, "%a, %d %b %Y %H:%M:%S GMT", &tm);
  if (end == NULL || *end != '\0')
    return false;
  int64_t at = (int64_t)timegm(&tm);
  *out = at > now_sec ? (uint64_t)(at - now_sec) * 1000 : 0;
  return true;
}

/* ---- methods and headers ------------------------------------------------- */

bool dg__method_idempotent(const char *method) {
  static const char *const idempotent[] = {"GET", "HEAD", "PUT", "DELETE", "OPTIONS"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(idempotent); i++) {
    if (strcmp(method, idempotent[i]) == 0)
      return true;
  }
  return false;
}

bool dg__header_name_ok(const char *name) {
  static const char specials[] = "!#$%&'*+-.^_`|~";
  if (name == NULL || name[0] == '\0' || strlen(name) > 256)
    return false;
  for (const char *p = name; *p != '\0'; p++) {
    if (!isalnum((unsigned char)*p) && strchr(specials, *p) == NULL)
      return false;
  }
  return true;
}

bool dg__header_value_ok(const char *value) {
  if (value == NULL || strlen(value) > 8192)
    return false;
  for (const unsigned char *p = (const unsigned char *)value; *p != '\0'; p++) {
    if (*p == '\r' || *p == '\n' || (*p < 0x20 && *p != '\t') || *p == 0x7f)
      return false;
  }
  return true;
}

/* ---- messages ------------------------------------------------------------ */

void dg__excerpt(const char *body, size_t len, char *out, size_t size) {
  size_t n = 0;
  size_t keep = size > 4 ? size - 4 : 0;
  for (size_t i = 0; i < len && n < keep; i++) {
    unsigned char c = (unsigned char)body[i];
    out[n++] = c < 0x20 || c == 0x7f ? ' ' : (char)c;
  }
  if (len > n && size > 4) {
    memcpy(out + n, "...", 3);
    n += 3;
  }
  if (size > 0)
    out[n < size ? n : size - 1] = '\0';
}

void dg__addr_text(const struct sockaddr *sa, char *out, size_t size) {
  const void *raw = sa->sa_family == AF_INET6
                        ? (const void *)&((const struct sockaddr_in6 *)sa)->sin6_addr
                        : (const void *)&((const struct sockaddr_in *)sa)->sin_addr;
  if (inet_ntop(sa->sa_family, raw, out, (socklen_t)size) == NULL)
    dg_strlcpy(out, "?", size);
}

/* ---- address policy ------------------------------------------------------ */

/* One block of a special-purpose address registry. */
typedef struct addr_block {
  unsigned char prefix[16];
  unsigned bits;
  dg_http_address_class_t cls;
} addr_block_t;

#define V4(a, b, c, d)                                                                             \
  { a, b, c, d }

/* The IANA IPv4 Special-Purpose Address Registry: blocks that are not
 * globally reachable. Documentation and reserved blocks are never
 * reached; shared and benchmarking space counts as private. */
static const addr_block_t v4_blocks[] = {
    {V4(0, 0, 0, 0), 8, DG_ADDR_RESERVED},        /* "this network" */
    {V4(10, 0, 0, 0), 8, DG_ADDR_PRIVATE},        /* RFC 1918 */
    {V4(100, 64, 0, 0), 10, DG_ADDR_PRIVATE},     /* shared address space */
    {V4(127, 0, 0, 0), 8, DG_ADDR_LOOPBACK},      /* loopback */
    {V4(169, 254, 0, 0), 16, DG_ADDR_LINK_LOCAL}, /* link-local */
    {V4(172, 16, 0, 0), 12, DG_ADDR_PRIVATE},     /* RFC 1918 */
    {V4(192, 0, 0, 0), 24, DG_ADDR_RESERVED},     /* IETF protocol assignments */
    {V4(192, 0, 2, 0), 24, DG_ADDR_RESERVED},     /* TEST-NET-1 */
    {V4(192, 88, 99, 0), 24, DG_ADDR_RESERVED},   /* deprecated 6to4 relay anycast */
    {V4(192, 168, 0, 0), 16, DG_ADDR_PRIVATE},    /* RFC 1918 */
    {V4(198, 18, 0, 0), 15, DG_ADDR_PRIVATE},     /* benchmarking */
    {V4(198, 51, 100, 0), 24, DG_ADDR_RESERVED},  /* TEST-NET-2 */
    {V4(203, 0, 113, 0), 24, DG_ADDR_RESERVED},   /* TEST-NET-3 */
    {V4(224, 0, 0, 0), 4, DG_ADDR_RESERVED},      /* multicast */
    {V4(240, 0, 0, 0), 4, DG_ADDR_RESERVED},      /* reserved, broadcast */
};

/* The IANA IPv6 Special-Purpose Address Registry, less the blocks that
 * embed an IPv4 address (judged by that address, see classify_v6). */
static const addr_block_t v6_blocks[] = {
    {{0}, 128, DG_ADDR_RESERVED},                                /* unspecified */
    {{[15] = 1}, 128, DG_ADDR_LOOPBACK},                         /* ::1 */
    {{0x01, 0x00}, 64, DG_ADDR_RESERVED},                        /* discard-only */
    {{0x20, 0x01, 0x00, 0x00}, 32, DG_ADDR_RESERVED},            /* Teredo */
    {{0x20, 0x01, 0x00, 0x02, 0x00, 0x00}, 48, DG_ADDR_PRIVATE}, /* benchmarking */
    {{0x20, 0x01, 0x00, 0x10}, 28, DG_ADDR_RESERVED},            /* ORCHID */
    {{0x20, 0x01, 0x0d, 0xb8}, 32, DG_ADDR_RESERVED},            /* documentation */
    {{0x3f, 0xff}, 20, DG_ADDR_RESERVED},                        /* documentation */
    {{0x5f, 0x00}, 16, DG_ADDR_RESERVED},                        /* SRv6 SIDs */
    {{0xfc}, 7, DG_ADDR_PRIVATE},                                /* unique local */
    {{0xfe, 0x80}, 10, DG_ADDR_LINK_LOCAL},                      /* link-local */
    {{0xfe, 0xc0}, 10, DG_ADDR_PRIVATE},                         /* site-local (deprecated) */
    {{0xff}, 8, DG_ADDR_RESERVED},                               /* multicast */
};

static bool in_block(const unsigned char *addr, const addr_block_t *b) {
  unsigned full = b->bits / 8, rest = b->bits % 8;
  if (memcmp(addr, b->prefix, full) != 0)
    return false;
  unsigned char mask = (unsigned char)(0xff << (8 - rest));
  return rest == 0 || (addr[full] & mask) == (b->prefix[full] & mask);
}

static dg_http_address_class_t lookup_block(const unsigned char *addr, const addr_block_t *blocks,
                                            size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (in_block(addr, &blocks[i]))
      return blocks[i].cls;
  }
  return DG_ADDR_PUBLIC;
}

static dg_http_address_class_t classify_v4(const unsigned char *a) {
  return lookup_block(a, v4_blocks, DG_ARRAY_SIZE(v4_blocks));
}

static const unsigned char nat64_local[6] = {0x00, 0x64, 0xff, 0x9b, 0, 1}; /* 64:ff9b:1::/48 */

/* Where an IPv6 address carries an IPv4 address that a translator, a
 * tunnel or the stack itself would deliver to: the offset of those four
 * bytes, or -1. */
static int embedded_v4(const unsigned char *b) {
  static const unsigned char mapped[12] = {[10] = 0xff, [11] = 0xff};   /* ::ffff:0:0/96 */
  static const unsigned char translated[12] = {[8] = 0xff, [9] = 0xff}; /* ::ffff:0:0:0/96 */
  static const unsigned char nat64[12] = {0x00, 0x64, 0xff, 0x9b};      /* 64:ff9b::/96 */
  static const unsigned char zero[12] = {0};                            /* ::/96 */
  if (memcmp(b, mapped, 12) == 0 || memcmp(b, translated, 12) == 0 || memcmp(b, nat64, 12) == 0 ||
      memcmp(b, nat64_local, 6) == 0 || memcmp(b, zero, 12) == 0)
    return 12;
  if (b[0] == 0x20 && b[1] == 0x02) /* 6to4, 2002::/16 */
    return 2;
  return -1;
}

static dg_http_address_class_t classify_v6(const unsigned char *b) {
  dg_http_address_class_t cls = lookup_block(b, v6_blocks, DG_ARRAY_SIZE(v6_blocks));
  if (cls != DG_ADDR_PUBLIC)
    return cls;
  int at = embedded_v4(b);
  if (at < 0)
    return DG_ADDR_PUBLIC;
  cls = classify_v4(b + at);
  /* The local-use NAT64 prefix is itself not global. */
  if (cls == DG_ADDR_PUBLIC && memcmp(b, nat64_local, sizeof(nat64_local)) == 0)
    return DG_ADDR_PRIVATE;
  return cls;
}

dg_http_address_class_t dg_http_address_class(const struct sockaddr *sa) {
  if (sa->sa_family == AF_INET)
    return classify_v4((const unsigned char *)&((const struct sockaddr_in *)sa)->sin_addr.s_addr);
  if (sa->sa_family == AF_INET6)
    return classify_v6(((const struct sockaddr_in6 *)sa)->sin6_addr.s6_addr);
  return DG_ADDR_RESERVED;
}

bool dg_http_address_allowed(const dg_http_address_policy_t *policy, const struct sockaddr *addr) {
  if (policy == NULL || !policy->enforce)
    return true;
  bool ok = false;
  switch (dg_http_address_class(addr)) {
  case DG_ADDR_PUBLIC:
    ok = true;
    break;
  case DG_ADDR_LOOPBACK:
    ok = policy->allow_loopback;
    break;
  case DG_ADDR_LINK_LOCAL:
    ok = policy->allow_link_local;
    break;
  case DG_ADDR_PRIVATE:
    ok = policy->allow_private;
    break;
  case DG_ADDR_RESERVED:
    ok = false;
    break;
  }
  if (ok && policy->allow != NULL)
    ok = policy->allow(addr, policy->data);
  return ok;
}
