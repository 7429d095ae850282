#!/usr/bin/env bash
# shellcheck disable=SC2034 # CMD and PORT are read through start_all
# TLS (issue 34): Proscenium against nginx (Debian's, OpenSSL) with the same ECDSA
# P-256 certificate and suites (TLS 1.3 AES-128-GCM; TLS 1.2
# ECDHE-ECDSA-AES128-GCM-SHA256), one loop / worker on core 0, load on core 1:
#
# - handshakes: full and resumed handshakes a second, TLS 1.3 and 1.2, each request on
#   a new connection (`tls-bench load`: THREADS blocking rustls clients on X25519);
#   with the server's core use, so a generator that cannot keep up shows;
# - keep-alive: `wrk -t1 -c64` over HTTPS on /plaintext and a 300 KB file, server CPU
#   per request;
# - idle: memory per idle TLS connection (CONNS, after one request each).
#
# Proscenium runs `examples/hello` (handshakes, plaintext, idle) and `proscenium serve
# DIR` (the file), both `--loops 1 --tls-cert --tls-key`; when this checkout's binaries
# have no `--tls-cert` yet, nginx is measured alone. The certificate is made once
# (openssl, bench/tls/certs/). Every failure is counted; rounds rotate the servers
# (lib.sh's method); medians and every round's figures are printed and kept in
# bench/results/tls-*.tsv.
#
# The machine is shared (other builds run on both cores), so the servers and the load
# run under PRIORITY (`chrt -f 10`, SCHED_FIFO; the kernel still leaves others 5 % of
# each second): without it, a woken server or client waited for a build's time slice
# and neither core reached 50 % (nginx: 631 full handshakes/s at 37 % of core 0;
# under FIFO 2,696/s at 95 %, the generator at 53 % of core 1). PRIORITY= turns it off.
#
# Usage: bench/tls.sh     (DURATION=10 RUNS=3 THREADS=32 CONNS=5000 by default;
#                          SERVERS="proscenium nginx", PARTS="handshakes keepalive idle")
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap stop_all EXIT INT TERM

THREADS="${THREADS:-32}"
PRIORITY="${PRIORITY-chrt -f 10}"
CONNS="${CONNS:-5000}"
PARTS="${PARTS:-handshakes keepalive idle}"
need nginx
need wrk
need curl
need openssl
(cd "$BENCH_DIR/tls" && CARGO_TARGET_DIR="$PEERS_TARGET" cargo build --release --quiet)
TOOL="$PEERS_TARGET/release/tls-bench"

tls_certs
certs="$CERTS"
tls_flags="--tls-cert $certs/cert.pem --tls-key $certs/key.pem"

work="$(mktemp -d)"
site="$work/site"
mkdir -p "$site"
head -c $((300 * 1024)) /dev/urandom >"$site/300k.bin"
nginx_tls="ssl_certificate $certs/cert.pem;
    ssl_certificate_key $certs/key.pem;
    ssl_protocols TLSv1.2 TLSv1.3;
    ssl_ciphers ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305;
    ssl_conf_command Ciphersuites TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256;
    ssl_session_cache shared:TLS:10m;
    ssl_session_tickets on;
    ssl_session_timeout 1h;"
declare -A CMD=(
  [proscenium]="$PRIORITY $RELEASE_DIR/hello --bind 127.0.0.1:8443 --loops 1 $tls_flags"
  [proscenium-files]="$PRIORITY $RELEASE_DIR/proscenium serve $site --bind 127.0.0.1:8444 --loops 1 $tls_flags"
  [nginx]="$PRIORITY nginx -c $(nginx_conf "$work/nginx" 8453 "$site" "$nginx_tls" ssl)"
)
declare -A PORT=([proscenium]=8443 [proscenium-files]=8444 [nginx]=8453)
# The server answering each part: Proscenium's files come from `proscenium serve`.
declare -A FILES_FROM=([proscenium]=proscenium-files [nginx]=nginx)

servers=()
for server in ${SERVERS:-proscenium nginx}; do
  if [ "$server" = proscenium ] && ! { build_proscenium && "$RELEASE_DIR/hello" serve --help 2>&1 | grep -q -- --tls-cert; }; then
    echo "proscenium: this checkout's hello has no --tls-cert; measuring nginx alone" >&2
    continue
  fi
  servers+=("$server")
done
declare -A PID
SCHEME=https start_all /plaintext "${servers[@]}"
for server in "${servers[@]}"; do
  [ -n "${PID[${FILES_FROM[$server]}]:-}" ] || SCHEME=https start_all /300k.bin "${FILES_FROM[$server]}"
done
for server in "${servers[@]}"; do
  check_answer "https://127.0.0.1:${PORT[$server]}/plaintext" 'Hello, World!'
  check_answer --file "https://127.0.0.1:${PORT[${FILES_FROM[$server]}]}/300k.bin" "$site/300k.bin"
done

