/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Unit tests for the save tree engine with a fake connector: the worked
 * order edit in REST (basic and collection extractions, child saves using
 * the per-line session value, the commit using the header value, response
 * mappings) and in GraphQL (Multiple Lists), lists of unequal length,
 * execution order with nested Get Session Values actions, bounded child
 * concurrency, scoping of header and child values, a failure in each
 * phase, GraphQL errors, cancellation, operations and filters, and too
 * many children. Every test closes its loop and checks nothing is open. */
#include "save/tree_test.h"

#define ORDER "8a03cbc2-0000-4000-8000-000000000001"

/* ---- The REST order edit ----------------------------------------------------------------- */

static tt_answer_t answer_rest(tt_fake_t *f, const tt_call_t *c) {
  if (strcmp(c->path, "/orders/SO-1002/edits/begin.json") == 0)
    return tt_reply(200, "{\"calculatedOrder\": {\"id\": \"calc-1\", \"lineItems\": ["
                         "{\"id\": \"cli-1\", \"sku\": \"A-1\"}, {\"id\": \"cli-2\", \"sku\": "
                         "\"B-2\"}, {\"id\": \"cli-3\", \"sku\": \"C-3\"}]}}");
  if (strncmp(c->path, "/orders/SO-1002/edits/calc-1/line_items/", 40) == 0)
    return tt_reply(200, "{\"lineItem\": {\"unitPrice\": 9.5}}");
  if (strcmp(c->path, "/orders/SO-1002/edits/calc-1/commit.json") == 0)
    return tt_reply(200, "{\"order\": {\"total\": {\"amount\": 123.45}}}");
  return tt_reply(404, "{\"error\": \"no route\"}");
}

static const char lines[] = "[{\"id\": \"l-a\", \"values\": {\"SKU\": \"A-1\", \"Quantity\": 2}}, "
                            "{\"id\": \"l-c\", \"values\": {\"SKU\": \"C-3\", \"Quantity\": 7}}, "
                            "{\"id\": \"l-b\", \"values\": {\"SKU\": \"B-2\", \"Quantity\": 5}}]";

/* Saves ORDER (created or modified) with its three lines through the
 * sample's REST order edit. */
static tt_fake_t *run_rest(dg_catalog_t *cat, bool create, const char *values) {
  tt_fake_t *f = tt_fake(answer_rest);
  tt_children(f, ORDER, "OrderLines", lines);
  tt_run(f, cat, "OrderEdit", ORDER, create, values);
  return f;
}

static void test_rest_order_edit(void **state) {
  (void)state;
  dg_catalog_t *cat = tt_sample();
  tt_fake_t *f = run_rest(cat, false, "{\"OrderNumber\": \"SO-1002\", \"Status\": \"Open\"}");
  assert_true(f->succeeded);
  assert_int_equal(f->ncalls, 5);
  assert_string_equal(f->calls[0].path, "/orders/SO-1002/edits/begin.json");
  assert_string_equal(f->calls[0].body, "{\"reason\":\"datagate form edit\",\"status\":\"Open\"}");
  /* Each line with the line item its SKU matched, in list order. */
  assert_string_equal(f->calls[1].path, "/orders/SO-1002/edits/calc-1/line_items/cli-1.json");
  assert_string_equal(f->calls[1].body, "{\"lineItem\":{\"quantity\":2}}");
  assert_string_equal(f->calls[2].path, "/orders/SO-1002/edits/calc-1/line_items/cli-3.json");
  assert_string_equal(f->calls[2].body, "{\"lineItem\":{\"quantity\":7}}");
  assert_string_equal(f->calls[3].path, "/orders/SO-1002/edits/calc-1/line_items/cli-2.json");
  assert_string_equal(f->calls[4].path, "/orders/SO-1002/edits/calc-1/commit.json");
  assert_string_equal(f->calls[4].body, "");
  assert_string_equal(f->calls[4].method, "POST");
  assert_int_equal(f->max_running, 1);
  /* The result, in execution order. */
  assert_int_equal(json_array_size(tt_actions(f)), 4);
  assert_string_equal(tt_str(tt_action(f, 0), "title"), "Begin Order Edit");
  assert_string_equal(tt_str(tt_action(f, 0), "status"), "succeeded");
  json_t *up = json_object_get(tt_action(f, 0), "upstream");
  assert_int_equal(json_integer_value(json_object_get(up, "status")), 200);
  assert_string_equal(tt_str(up, "url"),
                      "http://127.0.0.1:8091/erp/orders/SO-1002/edits/begin.json");
  json_t *gsv = tt_action(f, 1);
  assert_string_equal(tt_str(gsv, "type"), "GetSessionValues");
  assert_string_equal(tt_str(json_object_get(gsv, "sessionValues"), "CalculatedOrderId"), "calc-1");
  json_t *matched = json_object_get(json_object_get(gsv, "matched"), "LineItemId");
  assert_int_equal(json_integer_value(json_object_get(matched, "items")), 3);
  assert_int_equal(json_integer_value(json_object_get(matched, "records")), 3);
  json_t *children = tt_action(f, 2);
  assert_string_equal(tt_str(children, "type"), "ChildSaves");
  assert_string_equal(tt_str(children, "status"), "succeeded");
  assert_int_equal(json_array_size(json_object_get(children, "saves")), 3);
  assert_string_equal(tt_str(tt_action(f, 3), "title"), "Save Line Changes");
  assert_int_equal(json_array_size(json_object_get(f->result, "warnings")), 0);
  /* What the tree set on the records. */
  assert_string_equal(tt_str(tt_changed(f, ORDER), "CalculatedOrderId"), "calc-1");
  assert_true(json_real_value(json_object_get(tt_changed(f, ORDER), "Amount")) == 123.45);
  assert_string_equal(tt_str(tt_changed(f, "l-c"), "LineItemId"), "cli-3");
  assert_true(json_real_value(json_object_get(tt_changed(f, "l-c"), "UnitPrice")) == 9.5);
  tt_free(f);
  dg_catalog_unref(cat);
}

