//! Message decoding: a head, then its body, assembled from whatever bytes have arrived.
//!
//! Bodies are buffered whole (up to `max_body`) before the request is handed on, so
//! extractors never wait on the socket and a body the app ignores is already off the
//! wire when the next pipelined request is parsed.
//!
//! A body that came with its head is a slice of the read buffer. One that has to wait
//! for more bytes moves out of the read buffer into its own, which grows as bytes
//! arrive (never to the announced length up front: announcing costs a client nothing)
//! and holds room from the server's [`Budget`] until the app drops the body. No
//! allocation a client can drive aborts the process: growing is `try_reserve`, and
//! failing it refuses the request like an exhausted budget (503).

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::{Buf, Bytes, BytesMut};

use super::chunked::ChunkedDecoder;
use super::error::ParseError;
use super::head::{self, Head, RequestFraming};
use crate::config::Limits;

/// A complete request: its head, with the whole body in its request.
pub(crate) type Message = Head;

/// Where the decoder stands between and inside messages.
// One decoder per connection, so the large variant costs nothing; boxing the head
// would cost an allocation per request with a body.
#[allow(clippy::large_enum_variant)]
#[derive(Debug)]
enum State {
    /// Waiting for (the rest of) a head.
    Head,
    /// The head is parsed; reading its body. Boxed: it lives in every connection, most
    /// of them idle, and a body that came with its head never enters it.
    Body(Box<Body>),
}

#[derive(Debug)]
struct Body {
    head: Head,
    body: BodyState,
    continue_sent: bool,
}

#[derive(Debug)]
enum BodyState {
    /// The announced length, and what has arrived of it.
    Length(usize, Buffered),
    Chunked {
        decoder: ChunkedDecoder,
        data: Buffered,
    },
}

/// The bytes buffered across the server for request bodies that wait for more
/// (`limits.max_buffered_bodies`): one per server, shared by its loops and threads.
#[derive(Debug)]
pub(crate) struct Budget {
    max: usize,
    used: AtomicUsize,
}

impl Budget {
    /// Returns a budget of `max` bytes, none of them taken.
    pub(crate) fn new(max: usize) -> Arc<Self> {
        Arc::new(Self {
            max,
            used: AtomicUsize::new(0),
        })
    }

    /// Takes `n` bytes of room, if the budget has them.
    fn try_take(&self, n: usize) -> bool {
        self.used
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |used| {
                used.checked_add(n).filter(|&total| total <= self.max)
            })
            .is_ok()
    }

    /// Gives back `n` bytes of room taken before.
    fn give_back(&self, n: usize) {
        self.used.fetch_sub(n, Ordering::AcqRel);
    }
}

/// A body's own buffer, and the room it holds in the budget.
#[derive(Debug)]
struct Buffered {
    data: Vec<u8>,
    /// The bytes of the budget this buffer holds: its capacity when it grew.
    held: usize,
    budget: Arc<Budget>,
}

impl Buffered {
    fn new(budget: &Arc<Budget>) -> Self {
        Self {
            data: Vec::new(),
            held: 0,
            budget: budget.clone(),
        }
    }

    /// Makes room for `need` bytes in all, growing geometrically up to `ceiling`
    /// (or past it to `need`).
    ///
    /// # Errors
    ///
    /// [`ParseError::NoRoom`] when the budget or the allocator has not the room.
    fn make_room(&mut self, need: usize, ceiling: usize) -> Result<(), ParseError> {
        if need <= self.data.capacity() {
            return Ok(());
        }
        let cap = self.held.saturating_mul(2).min(ceiling).max(need);
        let more = cap.saturating_sub(self.held);
        if !self.budget.try_take(more) {
            return Err(ParseError::NoRoom);
        }
        self.held += more;
        self.data
            .try_reserve_exact(cap - self.data.len())
            .map_err(|_| ParseError::NoRoom)
    }

