/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* SQL generation shared by the drivers. A statement is text plus the list
 * of values bound to its placeholders; identifiers come from the catalog
 * (letters, digits and _, checked at load) and are quoted, values are never
 * written into the text.
 *
 * Semantics written down here once (docs/query.md explains them):
 *   - a negative operator (NotEqualTo, NotStartsWith, NotEndsWith) is true
 *     exactly where its positive operator is not, nulls included;
 *   - other comparisons with a null are false;
 *   - an Outbound reference filter holds when the related entity exists
 *     and matches; an Inbound one when at least one related entity does
 *     (the parent's id is among the keys of the related entities that match);
 *   - the id breaks ties in every order, so pages never overlap. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store/internal.h"

const dg__sql_dialect_t dg__sql_sqlite = {
    .name = "sqlite",
    .numbered = false,
    .like = "LIKE",
    .instr = "instr",
    .as_date = {"date(", ")"},
    .as_datetime = {"strftime('%Y-%m-%dT%H:%M:%fZ', ", ")"},
    .nocase = " COLLATE NOCASE",
    .binary = "",
    .nulls_first = "",
    .nulls_last = "",
};

const dg__sql_dialect_t dg__sql_postgres = {
    .name = "postgres",
    .numbered = true,
    .like = "COLLATE \"C\" ILIKE",
    .instr = "strpos",
    .as_date = {"substr(", ", 1, 10)"},
    .as_datetime = {"to_char(CAST(", " AS timestamp), 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"},
    .nocase = "",
    .binary = " COLLATE \"C\"",
    .nulls_first = " NULLS FIRST",
    .nulls_last = " NULLS LAST",
};

/* ---- Text and binds ------------------------------------------------------------------- */

void dg__sql_init(dg__sql_t *sql, const dg__sql_dialect_t *dialect) {
  memset(sql, 0, sizeof(*sql));
  sql->dialect = dialect;
  dg_buf_init(&sql->text, DG__SQL_TEXT_MAX);
}

void dg__sql_free(dg__sql_t *sql) {
  dg_buf_free(&sql->text);
  free(sql->binds);
  for (size_t i = 0; i < sql->nowned; i++)
    free(sql->owned[i]);
  free(sql->owned);
  memset(sql, 0, sizeof(*sql));
}

void dg__sql_reset(dg__sql_t *sql) {
  const dg__sql_dialect_t *d = sql->dialect;
  dg__sql_free(sql);
  dg__sql_init(sql, d);
}

void dg__sql_put(dg__sql_t *sql, const char *text) {
  if (sql->rc == 0)
    sql->rc = dg_buf_append_str(&sql->text, text);
}

void dg__sql_putf(dg__sql_t *sql, const char *fmt, ...) {
  char tmp[1024];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= sizeof(tmp))
    sql->rc = sql->rc ? sql->rc : DG_E2BIG;
  dg__sql_put(sql, tmp);
}

/* alias."name" in one reservation: a statement names dozens of columns. */
void dg__sql_ident(dg__sql_t *sql, const char *alias, const char *name) {
  size_t alen = alias != NULL ? strlen(alias) : 0, nlen = strcspn(name, "\"");
  /* Catalog names never hold a quote; refuse rather than trust it. */
  if (name[nlen] != '\0' && sql->rc == 0)
    sql->rc = DG_EINVAL;
  if (sql->rc == 0)
    sql->rc = dg_buf_room(&sql->text, alen + nlen + 3);
  if (sql->rc != 0)
    return;
  char *w = sql->text.data + sql->text.len;
  if (alias != NULL) {
    memcpy(w, alias, alen);
    w += alen;
    *w++ = '.';
  }
  *w++ = '"';
  memcpy(w, name, nlen);
  w += nlen;
  *w++ = '"';
  *w = '\0';
  sql->text.len = (size_t)(w - sql->text.data);
}

