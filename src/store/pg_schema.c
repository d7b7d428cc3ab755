/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The PostgreSQL schema, created and migrated from the catalog at start-up
 * as on SQLite (sqlite_schema.c), in one transaction sent as one text (one
 * round trip: a multi-statement query is one implicit transaction, which a
 * failure rolls back whole) under a transaction-scoped advisory lock, so
 * that gateways
 * starting at once migrate one after the other and the later ones find
 * the work done:
 *   - the extension citext: String columns are citext in the "C" collation,
 *     which compares, groups and sorts them as SQLite's NOCASE does (ASCII
 *     letters folded, then byte order);
 *   - a table per Data Model: "_seq" (an identity, the order of inserts),
 *     id text UNIQUE in the binary collation, and a typed column per
 *     stored property; a property added to the configuration adds a column
 *     (ADD COLUMN IF NOT EXISTS); dates stay the normalised text they are
 *     on SQLite, in the binary collation, so that they order the same;
 *   - an index (column NULLS FIRST, id) per property that is sortable or
 *     filterable and per Outbound reference: the pages sort nulls first
 *     ascending and last descending, which this index gives read either
 *     way (an index of an older version, without NULLS FIRST, is rebuilt);
 *   - a GIN index over to_tsvector('simple', the keyword properties, every
 *     ASCII character but letters and digits read as a space), named
 *     after a digest of the keyword properties so that a change of them
 *     builds a new one and drops the old;
 *   - "_dg_submissions" with the unique (principal, idempotency_key) that
 *     makes a key run its tree once across every gateway, and the lease of
 *     a running submission;
 *   - "_dg_meta" with the schema version.
 * A column whose type changed in the configuration keeps its old type. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "store/pg_internal.h"

#define SCHEMA_VERSION "1"

static const char *pg_type(const dg_property_t *p) {
  switch (p->type) {
  case DG_TYPE_INT:
  case DG_TYPE_LONG:
    return "bigint";
  case DG_TYPE_BOOLEAN:
    return "boolean";
  case DG_TYPE_DOUBLE:
  case DG_TYPE_DECIMAL:
    return "double precision";
  case DG_TYPE_STRING:
    return "citext COLLATE \"C\"";
  default:
    return "text COLLATE \"C\"";
  }
}

static void table(dg__sql_t *sql, const dg_model_t *m) {
  dg__sql_put(sql, "CREATE TABLE IF NOT EXISTS ");
  dg__sql_ident(sql, NULL, m->name);
  dg__sql_put(sql, " (\"_seq\" bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "
                   "id text COLLATE \"C\" NOT NULL UNIQUE);\n");
  for (size_t i = 0; i < m->nproperties; i++) {
    const dg_property_t *p = &m->properties[i];
    if (!dg__store_is_stored(p))
      continue;
    dg__sql_put(sql, "ALTER TABLE ");
    dg__sql_ident(sql, NULL, m->name);
    dg__sql_put(sql, " ADD COLUMN IF NOT EXISTS ");
    dg__sql_ident(sql, NULL, p->name);
    dg__sql_putf(sql, " %s;\n", pg_type(p));
  }
}

/* Indexes made before their nulls came first are dropped, so that the
 * CREATE below builds them again in the order the pages sort by. */
static void drop_old_indexes(dg__sql_t *sql, const dg_model_t *m) {
  dg__sql_putf(sql,
               "DO $dg$ DECLARE r record; BEGIN FOR r IN SELECT indexname FROM pg_indexes WHERE "
               "schemaname = current_schema() AND tablename = '%s' AND indexname LIKE "
               "'\\_ix\\_%%' AND indexdef NOT LIKE '%%NULLS FIRST%%' LOOP EXECUTE "
               "format('DROP INDEX %%I', r.indexname); END LOOP; END $dg$;\n",
               m->name);
}

