/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes the XML extractor: the SAX push parser with entities never
 * expanded, nothing loaded, and the depth limit. */
#include "fuzz_extract.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_extract(DG_EXTRACT_XML, NULL, data, size);
}
