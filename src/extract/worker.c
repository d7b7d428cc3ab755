/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* `datagate --extract-worker`: the extractor process. It reads the request's
 * head from standard input, lowers its own limits (CPU time, address space,
 * no core files, no new privileges) before it reads a byte of the document,
 * then runs the extractor step by step on the document as it arrives and
 * writes the text out as it grows. A document that makes a parser loop or
 * allocate without end costs this process, which the operating system stops
 * at its limits, and never a thread of the gateway. */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "extract/internal.h"

/* AddressSanitizer reserves terabytes of shadow memory: an address-space
 * limit would stop it from starting. */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define NO_AS_LIMIT 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) ||                         \
    __has_feature(memory_sanitizer)
#define NO_AS_LIMIT 1
#endif
#endif

#define READ_PIECE 65536

static int read_full(int fd, void *buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = read(fd, (char *)buf + got, len - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return DG_EIO;
    got += (size_t)n;
  }
  return 0;
}

/* Bytes read, 0 at end of file, or -1. */
static ssize_t read_some(int fd, void *buf, size_t len) {
  for (;;) {
    ssize_t n = read(fd, buf, len);
    if (n >= 0 || errno != EINTR)
      return n;
  }
}

static int write_full(int fd, const void *buf, size_t len) {
  size_t put = 0;
  while (put < len) {
    ssize_t n = write(fd, (const char *)buf + put, len - put);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return DG_EIO;
    put += (size_t)n;
  }
  return 0;
}

static int send_frame(char type, const void *payload, size_t len) {
  unsigned char head[DG__WIRE_FRAME] = {
      (unsigned char)type, (unsigned char)(len & 0xff), (unsigned char)((len >> 8) & 0xff),
      (unsigned char)((len >> 16) & 0xff), (unsigned char)((len >> 24) & 0xff)};
  int rc = write_full(STDOUT_FILENO, head, sizeof(head));
  return rc == 0 && len > 0 ? write_full(STDOUT_FILENO, payload, len) : rc;
}

static int send_failure(int code, const char *message) {
  size_t mlen = strlen(message);
  unsigned char buf[4 + sizeof(((dg_errctx_t *)0)->message)];
  uint32_t c = (uint32_t)code;
  if (mlen > sizeof(buf) - 4)
    mlen = sizeof(buf) - 4;
  for (int i = 0; i < 4; i++)
    buf[i] = (unsigned char)(c >> (8 * i));
  memcpy(buf + 4, message, mlen);
  return send_frame('E', buf, 4 + mlen);
}

/* Sends the text written since *sent, in frames of at most DG__WIRE_TEXT,
 * then forgets it: the process holds one step's text, not the whole. */
static int send_text(dg__xrun_t *run, size_t *sent) {
  int rc = 0;
  while (rc == 0 && *sent < run->text.len) {
    size_t n = run->text.len - *sent;
    n = n < DG__WIRE_TEXT ? n : DG__WIRE_TEXT;
    rc = send_frame('T', run->text.data + *sent, n);
    *sent += n;
  }
  if (rc == 0)
    *sent -= dg__xrun_forget(run, *sent);
  return rc;
}

/* The CPU limit is set last of the limits, so that whoever sees it in
 * /proc/<pid>/limits sees all of them. */
static int apply_limits(const dg__wire_head_t *head) {
  struct rlimit cpu = {head->cpu_seconds, (rlim_t)head->cpu_seconds + 1};
  struct rlimit none = {0, 0};
  int rc = setrlimit(RLIMIT_CORE, &none);
  /* Past a file-size limit (from the gateway's service, say) writing the
   * document's temporary file fails and the document stays in memory,
   * rather than the signal ending the process. */
  rc |= signal(SIGXFSZ, SIG_IGN) == SIG_ERR;
#ifndef NO_AS_LIMIT
  struct rlimit as = {head->memory_bytes, head->memory_bytes};
  rc |= setrlimit(RLIMIT_AS, &as);
#endif
  rc |= setrlimit(RLIMIT_CPU, &cpu);
#ifdef __linux__
  rc |= prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0);
  /* A gateway killed outright takes its extractors with it. */
  rc |= prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
  if (getppid() != head->parent)
    rc = -1; /* it is gone already */
#endif
  return rc == 0 ? 0 : DG_EIO;
}

static int read_head(dg__wire_head_t *head, char *content_type) {
  if (read_full(STDIN_FILENO, head, sizeof(*head)) != 0 || head->magic != DG__WIRE_MAGIC ||
      head->size != sizeof(*head) || head->format > DG_EXTRACT_XML ||
      head->content_type_len >= DG__WIRE_CONTENT_TYPE || head->cpu_seconds == 0)
    return DG_EPROTO;
  content_type[head->content_type_len] = '\0';
  return read_full(STDIN_FILENO, content_type, head->content_type_len);
}

