/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the extraction driven by a download on a libuv loop: the
 * input fed in pieces, chunks handed over in order and before the end,
 * the completion exactly once and never from inside the call that caused
 * it, cancellation, failures, and the command line. Every test closes its
 * loop and checks that nothing is left open. */
#include "extract_test.h"

#include <sys/wait.h>

#include "extract/internal.h"

typedef struct probe {
  uv_loop_t loop;
  uv_check_t turns;
  uint64_t turn;
  dg_extract_t *x;
  bool in_call; /* inside feed, finish or close */
  bool callback_in_call;
  dg_buf_t text; /* the chunks' text, concatenated */
  size_t chunks;
  uint64_t expect_offset;
  uint64_t first_turn, last_turn;
  bool saw_last;
  char truncated[256]; /* copied: the chunk's text lives only during the callback */
  size_t truncated_chunks;
  int done_calls;
  int status;
  dg_errctx_t err;
  size_t close_after; /* close inside the chunk callback after this many; 0: never */
  dg_extract_doc_t *result;
} probe_t;

static void on_turn(uv_check_t *c) {
  probe_t *p = c->data;
  p->turn++;
}

static void probe_init(probe_t *p) {
  memset(p, 0, sizeof(*p));
  assert_int_equal(uv_loop_init(&p->loop), 0);
  uv_check_init(&p->loop, &p->turns);
  p->turns.data = p;
  uv_check_start(&p->turns, on_turn);
  uv_unref((uv_handle_t *)&p->turns);
  dg_buf_init(&p->text, SIZE_MAX);
}

static void probe_end(probe_t *p) {
  uv_close((uv_handle_t *)&p->turns, NULL);
  uv_run(&p->loop, UV_RUN_DEFAULT);
  assert_int_equal(uv_loop_close(&p->loop), 0);
  dg_buf_free(&p->text);
  dg_extract_doc_unref(p->result);
}

static void on_chunk(dg_extract_t *x, const dg_extract_chunk_t *c, void *data) {
  probe_t *p = data;
  p->callback_in_call |= p->in_call;
  assert_false(p->saw_last);
  assert_int_equal(c->offset, p->expect_offset);
  assert_int_equal(dg__utf8_count(c->text, c->len), c->next_offset - c->offset);
  assert_int_equal(dg_buf_append(&p->text, c->text, c->len), 0);
  p->expect_offset = c->next_offset;
  p->saw_last = !c->has_more;
  dg_strlcpy(p->truncated, c->truncated != NULL ? c->truncated : "", sizeof(p->truncated));
  p->truncated_chunks += c->truncated != NULL;
  if (p->chunks++ == 0)
    p->first_turn = p->turn;
  p->last_turn = p->turn;
  if (p->close_after != 0 && p->chunks == p->close_after)
    dg_extract_close(x);
}

static void on_done(dg_extract_t *x, int status, const dg_errctx_t *err, void *data) {
  probe_t *p = data;
  p->callback_in_call |= p->in_call;
  p->done_calls++;
  p->status = status;
  p->err = *err;
  p->result = dg_extract_result(x);
  if (p->close_after == 0)
    dg_extract_close(x);
}

/* Starts an extraction and feeds data in pieces of step bytes. */
static void run_fed(probe_t *p, const dg_extract_request_t *req, const void *data, size_t len,
                    size_t step) {
  dg_errctx_t err;
  assert_int_equal(dg_extract_start(&p->loop, req, on_chunk, on_done, p, &p->x, &err), 0);
  p->expect_offset = req->offset;
  const unsigned char *d = data;
  int rc = 0;
  /* Once on_done has run (and closed x), the download stops. */
  for (size_t off = 0; off < len && rc == 0 && p->done_calls == 0; off += step) {
    p->in_call = true;
    rc = dg_extract_feed(p->x, d + off, len - off < step ? len - off : step);
    p->in_call = false;
    /* Let the loop run a step now and then, as a download would. */
    uv_run(&p->loop, UV_RUN_NOWAIT);
  }
  if (rc == 0 && p->done_calls == 0) {
    p->in_call = true;
    rc = dg_extract_finish(p->x);
    p->in_call = false;
  }
  uv_run(&p->loop, UV_RUN_DEFAULT);
  assert_int_equal(p->done_calls, 1);
  /* feed and finish report early the failure on_done reports later. */
  assert_true(rc == 0 || rc == p->status);
  assert_false(p->callback_in_call);
}

