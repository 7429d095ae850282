//! `/metrics` for the hub (issue 36): subscribers, the posts waiting for them, the
//! posts dropped from a subscriber that fell behind, and resumes past the history.
//! Other tests' hubs share these process-wide totals: each check is of a rise at least
//! as large as this test's own doing.

use std::net::SocketAddr;

use proscenium::hub::{FeedsSpec, Hub};
use proscenium::{App, inline};

use crate::admin::{scrape, start, sum};

fn read(admin: SocketAddr) -> impl Fn(&str) -> f64 {
    let metrics = scrape(admin);
    move |family| sum(&metrics, family, &[])
}

#[test]
fn issue36_metrics_show_the_hubs_subscribers_lag_and_lost_posts() {
    let (_server, admin) = start(App::new().get("/hello", inline(|| "hello")));
    let hub = Hub::with(FeedsSpec {
        queue: 4,
        history: 2,
        ..FeedsSpec::default()
    });
    let before = read(admin);
    let (subscribers, lag) = ("proscenium_hub_subscribers", "proscenium_hub_lag");
    let dropped = "proscenium_hub_dropped_total";
    let past = "proscenium_hub_resumed_past_history_total";

    let mut slow = hub.subscribe("/m-hub/*");
    for n in 0..10 {
        hub.publish(&format!("/m-hub/{n}"), "post").unwrap();
    }
    // Never read: four wait, six dropped.
    let after = read(admin);
    assert!(after(subscribers) - before(subscribers) >= 1.0);
    assert!(after(lag) - before(lag) >= 4.0);
    assert!(after(dropped) - before(dropped) >= 6.0);
    assert!(slow.try_recv().is_some());

    // A resume after a post the history does not hold (long gone, or never seen).
    let _late = hub.subscribe_after("/m-hub/*", Some("no-such-post"));
    assert!(read(admin)(past) - before(past) >= 1.0);
    assert!(
        scrape(admin).iter().all(|((name, labels), _)| {
            !name.starts_with("proscenium_hub_") || labels.is_empty()
        })
    );
}
