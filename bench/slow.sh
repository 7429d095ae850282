#!/usr/bin/env bash
# Slow clients (issue 15): does a normal client keep getting answers while slowhttptest
# holds CONNS connections with slow headers (-H), a slow body (-B) or a slow read (-X)?
#
# Targets: `proscenium serve SITE --tools` under each model in TARGETS, and nginx (one
# worker) serving the same files. SITE holds 1k.bin (the normal client's file) and
# 300k.bin (what the slow readers read, three times a connection); the slow bodies
# go to POST /_echo, which reads the whole body before it answers (nginx answers its
# /_echo at once and discards the body as it trickles in).
#
# For each target and attack, on a fresh server: the attack runs DURATION seconds, in
# waves (slowhttptest does not reopen the connections a server closes, so when a wave
# has none left the next opens CONNS more, as an attacker would); once its first
# connections are opened (CONNS / RATE seconds) a normal client asks for
# /1k.bin every PROBE_EVERY seconds until PROBE_TIMEOUT before the attack's end, each
# on a fresh connection with a PROBE_TIMEOUT limit, and counts its answers: ok (2xx),
# refused (another status: 503, 408...), failed (timeout, reset, connection refused),
# and the median and max latency of the ok ones. Also recorded: the server's RSS (its
# process tree) before, under the attack and after it; whether it still answers after
# the attack (up, no-answer, dead; +replaced when a prefork or nginx worker was
# replaced); and slowhttptest's own counts (connections connected while the client
# probes, median and peak; waves; closed/pending/connected at the last wave's end), so
# a row shows whether the attack held: it says "did not hold" when the median is under
# a tenth of CONNS.
#
# PROBE_TIMEOUT (8 s) is longer than Proscenium's timeouts.queue (5 s), so that a 503
# sent at that deadline counts as refused, not as a timeout.
#
# The server is pinned to core 0, slowhttptest and the client to core 1.
#
# Usage: bench/slow.sh    (defaults: the full matrix, about 14 minutes)
#   TARGETS="loops thread-pool thread-per-conn prefork:2 nginx"  Proscenium models, nginx
#   ATTACKS="headers body read"   DURATION=50 (seconds an attack)
#   CONNS=1000  RATE=200 (slow connections opened a second)
#   PROBE_EVERY=0.5  PROBE_TIMEOUT=8 (seconds)
# Prints a markdown table (also in bench/results/slow-DATE.md, rows in slow-DATE.tsv)
# to paste into docs/models.md.
set -euo pipefail
DURATION="${DURATION:-50}"
source "$(dirname "$0")/lib.sh"
trap stop_all EXIT INT TERM

TARGETS="${TARGETS:-loops thread-pool thread-per-conn prefork:2 nginx}"
ATTACKS="${ATTACKS:-headers body read}"
CONNS="${CONNS:-1000}"
RATE="${RATE:-200}"
PROBE_EVERY="${PROBE_EVERY:-0.5}"
PROBE_TIMEOUT="${PROBE_TIMEOUT:-8}"
PORT=8080

need slowhttptest
need nginx
need curl
build_proscenium
# Both sides hold CONNS sockets and more.
ulimit -n "$(ulimit -Hn)"
if [ "$(ulimit -n)" -lt $((CONNS + 1000)) ]; then
  echo "open-file limit $(ulimit -n) is too low for $CONNS connections" >&2
  exit 1
fi
ramp=$(((CONNS + RATE - 1) / RATE + 1))
window=$((DURATION - ramp - PROBE_TIMEOUT))
if [ "$window" -lt 10 ]; then
  echo "DURATION=$DURATION leaves $window s of probing after the ${ramp} s ramp: raise it" >&2
  exit 1
fi

work="$(mktemp -d)"
site="$work/site"
mkdir -p "$site"
head -c 1024 /dev/urandom >"$site/1k.bin"
head -c $((300 * 1024)) /dev/urandom >"$site/300k.bin"
nginx_cmd="nginx -c $(nginx_conf "$work/nginx" "$PORT" "$site" "location = /_echo { return 200 'ok'; }")"

# Prints the slowhttptest arguments of an attack on the server at BASE lasting
# SECONDS.
attack_args() {
  local attack="$1" base="$2" seconds="$3"
  local common=(-c "$CONNS" -r "$RATE" -l "$seconds" -p "$PROBE_TIMEOUT")
  case "$attack" in
  headers) echo -H "${common[@]}" -i 5 -x 24 -u "$base/1k.bin" ;;
  body) echo -B "${common[@]}" -i 5 -x 10 -s 8192 -t POST -u "$base/_echo" ;;
  read) echo -X "${common[@]}" -w 512 -y 1024 -n 5 -z 32 -k 3 -u "$base/300k.bin" ;;
  *)
    echo "unknown attack $attack (headers, body, read)" >&2
    return 1
    ;;
  esac
}

