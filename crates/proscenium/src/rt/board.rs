//! The load board of `prefork`: how many connections each worker process holds, in
//! memory shared by the supervisor and its workers.
//!
//! Workers accept from one shared listening socket, and the kernel wakes all of them
//! for each connection: whichever runs first takes it, so a burst of connections
//! lands on one worker while the other idles, and a CPU-bound route runs at half the
//! machine's rate (docs/performance.md, prefork).
//! With the board a worker accepts only while it holds no more connections than the
//! least loaded worker — join-shortest-queue across processes, as the dispatcher does
//! across loops.
//!
//! The board is a `memfd` mapped shared; each worker process has a seat, a counter
//! there. A slot of the supervisor has two seats so that during a rolling replacement
//! the old and the new worker of a slot count separately. A seat no worker accepts on
//! is [`VACANT`]: the supervisor vacates the seat of a worker that died, and a worker
//! vacates its own when it stops accepting.
//!
//! Beside each counter is the seat's heartbeat: the monotonic clock, in milliseconds,
//! when its worker last showed it runs (a thread of the worker beats every
//! [`BEAT_EVERY`] while every loop of the worker turns: none has been busy in one
//! handler for more than [`FROZEN_AFTER`]). A worker whose beat is older than [`STALE_AFTER`] — stopped
//! (SIGSTOP), frozen, swapped out — holds no other worker back: it cannot accept, and
//! deferring to its low count stalled every new connection (issue 15). The supervisor
//! replaces such a worker after its own grace period.

// Shared memory between processes needs `mmap` and owning an inherited descriptor;
// the workspace's other `unsafe` is listed beside `unsafe_code` in its Cargo.toml.
#![allow(unsafe_code)]

use std::num::NonZeroUsize;
use std::os::fd::{AsFd, FromRawFd, OwnedFd, RawFd};
use std::ptr::NonNull;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::time::Duration;

use nix::fcntl::{FcntlArg, fcntl};
use nix::sys::memfd::{MFdFlags, memfd_create};
use nix::sys::mman::{MapFlags, ProtFlags, mmap, munmap};

use super::watchdog::Turning;

/// A seat with no accepting worker: never the least loaded.
const VACANT: u32 = u32::MAX;
/// A heartbeat not given yet: the worker is still starting.
const UNBORN: u32 = 0;
/// How often a worker beats.
pub(crate) const BEAT_EVERY: Duration = Duration::from_millis(100);
/// A loop busy in one stretch of handler code for longer than this is frozen, and its
/// worker stops beating: the supervisor replaces it after its own grace period.
const FROZEN_AFTER: Duration = Duration::from_secs(1);
/// A worker that has not beaten for this long is passed over by the others.
const STALE_AFTER: Duration = Duration::from_secs(1);
/// How often a worker that is not the least loaded looks again. Short next to a
/// connection's life; meanwhile the least loaded worker accepts.
const RECHECK: Duration = Duration::from_millis(1);

/// Counters and heartbeats shared between the supervisor and its workers: `len`
/// counters, then `len` heartbeats.
#[derive(Debug)]
pub(crate) struct Board {
    counters: NonNull<AtomicU32>,
    len: usize,
    fd: OwnedFd,
}

// SAFETY: the mapping is only ever accessed through atomics, and it lives until drop.
unsafe impl Send for Board {}
// SAFETY: as above.
unsafe impl Sync for Board {}

impl Board {
    /// Creates a board of `seats` vacant seats.
    pub(crate) fn create(seats: usize) -> std::io::Result<Self> {
        let fd = memfd_create(c"proscenium-board", MFdFlags::MFD_CLOEXEC)?;
        nix::unistd::ftruncate(&fd, i64::try_from(seats * SEAT_BYTES).unwrap_or(i64::MAX))?;
        let board = Self::map(fd, seats)?;
        for seat in board.counters() {
            seat.store(VACANT, Ordering::Release);
        }
        for beat in board.beats() {
            beat.store(UNBORN, Ordering::Release);
        }
        Ok(board)
    }

    /// Maps the board the supervisor handed down as descriptor `fd`; once per process.
    pub(crate) fn inherit(fd: RawFd, seats: usize) -> std::io::Result<Self> {
        static TAKEN: AtomicBool = AtomicBool::new(false);
        if TAKEN.swap(true, Ordering::AcqRel) {
            return Err(std::io::Error::other("the load board was taken already"));
        }
        // SAFETY: the supervisor left `fd` open across exec for this process alone
        // (`inheritable_fd`, named in the environment of this worker only), nothing
        // else here opens or closes it, and `TAKEN` lets it be owned once.
        Self::map(unsafe { OwnedFd::from_raw_fd(fd) }, seats)
    }

