#!/usr/bin/env bash
# shellcheck disable=SC2034 # CMD and PORT are read through start_all
# HTTP/2 (issue 35): Proscenium (`examples/hello serve DIR`: its route answers
# /plaintext, DIR's files the rest) against nginx (Debian's 1.22) and h2o (Debian's
# 2.2, the fastest HTTP/2 server of the C world) and, in cleartext, hyper (h2c: the
# `h2` crate's frame layer under the smallest server on it, the floor Proscenium's
# HTTP/2 stands on), each with one loop / worker / thread
# on core 0, h2load on core 1: /plaintext (nginx answers it from its config, h2o from
# a file of 13 bytes: h2o has no literal answer) and a 1 KB static file, over TLS (ALPN
# h2, the same ECDSA P-256 certificate as bench/tls.sh) and in cleartext (h2c, prior
# knowledge), CONNS connections of STREAMS streams each (`h2load -c CONNS -m
# STREAMS`). Server CPU per request from /proc; every failed or errored request is
# counted; rounds rotate the servers (lib.sh's method); medians and every round's
# figures printed and kept in bench/results/h2-*.tsv.
#
# Servers and load run under PRIORITY (SCHED_FIFO, as bench/tls.sh explains).
#
# Usage: bench/h2.sh     (DURATION=10 RUNS=3 CONNS=8 STREAMS=100 by default;
#                         SERVERS="proscenium nginx h2o hyper", SCENARIOS="tls-plaintext
#                         tls-1k h2c-plaintext h2c-1k")
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap stop_all EXIT INT TERM

PRIORITY="${PRIORITY-chrt -f 10}"
CONNS="${CONNS:-8}"
STREAMS="${STREAMS:-100}"
need nginx
need h2o
need h2load nghttp2-client
need curl
need openssl
build_proscenium
build_peer hyper

tls_certs
certs="$CERTS"
tls_flags="--tls-cert $certs/cert.pem --tls-key $certs/key.pem"

work="$(mktemp -d)"
site="$work/site"
mkdir -p "$site"
head -c 1024 /dev/urandom >"$site/1k.bin"
printf 'Hello, World!' >"$site/plaintext"
nginx_tls="ssl_certificate $certs/cert.pem;
    ssl_certificate_key $certs/key.pem;
    ssl_protocols TLSv1.3;
    http2_max_concurrent_streams $STREAMS;"
nginx_h2c="http2_max_concurrent_streams $STREAMS;"
# h2o drops to nobody: its files must be readable, its own files writable.
chmod 777 "$work"
cat >"$work/h2o.conf" <<CONF
num-threads: 1
http2-max-concurrent-requests-per-connection: $STREAMS
listen:
  host: 127.0.0.1
  port: 8463
  ssl:
    certificate-file: $certs/cert.pem
    key-file: $certs/key.pem
    minimum-version: TLSv1.3
listen:
  host: 127.0.0.1
  port: 8464
hosts:
  default:
    paths:
      /:
        file.dir: $site
CONF
declare -A CMD=(
  [proscenium-tls]="$PRIORITY $RELEASE_DIR/hello serve $site --bind 127.0.0.1:8443 --loops 1 $tls_flags"
  [proscenium-h2c]="$PRIORITY $RELEASE_DIR/hello serve $site --bind 127.0.0.1:8444 --loops 1"
  [nginx-tls]="$PRIORITY nginx -c $(nginx_conf "$work/nginx-tls" 8453 "$site" "$nginx_tls" "ssl http2")"
  [nginx-h2c]="$PRIORITY nginx -c $(nginx_conf "$work/nginx-h2c" 8454 "$site" "$nginx_h2c" http2)"
  [h2o-tls]="$PRIORITY h2o -c $work/h2o.conf"
  [hyper-h2c]="$PRIORITY $PEERS_TARGET/release/peer-hyper --bind 127.0.0.1:8474 --workers 1 --h2c"
)
declare -A PORT=([proscenium-tls]=8443 [proscenium-h2c]=8444 [nginx-tls]=8453 [nginx-h2c]=8454 [h2o-tls]=8463 [h2o-h2c]=8464 [hyper-h2c]=8474)

