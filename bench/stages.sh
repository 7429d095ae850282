#!/usr/bin/env bash
# Stage connectors in one process: events per second and p99 hop latency of one hop
# through cohort, local and decoupled connectors, against a plain function call, a
# tokio mpsc and a crossbeam channel (200,000 timestamped events, saturating load; the
# p99 is queueing delay at saturation, not latency at half load). Prints a markdown table.
#
# Usage: bench/stages.sh
set -euo pipefail
cd "$(dirname "$0")/stages"
export CARGO_TARGET_DIR="$PWD/../peers/target"
cargo build --release --quiet
"$CARGO_TARGET_DIR/release/stage-bench"
