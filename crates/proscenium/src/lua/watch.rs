//! The instruction budget, counted only for requests that run long. Once a count hook
//! is set, Lua 5.4 traps into it on every instruction, whatever its count: Leda's page
//! (a loop of 30,000 iterations, `bench/peers/lua/leda`) cost 406 µs a page with one
//! and 201 µs without. So a request starts without one, and the watcher — a thread
//! looking every few milliseconds at the threads running Lua — arms it once the
//! request has run [`GRACE`]: it signals the request's thread, whose handler sets the
//! hook with `lua_sethook`, the one call Lua 5.4 makes safe in a signal handler (its
//! `ldebug.c`; `lua.c` stops a script on Ctrl-C so). From then on the request's
//! instructions count against its budget. The signal reaches the state's main thread
//! only, and a coroutine takes its hook from the thread that makes it, when it is
//! made: so a script is counted from the moment it makes a coroutine.
//!
//! The same watcher retires the script threads whose requests run a margin past their
//! deadline ([`threads`](super::threads)): what the budget cannot stop — C code, such
//! as Lua's pattern matcher — is left to finish on a thread lowered to idle priority.

// Setting a hook from a signal handler takes Lua's C API, and its state's pointer.
#![allow(unsafe_code)]

use std::cell::Cell;
use std::ffi::c_int;
use std::ptr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering, compiler_fence};
use std::sync::{Arc, Once, OnceLock, Weak};
use std::time::{Duration, Instant};

use mlua::ffi;
use nix::sys::pthread::{Pthread, pthread_kill, pthread_self};
use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
use parking_lot::Mutex;

use super::sandbox::Budget;

/// How long a request runs before its instructions are counted.
const GRACE: Duration = Duration::from_millis(10);

/// How many instructions run between two looks at the budget, once it is counted.
pub(super) const HOOK_EVERY: u32 = 10_000;

/// The signal that arms a thread's hook. SIGURG is ignored by default and sent by
/// nothing else here; Go preempts its goroutines with it for the same reasons.
const ARM: Signal = Signal::SIGURG;

/// After this many looks without a request running, the watcher sleeps until one
/// starts (a second of quiet).
const IDLE_LOOKS: u32 = 200;

/// The main thread of a state, where the signal handler sets the hook.
#[derive(Debug, Clone, Copy)]
pub(super) struct Main(*mut ffi::lua_State);

// SAFETY: the pointer is used only on the thread running the state's request (the
// state itself is `Send` and serves one request at a time).
unsafe impl Send for Main {}

impl Main {
    /// The main thread of `lua`, which must not be inside a call.
    pub(super) fn of(lua: &mlua::Lua) -> mlua::Result<Self> {
        let mut main = ptr::null_mut();
        // SAFETY: the closure only reads the state pointer it is given.
        unsafe { lua.exec_raw::<()>((), |state| main = state)? };
        Ok(Self(main))
    }
}

thread_local! {
    /// The main thread of the state whose request runs on this thread, if one does:
    /// the signal handler's, so initialised as a constant and without a destructor.
    static STATE: Cell<*mut ffi::lua_State> = const { Cell::new(ptr::null_mut()) };
    /// That request's budget, which the hook spends.
    static BUDGET: Cell<*const Budget> = const { Cell::new(ptr::null()) };
    /// This thread's place in the watcher's list.
    static PLACE: Place = Place::register();
}

/// A thread that runs Lua, as the watcher sees it.
struct Slot {
    thread: Pthread,
    /// When its request started (milliseconds since [`epoch`], plus one); 0: none.
    since: AtomicU64,
    /// The watcher has signalled this request.
    signalled: AtomicBool,
    /// The thread has not ended: the watcher signals it only while holding this.
    alive: Mutex<bool>,
}

/// The slot of the thread it belongs to; when the thread ends, its slot says so before
/// the thread is gone, so no signal goes to a thread that is no more.
struct Place(Arc<Slot>);

impl Place {
    fn register() -> Self {
        let slot = Arc::new(Slot {
            thread: pthread_self(),
            since: AtomicU64::new(0),
            signalled: AtomicBool::new(false),
            alive: Mutex::new(true),
        });
        watcher().slots.lock().push(Arc::downgrade(&slot));
        Self(slot)
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        *self.0.alive.lock() = false;
    }
}

/// The watcher: the slots of the threads that ran Lua, and its own thread.
struct Watcher {
    slots: Mutex<Vec<Weak<Slot>>>,
    thread: std::thread::Thread,
    /// It sleeps until a request starts.
    parked: AtomicBool,
}

fn epoch() -> Instant {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    *EPOCH.get_or_init(Instant::now)
}

/// Milliseconds since the watcher's epoch, plus one (0 means none).
pub(super) fn now() -> u64 {
    epoch().elapsed().as_millis() as u64 + 1
}

fn watcher() -> &'static Watcher {
    static WATCHER: OnceLock<Watcher> = OnceLock::new();
    WATCHER.get_or_init(|| {
        let thread = std::thread::Builder::new()
            .name("lua-watcher".into())
            .spawn(watch)
            .expect("the Lua watcher's thread starts");
        Watcher {
            slots: Mutex::new(Vec::new()),
            thread: thread.thread().clone(),
            parked: AtomicBool::new(false),
        }
    })
}

