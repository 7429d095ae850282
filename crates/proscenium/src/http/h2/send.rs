//! An answer on an HTTP/2 stream: the head (with the fields every answer carries, and
//! without HTTP/1.1's connection fields, which HTTP/2 forbids), then the body as the
//! client's window lets it out — bytes, a file read in pieces, or a stream as it
//! comes — each wait for window bounded by the body timeout.

use std::future::poll_fn;
use std::os::unix::fs::FileExt;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use h2::server::SendResponse;
use h2::{Reason, SendStream};
use http::header::{self, HeaderName, HeaderValue};
use http_body_util::BodyExt;
use http_body_util::combinators::UnsyncBoxBody;

use super::stream::Terms;
use crate::http::body::{FileRegion, Repr};
use crate::http::h1::Http1Loop;
use crate::http::request_id::X_REQUEST_ID;
use crate::http::{BoxError, Response, compress, invoke};

/// Bytes of a file read at a time (at most; less when the window is smaller).
const FILE_CHUNK: usize = 64 * 1024;

/// The largest DATA frame `h2` copies into the connection's write buffer. From 1024
/// bytes on (over a transport without vectored writes, as ours are) it keeps the
/// payload aside and must write it before it takes another frame: each such stream
/// flushed on its own, in two writes. A 1 KB file over h2c cost two `sendto` a
/// request, where 100-byte files went out a hundred to a write (perf stat, h2load
/// -c8 -m100): 55,000 against 160,000 requests a second.
const COPIED_FRAME: usize = 1023;

/// Answers up to this size go out in frames of [`COPIED_FRAME`] bytes, gathered with
/// other streams' frames into the connection's writes; a larger one in frames as
/// large as the window lets, each written from where it is (a copy of it would cost
/// more than the write).
const GATHERED_BODY: usize = 16 * 1024;

/// Fields of HTTP/1.1's connection management, which an HTTP/2 message must not carry
/// (RFC 9113 §8.2.2).
const CONNECTION_FIELDS: [HeaderName; 4] = [
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
    HeaderName::from_static("keep-alive"),
];

/// Why a body stopped being sent.
#[derive(Debug)]
enum Stopped {
    /// The client reset the stream, or the connection failed.
    Gone,
    /// The client's window stayed shut for the body timeout.
    Stalled,
    /// The body's own source failed.
    Failed(String),
}

/// Sends `res` on the stream and logs it.
pub(super) async fn answer(
    respond: &mut SendResponse<Bytes>,
    mut res: Response,
    terms: &mut Terms,
    shared: &Http1Loop,
) {
    invoke::fill_error_body(&mut res, terms.accept.as_ref());
    compress::compress(
        &mut res,
        terms.accept_encoding.as_ref(),
        terms.head_only,
        &shared.compression,
    );
    let (mut parts, body) = res.into_parts();
    for name in &CONNECTION_FIELDS {
        parts.headers.remove(name);
    }
    let len = body.exact_len();
    if let Some(n) = len
        && !parts.headers.contains_key(header::CONTENT_LENGTH)
        && parts.status != http::StatusCode::NO_CONTENT
        && !parts.status.is_informational()
    {
        parts.headers.insert(header::CONTENT_LENGTH, n.into());
    }
    if !parts.headers.contains_key(header::SERVER) {
        parts
            .headers
            .insert(header::SERVER, HeaderValue::from_static("proscenium"));
    }
    if !parts.headers.contains_key(header::DATE) {
        let date = crate::http::date::with_date(HeaderValue::from_bytes);
        if let Ok(date) = date {
            parts.headers.insert(header::DATE, date);
        }
    }
    if let Some(hsts) = &shared.hsts {
        parts
            .headers
            .insert(header::STRICT_TRANSPORT_SECURITY, hsts.clone());
    }
    if let Some(id) = &terms.id
        && !parts.headers.contains_key(X_REQUEST_ID)
    {
        parts.headers.insert(X_REQUEST_ID, id.to_header_value());
    }
    let status = parts.status.as_u16();
    if let (Some(log), Some(line)) = (&shared.log, terms.line.take()) {
        log.record(*line, status, len.filter(|_| !terms.head_only));
    }
    terms.count(shared, status);
    terms.span.close(status, &*shared.app);
    let bodiless = terms.head_only || len == Some(0);
    let head = http::Response::from_parts(parts, ());
    let mut stream = match respond.send_response(head, bodiless) {
        Ok(stream) => stream,
        Err(e) => return tracing::debug!("cannot answer an HTTP/2 stream: {e}"),
    };
    if bodiless {
        return;
    }
    let timeout = shared.timeouts.body;
    let endless = body.endless;
    let sent = match body.repr {
        Repr::Full(bytes) => send_bytes(&mut stream, bytes, true, timeout).await,
        Repr::File(region) => send_file(&mut stream, region, timeout).await,
        Repr::Stream(body) => send_stream(&mut stream, body, endless, shared).await,
    };
    let reason = match sent {
        Ok(()) | Err(Stopped::Gone) => return,
        Err(Stopped::Stalled) => Reason::CANCEL,
        Err(Stopped::Failed(why)) => {
            tracing::warn!("an HTTP/2 answer's body failed: {why}");
            Reason::INTERNAL_ERROR
        }
    };
    stream.send_reset(reason);
}

