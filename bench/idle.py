"""Opens N idle keep-alive connections to a server, each after one request, and
prints the growth of the server's resident memory per connection: half a second
after the last answer, and three seconds after (when Proscenium's loops have shelved
them: rt/shelf.rs). With WS=PATH in the environment the connections are WebSockets
opened on PATH instead (idle once switched).

Usage: python3 bench/idle.py PORT N PID [PID...]   (PIDs: the server's processes)
"""
import os
import resource
import socket
import sys
import time


def rss_kib(pids):
    total = 0
    for pid in pids:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS"):
                    total += int(line.split()[1])
    return total


def main():
    port, n, pids = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    before = rss_kib(pids)
    conns = []
    path = os.environ.get("WS")
    request = (b"GET /plaintext HTTP/1.1\r\nHost: bench\r\n\r\n" if path is None else
               f"GET {path} HTTP/1.1\r\nHost: bench\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n"
               "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n".encode())
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(request)
        conns.append(s)
    for s in conns:
        if not s.recv(4096):
            sys.exit("a connection was closed")
    figures = []
    for idle, wait in ((0.5, 0.5), (3, 2.5)):
        time.sleep(wait)
        after = rss_kib(pids)
        figures.append(f"idle {idle} s: RSS {before} -> {after} KiB, "
                       f"{(after - before) * 1024 / n:.0f} B per connection")
    print(f"{n} connections; " + "; ".join(figures))


main()
