/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* extract: turns the bytes of a document into plain text, cut into chunks
 * whose offsets count characters (Unicode code points) of that text.
 *
 * Formats: PDF (MuPDF, page by page), DOCX and PPTX (libzip and libxml2's
 * xmlReader, part by part and slide by slide), HTML (libxml2's HTML push
 * parser: visible text only), XML (libxml2 SAX push parser: text and
 * attribute values in document order) and TXT, MD, CSV and JSON as text.
 *
 * Two ways in:
 *  - dg_extract_start/feed/finish/close: driven by a download on a libuv
 *    loop. Bytes are fed as they arrive; parsing runs on the libuv
 *    threadpool one bounded step at a time (a slice of bytes, a PDF page, a
 *    slide, a DOCX part); chunks are handed to the loop as soon as they are
 *    final, then the completion callback runs once.
 *  - dg_extract_buffer: the same extraction run to the end on the calling
 *    thread (command line, benchmarks, fuzzing; never on the loop thread).
 *
 * The text is plain UTF-8 and always valid: invalid input bytes become
 * U+FFFD. Paragraphs are separated by a blank line, lines by "\n". Markers
 * on their own line, preceded by a blank line:
 *   "--- Page N ---"   before the text of PDF page N (1-based, every page);
 *   "--- Slide N ---"  before PPTX slide N, followed by "Title: ..." when the
 *                      slide has a title and "Notes:" before its notes;
 *   "--- Header ---", "--- Footnotes ---", "--- Endnotes ---",
 *   "--- Footer ---"   before the non-body parts of a DOCX that hold text.
 * Table rows are one line each with cells separated by " | ".
 *
 * Everything is bounded by dg_extract_limits_t: over an input limit the
 * caller gets a clear error; past max_text_bytes or max_units the text is
 * cut and marked truncated (a bounded result, with the reason). */
#ifndef DATAGATE_EXTRACT_H
#define DATAGATE_EXTRACT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <uv.h>

#include "datagate/base.h"

/* ---- Formats ------------------------------------------------------------ */

typedef enum dg_extract_format {
  DG_EXTRACT_UNKNOWN = 0,
  DG_EXTRACT_PDF,
  DG_EXTRACT_DOCX,
  DG_EXTRACT_PPTX,
  DG_EXTRACT_HTML,
  DG_EXTRACT_TXT,
  DG_EXTRACT_MD,
  DG_EXTRACT_CSV,
  DG_EXTRACT_JSON,
  DG_EXTRACT_XML,
} dg_extract_format_t;

/* "PDF, DOCX, PPTX, HTML, TXT, MD, CSV, JSON, XML", for error messages. */
extern const char dg_extract_supported[];

/* "PDF", "DOCX", ...; "unknown" for anything else. */
const char *dg_extract_format_name(dg_extract_format_t format);

/* Bytes of the document's start that detection looks at. */
#define DG_EXTRACT_SNIFF_BYTES 1024

/* Decides the format from, in that order of trust: the declared content
 * type (parameters such as charset are ignored here; generic types such as
 * application/octet-stream or application/zip say nothing), the magic bytes
 * at the start of head (%PDF-, a ZIP local header, an XML declaration, an
 * HTML doctype or tag), and the extension of name (a URL, whose query and
 * fragment are ignored, or a file name). A ZIP package is reported as DOCX
 * unless the content type or extension says PPTX; the OOXML extractor then
 * decides from the package's main part. Text without any other sign is TXT.
 * Any of the three may be NULL or empty. On failure returns DG_ENOTSUP with
 * err naming what was given and the supported formats. */
int dg_extract_detect(const char *content_type, const void *head, size_t head_len, const char *name,
                      dg_extract_format_t *out, dg_errctx_t *err);

/* ---- Limits --------------------------------------------------------------- */

