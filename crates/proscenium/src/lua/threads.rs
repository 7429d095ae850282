//! Script threads: where Lua runs, never on a loop or on a thread model's connection
//! thread, so that a script the instruction budget cannot stop (a C function that
//! loops, the pattern matcher backtracking) holds one script thread and nothing else.
//!
//! Each app or set of pages has `[lua] threads` of them — one a core by default: a
//! script is CPU work, more threads than cores add no throughput, and a thread held
//! past its deadline is replaced rather than waited for — and a queue of
//! `[lua] queue` requests (full: 503 with `Retry-After`, as the blocking pool's).
//! An app's routes live in its states, so its requests are routed on a script thread
//! too; what none of them matches is handed back to the request's side.
//! A request's side awaits the answer until its deadline (`[lua] timeout`, wall clock,
//! from when it was queued); past it the client gets 503, the request is given up —
//! the values its script holds are taken back, its locks released — and its
//! connection goes on. A request given up before a thread took it never runs.
//!
//! The watcher ([`watch`](super::watch)) looks at the busy threads every few
//! milliseconds; one whose request is still running a margin past its deadline (the
//! timeout again, at most a second) is retired: its place in the pool goes to a new
//! thread, it is lowered to idle priority, and when its script ends at last it exits,
//! its state dropped rather than given back. Past `[lua] retired` retired threads
//! alive at once, the pool refuses requests (503) until some have ended, so hostile
//! requests cannot grow threads without end. Nothing waits for a script thread at
//! shutdown: the threads end when their pool is dropped, or with the process.

use std::cell::RefCell;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use nix::unistd::Pid;
use parking_lot::Mutex;
use tokio::runtime::Runtime;
use tokio::sync::oneshot;

use super::LuaSpec;
use super::bridge::{self, Loan};
use super::watch;
use crate::app::Reply;
use crate::http::Response;
use crate::http::response::unavailable;
use crate::rt::overload::{self, Bound};
use crate::shared::LockSet;

/// The most a request may run past its deadline before its thread is retired.
const MAX_MARGIN: Duration = Duration::from_secs(1);

/// What a script thread hands back to the request's side.
pub(super) enum Ran {
    /// The answer.
    Answer(Response),
    /// Not a script's to answer (the next handler, a feed): done on the request's own
    /// thread, which owns its connection.
    Elsewhere(Box<dyn FnOnce() -> Reply + Send>),
}

type Job = Box<dyn FnOnce(&Runtime) + Send>;

/// The script threads of one app or set of pages.
pub(super) struct ScriptThreads(Arc<Shared>);

struct Shared {
    jobs: Sender<Job>,
    queue: Receiver<Job>,
    timeout: Duration,
    /// Retired threads still running.
    retired: AtomicUsize,
    max_retired: usize,
    /// Threads started so far, for their names.
    started: AtomicUsize,
}

/// One request on its way through a script thread: its deadline, and the values its
/// script was lent.
pub(super) struct Ticket {
    deadline: Instant,
    loan: Arc<Loan>,
    given_up: AtomicBool,
}

/// A request's turn on a script thread: the thread's runtime (to wait for locks on)
/// and the request's ticket.
pub(super) struct Turn<'a> {
    runtime: &'a Runtime,
    ticket: &'a Ticket,
}

impl Turn<'_> {
    /// Takes the locks a script declared (`locks`) and lends their values to it, for
    /// [`bridge::lending`](super::bridge::lending); waits until the request's deadline
    /// at most.
    #[allow(clippy::result_large_err)] // as bridge::hold's
    pub(super) fn hold(&self, locks: Option<&Arc<LockSet>>) -> Result<Option<Arc<Loan>>, Response> {
        bridge::hold(locks, &self.ticket.loan, self.ticket.deadline, self.runtime)
    }
}

impl Ticket {
    /// Gives the request up: its script's values are taken back (their locks
    /// released), and a thread that has not taken it yet skips it.
    fn give_up(&self) {
        self.given_up.store(true, Ordering::SeqCst);
        self.loan.take_back();
    }

    fn is_given_up(&self) -> bool {
        self.given_up.load(Ordering::SeqCst)
    }
}

