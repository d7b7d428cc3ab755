/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* The configuration files behind the admin API: their version, a check of
 * changed files that never touches the directory (a staging directory of
 * symbolic links to everything else, loaded by the catalog loader), and
 * the atomic write. Everything here blocks on the file system and runs on
 * the threadpool. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "admin/internal.h"

#define FILE_MAX (16u * 1024 * 1024)

const char *const dg_admin_files[DG_ADMIN_NFILES] = {
    "models.json",        "endpoints.json", "connectors.json",
    "saved_queries.json", "files.json",     "datagate.json",
};

bool dg_admin_file_writable(const char *name) {
  return strcmp(name, "models.json") == 0 || strcmp(name, "endpoints.json") == 0;
}

int dg__admin_read_file(const char *dir, const char *name, dg_buf_t *out) {
  char path[PATH_MAX];
  if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
    return DG_E2BIG;
  return dg_buf_read_file(out, path);
}

int dg_admin_version(const char *dir, char out[33]) {
  dg_buf_t all;
  dg_buf_init(&all, DG_ADMIN_NFILES * (size_t)FILE_MAX);
  int rc = 0;
  for (size_t i = 0; i < DG_ADMIN_NFILES && rc == 0; i++) {
    dg_buf_t one;
    dg_buf_init(&one, FILE_MAX);
    int r = dg__admin_read_file(dir, dg_admin_files[i], &one);
    if (r == 0)
      rc = dg_buf_appendf(&all, "%s\n%zu\n", dg_admin_files[i], one.len) != 0 ||
                   dg_buf_append(&all, one.data ? one.data : "", one.len) != 0
               ? DG_ENOMEM
               : 0;
    else if (r == DG_ENOENT)
      rc = dg_buf_appendf(&all, "%s\nmissing\n", dg_admin_files[i]) != 0 ? DG_ENOMEM : 0;
    else
      rc = r;
    dg_buf_free(&one);
  }
  if (rc == 0) {
    unsigned char sum[32];
    dg_sha256(all.data ? all.data : "", all.len, sum);
    for (size_t i = 0; i < 16; i++)
      snprintf(out + 2 * i, 3, "%02x", sum[i]);
  }
  dg_buf_free(&all);
  return rc;
}

/* ---- Writing one file ------------------------------------------------------ */

static int write_all(int fd, const char *data, size_t len) {
  while (len > 0) {
    ssize_t n = write(fd, data, len);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return DG_EIO;
    data += n;
    len -= (size_t)n;
  }
  return 0;
}

/* The text a file is written with: two-space indentation, keys in the
 * order they came, a final newline. */
static char *file_text(const json_t *value) {
  return json_dumps(value, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
}

static int write_file(const char *dir, const char *name, const char *text, bool sync,
                      const char *tmp_suffix) {
  char path[PATH_MAX], tmp[PATH_MAX];
  if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
      (size_t)snprintf(tmp, sizeof(tmp), "%s/.%s.%s", dir, name, tmp_suffix) >= sizeof(tmp))
    return DG_E2BIG;
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return DG_EIO;
  int rc = write_all(fd, text, strlen(text));
  if (rc == 0)
    rc = write_all(fd, "\n", 1);
  if (rc == 0 && sync && fsync(fd) != 0)
    rc = DG_EIO;
  if (close(fd) != 0 && rc == 0)
    rc = DG_EIO;
  if (rc == 0 && rename(tmp, path) != 0)
    rc = DG_EIO;
  if (rc != 0)
    unlink(tmp);
  return rc;
}

/* NAME.prev becomes the version being replaced (a hard link: no copy). */
static int keep_previous(const char *dir, const char *name) {
  char path[PATH_MAX], prev[PATH_MAX];
  if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path) ||
      (size_t)snprintf(prev, sizeof(prev), "%s/%s.prev", dir, name) >= sizeof(prev))
    return DG_E2BIG;
  if (unlink(prev) != 0 && errno != ENOENT)
    return DG_EIO;
  if (link(path, prev) != 0 && errno != ENOENT)
    return DG_EIO;
  return 0;
}

static int sync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0)
    return DG_EIO;
  int rc = fsync(fd) == 0 ? 0 : DG_EIO;
  close(fd);
  return rc;
}

