/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes the PDF extractor (MuPDF behind the page loop, reading order and
 * the memory and time limits) with arbitrary bytes taken as a PDF. */
#include "fuzz_extract.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  return fuzz_extract(DG_EXTRACT_PDF, NULL, data, size);
}
