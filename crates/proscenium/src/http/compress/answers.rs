//! Answers compressed on the fly, by the rules of the [module](super) (the
//! `compression` feature).

use bytes::Bytes;
use http::StatusCode;
use http::header::{self, HeaderMap, HeaderValue};

use super::accept::Coding;
use super::cache::FileCache;
use super::encoder::{self, Encoder, Encoding};
use super::{ranked, vary};
use crate::config::CompressionSpec;
use crate::http::body::{FileVersion, Repr};
use crate::http::{Body, Response};

/// How a server compresses: its settings, and its cache of compressed static files.
#[derive(Debug)]
pub(crate) struct Compression {
    spec: CompressionSpec,
    /// `None` with a cache size of 0.
    files: Option<FileCache>,
}

impl Compression {
    /// Returns compression as `spec` configures it, its cache empty.
    pub(crate) fn new(spec: &CompressionSpec) -> Self {
        let capacity = usize::try_from(spec.cache_size).unwrap_or(usize::MAX);
        Self {
            spec: spec.clone(),
            files: (capacity > 0).then(|| FileCache::new(capacity)),
        }
    }
}

/// Compresses `res` for a request that sent `accept_encoding` (`None` without one, or
/// with a `Range`), as `compression` says; `head_only` for an answer to HEAD.
pub(crate) fn compress(
    res: &mut Response,
    accept_encoding: Option<&HeaderValue>,
    head_only: bool,
    compression: &Compression,
) {
    let spec = &compression.spec;
    if !spec.enabled || !is_transformable(res, spec) {
        return;
    }
    vary(res.headers_mut());
    let Some(coding) = accept_encoding.and_then(|v| ranked(v.as_bytes()).next()) else {
        return;
    };
    if let Err(e) = encode(res, coding, head_only, compression) {
        // The answer goes out as it was: the identity is always acceptable.
        tracing::warn!("cannot compress an answer in {}: {e}", coding.name());
    }
}

/// Whether the answer may be compressed, whatever the request accepts.
fn is_transformable(res: &Response, spec: &CompressionSpec) -> bool {
    let status = res.status();
    if status.is_informational()
        || status == StatusCode::NO_CONTENT
        || status == StatusCode::PARTIAL_CONTENT
        || status == StatusCode::NOT_MODIFIED
    {
        return false;
    }
    if res.body().exact_len().is_some_and(|n| n < spec.min_size) {
        return false;
    }
    let headers = res.headers();
    if headers.contains_key(header::CONTENT_ENCODING) || headers.contains_key(header::CONTENT_RANGE)
    {
        return false;
    }
    let listed = headers
        .get(header::CONTENT_TYPE)
        .is_some_and(|t| spec.compresses(t.as_bytes()));
    listed && !forbids_transform(headers)
}

/// Whether `Cache-Control` says `no-transform` (RFC 9111 §5.2.2.6).
fn forbids_transform(headers: &HeaderMap) -> bool {
    headers.get_all(header::CACHE_CONTROL).iter().any(|value| {
        value
            .as_bytes()
            .split(|&b| b == b',')
            .any(|directive| directive.trim_ascii().eq_ignore_ascii_case(b"no-transform"))
    })
}

/// Encodes the answer's body in `coding` and marks it so. A static file's (one that
/// carries its [`FileVersion`]) small enough for the cache is encoded whole, once; an
/// answer to HEAD is not encoded (it is never sent) unless the cache has it. On an
/// error the answer keeps its body, unencoded.
fn encode(
    res: &mut Response,
    coding: Coding,
    head_only: bool,
    compression: &Compression,
) -> std::io::Result<()> {
    let body = std::mem::take(res.body_mut());
    let kept = compression
        .files
        .as_ref()
        .zip(res.extensions().get::<FileVersion>().copied());
    // A kept file answers HEAD too, with the length GET's answer has.
    if let Some(hit) = kept.and_then(|(cache, version)| cache.get(version, coding)) {
        answer_whole(res, body, hit, coding);
        return Ok(());
    }
    if head_only {
        // No body to compress, and its length is not known without it.
        *res.body_mut() = Body::from_stream(futures_util::stream::empty::<std::io::Result<_>>());
        mark(res.headers_mut(), coding);
        return Ok(());
    }
    let encoder = match Encoder::new(coding, &compression.spec) {
        Ok(encoder) => encoder,
        Err(e) => {
            *res.body_mut() = body;
            return Err(e);
        }
    };
    let endless = body.endless;
    let repr = match body.repr {
        // A file that cannot be read whole is tried as it is sent, where a failure
        // ends the answer as any failing body does.
        Repr::File(region) if kept.is_some_and(|(cache, _)| cache.takes(region.len)) => {
            match encoder::read_whole(&region) {
                Ok(bytes) => Repr::Full(bytes),
                Err(_) => Repr::File(region),
            }
        }
        repr => repr,
    };
    let source = match repr {
        Repr::Full(bytes) => {
            let smaller = match encoder.encode_all(&bytes) {
                Ok(smaller) => smaller,
                Err(e) => {
                    *res.body_mut() = Body::from(bytes);
                    return Err(e);
                }
            };
            if let Some((cache, version)) = kept {
                cache.insert(version, coding, smaller.clone());
            }
            answer_whole(res, Body::from(bytes), smaller, coding);
            return Ok(());
        }
        Repr::File(region) => Encoding::new(encoder::file_chunks(region), encoder, false),
        Repr::Stream(source) => Encoding::new(source, encoder, true),
    };
    let mut encoded = Body::from_http_body(source);
    encoded.endless = endless;
    *res.body_mut() = encoded;
    mark(res.headers_mut(), coding);
    Ok(())
}

