//! Request counters for the admin listener's `/metrics`: each thread that answers
//! requests writes a table of its own, and a scrape sums them.
//!
//! The request path stays cheap (issue 36's "Cost"): a table has one writer, its
//! thread, so a count is a relaxed load and a store (no locked read-modify-write,
//! no lock, no hashing), indexed by the route's number, a method index and the
//! status class; the latency histogram is an array of counters by fixed bucket. The
//! time is read twice per request: when the request is noted ([`Mark::now`]) and
//! when its answer is encoded. With `[admin]` off the server has no [`Meters`], a
//! connection's terms carry no [`Mark`], and nothing here runs.
//!
//! A thread joins the server's meters the first time one of its sides of the
//! protocol is made ([`Meters::table_here`]; a thread model makes one per visit,
//! and they all share the thread's table); when the thread ends, its counts are
//! folded into the retired sum, so a scrape never loses them.

use nix::time::{ClockId, clock_gettime};
use std::cell::RefCell;
use std::num::NonZeroU64;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use http::Method;

use crate::rt::watchdog::{self, LoopStats};

/// Methods counted apart; any other is counted as `OTHER`.
pub(crate) const METHODS: [&str; 8] = [
    "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "OTHER",
];

/// Status classes counted apart: 1xx to 5xx.
pub(crate) const CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The latency histogram's upper bounds, in nanoseconds (100 µs to 10 s); a last
/// bucket holds what is slower.
pub(crate) const BOUNDS_NS: [u64; 16] = [
    100_000,
    250_000,
    500_000,
    1_000_000,
    2_500_000,
    5_000_000,
    10_000_000,
    25_000_000,
    50_000_000,
    100_000_000,
    250_000_000,
    500_000_000,
    1_000_000_000,
    2_500_000_000,
    5_000_000_000,
    10_000_000_000,
];

/// Buckets of a route's histogram: one per bound, and one past the last.
const BUCKETS: usize = BOUNDS_NS.len() + 1;

/// What a request's answer is counted with, noted before the app takes the request:
/// its method, and when it was taken — packed in eight bytes, since a connection
/// carries it beside the request's other terms on every call.
///
/// Bit 0 is always set (so the mark is never zero, and an `Option<Mark>` is eight
/// bytes too), bits 1–3 hold the method's index, bits 4 and up the nanoseconds
/// of the monotonic clock at the request's start, plus one; zero there means
/// not timed.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Mark(NonZeroU64);

impl Mark {
    /// Returns the mark of a request with `method` taken now.
    pub(crate) fn now(method: &Method) -> Self {
        Self::pack(method_index(method), since_epoch().wrapping_add(1))
    }

    /// Returns the mark of a request the server refuses before reading its method:
    /// counted, not timed.
    pub(crate) fn refused() -> Self {
        Self::pack((METHODS.len() - 1) as u8, 0)
    }

    fn pack(method: u8, started: u64) -> Self {
        Self(NonZeroU64::MIN | (started << 4) | (u64::from(method) << 1))
    }

    fn method(self) -> usize {
        ((self.0.get() >> 1) & 0b111) as usize
    }

    /// Returns the nanoseconds since the request was taken, if it was timed.
    fn elapsed_ns(self) -> Option<u64> {
        let started = self.0.get() >> 4;
        (started != 0).then(|| since_epoch().saturating_sub(started - 1))
    }
}

/// Returns the monotonic clock in nanoseconds (one clock read).
///
/// Read with `clock_gettime` and a multiply-add: `Instant::elapsed` since an epoch
/// (its checked subtraction and a 128-bit conversion) cost about as much again as
/// the rest of timing and counting a request (measured in docs/performance.md).
fn since_epoch() -> u64 {
    let nanos = clock_gettime(ClockId::CLOCK_MONOTONIC).map_or(0, |t| {
        (t.tv_sec() as u64)
            .wrapping_mul(1_000_000_000)
            .wrapping_add(t.tv_nsec() as u64)
    });
    // 2^60 ns, what fits above the mark's four low bits, is 36 years of uptime.
    nanos & (u64::MAX >> 4)
}

fn method_index(method: &Method) -> u8 {
    match *method {
        Method::GET => 0,
        Method::HEAD => 1,
        Method::POST => 2,
        Method::PUT => 3,
        Method::DELETE => 4,
        Method::PATCH => 5,
        Method::OPTIONS => 6,
        _ => 7,
    }
}

