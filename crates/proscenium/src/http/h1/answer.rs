//! An answer on its way out: what the connection notes of a request before the app
//! takes it, and [`buffer`], the one place every answer — the app's, a refusal, an
//! overload 503 — is encoded, and so the one place it is logged and counted.

use bytes::BytesMut;
use http::{HeaderValue, Version};

use super::encode::{self, Added, ResponseFraming};
use crate::http::Response;
use crate::http::access_log::{AccessLog, LineHead};
use crate::http::body::Repr;
use crate::http::compress::{self, Compression};
use crate::http::invoke;
use crate::http::meter::{Mark, Table};
use crate::http::request_id::{RequestId, RequestIds};
use crate::http::response::Respond;
use crate::http::trace::RequestSpan;

/// Bodies larger than this are written from their own buffer instead of being copied.
const COPY_LIMIT: usize = 64 * 1024;

/// What the server adds to every answer: its access log, its counters, and fields
/// (whole lines).
pub(super) struct Fixed<'a> {
    pub(super) log: Option<&'a AccessLog>,
    /// This thread's request counters (`[admin]`), if the server keeps them.
    pub(super) meter: Option<&'a Table>,
    pub(super) fields: &'a [u8],
    /// How answers are compressed.
    pub(super) compression: &'a Compression,
    /// How requests get ids, when they do.
    pub(super) ids: Option<&'a RequestIds>,
    /// The app, which names the route a request span closes with.
    pub(super) app: &'a dyn Respond,
}

/// How to answer a request, noted before the app takes it.
pub(super) struct Terms {
    pub(super) version: Version,
    pub(super) head_only: bool,
    /// The request's `Accept`, for an error page.
    pub(super) accept: Option<HeaderValue>,
    /// The request's `Accept-Encoding`, for compression (`None` with a `Range`).
    pub(super) accept_encoding: Option<HeaderValue>,
    pub(super) keep_alive: bool,
    /// What the access log needs of the request: only with a log.
    pub(super) line: Option<Box<LineHead>>,
    /// What the request counters need of it: only with counters.
    pub(super) mark: Option<Mark>,
    /// The request's id, when requests get ids.
    pub(super) id: Option<RequestId>,
    /// The request's span, when one is made.
    pub(super) span: RequestSpan,
}

impl Terms {
    /// Returns how to answer a request the server refuses: HTTP/1.1, then close. It
    /// gets an id of its own when requests do, so the refusal can be found in the log.
    pub(super) fn refusal(
        mut line: Option<Box<LineHead>>,
        mark: Option<Mark>,
        server: &Fixed<'_>,
    ) -> Self {
        let id = server.ids.map(|_| RequestId::make());
        if let Some(line) = &mut line {
            line.id.clone_from(&id);
        }
        Self {
            version: Version::HTTP_11,
            head_only: false,
            accept: None,
            accept_encoding: None,
            keep_alive: false,
            line,
            mark,
            id,
            span: RequestSpan::default(),
        }
    }

    /// Counts the answer with `status` in `meter`, once (the route is the one this
    /// thread noted last).
    pub(super) fn count(&mut self, meter: Option<&Table>, status: u16) {
        if let (Some(mark), Some(meter)) = (self.mark.take(), meter) {
            meter.record(mark, status);
        }
    }
}

/// Whether the connection stays open after an answer (RFC 9112 §9.3).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Persistence {
    KeepAlive,
    Close,
}

/// A response whose head is buffered and whose body is to be sent, not copied.
pub(super) struct Unsent {
    pub(super) next: Persistence,
    pub(super) repr: Repr,
    pub(super) framing: ResponseFraming,
    /// The body has no end of its own (an event stream): it ends at shutdown.
    pub(super) endless: bool,
}

/// Buffers a response's head in `wbuf`, and its body (the error page for a bodiless
/// error) when it fits; logs it; returns whether the connection stays open, or the
/// body still to send. With `closing` (shutdown has begun) the answer announces the
/// close. `server` gives the log and the fields every answer carries.
pub(super) fn buffer(
    wbuf: &mut BytesMut,
    mut res: Response,
    terms: &mut Terms,
    closing: bool,
    server: &Fixed<'_>,
) -> Result<Persistence, Unsent> {
    let log = server.log;
    invoke::fill_error_body(&mut res, terms.accept.as_ref());
    compress::compress(
        &mut res,
        terms.accept_encoding.as_ref(),
        terms.head_only,
        server.compression,
    );
    let (parts, body) = res.into_parts();
    let endless = body.endless;
    let framing = ResponseFraming::choose(parts.status, body.exact_len(), terms.version);
    let keep_alive = encode::head(
        wbuf,
        parts.status,
        &parts.headers,
        framing,
        terms.keep_alive && !closing,
        terms.version,
        Added {
            fields: server.fields,
            id: terms.id.as_ref().map(RequestId::as_bytes),
        },
    );
    if let (Some(log), Some(line)) = (log, terms.line.take()) {
        let bytes = match framing {
            ResponseFraming::Length(n) if !terms.head_only => Some(n),
            _ => None,
        };
        log.record(*line, parts.status.as_u16(), bytes);
    }
    terms.count(server.meter, parts.status.as_u16());
    terms.span.close(parts.status.as_u16(), server.app);
    crate::http::spare::keep(parts.headers);
    let next = if keep_alive {
        Persistence::KeepAlive
    } else {
        Persistence::Close
    };
    if terms.head_only || framing == ResponseFraming::None {
        return Ok(next);
    }
    match body.repr {
        Repr::Full(bytes) if bytes.len() <= COPY_LIMIT => {
            wbuf.extend_from_slice(&bytes);
            Ok(next)
        }
        repr => Err(Unsent {
            next,
            repr,
            framing,
            endless,
        }),
    }
}
