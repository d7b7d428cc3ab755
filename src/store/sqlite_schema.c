/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The SQLite schema, created and migrated from the catalog at start-up in
 * one transaction:
 *   - a STRICT table per Data Model: "_seq" INTEGER PRIMARY KEY (a rowid
 *     that VACUUM keeps, for the keyword index), id TEXT UNIQUE, and a
 *     typed column per stored property (String columns compare without
 *     regard to ASCII case); a property added to the configuration adds a
 *     column;
 *   - an index (column, id) per property that is sortable or filterable and
 *     per Outbound reference, so that sorted pages and filters use it;
 *     indexes for properties no longer flagged are dropped;
 *   - an FTS5 index "_fts_<Model>" over the keyword properties, kept in
 *     step by triggers, rebuilt when the keyword properties change;
 *   - "_dg_meta" for what the migration must remember.
 * A column whose type changed in the configuration keeps its old type; a
 * warning says so (SQLite cannot change a column's type in place). */
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "store/sqlite_internal.h"

#define META_VALUE_MAX 4096

static const char *base_type(const dg_property_t *p) {
  switch (p->type) {
  case DG_TYPE_INT:
  case DG_TYPE_LONG:
  case DG_TYPE_BOOLEAN:
    return "INTEGER";
  case DG_TYPE_DOUBLE:
  case DG_TYPE_DECIMAL:
    return "REAL";
  default:
    return "TEXT";
  }
}

/* Runs the DDL built in sql, then clears it for the next statement. */
static int run_ddl(dg__sqlite_conn_t *conn, dg__sql_t *sql, dg_errctx_t *err) {
  int rc = sql->rc != 0 ? dg_errctx_set(err, sql->rc, "", "schema statement too large")
                        : dg__sqlite_exec(conn, sql->text.data, err);
  dg__sql_reset(sql);
  return rc;
}

/* ---- _dg_meta --------------------------------------------------------------------------- */

static int meta_get(dg__sqlite_conn_t *conn, const char *key, char *out, size_t size, bool *found,
                    dg_errctx_t *err) {
  dg__sql_t sql;
  sqlite3_stmt *st = NULL;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_put(&sql, "SELECT value FROM \"_dg_meta\" WHERE key = ");
  dg__sql_bind_text(&sql, key);
  int rc = dg__sqlite_prepare(conn, &sql, &st, err);
  int step = rc == 0 ? dg__sqlite_step(conn, st, err) : rc;
  *found = step == SQLITE_ROW;
  if (*found)
    dg_strlcpy(out, (const char *)sqlite3_column_text(st, 0), size);
  if (st != NULL)
    dg__sqlite_release(st);
  dg__sql_free(&sql);
  return step == SQLITE_ROW || step == SQLITE_DONE ? 0 : step;
}

static int meta_set(dg__sqlite_conn_t *conn, const char *key, const char *value, dg_errctx_t *err) {
  dg__sql_t sql;
  sqlite3_stmt *st = NULL;
  dg__sql_init(&sql, &dg__sql_sqlite);
  if (value != NULL) {
    dg__sql_put(&sql, "INSERT INTO \"_dg_meta\" (key, value) VALUES (");
    dg__sql_bind_text(&sql, key);
    dg__sql_put(&sql, ", ");
    dg__sql_bind_text(&sql, value);
    dg__sql_put(&sql, ") ON CONFLICT (key) DO UPDATE SET value = excluded.value");
  } else {
    dg__sql_put(&sql, "DELETE FROM \"_dg_meta\" WHERE key = ");
    dg__sql_bind_text(&sql, key);
  }
  int rc = dg__sqlite_prepare(conn, &sql, &st, err);
  int step = rc == 0 ? dg__sqlite_step(conn, st, err) : rc;
  if (st != NULL)
    dg__sqlite_release(st);
  dg__sql_free(&sql);
  return step == SQLITE_DONE ? 0 : step;
}

/* ---- Tables and columns ------------------------------------------------------------------- */

static void column_def(dg__sql_t *sql, const dg_property_t *p) {
  dg__sql_ident(sql, NULL, p->name);
  dg__sql_putf(sql, " %s%s", base_type(p), p->type == DG_TYPE_STRING ? " COLLATE NOCASE" : "");
}

static int create_table(dg__sqlite_conn_t *conn, dg__sql_t *sql, const dg_model_t *m,
                        dg_errctx_t *err) {
  dg__sql_put(sql, "CREATE TABLE ");
  dg__sql_ident(sql, NULL, m->name);
  dg__sql_put(sql, " (\"_seq\" INTEGER PRIMARY KEY, id TEXT NOT NULL UNIQUE");
  for (size_t i = 0; i < m->nproperties; i++) {
    if (!dg__store_is_stored(&m->properties[i]))
      continue;
    dg__sql_put(sql, ", ");
    column_def(sql, &m->properties[i]);
  }
  dg__sql_put(sql, ") STRICT");
  return run_ddl(conn, sql, err);
}

/* Column names (lower case) and their declared types, of an existing table. */
static int table_columns(dg__sqlite_conn_t *conn, const dg_model_t *m, json_t *cols,
                         dg_errctx_t *err) {
  dg__sql_t sql;
  sqlite3_stmt *st = NULL;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_put(&sql, "SELECT lower(name), upper(type) FROM pragma_table_info(");
  dg__sql_bind_text(&sql, m->name);
  dg__sql_put(&sql, ")");
  int rc = dg__sqlite_prepare(conn, &sql, &st, err);
  int step = rc == 0 ? dg__sqlite_step(conn, st, err) : rc;
  for (; step == SQLITE_ROW; step = dg__sqlite_step(conn, st, err))
    json_object_set_new(cols, (const char *)sqlite3_column_text(st, 0),
                        json_string((const char *)sqlite3_column_text(st, 1)));
  if (st != NULL)
    dg__sqlite_release(st);
  dg__sql_free(&sql);
  return step == SQLITE_DONE ? 0 : step;
}

static void note_type_change(json_t *notes, const dg_model_t *m, const dg_property_t *p,
                             const char *have) {
  json_array_append_new(notes,
                        json_pack("{s:s,s:s,s:s,s:s,s:s}", "model", m->name, "property", p->name,
                                  "column_type", have, "wanted", base_type(p), "msg",
                                  "the column keeps its old type; values are converted "
                                  "as SQLite does"));
}

static int add_columns(dg__sqlite_conn_t *conn, dg__sql_t *sql, const dg_model_t *m, json_t *notes,
                       dg_errctx_t *err) {
  json_t *cols = json_object();
  int rc = cols != NULL ? table_columns(conn, m, cols, err) : DG_ENOMEM;
  for (size_t i = 0; rc == 0 && i < m->nproperties; i++) {
    const dg_property_t *p = &m->properties[i];
    char lower[128];
    size_t n = 0;
    for (; p->name[n] != '\0' && n < sizeof(lower) - 1; n++)
      lower[n] = (char)(p->name[n] >= 'A' && p->name[n] <= 'Z' ? p->name[n] + 32 : p->name[n]);
    lower[n] = '\0';
    const char *have = json_string_value(json_object_get(cols, lower));
    if (!dg__store_is_stored(p) || (have != NULL && strcmp(have, base_type(p)) == 0))
      continue;
    if (have != NULL) {
      note_type_change(notes, m, p, have);
      continue;
    }
    dg__sql_put(sql, "ALTER TABLE ");
    dg__sql_ident(sql, NULL, m->name);
    dg__sql_put(sql, " ADD COLUMN ");
    column_def(sql, p);
    rc = run_ddl(conn, sql, err);
  }
  json_decref(cols);
  return rc;
}

static int table_exists(dg__sqlite_conn_t *conn, const char *name, bool *exists, dg_errctx_t *err) {
  dg__sql_t sql;
  sqlite3_stmt *st = NULL;
  dg__sql_init(&sql, &dg__sql_sqlite);
  dg__sql_put(&sql, "SELECT 1 FROM sqlite_schema WHERE type = 'table' AND name = ");
  dg__sql_bind_text(&sql, name);
  dg__sql_put(&sql, " COLLATE NOCASE");
  int rc = dg__sqlite_prepare(conn, &sql, &st, err);
  int step = rc == 0 ? dg__sqlite_step(conn, st, err) : rc;
  *exists = step == SQLITE_ROW;
  if (st != NULL)
    dg__sqlite_release(st);
  dg__sql_free(&sql);
  return step == SQLITE_ROW || step == SQLITE_DONE ? 0 : step;
}

/* ---- Indexes -------------------------------------------------------------------------------- */

static void index_name(char *out, size_t size, const dg_model_t *m, const dg_property_t *p) {
  snprintf(out, size, "_ix_%s_%s", m->name, p->name);
}

static bool index_wanted(const dg_model_t *m, const char *name) {
  char want[300];
  for (size_t i = 0; i < m->nproperties; i++) {
    index_name(want, sizeof(want), m, &m->properties[i]);
    if (dg__store_wants_index(&m->properties[i]) && strcasecmp(want, name) == 0)
      return true;
  }
  return false;
}

static int drop_stale_indexes(dg__sqlite_conn_t *conn, dg__sql_t *sql, const dg_model_t *m,
                              dg_errctx_t *err) {
  json_t *names = json_array();
  sqlite3_stmt *st = NULL;
  dg__sql_put(sql, "SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = ");
  dg__sql_bind_text(sql, m->name);
  dg__sql_put(sql, " COLLATE NOCASE AND name LIKE '\\_ix\\_%' ESCAPE '\\'");
  int rc = names != NULL ? dg__sqlite_prepare(conn, sql, &st, err) : DG_ENOMEM;
  int step = rc == 0 ? dg__sqlite_step(conn, st, err) : rc;
  for (; step == SQLITE_ROW; step = dg__sqlite_step(conn, st, err))
    json_array_append_new(names, json_string((const char *)sqlite3_column_text(st, 0)));
  if (st != NULL)
    dg__sqlite_release(st);
  dg__sql_reset(sql);
  rc = step == SQLITE_DONE ? 0 : step;
  for (size_t i = 0; rc == 0 && i < json_array_size(names); i++) {
    const char *name = json_string_value(json_array_get(names, i));
    if (index_wanted(m, name))
      continue;
    dg__sql_put(sql, "DROP INDEX ");
    dg__sql_ident(sql, NULL, name);
    rc = run_ddl(conn, sql, err);
  }
  json_decref(names);
  return rc;
}

static int create_indexes(dg__sqlite_conn_t *conn, dg__sql_t *sql, const dg_model_t *m,
                          dg_errctx_t *err) {
  char name[300];
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < m->nproperties; i++) {
    const dg_property_t *p = &m->properties[i];
    if (!dg__store_wants_index(p))
      continue;
    index_name(name, sizeof(name), m, p);
    dg__sql_create_index(sql, name, m, p);
    rc = run_ddl(conn, sql, err);
  }
  return rc == 0 ? drop_stale_indexes(conn, sql, m, err) : rc;
}

