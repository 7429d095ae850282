#!/usr/bin/env bash
# shellcheck disable=SC2034,SC2153,SC2004 # RELEASE_DIR and the like are for the scripts that source this file; CMD, PORT and PID are their associative arrays
# Shared functions of the benchmark scripts: tools, servers pinned to core 0, wrk
# pinned to core 1, server CPU time per request, medians, cleanup.
#
# Server CPU per request = (utime + stime of the server's process tree over the run)
#                          / requests completed in the run.

BENCH_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT_DIR="$(cd "$BENCH_DIR/.." && pwd)"
PEERS_TARGET="$BENCH_DIR/peers/target"
# This workspace's release builds (CARGO_TARGET_DIR moves them, as cargo does).
RELEASE_DIR="$(cd "$ROOT_DIR" && realpath -m "${CARGO_TARGET_DIR:-target}")/release"
SERVER_CORE="${SERVER_CORE:-0}"
LOAD_CORE="${LOAD_CORE:-1}"
DURATION="${DURATION:-10}"
RUNS="${RUNS:-3}"
CLK_TCK="$(getconf CLK_TCK)"
SERVER_PIDS=()

# Installs a Debian package when its command is missing, saying so.
need() {
  local cmd="$1" pkg="${2:-$1}"
  command -v "$cmd" >/dev/null 2>&1 && return 0
  echo "installing $pkg (needed for $cmd)..." >&2
  if ! { apt-get install -y -qq "$pkg" >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq "$pkg" >/dev/null; }; }; then
    echo "cannot install $pkg" >&2
    return 1
  fi
}

# Builds Proscenium's release binaries once.
build_proscenium() {
  (cd "$ROOT_DIR" && cargo build --release --quiet -p hello -p lab-app -p proscenium-cli)
}

# Builds one peer from bench/peers/NAME into bench/peers/target.
build_peer() {
  CARGO_TARGET_DIR="$PEERS_TARGET" cargo build --release --quiet --manifest-path "$BENCH_DIR/peers/$1/Cargo.toml"
}

# Starts a server pinned to the server core; sets SERVER_PID (not printed: a command
# substitution would run this in a subshell and the cleanup trap would never see it).
# Its output goes to the file SERVER_LOG names, if set, else nowhere.
start_server() {
  taskset -c "$SERVER_CORE" "$@" >"${SERVER_LOG:-/dev/null}" 2>&1 &
  SERVER_PID=$!
  SERVER_PIDS+=("$SERVER_PID")
}

# Waits until URL answers 200, up to 60 s — a server under valgrind on a busy machine
# takes a while (curl with CURL_FLAGS, if set: bench/h2.sh's cleartext HTTP/2 servers
# answer only --http2-prior-knowledge).
wait_ready() {
  local url="$1"
  for _ in $(seq 600); do
    # -k: bench/tls.sh's servers present a certificate of their own.
    # shellcheck disable=SC2086 # CURL_FLAGS is a list of flags
    [ "$(curl -sk ${CURL_FLAGS:-} -o /dev/null -w '%{http_code}' "$url")" = 200 ] && return 0
    sleep 0.1
  done
  echo "server at $url did not come up" >&2
  return 1
}

# Checks that URL answers exactly BODY, or (with --file) the bytes of file BODY.
check_answer() {
  if [ "$1" = --file ]; then
    curl -sk "$2" | cmp -s - "$3" && return 0
    echo "wrong answer from $2: not the bytes of $3" >&2
    return 1
  fi
  local url="$1" want="$2" got
  got="$(curl -sk "$url")"
  if [ "$got" != "$want" ]; then
    echo "wrong answer from $url: '$got'" >&2
    return 1
  fi
}

# Prints the pids of a process and all its descendants.
tree_pids() {
  local pid="$1" child
  echo "$pid"
  for child in $(pgrep -P "$pid" 2>/dev/null); do
    tree_pids "$child"
  done
}

# Prints the CPU ticks (utime + stime, threads included) of a process tree.
cpu_ticks() {
  local total=0 pid ticks
  for pid in $(tree_pids "$1"); do
    ticks="$(awk '{print $14 + $15}' "/proc/$pid/stat" 2>/dev/null || echo 0)"
    total=$((total + ticks))
  done
  echo "$total"
}

# Prints the resident memory (VmRSS, KiB) of a process tree, summed: pages the
# processes share (prefork's workers, nginx's) are counted once per process.
rss_kib() {
  local total=0 pid kib
  for pid in $(tree_pids "$1"); do
    kib="$(awk '/^VmRSS/ {print $2}' "/proc/$pid/status" 2>/dev/null || true)"
    total=$((total + ${kib:-0}))
  done
  echo "$total"
}

