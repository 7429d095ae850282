//! The interpreter states of one app or set of pages, waiting between requests: a
//! request takes one (or has one made), runs on it within its budgets, and gives it
//! back — so a state serves one request at a time, on one thread. States of an older
//! generation (made before a file changed) are dropped rather than given back, and so
//! is a state whose request ran past a budget, and one whose script thread was retired
//! (see [`threads`](super::threads)). The pool's requests run on its script threads.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use parking_lot::Mutex;

use super::sandbox::Sandboxed;
use super::threads::{self, Ran, ScriptThreads, Turn};
use super::{Failure, LuaSpec};
use crate::app::Reply;
use crate::counters::Tally;

/// How many idle states a pool keeps, at most: one per script thread.
const MAX_IDLE: usize = 64;

/// A state and what it holds for its pool's user (compiled pages, an app's routes).
pub(super) struct Slot<T> {
    pub(super) state: Sandboxed,
    pub(super) data: T,
    generation: u64,
}

/// The states of one app or set of pages.
pub(super) struct Pool<T> {
    spec: LuaSpec,
    idle: Mutex<Vec<Slot<T>>>,
    generation: AtomicU64,
    threads: ScriptThreads,
}

impl<T> std::fmt::Debug for Pool<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("idle", &self.idle.lock().len())
            .field("generation", &self.generation.load(Ordering::Relaxed))
            .finish_non_exhaustive()
    }
}

impl<T> Pool<T> {
    pub(super) fn new(spec: &LuaSpec) -> Self {
        Self {
            spec: spec.clone(),
            idle: Mutex::new(Vec::new()),
            generation: AtomicU64::new(0),
            threads: ScriptThreads::new(spec),
        }
    }

    /// Answers with `work`, run on one of the pool's script threads.
    pub(super) fn on_thread(&self, work: impl FnOnce(&Turn<'_>) -> Ran + Send + 'static) -> Reply {
        self.threads.run(work)
    }

    /// Takes an idle state of this generation, or makes one with `make` — its memory
    /// bounded from then on to what it holds now and `[lua] memory` more (past the
    /// bound Lua collects its garbage and tries again before it fails). `make` is given
    /// the budget of instructions its scripts load within (`[lua] instructions`).
    pub(super) fn take(
        &self,
        make: impl FnOnce(usize) -> mlua::Result<(Sandboxed, T)>,
    ) -> Result<Slot<T>, Failure> {
        let generation = self.generation.load(Ordering::Acquire);
        loop {
            let Some(slot) = self.idle.lock().pop() else {
                break;
            };
            if slot.generation == generation {
                return Ok(slot);
            }
        }
        let (state, data) = make(self.spec.instructions).map_err(|e| Failure::of(e, false))?;
        let limit = state.lua.used_memory().saturating_add(self.spec.memory);
        state
            .lua
            .set_memory_limit(limit)
            .map_err(|e| Failure::of(e, false))?;

        Ok(Slot {
            state,
            data,
            generation,
        })
    }

    /// Gives `slot` back for the next request, unless it is of an older generation or
    /// its request's thread was retired.
    pub(super) fn give(&self, slot: Slot<T>) {
        if slot.generation != self.generation.load(Ordering::Acquire) || threads::is_retired() {
            return;
        }
        let mut idle = self.idle.lock();
        if idle.len() < MAX_IDLE {
            idle.push(slot);
        }
    }

    /// Makes every state made so far old: a file they loaded changed.
    pub(super) fn renew(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
        self.idle.lock().clear();
    }

    /// Runs `call` on `slot` within the request's instruction budget, giving the
    /// state back after unless a budget was passed.
    pub(super) fn run<R>(
        &self,
        mut slot: Slot<T>,
        call: impl FnOnce(&Sandboxed, &mut T) -> mlua::Result<R>,
    ) -> Result<R, Failure> {
        let result = self.budgeted(&mut slot, call);
        self.settle(slot, &result);
        result
    }

    /// Runs `call` on `slot` within the request's instruction budget; the caller
    /// [`settle`](Self::settle)s the slot with the result in the end.
    pub(super) fn budgeted<R>(
        &self,
        slot: &mut Slot<T>,
        call: impl FnOnce(&Sandboxed, &mut T) -> mlua::Result<R>,
    ) -> Result<R, Failure> {
        slot.state.budget.refill(self.spec.instructions as u64);
        let started = Instant::now();
        let result = slot.state.run(|| call(&slot.state, &mut slot.data));
        let took = u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX);
        Tally::LuaNanos.add(took);
        let exhausted = slot.state.budget.is_exhausted();
        let result = result.map_err(|e| Failure::of(e, exhausted));
        Failure::tally(&result);
        result
    }

    /// Gives `slot` back after `result`, unless that passed a budget.
    pub(super) fn settle<R>(&self, slot: Slot<T>, result: &Result<R, Failure>) {
        match result {
            Err(failure) if failure.spoils_state() => {}
            _ => self.give(slot),
        }
    }
}
