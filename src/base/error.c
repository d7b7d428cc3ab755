/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Error codes and the caller-facing error context. */
#include <stdio.h>
#include <string.h>

#include "datagate/base.h"

const char *dg_err_name(int code) {
  switch (code) {
#define XX(name, value, msg)                                                                       \
  case DG_##name:                                                                                  \
    return "DG_" #name;
    DG_ERRNO_MAP(XX)
#undef XX
  default:
    return "DG_UNKNOWN";
  }
}

const char *dg_strerror(int code) {
  switch (code) {
#define XX(name, value, msg)                                                                       \
  case DG_##name:                                                                                  \
    return msg;
    DG_ERRNO_MAP(XX)
#undef XX
  default:
    return "unknown error";
  }
}

/* Only what is read is cleared: the struct is over a kilobyte, and a
 * request clears several. */
void dg_errctx_clear(dg_errctx_t *ctx) {
  ctx->code = 0;
  ctx->param[0] = '\0';
  ctx->message[0] = '\0';
}

int dg_errctx_set(dg_errctx_t *ctx, int code, const char *param, const char *fmt, ...) {
  if (ctx == NULL)
    return code;
  ctx->code = code;
  dg_strlcpy(ctx->param, param ? param : "", sizeof(ctx->param));
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(ctx->message, sizeof(ctx->message), fmt, ap);
  va_end(ap);
  return code;
}
