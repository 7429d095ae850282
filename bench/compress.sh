#!/usr/bin/env bash
# shellcheck disable=SC2034 # CMD and PORT are read through start_all
# Compression (issue 35): a 100 KB JSON document and a 300 KB stylesheet, asked for
# with `Accept-Encoding: gzip` (wrk -t1 -c16), from Proscenium (`hello serve DIR`,
# [compression] defaults: gzip level 2) and nginx (Debian's 1.22, `gzip on` at its
# default level 1, the same types), one loop / worker on core 0, load on core 1.
# Proscenium twice: with its cache of compressed files (the default: a file is
# compressed once per version) and without (`cache_size = 0`: compressed per request,
# as nginx does and as a dynamic answer is). Also Proscenium's br and zstd. Server CPU
# per request, bytes on the wire per answer (curl), rounds rotated, medians; kept in
# bench/results/compress-*.tsv. The documents are made once, deterministically
# (python3, seeded): JSON records and CSS rules with varied names and values.
#
# Usage: bench/compress.sh     (DURATION=10 RUNS=3 by default)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap stop_all EXIT INT TERM

PRIORITY="${PRIORITY-chrt -f 10}"
need nginx
need wrk
need curl
need python3
build_proscenium

work="$(mktemp -d)"
site="$work/site"
mkdir -p "$site"
python3 - "$site" <<'PY'
import json, random, sys
random.seed(35)
site = sys.argv[1]
words = ["alpha", "beta", "gamma", "delta", "orbit", "stage", "actor", "loop", "lock", "feed"]
records, size = [], 0
while size < 100 * 1024:
    r = {"id": len(records), "name": " ".join(random.choices(words, k=3)),
         "score": round(random.random() * 1000, 3), "tags": random.sample(words, 3),
         "active": random.random() < 0.5, "owner": {"login": random.choice(words) + str(random.randrange(10**6))}}
    records.append(r)
    size += len(json.dumps(r))
open(f"{site}/data.json", "w").write(json.dumps({"items": records}))
rules, size = [], 0
props = ["margin", "padding", "color", "background", "border", "font-size", "line-height", "display"]
while size < 300 * 1024:
    sel = f".{random.choice(words)}-{random.randrange(5000)} > .{random.choice(words)}"
    body = "; ".join(f"{p}: {random.randrange(64)}px" if p not in ("color", "background", "display")
                     else f"{p}: #{random.randrange(16**6):06x}" for p in random.sample(props, 4))
    rule = f"{sel} {{ {body}; }}\n"
    rules.append(rule)
    size += len(rule)
open(f"{site}/style.css", "w").write("".join(rules))
PY
nginx_gzip="types { application/json json; text/css css; }
    gzip on;
    gzip_types application/json text/css;
    gzip_min_length 1024;"
declare -A CMD=(
  [proscenium]="$PRIORITY $RELEASE_DIR/hello serve $site --bind 127.0.0.1:8471 --loops 1"
  [proscenium-nocache]="env PROSCENIUM_COMPRESSION_CACHE_SIZE=0 $PRIORITY $RELEASE_DIR/hello serve $site --bind 127.0.0.1:8472 --loops 1"
  [nginx]="$PRIORITY nginx -c $(nginx_conf "$work/nginx" 8473 "$site" "$nginx_gzip")"
)
declare -A PORT=([proscenium]=8471 [proscenium-nocache]=8472 [nginx]=8473)
servers=(proscenium proscenium-nocache nginx)
declare -A PID
start_all /data.json "${servers[@]}"

# Prints the bytes of SERVER's answer to PATH with Accept-Encoding CODING, after
# checking that it decodes to the file (where the coding's command is installed).
wire_bytes() {
  local url="http://127.0.0.1:${PORT[$1]}$2" coding="$3" decode=gzip
  [ "$coding" = gzip ] || decode="$coding"
  if command -v "$decode" >/dev/null &&
    ! curl -s -H "Accept-Encoding: $coding" "$url" | "$decode" -dc | cmp -s - "$site$2"; then
    echo "$1's $coding answer to $2 does not decode to the file" >&2
    return 1
  fi
  curl -s -H "Accept-Encoding: $coding" -o /dev/null -w '%{size_download}' "$url"
}

# Runs wrk against SERVER's PATH asking for CODING; prints `wrk_row`'s columns.
row() {
  wrk_row "${PID[$1]}" -c16 -H "Accept-Encoding: $3" "http://127.0.0.1:${PORT[$1]}$2"
}

# Prints one row per run: "server scenario round requests per_s failures cpu_us/req
# bytes_on_the_wire".
rounds() {
  local round i server scenario path coding bytes
  for round in $(seq "$RUNS"); do
    for scenario in json-gzip css-gzip json-br css-br json-zstd css-zstd; do
      IFS=- read -r path coding <<<"$scenario"
      case "$path" in json) path=/data.json ;; css) path=/style.css ;; esac
      for i in "${!servers[@]}"; do
        server="${servers[$(((i + round) % ${#servers[@]}))]}"
        [ "$server" = nginx ] && [ "$coding" != gzip ] && continue
        echo "round $round: $server $scenario..." >&2
        bytes="$(wire_bytes "$server" "$path" "$coding")"
        echo "$server $scenario $round $(row "$server" "$path" "$coding") $bytes"
      done
    done
  done
}

rounds_file="$work/rounds.tsv"
results="$work/results.tsv"
rounds >"$rounds_file"
medians_by_pair <"$rounds_file" >"$results"
keep_results compress "$rounds_file" "$results"

echo
echo "machine: $(nproc) cores; ${DURATION}s x ${RUNS} rounds, wrk -t1 -c16; medians"
echo "files: data.json $(wc -c <"$site/data.json") B, style.css $(wc -c <"$site/style.css") B"
echo "server scenario requests per_s failures server_cpu_us/request bytes_on_the_wire"
cat "$results"
echo
echo "every round:"
cat "$rounds_file"
