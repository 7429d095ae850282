#!/usr/bin/env bash
# Live feeds, issue 19's benchmarks (servers and Redis on core 0, the client on
# core 1; RUNS times each, every run printed):
#   1. Idle WebSockets: resident memory per connection with 10,000 open (CONNS) and
#      idle, half a second and three seconds after the last opened (idle.py) —
#      Proscenium (hello's /feed, one loop) against Node.js's ws, and nginx's idle
#      keep-alive HTTP connection beside them for scale.
#   2. Fan-out: messages posted to /publish back to back, each pushed to every one of
#      1,000 and 10,000 subscribers, DELIVERIES (1,000,000) deliveries in all
#      (1,000 messages to 1,000, 100 to 10,000; feeds-bench): deliveries a second,
#      latency p50/p99/max, server CPU per delivery, deliveries missing — in one
#      process, and across two replicas through Redis (subscribers on B, posts to A),
#      Proscenium's hub against Node.js's ws with node-redis (bench/feeds/node).
#      Posted back to back (the most a server delivers; latency then includes the
#      queues that builds), paced at PACED (100,000) deliveries a second, under both
#      servers' most, for latency at equal load, and Proscenium paced at twice the
#      rate Node reached back to back — the target's test (paced latency counts from
#      when a post was due, so a publisher held back pays for it).
#
# Usage: bench/feeds.sh [idle] [fanout]   (both by default; WHERE=two-replicas for
#        the fan-out across replicas alone)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap stop_all EXIT INT TERM

if [ "$#" -eq 0 ]; then set -- idle fanout; fi
CONNS="${CONNS:-10000}"
DELIVERIES="${DELIVERIES:-1000000}"
PACED="${PACED:-100000}"
ulimit -n "$(ulimit -Hn)"
need nginx
need curl
need node nodejs
need npm
need redis-server redis-server
build_proscenium
(cd "$BENCH_DIR/feeds" && CARGO_TARGET_DIR="$PEERS_TARGET" cargo build --release --quiet)
(cd "$BENCH_DIR/feeds/node" && npm ci --no-audit --no-fund --silent)
CLIENT="$PEERS_TARGET/release/feeds-bench"
NODE_PEER="$BENCH_DIR/feeds/node/server.mjs"
work="$(mktemp -d)"

# Starts Proscenium's hello on PORT (one loop), with the environment given first;
# its connection cap (10,000 by default) raised above the subscribers and the
# publisher (Node's has none).
proscenium_on() {
  local port="$1"
  shift
  start_server env PROSCENIUM_LIMITS_MAX_CONNECTIONS=30000 "$@" "$RELEASE_DIR/hello" serve --bind "127.0.0.1:$port" --loops 1
  wait_ready "http://127.0.0.1:$port/plaintext"
}

# Starts the Node.js peer on PORT, with the environment given first.
node_on() {
  local port="$1"
  shift
  start_server env "$@" node "$NODE_PEER" "$port"
  for _ in $(seq 100); do
    curl -s -o /dev/null -X POST "http://127.0.0.1:$port/publish" && return 0
    sleep 0.1
  done
  echo "the node peer did not come up on $port" >&2
  return 1
}

idle() {
  echo "## Idle WebSockets ($CONNS)"
  for run in $(seq "$RUNS"); do
    proscenium_on 8090
    echo -n "run $run, proscenium (ws): "
    WS=/feed python3 "$BENCH_DIR/idle.py" 8090 "$CONNS" "$SERVER_PID"
    stop_server "$SERVER_PID"
    node_on 8091
    echo -n "run $run, node ws:         "
    WS=/feed python3 "$BENCH_DIR/idle.py" 8091 "$CONNS" "$SERVER_PID"
    stop_server "$SERVER_PID"
    start_server nginx -c "$(nginx_conf "$work/nginx" 8093 "$work")"
    wait_ready http://127.0.0.1:8093/plaintext
    echo -n "run $run, nginx (http):    "
    # shellcheck disable=SC2046 # one pid per word
    python3 "$BENCH_DIR/idle.py" 8093 "$CONNS" $(tree_pids "$SERVER_PID")
    stop_server "$SERVER_PID"
  done
}

# One fan-out run of SERVER (proscenium, node) with SUBSCRIBERS, messages posted at
# RATE a second (0: back to back), in one process or (with REDIS_PORT set) across two
# replicas.
fanout_run() {
  local server="$1" subscribers="$2" rate="$3" redis_port="${4:-}" pids=() env=()
  if [ -n "$redis_port" ]; then
    start_server redis-server --port "$redis_port" --save "" --appendonly no
    pids+=("$SERVER_PID")
    sleep 0.3
    if [ "$server" = proscenium ]; then env=("PROSCENIUM_FEEDS_REDIS=redis://127.0.0.1:$redis_port"); else env=("REDIS=redis://127.0.0.1:$redis_port"); fi
  fi
  local a=8095 b=8095
  [ -n "$redis_port" ] && b=8096
  "${server}_on" "$a" "${env[@]}"
  pids+=("$SERVER_PID")
  if [ "$b" != "$a" ]; then
    "${server}_on" "$b" "${env[@]}"
    pids+=("$SERVER_PID")
  fi
  taskset -c "$LOAD_CORE" "$CLIENT" "ws://127.0.0.1:$b/feed" "127.0.0.1:$a" "$subscribers" $((DELIVERIES / subscribers)) "$rate" "${pids[@]}"
  for pid in "${pids[@]}"; do stop_server "$pid"; done
}

fanout() {
  for where in ${WHERE:-one-process two-replicas}; do
    for subscribers in 1000 10000; do
      local messages=$((DELIVERIES / subscribers)) redis_port=""
      [ "$where" = two-replicas ] && redis_port=6390
      for run in $(seq "$RUNS"); do
        echo "## Fan-out, $where, $subscribers subscribers, $messages messages, run $run"
        local node_rate=0
        for pace in back-to-back paced; do
          local rate=0
          [ "$pace" = paced ] && rate=$((PACED / subscribers))
          for server in proscenium node; do
            echo -n "$pace, $server: "
            fanout_run "$server" "$subscribers" "$rate" "$redis_port" | tee "$work/out"
            if [ "$server/$pace" = node/back-to-back ]; then
              # Delivered, not posted: across replicas Node's A takes posts faster
              # than B delivers them.
              node_rate=$(($(sed -n 's/.*: \([0-9]*\) deliveries\/s.*/\1/p' "$work/out") / subscribers))
            fi
          done
        done
        # The target's test: twice Node's most, at a p99 no worse than Node's there.
        echo -n "paced at twice node's back-to-back delivery rate ($((2 * node_rate)) messages/s), proscenium: "
        fanout_run proscenium "$subscribers" $((2 * node_rate)) "$redis_port"
      done
    done
  done
}

for part in "$@"; do
  "$part"
done
