//! Against a real `redis-server` of each test's own (`crate::testing`).

use std::time::{Duration, Instant};

use super::*;
use crate::testing::Redis;

const WAIT: Duration = Duration::from_millis(200);

/// Receives until `n` events came (or a second passed).
async fn receive_n(receiver: &mut StreamReceiver, n: usize) -> Vec<Delivery<u64>> {
    let deadline = Instant::now() + Duration::from_secs(1);
    let mut got = Vec::new();
    while got.len() < n && Instant::now() < deadline {
        got.extend(receiver.receive::<u64>(n - got.len(), WAIT).await.unwrap());
    }
    got
}

fn events(deliveries: &[Delivery<u64>]) -> Vec<u64> {
    deliveries
        .iter()
        .map(|d| *d.event.as_ref().unwrap())
        .collect()
}

#[tokio::test]
async fn events_cross_in_order_each_to_one_consumer_and_an_acknowledged_one_never_again() {
    events_cross_once_each(&Redis::start()).await;
}

// The test's Redis speaks TLS with a certificate the `tls` feature's tools make.
#[tokio::test]
#[cfg(feature = "tls")]
async fn issue34_events_cross_through_rediss_trusting_its_ca() {
    events_cross_once_each(&Redis::start_tls()).await;
}

// The test's Redis speaks TLS with a certificate the `tls` feature's tools make.
#[tokio::test]
#[cfg(feature = "tls")]
async fn issue34_rediss_without_its_ca_is_refused_not_spoken_in_plain() {
    let redis = Redis::start_tls();
    let refused = StreamSender::connect(redis.url(), "s").await;
    let Err(StreamError::Redis(error)) = refused else {
        panic!("connected without trusting the CA");
    };
    assert!(
        error.to_string().to_lowercase().contains("certificate"),
        "{error}"
    );
}

/// Events sent through `redis` cross in order, each to one consumer of the group,
/// and an acknowledged one is never claimed.
async fn events_cross_once_each(redis: &Redis) {
    let url = redis.target();
    let mut first = StreamReceiver::join(&url, "s", "g", "first").await.unwrap();
    let mut second = StreamReceiver::join(&url, "s", "g", "second")
        .await
        .unwrap();
    let mut sender = StreamSender::connect(&url, "s").await.unwrap();
    let ids = sender.send(&(0..100).collect::<Vec<u64>>()).await.unwrap();
    assert_eq!(ids.len(), 100, "one round trip, a hundred entries");
    let got = receive_n(&mut first, 60).await;
    assert_eq!(events(&got), (0..60).collect::<Vec<_>>(), "in order");
    let rest = receive_n(&mut second, 40).await;
    assert_eq!(
        events(&rest),
        (60..100).collect::<Vec<_>>(),
        "the group's others"
    );
    let acked: Vec<String> = got.iter().map(|d| d.id.clone()).collect();
    first.ack(&acked).await.unwrap();
    // What is acknowledged is never claimed; the unacknowledged are.
    tokio::time::sleep(Duration::from_millis(20)).await;
    let claimed = second.claim::<u64>(Duration::ZERO, 1000).await.unwrap();
    assert_eq!(events(&claimed), (60..100).collect::<Vec<_>>());
}

#[tokio::test]
async fn events_left_pending_by_a_consumer_that_died_go_to_a_live_one_after_the_idle_time() {
    let redis = Redis::start();
    let url = redis.url();
    let mut dying = StreamReceiver::join(&url, "s", "g", "dying").await.unwrap();
    let mut live = StreamReceiver::join(&url, "s", "g", "live").await.unwrap();
    StreamSender::connect(&url, "s")
        .await
        .unwrap()
        .send(&[1_u64, 2, 3])
        .await
        .unwrap();
    assert_eq!(receive_n(&mut dying, 3).await.len(), 3);
    drop(dying);
    assert!(
        live.receive::<u64>(10, WAIT).await.unwrap().is_empty(),
        "all taken"
    );
    // Idle times far apart from the test's own: a loaded machine cannot blur them.
    assert!(
        live.claim::<u64>(Duration::from_secs(60), 10)
            .await
            .unwrap()
            .is_empty(),
        "not idle a minute yet"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    let claimed = live
        .claim::<u64>(Duration::from_millis(50), 10)
        .await
        .unwrap();
    assert_eq!(events(&claimed), [1, 2, 3]);
    let ids: Vec<String> = claimed.into_iter().map(|d| d.id).collect();
    live.ack(&ids).await.unwrap();
    assert!(
        live.claim::<u64>(Duration::ZERO, 10)
            .await
            .unwrap()
            .is_empty(),
        "acknowledged: pending nowhere"
    );
}

#[tokio::test]
async fn an_entry_not_an_event_of_this_version_is_delivered_as_its_error() {
    let redis = Redis::start();
    let url = redis.url();
    let mut receiver = StreamReceiver::join(&url, "s", "g", "c").await.unwrap();
    let mut raw = redis::Client::open(url.as_str())
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let _: String = redis::cmd("XADD")
        .arg("s")
        .arg("*")
        .arg(FIELD)
        .arg(&[9_u8, 1, 2][..])
        .query_async(&mut raw)
        .await
        .unwrap();
    let got = receiver.receive::<u64>(1, WAIT).await.unwrap();
    assert_eq!(got.len(), 1);
    assert_eq!(got[0].event, Err(WireError::Version(9)));
}

#[tokio::test]
async fn joining_again_keeps_the_group_and_a_redis_that_is_not_there_is_an_error() {
    let redis = Redis::start();
    let url = redis.url();
    StreamReceiver::join(&url, "s", "g", "a").await.unwrap();
    StreamReceiver::join(&url, "s", "g", "a").await.unwrap();
    let port = redis.port();
    drop(redis);
    let refused = StreamSender::connect(&format!("redis://127.0.0.1:{port}"), "s").await;
    assert!(matches!(refused, Err(StreamError::Redis(_))));
}
