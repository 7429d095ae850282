//! One HTTP/2 stream: its request gathered (the body within the same limits and room
//! as HTTP/1.1's) or, for a route that streams its body, handed on with the body fed to
//! it as it arrives; the app called through `http::invoke`, the answer sent (`send`)
//! and logged.

use std::net::SocketAddr;

use bytes::Bytes;
use h2::RecvStream;
use h2::server::SendResponse;
use http::{HeaderValue, Method, StatusCode, header};

use super::send;
use crate::http::access_log::LineHead;
use crate::http::h1::Http1Loop;
use crate::http::intake::{Arriving, Feed, Sink, arriving};
use crate::http::invoke;
use crate::http::meter::Mark;
use crate::http::request_id::RequestId;
use crate::http::response::{error, unavailable};
use crate::http::trace::RequestSpan;
use crate::http::{Request, Response, Soon};
use crate::rt::watchdog;

/// What the access log notes of a client that reset its stream before its answer.
const CLIENT_GONE: u16 = 499;

/// How to answer the stream's request, noted before the app takes it.
pub(super) struct Terms {
    pub(super) head_only: bool,
    pub(super) accept: Option<HeaderValue>,
    /// The request's `Accept-Encoding`, for compression (`None` with a `Range`).
    pub(super) accept_encoding: Option<HeaderValue>,
    pub(super) line: Option<Box<LineHead>>,
    /// What the request counters need of it: only with counters.
    pub(super) mark: Option<Mark>,
    /// The request's id, when requests get ids.
    pub(super) id: Option<RequestId>,
    /// The request's span, when one is made.
    pub(super) span: RequestSpan,
}

impl Terms {
    /// Counts the answer with `status` in this thread's counters, once (the route is
    /// the one this thread noted last).
    pub(super) fn count(&mut self, shared: &Http1Loop, status: u16) {
        if let (Some(mark), Some(meter)) = (self.mark.take(), shared.meter()) {
            meter.record(mark, status);
        }
    }
}

/// Serves one stream: request in, answer out.
pub(super) async fn serve(
    req: http::Request<RecvStream>,
    mut respond: SendResponse<Bytes>,
    peer: SocketAddr,
    shared: &Http1Loop,
) {
    let (mut parts, body) = req.into_parts();
    // HTTP/2 carries the host in `:authority` and the target whole: an app sees them
    // as over HTTP/1.1, the host in `Host` and the target in origin form.
    if let Some(authority) = parts.uri.authority() {
        if !parts.headers.contains_key(header::HOST)
            && let Ok(host) = HeaderValue::from_str(authority.as_str())
        {
            parts.headers.insert(header::HOST, host);
        }
        if let Some(target) = parts.uri.path_and_query() {
            parts.uri = http::Uri::from(target.clone());
        }
    }
    let mut terms = Terms {
        head_only: parts.method == Method::HEAD,
        accept: parts.headers.get(header::ACCEPT).cloned(),
        accept_encoding: match parts.headers.contains_key(header::RANGE) {
            true => None,
            false => parts.headers.get(header::ACCEPT_ENCODING).cloned(),
        },
        line: None,
        mark: shared.meter().map(|_| Mark::now(&parts.method)),
        id: None,
        span: RequestSpan::default(),
    };
    let announced = parts
        .headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok()?.parse::<u64>().ok());
    let mut req = Request::new(parts, Bytes::new(), Some(peer));
    let mut streamed = None;
    let gathered = if !body.is_end_stream() && shared.app.streams(&req) {
        let (feed, taker) = arriving();
        req.extensions_mut().insert(Arriving::new(taker));
        streamed = Some((body, feed));
        match announced {
            Some(n) if n > shared.limits.max_body => Err(too_large()),
            _ => Ok(Bytes::new()),
        }
    } else {
        gather(body, announced, shared).await
    };
    terms.id = shared
        .ids
        .as_ref()
        .map(|ids| ids.assign(&mut req, peer.ip()));
    terms.line = shared.log.as_ref().map(|log| log.note(peer, Some(&req)));
    let res = match gathered {
        Ok(body) => {
            req.set_body(body);
            let max_inflight = shared.limits.max_inflight;
            let called = terms
                .span
                .in_scope(|| invoke::call(&shared.app, req, max_inflight));
            match called {
                Soon::Ready(res) => res,
                Soon::Later(guarded) => {
                    // A client that resets the stream meanwhile takes its request
                    // with it: the handler is dropped, as it is when the body it
                    // streams is refused.
                    let route = guarded.route();
                    tokio::select! {
                        res = terms.span.instrument(guarded.finish(&*shared.app)) => res,
                        _ = std::future::poll_fn(|cx| respond.poll_reset(cx)) => {
                            return log_gone(shared, &mut terms, route);
                        }
                        refused = feed(streamed, shared) => match refused {
                            Refused::Gone => return log_gone(shared, &mut terms, route),
                            Refused::With(res) => {
                                watchdog::set_route(route);
                                res
                            }
                        }
                    }
                }
            }
        }
        Err(Refused::Gone) => return log_gone(shared, &mut terms, watchdog::NO_ROUTE),
        Err(Refused::With(res)) => {
            watchdog::set_route(watchdog::NO_ROUTE);
            res
        }
    };
    send::answer(&mut respond, res, &mut terms, shared).await;
}

