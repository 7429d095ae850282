#!/usr/bin/env bash
# The blocked-loop story: light requests' latency while 10 % of requests burn 50 ms of
# CPU, under event-loop, loops, loops with the heavy work on the blocking pool, and
# thread-pool. A background wrk sends the mix (mix.lua); a second wrk measures the
# light route alone, and its p50/p99 are what a light request sees meanwhile. The server
# is examples/lab-app (its /cpu routes), with --tools for the light route /_echo.
#
# Usage: bench/blocked-loop.sh          (DURATION=10 RUNS=3 by default)
set -euo pipefail
SERVER_CORE="${SERVER_CORE:-0,1}"
LOAD_CORE="${LOAD_CORE:-0,1}"
source "$(dirname "$0")/lib.sh"
trap stop_all EXIT INT TERM

need wrk
need curl
build_proscenium

# model, heavy route
CASES=("event-loop /cpu" "loops:2 /cpu" "loops:2 /cpu-blocking" "thread-pool /cpu")
results="$(mktemp)"

for case in "${CASES[@]}"; do
  read -r model heavy <<<"$case"
  start_server "$RELEASE_DIR/lab-app" --tools --bind 127.0.0.1:8080 --model "$model"
  wait_ready http://127.0.0.1:8080/_echo
  echo "running $model with $heavy..." >&2
  for _ in $(seq "$RUNS"); do
    taskset -c "$LOAD_CORE" wrk -t1 -c8 -d"$((DURATION + 2))s" -s "$BENCH_DIR/mix.lua" \
      "http://127.0.0.1:8080$heavy" >/dev/null 2>&1 &
    mix=$!
    sleep 1
    light="$(measure "$SERVER_PID" http://127.0.0.1:8080/_echo 4)"
    wait "$mix" || true
    echo "$model$heavy $light"
  done | awk '{ print $1, $4, $5 }' | sort -k3 -g | awk -v n="$RUNS" 'NR == int((n + 1) / 2) { print }' >>"$results"
  stop_server "$SERVER_PID"
done

mkdir -p "$BENCH_DIR/results"
cp "$results" "$BENCH_DIR/results/blocked-loop-$(date +%Y%m%d-%H%M%S).tsv"
echo
echo "light requests (GET /_echo, 4 connections) while 8 connections send 10 % x 50 ms CPU;"
echo "machine: $(nproc) cores shared by server and load; ${DURATION}s x ${RUNS} runs, median by p99"
printf '%-26s %10s %10s\n' "model + heavy route" p50_us p99_us
awk '{ printf "%-26s %10d %10d\n", $1, $2, $3 }' "$results"
