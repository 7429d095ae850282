#!/usr/bin/env bash
# bench/peers/check.sh: checks the sources' own servers (Jetty, Pekko HTTP, Vert.x,
# Apache httpd with the event, worker and prefork MPMs, Node.js blocking and non-blocking)
# against examples/lab-app. It builds
# lab-app and the JVM peers once, starts lab-app (as the reference and as /relay's
# upstream), then each peer in turn on a loopback port, compares the status and body
# bytes of every route the peer serves with lab-app's, and stops it.
#
# Usage: bench/peers/check.sh [PEER...]
#   PEER: jetty pekko vertx httpd-event httpd-worker httpd-prefork node node-nbk
#   SANITY=1  also runs `wrk -t1 -c16 -d3` on /plaintext, /dynamic and (JVM peers)
#             /relay of each peer.
# Exits 1 if any answer differs, naming it.
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
peers=$root/bench/peers
target=${CARGO_TARGET_DIR:-target}
[[ $target = /* ]] || target=$root/$target
# The JVM peers' flags, as the lab starts them (servers.rs, jvm_flags).
jvm_flags=(-Xms1g -Xmx1g -XX:+UseParallelGC)

work=$(mktemp -d)
# httpd's children run as nobody when started as root: let them reach the files.
chmod 755 "$work"
pids=()
# shellcheck disable=SC2317  # called by the trap
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Waits up to 60 s (a JVM on a busy machine starts slowly) for /plaintext on port $1
# from the process $2.
wait_for() {
  for _ in $(seq 600); do
    curl -fs -o /dev/null "http://127.0.0.1:$1/plaintext" && return 0
    kill -0 "$2" 2>/dev/null || { echo "the server on port $1 exited" >&2; return 1; }
    sleep 0.1
  done
  echo "no answer on port $1 within 60 s" >&2
  return 1
}

echo "building lab-app and the JVM peers..."
cargo build --release --quiet -p lab-app --manifest-path "$root/Cargo.toml"
mvn -q -B -o -Dstyle.color=never -f "$peers/pom.xml" package > /dev/null 2>&1 ||
  mvn -q -B -Dstyle.color=never -f "$peers/pom.xml" package

mkdir -p "$work/www"
printf 'hello, static\n' > "$work/www/hello.txt"
head -c 307200 /dev/zero | tr '\0' x > "$work/www/300k.bin"

upstream_port=$(port)
"$target/release/lab-app" --bind "127.0.0.1:$upstream_port" --model loops:1 \
  > "$work/upstream.log" 2>&1 &
pids+=($!)
wait_for "$upstream_port" "$!"
upstream="http://127.0.0.1:$upstream_port/page?ms=10&kb=44"

ref_port=$(port)
"$target/release/lab-app" --bind "127.0.0.1:$ref_port" --model loops:1 "$work/www" \
  --upstream "$upstream" > "$work/reference.log" 2>&1 &
pids+=($!)
wait_for "$ref_port" "$!"

failed=0

# compare NAME PORT ROUTE...: a ROUTE is PATH, or "PEER_PATH LAB_APP_PATH" when the peer
# serves lab-app's answer under a route of its own.
compare() {
  local name=$1 port=$2 route path ref want got
  shift 2
  for route in "$@"; do
    path=${route%% *}
    ref=${route#* }
    want=$(curl -s -o "$work/want" -w '%{http_code}' "http://127.0.0.1:$ref_port/$ref")
    got=$(curl -s -o "$work/got" -w '%{http_code}' "http://127.0.0.1:$port/$path")
    if [[ $want = "$got" ]] && cmp -s "$work/want" "$work/got"; then
      echo "ok    $name /$path ($got, $(wc -c < "$work/got") bytes)"
    else
      echo "DIFF  $name /$path: lab-app $want $(head -c 80 "$work/want"), $name $got $(head -c 80 "$work/got")"
      failed=1
    fi
  done
}

# sanity NAME PORT PATH...
sanity() {
  local name=$1 port=$2 path
  shift 2
  for path in "$@"; do
    echo "wrk   $name /$path: $(wrk -t1 -c16 -d3 "http://127.0.0.1:$port/$path" | grep -E 'Requests/sec|Non-2xx' | tr -s ' ' | paste -sd ' ')"
  done
}

jvm_routes=(plaintext json dynamic 'dynamic?n=0' 'dynamic?n=10' 'dynamic?n=100000001' 'fib-iter?n=0' 'fib-iter?n=1000' 'fib-iter?n=200001'
  'fib?n=25' 'fib?n=41' relay hello.txt 300k.bin)

start_jvm() {
  java "${jvm_flags[@]}" -jar "$peers/$1/target/peer-$1.jar" --bind "127.0.0.1:$2" \
    --upstream "$upstream" "$work/www" > "$work/$1.log" 2>&1 &
}

# httpd in a session of its own: stopping, prefork's parent signals its whole process
# group, which would otherwise be this script's (the lab starts every server that way).
start_httpd() {
  mkdir -p "$work/$1"
  setsid apache2 -f "$peers/httpd/httpd.conf" -C "Define port $2" -C "Define root $work/www" \
    -C "Define scratch $work/$1" -C "Define lua $peers/httpd/lab.lua" -C "Define lualib $peers/lua/leda" -C "Define cores 1" \
    -D "${1#httpd-}" -DFOREGROUND > "$work/$1.log" 2>&1 &
}

# node-nbk's /fib above Node.Scala's threshold (30) runs the non-blocking algorithm:
# its answers on both sides of it must be the blocking ones.
node_routes=(plaintext json dynamic 'dynamic?n=0' 'dynamic?n=10' 'dynamic?n=100000001' 'fib-iter?n=1000' 'fib?n=20' 'fib?n=30' 'fib?n=31'
  'fib?n=33' relay)

start_node() {
  node "$peers/node/server.js" --bind "127.0.0.1:$2" --upstream "$upstream" \
    ${3:+"$3"} > "$work/$1.log" 2>&1 &
}

check() {
  local name=$1 port pid
  port=$(port)
  case $name in
    jetty | pekko | vertx) start_jvm "$name" "$port" ;;
    httpd-event | httpd-worker | httpd-prefork) start_httpd "$name" "$port" ;;
    node) start_node "$name" "$port" ;;
    node-nbk) start_node "$name" "$port" --nbk ;;
    *) echo "unknown peer $name" >&2; exit 2 ;;
  esac
  pid=$!
  pids+=("$pid")
  if ! wait_for "$port" "$pid"; then
    cat "$work/$name.log" >&2
    failed=1
    return
  fi
  case $name in
    jetty | vertx) compare "$name" "$port" "${jvm_routes[@]}" ;;
    pekko) compare "$name" "$port" "${jvm_routes[@]}" 'actor?n=1000 fib-iter?n=1000' ;;
    httpd-*) compare "$name" "$port" plaintext json dynamic 'dynamic?n=0' 'dynamic?n=10' hello.txt 300k.bin ;;
    node*) compare "$name" "$port" "${node_routes[@]}" ;;
  esac
  if [[ ${SANITY:-0} = 1 ]]; then
    case $name in
      httpd-*) sanity "$name" "$port" plaintext dynamic ;;
      *) sanity "$name" "$port" plaintext dynamic relay ;;
    esac
  fi
  kill "$pid"
  wait "$pid" 2>/dev/null || true
}

if [[ $# -eq 0 ]]; then
  set -- jetty pekko vertx httpd-event httpd-worker httpd-prefork node node-nbk
fi
for name in "$@"; do
  check "$name"
done
exit "$failed"
