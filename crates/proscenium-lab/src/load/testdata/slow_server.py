# A threaded server for recording fixtures: /ok answers at once, /slow?ms=N after N ms, /jitter?ms=N after 0..N ms, /fail answers 503.
import http.server, socketserver, time, urllib.parse, sys
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def log_message(self, *a): pass
    def do_GET(self):
        u = urllib.parse.urlparse(self.path)
        q = urllib.parse.parse_qs(u.query)
        if u.path == "/jitter":
            import random
            time.sleep(random.random() * int(q.get("ms", ["100"])[0]) / 1000)
        if u.path == "/slow":
            time.sleep(int(q.get("ms", ["100"])[0]) / 1000)
        code = 503 if u.path == "/fail" else 200
        body = b"ok"
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
class S(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    request_queue_size = 1024
S(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
