//! The hub in one process, and hubs of two "replicas" sharing a real `redis-server`
//! of each test's own (`crate::testing`).

#[cfg(feature = "redis")]
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::*;
use crate::testing::Redis;

/// A hub whose subscribers queue `queue` posts, shared through `redis` if given (and
/// trusting its CA, for one speaking TLS).
fn hub_with(queue: usize, redis: Option<&Redis>) -> Hub {
    let redis = redis.map(Redis::spec).unwrap_or_default();
    Hub::with(FeedsSpec {
        redis: redis.url,
        ca: redis.ca,
        queue,
        ..FeedsSpec::default()
    })
}

/// Waits for the next post, failing the test after five seconds.
#[cfg(feature = "redis")]
fn next(subscription: &mut Subscription) -> Arc<Post> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime
        .block_on(async { tokio::time::timeout(Duration::from_secs(5), subscription.recv()).await })
        .expect("a post within 5 s")
}

fn texts(subscription: &mut Subscription) -> Vec<String> {
    std::iter::from_fn(|| subscription.try_recv())
        .map(|post| post.text().unwrap().to_owned())
        .collect()
}

#[test]
fn a_post_reaches_the_subscriptions_whose_patterns_match_its_topic() {
    let hub = Hub::new();
    let mut likes = hub.subscribe("/picture/*/likes");
    let mut one = hub.subscribe("/picture/1/*");
    let mut all = hub.subscribe("*");
    hub.publish("/picture/1/likes", "a").unwrap();
    hub.publish("/picture/2/likes", "b").unwrap();
    hub.publish("/picture/1/comments", "c").unwrap();
    hub.publish("/user/9", "d").unwrap();
    assert_eq!(texts(&mut likes), ["a", "b"]);
    assert_eq!(texts(&mut one), ["a", "c"]);
    assert_eq!(texts(&mut all), ["a", "b", "c", "d"]);
}

/// Issue 33: a payload past `max_post` is refused, reaches no one and is not kept.
#[test]
fn a_post_past_max_post_is_refused_and_reaches_no_one() {
    let hub = Hub::with(FeedsSpec {
        max_post: 4,
        ..FeedsSpec::default()
    });
    let mut all = hub.subscribe("*");
    hub.publish("t", "four").unwrap();
    let error = hub.publish("t", "five!").unwrap_err();
    assert!(error.is_too_large(), "{error}");
    assert_eq!(texts(&mut all), ["four"]);
    let mut resumed = hub.subscribe_after("*", Some("unknown"));
    assert_eq!(texts(&mut resumed), ["four"]);
}

#[test]
fn a_call_subscriber_gets_posts_until_it_declines() {
    let hub = Hub::new();
    let seen = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&seen);
    hub.feed_with("t/*", move |post| {
        kept.lock().push(post.text().unwrap().to_owned());
        post.text() != Some("last")
    });
    for text in ["a", "last", "after"] {
        hub.publish("t/1", text).unwrap();
    }
    assert_eq!(*seen.lock(), ["a", "last"]);
    assert!(hub.0.patterns.read().is_empty(), "let go once it declined");
}

#[test]
fn a_subscriber_that_never_reads_drops_its_own_oldest_and_slows_no_one() {
    let hub = hub_with(4, None);
    let mut idle = hub.subscribe("t");
    let mut busy = hub.subscribe("t");
    for n in 0..100 {
        hub.publish("t", n.to_string()).unwrap();
        assert_eq!(
            busy.try_recv().unwrap().text(),
            Some(n.to_string().as_str())
        );
    }
    assert_eq!(idle.dropped(), 96);
    assert_eq!(texts(&mut idle), ["96", "97", "98", "99"]);
    assert_eq!(busy.dropped(), 0);
}

