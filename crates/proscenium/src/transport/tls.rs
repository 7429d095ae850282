//! rustls' server session driven over a non-blocking socket: ciphertext in and out
//! through `Read`/`Write` on the socket, plaintext handed over as it decrypts.

use std::io::{self, BufRead, Read, Write};
use std::ops::{Deref, DerefMut};
use std::sync::Arc;

use bytes::BytesMut;
use rustls::{ServerConfig, ServerConnection};

/// What a plain-HTTP request on the TLS port is answered with before it is closed
/// (nginx answers the same, with a page).
const PLAIN_ON_TLS: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n\
Content-Length: 49\r\nConnection: close\r\n\r\nThis port speaks HTTPS: use https:// to reach it\n";

/// Where decrypted bytes go: a connection's read buffer, or an `AsyncRead` caller's.
pub(super) trait Plain {
    fn put(&mut self, bytes: &[u8]);
}

impl Plain for BytesMut {
    fn put(&mut self, bytes: &[u8]) {
        self.extend_from_slice(bytes);
    }
}

impl Plain for tokio::io::ReadBuf<'_> {
    fn put(&mut self, bytes: &[u8]) {
        self.put_slice(bytes);
    }
}

/// A socket's look at its first byte without taking it.
pub(super) trait Peek {
    fn peek(&self, buf: &mut [u8]) -> io::Result<usize>;
}

/// A TLS session, and whether its client has sent anything yet (its first bytes are
/// looked at: plain HTTP on the TLS port gets a plain answer).
#[derive(Debug)]
pub(super) struct Session {
    conn: ServerConnection,
    heard: bool,
}

impl Deref for Session {
    type Target = ServerConnection;

    fn deref(&self) -> &ServerConnection {
        &self.conn
    }
}

impl DerefMut for Session {
    fn deref_mut(&mut self) -> &mut ServerConnection {
        &mut self.conn
    }
}

/// A new server session, or none (logged) when rustls refuses to make one.
pub(super) fn session(config: &Arc<ServerConfig>) -> Option<Box<Session>> {
    ServerConnection::new(config.clone())
        .inspect_err(|e| tracing::warn!("cannot begin TLS: {e}"))
        .ok()
        .map(|conn| Box::new(Session { conn, heard: false }))
}

/// Whether `tls` holds decrypted bytes not read yet (or an error to report).
pub(super) fn has_plaintext(tls: &mut Session) -> bool {
    tls.process_new_packets()
        .map_or(true, |state| state.plaintext_bytes_to_read() > 0)
}

/// Reads plaintext onto `out`, `max` bytes at most, reading and decrypting what the
/// socket has and writing what the handshake answers: the bytes read (0: the client
/// closed), or `WouldBlock` when the socket has nothing more for now.
pub(super) fn read(
    tls: &mut Session,
    io: &mut (impl Read + Write + Peek),
    out: &mut (impl Plain + ?Sized),
    max: usize,
) -> io::Result<usize> {
    loop {
        let mut reader = tls.conn.reader();
        match reader.fill_buf() {
            Ok(plain) if !plain.is_empty() => {
                let n = plain.len().min(max);
                out.put(&plain[..n]);
                reader.consume(n);
                return Ok(n);
            }
            // A close_notify, or a close without one (a truncation rustls reports, of
            // nothing an HTTP/1.1 message framing would take for whole).
            Ok(_) => return Ok(0),
            Err(e) if e.kind() == io::ErrorKind::UnexpectedEof => return Ok(0),
            Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
            Err(e) => return Err(e),
        }
        // The handshake's answers go before a wait for the client's next flight; a
        // full socket leaves them buffered, for the caller to flush once it has room.
        match flush(tls, io) {
            Err(e) if e.kind() != io::ErrorKind::WouldBlock => return Err(e),
            _ => {}
        }
        if !tls.heard {
            refuse_plain_http(io)?;
        }
        if tls.conn.read_tls(io)? == 0 {
            return Ok(0);
        }
        tls.heard = true;
        if let Err(e) = tls.conn.process_new_packets() {
            // The alert rustls queued tells the client why.
            let _ = flush(tls, io);
            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
        }
        if tls.alpn_protocol() == Some(crate::tls::ACME_TLS_ALPN) && !tls.is_handshaking() {
            // An ACME validator's TLS-ALPN-01 check: the handshake was all of it.
            let _ = flush(tls, io);
            return Ok(0);
        }
    }
}

/// Reads and decrypts what the socket has, leaving the plaintext in the session:
/// whether it read something (`false`: the client closed, or has sent nothing yet — its
/// first bytes are for [`read`] to look at), or `WouldBlock`.
pub(super) fn pull(tls: &mut Session, io: &mut (impl Read + Write)) -> io::Result<bool> {
    if !tls.heard || tls.conn.read_tls(io)? == 0 {
        return Ok(false);
    }
    let processed = tls.conn.process_new_packets();
    // What the session answers (a key update's, an alert) goes now, if it can.
    let _ = flush(tls, io);
    processed
        .map(|_| true)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

/// Answers plain HTTP sent to the TLS port in plain text, and fails: a TLS client's
/// first byte is a handshake record's type (22), a request's an upper-case letter.
fn refuse_plain_http(io: &mut (impl Read + Write + Peek)) -> io::Result<()> {
    let mut first = [0u8; 1];
    if io.peek(&mut first)? == 1 && first[0].is_ascii_uppercase() {
        let _ = io.write(PLAIN_ON_TLS);
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            "plain HTTP on the TLS port",
        ));
    }
    Ok(())
}

/// Writes what the session holds encrypted: the bytes written, or `WouldBlock` when
/// the socket took no more.
pub(super) fn flush(tls: &mut ServerConnection, io: &mut impl Write) -> io::Result<usize> {
    let mut sent = 0;
    while tls.wants_write() {
        match tls.write_tls(io)? {
            0 => return Err(io::ErrorKind::WriteZero.into()),
            n => sent += n,
        }
    }
    Ok(sent)
}
