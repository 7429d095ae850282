//! The access log, in Combined Log Format; lines go to a writer thread so no loop ever
//! waits on the disk or the terminal.
//!
//! The connection writes a line where it encodes an answer, so every answer is logged:
//! the app's, and those the server gives on its own — refusals (400, 408, 413, 414,
//! 431, 501, 505) and overload 503s. What the request line needs is taken from the
//! request before the app sees it (`-` where no request was parsed). `%b` is the size
//! of the body sent, error pages included (`-` for none, or one whose length is not
//! known before it is sent).

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::time::Instant;

use crossbeam_channel::{Sender, TrySendError};
use http::header;
use time::OffsetDateTime;

use crate::http::Request;
use crate::rt;

/// Lines that may wait for the writer before new ones are counted as dropped.
const QUEUE: usize = 64 * 1024;

/// The access log of a server; each loop holds a copy (the sender of its lines).
#[derive(Debug, Clone)]
pub(crate) struct AccessLog {
    lines: Sender<String>,
    debug: bool,
}

impl AccessLog {
    /// Opens the log at `target` (`-` for stdout) and starts its writer thread.
    pub(crate) fn open(target: &Path, debug: bool) -> std::io::Result<Self> {
        let out: Box<dyn Write + Send> = if target == Path::new("-") {
            Box::new(std::io::stdout())
        } else {
            Box::new(
                std::fs::OpenOptions::new()
                    .create(true)
                    .append(true)
                    .open(target)?,
            )
        };
        let (lines, rx) = crossbeam_channel::bounded::<String>(QUEUE);
        std::thread::Builder::new()
            .name("proscenium-log".to_owned())
            .spawn(move || {
                let mut out = std::io::BufWriter::new(out);
                while let Ok(line) = rx.recv() {
                    let _ = out.write_all(line.as_bytes());
                    // Write in batches: flush only once the queue is empty.
                    if rx.is_empty() {
                        let _ = out.flush();
                    }
                }
            })?;
        Ok(Self { lines, debug })
    }
}

impl AccessLog {
    /// Notes what the line of `req`, from `peer`, needs (or of a request refused before
    /// it was parsed, with none), before the request moves on.
    pub(crate) fn note(&self, peer: SocketAddr, req: Option<&Request>) -> Box<LineHead> {
        let mut head = req.map_or_else(LineHead::unparsed, LineHead::of);
        head.peer = peer.ip().to_string();
        head.started = self.debug.then(Instant::now);
        Box::new(head)
    }

    /// Writes the line of an answer: its `status` and the size of its body.
    pub(crate) fn record(&self, head: LineHead, status: u16, bytes: Option<u64>) {
        let line = head.finish(status, bytes.filter(|&n| n > 0));
        if let Err(TrySendError::Full(_)) = self.lines.try_send(line) {
            tracing::warn!("access log writer is behind; a line was dropped");
        }
    }
}

/// What the log line needs from the request, taken before the request moves on.
#[derive(Debug)]
pub(crate) struct LineHead {
    peer: String,
    request_line: String,
    referer: String,
    user_agent: String,
    loop_id: Option<usize>,
    /// When the request was taken, for the time to answer it (`debug` only).
    started: Option<Instant>,
}

impl LineHead {
    fn unparsed() -> Self {
        Self {
            peer: "-".to_owned(),
            request_line: "-".to_owned(),
            referer: "-".to_owned(),
            user_agent: "-".to_owned(),
            loop_id: rt::current_loop(),
            started: None,
        }
    }

    fn of(req: &Request) -> Self {
        let header = |name| {
            req.headers()
                .get(name)
                .and_then(|v: &http::HeaderValue| v.to_str().ok())
                .map_or_else(|| "-".to_owned(), escape)
        };
        Self {
            request_line: escape(&format!(
                "{} {} {:?}",
                req.method(),
                req.uri(),
                req.version()
            )),
            referer: header(header::REFERER),
            user_agent: header(header::USER_AGENT),
            ..Self::unparsed()
        }
    }

    fn finish(self, status: u16, bytes: Option<u64>) -> String {
        let now = OffsetDateTime::now_utc();
        let bytes = bytes.map_or_else(|| "-".to_owned(), |n| n.to_string());
        let mut line = format!(
            "{} - - [{:02}/{}/{}:{:02}:{:02}:{:02} +0000] \"{}\" {status} {bytes} \"{}\" \"{}\"",
            self.peer,
            now.day(),
            &format!("{:?}", now.month())[..3],
            now.year(),
            now.hour(),
            now.minute(),
            now.second(),
            self.request_line,
            self.referer,
            self.user_agent,
        );
        if let Some(elapsed) = self.started.map(|started| started.elapsed()) {
            let loop_id = self
                .loop_id
                .map_or_else(|| "-".to_owned(), |id| id.to_string());
            line.push_str(&format!(
                " {:.3}ms loop={loop_id}",
                elapsed.as_secs_f64() * 1000.0
            ));
        }
        line.push('\n');
        line
    }
}

/// Escapes quotes, backslashes and control characters so a line stays one line.
fn escape(s: &str) -> String {
    s.escape_default().to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_a_combined_log_line() {
        let req = Request::from(
            http::Request::builder()
                .uri("/a?b")
                .header("user-agent", "curl/8 \"x\"")
                .body(bytes::Bytes::new())
                .unwrap(),
        );
        let line = LineHead::of(&req).finish(200, Some(13));
        assert!(line.starts_with("- - - ["), "{line}");
        assert!(
            line.ends_with("] \"GET /a?b HTTP/1.1\" 200 13 \"-\" \"curl/8 \\\"x\\\"\"\n"),
            "{line}"
        );
    }
}