static dg_store_value_t *bind_slot(dg__sql_t *sql) {
  if (sql->rc != 0)
    return NULL;
  if (sql->nbinds == sql->cap) {
    dg_store_value_t *b = dg_array_grow(sql->binds, &sql->cap, sizeof(*b), 16, DG__SQL_BINDS_MAX);
    if (b == NULL) {
      sql->rc = sql->cap * 2 <= DG__SQL_BINDS_MAX ? DG_ENOMEM : DG_E2BIG;
      return NULL;
    }
    sql->binds = b;
  }
  return &sql->binds[sql->nbinds++];
}

void dg__sql_bind(dg__sql_t *sql, const dg_store_value_t *value) {
  dg_store_value_t *slot = bind_slot(sql);
  if (slot == NULL)
    return;
  *slot = *value;
  if (!sql->dialect->numbered) {
    dg__sql_put(sql, "?");
    return;
  }
  /* "$n" by hand: a fetch binds one per id, and vsnprintf was most of
   * the statement's cost. */
  char tmp[24], *p = tmp + sizeof(tmp);
  *--p = '\0';
  for (size_t n = sql->nbinds; n > 0 || p == tmp + sizeof(tmp) - 1; n /= 10)
    *--p = (char)('0' + n % 10);
  *--p = '$';
  dg__sql_put(sql, p);
}

void dg__sql_bind_text(dg__sql_t *sql, const char *text) {
  dg_store_value_t v = {.kind = DG_STORE_TEXT, .text = text, .len = strlen(text)};
  dg__sql_bind(sql, &v);
}

void dg__sql_bind_int(dg__sql_t *sql, int64_t i) {
  dg_store_value_t v = {.kind = DG_STORE_INT, .i = i};
  dg__sql_bind(sql, &v);
}

/* Keeps a string the statement's binds point at until the statement is
 * freed. */
static const char *own(dg__sql_t *sql, char *s) {
  if (s == NULL || sql->rc != 0) {
    free(s);
    sql->rc = sql->rc ? sql->rc : DG_ENOMEM;
    return NULL;
  }
  char **owned = realloc(sql->owned, (sql->nowned + 1) * sizeof(*owned));
  if (owned == NULL) {
    free(s);
    sql->rc = DG_ENOMEM;
    return NULL;
  }
  sql->owned = owned;
  sql->owned[sql->nowned++] = s;
  return s;
}

/* ---- Columns ----------------------------------------------------------------------------- */

int dg__sql_entity_cols(const dg_store_select_t *select, const dg_store_expand_t *expand,
                        size_t nexpand, dg_arena_t *arena, dg__sql_cols_t *out) {
  out->n = 0;
  out->cols = dg_arena_calloc(arena, 1 + select->nprops + nexpand, sizeof(*out->cols));
  if (out->cols == NULL)
    return DG_ENOMEM;
  out->cols[out->n++] = (dg__sql_col_t){.prop = NULL, .emit = true};
  for (size_t i = 0; i < select->nprops; i++)
    out->cols[out->n++] = (dg__sql_col_t){
        .prop = select->props[i], .emit = true, .key_len = strlen(select->props[i]->json_name)};
  for (size_t i = 0; i < nexpand; i++) {
    const dg_property_t *ref = expand[i].reference;
    if (!dg__store_is_inbound(ref) && dg__sql_col_of(out, ref) < 0)
      out->cols[out->n++] = (dg__sql_col_t){.prop = ref, .emit = false};
  }
  return 0;
}

int dg__sql_col_of(const dg__sql_cols_t *cols, const dg_property_t *prop) {
  for (size_t i = 0; i < cols->n; i++) {
    if (cols->cols[i].prop == prop)
      return (int)i;
  }
  return -1;
}

static void column(dg__sql_t *sql, const char *alias, const dg_property_t *prop) {
  if (prop == NULL)
    dg__sql_putf(sql, "%s.id", alias);
  else
    dg__sql_ident(sql, alias, prop->name);
}