/* ---- The GraphQL order edit ---------------------------------------------------------------- */

typedef struct gql {
  const char *begin;
} gql_t;

static tt_answer_t answer_graphql(tt_fake_t *f, const tt_call_t *c) {
  gql_t *g = f->user;
  if (strcmp(c->path, "/graphql") != 0)
    return tt_reply(404, "{}");
  if (strstr(c->body, "\"operationName\":\"orderEditBegin\"") != NULL)
    return tt_reply(200, g->begin);
  if (strstr(c->body, "\"operationName\":\"orderEditSetQuantity\"") != NULL)
    return tt_reply(200, "{\"data\": {\"orderEditSetQuantity\": {\"calculatedLineItem\": "
                         "{\"id\": \"x\"}}}}");
  return tt_reply(200, "{\"data\": {\"orderEditCommit\": {\"order\": {\"totalPrice\": "
                       "\"99.00\"}}}}");
}

#define BEGIN_GQL(original, calculated)                                                            \
  "{\"data\": {\"orderEditBegin\": {\"calculatedOrder\": {\"id\": \"gid://calc/1\", "              \
  "\"originalOrder\": {\"lineItems\": {\"edges\": [" original "]}}, \"lineItems\": {\"edges\": "   \
  "[" calculated "]}}}}}"

static const char gql_lines[] =
    "[{\"id\": \"l-a\", \"values\": {\"SKU\": \"A-1\", \"Quantity\": 2}}, "
    "{\"id\": \"l-b\", \"values\": {\"SKU\": \"B-2\", \"Quantity\": 5}}]";

/* Saves ORDER with two lines through the sample's GraphQL order edit,
 * whose begin call answers g->begin. */
static tt_fake_t *run_graphql(dg_catalog_t *cat, gql_t *g) {
  tt_fake_t *f = tt_fake(answer_graphql);
  f->user = g;
  tt_children(f, ORDER, "OrderLines", gql_lines);
  tt_run(f, cat, "OrderEditGraphql", ORDER, false, "{\"OrderNumber\": \"SO-1002\"}");
  return f;
}

