//! The mailbox's unit tests, apart from `mailbox.rs` so that the loom model, which
//! compiles that file, does not compile them.

use std::collections::VecDeque;

use super::mailbox::{Mailbox, Overflow, Push, Work};

fn full(overflow: Overflow) -> Mailbox<u32> {
    let mailbox = Mailbox::new(2, overflow, 1);
    assert!(matches!(mailbox.push(1), Push::Queued));
    assert!(matches!(mailbox.push(2), Push::Queued));
    mailbox
}

#[test]
fn each_policy_does_its_thing_when_full() {
    assert!(matches!(full(Overflow::Fail).push(3), Push::Full(3)));
    assert!(matches!(
        full(Overflow::Backpressure).push(3),
        Push::Full(3)
    ));
    assert!(matches!(full(Overflow::DropNewest).push(3), Push::Full(3)));
    let oldest = full(Overflow::DropOldest);
    assert!(matches!(oldest.push(3), Push::Displaced(1)));
    assert_eq!(oldest.close(), [2, 3]);
}

#[test]
fn a_turn_taken_in_hand_still_counts_toward_the_bound() {
    let mailbox = Mailbox::new(2, Overflow::Fail, 4);
    let mut hand = VecDeque::new();
    assert!(matches!(mailbox.push(1), Push::Queued));
    assert!(matches!(mailbox.push(2), Push::Queued));
    assert!(matches!(
        mailbox.take(true, &mut hand, false),
        Some(Some(Work::Turn))
    ));
    assert_eq!(hand, [1, 2]);
    // 1 is being handled, 2 waits in hand: room for one more, not three.
    assert!(matches!(mailbox.push(3), Push::Queued));
    assert!(matches!(mailbox.push(4), Push::Full(4)));
    assert_eq!(mailbox.len(), 2);
    hand.clear();
    assert!(matches!(
        mailbox.take(true, &mut hand, false),
        Some(Some(Work::Turn))
    ));
    assert_eq!(hand, [3]);
    assert!(matches!(mailbox.push(4), Push::Queued));
}

#[tokio::test]
async fn a_sender_waiting_for_room_is_let_in_once_the_actor_has_handled_a_message() {
    let mailbox = std::sync::Arc::new(Mailbox::new(1, Overflow::Backpressure, 4));
    let mut hand = VecDeque::new();
    assert!(matches!(mailbox.push(1), Push::Queued));
    assert!(matches!(
        mailbox.take(true, &mut hand, false),
        Some(Some(Work::Turn))
    ));
    assert!(matches!(mailbox.push(2), Push::Queued));
    let waiting = tokio::spawn({
        let mailbox = mailbox.clone();
        async move { matches!(mailbox.push_waiting(3).await, Push::Queued) }
    });
    tokio::task::yield_now().await;
    assert!(!waiting.is_finished(), "full: 2 waits");
    hand.clear();
    assert!(matches!(
        mailbox.take(true, &mut hand, false),
        Some(Some(Work::Turn))
    ));
    assert!(waiting.await.unwrap(), "handling 1 made room");
}

#[test]
fn only_an_actor_woken_from_its_park_counts_as_waking_and_only_until_it_looks() {
    let mailbox = Mailbox::new(4, Overflow::Fail, 1);
    let mut hand = VecDeque::new();
    // Spinning: idle, not parked; a message rouses it without counting.
    assert!(mailbox.take(true, &mut hand, false).is_none());
    assert!(matches!(mailbox.push(1), Push::Queued));
    assert!(!mailbox.is_woken());
    assert!(mailbox.wants_attention(), "the spinner's flag is up");
    assert!(mailbox.take(true, &mut hand, false).is_some());
    hand.clear();
    // Parked: the next arrival counts it until it looks.
    assert!(mailbox.take(true, &mut hand, true).is_none());
    assert!(matches!(mailbox.push(2), Push::Queued));
    assert!(matches!(mailbox.push(3), Push::Queued));
    assert!(mailbox.is_woken(), "counted once");
    assert!(mailbox.take(true, &mut hand, false).is_some());
    assert!(!mailbox.is_woken());
}

#[test]
fn a_closed_mailbox_hands_back_what_is_left_and_refuses_more() {
    let mailbox = full(Overflow::Fail);
    assert_eq!(mailbox.close(), [1, 2]);
    assert!(matches!(mailbox.push(3), Push::Closed(3)));
}
