/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* `datagate --extract FILE`: extracts one file with the gateway's
 * extractors, on the threadpool of a private loop (the command is a process
 * of its own already) or, with --process, in an extractor process as the
 * gateway does, and prints the text or the File text envelopes. Used to
 * try a document by hand and by benchmarks; --usage adds what the
 * extraction cost (CPU time and peak resident memory of this process and
 * of its extractor process). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "extract/internal.h"

#define READ_PIECE 65536

/* The exit statuses: a usage error is 2, by convention. */
#define EXIT_FAILED 1
#define EXIT_USAGE 2

/* The extractor process's limits: the defaults of extractCpuSeconds and
 * extractMemoryBytes (docs/configuration.md). */
#define PROCESS_CPU_SECONDS 30
#define PROCESS_MEMORY_BYTES ((size_t)1 << 30)

typedef struct cli {
  const char *path;
  dg_extract_request_t req;
  bool json;
  bool process;   /* in an extractor process, as the gateway */
  bool usage_out; /* print the CPU time and memory used */
  dg_extract_isolation_t iso;
  char worker_path[4096];
  FILE *out;
  FILE *err_out;
  int status;
  bool usage; /* the failure is a bad argument, not the document */
  char message[1200];
  uint64_t chunks;
} cli_t;

static int usage(FILE *err_out, const char *what) {
  fprintf(err_out,
          "datagate: %s\n"
          "Usage: datagate --extract FILE [--content-type TYPE] [--offset N] "
          "[--chunk-chars N] [--json] [--process] [--usage]\n"
          "  --chunk-chars: %d to %d; --offset: from 0 to the length of the text\n",
          what, DG_EXTRACT_CHUNK_MIN, DG_EXTRACT_CHUNK_MAX);
  return EXIT_USAGE;
}

static bool number(const char *s, int64_t max, uint64_t *out) {
  int64_t v = 0;
  if (s == NULL || !dg_parse_int64(s, 0, max, &v))
    return false;
  *out = (uint64_t)v;
  return true;
}

/* Parses the arguments after "--extract"; 0, or the usage exit status. */
static int parse(cli_t *c, int argc, char **argv) {
  uint64_t n = 0;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (strcmp(a, "--json") == 0) {
      c->json = true;
    } else if (strcmp(a, "--process") == 0) {
      c->process = true;
    } else if (strcmp(a, "--usage") == 0) {
      c->usage_out = true;
    } else if (strcmp(a, "--content-type") == 0 && v != NULL) {
      c->req.content_type = argv[++i];
    } else if (strcmp(a, "--offset") == 0 && number(v, INT64_MAX, &c->req.offset)) {
      i++;
    } else if (strcmp(a, "--chunk-chars") == 0 && number(v, DG_EXTRACT_CHUNK_MAX, &n) &&
               n >= DG_EXTRACT_CHUNK_MIN) {
      c->req.chunk_chars = (size_t)n;
      i++;
    } else if (a[0] != '-' && c->path == NULL) {
      c->path = a;
    } else {
      return usage(c->err_out, "unexpected or incomplete argument to --extract");
    }
  }
  c->req.name = c->path;
  return c->path != NULL ? 0 : usage(c->err_out, "--extract needs a FILE");
}

/* The extractor process is this executable, as in the gateway. */
static int isolate(cli_t *c) {
  size_t len = sizeof(c->worker_path);
  if (uv_exepath(c->worker_path, &len) != 0) {
    fprintf(c->err_out, "datagate: --process: this program's path is unknown\n");
    return EXIT_FAILED;
  }
  c->iso = (dg_extract_isolation_t){.worker_path = c->worker_path,
                                    .cpu_seconds = PROCESS_CPU_SECONDS,
                                    .memory_bytes = PROCESS_MEMORY_BYTES};
  c->req.isolation = &c->iso;
  return 0;
}

static double cpu_seconds(const struct rusage *u) {
  return (double)u->ru_utime.tv_sec + (double)u->ru_utime.tv_usec / 1e6 +
         (double)u->ru_stime.tv_sec + (double)u->ru_stime.tv_usec / 1e6;
}

