//! Workers: P worker processes — this binary re-executed (from the path it was
//! started as, so a SIGHUP after an upgrade starts the new one: `binary.rs`), never a
//! bare fork of a threaded process — each running the configured model (`loops` under
//! `prefork`; a pool of one thread for Yarn's and Unicorn's one request at a time, of
//! T for Puma's cluster mode), supervised by the first process.
//!
//! The supervisor binds the listening socket and hands it to every worker as its
//! standard input (safe descriptor passing: `Stdio::from(OwnedFd)`); a worker knows
//! itself by `PROSCENIUM_WORKER` and serves that socket. Because the supervisor keeps
//! the socket open, connections wait in the backlog while workers come and go: none is
//! refused during a restart.
//!
//! A worker follows its supervisor: when the supervisor dies (SIGKILL, a crash), the
//! kernel sends the worker SIGTERM (`PR_SET_PDEATHSIG`) and it drains and exits as at
//! any SIGTERM, rather than serve on unsupervised. The signal comes when the *thread*
//! that started the worker ends, so every worker is started by the supervisor's own
//! thread, which ends only after the workers are stopped.
//!
//! Supervision: a worker that dies is started again with `restarts.rs`'s backoff and
//! budget (past the budget restarts go on, spaced, each logged: a supervisor that gave
//! up would keep the port open with no worker behind it, where clients wait forever and
//! a load balancer sees a live server). SIGHUP (through the server, once the
//! configuration read again checks) replaces the workers one at a time; SIGUSR1
//! is passed on to them (they reopen their access logs). Shutdown passes SIGTERM on, waits for the workers to drain, then kills what is
//! left.
//!
//! Metrics: when the supervisor serves `/metrics` (`[admin] bind`), each worker gets a
//! link to it, and the supervisor's scrape is the sum of its workers'
//! (`admin::workers`).
//!
//! Liveness: each worker beats on the load board (`board.rs`) while its loops turn
//! (a worker of a thread model, or `staged`, has no loop to watch: it beats while it
//! runs, as its threads may block by design); one silent for [`SILENT_GRACE`] —
//! stopped, its loops frozen in a handler — is killed and so restarted like any worker
//! that died. (Its connections were stalled already; the other workers stopped deferring
//! to it a second after its last beat.)

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::sys::signal::Signal;
use tokio::sync::{Notify, watch};

use super::RuntimeSettings;
use super::board::{Board, Seat};
use super::restarts::{self, Admit, Budget, Lives, OVER_BUDGET_PAUSE};
use super::watchdog::{LiveStats, Turning};

/// Set in a worker's environment to its slot number.
const WORKER_ENV: &str = "PROSCENIUM_WORKER";
/// Set in a worker's environment to `FD,SEATS,SEAT`: its load board and seat there.
const BOARD_ENV: &str = "PROSCENIUM_BOARD";
/// Set in a worker's environment to its end of its metrics link (`admin::workers`),
/// when the supervisor serves `/metrics`.
const METRICS_ENV: &str = "PROSCENIUM_METRICS";
/// Set in a worker's environment to its supervisor's pid.
const SUPERVISOR_ENV: &str = "PROSCENIUM_SUPERVISOR";
/// How long a worker may miss its heartbeat before it is killed and replaced.
const SILENT_GRACE: Duration = Duration::from_secs(3);
/// How long a new worker gets to start before the one it replaces is stopped.
const WARM_UP: Duration = Duration::from_millis(500);

/// How a supervisor starts a worker, in place of passing its own arguments on: a
/// test harness, re-executed as a worker, must run only the test that started the
/// server (`Server::worker_command`, with the `testing` feature).
#[derive(Clone)]
pub(crate) struct WorkerCommand(pub(crate) Arc<dyn Fn(&mut Command) + Send + Sync>);

impl std::fmt::Debug for WorkerCommand {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WorkerCommand")
    }
}

/// Returns this process's slot when it is a `prefork` worker.
///
/// # Examples
///
/// ```
/// assert_eq!(proscenium::rt::prefork_worker(), None);
/// ```
pub fn prefork_worker() -> Option<usize> {
    std::env::var(WORKER_ENV).ok()?.parse().ok()
}