# Runs an attack on the server at BASE in waves until DURATION seconds have passed:
# slowhttptest does not reopen the connections a server closes, so when a wave has
# none left the next opens CONNS more, as an attacker would. Writes the waves' CSV
# rows to RUN.csv, their seconds counted from the attack's start, and each wave's
# output to RUN-N.out; prints the number of waves and the last one's exit status.
attack() {
  local attack="$1" base="$2" run="$3" start now waves=0 args
  start="$(date +%s)"
  : >"$run.csv"
  while now="$(date +%s)" && [ $((start + DURATION - now)) -ge 2 ]; do
    waves=$((waves + 1))
    read -ra args <<<"$(attack_args "$attack" "$base" $((start + DURATION - now)))"
    if ! taskset -c "$LOAD_CORE" slowhttptest "${args[@]}" -g -o "$run-$waves" >"$run-$waves.out" 2>&1; then
      echo "slowhttptest failed:" >&2
      cat "$run-$waves.out" >&2
      return 1
    fi
    awk -F, -v o=$((now - start)) 'NR > 1 { print $1 + o "," $2 "," $3 "," $4 }' "$run-$waves.csv" >>"$run.csv"
  done
  echo "$waves $(sed 's/\x1b\[[0-9;]*[A-Za-z]//g' "$run-$waves.out" | awk -F': *' '/^Exit status/ { print $2 }')"
}

# Asks for URL every PROBE_EVERY seconds for SECONDS, each on a fresh connection
# within PROBE_TIMEOUT, on the load core; prints "status seconds curl_exit" a probe.
probe() {
  local url="$1" seconds="$2" n pids=()
  n="$(awk -v s="$seconds" -v e="$PROBE_EVERY" 'BEGIN { print int(s / e) }')"
  for _ in $(seq "$n"); do
    (
      rc=0
      out="$(taskset -c "$LOAD_CORE" curl -s -o /dev/null --max-time "$PROBE_TIMEOUT" \
        -w '%{http_code} %{time_total}' "$url")" || rc=$?
      echo "$out $rc"
    ) &
    pids+=("$!")
    sleep "$PROBE_EVERY"
  done
  wait "${pids[@]}"
}

# Reads `probe` lines; prints "probes ok refused failed median_ms max_ms" (- for no ok).
probe_summary() {
  local lines ms
  lines="$(cat)"
  ms="$(echo "$lines" | awk '$1 ~ /^2/ { printf "%.1f\n", $2 * 1000 }' | sort -g)"
  echo "$lines" | awk 'NF { n++ } $1 ~ /^2/ { ok++ } $1 !~ /^2/ && $1 != "000" { refused++ }
    $1 == "000" { failed++ } END { printf "%d %d %d %d ", n, ok, refused, failed }'
  if [ -n "$ms" ]; then
    echo "$(echo "$ms" | medians)$(echo "$ms" | tail -1)"
  else
    echo "- -"
  fi
}

# Reads `attack`'s CSV rows (seconds, closed, pending, connected); prints the median
# and the peak of connected from FROM to TO seconds (none after the last row: the
# attack was over), and closed/pending/connected in the last row.
attack_summary() {
  local from="$1" to="$2" csv connected
  csv="$(cat)"
  connected="$(echo "$csv" | awk -F, -v a="$from" -v b="$to" '
    NF && $1 >= a && $1 <= b { print $4 }
    NF { last = $1 }
    END { for (s = (last < a ? a : last + 1); s <= b; s++) print 0 }' | sort -g)"
  if [ -n "$connected" ]; then
    echo -n "$(echo "$connected" | medians)$(echo "$connected" | tail -1) "
  else
    echo -n "- - "
  fi
  echo "$csv" | awk -F, 'END { print (NF ? $2 "/" $3 "/" $4 : "-") }'
}

# Starts a target, checks it serves the site, and sets SERVER_PID; fails loudly,
# with the server's output, when it does not come up.
start_target() {
  local target="$1" log="$2"
  local base="http://127.0.0.1:$PORT"
  if [ "$target" = nginx ]; then
    # shellcheck disable=SC2086 # the command line is split on purpose
    SERVER_LOG="$log" start_server $nginx_cmd
  else
    SERVER_LOG="$log" start_server "$RELEASE_DIR/proscenium" serve "$site" --tools \
      --bind "127.0.0.1:$PORT" --model "$target"
  fi
  if ! wait_ready "$base/1k.bin" || ! check_answer --file "$base/1k.bin" "$site/1k.bin"; then
    echo "$target did not come up; its output:" >&2
    cat "$log" >&2
    exit 1
  fi
}