void dg__sql_column_list(dg__sql_t *sql, const char *alias, const dg__sql_cols_t *cols) {
  for (size_t i = 0; i < cols->n; i++) {
    dg__sql_put(sql, i ? ", " : "");
    column(sql, alias, cols->cols[i].prop);
  }
}

/* ---- Predicates ----------------------------------------------------------------------------- */

static bool negative(dg_store_op_t op) {
  return op == DG_STORE_OP_NE || op == DG_STORE_OP_NOT_STARTS || op == DG_STORE_OP_NOT_ENDS;
}

static bool textual(dg_store_op_t op) {
  return op >= DG_STORE_OP_CONTAINS;
}

static const char *symbol(dg_store_op_t op) {
  static const char *const symbols[] = {"=", "=", ">", ">=", "<", "<="};
  return op < DG_STORE_OP_CONTAINS ? symbols[op] : "=";
}

/* The LIKE pattern of a string operator: the value with \, % and _
 * escaped, then wildcards where the operator wants them. */
static const char *like_pattern(dg__sql_t *sql, const dg_store_value_t *v, dg_store_op_t op) {
  char *p = malloc(v->len * 2 + 3);
  size_t n = 0;
  if (p == NULL)
    return own(sql, NULL);
  bool lead = op == DG_STORE_OP_CONTAINS || op == DG_STORE_OP_ENDS || op == DG_STORE_OP_NOT_ENDS;
  bool trail =
      op == DG_STORE_OP_CONTAINS || op == DG_STORE_OP_STARTS || op == DG_STORE_OP_NOT_STARTS;
  if (lead)
    p[n++] = '%';
  for (size_t i = 0; i < v->len; i++) {
    if (v->text[i] == '\\' || v->text[i] == '%' || v->text[i] == '_')
      p[n++] = '\\';
    p[n++] = v->text[i];
  }
  if (trail)
    p[n++] = '%';
  p[n] = '\0';
  return own(sql, p);
}

static void compare_value(dg__sql_t *sql, dg_store_op_t op, const char *a,
                          const dg_store_value_t *v) {
  dg__sql_put(sql, a);
  if (!textual(op)) {
    dg__sql_putf(sql, " %s ", symbol(op));
    dg__sql_bind(sql, v);
    return;
  }
  const char *pattern = like_pattern(sql, v, op);
  dg__sql_putf(sql, " %s ", sql->dialect->like);
  if (pattern != NULL)
    dg__sql_bind_text(sql, pattern);
  dg__sql_put(sql, " ESCAPE '\\'");
}

/* A column reference as text, for the expressions that name it twice. */
void dg__sql_column_text(dg__sql_t *sql, char *out, size_t size, const char *alias,
                         const dg_property_t *prop) {
  int n = prop == NULL ? snprintf(out, size, "%s.id", alias)
                       : snprintf(out, size, "%s.\"%s\"", alias, prop->name);
  /* Catalog names never hold a quote and fit; refuse rather than trust it. */
  bool bad = n < 0 || (size_t)n >= size || (prop != NULL && strchr(prop->name, '"') != NULL);
  if (bad && sql->rc == 0)
    sql->rc = DG_EINVAL;
}

/* Expression against expression: the string operators fold case with
 * lower() on both sides, as LIKE does for a value, compared in the binary
 * collation (PostgreSQL cannot search substrings in a nondeterministic
 * one). */
static void compare_columns(dg__sql_t *sql, dg_store_op_t op, const char *a, const char *b) {
  const char *c = sql->dialect->binary;
  if (op == DG_STORE_OP_CONTAINS)
    dg__sql_putf(sql, "%s(lower(%s)%s, lower(%s)%s) > 0", sql->dialect->instr, a, c, b, c);
  else if (op == DG_STORE_OP_STARTS || op == DG_STORE_OP_NOT_STARTS)
    dg__sql_putf(sql, "substr(lower(%s)%s, 1, length(%s)) = lower(%s)%s", a, c, b, b, c);
  else if (op == DG_STORE_OP_ENDS || op == DG_STORE_OP_NOT_ENDS)
    dg__sql_putf(sql,
                 "(length(%s) >= length(%s) AND substr(lower(%s)%s, length(%s) - length(%s) + 1) "
                 "= lower(%s)%s)",
                 a, b, a, c, a, b, b, c);
  else
    dg__sql_putf(sql, "%s %s %s", a, symbol(op), b);
}

