/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Format detection: the declared content type first, then the magic bytes,
 * then the extension, in that order of trust. Generic content types say
 * nothing and fall through; known signatures of unsupported formats (images,
 * legacy Office files, archives) are refused by name. */
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "extract/internal.h"

const char dg_extract_supported[] = "PDF, DOCX, PPTX, HTML, TXT, MD, CSV, JSON, XML";

static const char *const format_names[] = {"unknown", "PDF", "DOCX", "PPTX", "HTML",
                                           "TXT",     "MD",  "CSV",  "JSON", "XML"};

const char *dg_extract_format_name(dg_extract_format_t format) {
  if ((size_t)format >= DG_ARRAY_SIZE(format_names))
    return format_names[0];
  return format_names[format];
}

typedef struct name_map {
  const char *name;
  dg_extract_format_t format;
} name_map_t;

static const name_map_t content_types[] = {
    {"application/pdf", DG_EXTRACT_PDF},
    {"application/x-pdf", DG_EXTRACT_PDF},
    {"application/vnd.openxmlformats-officedocument.wordprocessingml.document", DG_EXTRACT_DOCX},
    {"application/vnd.ms-word.document.macroenabled.12", DG_EXTRACT_DOCX},
    {"application/vnd.openxmlformats-officedocument.presentationml.presentation", DG_EXTRACT_PPTX},
    {"application/vnd.ms-powerpoint.presentation.macroenabled.12", DG_EXTRACT_PPTX},
    {"text/html", DG_EXTRACT_HTML},
    {"application/xhtml+xml", DG_EXTRACT_HTML},
    {"text/plain", DG_EXTRACT_TXT},
    {"text/markdown", DG_EXTRACT_MD},
    {"text/x-markdown", DG_EXTRACT_MD},
    {"text/csv", DG_EXTRACT_CSV},
    {"application/csv", DG_EXTRACT_CSV},
    {"application/json", DG_EXTRACT_JSON},
    {"text/json", DG_EXTRACT_JSON},
    {"application/xml", DG_EXTRACT_XML},
    {"text/xml", DG_EXTRACT_XML},
};

static const name_map_t extensions[] = {
    {"pdf", DG_EXTRACT_PDF},   {"docx", DG_EXTRACT_DOCX},  {"docm", DG_EXTRACT_DOCX},
    {"pptx", DG_EXTRACT_PPTX}, {"pptm", DG_EXTRACT_PPTX},  {"html", DG_EXTRACT_HTML},
    {"htm", DG_EXTRACT_HTML},  {"xhtml", DG_EXTRACT_HTML}, {"txt", DG_EXTRACT_TXT},
    {"text", DG_EXTRACT_TXT},  {"md", DG_EXTRACT_MD},      {"markdown", DG_EXTRACT_MD},
    {"csv", DG_EXTRACT_CSV},   {"json", DG_EXTRACT_JSON},  {"xml", DG_EXTRACT_XML},
};

/* Signatures of formats that are recognised but not supported. */
typedef struct signature {
  const char *magic;
  size_t len;
  const char *what;
} signature_t;

static const signature_t unsupported[] = {
    {"\x89PNG", 4, "a PNG image"},
    {"\xff\xd8\xff", 3, "a JPEG image"},
    {"GIF8", 4, "a GIF image"},
    {"\xd0\xcf\x11\xe0", 4, "a legacy Office (OLE2) file such as .doc, .xls or .ppt"},
    {"{\\rtf", 5, "an RTF document"},
    {"\x1f\x8b", 2, "a gzip archive"},
    {"Rar!", 4, "a RAR archive"},
    {"7z\xbc\xaf", 4, "a 7-Zip archive"},
    {"PK\x05\x06", 4, "an empty ZIP archive"},
};