static char *sync_text(const dg_extract_request_t *req, const void *data, size_t len) {
  dg_extract_doc_t *doc = NULL;
  dg_errctx_t err;
  assert_int_equal(dg_extract_buffer(req, data, len, &doc, &err), 0);
  char *t = strdup(dg_extract_doc_text(doc, NULL));
  dg_extract_doc_unref(doc);
  return t;
}

static void test_text_fed_byte_by_byte(void **state) {
  const char in[] = "\xef\xbb\xbfPremi\xc3\xa8re ligne.\r\nSecond \xe4\xb8\xad\xe6\x96\x87 line "
                    "\xf0\x9f\x98\x80 with \xff more words to fill some chunks of text here.";
  dg_extract_request_t req = {.name = "notes.txt", .chunk_chars = 16};
  probe_t p;
  probe_init(&p);
  run_fed(&p, &req, in, sizeof(in) - 1, 1);
  assert_int_equal(p.status, 0);
  char *want = sync_text(&req, in, sizeof(in) - 1);
  assert_string_equal(p.text.data, want);
  assert_true(p.saw_last);
  assert_true(p.chunks > 4);
  assert_non_null(p.result);
  assert_string_equal(dg_extract_doc_text(p.result, NULL), want);
  assert_int_equal(dg_extract_doc_format(p.result), DG_EXTRACT_TXT);
  free(want);
  probe_end(&p);
}

static void test_html_fed_in_pieces(void **state) {
  const char *in = "<html><head><title>t</title><script>x()</script></head><body>"
                   "<h1>Caf&eacute;</h1><p>one two three four five six seven</p>"
                   "<table><tr><td>a</td><td>b</td></tr></table></body></html>";
  dg_extract_request_t req = {.content_type = "text/html", .chunk_chars = 16};
  probe_t p;
  probe_init(&p);
  run_fed(&p, &req, in, strlen(in), 7);
  assert_int_equal(p.status, 0);
  char *want = sync_text(&req, in, strlen(in));
  assert_string_equal(p.text.data, want);
  free(want);
  probe_end(&p);
}

static unsigned char *many_pages(size_t pages, size_t *len) {
  const char **content = calloc(pages, sizeof(char *));
  char(*lines)[96] = calloc(pages, 96);
  for (size_t i = 0; i < pages; i++) {
    snprintf(lines[i], 96, "BT /F1 12 Tf 72 700 Td (Text of page number %zu of the report.) Tj ET",
             i + 1);
    content[i] = lines[i];
  }
  unsigned char *d = xt_pdf(content, pages, len);
  free(content);
  free(lines);
  return d;
}

static void test_pdf_chunks_stream_before_the_end(void **state) {
  size_t len = 0;
  unsigned char *d = many_pages(40, &len);
  /* Two pages a step: at least 20 steps, whatever the clock says, so the
   * chunks from the first pages are final long before the last step. */
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_pages_per_step = 2;
  dg_extract_request_t req = {
      .content_type = "application/pdf", .chunk_chars = 100, .limits = &limits};
  probe_t p;
  probe_init(&p);
  run_fed(&p, &req, d, len, 65536);
  assert_int_equal(p.status, 0);
  char *want = sync_text(&req, d, len);
  assert_string_equal(p.text.data, want);
  /* Chunks came over several loop turns: the first long before the last. */
  assert_true(p.first_turn < p.last_turn);
  assert_true(xt_contains(p.text.data, "--- Page 40 ---\nText of page number 40"));
  free(want);
  probe_end(&p);
  free(d);
}

