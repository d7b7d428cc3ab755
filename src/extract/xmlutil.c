/* What the libxml2-based extractors share: one process-wide initialisation
 * (libxml2 asks for it before threads use the library) and the wording of
 * parse errors. */
#include <pthread.h>
#include <string.h>

#include <libxml/parser.h>
#include <libxml/xmlerror.h>

#include "extract/internal.h"

static pthread_once_t xml_once = PTHREAD_ONCE_INIT;

static void xml_init_once(void) {
  xmlInitParser();
}

static void quiet(void *ctx, const char *fmt, ...) {
}

void dg__xml_init(void) {
  pthread_once(&xml_once, xml_init_once);
  /* Some libxml2 errors (encoding conversion) bypass the parser's handlers
   * and go to the thread's generic handler, which writes to stderr, where
   * the gateway's JSON log lines go. The handler is per thread and steps
   * move between threadpool threads, so every step sets it. */
  xmlSetGenericErrorFunc(NULL, quiet);
}

/* libxml2's messages end with a newline; the caller's sentence does not. */
static size_t message_len(const char *msg) {
  size_t n = strlen(msg);
  while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
    n--;
  return n;
}

int dg__xml_fail(dg__xrun_t *run, const char *what, const xmlError *e) {
  if (e == NULL || e->message == NULL)
    return dg_errctx_set(&run->err, DG_EPROTO, "url", "%s is not well-formed", what);
  return dg_errctx_set(&run->err, DG_EPROTO, "url", "%s is not well-formed: line %d: %.*s", what,
                       e->line, (int)message_len(e->message), e->message);
}

int dg__xml_too_deep(dg__xrun_t *run, const char *what) {
  return dg_errctx_set(&run->err, DG_E2BIG, "url",
                       "%s nests elements deeper than the limit of %u levels", what,
                       run->limits.max_depth);
}