    /// Appends `bytes`, making room as [`make_room`](Self::make_room) does.
    fn append(&mut self, bytes: &[u8], ceiling: usize) -> Result<(), ParseError> {
        self.make_room(self.data.len() + bytes.len(), ceiling)?;
        self.data.extend_from_slice(bytes);
        Ok(())
    }

    /// Returns the body, which holds its room until the app drops it.
    fn finish(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for Buffered {
    fn as_ref(&self) -> &[u8] {
        &self.data
    }
}

impl Drop for Buffered {
    fn drop(&mut self) {
        self.budget.give_back(self.held);
    }
}

/// The per-connection request decoder.
#[derive(Debug)]
pub(crate) struct Decoder {
    state: State,
}

impl Decoder {
    pub(crate) fn new() -> Self {
        Self { state: State::Head }
    }

    /// Returns whether no message is partly decoded.
    pub(crate) fn is_between_messages(&self) -> bool {
        matches!(self.state, State::Head)
    }

    /// Returns the request whose body is being read, or was refused, if any.
    pub(crate) fn pending(&self) -> Option<&crate::http::Request> {
        match &self.state {
            State::Head => None,
            State::Body(progress) => Some(&progress.head.req),
        }
    }

    /// Returns whether a body is being read (as opposed to a head).
    pub(crate) fn is_reading_body(&self) -> bool {
        matches!(self.state, State::Body(_))
    }

    /// Decodes the next complete message from the front of `buf`; a body that waits
    /// for more bytes takes its room from `budget`.
    ///
    /// Returns `Ok(None)` when more bytes are needed.
    ///
    /// # Errors
    ///
    /// The reason the message is refused; the connection must close after answering.
    pub(crate) fn decode(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
        budget: &Arc<Budget>,
    ) -> Result<Option<Message>, ParseError> {
        if let State::Head = self.state {
            let Some(head) = head::parse(buf, limits)? else {
                return Ok(None);
            };
            let body = match head.framing {
                RequestFraming::Empty => return Ok(Some(head)),
                RequestFraming::Length(n) if n > limits.max_body => {
                    // Kept as if its body were being read: the refusal names the request
                    // it refuses (`pending`).
                    let n = usize::try_from(n).unwrap_or(usize::MAX);
                    self.state = State::Body(Box::new(Body {
                        head,
                        body: BodyState::Length(n, Buffered::new(budget)),
                        continue_sent: false,
                    }));
                    return Err(ParseError::BodyTooLarge);
                }
                RequestFraming::Length(n) => {
                    let n = usize::try_from(n).map_err(|_| ParseError::BodyTooLarge)?;
                    if buf.len() >= n {
                        let mut head = head;
                        head.req.set_body(buf.split_to(n).freeze());
                        return Ok(Some(head));
                    }
                    BodyState::Length(n, Buffered::new(budget))
                }
                RequestFraming::Chunked => BodyState::Chunked {
                    decoder: ChunkedDecoder::new(),
                    data: Buffered::new(budget),
                },
            };
            self.state = State::Body(Box::new(Body {
                head,
                body,
                continue_sent: false,
            }));
        }
        self.decode_body(buf, limits)
    }

    /// Moves what `buf` holds of the body being read into the body's own buffer;
    /// returns the message once the body is complete.
    fn decode_body(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
    ) -> Result<Option<Message>, ParseError> {
        let State::Body(progress) = &mut self.state else {
            return Ok(None);
        };
        let complete = match &mut progress.body {
            BodyState::Length(n, body) => {
                let take = (*n - body.data.len()).min(buf.len());
                body.append(&buf[..take], *n)?;
                buf.advance(take);
                body.data.len() == *n
            }
            BodyState::Chunked { decoder, data } => {
                // The decoder's data goes through a buffer of at most one read (what
                // `buf` holds), then into the body's, which grows within the budget.
                let mut chunk = BytesMut::new();
                let done = decoder.decode(buf, &mut chunk, limits.max_body, limits.max_head)?;
                let ceiling = usize::try_from(limits.max_body).unwrap_or(usize::MAX);
                data.append(&chunk, ceiling)?;
                done
            }
        };
        if !complete {
            return Ok(None);
        }
        let State::Body(progress) = std::mem::replace(&mut self.state, State::Head) else {
            unreachable!("state checked above");
        };
        let mut head = progress.head;
        let (BodyState::Length(_, body) | BodyState::Chunked { data: body, .. }) = progress.body;
        head.req.set_body(body.finish());
        Ok(Some(head))
    }

    /// Returns true, once per message, when the client waits for `100 Continue`
    /// before sending the body it announced (RFC 9110 §10.1.1).
    pub(crate) fn take_continue(&mut self) -> bool {
        match &mut self.state {
            State::Body(progress) if progress.head.expect_continue && !progress.continue_sent => {
                progress.continue_sent = true;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn budget() -> Arc<Budget> {
        Budget::new(usize::MAX)
    }

    fn decode_stream(raw: &[u8]) -> Result<Vec<(String, Vec<u8>)>, ParseError> {
        let mut buf = BytesMut::from(raw);
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        while let Some(m) = decoder.decode(&mut buf, &Limits::default(), &budget())? {
            out.push((m.req.uri().to_string(), m.req.body().to_vec()));
        }
        Ok(out)
    }

    #[test]
    fn splits_pipelined_requests_with_bodies() {
        let raw = b"POST /a HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabcGET /b HTTP/1.1\r\nHost: x\r\n\r\nPOST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\n\r\n";
        let got = decode_stream(raw).unwrap();
        let want = [("/a", &b"abc"[..]), ("/b", b""), ("/c", b"hi")];
        assert_eq!(got.len(), 3);
        for ((uri, body), (want_uri, want_body)) in got.iter().zip(want) {
            assert_eq!((uri.as_str(), body.as_slice()), (want_uri, want_body));
        }
    }

    #[test]
    fn waits_for_a_body_and_asks_for_continue_once() {
        let mut decoder = Decoder::new();
        let mut buf = BytesMut::from(
            &b"PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"[..],
        );
        assert!(
            decoder
                .decode(&mut buf, &Limits::default(), &budget())
                .unwrap()
                .is_none()
        );
        assert!(decoder.take_continue());
        assert!(!decoder.take_continue());
        buf.extend_from_slice(b"ok");
        let m = decoder
            .decode(&mut buf, &Limits::default(), &budget())
            .unwrap()
            .unwrap();
        assert_eq!(&m.req.body()[..], b"ok");
        assert!(decoder.is_between_messages());
    }

    #[test]
    fn refuses_an_announced_body_over_the_limit() {
        let limits = Limits {
            max_body: 4,
            ..Limits::default()
        };
        let mut buf =
            BytesMut::from(&b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\n"[..]);
        let mut decoder = Decoder::new();
        let result = decoder.decode(&mut buf, &limits, &budget());
        assert_eq!(result.unwrap_err(), ParseError::BodyTooLarge);
        assert_eq!(decoder.pending().map(|req| req.uri().path()), Some("/"));
    }

    #[test]
    fn a_waiting_body_holds_room_for_what_arrived_until_dropped() {
        let budget = Budget::new(1 << 20);
        let mut buf = BytesMut::from(
            &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 8388608\r\n\r\nabcd"[..],
        );
        let mut decoder = Decoder::new();
        let got = decoder.decode(&mut buf, &Limits::default(), &budget);
        assert!(got.unwrap().is_none());
        assert_eq!(budget.used.load(Ordering::Acquire), 4);
        drop(decoder);
        assert_eq!(budget.used.load(Ordering::Acquire), 0);
    }

    #[test]
    fn refuses_a_body_past_the_budget() {
        let budget = Budget::new(16);
        let mut buf = BytesMut::from(
            &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 32\r\n\r\n0123456789abcdefghij"[..],
        );
        let result = Decoder::new().decode(&mut buf, &Limits::default(), &budget);
        assert_eq!(result.unwrap_err(), ParseError::NoRoom);
        assert_eq!(budget.used.load(Ordering::Acquire), 0);
    }
}
