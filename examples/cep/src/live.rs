//! Live sources, as Leda's CEP read them: logs still being written. Each is a source
//! stage of its own (`source-1`, `source-2`, ... in the order given), in a cluster of
//! its own unless the configuration places it:
//!
//! - a followed file (`--follow FILE`): read from its start, then followed as it grows
//!   (a line is taken once its newline is written), reopened from its start when it is
//!   replaced (rotated: another file at the path) or truncated, waited for while it
//!   does not exist;
//! - a socket (`--listen ADDR`): every connection to it sends log lines, any number of
//!   connections at once.
//!
//! A source that has had nothing new for [`IDLE`] says so once, and *window* closes
//! the window it has begun: on a live log a window is the entries that came, not
//! only a thousand of them.

use std::fs::File;
use std::io::{BufRead as _, BufReader, Seek as _};
use std::os::unix::fs::MetadataExt as _;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use proscenium::stage::{Context, Out, Stage, StageError};
use tokio::io::{AsyncBufReadExt as _, AsyncReadExt as _};

use crate::stages::{Line, entry_line};

/// How long a source waits with nothing new before it says so.
pub const IDLE: Duration = Duration::from_millis(500);

/// How often a followed file is looked at for more.
const POLL: Duration = Duration::from_millis(50);

/// The longest line taken: a longer one is dropped, as a malformed line is.
const MAX_LINE: usize = 64 * 1024;

/// Where a live source reads.
#[derive(Debug)]
pub enum Feed {
    /// A file followed as it grows.
    Follow(PathBuf),
    /// A socket whose connections send lines.
    Listen(std::net::TcpListener),
}

/// The stage name of the `n`th live source (from 1).
pub(crate) fn source_name(n: usize) -> String {
    format!("source-{n}")
}

/// The source stage reading `feed`, named `name`, sending on `lines`.
pub(crate) fn source(name: &str, feed: Feed, lines: &Out<Line>) -> Stage {
    match feed {
        Feed::Follow(path) => follow(name, path, lines.clone()),
        Feed::Listen(listener) => listen(name, listener, lines.clone()),
    }
}

/// Sends `line`; a send refused because the graph stops ends the source quietly.
fn pass(ctx: &mut Context<'_>, lines: &Out<Line>, line: Line) -> Result<(), StageError> {
    match ctx.send(lines, line) {
        Err(_) if ctx.is_stopping() => Ok(()),
        sent => Ok(sent?),
    }
}

/// When a source last had something, and whether it has said it is idle since.
struct Quiet {
    since: Instant,
    said: bool,
}

impl Quiet {
    fn new() -> Self {
        Self {
            since: Instant::now(),
            said: true,
        }
    }

    fn heard(&mut self) {
        self.since = Instant::now();
        self.said = false;
    }

    /// Whether to say the source is idle now (once a quiet spell).
    fn due(&mut self) -> bool {
        let due = !self.said && self.since.elapsed() >= IDLE;
        self.said |= due;
        due
    }
}

fn follow(name: &str, path: PathBuf, lines: Out<Line>) -> Stage {
    Stage::source(
        name,
        || (),
        move |(), ctx| {
            let mut tail = Tail::new(path.clone());
            let mut quiet = Quiet::new();
            while !ctx.is_stopping() {
                match tail.next_line() {
                    Some(line) => {
                        quiet.heard();
                        if let Some(line) = entry_line(&line) {
                            pass(ctx, &lines, line)?;
                        }
                    }
                    None => {
                        if quiet.due() {
                            pass(ctx, &lines, Line::Idle)?;
                        }
                        std::thread::sleep(POLL);
                    }
                }
            }
            Ok(())
        },
    )
}

/// A file followed as `tail -F` follows it.
struct Tail {
    path: PathBuf,
    open: Option<(BufReader<File>, u64)>,
    partial: Vec<u8>,
}

