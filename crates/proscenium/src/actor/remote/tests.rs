//! Nodes of separate actor systems against a real `redis-server` of each test's own
//! (`crate::testing`); a node's `crash` ends it as a killed process would.

use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};

use super::*;
use crate::actor::{Actor, AskError, Context, Handler, Props, SendError, TryTellError};
use crate::testing::Redis;

/// Notes a number.
#[derive(Serialize, Deserialize)]
struct Note(u64);
impl Message for Note {
    type Reply = ();
}

/// How many numbers were noted.
#[derive(Serialize, Deserialize)]
struct Count;
impl Message for Count {
    type Reply = usize;
}

/// A message the recorder is not exported for.
#[derive(Serialize, Deserialize)]
struct Other;
impl Message for Other {
    type Reply = ();
}

/// Records the numbers it is told, in a list the test reads.
struct Recorder {
    seen: Arc<Mutex<Vec<u64>>>,
    /// How long each note takes.
    pace: Duration,
}
impl Actor for Recorder {}
impl Handler<Note> for Recorder {
    fn handle(&mut self, Note(n): Note, _: &mut Context<Self>) {
        std::thread::sleep(self.pace);
        self.seen.lock().push(n);
    }
}
impl Handler<Count> for Recorder {
    fn handle(&mut self, _: Count, _: &mut Context<Self>) -> usize {
        self.seen.lock().len()
    }
}
impl Handler<Other> for Recorder {
    fn handle(&mut self, _: Other, _: &mut Context<Self>) {}
}

/// Records the names it is told terminated.
struct Watcher(Arc<Mutex<Vec<String>>>);
impl Actor for Watcher {}
impl Handler<Terminated> for Watcher {
    fn handle(&mut self, Terminated { name }: Terminated, _: &mut Context<Self>) {
        self.0.lock().push(name);
    }
}

fn spec(redis: &Redis) -> RedisSpec {
    RedisSpec {
        heartbeat: Duration::from_millis(50),
        ..redis.spec()
    }
}

/// A system running a recorder named `recorder`, exported by a node for notes and
/// counts; the list it records in.
async fn recorder(system: &System, redis: &Redis, pace: Duration) -> (Node, Arc<Mutex<Vec<u64>>>) {
    let node = Node::join(system, &spec(redis)).await.unwrap();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let list = Arc::clone(&seen);
    let addr = system.spawn(Props::named("recorder"), move || Recorder {
        seen: Arc::clone(&list),
        pace,
    });
    node.export::<Note>(&addr).await.unwrap();
    node.export::<Count>(&addr).await.unwrap();
    (node, seen)
}

/// The letters pending in the recorder's mailbox group.
fn pending(redis: &Redis) -> u64 {
    let mut raw = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let summary: (u64, redis::Value, redis::Value, redis::Value) = redis::cmd("XPENDING")
        .arg("proscenium:actors:mailbox:recorder")
        .arg("mailbox")
        .query(&mut raw)
        .unwrap();
    summary.0
}

/// Waits up to `within` for `done`.
async fn until(within: Duration, mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + within;
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    true
}

#[test]
fn one_senders_tells_arrive_in_order_and_its_asks_are_answered_across_nodes() {
    tells_and_asks_cross(&Redis::start());
}

// The test's Redis speaks TLS with a certificate the `tls` feature's tools make.
#[test]
#[cfg(feature = "tls")]
fn issue34_tells_and_asks_cross_nodes_through_rediss_trusting_its_ca() {
    tells_and_asks_cross(&Redis::start_tls());
}

/// One sender's tells arrive in order, and its asks are answered, across two nodes
/// joined through `redis`.
fn tells_and_asks_cross(redis: &Redis) {
    let (host, client) = (System::new(), System::new());
    client.block_on(async {
        let (_exporter, seen) = recorder(&host, redis, Duration::ZERO).await;
        let node = Node::join(&client, &spec(redis)).await.unwrap();
        let notes = node.recipient::<Note>("recorder").await.unwrap();
        for n in 0..10_000 {
            notes.tell(Note(n)).await.unwrap();
        }
        // An address of the actor's type goes through the same outbox: its ask,
        // after the tells, is answered once all of them are handled.
        let recorder = node.addr::<Recorder>("recorder").await.unwrap();
        assert_eq!(recorder.ask(Count).await.unwrap(), 10_000);
        recorder.tell(Note(10_000)).await.unwrap();
        assert_eq!(recorder.ask(Count).await.unwrap(), 10_001);
        assert_eq!(*seen.lock(), (0..=10_000).collect::<Vec<_>>());
        assert_eq!((notes.name(), recorder.name()), ("recorder", "recorder"));
    });
}

#[test]
fn a_name_is_held_by_one_node_and_a_name_nobody_holds_is_not_found() {
    let redis = Redis::start();
    let (first, second) = (System::new(), System::new());
    second.block_on(async {
        let (_holder, _) = recorder(&first, &redis, Duration::ZERO).await;
        let node = Node::join(&second, &spec(&redis)).await.unwrap();
        let other = second.spawn(Props::named("recorder"), || Recorder {
            seen: Arc::default(),
            pace: Duration::ZERO,
        });
        let taken = node.export::<Note>(&other).await.unwrap_err();
        assert!(matches!(taken, RemoteError::Taken { ref name, .. } if name == "recorder"));
        let missing = node.recipient::<Note>("nobody").await.unwrap_err();
        assert!(matches!(missing, RemoteError::NotFound(ref name) if name == "nobody"));
    });
}

