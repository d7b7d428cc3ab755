/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* models.json: Data Models, their properties and references. Each model
 * is parsed on its own first; references are resolved once every model is
 * known, because a reference may point at a model defined later. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "catalog/internal.h"

_Static_assert(sizeof(dg_data_type_t) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(dg_ref_direction_t) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(dg_cardinality_t) == sizeof(int), "enums are stored as int");

/* A reference as written: the resolved dg_reference_t comes first so that a
 * property can point at it before the target model is known. */
typedef struct ref_raw {
  dg_reference_t ref;
  const char *target;
} ref_raw_t;

/* Property names that entity results use for their own keys. */
static const char *const reserved_names[] = {"id", "expanded", "expandedTruncated"};

static const char *const type_names[] = {
#define XX(name, text) text,
    DG_DATA_TYPE_MAP(XX)
#undef XX
        NULL,
};
static const char *const direction_names[] = {"Outbound", "Inbound", NULL};
static const char *const cardinality_names[] = {"OneToOne", "OneToMany", NULL};
static const char *const control_names[] = {"text",   "multiline", "number", "date",
                                            "toggle", "choice",    "lookup", NULL};

const char *dg_data_type_name(dg_data_type_t type) {
  if ((unsigned)type >= DG_TYPE__COUNT)
    return "Unknown";
  return type_names[type];
}

bool dg_data_type_parse(const char *name, dg_data_type_t *out) {
  for (int i = 0; name != NULL && i < DG_TYPE__COUNT; i++) {
    if (strcmp(name, type_names[i]) == 0) {
      *out = (dg_data_type_t)i;
      return true;
    }
  }
  return false;
}

bool dg_data_type_is_numeric(dg_data_type_t type) {
  return type == DG_TYPE_INT || type == DG_TYPE_LONG || type == DG_TYPE_DOUBLE ||
         type == DG_TYPE_DECIMAL;
}

/* ---- Field validators ------------------------------------------------------ */

static void check_guid(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  if (!dg_uuid_valid(json_string_value(v)))
    dg__cfg_error(cfg, path, "'%s' is not a GUID (8-4-4-4-12 hexadecimal digits)",
                  json_string_value(v));
}

/* Names become SQL identifiers and result keys: keep them plain. */
static void check_identifier(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  const char *s = json_string_value(v);
  bool ok = isalpha((unsigned char)s[0]);
  for (const char *c = s; ok && *c != '\0'; c++)
    ok = isalnum((unsigned char)*c) || *c == '_';
  if (!ok)
    dg__cfg_error(cfg, path, "'%s' is not a valid name (a letter, then letters, digits or _)", s);
}

static void check_choices(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  const dg_property_t *p = obj;
  if (p->nchoices == 0)
    dg__cfg_error(cfg, path, "must list at least one choice");
  for (size_t i = 0; i < p->nchoices; i++) {
    for (size_t j = 0; j < i; j++) {
      if (p->choices[i] && p->choices[j] && strcmp(p->choices[i], p->choices[j]) == 0) {
        char at[DG__CFG_PATH_MAX];
        dg__cfg_path_index(at, path, i);
        dg__cfg_error(cfg, at, "duplicate choice '%s'", p->choices[i]);
      }
    }
  }
}

/* ---- Tables -------------------------------------------------------------------- */

#define F(field) offsetof(dg_form_settings_t, field)
static const dg__cfg_field_t form_fields[] = {
    {"label", DG__CFG_STRING, false, NULL, 0, 1, 256, NULL, F(label), 0, NULL},
    {"control", DG__CFG_STRING, false, NULL, 0, 1, 32, NULL, F(control), 0, NULL},
    {"defaultValue", DG__CFG_STRING, false, NULL, 0, 0, 4096, NULL, F(default_value), 0, NULL},
    {"sequence", DG__CFG_INT, false, NULL, 0, 0, 100000, NULL, F(sequence), 0, NULL},
    {"group", DG__CFG_STRING, false, NULL, 0, 1, 256, NULL, F(group), 0, NULL},
    {"hidden", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, F(hidden), 0, NULL},
};
#undef F

