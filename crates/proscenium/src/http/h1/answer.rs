//! An answer on its way out: what the connection notes of a request before the app
//! takes it, and [`buffer`], the one place every answer — the app's, a refusal, an
//! overload 503 — is encoded, and so the one place it is logged.

use bytes::BytesMut;
use http::{HeaderValue, Version};

use super::dispatch;
use super::encode::{self, Framing};
use crate::app::Response;
use crate::http::access_log::{AccessLog, LineHead};
use crate::http::body::Kind;

/// Bodies larger than this are written from their own buffer instead of being copied.
const COPY_LIMIT: usize = 64 * 1024;

/// How to answer a request, noted before the app takes it.
pub(super) struct Reply {
    pub(super) version: Version,
    pub(super) head_only: bool,
    /// The request's `Accept`, for an error page.
    pub(super) accept: Option<HeaderValue>,
    pub(super) keep_alive: bool,
    /// What the access log needs of the request: only with a log.
    pub(super) line: Option<Box<LineHead>>,
}

impl Reply {
    /// Returns how to answer a request the server refuses: HTTP/1.1, then close.
    pub(super) fn refusal(line: Option<Box<LineHead>>) -> Self {
        Self {
            version: Version::HTTP_11,
            head_only: false,
            accept: None,
            keep_alive: false,
            line,
        }
    }
}

/// What to do after answering a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Next {
    KeepAlive,
    Close,
}

/// A response whose head is buffered and whose body is to be sent, not copied.
pub(super) struct Unsent {
    pub(super) next: Next,
    pub(super) kind: Kind,
    pub(super) framing: Framing,
}

/// Buffers a response's head in `wbuf`, and its body (the error page for a bodiless
/// error) when it fits; logs it; returns whether the connection stays open, or the
/// body still to send. With `closing` (shutdown has begun) the answer announces the
/// close.
pub(super) fn buffer(
    wbuf: &mut BytesMut,
    mut res: Response,
    reply: &mut Reply,
    closing: bool,
    log: Option<&AccessLog>,
) -> Result<Next, Unsent> {
    dispatch::fill_error_body(&mut res, reply.accept.as_ref());
    let (parts, body) = res.into_parts();
    let framing = Framing::choose(parts.status, body.exact_len(), reply.version);
    let keep_alive = encode::head(
        wbuf,
        parts.status,
        &parts.headers,
        framing,
        reply.keep_alive && !closing,
        reply.version,
    );
    if let (Some(log), Some(line)) = (log, reply.line.take()) {
        let bytes = match framing {
            Framing::Length(n) if !reply.head_only => Some(n),
            _ => None,
        };
        log.record(*line, parts.status.as_u16(), bytes);
    }
    crate::http::spare::keep(parts.headers);
    let next = if keep_alive {
        Next::KeepAlive
    } else {
        Next::Close
    };
    if reply.head_only || framing == Framing::None {
        return Ok(next);
    }
    match body.kind {
        Kind::Full(bytes) if bytes.len() <= COPY_LIMIT => {
            wbuf.extend_from_slice(&bytes);
            Ok(next)
        }
        kind => Err(Unsent {
            next,
            kind,
            framing,
        }),
    }
}