# Converts a wrk latency such as 1.23ms, 850.00us or 1.02s to microseconds.
to_us() {
  awk -v v="$1" 'BEGIN {
    n = v + 0
    if (v ~ /us$/) print n; else if (v ~ /ms$/) print n * 1000; else if (v ~ /s$/) print n * 1000000; else print n
  }'
}

# Runs wrk once against URL with CONNS connections (and an optional Lua script);
# prints "requests req_per_s p50_us p99_us cpu_us_per_req" for server PID.
measure() {
  local pid="$1" url="$2" conns="$3" script="${4:-}" before after out
  local args=(-t1 -c"$conns" -d"${DURATION}s" --latency)
  [ -n "$script" ] && args+=(-s "$script")
  # CPU_TICKS names another counter (bench/scripts.sh counts reaped children too).
  before="$("${CPU_TICKS:-cpu_ticks}" "$pid")"
  out="$(taskset -c "$LOAD_CORE" wrk "${args[@]}" "$url")"
  after="$("${CPU_TICKS:-cpu_ticks}" "$pid")"
  local requests rps p50 p99
  requests="$(echo "$out" | awk '/requests in/ {print $1}')"
  rps="$(echo "$out" | awk '/Requests\/sec/ {print $2}')"
  p50="$(to_us "$(echo "$out" | awk '$1 == "50%" {print $2}')")"
  p99="$(to_us "$(echo "$out" | awk '$1 == "99%" {print $2}')")"
  awk -v r="$requests" -v rps="$rps" -v p50="$p50" -v p99="$p99" -v t=$((after - before)) -v hz="$CLK_TCK" \
    'BEGIN { printf "%d %.0f %.0f %.0f %.3f\n", r, rps, p50, p99, (r > 0 ? t / hz * 1e6 / r : 0) }'
}

# Runs `measure` RUNS times; prints the median of each column.
measure_median() {
  for _ in $(seq "$RUNS"); do measure "$@"; done | medians
}

# Reads rows of numbers on stdin; prints the median of each column.
medians() {
  local rows c
  rows="$(cat)"
  for c in $(seq "$(echo "$rows" | head -1 | wc -w)"); do
    echo "$rows" | awk -v c="$c" '{print $c}' | sort -g |
      awk '{ v[NR] = $1 } END { printf "%s ", (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
  done
  echo
}

# Starts each named server from the CMD map (server commands) and waits until it
# answers PATH (over SCHEME, http unless set); fills the PID map (declare -A PID first).
start_all() {
  local path="$1" server
  shift
  for server in "$@"; do
    # shellcheck disable=SC2086 # the command line is split on purpose
    start_server ${CMD[$server]}
    PID[$server]="$SERVER_PID"
    wait_ready "${SCHEME:-http}://127.0.0.1:${PORT[$server]}$path"
  done
}

# Measures every running server (PID and PORT maps) in every scenario RUNS times, in
# rounds: each round runs each scenario on every server once, starting with a
# different server each round, so that drifting machine noise spreads over all
# servers and none is always first. A scenario is "NAME:CONNS:PATH:SCRIPT" (SCRIPT may
# be empty); the SCENARIOS variable, when set, names those to run. Prints one row per
# run: "server scenario round" and `measure`'s columns.
measure_rounds() {
  local -a servers=("$@")
  local round i server name conns path script url
  for round in $(seq "$RUNS"); do
    for scenario in "${SCENARIO_LIST[@]}"; do
      IFS=: read -r name conns path script <<<"$scenario"
      [[ " ${SCENARIOS:-$name} " == *" $name "* ]] || continue
      for i in "${!servers[@]}"; do
        server="${servers[$(((i + round) % ${#servers[@]}))]}"
        echo "round $round: $server $name..." >&2
        url="http://127.0.0.1:${PORT[$server]}$path"
        echo "$server $name $round $(measure "${PID[$server]}" "$url" "$conns" "$script")"
      done
    done
  done
}

# Reads `measure_rounds` rows; prints one row per server and scenario, in first-seen
# order: "server scenario" and the median of each of `measure`'s columns.
medians_by_pair() {
  local rows pair
  rows="$(cat)"
  echo "$rows" | awk '!seen[$1 " " $2]++ { print $1 " " $2 }' | while read -r pair; do
    echo "$pair $(echo "$rows" | awk -v p="$pair" '$1 " " $2 == p' | cut -d' ' -f4- | medians)"
  done
}

# Reads `measure_rounds` rows; prints for each scenario REF's CPU/req and req/s ratios
# to PEER's taken within each round, median over rounds: "scenario cpu rps".
round_ratios() {
  local ref="$1" peer="$2" rows scenario
  rows="$(cat)"
  echo "$rows" | awk '!seen[$2]++ { print $2 }' | while read -r scenario; do
    # Columns: server scenario round requests req/s p50 p99 cpu/req.
    echo "$scenario $(echo "$rows" | awk -v a="$ref" -v b="$peer" -v s="$scenario" '
      $2 == s && $1 == a { cpu[$3] = $8; rps[$3] = $5 }
      $2 == s && $1 == b { peer_cpu[$3] = $8; peer_rps[$3] = $5 }
      END { for (r in cpu) if (peer_cpu[r] > 0 && peer_rps[r] > 0) print cpu[r] / peer_cpu[r], rps[r] / peer_rps[r] }
    ' | medians)"
  done
}

