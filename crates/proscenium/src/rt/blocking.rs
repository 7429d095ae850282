//! The blocking pool: threads for handlers that block or compute, so no loop stalls.
//!
//! The pool grows a thread when a job arrives and no thread is free for it, up to its
//! size; jobs
//! beyond that wait in a bounded queue, and past the queue's bound `spawn_blocking`
//! refuses at once (the client gets 503) rather than queueing without limit. A pool of
//! size 0 runs each job inline, on the caller's thread.
//!
//! A server has its main pool and the named pools of its configuration
//! (`[pools.NAME]`), which run the work of [`blocking_on`](crate::blocking_on)
//! handlers apart from the rest.

use std::collections::HashMap;
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::task::{Context, Poll};

use crossbeam_channel::{Receiver, Sender, TrySendError};
use tokio::sync::oneshot;

type Job = Box<dyn FnOnce() + Send>;

/// The prefix of the main pool's thread names.
const MAIN_POOL: &str = "proscenium-blocking";

/// A bounded pool of threads for blocking work.
#[derive(Debug)]
pub(crate) struct BlockingPool {
    /// Its threads are called `NAME-N`.
    name: String,
    jobs: Sender<Job>,
    queue: Receiver<Job>,
    max_threads: usize,
    threads: AtomicUsize,
    /// Threads free for a new job: those waiting for one, less the jobs already sent
    /// that counted on one of them. A job takes one of these, or has a thread started
    /// for it, before it is sent; a thread adds itself when it finishes a job. Counting
    /// threads as they wait instead (before the fix) raced: a thread just started, or
    /// one that had just taken a job, still counted as idle, the next job was queued
    /// behind it with the pool below its size — six jobs once ran one at a time in CI
    /// (runtime::a_named_pool_runs_its_routes_on_as_many_threads_as_configured).
    free: Arc<AtomicUsize>,
}

impl BlockingPool {
    /// Returns a pool of at most `max_threads` threads and `queue` waiting jobs.
    pub(crate) fn new(name: &str, max_threads: usize, queue: usize) -> Arc<Self> {
        let (jobs, rx) = crossbeam_channel::bounded(queue.max(1));
        Arc::new(Self {
            name: name.to_owned(),
            jobs,
            queue: rx,
            max_threads,
            threads: AtomicUsize::new(0),
            free: Arc::new(AtomicUsize::new(0)),
        })
    }

    fn try_submit(&self, job: Job) -> Result<(), BlockingError> {
        if self.max_threads == 0 {
            // No pool: the work runs here, blocking the caller's loop (`event-loop`
            // without `--blocking-pool`, as Node.js runs a blocking call).
            job();
            return Ok(());
        }
        let counted_on_one = self
            .free
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
            .is_ok();
        let started_one = !counted_on_one && self.grow();
        self.jobs.try_send(job).map_err(|e| {
            if counted_on_one || started_one {
                // The thread it took, or started, is free for the next one.
                self.free.fetch_add(1, Ordering::AcqRel);
            }
            match e {
                TrySendError::Full(_) => {
                    super::overload::note(super::overload::Bound::BlockingQueue);
                    BlockingError::QueueFull
                }
                TrySendError::Disconnected(_) => BlockingError::Closed,
            }
        })
    }

    /// Starts a thread for a job about to be sent, unless the pool has its size;
    /// returns whether it did.
    fn grow(&self) -> bool {
        let grew = self
            .threads
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < self.max_threads).then_some(n + 1)
            });
        let Ok(n) = grew else { return false };
        let queue = self.queue.clone();
        let free = self.free.clone();
        let spawned = std::thread::Builder::new()
            .name(format!("{}-{n}", self.name))
            .spawn(move || {
                // The loop ends when the pool, the only sender, is dropped.
                while let Ok(job) = queue.recv() {
                    job();
                    free.fetch_add(1, Ordering::AcqRel);
                }
            });
        if let Err(e) = spawned {
            self.threads.fetch_sub(1, Ordering::AcqRel);
            tracing::error!("cannot start a blocking thread: {e}");
            return false;
        }
        true
    }
}