fn log_gone(shared: &Http1Loop, terms: &mut Terms, route: u32) {
    if let (Some(log), Some(line)) = (&shared.log, terms.line.take()) {
        log.record(*line, CLIENT_GONE, Some(0));
    }
    watchdog::set_route(route);
    terms.count(shared, CLIENT_GONE);
    terms.span.close(CLIENT_GONE, &*shared.app);
}

/// Why a request body was not gathered.
enum Refused {
    /// The client reset the stream, or the connection failed.
    Gone,
    /// The answer to give instead of the app's.
    With(Response),
}

fn too_large() -> Refused {
    Refused::With(error(
        StatusCode::PAYLOAD_TOO_LARGE,
        "request body too large",
    ))
}

fn timed_out() -> Refused {
    Refused::With(error(
        StatusCode::REQUEST_TIMEOUT,
        "the request body stopped arriving",
    ))
}

/// Passes a streamed body on to the app as it takes it: 413 past `limits.max_body`,
/// 408 when the client stops sending for the body timeout. Once the body is whole (or
/// with none to stream) it waits for ever: the answer or a reset ends the wait.
async fn feed(streamed: Option<(RecvStream, Feed)>, shared: &Http1Loop) -> Refused {
    let Some((mut body, feed)) = streamed else {
        return std::future::pending().await;
    };
    let mut received = 0u64;
    loop {
        std::future::poll_fn(|cx| feed.poll_room(cx, false)).await;
        let chunk = match tokio::time::timeout(shared.timeouts.body, body.data()).await {
            Err(_) => return timed_out(),
            Ok(None) => break,
            Ok(Some(Err(_))) => return Refused::Gone,
            Ok(Some(Ok(chunk))) => chunk,
        };
        // The window opens again as the app takes the bytes: the feed holds at most
        // its own window of them.
        let _ = body.flow_control().release_capacity(chunk.len());
        received += chunk.len() as u64;
        if received > shared.limits.max_body {
            return too_large();
        }
        feed.push(chunk);
    }
    feed.finish();
    std::future::pending().await
}

/// Gathers the request body: 413 past `limits.max_body`, 503 when the server's room
/// for bodies is spent, 408 when the client stops sending for the body timeout.
async fn gather(
    mut body: RecvStream,
    announced: Option<u64>,
    shared: &Http1Loop,
) -> Result<Bytes, Refused> {
    let limits = &shared.limits;
    if body.is_end_stream() {
        return Ok(Bytes::new());
    }
    if announced.is_some_and(|n| n > limits.max_body) {
        return Err(too_large());
    }
    let ceiling = usize::try_from(announced.unwrap_or(limits.max_body)).unwrap_or(usize::MAX);
    let mut sink = Sink::new(
        announced.and_then(|n| usize::try_from(n).ok()),
        limits,
        &shared.bodies,
    );
    let no_room = || {
        Refused::With(unavailable(
            "no room for the request body; try again shortly",
        ))
    };
    loop {
        let next = tokio::time::timeout(shared.timeouts.body, body.data()).await;
        let chunk = match next {
            Err(_) => return Err(timed_out()),
            Ok(None) => break,
            Ok(Some(Err(_))) => return Err(Refused::Gone),
            Ok(Some(Ok(chunk))) => chunk,
        };
        // The window opens again as the bytes are taken: the room they take is the
        // server's budget's, not the window's.
        let _ = body.flow_control().release_capacity(chunk.len());
        if (sink.len() + chunk.len()) as u64 > limits.max_body {
            return Err(too_large());
        }
        sink.append(&chunk, ceiling, limits, &shared.bodies)
            .map_err(|_| no_room())?;
    }
    sink.finish(limits).map_err(|_| no_room())
}
