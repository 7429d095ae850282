//! Each feed socket gets its own feed (issue 39; the thesis's Subscriber keeps a set
//! of pictures a socket): a socket that says which pictures are on its screen gets
//! only their likes; one that says nothing gets every like; one that says what is no
//! watch list is closed with 1008.

mod client;
mod common;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;

use proscenium::client::Client;
use serde_json::{Value, json};

use crate::client::{call, feed_message, feed_socket, member, two_pictures};
use crate::common::Social;

/// Says `text` on a feed socket: one masked text frame, as a browser sends it.
fn say(socket: &mut TcpStream, text: &str) {
    let mask = [0x1f, 0x2e, 0x3d, 0x4c];
    let len = u8::try_from(text.len()).expect("a short message");
    assert!(len < 126);
    let mut frame = vec![0x81, 0x80 | len];
    frame.extend(mask);
    frame.extend(text.bytes().zip(mask.iter().cycle()).map(|(b, m)| b ^ m));
    socket.write_all(&frame).unwrap();
}

#[test]
fn issue39_each_socket_gets_the_likes_of_the_pictures_it_watches() {
    let data = tempfile::tempdir().unwrap();
    let social = Social::start(data.path(), None, &[]);
    let client = Client::new();
    let (ana, bob, eve) = (
        member(&client, &social, "ana"),
        member(&client, &social, "bob"),
        member(&client, &social, "eve"),
    );
    let pictures = two_pictures(&client, &social, &ana);
    let (one, two) = (pictures[0]["id"].clone(), pictures[1]["id"].clone());
    let (mut on_one, mut on_two, mut on_all) = (
        feed_socket(&social),
        feed_socket(&social),
        feed_socket(&social),
    );
    say(&mut on_one, &json!({ "watch": [one] }).to_string());
    assert_eq!(feed_message(&mut on_one), json!({ "watching": [one] }));
    say(&mut on_two, &json!({ "watch": [two] }).to_string());
    assert_eq!(feed_message(&mut on_two), json!({ "watching": [two] }));
    let like = |picture: &Value, token: &str| {
        let url = social.url(&format!("/picture/{picture}/likes"));
        assert_eq!(call(&client, "POST", &url, Some(token), None).0, 201);
    };
    like(&one, &bob);
    like(&two, &bob);
    like(&one, &eve);
    // Each watcher's feed holds its picture's likes in order, and nothing of the
    // other's between them; the socket that said nothing has all three.
    let seen = |socket: &mut TcpStream| {
        let news = feed_message(socket);
        (news["picture"].clone(), news["by"].clone())
    };
    assert_eq!(seen(&mut on_one), (one.clone(), json!("bob")));
    assert_eq!(seen(&mut on_one), (one.clone(), json!("eve")));
    assert_eq!(seen(&mut on_two), (two.clone(), json!("bob")));
    assert_eq!(seen(&mut on_all), (one.clone(), json!("bob")));
    assert_eq!(seen(&mut on_all), (two.clone(), json!("bob")));
    assert_eq!(seen(&mut on_all), (one.clone(), json!("eve")));
    // A new list replaces the old: `on_two` now watches `one` alone.
    say(&mut on_two, &json!({ "watch": [one] }).to_string());
    assert_eq!(feed_message(&mut on_two), json!({ "watching": [one] }));
    like(&two, &eve);
    like(&one, &ana);
    assert_eq!(seen(&mut on_two), (one, json!("ana")));
}

#[test]
fn issue39_a_feed_socket_saying_what_is_no_watch_list_is_closed_with_1008() {
    let data = tempfile::tempdir().unwrap();
    let social = Social::start(data.path(), None, &[]);
    for said in [
        "hello",
        r#"{"watch": "all"}"#,
        r#"{"watch": [1], "more": 2}"#,
    ] {
        let mut socket = feed_socket(&social);
        say(&mut socket, said);
        let mut head = [0; 4];
        socket.read_exact(&mut head).unwrap();
        assert_eq!(head[0], 0x88, "a close frame for {said}");
        assert_eq!(u16::from_be_bytes([head[2], head[3]]), 1008, "{said}");
    }
    let too_many: Vec<u32> = (0..1001).collect();
    let mut socket = feed_socket(&social);
    let said = json!({ "watch": too_many }).to_string();
    let mut frame = vec![0x81, 0x80 | 126];
    frame.extend(u16::try_from(said.len()).unwrap().to_be_bytes());
    frame.extend([0; 4]);
    frame.extend(said.bytes());
    socket.write_all(&frame).unwrap();
    let mut head = [0; 2];
    socket.read_exact(&mut head).unwrap();
    assert_eq!(head[0], 0x88, "a close frame for 1001 pictures");
    let log = social.log.lock().unwrap();
    assert!(!log.contains("panicked"), "{log}");
}
