//! Message decoding: a head, then its body, assembled from whatever bytes have arrived.
//!
//! Bodies are buffered whole (up to `max_body`) before the request is handed on, so
//! extractors never wait on the socket and a body the app ignores is already off the
//! wire when the next pipelined request is parsed.

use bytes::BytesMut;

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
    Length(usize),
    Chunked {
        decoder: ChunkedDecoder,
        data: BytesMut,
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

    /// Decodes the next complete message from the front of `buf`.
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
                        body: BodyState::Length(n),
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
                    buf.reserve(n - buf.len());
                    BodyState::Length(n)
                }
                RequestFraming::Chunked => BodyState::Chunked {
                    decoder: ChunkedDecoder::new(),
                    data: BytesMut::new(),
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

    fn decode_body(
        &mut self,
        buf: &mut BytesMut,
        limits: &Limits,
    ) -> Result<Option<Message>, ParseError> {
        let State::Body(progress) = &mut self.state else {
            return Ok(None);
        };
        let bytes = match &mut progress.body {
            BodyState::Length(n) if buf.len() >= *n => buf.split_to(*n).freeze(),
            BodyState::Length(_) => return Ok(None),
            BodyState::Chunked { decoder, data } => {
                if !decoder.decode(buf, data, limits.max_body, limits.max_head)? {
                    return Ok(None);
                }
                std::mem::take(data).freeze()
            }
        };
        let State::Body(progress) = std::mem::replace(&mut self.state, State::Head) else {
            unreachable!("state checked above");
        };
        let mut head = progress.head;
        head.req.set_body(bytes);
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

    fn decode_stream(raw: &[u8]) -> Result<Vec<(String, Vec<u8>)>, ParseError> {
        let mut buf = BytesMut::from(raw);
        let mut decoder = Decoder::new();
        let mut out = Vec::new();
        while let Some(m) = decoder.decode(&mut buf, &Limits::default())? {
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
                .decode(&mut buf, &Limits::default())
                .unwrap()
                .is_none()
        );
        assert!(decoder.take_continue());
        assert!(!decoder.take_continue());
        buf.extend_from_slice(b"ok");
        let m = decoder
            .decode(&mut buf, &Limits::default())
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
        let result = decoder.decode(&mut buf, &limits);
        assert_eq!(result.unwrap_err(), ParseError::BodyTooLarge);
        assert_eq!(decoder.pending().map(|req| req.uri().path()), Some("/"));
    }
}