void dg__sql_compare(dg__sql_t *sql, dg_store_op_t op, const char *a, const char *b,
                     const dg_store_value_t *value) {
  if (b == NULL && value->kind == DG_STORE_NULL) {
    dg__sql_put(sql, a);
    dg__sql_put(sql, op == DG_STORE_OP_NE ? " IS NOT NULL" : " IS NULL");
    return;
  }
  bool neg = negative(op);
  dg__sql_put(sql, neg ? "NOT COALESCE(" : "");
  if (b != NULL)
    compare_columns(sql, op, a, b);
  else
    compare_value(sql, op, a, value);
  dg__sql_put(sql, neg ? ", FALSE)" : "");
}

static void predicate(dg__sql_t *sql, const char *alias, const dg_store_filter_t *f) {
  char a[160], b[160];
  dg__sql_column_text(sql, a, sizeof(a), alias, f->prop);
  dg__sql_column_text(sql, b, sizeof(b), alias, f->other);
  dg__sql_compare(sql, f->op, a, f->compare_property ? b : NULL, &f->value);
}

static void filter(dg__sql_t *sql, const dg_store_filter_t *f) {
  char alias[32];
  if (f->reference == NULL) {
    predicate(sql, "t0", f);
    return;
  }
  if (!dg__store_is_inbound(f->reference)) {
    snprintf(alias, sizeof(alias), "r%zu", f->reference->index);
    dg__sql_putf(sql, "(%s.id IS NOT NULL AND ", alias);
    predicate(sql, alias, f);
    dg__sql_put(sql, ")");
    return;
  }
  /* Any related entity matches: the ids its key points at. An IN list
   * rather than a correlated EXISTS, so that a selective predicate on the
   * related entities drives the query instead of a scan of every parent. */
  const dg_reference_t *ref = f->reference->reference;
  snprintf(alias, sizeof(alias), "c%u", ++sql->alias);
  dg__sql_put(sql, "t0.id IN (SELECT ");
  dg__sql_ident(sql, alias, ref->inverse_property);
  dg__sql_put(sql, " FROM ");
  dg__sql_ident(sql, NULL, ref->target->name);
  dg__sql_putf(sql, " AS %s WHERE ", alias);
  dg__sql_ident(sql, alias, ref->inverse_property);
  dg__sql_put(sql, " IS NOT NULL AND ");
  predicate(sql, alias, f);
  dg__sql_put(sql, ")");
}

/* ---- FROM and WHERE -----------------------------------------------------------------------------
 */

static bool joined_before(const dg_store_filters_t *fs, size_t g, size_t i) {
  const dg_property_t *ref = fs->groups[g].filters[i].reference;
  for (size_t gg = 0; gg <= g; gg++) {
    size_t end = gg == g ? i : fs->groups[gg].nfilters;
    for (size_t j = 0; j < end; j++) {
      if (fs->groups[gg].filters[j].reference == ref)
        return true;
    }
  }
  return false;
}

/* One LEFT JOIN per Outbound reference that a filter follows. */
static void joins(dg__sql_t *sql, const dg_store_filters_t *fs) {
  for (size_t g = 0; g < fs->ngroups; g++) {
    for (size_t i = 0; i < fs->groups[g].nfilters; i++) {
      const dg_property_t *ref = fs->groups[g].filters[i].reference;
      if (ref == NULL || dg__store_is_inbound(ref) || joined_before(fs, g, i))
        continue;
      dg__sql_put(sql, " LEFT JOIN ");
      dg__sql_ident(sql, NULL, ref->reference->target->name);
      dg__sql_putf(sql, " AS r%zu ON r%zu.id = ", ref->index, ref->index);
      dg__sql_ident(sql, "t0", ref->name);
    }
  }
}