int dg_admin_write(const char *dir, const json_t *files, dg_errctx_t *err) {
  const char *name;
  const json_t *value;
  char suffix[32];
  snprintf(suffix, sizeof(suffix), "tmp.%ld", (long)getpid());
  json_object_foreach((json_t *)files, name, value) {
    char *text = file_text(value);
    int rc = text == NULL ? DG_ENOMEM : keep_previous(dir, name);
    if (rc == 0)
      rc = write_file(dir, name, text, true, suffix);
    free(text);
    if (rc != 0)
      return dg_errctx_set(err, rc, name, "cannot write '%s/%s': %s", dir, name, dg_strerror(rc));
  }
  int rc = sync_dir(dir);
  return rc == 0 ? 0 : dg_errctx_set(err, rc, "dir", "cannot sync '%s'", dir);
}

/* ---- Checking a change ------------------------------------------------------- */

static bool changed(const json_t *files, const char *name) {
  return json_object_get(files, name) != NULL;
}

/* Every entry of dir but the changed files, linked into stage. */
static int link_entries(const char *real, const char *stage, const json_t *files) {
  DIR *d = opendir(real);
  if (d == NULL)
    return DG_EIO;
  int rc = 0;
  for (struct dirent *e = readdir(d); rc == 0 && e != NULL; e = readdir(d)) {
    if (e->d_name[0] == '.' || changed(files, e->d_name))
      continue;
    char from[PATH_MAX], to[PATH_MAX];
    if ((size_t)snprintf(from, sizeof(from), "%s/%s", real, e->d_name) >= sizeof(from) ||
        (size_t)snprintf(to, sizeof(to), "%s/%s", stage, e->d_name) >= sizeof(to))
      rc = DG_E2BIG;
    else if (symlink(from, to) != 0)
      rc = DG_EIO;
  }
  closedir(d);
  return rc;
}

static int stage_files(const char *stage, const json_t *files) {
  const char *name;
  const json_t *value;
  json_object_foreach((json_t *)files, name, value) {
    char *text = file_text(value);
    int rc = text == NULL ? DG_ENOMEM : write_file(stage, name, text, false, "tmp");
    free(text);
    if (rc != 0)
      return rc;
  }
  return 0;
}

static void remove_stage(const char *stage) {
  DIR *d = opendir(stage);
  if (d != NULL) {
    for (struct dirent *e = readdir(d); e != NULL; e = readdir(d)) {
      char path[PATH_MAX];
      if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
        continue;
      if ((size_t)snprintf(path, sizeof(path), "%s/%s", stage, e->d_name) < sizeof(path))
        unlink(path);
    }
    closedir(d);
  }
  rmdir(stage);
}

/* The loader names the directory it read in a few messages: the staging
 * directory is shown as the configuration directory. */
static void rename_dir_in_errors(dg_config_errors_t *errors, const char *stage, const char *dir) {
  size_t sn = strlen(stage), dn = strlen(dir);
  for (size_t i = 0; i < errors->count; i++) {
    char *line = errors->lines[i], *at = strstr(line, stage);
    if (at == NULL)
      continue;
    size_t n = strlen(line) - sn + dn + 1;
    char *fixed = malloc(n);
    if (fixed == NULL)
      continue;
    snprintf(fixed, n, "%.*s%s%s", (int)(at - line), line, dir, at + sn);
    free(line);
    errors->lines[i] = fixed;
  }
}

int dg_admin_check(const char *dir, const json_t *files, dg_catalog_t **cat,
                   dg_config_errors_t *errors) {
  *cat = NULL;
  char real[PATH_MAX], stage[PATH_MAX];
  const char *tmp = getenv("TMPDIR");
  if (realpath(dir, real) == NULL) {
    dg_config_errors_add(errors, "datagate.json", "/", "cannot open '%s': %s", dir,
                         strerror(errno));
    return DG_ECONFIG;
  }
  snprintf(stage, sizeof(stage), "%s/datagate-admin.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (mkdtemp(stage) == NULL) {
    dg_config_errors_add(errors, "datagate.json", "/", "cannot create a staging directory: %s",
                         strerror(errno));
    return DG_EIO;
  }
  int rc = link_entries(real, stage, files);
  if (rc == 0)
    rc = stage_files(stage, files);
  if (rc != 0)
    dg_config_errors_add(errors, "datagate.json", "/", "cannot stage the change: %s",
                         dg_strerror(rc));
  else
    rc = dg_catalog_load(stage, cat, errors);
  remove_stage(stage);
  rename_dir_in_errors(errors, stage, dir);
  return rc;
}