    /// Maps `seats` counters of the memfd `fd`, once its size is checked to be theirs.
    ///
    /// # Errors
    ///
    /// `InvalidData` when the memfd is not `seats` seats long: a descriptor that
    /// is not the board, or a seat count in the environment that is not its own.
    /// Mapping past the end of a memfd and touching it would raise SIGBUS.
    fn map(fd: OwnedFd, seats: usize) -> std::io::Result<Self> {
        let bytes =
            NonZeroUsize::new(seats * SEAT_BYTES).ok_or(std::io::ErrorKind::InvalidInput)?;
        let size = nix::sys::stat::fstat(&fd)?.st_size;
        if u64::try_from(size).ok() != Some(bytes.get() as u64) {
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                format!(
                    "the load board is {size} bytes, not the {bytes} of {seats} seats \
                     ({SEAT_BYTES} bytes a seat)"
                ),
            ));
        }
        // SAFETY: a fresh shared mapping of a memfd `bytes` long (checked above); u32
        // atomics need 4-byte alignment and mappings are page aligned.
        let counters = unsafe {
            mmap(
                None,
                bytes,
                ProtFlags::PROT_READ | ProtFlags::PROT_WRITE,
                MapFlags::MAP_SHARED,
                &fd,
                0,
            )?
        };
        Ok(Self {
            counters: counters.cast(),
            len: seats,
            fd,
        })
    }

    fn counters(&self) -> &[AtomicU32] {
        // SAFETY: `len` counters, mapped for the life of `self`.
        unsafe { std::slice::from_raw_parts(self.counters.as_ptr(), self.len) }
    }

    fn beats(&self) -> &[AtomicU32] {
        // SAFETY: `len` heartbeats after the `len` counters, inside the mapping of
        // `2 * len` u32s (`SEAT_BYTES` a seat), for the life of `self`.
        unsafe { std::slice::from_raw_parts(self.counters.as_ptr().add(self.len), self.len) }
    }

    /// Marks `seat`'s worker as starting: its heartbeat is not expected yet.
    pub(crate) fn unborn(&self, seat: usize) {
        self.beats()[seat].store(UNBORN, Ordering::Release);
    }

    /// Records that `seat`'s worker runs, now.
    pub(crate) fn beat(&self, seat: usize) {
        self.beats()[seat].store(now_ms(), Ordering::Release);
    }

    /// Returns whether `seat`'s worker has beaten once and not within `grace`.
    pub(crate) fn is_silent_for(&self, seat: usize, grace: Duration) -> bool {
        let beat = self.beats()[seat].load(Ordering::Acquire);
        beat != UNBORN && is_older(beat, now_ms(), grace)
    }

    /// A copy of the board's descriptor that a child process inherits, to hand over
    /// while starting one worker (the original is close-on-exec).
    pub(crate) fn inheritable_fd(&self) -> std::io::Result<OwnedFd> {
        let fd = fcntl(self.fd.as_fd(), FcntlArg::F_DUPFD(0))?;
        // SAFETY: F_DUPFD returned a new descriptor that nothing else owns.
        Ok(unsafe { OwnedFd::from_raw_fd(fd) })
    }

    pub(crate) fn seats(&self) -> usize {
        self.len
    }

    /// Marks `seat` as having no accepting worker.
    pub(crate) fn vacate(&self, seat: usize) {
        self.counters()[seat].store(VACANT, Ordering::Release);
    }
}

impl Drop for Board {
    fn drop(&mut self) {
        // SAFETY: the mapping made in `map`; no reference to it outlives `self`.
        let _ = unsafe { munmap(self.counters.cast(), self.len * SEAT_BYTES) };
    }
}

