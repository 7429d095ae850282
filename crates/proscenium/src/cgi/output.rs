//! A script's output read as a CGI response (RFC 3875 §6): its header section —
//! `Status`, `Location`, `Content-Type` and other fields, lines ending in LF or CRLF —
//! then the body, streamed from the script's standard output as it comes.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use http::{HeaderName, HeaderValue, StatusCode, header};
use http_body::{Frame, SizeHint};
use tokio::process::ChildStdout;
use tokio::time::Sleep;

use super::run::{Ended, Process};

/// The longest header section a script may write.
pub(super) const MAX_HEAD: usize = 64 * 1024;

/// The most header fields a script may write.
const MAX_FIELDS: usize = 100;

/// How much of the output one read takes at most.
const READ_ROOM: usize = 64 * 1024;

/// Fields a script may not set: the connection's, which the server decides.
const HOP_BY_HOP: [HeaderName; 6] = [
    header::CONNECTION,
    header::TRANSFER_ENCODING,
    header::TE,
    header::TRAILER,
    header::UPGRADE,
    HeaderName::from_static("keep-alive"),
];

/// A script's header section, read.
#[derive(Debug, Default)]
pub(super) struct Head {
    /// `Status`, if given.
    pub(super) status: Option<StatusCode>,
    /// `Location`, if given.
    pub(super) location: Option<String>,
    /// `Content-Length`, if given.
    pub(super) length: Option<u64>,
    /// Every other field, `Content-Type` among them.
    pub(super) fields: Vec<(HeaderName, HeaderValue)>,
}

impl Head {
    /// `Location: /path` without another status: the server answers as if that path
    /// had been asked for (RFC 3875 §6.2.2).
    pub(super) fn local_redirect(&self) -> Option<&str> {
        let location = self.location.as_deref()?;
        let plain = self.status.is_none_or(|status| status == StatusCode::OK);
        (location.starts_with('/') && plain).then_some(location)
    }
}

/// Whether `output` opens with a header field line (`Name: value`), once its first
/// line is whole — or the output `ended`, or [`MAX_HEAD`] bytes came without a line
/// end: then all of it is the line. `None` until then.
pub(super) fn opens_with_field(output: &[u8], ended: bool) -> Option<bool> {
    let line = match output.iter().position(|&b| b == b'\n') {
        Some(end) => &output[..end],
        None if ended || output.len() >= MAX_HEAD => output,
        None => return None,
    };
    let name = line
        .split(|&b| b == b':')
        .next()
        .filter(|_| line.contains(&b':'));
    Some(name.is_some_and(|name| HeaderName::from_bytes(name).is_ok()))
}

impl Head {
    /// The head of a page's output that has none (Yarn's convention): HTML when it
    /// opens with `<`, else plain text.
    pub(super) fn of_bare(output: &[u8]) -> Self {
        let html = output.trim_ascii_start().starts_with(b"<");
        let kind = if html {
            "text/html; charset=utf-8"
        } else {
            "text/plain; charset=utf-8"
        };
        Self {
            fields: vec![(header::CONTENT_TYPE, HeaderValue::from_static(kind))],
            ..Self::default()
        }
    }
}

/// Reads a header section from the start of `output`: the head and the bytes it
/// took, `None` while it is incomplete, or why it is not a CGI response.
pub(super) fn parse_head(output: &[u8]) -> Result<Option<(Head, usize)>, String> {
    let mut slots = [httparse::EMPTY_HEADER; MAX_FIELDS];
    let (used, fields) = match httparse::parse_headers(output, &mut slots) {
        Ok(httparse::Status::Complete(parsed)) => parsed,
        Ok(httparse::Status::Partial) => return Ok(None),
        Err(httparse::Error::TooManyHeaders) => {
            return Err(format!("more than {MAX_FIELDS} header fields"));
        }
        Err(e) => return Err(format!("not a CGI header section ({e})")),
    };
    let mut head = Head::default();
    for field in fields.iter() {
        let name = HeaderName::from_bytes(field.name.as_bytes())
            .map_err(|_| format!("a bad field name {:?}", field.name))?;
        let text = || {
            std::str::from_utf8(field.value)
                .map(str::trim)
                .map_err(|_| format!("a {name} that is not text"))
        };
        if name.as_str() == "status" {
            head.status = Some(status(text()?)?);
        } else if name == header::LOCATION {
            head.location = Some(text()?.to_owned());
        } else if name == header::CONTENT_LENGTH {
            let length = content_length(text()?)?;
            if head.length.is_some_and(|first| first != length) {
                return Err("two different Content-Lengths".to_owned());
            }
            head.length = Some(length);
        } else if !HOP_BY_HOP.contains(&name) {
            let value = HeaderValue::from_bytes(field.value)
                .map_err(|_| format!("a bad value of {name}"))?;
            head.fields.push((name, value));
        }
    }
    let typed = head.fields.iter().any(|(n, _)| n == header::CONTENT_TYPE);
    if !typed && head.location.is_none() && head.status.is_none() {
        return Err("no Content-Type, Location or Status".to_owned());
    }
    Ok(Some((head, used)))
}

