# SPDX-License-Identifier: AGPL-3.0-or-later
# Shared functions of the benchmark scripts (bench/http, bench/ws); sourced,
# not run. Every process a benchmark starts is recorded and stopped by its
# own pid when the script exits.

bench_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
bench_pids=()
bench_tmp=""

say() {
  printf '%s\n' "$*"
}

die() {
  printf '%s: error: %s\n' "$(basename "$0")" "$*" >&2
  exit 1
}

bench_cleanup() {
  local pid
  for pid in "${bench_pids[@]}"; do
    kill -TERM "$pid" 2>/dev/null || true
  done
  for pid in "${bench_pids[@]}"; do
    wait "$pid" 2>/dev/null || true
  done
  bench_pids=()
  if [ -n "$bench_tmp" ] && [ -z "${BENCH_KEEP:-}" ]; then
    rm -rf "$bench_tmp"
  fi
}

# Creates the run's scratch directory and arranges the clean-up.
bench_init() {
  bench_tmp="$(mktemp -d "${TMPDIR:-/tmp}/datagate-bench.XXXXXX")"
  trap bench_cleanup EXIT
  trap 'exit 130' INT TERM
  export DATAGATE_TOKEN_ADMIN="${DATAGATE_TOKEN_ADMIN:-dev-admin-token}"
  export DATAGATE_TOKEN_SALES="${DATAGATE_TOKEN_SALES:-dev-sales-token}"
  export DATAGATE_TOKEN_AUDITOR="${DATAGATE_TOKEN_AUDITOR:-dev-auditor-token}"
}

# Share of the CPUs (percent) that other processes used over one second.
bench_busy() {
  local a b
  a="$(head -n 1 /proc/stat)"
  sleep 1
  b="$(head -n 1 /proc/stat)"
  awk -v a="$a" -v b="$b" 'BEGIN {
    n = split(a, x, " "); split(b, y, " "); total = 0
    for (i = 2; i <= n; i++) total += y[i] - x[i]
    idle = (y[5] - x[5]) + (y[6] - x[6])
    printf "%.0f\n", (total > 0) ? 100 * (total - idle) / total : 0 }'
}

# The machine, for the record: CPU model, cores, kernel, load, and a
# warning when other processes keep it busy (the figures then scatter).
bench_machine() {
  local model busy
  model="$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -n 1)"
  busy="$(bench_busy)"
  say "machine: ${model:-unknown CPU}, $(nproc) cores, $(uname -sr)," \
    "load average $(cut -d' ' -f1-3 /proc/loadavg), CPUs ${busy}% busy before the run"
  if [ "$busy" -gt 10 ]; then
    say "warning: other processes use ${busy}% of the CPUs; the figures will scatter" \
      "(the ratios, measured in alternating rounds, suffer least)"
  fi
}

# A TCP port on 127.0.0.1 that nothing listens on now, below the kernel's
# ephemeral range (from 32768), where the clients' own ports come from.
bench_free_port() {
  local port tries
  for tries in $(seq 1 100); do
    port=$((10000 + RANDOM % 22000))
    if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      printf '%s\n' "$port"
      return 0
    fi
  done
  die "no free port found"
}

# Waits until something accepts connections on 127.0.0.1:$1.
bench_wait_port() {
  local port="$1" pid="$2" i
  for i in $(seq 1 200); do
    if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
      return 0
    fi
    kill -0 "$pid" 2>/dev/null || return 1
    sleep 0.05
  done
  return 1
}