/// Returns the listening socket handed down by the supervisor, when this process is a
/// worker.
pub(crate) fn inherited_listener() -> Option<std::io::Result<std::net::TcpListener>> {
    std::env::var_os(WORKER_ENV)?;
    let listener = std::io::stdin()
        .as_fd()
        .try_clone_to_owned()
        .map(std::net::TcpListener::from);
    Some(listener.and_then(|l| l.set_nonblocking(true).map(|()| l)))
}

/// Has this worker sent SIGTERM when its supervisor dies; `None` when this process is
/// not a worker.
///
/// # Errors
///
/// The supervisor is gone already (it died before the signal was asked for, and so
/// will never send it), or the kernel refuses.
pub(crate) fn follow_supervisor() -> Option<std::io::Result<()>> {
    let supervisor: i32 = std::env::var(SUPERVISOR_ENV).ok()?.parse().ok()?;
    Some(follow(supervisor))
}

fn follow(supervisor: i32) -> std::io::Result<()> {
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)?;
    // Reparented meanwhile: the supervisor died before the line above.
    if nix::unistd::getppid().as_raw() != supervisor {
        return Err(std::io::Error::other(format!(
            "the supervisor (pid {supervisor}) is gone"
        )));
    }
    Ok(())
}

/// Returns this worker's seat on the load board the supervisor handed down, beating
/// there while the loops `live` will hold turn.
pub(crate) fn inherited_seat(live: LiveStats) -> Option<std::io::Result<Seat>> {
    let value = std::env::var(BOARD_ENV).ok()?;
    let fields: Vec<usize> = value.split(',').filter_map(|f| f.parse().ok()).collect();
    let &[fd, seats, seat] = fields.as_slice() else {
        return Some(Err(std::io::Error::other(format!(
            "bad {BOARD_ENV}: {value}"
        ))));
    };
    let board = i32::try_from(fd)
        .map_err(std::io::Error::other)
        .and_then(|fd| Board::inherit(fd, seats));
    Some(board.and_then(|b| {
        if seat >= b.seats() {
            return Err(std::io::Error::other(format!(
                "bad {BOARD_ENV}: seat {seat} of a board of {seats}"
            )));
        }
        let seat = Seat::new(Arc::new(b), seat);
        seat.keep_beating(Turning::new(live)).map(|()| seat)
    }))
}

/// Returns this worker's end of its metrics link, when its supervisor serves
/// `/metrics`.
#[cfg_attr(
    not(feature = "metrics"),
    expect(dead_code, reason = "only the admin listener's workers take it")
)]
pub(crate) fn inherited_metrics_link() -> Option<std::io::Result<UnixStream>> {
    let value = std::env::var(METRICS_ENV).ok()?;
    let link = value
        .parse()
        .map_err(|_| std::io::Error::other(format!("bad {METRICS_ENV}: {value}")))
        .and_then(super::board::inherit_metrics_link);
    Some(link.map(UnixStream::from))
}

/// The supervisor's end of each worker's metrics link, which the admin listener
/// (`admin::Workers`) reads its scrapes through: the runtime opens and retires links as
/// workers come and go, and knows nothing of what crosses them.
pub(crate) trait MetricsLinks: Send + Sync {
    /// Opens the link of the worker about to start at board seat `seat`; returns the
    /// end the worker inherits.
    fn open(&self, seat: usize) -> std::io::Result<UnixStream>;

    /// Keeps what the worker that sat at `seat`, which is gone, last reported.
    fn retire(&self, seat: usize);
}

/// Starts the supervisor thread, which starts and watches the workers (linked to
/// `workers` when the supervisor serves `/metrics`); returns once they are started.
pub(crate) fn spawn(
    listener: std::net::TcpListener,
    settings: Arc<RuntimeSettings>,
    shutdown: watch::Receiver<bool>,
    roll: Arc<Notify>,
    workers: Option<Arc<dyn MetricsLinks>>,
    command: Option<WorkerCommand>,
) -> std::io::Result<JoinHandle<()>> {
    let mut supervisor = Supervisor {
        binary: super::binary::started_as()?,
        command,
        listener,
        board: Board::create(settings.workers * 2)?,
        workers,
        settings,
        slots: Vec::new(),
        restarts: Budget::default(),
    };
    let (started, outcome) = std::sync::mpsc::sync_channel(1);
    let thread =
        super::runtime::spawn_thread("proscenium-supervisor".to_owned(), move |runtime| {
            // Started here, by the thread that outlives them (`PR_SET_PDEATHSIG`).
            let start = supervisor.start_all();
            let ok = start.is_ok();
            let _ = started.send(start);
            if ok {
                runtime.block_on(supervisor.run(shutdown, &roll));
            }
        })?;
    outcome
        .recv()
        .unwrap_or_else(|_| Err(std::io::Error::other("the supervisor thread ended")))?;
    Ok(thread)
}

