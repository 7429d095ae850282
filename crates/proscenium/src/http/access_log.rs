//! The access log, in Combined Log Format; lines go to a writer thread so no loop ever
//! waits on the disk or the terminal.
//!
//! The connection writes a line where it encodes an answer, so every answer is logged:
//! the app's, and those the server gives on its own — refusals (400, 408, 413, 414,
//! 431, 501, 505) and overload 503s. What the request line needs is taken from the
//! request before the app sees it (`-` where no request was parsed). `%b` is the size
//! of the body sent, error pages included (`-` for none, or one whose length is not
//! known before it is sent). A request's id (`[request_id]`, on by default) ends the
//! line, quoted, as nginx's `"$request_id"` would.
//!
//! SIGUSR1 reopens a log file ([`reopen_access_logs`]): after logrotate renames it,
//! the lines written before stay in the renamed file and the next ones go to a new file
//! at the configured path. The writer looks at least every [`REOPEN_CHECK`], so the new
//! file appears soon after the signal, with or without traffic.

use std::io::Write;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crossbeam_channel::{RecvTimeoutError, Sender, TrySendError};
use http::header;
use time::OffsetDateTime;

use crate::http::{Request, RequestId};
use crate::rt;

/// Lines that may wait for the writer before new ones are counted as dropped.
const QUEUE: usize = 64 * 1024;
/// How often an idle writer looks whether it was asked to reopen its file.
const REOPEN_CHECK: Duration = Duration::from_millis(100);

/// Counts the requests to reopen log files; each writer reopens when it sees a new count.
static REOPENS: AtomicU64 = AtomicU64::new(0);

/// Has every access log writer reopen its file (SIGUSR1, after logrotate renamed it).
pub(crate) fn reopen_access_logs() {
    REOPENS.fetch_add(1, Ordering::Relaxed);
}

/// The access log of a server; each loop holds a copy (the sender of its lines).
#[derive(Debug, Clone)]
pub(crate) struct AccessLog {
    lines: Sender<String>,
    debug: bool,
}

impl AccessLog {
    /// Opens the log at `target` (`-` for stdout) and starts its writer thread.
    pub(crate) fn open(target: &Path, debug: bool) -> std::io::Result<Self> {
        let mut out = Output::open(target)?;
        let (lines, rx) = crossbeam_channel::bounded::<String>(QUEUE);
        std::thread::Builder::new()
            .name("proscenium-log".to_owned())
            .spawn(move || {
                loop {
                    match rx.recv_timeout(REOPEN_CHECK) {
                        Ok(line) => {
                            out.reopen_if_asked();
                            let _ = out.writer.write_all(line.as_bytes());
                            // Write in batches: flush only once the queue is empty.
                            if rx.is_empty() {
                                let _ = out.writer.flush();
                            }
                        }
                        Err(RecvTimeoutError::Timeout) => out.reopen_if_asked(),
                        Err(RecvTimeoutError::Disconnected) => break,
                    }
                }
            })?;
        Ok(Self { lines, debug })
    }
}

/// Where a writer writes: stdout, or a file it can reopen.
struct Output {
    writer: std::io::BufWriter<Box<dyn Write + Send>>,
    /// The file's path; `None` for stdout.
    path: Option<PathBuf>,
    /// The reopen count this writer has acted on.
    reopens: u64,
}

impl Output {
    fn open(target: &Path) -> std::io::Result<Self> {
        let path = (target != Path::new("-")).then(|| target.to_owned());
        let out: Box<dyn Write + Send> = match &path {
            Some(path) => Box::new(append_to(path)?),
            None => Box::new(std::io::stdout()),
        };
        Ok(Self {
            writer: std::io::BufWriter::new(out),
            path,
            reopens: REOPENS.load(Ordering::Relaxed),
        })
    }

    /// Reopens the file when a reopen was asked since the last; one that cannot be
    /// opened is logged, and the lines go on to the file open before.
    fn reopen_if_asked(&mut self) {
        let asked = REOPENS.load(Ordering::Relaxed);
        let Some(path) = self.path.as_ref().filter(|_| asked != self.reopens) else {
            return;
        };
        self.reopens = asked;
        let _ = self.writer.flush();
        match append_to(path) {
            Ok(file) => self.writer = std::io::BufWriter::new(Box::new(file)),
            Err(e) => tracing::error!("cannot reopen the access log {}: {e}", path.display()),
        }
    }
}

fn append_to(path: &Path) -> std::io::Result<std::fs::File> {
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
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
    /// The request's id, when requests get ids.
    pub(crate) id: Option<RequestId>,
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
            id: None,
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
            id: req.id().cloned(),
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
        if let Some(id) = &self.id {
            line.push_str(&format!(" \"{id}\""));
        }
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
    fn ends_the_line_with_the_request_id() {
        let mut req = Request::from(http::Request::new(bytes::Bytes::new()));
        let id = RequestId::make();
        req.set_id(id.clone());
        let line = LineHead::of(&req).finish(204, None);
        assert!(
            line.ends_with(&format!(" 204 - \"-\" \"-\" \"{id}\"\n")),
            "{line}"
        );
    }

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
