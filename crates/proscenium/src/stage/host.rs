//! The processes of one host: `--host H` starts every process the configuration maps
//! to H (this same binary again, with `--process NAME`) and supervises them as prefork
//! does its workers — one that dies is restarted with `rt/restarts.rs`'s backoff and
//! budget; one that exits 0 has finished (a job's driver), and one that exits
//! [`EXIT_REFUSED`] refused to run (its configuration is wrong, its graph differs from
//! the others'): both are left so, since running them again would end the same way.

use std::ffi::OsString;
use std::process::{Child, Command};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use nix::unistd::Pid;
use parking_lot::{Condvar, Mutex};

use super::StageError;
use crate::Config;
use crate::rt::restarts::{self, Admit, Budget, Lives};

/// The exit status of a process that refused to run — a configuration or a graph
/// that is wrong, which a restart would not change (`EX_CONFIG` of `sysexits.h`).
pub const EXIT_REFUSED: i32 = 78;

/// How a process of the host ended for good (one that died is restarted instead).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// It exited 0, by its name.
    Finished(String),
    /// It exited [`EXIT_REFUSED`].
    Refused(String),
}

/// How often a process waiting to be stopped looks whether its parent is gone.
const PARENT_CHECK: Duration = Duration::from_millis(250);

/// How often the supervisor looks at its processes.
const WATCH_EVERY: Duration = Duration::from_millis(50);

/// The processes mapped to one host, started and supervised by this one; stopped
/// (SIGTERM, then SIGKILL past a deadline) by [`stop`](Self::stop) or when dropped.
#[derive(Debug)]
pub struct HostProcesses {
    shared: Arc<Shared>,
    supervisor: Option<JoinHandle<()>>,
}

#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

#[derive(Debug, Default)]
struct State {
    /// Processes that ended for good, in the order they did.
    ended: Vec<Ended>,
    /// Set to stop: the time by which the processes must have left.
    stop_by: Option<Instant>,
}

/// One process of the host: its name, the process (when running) and its lives.
#[derive(Debug)]
struct Process {
    name: String,
    child: Option<Child>,
    lives: Lives,
    restart_at: Option<Instant>,
}

impl HostProcesses {
    /// Starts every process `config` maps to `host` (`[processes.NAME] host`, by
    /// default `localhost`): this binary, with `args` and `--process NAME`. The
    /// environment is passed on (`PROSCENIUM_REDIS_URL` with it).
    ///
    /// # Errors
    ///
    /// A graph error when no process is mapped to `host` (the hosts that are are
    /// named), or a start error when a process cannot be started (those started are
    /// stopped).
    pub fn start(config: &Config, host: &str, args: &[OsString]) -> Result<Self, StageError> {
        let mut names: Vec<&String> = config
            .processes
            .iter()
            .filter(|(_, p)| p.host == host)
            .map(|(name, _)| name)
            .collect();
        names.sort();
        if names.is_empty() {
            let mut hosts: Vec<&str> = config.processes.values().map(|p| p.host.as_str()).collect();
            hosts.sort_unstable();
            hosts.dedup();
            return Err(StageError::graph(format!(
                "no process is mapped to host `{host}`; the configuration's hosts are {hosts:?}"
            )));
        }
        let now = Instant::now();
        let mut processes = Vec::new();
        for name in names {
            let child = spawn(name, args).map_err(|e| {
                stop_all(&mut processes, now);
                StageError::start(name, &e)
            })?;
            processes.push(Process {
                name: name.clone(),
                child: Some(child),
                lives: Lives::new(now),
                restart_at: None,
            });
        }
        let shared = Arc::new(Shared::default());
        let watched = Arc::clone(&shared);
        let args = args.to_vec();
        let supervisor = std::thread::Builder::new()
            .name("proscenium-host".to_owned())
            .spawn(move || supervise(&watched, processes, &args))
            .map_err(|e| StageError::start("host", &e))?;
        Ok(Self {
            shared,
            supervisor: Some(supervisor),
        })
    }

    /// Waits until one of the processes has ended for good and returns how; `None`
    /// after `timeout` (if given) with none ended.
    pub fn wait_ended(&self, timeout: Option<Duration>) -> Option<Ended> {
        let deadline = timeout.map(|t| Instant::now() + t);
        let mut state = self.shared.state.lock();
        loop {
            if let Some(ended) = state.ended.first() {
                return Some(ended.clone());
            }
            match deadline {
                Some(deadline) => {
                    if self
                        .shared
                        .changed
                        .wait_until(&mut state, deadline)
                        .timed_out()
                    {
                        return None;
                    }
                }
                None => self.shared.changed.wait(&mut state),
            }
        }
    }

    /// Stops the processes: SIGTERM (each drains as its own shutdown says), then
    /// SIGKILL for any left after `deadline`.
    pub fn stop(mut self, deadline: Duration) {
        self.stop_within(deadline);
    }

    fn stop_within(&mut self, deadline: Duration) {
        self.shared.state.lock().stop_by = Some(Instant::now() + deadline);
        if let Some(supervisor) = self.supervisor.take() {
            let _ = supervisor.join();
        }
    }
}

impl Drop for HostProcesses {
    fn drop(&mut self) {
        self.stop_within(Duration::from_secs(10));
    }
}

