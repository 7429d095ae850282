//! permessage-deflate (RFC 7692): the offer a client makes and the answer that takes
//! it, and the compressor and decompressor a socket keeps when it is taken.
//!
//! tungstenite's message layer does not speak it, so messages are framed here on its
//! frame layer: a compressed message is its first frame's RSV1 bit and, on the wire, a
//! raw DEFLATE stream flushed to a byte boundary with the flush's `00 00 ff ff` tail
//! left off (§7.2.1).

use flate2::{Compress, Compression, Decompress, FlushCompress, FlushDecompress, Status};
use http::HeaderMap;
use http::header::SEC_WEBSOCKET_EXTENSIONS;

use super::message::CloseCode;
use super::read::{NO_ROOM, TOO_BIG, Violation};
use crate::http::intake::Buffer;

/// The tail a sync flush ends with, taken off each compressed message (§7.2.1).
const TAIL: [u8; 4] = [0x00, 0x00, 0xff, 0xff];

/// The smallest window a raw DEFLATE stream can be made with by zlib (which refuses
/// 8 for raw streams); an offer asking the server for 8 is declined.
const SMALLEST_WINDOW: u8 = 9;

/// The terms of an accepted offer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Deflate {
    /// The server starts each message with an empty window.
    pub(super) server_no_context_takeover: bool,
    /// The client starts each message with an empty window, so may the server's
    /// decompressor.
    pub(super) client_no_context_takeover: bool,
    /// The largest window the server compresses with (base-2 logarithm).
    pub(super) server_max_window_bits: u8,
}

impl Deflate {
    /// Takes the first offer in the request's `Sec-WebSocket-Extensions` this server
    /// can honour, if any (§5.1: offers are tried in order; one with an unknown or
    /// repeated parameter, or a bad value, is declined).
    pub(super) fn negotiate(headers: &HeaderMap) -> Option<Self> {
        headers
            .get_all(SEC_WEBSOCKET_EXTENSIONS)
            .iter()
            .filter_map(|value| value.to_str().ok())
            .flat_map(|value| value.split(','))
            .find_map(Self::from_offer)
    }

    /// The terms of one offer (`permessage-deflate; param; param=value`), if taken.
    fn from_offer(offer: &str) -> Option<Self> {
        let mut params = offer.split(';').map(str::trim);
        if !params.next()?.eq_ignore_ascii_case("permessage-deflate") {
            return None;
        }
        let mut terms = Self {
            server_no_context_takeover: false,
            client_no_context_takeover: false,
            server_max_window_bits: 15,
        };
        let (mut server_bits, mut client_bits) = (false, false);
        for param in params {
            let (name, value) = match param.split_once('=') {
                Some((name, value)) => (name.trim(), Some(value.trim().trim_matches('"'))),
                None => (param, None),
            };
            let seen = match (name.to_ascii_lowercase().as_str(), value) {
                ("server_no_context_takeover", None) => {
                    std::mem::replace(&mut terms.server_no_context_takeover, true)
                }
                ("client_no_context_takeover", None) => {
                    std::mem::replace(&mut terms.client_no_context_takeover, true)
                }
                ("server_max_window_bits", Some(bits)) => {
                    terms.server_max_window_bits = window_bits(bits)?;
                    std::mem::replace(&mut server_bits, true)
                }
                // The client may use a smaller window; the decompressor's 15 bits
                // read any, so nothing is answered.
                ("client_max_window_bits", bits) => {
                    if let Some(bits) = bits {
                        window_bits(bits)?;
                    }
                    std::mem::replace(&mut client_bits, true)
                }
                _ => return None,
            };
            if seen {
                return None;
            }
        }
        (terms.server_max_window_bits >= SMALLEST_WINDOW).then_some(terms)
    }

    /// The `Sec-WebSocket-Extensions` answer accepting these terms.
    pub(super) fn answer(&self) -> String {
        let mut answer = String::from("permessage-deflate");
        if self.server_no_context_takeover {
            answer.push_str("; server_no_context_takeover");
        }
        if self.client_no_context_takeover {
            answer.push_str("; client_no_context_takeover");
        }
        if self.server_max_window_bits < 15 {
            answer.push_str(&format!(
                "; server_max_window_bits={}",
                self.server_max_window_bits
            ));
        }
        answer
    }
}

