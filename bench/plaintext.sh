#!/usr/bin/env bash
# Plaintext: Proscenium (`loops`, and `staged` with its one thread) vs actix-web, hyper
# and nginx, one loop/worker each, and the floor (bench/peers/floor: one recv and one
# send a request or pipelined batch, nothing parsed — the least a server can spend
# here), server on core 0 and wrk on core 1. Prints req/s, p50/p99 and server CPU µs
# per request for keep-alive (64 and 256 connections) and 16-deep pipelining, and
# Proscenium's ratios to each.
#
# The servers run side by side (idle ones cost nothing) and are measured in rounds
# (`measure_rounds` in lib.sh): the machine is shared and its noise drifts over
# minutes, so one server's runs back to back and the next server's later would compare
# different machines.
#
# `ROUTE=/json` measures TechEmpower's JSON instead: `{"message":"Hello, World!"}`
# serialized with serde_json by every Rust server for each request (nginx returns it
# as a literal; the floor, which parses no path, is left out).
#
# Two more of Proscenium, run only when SERVERS names them: `bare` (request ids off,
# as `proscenium` has no metrics: `[admin]` off) and `metered` (`[admin]` on, so every
# request counted and timed, and request ids): what operating it costs, `metered`
# against `bare` in one run (issue 36 bounds it at 3 %).
#
# And `base`, run when SERVERS names it: the `hello` binary BASE_HELLO names, built
# from an earlier commit, so what a change costs is measured against what it changed
# in the same rounds (`proscenium`'s ratios to it).
#
# Usage: bench/plaintext.sh            (DURATION=10 RUNS=3 by default; SERVERS and
#        SCENARIOS to pick, e.g. SCENARIOS=pipeline-16; ROUTE=/json;
#        SERVERS="bare metered" for the cost of metrics and request ids;
#        SERVERS="proscenium base" BASE_HELLO=path/to/hello for a change's cost)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap stop_all EXIT INT TERM

need wrk
need nginx
need curl
need cc gcc
build_proscenium
build_peer actix
build_peer hyper

work="$(mktemp -d)"
cc -O2 -o "$work/floor" "$BENCH_DIR/peers/floor/floor.c"
printf '[request_id]\nenabled = false\n' >"$work/bare.toml"
printf '[admin]\nbind = "127.0.0.1:0"\n' >"$work/metered.toml"
declare -A CMD=(
  [proscenium]="$RELEASE_DIR/hello --bind 127.0.0.1:8080 --loops 1"
  [actix]="$PEERS_TARGET/release/peer-actix --bind 127.0.0.1:8081 --workers 1"
  [hyper]="$PEERS_TARGET/release/peer-hyper --bind 127.0.0.1:8082 --workers 1"
  [nginx]="nginx -c $(nginx_conf "$work/nginx" 8083 "$work")"
  [staged]="$RELEASE_DIR/hello --bind 127.0.0.1:8084 --model staged:1"
  [floor]="$work/floor --bind 127.0.0.1:8085"
  [bare]="$RELEASE_DIR/hello --bind 127.0.0.1:8086 --loops 1 --config $work/bare.toml"
  [metered]="$RELEASE_DIR/hello --bind 127.0.0.1:8087 --loops 1 --config $work/metered.toml"
  [base]="${BASE_HELLO:-BASE_HELLO-is-not-set} --bind 127.0.0.1:8088 --loops 1"
)
declare -A PORT=([proscenium]=8080 [actix]=8081 [hyper]=8082 [nginx]=8083 [staged]=8084 [floor]=8085 [bare]=8086 [metered]=8087 [base]=8088)
ROUTE="${ROUTE:-/plaintext}"
case "$ROUTE" in
  /plaintext) ANSWER="Hello, World!" EVERY="proscenium staged actix hyper nginx floor" ;;
  /json) ANSWER='{"message":"Hello, World!"}' EVERY="proscenium staged actix hyper nginx" ;;
  *) echo "ROUTE is /plaintext or /json" >&2; exit 2 ;;
esac
SCENARIO_LIST=(
  "keepalive-64:64:$ROUTE:"
  "keepalive-256:256:$ROUTE:"
  "pipeline-16:64:$ROUTE:$BENCH_DIR/pipeline.lua"
)
# shellcheck disable=SC2206 # the list is split on purpose
servers=(${SERVERS:-$EVERY})
rounds="$work/rounds.tsv"
results="$work/results.tsv"

declare -A PID
start_all "$ROUTE" "${servers[@]}"
for server in "${servers[@]}"; do
  check_answer "http://127.0.0.1:${PORT[$server]}$ROUTE" "$ANSWER"
done
measure_rounds "${servers[@]}" >"$rounds"
medians_by_pair <"$rounds" >"$results"
keep_results "${ROUTE#/}" "$rounds" "$results"

echo
echo "machine: $(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs); ${DURATION}s x ${RUNS} rounds, medians"
printf '%-11s %-14s %10s %9s %9s %12s\n' server scenario req/s p50_us p99_us cpu_us/req
awk '{ printf "%-11s %-14s %10d %9d %9d %12.3f\n", $1, $2, $4, $5, $6, $7 }' "$results"
echo
echo "Proscenium's ratios: within each round, median over rounds (CPU/req: lower is better; req/s: higher is better)"
for peer in "${servers[@]}"; do
  [ "$peer" = proscenium ] && continue
  round_ratios proscenium "$peer" <"$rounds" | awk -v p="$peer" 'NF == 3 {
    printf "vs %-6s %-14s cpu/req %.2fx   req/s %.2fx\n", p, $1, $2, $3 }'
done
if [[ " ${servers[*]} " == *" bare "* && " ${servers[*]} " == *" metered "* ]]; then
  echo
  echo "What operating it costs: metered (metrics and request ids on) against bare (both off)"
  round_ratios metered bare <"$rounds" | awk 'NF == 3 {
    printf "%-14s cpu/req %.3fx   req/s %.3fx\n", $1, $2, $3 }'
fi
