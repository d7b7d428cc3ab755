/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* lookup_by_keyword's arguments: the words to search for and the models to
 * search, which are those the caller may read, narrowed by entityType and
 * entitySubType, that have keyword properties the caller may see. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "store/internal.h"

#define LIST_MAX 640

/* Letters and digits (and any non-ASCII character) make words; everything
 * else separates them, as the keyword index's tokenizer does. */
static bool word_byte(unsigned char c) {
  return isalnum(c) || c >= 0x80;
}

static int split_terms(const dg_store_parse_t *ps, const char *text, dg_store_lookup_t *out) {
  const char **terms = dg_arena_calloc(ps->arena, DG_STORE_SEARCH_TERMS_MAX + 1, sizeof(*terms));
  if (terms == NULL)
    return dg__store_oom(ps, "searchValue");
  for (const char *s = text; *s != '\0';) {
    size_t skip = 0, len = 0;
    while (s[skip] != '\0' && !word_byte((unsigned char)s[skip]))
      skip++;
    while (s[skip + len] != '\0' && word_byte((unsigned char)s[skip + len]))
      len++;
    if (len > 0 && out->nterms == DG_STORE_SEARCH_TERMS_MAX)
      return dg__store_invalid(ps->err, "searchValue",
                               "has more than %d words; allowed: at most %d words.",
                               DG_STORE_SEARCH_TERMS_MAX, DG_STORE_SEARCH_TERMS_MAX);
    if (len > 0) {
      terms[out->nterms] = dg_arena_strndup(ps->arena, s + skip, len);
      if (terms[out->nterms++] == NULL)
        return dg__store_oom(ps, "searchValue");
    }
    s += skip + len;
  }
  out->terms = terms;
  return 0;
}

static int parse_search(const dg_store_parse_t *ps, const json_t *v, dg_store_lookup_t *out) {
  size_t len = json_string_length(v);
  if (!json_is_string(v) || len < 1 || len > DG_STORE_SEARCH_MAX ||
      strlen(json_string_value(v)) != len) {
    char shown[160];
    dg__store_show(shown, sizeof(shown), v);
    return dg__store_invalid(ps->err, "searchValue",
                             "got %s; allowed: a keyword of 1 to %d characters, such as part of "
                             "a name or number.",
                             shown, DG_STORE_SEARCH_MAX);
  }
  int rc = split_terms(ps, json_string_value(v), out);
  if (rc == 0 && out->nterms == 0)
    return dg__store_invalid(ps->err, "searchValue",
                             "got \"%.64s\", which has no letters or digits to search for.",
                             json_string_value(v));
  return rc;
}

static const char *optional_name(const dg_store_parse_t *ps, const json_t *args, const char *key,
                                 int *rc) {
  const json_t *v = json_object_get(args, key);
  if (v == NULL || json_is_null(v))
    return NULL;
  if (json_is_string(v) && json_string_length(v) <= 128)
    return json_string_value(v);
  char shown[160];
  dg__store_show(shown, sizeof(shown), v);
  *rc = dg__store_invalid(ps->err, key, "got %s; allowed: a name from get_data_models.", shown);
  return NULL;
}

static int parse_limit(const dg_store_parse_t *ps, const json_t *v, int64_t *out) {
  *out = DG_STORE_LOOKUP_LIMIT_DEFAULT;
  if (v == NULL || json_is_null(v))
    return 0;
  if (json_is_integer(v) && json_integer_value(v) >= 1 &&
      json_integer_value(v) <= DG_STORE_LOOKUP_LIMIT_MAX) {
    *out = json_integer_value(v);
    return 0;
  }
  char shown[160];
  dg__store_show(shown, sizeof(shown), v);
  return dg__store_invalid(ps->err, "limit",
                           "got %s; allowed: a whole number from 1 to %d "
                           "(default %d).",
                           shown, DG_STORE_LOOKUP_LIMIT_MAX, DG_STORE_LOOKUP_LIMIT_DEFAULT);
}

/* ---- Models to search --------------------------------------------------------------------- */

static bool same(const char *a, const char *b) {
  return a != NULL && b != NULL && strcasecmp(a, b) == 0;
}

static bool type_matches(const dg_model_t *m, const char *type, const char *sub) {
  return (type == NULL || same(m->entity_type, type)) &&
         (sub == NULL || same(m->entity_sub_type, sub));
}

