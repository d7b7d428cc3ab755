/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Bounded growable buffer: every buffer knows its maximum. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/base.h"

void dg_buf_init(dg_buf_t *buf, size_t max) {
  buf->data = NULL;
  buf->len = 0;
  buf->cap = 0;
  buf->max = max;
}

void dg_buf_free(dg_buf_t *buf) {
  free(buf->data);
  buf->data = NULL;
  buf->len = 0;
  buf->cap = 0;
}

void dg_buf_reset(dg_buf_t *buf) {
  buf->len = 0;
  if (buf->data != NULL)
    buf->data[0] = '\0';
}

int dg_buf_reserve(dg_buf_t *buf, size_t extra) {
  if (extra > buf->max || buf->len > buf->max - extra)
    return DG_E2BIG;
  /* With max == SIZE_MAX there may be no room left for the terminator. */
  if (buf->len + extra == SIZE_MAX)
    return DG_E2BIG;
  size_t need = buf->len + extra + 1; /* room for the terminator */
  if (need <= buf->cap)
    return 0;
  size_t cap = buf->cap ? buf->cap : 256;
  while (cap < need)
    cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  if (buf->max < SIZE_MAX && cap > buf->max + 1)
    cap = buf->max + 1;
  char *p = realloc(buf->data, cap);
  if (p == NULL)
    return DG_ENOMEM;
  buf->data = p;
  buf->cap = cap;
  return 0;
}

int dg_buf_append(dg_buf_t *buf, const void *data, size_t len) {
  int rc = dg_buf_room(buf, len); /* most appends fit: no call to grow */
  if (rc != 0)
    return rc;
  if (len > 0)
    memcpy(buf->data + buf->len, data, len);
  buf->len += len;
  buf->data[buf->len] = '\0';
  return 0;
}

int dg_buf_append_str(dg_buf_t *buf, const char *s) {
  return dg_buf_append(buf, s, strlen(s));
}

int dg_buf_appendf(dg_buf_t *buf, const char *fmt, ...) {
  va_list ap;
  /* Formatted once into the room already there; only text that does not
   * fit is measured and formatted again after growing. */
  size_t room = buf->cap > buf->len ? buf->cap - buf->len : 0;
  va_start(ap, fmt);
  int n = vsnprintf(room > 0 ? buf->data + buf->len : NULL, room, fmt, ap);
  va_end(ap);
  if (n < 0) {
    if (room > 0)
      buf->data[buf->len] = '\0';
    return DG_EINVAL;
  }
  if ((size_t)n < room && (size_t)n <= buf->max - buf->len && buf->len + (size_t)n != SIZE_MAX) {
    buf->len += (size_t)n;
    return 0;
  }
  if (room > 0)
    buf->data[buf->len] = '\0'; /* out keeps what it had */
  int rc = dg_buf_reserve(buf, (size_t)n);
  if (rc != 0)
    return rc;
  va_start(ap, fmt);
  vsnprintf(buf->data + buf->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  buf->len += (size_t)n;
  return 0;
}

void dg_buf_consume(dg_buf_t *buf, size_t n) {
  if (n >= buf->len) {
    dg_buf_reset(buf);
    return;
  }
  memmove(buf->data, buf->data + n, buf->len - n);
  buf->len -= n;
  buf->data[buf->len] = '\0';
}

char *dg_buf_steal(dg_buf_t *buf, size_t *len) {
  char *p = buf->data;
  if (len != NULL)
    *len = buf->len;
  if (p == NULL)
    p = calloc(1, 1);
  buf->data = NULL;
  buf->len = 0;
  buf->cap = 0;
  return p;
}

int dg_buf_read_file(dg_buf_t *buf, const char *path) {
  FILE *f = fopen(path, "rb");
  if (f == NULL)
    return errno == ENOENT ? DG_ENOENT : DG_EIO;
  int rc = 0;
  char chunk[16384];
  size_t n;
  do {
    n = fread(chunk, 1, sizeof(chunk), f);
    if (n > 0 && dg_buf_append(buf, chunk, n) != 0)
      rc = DG_E2BIG;
  } while (n == sizeof(chunk) && rc == 0);
  if (rc == 0 && ferror(f))
    rc = DG_EIO;
  int saved = errno;
  fclose(f);
  errno = saved;
  return rc;
}
