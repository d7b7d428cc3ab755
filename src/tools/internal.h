/* tools internals: the result-building logic of each tool, kept apart from
 * the dg_tool_t run functions so that unit tests can call it without the
 * MCP layer. Never included from outside src/tools. */
#ifndef DATAGATE_TOOLS_INTERNAL_H
#define DATAGATE_TOOLS_INTERNAL_H

#include <jansson.h>

#include "datagate/auth.h"
#include "datagate/catalog.h"

/* The model with the given id that p may read, or NULL with err saying
 * "Invalid argument '<param>': no Data Model with id '<given>'; ...". A
 * model p may not read is reported exactly like an unknown one. */
const dg_model_t *dg__tools_find_model(const dg_catalog_t *cat, const dg_principal_t *p,
                                       const char *param, const char *given, dg_errctx_t *err);

/* get_data_models: {"dataModels": [...]} with the models p may read.
 * NULL when out of memory. */
json_t *dg__tools_data_models_json(const dg_catalog_t *cat, const dg_principal_t *p);

/* get_data_model_properties: the model and the properties p may see.
 * NULL when out of memory. */
json_t *dg__tools_model_properties_json(const dg_model_t *model, const dg_principal_t *p);

/* The seed's reference object of a Reference property, as p sees it
 * (expandable false when p cannot read the target). */
json_t *dg__tools_reference_json(const dg_reference_t *ref, const dg_principal_t *p);

#endif
