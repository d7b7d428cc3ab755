/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* forms: the data entry forms of get_data_entry_form and
 * submit_data_entry_form, below the tools that adapt them. Which
 * properties of a model are form fields for a principal, checking
 * submitted [{key, value}] items and a record's line changes (childLists)
 * against them, and the Adaptive Card a form is shown as. Reads the
 * catalog, auth's rules and the store's value types; calls nothing. */
#ifndef DATAGATE_FORMS_H
#define DATAGATE_FORMS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "datagate/auth.h"
#include "datagate/base.h"
#include "datagate/catalog.h"
#include "datagate/store.h"

/* ---- Fields (fields.c) ------------------------------------------------------------ */

/* A field of a model's form for p: a stored property p may see that is
 * not read-only (a hidden one too: hidden only keeps it off the form). */
bool dg_forms_field(const dg_principal_t *p, const dg_model_t *m, const dg_property_t *prop);
/* "A, B, C": the names of the form fields, cut to fit. */
void dg_forms_field_names(const dg_principal_t *p, const dg_model_t *m, char *out, size_t size);
/* The text of a stored value ("12.5", "true", "2024-03-01"); NULL for null. */
const char *dg_forms_text(const json_t *v, char *buf, size_t size);

/* One checked {key, value} item. */
typedef struct dg_forms_value {
  const dg_property_t *prop;
  dg_store_value_t value; /* DG_STORE_NULL when cleared */
  json_t *json;           /* the value as given (null when cleared) */
  size_t index;           /* position in the argument */
  const char *param;      /* "formValues[2].value" */
} dg_forms_value_t;

/* Checks [{key, value}] items (already shaped by the schema) against m's
 * form fields for p: unknown, read-only and Inbound keys, keys given twice
 * and values that are not of the field's type are refused, with err
 * naming the item, what was given and what is allowed; "" clears a field
 * that is not a String. The list and values live in arena. */
int dg_forms_values(const dg_principal_t *p, const dg_model_t *m, const json_t *items,
                    const char *param, dg_arena_t *arena, dg_forms_value_t **out, size_t *n,
                    dg_errctx_t *err);

/* Completes the values of a new m record for p: a required or defaulted
 * field that is not given gets its form default; err (param) names the
 * required fields left without a value. except (may be NULL) is set by
 * the caller and counts as given. *vals has room for one more value per
 * property; the defaults live in arena. */
int dg_forms_defaults(const dg_principal_t *p, const dg_model_t *m, const dg_property_t *except,
                      dg_forms_value_t *vals, size_t *n, const char *param, dg_arena_t *arena,
                      dg_errctx_t *err);

/* ---- Lines of child lists (lines.c) ----------------------------------------------- */

/* Whether prop of m is a list of lines p may edit with an m record: an
 * Inbound reference p may see, to a model p may read, that the form
 * endpoint ep (NULL: none, so no list) saves through a child
 * configuration (*config). */
bool dg_forms_line_list(const dg_principal_t *p, const dg_model_t *m, const dg_endpoint_t *ep,
                        const dg_property_t *prop, const dg_child_config_t **config);
/* "A, B": the names of those lists, or "none", cut to fit. */
void dg_forms_line_list_names(const dg_principal_t *p, const dg_model_t *m, const dg_endpoint_t *ep,
                              char *out, size_t size);

/* One list of submit_data_entry_form's childLists, checked. */
typedef struct dg_forms_line_list {
  const dg_property_t *list;         /* the Inbound reference of the submitted model */
  const dg_model_t *model;           /* the lines' model */
  const dg_property_t *parent;       /* the lines' reference to the submitted record */
  const dg_child_config_t *config;   /* the form endpoint's, or NULL */
  size_t index;                      /* in childLists */
  json_t *added, *updated, *removed; /* line ids, lower case (kept by the arena) */
  json_t *ops;                       /* line id -> "add", "update" or "remove" */
  json_t *removed_records;           /* [{id, values}] of the removed lines, read before */
} dg_forms_line_list_t;

typedef struct dg_forms_lines {
  dg_forms_line_list_t *lists;
  size_t nlists;
  dg_store_child_change_t *changes; /* in argument order */
  size_t nchanges;
  dg_store_ref_check_t *refs; /* references the lines' values name */
  size_t nrefs, maxrefs;
} dg_forms_lines_t;

typedef struct dg_forms_lines_req {
  const dg_principal_t *principal;
  const dg_model_t *model;
  const dg_endpoint_t *endpoint; /* the model's form endpoint, or NULL */
  const char *parent_id;         /* the record's id, lower case (chosen already for a new one) */
  bool create;                   /* the record is created: lines may only be added */
  const json_t *lists;           /* childLists, shaped by the schema */
} dg_forms_lines_req_t;

/* Checks childLists as a whole into *out (in arena): every list a line
 * list of the form for p with write access to its model, every change's
 * op, id and values; an added line gets a new id and the reference to the
 * record. err names the parameter path, what was given and what is
 * allowed; nothing is written. */
int dg_forms_check_lines(const dg_forms_lines_req_t *req, dg_arena_t *arena, dg_forms_lines_t *out,
                         dg_errctx_t *err);
/* [{list, added, updated, removed}] for the answer; NULL out of memory. */
json_t *dg_forms_lines_json(const dg_forms_lines_t *lines);

/* Every stored property of m (Inbound references hold no value). */
int dg_forms_stored_select(const dg_model_t *m, dg_arena_t *arena, dg_store_select_t *out);
/* A copy of s in lower case (GUIDs), in arena. */
char *dg_forms_lower(dg_arena_t *arena, const char *s);

/* ---- The card (card.c) ------------------------------------------------------------- */

/* get_data_entry_form's fields ({key, label, type, control, required,
 * group, value, choices?, lookup?}) as an Adaptive Card 1.5, with a
 * repeated group per line of each child list ([{list, fields, lines:
 * [{id, formValues}]}]; may be NULL) */
json_t *dg_forms_card(const dg_model_t *m, const json_t *fields, const char *id,
                      const json_t *child_lists);

#endif
