//! Running one script: the process started without a shell, in a process group of
//! its own; the request body fed to it, its standard error logged (within bounds),
//! its header section read by its deadline; and the group killed whenever the script
//! is let go of — its output ended, its time up, its client gone, its output refused
//! — then the script waited for before its slot is given back.

use std::process::Stdio;
use std::time::Duration;

use bytes::{Bytes, BytesMut};
use http::{HeaderValue, StatusCode, header};
use nix::sys::signal::{Signal, killpg};
use nix::unistd::Pid;
use std::os::unix::process::ExitStatusExt as _;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::process::{Child, ChildStderr, ChildStdin, Command};
use tokio::sync::OwnedSemaphorePermit;
use tokio::time::Instant;

use super::locate::Script;
use super::output::{self, Head, Output};
use super::{Inner, env};
use crate::app::error;
use crate::counters::Tally;
use crate::http::{Body, Request, Response};

/// The most of a page's output held until it exits (`held`).
const MAX_HELD: usize = 64 * 1024;

/// The longest line of a script's standard error logged as one message.
const MAX_LOG_LINE: usize = 4096;

/// What running a script came to.
pub(super) enum Outcome {
    Response(Response),
    /// `Location: /path`: the server answers as if that path had been asked for; the
    /// script's slot comes back for it.
    LocalRedirect(String, OwnedSemaphorePermit),
}

/// The user scripts run as.
#[derive(Debug, Clone)]
pub(super) struct User {
    uid: u32,
    gid: u32,
}

impl User {
    /// The user named `name`, if it exists and the server can become it (runs as
    /// root); otherwise says why in the log, and scripts run as the server's user.
    pub(super) fn named(name: &str) -> Option<Self> {
        match nix::unistd::User::from_name(name) {
            Ok(Some(user)) if nix::unistd::geteuid().is_root() => Some(Self {
                uid: user.uid.as_raw(),
                gid: user.gid.as_raw(),
            }),
            Ok(Some(_)) => {
                tracing::warn!(
                    "cgi: user {name}: the server does not run as root; scripts run as its user"
                );
                None
            }
            Ok(None) | Err(_) => {
                tracing::warn!("cgi: user {name}: no such user; scripts run as the server's");
                None
            }
        }
    }
}

/// Runs `script` for `req`, holding `permit` (one of the running scripts' slots)
/// until the script has ended and been waited for.
pub(super) async fn run(
    cgi: &Inner,
    script: &Script,
    req: &Request,
    permit: OwnedSemaphorePermit,
) -> Outcome {
    Tally::CgiRuns.add(1);
    let deadline = Instant::now() + cgi.timeout;
    let mut child = match command(cgi, script, req).spawn() {
        Ok(child) => child,
        Err(e) => {
            tracing::error!("cgi: {}: cannot start: {e}", script.name);
            return bad_gateway("the script could not start");
        }
    };
    if let Some(stdin) = child.stdin.take() {
        tokio::spawn(feed(stdin, req.body().clone()));
    }
    if let Some(stderr) = child.stderr.take() {
        tokio::spawn(log_stderr(stderr, script.name.clone(), cgi.log));
    }
    let mut stdout = child.stdout.take().expect("stdout is piped");
    let mut process = Process {
        running: Some(Running { child, permit }),
        name: script.name.clone(),
        timeout: cgi.timeout,
    };
    // A page run through an interpreter keeps Yarn's conventions (`held`); a program
    // of a CGI directory, RFC 3875's.
    let page = script.interpreter.is_some();
    let mut read = BytesMut::with_capacity(4096);
    let (head, used) = loop {
        if page && output::opens_with_field(&read, false) == Some(false) {
            break (Head::of_bare(&read), 0);
        }
        match output::parse_head(&read) {
            Ok(Some(parsed)) => break parsed,
            Ok(None) if read.len() >= output::MAX_HEAD => {
                return process.refused("its header section is over 64 KiB");
            }
            Ok(None) => {}
            Err(reason) => return process.refused(&format!("it wrote {reason}")),
        }
        match tokio::time::timeout_at(deadline, stdout.read_buf(&mut read)).await {
            Err(_) => return process.out_of_time(),
            Ok(Err(e)) => return process.refused(&format!("its output failed: {e}")),
            Ok(Ok(0)) if read.is_empty() => return process.silent().await,
            Ok(Ok(0)) if page && output::opens_with_field(&read, true) == Some(false) => {
                break (Head::of_bare(&read), 0);
            }
            Ok(Ok(0)) => return process.refused("its output ended inside the header section"),
            Ok(Ok(_)) => {}
        }
    };
    let first = read.split_off(used);
    if let Some(location) = head.local_redirect() {
        let location = location.to_owned();
        return match process.finish("after its local redirect").await {
            Some(ended) => Outcome::LocalRedirect(location, ended.permit),
            None => bad_gateway("the script could not be waited for"),
        };
    }
    if page && head.status.is_none() {
        return held(head, first, stdout, process, deadline).await;
    }
    streamed(head, first.freeze(), stdout, process, deadline)
}

