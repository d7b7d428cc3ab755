/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Shared by the extractor harnesses: runs one extraction with small
 * limits and checks what every result must satisfy: valid UTF-8 within
 * the text limit, a character count that matches, chunks that tile the
 * text from any offset, and an envelope for each. A failure must come
 * with a message. */
#ifndef DG_FUZZ_EXTRACT_H
#define DG_FUZZ_EXTRACT_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "datagate/extract.h"
#include "extract/internal.h"

static inline void fuzz_check(bool ok) {
  if (!ok)
    abort();
}

static inline void fuzz_check_text(const char *text, size_t len) {
  for (size_t i = 0; i < len;) {
    uint32_t cp = 0;
    int k = dg_utf8_decode((const unsigned char *)text + i, len - i, &cp);
    fuzz_check(k > 0 && cp != 0);
    i += (size_t)k;
  }
}

/* Walks the chunks from offset to the end. */
static inline void fuzz_check_chunks(const dg_extract_doc_t *doc, uint64_t offset) {
  dg_extract_chunk_t c;
  dg_errctx_t err;
  do {
    fuzz_check(dg_extract_doc_chunk(doc, offset, 64, &c, &err) == 0);
    fuzz_check(c.offset == offset && c.next_offset - c.offset <= 64);
    fuzz_check(dg__utf8_count(c.text, c.len) == c.next_offset - c.offset);
    json_t *env = dg_extract_chunk_json(&c);
    fuzz_check(env != NULL);
    json_decref(env);
    fuzz_check(c.has_more || c.next_offset == dg_extract_doc_chars(doc));
    fuzz_check(c.next_offset > c.offset || !c.has_more);
    offset = c.next_offset;
  } while (c.has_more);
}

static inline int fuzz_extract(dg_extract_format_t format, const char *content_type,
                               const uint8_t *data, size_t size) {
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_text_bytes = 256 << 10;
  limits.max_zip_entry_bytes = 4 << 20;
  limits.max_zip_total_bytes = 8 << 20;
  limits.max_units = 20;
  limits.max_memory_bytes = 128 << 20;
  limits.max_time_ms = 2000;
  dg_extract_request_t req = {.format = format, .content_type = content_type, .limits = &limits};
  dg_extract_doc_t *doc = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  int rc = dg_extract_buffer(&req, data, size, &doc, &err);
  if (rc != 0) {
    fuzz_check(doc == NULL && err.code == rc && err.message[0] != '\0');
    return 0;
  }
  size_t len = 0;
  const char *text = dg_extract_doc_text(doc, &len);
  fuzz_check(len <= limits.max_text_bytes && strlen(text) == len);
  fuzz_check_text(text, len);
  fuzz_check(dg_extract_doc_chars(doc) == dg__utf8_count(text, len));
  fuzz_check_chunks(doc, 0);
  fuzz_check_chunks(doc, dg_extract_doc_chars(doc) / 2);
  dg_extract_doc_unref(doc);
  return 0;
}

#endif
