/* The reads of the PostgreSQL driver that differ from SQLite's: keyword
 * lookup on full-text search.
 *
 * Keyword lookup: each model's keyword properties form one document,
 * to_tsvector('simple', ...) exactly as the GIN index of pg_schema.c
 * builds it, so that the index answers. Every word of the search value
 * must match the start of a word of the document (a prefix query,
 * word:*), as the SQLite driver's FTS5 query does. The 'simple'
 * configuration lower-cases and keeps every word (no stemming, no stop
 * words); unlike SQLite's tokenizer it keeps accents. Hits are ranked by
 * ts_rank, negated so that, as with SQLite's bm25, a lower score is a
 * better hit; ties go by id. */
#include "store/pg_internal.h"

/* The query: every term as a prefix, all required. A term goes through
 * quote_literal so that to_tsquery reads it as one lexeme whatever it
 * holds. */
static void tsquery(dg__sql_t *sql, const char *const *terms, size_t nterms) {
  for (size_t i = 0; i < nterms; i++) {
    dg__sql_put(sql, i ? " && " : "");
    dg__sql_put(sql, "to_tsquery('simple'::regconfig, quote_literal(");
    dg__sql_bind_text(sql, terms[i]);
    dg__sql_put(sql, ") || ':*')");
  }
}

void dg__pg_lookup_sql(dg__sql_t *sql, const dg_model_t *m, const dg__sql_cols_t *cols,
                       const char *const *terms, size_t nterms, int64_t limit) {
  dg__sql_put(sql, "SELECT ");
  for (size_t i = 0; i < cols->n; i++) {
    dg__sql_put(sql, i ? ", " : "");
    if (cols->cols[i].prop == NULL)
      dg__sql_put(sql, "t0.id");
    else
      dg__sql_ident(sql, "t0", cols->cols[i].prop->name);
  }
  dg__sql_put(sql, ", -ts_rank(");
  dg__pg_keyword_document(sql, m, "t0");
  dg__sql_put(sql, ", q.q) AS score FROM ");
  dg__sql_ident(sql, NULL, m->name);
  dg__sql_put(sql, " AS t0, (SELECT ");
  tsquery(sql, terms, nterms);
  dg__sql_put(sql, ") AS q(q) WHERE ");
  dg__pg_keyword_document(sql, m, "t0");
  dg__sql_put(sql, " @@ q.q ORDER BY score, t0.id LIMIT ");
  dg__sql_bind_int(sql, limit);
}
