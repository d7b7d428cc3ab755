/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for form submissions on SQLite: a record created or modified
 * with its submission in one transaction (running when a save tree
 * follows), the outcome and the values the tree set written together, the
 * latest submission of a record, idempotency keys (the first outcome on a
 * retry, a key reused for another request refused), referenced entities
 * that do not exist (nothing written), lines of the record's child lists
 * added, modified and deleted in the same transaction (and a line of
 * another record refused with nothing written), and submissions left running by a
 * process that is gone marked interrupted when the store opens again. */
#include <signal.h>
#include <sys/wait.h>

#include "store/internal.h"
#include "store/sqlite_internal.h"
#include "store/sqlite_test.h"

#define ORDER_SO1002 "83b6460c-7039-56c3-9694-e8fb46ec2322"
#define CUSTOMER "7c08b797-fac4-5249-874c-557b0f4557f5"

typedef struct sub {
  dg_store_submit_t s;
  const dg_property_t *props[4];
  dg_store_value_t values[4];
  dg_store_ref_check_t refs[2];
  char id[DG_UUID_LEN + 1];
} sub_t;

static dg_store_value_t text(const char *s) {
  return (dg_store_value_t){.kind = DG_STORE_TEXT, .text = s, .len = strlen(s)};
}

/* An order to create (id NULL) or modify, with a status and customer. */
static sub_t *order_sub(sq_fixture_t *fx, const char *id, const char *endpoint) {
  sub_t *x = dg_arena_calloc(fx->st.arena, 1, sizeof(*x));
  const dg_model_t *orders = st_model(&fx->st, "Orders");
  dg_uuid_v4(x->id);
  x->props[0] = dg_model_property(orders, "OrderNumber");
  x->values[0] = text("SO-9001");
  x->props[1] = dg_model_property(orders, "Status");
  x->values[1] = text("Open");
  x->props[2] = dg_model_property(orders, "Customer");
  x->values[2] = text(CUSTOMER);
  x->refs[0] =
      (dg_store_ref_check_t){st_model(&fx->st, "Customers"), CUSTOMER, "formValues[2].value"};
  x->s = (dg_store_submit_t){.submission_id = x->id,
                             .write = {.model = orders,
                                       .mode = id ? DG_STORE_UPDATE : DG_STORE_CREATE,
                                       .id = id,
                                       .props = x->props,
                                       .values = x->values,
                                       .nvalues = 3},
                             .refs = x->refs,
                             .nrefs = 1,
                             .endpoint = endpoint,
                             .system = "Claude",
                             .principal = "sales",
                             .fingerprint = "f1"};
  return x;
}

static sq_result_t run_submit(sq_fixture_t *fx, const dg_store_submit_t *s) {
  sq_result_t r = {.starting = true};
  dg_errctx_t err;
  assert_int_equal(dg_store_submit(fx->store, s, sq_on_result, &r, NULL, &err), 0);
  r.starting = false;
  sq_wait(fx, &r);
  dg_arena_defer(fx->st.arena, (void (*)(void *))json_decref, r.json);
  return r;
}

static sq_result_t run_finish(sq_fixture_t *fx, const dg_store_finish_t *f) {
  sq_result_t r = {.starting = true};
  dg_errctx_t err;
  assert_int_equal(dg_store_finish(fx->store, f, sq_on_result, &r, NULL, &err), 0);
  r.starting = false;
  sq_wait(fx, &r);
  dg_arena_defer(fx->st.arena, (void (*)(void *))json_decref, r.json);
  return r;
}

static json_t *latest(sq_fixture_t *fx, const char *model, const char *id) {
  dg_store_submission_get_t *g = dg_arena_calloc(fx->st.arena, 1, sizeof(*g));
  *g = (dg_store_submission_get_t){.model = st_model(&fx->st, model), .entity_id = id};
  sq_result_t r = {.starting = true};
  dg_errctx_t err;
  assert_int_equal(dg_store_submission(fx->store, g, sq_on_result, &r, NULL, &err), 0);
  r.starting = false;
  sq_wait(fx, &r);
  dg_arena_defer(fx->st.arena, (void (*)(void *))json_decref, r.json);
  return json_object_get(sq_ok(r), "submission");
}