/// What a scrape reads of a pool: relaxed loads, nothing taken.
#[derive(Debug, Clone, Default)]
#[cfg_attr(
    not(feature = "metrics"),
    expect(dead_code, reason = "only /metrics reads it")
)]
pub(crate) struct PoolGauges {
    /// `main`, or the name of `[pools.NAME]`.
    pub(crate) name: String,
    /// Threads started (a pool grows up to its size and keeps them).
    pub(crate) threads: usize,
    /// Threads running a job, or about to take one sent for them.
    pub(crate) busy: usize,
    /// Jobs waiting in the queue.
    pub(crate) queued: usize,
}

impl BlockingPool {
    fn gauges(&self) -> PoolGauges {
        let threads = self.threads.load(Ordering::Acquire);
        PoolGauges {
            name: String::new(),
            threads,
            busy: threads.saturating_sub(self.free.load(Ordering::Acquire)),
            queued: self.queue.len(),
        }
    }
}

/// A server's blocking pools: the main one and the named ones.
#[derive(Debug)]
pub(crate) struct Pools {
    main: Arc<BlockingPool>,
    named: HashMap<String, Arc<BlockingPool>>,
}

impl Pools {
    /// Returns the pools `config` describes. Named pools have their threads under
    /// every model: they bound work on a resource, not the model's threads.
    pub(crate) fn new(config: &crate::Config) -> Arc<Self> {
        let named = config
            .pools
            .iter()
            .map(|(name, spec)| {
                let pool = BlockingPool::new(&format!("pool-{name}"), spec.threads, spec.queue);
                (name.clone(), pool)
            })
            .collect();
        Arc::new(Self {
            main: BlockingPool::new(
                MAIN_POOL,
                config.blocking_pool_size(),
                config.blocking_queue,
            ),
            named,
        })
    }

    /// The pools used outside any server loop (tests, plain threads).
    pub(crate) fn fallback() -> Arc<Self> {
        static POOLS: OnceLock<Arc<Pools>> = OnceLock::new();
        POOLS
            .get_or_init(|| {
                Arc::new(Self {
                    main: BlockingPool::new(MAIN_POOL, 64, 1024),
                    named: HashMap::new(),
                })
            })
            .clone()
    }

    /// Returns each pool's gauges, the main one first (named `main`), for `/metrics`.
    #[cfg_attr(
        not(feature = "metrics"),
        expect(dead_code, reason = "only /metrics reads it")
    )]
    pub(crate) fn gauges(&self) -> Vec<PoolGauges> {
        let main = std::iter::once(("main", &self.main));
        let named = self.named.iter().map(|(name, pool)| (name.as_str(), pool));
        main.chain(named)
            .map(|(name, pool)| PoolGauges {
                name: name.to_owned(),
                ..pool.gauges()
            })
            .collect()
    }

    /// Returns the pool called `name`, or the main pool for `None`.
    fn get(&self, name: Option<&str>) -> Result<&BlockingPool, BlockingError> {
        match name {
            None => Ok(&self.main),
            Some(name) => self
                .named
                .get(name)
                .map(|pool| &**pool)
                .ok_or_else(|| BlockingError::NoSuchPool(name.to_owned())),
        }
    }
}

/// Why blocking work did not produce its value.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum BlockingError {
    /// The pool's queue is full; the work was not started.
    #[error("blocking pool queue is full")]
    QueueFull,
    /// The pool is shutting down.
    #[error("blocking pool is closed")]
    Closed,
    /// The work panicked.
    #[error("blocking work panicked: {0}")]
    Panicked(String),
    /// No pool of this name is configured (`[pools.NAME]`).
    #[error("no blocking pool `{0}` is configured ([pools.{0}] threads = N)")]
    NoSuchPool(String),
}

impl BlockingError {
    /// Returns whether the work was refused because the pool was full.
    pub fn is_queue_full(&self) -> bool {
        matches!(self, Self::QueueFull)
    }
}

