//! The chunked transfer coding, decoded incrementally (RFC 9112 §7.1).
//!
//! The decoder is a state machine fed whatever bytes have arrived; it consumes them,
//! appends chunk data to the body, and says when the last chunk and trailer section are
//! through. Trailer fields are read and dropped.

use bytes::{Buf, BytesMut};

use super::error::ParseError;

/// Longest chunk-size line (size plus extensions) or trailer line accepted.
const MAX_LINE: usize = 4096;

/// Where the decoder stands in the chunked grammar.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum State {
    /// Reading the hex chunk size; `digits` counted so far.
    Size { size: u64, digits: u8 },
    /// Whitespace after the size, which only a `;` may follow (the BWS before a chunk
    /// extension); `len` bytes of the line so far.
    SizeBws { size: u64, len: usize },
    /// Skipping chunk extensions up to CR; `len` bytes of the line so far.
    Extension { size: u64, len: usize },
    /// After the CR that ends a size line.
    SizeLf { size: u64 },
    /// Inside chunk data.
    Data { remaining: u64 },
    /// After chunk data, expecting CR.
    DataCr,
    /// After chunk data and CR, expecting LF.
    DataLf,
    /// Inside a trailer line (or at the start of one when `len` is 0); `named` once its
    /// field name has been ended by a colon.
    Trailer { len: usize, named: bool },
    /// After the CR that ends a trailer line.
    TrailerLf { len: usize },
    /// The whole body is through.
    Done,
}

/// An incremental decoder for one chunked body.
#[derive(Debug)]
pub(crate) struct ChunkedDecoder {
    state: State,
    total: u64,
    trailer_bytes: usize,
}

impl ChunkedDecoder {
    pub(crate) fn new() -> Self {
        Self {
            state: State::Size { size: 0, digits: 0 },
            total: 0,
            trailer_bytes: 0,
        }
    }

    /// Consumes bytes from `src`, appending chunk data to `body`.
    ///
    /// Returns `Ok(true)` once the body is complete; the bytes after it stay in `src`.
    ///
    /// # Errors
    ///
    /// `Malformed` for anything outside the grammar; `BodyTooLarge` once the data
    /// exceeds `max_body`; `HeadTooLarge` for trailers larger than `max_trailers`.
    pub(crate) fn decode(
        &mut self,
        src: &mut BytesMut,
        body: &mut BytesMut,
        max_body: u64,
        max_trailers: usize,
    ) -> Result<bool, ParseError> {
        while self.state != State::Done {
            if let State::Data { remaining } = self.state {
                let n = usize::try_from(remaining)
                    .unwrap_or(usize::MAX)
                    .min(src.len());
                if n == 0 {
                    return Ok(false);
                }
                body.extend_from_slice(&src[..n]);
                src.advance(n);
                let remaining = remaining - n as u64;
                self.state = if remaining == 0 {
                    State::DataCr
                } else {
                    State::Data { remaining }
                };
                continue;
            }
            let Some(&byte) = src.first() else {
                return Ok(false);
            };
            src.advance(1);
            self.state = self.step(byte, max_body, max_trailers)?;
        }
        Ok(true)
    }

