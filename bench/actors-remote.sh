#!/usr/bin/env bash
# Remote actors against local ones: an actor in another process reached through a
# Redis of the bench's own (redis-server on a free loopback port) — the ask round
# trip (p50, p99), asks a second with 64 in flight, tells a second from one sender —
# beside the same actor asked in-process; three rounds, medians, as a markdown table.
# Pin it for a comparison that means something: `taskset -c 0,1 bench/actors-remote.sh`
# on a quiet machine.
#
# Usage: bench/actors-remote.sh
set -euo pipefail
cd "$(dirname "$0")/actors"
export CARGO_TARGET_DIR="$PWD/../peers/target"
cargo build --release --quiet --bin actor-remote
"$CARGO_TARGET_DIR/release/actor-remote"
