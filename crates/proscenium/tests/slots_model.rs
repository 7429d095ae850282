//! Model-checks the count behind the connection cap with loom: `src/rt/slots.rs`,
//! compiled here unchanged against loom's atomics, under every interleaving of
//! acceptors on several threads (up to loom's preemption bound). Checked: however the
//! takes and give-backs interleave, no more places are held at once than the cap, a
//! place given back is taken again, and the count ends at zero.
//!
//! The gate around it (`rt/overload.rs`: waiting on tokio's `Notify`, the prefork load
//! board) is not modelled; tokio model-checks its `Notify`.

/// What `slots.rs` is written against: loom's primitives here.
mod sync {
    pub(crate) use loom::sync::atomic::{AtomicUsize, Ordering};
}

#[path = "../src/rt/slots.rs"]
mod slots;

use loom::sync::Arc;
use loom::sync::atomic::{AtomicUsize, Ordering};
use loom::thread;
use slots::Slots;

fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(f);
}

/// An acceptor: takes a place if it can, counts itself among the holders, checks the
/// cap, and gives the place back.
fn accept_once(slots: &Slots, holders: &AtomicUsize, cap: usize) -> bool {
    if slots.try_take().is_none() {
        return false;
    }
    let now = holders.fetch_add(1, Ordering::SeqCst) + 1;
    assert!(now <= cap, "{now} places held under a cap of {cap}");
    holders.fetch_sub(1, Ordering::SeqCst);
    slots.give_back();
    true
}

#[test]
fn acceptors_on_three_threads_never_hold_more_places_than_the_cap() {
    model(|| {
        let slots = Arc::new(Slots::new(2));
        let holders = Arc::new(AtomicUsize::new(0));
        let threads: Vec<_> = (0..3)
            .map(|_| {
                let (slots, holders) = (slots.clone(), holders.clone());
                thread::spawn(move || accept_once(&slots, &holders, 2))
            })
            .collect();
        let admitted = threads.into_iter().map(|t| t.join().unwrap());
        assert!(admitted.filter(|a| *a).count() >= 2, "two places were free");
        assert_eq!(slots.taken(), 0);
    });
}

#[test]
fn a_place_given_back_on_one_thread_is_taken_on_another() {
    model(|| {
        let slots = Arc::new(Slots::new(1));
        assert_eq!(slots.try_take(), Some(1));
        let other = {
            let slots = slots.clone();
            thread::spawn(move || slots.give_back())
        };
        assert_eq!(other.join().unwrap(), 0);
        assert_eq!(slots.try_take(), Some(1), "the place given back is free");
        assert_eq!(slots.try_take(), None, "and only that one");
    });
}