static void test_graphql_multiple_lists(void **state) {
  (void)state;
  dg_catalog_t *cat = tt_sample();
  /* Disconnected lists: the original ids are the records' ids (matched in
   * any case), the calculated ones only line up by position. */
  gql_t g = {
      BEGIN_GQL("{\"node\": {\"id\": \"l-b\"}}, {\"node\": {\"id\": \"L-A\"}}",
                "{\"node\": {\"id\": \"gid://cl/2\"}}, {\"node\": {\"id\": \"gid://cl/1\"}}")};
  tt_fake_t *f = run_graphql(cat, &g);
  assert_true(f->succeeded);
  assert_int_equal(f->ncalls, 4);
  assert_non_null(strstr(f->calls[0].body, "\"variables\":{\"id\":\"gid://shop/Order/SO-1002\"}"));
  assert_non_null(strstr(f->calls[1].body, "\"variables\":{\"id\":\"gid://calc/1\",\"lineItemId\":"
                                           "\"gid://cl/1\",\"quantity\":2}"));
  assert_non_null(strstr(f->calls[2].body, "\"variables\":{\"id\":\"gid://calc/1\",\"lineItemId\":"
                                           "\"gid://cl/2\",\"quantity\":5}"));
  assert_non_null(strstr(f->calls[3].body, "\"operationName\":\"orderEditCommit\",\"variables\":"
                                           "{\"id\":\"gid://calc/1\"}"));
  assert_string_equal(tt_str(tt_changed(f, "l-a"), "CalculatedLineItemId"), "gid://cl/1");
  assert_string_equal(tt_str(tt_changed(f, ORDER), "Amount"), "99.00");
  tt_free(f);
  dg_catalog_unref(cat);
}

static void test_unequal_lists(void **state) {
  (void)state;
  dg_catalog_t *cat = tt_sample();
  gql_t g = {BEGIN_GQL("{\"node\": {\"id\": \"l-a\"}}, {\"node\": {\"id\": \"l-b\"}}",
                       "{\"node\": {\"id\": \"gid://cl/1\"}}")};
  tt_fake_t *f = run_graphql(cat, &g);
  /* The extraction is skipped with a warning; the header value still holds. */
  json_t *gsv = tt_action(f, 1);
  assert_string_equal(tt_str(gsv, "status"), "succeeded");
  assert_string_equal(tt_str(json_object_get(gsv, "sessionValues"), "CalculatedOrderId"),
                      "gid://calc/1");
  assert_null(json_object_get(gsv, "matched"));
  assert_string_equal(
      json_string_value(json_array_get(json_object_get(gsv, "warnings"), 0)),
      "CalculatedLineItemId: the lists have different numbers of items (original 2, calculated "
      "1); the extraction is skipped");
  assert_non_null(
      strstr(json_string_value(json_array_get(json_object_get(f->result, "warnings"), 0)),
             "the lists have different numbers of items"));
  /* The first child then has no value to send: it fails and stops the tree. */
  assert_false(f->succeeded);
  assert_int_equal(f->ncalls, 1);
  assert_string_equal(f->failed_action, "Set Line Quantity (/endpoints/3/save)");
  assert_string_equal(f->reason, "{SESSION:CalculatedLineItemId} has no value for this record (no "
                                 "extraction set it: the answer held nothing at its path, or no "
                                 "list item matched this record)");
  json_t *children = tt_action(f, 2);
  assert_string_equal(tt_str(children, "status"), "failed");
  assert_int_equal(json_integer_value(json_object_get(children, "notStarted")), 1);
  assert_string_equal(tt_str(tt_action(f, 3), "status"), "skipped");
  tt_free(f);
  dg_catalog_unref(cat);
}

/* ---- Execution order and scoping ---------------------------------------------------------- */