/* The media type of a content type, lower-cased, without parameters. */
static void media_type(const char *content_type, char *out, size_t size) {
  size_t n = 0;
  const char *p = content_type;
  while (*p == ' ' || *p == '\t')
    p++;
  for (; *p != '\0' && *p != ';' && *p != ' ' && n + 1 < size; p++)
    out[n++] = (char)tolower((unsigned char)*p);
  out[n] = '\0';
}

static bool ends_with(const char *s, const char *suffix) {
  size_t n = strlen(s), k = strlen(suffix);
  return n >= k && strcmp(s + n - k, suffix) == 0;
}

static dg_extract_format_t from_content_type(const char *type) {
  for (size_t i = 0; i < DG_ARRAY_SIZE(content_types); i++) {
    if (strcmp(type, content_types[i].name) == 0)
      return content_types[i].format;
  }
  /* Structured syntax suffixes (RFC 6839): application/ld+json, image/svg+xml. */
  if (ends_with(type, "+json"))
    return DG_EXTRACT_JSON;
  if (ends_with(type, "+xml"))
    return DG_EXTRACT_XML;
  return DG_EXTRACT_UNKNOWN;
}

/* The extension of a URL's path or a file name, lower-cased, or "". */
static void extension_of(const char *name, char *out, size_t size) {
  out[0] = '\0';
  if (name == NULL)
    return;
  size_t end = strcspn(name, "?#");
  const char *path = strstr(name, "://");
  size_t from = path != NULL && (size_t)(path - name) < end ? (size_t)(path - name) + 3 : 0;
  const char *slash = NULL, *dot = NULL;
  for (size_t i = from; i < end; i++) {
    if (name[i] == '/')
      slash = name + i;
    else if (name[i] == '.')
      dot = name + i;
  }
  if (path != NULL && slash == NULL)
    return; /* "https://host" has no path, so no extension */
  if (dot == NULL || (slash != NULL && dot < slash) || (size_t)(name + end - dot - 1) >= size)
    return;
  size_t n = (size_t)(name + end - dot - 1);
  for (size_t i = 0; i < n; i++)
    out[i] = (char)tolower((unsigned char)dot[1 + i]);
  out[n] = '\0';
}

static dg_extract_format_t from_extension(const char *ext) {
  for (size_t i = 0; i < DG_ARRAY_SIZE(extensions); i++) {
    if (strcmp(ext, extensions[i].name) == 0)
      return extensions[i].format;
  }
  return DG_EXTRACT_UNKNOWN;
}

static bool starts_with_ci(const char *p, size_t n, const char *prefix) {
  size_t k = strlen(prefix);
  return n >= k && dg_strieq_n(p, k, prefix);
}

static bool contains_ci(const char *p, size_t n, const char *needle) {
  size_t k = strlen(needle);
  for (size_t i = 0; i + k <= n; i++) {
    if (dg_strieq_n(p + i, k, needle))
      return true;
  }
  return false;
}

/* HTML or XML from the first tag of a text, after any BOM and white space. */
static dg_extract_format_t markup_of(const char *p, size_t n) {
  static const char *const html_starts[] = {"<!doctype html", "<html", "<head",
                                            "<body",          "<meta", "<title"};
  if (n >= 3 && memcmp(p, "\xef\xbb\xbf", 3) == 0) {
    p += 3;
    n -= 3;
  }
  while (n > 0 && isspace((unsigned char)*p)) {
    p++;
    n--;
  }
  if (starts_with_ci(p, n, "<?xml"))
    return contains_ci(p, n, "<html") ? DG_EXTRACT_HTML : DG_EXTRACT_XML;
  for (size_t i = 0; i < DG_ARRAY_SIZE(html_starts); i++) {
    if (starts_with_ci(p, n, html_starts[i]))
      return DG_EXTRACT_HTML;
  }
  /* A leading comment hides the first tag: look further for one. */
  if (starts_with_ci(p, n, "<!--") && contains_ci(p, n, "<html"))
    return DG_EXTRACT_HTML;
  return DG_EXTRACT_UNKNOWN;
}