/// A script thread as the watcher sees it.
struct Worker {
    tid: Pid,
    /// When its request is to be retired ([`watch::now`]'s milliseconds); 0: idle.
    retire_at: AtomicU64,
    ticket: Mutex<Option<Arc<Ticket>>>,
    retired: AtomicBool,
    pool: Weak<Shared>,
}

/// The script threads of every pool, for the watcher.
static WORKERS: Mutex<Vec<Weak<Worker>>> = Mutex::new(Vec::new());

thread_local! {
    /// This thread's worker, on a script thread.
    static WORKER: RefCell<Option<Arc<Worker>>> = const { RefCell::new(None) };
}

impl std::fmt::Debug for ScriptThreads {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ScriptThreads")
            .field("queued", &self.0.queue.len())
            .field("retired", &self.0.retired.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl ScriptThreads {
    /// Starts `spec.threads` threads (0: one a core).
    pub(super) fn new(spec: &LuaSpec) -> Self {
        let (jobs, queue) = crossbeam_channel::bounded(spec.queue.max(1));
        let shared = Arc::new(Shared {
            jobs,
            queue,
            timeout: spec.timeout,
            retired: AtomicUsize::new(0),
            max_retired: spec.retired,
            started: AtomicUsize::new(0),
        });
        let threads = match spec.threads {
            0 => std::thread::available_parallelism().map_or(2, usize::from),
            n => n,
        };
        for _ in 0..threads {
            start(&shared);
        }
        Self(shared)
    }

    /// Runs `work` on a script thread and answers with what it hands back, or with 503
    /// when the queue is full, too many threads are retired, or the deadline passes.
    pub(super) fn run(&self, work: impl FnOnce(&Turn<'_>) -> Ran + Send + 'static) -> Reply {
        let shared = &*self.0;
        if shared.retired.load(Ordering::Acquire) >= shared.max_retired {
            overload::note(Bound::LuaRetired);
            return Reply::ready(unavailable("too many scripts past their deadline"));
        }
        let ticket = Arc::new(Ticket {
            deadline: Instant::now() + shared.timeout,
            loan: Arc::default(),
            given_up: AtomicBool::new(false),
        });
        let (tx, rx) = oneshot::channel();
        let margin = shared.timeout.min(MAX_MARGIN);
        let taken = Arc::clone(&ticket);
        let job: Job = Box::new(move |runtime| {
            if taken.is_given_up() {
                return;
            }
            let _busy = Busy::start(&taken, margin);
            let turn = Turn {
                runtime,
                ticket: &taken,
            };
            let ran = catch_unwind(AssertUnwindSafe(|| work(&turn)));
            let _ = tx.send(ran);
        });
        if let Err(refused) = shared.jobs.try_send(job) {
            if let TrySendError::Full(_) = refused {
                overload::note(Bound::LuaQueue);
            }
            return Reply::ready(unavailable("the Lua queue is full"));
        }
        Reply::later(answer(rx, ticket))
    }
}

/// Awaits what the script thread hands back, until the ticket's deadline.
async fn answer(rx: oneshot::Receiver<std::thread::Result<Ran>>, ticket: Arc<Ticket>) -> Response {
    match tokio::time::timeout_at(ticket.deadline.into(), rx).await {
        Ok(Ok(Ok(Ran::Answer(res)))) => res,
        Ok(Ok(Ok(Ran::Elsewhere(then)))) => then().into_response().await,
        Ok(Ok(Err(panic))) => {
            tracing::error!(
                "lua: a script thread panicked: {}",
                crate::rt::panic_message(&panic)
            );
            crate::app::error(http::StatusCode::INTERNAL_SERVER_ERROR, "the script failed")
        }
        Ok(Err(_)) => unavailable("the request was given up"),
        Err(_) => {
            ticket.give_up();
            tracing::warn!("lua: a script ran past its deadline: answered 503");
            unavailable("the script ran past its deadline")
        }
    }
}

/// Starts a script thread of `shared`'s.
fn start(shared: &Arc<Shared>) {
    let n = shared.started.fetch_add(1, Ordering::Relaxed);
    let queue = shared.queue.clone();
    let pool = Arc::downgrade(shared);
    let runtime = match crate::rt::runtime::current_thread() {
        Ok(runtime) => runtime,
        Err(e) => return tracing::error!("lua: cannot start a script thread: {e}"),
    };
    let spawned = std::thread::Builder::new()
        .name(format!("lua-{n}"))
        .spawn(move || work(&queue, pool, &runtime));
    if let Err(e) = spawned {
        tracing::error!("lua: cannot start a script thread: {e}");
    }
}

/// A script thread's loop: the pool's jobs, until the pool is dropped or the thread is
/// retired.
fn work(queue: &Receiver<Job>, pool: Weak<Shared>, runtime: &Runtime) {
    let worker = Arc::new(Worker {
        tid: nix::unistd::gettid(),
        retire_at: AtomicU64::new(0),
        ticket: Mutex::new(None),
        retired: AtomicBool::new(false),
        pool,
    });
    WORKERS.lock().push(Arc::downgrade(&worker));
    WORKER.with(|w| *w.borrow_mut() = Some(Arc::clone(&worker)));
    while let Ok(job) = queue.recv() {
        job(runtime);
        if worker.retired.load(Ordering::SeqCst) {
            if let Some(pool) = worker.pool.upgrade() {
                pool.retired.fetch_sub(1, Ordering::AcqRel);
            }
            tracing::info!("lua: a retired script thread's script ended: the thread exits");
            return;
        }
    }
}

/// A request running on this script thread, for the watcher to retire; ended when
/// dropped.
struct Busy(Option<Arc<Worker>>);

impl Busy {
    fn start(ticket: &Arc<Ticket>, margin: Duration) -> Self {
        let worker = WORKER.with(|w| w.borrow().clone());
        if let Some(worker) = &worker {
            let late = ticket.deadline.saturating_duration_since(Instant::now()) + margin;
            let mut current = worker.ticket.lock();
            *current = Some(Arc::clone(ticket));
            worker
                .retire_at
                .store(watch::now() + late.as_millis() as u64, Ordering::SeqCst);
            drop(current);
            watch::wake();
        }
        Self(worker)
    }
}

impl Drop for Busy {
    fn drop(&mut self) {
        if let Some(worker) = &self.0 {
            let mut ticket = worker.ticket.lock();
            worker.retire_at.store(0, Ordering::SeqCst);
            ticket.take();
        }
    }
}

/// Whether this thread is a retired script thread, whose state is not to be given
/// back.
pub(super) fn is_retired() -> bool {
    WORKER.with(|w| {
        w.borrow()
            .as_ref()
            .is_some_and(|w| w.retired.load(Ordering::SeqCst))
    })
}

/// Retires the script threads whose requests ran past their deadline by the margin
/// (`now` in [`watch::now`]'s milliseconds); returns whether any script thread is busy.
pub(super) fn retire_overdue(now: u64) -> bool {
    let mut busy = false;
    let mut overdue = Vec::new();
    WORKERS.lock().retain(|worker| {
        let Some(worker) = worker.upgrade() else {
            return false;
        };
        let at = worker.retire_at.load(Ordering::SeqCst);
        busy |= at != 0;
        if at != 0 && now >= at {
            overdue.push((worker, at));
        }
        true
    });
    for (worker, at) in overdue {
        worker.retire(at);
    }
    busy
}

impl Worker {
    /// Gives up its request, lowers it to idle priority and puts a new thread in its
    /// place — unless the request due at `at` has ended meanwhile.
    fn retire(&self, at: u64) {
        let Some(pool) = self.pool.upgrade() else {
            return;
        };
        // Under the ticket's lock, which a request's start and end take too: the ticket
        // taken is the overdue request's, and it is counted retired before its thread
        // can see it is.
        let (ticket, retired) = {
            let mut ticket = self.ticket.lock();
            let still_due = self
                .retire_at
                .compare_exchange(at, 0, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok();
            if !still_due {
                return;
            }
            let retired = pool.retired.fetch_add(1, Ordering::AcqRel) + 1;
            self.retired.store(true, Ordering::SeqCst);
            crate::counters::Tally::LuaRetired.add(1);
            (ticket.take(), retired)
        };
        if let Some(ticket) = ticket {
            ticket.give_up();
        }
        watch::lower_to_idle(self.tid);
        start(&pool);
        tracing::warn!(
            "lua: a script ran past its deadline and would not stop: its thread is retired \
             at idle priority and replaced ({retired} retired threads running, at most {})",
            pool.max_retired
        );
    }
}
