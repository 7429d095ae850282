#!/usr/bin/env bash
# Issue 20's benchmarks (servers on core 0, wrk on core 1, DURATION s a run, RUNS
# rounds, medians; each round starts with the next server):
#   cgi  — a CGI shell script (`hello.sh`, printf of a header and a line): requests a
#          second and CPU per request of the server's core, the scripts' included
#          (fork, exec and sh are most of it) —
#          Proscenium's --cgi (one loop) against Apache httpd's mod_cgid (mpm_event,
#          Debian's default pairing), 16 keep-alive connections.
#   lua  — a trivial Lua route answering "Hello, World!": Proscenium's --app (one
#          loop) against nginx's Lua module (content_by_lua_block, one worker), and
#          Proscenium's native route (hello's /plaintext) for what Lua adds; 64
#          keep-alive connections. Target: Proscenium's Lua within 1.5× nginx-lua's
#          CPU per request.
#
# Usage: bench/scripts.sh [cgi] [lua]   (both by default)
set -euo pipefail
source "$(dirname "$0")/lib.sh"
trap stop_all EXIT INT TERM

if [ "$#" -eq 0 ]; then set -- cgi lua; fi
need wrk
need curl
need nginx
need apache2 apache2
[ -f /usr/lib/nginx/modules/ngx_http_lua_module.so ] || apt-get install -y -qq libnginx-mod-http-lua >/dev/null
build_proscenium
declare -gA PATHS=()
work="$(mktemp -d)"
chmod 755 "$work"

# CPU ticks of the server core, whatever ran there (the pid is not needed): a CGI
# script's CPU is its server's cost, and Apache's mod_cgid hands scripts to a daemon
# whose children are not all reaped inside the server's process tree, so the tree's
# own counters would miss them. The machine is otherwise idle during a run.
cpu_ticks_core() {
  awk -v cpu="cpu$SERVER_CORE" '$1 == cpu { print $2 + $3 + $4 + $7 + $8 + $9 }' /proc/stat
}

# Apache httpd on PORT with mpm_event and mod_cgid, serving ROOT's cgi-bin/.
apache_conf() {
  local dir="$1" port="$2" root="$3" modules=/usr/lib/apache2/modules
  mkdir -p "$dir/logs"
  cat >"$dir/httpd.conf" <<CONF
ServerRoot "$dir"
Listen 127.0.0.1:$port
PidFile $dir/httpd.pid
ErrorLog $dir/logs/error.log
LogLevel warn
User nobody
Group nogroup
LoadModule mpm_event_module $modules/mod_mpm_event.so
LoadModule authz_core_module $modules/mod_authz_core.so
LoadModule mime_module $modules/mod_mime.so
LoadModule alias_module $modules/mod_alias.so
LoadModule cgid_module $modules/mod_cgid.so
ScriptSock $dir/cgisock
TypesConfig /etc/mime.types
KeepAlive On
MaxKeepAliveRequests 0
ServerName bench
DocumentRoot "$root"
ScriptAlias /cgi-bin/ "$root/cgi-bin/"
<Directory "$root">
  Require all granted
</Directory>
CONF
  echo "$dir/httpd.conf"
}

cgi() {
  local site="$work/site"
  mkdir -p "$site/cgi-bin"
  printf '#!/bin/sh\nprintf "Content-Type: text/plain\\n\\nHello, World!\\n"\n' >"$site/cgi-bin/hello.sh"
  chmod -R a+rX "$site"
  chmod 755 "$site/cgi-bin/hello.sh"
  declare -gA CMD PORT PID
  CMD[proscenium]="$RELEASE_DIR/proscenium serve $site --cgi --loops 1 --bind 127.0.0.1:8100"
  PORT[proscenium]=8100
  CMD[apache]="apache2 -f $(apache_conf "$work/apache" 8101 "$site") -DFOREGROUND"
  PORT[apache]=8101
  start_all /cgi-bin/hello.sh proscenium apache
  check_answer http://127.0.0.1:8100/cgi-bin/hello.sh "Hello, World!"
  check_answer http://127.0.0.1:8101/cgi-bin/hello.sh "Hello, World!"
  echo "## CGI: /cgi-bin/hello.sh, 16 connections (requests, req/s, p50 µs, p99 µs, server core's CPU µs/req)"
  CPU_TICKS=cpu_ticks_core rotate /cgi-bin/hello.sh 16 proscenium apache
  stop_all
}

# Measures each server RUNS times, in rounds, each round starting with the next
# server; PATH is each server's (PATHS[server] overrides it). Prints "server round"
# and `measure`'s columns.
rotate() {
  local path="$1" conns="$2" round i server
  shift 2
  local -a servers=("$@")
  for round in $(seq "$RUNS"); do
    for i in "${!servers[@]}"; do
      server="${servers[$(((i + round) % ${#servers[@]}))]}"
      echo "$server $round $(measure "${PID[$server]}" "http://127.0.0.1:${PORT[$server]}${PATHS[$server]:-$path}" "$conns")"
    done
  done
}

lua() {
  local site="$work/lua"
  mkdir -p "$site"
  cat >"$site/app.lua" <<'LUA'
app:get("/lua", function(req) return 200, { ["content-type"] = "text/plain" }, "Hello, World!" end)
LUA
  chmod -R a+rX "$site"
  local conf
  conf="$(nginx_conf "$work/nginx" 8103 "$site" "location = /lua { default_type text/plain; content_by_lua_block { ngx.print('Hello, World!') } }")"
  sed -i "1i load_module /usr/lib/nginx/modules/ndk_http_module.so;\nload_module /usr/lib/nginx/modules/ngx_http_lua_module.so;" "$conf"
  declare -gA CMD PORT PID
  CMD[proscenium-lua]="$RELEASE_DIR/proscenium serve $site --app $site/app.lua --loops 1 --bind 127.0.0.1:8102"
  PORT[proscenium-lua]=8102
  CMD[nginx-lua]="nginx -c $conf"
  PORT[nginx-lua]=8103
  CMD[proscenium-native]="$RELEASE_DIR/hello serve --loops 1 --bind 127.0.0.1:8104"
  PORT[proscenium-native]=8104
  start_all / proscenium-lua
  start_all /lua nginx-lua
  start_all /plaintext proscenium-native
  check_answer http://127.0.0.1:8102/lua "Hello, World!"
  check_answer http://127.0.0.1:8103/lua "Hello, World!"
  echo "## Lua: a route answering Hello, World!, 64 connections (requests, req/s, p50 µs, p99 µs, CPU µs/req)"
  declare -gA PATHS=([proscenium-native]=/plaintext)
  rotate /lua 64 proscenium-lua nginx-lua proscenium-native
  stop_all
}

for part in "$@"; do
  "$part"
done