/* The stored order with this id, through the query path. */
static json_t *order(sq_fixture_t *fx, const char *id) {
  char args[256];
  snprintf(args, sizeof(args),
           "{\"queryParameterGroups\": [{\"parameters\": [{\"propertyName\": \"id\", "
           "\"operator\": \"EqualTo\", \"value\": \"%s\", \"valueType\": \"string\"}]}]}",
           id);
  json_t *list = json_object_get(sq_ok(sq_query(fx, "admin", "Orders", args)), "entities");
  return json_array_size(list) == 1 ? json_object_get(json_array_get(list, 0), "properties") : NULL;
}

/* ---- Tests -------------------------------------------------------------------------------- */

static void test_create_without_tree(void **state) {
  sq_fixture_t *fx = *state;
  sub_t *x = order_sub(fx, NULL, NULL);
  json_t *res = sq_ok(run_submit(fx, &x->s));
  const char *id = sq_str(res, "id");
  assert_true(dg_uuid_valid(id));
  assert_true(json_is_true(json_object_get(res, "created")));
  assert_string_equal(sq_str(res, "status"), "succeeded");
  assert_true(json_is_false(json_object_get(res, "replayed")));
  json_t *props = order(fx, id);
  assert_non_null(props);
  assert_string_equal(sq_str(props, "orderNumber"), "SO-9001");
  assert_string_equal(sq_str(props, "customer"), CUSTOMER);
  json_t *s = latest(fx, "Orders", id);
  assert_string_equal(sq_str(s, "submissionId"), x->id);
  assert_string_equal(sq_str(s, "operation"), "Create");
  assert_string_equal(sq_str(s, "system"), "Claude");
  assert_string_equal(sq_str(s, "status"), "succeeded");
  assert_true(json_is_null(json_object_get(s, "endpoint")));
  assert_non_null(sq_str(s, "finishedAt"));
}

static void test_update_then_finish(void **state) {
  sq_fixture_t *fx = *state;
  sub_t *x = order_sub(fx, ORDER_SO1002, "OrderEdit");
  json_t *res = sq_ok(run_submit(fx, &x->s));
  assert_string_equal(sq_str(res, "status"), "running");
  assert_true(json_is_false(json_object_get(res, "created")));
  assert_string_equal(sq_str(order(fx, ORDER_SO1002), "status"), "Open");
  json_t *s = latest(fx, "Orders", ORDER_SO1002);
  assert_string_equal(sq_str(s, "status"), "running");
  assert_true(json_is_null(json_object_get(s, "finishedAt")));
  /* The tree set a value on the order and on a record deleted meanwhile. */
  const dg_model_t *orders = st_model(&fx->st, "Orders");
  const dg_property_t *calc[] = {dg_model_property(orders, "CalculatedOrderId")};
  dg_store_value_t v[] = {text("calc-7")};
  dg_store_write_t writes[] = {{.model = orders,
                                .mode = DG_STORE_UPDATE,
                                .id = ORDER_SO1002,
                                .props = calc,
                                .values = v,
                                .nvalues = 1},
                               {.model = orders,
                                .mode = DG_STORE_UPDATE,
                                .id = "00000000-0000-4000-8000-000000000000",
                                .props = calc,
                                .values = v,
                                .nvalues = 1}};
  dg_store_finish_t f = {.submission_id = x->id,
                         .status = DG_STORE_SUBMISSION_FAILED,
                         .failed_action = "Save Line Changes (/endpoints/0/save/actions/1)",
                         .reason = "upstream answered 409",
                         .outcome = "{\"status\":\"failed\"}",
                         .writes = writes,
                         .nwrites = 2};
  json_t *done = sq_ok(run_finish(fx, &f));
  assert_string_equal(sq_str(done, "status"), "failed");
  assert_string_equal(sq_str(order(fx, ORDER_SO1002), "calculatedOrderId"), "calc-7");
  s = latest(fx, "Orders", ORDER_SO1002);
  assert_string_equal(sq_str(s, "status"), "failed");
  assert_string_equal(sq_str(s, "failedAction"), f.failed_action);
  assert_string_equal(sq_str(s, "reason"), "upstream answered 409");
  assert_string_equal(sq_str(s, "endpoint"), "OrderEdit");
  /* An unknown submission is an error. */
  f.submission_id = "00000000-0000-4000-8000-000000000000";
  f.nwrites = 0;
  sq_result_t r = run_finish(fx, &f);
  assert_int_equal(r.status, DG_ENOENT);
}