#[test]
fn a_subscription_after_an_id_starts_with_what_the_history_kept_after_it() {
    let hub = Hub::new();
    let ids: Vec<String> = (0..5)
        .map(|n| hub.publish("t", n.to_string()).unwrap())
        .collect();
    hub.publish("other", "x").unwrap();
    let mut resumed = hub.subscribe_after("t", Some(&ids[1]));
    hub.publish("t", "5").unwrap();
    assert_eq!(texts(&mut resumed), ["2", "3", "4", "5"]);
    let mut unknown = hub.subscribe_after("t", Some("not-an-id"));
    assert_eq!(texts(&mut unknown).len(), 6, "all it kept");
}

#[test]
fn dropped_subscriptions_are_let_go() {
    let hub = Hub::new();
    for _ in 0..SWEEP_EVERY * 2 {
        drop(hub.subscribe("quiet"));
    }
    let kept: usize = hub.0.patterns.read().values().map(Vec::len).sum();
    assert!(kept <= SWEEP_EVERY as usize, "{kept} kept");
    let mut live = hub.subscribe("busy");
    for _ in 0..3 {
        drop(hub.subscribe("busy"));
    }
    assert_eq!(hub.0.patterns.read()["busy"].len(), 1 + 3);
    hub.publish("busy", "x").unwrap();
    assert_eq!(
        hub.0.patterns.read()["busy"].len(),
        1,
        "a post finds them gone"
    );
    hub.publish("busy", "y").unwrap();
    assert_eq!(texts(&mut live), ["x", "y"]);
}