typedef struct dg_extract_limits {
  size_t max_input_bytes;     /* document bytes accepted (E2BIG above) */
  size_t max_text_bytes;      /* extracted UTF-8 kept; the rest is cut (truncated) */
  size_t max_zip_entries;     /* entries in a DOCX/PPTX package (E2BIG above) */
  size_t max_zip_entry_bytes; /* uncompressed bytes of one part (E2BIG above) */
  size_t max_zip_total_bytes; /* uncompressed bytes of all parts read (E2BIG above) */
  unsigned max_zip_ratio;     /* uncompressed/compressed size of a part over 1 MiB */
  unsigned max_depth;         /* element nesting in XML, HTML and OOXML parts */
  unsigned max_units;         /* PDF pages or PPTX slides read; the rest is cut */
  size_t max_memory_bytes;    /* memory MuPDF may hold for one PDF (E2BIG above) */
  uint64_t max_time_ms;       /* wall time of the whole extraction (ETIMEDOUT) */
  /* PDF pages one threadpool step reads at most (0 counts as 1); a step
   * also ends once about 5 ms have passed. Chunks reach the loop between
   * steps, so this bounds how much text waits for the next hand-over.
   * Other formats size their steps on their own (a slide, part of a DOCX
   * part, the bytes that arrived). */
  unsigned max_pages_per_step;
  /* Attributes on one XML element (XML, DOCX, PPTX; E2BIG above): libxml2
   * checks every attribute against all earlier ones, so a single element
   * with hundreds of thousands would cost minutes. 0 counts as no limit. */
  unsigned max_attributes;
} dg_extract_limits_t;

/* Defaults: 64 MiB input, 32 MiB text, 10000 entries, 128 MiB per part,
 * 256 MiB for all parts, ratio 200, depth 200, 10000 pages or slides,
 * 512 MiB of MuPDF memory, 20 seconds, 64 pages per step, 1024 attributes
 * on one element. */
void dg_extract_limits_default(dg_extract_limits_t *limits);

/* ---- Isolation ------------------------------------------------------------- */

/* An extraction run in an extractor process of its own: the executable
 * (this program) is started as `PATH --extract-worker`, with a CPU-time
 * and an address-space limit set by the operating system (setrlimit)
 * before it reads the document, and killed (SIGKILL) when the wall-time
 * limit has passed. The document streams in through a pipe and the text
 * out through another; the loop waits for neither. */
typedef struct dg_extract_isolation {
  const char *worker_path; /* the datagate executable */
  unsigned cpu_seconds;    /* RLIMIT_CPU; past it the process is killed */
  size_t memory_bytes;     /* RLIMIT_AS (not set under AddressSanitizer) */
} dg_extract_isolation_t;

/* The extractor process's side: reads one request and the document from
 * standard input, writes the text and the outcome to standard output.
 * Called by main for `--extract-worker`; returns the exit status. */
int dg_extract_worker_main(void);

/* ---- Chunks ----------------------------------------------------------------- */

/* Default and allowed range of the chunk size, in characters. The default
 * keeps a chunk of even CJK text (3 bytes a character) near 30 KB. */
#define DG_EXTRACT_CHUNK_DEFAULT 10000
#define DG_EXTRACT_CHUNK_MIN 16
#define DG_EXTRACT_CHUNK_MAX 1000000

/* One chunk of the text: [offset, next_offset) in characters. A chunk holds
 * at most chunk_chars characters and ends, when one lies in its last fifth,
 * after a paragraph break, else a sentence end (". ", "! ", "? " or a CJK
 * full stop), else a line break, else a space; otherwise it is cut at the
 * character limit, never inside a UTF-8 sequence. text points into memory
 * owned by the producer, valid only during the callback or while the
 * document is referenced; it is not NUL-terminated. */
typedef struct dg_extract_chunk {
  const char *text;
  size_t len; /* bytes */
  uint64_t offset;
  uint64_t next_offset;
  bool has_more;              /* false on the last chunk */
  dg_extract_format_t format; /* the document's format */
  /* Why the text was cut, on every chunk of a cut text (a chunk streamed
   * before the cut was found cannot know it); else NULL. */
  const char *truncated;
} dg_extract_chunk_t;