static unsigned long statements(void) {
  return atomic_load(&dg__sqlite_statements);
}

/* The statements each request runs: the key's earlier submission, each
 * referenced entity, the record (checked first when modified), the
 * submission; then the outcome and the values the tree set. */
static void test_statements_per_request(void **state) {
  sq_fixture_t *fx = *state;
  unsigned long before = statements();
  sq_ok(run_submit(fx, &order_sub(fx, NULL, NULL)->s));
  assert_int_equal(statements() - before, 3);
  sub_t *x = order_sub(fx, ORDER_SO1002, "OrderEdit");
  x->s.idempotency_key = "k-statements";
  before = statements();
  sq_ok(run_submit(fx, &x->s));
  assert_int_equal(statements() - before, 5);
  dg_store_write_t write = x->s.write;
  write.nvalues = 1;
  dg_store_finish_t f = {.submission_id = x->id,
                         .status = DG_STORE_SUBMISSION_SUCCEEDED,
                         .writes = &write,
                         .nwrites = 1};
  before = statements();
  sq_ok(run_finish(fx, &f));
  assert_int_equal(statements() - before, 2);
  before = statements();
  assert_non_null(latest(fx, "Orders", ORDER_SO1002));
  assert_int_equal(statements() - before, 1);
}

static void test_idempotency_key(void **state) {
  sq_fixture_t *fx = *state;
  sub_t *x = order_sub(fx, ORDER_SO1002, "OrderEdit");
  x->s.idempotency_key = "edit-42";
  json_t *first = sq_ok(run_submit(fx, &x->s));
  dg_store_finish_t f = {.submission_id = x->id,
                         .status = DG_STORE_SUBMISSION_SUCCEEDED,
                         .outcome = "{\"status\":\"succeeded\",\"n\":1}"};
  sq_ok(run_finish(fx, &f));
  /* The same request again: the first outcome, nothing written. */
  sub_t *again = order_sub(fx, ORDER_SO1002, "OrderEdit");
  again->s.idempotency_key = "edit-42";
  again->values[1] = text("Cancelled");
  json_t *replay = sq_ok(run_submit(fx, &again->s));
  assert_true(json_is_true(json_object_get(replay, "replayed")));
  assert_string_equal(sq_str(replay, "submissionId"), x->id);
  assert_string_equal(sq_str(replay, "id"), sq_str(first, "id"));
  assert_string_equal(sq_str(replay, "status"), "succeeded");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(replay, "outcome"), "n")), 1);
  assert_string_equal(sq_str(order(fx, ORDER_SO1002), "status"), "Open");
  assert_string_equal(sq_str(latest(fx, "Orders", ORDER_SO1002), "submissionId"), x->id);
  /* The key for a different request is refused. */
  again->s.fingerprint = "f2";
  sq_result_t r = run_submit(fx, &again->s);
  assert_int_equal(r.status, DG_EEXIST);
  st_contains(r.message,
              "Invalid argument 'idempotencyKey': 'edit-42' was already used for a "
              "different submission (Update of Orders " ORDER_SO1002 " at ",
              NULL);
  /* Keys belong to their principal. */
  again->s.principal = "admin";
  json_t *other = sq_ok(run_submit(fx, &again->s));
  assert_true(json_is_false(json_object_get(other, "replayed")));
  assert_string_equal(sq_str(order(fx, ORDER_SO1002), "status"), "Cancelled");
}

