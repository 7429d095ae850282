//! What a byte stream decodes to, read in pieces: the one property the decoder must
//! keep — one stream, one reading, however it is split into reads — checked by the
//! property tests and by the fuzz targets (`proscenium::fuzz`).

use bytes::BytesMut;

use super::decode::Decoder;
use super::room::Bodies;
use crate::config::Limits;

/// One decoded message: method, target, body.
pub(crate) type Reading = (String, String, Vec<u8>);

/// What a byte stream decodes to: each message, then the status of the error that
/// stopped decoding, if any.
pub(crate) fn readings(stream: &[u8], cuts: &[usize]) -> (Vec<Reading>, Option<u16>) {
    // Budgets without end: with one, where a body runs out of room would depend on
    // how it was split into reads. Bodies past 2 KiB are spooled, so a reading covers
    // both places a body may gather, and a chunked body moving between them.
    let limits = Limits {
        max_body: 4096,
        spool_above: 2048,
        max_buffered_bodies: usize::MAX,
        max_spooled_bodies: usize::MAX,
        ..Limits::default()
    };
    let bodies = Bodies::new(&limits);
    let mut decoder = Decoder::new();
    let mut buf = BytesMut::new();
    let mut messages = Vec::new();
    let mut start = 0;
    let mut ends: Vec<usize> = cuts.iter().map(|c| c % (stream.len() + 1)).collect();
    ends.sort_unstable();
    ends.push(stream.len());
    for end in ends {
        if end < start {
            continue;
        }
        buf.extend_from_slice(&stream[start..end]);
        start = end;
        loop {
            match decoder.decode(&mut buf, &limits, &bodies) {
                Ok(Some(m)) => messages.push((
                    m.req.method().to_string(),
                    m.req.uri().to_string(),
                    m.req.body().to_vec(),
                )),
                Ok(None) => break,
                Err(e) => return (messages, Some(e.status().as_u16())),
            }
        }
    }
    (messages, None)
}
