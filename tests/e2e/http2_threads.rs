//! HTTP/2 under the thread models (issue 35): the connection's frames are read and
//! written on the thread of upgraded connections, holding no request thread, while
//! each stream's handler takes a thread as a connection's request would — from the
//! same pool and queue, or under the same cap — with the same 503 when none is free.
//! Under the other models these tests have nothing to show and return at once.

use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use bytes::Bytes;
use proscenium::{App, Model, inline};

use crate::support::h2::{Answer, H2, exchange, request};
use crate::support::{self};

/// How long a handler waits for the test before giving up (a busy machine's margin).
const PATIENCE: Duration = Duration::from_secs(60);

/// A gate handlers wait at: open, or counting who arrived.
#[derive(Default)]
struct Gate {
    state: Mutex<(bool, usize)>,
    changed: Condvar,
}

impl Gate {
    /// Arrives, and waits until the gate is open or `count` have arrived; returns
    /// whether they did within [`PATIENCE`].
    fn wait(&self, count: usize) -> bool {
        let mut state = self.state.lock().unwrap();
        state.1 += 1;
        self.changed.notify_all();
        let (state, waited) = self
            .changed
            .wait_timeout_while(state, PATIENCE, |(open, arrived)| {
                !*open && *arrived < count
            })
            .unwrap();
        drop(state);
        !waited.timed_out()
    }

    fn open(&self) {
        self.state.lock().unwrap().0 = true;
        self.changed.notify_all();
    }
}

/// `/meet` blocks its thread until two requests are there at once; `/hold` until the
/// test opens the gate.
fn app(meet: &Arc<Gate>, hold: &Arc<Gate>) -> App {
    let (meet, hold) = (meet.clone(), hold.clone());
    App::new()
        .get("/", inline(|| "served"))
        .get(
            "/meet",
            inline(move || if meet.wait(2) { "met" } else { "alone" }),
        )
        .get(
            "/hold",
            inline(move || {
                if hold.wait(usize::MAX) {
                    "let go"
                } else {
                    "gave up"
                }
            }),
        )
}

fn start(
    threads: usize,
    configure: impl FnOnce(&mut proscenium::Config),
) -> Option<(proscenium::ServerHandle, Arc<Gate>, Arc<Gate>)> {
    if !support::is_thread_model() {
        return None;
    }
    let (meet, hold) = (Arc::default(), Arc::default());
    let server = support::start_with(app(&meet, &hold), |c| {
        c.threads = Some(threads);
        configure(c);
    });
    Some((server, meet, hold))
}

#[test]
fn issue35_an_http2_connection_holds_no_request_thread() {
    let Some((server, ..)) = start(1, |_| {}) else {
        return;
    };
    let mut h2 = H2::connect(server.local_addr());
    assert_eq!(h2.get("/").text(), "served");
    // The one thread is free for another connection while this one stays open.
    let res = support::get(server.local_addr(), "/");
    assert_eq!((res.status, res.text().as_str()), (200, "served"));
    assert_eq!(h2.get("/").text(), "served", "and the connection serves on");
}

#[test]
fn issue35_the_streams_of_one_connection_take_threads_of_their_own() {
    let Some((server, ..)) = start(2, |_| {}) else {
        return;
    };
    let mut h2 = H2::connect(server.local_addr());
    let answers = h2.all_at_once(vec![
        (request("GET", "/meet"), Bytes::new()),
        (request("GET", "/meet"), Bytes::new()),
    ]);
    let texts: Vec<String> = answers.iter().map(Answer::text).collect();
    assert_eq!(texts, ["met", "met"], "two blocking handlers ran at once");
}

#[test]
fn issue35_a_stream_no_thread_can_take_is_answered_503_and_the_rest_are_served() {
    support::in_process("a cap on the threads of the whole server");
    let pool = support::model().model == Model::ThreadPool;
    // A pool of one thread and a queue of one; or one thread at a time, waited for
    // a second at most.
    let Some((server, _, hold)) = start(1, |c| {
        c.thread_queue = 1;
        c.timeouts.queue = if pool {
            Duration::from_secs(600)
        } else {
            Duration::from_secs(1)
        };
    }) else {
        return;
    };
    // The pool refuses the third (the second waits in the queue); one thread at a
    // time refuses the second and third once each has waited its second.
    let refusals = if pool { 1 } else { 2 };
    let h2 = H2::connect(server.local_addr());
    let send = h2.sender();
    let statuses = h2.block_on(async move {
        let mut answers = tokio::task::JoinSet::new();
        for _ in 0..3 {
            answers.spawn(exchange(
                send.clone(),
                request("GET", "/hold"),
                Bytes::new(),
            ));
            // In order: the first takes the thread before the next is sent.
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let mut statuses = Vec::new();
        while let Some(answer) = answers.join_next().await {
            let answer = answer.expect("an exchange");
            if answer.status == 503 {
                // Refused while the first is held: once all are, let it go.
                if statuses.iter().filter(|s| **s == 503).count() + 1 == refusals {
                    hold.open();
                }
            } else {
                assert_eq!(answer.text(), "let go");
            }
            statuses.push(answer.status.as_u16());
        }
        statuses.sort_unstable();
        statuses
    });
    let expected = if pool {
        [200, 200, 503]
    } else {
        [200, 503, 503]
    };
    assert_eq!(statuses, expected);
    assert_eq!(
        support::get(server.local_addr(), "/").status,
        200,
        "serving on"
    );
}
