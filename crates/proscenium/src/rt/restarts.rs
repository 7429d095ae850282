//! Restarting what died — prefork's workers, a host's processes: a backoff that
//! doubles with each death after a short life (100 ms up to 5 s), within a budget of
//! 10 restarts a minute. Past the budget restarts go on, no more than one every
//! [`OVER_BUDGET_PAUSE`]: a supervisor that gave up would leave its port (or its
//! share of a graph) with no one behind it, looking alive (issue 15). And stopping
//! them: SIGTERM, a deadline to drain, SIGKILL for what is left ([`stop`]).

use std::collections::VecDeque;
use std::process::Child;
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

use super::backoff;

/// Restarts allowed within [`BUDGET_WINDOW`].
const BUDGET: usize = 10;
const BUDGET_WINDOW: Duration = Duration::from_secs(60);
/// Past the budget, the least time between two restarts.
pub(crate) const OVER_BUDGET_PAUSE: Duration = Duration::from_secs(5);
/// A life this long is healthy: the next death starts the backoff over.
const HEALTHY_AFTER: Duration = Duration::from_secs(10);
const BACKOFF_START: Duration = Duration::from_millis(100);
const BACKOFF_MAX: Duration = Duration::from_secs(5);

/// Stops `children` (each with what to call it in the log): SIGTERM to each — each
/// drains as its own shutdown says — then SIGKILL for any still running at `stop_by`.
/// Blocks the thread until all are reaped.
pub(crate) fn stop(children: Vec<(String, Child)>, stop_by: Instant) {
    let mut running = children;
    for (name, child) in &running {
        let pid = i32::try_from(child.id()).map(Pid::from_raw);
        if let Err(e) = pid.map(|pid| kill(pid, Signal::SIGTERM)) {
            tracing::warn!("cannot stop {name}: {e:?}");
        }
    }
    while !running.is_empty() && Instant::now() < stop_by {
        running.retain_mut(|(_, child)| matches!(child.try_wait(), Ok(None)));
        std::thread::sleep(Duration::from_millis(20));
    }
    for (name, mut child) in running {
        tracing::warn!(
            "{name} (pid {}) did not stop in time; killing it",
            child.id()
        );
        let _ = child.kill();
        let _ = child.wait();
    }
}

/// One supervised thing's lives: when the current one started, and how many short
/// ones came before it.
#[derive(Debug)]
pub(crate) struct Lives {
    started: Instant,
    quick_deaths: u32,
}

impl Lives {
    pub(crate) fn new(now: Instant) -> Self {
        Self {
            started: now,
            quick_deaths: 0,
        }
    }

    /// A new life began at `now`.
    pub(crate) fn began(&mut self, now: Instant) {
        self.started = now;
    }

    /// Records a death at `now`; returns the backoff before the restart, which doubles
    /// with each death that follows a short life. It is the ceiling alone, with no
    /// jitter: one supervisor restarts its own children, and the log says the wait.
    pub(crate) fn died(&mut self, now: Instant) -> Duration {
        let healthy = now - self.started > HEALTHY_AFTER;
        self.quick_deaths = if healthy { 0 } else { self.quick_deaths + 1 };
        backoff::ceiling(
            BACKOFF_START,
            BACKOFF_MAX,
            self.quick_deaths.saturating_sub(1),
        )
    }
}

/// Whether a restart may happen now.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Admit {
    Now,
    /// Now, though past the budget (worth a log line).
    NowOverBudget,
    /// Not before this.
    At(Instant),
}

/// The restarts of the last [`BUDGET_WINDOW`], shared by everything one supervisor
/// restarts.
#[derive(Debug, Default)]
pub(crate) struct Budget {
    restarts: VecDeque<Instant>,
}

impl Budget {
    /// Asks to restart at `now`; a restart admitted now is counted.
    pub(crate) fn admit(&mut self, now: Instant) -> Admit {
        while self
            .restarts
            .front()
            .is_some_and(|t| now - *t > BUDGET_WINDOW)
        {
            self.restarts.pop_front();
        }
        let over = self.restarts.len() >= BUDGET;
        if over {
            let next = self.restarts.back().map(|&last| last + OVER_BUDGET_PAUSE);
            if let Some(next) = next.filter(|&next| next > now) {
                return Admit::At(next);
            }
        }
        self.restarts.push_back(now);
        if over {
            Admit::NowOverBudget
        } else {
            Admit::Now
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_quick_deaths_and_resets_after_a_healthy_life() {
        let start = Instant::now();
        let mut lives = Lives::new(start);
        let backoffs: Vec<u128> = (0..8).map(|_| lives.died(start).as_millis()).collect();
        assert_eq!(backoffs, [100, 200, 400, 800, 1600, 3200, 5000, 5000]);
        lives.began(start);
        assert_eq!(lives.died(start + HEALTHY_AFTER * 2).as_millis(), 100);
    }

    #[test]
    fn past_the_budget_restarts_are_spaced_not_refused() {
        let start = Instant::now();
        let mut budget = Budget::default();
        for _ in 0..BUDGET {
            assert_eq!(budget.admit(start), Admit::Now);
        }
        assert_eq!(budget.admit(start), Admit::At(start + OVER_BUDGET_PAUSE));
        let later = start + OVER_BUDGET_PAUSE;
        assert_eq!(budget.admit(later), Admit::NowOverBudget);
        assert_eq!(
            budget.admit(start + BUDGET_WINDOW * 2),
            Admit::Now,
            "a quiet minute later the budget is whole again"
        );
    }
}