/// `Status: 404 Not Found`: the code (the reason phrase is the server's). A 1xx is
/// refused: it is never a final answer (RFC 9110 §15.2), and sent as one it would
/// leave the client waiting for another, reading the next answer as this one's.
fn status(text: &str) -> Result<StatusCode, String> {
    let code = text.split_whitespace().next().unwrap_or("");
    if code.len() != 3 {
        return Err(format!("a bad Status {text:?}"));
    }
    let code =
        StatusCode::from_bytes(code.as_bytes()).map_err(|_| format!("a bad Status {text:?}"))?;
    if code.is_informational() {
        return Err(format!("a 1xx Status {text:?} as its final answer"));
    }
    Ok(code)
}

/// `Content-Length: 42`: digits only (RFC 9110 §8.6), so `+42` or `-1` is refused.
fn content_length(text: &str) -> Result<u64, String> {
    match text.parse() {
        Ok(length) if text.bytes().all(|b| b.is_ascii_digit()) => Ok(length),
        _ => Err(format!("a bad Content-Length {text:?}")),
    }
}

/// A script's body: what its header section was read with, then its standard
/// output as it comes, until it ends or the script's time is up. At its end the
/// script is finished (its group killed and waited for) before the body ends, so its
/// slot is free again by the time the client has the whole answer.
pub(super) struct Output {
    first: Option<Bytes>,
    stdout: ChildStdout,
    process: Option<Process>,
    finishing: Option<Finishing>,
    deadline: Pin<Box<Sleep>>,
    length: Option<u64>,
}

/// A script being finished: its slot comes back when it has been waited for.
type Finishing = Pin<Box<dyn Future<Output = Option<Ended>> + Send>>;

impl Output {
    pub(super) fn new(
        first: Bytes,
        stdout: ChildStdout,
        process: Process,
        deadline: Pin<Box<Sleep>>,
        length: Option<u64>,
    ) -> Self {
        Self {
            first: (!first.is_empty()).then_some(first),
            stdout,
            process: Some(process),
            finishing: None,
            deadline,
            length,
        }
    }

    /// Finishes the script whose output ended; ready when it has been waited for.
    fn poll_finish(&mut self, cx: &mut Context<'_>) -> Poll<()> {
        if let Some(process) = self.process.take() {
            self.finishing = Some(Box::pin(process.finish("after its output")));
        }
        match self.finishing.as_mut() {
            Some(finishing) => finishing.as_mut().poll(cx).map(|_slot| {
                self.finishing = None;
            }),
            None => Poll::Ready(()),
        }
    }
}

impl http_body::Body for Output {
    type Data = Bytes;
    type Error = std::io::Error;

    fn poll_frame(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, std::io::Error>>> {
        let this = &mut *self;
        if let Some(first) = this.first.take() {
            return Poll::Ready(Some(Ok(Frame::data(first))));
        }
        // Finishing too is bounded by the deadline: dropped then, the script is
        // killed (kill_on_drop) and its slot given back.
        if this.deadline.as_mut().poll(cx).is_ready() {
            let error = match this.process.as_mut() {
                Some(process) => process.timed_out(),
                None => std::io::Error::other("the script was not done in time"),
            };
            return Poll::Ready(Some(Err(error)));
        }
        if this.finishing.is_some() {
            return this.poll_finish(cx).map(|()| None);
        }
        let mut chunk = BytesMut::with_capacity(READ_ROOM);
        match tokio_util::io::poll_read_buf(Pin::new(&mut this.stdout), cx, &mut chunk) {
            Poll::Pending => Poll::Pending,
            Poll::Ready(Err(e)) => Poll::Ready(Some(Err(e))),
            Poll::Ready(Ok(0)) => this.poll_finish(cx).map(|()| None),
            Poll::Ready(Ok(_)) => Poll::Ready(Some(Ok(Frame::data(chunk.freeze())))),
        }
    }

    fn size_hint(&self) -> SizeHint {
        self.length
            .map_or_else(SizeHint::default, SizeHint::with_exact)
    }
}
