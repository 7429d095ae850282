//! Redis round trips for `/metrics` (`admin::metrics::redis` writes them) and
//! `/readyz`: every command (or pipeline) the process sends on an async connection,
//! counted by outcome and timed, by whose it is.
//!
//! One wrapper, [`Counted`], times each round trip of the connection it wraps; every
//! connection the process makes goes through it (streams' [`manager`](crate::stream),
//! the hub's publisher, the readiness ping), labelled with its [`RedisTarget`]'s user.
//! As in `tally`, the counts are process-wide relaxed atomics: a round trip costs tens
//! of microseconds, next to which two clock reads, a box and four adds are noise.
//!
//! A round trip that failed because Redis could not be reached marks the process not
//! ready until a later one (or the admin listener's next ping) succeeds.
//!
//! [`RedisTarget`]: crate::stream::RedisTarget

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use redis::aio::ConnectionLike;
use redis::{Cmd, Pipeline, RedisError, RedisFuture, RedisResult, Value};

/// Whose round trips a connection makes: the label of its series.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) enum User {
    /// Stage connectors between processes.
    Stage,
    /// The hub's replicas.
    Hub,
    /// Remote actors' registry, mailboxes and replies.
    Actor,
    /// The admin listener's readiness ping.
    Ready,
    /// The app's own streams (`proscenium::stream`).
    #[default]
    App,
}

impl User {
    /// Every user, in the order their series are written.
    pub(crate) const ALL: [Self; 5] = [Self::Stage, Self::Hub, Self::Actor, Self::Ready, Self::App];
}

/// The round-trip histogram's upper bounds, in nanoseconds: 100 µs to 1 s.
pub(crate) const BOUNDS_NS: [u64; 9] = [
    100_000,
    300_000,
    1_000_000,
    3_000_000,
    10_000_000,
    30_000_000,
    100_000_000,
    300_000_000,
    1_000_000_000,
];

/// One user's counts.
pub(crate) struct Trips {
    /// Round trips that got a reply.
    pub(crate) ok: AtomicU64,
    /// Round trips that failed (Redis unreachable, or an error reply).
    pub(crate) errors: AtomicU64,
    /// One bucket per bound and one past the last.
    pub(crate) buckets: [AtomicU64; BOUNDS_NS.len() + 1],
    /// The round trips' times, summed.
    pub(crate) sum_ns: AtomicU64,
}

impl Trips {
    const fn new() -> Self {
        Self {
            ok: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            buckets: [const { AtomicU64::new(0) }; BOUNDS_NS.len() + 1],
            sum_ns: AtomicU64::new(0),
        }
    }
}

static TRIPS: [Trips; User::ALL.len()] = [const { Trips::new() }; User::ALL.len()];

/// Returns `user`'s counts so far.
#[cfg(feature = "metrics")]
pub(crate) fn trips(user: User) -> &'static Trips {
    &TRIPS[user as usize]
}

/// Whether the last round trip that settled it found Redis unreachable.
static UNREACHED: AtomicBool = AtomicBool::new(false);

/// Returns whether a round trip found Redis unreachable and none succeeded since.
#[cfg(feature = "metrics")]
pub(crate) fn has_failed() -> bool {
    UNREACHED.load(Ordering::Relaxed)
}

/// Runs `round_trip`, counting and timing it as one of `user`'s.
pub(crate) async fn timed<T>(
    user: User,
    round_trip: impl Future<Output = RedisResult<T>>,
) -> RedisResult<T> {
    let started = Instant::now();
    let outcome = round_trip.await;
    record(user, started, &outcome);
    outcome
}

/// Counts one round trip of `user` that took `started`'s elapsed time.
fn record<T>(user: User, started: Instant, outcome: &RedisResult<T>) {
    let ns = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
    let trips = &TRIPS[user as usize];
    let bucket = BOUNDS_NS.partition_point(|&bound| bound < ns);
    trips.buckets[bucket].fetch_add(1, Ordering::Relaxed);
    trips.sum_ns.fetch_add(ns, Ordering::Relaxed);
    let n = if outcome.is_ok() {
        &trips.ok
    } else {
        &trips.errors
    };
    n.fetch_add(1, Ordering::Relaxed);
    note_reach(&UNREACHED, outcome);
}

/// Notes in `unreached` whether `outcome` found Redis unreachable: a success says it
/// was reached; an error reply (BUSYGROUP, WRONGTYPE) came from a Redis that is
/// there and changes nothing.
fn note_reach<T>(unreached: &AtomicBool, outcome: &RedisResult<T>) {
    match outcome {
        Ok(_) => unreached.store(false, Ordering::Relaxed),
        Err(error) if is_unreachable(error) => unreached.store(true, Ordering::Relaxed),
        Err(_) => {}
    }
}

/// Returns whether `error` says Redis could not be reached (or stopped answering).
fn is_unreachable(error: &RedisError) -> bool {
    error.is_io_error()
        || error.is_connection_refusal()
        || error.is_connection_dropped()
        || error.is_timeout()
        || error.is_unrecoverable_error()
}

/// A Redis connection whose every round trip is counted and timed for its user.
#[derive(Clone)]
pub(crate) struct Counted<C> {
    inner: C,
    user: User,
}

impl<C> Counted<C> {
    /// Returns `inner`, its round trips counted as `user`'s.
    pub(crate) fn new(inner: C, user: User) -> Self {
        Self { inner, user }
    }
}

impl<C: ConnectionLike + Send> ConnectionLike for Counted<C> {
    fn req_packed_command<'a>(&'a mut self, cmd: &'a Cmd) -> RedisFuture<'a, Value> {
        Box::pin(timed(self.user, self.inner.req_packed_command(cmd)))
    }

    fn req_packed_commands<'a>(
        &'a mut self,
        cmd: &'a Pipeline,
        offset: usize,
        count: usize,
    ) -> RedisFuture<'a, Vec<Value>> {
        let user = self.user;
        Box::pin(timed(
            user,
            self.inner.req_packed_commands(cmd, offset, count),
        ))
    }

    fn get_db(&self) -> i64 {
        self.inner.get_db()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_connection_marks_redis_unreached_until_a_round_trip_succeeds() {
        let unreached = AtomicBool::new(false);
        let refused = std::io::Error::from(std::io::ErrorKind::ConnectionRefused);
        note_reach::<()>(&unreached, &Err(refused.into()));
        assert!(unreached.load(Ordering::Relaxed));
        note_reach(&unreached, &Ok(()));
        assert!(!unreached.load(Ordering::Relaxed));
    }

    #[test]
    fn an_error_reply_leaves_redis_reached() {
        let unreached = AtomicBool::new(false);
        let reply = redis::ErrorKind::UnexpectedReturnType;
        note_reach::<()>(&unreached, &Err((reply, "not a stream").into()));
        assert!(!unreached.load(Ordering::Relaxed));
    }
}
