//! What a byte stream decodes to, read in pieces: the one property the decoder must
//! keep — one stream, one reading, however it is split into reads — checked by the
//! property tests and by the fuzz targets (`proscenium::fuzz`), which also compare a
//! whole connection's answers with it.

use bytes::BytesMut;

use super::decode::Decoder;
use crate::config::Limits;
use crate::http::intake::Bodies;

/// One decoded message: what an answer to it depends on.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Reading {
    pub(crate) method: String,
    pub(crate) target: String,
    pub(crate) body: Vec<u8>,
    /// Whether the connection stays open after the answer (RFC 9112 §9.3).
    pub(crate) keep_alive: bool,
}

/// What a byte stream decodes to under small limits (a 4 KiB body, so that bodies
/// past it are refused within the few KiB a test or a fuzz input holds).
pub(crate) fn readings(stream: &[u8], cuts: &[usize]) -> (Vec<Reading>, Option<u16>) {
    // Budgets without end: with one, where a body runs out of room would depend on
    // how it was split into reads (callers of `readings_with` keep theirs far above
    // what an input holds). Bodies past 2 KiB are spooled, so a reading covers both
    // places a body may gather, and a chunked body moving between them.
    let limits = Limits {
        max_body: 4096,
        spool_above: 2048,
        max_buffered_bodies: usize::MAX,
        max_spooled_bodies: usize::MAX,
        ..Limits::default()
    };
    readings_with(stream, cuts, &limits)
}

/// What a byte stream decodes to under `limits`, read in the [`pieces`] `cuts` make:
/// each message, then the status of the error that stopped decoding, if any.
pub(crate) fn readings_with(
    stream: &[u8],
    cuts: &[usize],
    limits: &Limits,
) -> (Vec<Reading>, Option<u16>) {
    let bodies = Bodies::new(limits);
    let mut decoder = Decoder::new();
    let mut buf = BytesMut::new();
    let mut messages = Vec::new();
    for piece in pieces(stream, cuts) {
        buf.extend_from_slice(piece);
        loop {
            match decoder.decode(&mut buf, limits, &bodies, |_| false) {
                Ok(Some(m)) => messages.push(Reading {
                    method: m.req.method().to_string(),
                    target: m.req.uri().to_string(),
                    body: m.req.body().to_vec(),
                    keep_alive: m.keep_alive,
                }),
                Ok(None) => break,
                Err(e) => return (messages, Some(e.status().as_u16())),
            }
        }
    }
    (messages, None)
}

/// The reads `stream` arrives in when cut at `cuts`: each cut is taken modulo the
/// stream's length + 1, in any order, so any numbers make valid cuts (a repeated cut
/// makes an empty read).
pub(crate) fn pieces<'a>(stream: &'a [u8], cuts: &[usize]) -> Vec<&'a [u8]> {
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    ends.sort_unstable();
    ends.push(stream.len());
    let mut start = 0;
    ends.into_iter()
        .map(|end| {
            let piece = &stream[start..end];
            start = end;
            piece
        })
        .collect()
}
