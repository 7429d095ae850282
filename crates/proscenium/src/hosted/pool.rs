//! A hosted app's interpreter processes: started at once, each taken by one request at
//! a time, replaced when one dies. They live on a runtime of their own
//! ([`Background`]): a request's loop, or its thread under a thread model, may end
//! before the process it started is used again.
//!
//! A request waits for a process at most `timeouts.queue` (then 503), and not at all
//! once its client has left; its answer's head must come within `[hosted] timeout`
//! (then 504). A process that dies, times out, or writes what is not a frame is killed
//! and a new one started in its place, after the backoff prefork's workers get
//! (`rt::restarts`): an app that crashes at every request does not make the server
//! start interpreters in a loop. An answer whose client leaves first is read to its
//! end and dropped, or, past a megabyte or its time, its process killed and replaced.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use parking_lot::Mutex;
use tokio::io::BufReader;
use tokio::process::{Child, ChildStdin, ChildStdout, Command};
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc, oneshot};

use super::framing::{self, Head};
use crate::rt::Background;
use crate::rt::restarts::Lives;

/// Chunks of an answer's body read ahead of its client.
const READ_AHEAD: usize = 8;

/// How much of an answer whose client left is read and dropped, to keep its process.
const DRAIN: usize = 1 << 20;

/// How to start one interpreter process.
#[derive(Debug, Clone)]
pub(super) struct Launch {
    pub(super) program: String,
    pub(super) args: Vec<String>,
    pub(super) dir: PathBuf,
}

/// Why a request got no answer from the app.
#[derive(Debug, thiserror::Error)]
pub(super) enum Failed {
    #[error("every interpreter process busy past the queue's time")]
    Busy,
    #[error("no interpreter process started: {0}")]
    NoStart(std::io::Error),
    #[error("the interpreter process gave no answer's head in time")]
    TimedOut,
    #[error("the interpreter process failed: {0}")]
    Broken(std::io::Error),
}

/// An answer from the app: its head, the chunks of its body read with it, and the
/// rest as it comes — `None` when the answer came whole (a short one, written in one
/// piece: its process is given back at once, and the body sent with its length).
pub(super) struct Answer {
    pub(super) head: Head,
    pub(super) early: Vec<Bytes>,
    pub(super) rest: Option<mpsc::Receiver<std::io::Result<Bytes>>>,
}

/// One interpreter process, its app loaded.
struct Process {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

#[derive(Debug)]
pub(super) struct Pool {
    launch: Launch,
    idle: Mutex<Vec<Process>>,
    slots: Arc<Semaphore>,
    queue: Duration,
    timeout: Duration,
    /// The processes' lives together: when the last died, and the backoff that set.
    lives: Mutex<(Lives, Option<Instant>)>,
    background: Background,
}

impl std::fmt::Debug for Process {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Process({:?})", self.child.id())
    }
}

impl Pool {
    /// Starts `processes` interpreters as `launch` says, each answered by `timeout`,
    /// a request waiting `queue` at most for one; returns once each has loaded the app.
    ///
    /// # Errors
    ///
    /// An interpreter that does not start, or exits before it has loaded the app (its
    /// error is in the log, from its standard error).
    pub(super) fn start(
        launch: Launch,
        processes: usize,
        queue: Duration,
        timeout: Duration,
    ) -> std::io::Result<Arc<Self>> {
        let background = Background::new("proscenium-hosted");
        let pool = Arc::new(Self {
            launch,
            idle: Mutex::new(Vec::with_capacity(processes)),
            slots: Arc::new(Semaphore::new(processes)),
            queue,
            timeout,
            lives: Mutex::new((Lives::new(Instant::now()), None)),
            background: background.clone(),
        });
        let starting = Arc::clone(&pool);
        let started = background.block_on(async move {
            let mut started = Vec::with_capacity(processes);
            for _ in 0..processes {
                started.push(starting.spawn().await?);
            }
            Ok::<_, std::io::Error>(started)
        });
        let started =
            started.unwrap_or_else(|| Err(std::io::Error::other("its runtime stopped")))?;
        *pool.idle.lock() = started;
        Ok(pool)
    }

    /// Sends a request (its environment and body) to a process and returns its
    /// answer: the head once it comes, the body read on as the client takes it.
    pub(super) async fn ask(
        self: &Arc<Self>,
        env: serde_json::Map<String, serde_json::Value>,
        body: Bytes,
    ) -> Result<Answer, Failed> {
        let (reply, answer) = oneshot::channel();
        let pool = Arc::clone(self);
        self.background
            .spawn(async move { pool.exchange(env, body, reply).await });
        answer
            .await
            .unwrap_or_else(|_| Err(Failed::Broken(std::io::Error::other("its runtime stopped"))))
    }

