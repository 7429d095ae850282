//! rustls' server session driven over a non-blocking socket through its unbuffered
//! API: ciphertext in and out through `Read`/`Write` on the socket, plaintext handed
//! over as it decrypts.
//!
//! The session owns its buffers — ciphertext read and not yet taken by rustls,
//! ciphertext to send, plaintext decrypted and not yet read — and frees each as it
//! empties, so a connection waiting for its next request holds none of them: only
//! rustls' state (keys, the handshake's outcome). rustls' buffered `ServerConnection`
//! kept 4 KiB for the next record for as long as the connection lived.

use std::fmt;
use std::io::{self, Read, Write};
use std::sync::Arc;

use bytes::{Buf, BytesMut};
pub(crate) use rustls::ServerConfig;
use rustls::server::{ServerConnectionData, UnbufferedServerConnection};
use rustls::unbuffered::{ConnectionState, EncodeError, EncryptError, UnbufferedStatus};

use super::{ACME_TLS_ALPN, Peek, Plain};

/// What a plain-HTTP request on the TLS port is answered with before it is closed
/// (nginx answers the same, with a page).
const PLAIN_ON_TLS: &[u8] = b"HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain\r\n\
Content-Length: 49\r\nConnection: close\r\n\r\nThis port speaks HTTPS: use https:// to reach it\n";

/// How much ciphertext one read of the socket takes (as rustls' buffered reader).
const READ_SIZE: usize = 4096;

/// The most plaintext one send encrypts: what a reader too slow to take it leaves
/// waiting is bounded by it (rustls' buffered writer's default limit).
const SEND_LIMIT: usize = 64 * 1024;

/// Room for a record's header, nonce, content type and tag, above its payload.
const RECORD_OVERHEAD: usize = 64;

/// The largest payload of a record (RFC 8446 §5.1).
const RECORD_PAYLOAD: usize = 16 * 1024;

/// A TLS session with its buffers, and whether its client has sent anything yet (its
/// first bytes are looked at: plain HTTP on the TLS port gets a plain answer).
pub(super) struct Session {
    conn: UnbufferedServerConnection,
    /// Ciphertext read and not yet taken by rustls: the start of a record, or a
    /// handshake message that spans records.
    incoming: BytesMut,
    /// Ciphertext to write.
    outgoing: BytesMut,
    /// Plaintext decrypted and not yet read.
    plain: BytesMut,
    heard: bool,
    /// How the client's side ended, once it has.
    ended: Option<Ended>,
}

/// How the client's side of a session ended.
#[derive(Debug)]
enum Ended {
    /// With its close_notify: a read gives 0 once the plaintext before it is read.
    Closed,
    /// With an error (the alert telling the client why is sent): every read fails.
    Failed(rustls::Error),
}

/// What a turn of rustls' state machine is for.
enum Want<'a> {
    /// Plaintext, `usize` bytes at most onto the sink (the rest kept in the session).
    Read(&'a mut dyn Plain, usize),
    /// Plaintext kept in the session.
    Keep,
    /// `bytes` encrypted (some of them).
    Send(&'a [u8]),
    /// A close_notify.
    Close,
}

/// Where a turn stopped.
enum Turn {
    /// Plaintext came: this many bytes onto the sink (the rest kept).
    Read(usize),
    /// This many bytes of what was to be sent are encrypted, ready to write.
    Sent(usize),
    /// rustls needs more ciphertext from the client (the handshake's next flight, or
    /// the rest of a record).
    Blocked,
    /// The client sent its close_notify (or both sides did).
    Ended,
}

impl fmt::Debug for Session {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Session")
            .field("handshaking", &self.conn.is_handshaking())
            .field("incoming", &self.incoming.len())
            .field("outgoing", &self.outgoing.len())
            .field("plain", &self.plain.len())
            .field("heard", &self.heard)
            .field("ended", &self.ended)
            .finish_non_exhaustive()
    }
}

/// A new server session, or none (logged) when rustls refuses to make one.
pub(super) fn session(config: &Arc<ServerConfig>) -> Option<Box<Session>> {
    UnbufferedServerConnection::new(config.clone())
        .inspect_err(|e| tracing::warn!("cannot begin TLS: {e}"))
        .ok()
        .map(|conn| {
            Box::new(Session {
                conn,
                incoming: BytesMut::new(),
                outgoing: BytesMut::new(),
                plain: BytesMut::new(),
                heard: false,
                ended: None,
            })
        })
}

