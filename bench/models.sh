#!/usr/bin/env bash
# Execution models side by side: plaintext (examples/hello) and a 1 ms CPU route
# (examples/lab-app, /cpu?ms=1) under each model, 64 keep-alive connections.
# Prints req/s, p99 and server CPU per request.
#
# The multi-core models need both cores, so here the server and wrk share the whole
# machine (SERVER_CORE=0,1 LOAD_CORE=0,1 by default): the load generator takes CPU the
# server could have used, equally for every model.
#
# Usage: bench/models.sh                (DURATION=10 RUNS=3 by default)
set -euo pipefail
SERVER_CORE="${SERVER_CORE:-0,1}"
LOAD_CORE="${LOAD_CORE:-0,1}"
source "$(dirname "$0")/lib.sh"
trap stop_all EXIT INT TERM

need wrk
need curl
build_proscenium

MODELS=(loops:2 prefork:2 event-loop thread-pool thread-per-conn)
results="$(mktemp)"

for model in "${MODELS[@]}"; do
  # prefork:2 on 2 cores runs one loop per worker (cores / workers).
  start_server "$RELEASE_DIR/hello" --bind 127.0.0.1:8080 --model "$model"
  wait_ready http://127.0.0.1:8080/plaintext
  check_answer http://127.0.0.1:8080/plaintext "Hello, World!"
  echo "running $model plaintext..." >&2
  echo "$model plaintext $(measure_median "$SERVER_PID" http://127.0.0.1:8080/plaintext 64)" >>"$results"
  stop_server "$SERVER_PID"

  start_server "$RELEASE_DIR/lab-app" --bind 127.0.0.1:8080 --model "$model"
  wait_ready "http://127.0.0.1:8080/cpu?ms=1"
  echo "running $model cpu-1ms..." >&2
  echo "$model cpu-1ms $(measure_median "$SERVER_PID" "http://127.0.0.1:8080/cpu?ms=1" 64)" >>"$results"
  stop_server "$SERVER_PID"
done

mkdir -p "$BENCH_DIR/results"
cp "$results" "$BENCH_DIR/results/models-$(date +%Y%m%d-%H%M%S).tsv"
echo
echo "machine: $(nproc) cores shared by server and wrk; ${DURATION}s x ${RUNS} runs, medians, 64 connections"
printf '%-16s %-10s %10s %9s %12s\n' model route req/s p99_us cpu_us/req
awk '{ printf "%-16s %-10s %10d %9d %12.2f\n", $1, $2, $4, $6, $7 }' "$results"
awk '$2 == "plaintext" { rps[$1] = $4 } END { if (rps["loops:2"] > 0) printf "\nprefork:2 / loops:2 plaintext req/s: %.2f\n", rps["prefork:2"] / rps["loops:2"] }' "$results"
