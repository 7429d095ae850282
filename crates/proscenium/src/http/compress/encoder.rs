//! The encoders: one per answer, writing into a buffer the caller empties — a whole
//! body at once, or a stream chunk by chunk, each flushed so that nothing written is
//! held back (an event reaches the client when it is sent, not when the encoder's
//! block fills).

use std::fs::File;
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::Bytes;
use futures_util::TryStreamExt;
use http_body::Frame;
use http_body_util::combinators::UnsyncBoxBody;

use super::accept::Coding;
use crate::config::CompressionSpec;
use crate::http::BoxError;
use crate::http::body::FileRegion;

/// Brotli's window (bits): 256 KB of history per answer rather than the default 4 MB,
/// so that a stream held open (an event stream) holds little.
const BROTLI_WINDOW: u32 = 18;

/// Zstandard's window (bits), bounded for the same reason: 256 KB.
const ZSTD_WINDOW: u32 = 18;

/// Bytes of a file read at a time.
const FILE_CHUNK: usize = 64 * 1024;

/// One answer's encoder, writing into a `Vec` taken out as bytes are wanted.
pub(crate) enum Encoder {
    Zstd(zstd::stream::write::Encoder<'static, Vec<u8>>),
    Br(Box<brotli::CompressorWriter<Vec<u8>>>),
    Gzip(flate2::write::GzEncoder<Vec<u8>>),
}

impl Encoder {
    /// Returns an encoder of `coding` at the level `spec` gives it.
    pub(crate) fn new(coding: Coding, spec: &CompressionSpec) -> std::io::Result<Self> {
        Ok(match coding {
            Coding::Zstd => {
                let mut encoder = zstd::stream::write::Encoder::new(Vec::new(), spec.zstd_level)?;
                encoder.window_log(ZSTD_WINDOW)?;
                Encoder::Zstd(encoder)
            }
            Coding::Br => Encoder::Br(Box::new(brotli::CompressorWriter::new(
                Vec::new(),
                4096,
                spec.brotli_level,
                BROTLI_WINDOW,
            ))),
            Coding::Gzip => Encoder::Gzip(flate2::write::GzEncoder::new(
                Vec::new(),
                flate2::Compression::new(spec.gzip_level),
            )),
        })
    }

    fn writer(&mut self) -> &mut dyn Write {
        match self {
            Encoder::Zstd(e) => e,
            Encoder::Br(e) => &mut **e,
            Encoder::Gzip(e) => e,
        }
    }

    fn output(&mut self) -> &mut Vec<u8> {
        match self {
            Encoder::Zstd(e) => e.get_mut(),
            Encoder::Br(e) => e.get_mut(),
            Encoder::Gzip(e) => e.get_mut(),
        }
    }

    /// Encodes `data`; with `flush`, everything written so far is made decodable.
    fn write(&mut self, data: &[u8], flush: bool) -> std::io::Result<()> {
        let writer = self.writer();
        writer.write_all(data)?;
        if flush {
            writer.flush()?;
        }
        Ok(())
    }

    /// Takes the encoded bytes produced so far.
    fn take(&mut self) -> Bytes {
        Bytes::from(std::mem::take(self.output()))
    }

    /// Encodes a whole body held in memory.
    pub(crate) fn encode_all(mut self, data: &[u8]) -> std::io::Result<Bytes> {
        self.write(data, false)?;
        self.finish()
    }

    /// Ends the encoding: the bytes still held, and the coding's trailer.
    fn finish(self) -> std::io::Result<Bytes> {
        let out = match self {
            Encoder::Zstd(e) => e.finish()?,
            // Brotli's writer ends its stream as it gives its buffer back.
            Encoder::Br(e) => e.into_inner(),
            Encoder::Gzip(e) => e.finish()?,
        };
        Ok(Bytes::from(out))
    }
}

/// A streamed body as it goes out encoded.
pub(crate) struct Encoding {
    source: UnsyncBoxBody<Bytes, BoxError>,
    /// `None` once finished.
    encoder: Option<Encoder>,
    /// Whether each chunk is flushed as it comes (a stream's), rather than as the
    /// encoder's blocks fill (a file's: no chunk of it is waited for).
    flush_each: bool,
}

impl Encoding {
    /// Returns `source` encoded by `encoder`.
    pub(crate) fn new(
        source: UnsyncBoxBody<Bytes, BoxError>,
        encoder: Encoder,
        flush_each: bool,
    ) -> Self {
        Self {
            source,
            encoder: Some(encoder),
            flush_each,
        }
    }
}

impl http_body::Body for Encoding {
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = &mut *self;
        loop {
            let Some(encoder) = this.encoder.as_mut() else {
                return Poll::Ready(None);
            };
            let data = match ready!(Pin::new(&mut this.source).poll_frame(cx)) {
                Some(Ok(frame)) => match frame.into_data() {
                    Ok(data) => data,
                    // Trailers are not sent (see `h1::encode`, `h2::send`).
                    Err(_) => continue,
                },
                Some(Err(e)) => return Poll::Ready(Some(Err(e))),
                None => {
                    let last = this.encoder.take().map(Encoder::finish);
                    return Poll::Ready(last.map(|r| r.map(Frame::data).map_err(Into::into)));
                }
            };
            if let Err(e) = encoder.write(&data, this.flush_each) {
                return Poll::Ready(Some(Err(e.into())));
            }
            let out = encoder.take();
            if !out.is_empty() {
                return Poll::Ready(Some(Ok(Frame::data(out))));
            }
        }
    }
}