impl Tail {
    fn new(path: PathBuf) -> Self {
        Self {
            path,
            open: None,
            partial: Vec::new(),
        }
    }

    /// The next whole line, if one has been written.
    fn next_line(&mut self) -> Option<String> {
        if self.open.is_none() {
            self.reopen();
        }
        let (reader, _) = self.open.as_mut()?;
        let read = reader.read_until(b'\n', &mut self.partial).ok()?;
        if read > 0 && self.partial.ends_with(b"\n") {
            let line = std::mem::take(&mut self.partial);
            return Some(String::from_utf8_lossy(&line).trim_end().to_owned());
        }
        if self.partial.len() > MAX_LINE {
            // Its rest comes as a line of its own, which no log entry parses as.
            self.partial.clear();
        }
        // At the end of what is written: the file may have been replaced or cut.
        if self.replaced() {
            self.reopen();
        }
        None
    }

    fn reopen(&mut self) {
        self.open = File::open(&self.path)
            .ok()
            .and_then(|file| Some((file.metadata().ok()?.ino(), file)))
            .map(|(inode, file)| (BufReader::new(file), inode));
        self.partial.clear();
    }

    /// Whether the file at the path is another one, or shorter than what was read.
    fn replaced(&mut self) -> bool {
        let Some((reader, inode)) = self.open.as_mut() else {
            return true;
        };
        let read = reader.stream_position().unwrap_or(0);
        std::fs::metadata(&self.path).is_ok_and(|now| now.ino() != *inode || now.len() < read)
    }
}

fn listen(name: &str, listener: std::net::TcpListener, lines: Out<Line>) -> Stage {
    // The source has one instance: its state takes the listener once.
    let listener = std::sync::Mutex::new(Some(listener));
    Stage::source_async(
        name,
        move || listener.lock().ok().and_then(|mut l| l.take()),
        async move |listener: &mut Option<std::net::TcpListener>, (): (), ctx: &mut Context<'_>| {
            let Some(listener) = listener.take() else {
                return Ok(());
            };
            listener
                .set_nonblocking(true)
                .and_then(|()| tokio::net::TcpListener::from_std(listener))
                .map_err(|e| StageError::handler(format!("cannot listen: {e}")))
                .map(|listener| read_connections(listener, ctx, &lines))?
                .await
        },
    )
}

/// Takes connections on `listener` and passes on the lines each sends, until the
/// graph stops.
async fn read_connections(
    listener: tokio::net::TcpListener,
    ctx: &mut Context<'_>,
    lines: &Out<Line>,
) -> Result<(), StageError> {
    let (sent, mut received) = tokio::sync::mpsc::channel::<String>(1024);
    let mut quiet = Quiet::new();
    let mut tick = tokio::time::interval(POLL);
    while !ctx.is_stopping() {
        tokio::select! {
            accepted = listener.accept() => {
                if let Ok((stream, _)) = accepted {
                    tokio::spawn(read_lines(stream, sent.clone()));
                }
            }
            Some(line) = received.recv() => {
                quiet.heard();
                if let Some(line) = entry_line(&line) {
                    pass(ctx, lines, line)?;
                }
            }
            _ = tick.tick() => {
                if quiet.due() {
                    pass(ctx, lines, Line::Idle)?;
                }
            }
        }
    }
    Ok(())
}

/// Sends each line `stream` writes to `sent`, until it closes (or writes a line past
/// [`MAX_LINE`], or the source is gone).
async fn read_lines(stream: tokio::net::TcpStream, sent: tokio::sync::mpsc::Sender<String>) {
    let mut reader = tokio::io::BufReader::new(stream);
    let mut line = Vec::new();
    loop {
        line.clear();
        let mut limited = (&mut reader).take(MAX_LINE as u64);
        match limited.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => return,
            Ok(_) if !line.ends_with(b"\n") => return,
            Ok(_) => {
                let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                if sent.send(text).await.is_err() {
                    return;
                }
            }
        }
    }
}
