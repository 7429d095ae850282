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
//!
//! Under the staged model the server's graph has a stage for scripts, Leda's *CGI*
//! stage (`staged/scripts.rs`), and the threads serving it take the place of the
//! pools': a request's thread hands its script to the stage ([`install_stage`]), the
//! stage's cluster queues it (its bound the `[lua] queue`'s) and runs it on one of its
//! threads, and a retired request's thread is stood aside in its cluster — a new
//! thread in its place, the stuck one leaving when its script ends — rather than
//! replaced in a pool. A pool starts threads of its own only when it is first asked to
//! run a script where no stage is installed.

use std::cell::RefCell;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Once, Weak};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, Sender};
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
use crate::rt::hand_off::Handed;
use crate::rt::overload::{self, Bound};
use crate::shared::LockSet;
use crate::stage::crew::{self, Seat};

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

/// A request's script, on its way to a thread: run with the thread's way of waiting.
type Run = Box<dyn FnOnce(Waits<'_>) + Send>;

/// A script for the staged server's scripts stage to run on its thread.
pub(crate) struct ScriptJob(Run);

impl ScriptJob {
    /// Runs the script on this thread, a thread of the stage's cluster: watched as a
    /// script thread is, and stood aside in its cluster when retired.
    pub(crate) fn run_on_stage(self) {
        let worker = WORKER.with_borrow_mut(|worker| {
            Arc::clone(worker.get_or_insert_with(|| Worker::register(Place::Stage(crew::seat()))))
        });
        (self.0)(Waits::Aside);
        worker.end_retirement();
    }
}

/// Takes a script to run; one it gives back (the stage has not started yet) runs as
/// if no stage were installed.
type StageHook = Rc<dyn Fn(ScriptJob) -> Handed<ScriptJob>>;

thread_local! {
    /// Where scripts asked for on this thread go, when the staged server's scripts
    /// stage is there.
    static STAGE: RefCell<Option<StageHook>> = const { RefCell::new(None) };
}

/// Sends the scripts of requests served on this thread to a stage, through `hook`.
pub(crate) fn install_stage(hook: impl Fn(ScriptJob) -> Handed<ScriptJob> + 'static) {
    STAGE.set(Some(Rc::new(hook)));
}

/// The script threads of one app or set of pages.
pub(super) struct ScriptThreads(Arc<Shared>);

struct Shared {
    jobs: Sender<Run>,
    queue: Receiver<Run>,
    timeout: Duration,
    /// Retired threads still running.
    retired: AtomicUsize,
    max_retired: usize,
    /// The threads to start, once a script is run with no stage installed.
    threads: usize,
    start: Once,
    /// Threads started so far, for their names.
    started: AtomicUsize,
}

/// One request on its way through a script thread: its deadline, the values its
/// script was lent, and its pool, whose count of retired threads it joins if retired.
pub(super) struct Ticket {
    deadline: Instant,
    loan: Arc<Loan>,
    given_up: AtomicBool,
    pool: Weak<Shared>,
}

/// How a script's thread waits for the locks it declared: on its own runtime (a
/// script thread), or on a thread of the moment with a runtime of its own (a stage
/// thread, which is itself a loop: a runtime cannot be blocked on inside another).
#[derive(Clone, Copy)]
enum Waits<'a> {
    Here(&'a Runtime),
    Aside,
}

/// A request's turn on a script thread: how the thread waits for locks, and the
/// request's ticket.
pub(super) struct Turn<'a> {
    waits: Waits<'a>,
    ticket: &'a Ticket,
}

impl Turn<'_> {
    /// Takes the locks a script declared (`locks`) and lends their values to it, for
    /// [`bridge::lending`](super::bridge::lending); waits until the request's deadline
    /// at most.
    #[allow(clippy::result_large_err)] // as bridge::hold's
    pub(super) fn hold(&self, locks: Option<&Arc<LockSet>>) -> Result<Option<Arc<Loan>>, Response> {
        let waits = self.waits;
        bridge::hold(locks, &self.ticket.loan, self.ticket.deadline, |wait| {
            waits.block_on(wait)
        })
    }
}

impl Waits<'_> {
    /// Runs `wait` to its end on this thread's way of waiting; `None` if no runtime
    /// could be made for it.
    fn block_on<T: Send>(self, wait: Pin<Box<dyn Future<Output = T> + Send + '_>>) -> Option<T> {
        match self {
            Self::Here(runtime) => Some(runtime.block_on(wait)),
            // Only when the locks are busy: a thread and a runtime for the wait.
            Self::Aside => std::thread::scope(|scope| {
                scope
                    .spawn(|| Some(crate::rt::runtime::current_thread().ok()?.block_on(wait)))
                    .join()
                    .ok()
                    .flatten()
            }),
        }
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
    /// Once retired, the pool whose count of retired threads it is in.
    retired: Mutex<Option<Weak<Shared>>>,
    place: Place,
}

