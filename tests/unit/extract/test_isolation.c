/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for extraction in an extractor process (the datagate binary
 * as `--extract-worker`, named by DG_BINARY): the chunks and the document
 * equal those of the threadpool path, for a streamed and a whole-document
 * format; a failure inside the process comes back with its message; the
 * CPU-time limit and the wall-time limit stop a document that keeps a parser
 * busy (an HTML element with 200,000 attributes); closing kills the process
 * and the loop ends with every handle closed; a program that cannot be
 * started is a clear error. */
#include <signal.h>
#include <sys/resource.h>

#include "extract_test.h"

#include "extract/internal.h"

typedef struct probe {
  uv_loop_t loop;
  dg_extract_t *x;
  dg_buf_t text;
  size_t chunks;
  uint64_t expect_offset;
  int done_calls;
  int status;
  dg_errctx_t err;
  dg_extract_doc_t *result;
  bool close_on_first_chunk;
} probe_t;

static const char *binary(void) {
  const char *b = getenv("DG_BINARY");
  assert_non_null(b);
  return b;
}

static void probe_init(probe_t *p) {
  memset(p, 0, sizeof(*p));
  assert_int_equal(uv_loop_init(&p->loop), 0);
  dg_buf_init(&p->text, SIZE_MAX);
}

static void probe_end(probe_t *p) {
  uv_run(&p->loop, UV_RUN_DEFAULT);
  /* Every handle, the process's included, is closed: it was reaped. */
  assert_int_equal(uv_loop_close(&p->loop), 0);
  dg_buf_free(&p->text);
  dg_extract_doc_unref(p->result);
}

static void on_chunk(dg_extract_t *x, const dg_extract_chunk_t *c, void *data) {
  probe_t *p = data;
  assert_int_equal(c->offset, p->expect_offset);
  assert_int_equal(dg_buf_append(&p->text, c->text, c->len), 0);
  p->expect_offset = c->next_offset;
  if (p->chunks++ == 0 && p->close_on_first_chunk) {
    p->x = NULL;
    dg_extract_close(x);
  }
}

static void on_done(dg_extract_t *x, int status, const dg_errctx_t *err, void *data) {
  probe_t *p = data;
  p->done_calls++;
  p->status = status;
  p->err = *err;
  p->result = dg_extract_result(x);
  if (p->x != NULL)
    dg_extract_close(x);
  p->x = NULL;
}

/* Feeds data in pieces of step bytes, letting the loop run between them. */
static void run_fed(probe_t *p, const dg_extract_request_t *req, const void *data, size_t len,
                    size_t step) {
  dg_errctx_t err;
  assert_int_equal(dg_extract_start(&p->loop, req, on_chunk, on_done, p, &p->x, &err), 0);
  const unsigned char *d = data;
  for (size_t off = 0; off < len && p->x != NULL && p->done_calls == 0; off += step) {
    dg_extract_feed(p->x, d + off, len - off < step ? len - off : step);
    uv_run(&p->loop, UV_RUN_NOWAIT);
  }
  if (p->x != NULL && p->done_calls == 0)
    dg_extract_finish(p->x);
  uv_run(&p->loop, UV_RUN_DEFAULT);
  assert_int_equal(p->done_calls, 1);
}

static dg_extract_isolation_t iso(unsigned cpu_seconds) {
  return (dg_extract_isolation_t){
      .worker_path = binary(), .cpu_seconds = cpu_seconds, .memory_bytes = (size_t)1 << 30};
}

static char *buffer_text(const dg_extract_request_t *req, const void *data, size_t len) {
  dg_extract_request_t plain = *req;
  plain.isolation = NULL;
  dg_extract_doc_t *doc = NULL;
  dg_errctx_t err;
  assert_int_equal(dg_extract_buffer(&plain, data, len, &doc, &err), 0);
  char *t = strdup(dg_extract_doc_text(doc, NULL));
  dg_extract_doc_unref(doc);
  return t;
}

static void test_streamed_text_equals_the_threadpool_path(void **state) {
  dg_buf_t in;
  dg_buf_init(&in, SIZE_MAX);
  for (int i = 0; i < 3000; i++)
    assert_int_equal(dg_buf_appendf(&in, "Sentence %d with caf\xc3\xa9 and \xe4\xb8\xad. ", i), 0);
  dg_extract_isolation_t i = iso(30);
  dg_extract_request_t req = {.name = "notes.txt", .chunk_chars = 500, .isolation = &i};
  probe_t p;
  probe_init(&p);
  run_fed(&p, &req, in.data, in.len, 4096);
  assert_int_equal(p.status, 0);
  char *want = buffer_text(&req, in.data, in.len);
  assert_string_equal(p.text.data, want);
  assert_true(p.chunks > 100);
  assert_non_null(p.result);
  assert_string_equal(dg_extract_doc_text(p.result, NULL), want);
  assert_int_equal(dg_extract_doc_format(p.result), DG_EXTRACT_TXT);
  free(want);
  probe_end(&p);
  dg_buf_free(&in);
}