#define R(field) offsetof(ref_raw_t, field)
static const dg__cfg_field_t reference_fields[] = {
    {"direction", DG__CFG_ENUM, true, NULL, 0, 0, 0, direction_names, R(ref.direction), 0, NULL},
    {"cardinality", DG__CFG_ENUM, false, NULL, 0, 0, 0, cardinality_names, R(ref.cardinality), 0,
     NULL},
    {"target", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, R(target), 0, NULL},
    {"targetEntityType", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, R(ref.target_entity_type), 0,
     NULL},
    {"targetEntitySubType", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL,
     R(ref.target_entity_sub_type), 0, NULL},
    {"inverseProperty", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, R(ref.inverse_property), 0,
     NULL},
    {"derived", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, R(ref.derived), 0, NULL},
};
#undef R

static void parse_form(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_property_t *p = obj;
  dg__cfg_parse_object(cfg, v, path, form_fields, DG_ARRAY_SIZE(form_fields), &p->form);
  if (v == NULL)
    return;
  const json_t *control = json_object_get(v, "control");
  for (size_t i = 0; p->form.control != NULL && control_names[i] != NULL; i++) {
    if (strcmp(p->form.control, control_names[i]) == 0)
      return;
  }
  if (p->form.control != NULL) {
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_key(at, path, "control");
    dg__cfg_error(cfg, at, "unknown control '%s' (allowed: %s)", json_string_value(control),
                  dg__cfg_join(cfg, control_names, DG_ARRAY_SIZE(control_names) - 1));
  }
}

static void parse_reference(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_property_t *p = obj;
  p->reference = NULL;
  if (v == NULL)
    return;
  ref_raw_t *raw = dg_arena_calloc(cfg->arena, 1, sizeof(*raw));
  if (raw == NULL) {
    cfg->oom = true;
    return;
  }
  dg__cfg_parse_object(cfg, v, path, reference_fields, DG_ARRAY_SIZE(reference_fields), raw);
  p->reference = &raw->ref;
}

#define P(field) offsetof(dg_property_t, field)
static const dg__cfg_field_t property_fields[] = {
    {"name", DG__CFG_STRING, true, NULL, 0, 1, 64, NULL, P(name), 0, check_identifier},
    {"dataType", DG__CFG_ENUM, true, NULL, 0, 0, 0, type_names, P(type), 0, NULL},
    {"description", DG__CFG_STRING, false, "", 0, 0, 4096, NULL, P(description), 0, NULL},
    {"required", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, P(required), 0, NULL},
    {"readOnly", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, P(read_only), 0, NULL},
    {"keyword", DG__CFG_BOOL, false, NULL, 0, 0, 0, NULL, P(keyword), 0, NULL},
    {"sortable", DG__CFG_BOOL, false, NULL, 1, 0, 0, NULL, P(sortable), 0, NULL},
    {"filterable", DG__CFG_BOOL, false, NULL, 1, 0, 0, NULL, P(filterable), 0, NULL},
    {"choices", DG__CFG_STRINGS, false, NULL, 0, 0, 0, NULL, P(choices), P(nchoices),
     check_choices},
    {"form", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, parse_form},
    {"reference", DG__CFG_CUSTOM, false, NULL, 0, 0, 0, NULL, 0, 0, parse_reference},
};
#undef P

/* ---- One property ------------------------------------------------------------- */

static const char *default_control(const dg_property_t *p) {
  if (p->nchoices > 0)
    return "choice";
  if (dg_data_type_is_numeric(p->type))
    return "number";
  switch (p->type) {
  case DG_TYPE_DATE:
  case DG_TYPE_DATETIME:
    return "date";
  case DG_TYPE_BOOLEAN:
    return "toggle";
  case DG_TYPE_REFERENCE:
    return "lookup";
  default:
    return "text";
  }
}

static void check_default_value(dg__cfg_t *cfg, const dg_property_t *p, const char *path) {
  if (p->form.default_value == NULL || p->nchoices == 0)
    return;
  for (size_t i = 0; i < p->nchoices; i++) {
    if (p->choices[i] && strcmp(p->choices[i], p->form.default_value) == 0)
      return;
  }
  char at[DG__CFG_PATH_MAX];
  dg__cfg_path_key(at, path, "form");
  dg__cfg_path_key(at, at, "defaultValue");
  dg__cfg_error(cfg, at, "'%s' is not one of the choices (%s)", p->form.default_value,
                dg__cfg_join(cfg, p->choices, p->nchoices));
}

/* Checks that depend on the data type: only Reference properties carry a
 * reference, only String properties carry choices or are keywords. */