# Prints how the server is after an attack: up (answers 200), no-answer (running but
# silent) or dead (exited: its output then goes to stderr); "+replaced" when its
# processes are not those of PROCS (a prefork worker or an nginx worker replaced).
server_state() {
  local pid="$1" log="$2" procs="$3" state
  if [[ "$(ps -o stat= -p "$pid" || true)" =~ ^Z?$ ]]; then
    echo dead
    echo "the server died; its output:" >&2
    tail -20 "$log" >&2
    return
  elif [ "$(curl -s -o /dev/null --max-time "$PROBE_TIMEOUT" -w '%{http_code}' "http://127.0.0.1:$PORT/1k.bin")" = 200 ]; then
    state=up
  else
    state=no-answer
  fi
  [ "$(tree_pids "$pid" | sort | xargs)" = "$procs" ] || state="$state+replaced"
  echo "$state"
}

# Runs one attack on one target; prints a row: target attack, `probe_summary`'s
# columns, `attack_summary`'s, RSS KiB before/under/after, the state after, and
# `attack`'s waves and exit status (words, last).
run_one() {
  local target="$1" attack="$2" run="$work/$1-$2"
  local base="http://127.0.0.1:$PORT" pid procs slow rss_before rss_under probes
  start_target "$target" "$run.log"
  pid="$SERVER_PID"
  procs="$(tree_pids "$pid" | sort | xargs)"
  rss_before="$(rss_kib "$pid")"
  attack "$attack" "$base" "$run" >"$run.waves" &
  slow=$!
  sleep "$ramp"
  probes="$(probe "$base/1k.bin" "$window" | tee "$run.probes" | probe_summary)"
  rss_under="$(rss_kib "$pid")"
  if ! wait "$slow"; then
    echo "the attack on $target ($attack) failed" >&2
    exit 1
  fi
  sleep 1
  echo "$target $attack $probes $(attack_summary "$ramp" "$((ramp + window))" <"$run.csv") \
$rss_before $rss_under $(rss_kib "$pid") $(server_state "$pid" "$run.log" "$procs") $(cat "$run.waves")"
  stop_server "$pid"
}

for attack in $ATTACKS; do attack_args "$attack" "" 0 >/dev/null; done
rows="$work/rows.tsv"
started="$(date +%s)"
for target in $TARGETS; do
  for attack in $ATTACKS; do
    echo "$(date -u +%H:%M:%S) $target under slow $attack..." >&2
    run_one "$target" "$attack" >>"$rows"
    tail -1 "$rows" >&2
  done
done

stamp="$(date +%Y%m%d-%H%M%S)"
mkdir -p "$BENCH_DIR/results"
cp "$rows" "$BENCH_DIR/results/slow-$stamp.tsv"
{
  echo "Measured $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) vCPUs ($(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs)), Linux $(uname -r), $(slowhttptest -h 2>&1 | awk '/version/ { print "slowhttptest", $NF; exit }' || true), $(nginx -v 2>&1 | cut -d: -f2 | xargs);"
  echo "\`TARGETS=\"$TARGETS\" ATTACKS=\"$ATTACKS\" DURATION=$DURATION CONNS=$CONNS RATE=$RATE PROBE_EVERY=$PROBE_EVERY PROBE_TIMEOUT=$PROBE_TIMEOUT bench/slow.sh\`, $(($(date +%s) - started)) s."
  echo
  echo "| target | attack | ok | refused | failed | of | ok median ms | ok max ms | slow conns held: median (peak) | waves | last wave's end: closed/pending/connected, status | RSS MiB before/under/after | after |"
  echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---|---|"
  awk -v conns="$CONNS" '{
    held = $9 " (" $10 ")" (($9 == "-" || $9 < conns / 10) ? " did not hold" : "")
    end = $11 ","; for (i = 17; i <= NF; i++) end = end " " $i
    printf "| `%s` | slow %s | %d | %d | %d | %d | %s | %s | %s | %d | %s | %.1f/%.1f/%.1f | %s |\n",
      $1, $2, $4, $5, $6, $3, $7, $8, held, $16, end, $12 / 1024, $13 / 1024, $14 / 1024, $15
  }' "$rows"
} | tee "$BENCH_DIR/results/slow-$stamp.md"
