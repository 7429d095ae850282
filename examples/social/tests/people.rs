//! Issue 39: the social network as its users know it — a timeline of the pictures of
//! the people one follows, newest first; a user's page, following and leaving; the
//! Redis cache of hot reads the thesis describes (§4.1.3), shared by two replicas;
//! and the Notifier's access token renewed on a schedule (the thesis's
//! `renewAccessToken`).

// Its feed helpers are the feed tests'.
#[allow(dead_code)]
mod client;
mod common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use proscenium::client::Client;
use proscenium::stream::redis;
use proscenium::testing::Redis;
use proscenium::{App, Server};
use serde_json::{Value, json};

use crate::client::{call, member, two_pictures, upload};
use crate::common::{Social, image};

/// The titles of a list of pictures, in order.
fn titles(pictures: &Value) -> Vec<String> {
    let list = pictures
        .as_array()
        .unwrap_or_else(|| panic!("a list: {pictures}"));
    list.iter()
        .map(|p| {
            format!(
                "{}/{}",
                p["owner"].as_str().unwrap(),
                p["title"].as_str().unwrap()
            )
        })
        .collect()
}

/// Uploads `names` as `token`'s, one upload after another: their ids, and so their
/// order newest first, are known (one upload's pictures are stored at once, in any
/// order).
fn upload_in_turn(client: &Client, social: &Social, token: &str, names: &[&str]) {
    for name in names {
        let png = image(2, 2, image::ImageFormat::Png);
        assert_eq!(upload(client, social, token, &[(name, png)]).0, 201);
    }
}