/// One worker slot: its process (if running), its seat on the board, and its lives.
struct Slot {
    child: Option<Child>,
    seat: usize,
    lives: Lives,
    restart_at: Option<Instant>,
}

impl Slot {
    /// Records that the worker died; returns the backoff before its restart.
    fn died(&mut self, now: Instant) -> Duration {
        self.child = None;
        let backoff = self.lives.died(now);
        self.restart_at = Some(now + backoff);
        backoff
    }
}

struct Supervisor {
    /// The path the supervisor was started as, which each worker is started from.
    binary: std::path::PathBuf,
    /// How a worker is started, when not with the supervisor's own arguments.
    command: Option<WorkerCommand>,
    listener: std::net::TcpListener,
    board: Board,
    workers: Option<Arc<dyn MetricsLinks>>,
    settings: Arc<RuntimeSettings>,
    slots: Vec<Slot>,
    restarts: Budget,
}

impl Supervisor {
    fn start_all(&mut self) -> std::io::Result<()> {
        for slot in 0..self.settings.workers {
            let seat = slot * 2;
            let child = self.start_worker(slot, seat)?;
            self.slots.push(Slot {
                child: Some(child),
                seat,
                lives: Lives::new(Instant::now()),
                restart_at: None,
            });
        }
        Ok(())
    }

    /// Re-executes this binary — the file at the path the supervisor was started as,
    /// which may be newer (`binary.rs`) — with the same arguments (or as `command`
    /// prepares it) as worker `slot`,
    /// sitting at `seat` on the board.
    ///
    /// The board's descriptor, and the worker's end of its metrics link, are
    /// inherited as copies that are open across exec for as long as this call runs;
    /// only this thread starts processes in the supervisor.
    fn start_worker(&self, slot: usize, seat: usize) -> std::io::Result<Child> {
        let socket = OwnedFd::from(self.listener.try_clone()?);
        let board = self.board.inheritable_fd()?;
        let seats = self.board.seats();
        self.board.unborn(seat);
        let mut command = Command::new(&self.binary);
        match &self.command {
            Some(WorkerCommand(prepare)) => prepare(&mut command),
            None => {
                command.args(std::env::args_os().skip(1));
            }
        }
        command
            .env(WORKER_ENV, slot.to_string())
            .env(BOARD_ENV, format!("{},{seats},{seat}", board.as_raw_fd()))
            .env(SUPERVISOR_ENV, std::process::id().to_string())
            .stdin(Stdio::from(socket));
        // `dup` leaves the copy open across exec; the original is close-on-exec.
        let link = match &self.workers {
            Some(workers) => Some(nix::unistd::dup(workers.open(seat)?)?),
            None => None,
        };
        if let Some(link) = &link {
            command.env(METRICS_ENV, link.as_raw_fd().to_string());
        }
        let child = command.spawn()?;
        tracing::info!("worker {slot} started (pid {})", child.id());
        Ok(child)
    }

    /// Watches the workers until shutdown; replaces them at each notification of
    /// `roll` (the server's SIGHUP, once the configuration read again checks).
    async fn run(mut self, mut shutdown: watch::Receiver<bool>, roll: &Notify) {
        use tokio::signal::unix::SignalKind;
        let mut reopen = watch_signal(SignalKind::user_defined1(), "log reopening");
        loop {
            tokio::select! {
                _ = shutdown.changed() => break,
                () = roll.notified() => self.replace_all().await,
                Some(()) = async { reopen.as_mut()?.recv().await } => self.pass_on(Signal::SIGUSR1),
                () = tokio::time::sleep(Duration::from_millis(50)) => self.watch_workers(),
            }
        }
        self.stop_all().await;
    }