read -r -a servers <<<"${SERVERS:-proscenium nginx h2o hyper}"
declare -A PID
for server in "${servers[@]}"; do
  # hyper answers /plaintext only, and only in cleartext.
  if [ "$server" = hyper ]; then
    CURL_FLAGS=--http2-prior-knowledge start_all /plaintext hyper-h2c
    continue
  fi
  SCHEME=https start_all /1k.bin "$server-tls"
  # h2o serves both ports from one process.
  if [ "$server" = h2o ]; then
    PID[h2o-h2c]="${PID[h2o-tls]}"
  else
    CURL_FLAGS=--http2-prior-knowledge start_all /1k.bin "$server-h2c"
  fi
  check_answer --file "https://127.0.0.1:${PORT[$server-tls]}/1k.bin" "$site/1k.bin"
done

# Runs h2load against SERVER-MODE's PATH; prints "requests per_s failures
# cpu_us_per_request" (failures: failed, errored and timed-out requests, and answers
# not 2xx).
h2_row() {
  local target="$1" path="$2" scheme=https before after out
  [[ "$target" == *-h2c ]] && scheme=http
  before="$(cpu_ticks "${PID[$target]}")"
  # shellcheck disable=SC2086 # PRIORITY is a command and its arguments
  out="$(taskset -c "$LOAD_CORE" $PRIORITY h2load -t1 -c"$CONNS" -m"$STREAMS" -D"$DURATION" \
    "$scheme://127.0.0.1:${PORT[$target]}$path" 2>&1)"
  after="$(cpu_ticks "${PID[$target]}")"
  echo "$out" | awk -v t=$((after - before)) -v hz="$CLK_TCK" '
    /^requests:/ { done = $8; failed = $12 + $14 + $16 }
    /^status codes:/ { gsub(/,/, ""); bad = $5 + $7 + $9 }
    /^finished in/ { gsub(/,/, ""); rps = $4 }
    END { printf "%d %.0f %d %.2f\n", done, rps, failed + bad, (done > 0 ? t / hz * 1e6 / done : 0) }'
}

# Prints one row per run: "server scenario round requests per_s failures cpu_us/req".
rounds() {
  local round i server scenario mode what path
  for round in $(seq "$RUNS"); do
    for scenario in ${SCENARIOS:-tls-plaintext tls-1k h2c-plaintext h2c-1k}; do
      IFS=- read -r mode what <<<"$scenario"
      path=/1k.bin
      [ "$what" = plaintext ] && path=/plaintext
      for i in "${!servers[@]}"; do
        server="${servers[$(((i + round) % ${#servers[@]}))]}"
        [ "$server" != hyper ] || [ "$scenario" = h2c-plaintext ] || continue
        echo "round $round: $server $scenario..." >&2
        echo "$server $scenario $round $(h2_row "$server-$mode" "$path")"
      done
    done
  done
}

rounds_file="$work/rounds.tsv"
results="$work/results.tsv"
rounds >"$rounds_file"
medians_by_pair <"$rounds_file" >"$results"
keep_results h2 "$rounds_file" "$results"

echo
echo "machine: $(nproc) cores; ${DURATION}s x ${RUNS} rounds, h2load -c$CONNS -m$STREAMS; medians"
echo "server scenario requests per_s failures server_cpu_us/request"
cat "$results"
echo
echo "every round: server scenario round requests per_s failures server_cpu_us/request"
cat "$rounds_file"
for peer in nginx h2o hyper; do
  [[ " ${servers[*]} " == *" $peer "* && " ${servers[*]} " == *" proscenium "* ]] || continue
  echo
  echo "Proscenium's ratios to $peer within each round, median over rounds: scenario server_cpu per_s"
  awk -v p="$peer" '$1 == p && !seen[$2]++ { print $2 }' "$rounds_file" | while read -r scenario; do
    echo "$scenario $(awk -v p="$peer" -v s="$scenario" '
      $1 == "proscenium" && $2 == s { c[$3] = $7; r[$3] = $5 }
      $1 == p && $2 == s { pc[$3] = $7; pr[$3] = $5 }
      END { for (k in c) if (pc[k] > 0 && pr[k] > 0) print c[k] / pc[k], r[k] / pr[k] }' "$rounds_file" | medians)"
  done
done