/* The format the magic bytes prove; *what names a known unsupported one. */
static dg_extract_format_t from_magic(const unsigned char *head, size_t n, const char **what) {
  *what = NULL;
  for (size_t i = 0; i < DG_ARRAY_SIZE(unsupported); i++) {
    if (n >= unsupported[i].len && memcmp(head, unsupported[i].magic, unsupported[i].len) == 0) {
      *what = unsupported[i].what;
      return DG_EXTRACT_UNKNOWN;
    }
  }
  /* Readers accept a PDF header anywhere in the first kilobyte. */
  if (memmem(head, n < DG_EXTRACT_SNIFF_BYTES ? n : DG_EXTRACT_SNIFF_BYTES, "%PDF-", 5) != NULL)
    return DG_EXTRACT_PDF;
  if (n >= 4 && memcmp(head, "PK\x03\x04", 4) == 0)
    return DG_EXTRACT_DOCX;
  return markup_of((const char *)head, n);
}

/* Text unless it holds NUL bytes without a UTF-16 byte order mark. */
static bool looks_like_text(const unsigned char *head, size_t n) {
  if (n >= 2 && ((head[0] == 0xff && head[1] == 0xfe) || (head[0] == 0xfe && head[1] == 0xff)))
    return true;
  return memchr(head, 0, n) == NULL;
}

static int refuse(const char *type, const char *ext, const char *what, dg_errctx_t *err) {
  char given[256];
  if (what != NULL)
    snprintf(given, sizeof(given), "the document is %s", what);
  else
    snprintf(given, sizeof(given), "content type %s, extension %s%s, unrecognised content",
             type[0] != '\0' ? type : "none", ext[0] != '\0' ? "." : "",
             ext[0] != '\0' ? ext : "none");
  return dg_errctx_set(err, DG_ENOTSUP, "url",
                       "the document's format is not supported (%s): supported formats are %s",
                       given, dg_extract_supported);
}

int dg_extract_detect(const char *content_type, const void *head, size_t head_len, const char *name,
                      dg_extract_format_t *out, dg_errctx_t *err) {
  char type[128] = "", ext[16] = "";
  const char *what = NULL;
  if (content_type != NULL)
    media_type(content_type, type, sizeof(type));
  extension_of(name, ext, sizeof(ext));
  dg_extract_format_t by_ext = from_extension(ext);
  *out = from_content_type(type);
  /* text/plain is refined by the extension among the text formats. */
  if (*out == DG_EXTRACT_TXT && by_ext >= DG_EXTRACT_TXT && by_ext <= DG_EXTRACT_JSON)
    *out = by_ext;
  if (*out != DG_EXTRACT_UNKNOWN)
    return 0;
  const unsigned char *h = head != NULL ? head : (const unsigned char *)"";
  *out = from_magic(h, head_len, &what);
  if (*out == DG_EXTRACT_DOCX && by_ext == DG_EXTRACT_PPTX)
    *out = DG_EXTRACT_PPTX;
  if (*out == DG_EXTRACT_UNKNOWN && what == NULL)
    *out = by_ext;
  if (*out == DG_EXTRACT_UNKNOWN && what == NULL && looks_like_text(h, head_len))
    *out = DG_EXTRACT_TXT;
  if (*out != DG_EXTRACT_UNKNOWN)
    return 0;
  return refuse(type, ext, what, err);
}

void dg__extract_charset(const char *content_type, char *out, size_t size) {
  out[0] = '\0';
  const char *p = content_type != NULL ? strchr(content_type, ';') : NULL;
  while (p != NULL) {
    p++;
    p += strspn(p, " \t");
    if (strncasecmp(p, "charset=", 8) == 0) {
      p += 8;
      p += *p == '"';
      size_t n = strcspn(p, "\"; \t");
      if (n < size) {
        memcpy(out, p, n);
        out[n] = '\0';
      }
      return;
    }
    p = strchr(p, ';');
  }
}
