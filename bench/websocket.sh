#!/usr/bin/env bash
# WebSocket frame layers for issue 19's choice: an echo server on one thread over
# tungstenite's protocol and over fastwebsockets', the same handshake in front of
# each, and over Proscenium's own message layer (proscenium::ws on the event-loop
# model); the same client (64 connections, binary messages of 16 B and 16 KiB, each
# echo awaited); server on core 0, client on core 1; three interleaved rounds, medians of echoes a
# second and the server's CPU per message. Prints a markdown table.
#
# Usage: bench/websocket.sh
set -euo pipefail
cd "$(dirname "$0")/websocket"
export CARGO_TARGET_DIR="$PWD/../peers/target"
cargo build --release --quiet --bin ws-bench
taskset -c 1 "$CARGO_TARGET_DIR/release/ws-bench"
