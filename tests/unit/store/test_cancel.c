/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for cancel.c: the payload of a cancel between gateways
 * written and read back, every malformed payload dropped, the bounds, and
 * SQLite's store, which has nobody to publish to. */
#include "store/internal.h"
#include "store/sqlite_test.h"

#define HASH "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

typedef struct heard {
  int calls;
  char session[DG_STORE_CANCEL_SESSION_LEN + 1];
  char request[DG_STORE_CANCEL_REQUEST_MAX + 1];
  bool whole;
} heard_t;

static void on_heard(const char *session, const char *request, void *data) {
  heard_t *h = data;
  h->calls++;
  snprintf(h->session, sizeof(h->session), "%s", session);
  h->whole = request == NULL;
  snprintf(h->request, sizeof(h->request), "%s", request != NULL ? request : "");
}

static void test_encode_and_parse(void **state) {
  (void)state;
  char payload[DG__STORE_CANCEL_PAYLOAD_MAX + 1];
  char session[DG_STORE_CANCEL_SESSION_LEN + 1];
  char request[DG_STORE_CANCEL_REQUEST_MAX + 1];
  assert_int_equal(dg__store_cancel_encode(HASH, "7", payload), 0);
  assert_string_equal(payload, "c1 " HASH " 7");
  assert_true(dg__store_cancel_parse(payload, session, request));
  assert_string_equal(session, HASH);
  assert_string_equal(request, "7");
  /* A string id as JSON text, spaces and quotes included. */
  assert_int_equal(dg__store_cancel_encode(HASH, "\"call one\"", payload), 0);
  assert_true(dg__store_cancel_parse(payload, session, request));
  assert_string_equal(request, "\"call one\"");
  /* The whole session. */
  assert_int_equal(dg__store_cancel_encode(HASH, NULL, payload), 0);
  assert_string_equal(payload, "c1 " HASH);
  assert_true(dg__store_cancel_parse(payload, session, request));
  assert_string_equal(session, HASH);
  assert_string_equal(request, "");
}

static void test_bounds(void **state) {
  (void)state;
  char payload[DG__STORE_CANCEL_PAYLOAD_MAX + 1];
  char session[DG_STORE_CANCEL_SESSION_LEN + 1];
  char request[DG_STORE_CANCEL_REQUEST_MAX + 1];
  char longest[DG_STORE_CANCEL_REQUEST_MAX + 2];
  memset(longest, 'x', sizeof(longest));
  longest[DG_STORE_CANCEL_REQUEST_MAX] = '\0';
  assert_int_equal(dg__store_cancel_encode(HASH, longest, payload), 0);
  assert_int_equal(strlen(payload), DG__STORE_CANCEL_PAYLOAD_MAX);
  assert_true(dg__store_cancel_parse(payload, session, request));
  assert_string_equal(request, longest);
  longest[DG_STORE_CANCEL_REQUEST_MAX] = 'x';
  longest[DG_STORE_CANCEL_REQUEST_MAX + 1] = '\0';
  assert_int_equal(dg__store_cancel_encode(HASH, longest, payload), DG_EINVAL);
  assert_string_equal(payload, "");
  /* One byte over as a payload: dropped. */
  char over[DG__STORE_CANCEL_PAYLOAD_MAX + 2];
  snprintf(over, sizeof(over), "c1 %s %s", HASH, longest);
  assert_int_equal(strlen(over), DG__STORE_CANCEL_PAYLOAD_MAX + 1);
  assert_false(dg__store_cancel_parse(over, session, request));
  assert_string_equal(session, "");
}

static void test_bad_arguments(void **state) {
  (void)state;
  char payload[DG__STORE_CANCEL_PAYLOAD_MAX + 1];
  const char *sessions[] = {NULL,
                            "",
                            "0123",
                            HASH "0",
                            "0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef",
                            "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdeg"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(sessions); i++)
    assert_int_equal(dg__store_cancel_encode(sessions[i], "1", payload), DG_EINVAL);
  const char *requests[] = {"", "a\nb", "tab\there", "caf\xc3\xa9", "\x7f"};
  for (size_t i = 0; i < DG_ARRAY_SIZE(requests); i++)
    assert_int_equal(dg__store_cancel_encode(HASH, requests[i], payload), DG_EINVAL);
}

static void test_bad_payloads_dropped(void **state) {
  (void)state;
  char session[DG_STORE_CANCEL_SESSION_LEN + 1];
  char request[DG_STORE_CANCEL_REQUEST_MAX + 1];
  const char *bad[] = {
      NULL,
      "",
      "c1",
      "c1 ",
      "c2 " HASH " 7",                                                         /* version */
      "C1 " HASH,                                                              /* case */
      "c1  " HASH,                                                             /* two spaces */
      "c1 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcde",    /* 63 digits */
      "c1 0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef 7", /* upper case */
      "c1 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdefx",  /* 65 chars */
      "c1 " HASH " ",                                                          /* empty key */
      "c1 " HASH "7",                                                          /* no space */
      "c1 " HASH " a\tb",                                                      /* control */
      "c1 " HASH " caf\xc3\xa9",                                               /* not ASCII */
      "c1 " HASH " 7\n",                                                       /* newline */
  };
  for (size_t i = 0; i < DG_ARRAY_SIZE(bad); i++) {
    memset(session, 'z', sizeof(session));
    memset(request, 'z', sizeof(request));
    assert_false(dg__store_cancel_parse(bad[i], session, request));
    assert_string_equal(session, "");
    assert_string_equal(request, "");
  }
}

/* SQLite serves one process: nothing to publish to, and the arguments are
 * still checked first. */
static void test_sqlite_publishes_nothing(void **state) {
  sq_fixture_t *fx = *state;
  assert_int_equal(dg_store_publish_cancel(fx->store, HASH, "7"), DG_ENOTSUP);
  assert_int_equal(dg_store_publish_cancel(fx->store, HASH, NULL), DG_ENOTSUP);
  assert_int_equal(dg_store_publish_cancel(fx->store, "nothex", "7"), DG_EINVAL);
  assert_int_equal(dg_store_publish_cancel(fx->store, HASH, ""), DG_EINVAL);
}

/* What a driver hears reaches the subscriber parsed, or not at all. */
static void test_heard(void **state) {
  sq_fixture_t *fx = *state;
  heard_t h = {0};
  dg__store_cancel_heard(fx->store, "c1 " HASH " 7"); /* nobody listens yet */
  dg_store_on_cancel(fx->store, on_heard, &h);
  dg__store_cancel_heard(fx->store, "c1 " HASH " 7");
  assert_int_equal(h.calls, 1);
  assert_string_equal(h.session, HASH);
  assert_string_equal(h.request, "7");
  assert_false(h.whole);
  dg__store_cancel_heard(fx->store, "c1 " HASH);
  assert_int_equal(h.calls, 2);
  assert_true(h.whole);
  dg__store_cancel_heard(fx->store, "c1 " HASH " \x01");
  dg__store_cancel_heard(fx->store, "hello");
  assert_int_equal(h.calls, 2);
  dg_store_on_cancel(fx->store, NULL, NULL);
  dg__store_cancel_heard(fx->store, "c1 " HASH " 7");
  assert_int_equal(h.calls, 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_encode_and_parse),
      cmocka_unit_test(test_bounds),
      cmocka_unit_test(test_bad_arguments),
      cmocka_unit_test(test_bad_payloads_dropped),
      cmocka_unit_test_setup_teardown(test_sqlite_publishes_nothing, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_heard, sq_setup, sq_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
