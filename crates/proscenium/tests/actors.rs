//! Actors: ordering, ask and its timeout, every overflow policy with its dead letters,
//! restart after a panic, a two-thread dispatcher's cap, and a clean shutdown.

use std::collections::HashMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};
use std::time::Duration;

use proscenium::actor::{
    Actor, Addr, AskError, Context, DispatcherSpec, Handler, Message, Overflow, Props, Reason,
    SendError, System, TryTellError,
};

/// Records every number it is told, in order.
#[derive(Default)]
struct Log(Vec<u64>);

impl Actor for Log {}

#[derive(Debug, PartialEq)]
struct Push(u64);
impl Message for Push {
    type Reply = ();
}
impl Handler<Push> for Log {
    fn handle(&mut self, Push(n): Push, _: &mut Context<Self>) {
        assert_ne!(n, 13, "thirteen is unlucky");
        self.0.push(n);
    }
}

struct Dump;
impl Message for Dump {
    type Reply = Vec<u64>;
}
impl Handler<Dump> for Log {
    fn handle(&mut self, _: Dump, _: &mut Context<Self>) -> Vec<u64> {
        self.0.clone()
    }
}

struct Sleep(Duration);
impl Message for Sleep {
    type Reply = ();
}
impl Handler<Sleep> for Log {
    fn handle(&mut self, Sleep(d): Sleep, _: &mut Context<Self>) {
        std::thread::sleep(d);
    }
}

/// Holds its handler: passes `0` once inside, then again to finish.
struct Hold(Arc<Barrier>);
impl Message for Hold {
    type Reply = ();
}
impl Handler<Hold> for Log {
    fn handle(&mut self, Hold(gate): Hold, _: &mut Context<Self>) {
        gate.wait();
        gate.wait();
    }
}

/// Tells `log` to hold its handler; returns once it is inside, with the gate that
/// lets it go.
async fn hold(log: &Addr<Log>) -> Arc<Barrier> {
    let gate = Arc::new(Barrier::new(2));
    log.tell(Hold(gate.clone())).await.unwrap();
    gate.wait();
    gate
}

