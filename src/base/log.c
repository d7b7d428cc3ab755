/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* JSON-lines logging. One write(2) per line so that lines from forked
 * workers sharing a descriptor never interleave. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "datagate/base.h"

static int log_fd = 2;
static dg_log_level_t log_min = DG_LOG_INFO;
static json_t *log_common;
/* log_common as ",\"name\":value" pairs, written once for the access log,
 * which adds them to every line; NULL: none, or not written. */
static char *common_text;
static size_t common_len;

static const char *const level_names[] = {"debug", "info", "warn", "error", "notice"};

void dg_log_init(int fd, dg_log_level_t min_level) {
  log_fd = fd;
  log_min = min_level;
}

static int write_common(dg_buf_t *out) {
  const char *key;
  json_t *value;
  int rc = 0;
  json_object_foreach(log_common, key, value) {
    rc = rc ? rc : dg_buf_append(out, ",", 1);
    rc = rc ? rc : dg_json_write_string(out, key, strlen(key));
    rc = rc ? rc : dg_buf_append(out, ":", 1);
    rc = rc ? rc : dg_json_write(value, out);
  }
  return rc;
}

void dg_log_set_common(json_t *fields) {
  json_decref(log_common);
  log_common = fields ? json_deep_copy(fields) : NULL;
  free(common_text);
  common_text = NULL;
  common_len = 0;
  dg_buf_t text;
  dg_buf_init(&text, 64 * 1024);
  if (log_common != NULL && write_common(&text) == 0)
    common_text = dg_buf_steal(&text, &common_len);
  dg_buf_free(&text);
}

bool dg_log_enabled(dg_log_level_t level) {
  return level >= log_min;
}

dg_log_level_t dg_log_level_parse(const char *name, bool *ok) {
  for (size_t i = 0; i <= DG_LOG_ERROR; i++) {
    if (strcmp(name, level_names[i]) == 0) {
      *ok = true;
      return (dg_log_level_t)i;
    }
  }
  *ok = false;
  return DG_LOG_INFO;
}

static void write_all(const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(log_fd, p, n);
    if (w <= 0)
      return; /* logging must never take the process down */
    p += w;
    n -= (size_t)w;
  }
}

void dg_log_json(dg_log_level_t level, const char *event, json_t *fields) {
  if ((unsigned)level >= DG_ARRAY_SIZE(level_names))
    level = DG_LOG_ERROR;
  if (!dg_log_enabled(level)) {
    json_decref(fields);
    return;
  }
  char ts[32];
  dg_time_iso8601(ts, sizeof(ts));
  json_t *line = json_object();
  json_object_set_new(line, "ts", json_string(ts));
  json_object_set_new(line, "level", json_string(level_names[level]));
  json_object_set_new(line, "event", json_string(event));
  if (log_common != NULL)
    json_object_update(line, log_common);
  if (fields != NULL)
    json_object_update(line, fields);
  json_decref(fields);
  /* 15 significant digits: a duration rounded to the microsecond prints
   * as 0.656, not 0.65600000000000003. */
  char *text = json_dumps(line, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(15));
  json_decref(line);
  if (text == NULL)
    return;
  size_t n = strlen(text);
  text[n] = '\n';
  write_all(text, n + 1);
  text[n] = '\0';
  free(text);
}

void dg_log_illegal_state(const char *what, const char *from, const char *to) {
  dg_log_json(DG_LOG_ERROR, "illegal_state",
              json_pack("{s:s,s:s,s:s}", "what", what, "from", from, "to", to));
  abort();
}

int dg_log_write_common(dg_buf_t *out) {
  if (common_text != NULL)
    return common_len > 0 ? dg_buf_append(out, common_text, common_len) : 0;
  return write_common(out);
}

double dg_log_ms(uint64_t ns) {
  return (double)((ns + 500) / 1000) / 1000.0;
}

void dg_logf(dg_log_level_t level, const char *event, const char *fmt, ...) {
  if (!dg_log_enabled(level))
    return;
  char msg[2048];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  dg_log_json(level, event, json_pack("{s:s}", "msg", msg));
}