/// The answer of a page that wrote no `Status` (Yarn's convention): its output held
/// until it exits, up to [`MAX_HELD`] bytes — exited non-zero by then, it gets 500;
/// past them its answer streams as any script's, its status sent, and a failure
/// after is only logged.
async fn held(
    head: Head,
    mut body: BytesMut,
    mut stdout: tokio::process::ChildStdout,
    mut process: Process,
    deadline: Instant,
) -> Outcome {
    while body.len() <= MAX_HELD {
        match tokio::time::timeout_at(deadline, stdout.read_buf(&mut body)).await {
            Err(_) => return process.out_of_time(),
            Ok(Err(e)) => return process.refused(&format!("its output failed: {e}")),
            Ok(Ok(0)) => {
                let name = process.name.clone();
                return match process.finish("after its output").await {
                    Some(Ended { failed: false, .. }) => {
                        // Held to a `Content-Length` as a streamed body is: what
                        // is written past it is cut.
                        if let Some(length) = head.length.and_then(|n| usize::try_from(n).ok()) {
                            body.truncate(length);
                        }
                        answer(head, Body::from(body.freeze()))
                    }
                    Some(Ended { failed: true, .. }) => {
                        Tally::CgiFailed.add(1);
                        tracing::error!("cgi: {name}: failed after writing its answer: 500");
                        Outcome::Response(error(
                            StatusCode::INTERNAL_SERVER_ERROR,
                            "the script failed",
                        ))
                    }
                    None => bad_gateway("the script could not be waited for"),
                };
            }
            Ok(Ok(_)) => {}
        }
    }
    streamed(head, body.freeze(), stdout, process, deadline)
}

/// The command for `script`: its interpreter with its path, or itself; in its
/// directory, in a process group of its own, with the environment of `env`.
fn command(cgi: &Inner, script: &Script, req: &Request) -> Command {
    let mut command = match &script.interpreter {
        Some(argv) => {
            let mut command = Command::new(&argv[0]);
            command.args(&argv[1..]).arg(&script.file);
            command
        }
        None => Command::new(&script.file),
    };
    command
        .env_clear()
        .envs(env::build(cgi, script, req))
        .current_dir(script.file.parent().unwrap_or(&cgi.root))
        .process_group(0)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if let Some(user) = &cgi.user {
        // As root, std drops the supplementary groups too when it sets the uid.
        command.uid(user.uid).gid(user.gid);
    }
    command
}

/// The response a script's `head` makes, its body `first` and then the rest of its
/// output as it comes.
fn streamed(
    head: Head,
    first: Bytes,
    stdout: tokio::process::ChildStdout,
    process: Process,
    deadline: Instant,
) -> Outcome {
    let length = head.length;
    let body = Output::new(
        first,
        stdout,
        process,
        Box::pin(tokio::time::sleep_until(deadline)),
        length,
    );
    answer(head, Body::from_http_body(body))
}

/// The response a script's `head` makes with `body`.
fn answer(head: Head, body: Body) -> Outcome {
    let status = head.status.unwrap_or(StatusCode::OK);
    let mut res = Response::new(body);
    match &head.location {
        // A client redirect (RFC 3875 §6.2.3, §6.2.4): 302 unless the script said.
        Some(location) => {
            *res.status_mut() = head.status.unwrap_or(StatusCode::FOUND);
            if let Ok(value) = HeaderValue::from_str(location) {
                res.headers_mut().insert(header::LOCATION, value);
            }
        }
        None => *res.status_mut() = status,
    }
    for (name, value) in head.fields {
        res.headers_mut().append(name, value);
    }
    Outcome::Response(res)
}

/// A running script: its process group, and its slot among the running scripts. Let
/// go of — its output ended, its time up, its client gone, its output refused — its
/// whole group is killed, so no process of it outlives its request; its slot comes
/// back once the script has been waited for.
pub(super) struct Process {
    /// Until the script has been waited for: its group's id is the script's until
    /// then, never another process's.
    running: Option<Running>,
    name: String,
    timeout: Duration,
}

struct Running {
    child: Child,
    permit: OwnedSemaphorePermit,
}

/// A script waited for: its slot, and whether it failed (exited non-zero, or was
/// ended by a signal other than the kill of its group once its output ended).
pub(super) struct Ended {
    pub(super) permit: OwnedSemaphorePermit,
    pub(super) failed: bool,
}

impl Running {
    /// Kills the whole group, the script and whatever it started (closing its output
    /// or not). Its leader not yet waited for — a zombie at worst — the group's id
    /// cannot have been given to another process.
    fn kill_group(&self) {
        if let Some(pid) = self.child.id().and_then(|id| i32::try_from(id).ok()) {
            let _ = killpg(Pid::from_raw(pid), Signal::SIGKILL);
        }
    }
}

