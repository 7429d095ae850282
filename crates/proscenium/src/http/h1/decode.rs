//! Message decoding: a head, then its body, assembled from whatever bytes have arrived.
//!
//! Bodies are buffered whole (up to `max_body`) before the request is handed on, so
//! extractors never wait on the socket and a body the app ignores is already off the
//! wire when the next pipelined request is parsed — except for a route that streams
//! its body (`BodyStream`): its request is handed on with its head, and the body
//! passed on through a feed as it arrives ([`Decoder::feed`]); once the request is
//! answered, what is left of it is drained.
//!
//! A body that came with its head is a slice of the read buffer. One that has to wait
//! for more bytes moves out of the read buffer into its own, which grows as bytes
//! arrive (never to the announced length up front: announcing costs a client nothing)
//! and holds room from the server's memory [`Budget`](crate::http::intake::Budget) until the app drops the body. A
//! body past `limits.spool_above` (announced, or received so far when chunked) is
//! written to a spool file instead (`http/intake/spool.rs`), holding room from the disk budget. No
//! allocation a client can drive aborts the process: growing is `try_reserve`, and
//! failing it refuses the request like an exhausted budget (503), as does a spool
//! file the disk refuses.

use bytes::{Buf, BytesMut};

use super::chunked::ChunkedDecoder;
use super::error::ParseError;
use super::head::{self, Head, RequestFraming};
use crate::config::Limits;
use crate::http::Request;
use crate::http::intake::{Arriving, Bodies, Feed, Sink, arriving};

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
    /// The head is with the app, which takes its body as it arrives.
    Streaming(Box<Streaming>),
}

#[derive(Debug)]
struct Streaming {
    framing: Framing,
    /// Where the body goes; `None` once the request is answered: the rest is drained.
    feed: Option<Feed>,
    expect_continue: bool,
    continue_sent: bool,
}

#[derive(Debug)]
enum Framing {
    /// Bytes of the announced length still to come.
    Length(usize),
    Chunked(ChunkedDecoder),
}