/// The watcher's loop: signals each thread whose request has run past [`GRACE`].
fn watch() {
    let watcher = watcher();
    let mut idle = 0;
    loop {
        std::thread::sleep(GRACE / 2);
        if look(watcher) {
            idle = 0;
            continue;
        }
        idle += 1;
        if idle >= IDLE_LOOKS {
            watcher.parked.store(true, Ordering::SeqCst);
            // A request that started before `parked` was seen is found here.
            if !look(watcher) {
                std::thread::park();
            }
            watcher.parked.store(false, Ordering::SeqCst);
            idle = 0;
        }
    }
}

/// Signals the threads due and retires the script threads overdue (see
/// [`threads`](super::threads)); returns whether any request was running.
fn look(watcher: &Watcher) -> bool {
    let now = now();
    let grace = GRACE.as_millis() as u64;
    let mut running = super::threads::retire_overdue(now);
    watcher.slots.lock().retain(|slot| {
        let Some(slot) = slot.upgrade() else {
            return false;
        };
        let since = slot.since.load(Ordering::SeqCst);
        running |= since != 0;
        if since != 0
            && now.saturating_sub(since) >= grace
            && !slot.signalled.swap(true, Ordering::SeqCst)
        {
            let alive = slot.alive.lock();
            if *alive {
                // A thread between requests ignores it; one in the next request is
                // counted early, which costs time, never safety.
                let _ = pthread_kill(slot.thread, ARM);
            }
        }
        true
    });
    running
}

/// Wakes the watcher if it sleeps: a request has started.
pub(super) fn wake() {
    let watcher = watcher();
    if watcher.parked.load(Ordering::SeqCst) {
        watcher.thread.unpark();
    }
}

/// Lowers thread `tid` of this process to idle priority (`SCHED_IDLE`: it runs only
/// when no other thread wants the CPU), or to nice 19 where that is refused.
pub(super) fn lower_to_idle(tid: nix::unistd::Pid) {
    use nix::libc;
    let param = libc::sched_param { sched_priority: 0 };
    // SAFETY: `sched_setscheduler` reads `param` only; a thread id that has ended meanwhile
    // makes it fail with ESRCH, harmlessly.
    let lowered = unsafe { libc::sched_setscheduler(tid.as_raw(), libc::SCHED_IDLE, &param) };
    if lowered != 0 {
        // SAFETY: as above; on Linux `PRIO_PROCESS` with a thread id names that thread.
        unsafe { libc::setpriority(libc::PRIO_PROCESS, tid.as_raw() as libc::id_t, 19) };
    }
}

/// The signal's handler: arms the hook of the state running on this thread, if any.
extern "C" fn on_arm(_: c_int) {
    arm(STATE.with(Cell::get));
}

/// Sets the counting hook on `state` (if not null): safe in a signal handler.
fn arm(state: *mut ffi::lua_State) {
    if !state.is_null() {
        // SAFETY: `state` is the main thread of the state this thread runs now;
        // `lua_sethook` may be called asynchronously (Lua 5.4's ldebug.c).
        unsafe { ffi::lua_sethook(state, Some(count), ffi::LUA_MASKCOUNT, HOOK_EVERY as c_int) };
    }
}

/// The hook: spends the running request's budget, and stops the script past it.
unsafe extern "C-unwind" fn count(state: *mut ffi::lua_State, _: *mut ffi::lua_Debug) {
    let budget = BUDGET.with(Cell::get);
    // SAFETY: `BUDGET` points at the running request's budget while it runs.
    if budget.is_null() || unsafe { &*budget }.spend(u64::from(HOOK_EVERY)) {
        return;
    }
    // SAFETY: an error raised from a hook unwinds (longjmp) to the call's protected
    // entry, across Lua's C frames only; nothing here has a destructor.
    unsafe {
        ffi::lua_pushstring(state, c"past its instruction budget".as_ptr());
        ffi::lua_error(state)
    }
}

/// Counts the running request's instructions from now: a script is making a coroutine.
pub(super) fn count_from_now() {
    arm(STATE.with(Cell::get));
}

/// Runs `call` — a request, or the loading of scripts — on the state whose main thread
/// is `main`, within `budget`: uncounted for [`GRACE`], counted after.
pub(super) fn run<R>(main: Main, budget: &Budget, call: impl FnOnce() -> R) -> R {
    static HANDLER: Once = Once::new();
    HANDLER.call_once(|| {
        let action = SigAction::new(
            SigHandler::Handler(on_arm),
            SaFlags::SA_RESTART,
            SigSet::empty(),
        );
        // SAFETY: the handler only reads a constant-initialised thread local and calls
        // `lua_sethook`, which Lua makes safe for signals.
        unsafe { sigaction(ARM, &action) }.expect("the Lua watcher's signal handler is installed");
    });
    let running = Running::start(main, budget);
    let result = call();
    drop(running);
    result
}

/// A request running on this thread, ended when dropped (a panic included).
struct Running(Main);

impl Running {
    fn start(main: Main, budget: &Budget) -> Self {
        STATE.with(|s| s.set(main.0));
        BUDGET.with(|b| b.set(budget));
        compiler_fence(Ordering::SeqCst);
        PLACE.with(|place| {
            place.0.signalled.store(false, Ordering::SeqCst);
            place.0.since.store(now(), Ordering::SeqCst);
        });
        wake();
        Self(main)
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        PLACE.with(|place| place.0.since.store(0, Ordering::SeqCst));
        STATE.with(|s| s.set(ptr::null_mut()));
        compiler_fence(Ordering::SeqCst);
        // SAFETY: this thread runs the state and no call is in progress; a signal from
        // now on finds no state to arm.
        unsafe { ffi::lua_sethook(self.0.0, None, 0, 0) };
        BUDGET.with(|b| b.set(ptr::null()));
    }
}