/// Where a script thread is, and so what takes its place when it is retired.
enum Place {
    /// A pool's own thread: the pool starts another.
    Pool(Weak<Shared>),
    /// A thread of the scripts stage's cluster: stood aside in it (`None`: a thread
    /// outside a crew, which nothing replaces).
    Stage(Option<Seat>),
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
        Self(Arc::new(Shared {
            jobs,
            queue,
            timeout: spec.timeout,
            retired: AtomicUsize::new(0),
            max_retired: spec.retired,
            threads: threads(spec),
            start: Once::new(),
            started: AtomicUsize::new(0),
        }))
    }

    /// Runs `work` on a script thread (the scripts stage's, when this thread has it)
    /// and answers with what it hands back, or with 503 when the queue is full, too
    /// many threads are retired, or the deadline passes.
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
            pool: Arc::downgrade(&self.0),
        });
        let (tx, rx) = oneshot::channel();
        let margin = shared.timeout.min(MAX_MARGIN);
        let taken = Arc::clone(&ticket);
        let job: Run = Box::new(move |waits| {
            if taken.is_given_up() {
                return;
            }
            let _busy = Busy::start(&taken, margin);
            let turn = Turn {
                waits,
                ticket: &taken,
            };
            let ran = catch_unwind(AssertUnwindSafe(|| work(&turn)));
            let _ = tx.send(ran);
        });
        let unstaged = match STAGE.with_borrow(Clone::clone) {
            Some(stage) => match stage(ScriptJob(job)) {
                Handed::Taken => return Reply::later(answer(rx, ticket)),
                Handed::Refused => None,
                Handed::NotOpen(ScriptJob(job)) => Some(job),
            },
            None => Some(job),
        };
        let sent = unstaged.is_some_and(|job| {
            shared
                .start
                .call_once(|| (0..shared.threads).for_each(|_| start(&self.0)));
            // Refused: a full queue (the pool holds its receiver).
            shared.jobs.try_send(job).is_ok()
        });
        if !sent {
            overload::note(Bound::LuaQueue);
            return Reply::ready(unavailable("the Lua queue is full"));
        }
        Reply::later(answer(rx, ticket))
    }
}

/// The script threads `spec` asks for (its 0: one a core).
pub(crate) fn threads(spec: &LuaSpec) -> usize {
    match spec.threads {
        0 => std::thread::available_parallelism().map_or(2, usize::from),
        n => n,
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
fn work(queue: &Receiver<Run>, pool: Weak<Shared>, runtime: &Runtime) {
    let worker = Worker::register(Place::Pool(pool));
    WORKER.set(Some(Arc::clone(&worker)));
    while let Ok(job) = queue.recv() {
        job(Waits::Here(runtime));
        if worker.end_retirement() {
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
            .is_some_and(|w| w.retired.lock().is_some())
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
    /// Returns this thread's worker, watched from now on.
    fn register(place: Place) -> Arc<Self> {
        let worker = Arc::new(Self {
            tid: nix::unistd::gettid(),
            retire_at: AtomicU64::new(0),
            ticket: Mutex::new(None),
            retired: Mutex::new(None),
            place,
        });
        WORKERS.lock().push(Arc::downgrade(&worker));
        worker
    }

    /// Gives up its request, lowers it to idle priority and puts a new thread in its
    /// place — unless the request due at `at` has ended meanwhile.
    fn retire(&self, at: u64) {
        // Under the ticket's lock, which a request's start and end take too: the ticket
        // taken is the overdue request's, and it is counted retired before its thread
        // can see it is.
        let (ticket, pool, retired) = {
            let mut current = self.ticket.lock();
            let still_due = self
                .retire_at
                .compare_exchange(at, 0, Ordering::SeqCst, Ordering::SeqCst)
                .is_ok();
            let Some(ticket) = current.take().filter(|_| still_due) else {
                return;
            };
            let Some(pool) = ticket.pool.upgrade() else {
                return;
            };
            let retired = pool.retired.fetch_add(1, Ordering::AcqRel) + 1;
            *self.retired.lock() = Some(Arc::downgrade(&pool));
            crate::counters::Tally::LuaRetired.add(1);
            (ticket, pool, retired)
        };
        ticket.give_up();
        watch::lower_to_idle(self.tid);
        let replaced = match &self.place {
            Place::Pool(own) => own.upgrade().inspect(start).is_some(),
            Place::Stage(seat) => seat.as_ref().is_some_and(Seat::stand_aside),
        };
        tracing::warn!(
            replaced,
            "lua: a script ran past its deadline and would not stop: its thread is retired \
             at idle priority ({retired} retired threads running, at most {})",
            pool.max_retired
        );
    }

    /// Once its script has ended: whether the thread was retired, and if so counts it
    /// out of its pool's retired threads (it leaves: a pool's thread exits, a stage's
    /// leaves its cluster).
    fn end_retirement(&self) -> bool {
        let Some(pool) = self.retired.lock().take() else {
            return false;
        };
        if let Some(pool) = pool.upgrade() {
            pool.retired.fetch_sub(1, Ordering::AcqRel);
        }
        true
    }
}