/// A region of a file as a stream of chunks, read as they are wanted (on the loop's
/// thread, from the page cache, as HTTP/2 reads a file it sends).
pub(crate) fn file_chunks(region: FileRegion) -> UnsyncBoxBody<Bytes, BoxError> {
    let FileRegion {
        file,
        mut offset,
        len,
    } = region;
    let mut left = len;
    let chunks = std::iter::from_fn(move || {
        if left == 0 {
            return None;
        }
        let want = usize::try_from(left).unwrap_or(usize::MAX).min(FILE_CHUNK);
        let chunk = read_chunk(&file, offset, want);
        match &chunk {
            Ok(chunk) => {
                offset += chunk.len() as u64;
                left -= chunk.len() as u64;
            }
            Err(_) => left = 0,
        }
        Some(chunk)
    });
    let frames = futures_util::stream::iter(chunks)
        .map_ok(Frame::data)
        .map_err(BoxError::from);
    UnsyncBoxBody::new(http_body_util::StreamBody::new(frames))
}

/// Reads a region of a file whole (one the cache of compressed files takes: small).
pub(crate) fn read_whole(region: &FileRegion) -> std::io::Result<Bytes> {
    let mut buf = vec![0; usize::try_from(region.len).unwrap_or(usize::MAX)];
    region.file.read_exact_at(&mut buf, region.offset)?;
    Ok(Bytes::from(buf))
}

/// Reads up to `want` bytes of `file` at `offset`; none left is an error (the file is
/// shorter than its answer said).
fn read_chunk(file: &File, offset: u64, want: usize) -> std::io::Result<Bytes> {
    let mut buf = vec![0; want];
    let n = file.read_at(&mut buf, offset)?;
    if n == 0 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::UnexpectedEof,
            "the file is shorter than its answer said",
        ));
    }
    buf.truncate(n);
    Ok(Bytes::from(buf))
}

#[cfg(test)]
mod tests {
    use std::io::Read;

    use super::*;

    fn decode(coding: Coding, data: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        match coding {
            Coding::Gzip => flate2::read::GzDecoder::new(data)
                .read_to_end(&mut out)
                .map(drop),
            Coding::Br => brotli::Decompressor::new(data, 4096)
                .read_to_end(&mut out)
                .map(drop),
            Coding::Zstd => zstd::stream::copy_decode(data, &mut out),
        }
        .unwrap();
        out
    }

    #[test]
    fn every_chunk_flushed_decodes_to_what_was_written_so_far() {
        let spec = CompressionSpec::default();
        for coding in Coding::ALL {
            let mut encoder = Encoder::new(coding, &spec).unwrap();
            let mut sent = Vec::new();
            encoder.write(b"data: one\n\n", true).unwrap();
            sent.extend_from_slice(&encoder.take());
            assert!(!sent.is_empty(), "{coding:?}: the chunk was held back");
            encoder.write(b"data: two\n\n", true).unwrap();
            sent.extend_from_slice(&encoder.take());
            sent.extend_from_slice(&encoder.finish().unwrap());
            assert_eq!(decode(coding, &sent), b"data: one\n\ndata: two\n\n");
        }
    }

    #[test]
    fn a_whole_body_decodes_to_itself_at_every_coding() {
        let spec = CompressionSpec::default();
        let text = "<p>hello</p>".repeat(1000);
        for coding in Coding::ALL {
            let encoded = Encoder::new(coding, &spec)
                .unwrap()
                .encode_all(text.as_bytes())
                .unwrap();
            assert!(encoded.len() < text.len() / 10, "{coding:?}");
            assert_eq!(decode(coding, &encoded), text.as_bytes());
        }
    }
}
