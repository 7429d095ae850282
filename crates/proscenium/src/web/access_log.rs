//! The access log, in Combined Log Format, as a middleware; lines go to a writer
//! thread so no loop ever waits on the disk or the terminal.
//!
//! `%b` is the size of the body the application produced (`-` for none); the server's
//! own error pages are not counted.

use std::io::Write;
use std::path::Path;
use std::time::Instant;

use crossbeam_channel::{Sender, TrySendError};
use http::header;
use time::OffsetDateTime;

use crate::app::{Middleware, Next, Reply};
use crate::http::Request;
use crate::rt;

/// Lines that may wait for the writer before new ones are counted as dropped.
const QUEUE: usize = 64 * 1024;

/// The access-log middleware.
#[derive(Debug)]
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

fn emit(lines: &Sender<String>, line: String) {
    if let Err(TrySendError::Full(_)) = lines.try_send(line) {
        tracing::warn!("access log writer is behind; a line was dropped");
    }
}

impl Middleware for AccessLog {
    fn call(&self, req: Request, next: Next<'_>) -> Reply {
        let started = Instant::now();
        let head = LineHead::of(&req);
        let lines = self.lines.clone();
        let debug = self.debug;
        next.run(req).map(move |res| {
            let bytes = res.body().exact_len().filter(|&n| n > 0);
            emit(
                &lines,
                head.finish(
                    res.status().as_u16(),
                    bytes,
                    debug.then(|| started.elapsed()),
                ),
            );
            res
        })
    }
}

/// What the log line needs from the request, taken before the request moves on.
struct LineHead {
    peer: String,
    request_line: String,
    referer: String,
    user_agent: String,
    loop_id: Option<usize>,
}

impl LineHead {
    fn of(req: &Request) -> Self {
        let header = |name| {
            req.headers()
                .get(name)
                .and_then(|v: &http::HeaderValue| v.to_str().ok())
                .map_or_else(|| "-".to_owned(), escape)
        };
        Self {
            peer: req
                .peer_addr()
                .map_or_else(|| "-".to_owned(), |a| a.ip().to_string()),
            request_line: escape(&format!(
                "{} {} {:?}",
                req.method(),
                req.uri(),
                req.version()
            )),
            referer: header(header::REFERER),
            user_agent: header(header::USER_AGENT),
            loop_id: rt::current_loop(),
        }
    }

    fn finish(
        self,
        status: u16,
        bytes: Option<u64>,
        elapsed: Option<std::time::Duration>,
    ) -> String {
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
        if let Some(elapsed) = elapsed {
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
        let line = LineHead::of(&req).finish(200, Some(13), None);
        assert!(line.starts_with("- - - ["), "{line}");
        assert!(
            line.ends_with("] \"GET /a?b HTTP/1.1\" 200 13 \"-\" \"curl/8 \\\"x\\\"\"\n"),
            "{line}"
        );
    }
}