/* The seed's File text response envelope for a chunk:
 *   {"text": "...", "offset": 0, "nextOffset": 10000, "hasMore": true,
 *    "format": "PDF"}
 * nextOffset is null when hasMore is false; "truncated": true and
 * "truncatedReason" are added when the text was cut. New reference; NULL
 * only when out of memory. */
json_t *dg_extract_chunk_json(const dg_extract_chunk_t *chunk);

/* Cuts the chunk of a UTF-8 text that starts at character offset. An
 * offset equal to the text's length gives an empty last chunk; beyond it is
 * DG_EINVAL naming "offset". chunk_chars outside the allowed range is
 * DG_EINVAL naming "chunkChars". Scans from the start: O(offset). */
int dg_extract_chunk_text(const char *text, size_t len, uint64_t offset, size_t chunk_chars,
                          dg_extract_chunk_t *out, dg_errctx_t *err);

/* ---- Extracted documents ----------------------------------------------------- */

/* The result of one extraction: the text with an index from character
 * offsets to bytes, immutable and reference counted (the references may be
 * taken and dropped from any thread). */
typedef struct dg_extract_doc dg_extract_doc_t;

dg_extract_doc_t *dg_extract_doc_ref(dg_extract_doc_t *doc);
void dg_extract_doc_unref(dg_extract_doc_t *doc);
/* The whole text (NUL-terminated; len in bytes may be NULL). */
const char *dg_extract_doc_text(const dg_extract_doc_t *doc, size_t *len);
/* Length of the text in characters. */
uint64_t dg_extract_doc_chars(const dg_extract_doc_t *doc);
dg_extract_format_t dg_extract_doc_format(const dg_extract_doc_t *doc);
/* Why the text was cut (max_text_bytes or max_units), or NULL. */
const char *dg_extract_doc_truncated(const dg_extract_doc_t *doc);
/* Memory the document holds, for cache budgets. */
size_t dg_extract_doc_bytes(const dg_extract_doc_t *doc);
/* dg_extract_chunk_text on the document, without scanning from the start. */
int dg_extract_doc_chunk(const dg_extract_doc_t *doc, uint64_t offset, size_t chunk_chars,
                         dg_extract_chunk_t *out, dg_errctx_t *err);

/* ---- One extraction ------------------------------------------------------------ */

typedef struct dg_extract_request {
  const char *content_type;          /* declared Content-Type with parameters, or NULL */
  const char *name;                  /* URL or file name (for the extension), or NULL */
  dg_extract_format_t format;        /* forces the format when not DG_EXTRACT_UNKNOWN */
  const dg_extract_limits_t *limits; /* NULL: the defaults; copied at start */
  uint64_t offset;                   /* dg_extract_start: first chunk's offset */
  size_t chunk_chars;                /* dg_extract_start: 0 is the default size */
  /* dg_extract_start: NULL runs the extractor on the libuv threadpool, in
   * this process (command line, tests); else in an extractor process. */
  const dg_extract_isolation_t *isolation;
} dg_extract_request_t;

/* Extracts data[0..len) to the end on the calling thread. On success *out
 * holds a new reference. Errors: DG_ENOTSUP (format), DG_EPROTO (a broken
 * document: the message says what is wrong), DG_E2BIG (an input limit),
 * DG_ETIMEDOUT, DG_ENOMEM; err says which, for the caller. */
int dg_extract_buffer(const dg_extract_request_t *req, const void *data, size_t len,
                      dg_extract_doc_t **out, dg_errctx_t *err);

typedef struct dg_extract dg_extract_t;

/* Called on the loop thread for each chunk from req->offset on, in order,
 * as soon as it is final (before the document is done). The last chunk has
 * has_more false and comes right before the completion. The callback may
 * call dg_extract_close. */
typedef void (*dg_extract_chunk_cb)(dg_extract_t *x, const dg_extract_chunk_t *chunk, void *data);
/* Called exactly once on the loop thread, never from inside the call that
 * started the work: status 0 after the last chunk, or a negative DG_E* code
 * with err saying why (DG_ECANCELED after dg_extract_close, DG_EINVAL naming
 * "offset" when the offset is past the end of the text). The callback may
 * call dg_extract_close. */
