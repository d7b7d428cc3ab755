/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes the HTML extractor: the push parser fed in slices, encoding
 * choice, visible-text rules and the nesting limit. The first byte picks a
 * declared charset, so that the content type path is fuzzed too. */
#include "fuzz_extract.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const char *const types[] = {"text/html", "text/html; charset=utf-8",
                                      "text/html; charset=windows-1252",
                                      "text/html; charset=shift_jis"};
  if (size == 0)
    return 0;
  return fuzz_extract(DG_EXTRACT_HTML, types[data[0] % 4], data + 1, size - 1);
}
