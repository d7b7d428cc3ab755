/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The extractors, one per format family, and which formats each reads. */
#include "extract/internal.h"

typedef struct entry {
  dg_extract_format_t format;
  const dg__extractor_t *extractor;
} entry_t;

static const entry_t registry[] = {
    {DG_EXTRACT_PDF, &dg__extract_pdf},    {DG_EXTRACT_DOCX, &dg__extract_ooxml},
    {DG_EXTRACT_PPTX, &dg__extract_ooxml}, {DG_EXTRACT_HTML, &dg__extract_html},
    {DG_EXTRACT_XML, &dg__extract_xml},    {DG_EXTRACT_TXT, &dg__extract_text},
    {DG_EXTRACT_MD, &dg__extract_text},    {DG_EXTRACT_CSV, &dg__extract_text},
    {DG_EXTRACT_JSON, &dg__extract_text},
};

const dg__extractor_t *dg__extract_extractor(dg_extract_format_t format) {
  for (size_t i = 0; i < DG_ARRAY_SIZE(registry); i++) {
    if (registry[i].format == format)
      return registry[i].extractor;
  }
  return NULL;
}
