//! Unit tests of the lock scheduler, apart from `lock.rs` so that the loom model
//! (`tests/lock_model.rs`) can compile that file as it is.

use std::future::Future;
use std::task::{Context, Waker};

use super::lock::{Access, Lock, try_acquire_all};
use super::sync::Arc;

fn lock() -> Arc<Lock> {
    Arc::new(Lock::default())
}

#[test]
fn readers_share_and_writers_exclude() {
    let l = lock();
    let r1 = Lock::try_acquire(&l, Access::Read).unwrap();
    let r2 = Lock::try_acquire(&l, Access::Read).unwrap();
    assert!(Lock::try_acquire(&l, Access::Write).is_none());
    drop((r1, r2));
    let w = Lock::try_acquire(&l, Access::Write).unwrap();
    assert!(Lock::try_acquire(&l, Access::Read).is_none());
    drop(w);
    assert!(Lock::try_acquire(&l, Access::Read).is_some());
}

#[test]
fn a_queued_writer_stops_new_readers() {
    let l = lock();
    let r = Lock::try_acquire(&l, Access::Read).unwrap();
    let mut writer = std::pin::pin!(Lock::acquire(&l, Access::Write));
    let mut cx = Context::from_waker(Waker::noop());
    assert!(writer.as_mut().poll(&mut cx).is_pending());
    assert!(
        Lock::try_acquire(&l, Access::Read).is_none(),
        "a reader may not pass a queued writer"
    );
    drop(r);
    assert!(writer.as_mut().poll(&mut cx).is_ready());
}

#[test]
fn a_dropped_waiter_leaves_the_queue() {
    let l = lock();
    let r = Lock::try_acquire(&l, Access::Read).unwrap();
    {
        let mut writer = Box::pin(Lock::acquire(&l, Access::Write));
        let mut cx = Context::from_waker(Waker::noop());
        assert!(writer.as_mut().poll(&mut cx).is_pending());
    }
    assert!(
        Lock::try_acquire(&l, Access::Read).is_some(),
        "queue is empty again"
    );
    drop(r);
    assert!(Lock::try_acquire(&l, Access::Write).is_some());
}

#[test]
fn a_set_is_taken_whole_or_not_at_all() {
    let (a, b) = (lock(), lock());
    let held = Lock::try_acquire(&b, Access::Write).unwrap();
    let set = [(a.clone(), Access::Write), (b, Access::Read)];
    assert!(try_acquire_all(&set).is_none());
    assert!(
        Lock::try_acquire(&a, Access::Write).is_some(),
        "a was given back"
    );
    drop(held);
    assert_eq!(try_acquire_all(&set).map(|g| g.len()), Some(2));
}