static void test_whole_document_format_and_truncation(void **state) {
  const char *pages[] = {"BT /F1 12 Tf 72 700 Td (First page) Tj ET",
                         "BT /F1 12 Tf 72 700 Td (Second page) Tj ET",
                         "BT /F1 12 Tf 72 700 Td (Third page) Tj ET"};
  size_t len = 0;
  unsigned char *d = xt_pdf(pages, 3, &len);
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_units = 2;
  dg_extract_isolation_t i = iso(30);
  dg_extract_request_t req = {.limits = &limits, .chunk_chars = 16, .isolation = &i};
  probe_t p;
  probe_init(&p);
  run_fed(&p, &req, d, len, 700);
  assert_int_equal(p.status, 0);
  char *want = buffer_text(&req, d, len);
  assert_string_equal(p.text.data, want);
  assert_true(xt_contains(want, "Second page"));
  assert_false(xt_contains(want, "Third page"));
  assert_string_equal(dg_extract_doc_truncated(p.result),
                      "only the first 2 of 3 pages were extracted");
  free(want);
  probe_end(&p);
  free(d);
}

/* The extractor process keeps a PDF in a temporary file and MuPDF reads
 * it from there: a damaged one, which MuPDF repairs by reading all of it,
 * gives the text of the threadpool path, and one over the input limit is
 * refused with the limit named. */
static void test_a_pdf_read_from_its_file(void **state) {
  const char *pages[] = {"BT /F1 12 Tf 72 700 Td (Alpha page) Tj ET",
                         "BT /F1 12 Tf 72 700 Td (Beta page) Tj ET",
                         "BT /F1 12 Tf 72 700 Td (Gamma page) Tj ET"};
  size_t len = 0;
  unsigned char *d = xt_pdf(pages, 3, &len);
  unsigned char *xref = (unsigned char *)strstr((char *)d, "xref\n");
  assert_non_null(xref);
  memset(xref + 5, '9', 20);
  dg_extract_isolation_t i = iso(30);
  dg_extract_request_t req = {
      .content_type = "application/pdf", .chunk_chars = 16, .isolation = &i};
  probe_t p;
  probe_init(&p);
  run_fed(&p, &req, d, len, 300);
  assert_int_equal(p.status, 0);
  char *want = buffer_text(&req, d, len);
  assert_true(xt_contains(want, "Gamma page"));
  assert_string_equal(p.text.data, want);
  free(want);
  probe_end(&p);

  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_input_bytes = len - 1;
  req.limits = &limits;
  probe_init(&p);
  run_fed(&p, &req, d, len, 300);
  assert_int_equal(p.status, DG_E2BIG);
  assert_true(xt_contains(p.err.message, "larger than the limit"));
  probe_end(&p);
  free(d);
}

/* When the temporary file cannot be written to the end (here: a file-size
 * limit, which the extractor process inherits, at half the document),
 * the process keeps the document in memory instead, with the bytes it had
 * written read back: the text is the same. */
static void test_a_pdf_kept_in_memory_when_its_file_fails(void **state) {
  const char *pages[] = {
      "BT /F1 12 Tf 72 700 Td (Alpha page) Tj ET", "BT /F1 12 Tf 72 700 Td (Beta page) Tj ET",
      "BT /F1 12 Tf 72 700 Td (Gamma page) Tj ET", "BT /F1 12 Tf 72 700 Td (Delta page) Tj ET"};
  size_t len = 0;
  unsigned char *d = xt_pdf(pages, 4, &len);
  assert_true(len > 900); /* pieces of 300 bytes are written before the limit */
  dg_extract_isolation_t i = iso(30);
  dg_extract_request_t req = {
      .content_type = "application/pdf", .chunk_chars = 16, .isolation = &i};
  struct rlimit old, small;
  assert_int_equal(getrlimit(RLIMIT_FSIZE, &old), 0);
  small = old;
  small.rlim_cur = len / 2;
  /* The test's own writes past the limit fail instead of ending it. */
  void (*was)(int) = signal(SIGXFSZ, SIG_IGN);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &small), 0);
  probe_t p;
  probe_init(&p);
  run_fed(&p, &req, d, len, 300);
  assert_int_equal(setrlimit(RLIMIT_FSIZE, &old), 0);
  signal(SIGXFSZ, was);
  assert_int_equal(p.status, 0);
  char *want = buffer_text(&req, d, len);
  assert_true(xt_contains(want, "Delta page"));
  assert_string_equal(p.text.data, want);
  free(want);
  probe_end(&p);
  free(d);
}