static const char tree_endpoints[] =
    "{\"endpoints\": [{\"id\": \"5e0d0000-0000-4000-8000-000000000001\", \"name\": \"Tree\", "
    "\"dataModel\": \"Orders\", \"connector\": \"SampleErp\", \"save\": {\"type\": "
    "\"EndpointSave\", \"title\": \"Root\", \"request\": {\"path\": \"/root/{OrderNumber}\"}, "
    "\"actions\": ["
    "{\"type\": \"EndpointSave\", \"title\": \"Post A\", \"afterChildConfigs\": true, "
    "\"request\": {\"path\": \"/post-a/{SESSION:CalculatedOrderId}\"}, \"filter\": "
    "{\"conditions\": [{\"property\": \"Quantity\", \"operator\": \">\", \"value\": \"9\"}]}},"
    "{\"type\": \"GetSessionValues\", \"title\": \"Read Root\", \"extractions\": ["
    "{\"modelProperty\": \"CalculatedOrderId\", \"connectorProperty\": \"calc\"}, "
    "{\"modelProperty\": \"LineItemId\", \"connectorProperty\": \"items[*].id\", "
    "\"mapToChildren\": true, \"targetList\": \"OrderLines\", \"modelMatchProperty\": \"SKU\", "
    "\"connectorListProperty\": \"items[*]\", \"connectorMatchProperty\": \"items[*].sku\"}]},"
    "{\"type\": \"EndpointSave\", \"title\": \"Pre B\", \"request\": {\"path\": "
    "\"/pre-b/{SESSION:CalculatedOrderId}\"}, \"actions\": [{\"type\": \"GetSessionValues\", "
    "\"title\": \"Read B\", \"extractions\": [{\"modelProperty\": \"Status\", "
    "\"connectorProperty\": \"$.status\"}]}]},"
    "{\"type\": \"EndpointSave\", \"title\": \"Post C\", \"afterChildConfigs\": true, "
    "\"request\": {\"path\": \"/post-c/{Status}/{SESSION:Status}\"}}]}, "
    "\"childConfigs\": [{\"list\": \"OrderLines\", \"endpoint\": \"Line\", \"concurrency\": 2}]},"
    "{\"id\": \"5e0d0000-0000-4000-8000-000000000002\", \"name\": \"Line\", \"dataModel\": "
    "\"OrderLines\", \"connector\": \"SampleErp\", \"formSubmit\": false, \"save\": {\"type\": "
    "\"EndpointSave\", \"title\": \"Line\", \"request\": {\"path\": "
    "\"/line/{Order.OrderNumber}/{Order.CalculatedOrderId}/{SESSION:LineItemId}/{SKU}\"}}}]}";

static tt_answer_t answer_tree(tt_fake_t *f, const tt_call_t *c) {
  const char *fail = f->user;
  if (fail != NULL && strncmp(c->path, fail, strlen(fail)) == 0)
    return tt_reply(409, "{\"error\": \"conflict: the order\\nis locked\"}");
  if (strncmp(c->path, "/root/", 6) == 0)
    return tt_reply(200, "{\"calc\": \"calc-9\", \"items\": [{\"id\": 11, \"sku\": \"A\"}, "
                         "{\"id\": 12, \"sku\": \"B\"}, {\"id\": 13, \"sku\": \"Z\"}]}");
  if (strncmp(c->path, "/pre-b/", 7) == 0)
    return tt_reply(200, "{\"status\": \"Open\"}");
  return (tt_answer_t){.status = 200, .body = "{}", .delay_ms = 2};
}

static const char tree_lines[] =
    "[{\"id\": \"l-1\", \"values\": {\"SKU\": \"A\"}}, {\"id\": \"l-2\", \"values\": {\"SKU\": "
    "\"B\"}}, {\"id\": \"l-3\", \"values\": {\"SKU\": \"A\"}}, {\"id\": \"l-4\", \"values\": "
    "{\"SKU\": \"B\"}}]";

static tt_fake_t *run_tree(dg_catalog_t *cat, const char *fail, const char *quantity) {
  tt_fake_t *f = tt_fake(answer_tree);
  f->user = (void *)fail;
  tt_children(f, ORDER, "OrderLines", tree_lines);
  char values[256];
  snprintf(values, sizeof(values),
           "{\"OrderNumber\": \"SO-7\", \"Status\": \"Draft\", \"Quantity\": %s}", quantity);
  tt_run(f, cat, "Tree", ORDER, false, values);
  return f;
}

static void test_execution_order(void **state) {
  (void)state;
  dg_catalog_t *cat = tt_catalog(tree_endpoints);
  tt_fake_t *f = run_tree(cat, NULL, "10");
  assert_true(f->succeeded);
  assert_int_equal(f->ncalls, 8);
  assert_string_equal(f->calls[0].path, "/root/SO-7");
  assert_string_equal(f->calls[1].path, "/pre-b/calc-9");
  /* Two child saves at once, each with the value its SKU matched and the
   * parent's header value read through the reference. */
  assert_string_equal(f->calls[2].path, "/line/SO-7/calc-9/11/A");
  assert_string_equal(f->calls[3].path, "/line/SO-7/calc-9/12/B");
  assert_string_equal(f->calls[4].path, "/line/SO-7/calc-9/11/A");
  assert_string_equal(f->calls[5].path, "/line/SO-7/calc-9/12/B");
  assert_int_equal(f->max_running, 2);
  /* Post-child actions in array order; Read B read Pre B's answer. */
  assert_string_equal(f->calls[6].path, "/post-a/calc-9");
  assert_string_equal(f->calls[7].path, "/post-c/Open/Open");
  static const char *const titles[] = {"Root",       "Read Root", "Pre B", "Read B",
                                       "ChildSaves", "Post A",    "Post C"};
  static const int steps[] = {1, 2, 3, 4, 0, 5, 6};
  assert_int_equal(json_array_size(tt_actions(f)), 7);
  for (size_t i = 0; i < DG_ARRAY_SIZE(titles); i++) {
    json_t *a = tt_action(f, i);
    const char *t = json_string_value(json_object_get(a, "title"));
    assert_string_equal(t ? t : tt_str(a, "type"), titles[i]);
    assert_int_equal(json_integer_value(json_object_get(a, "step")), steps[i]);
    assert_string_equal(tt_str(a, "status"), "succeeded");
  }
  assert_string_equal(tt_str(tt_action(f, 3), "phase"), "preChild");
  assert_string_equal(tt_str(tt_action(f, 5), "phase"), "postChild");
  /* One list item matched no record: a warning, nothing else. */
  assert_string_equal(
      json_string_value(json_array_get(json_object_get(tt_action(f, 1), "warnings"), 0)),
      "LineItemId: 1 of 3 items matched no OrderLines record");
  tt_free(f);
  dg_catalog_unref(cat);
}

