/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Names shared between the files of the extract module. */
#ifndef DG_EXTRACT_INTERNAL_H
#define DG_EXTRACT_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "datagate/extract.h"

/* ---- UTF-8 (utf.c) ---------------------------------------------------------- */

#define DG__REPLACEMENT 0xfffd

/* Characters in valid UTF-8. */
uint64_t dg__utf8_count(const char *s, size_t len);
/* Byte position after at most n characters of valid UTF-8 from byte from;
 * *taken gets how many characters were passed. */
size_t dg__utf8_advance(const char *s, size_t len, size_t from, uint64_t n, uint64_t *taken);

/* ---- Text sink (sink.c) ------------------------------------------------------
 * Every extractor writes through a sink, which keeps the output valid UTF-8,
 * normalises white space and bounds the output. Breaks are soft: they are
 * written only before the next visible text, and several merge into the
 * strongest, so empty elements never leave runs of blank lines. */
enum { DG__BREAK_NONE = 0, DG__BREAK_SPACE, DG__BREAK_LINE, DG__BREAK_PARA };
/* Bytes at the end of the output a break looks back at (newlines). */
#define DG__SINK_LOOKBACK 2

typedef struct dg__sink {
  dg_buf_t *out;
  unsigned pending;  /* strongest break asked for since the last text */
  bool preserve;     /* keep white space as given (text formats, <pre>) */
  bool after_cr;     /* the last byte given was a CR (CRLF becomes LF) */
  bool truncated;    /* out reached its maximum: everything else is dropped */
  const char *label; /* marker line written before the next visible text */
  char label_buf[64];
} dg__sink_t;

void dg__sink_init(dg__sink_t *s, dg_buf_t *out);
/* Text in UTF-8; invalid sequences become U+FFFD (a sequence cut at the end
 * of s is invalid too: callers split input on character boundaries). */
void dg__sink_text(dg__sink_t *s, const char *text, size_t len);
void dg__sink_rune(dg__sink_t *s, uint32_t cp);
void dg__sink_break(dg__sink_t *s, unsigned kind);
/* A marker line ("--- Footer ---"), preceded by a blank line: written at
 * once when eager, else only if visible text follows before the next label
 * (NULL drops a label still waiting). */
void dg__sink_label(dg__sink_t *s, const char *label, bool eager);
void dg__sink_preserve(dg__sink_t *s, bool on);

/* ---- One run of an extractor (run.c) ------------------------------------------ */

typedef struct dg__extractor dg__extractor_t;

typedef struct dg__xrun {
  const dg__extractor_t *ext;
  void *state; /* ext->state_size bytes, zeroed */
  dg_extract_format_t format;
  dg_extract_limits_t limits;
  char charset[64]; /* the content type's charset parameter, or "" */
  /* Streaming extractors get the bytes that arrived since their last step;
   * whole-document extractors the whole document at every step. */
  const unsigned char *in;
  size_t in_len;
  bool in_last; /* no bytes will follow in */
  /* Or, for an extractor that reads files, the whole document as this
   * file (in is then NULL): the extractor process's copy on disk, closed
   * by dg__xrun_free. */
  FILE *in_file;
  dg_buf_t text;
  dg__sink_t sink;
  char truncated[192]; /* why the text was cut, or "" */
  uint64_t deadline_ms;
  atomic_bool canceled; /* set from the loop thread by dg_extract_close */
  bool opened;
  bool done;
  dg_errctx_t err;
} dg__xrun_t;

/* The pluggable part: one per format family, listed in registry.c. Every
 * function runs on one thread at a time (a threadpool thread, or the
 * caller's thread for dg_extract_buffer), one step after another. */
struct dg__extractor {
  const char *name;
  bool whole;        /* needs the whole document before its first step */
  bool file;         /* whole, and reads it from run->in_file when given */
  size_t state_size; /* bytes of private state in run->state */
  /* Before the first step; returns 0 or a DG_E* code with run->err set. */
  int (*open)(dg__xrun_t *run);
  /* Does a bounded amount of work: consumes run->in (streaming), or the
   * next page, slide or part (whole). Sets *done after the last step. */
  int (*step)(dg__xrun_t *run, bool *done);
  /* Releases the private state; also after a failure or a cancel. */
  void (*close)(dg__xrun_t *run);
};

const dg__extractor_t *dg__extract_extractor(dg_extract_format_t format);

extern const dg__extractor_t dg__extract_text;
extern const dg__extractor_t dg__extract_html;
extern const dg__extractor_t dg__extract_xml;
extern const dg__extractor_t dg__extract_ooxml;
extern const dg__extractor_t dg__extract_pdf;

/* Prepares run for format with limits (NULL: defaults); content_type gives
 * the charset. */
int dg__xrun_init(dg__xrun_t *run, dg_extract_format_t format, const dg_extract_limits_t *limits,
                  const char *content_type);