static void indexes(dg__sql_t *sql, const dg_model_t *m) {
  char name[160];
  drop_old_indexes(sql, m);
  for (size_t i = 0; i < m->nproperties; i++) {
    const dg_property_t *p = &m->properties[i];
    if (!dg__store_wants_index(p))
      continue;
    snprintf(name, sizeof(name), "_ix_%s_%s", m->name, p->name);
    dg__sql_create_index(sql, name, m, p);
    dg__sql_put(sql, ";\n");
  }
}

/* FNV-1a of the keyword property names, for the keyword index's name. */
static uint32_t keyword_digest(const dg_model_t *m) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < m->nproperties; i++) {
    if (!m->properties[i].keyword)
      continue;
    for (const char *s = m->properties[i].name; *s; s++)
      h = (h ^ (uint8_t)*s) * 16777619u;
    h = (h ^ ',') * 16777619u;
  }
  return h;
}

/* Every ASCII byte that is not a letter or a digit separates words, as
 * in the lookup's search value and SQLite's tokenizer (PostgreSQL's own
 * parser would keep "-1" as a signed number, or an e-mail as one token). */
#define WORD_BREAKS "'[\\x01-\\x2f\\x3a-\\x40\\x5b-\\x60\\x7b-\\x7f]'"

void dg__pg_keyword_document(dg__sql_t *sql, const dg_model_t *m, const char *alias) {
  bool first = true;
  dg__sql_put(sql, "to_tsvector('simple'::regconfig, dg_fold(regexp_replace(");
  for (size_t i = 0; i < m->nproperties; i++) {
    if (!m->properties[i].keyword)
      continue;
    dg__sql_put(sql, first ? "" : " || ' ' || ");
    dg__sql_put(sql, "coalesce(");
    dg__sql_ident(sql, alias, m->properties[i].name);
    dg__sql_put(sql, " COLLATE \"C\", '')");
    first = false;
  }
  dg__sql_put(sql, first ? "''" : "");
  dg__sql_put(sql, ", " WORD_BREAKS ", ' ', 'g')))");
}

/* The keyword index of this set of keyword properties; others of the
 * model (an earlier set) are dropped. Names are catalog identifiers
 * (letters, digits, _), safe inside the literal. */
static void keyword_index(dg__sql_t *sql, const dg_model_t *m) {
  char name[160];
  snprintf(name, sizeof(name), "_fts_%s_%08" PRIx32, m->name, keyword_digest(m));
  dg__sql_putf(sql,
               "DO $dg$ DECLARE r record; BEGIN FOR r IN SELECT indexname FROM pg_indexes WHERE "
               "schemaname = current_schema() AND tablename = '%s' AND indexname LIKE "
               "'\\_fts\\_%%' AND indexname <> '%s' LOOP EXECUTE format('DROP INDEX %%I', "
               "r.indexname); END LOOP; END $dg$;\n",
               m->name, name);
  bool any = false;
  for (size_t i = 0; i < m->nproperties; i++)
    any = any || m->properties[i].keyword;
  if (!any)
    return;
  dg__sql_put(sql, "CREATE INDEX IF NOT EXISTS ");
  dg__sql_ident(sql, NULL, name);
  dg__sql_put(sql, " ON ");
  dg__sql_ident(sql, NULL, m->name);
  dg__sql_put(sql, " USING gin (");
  dg__pg_keyword_document(sql, m, NULL);
  dg__sql_put(sql, ");\n");
}

