/* The process_* metrics of the Prometheus conventions, read from /proc at
 * each scrape: resident memory, open descriptors, CPU time and start time.
 * Each value is left out when the system cannot give it. */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "datagate/base.h"

/* Reads a small /proc file whole; false when it cannot be read. */
static bool read_small(const char *path, char *out, size_t size) {
  FILE *f = fopen(path, "r");
  if (f == NULL)
    return false;
  size_t n = fread(out, 1, size - 1, f);
  fclose(f);
  out[n] = '\0';
  return n > 0;
}

static void resident_memory(void) {
  char text[256];
  unsigned long long pages = 0, resident = 0;
  if (read_small("/proc/self/statm", text, sizeof(text)) &&
      sscanf(text, "%llu %llu", &pages, &resident) == 2)
    dg_metrics_gauge_set("process_resident_memory_bytes", NULL,
                         (double)resident * (double)sysconf(_SC_PAGESIZE));
}

static void open_fds(void) {
  DIR *d = opendir("/proc/self/fd");
  if (d == NULL)
    return;
  long n = 0;
  for (const struct dirent *e = readdir(d); e != NULL; e = readdir(d))
    n += e->d_name[0] != '.';
  closedir(d);
  /* The directory stream itself holds one descriptor while it is read. */
  dg_metrics_gauge_set("process_open_fds", NULL, (double)(n > 0 ? n - 1 : 0));
}

static void cpu_seconds(void) {
  struct rusage ru;
  if (getrusage(RUSAGE_SELF, &ru) != 0)
    return;
  double s = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
             (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
  dg_metrics_counter_set("process_cpu_seconds_total", NULL, s);
}

/* The boot time (seconds since the epoch) from the btime line of /proc/stat. */
static bool boot_time(unsigned long long *out) {
  char text[8192];
  if (!read_small("/proc/stat", text, sizeof(text)))
    return false;
  const char *p = strstr(text, "\nbtime ");
  return p != NULL && sscanf(p + 7, "%llu", out) == 1;
}

/* Field 22 of /proc/self/stat, the start in clock ticks after boot; the
 * fields are counted after the command name's closing parenthesis, which
 * may itself hold spaces. */
static bool start_ticks(unsigned long long *out) {
  char text[1024];
  if (!read_small("/proc/self/stat", text, sizeof(text)))
    return false;
  const char *p = strrchr(text, ')');
  for (int field = 2; p != NULL && field < 22; field++)
    p = strchr(p + 1, ' ');
  return p != NULL && sscanf(p + 1, "%llu", out) == 1;
}

/* Computed once per process: a forked worker has its own start. */
static void start_time(void) {
  static pid_t pid;
  static double seconds;
  unsigned long long btime = 0, ticks = 0;
  if (pid != getpid()) {
    long hz = sysconf(_SC_CLK_TCK);
    if (hz <= 0 || !boot_time(&btime) || !start_ticks(&ticks))
      return;
    pid = getpid();
    seconds = (double)btime + (double)ticks / (double)hz;
  }
  dg_metrics_gauge_set("process_start_time_seconds", NULL, seconds);
}

void dg_metrics_update_process(void) {
  dg_metrics_describe("process_resident_memory_bytes", "Resident memory size in bytes.");
  dg_metrics_describe("process_open_fds", "Number of open file descriptors.");
  dg_metrics_describe("process_cpu_seconds_total",
                      "Total user and system CPU time spent in seconds.");
  dg_metrics_describe("process_start_time_seconds",
                      "Start time of the process since unix epoch in seconds.");
  resident_memory();
  open_fds();
  cpu_seconds();
  start_time();
}