    /// Moves the state machine over one byte outside chunk data.
    fn step(&mut self, byte: u8, max_body: u64, max_trailers: usize) -> Result<State, ParseError> {
        let bad = |why| Err(ParseError::Malformed(why));
        match self.state {
            State::Size { size, digits } => match (byte, hex_value(byte)) {
                (_, Some(d)) if digits < 16 => Ok(State::Size {
                    size: size << 4 | d,
                    digits: digits + 1,
                }),
                (_, Some(_)) => bad("chunk size overflows"),
                (_, None) if digits == 0 => bad("chunk size missing"),
                (b';', None) => Ok(State::Extension {
                    size,
                    len: digits.into(),
                }),
                // RFC 9112 §7.1.1: `chunk-ext = *( BWS ";" ...)` — whitespace, then `;`.
                (b' ' | b'\t', None) => Ok(State::SizeBws {
                    size,
                    len: digits.into(),
                }),
                (b'\r', None) => Ok(State::SizeLf { size }),
                _ => bad("invalid chunk size"),
            },
            State::SizeBws { size, len } => match byte {
                b';' => Ok(State::Extension { size, len: len + 1 }),
                _ if len >= MAX_LINE => bad("chunk extension too long"),
                b' ' | b'\t' => Ok(State::SizeBws { size, len: len + 1 }),
                _ => bad("chunk extension without `;`"),
            },
            State::Extension { size, len } => match byte {
                b'\r' => Ok(State::SizeLf { size }),
                _ if len >= MAX_LINE => bad("chunk extension too long"),
                b'\t' | b' '..=b'~' | 0x80.. => Ok(State::Extension { size, len: len + 1 }),
                _ => bad("control character in chunk extension"),
            },
            State::SizeLf { size } => match byte {
                b'\n' if size == 0 => Ok(State::Trailer {
                    len: 0,
                    named: false,
                }),
                b'\n' => {
                    self.total = self.total.saturating_add(size);
                    if self.total > max_body {
                        return Err(ParseError::BodyTooLarge);
                    }
                    Ok(State::Data { remaining: size })
                }
                _ => bad("chunk size line not ended by CRLF"),
            },
            State::Data { .. } | State::Done => unreachable!("handled by decode"),
            State::DataCr => match byte {
                b'\r' => Ok(State::DataLf),
                _ => bad("chunk data not followed by CRLF"),
            },
            State::DataLf => match byte {
                b'\n' => Ok(State::Size { size: 0, digits: 0 }),
                _ => bad("chunk data not followed by CRLF"),
            },
            // A trailer line is a field line (RFC 9112 §7.1.2, §5): a token, a colon, a
            // value. Checked, so that a request pipelined after a last chunk that lacks
            // its final CRLF is refused, not swallowed as trailers.
            State::Trailer { len, named } => {
                self.trailer_bytes += 1;
                let next = State::Trailer {
                    len: len + 1,
                    named,
                };
                match byte {
                    _ if self.trailer_bytes > max_trailers => Err(ParseError::HeadTooLarge),
                    b'\r' if len == 0 || named => Ok(State::TrailerLf { len }),
                    b':' if !named && len > 0 => Ok(State::Trailer {
                        len: len + 1,
                        named: true,
                    }),
                    _ if !named && is_tchar(byte) => Ok(next),
                    _ if !named => bad("invalid trailer field name"),
                    b'\t' | b' '..=b'~' | 0x80.. => Ok(next),
                    _ => bad("control character in trailer"),
                }
            }
            State::TrailerLf { len } => match byte {
                b'\n' if len == 0 => Ok(State::Done),
                b'\n' => Ok(State::Trailer {
                    len: 0,
                    named: false,
                }),
                _ => bad("trailer line not ended by CRLF"),
            },
        }
    }
}

/// A byte of a token (RFC 9110 §5.6.2).
fn is_tchar(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte)
}

fn hex_value(byte: u8) -> Option<u64> {
    (byte as char).to_digit(16).map(u64::from)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decode_all(raw: &[u8]) -> Result<(Vec<u8>, Vec<u8>), ParseError> {
        let mut src = BytesMut::from(raw);
        let mut body = BytesMut::new();
        let done = ChunkedDecoder::new().decode(&mut src, &mut body, 1 << 20, 1024)?;
        assert!(done, "incomplete: {raw:?}");
        Ok((body.to_vec(), src.to_vec()))
    }

    #[test]
    fn decodes_chunks_extensions_and_trailers() {
        let (body, rest) =
            decode_all(b"5 ;name=val\r\nhello\r\n6\r\n world\r\n0\r\nX-T: 1\r\n\r\nNEXT").unwrap();
        assert_eq!(body, b"hello world");
        assert_eq!(rest, b"NEXT");
    }

    #[test]
    fn decodes_one_byte_at_a_time() {
        let raw = b"a\r\n0123456789\r\n0\r\n\r\n";
        let mut decoder = ChunkedDecoder::new();
        let mut body = BytesMut::new();
        let mut done = false;
        for &b in raw {
            let mut src = BytesMut::from(&[b][..]);
            done = decoder.decode(&mut src, &mut body, 100, 100).unwrap();
        }
        assert!(done);
        assert_eq!(&body[..], b"0123456789");
    }

    #[test]
    fn refuses_bad_chunk_framing() {
        let cases: &[&[u8]] = &[
            b"\r\n",
            b"x\r\n",
            b"5\nhello\r\n0\r\n\r\n",
            b"5\r\nhelloX\r\n0\r\n\r\n",
            b"11111111111111111\r\n",
            b"-1\r\n",
            b"5;\x01\r\n",
            b"0\r\nX: \x00\r\n\r\n",
            b"5 foo\r\nhello\r\n0\r\n\r\n",
            b"5 \r\nhello\r\n0\r\n\r\n",
            b"0\r\nGET /smuggled HTTP/1.1\r\nHost: t\r\n\r\n",
            b"0\r\nX-T\r\n\r\n",
            b"0\r\n folded: x\r\n\r\n",
            b"0\r\n: no-name\r\n\r\n",
        ];
        for raw in cases {
            let mut decoder = ChunkedDecoder::new();
            let result = decoder.decode(
                &mut BytesMut::from(*raw),
                &mut BytesMut::new(),
                1 << 20,
                1024,
            );
            assert!(
                matches!(result, Err(ParseError::Malformed(_))),
                "{raw:?}: {result:?}"
            );
        }
    }

    #[test]
    fn refuses_a_body_over_the_limit() {
        let mut decoder = ChunkedDecoder::new();
        let result = decoder.decode(
            &mut BytesMut::from(&b"ff\r\n"[..]),
            &mut BytesMut::new(),
            10,
            1024,
        );
        assert_eq!(result, Err(ParseError::BodyTooLarge));
    }
}