static void test_filters_and_operations(void **state) {
  (void)state;
  dg_catalog_t *cat = tt_catalog(tree_endpoints);
  /* Quantity 3 is not > 9: Post A is skipped and the tree goes on. */
  tt_fake_t *f = run_tree(cat, NULL, "3");
  assert_true(f->succeeded);
  assert_int_equal(f->ncalls, 7);
  assert_string_equal(tt_str(tt_action(f, 5), "status"), "skipped");
  assert_string_equal(tt_str(tt_action(f, 5), "reason"),
                      "its filter does not hold for this record");
  assert_string_equal(f->calls[6].path, "/post-c/Open/Open");
  tt_free(f);
  dg_catalog_unref(cat);
  /* The sample's order edit runs only when an order is modified. */
  cat = tt_sample();
  f = run_rest(cat, true, "{\"OrderNumber\": \"SO-1002\"}");
  assert_true(f->succeeded);
  assert_int_equal(f->ncalls, 0);
  assert_int_equal(f->loads, 0);
  assert_string_equal(tt_str(tt_action(f, 0), "status"), "skipped");
  assert_string_equal(tt_str(tt_action(f, 0), "reason"),
                      "the action runs only when a record is modified");
  assert_string_equal(tt_str(tt_action(f, 2), "type"), "ChildSaves");
  assert_string_equal(tt_str(tt_action(f, 2), "status"), "skipped");
  assert_int_equal(json_array_size(f->changes), 0);
  tt_free(f);
  dg_catalog_unref(cat);
}

/* ---- Failures -------------------------------------------------------------------------------- */

static void expect_statuses(tt_fake_t *f, const char *const *want, size_t n) {
  assert_int_equal(json_array_size(tt_actions(f)), n);
  for (size_t i = 0; i < n; i++) {
    if (strcmp(tt_str(tt_action(f, i), "status"), want[i]) != 0)
      fail_msg("action %zu is %s, not %s", i, tt_str(tt_action(f, i), "status"), want[i]);
  }
}

