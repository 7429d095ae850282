//! What the runtime reads of the configuration, made once from `Config` where a
//! server starts: loops, threads and the supervisor take these numbers, not every
//! feature's settings (as tokio's runtime keeps a `Config` of its own).

use crate::config::{Config, Limits, Model, Timeouts};

/// The runtime's view of the configuration.
#[derive(Debug, Clone)]
pub(crate) struct RuntimeSettings {
    /// What a connection may hold (`[limits]`).
    pub(crate) limits: Limits,
    /// How long each step may take (`[timeouts]`).
    pub(crate) timeouts: Timeouts,
    /// The model that serves connections, in this process or in each worker (a
    /// thread model caps its threads by it).
    pub(crate) model: Model,
    /// A thread model's threads: the pool's size, or the cap on threads per connection.
    pub(crate) threads: usize,
    /// How many connections wait for a pool's thread.
    pub(crate) thread_queue: usize,
    /// How many worker processes a supervisor keeps.
    pub(crate) workers: usize,
}

impl RuntimeSettings {
    /// The runtime's view of `config`.
    pub(crate) fn of(config: &Config) -> Self {
        Self {
            limits: config.limits.clone(),
            timeouts: config.timeouts.clone(),
            model: config.serving_model(),
            threads: config.thread_count(),
            thread_queue: config.thread_queue,
            workers: config.worker_count(),
        }
    }
}