    /// [`ask`](Self::ask)'s work, on the pool's runtime: it goes on when the request's
    /// client leaves, but a request still waiting for a process is dropped then (a
    /// client that closes with requests pipelined would otherwise leave them all to
    /// be run for no one).
    async fn exchange(
        self: Arc<Self>,
        env: serde_json::Map<String, serde_json::Value>,
        body: Bytes,
        mut reply: oneshot::Sender<Result<Answer, Failed>>,
    ) {
        let slots = Arc::clone(&self.slots);
        let permit = tokio::select! {
            biased;
            () = reply.closed() => return,
            permit = tokio::time::timeout(self.queue, slots.acquire_owned()) => permit,
        };
        let Ok(Ok(permit)) = permit else {
            let _ = reply.send(Err(Failed::Busy));
            return;
        };
        let idle = self.idle.lock().pop();
        let mut process = match idle {
            Some(process) => process,
            None => match self.spawn().await {
                Ok(process) => process,
                Err(error) => {
                    let _ = reply.send(Err(Failed::NoStart(error)));
                    return;
                }
            },
        };
        let asked = async {
            framing::write_request(&mut process.input, &env, &body).await?;
            framing::read_head(&mut process.output).await
        };
        let head = match tokio::time::timeout(self.timeout, asked).await {
            Ok(Ok(head)) => head,
            Ok(Err(error)) => {
                self.died(process).await;
                let _ = reply.send(Err(Failed::Broken(error)));
                return;
            }
            Err(_) => {
                self.died(process).await;
                let _ = reply.send(Err(Failed::TimedOut));
                return;
            }
        };
        // What came with the head is taken at once: a whole answer goes back in one
        // message rather than a chunk at a time (Rack pipelined 16 deep: a wake of the
        // request's loop for each chunk and for the end).
        let mut early = Vec::new();
        while let Some(chunk) = framing::buffered_frame(&mut process.output) {
            if chunk.is_empty() {
                self.idle.lock().push(process);
                drop(permit);
                let _ = reply.send(Ok(Answer {
                    head,
                    early,
                    rest: None,
                }));
                return;
            }
            early.push(chunk);
        }
        let (chunks, rest) = mpsc::channel(READ_AHEAD);
        // Sent before the relay starts, so that a client gone by now is found at its
        // first chunk and the answer read to its end for no one.
        let _ = reply.send(Ok(Answer {
            head,
            early,
            rest: Some(rest),
        }));
        self.relay(process, chunks, permit).await;
    }

    /// Reads an answer's body into `chunks` until its empty frame, then gives the
    /// process back; kills it if the body breaks off.
    async fn relay(
        self: Arc<Self>,
        mut process: Process,
        chunks: mpsc::Sender<std::io::Result<Bytes>>,
        permit: OwnedSemaphorePermit,
    ) {
        loop {
            match framing::read_frame(&mut process.output).await {
                Ok(chunk) if chunk.is_empty() => {
                    self.idle.lock().push(process);
                    break;
                }
                Ok(chunk) => {
                    if chunks.send(Ok(chunk)).await.is_err() {
                        self.drain(process).await;
                        break;
                    }
                }
                Err(error) => {
                    let _ = chunks
                        .send(Err(std::io::Error::other(error.to_string())))
                        .await;
                    self.died(process).await;
                    break;
                }
            }
        }
        drop(permit);
    }

    /// The client left before its answer's end: the rest is read and dropped, up to
    /// [`DRAIN`] bytes within the answer's time, and the process kept (a short answer
    /// costs less to read than a new interpreter to load); past that it is killed.
    async fn drain(&self, mut process: Process) {
        let rest = async {
            let mut read = 0;
            while read <= DRAIN {
                let chunk = framing::read_frame(&mut process.output).await?;
                if chunk.is_empty() {
                    return Ok(true);
                }
                read += chunk.len();
            }
            Ok::<_, std::io::Error>(false)
        };
        match tokio::time::timeout(self.timeout, rest).await {
            Ok(Ok(true)) => self.idle.lock().push(process),
            _ => {
                kill(process).await;
            }
        }
    }

    /// Starts an interpreter and waits for it to load the app (its first, empty
    /// frame), after the backoff a death before it set.
    async fn spawn(&self) -> std::io::Result<Process> {
        let wait = self.lives.lock().1.take();
        if let Some(until) = wait {
            tokio::time::sleep_until(until.into()).await;
        }
        let mut child = Command::new(&self.launch.program)
            .args(&self.launch.args)
            .current_dir(&self.launch.dir)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(std::io::Error::other("its standard streams were not piped"));
        };
        let mut output = BufReader::new(output);
        let loaded = framing::read_frame(&mut output).await;
        match loaded {
            Ok(ready) if ready.is_empty() => {}
            _ => {
                let status = child.wait().await?;
                return Err(std::io::Error::other(format!(
                    "`{} {}` exited ({status}) before its app loaded; its error is logged above",
                    self.launch.program,
                    self.launch.args.join(" ")
                )));
            }
        }
        self.lives.lock().0.began(Instant::now());
        Ok(Process {
            child,
            input,
            output,
        })
    }

    /// A process failed: killed, and the next start put off by the backoff.
    async fn died(&self, process: Process) {
        let now = Instant::now();
        let status = kill(process).await;
        let backoff = {
            let mut lives = self.lives.lock();
            let backoff = lives.0.died(now);
            lives.1 = Some(now + backoff);
            backoff
        };
        tracing::error!(
            "hosted: an interpreter process failed ({status}); the next starts in {backoff:?}"
        );
    }
}

/// Kills `process` and waits for it; returns how it ended, for the log.
async fn kill(mut process: Process) -> String {
    let _ = process.child.start_kill();
    match process.child.wait().await {
        Ok(status) => status.to_string(),
        Err(error) => error.to_string(),
    }
}