impl Process {
    /// Ends the script (its group killed), waits for it, and gives back its slot;
    /// says in the log how it ended unless it succeeded. `when` says at which point
    /// of its answer ("after its output", "before any output").
    pub(super) async fn finish(mut self, when: &'static str) -> Option<Ended> {
        let mut running = self.running.take()?;
        running.kill_group();
        let failed = match running.child.wait().await {
            Ok(status) if status.success() => false,
            Ok(status) if status.signal() == Some(Signal::SIGKILL as i32) => {
                tracing::info!("cgi: {}: still running {when}: its group killed", self.name);
                false
            }
            Ok(status) => {
                tracing::warn!("cgi: {}: {status} {when}", self.name);
                true
            }
            Err(e) => {
                tracing::warn!("cgi: {}: cannot be waited for: {e}", self.name);
                true
            }
        };
        Some(Ended {
            permit: running.permit,
            failed,
        })
    }

    /// Its time is up: said in the log; the group is killed when it is dropped.
    pub(super) fn timed_out(&mut self) -> std::io::Error {
        Tally::CgiTimeouts.add(1);
        tracing::warn!(
            "cgi: {}: still running after {:?}: killed",
            self.name,
            self.timeout
        );
        std::io::Error::new(std::io::ErrorKind::TimedOut, "the script ran out of time")
    }

    /// Its time is up before its answer: 504; the group is killed when it is dropped.
    fn out_of_time(mut self) -> Outcome {
        let _ = self.timed_out();
        Outcome::Response(error(
            StatusCode::GATEWAY_TIMEOUT,
            "the script did not answer in time",
        ))
    }

    /// Its output is not a CGI response: 502, the reason logged.
    fn refused(&mut self, reason: &str) -> Outcome {
        tracing::error!("cgi: {}: bad output: {reason}", self.name);
        bad_gateway("the script's output was not a CGI response")
    }

    /// It wrote nothing: 502, saying how it ended.
    async fn silent(self) -> Outcome {
        self.finish("before any output").await;
        bad_gateway("the script failed before answering")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        let Some(running) = self.running.take() else {
            return;
        };
        running.kill_group();
        // Waited for by a task that holds the slot until then; with no runtime left
        // (the server is gone), tokio's orphan queue reaps it.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let Running { mut child, permit } = running;
                let _ = child.wait().await;
                drop(permit);
            });
        }
    }
}

fn bad_gateway(detail: &'static str) -> Outcome {
    Tally::CgiFailed.add(1);
    Outcome::Response(error(StatusCode::BAD_GATEWAY, detail))
}

/// Writes the request body to the script's standard input, then closes it. A script
/// that does not read it all (it exits, or closes its input) ends the writing.
async fn feed(mut stdin: ChildStdin, body: Bytes) {
    if !body.is_empty() {
        let _ = stdin.write_all(&body).await;
    }
}

/// Logs a script's standard error, line by line, under its name — within `bounds`:
/// the rest is read and counted, never logged, and said in one line at its end, so
/// a script cannot flood the log (issue 33: 20 MB in 0.2 s). A line longer than
/// [`MAX_LOG_LINE`] is logged in pieces.
async fn log_stderr(mut stderr: ChildStderr, name: String, bounds: LogBounds) {
    let mut log = StderrLog {
        name,
        bounds,
        logged: LogBounds::default(),
        unlogged: LogBounds::default(),
    };
    let mut pending: Vec<u8> = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = match stderr.read(&mut chunk).await {
            Ok(0) | Err(_) => break,
            Ok(n) => n,
        };
        pending.extend_from_slice(&chunk[..n]);
        let mut start = 0;
        while let Some(end) = pending[start..].iter().position(|&b| b == b'\n') {
            log.line(&pending[start..start + end]);
            start += end + 1;
        }
        pending.drain(..start);
        if pending.len() >= MAX_LOG_LINE {
            log.line(&pending);
            pending.clear();
        }
    }
    if !pending.is_empty() {
        log.line(&pending);
    }
    log.summarise();
}

/// How much of one script's standard error is logged: `[cgi] log_lines` lines and
/// `[cgi] log_bytes` bytes at most; also what was logged, or not.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct LogBounds {
    pub(super) lines: usize,
    pub(super) bytes: usize,
}

/// One script's standard error on its way to the log.
struct StderrLog {
    name: String,
    bounds: LogBounds,
    logged: LogBounds,
    unlogged: LogBounds,
}

impl StderrLog {
    /// Logs `line` if the bounds have room for it, else counts it.
    fn line(&mut self, line: &[u8]) {
        let room = self.logged.lines < self.bounds.lines
            && self.logged.bytes + line.len() <= self.bounds.bytes;
        // Once one line is held back, every later one is: the log keeps a prefix.
        let counter = if room && self.unlogged.lines == 0 {
            let text = String::from_utf8_lossy(line);
            tracing::warn!("cgi: {}: {}", self.name, text.trim_end_matches('\r'));
            &mut self.logged
        } else {
            &mut self.unlogged
        };
        counter.lines += 1;
        counter.bytes += line.len();
    }

    /// Says how much was not logged, if anything.
    fn summarise(&self) {
        if self.unlogged.lines > 0 {
            tracing::warn!(
                "cgi: {}: {} more lines ({} bytes) of standard error not logged: past [cgi] log_lines = {} or log_bytes = {}",
                self.name,
                self.unlogged.lines,
                self.unlogged.bytes,
                self.bounds.lines,
                self.bounds.bytes
            );
        }
    }
}