# Copies conf/ into $bench_tmp/conf with the server settings a benchmark
# needs, given as a JSON object merged into "server".
bench_config() {
  local overrides="$1" dir="$bench_tmp/conf"
  mkdir -p "$dir"
  cp "$bench_root"/conf/*.json "$dir/"
  node -e '
    const fs = require("fs");
    const file = process.argv[1];
    const c = JSON.parse(fs.readFileSync(file, "utf8"));
    Object.assign(c.server, JSON.parse(process.argv[2]));
    fs.writeFileSync(file, JSON.stringify(c, null, 2));
  ' "$dir/datagate.json" "$overrides"
  printf '%s\n' "$dir"
}

# Starts the release build of the gateway. Sets gw_pid (the process started:
# the worker itself, or the master with --workers > 1), gw_pids (the
# processes that serve) and gw_port.
#   gateway_start CONFIG_DIR WORKERS CPU_LIST   (CPU_LIST "" for no pinning)
gateway_start() {
  local config="$1" workers="$2" cpus="$3" i
  local bin="${BENCH_DATAGATE:-$bench_root/build/release/datagate}"
  [ -x "$bin" ] || die "$bin is missing: run bench/setup"
  gw_port="$(bench_free_port)"
  local cmd=("$bin" --config "$config" --listen "127.0.0.1:$gw_port" --workers "$workers")
  if [ -n "$cpus" ]; then
    cmd=(taskset -c "$cpus" "${cmd[@]}")
  fi
  "${cmd[@]}" 2>>"$bench_tmp/gateway.log" &
  gw_pid=$!
  bench_pids+=("$gw_pid")
  bench_wait_port "$gw_port" "$gw_pid" || {
    cat "$bench_tmp/gateway.log" >&2
    die "the gateway did not start"
  }
  gw_pids=("$gw_pid")
  if [ "$workers" -gt 1 ]; then
    for i in $(seq 1 100); do
      mapfile -t gw_pids < <(pgrep -P "$gw_pid")
      [ "${#gw_pids[@]}" -ge "$workers" ] && break
      sleep 0.05
    done
    [ "${#gw_pids[@]}" -eq "$workers" ] || die "expected $workers workers, found ${#gw_pids[@]}"
    sleep 0.3 # every worker has bound the port once all of them run
  fi
}

# Stops the gateway gracefully and waits for it.
gateway_stop() {
  kill -TERM "$gw_pid" 2>/dev/null || true
  wait "$gw_pid" 2>/dev/null || true
  local kept=() pid
  for pid in "${bench_pids[@]}"; do
    [ "$pid" = "$gw_pid" ] || kept+=("$pid")
  done
  bench_pids=("${kept[@]}")
}

# CPU time (user + system, in clock ticks) used so far by the given pids.
cpu_ticks() {
  local pid total=0 fields
  for pid in "$@"; do
    fields="$(sed 's/^.*) //' "/proc/$pid/stat" 2>/dev/null)" || continue
    # After the command name: field 14 (utime) and 15 (stime) of stat(5).
    total=$((total + $(awk '{print $12 + $13}' <<<"$fields")))
  done
  printf '%s\n' "$total"
}

# Median of the numbers given as arguments.
median() {
  printf '%s\n' "$@" | sort -g | awk '{v[NR] = $1} END {
    if (NR == 0) { print 0; exit }
    if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# a / b with two decimals.
ratio() {
  awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f\n", a / b; else print "n/a" }'
}

# ---- PostgreSQL (bench/query and bench/aggregate with BENCH_STORE=postgresql) ----------------

# Starts a throw-away PostgreSQL 15 (scripts/pg-test-server) stopped when
# the script exits; sets bench_pg_uri and bench_pg_postmaster.
bench_pg_start() {
  local dir="$bench_tmp/pg"
  bench_pg_uri="$(bash "$bench_root/scripts/pg-test-server" start "$dir")" ||
    die "PostgreSQL did not start (scripts/pg-test-server)"
  bench_pg_dir="$dir"
  trap 'bash "$bench_root/scripts/pg-test-server" stop "$bench_pg_dir" >/dev/null 2>&1 || true;
        bench_cleanup' EXIT
  bench_pg_postmaster="$(head -n 1 "$(cat "$dir/cluster")/data/postmaster.pid")"
}

# CPU time (clock ticks) of the PostgreSQL server so far: the postmaster's
# own and that of its ended children (the backends of closed connections).
bench_pg_ticks() {
  local fields
  fields="$(sed "s/^.*) //" "/proc/${bench_pg_postmaster:-none}/stat" 2>/dev/null)" || {
    echo 0
    return
  }
  awk '{print $12 + $13 + $14 + $15}' <<<"$fields"
}

# Copies the SQLite dataset $1 into the PostgreSQL database $2: the
# gateway migrates an empty database (a copy of conf/ without sample
# data), then every model table's stored columns go over as CSV (COPY),
# and the planner's statistics are gathered. Leaves a database whose
# Orders table has rows as it is.
bench_pg_load() {
  local db="$1" uri="$2" bin="${BENCH_DATAGATE:-$bench_root/build/release/datagate}"
  local have table cols log="$bench_tmp/pg-migrate.log" pid i
  have="$(psql "$uri" -qAtc 'SELECT count(*) FROM "Orders"' 2>/dev/null || echo 0)"
  if [ "${have:-0}" -gt 0 ]; then
    say "PostgreSQL: $uri already holds $have Orders; not loaded again"
    return 0
  fi
  rm -rf "$bench_tmp/pg-conf"
  cp -r "$bench_root/conf" "$bench_tmp/pg-conf"
  rm -rf "$bench_tmp/pg-conf/data"
  "$bin" --config "$bench_tmp/pg-conf" --database "$uri" --listen 127.0.0.1:0 --log-level info \
    2>"$log" &
  pid=$!
  for i in $(seq 1 600); do
    grep -q '"event":"listening"' "$log" && break
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  grep -q '"event":"listening"' "$log" || {
    kill -KILL "$pid" 2>/dev/null || true
    cat "$log" >&2
    die "the gateway did not migrate $uri"
  }
  kill -TERM "$pid"
  wait "$pid" || die "the gateway did not stop cleanly (log: $log)"
  local started=$SECONDS
  for table in $(sqlite3 "$db" "SELECT name FROM sqlite_master WHERE type = 'table' AND
                   name NOT LIKE '\\_%' ESCAPE '\\' AND name NOT LIKE 'sqlite%'"); do
    cols="$(sqlite3 "$db" "SELECT group_concat('\"' || name || '\"', ',') FROM
              pragma_table_info('$table') WHERE name <> '_seq'")"
    sqlite3 -csv "$db" "SELECT $cols FROM \"$table\" ORDER BY _seq" |
      psql "$uri" -q -v ON_ERROR_STOP=1 -c "\\copy \"$table\" ($cols) FROM STDIN WITH (FORMAT csv)" ||
      die "could not copy $table into PostgreSQL"
  done
  psql "$uri" -q -c "VACUUM ANALYZE" || die "VACUUM ANALYZE failed"
  say "PostgreSQL: $(psql "$uri" -qAtc 'SELECT count(*) FROM "Orders"') Orders loaded from $db" \
    "in $((SECONDS - started)) s"
}
