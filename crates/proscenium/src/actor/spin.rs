//! Spinning before parking: a waiter (an idle actor, an asker) keeps its thread awake a
//! few µs, yielding to the thread's other work, because waking a parked thread costs
//! more than the next message or reply is often away. One spinner a thread; spinners
//! offer their cores while the process has more runnable threads than it can run.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// How long a waiter keeps its thread awake before the thread parks: waking a parked
/// thread costs several µs, and the next message or reply is often closer than that.
/// (How the figure was chosen: `docs/performance.md`, actors.)
const SPIN: Duration = Duration::from_micros(20);

thread_local! {
    /// Whether a waiter on this thread is spinning: one at a time, so a thousand idle
    /// actors on one loop do not all spin.
    static SPINNING: Cell<bool> = const { Cell::new(false) };
}

/// Threads about to want a core: actors woken from their park that have not looked
/// since, and askers parked for a reply that may come any moment.
static WAKING: AtomicUsize = AtomicUsize::new(0);

/// Counts one more thread about to want a core, until [`awake`].
pub(crate) fn waking() {
    WAKING.fetch_add(1, Ordering::Relaxed);
}

/// Counts a thread counted by [`waking`] as running.
pub(crate) fn awake() {
    WAKING.fetch_sub(1, Ordering::Relaxed);
}

/// An asker parked for its reply, counted [`waking`] while it lives.
pub(crate) struct Parked(());

impl Parked {
    pub(crate) fn new() -> Self {
        waking();
        Self(())
    }
}

impl Drop for Parked {
    fn drop(&mut self) {
        awake();
    }
}

/// Threads of the process in a turn of a spin now.
static SPINNERS: AtomicUsize = AtomicUsize::new(0);

/// A turn of a spin: while it lives, other waiters on this thread park instead of
/// spinning too; dropping it (the turn over, or the future dropped) ends that.
pub(crate) struct Turn(());

impl Drop for Turn {
    fn drop(&mut self) {
        SPINNING.set(false);
        SPINNERS.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Starts one turn of a spin that began at `since` (set on the first call): the caller
/// yields to the thread's other work while holding it, then looks again. `None` once
/// the spin has lasted [`SPIN`] — for good: a wake-up that finds nothing does not start
/// another — or while another waiter on this thread spins; the caller then parks. Not
/// an `async fn`: its state would enlarge every idle actor's task.
///
/// While another thread of the process spins too, or one is [`WAKING`], each turn also
/// offers the core to the kernel's other runnable threads (`sched_yield`): with more
/// threads than cores, the thread with the awaited message or reply may be waiting for
/// this very core, and would wait until the spin ran out. Not otherwise: a yield lets
/// any process's thread in for a whole time slice, and would take the core from an
/// actor whose sender is merely a little slower than it.
pub(crate) fn spin_turn(since: &mut Option<Instant>) -> Option<Turn> {
    let began = *since.get_or_insert_with(Instant::now);
    if began.elapsed() >= SPIN || SPINNING.get() {
        return None;
    }
    SPINNING.set(true);
    let others = SPINNERS.fetch_add(1, Ordering::Relaxed);
    if others > 0 || WAKING.load(Ordering::Relaxed) > 0 {
        std::thread::yield_now();
    }
    Some(Turn(()))
}
