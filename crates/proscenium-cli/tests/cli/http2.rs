//! HTTP/2 through the binary (issue 35): prefork workers speak it as the other models
//! do — in cleartext with prior knowledge, and over TLS by ALPN — spoken here in raw
//! frames, so the test reads the wire as a client sends and receives it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::Duration;

use super::tls::Site;
use super::{signal, start, wait_exit};

/// What a client that speaks HTTP/2 opens with, and its (empty) SETTINGS.
const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";
/// HPACK's static table: `:status: 200`, indexed (RFC 7541 Appendix A, index 8).
const STATUS_200: u8 = 0x88;

/// Frames' types and flags this client reads.
const DATA: u8 = 0;
const HEADERS: u8 = 1;
const SETTINGS: u8 = 4;
const END_STREAM: u8 = 1;
const ACK: u8 = 1;

/// Sends a GET for `path` on stream 1 of a new HTTP/2 connection over `io`; returns
/// the first byte of the answer's header block (its `:status`, indexed) and its body.
fn get(io: &mut (impl Read + Write), scheme: &str, path: &str) -> (u8, Vec<u8>) {
    // :method GET, :scheme (indexed), :path and :authority (literals, names indexed).
    let mut block = vec![0x82, if scheme == "https" { 0x87 } else { 0x86 }];
    for (name, value) in [(4u8, path), (1, "localhost")] {
        block.extend([name, u8::try_from(value.len()).unwrap()]);
        block.extend(value.as_bytes());
    }
    let mut out = PREFACE.to_vec();
    out.extend(frame(HEADERS, END_STREAM | 4, 1, &block));
    io.write_all(&out).unwrap();
    let (mut status, mut body) = (None, Vec::new());
    loop {
        let mut head = [0u8; 9];
        io.read_exact(&mut head).unwrap();
        let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
        let (kind, flags) = (head[3], head[4]);
        let stream = u32::from_be_bytes(head[5..9].try_into().unwrap()) & 0x7fff_ffff;
        let mut payload = vec![0u8; len];
        io.read_exact(&mut payload).unwrap();
        match (kind, stream) {
            (SETTINGS, 0) if flags & ACK == 0 => {
                io.write_all(&frame(SETTINGS, ACK, 0, &[])).unwrap();
            }
            (HEADERS, 1) => status = payload.first().copied(),
            (DATA, 1) => body.extend(payload),
            _ => {}
        }
        if stream == 1 && flags & END_STREAM != 0 {
            return (status.expect("a HEADERS frame"), body);
        }
    }
}

fn frame(kind: u8, flags: u8, stream: u32, payload: &[u8]) -> Vec<u8> {
    let len = u32::try_from(payload.len()).unwrap().to_be_bytes();
    let mut out = vec![len[1], len[2], len[3], kind, flags];
    out.extend(stream.to_be_bytes());
    out.extend(payload);
    out
}

fn connect(addr: &str) -> TcpStream {
    let tcp = TcpStream::connect(addr).unwrap();
    tcp.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    tcp
}

#[test]
fn issue35_prefork_workers_speak_http2_in_cleartext_and_over_tls() {
    let site = Site::new();
    site.write(&["localhost"]);
    let (mut child, addr, _) = site.serve(&["--workers", "2"]);
    // Ten connections in a row reach both workers.
    for _ in 0..10 {
        let mut tls = site.connect(&addr, &[b"h2"]);
        assert_eq!(tls.conn.alpn_protocol(), Some(&b"h2"[..]));
        assert_eq!(
            get(&mut tls, "https", "/f.txt"),
            (STATUS_200, b"same file".to_vec())
        );
    }
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
    let (mut child, addr, _) = start(site.dir(), &["--workers", "2"]);
    for _ in 0..10 {
        let answer = get(&mut connect(&addr), "http", "/f.txt");
        assert_eq!(answer, (STATUS_200, b"same file".to_vec()));
    }
    signal(&child, "TERM");
    assert_eq!(wait_exit(&mut child), 0);
}