impl Session {
    /// Whether the handshake is still under way.
    pub(super) fn is_handshaking(&self) -> bool {
        self.conn.is_handshaking()
    }

    /// The application protocol the handshake agreed on (ALPN), if any.
    pub(super) fn alpn(&self) -> Option<&[u8]> {
        self.conn.alpn_protocol()
    }

    /// Whether ciphertext waits to be written.
    pub(super) fn wants_write(&self) -> bool {
        !self.outgoing.is_empty()
    }

    /// The bytes its buffers hold allocated (0 for a session with nothing pending,
    /// once [`trim`]med).
    pub(super) fn held(&self) -> usize {
        self.incoming.capacity() + self.outgoing.capacity() + self.plain.capacity()
    }

    /// Runs rustls' state machine over what has come in until it reaches what `want`
    /// asks for, or needs more from the client. The handshake's answers, a key
    /// update's, session tickets, alerts: all go to `outgoing` on the way.
    fn turn(&mut self, want: &mut Want<'_>) -> Result<Turn, rustls::Error> {
        match (&self.ended, &want) {
            (Some(Ended::Failed(e)), _) => return Err(e.clone()),
            (Some(Ended::Closed), Want::Read(..) | Want::Keep) => return Ok(Turn::Ended),
            _ => {}
        }
        loop {
            let UnbufferedStatus { mut discard, state } =
                self.conn.process_tls_records(&mut self.incoming);
            let step = state.and_then(|state| {
                step(
                    state,
                    want,
                    &mut self.outgoing,
                    &mut self.plain,
                    &mut discard,
                )
            });
            self.incoming.advance(discard);
            match step {
                Ok(None) => {}
                Ok(Some(Turn::Ended)) if matches!(want, Want::Send(_) | Want::Close) => {
                    // The client is done sending, not reading: answers still go.
                    if self.ended.replace(Ended::Closed).is_some() {
                        return Ok(Turn::Ended);
                    }
                }
                Ok(Some(turn)) => {
                    if matches!(turn, Turn::Ended) {
                        self.ended = Some(Ended::Closed);
                    }
                    release(&mut self.incoming);
                    return Ok(turn);
                }
                Err(e) => {
                    self.fail(e.clone());
                    return Err(e);
                }
            }
        }
    }

    /// Ends the session on `error`, the alert rustls queued put in `outgoing`.
    fn fail(&mut self, error: rustls::Error) {
        self.ended = Some(Ended::Failed(error));
        // Only while rustls has records queued: a turn past them would take in the
        // client's records again, and fail (and alert) once more.
        while self.conn.wants_write() {
            let UnbufferedStatus { discard, state } =
                self.conn.process_tls_records(&mut self.incoming);
            let encoded = match state {
                Ok(ConnectionState::EncodeTlsData(mut data)) => {
                    encode(&mut self.outgoing, &mut data).is_ok()
                }
                Ok(ConnectionState::ReadTraffic(mut traffic)) => {
                    while traffic.next_record().is_some() {}
                    true
                }
                _ => false,
            };
            self.incoming.advance(discard);
            if !encoded {
                break;
            }
        }
        self.incoming = BytesMut::new();
        self.plain = BytesMut::new();
    }

    /// Moves kept plaintext onto `out`, `max` bytes at most.
    fn take_plain(&mut self, out: &mut dyn Plain, max: usize) -> usize {
        let n = self.plain.len().min(max);
        out.put(&self.plain[..n]);
        self.plain.advance(n);
        release(&mut self.plain);
        n
    }

    /// Reads what the socket has (0: the client closed).
    fn receive(&mut self, io: &mut impl Read) -> io::Result<usize> {
        // Read on the stack and kept exact: an idle connection's next request is
        // mostly one small record, decrypted and gone at once.
        let mut chunk = [0u8; READ_SIZE];
        let n = io.read(&mut chunk)?;
        self.incoming.extend_from_slice(&chunk[..n]);
        Ok(n)
    }

    /// Whether the handshake just done was an ACME validator's TLS-ALPN-01 check,
    /// which is all it wants (RFC 8737 §3).
    fn is_acme_check(&self) -> bool {
        self.alpn() == Some(ACME_TLS_ALPN) && !self.is_handshaking()
    }
}