#[test]
fn a_letter_of_a_type_not_exported_is_refused_to_the_asker_and_reported() {
    let redis = Redis::start();
    let (host, client) = (System::new(), System::new());
    client.block_on(async {
        let (_exporter, _) = recorder(&host, &redis, Duration::ZERO).await;
        let node = Node::join(&client, &spec(&redis)).await.unwrap();
        let other = node.recipient::<Other>("recorder").await.unwrap();
        assert_eq!(
            other.ask(Other).await.unwrap_err(),
            AskError::Send(SendError::Unserializable)
        );
        assert_eq!(host.dead_letters().count(), 1);
    });
}

#[test]
fn a_crashed_nodes_actor_is_unreachable_its_watchers_told_and_its_letters_handled_by_the_next_holder()
 {
    const NOTES: u64 = 2_000;
    let redis = Redis::start();
    let (first, client, second) = (System::new(), System::new(), System::new());
    client.block_on(async {
        let (crashing, before) = recorder(&first, &redis, Duration::from_micros(200)).await;
        let node = Node::join(&client, &spec(&redis)).await.unwrap();
        let told = Arc::new(Mutex::new(Vec::new()));
        let watcher = client.spawn(Props::named("watcher"), {
            let told = Arc::clone(&told);
            move || Watcher(Arc::clone(&told))
        });
        node.watch("recorder", watcher.recipient()).await.unwrap();
        let notes = node.recipient::<Note>("recorder").await.unwrap();
        for n in 0..NOTES {
            notes.tell(Note(n)).await.unwrap();
        }
        assert!(until(Duration::from_secs(10), || before.lock().len() >= 100).await);
        // As a process killed: the node and its actor end mid-run, what the actor
        // had queued unhandled.
        crashing.crash();
        first.shutdown();
        let handled_before = before.lock().len();
        assert!(
            handled_before < NOTES as usize,
            "{handled_before} handled already"
        );
        assert!(pending(&redis) > 0, "the first holder left nothing pending");
        // The name expires after three heartbeats, and the next sees it gone.
        assert!(until(Duration::from_secs(5), || !told.lock().is_empty()).await);
        assert_eq!(*told.lock(), ["recorder"]);
        assert_eq!(
            notes.tell(Note(NOTES)).await.unwrap_err(),
            SendError::Unreachable
        );
        assert!(client.dead_letters().count() >= 1);

        // The actor again, in another process: it takes over what was left.
        let (_next, after) = recorder(&second, &redis, Duration::ZERO).await;
        let all_handled = || {
            let mut seen: Vec<u64> = before.lock().clone();
            seen.extend(after.lock().iter());
            seen.sort_unstable();
            seen.dedup();
            seen == (0..NOTES).collect::<Vec<_>>()
        };
        assert!(until(Duration::from_secs(10), all_handled).await);
        // What was pending on the first holder was taken over and acknowledged.
        assert!(until(Duration::from_secs(5), || pending(&redis) == 0).await);
        // And the client reaches it again once a heartbeat has seen the new holder.
        assert!(
            until(Duration::from_secs(5), || notes
                .try_tell(Note(NOTES))
                .is_ok())
            .await
        );
    });
}

#[test]
fn while_redis_is_down_tells_fail_as_unreachable_and_go_again_once_it_is_back() {
    let redis = Redis::start();
    let port = redis.port();
    let (host, client) = (System::new(), System::new());
    client.block_on(async {
        let (_exporter, _) = recorder(&host, &redis, Duration::ZERO).await;
        let node = Node::join(&client, &spec(&redis)).await.unwrap();
        let notes = node.recipient::<Note>("recorder").await.unwrap();
        let count = node.recipient::<Count>("recorder").await.unwrap();
        let told = Arc::new(Mutex::new(Vec::new()));
        let watcher = client.spawn(Props::named("watcher"), {
            let told = Arc::clone(&told);
            move || Watcher(Arc::clone(&told))
        });
        node.watch("recorder", watcher.recipient()).await.unwrap();
        notes.tell(Note(0)).await.unwrap();
        drop(redis);
        let unreachable = || {
            matches!(
                notes.try_tell(Note(1)),
                Err(TryTellError::Unreachable(Note(1)))
            )
        };
        assert!(until(Duration::from_secs(5), unreachable).await);
        assert_eq!(
            notes.tell(Note(1)).await.unwrap_err(),
            SendError::Unreachable
        );
        // Back, empty (no persistence): the host takes its name again at its next
        // heartbeat and makes its mailbox anew; the client sees it at its own.
        let _redis = Redis::start_on(port);
        let mut answered = false;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !answered && Instant::now() < deadline {
            answered = count
                .ask_within(Count, Duration::from_millis(200))
                .await
                .is_ok();
        }
        assert!(answered, "no answer once Redis was back");
        // The names Redis lost were taken again by a live holder: no one terminated.
        tokio::time::sleep(Duration::from_millis(300)).await;
        assert!(told.lock().is_empty(), "told {:?}", told.lock());
    });
}