/// Waits until `hub` is connected to its Redis.
#[cfg(feature = "redis")]
fn connected(hub: &Hub) {
    let began = Instant::now();
    while !hub.is_connected() {
        assert!(
            began.elapsed() < Duration::from_secs(10),
            "connected within 10 s"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
#[cfg(feature = "redis")]
fn replicas_share_posts_through_redis_each_once_with_the_same_id() {
    replicas_share_posts_through(&Redis::start());
}

#[test]
#[cfg(all(feature = "redis", feature = "tls"))]
fn issue34_replicas_share_posts_through_rediss_trusting_its_ca() {
    replicas_share_posts_through(&Redis::start_tls());
}

/// Two replicas' hubs on `redis`: each has every like once, with its publisher's id.
#[cfg(feature = "redis")]
fn replicas_share_posts_through(redis: &Redis) {
    let (a, b) = (hub_with(64, Some(redis)), hub_with(64, Some(redis)));
    connected(&a);
    connected(&b);
    let (mut at_a, mut at_b) = (
        a.subscribe("/picture/*/likes"),
        b.subscribe("/picture/*/likes"),
    );
    let id = a.publish("/picture/7/likes", "from a").unwrap();
    b.publish("/picture/8/likes", "from b").unwrap();
    b.publish("/user/1", "not a like").unwrap();
    // Each replica has both likes: its own at once, the other's through Redis (in
    // either order), with the id its publisher gave it.
    for at in [&mut at_a, &mut at_b] {
        let mut posts = [next(at), next(at)];
        posts.sort_by(|x, y| x.text().cmp(&y.text()));
        let [from_a, from_b] = posts;
        assert_eq!(
            (from_a.id(), from_a.topic(), from_a.text()),
            (id.as_str(), "/picture/7/likes", Some("from a"))
        );
        assert_eq!(
            (from_b.topic(), from_b.text()),
            ("/picture/8/likes", Some("from b"))
        );
    }
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        at_a.try_recv().is_none() && at_b.try_recv().is_none(),
        "each once"
    );
    assert_eq!((a.lost(), b.lost()), (0, 0));
}

/// The number a post's id gives it at its replica.
#[cfg(feature = "redis")]
fn number(post: &Post) -> u64 {
    post.id().rsplit_once('-').unwrap().1.parse().unwrap()
}

/// Redis restarted while a replica publishes: both replicas reconnect and subscribe
/// again by themselves, and of the posts published across the restart every one up
/// to the first the other gets after it either arrived or is counted lost.
#[test]
#[cfg(feature = "redis")]
fn after_a_redis_restart_replicas_resubscribe_and_count_what_they_missed() {
    let mut redis = Redis::start();
    let (a, b) = (
        hub_with(100_000, Some(&redis)),
        hub_with(100_000, Some(&redis)),
    );
    connected(&a);
    connected(&b);
    let mut at_b = b.subscribe("t");
    a.publish("t", "before").unwrap();
    assert_eq!(number(&next(&mut at_b)), 1);
    let done = Arc::new(AtomicBool::new(false));
    let publisher = {
        let done = Arc::clone(&done);
        std::thread::spawn(move || {
            for n in 0..2_000 {
                a.publish("t", n.to_string()).unwrap();
                std::thread::sleep(Duration::from_micros(500));
            }
            // Then on until B has one from after the restart.
            while !done.load(Ordering::Relaxed) {
                a.publish("t", "after").unwrap();
                std::thread::sleep(Duration::from_millis(20));
            }
        })
    };
    redis.restart(Duration::from_millis(300));
    let mut arrived = 0;
    let last = loop {
        let post = next(&mut at_b);
        arrived += 1;
        if post.text() == Some("after") {
            break number(&post);
        }
    };
    done.store(true, Ordering::Relaxed);
    publisher.join().unwrap();
    eprintln!(
        "of posts 2..={last} published by A across the restart, B got {arrived} and counted {} lost",
        b.lost()
    );
    assert_eq!(
        arrived + b.lost(),
        last - 1,
        "every post arrived or was counted lost"
    );
    assert!(b.is_connected(), "B subscribed again");
}

/// The thesis's channels, as any Redis client uses them: a raw topic's posts go out as
/// `PUBLISH /picture/9/likes 2`, come in from a plain `PUBLISH`, and reach each
/// replica's subscribers once.
#[test]
#[cfg(feature = "redis")]
fn issue39_raw_topics_are_published_and_read_as_any_redis_client_does() {
    let redis = Redis::start();
    let ready = |hub: Hub| {
        connected(&hub);
        hub
    };
    let spec = FeedsSpec {
        redis: Some(redis.url()),
        raw: vec!["/picture/*/likes".to_owned()],
        ..FeedsSpec::default()
    };
    let (a, b) = (ready(Hub::with(spec.clone())), ready(Hub::with(spec)));
    let (mut at_a, mut at_b) = (
        a.subscribe("/picture/*/likes"),
        b.subscribe("/picture/*/likes"),
    );
    let client = ::redis::Client::open(redis.url()).unwrap();
    let mut listening = client.get_connection().unwrap();
    let mut other = client.get_connection().unwrap();
    let mut listener = listening.as_pubsub();
    listener.psubscribe("/picture/*/likes").unwrap();
    listener
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    ::redis::cmd("PUBLISH")
        .arg("/picture/1234/likes")
        .arg("1")
        .exec(&mut other)
        .unwrap();
    a.publish("/picture/9/likes", "2").unwrap();
    for at in [&mut at_a, &mut at_b] {
        let posts = [next(at), next(at)];
        let seen: Vec<_> = posts.iter().map(|p| (p.topic(), p.text())).collect();
        assert_eq!(
            seen,
            [
                ("/picture/1234/likes", Some("1")),
                ("/picture/9/likes", Some("2"))
            ]
        );
    }
    let heard: Vec<(String, Vec<u8>)> = (0..2)
        .map(|_| {
            let message = listener.get_message().unwrap();
            (
                message.get_channel_name().to_owned(),
                message.get_payload_bytes().to_vec(),
            )
        })
        .collect();
    assert_eq!(
        heard,
        [
            ("/picture/1234/likes".to_owned(), b"1".to_vec()),
            ("/picture/9/likes".to_owned(), b"2".to_vec()),
        ],
        "the payload as published, on the topic's own channel"
    );
    std::thread::sleep(Duration::from_millis(100));
    assert!(
        at_a.try_recv().is_none() && at_b.try_recv().is_none(),
        "each once, this replica's own post too"
    );
}