/// Takes one state of rustls' machine towards `want`: `Some` where the turn stops.
fn step(
    state: ConnectionState<'_, '_, ServerConnectionData>,
    want: &mut Want<'_>,
    outgoing: &mut BytesMut,
    plain: &mut BytesMut,
    discard: &mut usize,
) -> Result<Option<Turn>, rustls::Error> {
    Ok(match state {
        ConnectionState::ReadTraffic(mut traffic) => {
            let mut given = 0;
            while let Some(record) = traffic.next_record() {
                let record = record?;
                *discard += record.discard;
                given += hand_over(record.payload, want, plain);
            }
            let read = given > 0 || !plain.is_empty();
            (read && matches!(want, Want::Read(..) | Want::Keep)).then_some(Turn::Read(given))
        }
        ConnectionState::EncodeTlsData(mut data) => {
            encode(outgoing, &mut data)?;
            None
        }
        ConnectionState::TransmitTlsData(data) => {
            // Sent for rustls: `outgoing` keeps the bytes until the socket takes them.
            data.done();
            None
        }
        ConnectionState::BlockedHandshake => Some(Turn::Blocked),
        ConnectionState::WriteTraffic(mut traffic) => Some(match want {
            Want::Read(..) | Want::Keep => Turn::Blocked,
            Want::Send(bytes) => {
                let bytes = &bytes[..bytes.len().min(SEND_LIMIT)];
                let room = bytes.len() + bytes.len().div_ceil(RECORD_PAYLOAD) * RECORD_OVERHEAD;
                append(outgoing, room, |out| {
                    traffic.encrypt(bytes, out).map_err(|e| needs(&e))
                })?;
                Turn::Sent(bytes.len())
            }
            Want::Close => {
                append(outgoing, RECORD_OVERHEAD, |out| {
                    traffic.queue_close_notify(out).map_err(|e| needs(&e))
                })?;
                Turn::Sent(0)
            }
        }),
        ConnectionState::PeerClosed | ConnectionState::Closed => Some(Turn::Ended),
        // Early data (0-RTT) is never accepted: its configuration leaves it off.
        other => {
            return Err(rustls::Error::General(format!(
                "unexpected TLS state {other:?}"
            )));
        }
    })
}

/// Gives `payload` to what `want` reads onto, as much as it takes, the rest kept in
/// `plain`: the bytes given.
fn hand_over(payload: &[u8], want: &mut Want<'_>, plain: &mut BytesMut) -> usize {
    let Want::Read(out, max) = want else {
        plain.extend_from_slice(payload);
        return 0;
    };
    let n = payload.len().min(*max);
    out.put(&payload[..n]);
    *max -= n;
    plain.extend_from_slice(&payload[n..]);
    n
}

/// Encodes a handshake record (or an alert) at the end of `outgoing`.
fn encode(
    outgoing: &mut BytesMut,
    data: &mut rustls::unbuffered::EncodeTlsData<'_, ServerConnectionData>,
) -> Result<(), rustls::Error> {
    append(outgoing, RECORD_OVERHEAD, |out| {
        data.encode(out).map_err(|e| match e {
            EncodeError::InsufficientSize(size) => Some(size.required_size),
            _ => None,
        })
    })
}

/// The room an encryption needs, when it said it lacked room.
fn needs(e: &EncryptError) -> Option<usize> {
    match e {
        EncryptError::InsufficientSize(size) => Some(size.required_size),
        _ => None,
    }
}

/// Runs `write` on `room` bytes at the end of `out` (more if it says it needs more),
/// keeping what it wrote.
fn append(
    out: &mut BytesMut,
    mut room: usize,
    mut write: impl FnMut(&mut [u8]) -> Result<usize, Option<usize>>,
) -> Result<(), rustls::Error> {
    let len = out.len();
    loop {
        out.resize(len + room, 0);
        match write(&mut out[len..]) {
            Ok(n) => {
                out.truncate(len + n);
                return Ok(());
            }
            Err(Some(needed)) if needed > room => room = needed,
            Err(_) => {
                out.truncate(len);
                return Err(rustls::Error::EncryptError);
            }
        }
    }
}