static int too_large(dg__xrun_t *run) {
  return dg_errctx_set(&run->err, DG_E2BIG, "url",
                       "the document is larger than the limit of %zu bytes",
                       run->limits.max_input_bytes);
}

static int unreadable(dg__xrun_t *run) {
  return dg_errctx_set(&run->err, DG_EIO, "url", "the document could not be read");
}

/* Moves the first written bytes of the file into doc when writing to it
 * failed (a full disk): the document then stays in memory. The file is
 * written through its descriptor, so no bytes wait in a stdio buffer. */
static int unspool(dg__xrun_t *run, FILE *f, size_t written, dg_buf_t *doc) {
  int rc = fseek(f, 0, SEEK_SET) == 0 ? dg_buf_reserve(doc, written) : DG_EIO;
  if (rc == 0 && written > 0 && fread(doc->data, 1, written, f) != written)
    rc = DG_EIO;
  if (rc == 0)
    doc->len = written;
  fclose(f);
  return rc == 0 ? 0 : unreadable(run);
}

/* A whole-document extractor gets the document once it is all in: as a
 * temporary file (unlinked from the start) when the extractor reads
 * files, so that the process does not hold it in memory too, else (or
 * when no file can be made or written) in doc. */
static int read_document(dg__xrun_t *run, dg_buf_t *doc) {
  char piece[READ_PIECE];
  FILE *f = run->ext->file ? tmpfile() : NULL;
  size_t total = 0;
  for (;;) {
    ssize_t n = read_some(STDIN_FILENO, piece, sizeof(piece));
    if (n == 0)
      break;
    if (n < 0 || (size_t)n > run->limits.max_input_bytes - total) {
      if (f != NULL)
        fclose(f);
      return n < 0 ? unreadable(run) : too_large(run);
    }
    if (f != NULL && write_full(fileno(f), piece, (size_t)n) != 0) {
      int rc = unspool(run, f, total, doc);
      f = NULL;
      if (rc != 0)
        return rc;
    }
    if (f == NULL && dg_buf_append(doc, piece, (size_t)n) != 0)
      return too_large(run);
    total += (size_t)n;
  }
  if (f != NULL && fseek(f, 0, SEEK_SET) != 0) {
    int rc = unspool(run, f, total, doc);
    f = NULL;
    if (rc != 0)
      return rc;
  }
  run->in_file = f; /* closed by dg__xrun_free */
  run->in = f != NULL ? NULL : (const unsigned char *)(doc->data != NULL ? doc->data : "");
  run->in_len = f != NULL ? 0 : doc->len;
  run->in_last = true;
  return 0;
}

/* A streaming extractor gets each piece as it arrives. */
static int read_piece(dg__xrun_t *run, char *piece, size_t size) {
  ssize_t n = run->in_last ? 0 : read_some(STDIN_FILENO, piece, size);
  if (n < 0)
    return dg_errctx_set(&run->err, DG_EIO, "url", "the document could not be read");
  run->in = (const unsigned char *)piece;
  run->in_len = (size_t)n;
  run->in_last = n == 0;
  return 0;
}

static int extract(dg__xrun_t *run) {
  static char piece[READ_PIECE];
  dg_buf_t doc;
  size_t sent = 0;
  dg_buf_init(&doc, run->limits.max_input_bytes);
  int rc = run->ext->whole ? read_document(run, &doc) : 0;
  while (rc == 0 && !run->done) {
    if (!run->ext->whole)
      rc = read_piece(run, piece, sizeof(piece));
    rc = rc != 0 ? rc : dg__xrun_step(run);
    if (rc == 0 && send_text(run, &sent) != 0)
      rc = DG_EIO; /* the gateway went away */
  }
  dg_buf_free(&doc);
  return rc;
}

int dg_extract_worker_main(void) {
  dg__wire_head_t head;
  char content_type[DG__WIRE_CONTENT_TYPE];
  if (read_head(&head, content_type) != 0)
    return 2;
  if (apply_limits(&head) != 0) {
    send_failure(DG_EIO, "the extractor's limits could not be set");
    return 1;
  }
  dg__xrun_t *run = malloc(sizeof(*run));
  if (run == NULL)
    return 1;
  int rc = dg__xrun_init(run, (dg_extract_format_t)head.format, &head.limits, content_type);
  if (rc == 0)
    rc = extract(run);
  if (rc == 0)
    send_frame('D', run->truncated, strlen(run->truncated));
  else
    send_failure(run->err.code != 0 ? run->err.code : rc, run->err.message);
  dg__xrun_free(run);
  free(run);
  return rc == 0 ? 0 : 1;
}