static void test_failure_in_each_phase(void **state) {
  (void)state;
  dg_catalog_t *cat = tt_catalog(tree_endpoints);
  /* The root. */
  tt_fake_t *f = run_tree(cat, "/root/", "10");
  assert_false(f->succeeded);
  assert_int_equal(f->ncalls, 1);
  assert_string_equal(f->failed_action, "Root (/endpoints/0/save)");
  assert_string_equal(f->reason, "upstream 'SampleErp' POST /root/SO-7 answered 409");
  static const char *const root[] = {"failed",  "skipped", "skipped", "skipped",
                                     "skipped", "skipped", "skipped"};
  expect_statuses(f, root, 7);
  json_t *up = json_object_get(tt_action(f, 0), "upstream");
  assert_int_equal(json_integer_value(json_object_get(up, "status")), 409);
  assert_string_equal(tt_str(up, "excerpt"), "{\"error\": \"conflict: the order\\nis locked\"}");
  assert_string_equal(tt_str(tt_action(f, 1), "reason"), "an earlier action failed");
  tt_free(f);
  /* A pre-child action. */
  f = run_tree(cat, "/pre-b/", "10");
  assert_int_equal(f->ncalls, 2);
  assert_string_equal(f->failed_action, "Pre B (/endpoints/0/save/actions/2)");
  static const char *const pre[] = {"succeeded", "succeeded", "failed", "skipped",
                                    "skipped",   "skipped",   "skipped"};
  expect_statuses(f, pre, 7);
  tt_free(f);
  /* A child save: the one running beside it finishes, no other starts. */
  f = run_tree(cat, "/line/SO-7/calc-9/12/", "10");
  assert_int_equal(f->ncalls, 4);
  assert_string_equal(f->failed_action, "Line (/endpoints/1/save)");
  static const char *const child[] = {"succeeded", "succeeded", "succeeded", "succeeded",
                                      "failed",    "skipped",   "skipped"};
  expect_statuses(f, child, 7);
  json_t *saves = json_object_get(tt_action(f, 4), "saves");
  assert_int_equal(json_array_size(saves), 2);
  assert_int_equal(json_integer_value(json_object_get(tt_action(f, 4), "notStarted")), 2);
  tt_free(f);
  /* A post-child action. */
  f = run_tree(cat, "/post-c/", "10");
  assert_int_equal(f->ncalls, 8);
  assert_string_equal(f->failed_action, "Post C (/endpoints/0/save/actions/3)");
  static const char *const post[] = {"succeeded", "succeeded", "succeeded", "succeeded",
                                     "succeeded", "succeeded", "failed"};
  expect_statuses(f, post, 7);
  tt_free(f);
  dg_catalog_unref(cat);
}

static tt_answer_t answer_gql_errors(tt_fake_t *f, const tt_call_t *c) {
  return tt_reply(200, "{\"data\": null, \"errors\": [{\"message\": \"Order is locked\"}]}");
}

static void test_graphql_errors(void **state) {
  (void)state;
  dg_catalog_t *cat = tt_sample();
  tt_fake_t *f = tt_fake(answer_gql_errors);
  tt_run(f, cat, "OrderEditGraphql", ORDER, false, "{\"OrderNumber\": \"SO-1\"}");
  assert_false(f->succeeded);
  assert_string_equal(f->reason, "the GraphQL API answered errors: Order is locked");
  assert_string_equal(f->failed_action, "Begin Order Edit (/endpoints/2/save)");
  tt_free(f);
  dg_catalog_unref(cat);
}

static tt_answer_t answer_hang(tt_fake_t *f, const tt_call_t *c) {
  if (strncmp(c->path, "/pre-b/", 7) == 0)
    return (tt_answer_t){.hang = true};
  return answer_tree(f, c);
}

static void test_cancel(void **state) {
  (void)state;
  dg_catalog_t *cat = tt_catalog(tree_endpoints);
  tt_fake_t *f = tt_fake(answer_hang);
  tt_children(f, ORDER, "OrderLines", tree_lines);
  dg_save_run_t *run = tt_start_run(f, cat, "Tree", ORDER, false, "{\"OrderNumber\": \"SO-7\"}");
  while (f->ncalls < 2 && uv_run(&f->loop, UV_RUN_ONCE) != 0)
    ;
  dg_save_cancel(run);
  assert_false(f->done);
  tt_wait(f);
  assert_true(f->canceled);
  assert_false(f->succeeded);
  assert_string_equal(tt_str(f->result, "status"), "canceled");
  assert_string_equal(tt_str(tt_action(f, 2), "reason"),
                      "the save was canceled while the call ran");
  assert_string_equal(tt_str(tt_action(f, 3), "reason"), "the save was canceled");
  tt_free(f);
  dg_catalog_unref(cat);
}

static void test_too_many_children(void **state) {
  (void)state;
  char *text = strdup(tree_endpoints);
  char *at = strstr(text, "\"concurrency\": 2");
  memcpy(at, "\"maxChildren\": 3", 16);
  dg_catalog_t *cat = tt_catalog(text);
  free(text);
  tt_fake_t *f = run_tree(cat, NULL, "10");
  assert_false(f->succeeded);
  assert_int_equal(f->ncalls, 0);
  assert_string_equal(f->failed_action, "Child Saves (/endpoints/0/childConfigs/0)");
  assert_string_equal(f->reason, "the record has more OrderLines than its child configuration "
                                 "allows (maxChildren 3); nothing was sent");
  assert_string_equal(tt_str(tt_action(f, 0), "status"), "skipped");
  tt_free(f);
  dg_catalog_unref(cat);
}

