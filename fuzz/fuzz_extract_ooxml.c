/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes the DOCX and PPTX extractors: the ZIP container and its limits,
 * relationships, the xmlReader walks and the DTD refusal. The package
 * decides which of the two it is. */
#include "fuzz_extract.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_extract(DG_EXTRACT_DOCX, NULL, data, size);
}