/// The result of work on the blocking pool, awaited from a loop.
#[derive(Debug)]
pub struct BlockingTask<T> {
    rx: oneshot::Receiver<std::thread::Result<T>>,
}

impl<T> Future for BlockingTask<T> {
    type Output = Result<T, BlockingError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        Pin::new(&mut self.rx).poll(cx).map(|r| match r {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(panic)) => Err(BlockingError::Panicked(crate::rt::panic_message(&panic))),
            Err(_) => Err(BlockingError::Closed),
        })
    }
}

/// Runs `f` on the blocking pool of the current loop (or a process-wide one).
///
/// # Errors
///
/// [`BlockingError::QueueFull`] at once when the pool's queue is full.
///
/// # Examples
///
/// ```
/// # tokio::runtime::Builder::new_current_thread().build().unwrap().block_on(async {
/// let task = proscenium::rt::spawn_blocking(|| 6 * 7).unwrap();
/// assert_eq!(task.await.unwrap(), 42);
/// # });
/// ```
pub fn spawn_blocking<F, T>(f: F) -> Result<BlockingTask<T>, BlockingError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    spawn_blocking_in(None, f)
}

/// Runs `f` on the named blocking pool of the current server (`[pools.NAME]` in its
/// configuration).
///
/// # Errors
///
/// [`BlockingError::NoSuchPool`] when the server has no pool of that name (outside a
/// server there are none); [`BlockingError::QueueFull`] at once when its queue is full.
pub fn spawn_blocking_on<F, T>(pool: &str, f: F) -> Result<BlockingTask<T>, BlockingError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    spawn_blocking_in(Some(pool), f)
}

pub(crate) fn spawn_blocking_in<F, T>(
    pool: Option<&str>,
    f: F,
) -> Result<BlockingTask<T>, BlockingError>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    let (tx, rx) = oneshot::channel();
    let job = Box::new(move || {
        let _ = tx.send(catch_unwind(AssertUnwindSafe(f)));
    });
    super::context::blocking_pools()
        .get(pool)?
        .try_submit(job)?;
    Ok(BlockingTask { rx })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pool_of_size_zero_runs_work_inline() {
        let pool = BlockingPool::new("test", 0, 1);
        let caller = std::thread::current().id();
        let (tx, rx) = std::sync::mpsc::channel();
        pool.try_submit(Box::new(move || {
            tx.send(std::thread::current().id()).unwrap();
        }))
        .unwrap();
        assert_eq!(rx.try_recv().unwrap(), caller);
    }

    #[test]
    fn refuses_work_past_the_queue_bound() {
        let pool = BlockingPool::new("test", 1, 1);
        let (release, wait) = crossbeam_channel::bounded::<()>(0);
        let hold = move || {
            let _ = wait.recv();
        };
        pool.try_submit(Box::new(hold.clone())).unwrap();
        // The one thread may not have taken the first job yet; fill until refused.
        let refused = (0..3)
            .map(|_| pool.try_submit(Box::new(hold.clone())))
            .find_map(Result::err);
        assert_eq!(refused, Some(BlockingError::QueueFull));
        drop(release);
    }

    #[test]
    fn jobs_submitted_together_run_together_up_to_the_pools_size() {
        // A pool whose one thread has just started (free, no job taken yet) is handed
        // two jobs that each wait for the other: the second one must get a thread of
        // its own, not wait behind the first.
        for _ in 0..50 {
            let pool = BlockingPool::new("test", 2, 8);
            pool.grow();
            pool.free.fetch_add(1, Ordering::AcqRel);
            let both = Arc::new(std::sync::Barrier::new(2));
            let (done, finished) = crossbeam_channel::unbounded();
            for _ in 0..2 {
                let (both, done) = (Arc::clone(&both), done.clone());
                pool.try_submit(Box::new(move || {
                    both.wait();
                    done.send(()).unwrap();
                }))
                .unwrap();
            }
            for _ in 0..2 {
                finished
                    .recv_timeout(std::time::Duration::from_secs(30))
                    .expect("both jobs ran at once");
            }
        }
    }
}