static void test_missing_references(void **state) {
  sq_fixture_t *fx = *state;
  sub_t *x = order_sub(fx, NULL, NULL);
  x->refs[0].id = "00000000-0000-4000-8000-00000000abcd";
  sq_result_t r = run_submit(fx, &x->s);
  assert_int_equal(r.status, DG_ENOENT);
  assert_string_equal(r.message, "Invalid argument 'formValues[2].value': there is no Customers "
                                 "entity with id '00000000-0000-4000-8000-00000000abcd'; find the "
                                 "entity with lookup_by_keyword or query_entities and give its "
                                 "id.");
  json_t *found = sq_ok(sq_query(fx, "admin", "Orders",
                                 "{\"queryParameterGroups\": [{\"parameters\": [{\"propertyName\": "
                                 "\"OrderNumber\", \"operator\": \"EqualTo\", \"value\": "
                                 "\"SO-9001\", \"valueType\": \"string\"}]}]}"));
  assert_int_equal(json_array_size(json_object_get(found, "entities")), 0);
  x = order_sub(fx, "00000000-0000-4000-8000-00000000abcd", NULL);
  r = run_submit(fx, &x->s);
  assert_int_equal(r.status, DG_ENOENT);
  assert_string_equal(r.message, "Invalid argument 'id': there is no Orders entity with id "
                                 "'00000000-0000-4000-8000-00000000abcd'; leave id out to create "
                                 "a record.");
  assert_true(json_is_null(latest(fx, "Orders", "00000000-0000-4000-8000-00000000abcd")));
}

#define LINE_A "00fc00e4-f93d-5619-bea3-c81d1427ce26" /* lines of SO-1002 */
#define LINE_B "958fb4af-e9cf-5b08-85b8-860ef11dc25d"
#define LINE_OTHER "602ab451-5fff-52ca-b50f-02cf21fd7656" /* a line of SO-1005 */
#define LINE_NEW "0a1b2c3d-0000-4000-8000-000000000001"

/* The quantities of SO-1002's lines by id, as {"<id>": quantity}. */
static json_t *line_quantities(sq_fixture_t *fx) {
  json_t *found = sq_ok(sq_query(fx, "admin", "OrderLines",
                                 "{\"queryParameterGroups\": [{\"parameters\": [{\"propertyName\": "
                                 "\"Order\", \"operator\": \"EqualTo\", \"value\": \"" ORDER_SO1002
                                 "\", \"valueType\": \"string\"}]}]}"));
  json_t *out = json_object();
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(found, "entities"), i, e) {
    json_object_set(out, sq_str(e, "id"),
                    json_object_get(json_object_get(e, "properties"), "quantity"));
  }
  dg_arena_defer(fx->st.arena, (void (*)(void *))json_decref, out);
  return out;
}

static void test_child_lines(void **state) {
  sq_fixture_t *fx = *state;
  const dg_model_t *lines = st_model(&fx->st, "OrderLines");
  const dg_property_t *order_ref = dg_model_property(lines, "Order");
  const dg_property_t *quantity[] = {dg_model_property(lines, "Quantity"), order_ref};
  dg_store_value_t seven[] = {{.kind = DG_STORE_INT, .i = 7}, text(ORDER_SO1002)};
  dg_store_value_t nine[] = {{.kind = DG_STORE_INT, .i = 9}};
  dg_store_child_change_t changes[] = {
      {.write = {lines, DG_STORE_CREATE, LINE_NEW, quantity, seven, 2}, .parent = order_ref},
      {.write = {lines, DG_STORE_UPDATE, LINE_A, quantity, nine, 1},
       .parent = order_ref,
       .param = "childLists[0].changes[1].id"},
      {.write = {lines, DG_STORE_UPDATE, LINE_B, NULL, NULL, 0},
       .remove = true,
       .parent = order_ref,
       .param = "childLists[0].changes[2].id"},
  };
  json_t *before = json_deep_copy(line_quantities(fx));
  dg_arena_defer(fx->st.arena, (void (*)(void *))json_decref, before);
  /* A line of another order: refused, and nothing of the call is written. */
  sub_t *x = order_sub(fx, ORDER_SO1002, "OrderEdit");
  changes[2].write.id = LINE_OTHER;
  x->s.children = changes;
  x->s.nchildren = 3;
  sq_result_t r = run_submit(fx, &x->s);
  assert_int_equal(r.status, DG_ENOENT);
  assert_string_equal(r.message,
                      "Invalid argument 'childLists[0].changes[2].id': '" LINE_OTHER
                      "' is not a line of this Orders record (no OrderLines entity with that id "
                      "has Order = '" ORDER_SO1002 "'); give the id of one of its lines, from "
                      "get_data_entry_form.");
  assert_true(json_equal(line_quantities(fx), before));
  assert_string_not_equal(sq_str(order(fx, ORDER_SO1002), "status"), "Open");
  assert_true(json_is_null(latest(fx, "Orders", ORDER_SO1002)));
  /* The record's own lines: added, modified and deleted with the record. */
  x = order_sub(fx, ORDER_SO1002, "OrderEdit");
  changes[2].write.id = LINE_B;
  x->s.children = changes;
  x->s.nchildren = 3;
  sq_ok(run_submit(fx, &x->s));
  json_t *after = line_quantities(fx);
  assert_int_equal(json_object_size(after), json_object_size(before));
  assert_int_equal(json_integer_value(json_object_get(after, LINE_NEW)), 7);
  assert_int_equal(json_integer_value(json_object_get(after, LINE_A)), 9);
  assert_null(json_object_get(after, LINE_B));
  assert_string_equal(sq_str(order(fx, ORDER_SO1002), "status"), "Open");
}