static void check_property_kind(dg__cfg_t *cfg, const dg_property_t *p, const char *path) {
  const char *type = dg_data_type_name(p->type);
  char at[DG__CFG_PATH_MAX];
  if (p->type == DG_TYPE_REFERENCE && p->reference == NULL)
    dg__cfg_error(cfg, path, "a property of dataType Reference needs a 'reference' object");
  if (p->type != DG_TYPE_REFERENCE && p->reference != NULL) {
    dg__cfg_path_key(at, path, "reference");
    dg__cfg_error(cfg, at, "only Reference properties have a reference (dataType is %s)", type);
  }
  if (p->type != DG_TYPE_STRING && p->choices != NULL) {
    dg__cfg_path_key(at, path, "choices");
    dg__cfg_error(cfg, at, "choices are allowed only on String properties (dataType is %s)", type);
  }
  if (p->type != DG_TYPE_STRING && p->keyword) {
    dg__cfg_path_key(at, path, "keyword");
    dg__cfg_error(cfg, at, "only String properties can be keywords (dataType is %s)", type);
  }
}

static void finish_property(dg__cfg_t *cfg, dg_property_t *p, size_t index, const char *path) {
  p->index = index;
  if (p->name == NULL)
    p->name = "";
  p->json_name = dg_camel_first(cfg->arena, p->name);
  if (p->form.label == NULL)
    p->form.label = p->name;
  if (p->form.control == NULL)
    p->form.control = default_control(p);
  if (p->form.sequence == 0)
    p->form.sequence = (int)(index + 1) * 10;
  for (size_t i = 0; i < DG_ARRAY_SIZE(reserved_names); i++) {
    if (strcasecmp(p->name, reserved_names[i]) == 0) {
      char at[DG__CFG_PATH_MAX];
      dg__cfg_path_key(at, path, "name");
      dg__cfg_error(cfg, at, "'%s' is reserved for entity results", p->name);
    }
  }
  check_property_kind(cfg, p, path);
  check_default_value(cfg, p, path);
}

/* ---- One model ------------------------------------------------------------------ */

static void check_unique_properties(dg__cfg_t *cfg, const dg_model_t *m, const char *path) {
  for (size_t i = 0; i < m->nproperties; i++) {
    for (size_t j = 0; j < i; j++) {
      if (strcasecmp(m->properties[i].name, m->properties[j].name) != 0)
        continue;
      char at[DG__CFG_PATH_MAX];
      dg__cfg_path_index(at, path, i);
      dg__cfg_path_key(at, at, "name");
      dg__cfg_error(cfg, at, "duplicate property name '%s' (same as %s/%zu, ignoring case)",
                    m->properties[i].name, path, j);
      break;
    }
  }
}

static void parse_properties(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_model_t *m = obj;
  m->properties = NULL;
  m->nproperties = 0;
  if (v == NULL)
    return;
  if (!json_is_array(v) || json_array_size(v) == 0) {
    dg__cfg_error(cfg, path, "must be a non-empty array of properties");
    return;
  }
  size_t n = json_array_size(v);
  dg_property_t *props = dg_arena_calloc(cfg->arena, n, sizeof(*props));
  if (props == NULL) {
    cfg->oom = true;
    return;
  }
  for (size_t i = 0; i < n; i++) {
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_index(at, path, i);
    dg__cfg_parse_object(cfg, json_array_get(v, i), at, property_fields,
                         DG_ARRAY_SIZE(property_fields), &props[i]);
    finish_property(cfg, &props[i], i, at);
  }
  m->properties = props;
  m->nproperties = n;
  check_unique_properties(cfg, m, path);
}

#define M(field) offsetof(dg_model_t, field)
static const dg__cfg_field_t model_fields[] = {
    {"id", DG__CFG_STRING, true, NULL, 0, 1, 64, NULL, M(id), 0, check_guid},
    {"name", DG__CFG_STRING, true, NULL, 0, 1, 64, NULL, M(name), 0, check_identifier},
    {"description", DG__CFG_STRING, false, "", 0, 0, 4096, NULL, M(description), 0, NULL},
    {"entityType", DG__CFG_STRING, true, NULL, 0, 1, 128, NULL, M(entity_type), 0, NULL},
    {"entitySubType", DG__CFG_STRING, false, NULL, 0, 1, 128, NULL, M(entity_sub_type), 0, NULL},
    {"properties", DG__CFG_CUSTOM, true, NULL, 0, 0, 0, NULL, 0, 0, parse_properties},
};
#undef M