/* ---- Keyword index --------------------------------------------------------------------------- */

/* "Name,SKU": the keyword columns, as remembered in _dg_meta. */
static void keyword_signature(const dg_model_t *m, char *out, size_t size) {
  size_t len = 0;
  out[0] = '\0';
  for (size_t i = 0; i < m->nproperties && len < size - 1; i++) {
    if (!m->properties[i].keyword)
      continue;
    int n = snprintf(out + len, size - len, "%s%s", len ? "," : "", m->properties[i].name);
    len = n > 0 && (size_t)n < size - len ? len + (size_t)n : size - 1;
  }
}

/* The keyword columns as a list, each prefixed (new., old. or nothing). */
static void keyword_list(dg__sql_t *sql, const dg_model_t *m, const char *prefix) {
  bool first = true;
  for (size_t i = 0; i < m->nproperties; i++) {
    if (!m->properties[i].keyword)
      continue;
    dg__sql_put(sql, first ? "" : ", ");
    dg__sql_ident(sql, prefix, m->properties[i].name);
    first = false;
  }
}

static int drop_fts(dg__sqlite_conn_t *conn, dg__sql_t *sql, const dg_model_t *m,
                    dg_errctx_t *err) {
  static const char *const triggers[] = {"ai", "ad", "au"};
  char name[160];
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < DG_ARRAY_SIZE(triggers); i++) {
    snprintf(name, sizeof(name), "_fts_%s_%s", m->name, triggers[i]);
    dg__sql_put(sql, "DROP TRIGGER IF EXISTS ");
    dg__sql_ident(sql, NULL, name);
    rc = run_ddl(conn, sql, err);
  }
  snprintf(name, sizeof(name), "_fts_%s", m->name);
  dg__sql_put(sql, "DROP TABLE IF EXISTS ");
  dg__sql_ident(sql, NULL, name);
  return rc == 0 ? run_ddl(conn, sql, err) : rc;
}

