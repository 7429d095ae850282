#!/usr/bin/env bash
# Static files: Proscenium (`proscenium serve DIR`) vs nginx (sendfile on) for 1 KB,
# 300 KB and 5 MB files, 64 keep-alive connections, one loop/worker, server on core 0
# and wrk on core 1. Prints req/s, p50/p99, server CPU per request and per byte.
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
)
declare -A PORT=([proscenium]=8080 [nginx]=8083)
results="$work/results.tsv"

for server in proscenium nginx; do
  # shellcheck disable=SC2086 # the command line is split on purpose
  start_server ${CMD[$server]}
  pid="$SERVER_PID"
  wait_ready "http://127.0.0.1:${PORT[$server]}/1k.bin"
  for file in 1k 300k 5m; do
    url="http://127.0.0.1:${PORT[$server]}/$file.bin"
    [ "$(curl -s "$url" | cmp - "$site/$file.bin" && echo same)" = same ] || { echo "wrong bytes from $server" >&2; exit 1; }
    echo "running $server $file..." >&2
    echo "$server $file $(stat -c %s "$site/$file.bin") $(measure_median "$pid" "$url" 64)" >>"$results"
  done
  stop_server "$pid"
done

mkdir -p "$BENCH_DIR/results"
cp "$results" "$BENCH_DIR/results/static-$(date +%Y%m%d-%H%M%S).tsv"
echo
echo "machine: $(nproc) cores; ${DURATION}s x ${RUNS} runs, medians, 64 connections"
printf '%-11s %-5s %10s %9s %9s %12s %12s\n' server file req/s p50_us p99_us cpu_us/req cpu_ns/byte
awk '{ printf "%-11s %-5s %10d %9d %9d %12.2f %12.3f\n", $1, $2, $5, $6, $7, $8, $8 * 1000 / $3 }' "$results"
echo
awk '
  $1 == "proscenium" { cpu[$2] = $8; rps[$2] = $5; next }
  { printf "vs nginx %-5s req/s %.2fx   cpu/req %.2fx\n", $2, rps[$2] / $5, cpu[$2] / $8 }' "$results"