/// A window size in bits, 8 to 15, written without leading zeros or signs (§7.1.2).
fn window_bits(value: &str) -> Option<u8> {
    if value.is_empty() || !value.bytes().all(|b| b.is_ascii_digit()) || value.starts_with('0') {
        return None;
    }
    value.parse().ok().filter(|bits| (8..=15).contains(bits))
}

/// The server's compressor.
pub(super) struct Deflater {
    compress: Compress,
    /// Start every message with an empty window.
    reset: bool,
}

impl Deflater {
    pub(super) fn new(terms: &Deflate) -> Self {
        Self {
            compress: Compress::new_with_window_bits(
                Compression::default(),
                false,
                terms.server_max_window_bits,
            ),
            reset: terms.server_no_context_takeover,
        }
    }

    /// Compresses one message's payload, returning what goes on the wire.
    pub(super) fn compress(&mut self, payload: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(payload.len() / 2 + 64);
        let mut input = payload;
        loop {
            let before = self.compress.total_in();
            self.compress
                .compress_vec(input, &mut out, FlushCompress::Sync)
                .expect("a raw deflate stream takes any input");
            let used = usize::try_from(self.compress.total_in() - before).unwrap_or(input.len());
            input = &input[used..];
            // A sync flush is done when it leaves room in the output.
            if input.is_empty() && out.len() < out.capacity() {
                break;
            }
            out.reserve(out.capacity().max(64));
        }
        if out.ends_with(&TAIL) {
            out.truncate(out.len() - TAIL.len());
        }
        if self.reset {
            self.compress.reset();
        }
        out
    }
}

/// The server's decompressor.
pub(super) struct Inflater {
    decompress: Decompress,
    /// The client starts every message with an empty window.
    reset: bool,
}

impl Inflater {
    pub(super) fn new(terms: &Deflate) -> Self {
        Self {
            decompress: Decompress::new(false),
            reset: terms.client_no_context_takeover,
        }
    }

    /// Inflates `input`, a piece of a compressed message, onto `out`: into the room
    /// `out` has, made anew when it is filled (doubling, as `out` grows), never past
    /// `limit` + 1 bytes whatever `input` inflates to. Past `limit` bytes of output
    /// the message is too big (1009); input that does not inflate is invalid (1007);
    /// a budget or an allocator without the room for the next step is 1013.
    pub(super) fn inflate(
        &mut self,
        mut input: &[u8],
        out: &mut Buffer,
        limit: usize,
    ) -> Result<(), Violation> {
        loop {
            let step = (input.len() * 4).clamp(1024, 64 * 1024);
            // One byte past the limit is enough to know a message is too big.
            let most = limit.saturating_add(1);
            out.make_room(out.len().saturating_add(step).min(most), most)
                .map_err(|_| NO_ROOM)?;
            let (before_in, before_out) = (self.decompress.total_in(), out.len());
            let status = out
                .fill(|out| {
                    self.decompress
                        .decompress_vec(input, out, FlushDecompress::Sync)
                })
                .map_err(|_| Violation::new(CloseCode::Invalid, "a message does not inflate"))?;
            let used = usize::try_from(self.decompress.total_in() - before_in).unwrap_or(0);
            input = &input[used..];
            if out.len() > limit {
                return Err(TOO_BIG);
            }
            if status == Status::StreamEnd {
                // A final block ends the stream; the next message starts a new one.
                self.decompress.reset(false);
                return Ok(());
            }
            let progressed = used > 0 || out.len() > before_out;
            if (input.is_empty() && !out.is_full()) || !progressed {
                return Ok(());
            }
        }
    }

    /// Ends a message: inflates the flush tail its sender left off.
    pub(super) fn finish(&mut self, out: &mut Buffer, limit: usize) -> Result<(), Violation> {
        self.inflate(&TAIL, out, limit)?;
        if self.reset {
            self.decompress.reset(false);
        }
        Ok(())
    }
}