/* One JSON line on standard error: this process (reading the file, the
 * chunks, the text kept for the document) and its extractor processes,
 * all reaped by now (ru_maxrss is in KiB on Linux). */
static void print_usage(FILE *err_out) {
  struct rusage self, children;
  if (getrusage(RUSAGE_SELF, &self) != 0 || getrusage(RUSAGE_CHILDREN, &children) != 0)
    return;
  fprintf(err_out,
          "{\"cpuSeconds\":%.3f,\"maxRssKiB\":%ld,\"extractorCpuSeconds\":%.3f,"
          "\"extractorMaxRssKiB\":%ld}\n",
          cpu_seconds(&self), self.ru_maxrss, cpu_seconds(&children), children.ru_maxrss);
}

static void on_chunk(dg_extract_t *x, const dg_extract_chunk_t *chunk, void *data) {
  cli_t *c = data;
  c->chunks++;
  if (!c->json) {
    fwrite(chunk->text, 1, chunk->len, c->out);
    return;
  }
  json_t *env = dg_extract_chunk_json(chunk);
  if (env != NULL)
    json_dumpf(env, c->out, JSON_COMPACT);
  fputc('\n', c->out);
  json_decref(env);
}

/* An --offset past the end of the text is known only once the text is:
 * it is still the command's argument that is wrong. */
static bool names_argument(const dg_errctx_t *err) {
  return err != NULL && err->code == DG_EINVAL &&
         (strcmp(err->param, "offset") == 0 || strcmp(err->param, "chunkChars") == 0);
}

static void on_done(dg_extract_t *x, int status, const dg_errctx_t *err, void *data) {
  cli_t *c = data;
  c->status = status;
  c->usage = names_argument(err);
  if (status != 0)
    snprintf(c->message, sizeof(c->message), "%s (%s)", err->message, dg_err_name(status));
  dg_extract_close(x);
}

/* Feeds the file in pieces, as a download would arrive. */
static int feed_file(dg_extract_t *x, FILE *f) {
  char *piece = malloc(READ_PIECE);
  int rc = piece != NULL ? 0 : DG_ENOMEM;
  while (rc == 0) {
    size_t n = fread(piece, 1, READ_PIECE, f);
    if (n == 0)
      break;
    rc = dg_extract_feed(x, piece, n);
  }
  free(piece);
  return rc != 0 ? rc : dg_extract_finish(x);
}

static int run_loop(cli_t *c, FILE *f) {
  uv_loop_t loop;
  dg_extract_t *x = NULL;
  dg_errctx_t err;
  dg_errctx_clear(&err);
  uv_loop_init(&loop);
  int rc = dg_extract_start(&loop, &c->req, on_chunk, on_done, c, &x, &err);
  if (rc == 0) {
    feed_file(x, f);
    uv_run(&loop, UV_RUN_DEFAULT);
  } else {
    c->status = rc;
    c->usage = names_argument(&err);
    snprintf(c->message, sizeof(c->message), "%s", err.message);
  }
  uv_loop_close(&loop);
  return c->status;
}

int dg_extract_main(int argc, char **argv, FILE *out, FILE *err_out) {
  cli_t c;
  memset(&c, 0, sizeof(c));
  c.out = out;
  c.err_out = err_out;
  int rc = parse(&c, argc, argv);
  if (rc == 0 && c.process)
    rc = isolate(&c);
  if (rc != 0)
    return rc;
  FILE *f = fopen(c.path, "rb");
  if (f == NULL) {
    fprintf(err_out, "datagate: %s: %s\n", c.path, strerror(errno));
    return EXIT_FAILED;
  }
  rc = run_loop(&c, f);
  fclose(f);
  if (!c.json && rc == 0)
    fputc('\n', out);
  if (rc != 0)
    fprintf(err_out, "datagate: %s: %s\n", c.path, c.message);
  if (c.usage_out)
    print_usage(err_out);
  if (rc == 0)
    return 0;
  return c.usage ? EXIT_USAGE : EXIT_FAILED;
}