/// One thread's counters: requests by route, method and status class; each route's
/// latency histogram and sum. Slot `routes` (past the last route) counts answers no
/// route gave: refusals, 404 and 405 without a fallback, overload 503s.
#[derive(Debug)]
pub(crate) struct Table {
    routes: usize,
    counts: Box<[AtomicU64]>,
    buckets: Box<[AtomicU64]>,
    sum_ns: Box<[AtomicU64]>,
    /// The thread's loop counters (requests in flight, handled), where it has them.
    #[cfg_attr(
        not(feature = "metrics"),
        expect(dead_code, reason = "only /metrics reads it")
    )]
    pub(crate) stats: Option<Arc<LoopStats>>,
    /// The thread's name, made unique among the live tables.
    pub(crate) thread: String,
}

impl Table {
    fn new(routes: usize, stats: Option<Arc<LoopStats>>, thread: String) -> Self {
        let zeros = |n: usize| (0..n).map(|_| AtomicU64::new(0)).collect();
        let slots = routes + 1;
        Self {
            routes,
            counts: zeros(slots * METHODS.len() * CLASSES.len()),
            buckets: zeros(slots * BUCKETS),
            sum_ns: zeros(slots),
            stats,
            thread,
        }
    }

    /// Counts the answer to the request `mark` noted, given by the route this
    /// thread noted last (the connection reads it right after the answer is ready).
    #[inline]
    pub(crate) fn record(&self, mark: Mark, status: u16) {
        let route = (watchdog::current_route() as usize).min(self.routes);
        let class = (usize::from(status / 100)).clamp(1, CLASSES.len()) - 1;
        let method = mark.method();
        bump(
            &self.counts[(route * METHODS.len() + method) * CLASSES.len() + class],
            1,
        );
        if let Some(ns) = mark.elapsed_ns() {
            let bucket = BOUNDS_NS.partition_point(|&bound| bound < ns);
            bump(&self.buckets[route * BUCKETS + bucket], 1);
            bump(&self.sum_ns[route], ns);
        }
    }

    /// Adds this table's counts into `sum` (of as many routes).
    fn add_to(&self, sum: &mut Sums) {
        let add = |into: &mut [u64], from: &[AtomicU64]| {
            for (into, from) in into.iter_mut().zip(from) {
                *into += from.load(Ordering::Relaxed);
            }
        };
        add(&mut sum.counts, &self.counts);
        add(&mut sum.buckets, &self.buckets);
        add(&mut sum.sum_ns, &self.sum_ns);
    }
}

/// Adds `n` to a counter only this thread writes: a load and a store.
#[inline]
fn bump(counter: &AtomicU64, n: u64) {
    let was = counter.load(Ordering::Relaxed);
    counter.store(was.wrapping_add(n), Ordering::Relaxed);
}

/// A server's request counters: the live threads' tables and the sum of the ended.
#[derive(Debug)]
pub(crate) struct Meters {
    routes: usize,
    tables: Mutex<Tables>,
}

#[derive(Debug, Default)]
struct Tables {
    live: Vec<Arc<Table>>,
    retired: Option<Sums>,
    joined: u64,
}

impl Meters {
    /// Returns the meters of a server whose app has `routes` routes.
    #[cfg_attr(
        not(any(test, feature = "metrics")),
        expect(dead_code, reason = "only /metrics reads it")
    )]
    pub(crate) fn new(routes: usize) -> Arc<Self> {
        Arc::new(Self {
            routes,
            tables: Mutex::new(Tables::default()),
        })
    }

    /// Returns this thread's table, joining it to these meters the first time.
    pub(crate) fn table_here(self: &Arc<Self>) -> Arc<Table> {
        JOINED.with_borrow_mut(|joined| {
            if let Some(joined) = joined.as_ref().filter(|j| Arc::ptr_eq(&j.meters, self)) {
                return joined.table.clone();
            }
            let table = self.join();
            *joined = Some(Joined {
                meters: self.clone(),
                table: table.clone(),
            });
            table
        })
    }

    fn join(&self) -> Arc<Table> {
        let stats = crate::rt::context::with_current(|ctx| ctx.stats.clone());
        let name = std::thread::current().name().unwrap_or("thread").to_owned();
        let mut tables = self.lock();
        tables.joined += 1;
        let thread = if tables.live.iter().any(|t| t.thread == name) {
            format!("{name}#{}", tables.joined)
        } else {
            name
        };
        let table = Arc::new(Table::new(self.routes, stats, thread));
        tables.live.push(table.clone());
        table
    }

    /// Folds an ended thread's table into the retired sum.
    fn retire(&self, table: &Arc<Table>) {
        let mut tables = self.lock();
        tables.live.retain(|t| !Arc::ptr_eq(t, table));
        let routes = self.routes;
        table.add_to(tables.retired.get_or_insert_with(|| Sums::new(routes)));
    }

    /// Returns the sum of every table, live and retired, and the live tables.
    #[cfg_attr(
        not(any(test, feature = "metrics")),
        expect(dead_code, reason = "only /metrics reads it")
    )]
    pub(crate) fn read(&self) -> (Sums, Vec<Arc<Table>>) {
        let tables = self.lock();
        let mut sum = tables
            .retired
            .clone()
            .unwrap_or_else(|| Sums::new(self.routes));
        for table in &tables.live {
            table.add_to(&mut sum);
        }
        (sum, tables.live.clone())
    }

    fn lock(&self) -> MutexGuard<'_, Tables> {
        // A panic while holding it leaves only counts: keep counting.
        self.tables
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// This thread's table and the meters it belongs to; dropped when the thread ends.
struct Joined {
    meters: Arc<Meters>,
    table: Arc<Table>,
}

