//! The response body: bytes in memory, a region of a file, or a stream of chunks.

use std::fs::File;

use bytes::Bytes;
use std::pin::Pin;
use std::task::{Context, Poll};

use http_body::{Frame, SizeHint};
use http_body_util::combinators::UnsyncBoxBody;

/// A boxed error, as carried by streaming bodies.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// The body of a [`Response`](crate::Response).
///
/// Bytes in memory are written with the head in one write; a file region is sent with
/// `sendfile(2)` without passing through user space; a stream is sent chunk by chunk,
/// with `Transfer-Encoding: chunked` when its length is not known in advance.
///
/// # Examples
///
/// ```
/// use proscenium::Body;
///
/// let body = Body::from("Hello, World!");
/// assert_eq!(body.exact_len(), Some(13));
/// ```
pub struct Body {
    pub(crate) repr: Repr,
    /// A stream with no end of its own: ended when shutdown begins.
    pub(crate) endless: bool,
}

/// How a body's bytes are held.
pub(crate) enum Repr {
    Full(Bytes),
    File(FileRegion),
    Stream(UnsyncBoxBody<Bytes, BoxError>),
}

/// Which version of a file: what one `stat` tells apart. Static files note it on a
/// whole file's answer, for the cache of compressed files (`http::compress`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct FileVersion {
    /// Device and inode: a file replaced by another of the same length and time is
    /// not the same file.
    pub(crate) identity: (u64, u64),
    pub(crate) len: u64,
    pub(crate) modified: std::time::SystemTime,
}

impl FileVersion {
    /// Returns the version of the file `meta` describes.
    pub(crate) fn of(meta: &std::fs::Metadata) -> Self {
        use std::os::unix::fs::MetadataExt;
        Self {
            identity: (meta.dev(), meta.ino()),
            len: meta.len(),
            modified: meta.modified().unwrap_or(std::time::UNIX_EPOCH),
        }
    }
}

/// A byte range of an open file, sent without copying it into memory.
#[derive(Debug)]
pub(crate) struct FileRegion {
    pub(crate) file: File,
    pub(crate) offset: u64,
    pub(crate) len: u64,
}

impl Body {
    /// Returns an empty body.
    pub fn empty() -> Self {
        Self {
            repr: Repr::Full(Bytes::new()),
            endless: false,
        }
    }

    /// Returns a body that sends `len` bytes of `file` from `offset`.
    pub fn from_file(file: File, offset: u64, len: u64) -> Self {
        Self {
            repr: Repr::File(FileRegion { file, offset, len }),
            endless: false,
        }
    }

    /// Returns a body streamed from a [`futures_util::Stream`] of byte chunks.
    ///
    /// # Examples
    ///
    /// ```
    /// use bytes::Bytes;
    /// use proscenium::Body;
    ///
    /// let chunks = futures_util::stream::iter(["a", "b"].map(|s| Ok::<_, std::io::Error>(Bytes::from(s))));
    /// let body = Body::from_stream(chunks);
    /// assert_eq!(body.exact_len(), None);
    /// ```
    pub fn from_stream<S, E>(stream: S) -> Self
    where
        S: futures_util::Stream<Item = Result<Bytes, E>> + Send + 'static,
        E: Into<BoxError> + 'static,
    {
        use futures_util::TryStreamExt;
        let frames = stream.map_ok(http_body::Frame::data).map_err(Into::into);
        Self::from_http_body(http_body_util::StreamBody::new(frames))
    }

    /// Returns a body that relays any [`http_body::Body`], such as a tower service's.
    pub fn from_http_body<B>(body: B) -> Self
    where
        B: http_body::Body + Send + 'static,
        B::Data: Into<Bytes>,
        B::Error: Into<BoxError>,
    {
        Self {
            repr: Repr::Stream(UnsyncBoxBody::new(Relay { inner: body })),
            endless: false,
        }
    }

    /// Marks a streamed body as having no end of its own — an event stream, a feed:
    /// when the server's shutdown begins it is ended where it stands (if waiting for
    /// its next chunk) and the connection closed, instead of holding the shutdown to
    /// its deadline. [`Sse`](crate::sse::Sse) bodies are.
    #[must_use]
    pub fn endless(mut self) -> Self {
        self.endless = true;
        self
    }

    /// Returns the body's length when it is known before sending.
    pub fn exact_len(&self) -> Option<u64> {
        match &self.repr {
            Repr::Full(bytes) => Some(bytes.len() as u64),
            Repr::File(region) => Some(region.len),
            Repr::Stream(body) => http_body::Body::size_hint(body).exact(),
        }
    }

