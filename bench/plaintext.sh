#!/usr/bin/env bash
# Plaintext: Proscenium vs actix-web, hyper and nginx, one loop/worker each, server on
# core 0 and wrk on core 1. Prints req/s, p50/p99 and server CPU µs per request for
# keep-alive (64 and 256 connections) and 16-deep pipelining, and Proscenium's ratios.
#
# The servers run side by side (idle ones cost nothing) and the runs go in rounds, each
# round measuring every server once in turn: the machine is shared, and its noise
# drifts over minutes, so measuring one server's runs back to back and the next
# server's later compared different machines. Each round starts with the next server,
# so that none is always measured first.
#
# Usage: bench/plaintext.sh            (DURATION=10 RUNS=3 by default; SERVERS and
#        SCENARIOS to pick, e.g. SCENARIOS=pipeline-16)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap stop_all EXIT INT TERM

need wrk
need nginx
need curl
build_proscenium
build_peer actix
build_peer hyper

work="$(mktemp -d)"
declare -A CMD=(
  [proscenium]="$RELEASE_DIR/hello --bind 127.0.0.1:8080 --loops 1"
  [actix]="$PEERS_TARGET/release/peer-actix --bind 127.0.0.1:8081 --workers 1"
  [hyper]="$PEERS_TARGET/release/peer-hyper --bind 127.0.0.1:8082 --workers 1"
  [nginx]="nginx -c $(nginx_conf "$work/nginx" 8083 "$work")"
)
declare -A PORT=([proscenium]=8080 [actix]=8081 [hyper]=8082 [nginx]=8083)
ALL_SCENARIOS=("keepalive-64:64:" "keepalive-256:256:" "pipeline-16:64:$BENCH_DIR/pipeline.lua")
# shellcheck disable=SC2206 # the list is split on purpose
servers=(${SERVERS:-proscenium actix hyper nginx})
rounds="$work/rounds.tsv"
results="$work/results.tsv"

declare -A PID
for server in "${servers[@]}"; do
  # shellcheck disable=SC2086 # the command line is split on purpose
  start_server ${CMD[$server]}
  PID[$server]="$SERVER_PID"
  url="http://127.0.0.1:${PORT[$server]}/plaintext"
  wait_ready "$url"
  check_answer "$url" "Hello, World!"
done
for round in $(seq "$RUNS"); do
  for scenario in "${ALL_SCENARIOS[@]}"; do
    IFS=: read -r name conns script <<<"$scenario"
    [[ " ${SCENARIOS:-$name} " == *" $name "* ]] || continue
    for i in "${!servers[@]}"; do
      server="${servers[$(((i + round) % ${#servers[@]}))]}"
      echo "round $round: $server $name..." >&2
      url="http://127.0.0.1:${PORT[$server]}/plaintext"
      echo "$server $name $round $(measure "${PID[$server]}" "$url" "$conns" "$script")" >>"$rounds"
    done
  done
done
awk '{ $3 = ""; print }' "$rounds" | tr -s ' ' | medians_by_pair >"$results"

mkdir -p "$BENCH_DIR/results"
stamp="$(date +%Y%m%d-%H%M%S)"
cp "$results" "$BENCH_DIR/results/plaintext-$stamp.tsv"
cp "$rounds" "$BENCH_DIR/results/plaintext-$stamp-rounds.tsv"
echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); ${DURATION}s x ${RUNS} runs, medians"
printf '%-11s %-14s %10s %9s %9s %12s\n' server scenario req/s p50_us p99_us cpu_us/req
awk '{ printf "%-11s %-14s %10d %9d %9d %12.2f\n", $1, $2, $4, $5, $6, $7 }' "$results"
echo
echo "Proscenium's ratios: within each round, median over rounds (CPU/req: lower is better; req/s: higher is better)"
for peer in "${servers[@]}"; do
  [ "$peer" = proscenium ] && continue
  awk '{ print $2 }' "$rounds" | sort -u | while read -r scenario; do
    # Columns of a round's row: server scenario round requests req/s p50 p99 cpu/req.
    ratios="$(awk -v p="$peer" -v s="$scenario" '
      $2 == s && $1 == "proscenium" { cpu[$3] = $8; rps[$3] = $5 }
      $2 == s && $1 == p { peer_cpu[$3] = $8; peer_rps[$3] = $5 }
      END { for (r in cpu) if (peer_cpu[r] > 0 && peer_rps[r] > 0) print cpu[r] / peer_cpu[r], rps[r] / peer_rps[r] }
    ' "$rounds" | medians)"
    read -r cpu rps <<<"$ratios"
    if [ -n "$cpu" ]; then
      printf 'vs %-6s %-14s cpu/req %.2fx   req/s %.2fx\n' "$peer" "$scenario" "$cpu" "$rps"
    fi
  done
done
