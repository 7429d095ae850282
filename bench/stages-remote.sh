#!/usr/bin/env bash
# A decoupled connector across processes, through a Redis of its own (redis-server on a
# free loopback port): events per second end to end and the hop's p50/p99, saturated
# and at 10,000 events a second, with the sink in 1, 2 and 4 other processes — beside
# the same graph in one process and redis-benchmark's raw pipelined XADD rate on the
# same Redis. Prints a markdown table. Pin it for a comparison that means something:
# `taskset -c 0,1 bench/stages-remote.sh` on a quiet machine.
#
# Usage: bench/stages-remote.sh
set -euo pipefail
cd "$(dirname "$0")/stages"
export CARGO_TARGET_DIR="$PWD/../peers/target"
cargo build --release --quiet --bin stage-remote
"$CARGO_TARGET_DIR/release/stage-remote"