static void fts_insert(dg__sql_t *sql, const dg_model_t *m, const char *fts, const char *row,
                       bool delete) {
  dg__sql_put(sql, "INSERT INTO ");
  dg__sql_ident(sql, NULL, fts);
  dg__sql_put(sql, delete ? " (" : " (rowid, ");
  if (delete) {
    dg__sql_ident(sql, NULL, fts);
    dg__sql_put(sql, ", rowid, ");
  }
  keyword_list(sql, m, NULL);
  dg__sql_putf(sql, ") VALUES (%s%s.\"_seq\", ", delete ? "'delete', " : "", row);
  keyword_list(sql, m, row);
  dg__sql_put(sql, "); ");
}

static int create_triggers(dg__sqlite_conn_t *conn, dg__sql_t *sql, const dg_model_t *m,
                           const char *fts, dg_errctx_t *err) {
  static const char *const kinds[] = {"ai", "ad", "au"};
  static const char *const events[] = {"INSERT", "DELETE", "UPDATE"};
  int rc = 0;
  for (size_t i = 0; rc == 0 && i < DG_ARRAY_SIZE(kinds); i++) {
    char name[200]; /* fts (under 160 bytes) and a suffix */
    snprintf(name, sizeof(name), "%s_%s", fts, kinds[i]);
    dg__sql_put(sql, "CREATE TRIGGER ");
    dg__sql_ident(sql, NULL, name);
    dg__sql_putf(sql, " AFTER %s ON ", events[i]);
    dg__sql_ident(sql, NULL, m->name);
    dg__sql_put(sql, " BEGIN ");
    if (i != 0)
      fts_insert(sql, m, fts, "old", true);
    if (i != 1)
      fts_insert(sql, m, fts, "new", false);
    dg__sql_put(sql, "END");
    rc = run_ddl(conn, sql, err);
  }
  return rc;
}

