//! `BodyStream`: the request body as a stream of chunks, the extractor that `Multipart`
//! and handlers that work through a body piece by piece read.
//!
//! The body is the one the connection gathered under `limits` (memory from the body
//! budget, or a file mapped past `spool_above`), so `max_body` and the slow-body
//! timeouts have held before the handler runs; the chunks are slices of it, not
//! copies. The name is not axum's `Body`: `proscenium::Body` is the response body.

use std::convert::Infallible;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::Bytes;
use futures_util::Stream;

use super::extract::FromRequest;
use crate::http::Request;

/// Bytes in one chunk of a [`BodyDataStream`], the last one excepted.
const CHUNK: usize = 64 * 1024;

/// The request body, read as a stream of chunks; the last handler argument.
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
    body: Bytes,
}

impl BodyStream {
    /// Returns the body as a stream of its chunks, in order.
    pub fn into_data_stream(self) -> BodyDataStream {
        BodyDataStream {
            rest: self.body,
            paused: false,
        }
    }
}

impl FromRequest for BodyStream {
    type Rejection = Infallible;

    fn from_request(req: Request) -> Result<Self, Self::Rejection> {
        Ok(Self {
            body: req.into_parts().1,
        })
    }
}

/// The chunks of a request body, from [`BodyStream::into_data_stream`].
#[derive(Debug)]
pub struct BodyDataStream {
    rest: Bytes,
    /// Whether the last poll gave a chunk, so this one answers `Pending` first.
    paused: bool,
}

impl Stream for BodyDataStream {
    type Item = Result<Bytes, BodyError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        // A reader that polls until `Pending` (multer does, copying each chunk into
        // its buffer) would otherwise take the whole body in one go: pausing after
        // each chunk bounds it to a chunk, as a body arriving from the network would.
        if std::mem::take(&mut this.paused) {
            cx.waker().wake_by_ref();
            return Poll::Pending;
        }
        if this.rest.is_empty() {
            return Poll::Ready(None);
        }
        this.paused = true;
        Poll::Ready(Some(Ok(this.rest.split_to(CHUNK.min(this.rest.len())))))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let chunks = self.rest.len().div_ceil(CHUNK);
        (chunks, Some(chunks))
    }
}

/// A request body that could not be read to its end.
///
/// None occurs today (the body has arrived whole before the handler runs); the type is
/// there so that handlers already handle it when chunks come as they arrive.
#[derive(Debug)]
pub struct BodyError(Infallible);

impl std::fmt::Display for BodyError {
    fn fmt(&self, _f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {}
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
