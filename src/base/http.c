/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* HTTP facts shared by the inbound server and the upstream client: the
 * reason phrase of a status code and W3C Trace Context ids. */
#include <ctype.h>
#include <string.h>

#include "datagate/base.h"

/* ---- Reason phrases ------------------------------------------------------ */

typedef struct status_text {
  int status;
  const char *text;
} status_text_t;

static const status_text_t status_texts[] = {
    {100, "Continue"},
    {101, "Switching Protocols"},
    {200, "OK"},
    {201, "Created"},
    {202, "Accepted"},
    {204, "No Content"},
    {206, "Partial Content"},
    {301, "Moved Permanently"},
    {302, "Found"},
    {303, "See Other"},
    {304, "Not Modified"},
    {307, "Temporary Redirect"},
    {308, "Permanent Redirect"},
    {400, "Bad Request"},
    {401, "Unauthorized"},
    {403, "Forbidden"},
    {404, "Not Found"},
    {405, "Method Not Allowed"},
    {406, "Not Acceptable"},
    {408, "Request Timeout"},
    {409, "Conflict"},
    {410, "Gone"},
    {411, "Length Required"},
    {412, "Precondition Failed"},
    {413, "Content Too Large"},
    {414, "URI Too Long"},
    {415, "Unsupported Media Type"},
    {417, "Expectation Failed"},
    {421, "Misdirected Request"},
    {422, "Unprocessable Content"},
    {426, "Upgrade Required"},
    {429, "Too Many Requests"},
    {431, "Request Header Fields Too Large"},
    {500, "Internal Server Error"},
    {501, "Not Implemented"},
    {502, "Bad Gateway"},
    {503, "Service Unavailable"},
    {504, "Gateway Timeout"},
    {505, "HTTP Version Not Supported"},
};

const char *dg_http_status_text(int status) {
  for (size_t i = 0; i < DG_ARRAY_SIZE(status_texts); i++) {
    if (status_texts[i].status == status)
      return status_texts[i].text;
  }
  return "Unknown";
}

/* ---- Trace ids ----------------------------------------------------------- */

static void hex(const unsigned char *in, size_t n, char *out) {
  static const char digits[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = digits[in[i] >> 4];
    out[2 * i + 1] = digits[in[i] & 15];
  }
  out[2 * n] = '\0';
}

static bool all_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!isxdigit((unsigned char)s[i]))
      return false;
  }
  return true;
}

void dg_trace_id(const char *request_id, char out[33]) {
  unsigned char bytes[32];
  if (request_id != NULL && dg_uuid_valid(request_id)) {
    size_t k = 0;
    for (const char *p = request_id; *p != '\0'; p++) {
      if (*p != '-')
        out[k++] = (char)tolower((unsigned char)*p);
    }
    out[32] = '\0';
  } else if (request_id != NULL && strlen(request_id) == 32 && all_hex(request_id, 32)) {
    for (size_t i = 0; i < 32; i++)
      out[i] = (char)tolower((unsigned char)request_id[i]);
    out[32] = '\0';
  } else if (request_id != NULL && request_id[0] != '\0') {
    dg_sha256(request_id, strlen(request_id), bytes);
    hex(bytes, 16, out);
  } else {
    dg_random_bytes(bytes, 16);
    hex(bytes, 16, out);
  }
  /* An all-zero trace id is invalid in W3C Trace Context. */
  if (strspn(out, "0") == 32)
    out[31] = '1';
}

/* Lower-case hexadecimal only, as W3C Trace Context writes it. */
static bool lower_hex(const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) {
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return false;
  }
  return true;
}

/* "00-<32 hex trace id>-<16 hex parent id>-<2 hex flags>"; a later version
 * may append fields after a '-', version ff is invalid, and neither id may
 * be all zeros. */
bool dg_traceparent_trace_id(const char *value, char out[33]) {
  size_t n = value != NULL ? strlen(value) : 0;
  if (n < 55 || value[2] != '-' || value[35] != '-' || value[52] != '-')
    return false;
  if (!lower_hex(value, 2) || strncmp(value, "ff", 2) == 0 || !lower_hex(value + 3, 32) ||
      !lower_hex(value + 36, 16) || !lower_hex(value + 53, 2))
    return false;
  bool v00 = strncmp(value, "00", 2) == 0;
  if ((v00 && n != 55) || (!v00 && n > 55 && value[55] != '-'))
    return false;
  if (strspn(value + 3, "0") >= 32 || strspn(value + 36, "0") >= 16)
    return false;
  memcpy(out, value + 3, 32);
  out[32] = '\0';
  return true;
}
