/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Fuzzes the endpoints.json parser: the input is the file's text, parsed
 * against a fixed set of models and connectors (loaded once). A rejected
 * file must name every problem as "endpoints.json: /json/path: message";
 * an accepted one must be laid out soundly: steps in execution order
 * (root, pre-child, post-child) with first_post between them, every
 * Get Session Values action reading an earlier save action, every child
 * configuration naming an endpoint of the list's model, and the tree must
 * explain itself without trouble. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "catalog/internal.h"
#include "fuzz_catalog.h"

static const char models[] =
    "{\"models\": ["
    "{\"id\": \"8a03cbc2-7f01-4d47-bdf0-0755336a3a70\", \"name\": \"Orders\", \"entityType\": "
    "\"Order\", \"properties\": [{\"name\": \"OrderNumber\", \"dataType\": \"String\"}, "
    "{\"name\": \"Status\", \"dataType\": \"String\"}, {\"name\": \"Amount\", \"dataType\": "
    "\"Decimal\"}, {\"name\": \"Quantity\", \"dataType\": \"Int\"}, {\"name\": "
    "\"CalculatedOrderId\", \"dataType\": \"String\"}, {\"name\": \"OrderLines\", \"dataType\": "
    "\"Reference\", \"reference\": {\"direction\": \"Inbound\", \"cardinality\": \"OneToMany\", "
    "\"target\": \"OrderLines\", \"inverseProperty\": \"Order\"}}]},"
    "{\"id\": \"e405b7c6-358c-4a55-a021-0999f4a91a40\", \"name\": \"OrderLines\", \"entityType\": "
    "\"OrderLine\", \"properties\": [{\"name\": \"Order\", \"dataType\": \"Reference\", "
    "\"reference\": {\"direction\": \"Outbound\", \"target\": \"Orders\"}}, {\"name\": \"SKU\", "
    "\"dataType\": \"String\"}, {\"name\": \"Quantity\", \"dataType\": \"Int\"}, {\"name\": "
    "\"UnitPrice\", \"dataType\": \"Decimal\"}, {\"name\": \"LineItemId\", \"dataType\": "
    "\"String\"}, {\"name\": \"CalculatedLineItemId\", \"dataType\": \"String\"}]},"
    "{\"id\": \"9b1c2d3e-0000-4000-8000-000000000001\", \"name\": \"Nodes\", \"entityType\": "
    "\"Node\", \"properties\": [{\"name\": \"Name\", \"dataType\": \"String\"}, {\"name\": "
    "\"Parent\", \"dataType\": \"Reference\", \"reference\": {\"direction\": \"Outbound\", "
    "\"target\": \"Nodes\"}}, {\"name\": \"Kids\", \"dataType\": \"Reference\", \"reference\": "
    "{\"direction\": \"Inbound\", \"cardinality\": \"OneToMany\", \"target\": \"Nodes\", "
    "\"inverseProperty\": \"Parent\"}}]}]}";

static const char connectors[] =
    "{\"connectors\": [{\"id\": \"f61634e3-acc5-41f2-90ae-29bde3e788ab\", \"name\": "
    "\"SampleErp\", \"baseUrl\": \"http://api.example.com/erp\"}]}";

static dg_catalog_t *base;
static FILE *sink;

static void load(void) {
  static const fuzz_file_t files[] = {
      {"datagate.json", "{}"}, {"models.json", models}, {"connectors.json", connectors}};
  base = fuzz_catalog_load(files, DG_ARRAY_SIZE(files));
  sink = fopen("/dev/null", "w");
  if (sink == NULL)
    abort();
}

static void check_steps(const dg_endpoint_t *e) {
  if (e->nsteps == 0 || e->steps[0] != e->root || e->first_post > e->nsteps || e->first_post == 0)
    abort();
  for (size_t i = 0; i < e->nsteps; i++) {
    const dg_action_t *a = e->steps[i];
    dg_action_phase_t want = i == 0              ? DG_PHASE_ROOT
                             : i < e->first_post ? DG_PHASE_PRE_CHILD
                                                 : DG_PHASE_POST_CHILD;
    if (a->step != i || a->phase != want)
      abort();
    if (a->type == DG_ACTION_GET_SESSION_VALUES &&
        (a->source == NULL || a->source->step >= i || a->nextractions == 0))
      abort();
  }
}

static void check_endpoint(const dg_catalog_t *cat, const dg_endpoint_t *e) {
  check_steps(e);
  for (size_t i = 0; i < e->nchildren; i++) {
    const dg_child_config_t *c = &e->children[i];
    if (c->endpoint == NULL || c->list == NULL || c->endpoint->model != c->list->reference->target)
      abort();
    if (c->concurrency < 1 || c->endpoint < cat->endpoints ||
        c->endpoint >= cat->endpoints + cat->nendpoints)
      abort();
  }
  if (dg_catalog_explain_endpoint(cat, e->name, sink) != 0)
    abort();
}

static void check_errors(const dg_config_errors_t *errors) {
  for (size_t i = 0; i < errors->count; i++) {
    if (strncmp(errors->lines[i], "endpoints.json: /", 17) != 0)
      abort();
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (base == NULL)
    load();
  json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
  if (root == NULL)
    return 0;
  dg_catalog_t cat = *base;
  cat.endpoints = NULL;
  cat.nendpoints = 0;
  dg_config_errors_t errors = {0};
  dg_arena_t *arena = dg_arena_new(16384);
  dg__cfg_t cfg = {
      .arena = arena, .errors = &errors, .file = "endpoints.json", .dir = base->dir, .cat = &cat};
  dg__catalog_parse_endpoints(&cfg, root);
  json_decref(root);
  if (cfg.nerrors > 0 && errors.count == 0 && !cfg.oom)
    abort();
  check_errors(&errors);
  for (size_t i = 0; cfg.nerrors == 0 && !cfg.oom && i < cat.nendpoints; i++)
    check_endpoint(&cat, &cat.endpoints[i]);
  dg_config_errors_free(&errors);
  dg_arena_destroy(arena);
  return 0;
}