static void where(dg__sql_t *sql, const dg_store_filters_t *fs) {
  bool first = true;
  for (size_t g = 0; g < fs->ngroups; g++) {
    const dg_store_group_t *grp = &fs->groups[g];
    if (grp->nfilters == 0)
      continue;
    dg__sql_put(sql, first ? " WHERE (" : " AND (");
    first = false;
    for (size_t i = 0; i < grp->nfilters; i++) {
      dg__sql_put(sql, i == 0 ? "" : grp->any ? " OR " : " AND ");
      filter(sql, &grp->filters[i]);
    }
    dg__sql_put(sql, ")");
  }
}

void dg__sql_from(dg__sql_t *sql, const dg_model_t *model, const dg_store_filters_t *f) {
  dg__sql_put(sql, " FROM ");
  dg__sql_ident(sql, NULL, model->name);
  dg__sql_put(sql, " AS t0");
  joins(sql, f);
}

void dg__sql_where(dg__sql_t *sql, const dg_store_filters_t *f) {
  where(sql, f);
}

void dg__sql_from_where(dg__sql_t *sql, const dg_model_t *model, const dg_store_filters_t *f) {
  dg__sql_from(sql, model, f);
  where(sql, f);
}

/* ---- Statements -------------------------------------------------------------------------------
 */

static void order_by(dg__sql_t *sql, const dg_store_query_t *q) {
  const char *dir = q->has_sort && q->sort.descending ? " DESC" : " ASC";
  dg__sql_put(sql, " ORDER BY ");
  if (q->has_sort && q->sort.prop != NULL) {
    column(sql, "t0", q->sort.prop);
    dg__sql_put(sql, dir);
    dg__sql_put(sql, q->sort.descending ? sql->dialect->nulls_last : sql->dialect->nulls_first);
    dg__sql_put(sql, ", ");
  }
  dg__sql_put(sql, "t0.id");
  dg__sql_put(sql, dir);
}

void dg__sql_page(dg__sql_t *sql, const dg_store_query_t *q, const dg__sql_cols_t *cols) {
  dg__sql_put(sql, "SELECT ");
  dg__sql_column_list(sql, "t0", cols);
  dg__sql_from_where(sql, q->model, &q->filters);
  order_by(sql, q);
  dg__sql_put(sql, " LIMIT ");
  dg__sql_bind_int(sql, q->page_size + 1);
  dg__sql_put(sql, " OFFSET ");
  dg__sql_bind_int(sql, (q->page_number - 1) * q->page_size);
}

void dg__sql_count(dg__sql_t *sql, const dg_store_query_t *q) {
  dg__sql_put(sql, "SELECT count(*)");
  dg__sql_from_where(sql, q->model, &q->filters);
}

static void in_list(dg__sql_t *sql, const char *const *keys, size_t n) {
  dg__sql_put(sql, " IN (");
  for (size_t i = 0; i < n; i++) {
    dg__sql_put(sql, i ? ", " : "");
    dg__sql_bind_text(sql, keys[i]);
  }
  dg__sql_put(sql, ")");
}

void dg__sql_by_ids(dg__sql_t *sql, const dg_model_t *model, const dg__sql_cols_t *cols,
                    const char *const *ids, size_t nids) {
  dg__sql_put(sql, "SELECT ");
  dg__sql_column_list(sql, "t0", cols);
  dg__sql_put(sql, " FROM ");
  dg__sql_ident(sql, NULL, model->name);
  dg__sql_put(sql, " AS t0 WHERE t0.id");
  in_list(sql, ids, nids);
}

