#!/usr/bin/env bash
# Stage connectors in one process: events per second of one hop through cohort, local
# and decoupled connectors (local at batch 1, 64, and under the batching controller),
# against a plain function call, a tokio mpsc and a crossbeam channel (200,000
# timestamped events), and the p99 hop latency saturated (queueing delay) and at half
# each one's saturated rate (the hop itself). Prints a markdown table, each stage row
# with the sink's own wait and service p50 / p99 from its (sampled) histograms.
#
# Usage: [STAGE_SAMPLE=N] bench/stages.sh   (the stages time one event in N; 64)
set -euo pipefail
cd "$(dirname "$0")/stages"
export CARGO_TARGET_DIR="$PWD/../peers/target"
cargo build --release --quiet --bin stage-bench
"$CARGO_TARGET_DIR/release/stage-bench"
