//! `/metrics` for actors (issue 36): mailbox lengths, dead letters and restarts by
//! actor kind, checked against what a test's own actor went through.

use std::collections::HashMap;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proscenium::actor::{
    Actor, Context, DispatcherSpec, Handler, Message, Overflow, Props, System,
};
use proscenium::{App, inline};

use crate::admin::{Series, scrape, start};

/// An actor whose `Hold` tells `entered` and waits for a token from `gate`, and whose
/// `Boom` panics.
struct Gatekeeper {
    entered: mpsc::Sender<()>,
    gate: Arc<Mutex<mpsc::Receiver<()>>>,
}

impl Actor for Gatekeeper {}

struct Hold;
impl Message for Hold {
    type Reply = ();
}
impl Handler<Hold> for Gatekeeper {
    fn handle(&mut self, _: Hold, _: &mut Context<Self>) {
        self.entered.send(()).unwrap();
        let _ = self
            .gate
            .lock()
            .unwrap()
            .recv_timeout(Duration::from_secs(30));
    }
}

struct Boom;
impl Message for Boom {
    type Reply = ();
}
impl Handler<Boom> for Gatekeeper {
    fn handle(&mut self, _: Boom, _: &mut Context<Self>) {
        panic!("boom");
    }
}

/// Returns the value of `family`'s series for the kind `Gatekeeper` (its kind label is
/// the type's path, which names this module).
fn gatekeeper(metrics: &[(Series, f64)], family: &str) -> f64 {
    metrics
        .iter()
        .filter(|((name, labels), _)| {
            name == family
                && labels
                    .get("kind")
                    .is_some_and(|kind| kind.ends_with("metrics_actors::Gatekeeper"))
        })
        .map(|(_, value)| value)
        .sum()
}

/// Returns the scrape once `family` reads at least `n` for `Gatekeeper` (or after
/// 30 s, for the assertions to report).
fn scrape_until(admin: std::net::SocketAddr, family: &str, n: f64) -> Vec<(Series, f64)> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let metrics = scrape(admin);
        if gatekeeper(&metrics, family) >= n || Instant::now() > deadline {
            return metrics;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn issue36_metrics_show_actors_mailboxes_dead_letters_and_restarts_by_kind() {
    let (_server, admin) = start(App::new().get("/hello", inline(|| "hello")));
    // A thread of its own (the held handler blocks it), taking a message a turn.
    let held = DispatcherSpec {
        throughput: Some(1),
        ..DispatcherSpec::pool(1)
    };
    let system = System::with_dispatchers(HashMap::from([("held".to_owned(), held)]));
    let (release, gate) = mpsc::channel();
    let (entered_tx, entered) = mpsc::channel();
    let gate = Arc::new(Mutex::new(gate));
    let props = Props::named("gatekeeper")
        .dispatcher("held")
        .mailbox(3, Overflow::DropNewest);
    let actor = system.spawn(props, move || Gatekeeper {
        entered: entered_tx.clone(),
        gate: gate.clone(),
    });
    let before = scrape(admin);
    assert_eq!(
        gatekeeper(&before, "proscenium_actor_alive"),
        1.0,
        "{before:?}"
    );
    assert_eq!(gatekeeper(&before, "proscenium_actor_restarts_total"), 0.0);

    // A panic: its message a dead letter, the actor restarted.
    actor.try_tell(Boom).unwrap();
    let metrics = scrape_until(admin, "proscenium_actor_restarts_total", 1.0);
    assert_eq!(gatekeeper(&metrics, "proscenium_actor_restarts_total"), 1.0);
    assert_eq!(
        gatekeeper(&metrics, "proscenium_actor_dead_letters_total"),
        1.0
    );

    // One held, three queued behind it, a fifth dropped as the mailbox is full.
    actor.try_tell(Hold).unwrap();
    entered.recv_timeout(Duration::from_secs(30)).unwrap();
    for _ in 0..3 {
        actor.try_tell(Hold).unwrap();
    }
    let metrics = scrape_until(admin, "proscenium_actor_mailbox_messages", 3.0);
    assert!(
        gatekeeper(&metrics, "proscenium_actor_mailbox_messages") >= 3.0,
        "{metrics:?}"
    );
    // Refused or not, the dropped message is a dead letter.
    let _ = system.block_on(actor.tell(Hold));
    let metrics = scrape_until(admin, "proscenium_actor_dead_letters_total", 2.0);
    assert_eq!(
        gatekeeper(&metrics, "proscenium_actor_dead_letters_total"),
        2.0
    );

    for _ in 0..4 {
        release.send(()).unwrap();
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while gatekeeper(&scrape(admin), "proscenium_actor_mailbox_messages") > 0.0 {
        assert!(Instant::now() < deadline, "the mailbox empties");
        std::thread::sleep(Duration::from_millis(20));
    }
    system.shutdown();
    assert_eq!(gatekeeper(&scrape(admin), "proscenium_actor_alive"), 0.0);
}
