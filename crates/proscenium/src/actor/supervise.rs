//! Supervision: what a parent does when a child's handler panics (Akka's supervisor
//! strategies) — the directive, the children it applies to, a restart budget within a
//! window, and exponential backoff with jitter between restarts.

use std::any::Any;
use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::rt::backoff;

/// What to do with a failed actor.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Directive {
    /// Keep its state and go on with the next message.
    Resume,
    /// A fresh actor from its factory; the mailbox is kept.
    Restart,
    /// Stop it; what is queued goes to dead letters.
    Stop,
    /// Fail the parent in turn, for its own parent to decide.
    Escalate,
}

/// Why an actor failed: the value its handler panicked with, for a supervisor's
/// [`deciding`](Strategy::deciding) function to look at by type.
///
/// # Examples
///
/// ```
/// use proscenium::actor::{Directive, Strategy};
///
/// /// What a handler panics with (`std::panic::panic_any(Fault::Transient)`).
/// enum Fault {
///     Transient,
///     Corrupt,
/// }
///
/// let strategy = Strategy::one_for_one().deciding(|failure| match failure.downcast_ref() {
///     Some(Fault::Transient) => Directive::Resume,
///     Some(Fault::Corrupt) => Directive::Restart,
///     None => Directive::Escalate,
/// });
/// # let _ = strategy;
/// ```
pub struct Failure {
    payload: Box<dyn Any + Send>,
}

impl Failure {
    pub(crate) fn new(payload: Box<dyn Any + Send>) -> Self {
        Self { payload }
    }

    /// Returns the panic's message, when it panicked with one (`panic!("...")`).
    pub fn message(&self) -> Option<&str> {
        self.payload
            .downcast_ref::<&str>()
            .copied()
            .or_else(|| self.payload.downcast_ref::<String>().map(String::as_str))
    }

    /// Returns the value the handler panicked with, if it is a `T`
    /// ([`std::panic::panic_any`]).
    pub fn downcast_ref<T: Any>(&self) -> Option<&T> {
        self.payload.downcast_ref()
    }
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.message().unwrap_or("(a panic with no message)"))
    }
}

impl std::fmt::Debug for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Failure").field(&self.message()).finish()
    }
}

/// Which children a directive applies to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope {
    /// The failed child alone.
    OneForOne,
    /// Every child.
    AllForOne,
    /// The failed child and those started after it.
    RestForOne,
}

/// Delays between restarts: `min`, doubling per restart in the budget's window, at
/// most `max`, each stretched by up to `jitter` (a fraction) so that siblings do not
/// restart in lockstep.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    /// The first delay.
    pub min: Duration,
    /// The longest delay.
    pub max: Duration,
    /// The most a delay is stretched, as a fraction of it.
    pub jitter: f64,
}

impl Backoff {
    /// The delay before restart number `attempt` (1 for the first).
    pub fn delay(&self, attempt: u32) -> Duration {
        let base = backoff::ceiling(self.min, self.max, attempt.saturating_sub(1));
        base.saturating_add(backoff::uniform(base.mul_f64(self.jitter.max(0.0))))
    }
}

/// How an actor supervises its children ([`Actor::supervisor_strategy`](super::Actor::supervisor_strategy)).
#[derive(Clone)]
pub struct Strategy {
    pub(crate) scope: Scope,
    decide: Arc<dyn Fn(&Failure) -> Directive + Send + Sync>,
    pub(crate) max_restarts: usize,
    pub(crate) within: Duration,
    pub(crate) backoff: Backoff,
}

impl std::fmt::Debug for Strategy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Strategy")
            .field("scope", &self.scope)
            .field("max_restarts", &self.max_restarts)
            .field("within", &self.within)
            .field("backoff", &self.backoff)
            .finish_non_exhaustive()
    }
}

impl Strategy {
    /// Restart the failed child alone: at most 10 restarts a minute, then escalate;
    /// backoff from 10 ms to 1 s with 20 % jitter.
    pub fn one_for_one() -> Self {
        Self {
            scope: Scope::OneForOne,
            decide: Arc::new(|_| Directive::Restart),
            max_restarts: 10,
            within: Duration::from_secs(60),
            backoff: Backoff {
                min: Duration::from_millis(10),
                max: Duration::from_secs(1),
                jitter: 0.2,
            },
        }
    }

    /// As [`one_for_one`](Self::one_for_one), applied to every child.
    pub fn all_for_one() -> Self {
        Self {
            scope: Scope::AllForOne,
            ..Self::one_for_one()
        }
    }

    /// As [`one_for_one`](Self::one_for_one), applied to the failed child and those
    /// started after it.
    pub fn rest_for_one() -> Self {
        Self {
            scope: Scope::RestForOne,
            ..Self::one_for_one()
        }
    }

    /// Decides the directive from the failure: the value the child's handler panicked
    /// with.
    #[must_use]
    pub fn deciding(
        mut self,
        decide: impl Fn(&Failure) -> Directive + Send + Sync + 'static,
    ) -> Self {
        self.decide = Arc::new(decide);
        self
    }

    /// At most `max` restarts of one child within `within`; one more escalates.
    #[must_use]
    pub fn restarts(mut self, max: usize, within: Duration) -> Self {
        self.max_restarts = max;
        self.within = within;
        self
    }

    /// The delays between restarts.
    #[must_use]
    pub fn backoff(mut self, backoff: Backoff) -> Self {
        self.backoff = backoff;
        self
    }

    pub(crate) fn decide(&self, why: &Failure) -> Directive {
        (self.decide)(why)
    }
}

/// The restarts of one actor within the strategy's window.
#[derive(Debug, Default)]
pub(crate) struct Budget(VecDeque<Instant>);

impl Budget {
    /// Records a restart; returns its number within the window, or `None` when it
    /// would exceed the budget.
    pub(crate) fn spend(&mut self, strategy: &Strategy) -> Option<u32> {
        let now = Instant::now();
        while self
            .0
            .front()
            .is_some_and(|t| now.duration_since(*t) > strategy.within)
        {
            self.0.pop_front();
        }
        if self.0.len() >= strategy.max_restarts {
            return None;
        }
        self.0.push_back(now);
        u32::try_from(self.0.len()).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_to_its_cap_with_bounded_jitter() {
        let b = Backoff {
            min: Duration::from_millis(10),
            max: Duration::from_millis(50),
            jitter: 0.5,
        };
        for (attempt, base) in [(1, 10), (2, 20), (3, 40), (4, 50), (30, 50)] {
            let d = b.delay(attempt).as_secs_f64() * 1000.0;
            assert!(
                (base as f64..=base as f64 * 1.5).contains(&d),
                "{attempt}: {d}"
            );
        }
    }

    #[test]
    fn the_budget_refuses_the_restart_past_its_maximum() {
        let strategy = Strategy::one_for_one().restarts(2, Duration::from_secs(60));
        let mut budget = Budget::default();
        assert_eq!(budget.spend(&strategy), Some(1));
        assert_eq!(budget.spend(&strategy), Some(2));
        assert_eq!(budget.spend(&strategy), None);
    }
}
