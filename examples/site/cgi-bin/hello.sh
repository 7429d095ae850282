#!/bin/sh
# A CGI script (RFC 3875), run with `serve examples/site --cgi`: the header section,
# a blank line, then the body. Without --cgi this file is served as its own text.
printf 'Content-Type: text/plain; charset=utf-8\n\n'
printf 'Hello from %s, run by %s.\n\n' "$SCRIPT_NAME" "$SERVER_SOFTWARE"
printf 'REQUEST_METHOD=%s\nQUERY_STRING=%s\nPATH_INFO=%s\nREMOTE_ADDR=%s\n' \
  "$REQUEST_METHOD" "$QUERY_STRING" "$PATH_INFO" "$REMOTE_ADDR"
