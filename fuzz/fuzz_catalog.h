/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Shared by the harnesses that need a catalog built from configuration
 * texts of their own: writes the files to a fresh directory, loads the
 * catalog from it and removes the directory again. Any failure aborts. */
#ifndef DG_FUZZ_CATALOG_H
#define DG_FUZZ_CATALOG_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "datagate/catalog.h"

typedef struct fuzz_file {
  const char *name;
  const char *text;
} fuzz_file_t;

static inline void fuzz_file_path(char *out, size_t size, const char *dir, const char *name) {
  if ((size_t)snprintf(out, size, "%s/%s", dir, name) >= size)
    abort();
}

static inline dg_catalog_t *fuzz_catalog_load(const fuzz_file_t *files, size_t n) {
  char dir[] = "/tmp/dg_fuzz_catalog_XXXXXX";
  char path[256];
  dg_catalog_t *cat = NULL;
  if (mkdtemp(dir) == NULL)
    abort();
  for (size_t i = 0; i < n; i++) {
    fuzz_file_path(path, sizeof(path), dir, files[i].name);
    FILE *f = fopen(path, "w");
    if (f == NULL || fputs(files[i].text, f) < 0 || fclose(f) != 0)
      abort();
  }
  if (dg_catalog_load(dir, &cat, NULL) != 0)
    abort();
  for (size_t i = 0; i < n; i++) {
    fuzz_file_path(path, sizeof(path), dir, files[i].name);
    unlink(path);
  }
  rmdir(dir);
  return cat;
}

#endif