static void test_offset_and_past_the_end(void **state) {
  const char *in = "0123456789 abcdefghij klmnopqrst uvwxyz ABCDEFGHIJ KLMNOPQRST";
  dg_extract_request_t req = {.format = DG_EXTRACT_TXT, .offset = 22, .chunk_chars = 16};
  probe_t p;
  probe_init(&p);
  run_fed(&p, &req, in, strlen(in), 5);
  assert_int_equal(p.status, 0);
  assert_string_equal(p.text.data, in + 22);
  probe_end(&p);
  req.offset = strlen(in);
  probe_init(&p);
  run_fed(&p, &req, in, strlen(in), 5);
  assert_int_equal(p.status, 0);
  assert_int_equal(p.chunks, 1);
  assert_true(p.saw_last);
  probe_end(&p);
  req.offset = strlen(in) + 1;
  probe_init(&p);
  run_fed(&p, &req, in, strlen(in), 5);
  assert_int_equal(p.status, DG_EINVAL);
  assert_string_equal(p.err.param, "offset");
  assert_true(xt_contains(p.err.message, "61 characters"));
  assert_int_equal(p.chunks, 0);
  assert_null(p.result);
  probe_end(&p);
}

static void test_failures_reach_on_done(void **state) {
  probe_t p;
  probe_init(&p);
  dg_extract_request_t req = {.name = "x.png"};
  run_fed(&p, &req, "\x89PNG\r\n\x1a\n", 8, 8);
  assert_int_equal(p.status, DG_ENOTSUP);
  assert_true(xt_contains(p.err.message, dg_extract_supported));
  probe_end(&p);
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_input_bytes = 100;
  dg_extract_request_t small = {.format = DG_EXTRACT_TXT, .limits = &limits};
  char big[300];
  memset(big, 'a', sizeof(big));
  probe_init(&p);
  run_fed(&p, &small, big, sizeof(big), 60);
  assert_int_equal(p.status, DG_E2BIG);
  assert_true(xt_contains(p.err.message, "larger than the limit of 100 bytes"));
  probe_end(&p);
  probe_init(&p);
  run_fed(&p, &(dg_extract_request_t){.format = DG_EXTRACT_XML}, "<a><b></a>", 10, 3);
  assert_int_equal(p.status, DG_EPROTO);
  probe_end(&p);
  dg_errctx_t err;
  dg_extract_request_t bad = {.chunk_chars = 5};
  dg_extract_t *x = NULL;
  probe_init(&p);
  assert_int_equal(dg_extract_start(&p.loop, &bad, on_chunk, on_done, &p, &x, &err), DG_EINVAL);
  assert_string_equal(err.param, "chunkChars");
  assert_null(x);
  probe_end(&p);
}

static void test_close_cancels_once_later(void **state) {
  size_t len = 0;
  unsigned char *d = many_pages(20, &len);
  dg_extract_request_t req = {.format = DG_EXTRACT_PDF, .chunk_chars = 100};
  probe_t p;
  dg_errctx_t err;
  /* Closed with a step in flight. */
  probe_init(&p);
  p.close_after = SIZE_MAX;
  assert_int_equal(dg_extract_start(&p.loop, &req, on_chunk, on_done, &p, &p.x, &err), 0);
  assert_int_equal(dg_extract_feed(p.x, d, len), 0);
  assert_int_equal(dg_extract_finish(p.x), 0);
  p.in_call = true;
  dg_extract_close(p.x);
  p.in_call = false;
  assert_int_equal(p.done_calls, 0);
  uv_run(&p.loop, UV_RUN_DEFAULT);
  assert_int_equal(p.done_calls, 1);
  assert_int_equal(p.status, DG_ECANCELED);
  assert_false(p.callback_in_call);
  probe_end(&p);
  /* Closed from inside the chunk callback: no chunk after that. */
  probe_init(&p);
  p.close_after = 2;
  run_fed(&p, &req, d, len, len);
  assert_int_equal(p.chunks, 2);
  assert_int_equal(p.status, DG_ECANCELED);
  probe_end(&p);
  free(d);
}

