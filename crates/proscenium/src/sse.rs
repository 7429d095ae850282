//! Server-sent events (`text/event-stream`, the HTML standard's §9.2): a response that
//! streams [`Event`]s for as long as the client stays, for clients that cannot use a
//! WebSocket. A browser's `EventSource` reconnects by itself after a drop and sends
//! the last id it saw as `Last-Event-ID` ([`LastEventId`]), so a feed that keeps
//! recent events — a [`Hub`](crate::hub::Hub)'s history — can resume where the client
//! left off, on this replica or another. A comment every 15 s (by default) keeps
//! proxies from taking a quiet stream for a dead one; when the server's shutdown
//! begins, the stream ends and the client reconnects elsewhere.
//!
//! # Example
//!
//! ```
//! use std::time::Duration;
//! use proscenium::App;
//! use proscenium::sse::{Event, Sse};
//!
//! // A clock: one event a second, numbered, for as long as the client listens.
//! let app = App::new().get("/clock", || async {
//!     let ticks = futures_util::stream::unfold(0u64, |n| async move {
//!         tokio::time::sleep(Duration::from_secs(1)).await;
//!         Some((Event::data(format!("tick {n}")).id(n.to_string()), n + 1))
//!     });
//!     Sse::new(ticks)
//! });
//! ```

use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::{BufMut as _, Bytes, BytesMut};
use futures_util::{Stream, StreamExt as _};
use http::{HeaderValue, header};
use tokio::time::{Instant, Sleep};

use crate::app::{FromRequestHead, IntoResponse};
use crate::http::{Body, Request, Response};

/// How often a quiet stream gets a comment, by default.
const KEEP_ALIVE: Duration = Duration::from_secs(15);

/// One event: its `data`, and optionally an `id`, an `event` name, a `retry` delay
/// for the client's reconnection, or a comment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Event {
    id: Option<String>,
    event: Option<String>,
    data: Option<String>,
    retry: Option<Duration>,
    comment: Option<String>,
}

impl Event {
    /// An event carrying `data`; each of its lines becomes a `data` line, and the
    /// client joins them again with line feeds.
    pub fn data(data: impl Into<String>) -> Self {
        Self {
            data: Some(data.into()),
            ..Self::default()
        }
    }

    /// A comment, which clients ignore: what keeps a quiet stream alive.
    pub fn comment(text: impl Into<String>) -> Self {
        Self {
            comment: Some(text.into()),
            ..Self::default()
        }
    }

    /// Sets the id the client sends back as `Last-Event-ID` when it reconnects (line
    /// breaks and NUL, which it may not hold, are left out).
    #[must_use]
    pub fn id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(one_line(id.into()).replace('\0', ""));
        self
    }

    /// Sets the event's name (`addEventListener(name, ...)` in a browser; unnamed
    /// events are `message`); line breaks are left out.
    #[must_use]
    pub fn event(mut self, name: impl Into<String>) -> Self {
        self.event = Some(one_line(name.into()));
        self
    }

    /// Sets how long the client waits before reconnecting after a drop.
    #[must_use]
    pub fn retry(mut self, delay: Duration) -> Self {
        self.retry = Some(delay);
        self
    }

    /// The event on the wire: its fields, one a line, and a blank line.
    pub(crate) fn encode(&self) -> Bytes {
        let mut out = BytesMut::new();
        // A comment is a line starting with a colon: one with no name, never empty.
        let mut field = |name: &str, value: &str| {
            out.put_slice(name.as_bytes());
            if name.is_empty() {
                out.put_u8(b':');
            }
            if !value.is_empty() {
                out.put_slice(if name.is_empty() { b" " } else { b": " });
                out.put_slice(value.as_bytes());
            }
            out.put_u8(b'\n');
        };
        if let Some(comment) = &self.comment {
            for line in lines(comment) {
                field("", line);
            }
        }
        if let Some(id) = &self.id {
            field("id", id);
        }
        if let Some(event) = &self.event {
            field("event", event);
        }
        if let Some(retry) = self.retry {
            field("retry", &retry.as_millis().to_string());
        }
        if let Some(data) = &self.data {
            for line in lines(data) {
                field("data", line);
            }
        }
        out.put_u8(b'\n');
        out.freeze()
    }
}

/// The lines of `text`, broken at CRLF, CR or LF as the event stream format breaks
/// them.
fn lines(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let (mut lines, mut start, mut at) = (Vec::new(), 0, 0);
    while at < bytes.len() {
        let width = match (bytes[at], bytes.get(at + 1)) {
            (b'\r', Some(b'\n')) => 2,
            (b'\r' | b'\n', _) => 1,
            _ => {
                at += 1;
                continue;
            }
        };
        lines.push(&text[start..at]);
        at += width;
        start = at;
    }
    lines.push(&text[start..]);
    lines
}