static int create_fts(dg__sqlite_conn_t *conn, dg__sql_t *sql, const dg_model_t *m,
                      dg_errctx_t *err) {
  char fts[160];
  snprintf(fts, sizeof(fts), "_fts_%s", m->name);
  dg__sql_put(sql, "CREATE VIRTUAL TABLE ");
  dg__sql_ident(sql, NULL, fts);
  dg__sql_put(sql, " USING fts5(");
  keyword_list(sql, m, NULL);
  dg__sql_putf(sql,
               ", content='%s', content_rowid='_seq', "
               "tokenize='unicode61 remove_diacritics 2')",
               m->name);
  int rc = run_ddl(conn, sql, err);
  if (rc == 0)
    rc = create_triggers(conn, sql, m, fts, err);
  if (rc == 0) {
    dg__sql_put(sql, "INSERT INTO ");
    dg__sql_ident(sql, NULL, fts);
    dg__sql_put(sql, " (");
    dg__sql_ident(sql, NULL, fts);
    dg__sql_put(sql, ") VALUES ('rebuild')");
    rc = run_ddl(conn, sql, err);
  }
  return rc;
}

static int migrate_fts(dg__sqlite_conn_t *conn, dg__sql_t *sql, const dg_model_t *m,
                       dg_errctx_t *err) {
  char key[160], want[META_VALUE_MAX], have[META_VALUE_MAX];
  bool found = false;
  snprintf(key, sizeof(key), "fts:%s", m->name);
  keyword_signature(m, want, sizeof(want));
  int rc = meta_get(conn, key, have, sizeof(have), &found, err);
  if (rc != 0 || (found && strcmp(have, want) == 0) || (!found && want[0] == '\0'))
    return rc;
  rc = drop_fts(conn, sql, m, err);
  if (rc == 0 && want[0] != '\0')
    rc = create_fts(conn, sql, m, err);
  if (rc == 0)
    rc = meta_set(conn, key, want[0] != '\0' ? want : NULL, err);
  return rc;
}

/* ---- The migration ----------------------------------------------------------------------------
 */

static int migrate_model(dg__sqlite_conn_t *conn, dg__sql_t *sql, const dg_model_t *m,
                         json_t *notes, dg_errctx_t *err) {
  bool exists = false;
  int rc = table_exists(conn, m->name, &exists, err);
  if (rc == 0)
    rc = exists ? add_columns(conn, sql, m, notes, err) : create_table(conn, sql, m, err);
  if (rc == 0)
    rc = create_indexes(conn, sql, m, err);
  if (rc == 0)
    rc = migrate_fts(conn, sql, m, err);
  return rc;
}