/* ---- References, once every model is known -------------------------------------- */

const char *dg__catalog_model_names(dg__cfg_t *cfg) {
  const dg_catalog_t *cat = cfg->cat;
  const char **names = dg_arena_calloc(cfg->arena, cat->nmodels + 1, sizeof(*names));
  if (names == NULL)
    return "";
  for (size_t i = 0; i < cat->nmodels; i++)
    names[i] = cat->models[i].name ? cat->models[i].name : "?";
  return dg__cfg_join(cfg, names, cat->nmodels);
}

/* Fills the target and its entity type from the configured target name, or
 * checks that a target without a Data Model names its entity type. */
static void resolve_target(dg__cfg_t *cfg, ref_raw_t *raw, const char *path) {
  char at[DG__CFG_PATH_MAX];
  if (raw->target == NULL) {
    if (raw->ref.target_entity_type == NULL)
      dg__cfg_error(cfg, path, "a reference needs 'target' (a Data Model) or 'targetEntityType'");
    return;
  }
  dg__cfg_path_key(at, path, "target");
  const dg_model_t *t = dg__catalog_find_model(cfg->cat, raw->target);
  if (t == NULL) {
    dg__cfg_error(cfg, at, "unknown model '%s' (known: %s)", raw->target,
                  dg__catalog_model_names(cfg));
    return;
  }
  raw->ref.target = t;
  if (raw->ref.target_entity_type != NULL && t->entity_type != NULL &&
      strcmp(raw->ref.target_entity_type, t->entity_type) != 0)
    dg__cfg_error(cfg, path, "targetEntityType '%s' differs from model '%s' (entityType '%s')",
                  raw->ref.target_entity_type, t->name, t->entity_type);
  raw->ref.target_entity_type = t->entity_type;
  raw->ref.target_entity_sub_type = t->entity_sub_type;
}

/* Cardinality and derived default from the direction; when written they
 * must agree with it. */
static void check_direction(dg__cfg_t *cfg, ref_raw_t *raw, const json_t *json, const char *path) {
  bool inbound = raw->ref.direction == DG_REF_INBOUND;
  dg_cardinality_t want = inbound ? DG_CARD_ONE_TO_MANY : DG_CARD_ONE_TO_ONE;
  char at[DG__CFG_PATH_MAX];
  if (json_object_get(json, "cardinality") != NULL && raw->ref.cardinality != want) {
    dg__cfg_path_key(at, path, "cardinality");
    dg__cfg_error(cfg, at, "an %s reference is %s, not %s", inbound ? "Inbound" : "Outbound",
                  cardinality_names[want], cardinality_names[raw->ref.cardinality]);
  }
  if (json_object_get(json, "derived") != NULL && raw->ref.derived != inbound) {
    dg__cfg_path_key(at, path, "derived");
    dg__cfg_error(cfg, at, "derived must be %s for an %s reference", inbound ? "true" : "false",
                  inbound ? "Inbound" : "Outbound");
  }
  raw->ref.cardinality = want;
  raw->ref.derived = inbound;
  if (!inbound && raw->ref.inverse_property != NULL) {
    dg__cfg_path_key(at, path, "inverseProperty");
    dg__cfg_error(cfg, at, "only Inbound references name an inverse property");
  }
}

/* An Inbound reference is the reverse view of an Outbound reference on the
 * target model that points back at this model. */
static void check_inverse(dg__cfg_t *cfg, const dg_model_t *m, ref_raw_t *raw, const char *path) {
  char at[DG__CFG_PATH_MAX];
  if (raw->ref.target == NULL) {
    if (raw->target == NULL)
      dg__cfg_error(cfg, path, "an Inbound reference needs a 'target' Data Model");
    return;
  }
  if (raw->ref.inverse_property == NULL) {
    dg__cfg_error(cfg, path, "an Inbound reference needs 'inverseProperty'");
    return;
  }
  dg__cfg_path_key(at, path, "inverseProperty");
  const dg_model_t *t = raw->ref.target;
  const dg_property_t *inv = dg_model_property(t, raw->ref.inverse_property);
  if (inv == NULL) {
    dg__cfg_error(cfg, at, "model '%s' has no property '%s'", t->name, raw->ref.inverse_property);
    return;
  }
  const dg_reference_t *r = inv->reference;
  if (r == NULL || r->direction != DG_REF_OUTBOUND) {
    dg__cfg_error(cfg, at, "'%s.%s' is not an Outbound reference", t->name, inv->name);
    return;
  }
  /* An unknown target there is reported where it is written: saying
   * here that it does not point back would only repeat it, and first. */
  const char *back = ((const ref_raw_t *)r)->target;
  if (back != NULL && r->target == NULL)
    return;
  /* So is a model whose name an earlier model has: the duplicate is the
   * cause, and references to the name find the first. */
  if (r->target != m && r->target != NULL && strcasecmp(r->target->name, m->name) == 0)
    return;
  if (back == NULL || dg__catalog_find_model(cfg->cat, back) != m)
    dg__cfg_error(cfg, at, "'%s.%s' does not point back at model '%s'", t->name, inv->name,
                  m->name);
  raw->ref.inverse_property = inv->name;
}

