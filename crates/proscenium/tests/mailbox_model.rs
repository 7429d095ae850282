//! Model-checks the actor mailbox with loom: `src/actor/mailbox.rs`, compiled here
//! unchanged against loom's lock and atomics (and with no spinning: a waiter parks at
//! once), under every interleaving of an actor and its senders up to loom's preemption
//! bound. Checked: an arrival or an order always wakes an idle actor (loom fails a model
//! in which every thread waits), a sender waiting for room is let in once the actor
//! takes a message, the close wakes everyone and loses nothing, an order waiting
//! raises the flag the actor looks at between messages, and every actor counted as
//! woken is counted again as awake.
//!
//! The mailbox's `Notify`s are tokio's, which loom does not see into: the models take
//! them as correct (tokio model-checks them) and check the protocol around them.

// `mailbox.rs` holds items the crate uses and these models do not.
#![allow(dead_code, unreachable_pub)]

#[path = "loom_lock/mod.rs"]
mod loom_lock;

/// What `mailbox.rs` is written against: loom's primitives here, with the lock in
/// parking_lot's shape (no poisoning).
mod sync {
    pub(crate) use loom::sync::atomic::{AtomicBool, Ordering};

    pub(crate) use super::loom_lock::{Mutex, MutexGuard};
}

/// No spinning: a waiter parks at once, so every wake-up goes through the protocol.
/// Counts the actors woken and awake, on this test's thread (loom runs a model's threads
/// as coroutines on it).
mod spin {
    use std::cell::Cell;
    use std::time::Instant;

    thread_local! {
        pub(crate) static WAKING: Cell<isize> = const { Cell::new(0) };
    }

    pub(crate) struct Turn;

    pub(crate) fn spin_turn(_since: &mut Option<Instant>) -> Option<Turn> {
        None
    }

    pub(crate) fn waking() {
        WAKING.set(WAKING.get() + 1);
    }

    pub(crate) fn awake() {
        WAKING.set(WAKING.get() - 1);
    }
}

/// A child's failure, as the orders carry it.
#[derive(Debug)]
pub(crate) struct Failure;

#[path = "../src/actor/mailbox.rs"]
mod mailbox;

use std::collections::VecDeque;

use loom::future::block_on;
use loom::sync::Arc;
use loom::sync::atomic::AtomicBool;
use loom::thread;
use mailbox::{Control, Mailbox, Overflow, Push, Work};
use sync::Ordering;

/// Runs `f` under every interleaving; each must leave no actor counted as woken, once
/// its threads are done (`all_awake`) and once the mailbox is gone.
fn model(f: impl Fn() + Sync + Send + 'static) {
    let mut builder = loom::model::Builder::new();
    builder.preemption_bound = Some(2);
    builder.check(move || {
        spin::WAKING.set(0);
        f();
        all_awake();
    });
}

fn all_awake() {
    assert_eq!(
        spin::WAKING.get(),
        0,
        "an actor counted woken and never awake"
    );
}

/// Takes turns from `mailbox` until `want` messages are handled or it closes; returns
/// the messages in the order handled.
fn actor(mailbox: &Mailbox<u32>, want: usize) -> Vec<u32> {
    let mut handled = Vec::new();
    let mut hand = VecDeque::new();
    while handled.len() < want {
        match block_on(mailbox.recv(true, &mut hand)) {
            Some(Work::Turn) => handled.extend(hand.drain(..)),
            Some(Work::Order(order)) => panic!("no orders here: {order:?}"),
            None => break,
        }
    }
    handled
}

#[test]
fn an_arrival_always_wakes_the_idle_actor() {
    model(|| {
        let mailbox = Arc::new(Mailbox::new(4, Overflow::Fail, 1));
        let sender = {
            let mailbox = mailbox.clone();
            thread::spawn(move || {
                for n in [1, 2] {
                    assert!(matches!(mailbox.push(n), Push::Queued));
                }
            })
        };
        assert_eq!(actor(&mailbox, 2), [1, 2]);
        sender.join().unwrap();
        all_awake();
    });
}

#[test]
fn a_sender_waiting_for_room_is_let_in_once_the_actor_takes_a_message() {
    model(|| {
        let mailbox = Arc::new(Mailbox::new(1, Overflow::Backpressure, 1));
        assert!(matches!(mailbox.push(1), Push::Queued));
        let sender = {
            let mailbox = mailbox.clone();
            thread::spawn(move || matches!(block_on(mailbox.push_waiting(2)), Push::Queued))
        };
        assert_eq!(actor(&mailbox, 2), [1, 2]);
        assert!(sender.join().unwrap());
        all_awake();
    });
}

#[test]
fn the_close_wakes_the_actor_and_the_sender_and_loses_nothing() {
    model(|| {
        let mailbox = Arc::new(Mailbox::new(1, Overflow::Backpressure, 1));
        assert!(matches!(mailbox.push(1), Push::Queued));
        let sender = {
            let mailbox = mailbox.clone();
            thread::spawn(move || match block_on(mailbox.push_waiting(2)) {
                Push::Queued => None,
                Push::Closed(back) => Some(back),
                _ => panic!("backpressure neither displaces nor refuses"),
            })
        };
        let closer = {
            let mailbox = mailbox.clone();
            thread::spawn(move || mailbox.close())
        };
        let handled = actor(&mailbox, 2);
        let back = sender.join().unwrap();
        let left = closer.join().unwrap();
        let mut every: Vec<u32> = handled.into_iter().chain(left).chain(back).collect();
        every.sort_unstable();
        assert_eq!(
            every,
            [1, 2],
            "each message handled, left or handed back once"
        );
        assert!(mailbox.is_closed());
        all_awake();
    });
}

#[test]
fn an_order_raises_the_flag_until_the_actor_takes_it() {
    model(|| {
        let mailbox = Arc::new(Mailbox::new(4, Overflow::Fail, 2));
        let ordered = Arc::new(AtomicBool::new(false));
        let supervisor = {
            let (mailbox, ordered) = (mailbox.clone(), ordered.clone());
            thread::spawn(move || {
                mailbox.order(Control::Resume);
                ordered.store(true, Ordering::SeqCst);
            })
        };
        assert!(matches!(mailbox.push(1), Push::Queued));
        assert!(matches!(mailbox.push(2), Push::Queued));
        let mut hand = VecDeque::new();
        let mut took_order = false;
        let mut handled = 0;
        while !took_order || handled < 2 {
            match block_on(mailbox.recv(true, &mut hand)) {
                Some(Work::Order(Control::Resume)) => took_order = true,
                Some(Work::Turn) => {
                    // As the actor goes from one message in hand to the next.
                    while hand.pop_front().is_some() {
                        handled += 1;
                        if ordered.load(Ordering::SeqCst) && !took_order {
                            assert!(mailbox.wants_attention(), "an order waits unseen");
                            break;
                        }
                    }
                }
                other => panic!("unexpected: {}", other.is_none()),
            }
        }
        supervisor.join().unwrap();
        all_awake();
    });
}
