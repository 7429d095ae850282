//! Reading a client's frames into messages: the frame header by tungstenite's frame
//! layer, the rest here — unmasking, reassembling fragments, inflating compressed
//! messages, checking text as UTF-8 and every rule of RFC 6455 §5 a client can break.
//!
//! A data frame's payload is taken as it arrives, not when whole, so a message past
//! its limit or text that stops being UTF-8 fails at the byte that breaks it (the
//! "fail fast" Autobahn's strict cases ask for), and no frame waits in memory whole
//! before it is checked. A message is gathered in a [`Buffer`] holding room in the
//! server's memory budget (`limits.max_buffered_bodies`, shared with request bodies)
//! until the app drops it; its limit counts inflated bytes as they come.

use std::io::Cursor;
use std::sync::Arc;

use bytes::{Buf as _, Bytes, BytesMut};
use tungstenite::protocol::frame::FrameHeader;
use tungstenite::protocol::frame::coding::{CloseCode as Code, Control, Data, OpCode};

use super::deflate::Inflater;
use super::message::{CloseCode, Message, Text};
use crate::http::intake::{Budget, Buffer};

/// A rule the peer broke, and the code the socket is closed with for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Violation {
    pub(super) code: CloseCode,
    pub(super) reason: &'static str,
}

impl Violation {
    pub(super) const fn new(code: CloseCode, reason: &'static str) -> Self {
        Self { code, reason }
    }
}

const fn protocol(reason: &'static str) -> Violation {
    Violation::new(CloseCode::Protocol, reason)
}

pub(super) const TOO_BIG: Violation = Violation::new(CloseCode::Size, "a message is too big");
/// The server's memory budget (or the allocator) has no room for the message now: as
/// a request body gets 503 then, the socket gets 1013 (try again later), not 1009,
/// which would tell a client its message is too big for this server ever.
pub(super) const NO_ROOM: Violation = Violation::new(
    CloseCode::Again,
    "the server has no room for the message now; try again later",
);
const NOT_UTF8: Violation = Violation::new(CloseCode::Invalid, "text is not UTF-8");

/// The largest control frame payload (§5.5).
const CONTROL_MAX: u64 = 125;

/// Turns the bytes a client sends into messages.
#[derive(Debug)]
pub(super) struct Reader {
    /// The frame whose payload is being read.
    frame: Option<Frame>,
    /// The data message being put together.
    message: Option<Assembly>,
    max_frame: u64,
    max_message: usize,
    /// Present when permessage-deflate was negotiated.
    inflater: Option<Inflater>,
    /// The server's memory budget, which every message draws on.
    memory: Arc<Budget>,
}

#[derive(Debug)]
struct Frame {
    opcode: OpCode,
    fin: bool,
    mask: [u8; 4],
    /// Payload bytes unmasked so far (where the mask's cycle stands).
    offset: usize,
    /// Payload bytes still to come.
    remaining: u64,
}

#[derive(Debug)]
struct Assembly {
    text: bool,
    compressed: bool,
    data: Buffer,
    /// How much of `data` is known to be UTF-8.
    checked: usize,
}

impl Reader {
    pub(super) fn new(
        max_frame: usize,
        max_message: usize,
        inflater: Option<Inflater>,
        memory: Arc<Budget>,
    ) -> Self {
        Self {
            frame: None,
            message: None,
            max_frame: u64::try_from(max_frame).unwrap_or(u64::MAX),
            max_message,
            inflater,
            memory,
        }
    }

    /// The next message in `buf`, taking what it uses; `None` until more bytes come.
    /// After a violation the message being gathered is let go at once, its room with
    /// it, not when the close handshake ends.
    pub(super) fn next(&mut self, buf: &mut BytesMut) -> Result<Option<Message>, Violation> {
        self.read(buf).inspect_err(|_| {
            self.message = None;
            self.frame = None;
        })
    }