/// Sends `data`, ending the stream after it when `end`, as the window lets it out.
async fn send_bytes(
    stream: &mut SendStream<Bytes>,
    mut data: Bytes,
    end: bool,
    timeout: Duration,
) -> Result<(), Stopped> {
    if data.is_empty() {
        // An empty DATA frame takes no window.
        return match end {
            true => stream.send_data(data, true).map_err(|_| Stopped::Gone),
            false => Ok(()),
        };
    }
    let gathered = data.len() <= GATHERED_BODY;
    while !data.is_empty() {
        let room = capacity(stream, data.len(), timeout).await?;
        let piece = data.split_to(room.min(data.len()));
        send_frames(stream, piece, end && data.is_empty(), gathered)?;
    }
    Ok(())
}

/// Sends `piece` (within the capacity held), in frames `h2` copies when `gathered`.
fn send_frames(
    stream: &mut SendStream<Bytes>,
    mut piece: Bytes,
    end: bool,
    gathered: bool,
) -> Result<(), Stopped> {
    if gathered {
        while piece.len() > COPIED_FRAME {
            let frame = piece.split_to(COPIED_FRAME);
            stream.send_data(frame, false).map_err(|_| Stopped::Gone)?;
        }
    }
    stream.send_data(piece, end).map_err(|_| Stopped::Gone)
}

/// Waits until the stream may send some of `want` bytes: how many.
async fn capacity(
    stream: &mut SendStream<Bytes>,
    want: usize,
    timeout: Duration,
) -> Result<usize, Stopped> {
    stream.reserve_capacity(want);
    // Most answers fit the windows as they stand: the capacity is assigned as it is
    // reserved, and no wait (nor its timer) is needed.
    match stream.capacity() {
        0 => {}
        n => return Ok(n),
    }
    loop {
        let granted = tokio::time::timeout(timeout, poll_fn(|cx| stream.poll_capacity(cx)))
            .await
            .map_err(|_| Stopped::Stalled)?;
        match granted {
            Some(Ok(0)) => {}
            Some(Ok(n)) => return Ok(n),
            Some(Err(_)) | None => return Err(Stopped::Gone),
        }
    }
}

/// Sends a region of a file, read (on this thread: the page cache, as HTTP/1.1 over
/// TLS reads it) a window's worth at a time.
async fn send_file(
    stream: &mut SendStream<Bytes>,
    region: FileRegion,
    timeout: Duration,
) -> Result<(), Stopped> {
    let FileRegion {
        file,
        mut offset,
        len,
    } = region;
    let mut left = len;
    let gathered = len <= GATHERED_BODY as u64;
    let mut buf = BytesMut::new();
    while left > 0 {
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(FILE_CHUNK);
        let room = capacity(stream, want, timeout).await?.min(want);
        buf.resize(room, 0);
        let n = file
            .read_at(&mut buf, offset)
            .map_err(|e| Stopped::Failed(format!("reading the file: {e}")))?;
        if n == 0 {
            return Err(Stopped::Failed(
                "the file is shorter than its answer said".into(),
            ));
        }
        buf.truncate(n);
        offset += n as u64;
        left -= n as u64;
        send_frames(stream, buf.split().freeze(), left == 0, gathered)?;
    }
    Ok(())
}

/// Sends a streamed body as its chunks come; an `endless` one (an event stream) ends
/// where it stands when shutdown begins.
async fn send_stream(
    stream: &mut SendStream<Bytes>,
    mut body: UnsyncBoxBody<Bytes, BoxError>,
    endless: bool,
    shared: &Http1Loop,
) -> Result<(), Stopped> {
    let timeout = shared.timeouts.body;
    loop {
        let frame = tokio::select! {
            frame = body.frame() => frame,
            () = shared.shutdown_begun(), if endless => None,
            _ = poll_fn(|cx| stream.poll_reset(cx)) => return Err(Stopped::Gone),
        };
        let data = match frame {
            None => break,
            Some(Ok(frame)) => match frame.into_data() {
                Ok(data) => data,
                Err(_) => continue, // trailers are not sent
            },
            Some(Err(e)) => return Err(Stopped::Failed(e.to_string())),
        };
        send_bytes(stream, data, false, timeout).await?;
    }
    send_bytes(stream, Bytes::new(), true, timeout).await
}
