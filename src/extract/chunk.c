/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The chunker: cuts extracted text into chunks of at most N characters that
 * end on the strongest boundary found in their last fifth, and shapes the
 * File text response envelope. A chunk depends only on the text from its
 * start to one character past its limit, so chunks cut while the text is
 * still growing equal those cut later from the whole text. */
#include <stdlib.h>
#include <string.h>

#include "extract/internal.h"

enum { LEVEL_SPACE, LEVEL_LINE, LEVEL_SENTENCE, LEVEL_PARAGRAPH, LEVELS };

int dg__chunk_size_check(size_t chunk_chars, dg_errctx_t *err) {
  if (chunk_chars >= DG_EXTRACT_CHUNK_MIN && chunk_chars <= DG_EXTRACT_CHUNK_MAX)
    return 0;
  return dg_errctx_set(err, DG_EINVAL, "chunkChars",
                       "chunkChars %zu is out of range: allowed are %d to %d characters",
                       chunk_chars, DG_EXTRACT_CHUNK_MIN, DG_EXTRACT_CHUNK_MAX);
}

/* True when the bytes before p end a sentence written in CJK punctuation
 * (ideographic full stop, fullwidth exclamation and question marks). */
static bool cjk_stop_before(const unsigned char *t, size_t p, size_t start) {
  if (p < start + 3)
    return false;
  const unsigned char *q = t + p - 3;
  return (q[0] == 0xe3 && q[1] == 0x80 && q[2] == 0x82) ||
         (q[0] == 0xef && q[1] == 0xbc && (q[2] == 0x81 || q[2] == 0x9f));
}

/* The strongest boundary that a chunk could end at, just before p. */
static int level_before(const unsigned char *t, size_t p, size_t start) {
  unsigned char c1 = t[p - 1];
  unsigned char c2 = p >= start + 2 ? t[p - 2] : 0;
  if (c1 == '\n' && c2 == '\n')
    return LEVEL_PARAGRAPH;
  if ((c1 == ' ' || c1 == '\n') && (c2 == '.' || c2 == '!' || c2 == '?'))
    return LEVEL_SENTENCE;
  if (cjk_stop_before(t, p, start))
    return LEVEL_SENTENCE;
  if (c1 == '\n')
    return LEVEL_LINE;
  if (c1 == ' ' || c1 == '\t')
    return LEVEL_SPACE;
  return -1;
}

/* The last position in [lo, hi] where each level of boundary occurs; the
 * strongest found wins, else hi. */
static size_t best_boundary(const char *text, size_t start, size_t lo, size_t hi) {
  const unsigned char *t = (const unsigned char *)text;
  size_t found[LEVELS] = {0};
  for (size_t p = hi; p >= lo && p > start; p--) {
    int level = level_before(t, p, start);
    if (level >= 0 && found[level] == 0)
      found[level] = p;
    if (found[LEVEL_PARAGRAPH] != 0)
      break;
  }
  for (int level = LEVELS - 1; level >= 0; level--) {
    if (found[level] != 0)
      return found[level];
  }
  return hi;
}

bool dg__chunk_end(const char *text, size_t len, size_t start, size_t chunk_chars, bool complete,
                   size_t *end, uint64_t *chars) {
  uint64_t head = 0, tail = 0;
  size_t window = dg__utf8_advance(text, len, start, chunk_chars - chunk_chars / 5, &head);
  size_t limit = dg__utf8_advance(text, len, window, chunk_chars / 5, &tail);
  if (limit >= len) {
    /* Whether this is the last chunk is known only once the text is. */
    if (!complete)
      return false;
    *end = len;
    *chars = head + tail;
    return true;
  }
  *end = best_boundary(text, start, window, limit);
  *chars = head + dg__utf8_count(text + window, *end - window);
  return true;
}

static int past_end(uint64_t offset, uint64_t total, dg_errctx_t *err) {
  return dg_errctx_set(err, DG_EINVAL, "offset",
                       "offset %llu is past the end of the text: allowed are 0 to %llu "
                       "(the text has %llu characters)",
                       (unsigned long long)offset, (unsigned long long)total,
                       (unsigned long long)total);
}

/* Fills out with the chunk starting at byte start, character offset. */
static void cut(const char *text, size_t len, size_t start, uint64_t offset, size_t chunk_chars,
                dg_extract_chunk_t *out) {
  size_t end = len;
  uint64_t chars = 0;
  dg__chunk_end(text, len, start, chunk_chars, true, &end, &chars);
  memset(out, 0, sizeof(*out));
  out->text = text + start;
  out->len = end - start;
  out->offset = offset;
  out->next_offset = offset + chars;
  out->has_more = end < len;
}