static const char submissions[] =
    "CREATE TABLE IF NOT EXISTS \"_dg_submissions\" (\"_seq\" bigint GENERATED ALWAYS AS "
    "IDENTITY UNIQUE, id text PRIMARY KEY, model text NOT NULL, "
    "entity_id text NOT NULL, operation text NOT NULL, endpoint text, system text, principal text "
    "NOT NULL, idempotency_key text, fingerprint text, status text NOT NULL, failed_action text, "
    "reason text, outcome text, owner text NOT NULL, created_at text NOT NULL, finished_at text, "
    "lease_until timestamptz);\n"
    "CREATE UNIQUE INDEX IF NOT EXISTS \"_dg_submissions_key\" ON \"_dg_submissions\" "
    "(principal, idempotency_key) WHERE idempotency_key IS NOT NULL;\n"
    "CREATE INDEX IF NOT EXISTS \"_dg_submissions_entity\" ON \"_dg_submissions\" (model, "
    "entity_id);\n"
    "CREATE INDEX IF NOT EXISTS \"_dg_submissions_running\" ON \"_dg_submissions\" (lease_until) "
    "WHERE status = 'running';\n";

/* dg_fold(text): the text without its accents when the unaccent extension
 * can be had (Debian's server ships it; it is trusted, so the database's
 * owner may create it), else the text as is; IMMUTABLE, as an index
 * expression needs (unaccent itself is only STABLE). Defined once: the
 * keyword indexes depend on it. */
static const char fold[] =
    "DO $dg$ DECLARE ns text; BEGIN\n"
    "  IF to_regprocedure('dg_fold(text)') IS NULL THEN\n"
    "    BEGIN\n"
    "      CREATE EXTENSION IF NOT EXISTS unaccent;\n"
    "    EXCEPTION WHEN OTHERS THEN NULL;\n"
    "    END;\n"
    "    SELECT n.nspname INTO ns FROM pg_extension e JOIN pg_namespace n ON n.oid = "
    "e.extnamespace WHERE e.extname = 'unaccent';\n"
    "    IF ns IS NOT NULL THEN\n"
    "      EXECUTE format('CREATE FUNCTION dg_fold(text) RETURNS text LANGUAGE sql IMMUTABLE "
    "PARALLEL SAFE STRICT AS %L', format('SELECT %I.unaccent(%L::regdictionary, $1)', ns, "
    "quote_ident(ns) || '.unaccent'));\n"
    "    ELSE\n"
    "      CREATE FUNCTION dg_fold(text) RETURNS text LANGUAGE sql IMMUTABLE PARALLEL SAFE STRICT "
    "AS 'SELECT $1';\n"
    "    END IF;\n"
    "  END IF;\n"
    "END $dg$;\n";

void dg__pg_schema(dg__sql_t *sql, const dg_catalog_t *cat) {
  dg__sql_putf(sql, "SELECT pg_advisory_xact_lock(%" PRId64 ");\n", (int64_t)DG__PG_MIGRATE_LOCK);
  dg__sql_put(sql, "CREATE EXTENSION IF NOT EXISTS citext;\n");
  dg__sql_put(sql, "CREATE TABLE IF NOT EXISTS \"_dg_meta\" (key text PRIMARY KEY, value text "
                   "NOT NULL);\n");
  dg__sql_put(sql, fold);
  for (size_t i = 0; i < cat->nmodels; i++) {
    table(sql, &cat->models[i]);
    indexes(sql, &cat->models[i]);
    keyword_index(sql, &cat->models[i]);
  }
  dg__sql_put(sql, submissions);
  dg__sql_put(sql,
              "INSERT INTO \"_dg_meta\" (key, value) VALUES ('schema_version', '" SCHEMA_VERSION
              "') ON CONFLICT (key) DO UPDATE SET value = excluded.value;");
}

int dg__pg_migrate(dg__pg_conn_t *conn, const dg_catalog_t *cat, dg__pg_query_cb cb, void *data,
                   dg_errctx_t *err) {
  dg__sql_t sql;
  dg__sql_init(&sql, &dg__sql_postgres);
  dg__pg_schema(&sql, cat);
  int rc = sql.rc != 0 ? dg_errctx_set(err, sql.rc, "", "The schema statement is too large.")
                       : dg__pg_exec(conn, sql.text.data, cb, data, err);
  dg__sql_free(&sql);
  return rc;
}
