//! The interpreter states of one app or set of pages, waiting between requests: a
//! request takes one (or has one made), runs on it within its budgets, and gives it
//! back — so a state serves one request at a time, on one thread. States of an older
//! generation (made before a file changed) are dropped rather than given back, and so
//! is a state whose request ran past a budget.

use std::sync::atomic::{AtomicU64, Ordering};

use mlua::Lua;
use parking_lot::Mutex;

use super::sandbox::Budget;
use super::{Failure, LuaSpec};

/// How many idle states a pool keeps: one per thread that ran Lua lately, for the
/// loop models; the thread models' many threads make more when they need them.
const MAX_IDLE: usize = 64;

/// A state and what it holds for its pool's user (compiled pages, an app's routes).
pub(super) struct Slot<T> {
    pub(super) lua: Lua,
    pub(super) data: T,
    generation: u64,
}

/// The states of one app or set of pages.
pub(super) struct Pool<T> {
    spec: LuaSpec,
    idle: Mutex<Vec<Slot<T>>>,
    generation: AtomicU64,
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
        }
    }

    /// Takes an idle state of this generation, or makes one with `make`.
    pub(super) fn take(
        &self,
        make: impl FnOnce() -> mlua::Result<(Lua, T)>,
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
        let (lua, data) = make().map_err(|e| Failure::of(e, false))?;
        Ok(Slot {
            lua,
            data,
            generation,
        })
    }

    /// Gives `slot` back for the next request, unless it is of an older generation.
    pub(super) fn give(&self, slot: Slot<T>) {
        if slot.generation != self.generation.load(Ordering::Acquire) {
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

    /// Runs `call` on `slot` within the request budgets, giving the state back after
    /// unless a budget was passed.
    pub(super) fn run<R>(
        &self,
        mut slot: Slot<T>,
        call: impl FnOnce(&Lua, &mut T) -> mlua::Result<R>,
    ) -> Result<R, Failure> {
        let budget = slot.lua.app_data_ref::<Budget>().map(|budget| {
            budget.refill(self.spec.instructions as u64);
        });
        debug_assert!(budget.is_some(), "every state has a budget");
        let limit = slot.lua.used_memory().saturating_add(self.spec.memory);
        let _ = slot.lua.set_memory_limit(limit);
        let result = call(&slot.lua, &mut slot.data);
        let exhausted = slot
            .lua
            .app_data_ref::<Budget>()
            .is_some_and(|budget| budget.is_exhausted());
        let result = result.map_err(|e| Failure::of(e, exhausted));
        match &result {
            Err(failure) if failure.spoils_state() => {}
            _ => self.give(slot),
        }
        result
    }
}
