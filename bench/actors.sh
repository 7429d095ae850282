#!/usr/bin/env bash
# Actors: Proscenium vs actix, ractor and kameo — tell throughput, ping-pong, ask round
# trip, fan-out to 10,000 actors, 1,000,000 idle actors (time and memory). Each
# benchmark of each framework runs in a fresh process, three times; the medians and
# Proscenium's ratios are printed.
#
# Usage: bench/actors.sh
set -euo pipefail
cd "$(dirname "$0")/actors"
export CARGO_TARGET_DIR="$PWD/../peers/target"
cargo build --release --quiet
"$CARGO_TARGET_DIR/release/actor-bench"