static void reopen(sq_fixture_t *fx) {
  sq_close(fx, fx->store);
  fx->store = NULL;
  dg_store_options_t o = {.path = fx->path, .sample_dir = ""};
  char msg[1024];
  if (sq_open(fx, fx->st.cat, &o, &fx->store, msg, sizeof(msg)) != 0)
    fail_msg("reopen failed: %s", msg);
}

static void test_interrupted_at_open(void **state) {
  sq_fixture_t *fx = *state;
  sub_t *x = order_sub(fx, ORDER_SO1002, "OrderEdit");
  sq_ok(run_submit(fx, &x->s));
  assert_string_equal(sq_str(latest(fx, "Orders", ORDER_SO1002), "status"), "running");
  /* The store that ran it closes without an outcome, as a stopped process would. */
  reopen(fx);
  json_t *s = latest(fx, "Orders", ORDER_SO1002);
  assert_string_equal(sq_str(s, "status"), "failed");
  st_contains(sq_str(s, "reason"), "interrupted: the gateway process stopped", NULL);
  assert_non_null(sq_str(s, "finishedAt"));
}

static void test_owner_liveness(void **state) {
  (void)state;
  char self[DG__STORE_OWNER_MAX], other[DG__STORE_OWNER_MAX], child[DG__STORE_OWNER_MAX];
  dg__store_owner(self);
  dg__store_owner(other);
  assert_true(dg__store_owner_alive(self, self));
  /* The same process, another (closed) store instance. */
  assert_false(dg__store_owner_alive(other, self));
  assert_false(dg__store_owner_alive("garbage", self));
  assert_false(dg__store_owner_alive(NULL, self));
  /* Another boot. */
  char rebooted[DG__STORE_OWNER_MAX + 1];
  snprintf(rebooted, sizeof(rebooted), "x%s", self);
  assert_false(dg__store_owner_alive(rebooted, self));
  /* Another process: alive while it runs, gone once it has exited. */
  int fds[2];
  assert_int_equal(pipe(fds), 0);
  pid_t pid = fork();
  if (pid == 0) {
    dg__store_owner(child);
    ssize_t n = write(fds[1], child, strlen(child) + 1);
    pause();
    _exit(n > 0 ? 0 : 1);
  }
  assert_true(read(fds[0], child, sizeof(child)) > 0);
  assert_true(dg__store_owner_alive(child, self));
  kill(pid, SIGKILL);
  waitpid(pid, NULL, 0);
  assert_false(dg__store_owner_alive(child, self));
  close(fds[0]);
  close(fds[1]);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_create_without_tree, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_update_then_finish, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_statements_per_request, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_idempotency_key, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_missing_references, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_child_lines, sq_setup, sq_teardown),
      cmocka_unit_test_setup_teardown(test_interrupted_at_open, sq_setup, sq_teardown),
      cmocka_unit_test(test_owner_liveness),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