/// Frees `buf`'s memory once it holds nothing: a session with nothing pending keeps no
/// buffer.
fn release(buf: &mut BytesMut) {
    if buf.is_empty() {
        *buf = BytesMut::new();
    }
}

/// A session's error as an I/O error.
fn invalid(e: rustls::Error) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

/// Whether `tls` holds decrypted bytes not read yet (or an end to report).
pub(super) fn has_plaintext(tls: &mut Session) -> bool {
    if !tls.incoming.is_empty() {
        let _ = tls.turn(&mut Want::Keep);
    }
    !tls.plain.is_empty() || tls.ended.is_some()
}

/// Reads plaintext onto `out`, `max` bytes at most, reading and decrypting what the
/// socket has and writing what the handshake answers: the bytes read (0: the client
/// closed), or `WouldBlock` when the socket has nothing more for now.
pub(super) fn read(
    tls: &mut Session,
    io: &mut (impl Read + Write + Peek),
    out: &mut dyn Plain,
    max: usize,
) -> io::Result<usize> {
    loop {
        if !tls.plain.is_empty() {
            return Ok(tls.take_plain(out, max));
        }
        match tls.turn(&mut Want::Read(out, max)) {
            Ok(Turn::Read(n)) => return Ok(n),
            // A close_notify, or (below) a close without one: a truncation, of
            // nothing an HTTP/1.1 message framing would take for whole.
            Ok(Turn::Ended) => return Ok(0),
            Ok(Turn::Blocked | Turn::Sent(_)) => {}
            Err(e) => {
                // The alert tells the client why.
                let _ = flush(tls, io);
                return Err(invalid(e));
            }
        }
        if tls.is_acme_check() {
            let _ = flush(tls, io);
            return Ok(0);
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
        if tls.receive(io)? == 0 {
            return Ok(0);
        }
        tls.heard = true;
    }
}

/// Reads and decrypts what the socket has, leaving the plaintext in the session:
/// whether it read something (`false`: the client closed, or has sent nothing yet — its
/// first bytes are for [`read`] to look at), or `WouldBlock`.
pub(super) fn pull(tls: &mut Session, io: &mut (impl Read + Write)) -> io::Result<bool> {
    if !tls.heard || tls.ended.is_some() || tls.receive(io)? == 0 {
        return Ok(false);
    }
    let turned = tls.turn(&mut Want::Keep);
    // What the session answers (a key update's, an alert) goes now, if it can.
    let _ = flush(tls, io);
    turned.map(|_| true).map_err(invalid)
}

/// Encrypts some of `bytes` (how many it took) for [`flush`] to write; 0 for none.
pub(super) fn send(tls: &mut Session, bytes: &[u8]) -> io::Result<usize> {
    if bytes.is_empty() {
        return Ok(0);
    }
    match tls.turn(&mut Want::Send(bytes)) {
        Ok(Turn::Sent(n)) => Ok(n),
        Ok(Turn::Blocked | Turn::Read(_)) => Err(io::Error::new(
            io::ErrorKind::NotConnected,
            "the TLS handshake is not done",
        )),
        Ok(Turn::Ended) => Err(io::ErrorKind::BrokenPipe.into()),
        Err(e) => Err(invalid(e)),
    }
}

/// Queues the session's close_notify (when its handshake is done and it has not
/// failed), for [`flush`] to write.
pub(super) fn close(tls: &mut Session) {
    let _ = tls.turn(&mut Want::Close);
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
pub(super) fn flush(tls: &mut Session, io: &mut impl Write) -> io::Result<usize> {
    let mut sent = 0;
    while !tls.outgoing.is_empty() {
        match io.write(&tls.outgoing)? {
            0 => return Err(io::ErrorKind::WriteZero.into()),
            n => {
                tls.outgoing.advance(n);
                sent += n;
            }
        }
    }
    Ok(sent)
}

/// Frees the encrypted-output buffer once it is empty. `flush` keeps it: freeing it at
/// every flush cost HTTP/2 over TLS with a 1 KB file 1.80x nginx's CPU a request, against
/// 1.49x kept (docs/performance.md). A connection calls this when it goes idle, so an
/// idle session still holds nothing.
pub(super) fn trim(tls: &mut Session) {
    release(&mut tls.outgoing);
}

#[cfg(test)]
mod tests;