/// Takes descriptor `fd`, the worker's end of its metrics link, which the supervisor
/// left open across exec for this process (`PROSCENIUM_METRICS`); once per process.
///
/// # Errors
///
/// The link was taken already, or `fd` is not an open socket.
pub(crate) fn inherit_metrics_link(fd: RawFd) -> std::io::Result<OwnedFd> {
    static TAKEN: AtomicBool = AtomicBool::new(false);
    let stat = nix::sys::stat::fstat(
        // SAFETY: only borrowed for the `fstat` call, which fails on a closed `fd`.
        unsafe { std::os::fd::BorrowedFd::borrow_raw(fd) },
    )?;
    if stat.st_mode & nix::libc::S_IFMT != nix::libc::S_IFSOCK {
        return Err(std::io::Error::other(format!(
            "descriptor {fd} is not a socket"
        )));
    }
    if TAKEN.swap(true, Ordering::AcqRel) {
        return Err(std::io::Error::other("the metrics link was taken already"));
    }
    // SAFETY: an open socket (checked above) the supervisor left open across exec for
    // this process alone, named in this worker's environment only; nothing else here
    // opens or closes it, and `TAKEN` lets it be owned once.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// One worker's seat on the board.
#[derive(Debug)]
pub(crate) struct Seat {
    board: Arc<Board>,
    index: usize,
}

impl Seat {
    pub(crate) fn new(board: Arc<Board>, index: usize) -> Self {
        board.beat(index);
        board.counters()[index].store(0, Ordering::Release);
        Self { board, index }
    }

    /// Starts the thread that beats for this worker every [`BEAT_EVERY`] while its
    /// loops turn, for the life of the process.
    pub(crate) fn keep_beating(&self, mut loops: Turning) -> std::io::Result<()> {
        let (board, index) = (self.board.clone(), self.index);
        std::thread::Builder::new()
            .name("proscenium-heartbeat".to_owned())
            .spawn(move || {
                loop {
                    if loops.every_loop_within(FROZEN_AFTER) {
                        board.beat(index);
                    }
                    std::thread::sleep(BEAT_EVERY);
                }
            })
            .map(drop)
    }

    /// Publishes this worker's live connections.
    pub(crate) fn publish(&self, live: usize) {
        let live = u32::try_from(live).unwrap_or(VACANT - 1);
        self.board.counters()[self.index].store(live, Ordering::Release);
    }

    /// Waits until this worker holds no more connections than any other accepting one.
    pub(crate) async fn wait_turn(&self) {
        while !self.least_loaded() {
            tokio::time::sleep(RECHECK).await;
        }
    }

    fn least_loaded(&self) -> bool {
        let counters = self.board.counters();
        let mine = counters[self.index].load(Ordering::Acquire);
        let now = now_ms();
        counters.iter().zip(self.board.beats()).all(|(c, beat)| {
            c.load(Ordering::Acquire) >= mine
                || is_older(beat.load(Ordering::Acquire), now, STALE_AFTER)
        })
    }

    /// Leaves the board: this worker accepts no more.
    pub(crate) fn withdraw(&self) {
        self.board.vacate(self.index);
    }
}

/// Bytes a seat takes on the board: its counter and its heartbeat.
const SEAT_BYTES: usize = 8;

/// Returns the monotonic clock (the same in every process) in milliseconds, as a
/// heartbeat: wrapping, never [`UNBORN`].
fn now_ms() -> u32 {
    let now = nix::time::clock_gettime(nix::time::ClockId::CLOCK_MONOTONIC).map_or(0, |t| {
        t.tv_sec().wrapping_mul(1000) + t.tv_nsec() / 1_000_000
    });
    // Truncating wraps every 49 days; heartbeats are compared by wrapping difference.
    (now as u32).max(1)
}

/// Returns whether heartbeat `beat` is older than `age` at `now` (a seat never beaten
/// is not: its worker is starting).
fn is_older(beat: u32, now: u32, age: Duration) -> bool {
    let age = u32::try_from(age.as_millis()).unwrap_or(u32::MAX);
    beat != UNBORN && now.wrapping_sub(beat) > age
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_least_loaded_accepting_worker_has_its_turn() {
        let board = Arc::new(Board::create(4).unwrap());
        let a = Seat::new(board.clone(), 0);
        let b = Seat::new(board, 1);
        a.publish(3);
        b.publish(2);
        assert!(!a.least_loaded(), "seat 2 and 3 are vacant, b holds fewer");
        assert!(b.least_loaded());
        b.publish(3);
        assert!(a.least_loaded() && b.least_loaded(), "ties accept both");
        b.withdraw();
        assert!(
            a.least_loaded(),
            "a withdrawn worker does not hold the others back"
        );
    }

    #[test]
    fn a_worker_silent_past_its_heartbeat_does_not_hold_the_others_back() {
        let board = Arc::new(Board::create(2).unwrap());
        let a = Seat::new(board.clone(), 0);
        let b = Seat::new(board.clone(), 1);
        a.publish(3);
        b.publish(0);
        assert!(!a.least_loaded());
        assert!(!board.is_silent_for(1, STALE_AFTER));
        let long_ago = now_ms().wrapping_sub(2 * 1000).max(1);
        board.beats()[1].store(long_ago, Ordering::Release);
        assert!(a.least_loaded(), "b stopped beating two seconds ago");
        assert!(board.is_silent_for(1, STALE_AFTER));
        board.unborn(1);
        assert!(
            !board.is_silent_for(1, STALE_AFTER),
            "a starting worker is not silent"
        );
    }

    #[test]
    fn a_mapping_of_the_inherited_descriptor_sees_the_same_counters() {
        let board = Board::create(2).unwrap();
        let copy = std::os::fd::IntoRawFd::into_raw_fd(board.inheritable_fd().unwrap());
        let other = Arc::new(Board::inherit(copy, 2).unwrap());
        Seat::new(other, 1).publish(7);
        assert_eq!(board.counters()[1].load(Ordering::Acquire), 7);
    }

    #[test]
    fn a_descriptor_of_another_size_than_the_seats_is_refused() {
        let board = Board::create(2).unwrap();
        for seats in [1, 4] {
            let err = Board::map(board.inheritable_fd().unwrap(), seats).unwrap_err();
            assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
            assert!(err.to_string().contains("is 16 bytes"), "{err}");
        }
        assert!(Board::map(board.inheritable_fd().unwrap(), 2).is_ok());
    }
}