/* ---- Values of this run only, answers that are not JSON ------------------------------------ */

static tt_answer_t answer_no_id(tt_fake_t *f, const tt_call_t *c) {
  if (strcmp(c->path, "/orders/SO-1002/edits/begin.json") == 0)
    return tt_reply(200, "{\"calculatedOrder\": {\"lineItems\": [{\"id\": \"cli-1\", \"sku\": "
                         "\"A-1\"}, {\"id\": \"cli-2\", \"sku\": \"B-2\"}, {\"id\": \"cli-3\", "
                         "\"sku\": \"C-3\"}]}}");
  return answer_rest(f, c);
}

/* The order and its lines hold what an earlier run stored; this run's
 * begin answer has no calculated order id: nothing more is sent. */
static void test_earlier_run_values_never_read(void **state) {
  (void)state;
  dg_catalog_t *cat = tt_sample();
  tt_fake_t *f = tt_fake(answer_no_id);
  tt_children(f, ORDER, "OrderLines",
              "[{\"id\": \"l-a\", \"values\": {\"SKU\": \"A-1\", \"Quantity\": 2, "
              "\"LineItemId\": \"cli-old\"}}]");
  tt_run(f, cat, "OrderEdit", ORDER, false,
         "{\"OrderNumber\": \"SO-1002\", \"CalculatedOrderId\": \"calc-old\"}");
  assert_false(f->succeeded);
  assert_int_equal(f->ncalls, 1);
  assert_string_equal(f->failed_action, "Set Line Quantity (/endpoints/1/save)");
  assert_string_equal(f->reason,
                      "CalculatedOrderId has no value in this run: the extraction at "
                      "/endpoints/0/save/actions/0/extractions/0 found nothing at "
                      "calculatedOrder.id (read as {SESSION:Order.CalculatedOrderId}); this "
                      "action sent nothing");
  /* The line got this run's value; the order's stale one is not written back. */
  assert_string_equal(tt_str(tt_changed(f, "l-a"), "LineItemId"), "cli-1");
  assert_null(json_object_get(tt_changed(f, ORDER), "CalculatedOrderId"));
  tt_free(f);
  dg_catalog_unref(cat);
}

static tt_answer_t answer_html(tt_fake_t *f, const tt_call_t *c) {
  const char *path = f->user;
  if (strcmp(c->path, path) == 0)
    return tt_reply(200, "<html>moved</html>");
  return answer_rest(f, c);
}

static void test_answer_not_json(void **state) {
  (void)state;
  dg_catalog_t *cat = tt_sample();
  static const char *const paths[] = {"/orders/SO-1002/edits/begin.json",
                                      "/orders/SO-1002/edits/calc-1/commit.json"};
  static const char *const failing[] = {"Begin Order Edit (/endpoints/0/save)",
                                        "Save Line Changes (/endpoints/0/save/actions/1)"};
  static const size_t calls[] = {1, 5};
  for (size_t i = 0; i < DG_ARRAY_SIZE(paths); i++) {
    tt_fake_t *f = tt_fake(answer_html);
    f->user = (void *)paths[i];
    tt_children(f, ORDER, "OrderLines", lines);
    tt_run(f, cat, "OrderEdit", ORDER, false, "{\"OrderNumber\": \"SO-1002\"}");
    assert_false(f->succeeded);
    assert_int_equal(f->ncalls, calls[i]);
    assert_string_equal(f->failed_action, failing[i]);
    assert_non_null(strstr(f->reason, "is not JSON: upstream 'SampleErp' POST "
                                      "http://127.0.0.1:8091/erp"));
    assert_non_null(strstr(f->reason, "answered 200 with Content-Type"));
    assert_non_null(strstr(f->reason, "and 18 bytes, starting '<html>moved</html>'"));
    tt_free(f);
  }
  dg_catalog_unref(cat);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_rest_order_edit),
      cmocka_unit_test(test_graphql_multiple_lists),
      cmocka_unit_test(test_unequal_lists),
      cmocka_unit_test(test_execution_order),
      cmocka_unit_test(test_filters_and_operations),
      cmocka_unit_test(test_failure_in_each_phase),
      cmocka_unit_test(test_graphql_errors),
      cmocka_unit_test(test_cancel),
      cmocka_unit_test(test_too_many_children),
      cmocka_unit_test(test_earlier_run_values_never_read),
      cmocka_unit_test(test_answer_not_json),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