int dg__sqlite_migrate(dg__sqlite_conn_t *conn, const dg_catalog_t *cat, json_t *notes,
                       dg_errctx_t *err) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_sqlite);
  /* IMMEDIATE: two processes starting at once migrate one after the other. */
  int rc = dg__sqlite_exec(conn, "BEGIN IMMEDIATE", err);
  if (rc == 0)
    rc = dg__sqlite_exec(conn,
                         "CREATE TABLE IF NOT EXISTS \"_dg_meta\" (key TEXT PRIMARY KEY, value "
                         "TEXT) STRICT",
                         err);
  for (size_t i = 0; rc == 0 && i < cat->nmodels; i++)
    rc = migrate_model(conn, &sql, &cat->models[i], notes, err);
  if (rc == 0)
    rc = dg__sqlite_migrate_submissions(conn, err);
  dg__sql_free(&sql);
  if (rc == 0)
    return dg__sqlite_exec(conn, "COMMIT", err);
  sqlite3_exec(conn->db, "ROLLBACK", NULL, NULL, NULL);
  return rc;
}

/* ---- Sample data --------------------------------------------------------------------------------
 */

static int all_empty(dg__sqlite_conn_t *conn, const dg_catalog_t *cat, bool *empty,
                     dg_errctx_t *err) {
  dg__sql_t sql;
  int rc = 0;
  *empty = true;
  dg__sql_init(&sql, &dg__sql_sqlite);
  for (size_t i = 0; rc == 0 && *empty && i < cat->nmodels; i++) {
    sqlite3_stmt *st = NULL;
    dg__sql_put(&sql, "SELECT 1 FROM ");
    dg__sql_ident(&sql, NULL, cat->models[i].name);
    dg__sql_put(&sql, " LIMIT 1");
    rc = dg__sqlite_prepare(conn, &sql, &st, err);
    int step = rc == 0 ? dg__sqlite_step(conn, st, err) : rc;
    *empty = step == SQLITE_DONE;
    rc = step == SQLITE_ROW || step == SQLITE_DONE ? 0 : step;
    if (st != NULL)
      dg__sqlite_release(st);
    dg__sql_reset(&sql);
  }
  dg__sql_free(&sql);
  return rc;
}

static int insert_all(dg__sqlite_conn_t *conn, const dg_store_write_t *w, size_t n,
                      dg_errctx_t *err) {
  dg__sql_t sql;
  int rc = 0;
  dg__sql_init(&sql, &dg__sql_sqlite);
  for (size_t i = 0; rc == 0 && i < n; i++) {
    sqlite3_stmt *st = NULL;
    dg__sql_write(&sql, &w[i], w[i].id);
    rc = dg__sqlite_prepare(conn, &sql, &st, err);
    int step = rc == 0 ? dg__sqlite_step(conn, st, err) : rc;
    rc = step == SQLITE_DONE ? 0 : step;
    if (st != NULL)
      dg__sqlite_release(st);
    dg__sql_reset(&sql);
  }
  dg__sql_free(&sql);
  return rc;
}

/* Inside one write transaction, so that two processes starting at once
 * cannot both find the database empty and both load. */
static int load_locked(dg__sqlite_conn_t *conn, const dg_catalog_t *cat, const char *dir,
                       dg_arena_t *arena, dg_errctx_t *err) {
  char have[META_VALUE_MAX];
  bool loaded = false, empty = false;
  dg_store_write_t *writes = NULL;
  size_t n = 0;
  int rc = meta_get(conn, "sampleData", have, sizeof(have), &loaded, err);
  if (rc == 0 && !loaded)
    rc = all_empty(conn, cat, &empty, err);
  if (rc != 0 || loaded || !empty)
    return rc;
  rc = dg__store_sample_read(cat, dir, arena, &writes, &n, err);
  if (rc == 0 && n > 0)
    rc = insert_all(conn, writes, n, err);
  if (rc == 0 && n > 0)
    rc = meta_set(conn, "sampleData", dir, err);
  return rc;
}

int dg__sqlite_load_sample(dg__sqlite_conn_t *conn, const dg_catalog_t *cat, const char *dir,
                           dg_errctx_t *err) {
  dg_arena_t *arena = dg_arena_new(64 * 1024);
  if (arena == NULL)
    return dg_errctx_set(err, DG_ENOMEM, "", "out of memory");
  int rc = dg__sqlite_exec(conn, "BEGIN IMMEDIATE", err);
  if (rc == 0)
    rc = load_locked(conn, cat, dir, arena, err);
  if (rc == 0)
    rc = dg__sqlite_exec(conn, "COMMIT", err);
  else
    sqlite3_exec(conn->db, "ROLLBACK", NULL, NULL, NULL);
  dg_arena_destroy(arena);
  return rc;
}
