#!/usr/bin/env bash
# Static files: Proscenium (`proscenium serve DIR`, under `loops` and `staged` with its
# one thread) vs nginx (sendfile on) for 1 KB,
# 300 KB and 5 MB files, 64 keep-alive connections, one loop/worker, server on core 0
# and wrk on core 1. Prints req/s, p50/p99, server CPU per request and per byte.
#
# Measured in rounds like plaintext.sh (`measure_rounds` in lib.sh); SCENARIOS=5m
# picks files.
#
# Usage: bench/static.sh               (DURATION=10 RUNS=3 by default)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap stop_all EXIT INT TERM

need wrk
need nginx
need curl
build_proscenium

work="$(mktemp -d)"
site="$work/site"
mkdir -p "$site"
head -c 1024 /dev/urandom >"$site/1k.bin"
head -c $((300 * 1024)) /dev/urandom >"$site/300k.bin"
head -c $((5 * 1024 * 1024)) /dev/urandom >"$site/5m.bin"
declare -A CMD=(
  [proscenium]="$RELEASE_DIR/proscenium serve $site --bind 127.0.0.1:8080 --loops 1"
  [nginx]="nginx -c $(nginx_conf "$work/nginx" 8083 "$site")"
  [staged]="$RELEASE_DIR/proscenium serve $site --bind 127.0.0.1:8084 --model staged:1"
)
declare -A PORT=([proscenium]=8080 [nginx]=8083 [staged]=8084)
SCENARIO_LIST=("1k:64:/1k.bin:" "300k:64:/300k.bin:" "5m:64:/5m.bin:")
servers=(proscenium staged nginx)
rounds="$work/rounds.tsv"
results="$work/results.tsv"

declare -A PID
start_all /1k.bin "${servers[@]}"
for server in "${servers[@]}"; do
  for file in 1k 300k 5m; do
    check_answer --file "http://127.0.0.1:${PORT[$server]}/$file.bin" "$site/$file.bin"
  done
done
measure_rounds "${servers[@]}" >"$rounds"
medians_by_pair <"$rounds" >"$results"
keep_results static "$rounds" "$results"

echo
echo "machine: $(nproc) cores; ${DURATION}s x ${RUNS} rounds, medians, 64 connections"
printf '%-11s %-5s %10s %9s %9s %12s %12s\n' server file req/s p50_us p99_us cpu_us/req cpu_ns/byte
while read -r server file _ rps p50 p99 cpu; do
  bytes="$(stat -c %s "$site/$file.bin")"
  awk -v s="$server" -v f="$file" -v rps="$rps" -v p50="$p50" -v p99="$p99" -v cpu="$cpu" -v b="$bytes" \
    'BEGIN { printf "%-11s %-5s %10d %9d %9d %12.2f %12.3f\n", s, f, rps, p50, p99, cpu, cpu * 1000 / b }'
done <"$results"
echo
echo "Proscenium's ratios to nginx: within each round, median over rounds"
round_ratios proscenium nginx <"$rounds" | awk 'NF == 3 {
  printf "vs nginx %-5s req/s %.2fx   cpu/req (and per byte) %.2fx\n", $1, $3, $2 }'