void dg__sql_expand_many(dg__sql_t *sql, const dg_store_expand_t *e, const dg__sql_cols_t *cols,
                         const char *const *keys, size_t nkeys, int64_t cap) {
  const char *inverse = e->reference->reference->inverse_property;
  dg__sql_put(sql, "SELECT * FROM (SELECT ");
  dg__sql_ident(sql, "t0", inverse);
  dg__sql_put(sql, " AS _k, ");
  dg__sql_column_list(sql, "t0", cols);
  dg__sql_put(sql, ", row_number() OVER (PARTITION BY ");
  dg__sql_ident(sql, "t0", inverse);
  dg__sql_put(sql, " ORDER BY t0.id) AS _rn FROM ");
  dg__sql_ident(sql, NULL, e->target->name);
  dg__sql_put(sql, " AS t0 WHERE ");
  dg__sql_ident(sql, "t0", inverse);
  in_list(sql, keys, nkeys);
  dg__sql_put(sql, ") AS x WHERE _rn <= ");
  dg__sql_bind_int(sql, cap + 1);
  dg__sql_put(sql, " ORDER BY _k, _rn");
}

static void write_insert(dg__sql_t *sql, const dg_store_write_t *w, const char *id) {
  dg__sql_put(sql, "INSERT INTO ");
  dg__sql_ident(sql, NULL, w->model->name);
  dg__sql_put(sql, " (id");
  for (size_t i = 0; i < w->nvalues; i++) {
    dg__sql_put(sql, ", ");
    dg__sql_ident(sql, NULL, w->props[i]->name);
  }
  dg__sql_put(sql, ") VALUES (");
  dg__sql_bind_text(sql, id);
  for (size_t i = 0; i < w->nvalues; i++) {
    dg__sql_put(sql, ", ");
    dg__sql_bind(sql, &w->values[i]);
  }
  dg__sql_put(sql, ")");
}

static void write_upsert(dg__sql_t *sql, const dg_store_write_t *w, const char *id) {
  write_insert(sql, w, id);
  dg__sql_put(sql, " ON CONFLICT (id) DO ");
  dg__sql_put(sql, w->nvalues == 0 ? "NOTHING" : "UPDATE SET ");
  for (size_t i = 0; i < w->nvalues; i++) {
    dg__sql_put(sql, i ? ", " : "");
    dg__sql_ident(sql, NULL, w->props[i]->name);
    dg__sql_put(sql, " = ");
    dg__sql_ident(sql, "excluded", w->props[i]->name);
  }
}

static void write_update(dg__sql_t *sql, const dg_store_write_t *w, const char *id) {
  dg__sql_put(sql, "UPDATE ");
  dg__sql_ident(sql, NULL, w->model->name);
  dg__sql_put(sql, " SET ");
  if (w->nvalues == 0)
    dg__sql_put(sql, "id = id");
  for (size_t i = 0; i < w->nvalues; i++) {
    dg__sql_put(sql, i ? ", " : "");
    dg__sql_ident(sql, NULL, w->props[i]->name);
    dg__sql_put(sql, " = ");
    dg__sql_bind(sql, &w->values[i]);
  }
  dg__sql_put(sql, " WHERE id = ");
  dg__sql_bind_text(sql, id);
}

void dg__sql_write(dg__sql_t *sql, const dg_store_write_t *w, const char *id) {
  if (w->mode == DG_STORE_UPDATE)
    write_update(sql, w, id);
  else if (w->mode == DG_STORE_UPSERT)
    write_upsert(sql, w, id);
  else
    write_insert(sql, w, id);
}

void dg__sql_create_index(dg__sql_t *sql, const char *name, const dg_model_t *m,
                          const dg_property_t *p) {
  dg__sql_put(sql, "CREATE INDEX IF NOT EXISTS ");
  dg__sql_ident(sql, NULL, name);
  dg__sql_put(sql, " ON ");
  dg__sql_ident(sql, NULL, m->name);
  dg__sql_put(sql, " (");
  dg__sql_ident(sql, NULL, p->name);
  dg__sql_put(sql, sql->dialect->nulls_first);
  dg__sql_put(sql, ", id)");
}