    fn read(&mut self, buf: &mut BytesMut) -> Result<Option<Message>, Violation> {
        loop {
            let Some(frame) = &mut self.frame else {
                let mut cursor = Cursor::new(&buf[..]);
                let header =
                    FrameHeader::parse(&mut cursor).map_err(|_| protocol("a reserved opcode"))?;
                let Some((header, len)) = header else {
                    return Ok(None);
                };
                let taken = usize::try_from(cursor.position()).expect("a header is short");
                buf.advance(taken);
                self.frame = Some(self.start(&header, len)?);
                continue;
            };
            if let OpCode::Control(control) = frame.opcode {
                let len = usize::try_from(frame.remaining).expect("checked at most 125");
                if buf.len() < len {
                    return Ok(None);
                }
                let mut payload = buf.split_to(len);
                unmask(&mut payload, frame.mask, 0);
                self.frame = None;
                return control_message(control, payload.freeze()).map(Some);
            }
            let available =
                usize::try_from(frame.remaining).map_or(buf.len(), |r| r.min(buf.len()));
            if available == 0 && frame.remaining > 0 {
                return Ok(None);
            }
            let mut piece = buf.split_to(available);
            unmask(&mut piece, frame.mask, frame.offset);
            frame.offset += available;
            frame.remaining -= available as u64;
            let (done, fin) = (frame.remaining == 0, frame.fin);
            self.take(&piece)?;
            if done {
                self.frame = None;
                if fin {
                    return self.finish().map(Some);
                }
            }
        }
    }

    /// Returns how many more bytes the frame being read has (0 between frames).
    pub(super) fn remaining(&self) -> u64 {
        self.frame.as_ref().map_or(0, |frame| frame.remaining)
    }

    /// Checks a frame's header against the rules and the state of the message.
    fn start(&mut self, header: &FrameHeader, len: u64) -> Result<Frame, Violation> {
        // RFC 6455 §5.2: "the most significant bit MUST be 0" of a 64-bit length. A
        // breach of the framing, not a size: 1002, before the size is judged.
        if len >> 63 != 0 {
            return Err(protocol("a frame length has its most significant bit set"));
        }
        let mask = header
            .mask
            .ok_or(protocol("a client frame is not masked"))?;
        if header.rsv2 || header.rsv3 {
            return Err(protocol("a reserved bit is set"));
        }
        match header.opcode {
            OpCode::Control(_) => {
                if !header.is_final {
                    return Err(protocol("a control frame is fragmented"));
                }
                if len > CONTROL_MAX {
                    return Err(protocol("a control frame is longer than 125 bytes"));
                }
                if header.rsv1 {
                    return Err(protocol("a control frame has RSV1 set"));
                }
            }
            OpCode::Data(Data::Continue) => {
                if self.message.is_none() {
                    return Err(protocol("a continuation frame starts no message"));
                }
                if header.rsv1 {
                    return Err(protocol("a continuation frame has RSV1 set"));
                }
            }
            OpCode::Data(data) => {
                if self.message.is_some() {
                    return Err(protocol("a new message begins inside a fragmented one"));
                }
                if header.rsv1 && self.inflater.is_none() {
                    return Err(protocol("RSV1 is set and no extension was negotiated"));
                }
                self.message = Some(Assembly {
                    text: data == Data::Text,
                    compressed: header.rsv1,
                    data: Buffer::new(&self.memory),
                    checked: 0,
                });
            }
        }
        if len > self.max_frame {
            return Err(Violation::new(CloseCode::Size, "a frame is too big"));
        }
        if let (Some(message), false) = (&self.message, header.rsv1) {
            if !message.compressed && message.data.len() as u64 + len > self.max_message as u64 {
                return Err(TOO_BIG);
            }
        }
        Ok(Frame {
            opcode: header.opcode,
            fin: header.is_final,
            mask,
            offset: 0,
            remaining: len,
        })
    }

