#!/usr/bin/env python3
"""Where a server's instructions go, part by part, per request: the inclusive
instructions of named functions in two callgrind profiles (a short run and a longer
one), their difference divided by the requests between them, so start-up and
shutdown cancel out. Used by bench/instructions.sh.

Usage: callgrind_parts.py SHORT.out LONG.out REQUESTS
"""

import re
import subprocess
import sys

# (label, functions summed), as callgrind names them; an indented label is a part of
# the one above it, and the unindented ones with the rest make up the whole.
PARTS = [
    ("reading the head (httparse, strict checks, the request built)",
     ["proscenium::http::h1::head::parse"]),
    ("  httparse", ["httparse::Request::parse_with_config_and_uninit_headers"]),
    ("  the request built from the head", ["proscenium::http::h1::head::interpret"]),
    ("    the target's Uri parsed", ["http::uri::Uri::from_shared"]),
    ("calling the app (route, handler, response)", ["proscenium::http::invoke::here"]),
    ("  the route found (matchit)", ["matchit::tree::Node<T>::at"]),
    ("  the response's header table with its Content-Type (kept)",
     ["proscenium::http::spare::with_content_type"]),
    ("  the request dropped (its allocation and header table kept)",
     ["<proscenium::http::request::Request as core::ops::drop::Drop>::drop"]),
    ("writing the response into the buffer", ["proscenium::http::h1::answer::buffer"]),
    ("  the response's header table kept", ["proscenium::http::spare::keep"]),
]

# Functions called from every part, shown beside them (already inside their figures).
ACROSS = [
    ("memcpy, from anywhere (moves of requests and responses)",
     ["__memcpy_avx_unaligned_erms"]),
    ("malloc and free, from anywhere", ["malloc", "free"]),
]

# The whole run's instructions, under this name.
TOTAL = "PROGRAM TOTALS"

# The functions of the top-level parts, whose sum the total less is the rest.
TOP = [f for label, functions in PARTS if not label.startswith(" ") for f in functions]

# "248,436,596 (43.97%)  path/file.rs:function [object]": a function's own entry, all
# it ran and called (the entries without the object are the shares of it inlined from
# other files, already counted in it).
LINE = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+[^:\s]*:(.*) \[[^\]]*\]$")


def inclusive(profile):
    """Each function's inclusive instructions in `profile`."""
    out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", profile],
                         capture_output=True, text=True, check=True,
                         # Elsewhere it may find the sources and name files relative to
                         # there, splitting a function into entries by how it names them.
                         cwd="/").stdout
    found = {}
    for line in out.splitlines():
        if line.endswith("PROGRAM TOTALS"):
            found[TOTAL] = int(line.split()[0].replace(",", ""))
        m = LINE.match(line)
        if m:
            found.setdefault(m.group(2), int(m.group(1).replace(",", "")))
    return found


def main():
    short, long_, requests = inclusive(sys.argv[1]), inclusive(sys.argv[2]), int(sys.argv[3])

    def per_request(functions):
        return sum(long_.get(f, 0) - short.get(f, 0) for f in functions) // requests

    def show(label, instructions):
        print(f"  {label:<62} {instructions:>6}")

    for label, functions in PARTS:
        show(label, per_request(functions))
    show("the rest: the connection loop, tokio, the socket calls",
         per_request([TOTAL]) - sum(per_request([f]) for f in TOP))
    for label, functions in ACROSS:
        show(label, per_request(functions))


if __name__ == "__main__":
    main()