/// Waits up to 30 s (a machine busy with the whole suite) for `check`.
fn eventually(what: &str, mut check: impl FnMut() -> bool) {
    let began = Instant::now();
    while !check() {
        assert!(
            began.elapsed() < Duration::from_secs(30),
            "{what} within 30 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn issue39_a_timeline_shows_those_one_follows_newest_first_and_a_page_each_user() {
    let data = tempfile::tempdir().unwrap();
    let social = Social::start(data.path(), None, &[]);
    let client = Client::new();
    let (ana, bob, cy) = (
        member(&client, &social, "ana"),
        member(&client, &social, "bob"),
        member(&client, &social, "cy"),
    );
    upload_in_turn(&client, &social, &ana, &["one.png", "two.png"]);
    upload_in_turn(&client, &social, &cy, &["cy.png"]);
    upload_in_turn(&client, &social, &bob, &["bob.png"]);
    let get =
        |path: &str, token: Option<&str>| call(&client, "GET", &social.url(path), token, None);
    let send = |method: &str, path: &str, token: &str| {
        call(&client, method, &social.url(path), Some(token), None).0
    };

    assert_eq!(titles(&get("/timeline", Some(&bob)).1), ["bob/bob.png"]);
    assert_eq!(send("POST", "/users/ana/followers", &bob), 204);
    assert_eq!(
        titles(&get("/timeline", Some(&bob)).1),
        ["bob/bob.png", "ana/two.png", "ana/one.png"],
        "ana's and his own, newest first; not cy's"
    );
    let page = get("/users/ana", Some(&bob)).1;
    assert_eq!(
        page,
        json!({"name": "ana", "pictures": 2, "followers": 1, "following": 0, "followed": true})
    );
    assert_eq!(
        get("/users/ana", None).1["followed"],
        false,
        "asked by no one"
    );
    assert_eq!(get("/users/bob", None).1["following"], 1);
    assert_eq!(get("/users/nobody", None).0, 404);

    assert_eq!(send("DELETE", "/users/ana/followers", &bob), 204);
    assert_eq!(
        send("DELETE", "/users/ana/followers", &bob),
        204,
        "again: nothing"
    );
    assert_eq!(titles(&get("/timeline", Some(&bob)).1), ["bob/bob.png"]);
    assert_eq!(get("/users/ana", Some(&bob)).1["followers"], 0);

    // Signed in across reloads: the page asks who its token is.
    assert_eq!(
        get("/me", Some(&bob)).1,
        json!({"name": "bob", "email": "bob@example.org"})
    );
    assert_eq!(get("/me", Some("not-a-token")).0, 401);
    assert_eq!(get("/timeline", None).0, 401);
}

/// Two replicas over one database and one Redis: the lists every timeline reads are
/// kept in Redis — what is kept there is what both answer — and a write on either
/// drops what it changed, so the other never reads it stale.
#[test]
fn issue39_hot_reads_come_from_the_shared_redis_cache_and_writes_drop_them() {
    let redis = Redis::start();
    let data = tempfile::tempdir().unwrap();
    let env = [("PROSCENIUM_FEEDS_REDIS", redis.url())];
    let (a, b) = (
        Social::start(data.path(), None, &env),
        Social::start(data.path(), None, &env),
    );
    let client = Client::new();
    let (ana, bob) = (member(&client, &a, "ana"), member(&client, &b, "bob"));
    upload_in_turn(&client, &a, &ana, &["one.png", "two.png"]);
    let list = |on: &Social| call(&client, "GET", &on.url("/users/ana/pictures"), None, None).1;
    assert_eq!(titles(&list(&b)), ["ana/two.png", "ana/one.png"]);

    let mut kept = redis::Client::open(redis.url())
        .unwrap()
        .get_connection()
        .unwrap();
    let keys: Vec<String> = redis::cmd("KEYS")
        .arg("social:pictures:*")
        .query(&mut kept)
        .unwrap();
    assert_eq!(keys.len(), 1, "{keys:?}");
    // Doctored in Redis, the list both replicas answer is the one kept there.
    let doctored =
        json!([{"id": 99, "owner": "ana", "title": "kept.png", "likes": 7, "thumbnail": false}]);
    let _: () = redis::cmd("SET")
        .arg(&keys[0])
        .arg(doctored.to_string())
        .query(&mut kept)
        .unwrap();
    assert_eq!(titles(&list(&a)), ["ana/kept.png"]);
    assert_eq!(titles(&list(&b)), ["ana/kept.png"]);

    // Read again from the database once dropped; a like on B drops it: A reads the
    // list anew, with the like.
    let _: () = redis::cmd("DEL").arg(&keys[0]).query(&mut kept).unwrap();
    let newest = list(&a)[0]["id"].as_i64().unwrap();
    let exists = |kept: &mut redis::Connection| -> bool {
        redis::cmd("EXISTS").arg(&keys[0]).query(kept).unwrap()
    };
    assert!(exists(&mut kept), "kept again");
    let like = b.url(&format!("/picture/{newest}/likes"));
    assert_eq!(call(&client, "POST", &like, Some(&bob), None).0, 201);
    assert!(!exists(&mut kept), "the like dropped ana's list");
    assert_eq!(list(&a)[0]["likes"], 1);

    // Following on A drops whom bob follows: his timeline on B has ana's pictures.
    assert_eq!(
        call(&client, "GET", &b.url("/timeline"), Some(&bob), None).1,
        json!([])
    );
    let follow = call(
        &client,
        "POST",
        &a.url("/users/ana/followers"),
        Some(&bob),
        None,
    );
    assert_eq!(follow.0, 204);
    let timeline = call(&client, "GET", &b.url("/timeline"), Some(&bob), None).1;
    assert_eq!(titles(&timeline), ["ana/two.png", "ana/one.png"]);
    assert_eq!(timeline[0]["likes"], 1);

    // A thumbnail made drops the list too: it comes to say so.
    eventually("the thumbnails shown", || {
        list(&b)
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["thumbnail"] == true)
    });
}

/// The thesis renews the access token of the services it calls on a schedule
/// (`Akka.system.schedule(Duration.Zero, 30.minutes)(renewAccessToken())`): the
/// Notifier takes one at start, renews it at half its lifetime, and sends each
/// notification with the token it holds.
#[test]
fn issue39_the_notifier_renews_its_push_token_on_schedule_and_sends_it() {
    let issued = Arc::new(Mutex::new(0_u32));
    let pushed = Arc::new(Mutex::new(Vec::<String>::new()));
    let (issuing, pushing) = (Arc::clone(&issued), Arc::clone(&pushed));
    let push_service = App::new()
        .post("/token", move || {
            let issuing = Arc::clone(&issuing);
            async move {
                let mut n = issuing.lock().unwrap();
                *n += 1;
                proscenium::Json(json!({"token": format!("t{n}"), "expires_in": 2}))
            }
        })
        .post("/push", move |req: proscenium::Request| {
            let pushing = Arc::clone(&pushing);
            async move {
                let token = req
                    .headers()
                    .get("authorization")
                    .map(|v| v.to_str().unwrap().to_owned());
                pushing.lock().unwrap().push(token.unwrap_or_default());
                "ok"
            }
        });
    let server = Server::new(push_service)
        .bind("127.0.0.1:0".parse().unwrap())
        .start()
        .unwrap();
    let base = format!("http://{}", server.local_addr());
    let data = tempfile::tempdir().unwrap();
    let token = format!("{base}/token");
    let push = format!("{base}/push");
    let args = [
        "--reminder-after",
        "1",
        "--push-token",
        &token,
        "--token-every",
        "1800",
    ];
    let social = Social::with_args(data.path(), Some(&push), &[], &args);
    // A token at once, and another every second (half of its two).
    eventually("three tokens issued", || *issued.lock().unwrap() >= 3);

    let client = Client::new();
    let (ana, bob) = (
        member(&client, &social, "ana"),
        member(&client, &social, "bob"),
    );
    let pictures = two_pictures(&client, &social, &ana);
    let like = social.url(&format!("/picture/{}/likes", pictures[0]["id"]));
    assert_eq!(call(&client, "POST", &like, Some(&bob), None).0, 201);
    eventually("ana notified", || !pushed.lock().unwrap().is_empty());
    let sent = pushed.lock().unwrap()[0].clone();
    let number: u32 = sent
        .strip_prefix("Bearer t")
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("sent {sent:?}"));
    assert!(
        number >= 3,
        "a renewed token: {sent}\n{}",
        social.log.lock().unwrap()
    );
}