/* Pass 1 resolves every target, pass 2 checks the Inbound references
 * against them: an unknown target is reported before what follows from it. */
static void resolve_model_references(dg__cfg_t *cfg, const dg_model_t *m, const json_t *mjson,
                                     const char *path, int pass) {
  const json_t *props = json_object_get(mjson, "properties");
  for (size_t i = 0; i < m->nproperties; i++) {
    const dg_property_t *p = &m->properties[i];
    if (p->reference == NULL || p->type != DG_TYPE_REFERENCE)
      continue;
    char at[DG__CFG_PATH_MAX];
    dg__cfg_path_key(at, path, "properties");
    dg__cfg_path_index(at, at, i);
    const json_t *rjson = json_object_get(json_array_get(props, i), "reference");
    dg__cfg_path_key(at, at, "reference");
    ref_raw_t *raw = (ref_raw_t *)p->reference;
    if (pass == 1) {
      resolve_target(cfg, raw, at);
      check_direction(cfg, raw, rjson, at);
    } else if (raw->ref.direction == DG_REF_INBOUND) {
      check_inverse(cfg, m, raw, at);
      if (p->required)
        dg__cfg_error(cfg, at, "an Inbound reference cannot be required");
    }
  }
}

/* ---- The file ------------------------------------------------------------------- */

static void check_unique_models(dg__cfg_t *cfg, const dg_catalog_t *cat) {
  for (size_t i = 0; i < cat->nmodels; i++) {
    const dg_model_t *a = &cat->models[i];
    for (size_t j = 0; j < i; j++) {
      const dg_model_t *b = &cat->models[j];
      dg__cfg_check_unique(cfg, "models", "id", "model", i, j, a->id, b->id);
      dg__cfg_check_unique(cfg, "models", "name", "model", i, j, a->name, b->name);
    }
  }
}

static void parse_model(dg__cfg_t *cfg, const json_t *item, void *list, size_t i, const char *at,
                        const void *data) {
  dg_model_t *m = (dg_model_t *)list + i;
  dg__cfg_parse_object(cfg, item, at, model_fields, DG_ARRAY_SIZE(model_fields), m);
  m->index = i;
  /* Later checks print these; a failed field must not leave NULL. */
  if (m->name == NULL)
    m->name = "";
  if (m->entity_type == NULL)
    m->entity_type = "";
}

static void parse_model_list(dg__cfg_t *cfg, const json_t *v, void *obj, const char *path) {
  dg_catalog_t *cat = obj;
  cat->models = dg__cfg_list(cfg, v, path, "Data Models", sizeof(dg_model_t), &cat->nmodels,
                             parse_model, NULL);
}

static const dg__cfg_field_t models_file_fields[] = {
    {"models", DG__CFG_CUSTOM, true, NULL, 0, 0, 0, NULL, 0, 0, parse_model_list},
};

void dg__catalog_parse_models(dg__cfg_t *cfg, const json_t *root) {
  dg__cfg_parse_object(cfg, root, "", models_file_fields, DG_ARRAY_SIZE(models_file_fields),
                       cfg->cat);
  check_unique_models(cfg, cfg->cat);
  const json_t *list = json_object_get(root, "models");
  for (int pass = 1; pass <= 2; pass++) {
    for (size_t i = 0; i < cfg->cat->nmodels; i++) {
      char at[DG__CFG_PATH_MAX];
      dg__cfg_path_index(at, "/models", i);
      resolve_model_references(cfg, &cfg->cat->models[i], json_array_get(list, i), at, pass);
    }
  }
}
