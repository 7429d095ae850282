//! A cluster's crew of threads, each taking ready instances from the cluster's one
//! queue: started, grown and shrunk by the thread-pool controller, stopped.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::thread::JoinHandle;

use crossbeam_channel::Sender;
use parking_lot::Mutex;

use super::error::StageError;
use super::node::{Shared, now};
use super::plan::PlannedCluster;
use super::ready::{Ready, Ticket};
use super::stats::ClusterStats;

pub(crate) struct Crew {
    pub(crate) name: String,
    min: usize,
    max: usize,
    /// The nice value each thread takes as it starts (`[clusters.NAME] nice`).
    nice: Option<i32>,
    pub(crate) ready: Arc<Ready>,
    exited: Sender<()>,
    live: AtomicUsize,
    grown: AtomicU64,
    shrunk: AtomicU64,
    handles: Mutex<Vec<JoinHandle<()>>>,
}

impl Crew {
    /// Returns a crew of no thread yet for `cluster`, to run between its threads and
    /// its most threads; each thread tells `exited` when it leaves.
    pub(crate) fn new(cluster: &PlannedCluster, exited: Sender<()>) -> Self {
        Self {
            name: cluster.name.clone(),
            min: cluster.threads,
            max: cluster.max_threads,
            nice: cluster.nice,
            ready: Arc::new(Ready::new()),
            exited,
            live: AtomicUsize::new(0),
            grown: AtomicU64::new(0),
            shrunk: AtomicU64::new(0),
            handles: Mutex::new(Vec::new()),
        }
    }

    /// Returns whether a controller has room to work: more threads allowed than the
    /// least.
    pub(crate) fn is_elastic(&self) -> bool {
        self.max > self.min
    }

    /// Starts the crew's `min` threads, and returns once each has run the graph's
    /// thread start: a server that says it has started has every loop ready to take
    /// work (a request handed between loops could miss one still starting).
    pub(crate) fn start(&self, shared: &Arc<Shared>) -> Result<(), StageError> {
        let (started, each_started) = std::sync::mpsc::channel();
        (0..self.min).try_for_each(|_| self.add(shared, Some(started.clone())))?;
        drop(started);
        // Returns when every thread has let its sender go: started, or died starting
        // (its panic shows at stop).
        let _ = each_started.recv();
        Ok(())
    }

    /// Adds a thread if under the maximum; returns whether it did.
    pub(crate) fn grow(&self, shared: &Arc<Shared>) -> bool {
        if self.live.load(Ordering::Relaxed) >= self.max {
            return false;
        }
        match self.add(shared, None) {
            Ok(()) => {
                self.grown.fetch_add(1, Ordering::Relaxed);
                true
            }
            Err(error) => {
                tracing::warn!(%error, "the thread-pool controller could not grow a cluster");
                false
            }
        }
    }

    /// Retires a thread (at its next ticket) if over the minimum; returns whether it
    /// did.
    pub(crate) fn shrink(&self) -> bool {
        if self.live.load(Ordering::Relaxed) <= self.min {
            return false;
        }
        self.retire(1);
        self.shrunk.fetch_add(1, Ordering::Relaxed);
        true
    }

    /// Tells every live thread to leave, and returns the handles of all it ever
    /// started.
    pub(crate) fn stop(&self) -> Vec<JoinHandle<()>> {
        self.retire(self.live.load(Ordering::Relaxed));
        std::mem::take(&mut *self.handles.lock())
    }

    pub(crate) fn live(&self) -> usize {
        self.live.load(Ordering::Relaxed)
    }

    pub(crate) fn stats(&self) -> ClusterStats {
        ClusterStats {
            cluster: self.name.clone(),
            threads: self.live(),
            min_threads: self.min,
            max_threads: self.max,
            grown: self.grown.load(Ordering::Relaxed),
            shrunk: self.shrunk.load(Ordering::Relaxed),
        }
    }

    fn retire(&self, threads: usize) {
        for _ in 0..threads {
            // At the lowest priority: a thread leaves after the turns of a higher one.
            self.ready.push(Ticket::Exit, 0);
            self.live.fetch_sub(1, Ordering::Relaxed);
        }
    }

    /// Starts a thread; it drops `started` once it has run the graph's thread start.
    fn add(
        &self,
        shared: &Arc<Shared>,
        started: Option<std::sync::mpsc::Sender<()>>,
    ) -> Result<(), StageError> {
        let mut handles = self.handles.lock();
        let name = format!("stage-{}-{}", self.name, handles.len());
        let (shared, ready, exited, nice) = (
            Arc::clone(shared),
            Arc::clone(&self.ready),
            self.exited.clone(),
            self.nice,
        );
        // Each thread waits for tickets on its loop (a current-thread runtime and a
        // `LocalSet`): a sync stage's turn runs in place and holds the thread, an
        // async stage's is a task of the loop, which takes the next ticket while the
        // handler awaits.
        let handle = crate::rt::runtime::spawn_thread(name, move |runtime| {
            if let Some(nice) = nice {
                // Linux's nice value is the calling thread's (`setpriority` of thread
                // id 0); a thread left at the process's runs on, the cluster unranked.
                if let Err(error) = rustix::process::setpriority_process(None, nice) {
                    tracing::warn!(%error, nice, "a stage thread keeps its nice value");
                }
            }
            let tasks = tokio::task::LocalSet::new();
            tasks.block_on(runtime, async {
                if let Some(start) = &shared.thread_start {
                    start.run();
                }
                drop(started);
                let mut turns = tokio::task::JoinSet::new();
                loop {
                    let (node, instance) = match ready.pop().await {
                        Ticket::Turn(node) => match shared.nodes[node].pool.claim() {
                            Some(instance) => (node, instance),
                            // A cohort sender has the instance: no turn to run.
                            None => continue,
                        },
                        Ticket::Source(node, instance) => (node, instance),
                        Ticket::Exit => break,
                    };
                    if shared.nodes[node].asynchronous {
                        let shared = Arc::clone(&shared);
                        turns.spawn_local(async move {
                            shared.turn(node, instance).await;
                        });
                        while turns.try_join_next().is_some() {}
                    } else {
                        now(shared.turn(node, instance));
                    }
                }
                // Told to leave: the async turns under way finish first, their
                // instances going back to their stages. Other tasks on the loop (a
                // handler's, a protocol's timers) end with it.
                while turns.join_next().await.is_some() {}
            });
            let _ = exited.send(());
        })
        .map_err(|e| StageError::start(&self.name, &e))?;
        handles.push(handle);
        self.live.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }
}
