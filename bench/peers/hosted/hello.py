"""The lab's WSGI app: lab-app's /plaintext and /json, for Gunicorn and for
`proscenium serve --wsgi hello:application` (the `gunicorn` and `proscenium-wsgi`
servers)."""

PLAIN = b"Hello, World!"
JSON_BODY = b'{"message":"Hello, World!"}'


def application(environ, start_response):
    if environ["PATH_INFO"] == "/json":
        start_response("200 OK", [("Content-Type", "application/json")])
        return [JSON_BODY]
    start_response("200 OK", [("Content-Type", "text/plain")])
    return [PLAIN]