static void test_a_failure_comes_back_with_its_message(void **state) {
  const char doc[] = "<?xml version=\"1.0\"?>\n<a>\n<b>text</a>";
  dg_extract_isolation_t i = iso(30);
  dg_extract_request_t req = {.format = DG_EXTRACT_XML, .isolation = &i};
  probe_t p;
  probe_init(&p);
  run_fed(&p, &req, doc, sizeof(doc) - 1, 64);
  assert_int_equal(p.status, DG_EPROTO);
  assert_true(xt_contains(p.err.message, "not well-formed: line 3"));
  assert_string_equal(p.err.param, "url");
  assert_null(p.result);
  probe_end(&p);
}

/* An HTML element with 200,000 attributes: libxml2 compares each with all
 * the earlier ones, minutes of CPU. */
static dg_buf_t busy_html(void) {
  dg_buf_t b;
  dg_buf_init(&b, SIZE_MAX);
  assert_int_equal(dg_buf_append_str(&b, "<!DOCTYPE html><html><body><p"), 0);
  for (unsigned k = 0; k < 200000; k++)
    assert_int_equal(dg_buf_appendf(&b, " a%u=\"1\"", k), 0);
  assert_int_equal(dg_buf_append_str(&b, ">x</p></body></html>"), 0);
  return b;
}

static void test_the_cpu_time_limit_stops_the_process(void **state) {
  dg_buf_t html = busy_html();
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_time_ms = 600000;
  dg_extract_isolation_t i = iso(1);
  dg_extract_request_t req = {.format = DG_EXTRACT_HTML, .limits = &limits, .isolation = &i};
  probe_t p;
  probe_init(&p);
  run_fed(&p, &req, html.data, html.len, 1 << 20);
  assert_int_equal(p.status, DG_ETIMEDOUT);
  assert_true(xt_contains(p.err.message, "used more than the CPU-time limit of 1 s"));
  probe_end(&p);
  dg_buf_free(&html);
}

static void test_the_wall_time_limit_kills_the_process(void **state) {
  dg_buf_t html = busy_html();
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_time_ms = 100;
  dg_extract_isolation_t i = iso(600);
  dg_extract_request_t req = {.format = DG_EXTRACT_HTML, .limits = &limits, .isolation = &i};
  probe_t p;
  probe_init(&p);
  run_fed(&p, &req, html.data, html.len, 1 << 20);
  assert_int_equal(p.status, DG_ETIMEDOUT);
  assert_true(xt_contains(p.err.message, "took longer than the limit of 100 ms"));
  probe_end(&p);
  dg_buf_free(&html);
}

static void test_closing_kills_the_process(void **state) {
  /* Text streams out while the busy page is still being parsed. */
  dg_buf_t in;
  dg_buf_init(&in, SIZE_MAX);
  for (int k = 0; k < 200; k++)
    assert_int_equal(dg_buf_appendf(&in, "<p>Paragraph %d of the page.</p>", k), 0);
  dg_buf_t html = busy_html();
  assert_int_equal(dg_buf_append(&in, html.data, html.len), 0);
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_time_ms = 600000;
  dg_extract_isolation_t i = iso(600);
  dg_extract_request_t req = {
      .format = DG_EXTRACT_HTML, .limits = &limits, .chunk_chars = 16, .isolation = &i};
  probe_t p;
  probe_init(&p);
  p.close_on_first_chunk = true;
  run_fed(&p, &req, in.data, in.len, 4096);
  assert_int_equal(p.chunks, 1);
  assert_int_equal(p.status, DG_ECANCELED);
  probe_end(&p);
  dg_buf_free(&html);
  dg_buf_free(&in);
}

static void test_a_program_that_cannot_start(void **state) {
  dg_extract_isolation_t i = {
      .worker_path = "/nonexistent/datagate", .cpu_seconds = 1, .memory_bytes = (size_t)1 << 30};
  dg_extract_request_t req = {.format = DG_EXTRACT_TXT, .isolation = &i};
  probe_t p;
  probe_init(&p);
  run_fed(&p, &req, "some text", 9, 9);
  assert_int_equal(p.status, DG_EIO);
  assert_true(xt_contains(p.err.message, "the extractor process could not be started"));
  probe_end(&p);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_streamed_text_equals_the_threadpool_path),
      cmocka_unit_test(test_whole_document_format_and_truncation),
      cmocka_unit_test(test_a_pdf_read_from_its_file),
      cmocka_unit_test(test_a_pdf_kept_in_memory_when_its_file_fails),
      cmocka_unit_test(test_a_failure_comes_back_with_its_message),
      cmocka_unit_test(test_the_cpu_time_limit_stops_the_process),
      cmocka_unit_test(test_the_wall_time_limit_kills_the_process),
      cmocka_unit_test(test_closing_kills_the_process),
      cmocka_unit_test(test_a_program_that_cannot_start),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