/// How far a streamed body has come.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Fed {
    /// More of it is to come.
    More,
    /// All of it has arrived (or none was being streamed).
    Whole,
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
    Length(usize, Sink),
    Chunked {
        decoder: ChunkedDecoder,
        data: Sink,
    },
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

    /// Returns the request whose body is being read, or was refused, if any (not one
    /// whose body streams: that request is the app's).
    pub(crate) fn pending(&self) -> Option<&crate::http::Request> {
        match &self.state {
            State::Head | State::Streaming(_) => None,
            State::Body(progress) => Some(&progress.head.req),
        }
    }

    /// Returns whether a body is being read (as opposed to a head).
    pub(crate) fn is_reading_body(&self) -> bool {
        matches!(self.state, State::Body(_) | State::Streaming(_))
    }

    /// Returns whether the body being read streams to the app: its request has been
    /// handed on, so a refusal of the body is no longer answered here.
    pub(crate) fn is_streaming(&self) -> bool {
        matches!(self.state, State::Streaming(_))
    }

    /// Decodes the next complete message from the front of `buf`; a body that waits
    /// for more bytes takes its room from `bodies`, unless `streams` says the request's
    /// route takes it as it arrives: then the message is returned with its head, the
    /// body to be passed on by [`feed`](Self::feed). A streamed body still arriving
    /// when this is called again belongs to an answered request: it is drained.
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
        bodies: &Bodies,
        streams: impl FnOnce(&Request) -> bool,
    ) -> Result<Option<Message>, ParseError> {
        if let State::Streaming(streaming) = &mut self.state {
            // Cut for a handler that still holds the body: it could not slow the
            // drain, and what it read would not be its request's answer.
            streaming.feed = None;
            if self.feed(buf, limits)? == Fed::More {
                return Ok(None);
            }
        }
        if let State::Head = self.state {
            let Some(head) = head::parse(buf, limits)? else {
                return Ok(None);
            };
            let body = match head.framing {
                RequestFraming::Empty => return Ok(Some(head)),
                RequestFraming::Length(n) if n > limits.max_body => {
                    return Err(self.refuse(head, ParseError::BodyTooLarge, limits, bodies));
                }
                RequestFraming::Length(n) => {
                    let n = usize::try_from(n).map_err(|_| ParseError::BodyTooLarge)?;
                    if buf.len() >= n {
                        let mut head = head;
                        head.req.set_body(buf.split_to(n).freeze());
                        return Ok(Some(head));
                    }
                    if streams(&head.req) {
                        return Ok(Some(self.stream(head, Framing::Length(n))));
                    }
                    BodyState::Length(n, Sink::new(Some(n), limits, bodies))
                }
                RequestFraming::Chunked if streams(&head.req) => {
                    return Ok(Some(
                        self.stream(head, Framing::Chunked(ChunkedDecoder::new())),
                    ));
                }
                RequestFraming::Chunked => BodyState::Chunked {
                    decoder: ChunkedDecoder::new(),
                    data: Sink::new(None, limits, bodies),
                },
            };
            self.state = State::Body(Box::new(Body {
                head,
                body,
                continue_sent: false,
            }));
        }
        self.decode_body(buf, limits, bodies)
    }

    /// Hands `head` on with the taking end of its body; the body is fed from here on.
    fn stream(&mut self, mut head: Head, framing: Framing) -> Head {
        let (feed, taker) = arriving();
        head.req.extensions_mut().insert(Arriving::new(taker));
        self.state = State::Streaming(Box::new(Streaming {
            framing,
            feed: Some(feed),
            expect_continue: head.expect_continue,
            continue_sent: false,
        }));
        head
    }

    /// Passes what `buf` holds of a streamed body on to the app (or drops it, once the
    /// request is answered), and says whether the body is whole.
    ///
    /// # Errors
    ///
    /// A malformed chunk, or a chunked body past `max_body`: the connection closes.
    pub(crate) fn feed(&mut self, buf: &mut BytesMut, limits: &Limits) -> Result<Fed, ParseError> {
        let State::Streaming(streaming) = &mut self.state else {
            return Ok(Fed::Whole);
        };
        let (data, whole) = match &mut streaming.framing {
            Framing::Length(rest) => {
                let take = (*rest).min(buf.len());
                *rest -= take;
                (buf.split_to(take), *rest == 0)
            }
            Framing::Chunked(decoder) => {
                let mut data = BytesMut::new();
                let done = decoder.decode(buf, &mut data, limits.max_body, limits.max_head)?;
                (data, done)
            }
        };
        if let Some(feed) = &streaming.feed {
            feed.push(data.freeze());
        }
        if !whole {
            return Ok(Fed::More);
        }
        if let State::Streaming(streaming) = std::mem::replace(&mut self.state, State::Head)
            && let Some(feed) = streaming.feed
        {
            feed.finish();
        }
        Ok(Fed::Whole)
    }

    /// Ready when the app can take more of a streamed body, so the connection reads
    /// on: less than a window waits for it, and a client waiting for `100 Continue`
    /// waits until the app first asks for the body.
    pub(crate) fn poll_room(&self, cx: &mut std::task::Context<'_>) -> std::task::Poll<()> {
        match &self.state {
            State::Streaming(s) => match &s.feed {
                Some(feed) => feed.poll_room(cx, s.expect_continue && !s.continue_sent),
                None => std::task::Poll::Ready(()),
            },
            _ => std::task::Poll::Ready(()),
        }
    }

    /// Whether the client still waits for `100 Continue` to send the body of a
    /// request that is being answered: the connection then closes after the answer
    /// rather than wait for a body that will not come (RFC 9110 §10.1.1).
    pub(crate) fn awaits_continue(&self) -> bool {
        matches!(&self.state, State::Streaming(s) if s.expect_continue && !s.continue_sent)
    }

    /// Moves what `buf` holds of the body being read into the body's own buffer or
    /// spool file; returns the message once the body is complete.
    fn decode_body(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
        bodies: &Bodies,
    ) -> Result<Option<Message>, ParseError> {
        let State::Body(progress) = &mut self.state else {
            return Ok(None);
        };
        let complete = match &mut progress.body {
            BodyState::Length(n, body) => {
                let take = (*n - body.len()).min(buf.len());
                body.append(&buf[..take], *n, limits, bodies)?;
                buf.advance(take);
                body.len() == *n
            }
            BodyState::Chunked { decoder, data } => {
                // The decoder's data goes through a buffer of at most one read (what
                // `buf` holds), then into the body's buffer, which grows within the
                // budget, or its spool file.
                let mut chunk = BytesMut::new();
                let done = decoder.decode(buf, &mut chunk, limits.max_body, limits.max_head)?;
                let ceiling = usize::try_from(limits.max_body).unwrap_or(usize::MAX);
                data.append(&chunk, ceiling, limits, bodies)?;
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
        match body.finish(limits) {
            Ok(body) => {
                head.req.set_body(body);
                Ok(Some(head))
            }
            Err(e) => Err(self.refuse(head, e.into(), limits, bodies)),
        }
    }

    /// Keeps `head` as if its body were being read, so that the refusal `e` names the
    /// request it refuses ([`pending`](Self::pending)); returns `e`.
    fn refuse(
        &mut self,
        head: Head,
        e: ParseError,
        limits: &Limits,
        bodies: &Bodies,
    ) -> ParseError {
        self.state = State::Body(Box::new(Body {
            head,
            body: BodyState::Length(0, Sink::new(None, limits, bodies)),
            continue_sent: false,
        }));
        e
    }

    /// Returns true, once per message, when the client waits for `100 Continue`
    /// before sending the body it announced (RFC 9110 §10.1.1).
    pub(crate) fn take_continue(&mut self) -> bool {
        match &mut self.state {
            State::Body(progress) if progress.head.expect_continue && !progress.continue_sent => {
                progress.continue_sent = true;
                true
            }
            State::Streaming(s)
                if s.expect_continue
                    && !s.continue_sent
                    && s.feed.as_ref().is_some_and(Feed::asked) =>
            {
                s.continue_sent = true;
                true
            }
            _ => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Budgets of `memory` and `disk` bytes.
    fn bodies(memory: usize, disk: usize) -> Bodies {
        Bodies::new(&Limits {
            max_buffered_bodies: memory,
            max_spooled_bodies: disk,
            ..Limits::default()
        })
    }

    fn unbounded() -> Bodies {
        bodies(usize::MAX, usize::MAX)
    }

    fn decode_stream(raw: &[u8]) -> Result<Vec<(String, Vec<u8>)>, ParseError> {
        let mut buf = BytesMut::from(raw);
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        while let Some(m) = decoder.decode(&mut buf, &Limits::default(), &unbounded(), |_| false)? {
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
                .decode(&mut buf, &Limits::default(), &unbounded(), |_| false)
                .unwrap()
                .is_none()
        );
        assert!(decoder.take_continue());
        assert!(!decoder.take_continue());
        buf.extend_from_slice(b"ok");
        let m = decoder
            .decode(&mut buf, &Limits::default(), &unbounded(), |_| false)
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
        let result = decoder.decode(&mut buf, &limits, &unbounded(), |_| false);
        assert_eq!(result.unwrap_err(), ParseError::BodyTooLarge);
        assert_eq!(decoder.pending().map(|req| req.uri().path()), Some("/"));
    }

    #[test]
    fn a_waiting_body_holds_room_for_what_arrived_until_dropped() {
        let bodies = bodies(1 << 20, 1 << 20);
        let mut buf =
            BytesMut::from(&b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1024\r\n\r\nabcd"[..]);
        let mut decoder = Decoder::new();
        let got = decoder.decode(&mut buf, &Limits::default(), &bodies, |_| false);
        assert!(got.unwrap().is_none());
        assert_eq!(bodies.memory.used(), 4);
        drop(decoder);
        assert_eq!(bodies.memory.used(), 0);
    }

    #[test]
    fn refuses_a_body_past_the_budget() {
        let bodies = bodies(16, 16);
        let mut buf = BytesMut::from(
            &b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 32\r\n\r\n0123456789abcdefghij"[..],
        );
        let result = Decoder::new().decode(&mut buf, &Limits::default(), &bodies, |_| false);
        assert_eq!(result.unwrap_err(), ParseError::NoRoom);
        assert_eq!(bodies.memory.used(), 0);
    }

    /// Limits that spool bodies past 8 bytes into a directory of their own.
    fn spooling(dir: &tempfile::TempDir) -> Limits {
        Limits {
            spool_above: 8,
            spool_dir: dir.path().to_owned(),
            ..Limits::default()
        }
    }

    /// Adds `bytes` to what `decoder` has been given, and returns the message they
    /// complete, if any.
    fn feed(
        decoder: &mut Decoder,
        buf: &mut BytesMut,
        bytes: &[u8],
        (limits, bodies): (&Limits, &Bodies),
    ) -> Option<Message> {
        buf.extend_from_slice(bytes);
        decoder.decode(buf, limits, bodies, |_| false).unwrap()
    }

    #[test]
    fn an_announced_body_past_spool_above_goes_to_disk_as_it_arrives() {
        let dir = tempfile::tempdir().unwrap();
        let bodies = bodies(0, 1 << 20);
        let server = (&spooling(&dir), &bodies);
        let (mut decoder, mut buf) = (Decoder::new(), BytesMut::new());
        let head = b"POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 12\r\n\r\nhello";
        assert!(feed(&mut decoder, &mut buf, head, server).is_none());
        assert_eq!((bodies.memory.used(), bodies.disk.used()), (0, 5));
        let m = feed(&mut decoder, &mut buf, b", world", server).unwrap();
        assert_eq!(&m.req.body()[..], b"hello, world");
        drop(m);
        assert_eq!(bodies.disk.used(), 0);
    }

    #[test]
    fn a_chunked_body_moves_to_disk_once_it_passes_spool_above() {
        let dir = tempfile::tempdir().unwrap();
        let bodies = bodies(1 << 20, 1 << 20);
        let server = (&spooling(&dir), &bodies);
        let (mut decoder, mut buf) = (Decoder::new(), BytesMut::new());
        let head =
            b"POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n";
        assert!(feed(&mut decoder, &mut buf, head, server).is_none());
        assert_eq!((bodies.memory.used(), bodies.disk.used()), (5, 0));
        assert!(feed(&mut decoder, &mut buf, b"7\r\n, world\r\n", server).is_none());
        assert_eq!((bodies.memory.used(), bodies.disk.used()), (0, 12));
        let m = feed(&mut decoder, &mut buf, b"0\r\n\r\n", server).unwrap();
        assert_eq!(&m.req.body()[..], b"hello, world");
    }

    #[test]
    fn a_body_past_the_disk_budget_or_with_no_spool_dir_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let missing = Limits {
            spool_dir: dir.path().join("missing"),
            ..spooling(&dir)
        };
        for (limits, bodies) in [(spooling(&dir), bodies(0, 8)), (missing, unbounded())] {
            let mut buf = BytesMut::from(
                &b"POST /x HTTP/1.1\r\nHost: x\r\nContent-Length: 32\r\n\r\n0123456789"[..],
            );
            let mut decoder = Decoder::new();
            let result = decoder.decode(&mut buf, &limits, &bodies, |_| false);
            assert_eq!(result.unwrap_err(), ParseError::NoRoom);
            assert_eq!(decoder.pending().map(|req| req.uri().path()), Some("/x"));
        }
    }

    /// Decodes from `buf` with every route streaming its body.
    fn streamed(decoder: &mut Decoder, buf: &mut BytesMut) -> Option<Message> {
        decoder
            .decode(buf, &Limits::default(), &unbounded(), |_| true)
            .unwrap()
    }

    /// The body a streamed request's app would read: every chunk fed so far.
    fn taken(req: &mut Request) -> (Vec<u8>, bool) {
        let slot = req.extensions_mut().remove::<Arriving>().unwrap();
        let mut taker = slot.take().unwrap();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        let mut body = Vec::new();
        loop {
            match taker.poll_chunk(&mut cx) {
                std::task::Poll::Ready(Some(Ok(chunk))) => body.extend_from_slice(&chunk),
                std::task::Poll::Ready(None) => return (body, true),
                _ => return (body, false),
            }
        }
    }

    #[test]
    fn a_streamed_body_is_handed_on_with_its_head_and_fed_as_it_arrives() {
        let mut decoder = Decoder::new();
        let mut buf = BytesMut::from(
            &b"POST /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\nabc\r\n"[..],
        );
        let limits = Limits::default();
        let mut m = decoder
            .decode(&mut buf, &limits, &unbounded(), |req| req.uri() == "/up")
            .unwrap()
            .expect("handed on with its head");
        assert!(m.req.body().is_empty() && decoder.is_streaming());
        let slot = m.req.extensions().get::<Arriving>().unwrap().clone();
        assert_eq!(decoder.feed(&mut buf, &limits).unwrap(), Fed::More);
        buf.extend_from_slice(b"2\r\nde\r\n0\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n");
        assert_eq!(decoder.feed(&mut buf, &limits).unwrap(), Fed::Whole);
        drop(slot);
        assert_eq!(taken(&mut m.req), (b"abcde".to_vec(), true));
        let next = streamed(&mut decoder, &mut buf).unwrap();
        assert_eq!(next.req.uri(), "/next");
    }

    #[test]
    fn what_is_left_of_an_answered_streamed_body_is_drained() {
        let mut decoder = Decoder::new();
        let mut buf =
            BytesMut::from(&b"PUT /up HTTP/1.1\r\nHost: x\r\nContent-Length: 6\r\n\r\nab"[..]);
        let m = streamed(&mut decoder, &mut buf).unwrap();
        drop(m);
        assert!(streamed(&mut decoder, &mut buf).is_none());
        buf.extend_from_slice(b"cdefGET /b HTTP/1.1\r\nHost: x\r\n\r\n");
        let next = streamed(&mut decoder, &mut buf).unwrap();
        assert_eq!(next.req.uri(), "/b");
    }

    #[test]
    fn a_streamed_body_asks_for_continue_only_once_the_app_asks_for_the_body() {
        let mut decoder = Decoder::new();
        let mut buf = BytesMut::from(
            &b"PUT / HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n"[..],
        );
        let mut m = streamed(&mut decoder, &mut buf).unwrap();
        let slot = m.req.extensions_mut().remove::<Arriving>().unwrap();
        let mut taker = slot.take().unwrap();
        let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
        assert!(decoder.poll_room(&mut cx).is_pending());
        assert!(!decoder.take_continue() && decoder.awaits_continue());
        assert!(taker.poll_chunk(&mut cx).is_pending());
        assert!(decoder.poll_room(&mut cx).is_ready());
        assert!(decoder.take_continue() && !decoder.awaits_continue());
    }
}
