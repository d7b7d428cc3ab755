/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes format detection and the text formats: byte order marks, UTF-16,
 * declared charsets through iconv, replacement of invalid UTF-8, and the
 * chunker over whatever comes out. The first byte picks the content type;
 * detection must accept or refuse every input with a message. */
#include "fuzz_extract.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const types[] = {NULL,
                                      "text/plain; charset=utf-16le",
                                      "text/csv; charset=windows-1252",
                                      "application/json",
                                      "text/markdown; charset=utf-16",
                                      "text/plain; charset=euc-jp",
                                      "application/octet-stream",
                                      "text/plain; charset=utf-8"};
  if (size == 0)
    return 0;
  const char *type = types[data[0] % 8];
  dg_extract_format_t format = DG_EXTRACT_UNKNOWN;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  size_t head = size - 1 < DG_EXTRACT_SNIFF_BYTES ? size - 1 : DG_EXTRACT_SNIFF_BYTES;
  int rc = dg_extract_detect(type, data + 1, head, "https://h/file.txt?q=1", &format, &err);
  fuzz_check(rc == 0 ? format != DG_EXTRACT_UNKNOWN : err.message[0] != '\0');
  return fuzz_extract(DG_EXTRACT_TXT, type, data + 1, size - 1);
}