    /// Adds an unmasked piece of a data frame to the message.
    fn take(&mut self, piece: &[u8]) -> Result<(), Violation> {
        let message = self.message.as_mut().expect("a data frame has a message");
        if message.compressed {
            let inflater = self
                .inflater
                .as_mut()
                .expect("checked when the frame began");
            inflater.inflate(piece, &mut message.data, self.max_message)?;
        } else {
            message
                .data
                .append(piece, self.max_message)
                .map_err(|_| NO_ROOM)?;
        }
        if message.text {
            message.check(false)?;
        }
        Ok(())
    }

    /// The message whose last frame has come.
    fn finish(&mut self) -> Result<Message, Violation> {
        let mut message = self.message.take().expect("a data frame has a message");
        if message.compressed {
            let inflater = self
                .inflater
                .as_mut()
                .expect("checked when the frame began");
            inflater.finish(&mut message.data, self.max_message)?;
        }
        if message.text {
            message.check(true)?;
        }
        // The message holds its room until the app drops it.
        let data = Bytes::from_owner(message.data);
        if message.text {
            return Text::from_utf8(data).map(Message::Text).ok_or(NOT_UTF8);
        }
        Ok(Message::Binary(data))
    }
}

impl Assembly {
    /// Checks the text added since the last check: bytes that cannot begin or
    /// continue UTF-8 fail at once; a character cut at the end waits for the rest,
    /// unless this is the `whole` message.
    fn check(&mut self, whole: bool) -> Result<(), Violation> {
        match std::str::from_utf8(&self.data.as_ref()[self.checked..]) {
            Ok(_) => self.checked = self.data.len(),
            Err(error) if error.error_len().is_none() && !whole => {
                self.checked += error.valid_up_to();
            }
            Err(_) => return Err(NOT_UTF8),
        }
        Ok(())
    }
}

/// A control frame as the message it is, its payload checked.
fn control_message(control: Control, payload: Bytes) -> Result<Message, Violation> {
    Ok(match control {
        Control::Ping => Message::Ping(payload),
        Control::Pong => Message::Pong(payload),
        Control::Close => Message::Close(close_payload(&payload)?),
        Control::Reserved(_) => return Err(protocol("a reserved opcode")),
    })
}

/// A close frame's code and reason (§5.5.1): none, or a code the peer may send and
/// a UTF-8 reason.
fn close_payload(payload: &[u8]) -> Result<Option<(u16, String)>, Violation> {
    let Some((code, reason)) = payload.split_first_chunk::<2>() else {
        return if payload.is_empty() {
            Ok(None)
        } else {
            Err(protocol("a close frame's code is one byte"))
        };
    };
    let code = u16::from_be_bytes(*code);
    if !Code::from(code).is_allowed() {
        return Err(protocol("a close code a peer may not send"));
    }
    let reason = std::str::from_utf8(reason).map_err(|_| NOT_UTF8)?;
    Ok(Some((code, reason.to_owned())))
}