    /// Sends `signal` to every running worker (SIGUSR1: the workers write the access
    /// log, so they are the ones to reopen it).
    fn pass_on(&self, signal: Signal) {
        let pids = self.slots.iter().filter_map(|s| s.child.as_ref());
        // A pid is a positive i32: the kernel's pid_max is at most 2^22.
        for raw in pids.filter_map(|child| i32::try_from(child.id()).ok()) {
            let pid = nix::unistd::Pid::from_raw(raw);
            if let Err(e) = nix::sys::signal::kill(pid, signal) {
                tracing::warn!("cannot pass {signal} to worker pid {pid}: {e}");
            }
        }
    }

    /// Notices dead workers and starts them again when their backoff has passed; kills
    /// silent ones, to be restarted the same way.
    fn watch_workers(&mut self) {
        let now = Instant::now();
        for index in 0..self.slots.len() {
            let slot = &mut self.slots[index];
            if let Some(child) = &mut slot.child {
                if self.board.is_silent_for(slot.seat, SILENT_GRACE) {
                    tracing::error!(
                        "worker {index} (pid {}) missed its heartbeat for {SILENT_GRACE:?}; killing it",
                        child.id()
                    );
                    let _ = child.kill().and_then(|()| child.wait());
                }
                if let Ok(Some(status)) = child.try_wait() {
                    let pid = child.id();
                    self.board.vacate(slot.seat);
                    if let Some(workers) = &self.workers {
                        workers.retire(slot.seat);
                    }
                    let backoff = slot.died(now);
                    tracing::error!(
                        "worker {index} (pid {pid}) exited ({status}); restarting in {backoff:?}"
                    );
                }
            }
            if self.slots[index].restart_at.is_some_and(|at| at <= now) {
                self.restart(index, now);
            }
        }
    }

    fn restart(&mut self, index: usize, now: Instant) {
        self.slots[index].restart_at = None;
        match self.restarts.admit(now) {
            Admit::At(next) => {
                self.slots[index].restart_at = Some(next);
                return;
            }
            Admit::NowOverBudget => tracing::error!(
                "worker {index}: past the restart budget; restarting it no sooner than \
                 {OVER_BUDGET_PAUSE:?} after the last"
            ),
            Admit::Now => {}
        }
        match self.start_worker(index, self.slots[index].seat) {
            Ok(child) => {
                self.slots[index].child = Some(child);
                self.slots[index].lives.began(now);
            }
            Err(e) => tracing::error!("cannot restart worker {index}: {e}"),
        }
    }

    /// Replaces the workers one at a time (SIGHUP): start the new one, let it warm up,
    /// then drain the old one.
    async fn replace_all(&mut self) {
        tracing::info!("SIGHUP: replacing workers one at a time");
        for index in 0..self.slots.len() {
            // The old and the new worker sit side by side until the old one is gone.
            let old_seat = self.slots[index].seat;
            let seat = old_seat ^ 1;
            let fresh = match self.start_worker(index, seat) {
                Ok(child) => child,
                Err(e) => {
                    tracing::error!("cannot start a replacement for worker {index}: {e}");
                    continue;
                }
            };
            tokio::time::sleep(WARM_UP).await;
            let old = self.slots[index].child.replace(fresh);
            self.slots[index].lives.began(Instant::now());
            self.slots[index].seat = seat;
            if let Some(old) = old {
                self.drain([old].into_iter().collect()).await;
            }
            self.board.vacate(old_seat);
            if let Some(workers) = &self.workers {
                workers.retire(old_seat);
            }
        }
    }

    async fn stop_all(&mut self) {
        let children = self
            .slots
            .iter_mut()
            .filter_map(|s| s.child.take())
            .collect();
        self.drain(children).await;
    }

    /// Sends SIGTERM, waits for the drain deadline, then kills whatever is left — on
    /// a blocking thread, the supervisor's loop free meanwhile.
    async fn drain(&self, children: Vec<Child>) {
        let stop_by = Instant::now() + self.settings.timeouts.shutdown + Duration::from_secs(1);
        let children = children
            .into_iter()
            .map(|child| (format!("worker pid {}", child.id()), child))
            .collect();
        let _ = tokio::task::spawn_blocking(move || restarts::stop(children, stop_by)).await;
    }
}

/// Watches `kind` on the supervisor's loop; without it, `what` is off (and said so).
fn watch_signal(
    kind: tokio::signal::unix::SignalKind,
    what: &str,
) -> Option<tokio::signal::unix::Signal> {
    tokio::signal::unix::signal(kind)
        .inspect_err(|e| tracing::warn!("cannot watch a signal, {what} are off: {e}"))
        .ok()
}