impl std::fmt::Debug for Deflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Deflater")
            .field("reset", &self.reset)
            .finish()
    }
}

impl std::fmt::Debug for Inflater {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Inflater")
            .field("reset", &self.reset)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use http::HeaderValue;

    use super::*;
    use crate::http::intake::Budget;

    fn offer(value: &str) -> Option<Deflate> {
        let mut headers = HeaderMap::new();
        headers.insert(
            SEC_WEBSOCKET_EXTENSIONS,
            HeaderValue::from_str(value).unwrap(),
        );
        Deflate::negotiate(&headers)
    }

    #[test]
    fn the_first_offer_the_server_can_honour_is_taken() {
        let terms = offer("x-webkit-deflate-frame, permessage-deflate; server_max_window_bits=8, permessage-deflate; client_max_window_bits; server_no_context_takeover").unwrap();
        assert!(terms.server_no_context_takeover);
        assert_eq!(terms.server_max_window_bits, 15);
        assert_eq!(
            terms.answer(),
            "permessage-deflate; server_no_context_takeover"
        );
        let terms = offer("permessage-deflate; server_max_window_bits=\"9\"").unwrap();
        assert_eq!(
            terms.answer(),
            "permessage-deflate; server_max_window_bits=9"
        );
    }

    #[test]
    fn offers_with_unknown_repeated_or_bad_parameters_are_declined() {
        for bad in [
            "permessage-deflate; mystery",
            "permessage-deflate; server_no_context_takeover; server_no_context_takeover",
            "permessage-deflate; server_max_window_bits",
            "permessage-deflate; server_max_window_bits=16",
            "permessage-deflate; client_max_window_bits=09",
            "permessage-deflate; server_no_context_takeover=1",
            "deflate-frame",
        ] {
            assert_eq!(offer(bad), None, "{bad}");
        }
    }

    #[test]
    fn what_is_compressed_inflates_to_itself_message_after_message() {
        for (server_no_context_takeover, bits) in [(false, 15), (true, 15), (false, 9)] {
            let terms = Deflate {
                server_no_context_takeover,
                client_no_context_takeover: server_no_context_takeover,
                server_max_window_bits: bits,
            };
            let (mut deflater, mut inflater) = (Deflater::new(&terms), Inflater::new(&terms));
            for round in 0..3 {
                let message = format!("{round} the same words again and again ").repeat(500);
                let wire = deflater.compress(message.as_bytes());
                assert!(wire.len() < message.len() / 10);
                let mut out = Buffer::new(&Budget::new(usize::MAX));
                for piece in wire.chunks(7) {
                    inflater.inflate(piece, &mut out, 1 << 20).unwrap();
                }
                inflater.finish(&mut out, 1 << 20).unwrap();
                assert_eq!(out.as_ref(), message.as_bytes());
            }
        }
    }

    /// A bomb never holds more than the limit and a byte of room.
    #[test]
    fn a_bomb_stops_at_the_limit() {
        let terms = offer("permessage-deflate").unwrap();
        let wire = Deflater::new(&terms).compress(&vec![0; 10 << 20]);
        let budget = Budget::new(usize::MAX);
        let mut out = Buffer::new(&budget);
        let error = Inflater::new(&terms)
            .inflate(&wire, &mut out, 1 << 20)
            .unwrap_err();
        assert_eq!(error.code, CloseCode::Size);
        assert_eq!(budget.used(), (1 << 20) + 1);
    }

    /// Issue 33: a message that the server's budget has no room for is 1013, and
    /// holds no more than the budget.
    #[test]
    fn a_message_past_the_servers_budget_is_1013() {
        let terms = offer("permessage-deflate").unwrap();
        let wire = Deflater::new(&terms).compress(&vec![0; 1 << 20]);
        let budget = Budget::new(100_000);
        let mut out = Buffer::new(&budget);
        let error = Inflater::new(&terms)
            .inflate(&wire, &mut out, 1 << 20)
            .unwrap_err();
        assert_eq!(error.code, CloseCode::Again);
        assert!(budget.used() <= 100_000);
        drop(out);
        assert_eq!(budget.used(), 0);
    }
}
