"""Sends BATCHES rounds of DEPTH (default 16) pipelined `GET /plaintext` on each of
CONNS connections, reading every answer before the next round; prints how many answers
came. DEPTH 1 is plain keep-alive.

Usage: python3 bench/pipeline_client.py PORT CONNS BATCHES [DEPTH]
"""
import socket
import sys

REQUEST = b"GET /plaintext HTTP/1.1\r\nHost: localhost\r\nUser-Agent: bench\r\n\r\n"


def main():
    port, conns, batches = (int(a) for a in sys.argv[1:4])
    depth = int(sys.argv[4]) if len(sys.argv) > 4 else 16
    socks = [socket.create_connection(("127.0.0.1", port)) for _ in range(conns)]
    answers = 0
    for _ in range(batches):
        for s in socks:
            s.sendall(REQUEST * depth)
        for s in socks:
            got = 0
            while got < depth:
                data = s.recv(65536)
                if not data:
                    sys.exit("the server closed a connection")
                got += data.count(b"HTTP/1.1 200")
            answers += got
    print(answers)


main()