/// `text` without line breaks.
fn one_line(text: String) -> String {
    if text.contains(['\r', '\n']) {
        text.replace(['\r', '\n'], "")
    } else {
        text
    }
}

/// An event stream response: `200`, `text/event-stream`, never cached, never
/// buffered by a proxy, ended when the stream ends, the client leaves or the
/// server's shutdown begins.
pub struct Sse {
    events: Pin<Box<dyn Stream<Item = Bytes> + Send>>,
    keep_alive: Option<Duration>,
}

impl Sse {
    /// A response streaming `events`.
    pub fn new<S>(events: S) -> Self
    where
        S: Stream<Item = Event> + Send + 'static,
    {
        Self::encoded(events.map(|event| event.encode()))
    }

    /// A response streaming events already on the wire's form (a hub's posts, each
    /// encoded once for all its subscribers).
    pub(crate) fn encoded<S>(events: S) -> Self
    where
        S: Stream<Item = Bytes> + Send + 'static,
    {
        Self {
            events: Box::pin(events),
            keep_alive: Some(KEEP_ALIVE),
        }
    }

    /// Sets how long the stream may be quiet before a comment is sent (default 15 s);
    /// `None` sends none.
    #[must_use]
    pub fn keep_alive(mut self, every: Option<Duration>) -> Self {
        self.keep_alive = every;
        self
    }
}

impl std::fmt::Debug for Sse {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sse")
            .field("keep_alive", &self.keep_alive)
            .finish_non_exhaustive()
    }
}

impl IntoResponse for Sse {
    fn into_response(self) -> Response {
        let body = KeepAlive {
            events: self.events,
            every: self.keep_alive,
            timer: self
                .keep_alive
                .map(|every| Box::pin(tokio::time::sleep(every))),
        };
        let mut res =
            Response::new(Body::from_stream(body.map(Ok::<_, std::convert::Infallible>)).endless());
        let headers = res.headers_mut();
        headers.insert(
            header::CONTENT_TYPE,
            HeaderValue::from_static("text/event-stream"),
        );
        headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
        // nginx, in front, would otherwise hold events back to fill its buffer.
        headers.insert("x-accel-buffering", HeaderValue::from_static("no"));
        res
    }
}

/// The events, with a comment whenever they are quiet for `every`; the timer is
/// re-armed when it fires or an event goes out, never created per event.
struct KeepAlive {
    events: Pin<Box<dyn Stream<Item = Bytes> + Send>>,
    every: Option<Duration>,
    timer: Option<Pin<Box<Sleep>>>,
}

impl Stream for KeepAlive {
    type Item = Bytes;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Bytes>> {
        let this = &mut *self;
        if let Poll::Ready(event) = this.events.as_mut().poll_next(cx) {
            if let (Some(timer), Some(every)) = (&mut this.timer, this.every) {
                timer.as_mut().reset(Instant::now() + every);
            }
            return Poll::Ready(event);
        }
        if let (Some(timer), Some(every)) = (&mut this.timer, this.every) {
            if timer.as_mut().poll(cx).is_ready() {
                timer.as_mut().reset(Instant::now() + every);
                return Poll::Ready(Some(Bytes::from_static(b":\n\n")));
            }
        }
        Poll::Pending
    }
}

/// The request's `Last-Event-ID`: the id of the last event a reconnecting client
/// saw, if it saw one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LastEventId(pub Option<String>);

impl FromRequestHead for LastEventId {
    type Rejection = std::convert::Infallible;

    fn from_request_head(req: &Request) -> Result<Self, Self::Rejection> {
        let id = req
            .headers()
            .get("last-event-id")
            .and_then(|value| value.to_str().ok())
            .map(str::to_owned);
        Ok(Self(id))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn events_are_written_field_by_field_one_data_line_each_line() {
        let event = Event::data("first\nsecond\r\nthird\rfourth")
            .id("7")
            .event("like")
            .retry(Duration::from_millis(1500));
        assert_eq!(
            event.encode(),
            "id: 7\nevent: like\nretry: 1500\ndata: first\ndata: second\ndata: third\ndata: fourth\n\n"
        );
        assert_eq!(Event::data("").encode(), "data\n\n");
        assert_eq!(Event::comment("hi\n").encode(), ": hi\n:\n\n");
        assert_eq!(lines("a\r\n\r\nb\rc\n"), ["a", "", "b", "c", ""]);
        assert_eq!(Event::data("x").id("a\nb").encode(), "id: ab\ndata: x\n\n");
    }
}
