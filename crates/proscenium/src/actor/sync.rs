//! The synchronisation primitives `mailbox.rs` is written against: parking_lot's lock
//! and std's atomics here, loom's when `tests/mailbox_model.rs` model-checks it.

pub(crate) use parking_lot::{Mutex, MutexGuard};
pub(crate) use std::sync::atomic::{AtomicBool, Ordering};