# Copies a script's rows and medians to bench/results/NAME-DATE{,-rounds}.tsv.
keep_results() {
  local name="$1" rounds="$2" results="$3" stamp
  stamp="$(date +%Y%m%d-%H%M%S)"
  mkdir -p "$BENCH_DIR/results"
  cp "$results" "$BENCH_DIR/results/$name-$stamp.tsv"
  cp "$rounds" "$BENCH_DIR/results/$name-$stamp-rounds.tsv"
}

# Stops a server and its children by pid.
stop_server() {
  local pid
  for pid in $(tree_pids "$1" | sort -r); do
    kill "$pid" 2>/dev/null || true
  done
  wait "$1" 2>/dev/null || true
}

# Stops every server this script started (trap target).
stop_all() {
  local pid
  for pid in "${SERVER_PIDS[@]:-}"; do
    # An `if`, not `&&`: a script with no server left (instructions.sh starts its
    # own) would otherwise exit 1 from this, its EXIT trap.
    if [ -n "$pid" ]; then stop_server "$pid"; fi
  done
}

# Escapes VALUE for the replacement side of a sed `s|...|VALUE|`, lines and all.
sed_value() {
  printf '%s' "$1" | sed -e 's/[\\&|]/\\&/g' -e '$!s/$/\\/'
}

# Writes an nginx config serving /plaintext, /json and ROOT on PORT, one worker,
# pid, logs and temp files under DIR, EXTRA (optional) in its server block and
# LISTEN (optional, e.g. "ssl") after its listen address; prints the config path.
# The config is bench/nginx.conf.in, the lab's too (its servers/nginx.rs fills it).
nginx_conf() {
  local dir="$1" port="$2" root="$3" extra="${4:-}" listen="${5:-}"
  mkdir -p "$dir/logs" "$dir/tmp"
  # nginx's workers run as nobody: they must be able to read the root.
  chmod -R a+rX "$root" "$(dirname "$root")"
  sed -e 's|@MODULES@||' -e 's|@WORKERS@|1|' -e 's|@TYPES@||' -e 's|@HTTP@||' \
    -e 's|@BACKLOG@|1024|' -e "s|@PORT@|$port|" \
    -e "s|@DIR@|$(sed_value "$dir")|g" -e "s|@ROOT@|$(sed_value "$root")|" \
    -e "s|@LISTEN@|$(sed_value "$listen")|" -e "s|@SERVER@|$(sed_value "$extra")|" \
    "$BENCH_DIR/nginx.conf.in" >"$dir/nginx.conf"
  echo "$dir/nginx.conf"
}

# Makes the benchmarks' TLS certificate once (ECDSA P-256 for localhost and 127.0.0.1,
# openssl, in bench/tls/certs/), readable by nginx's and h2o's workers; sets CERTS to
# its directory.
tls_certs() {
  CERTS="$BENCH_DIR/tls/certs"
  if [ ! -f "$CERTS/cert.pem" ]; then
    mkdir -p "$CERTS"
    openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 3650 \
      -subj /CN=localhost -addext subjectAltName=DNS:localhost,IP:127.0.0.1 \
      -keyout "$CERTS/key.pem" -out "$CERTS/cert.pem" 2>/dev/null
  fi
  chmod a+r "$CERTS"/*.pem
}

# Runs wrk (-t1, on the load core, under PRIORITY if set) with ARGS, the URL last,
# against the server of PID; prints "requests per_s failures cpu_us_per_request"
# (failures: socket errors, timeouts and non-2xx answers).
wrk_row() {
  local pid="$1" before after out
  shift
  before="$(cpu_ticks "$pid")"
  # shellcheck disable=SC2086 # PRIORITY is a command and its arguments
  out="$(taskset -c "$LOAD_CORE" ${PRIORITY:-} wrk -t1 -d"${DURATION}s" "$@")"
  after="$(cpu_ticks "$pid")"
  echo "$out" | awk -v t=$((after - before)) -v hz="$CLK_TCK" '
    /requests in/ { r = $1 }
    /Requests\/sec/ { rps = $2 }
    /Socket errors/ { gsub(/,/, ""); failed += $4 + $6 + $8 + $10 }
    /Non-2xx/ { failed += $5 }
    END { printf "%d %.0f %d %.2f\n", r, rps, failed, (r > 0 ? t / hz * 1e6 / r : 0) }'
}