impl Drop for Joined {
    fn drop(&mut self) {
        self.meters.retire(&self.table);
    }
}

thread_local! {
    static JOINED: RefCell<Option<Joined>> = const { RefCell::new(None) };
}

/// Every table's counts added up, for a scrape.
#[derive(Debug, Clone)]
pub(crate) struct Sums {
    routes: usize,
    counts: Vec<u64>,
    buckets: Vec<u64>,
    sum_ns: Vec<u64>,
}

impl Sums {
    fn new(routes: usize) -> Self {
        let slots = routes + 1;
        Self {
            routes,
            counts: vec![0; slots * METHODS.len() * CLASSES.len()],
            buckets: vec![0; slots * BUCKETS],
            sum_ns: vec![0; slots],
        }
    }

    #[cfg_attr(
        not(feature = "metrics"),
        expect(dead_code, reason = "only /metrics reads it")
    )]
    /// Returns the slots: each route's number, then the one of answers no route gave.
    pub(crate) fn slots(&self) -> std::ops::RangeInclusive<usize> {
        0..=self.routes
    }

    #[cfg_attr(
        not(any(test, feature = "metrics")),
        expect(dead_code, reason = "only /metrics reads it")
    )]
    /// Returns how many answers `slot` gave to `method` (an index of [`METHODS`])
    /// with a status of `class` (an index of [`CLASSES`]).
    pub(crate) fn count(&self, slot: usize, method: usize, class: usize) -> u64 {
        self.counts[(slot * METHODS.len() + method) * CLASSES.len() + class]
    }

    #[cfg_attr(
        not(any(test, feature = "metrics")),
        expect(dead_code, reason = "only /metrics reads it")
    )]
    /// Returns `slot`'s histogram: the count in each bucket (not cumulative), and the
    /// sum of the times in nanoseconds.
    pub(crate) fn histogram(&self, slot: usize) -> (&[u64], u64) {
        (
            &self.buckets[slot * BUCKETS..(slot + 1) * BUCKETS],
            self.sum_ns[slot],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_threads_counts_outlive_it_and_a_scrape_sums_every_thread() {
        let meters = Meters::new(2);
        let answer = |route: u32, status: u16| {
            let meters = meters.clone();
            std::thread::spawn(move || {
                let table = meters.table_here();
                watchdog::set_route(route);
                table.record(Mark::now(&Method::POST), status);
                assert!(Arc::ptr_eq(&table, &meters.table_here()), "one per thread");
            })
            .join()
            .unwrap();
        };
        answer(1, 201);
        answer(1, 503);
        answer(watchdog::NO_ROUTE, 404);
        let (sums, live) = meters.read();
        assert!(live.is_empty(), "both threads ended");
        assert_eq!(sums.count(1, 2, 1), 1, "POST route 1, 2xx");
        assert_eq!(sums.count(1, 2, 4), 1, "POST route 1, 5xx");
        assert_eq!(sums.count(2, 2, 3), 1, "no route, 4xx");
        assert_eq!(sums.histogram(1).0.iter().sum::<u64>(), 2);
        assert_eq!(sums.count(0, 2, 1), 0);
    }

    #[test]
    fn a_mark_keeps_its_method_and_start() {
        for (i, method) in [
            "GET", "HEAD", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "BREW",
        ]
        .iter()
        .enumerate()
        {
            let mark = Mark::now(&Method::from_bytes(method.as_bytes()).unwrap());
            assert_eq!(mark.method(), i, "{method}");
            assert!(mark.elapsed_ns().is_some_and(|ns| ns < 10_000_000_000));
        }
        assert_eq!(Mark::refused().method(), METHODS.len() - 1);
        assert_eq!(Mark::refused().elapsed_ns(), None);
    }

    #[test]
    fn a_refused_request_is_counted_and_not_timed() {
        let meters = Meters::new(0);
        let table = meters.table_here();
        watchdog::set_route(watchdog::NO_ROUTE);
        table.record(Mark::refused(), 400);
        let (sums, _) = meters.read();
        assert_eq!(sums.count(0, METHODS.len() - 1, 3), 1);
        assert_eq!(sums.histogram(0).0.iter().sum::<u64>(), 0);
    }
}