# Runs one handshake measurement against SERVER; prints "handshakes per_s failures
# not_resumed client_core% server_core% server_cpu_us_per_handshake".
handshake_row() {
  local server="$1" mode="$2" tls="$3" before after row
  before="$(cpu_ticks "${PID[$server]}")"
  # shellcheck disable=SC2086 # PRIORITY is a command and its arguments
  row="$(taskset -c "$LOAD_CORE" $PRIORITY "$TOOL" load --addr "127.0.0.1:${PORT[$server]}" --threads "$THREADS" \
    --seconds "$DURATION" --mode "$mode" --tls "$tls")"
  after="$(cpu_ticks "${PID[$server]}")"
  echo "$row" | awk -v t=$((after - before)) -v hz="$CLK_TCK" -v d="$DURATION" \
    '{ printf "%s %.0f %.1f\n", $0, t / hz / d * 100, ($1 > 0 ? t / hz * 1e6 / $1 : 0) }'
}

# Runs wrk over HTTPS against SERVER's PATH; prints `wrk_row`'s columns.
keepalive_row() {
  wrk_row "${PID[$1]}" -c64 "https://127.0.0.1:${PORT[$1]}$2"
}

# Prints one row per run: "server scenario round" and the part's columns.
rounds() {
  local round i server scenario mode tls
  for round in $(seq "$RUNS"); do
    for scenario in ${SCENARIOS:-full-1.3 resumed-1.3 full-1.2 resumed-1.2 plaintext 300k}; do
      for i in "${!servers[@]}"; do
        server="${servers[$(((i + round) % ${#servers[@]}))]}"
        echo "round $round: $server $scenario..." >&2
        case "$scenario" in
          full-* | resumed-*)
            [[ " $PARTS " == *" handshakes "* ]] || continue
            IFS=- read -r mode tls <<<"$scenario"
            echo "$server $scenario $round $(handshake_row "$server" "$mode" "$tls")"
            ;;
          plaintext)
            [[ " $PARTS " == *" keepalive "* ]] || continue
            echo "$server $scenario $round $(keepalive_row "$server" /plaintext)"
            ;;
          300k)
            [[ " $PARTS " == *" keepalive "* ]] || continue
            echo "$server $scenario $round $(keepalive_row "${FILES_FROM[$server]}" /300k.bin)"
            ;;
        esac
      done
    done
  done
}

# An awk function: a `rounds` row's server CPU per handshake or per request.
# shellcheck disable=SC2016 # awk's fields, not the shell's
CPU_FN='function cpu() { return ($2 ~ /^(full|resumed)-/) ? $10 : $7 }'

# Reads `rounds` rows; prints per server and scenario each column's median, then
# every round's per_s and server CPU (the spread).
spread() {
  local rows pair
  rows="$(cat)"
  echo "$rows" | awk '!seen[$1 " " $2]++ { print $1 " " $2 }' | while read -r pair; do
    echo "$pair $(echo "$rows" | awk -v p="$pair" '$1 " " $2 == p' | cut -d' ' -f4- | medians)" \
      "$(echo "$rows" | awk -v p="$pair" "$CPU_FN"'
        $1 " " $2 == p { r = r s $5; c = c s cpu(); s = "," }
        END { print "per_s [" r "] cpu [" c "]" }')"
  done
}

# Reads `rounds` rows; prints per scenario Proscenium's per_s and server CPU ratios
# to nginx's taken within each round, median over rounds.
ratios() {
  local rows scenario
  rows="$(cat)"
  echo "$rows" | awk '!seen[$2]++ { print $2 }' | while read -r scenario; do
    echo "$scenario $(echo "$rows" | awk -v s="$scenario" "$CPU_FN"'
      $2 == s && $1 == "proscenium" { r[$3] = $5; c[$3] = cpu() }
      $2 == s && $1 == "nginx" { nr[$3] = $5; nc[$3] = cpu() }
      END { for (k in r) if (nr[k] > 0 && nc[k] > 0) print r[k] / nr[k], c[k] / nc[k] }' | medians)"
  done
}

rounds_file="$work/rounds.tsv"
results="$work/results.tsv"
rounds >"$rounds_file"
spread <"$rounds_file" >"$results"
if [[ " $PARTS " == *" idle "* ]]; then
  for server in "${servers[@]}"; do
    # shellcheck disable=SC2046 # one pid per word
    echo "idle $server $(taskset -c "$LOAD_CORE" "$TOOL" idle --addr "127.0.0.1:${PORT[$server]}" --conns "$CONNS" $(tree_pids "${PID[$server]}"))" >>"$results"
  done
fi
keep_results tls "$rounds_file" "$results"

echo
echo "machine: $(nproc) cores; ${DURATION}s x ${RUNS} rounds, medians, [per_s of every round]"
echo "handshakes: server scenario handshakes per_s failures not_resumed client_core% server_core% server_cpu_us/handshake"
echo "keep-alive: server scenario requests per_s failures server_cpu_us/request"
cat "$results"
if [ "${#servers[@]}" -gt 1 ]; then
  echo
  echo "Proscenium's ratios to nginx within each round, median over rounds: scenario per_s server_cpu"
  ratios <"$rounds_file"
fi