/// Waits until `log` has taken every message queued for it.
async fn room(log: &Addr<Log>) {
    while log.queued() > 0 {
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
}

#[test]
fn messages_from_one_sender_arrive_in_order() {
    let system = System::new();
    let log = system.spawn(Props::named("log"), Log::default);
    let senders: Vec<_> = (0..4u64)
        .map(|s| {
            let log = log.clone();
            std::thread::spawn(move || {
                System::new().block_on(async {
                    for i in 0..250 {
                        log.tell(Push(s * 1000 + 500 + i)).await.unwrap();
                    }
                });
            })
        })
        .collect();
    for s in senders {
        s.join().unwrap();
    }
    let seen = system.block_on(log.ask(Dump)).unwrap();
    assert_eq!(seen.len(), 1000);
    for s in 0..4 {
        let mine: Vec<u64> = seen.iter().copied().filter(|n| n / 1000 == s).collect();
        assert!(
            mine.windows(2).all(|w| w[0] < w[1]),
            "sender {s} out of order"
        );
    }
}

#[test]
fn an_ask_times_out_when_the_actor_is_busy() {
    let system = System::new();
    let log = system.spawn(Props::named("busy"), Log::default);
    system.block_on(async {
        log.tell(Sleep(Duration::from_millis(300))).await.unwrap();
        assert_eq!(
            log.ask_within(Dump, Duration::from_millis(50)).await,
            Err(AskError::Timeout)
        );
        assert_eq!(log.ask(Dump).await, Ok(vec![]));
    });
}

/// What `overflow` saw: each `try_tell`'s result, what the actor kept, the dead letters.
type Overflowed = (Vec<Result<(), TryTellError<Push>>>, Vec<u64>, Vec<Reason>);

/// Fills a one-slot mailbox behind a held handler, then sends two more.
fn overflow(policy: Overflow) -> Overflowed {
    let system = System::new();
    let mut letters = system.dead_letters().subscribe();
    let log = system.spawn(Props::named("small").mailbox(1, policy), Log::default);
    system.block_on(async {
        let gate = hold(&log).await;
        let sent = vec![log.try_tell(Push(1)), log.try_tell(Push(2))];
        gate.wait();
        // Room again, so the question is not refused.
        room(&log).await;
        let kept = log.ask(Dump).await.unwrap_or_default();
        let mut reasons = Vec::new();
        while let Ok(letter) = letters.try_recv() {
            reasons.push(letter.reason);
        }
        (sent, kept, reasons)
    })
}

#[test]
fn each_overflow_policy_accounts_for_every_message() {
    // `try_tell` hands back what finds no room, whatever the policy; only drop-oldest
    // makes room, by dropping the oldest to dead letters.
    for policy in [Overflow::Fail, Overflow::DropNewest, Overflow::Backpressure] {
        let (sent, kept, dead) = overflow(policy);
        assert_eq!(
            sent,
            [Ok(()), Err(TryTellError::Full(Push(2)))],
            "{policy:?}"
        );
        assert_eq!((kept, dead), (vec![1], vec![]), "{policy:?}");
    }
    let (sent, kept, dead) = overflow(Overflow::DropOldest);
    assert_eq!(sent, [Ok(()), Ok(())]);
    assert_eq!((kept, dead), (vec![2], vec![Reason::Overflow]));
}

#[test]
fn a_tell_that_finds_no_room_goes_to_dead_letters() {
    for (policy, refused) in [
        (Overflow::Fail, SendError::Full),
        (Overflow::DropNewest, SendError::Dropped),
    ] {
        let system = System::new();
        let log = system.spawn(Props::named("small").mailbox(1, policy), Log::default);
        let sent = system.block_on(async {
            let gate = hold(&log).await;
            log.tell(Push(1)).await.unwrap();
            let sent = log.tell(Push(2)).await;
            gate.wait();
            sent
        });
        assert_eq!(sent, Err(refused), "{policy:?}");
        assert_eq!(system.dead_letters().count(), 1, "{policy:?}");
    }
}

#[test]
fn try_tell_hands_a_stopped_actor_s_message_back() {
    let system = System::new();
    let log = system.spawn(Props::named("gone"), Log::default);
    log.stop();
    let refused = log.try_tell(Push(7)).unwrap_err();
    assert!(refused.is_stopped());
    assert_eq!(refused.into_inner(), Push(7));
    assert_eq!(system.dead_letters().count(), 0, "handed back, not lost");
}

#[test]
fn a_panic_restarts_the_actor_and_loses_only_the_failing_message() {
    let system = System::new();
    let mut letters = system.dead_letters().subscribe();
    let log = system.spawn(Props::named("fragile"), Log::default);
    let seen = system.block_on(async {
        log.tell(Sleep(Duration::from_millis(100))).await.unwrap();
        for n in [11, 12, 13, 14, 15] {
            log.tell(Push(n)).await.unwrap();
        }
        log.ask(Dump).await.unwrap()
    });
    // The fresh actor has lost 11 and 12 with the old state, but 14 and 15 — queued
    // behind the failing 13 — are kept.
    assert_eq!(seen, [14, 15]);
    let letter = letters.try_recv().unwrap();
    assert!(matches!(letter.reason, Reason::Failed(ref why) if why.contains("unlucky")));
    assert_eq!(system.dead_letters().count(), 1);
}

/// Counts how many of its instances are inside a handler at once.
struct Worker {
    inside: Arc<AtomicUsize>,
    most: Arc<AtomicUsize>,
}

impl Actor for Worker {}

struct Work;
impl Message for Work {
    type Reply = ();
}
impl Handler<Work> for Worker {
    fn handle(&mut self, _: Work, _: &mut Context<Self>) {
        let now = self.inside.fetch_add(1, Ordering::SeqCst) + 1;
        self.most.fetch_max(now, Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(20));
        self.inside.fetch_sub(1, Ordering::SeqCst);
    }
}

#[test]
fn a_two_thread_dispatcher_never_runs_more_than_two_handlers_at_once() {
    // The thesis's image-processing dispatcher, capped at two threads.
    let system = System::with_dispatchers(HashMap::from([(
        "images".to_owned(),
        DispatcherSpec::pool(2),
    )]));
    let inside = Arc::<AtomicUsize>::default();
    let most = Arc::<AtomicUsize>::default();
    let workers: Vec<_> = (0..6)
        .map(|i| {
            let (inside, most) = (Arc::clone(&inside), Arc::clone(&most));
            system.spawn(
                Props::named(format!("resize-{i}")).dispatcher("images"),
                move || Worker {
                    inside: inside.clone(),
                    most: most.clone(),
                },
            )
        })
        .collect();
    system.block_on(async {
        for _ in 0..3 {
            for w in &workers {
                w.tell(Work).await.unwrap();
            }
        }
        for w in &workers {
            w.ask(Work).await.unwrap();
        }
    });
    assert_eq!(most.load(Ordering::SeqCst), 2);
}

/// Records its lifecycle hooks.
struct Hooks(Arc<Mutex<Vec<&'static str>>>);

use std::sync::Mutex;

impl Actor for Hooks {
    fn started(&mut self, _: &mut Context<Self>) {
        self.0.lock().unwrap().push("started");
    }

    fn stopping(&mut self, _: &mut Context<Self>) {
        self.0.lock().unwrap().push("stopping");
    }

    fn stopped(&mut self) {
        self.0.lock().unwrap().push("stopped");
    }
}

impl Handler<Push> for Hooks {
    fn handle(&mut self, _: Push, _: &mut Context<Self>) {}
}

#[test]
fn shutdown_stops_every_actor_runs_its_hooks_and_reports_what_was_queued() {
    let hooks = Arc::new(Mutex::new(Vec::new()));
    let system = System::with_dispatchers(HashMap::from([(
        "pinned".to_owned(),
        DispatcherSpec {
            kind: proscenium::actor::DispatcherKind::Pinned,
            ..DispatcherSpec::default()
        },
    )]));
    let log = system.spawn(Props::named("sleepy"), Log::default);
    let h = hooks.clone();
    let hooked = system.spawn(Props::named("hooked").dispatcher("pinned"), move || {
        Hooks(h.clone())
    });
    system.block_on(async {
        log.tell(Sleep(Duration::from_millis(100))).await.unwrap();
        log.tell(Push(1)).await.unwrap();
        hooked.tell(Push(1)).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
    });
    assert_eq!(system.live_actors(), 2);
    system.shutdown();
    assert_eq!(system.live_actors(), 0);
    assert_eq!(*hooks.lock().unwrap(), ["started", "stopping", "stopped"]);
    assert_eq!(system.dead_letters().count(), 1, "the queued Push(1)");
    assert_eq!(
        system.block_on(log.tell(Push(2))),
        Err(SendError::Stopped),
        "a stopped actor refuses, to dead letters"
    );
    assert_eq!(system.dead_letters().count(), 2);
}

/// Counts ticks; sets timers when told.
#[derive(Default)]
struct Ticker {
    ticks: u64,
    timers: Vec<proscenium::actor::TimerHandle>,
}

impl Actor for Ticker {}

struct Tick;
impl Message for Tick {
    type Reply = ();
}
impl Handler<Tick> for Ticker {
    fn handle(&mut self, _: Tick, _: &mut Context<Self>) {
        self.ticks += 1;
    }
}

struct Arm;
impl Message for Arm {
    type Reply = ();
}
impl Handler<Arm> for Ticker {
    fn handle(&mut self, _: Arm, ctx: &mut Context<Self>) {
        self.timers
            .push(ctx.run_interval(Duration::from_millis(20), || Tick));
        let once = ctx.run_later(Duration::from_millis(30), Tick);
        once.cancel();
        self.timers.push(once);
    }
}

struct Disarm;
impl Message for Disarm {
    type Reply = u64;
}
impl Handler<Disarm> for Ticker {
    fn handle(&mut self, _: Disarm, _: &mut Context<Self>) -> u64 {
        self.timers
            .iter()
            .for_each(proscenium::actor::TimerHandle::cancel);
        self.ticks
    }
}

#[test]
fn timers_fire_on_time_and_stop_when_cancelled() {
    let system = System::new();
    let ticker = system.spawn(Props::named("ticker"), Ticker::default);
    let (at_cancel, later) = system.block_on(async {
        ticker.tell(Arm).await.unwrap();
        tokio::time::sleep(Duration::from_millis(210)).await;
        let at_cancel = ticker.ask(Disarm).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        (at_cancel, ticker.ask(Disarm).await.unwrap())
    });
    // Every 20 ms for 210 ms is 10; a loaded machine may lose some, never gain.
    assert!((3..=10).contains(&at_cancel), "{at_cancel} ticks");
    assert!(
        later <= at_cancel + 1,
        "ticks after cancel: {at_cancel} → {later}"
    );

    let fired = Arc::new(AtomicUsize::new(0));
    let (once, periodic) = (fired.clone(), fired.clone());
    system.schedule_once(Duration::from_millis(10), move || {
        once.fetch_add(100, Ordering::SeqCst);
    });
    let renewal = system.schedule_periodic(Duration::from_millis(20), move || {
        periodic.fetch_add(1, Ordering::SeqCst);
    });
    std::thread::sleep(Duration::from_millis(110));
    renewal.cancel();
    let at_cancel = fired.load(Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(60));
    assert!(
        at_cancel >= 100 + 3,
        "once fired, periodic several times: {at_cancel}"
    );
    assert_eq!(
        fired.load(Ordering::SeqCst),
        at_cancel,
        "nothing after cancel"
    );
}

/// A child that counts its starts (shared across restarts) and panics on `Boom`.
struct Kid {
    starts: Arc<Mutex<Vec<std::time::Instant>>>,
    kept: u64,
}

impl Actor for Kid {
    fn started(&mut self, _: &mut Context<Self>) {
        self.starts.lock().unwrap().push(std::time::Instant::now());
    }
}

struct Boom;
impl Message for Boom {
    type Reply = ();
}
impl Handler<Boom> for Kid {
    fn handle(&mut self, _: Boom, _: &mut Context<Self>) {
        self.kept += 1;
        panic!("boom");
    }
}

/// What a kid panics with on `Trip`, for its parent's decider to tell apart from a
/// panic's message.
#[derive(Debug)]
struct Transient;

struct Trip;
impl Message for Trip {
    type Reply = ();
}
impl Handler<Trip> for Kid {
    fn handle(&mut self, _: Trip, _: &mut Context<Self>) {
        std::panic::panic_any(Transient);
    }
}

struct Kept;
impl Message for Kept {
    type Reply = u64;
}
impl Handler<Kept> for Kid {
    fn handle(&mut self, _: Kept, _: &mut Context<Self>) -> u64 {
        self.kept
    }
}

type Starts = Arc<Mutex<Vec<std::time::Instant>>>;

/// A parent of `n` kids under `strategy`; counts its own starts too.
struct Parent {
    strategy: proscenium::actor::Strategy,
    kid_starts: Vec<Starts>,
    own_starts: Starts,
    kids: Vec<proscenium::actor::Addr<Kid>>,
}

impl Actor for Parent {
    fn started(&mut self, ctx: &mut Context<Self>) {
        self.own_starts
            .lock()
            .unwrap()
            .push(std::time::Instant::now());
        self.kids = self
            .kid_starts
            .iter()
            .enumerate()
            .map(|(i, starts)| {
                let starts = starts.clone();
                ctx.spawn_child(Props::named(format!("kid-{i}")), move || Kid {
                    starts: starts.clone(),
                    kept: 0,
                })
            })
            .collect();
    }

    fn supervisor_strategy(&self) -> proscenium::actor::Strategy {
        self.strategy.clone()
    }
}

struct Kids;
impl Message for Kids {
    type Reply = Vec<proscenium::actor::Addr<Kid>>;
}
impl Handler<Kids> for Parent {
    fn handle(&mut self, _: Kids, _: &mut Context<Self>) -> Vec<proscenium::actor::Addr<Kid>> {
        self.kids.clone()
    }
}

/// A family of `n` kids under `strategy`; returns the system, the parent, the kids'
/// and the parent's start records.
fn family(
    strategy: proscenium::actor::Strategy,
    n: usize,
) -> (System, proscenium::actor::Addr<Parent>, Vec<Starts>, Starts) {
    let system = System::new();
    let kid_starts: Vec<Starts> = (0..n).map(|_| Starts::default()).collect();
    let own_starts = Starts::default();
    let (k, o) = (kid_starts.clone(), own_starts.clone());
    let parent = system.spawn(Props::named("parent"), move || Parent {
        strategy: strategy.clone(),
        kid_starts: k.clone(),
        own_starts: o.clone(),
        kids: Vec::new(),
    });
    (system, parent, kid_starts, own_starts)
}

fn starts(of: &Starts) -> usize {
    of.lock().unwrap().len()
}

/// Waits up to five seconds (a loaded machine is slow) for `done` to hold.
fn eventually(done: impl Fn() -> bool) -> bool {
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    while !done() {
        if std::time::Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    true
}

fn quick_backoff() -> proscenium::actor::Backoff {
    proscenium::actor::Backoff {
        min: Duration::from_millis(5),
        max: Duration::from_millis(5),
        jitter: 0.0,
    }
}

#[test]
fn all_for_one_restarts_the_siblings_and_one_for_one_only_the_failed() {
    use proscenium::actor::Strategy;
    for (strategy, want) in [
        (Strategy::all_for_one(), [2, 2, 2]),
        (Strategy::one_for_one(), [1, 2, 1]),
        (Strategy::rest_for_one(), [1, 2, 2]),
    ] {
        let (system, parent, kids, _) = family(strategy.backoff(quick_backoff()), 3);
        system.block_on(async {
            let addrs = parent.ask(Kids).await.unwrap();
            addrs[1].tell(Boom).await.unwrap();
            tokio::time::sleep(Duration::from_millis(100)).await;
        });
        let got: Vec<usize> = kids.iter().map(starts).collect();
        assert_eq!(got, want);
    }
}

#[test]
fn resume_keeps_the_state_and_stop_stops() {
    use proscenium::actor::{Directive, Strategy};
    let (system, parent, kids, _) =
        family(Strategy::one_for_one().deciding(|_| Directive::Resume), 1);
    let kept = system.block_on(async {
        let kid = parent.ask(Kids).await.unwrap().remove(0);
        kid.tell(Boom).await.unwrap();
        kid.tell(Boom).await.unwrap();
        kid.ask(Kept).await.unwrap()
    });
    assert_eq!(
        (kept, starts(&kids[0])),
        (2, 1),
        "resumed twice, never restarted"
    );

    let (system, parent, _, _) = family(Strategy::one_for_one().deciding(|_| Directive::Stop), 1);
    let kid = system.block_on(async {
        let kid = parent.ask(Kids).await.unwrap().remove(0);
        kid.tell(Boom).await.unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        kid
    });
    assert!(kid.is_stopped());
}

#[test]
fn the_decider_gets_the_value_the_handler_panicked_with() {
    use proscenium::actor::{Directive, Strategy};
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let strategy = Strategy::one_for_one().deciding(move |failure| {
        log.lock()
            .unwrap()
            .push(failure.message().map(str::to_owned));
        if failure.downcast_ref::<Transient>().is_some() {
            Directive::Resume
        } else {
            Directive::Stop
        }
    });
    let (system, parent, kids, _) = family(strategy, 1);
    let kid = system.block_on(async {
        let kid = parent.ask(Kids).await.unwrap().remove(0);
        kid.tell(Trip).await.unwrap();
        assert_eq!(
            kid.ask(Kept).await,
            Ok(0),
            "resumed after the transient fault"
        );
        kid.tell(Boom).await.unwrap();
        kid
    });
    assert!(
        eventually(|| kid.is_stopped()),
        "stopped: a message is not Transient"
    );
    assert_eq!(starts(&kids[0]), 1, "never restarted");
    assert_eq!(*seen.lock().unwrap(), [None, Some("boom".to_owned())]);
}

#[test]
fn a_recipient_tells_tries_and_asks_as_its_address_does() {
    let system = System::new();
    let log = system.spawn(
        Props::named("small").mailbox(1, Overflow::Fail),
        Log::default,
    );
    let (push, dump) = (log.recipient::<Push>(), log.recipient::<Dump>());
    let (sent, seen) = system.block_on(async {
        let gate = hold(&log).await;
        let sent = [push.try_tell(Push(1)), push.try_tell(Push(2))];
        gate.wait();
        room(&log).await;
        push.tell(Push(3)).await.unwrap();
        room(&log).await;
        (sent, dump.ask(Dump).await)
    });
    assert_eq!(sent, [Ok(()), Err(TryTellError::Full(Push(2)))]);
    assert_eq!(seen, Ok(vec![1, 3]));
}

#[test]
fn a_spent_restart_budget_escalates_to_the_parent() {
    use proscenium::actor::Strategy;
    let strategy = Strategy::one_for_one()
        .restarts(2, Duration::from_secs(60))
        .backoff(quick_backoff());
    let (system, parent, kids, own) = family(strategy, 1);
    system.block_on(async {
        let kid = parent.ask(Kids).await.unwrap().remove(0);
        for _ in 0..3 {
            kid.tell(Boom).await.unwrap();
            tokio::time::sleep(Duration::from_millis(40)).await;
        }
    });
    // Two restarts of the kid, then the third failure escalates: the (top-level)
    // parent is restarted by the system, and its fresh `started` spawns a new kid.
    assert!(eventually(|| starts(&own) == 2), "the parent restarted");
    assert!(eventually(|| starts(&kids[0]) == 4));
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(starts(&own), 2, "and only once");
    assert_eq!(starts(&kids[0]), 4, "1 + 2 restarts + the new parent's kid");
}

#[test]
fn backoff_between_restarts_grows() {
    use proscenium::actor::{Backoff, Strategy};
    let strategy = Strategy::one_for_one().backoff(Backoff {
        min: Duration::from_millis(20),
        max: Duration::from_secs(1),
        jitter: 0.1,
    });
    let (system, parent, kids, _) = family(strategy, 1);
    system.block_on(async {
        let kid = parent.ask(Kids).await.unwrap().remove(0);
        for _ in 0..4 {
            kid.tell(Boom).await.unwrap();
        }
        tokio::time::sleep(Duration::from_millis(600)).await;
    });
    let at = kids[0].lock().unwrap().clone();
    assert_eq!(at.len(), 5);
    let gaps: Vec<u128> = at.windows(2).map(|w| (w[1] - w[0]).as_millis()).collect();
    for (gap, least) in gaps.iter().zip([20, 40, 80, 160]) {
        assert!(*gap >= least, "gaps {gaps:?}");
    }
}

/// Remembers who it saw stop.
#[derive(Default)]
struct Watcher(Vec<String>);
impl Actor for Watcher {}
impl Handler<proscenium::actor::Terminated> for Watcher {
    fn handle(&mut self, t: proscenium::actor::Terminated, _: &mut Context<Self>) {
        self.0.push(t.name);
    }
}

struct WatchLog(proscenium::actor::Addr<Log>);
impl Message for WatchLog {
    type Reply = ();
}
impl Handler<WatchLog> for Watcher {
    fn handle(&mut self, WatchLog(addr): WatchLog, ctx: &mut Context<Self>) {
        ctx.watch(&addr);
    }
}

struct Seen;
impl Message for Seen {
    type Reply = Vec<String>;
}
impl Handler<Seen> for Watcher {
    fn handle(&mut self, _: Seen, _: &mut Context<Self>) -> Vec<String> {
        self.0.clone()
    }
}

#[test]
fn a_watcher_is_told_when_the_watched_actor_stops() {
    let system = System::new();
    let watcher = system.spawn(Props::named("watcher"), Watcher::default);
    let log = system.spawn(Props::named("watched"), Log::default);
    let seen = system.block_on(async {
        watcher.tell(WatchLog(log.clone())).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        log.stop();
        tokio::time::sleep(Duration::from_millis(50)).await;
        watcher.ask(Seen).await.unwrap()
    });
    assert_eq!(seen, ["watched"]);
}

#[test]
fn named_actors_are_found_until_they_stop() {
    let system = System::new();
    let log = system.spawn(Props::named("journal"), Log::default);
    system.register(&log).unwrap();
    let taken = system.register(&log).unwrap_err();
    assert_eq!(taken.name(), "journal", "a name is taken once");
    let found = system.lookup::<Log>("journal").expect("registered");
    assert!(system.lookup::<Worker>("journal").is_none(), "another type");
    system.block_on(found.tell(Push(7))).unwrap();
    assert_eq!(system.block_on(log.ask(Dump)), Ok(vec![7]));
    log.stop();
    std::thread::sleep(Duration::from_millis(50));
    assert!(system.lookup::<Log>("journal").is_none());
}

#[test]
fn routers_spread_messages_in_turn_or_to_the_emptiest_mailbox() {
    use proscenium::actor::Routing;
    let system = System::new();
    let pool = system.spawn_pool(&Props::named("log"), 3, Routing::RoundRobin, Log::default);
    let counts = system.block_on(async {
        for n in 0..9 {
            pool.tell(Push(n)).await.unwrap();
        }
        let mut counts = Vec::new();
        for r in pool.routees() {
            counts.push(r.ask(Dump).await.unwrap().len());
        }
        counts
    });
    assert_eq!(counts, [3, 3, 3]);
    assert_eq!(pool.routees()[2].name(), "log-2");

    let pool = system.spawn_pool(
        &Props::named("busy"),
        2,
        Routing::SmallestMailbox,
        Log::default,
    );
    let second = system.block_on(async {
        // The first routee is kept busy with queued work; new messages avoid it.
        pool.routees()[0]
            .tell(Sleep(Duration::from_millis(150)))
            .await
            .unwrap();
        for _ in 0..5 {
            pool.routees()[0]
                .tell(Sleep(Duration::from_millis(1)))
                .await
                .unwrap();
        }
        for n in 0..3 {
            pool.tell(Push(n)).await.unwrap();
        }
        pool.routees()[1].ask(Dump).await.unwrap()
    });
    assert_eq!(second.len(), 3);
}
