#!/usr/bin/env bash
# Resident memory per idle keep-alive connection: 10,000 connections (CONNS to change),
# each after one request (memory half a second and three seconds later), against Proscenium's hello (one loop) and nginx (one worker).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap stop_all EXIT INT TERM

need nginx
need curl
build_proscenium
CONNS="${CONNS:-10000}"
work="$(mktemp -d)"

start_server "$RELEASE_DIR/hello" --bind 127.0.0.1:8080 --loops 1
pid="$SERVER_PID"
wait_ready http://127.0.0.1:8080/plaintext
echo -n "proscenium: "
python3 "$BENCH_DIR/idle.py" 8080 "$CONNS" "$pid"
stop_server "$pid"

start_server nginx -c "$(nginx_conf "$work/nginx" 8083 "$work")"
pid="$SERVER_PID"
wait_ready http://127.0.0.1:8083/plaintext
echo -n "nginx:      "
# shellcheck disable=SC2046 # one pid per word
python3 "$BENCH_DIR/idle.py" 8083 "$CONNS" $(tree_pids "$pid")