/// Starts process `name`: this binary again, with `args` and `--process NAME`.
fn spawn(name: &str, args: &[OsString]) -> std::io::Result<Child> {
    let child = Command::new(std::env::current_exe()?)
        .args(args)
        .arg("--process")
        .arg(name)
        .spawn()?;
    tracing::info!("process {name} started (pid {})", child.id());
    Ok(child)
}

/// The supervisor's loop: restarts what died, notes what ended, until told to stop.
fn supervise(shared: &Shared, mut processes: Vec<Process>, args: &[OsString]) {
    let mut budget = Budget::default();
    loop {
        let stop_by = shared.state.lock().stop_by;
        if let Some(stop_by) = stop_by {
            stop_all(&mut processes, stop_by);
            return;
        }
        let now = Instant::now();
        for process in &mut processes {
            if let Some(ended) = watch(process, now) {
                shared.state.lock().ended.push(ended);
                shared.changed.notify_all();
            }
            if process.restart_at.is_some_and(|at| at <= now) {
                restart(process, &mut budget, now, args);
            }
        }
        std::thread::sleep(WATCH_EVERY);
    }
}

/// Looks whether `process` exited: returns how, if it ended for good; one that died
/// is due for a restart after its backoff.
fn watch(process: &mut Process, now: Instant) -> Option<Ended> {
    let child = process.child.as_mut()?;
    let status = child.try_wait().ok()??;
    let pid = child.id();
    process.child = None;
    if status.success() {
        tracing::info!("process {} (pid {pid}) finished", process.name);
        return Some(Ended::Finished(process.name.clone()));
    }
    if status.code() == Some(EXIT_REFUSED) {
        tracing::error!(
            "process {} (pid {pid}) refused to run; not restarted",
            process.name
        );
        return Some(Ended::Refused(process.name.clone()));
    }
    let backoff = process.lives.died(now);
    process.restart_at = Some(now + backoff);
    tracing::error!(
        "process {} (pid {pid}) exited ({status}); restarting in {backoff:?}",
        process.name
    );
    None
}

fn restart(process: &mut Process, budget: &mut Budget, now: Instant, args: &[OsString]) {
    process.restart_at = None;
    match budget.admit(now) {
        Admit::At(next) => {
            process.restart_at = Some(next);
            return;
        }
        Admit::NowOverBudget => tracing::error!(
            "process {}: past the restart budget; restarts are spaced",
            process.name
        ),
        Admit::Now => {}
    }
    match spawn(&process.name, args) {
        Ok(child) => {
            process.child = Some(child);
            process.lives.began(now);
        }
        Err(e) => {
            tracing::error!("cannot restart process {}: {e}", process.name);
            process.restart_at = Some(now + process.lives.died(now));
        }
    }
}

/// Sends SIGTERM to every running process, waits for them until `stop_by`, then
/// kills what is left.
fn stop_all(processes: &mut [Process], stop_by: Instant) {
    let running = processes
        .iter_mut()
        .filter_map(|p| Some((format!("process {}", p.name), p.child.take()?)))
        .collect();
    restarts::stop(running, stop_by);
}

/// This process's stop signals (SIGTERM, SIGINT), watched from when it is made: how a
/// process of a mapped graph that has no end of its own waits before its graph's
/// shutdown. Made first, a signal that comes before [`wait`](Self::wait) is not lost
/// (nor does it kill the process unwound). The process that started this one going
/// away counts as a stop too: a supervisor killed outright leaves no process of its
/// host running on for ever.
#[derive(Debug)]
pub struct StopSignal {
    runtime: tokio::runtime::Runtime,
    term: tokio::signal::unix::Signal,
    interrupt: tokio::signal::unix::Signal,
    parent: Pid,
}

impl StopSignal {
    /// Starts watching.
    ///
    /// # Errors
    ///
    /// When the signals cannot be watched.
    pub fn watch() -> std::io::Result<Self> {
        use tokio::signal::unix::{SignalKind, signal};
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .enable_time()
            .build()?;
        let (term, interrupt) = runtime.block_on(async {
            Ok::<_, std::io::Error>((
                signal(SignalKind::terminate())?,
                signal(SignalKind::interrupt())?,
            ))
        })?;
        Ok(Self {
            runtime,
            term,
            interrupt,
            parent: nix::unistd::getppid(),
        })
    }

    /// Blocks until a stop signal has come (at once if one came already), or the
    /// parent is gone.
    pub fn wait(mut self) {
        while !self.came_within(PARENT_CHECK) {}
    }

    /// Waits up to `within` for a stop signal (one that came before counts); returns
    /// whether one came, or the parent is gone.
    pub fn came_within(&mut self, within: Duration) -> bool {
        let (term, interrupt) = (&mut self.term, &mut self.interrupt);
        let signalled = self.runtime.block_on(async {
            tokio::select! {
                _ = term.recv() => true,
                _ = interrupt.recv() => true,
                () = tokio::time::sleep(within) => false,
            }
        });
        let orphaned = nix::unistd::getppid() != self.parent;
        if orphaned {
            tracing::warn!("the process that started this one is gone: stopping");
        }
        signalled || orphaned
    }
}
