//! `BodyStream`: the request body as a stream of chunks, the extractor that `Multipart`
//! and handlers that work through a body piece by piece read.
//!
//! An async handler that takes it streams its route's body: the connection hands the
//! request on once its head is read and passes the body on as it arrives, at most a
//! window (64 KiB) ahead of the handler, within `max_body` and the body timeouts, never
//! spooled (http/intake/arriving.rs). Where the body came whole with its head, or the
//! handler is `inline` or `blocking`, the chunks are slices of the body gathered under
//! `limits` (memory from the body budget, or a file mapped past `spool_above`), not
//! copies. The name is not axum's `Body`: `proscenium::Body` is the response body.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;

use super::extract::FromRequest;
use crate::http::Request;
use crate::http::intake::{Arriving, Taker};

/// Bytes in one chunk of a gathered body, the last one excepted.
const CHUNK: usize = 64 * 1024;

/// The request body, read as a stream of chunks; the last handler argument.
///
/// Its route's body is not gathered: [`Request::body`] is empty in middleware before
/// it, and the chunks come as the client sends them.
///
/// # Examples
///
/// ```
/// use futures_util::StreamExt;
/// use proscenium::App;
/// use proscenium::app::BodyStream;
///
/// let app = App::new().post("/count", |body: BodyStream| async move {
///     let mut chunks = body.into_data_stream();
///     let mut total = 0;
///     while let Some(chunk) = chunks.next().await {
///         match chunk {
///             Ok(bytes) => total += bytes.len(),
///             Err(e) => return format!("broken body: {e}"),
///         }
///     }
///     format!("{total} bytes")
/// });
/// ```
#[derive(Debug)]
pub struct BodyStream {
    source: Source,
}

#[derive(Debug)]
enum Source {
    /// The whole body, read before the handler ran.
    Gathered(Bytes),
    /// The body as the connection passes it on.
    Arriving(Taker),
}

impl BodyStream {
    /// Returns the body as a stream of its chunks, in order.
    pub fn into_data_stream(self) -> BodyDataStream {
        BodyDataStream {
            source: self.source,
            paused: false,
        }
    }
}

impl FromRequest for BodyStream {
    type Rejection = Infallible;

    const STREAMS: bool = true;

    fn from_request(mut req: Request) -> Result<Self, Self::Rejection> {
        let arriving = req.extensions_mut().remove::<Arriving>();
        let source = match arriving.and_then(|slot| slot.take()) {
            Some(taker) => Source::Arriving(taker),
            None => Source::Gathered(req.into_parts().1),
        };
        Ok(Self { source })
    }
}

/// The chunks of a request body, from [`BodyStream::into_data_stream`].
#[derive(Debug)]
pub struct BodyDataStream {
    source: Source,
    /// Whether the last poll gave a gathered chunk, so this one answers `Pending` first.
    paused: bool,
}

impl Stream for BodyDataStream {
    type Item = Result<Bytes, BodyError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        let rest = match &mut this.source {
            Source::Arriving(taker) => {
                return taker
                    .poll_chunk(cx)
                    .map(|chunk| chunk.map(|c| c.map_err(|_| BodyError(()))));
            }
            Source::Gathered(rest) => rest,
        };
        // A reader that polls until `Pending` (multer does, copying each chunk into
        // its buffer) would otherwise take the whole body in one go: pausing after
        // each chunk bounds it to a chunk, as a body arriving from the network would.
        if std::mem::take(&mut this.paused) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if rest.is_empty() {
            return Poll::Ready(None);
        }
        this.paused = true;
        Poll::Ready(Some(Ok(rest.split_to(CHUNK.min(rest.len())))))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match &self.source {
            Source::Gathered(rest) => {
                let chunks = rest.len().div_ceil(CHUNK);
                (chunks, Some(chunks))
            }
            Source::Arriving(_) => (0, None),
        }
    }
}

/// A request body that stopped before its end: the connection ended (the client hung
/// up, or the server is shutting down) while the handler was still reading it.
///
/// A body refused by the server's limits (`max_body`, the body timeouts) never reaches
/// the handler as this error: the server answers the refusal itself (413, 408) and the
/// handler is dropped, as it is when the client hangs up.
#[derive(Debug)]
pub struct BodyError(());

impl std::fmt::Display for BodyError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("the request body ended before its end: the connection is gone")
    }
}

impl std::error::Error for BodyError {}

#[cfg(test)]
mod tests {
    use futures_util::StreamExt;

    use super::*;

    fn chunks_of(len: usize) -> Vec<usize> {
        let req = Request::from(http::Request::new(Bytes::from(vec![7u8; len])));
        let stream = BodyStream::from_request(req).unwrap().into_data_stream();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        runtime.block_on(stream.map(|c| c.unwrap().len()).collect())
    }

    #[test]
    fn the_body_comes_in_chunks_of_at_most_64_kib_in_order() {
        assert_eq!(chunks_of(0), Vec::<usize>::new());
        assert_eq!(chunks_of(10), vec![10]);
        assert_eq!(chunks_of(CHUNK * 2 + 1), vec![CHUNK, CHUNK, 1]);
    }

    #[test]
    fn a_reader_polling_until_pending_takes_one_chunk_at_a_time() {
        let req = Request::from(http::Request::new(Bytes::from(vec![7u8; CHUNK * 3])));
        let mut stream = BodyStream::from_request(req).unwrap().into_data_stream();
        let mut cx = Context::from_waker(std::task::Waker::noop());
        let mut poll = || {
            Pin::new(&mut stream)
                .poll_next(&mut cx)
                .map(|c| c.is_some())
        };
        assert_eq!(poll(), Poll::Ready(true));
        assert_eq!(poll(), Poll::Pending);
        assert_eq!(poll(), Poll::Ready(true));
    }
}
