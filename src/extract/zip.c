/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Bounded access to the parts of an OOXML package (a ZIP archive held in
 * memory) and a streaming walk over one XML part with libxml2's xmlReader.
 *
 * Zip bombs: the number of entries, each part's uncompressed size, the
 * total read and the expansion ratio are checked against the limits both
 * from the declared sizes before reading and from the bytes actually
 * inflated while reading (declared sizes can lie). A DTD in a part is
 * refused (OOXML forbids them), so no entity is ever declared or expanded;
 * no network access; nesting is bounded. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libxml/xmlreader.h>
#include <zip.h>

#include "extract/internal.h"

/* Expansion ratios are checked only past this size: small parts of
 * repeated markup compress very well and are harmless. */
#define RATIO_FLOOR ((size_t)1 << 20)

static int zip_failure(dg__zip_t *z, int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Sets the caller-facing error: "the DOCX package <detail>". */
static int zip_failure(dg__zip_t *z, int rc, const char *fmt, ...) {
  char detail[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(detail, sizeof(detail), fmt, ap);
  va_end(ap);
  return dg_errctx_set(&z->run->err, rc, "url", "the %s package %s", z->what, detail);
}

int dg__zip_open(dg__zip_t *z, dg__xrun_t *run, const char *what) {
  memset(z, 0, sizeof(*z));
  z->run = run;
  z->what = what;
  zip_error_t error;
  zip_error_init(&error);
  zip_source_t *src = zip_source_buffer_create(run->in, run->in_len, 0, &error);
  if (src != NULL)
    z->za = zip_open_from_source(src, ZIP_RDONLY, &error);
  if (z->za == NULL) {
    zip_source_free(src);
    int rc =
        zip_failure(z, DG_EPROTO, "is not a readable ZIP archive: %s", zip_error_strerror(&error));
    zip_error_fini(&error);
    return rc;
  }
  zip_error_fini(&error);
  zip_int64_t n = zip_get_num_entries(z->za, 0);
  if (n < 0 || (uint64_t)n > run->limits.max_zip_entries)
    return zip_failure(z, DG_E2BIG, "has %lld entries, over the limit of %zu", (long long)n,
                       run->limits.max_zip_entries);
  return 0;
}

void dg__zip_close(dg__zip_t *z) {
  if (z->za != NULL)
    zip_discard(z->za);
  z->za = NULL;
}

/* The index of a part: exact name first, then ignoring case (part names
 * are case-insensitive in OPC); a leading "/" is dropped. */
static zip_int64_t locate(dg__zip_t *z, const char *part) {
  part += part[0] == '/';
  zip_int64_t i = zip_name_locate(z->za, part, 0);
  return i >= 0 ? i : zip_name_locate(z->za, part, ZIP_FL_NOCASE);
}

bool dg__zip_exists(dg__zip_t *z, const char *part) {
  return z->za != NULL && locate(z, part) >= 0;
}

/* Refuses a part whose declared sizes are over the limits. */
static int check_declared(dg__zip_t *z, const char *part, const zip_stat_t *st) {
  const dg_extract_limits_t *l = &z->run->limits;
  if ((st->valid & ZIP_STAT_ENCRYPTION_METHOD) && st->encryption_method != ZIP_EM_NONE)
    return zip_failure(z, DG_ENOTSUP, "is password-protected (%s is encrypted)", part);
  if (!(st->valid & ZIP_STAT_SIZE) || !(st->valid & ZIP_STAT_COMP_SIZE))
    return 0;
  if (st->size > l->max_zip_entry_bytes)
    return zip_failure(z, DG_E2BIG, "part %s would expand to %llu bytes, over the limit of %zu",
                       part, (unsigned long long)st->size, l->max_zip_entry_bytes);
  if (st->size > RATIO_FLOOR && st->size / (st->comp_size + 1) > l->max_zip_ratio)
    return zip_failure(z, DG_E2BIG, "part %s expands %llu times, over the limit of %u", part,
                       (unsigned long long)(st->size / (st->comp_size + 1)), l->max_zip_ratio);
  return 0;
}

/* Counts what was inflated against the limits, whatever was declared. */
static int check_read(dg__zip_t *z, size_t n) {
  const dg_extract_limits_t *l = &z->run->limits;
  dg__zip_io_t *io = &z->io;
  io->read += n;
  z->total += n;
  if (io->read > l->max_zip_entry_bytes)
    return zip_failure(z, DG_E2BIG, "part %s expands past the limit of %zu bytes", io->name,
                       l->max_zip_entry_bytes);
  if (z->total > l->max_zip_total_bytes)
    return zip_failure(z, DG_E2BIG, "expands past the limit of %zu bytes in all (at part %s)",
                       l->max_zip_total_bytes, io->name);
  if (io->read > RATIO_FLOOR && io->read / (io->comp_size + 1) > l->max_zip_ratio)
    return zip_failure(z, DG_E2BIG, "part %s expands more than %u times", io->name,
                       l->max_zip_ratio);
  return 0;
}

/* True when "<!" followed by anything but "-" (a comment) or "[" (CDATA)
 * occurs: a DOCTYPE or another declaration, which OOXML forbids. Looked
 * for in the bytes as they are inflated, before libxml2 parses them, so
 * no entity is ever declared. tail holds the last bytes of the previous
 * read. */
static bool declaration(dg__zip_io_t *io, const unsigned char *p, size_t n) {
  /* The first two bytes, which follow the tail. */
  for (size_t i = 0; i < n && i < 2; i++) {
    unsigned char prev2 = i >= 2 ? p[i - 2] : io->tail[i == 0 ? 0 : 1];
    unsigned char prev1 = i >= 1 ? p[i - 1] : io->tail[1];
    if (prev2 == '<' && prev1 == '!' && p[i] != '-' && p[i] != '[')
      return true;
  }
  /* Then every "!" with a byte on each side in this read, found with
   * memchr rather than by looking at every byte. */
  const unsigned char *q = n > 2 ? memchr(p + 1, '!', n - 2) : NULL;
  while (q != NULL) {
    if (q[-1] == '<' && q[1] != '-' && q[1] != '[')
      return true;
    q++;
    q = memchr(q, '!', (size_t)(p + n - 1 - q));
  }
  if (n >= 2) {
    io->tail[0] = p[n - 2];
    io->tail[1] = p[n - 1];
  } else if (n == 1) {
    io->tail[0] = io->tail[1];
    io->tail[1] = p[0];
  }
  return false;
}

static int io_read(void *ctx, char *buf, int len) {
  dg__zip_t *z = ctx;
  if (z->io.file == NULL || z->io.failure != 0)
    return -1;
  zip_int64_t n = zip_fread(z->io.file, buf, (zip_uint64_t)len);
  if (n < 0) {
    z->io.failure = zip_failure(z, DG_EPROTO, "part %s cannot be inflated: %s", z->io.name,
                                zip_file_strerror(z->io.file));
    return -1;
  }
  z->io.failure = check_read(z, (size_t)n);
  if (z->io.failure == 0 && declaration(&z->io, (const unsigned char *)buf, (size_t)n))
    z->io.failure = zip_failure(z, DG_EPROTO, "part %s has a DTD, which OOXML forbids", z->io.name);
  if (z->io.failure == 0 && !dg__attr_scan(&z->io.attrs, (const unsigned char *)buf, (size_t)n,
                                           z->run->limits.max_attributes))
    z->io.failure =
        zip_failure(z, DG_E2BIG, "part %s has an element with more than the limit of %u attributes",
                    z->io.name, z->run->limits.max_attributes);
  return z->io.failure != 0 ? -1 : (int)n;
}

static int io_close(void *ctx) {
  dg__zip_t *z = ctx;
  if (z->io.file != NULL)
    zip_fclose(z->io.file);
  z->io.file = NULL;
  return 0;
}

static void on_reader_error(void *ctx, xmlErrorPtr e) {
  dg__zip_t *z = ctx;
  if (e->level >= XML_ERR_ERROR && z->io.failure == 0) {
    char what[320];
    snprintf(what, sizeof(what), "part %s of the %s package", z->io.name, z->what);
    z->io.failure = dg__xml_fail(z->run, what, e);
  }
}

int dg__zip_reader(dg__zip_t *z, const char *part, xmlTextReaderPtr *out) {
  *out = NULL;
  zip_int64_t i = locate(z, part);
  zip_stat_t st;
  if (i < 0 || zip_stat_index(z->za, (zip_uint64_t)i, 0, &st) != 0)
    return zip_failure(z, DG_EPROTO, "lacks its part %s", part);
  int rc = check_declared(z, part, &st);
  if (rc != 0)
    return rc;
  memset(&z->io, 0, sizeof(z->io));
  dg_strlcpy(z->io.name, part, sizeof(z->io.name));
  z->io.comp_size = (st.valid & ZIP_STAT_COMP_SIZE) ? st.comp_size : 0;
  z->io.file = zip_fopen_index(z->za, (zip_uint64_t)i, 0);
  if (z->io.file == NULL)
    return zip_failure(z, DG_EPROTO, "part %s cannot be read: %s", part, zip_strerror(z->za));
  *out = xmlReaderForIO(io_read, io_close, z, part, NULL, XML_PARSE_NONET);
  if (*out == NULL)
    return dg_errctx_set(&z->run->err, DG_ENOMEM, "url", "out of memory");
  xmlTextReaderSetStructuredErrorHandler(*out, on_reader_error, z);
  return 0;
}

/* One node: calls the walker's functions; sets *skip for a subtree to
 * jump over. */
static int visit(dg__zip_t *z, xmlTextReaderPtr r, const dg__walk_ops_t *ops, void *ctx,
                 bool *skip) {
  int type = xmlTextReaderNodeType(r);
  const char *name = (const char *)xmlTextReaderConstLocalName(r);
  if (type == XML_READER_TYPE_DOCUMENT_TYPE)
    return zip_failure(z, DG_EPROTO, "part %s has a DTD, which OOXML forbids", z->io.name);
  if (type == XML_READER_TYPE_ELEMENT) {
    if ((unsigned)xmlTextReaderDepth(r) >= z->run->limits.max_depth)
      return dg__xml_too_deep(z->run, "an OOXML part");
    ops->start(ctx, r, name, skip);
    if (!*skip && xmlTextReaderIsEmptyElement(r))
      ops->end(ctx, name);
  } else if (type == XML_READER_TYPE_END_ELEMENT) {
    ops->end(ctx, name);
  } else if (type == XML_READER_TYPE_TEXT || type == XML_READER_TYPE_CDATA ||
             type == XML_READER_TYPE_SIGNIFICANT_WHITESPACE) {
    ops->text(ctx, (const char *)xmlTextReaderConstValue(r));
  }
  return 0;
}

int dg__zip_walk(dg__zip_t *z, xmlTextReaderPtr r, const dg__walk_ops_t *ops, void *ctx,
                 size_t budget, bool *finished) {
  *finished = false;
  bool skip = false;
  for (size_t n = 0; n < budget; n++) {
    int ret = skip ? xmlTextReaderNext(r) : xmlTextReaderRead(r);
    skip = false;
    if (z->io.failure != 0)
      return z->io.failure;
    if (ret < 0)
      return zip_failure(z, DG_EPROTO, "part %s is not well-formed XML", z->io.name);
    if (ret == 0) {
      *finished = true;
      return 0;
    }
    int rc = visit(z, r, ops, ctx, &skip);
    if (rc == 0 && (n & 1023) == 1023)
      rc = dg__xrun_check(z->run);
    if (rc != 0 || dg__xrun_full(z->run))
      return rc;
  }
  return 0;
}

bool dg__zip_attr(xmlTextReaderPtr r, const char *local, const char *ns, char *buf, size_t size) {
  bool found = false;
  int more = xmlTextReaderMoveToFirstAttribute(r);
  while (more == 1 && !found) {
    const char *name = (const char *)xmlTextReaderConstLocalName(r);
    const char *uri = (const char *)xmlTextReaderConstNamespaceUri(r);
    if (name != NULL && strcmp(name, local) == 0 &&
        (ns == NULL || (uri != NULL && strstr(uri, ns) != NULL))) {
      const char *value = (const char *)xmlTextReaderConstValue(r);
      dg_strlcpy(buf, value != NULL ? value : "", size);
      found = true;
    }
    more = xmlTextReaderMoveToNextAttribute(r);
  }
  xmlTextReaderMoveToElement(r);
  return found;
}