int dg_extract_chunk_text(const char *text, size_t len, uint64_t offset, size_t chunk_chars,
                          dg_extract_chunk_t *out, dg_errctx_t *err) {
  int rc = dg__chunk_size_check(chunk_chars, err);
  if (rc != 0)
    return rc;
  uint64_t taken = 0;
  size_t start = dg__utf8_advance(text, len, 0, offset, &taken);
  if (taken < offset)
    return past_end(offset, taken, err);
  cut(text, len, start, offset, chunk_chars, out);
  return 0;
}

json_t *dg_extract_chunk_json(const dg_extract_chunk_t *chunk) {
  json_t *o = json_object();
  if (o == NULL)
    return NULL;
  json_object_set_new(o, "text", json_stringn(chunk->text, chunk->len));
  json_object_set_new(o, "offset", json_integer((json_int_t)chunk->offset));
  json_object_set_new(o, "nextOffset",
                      chunk->has_more ? json_integer((json_int_t)chunk->next_offset) : json_null());
  json_object_set_new(o, "hasMore", json_boolean(chunk->has_more));
  json_object_set_new(o, "format", json_string(dg_extract_format_name(chunk->format)));
  if (chunk->truncated != NULL) {
    json_object_set_new(o, "truncated", json_true());
    json_object_set_new(o, "truncatedReason", json_string(chunk->truncated));
  }
  if (json_object_get(o, "text") == NULL) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* ---- Documents --------------------------------------------------------------- */

struct dg_extract_doc {
  atomic_int refs;
  char *text;
  size_t len;
  uint64_t chars;
  size_t *index; /* index[k]: byte where character k * DG__INDEX_STEP starts */
  size_t index_len;
  dg_extract_format_t format;
  char *truncated;
};

static int build_index(dg_extract_doc_t *d) {
  d->chars = dg__utf8_count(d->text, d->len);
  d->index_len = (size_t)(d->chars / DG__INDEX_STEP) + 1;
  d->index = malloc(d->index_len * sizeof(*d->index));
  if (d->index == NULL)
    return DG_ENOMEM;
  size_t pos = 0;
  for (size_t k = 0; k < d->index_len; k++) {
    uint64_t taken = 0;
    d->index[k] = pos;
    pos = dg__utf8_advance(d->text, d->len, pos, DG__INDEX_STEP, &taken);
  }
  return 0;
}

dg_extract_doc_t *dg__extract_doc_new(char *text, size_t len, dg_extract_format_t format,
                                      const char *truncated) {
  dg_extract_doc_t *d = calloc(1, sizeof(*d));
  if (d == NULL) {
    free(text);
    return NULL;
  }
  atomic_init(&d->refs, 1);
  d->text = text;
  d->len = len;
  d->format = format;
  if (truncated != NULL && truncated[0] != '\0')
    d->truncated = strdup(truncated);
  if (build_index(d) != 0 || (truncated != NULL && truncated[0] != '\0' && !d->truncated)) {
    dg_extract_doc_unref(d);
    return NULL;
  }
  return d;
}

dg_extract_doc_t *dg_extract_doc_ref(dg_extract_doc_t *doc) {
  atomic_fetch_add(&doc->refs, 1);
  return doc;
}

void dg_extract_doc_unref(dg_extract_doc_t *doc) {
  if (doc == NULL || atomic_fetch_sub(&doc->refs, 1) != 1)
    return;
  free(doc->text);
  free(doc->index);
  free(doc->truncated);
  free(doc);
}

const char *dg_extract_doc_text(const dg_extract_doc_t *doc, size_t *len) {
  if (len != NULL)
    *len = doc->len;
  return doc->text;
}

uint64_t dg_extract_doc_chars(const dg_extract_doc_t *doc) {
  return doc->chars;
}

dg_extract_format_t dg_extract_doc_format(const dg_extract_doc_t *doc) {
  return doc->format;
}

const char *dg_extract_doc_truncated(const dg_extract_doc_t *doc) {
  return doc->truncated;
}

size_t dg_extract_doc_bytes(const dg_extract_doc_t *doc) {
  return sizeof(*doc) + doc->len + 1 + doc->index_len * sizeof(*doc->index);
}

int dg_extract_doc_chunk(const dg_extract_doc_t *doc, uint64_t offset, size_t chunk_chars,
                         dg_extract_chunk_t *out, dg_errctx_t *err) {
  int rc = dg__chunk_size_check(chunk_chars, err);
  if (rc != 0)
    return rc;
  if (offset > doc->chars)
    return past_end(offset, doc->chars, err);
  uint64_t taken = 0;
  size_t from = doc->index[offset / DG__INDEX_STEP];
  size_t start = dg__utf8_advance(doc->text, doc->len, from, offset % DG__INDEX_STEP, &taken);
  cut(doc->text, doc->len, start, offset, chunk_chars, out);
  out->format = doc->format;
  out->truncated = doc->truncated;
  return 0;
}
