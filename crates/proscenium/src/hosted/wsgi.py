"""Proscenium's WSGI adapter: runs the WSGI app MODULE:NAME in one interpreter process
of a pool Proscenium supervises, one request at a time. Proscenium parses HTTP,
applies its limits and timeouts, and speaks to this process over its standard input
and output in frames (hosted/framing.rs says the format):

  request:  a JSON object of the environment's strings, then the body in frames,
            then an empty frame;
  response: a JSON object {"status": N, "headers": [[name, value], ...]}, then the
            body in frames, then an empty frame;
  and first, once the app has loaded, an empty frame.

What the app prints goes to standard error, Proscenium's log, never into the frames.
An app that raises before its answer's head gets 500 (its traceback logged); one that
raises while its body is written ends this process, so Proscenium cuts the answer
short and starts another.

Usage: python3 wsgi.py MODULE:NAME  (MODULE imported from the working directory)
"""

import importlib
import io
import json
import struct
import sys
import traceback


def read_frame(stream):
    """One frame's bytes, or None at the end of the input."""
    head = stream.read(4)
    if not head:
        return None
    if len(head) < 4:
        raise EOFError("a frame's length cut short")
    (length,) = struct.unpack(">I", head)
    data = stream.read(length) if length else b""
    if len(data) < length:
        raise EOFError("a frame cut short")
    return data


def write_frame(stream, data):
    stream.write(struct.pack(">I", len(data)))
    stream.write(data)


def head_of(status, headers):
    code = int(str(status).split(" ", 1)[0])
    fields = [[str(name), str(value)] for name, value in headers]
    return json.dumps({"status": code, "headers": fields}).encode()


def load(target):
    module_name, _, name = target.partition(":")
    sys.path.insert(0, "")
    module = importlib.import_module(module_name)
    return getattr(module, name or "application")


def serve(app, environ, output, started):
    """Answers one request, noting in `started` what the app started and whether its
    head went out; returns once its last frame is written."""

    def start_response(status, headers, exc_info=None):
        if exc_info and "head" in started:
            raise exc_info[1].with_traceback(exc_info[2])
        started["status"], started["headers"] = status, headers
        return written.append

    written = []
    result = app(environ, start_response)
    try:
        head_sent = False
        for chunk in result:
            if not head_sent:
                write_frame(output, head_of(started["status"], started["headers"]))
                started["head"] = head_sent = True
                for early in written:
                    if early:
                        write_frame(output, early)
            if chunk:
                write_frame(output, chunk)
        if not head_sent:
            write_frame(output, head_of(started["status"], started["headers"]))
            for early in written:
                if early:
                    write_frame(output, early)
        write_frame(output, b"")
    finally:
        if hasattr(result, "close"):
            result.close()


def failed(output):
    traceback.print_exc(file=sys.stderr)
    write_frame(output, head_of(500, [("content-type", "text/plain")]))
    write_frame(output, b"500 Internal Server Error: the app raised an error\n")
    write_frame(output, b"")


def main():
    app = load(sys.argv[1])
    stdin, output = sys.stdin.buffer, sys.stdout.buffer
    sys.stdout = sys.stderr
    # Loaded: an empty frame says so, before the first request.
    write_frame(output, b"")
    output.flush()
    while True:
        meta = read_frame(stdin)
        if meta is None:
            break
        environ = json.loads(meta)
        body = bytearray()
        while True:
            chunk = read_frame(stdin)
            if not chunk:
                break
            body += chunk
        environ["wsgi.input"] = io.BytesIO(bytes(body))
        environ["wsgi.errors"] = sys.stderr
        environ["wsgi.version"] = (1, 0)
        environ["wsgi.url_scheme"] = environ.pop("proscenium.url_scheme", "http")
        environ["wsgi.multithread"] = False
        environ["wsgi.multiprocess"] = True
        environ["wsgi.run_once"] = False
        started = {}
        try:
            serve(app, environ, output, started)
        except Exception:
            if started.get("head"):
                raise
            failed(output)
        output.flush()


if __name__ == "__main__":
    main()