/* Opens when needed, then one step; sets run->done after the last one. */
int dg__xrun_step(dg__xrun_t *run);
/* DG_ETIMEDOUT past the deadline, DG_ECANCELED after a cancel, else 0;
 * extractors call it between bounded pieces of work. */
int dg__xrun_check(dg__xrun_t *run);
/* True once the output is full: the extractor may stop early. */
bool dg__xrun_full(const dg__xrun_t *run);
/* Records why the text stops short (first reason wins). */
void dg__xrun_cut(dg__xrun_t *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Forgets the text before byte upto, which the caller has handed on,
 * except the last DG__SINK_LOOKBACK bytes the sink still looks at; the
 * text's maximum drops by as much, so the limit still counts all of it.
 * Returns the bytes forgotten (positions in the text move back by them). */
size_t dg__xrun_forget(dg__xrun_t *run, size_t upto);
/* Turns the text into a document (taking it); NULL when out of memory. */
dg_extract_doc_t *dg__xrun_finish(dg__xrun_t *run);
void dg__xrun_free(dg__xrun_t *run);

/* ---- Extractor processes (proc.c, worker.c) -------------------------------------
 * The request on the worker's standard input: dg__wire_head_t, the content
 * type (content_type_len bytes), then the document up to end of file. Both
 * sides are the same executable, so the head is written as it is in memory.
 * The answer on its standard output: frames of a type byte and a 32-bit
 * little-endian payload length, then the payload:
 *   'T'  text (at most DG__WIRE_TEXT bytes), appended to what came before;
 *   'D'  done: the payload is why the text was cut ("" when it was not);
 *   'E'  failed: a 32-bit little-endian DG_E* code, then the message.
 * Nothing follows 'D' or 'E'. */
#define DG__WIRE_MAGIC 0x31584744u /* "DGX1" */
#define DG__WIRE_TEXT 65536
#define DG__WIRE_FRAME 5
#define DG__WIRE_CONTENT_TYPE 1024

typedef struct dg__wire_head {
  uint32_t magic;
  uint32_t size; /* sizeof(dg__wire_head_t): both sides are one build */
  uint32_t format;
  uint32_t content_type_len;
  uint32_t cpu_seconds;
  uint64_t memory_bytes;
  int64_t parent; /* the gateway's process id */
  dg_extract_limits_t limits;
} dg__wire_head_t;

typedef struct dg__xproc dg__xproc_t;

typedef struct dg__xproc_ops {
  /* Text the extractor wrote, in order; the callback may close. */
  void (*text)(void *user, const char *text, size_t len);
  /* Once: 0 with why the text was cut ("" when it was not), or a DG_E*
   * code with err. The callback may close. */
  void (*end)(void *user, int status, const dg_errctx_t *err, const char *truncated);
} dg__xproc_ops_t;

/* Starts `iso->worker_path --extract-worker` and writes the request's
 * head. Callbacks come only from the loop, never from inside these calls. */
int dg__xproc_start(uv_loop_t *loop, const dg_extract_isolation_t *iso, dg_extract_format_t format,
                    const char *content_type, const dg_extract_limits_t *limits,
                    const dg__xproc_ops_t *ops, void *user, dg__xproc_t **out, dg_errctx_t *err);
/* Hands the next bytes of the document to the process (copied). */
int dg__xproc_write(dg__xproc_t *p, const void *data, size_t len);
/* No more bytes; the wall-time limit starts. */
void dg__xproc_finish(dg__xproc_t *p);
/* Kills the process if it still runs; no callback follows. The memory
 * goes once the process has been reaped. */
void dg__xproc_close(dg__xproc_t *p);

/* ---- Documents and chunks (doc.c, chunk.c) ------------------------------------- */

#define DG__INDEX_STEP 4096

/* Takes text (malloc'd, NUL-terminated, valid UTF-8) and builds the index. */
dg_extract_doc_t *dg__extract_doc_new(char *text, size_t len, dg_extract_format_t format,
                                      const char *truncated);

/* Finds the end of the chunk starting at byte start: returns true with *end
 * and *chars set, or false when more text is needed to decide (complete is
 * false and fewer than chunk_chars + 1 characters follow start). */
bool dg__chunk_end(const char *text, size_t len, size_t start, size_t chunk_chars, bool complete,
                   size_t *end, uint64_t *chars);
int dg__chunk_size_check(size_t chunk_chars, dg_errctx_t *err);

/* ---- Detection helpers (detect.c) --------------------------------------------- */

/* Copies the charset parameter of a content type ("" when absent). */
void dg__extract_charset(const char *content_type, char *out, size_t size);

/* ---- libxml2 (xmlutil.c) ------------------------------------------------------- */

struct _xmlError;

/* Initialises libxml2 once per process (thread-safe) and silences its
 * generic error output on the calling thread: called at every step. */
void dg__xml_init(void);
/* Sets run->err to "<what> is not well-formed: line N: <libxml2's message>";
 * returns DG_EPROTO. */
int dg__xml_fail(dg__xrun_t *run, const char *what, const struct _xmlError *e);
/* Sets run->err for nesting past limits.max_depth; returns DG_E2BIG. */
int dg__xml_too_deep(dg__xrun_t *run, const char *what);
/* Sets run->err for an element past limits.max_attributes; DG_E2BIG. */
int dg__xml_too_many_attributes(dg__xrun_t *run, const char *what);

/* Counts the attributes of each start tag in raw XML bytes, before libxml2
 * sees them: libxml2 compares every attribute of an element with all the
 * earlier ones, so one element with 200,000 of them costs minutes of CPU.
 * Comments, CDATA sections, processing instructions, declarations and
 * quoted values are skipped; a UTF-16 document (a NUL or a UTF-16 byte
 * order mark in its first two bytes) is not scanned. Zeroed to start. */
typedef struct dg__attr_scan {
  unsigned char state;
  unsigned char hist[2]; /* the last two bytes seen */
  unsigned char seen;    /* bytes seen, up to 2 */
  bool off;
  unsigned depth; /* of brackets in a declaration */
  unsigned count; /* attributes of the start tag being read */
} dg__attr_scan_t;

/* Feeds the next bytes; false once a start tag has more than max
 * attributes (0: no limit). */
bool dg__attr_scan(dg__attr_scan_t *s, const unsigned char *p, size_t n, unsigned max);

/* ---- OOXML packages (zip.c) ----------------------------------------------------- */

struct zip;
struct zip_file;
struct _xmlTextReader;

typedef struct dg__zip_io {
  struct zip_file *file;
  uint64_t comp_size;
  size_t read;
  int failure;
  unsigned char tail[2]; /* the last two bytes read, for declarations */
  dg__attr_scan_t attrs;
  char name[256];
} dg__zip_io_t;

/* A package open over run->in; one part is read at a time. */
typedef struct dg__zip {
  struct zip *za;
  dg__xrun_t *run;
  const char *what; /* "DOCX", "PPTX" or "OOXML", for messages */
  size_t total;     /* uncompressed bytes read from all parts */
  dg__zip_io_t io;  /* the part being read */
} dg__zip_t;

int dg__zip_open(dg__zip_t *z, dg__xrun_t *run, const char *what);
void dg__zip_close(dg__zip_t *z);
bool dg__zip_exists(dg__zip_t *z, const char *part);
/* Opens part for a streaming read; free *out with xmlFreeTextReader before
 * opening the next part. */
int dg__zip_reader(dg__zip_t *z, const char *part, struct _xmlTextReader **out);

/* What a walk over a part calls: start for an element (set *skip to jump
 * over its content; end is then not called), end for its end (also right
 * after start for an empty element), text for character data. */
typedef struct dg__walk_ops {
  void (*start)(void *ctx, struct _xmlTextReader *r, const char *name, bool *skip);
  void (*end)(void *ctx, const char *name);
  void (*text)(void *ctx, const char *text);
} dg__walk_ops_t;

/* Reads at most budget nodes; *finished once the part is done. */
int dg__zip_walk(dg__zip_t *z, struct _xmlTextReader *r, const dg__walk_ops_t *ops, void *ctx,
                 size_t budget, bool *finished);
/* Copies the value of the current element's attribute with this local
 * name (and, when ns is not NULL, a namespace URI containing ns) into buf;
 * false when absent. */
bool dg__zip_attr(struct _xmlTextReader *r, const char *local, const char *ns, char *buf,
                  size_t size);

/* ---- OOXML relationships and walkers (ooxml.c, docx.c, pptx.c) --------------------- */

#define DG__PART_MAX 256

typedef struct dg__rel {
  char id[64];
  char type[160];
  char target[DG__PART_MAX]; /* resolved to a part name */
} dg__rel_t;

typedef struct dg__rels {
  dg__rel_t *items;
  size_t count;
} dg__rels_t;

/* Reads the relationships of part ("" for the package); none when the
 * package has no relationship part for it. */
int dg__rels_read(dg__zip_t *z, const char *part, dg__rels_t *out);
void dg__rels_free(dg__rels_t *rels);
const dg__rel_t *dg__rels_find(const dg__rels_t *rels, const char *id);
/* True when the relationship's type ends with "/" kind. */
bool dg__rel_is(const dg__rel_t *rel, const char *kind);

/* DOCX: one walker over the document, header, footer and note parts. */
typedef struct dg__docx {
  dg__sink_t *sink;
  bool notes;   /* a footnotes or endnotes part */
  bool in_text; /* inside w:t */
  unsigned tables;
  unsigned cell_depth;
  unsigned cells[64]; /* cells seen in the current row, per open table */
} dg__docx_t;

extern const dg__walk_ops_t dg__docx_ops;

/* PPTX: extracts one slide and its notes into sink, marked as slide number. */
int dg__pptx_slide(dg__zip_t *z, const char *part, unsigned number, dg__sink_t *sink);

#endif