static void test_truncation_reaches_every_chunk(void **state) {
  dg_extract_limits_t limits;
  dg_extract_limits_default(&limits);
  limits.max_text_bytes = 50;
  char in[200];
  memset(in, 'w', sizeof(in));
  dg_extract_request_t req = {.format = DG_EXTRACT_TXT, .limits = &limits, .chunk_chars = 16};
  probe_t p;
  probe_init(&p);
  run_fed(&p, &req, in, sizeof(in), 200);
  assert_int_equal(p.status, 0);
  assert_int_equal(p.text.len, 50);
  assert_true(p.truncated[0] != '\0');
  assert_true(xt_contains(p.truncated, "50 bytes"));
  /* The cut was known before the first chunk: every chunk says so. */
  assert_true(p.chunks > 1);
  assert_int_equal(p.truncated_chunks, p.chunks);
  probe_end(&p);
}

static void test_empty_document_is_one_empty_chunk(void **state) {
  probe_t p;
  probe_init(&p);
  run_fed(&p, &(dg_extract_request_t){.content_type = "text/plain"}, "", 0, 1);
  assert_int_equal(p.status, 0);
  assert_int_equal(p.chunks, 1);
  assert_true(p.saw_last);
  assert_int_equal(p.text.len, 0);
  probe_end(&p);
}

/* Runs the binary and returns its standard output (malloc'd). */
static char *run_binary(const char *args, int *status) {
  const char *bin = getenv("DG_BINARY");
  assert_non_null(bin);
  char cmd[1024];
  snprintf(cmd, sizeof(cmd), "%s %s 2>/dev/null", bin, args);
  FILE *f = popen(cmd, "r");
  assert_non_null(f);
  dg_buf_t out;
  dg_buf_init(&out, SIZE_MAX);
  char piece[4096];
  for (;;) {
    size_t n = fread(piece, 1, sizeof(piece), f);
    if (n == 0)
      break;
    assert_int_equal(dg_buf_append(&out, piece, n), 0);
  }
  int rc = pclose(f);
  *status = WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
  return dg_buf_steal(&out, NULL);
}

static void test_command_line(void **state) {
  char path[] = "/tmp/dg-extract-cli-XXXXXX.html";
  int fd = mkstemps(path, 5);
  assert_true(fd >= 0);
  const char *html = "<p>Hello <b>there</b></p><p>second paragraph of the page</p>";
  assert_int_equal(write(fd, html, strlen(html)), (ssize_t)strlen(html));
  close(fd);
  char args[256];
  int status = 0;
  snprintf(args, sizeof(args), "--extract %s", path);
  char *out = run_binary(args, &status);
  assert_int_equal(status, 0);
  assert_string_equal(out, "Hello there\n\nsecond paragraph of the page\n");
  free(out);
  snprintf(args, sizeof(args), "--extract %s --json --chunk-chars 20 --offset 6", path);
  out = run_binary(args, &status);
  assert_int_equal(status, 0);
  json_error_t jerr;
  char *newline = strchr(out, '\n');
  assert_non_null(newline);
  *newline = '\0';
  json_t *first = json_loads(out, 0, &jerr);
  assert_non_null(first);
  assert_int_equal(json_integer_value(json_object_get(first, "offset")), 6);
  assert_string_equal(json_string_value(json_object_get(first, "format")), "HTML");
  assert_true(json_is_true(json_object_get(first, "hasMore")));
  json_decref(first);
  free(out);
  snprintf(args, sizeof(args), "--extract %s.missing", path);
  free(run_binary(args, &status));
  assert_int_equal(status, 1);
  free(run_binary("--extract", &status));
  assert_int_equal(status, 2);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_text_fed_byte_by_byte),
      cmocka_unit_test(test_html_fed_in_pieces),
      cmocka_unit_test(test_pdf_chunks_stream_before_the_end),
      cmocka_unit_test(test_offset_and_past_the_end),
      cmocka_unit_test(test_failures_reach_on_done),
      cmocka_unit_test(test_close_cancels_once_later),
      cmocka_unit_test(test_truncation_reaches_every_chunk),
      cmocka_unit_test(test_empty_document_is_one_empty_chunk),
      cmocka_unit_test(test_command_line),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