/* The name a listing of types or of sub-types shows for a model. */
static const char *type_name(const dg_model_t *m, bool subs) {
  return subs ? m->entity_sub_type : m->entity_type;
}

/* The distinct entity types, or with subs the sub-types (of type, when not
 * NULL), of readable models. */
static void list_types(const dg_store_parse_t *ps, const char *type, bool subs, char *out,
                       size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < ps->cat->nmodels; i++) {
    const dg_model_t *m = &ps->cat->models[i];
    const char *name = type_name(m, subs);
    bool dup = false;
    for (size_t j = 0; j < i && !dup; j++) {
      const dg_model_t *o = &ps->cat->models[j];
      dup = dg_auth_can_read_model(ps->principal, o) && type_matches(o, type, NULL) &&
            same(type_name(o, subs), name);
    }
    if (name == NULL || dup || !dg_auth_can_read_model(ps->principal, m) ||
        !type_matches(m, type, NULL) || len >= size - 1)
      continue;
    int n = snprintf(out + len, size - len, "%s%s", len ? ", " : "", name);
    len = n > 0 && (size_t)n < size - len ? len + (size_t)n : size - 1;
  }
  if (out[0] == '\0')
    snprintf(out, size, "(none)");
}

static int add_model(const dg_store_parse_t *ps, const dg_model_t *m, dg_store_lookup_t *out) {
  dg_store_lookup_model_t *lm = &out->models[out->nmodels];
  lm->keywords = dg_arena_calloc(ps->arena, m->nproperties + 1, sizeof(*lm->keywords));
  if (lm->keywords == NULL)
    return dg__store_oom(ps, "searchValue");
  for (size_t i = 0; i < m->nproperties; i++) {
    const dg_property_t *prop = &m->properties[i];
    if (prop->keyword && dg_auth_can_see_property(ps->principal, m, prop))
      lm->keywords[lm->nkeywords++] = prop;
  }
  if (lm->nkeywords == 0)
    return 0;
  lm->model = m;
  out->nmodels++;
  return dg_store_parse_select(ps, m, NULL, "searchValue", &lm->select);
}

static int choose_models(const dg_store_parse_t *ps, const char *type, const char *sub,
                         dg_store_lookup_t *out) {
  size_t matched = 0;
  int rc = 0;
  out->models = dg_arena_calloc(ps->arena, ps->cat->nmodels + 1, sizeof(*out->models));
  if (out->models == NULL)
    return dg__store_oom(ps, "searchValue");
  for (size_t i = 0; rc == 0 && i < ps->cat->nmodels; i++) {
    const dg_model_t *m = &ps->cat->models[i];
    if (!dg_auth_can_read_model(ps->principal, m) || !type_matches(m, type, sub))
      continue;
    matched++;
    rc = add_model(ps, m, out);
  }
  char list[LIST_MAX];
  if (rc == 0 && matched == 0 && type != NULL && sub == NULL) {
    list_types(ps, NULL, false, list, sizeof(list));
    return dg__store_invalid(ps->err, "entityType",
                             "no Data Model you can read has entityType '%.64s'; allowed: %s.",
                             type, list);
  }
  if (rc == 0 && matched == 0 && sub != NULL) {
    list_types(ps, type, true, list, sizeof(list));
    return dg__store_invalid(ps->err, "entitySubType",
                             "no Data Model you can read has entitySubType '%.64s'%s%.64s; "
                             "allowed: %s.",
                             sub, type ? " with entityType " : "", type ? type : "", list);
  }
  if (rc == 0 && out->nmodels == 0 && type != NULL)
    return dg__store_invalid(ps->err, "entityType",
                             "entities of type '%.64s' have no keyword properties that you can "
                             "search; use query_entities with a filter instead.",
                             type);
  return rc;
}

int dg_store_parse_lookup(const dg_store_parse_t *ps, const json_t *args, dg_store_lookup_t *out) {
  memset(out, 0, sizeof(*out));
  int rc = parse_search(ps, json_object_get(args, "searchValue"), out);
  const char *type = rc == 0 ? optional_name(ps, args, "entityType", &rc) : NULL;
  const char *sub = rc == 0 ? optional_name(ps, args, "entitySubType", &rc) : NULL;
  if (rc == 0)
    rc = parse_limit(ps, json_object_get(args, "limit"), &out->limit);
  if (rc == 0)
    rc = choose_models(ps, type, sub, out);
  return rc;
}
