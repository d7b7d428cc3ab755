/* SPDX-License-Identifier: AGPL-3.0-or-later */
/* Who owns a running submission. A process that stops in the middle of a
 * save tree (killed, crashed, the machine lost power) cannot record its
 * outcome; the next store to open finds the submission still "running"
 * and must tell a dead owner from a live one, since other workers of the
 * same gateway share the database. The token names the boot (a reboot
 * ends every process), the process id and its start time (a reused pid is
 * another process) and the store instance (a store closed and opened again
 * in one process). Linux /proc is the source; without it a process counts
 * as alive, so nothing is ever marked interrupted by mistake. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "store/internal.h"

static void read_boot_id(char *out, size_t size) {
  out[0] = '\0';
  FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
  if (f == NULL)
    return;
  if (fgets(out, (int)size, f) == NULL)
    out[0] = '\0';
  out[strcspn(out, "\n")] = '\0';
  fclose(f);
}

/* Field 22 of /proc/<pid>/stat: the start time in clock ticks since boot.
 * The command name (field 2) may hold spaces, so fields are counted after
 * its closing parenthesis. */
static bool start_time(long pid, unsigned long long *out) {
  char path[64], buf[1024];
  snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return false;
  size_t n = fread(buf, 1, sizeof(buf) - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  for (int field = 2; p != NULL && field < 22; field++)
    p = strchr(p + 1, ' ');
  return p != NULL && sscanf(p + 1, "%llu", out) == 1;
}

void dg__store_owner(char out[DG__STORE_OWNER_MAX]) {
  char boot[64], instance[DG_UUID_LEN + 1];
  unsigned long long start = 0;
  read_boot_id(boot, sizeof(boot));
  start_time((long)getpid(), &start);
  dg_uuid_v4(instance);
  snprintf(out, DG__STORE_OWNER_MAX, "%s/%ld/%llu/%s", boot, (long)getpid(), start, instance);
}

typedef struct owner {
  char boot[64];
  long pid;
  unsigned long long start;
  char instance[DG_UUID_LEN + 1];
} owner_t;

static bool parse_owner(const char *text, owner_t *o) {
  memset(o, 0, sizeof(*o));
  const char *slash = strchr(text, '/');
  if (slash == NULL || (size_t)(slash - text) >= sizeof(o->boot))
    return false;
  memcpy(o->boot, text, (size_t)(slash - text));
  return sscanf(slash + 1, "%ld/%llu/%36s", &o->pid, &o->start, o->instance) == 3;
}

bool dg__store_owner_alive(const char *text, const char *self) {
  owner_t o, me;
  if (text == NULL || !parse_owner(text, &o) || !parse_owner(self, &me))
    return false;
  if (o.boot[0] != '\0' && me.boot[0] != '\0' && strcmp(o.boot, me.boot) != 0)
    return false;
  if (o.pid == me.pid && o.start == me.start)
    return strcmp(o.instance, me.instance) == 0;
  if (kill((pid_t)o.pid, 0) != 0 && errno == ESRCH)
    return false;
  unsigned long long start = 0;
  /* Without /proc the process is taken for alive; with it, a different
   * start time means the pid now belongs to another process. */
  return !start_time(o.pid, &start) || start == o.start;
}

bool dg__store_owner_same_machine(const char *text, const char *self) {
  owner_t o, me;
  return text != NULL && parse_owner(text, &o) && parse_owner(self, &me) && o.boot[0] != '\0' &&
         strcmp(o.boot, me.boot) == 0;
}

const char *dg_store_submission_status_name(dg_store_submission_status_t status) {
  static const char *const names[] = {"running", "succeeded", "failed"};
  return (unsigned)status < DG_ARRAY_SIZE(names) ? names[status] : "unknown";
}