/// Unmasks `payload`, whose first byte is byte `offset` of the frame's payload.
fn unmask(payload: &mut [u8], mask: [u8; 4], offset: usize) {
    let key: [u8; 4] = std::array::from_fn(|i| mask[(offset + i) % 4]);
    let mut words = payload.chunks_exact_mut(4);
    let word_key = u32::from_ne_bytes(key);
    for word in &mut words {
        let masked = u32::from_ne_bytes(word.try_into().expect("four bytes")) ^ word_key;
        word.copy_from_slice(&masked.to_ne_bytes());
    }
    for (byte, k) in words.into_remainder().iter_mut().zip(key) {
        *byte ^= k;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A client frame, masked.
    fn frame(first: u8, payload: &[u8]) -> Vec<u8> {
        let mask = [0x37, 0xfa, 0x21, 0x3d];
        let mut out = vec![first];
        match payload.len() {
            len @ 0..=125 => out.push(0x80 | len as u8),
            len => {
                out.push(0x80 | 126);
                out.extend(u16::try_from(len).unwrap().to_be_bytes());
            }
        }
        out.extend(mask);
        out.extend(payload.iter().enumerate().map(|(i, b)| b ^ mask[i % 4]));
        out
    }

    fn read_all(reader: &mut Reader, wire: &[u8], step: usize) -> Result<Vec<Message>, Violation> {
        let (mut buf, mut messages) = (BytesMut::new(), Vec::new());
        for piece in wire.chunks(step) {
            buf.extend_from_slice(piece);
            while let Some(message) = reader.next(&mut buf)? {
                messages.push(message);
            }
        }
        Ok(messages)
    }

    #[test]
    fn fragments_come_together_whatever_the_bytes_arrive_in() {
        let text = "κόσμε, the world: ".repeat(20);
        let (head, tail) = text.as_bytes().split_at(101);
        let mut wire = frame(0x01, head);
        wire.extend(frame(0x89, b"hi"));
        wire.extend(frame(0x80, tail));
        for step in [1, 3, 64, wire.len()] {
            let mut reader = Reader::new(1 << 20, 1 << 20, None, Budget::new(usize::MAX));
            let messages = read_all(&mut reader, &wire, step).unwrap();
            assert_eq!(
                messages,
                [
                    Message::Ping(Bytes::from_static(b"hi")),
                    Message::text(text.clone())
                ],
                "step {step}"
            );
        }
    }

    #[test]
    fn text_fails_at_the_first_byte_that_cannot_be_utf8() {
        // The first frame ends inside a character, fine; the second breaks it.
        let mut wire = frame(0x01, b"ok \xce");
        let mut reader = Reader::new(1 << 20, 1 << 20, None, Budget::new(usize::MAX));
        assert_eq!(read_all(&mut reader, &wire, 1), Ok(vec![]));
        wire = frame(0x00, b"\xff and the rest never comes");
        assert_eq!(read_all(&mut reader, &wire[..7], 1), Err(NOT_UTF8));
    }

    #[test]
    fn broken_rules_get_their_codes() {
        let cases: [(Vec<u8>, CloseCode); 8] = [
            (frame(0x80, b"x"), CloseCode::Protocol),
            (frame(0x83, b""), CloseCode::Protocol),
            (frame(0x09, b""), CloseCode::Protocol),
            (frame(0xc1, b"x"), CloseCode::Protocol),
            (frame(0x88, &[0x03]), CloseCode::Protocol),
            (frame(0x88, &[0x03, 0xed]), CloseCode::Protocol),
            (frame(0x88, &[0x03, 0xe8, 0xff]), CloseCode::Invalid),
            (frame(0x82, &[0; 2000]), CloseCode::Size),
        ];
        for (wire, code) in cases {
            let mut reader = Reader::new(1 << 20, 1000, None, Budget::new(usize::MAX));
            assert_eq!(
                read_all(&mut reader, &wire, 5).unwrap_err().code,
                code,
                "{wire:02x?}"
            );
        }
        let unmasked = [0x81, 0x01, b'x'];
        let mut reader = Reader::new(1 << 20, 1000, None, Budget::new(usize::MAX));
        assert_eq!(
            read_all(&mut reader, &unmasked, 5).unwrap_err().code,
            CloseCode::Protocol
        );
    }

    #[test]
    fn unmasking_in_pieces_matches_unmasking_whole() {
        let mask = [1, 2, 3, 4];
        let data: Vec<u8> = (0..=255).collect();
        let mut whole = data.clone();
        unmask(&mut whole, mask, 0);
        for cut in [1, 2, 3, 5, 130] {
            let mut pieces = data.clone();
            let (a, b) = pieces.split_at_mut(cut);
            unmask(a, mask, 0);
            unmask(b, mask, cut);
            assert_eq!(pieces, whole, "cut at {cut}");
        }
    }
}
