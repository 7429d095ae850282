#!/usr/bin/env bash
# User-space instructions per pipelined plaintext request (valgrind's callgrind):
# Proscenium's hello against actix-web and hyper, one loop / worker each, the same
# client (bench/pipeline_client.py: 4 connections, rounds of 16 pipelined requests).
#
# Unlike req/s and CPU time, an instruction count does not move with the machine's
# noise, so it shows what a change to the request path does before the timed
# benchmarks can. It counts user space only: the kernel's share (the larger one for
# keep-alive, ~40 % pipelined) is not in it. Each server runs twice, with 10 and with
# BATCHES + 10 rounds, and the difference is divided by the requests between them, so
# start-up and shutdown cancel out.
#
# For Proscenium it then shows where its instructions go: each part of the request
# path with what it calls (inclusive), per request, from the same two runs.
#
# Usage: bench/instructions.sh            (BATCHES=500 by default; SERVERS to pick,
#        e.g. SERVERS=proscenium while working on the request path; DEPTH=1 for
#        keep-alive without pipelining, 16 by default; HELLO_FLAGS for more
#        flags to hello, e.g. HELLO_FLAGS="--config on.toml" to compare settings; not
#        PROSCENIUM_*, which hello would read as settings of its own)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap stop_all EXIT INT TERM

need valgrind
need curl
SERVERS="${SERVERS:-proscenium actix hyper}"
for server in $SERVERS; do
  if [ "$server" = proscenium ]; then build_proscenium; else build_peer "$server"; fi
done
BATCHES="${BATCHES:-500}"
DEPTH="${DEPTH:-16}"
CONNS="${CONNS:-4}"
PORT=8098
work="$(mktemp -d)"

# Prints the instructions a server ran while answering ROUNDS rounds; keeps the
# profile as $work/callgrind-ROUNDS.out.
instructions() {
  local rounds="$1"
  shift
  local out="$work/callgrind-$rounds.out"
  rm -f "$out"
  valgrind --tool=callgrind --callgrind-out-file="$out" "$@" >"$work/server.log" 2>&1 &
  local pid=$!
  # A command substitution runs this without set -e: a server that did not come up
  # must stop the script, not be read as a count of 0.
  wait_ready "http://127.0.0.1:$PORT/plaintext" || return 1
  python3 "$BENCH_DIR/pipeline_client.py" "$PORT" "$CONNS" "$rounds" "$DEPTH" >/dev/null || return 1
  kill -INT "$pid"
  wait "$pid" || true
  awk '/^(summary|totals):/ { print $2; exit }' "$out"
}

declare -A CMD=(
  [proscenium]="$RELEASE_DIR/hello --bind 127.0.0.1:$PORT --loops 1 ${HELLO_FLAGS:-}"
  [actix]="$PEERS_TARGET/release/peer-actix --bind 127.0.0.1:$PORT --workers 1"
  [hyper]="$PEERS_TARGET/release/peer-hyper --bind 127.0.0.1:$PORT --workers 1"
)
printf '%-11s %14s\n' server instr/request
for server in $SERVERS; do
  # shellcheck disable=SC2086 # the command line is split on purpose
  base=$(instructions 10 ${CMD[$server]})
  # shellcheck disable=SC2086
  full=$(instructions $((BATCHES + 10)) ${CMD[$server]})
  printf '%-11s %14d\n' "$server" $(((full - base) / (BATCHES * CONNS * DEPTH)))
  if [ "$server" = proscenium ]; then
    echo
    echo "where Proscenium's go (inclusive, a request):"
    python3 "$BENCH_DIR/callgrind_parts.py" "$work/callgrind-10.out" \
      "$work/callgrind-$((BATCHES + 10)).out" $((BATCHES * CONNS * DEPTH))
  fi
done