    /// For a streamed body answered on another thread than the one that made it (a
    /// thread model's HTTP/2 stream, `http::invoke`'s `Call`): turns it into one that
    /// receives its frames, and returns the future that polls the stream and sends
    /// them, to be run here. A stream may need the runtime it was made on — its
    /// timers, its sockets — which under a thread model is not driven once the call
    /// returns, or is gone with its thread. The future ends with the stream, or once
    /// the receiving side is dropped; it holds this thread meanwhile, as sending a
    /// streamed answer over HTTP/1.1 holds it.
    pub(crate) fn fed_from_here(&mut self) -> Option<impl Future<Output = ()> + use<>> {
        let Repr::Stream(body) = &mut self.repr else {
            return None;
        };
        let size = http_body::Body::size_hint(body);
        let (feed, frames) = tokio::sync::mpsc::channel(FED_FRAMES);
        let stream = std::mem::replace(body, UnsyncBoxBody::new(Fed { frames, size }));
        Some(async move {
            let mut stream = stream;
            loop {
                // Room first: a frame is taken from the stream only when it can go.
                let Ok(room) = feed.reserve().await else {
                    return;
                };
                let frame = tokio::select! {
                    frame = http_body_util::BodyExt::frame(&mut stream) => frame,
                    () = feed.closed() => return,
                };
                match frame {
                    Some(frame) => room.send(frame),
                    None => return,
                }
            }
        })
    }

    /// Returns the bytes of a body held in memory, `None` for files and streams.
    pub fn as_bytes(&self) -> Option<&Bytes> {
        match &self.repr {
            Repr::Full(bytes) => Some(bytes),
            _ => None,
        }
    }
}

impl Default for Body {
    fn default() -> Self {
        Self::empty()
    }
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.repr {
            Repr::Full(bytes) => f.debug_tuple("Body::Full").field(&bytes.len()).finish(),
            Repr::File(region) => f.debug_tuple("Body::File").field(&region.len).finish(),
            Repr::Stream(_) => f.write_str("Body::Stream"),
        }
    }
}

impl From<Bytes> for Body {
    fn from(bytes: Bytes) -> Self {
        Self {
            repr: Repr::Full(bytes),
            endless: false,
        }
    }
}

impl From<&'static str> for Body {
    fn from(s: &'static str) -> Self {
        Bytes::from_static(s.as_bytes()).into()
    }
}

impl From<&'static [u8]> for Body {
    fn from(s: &'static [u8]) -> Self {
        Bytes::from_static(s).into()
    }
}

impl From<String> for Body {
    fn from(s: String) -> Self {
        Bytes::from(s).into()
    }
}

impl From<Vec<u8>> for Body {
    fn from(v: Vec<u8>) -> Self {
        Bytes::from(v).into()
    }
}

/// How many frames of a fed body wait for the receiving side at most.
const FED_FRAMES: usize = 2;

/// The receiving side of [`Body::fed_from_here`].
struct Fed {
    frames: tokio::sync::mpsc::Receiver<Result<Frame<Bytes>, BoxError>>,
    /// The stream's, as it was when fed: a length known ahead stays known.
    size: SizeHint,
}

impl http_body::Body for Fed {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.frames.poll_recv(cx)
    }

    fn size_hint(&self) -> SizeHint {
        self.size
    }
}

pin_project_lite::pin_project! {
    /// Another body's frames as a [`Body`]'s: its data as [`Bytes`], its errors boxed,
    /// and its size told (`http_body_util`'s `map_frame` forgets it, and a body of
    /// known length would go out chunked).
    struct Relay<B> {
        #[pin]
        inner: B,
    }
}

impl<B> http_body::Body for Relay<B>
where
    B: http_body::Body,
    B::Data: Into<Bytes>,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        self.project()
            .inner
            .poll_frame(cx)
            .map(|frame| frame.map(|f| f.map(|f| f.map_data(Into::into)).map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// How much of a file region one frame reads.
const FILE_FRAME: u64 = 64 * 1024;

/// A body's frames, for what takes an [`http_body::Body`] (a tower layer's service,
/// hyper): bytes in one frame, a file region read in 64 KiB frames (positioned reads
/// on the polling thread, as `sendfile` would block it), a stream's own frames.
impl http_body::Body for Body {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match &mut self.get_mut().repr {
            Repr::Full(bytes) if bytes.is_empty() => Poll::Ready(None),
            Repr::Full(bytes) => Poll::Ready(Some(Ok(Frame::data(std::mem::take(bytes))))),
            Repr::File(region) => Poll::Ready(region.read_frame().transpose()),
            Repr::Stream(body) => http_body::Body::poll_frame(Pin::new(body), cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match &self.repr {
            Repr::Full(bytes) => bytes.is_empty(),
            Repr::File(region) => region.len == 0,
            Repr::Stream(body) => http_body::Body::is_end_stream(body),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match &self.repr {
            Repr::Full(bytes) => SizeHint::with_exact(bytes.len() as u64),
            Repr::File(region) => SizeHint::with_exact(region.len),
            Repr::Stream(body) => http_body::Body::size_hint(body),
        }
    }
}

impl FileRegion {
    /// Reads the region's next frame, `None` at its end.
    fn read_frame(&mut self) -> Result<Option<Frame<Bytes>>, BoxError> {
        use std::os::unix::fs::FileExt;
        if self.len == 0 {
            return Ok(None);
        }
        let want = usize::try_from(self.len.min(FILE_FRAME)).unwrap_or(usize::MAX);
        let mut buf = vec![0; want];
        let read = self.file.read_at(&mut buf, self.offset)?;
        if read == 0 {
            return Err("the file ended before its region".into());
        }
        buf.truncate(read);
        self.offset += read as u64;
        self.len -= read as u64;
        Ok(Some(Frame::data(Bytes::from(buf))))
    }
}