/// Answers with `encoded`, the whole of `original` in `coding` — or with `original`
/// when encoding did not make it smaller (it goes out as it was, with its length).
fn answer_whole(res: &mut Response, original: Body, encoded: Bytes, coding: Coding) {
    if original
        .exact_len()
        .is_some_and(|n| encoded.len() as u64 >= n)
    {
        *res.body_mut() = original;
        return;
    }
    *res.body_mut() = Body::from(encoded);
    mark(res.headers_mut(), coding);
}

/// Marks an answer's fields as of its body encoded in `coding`.
fn mark(headers: &mut HeaderMap, coding: Coding) {
    headers.insert(
        header::CONTENT_ENCODING,
        HeaderValue::from_static(coding.name()),
    );
    headers.remove(header::CONTENT_LENGTH);
    weaken_etag(headers);
}

/// Makes a strong `ETag` weak, as the compressed bytes differ from the identity's
/// that it validates (nginx does the same).
fn weaken_etag(headers: &mut HeaderMap) {
    let Some(etag) = headers.get(header::ETAG) else {
        return;
    };
    if etag.as_bytes().starts_with(b"\"") {
        let mut weak = Vec::with_capacity(etag.len() + 2);
        weak.extend_from_slice(b"W/");
        weak.extend_from_slice(etag.as_bytes());
        if let Ok(weak) = HeaderValue::from_bytes(&weak) {
            headers.insert(header::ETAG, weak);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(content_type: &str, body: impl Into<Body>) -> Response {
        let mut res = Response::new(body.into());
        res.headers_mut().insert(
            header::CONTENT_TYPE,
            HeaderValue::from_str(content_type).unwrap(),
        );
        res
    }

    fn gzip() -> HeaderValue {
        HeaderValue::from_static("gzip")
    }

    #[test]
    fn a_strong_etag_is_made_weak_and_a_weak_one_kept() {
        let spec = Compression::new(&CompressionSpec::default());
        for (etag, expected) in [("\"x\"", "W/\"x\""), ("W/\"y\"", "W/\"y\"")] {
            let mut res = answer("text/plain", "a".repeat(4096));
            res.headers_mut()
                .insert(header::ETAG, HeaderValue::from_static(etag));
            compress(&mut res, Some(&gzip()), false, &spec);
            assert_eq!(res.headers()[header::ETAG], expected);
            assert_eq!(res.headers()[header::CONTENT_ENCODING], "gzip");
        }
    }

    #[test]
    fn a_body_that_does_not_shrink_goes_out_as_it_was() {
        let spec = Compression::new(&CompressionSpec {
            min_size: 0,
            ..CompressionSpec::default()
        });
        let mut res = answer("text/plain", "ab");
        compress(&mut res, Some(&gzip()), false, &spec);
        assert!(!res.headers().contains_key(header::CONTENT_ENCODING));
        assert_eq!(res.body().as_bytes().unwrap().as_ref(), b"ab");
        assert!(res.headers().contains_key(header::VARY));
    }

    #[test]
    fn statuses_without_a_transformable_body_are_left_alone() {
        let spec = Compression::new(&CompressionSpec::default());
        for status in [204, 206, 304, 103] {
            let mut res = answer("text/plain", "a".repeat(4096));
            *res.status_mut() = StatusCode::from_u16(status).unwrap();
            compress(&mut res, Some(&gzip()), false, &spec);
            assert!(res.headers().get(header::VARY).is_none(), "{status}");
            assert!(res.headers().get(header::CONTENT_ENCODING).is_none());
        }
    }

    #[test]
    fn head_announces_the_coding_without_a_length() {
        let spec = Compression::new(&CompressionSpec::default());
        let mut res = answer("text/plain", "a".repeat(4096));
        compress(&mut res, Some(&gzip()), true, &spec);
        assert_eq!(res.headers()[header::CONTENT_ENCODING], "gzip");
        assert_eq!(res.body().exact_len(), None);
    }
}