typedef void (*dg_extract_done_cb)(dg_extract_t *x, int status, const dg_errctx_t *err, void *data);

/* Starts an extraction fed by dg_extract_feed. Fails at once (DG_EINVAL
 * with err) only for a bad request, such as chunk_chars out of range;
 * detection and every later failure reach on_done. */
int dg_extract_start(uv_loop_t *loop, const dg_extract_request_t *req, dg_extract_chunk_cb on_chunk,
                     dg_extract_done_cb on_done, void *data, dg_extract_t **out, dg_errctx_t *err);

/* Hands the next bytes of the document (copied). Returns 0, or the failure
 * that on_done will report (for example DG_E2BIG past max_input_bytes), so
 * the download can stop; DG_EINVAL after dg_extract_finish. */
int dg_extract_feed(dg_extract_t *x, const void *data, size_t len);
/* No more bytes: the last chunks and the completion follow. */
int dg_extract_finish(dg_extract_t *x);
/* A new reference to the extracted document once on_done reported 0;
 * NULL otherwise. */
dg_extract_doc_t *dg_extract_result(dg_extract_t *x);
/* Ends the extraction: no chunk is delivered afterwards; on_done runs with
 * DG_ECANCELED on a later loop turn if it has not run yet; the memory is
 * freed once the threadpool step in flight, if any, has returned. x must
 * not be used afterwards. */
void dg_extract_close(dg_extract_t *x);

/* ---- Cache of extracted text -------------------------------------------------- */

/* A byte-budgeted LRU of extracted documents keyed by a string (the URL,
 * plus whatever else selects the document, such as the connector) and the
 * response's validators (ETag, Last-Modified), so that the next chunk is
 * served without downloading and parsing again. Loop thread only. */
typedef struct dg_extract_cache dg_extract_cache_t;

/* max_bytes bounds dg_extract_doc_bytes of the documents held; entries
 * older than ttl_ms are not returned by a lookup without validators
 * (0: never fresh without validators). NULL when out of memory. */
dg_extract_cache_t *dg_extract_cache_new(size_t max_bytes, size_t max_entries, uint64_t ttl_ms);
void dg_extract_cache_free(dg_extract_cache_t *cache);

/* Stores doc (taking a new reference) under key with the validators the
 * response carried (each may be NULL), replacing any older entry for key,
 * then evicts the least recently used entries until within budget. A
 * document larger than the whole budget is not stored: DG_E2BIG. */
int dg_extract_cache_put(dg_extract_cache_t *cache, const char *key, const char *etag,
                         const char *last_modified, dg_extract_doc_t *doc);

/* A new reference to key's document, or NULL. With both validators NULL the
 * entry is returned while younger than ttl_ms; otherwise only when every
 * validator given equals the stored one (a revalidated entry is fresh
 * again). A hit makes the entry the most recently used. */
dg_extract_doc_t *dg_extract_cache_get(dg_extract_cache_t *cache, const char *key, const char *etag,
                                       const char *last_modified);

/* The validators stored for key, for a conditional request (If-None-Match,
 * If-Modified-Since); false when key is absent. The strings stay valid
 * until the next call that changes the cache. */
bool dg_extract_cache_validators(dg_extract_cache_t *cache, const char *key, const char **etag,
                                 const char **last_modified);

void dg_extract_cache_remove(dg_extract_cache_t *cache, const char *key);
size_t dg_extract_cache_bytes(const dg_extract_cache_t *cache);
size_t dg_extract_cache_count(const dg_extract_cache_t *cache);

/* ---- Command line ----------------------------------------------------------------- */

/* `datagate --extract FILE [--content-type T] [--offset N] [--chunk-chars N]
 * [--json]`: extracts FILE (the gateway's extractors, on the threadpool of
 * this process) and prints the text to out, or with --json one File text envelope
 * per chunk from the offset on, one per line. Errors go to err_out. Returns
 * the process exit status. argv[0] is "--extract". */
int dg_extract_main(int argc, char **argv, FILE *out, FILE *err_out);

#endif
