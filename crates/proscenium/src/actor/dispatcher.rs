//! Dispatchers: where actors run, named in configuration rather than code (Akka's
//! dispatchers). `loops` runs an actor on the server loop that spawns it (or, spawned
//! off a loop, on a pool of one thread per core); `pool` on N threads, each actor on
//! one of them; `pinned` on a thread of its own. Every thread is a current-thread tokio
//! runtime, so an actor's task never moves between threads.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::thread::JoinHandle;

use parking_lot::Mutex;
use tokio::sync::mpsc;

use crate::config::{DispatcherKind, DispatcherSpec, cores};

/// Work sent to a dispatcher thread: it spawns the actor's task there.
pub(crate) type Job = Box<dyn FnOnce() + Send>;

pub(crate) struct Dispatcher {
    name: String,
    spec: DispatcherSpec,
    workers: Mutex<Vec<Worker>>,
    next: AtomicUsize,
}

struct Worker {
    jobs: mpsc::UnboundedSender<Job>,
    thread: JoinHandle<()>,
}

impl Dispatcher {
    pub(crate) fn new(name: &str, spec: DispatcherSpec) -> Self {
        let threads = match spec.kind {
            DispatcherKind::Pinned => 0,
            DispatcherKind::Pool => spec.threads.unwrap_or_else(cores).max(1),
            DispatcherKind::Loops => cores(),
        };
        Self {
            name: name.to_owned(),
            spec,
            workers: Mutex::new(
                (0..threads)
                    .map(|i| Worker::start(&format!("{name}-{i}")))
                    .collect(),
            ),
            next: AtomicUsize::new(0),
        }
    }

    pub(crate) fn throughput(&self) -> usize {
        self.spec.throughput.unwrap_or(5).max(1)
    }

    /// Runs `job` (which spawns an actor's task) where this dispatcher runs actors.
    pub(crate) fn run(&self, job: Job) {
        if self.spec.kind == DispatcherKind::Loops && crate::rt::current_loop().is_some() {
            return job();
        }
        let mut workers = self.workers.lock();
        if self.spec.kind == DispatcherKind::Pinned {
            let name = format!("{}-{}", self.name, workers.len());
            workers.push(Worker::start(&name));
            return send(&workers[workers.len() - 1], job);
        }
        let at = self.next.fetch_add(1, Ordering::Relaxed) % workers.len().max(1);
        if let Some(worker) = workers.get(at) {
            send(worker, job);
        }
    }

    /// Lets every thread finish its actors (whose mailboxes are closed) and joins it.
    pub(crate) fn shutdown(&self) {
        let workers = std::mem::take(&mut *self.workers.lock());
        for worker in workers {
            drop(worker.jobs);
            if worker.thread.join().is_err() {
                tracing::error!(dispatcher = %self.name, "a dispatcher thread panicked");
            }
        }
    }
}

fn send(worker: &Worker, job: Job) {
    // A send fails only after shutdown, when the actor's mailbox is closed already.
    let _ = worker.jobs.send(job);
}

impl Worker {
    fn start(name: &str) -> Self {
        let (jobs, mut queue) = mpsc::unbounded_channel::<Job>();
        let thread = crate::rt::runtime::spawn_thread(name.to_owned(), move |runtime| {
            let local = tokio::task::LocalSet::new();
            local.block_on(runtime, async {
                while let Some(job) = queue.recv().await {
                    job();
                }
            });
            // Shut down: the actors still running drain and stop.
            runtime.block_on(local);
        })
        .expect("a dispatcher thread starts");
        Self { jobs, thread }
    }
}
