//! Issue 37's extractors and responses over the wire: forms, `Option` and `Result`
//! extractors, repeated query keys, redirects, typed headers, cookie jars, and
//! rejections rendered as JSON or text by `Accept`.

use proscenium::extract::cookie::{
    Cookie, CookieJar, Key, PrivateCookieJar, SameSite, SignedCookieJar,
};
use proscenium::extract::{Form, JsonRejection, Query, TypedHeader};
use proscenium::headers::authorization::Bearer;
use proscenium::headers::{Authorization, CacheControl, UserAgent};
use proscenium::response::Redirect;
use proscenium::{App, Config, IntoResponse, Json, Server, inline};
use serde::Deserialize;

use crate::support::{self, Client};

#[derive(Deserialize)]
struct Pet {
    name: String,
    #[serde(default)]
    tag: Vec<String>,
}

fn describe(pet: &Pet) -> String {
    format!("{} [{}]", pet.name, pet.tag.join(","))
}

/// Sends `raw` with `Connection: close` added and returns every byte of the answer.
fn wire(addr: std::net::SocketAddr, raw: &str) -> String {
    let raw = raw.replacen("\r\n", "\r\nConnection: close\r\n", 1);
    let bytes = Client::connect(addr).send(raw).read_to_close();
    String::from_utf8_lossy(&bytes).into_owned()
}

fn post(path: &str, headers: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

fn form_app() -> App {
    let pet = |Form(pet): Form<Pet>| async move { describe(&pet) };
    App::new().post("/pets", pet).get("/pets", pet)
}

#[test]
fn form_reads_a_posts_body_and_a_gets_query_with_repeated_keys() {
    let server = support::start(form_app());
    let addr = server.local_addr();
    let form = "Content-Type: application/x-www-form-urlencoded\r\n";
    let res = support::exchange(addr, post("/pets", form, "name=rex%20II&tag=a&tag=b"));
    assert_eq!((res.status, res.text().as_str()), (200, "rex II [a,b]"));
    let res = support::get(addr, "/pets?name=tom&tag=c");
    assert_eq!((res.status, res.text().as_str()), (200, "tom [c]"));
}

#[test]
fn form_of_another_type_is_415_and_one_that_does_not_deserialize_422() {
    let server = support::start(form_app());
    let addr = server.local_addr();
    let res = support::exchange(
        addr,
        post("/pets", "Content-Type: text/plain\r\n", "name=rex"),
    );
    assert_eq!(res.status, 415);
    assert!(
        res.text()
            .contains("expected Content-Type: application/x-www-form-urlencoded"),
        "{}",
        res.text()
    );
    let form = "Content-Type: application/x-www-form-urlencoded\r\n";
    let res = support::exchange(addr, post("/pets", form, "tag=a"));
    assert_eq!(res.status, 422, "{}", res.text());
    assert!(res.text().contains("name"), "{}", res.text());
}

#[derive(Deserialize)]
struct Page {
    n: u32,
}

fn optional_app() -> App {
    App::new()
        .get(
            "/list",
            inline(|page: Option<Query<Page>>| format!("page {}", page.map_or(1, |Query(p)| p.n))),
        )
        .post(
            "/echo",
            |body: Result<Json<serde_json::Value>, JsonRejection>| async move {
                match body {
                    Ok(Json(value)) => Json(value).into_response(),
                    Err(rejection) => format!("refused {}", rejection.status().as_u16())
                        .into_response(),
                }
            },
        )
        .post(
            "/maybe",
            inline(|body: Option<Json<serde_json::Value>>| body.is_some().to_string()),
        )
        .get("/reject", |body: Result<Json<Pet>, JsonRejection>| async move {
            body.map(|Json(pet)| describe(&pet))
        })
}

#[test]
fn option_and_result_extractors_hand_the_failure_to_the_handler() {
    let server = support::start(optional_app());
    let addr = server.local_addr();
    assert_eq!(support::get(addr, "/list?n=3").text(), "page 3");
    assert_eq!(support::get(addr, "/list?n=x").text(), "page 1");
    let json = "Content-Type: application/json\r\n";
    assert_eq!(
        support::exchange(addr, post("/echo", json, "[1]")).text(),
        "[1]"
    );
    let res = support::exchange(addr, post("/echo", "", "[1]"));
    assert_eq!((res.status, res.text().as_str()), (200, "refused 415"));
    assert_eq!(
        support::exchange(addr, post("/maybe", json, "{")).text(),
        "false"
    );
    assert_eq!(
        support::exchange(addr, post("/maybe", json, "{}")).text(),
        "true"
    );
}

#[test]
fn query_fills_a_vec_from_a_repeated_key_and_plain_structs_still_work() {
    let app = App::new()
        .get("/pets", inline(|Query(pet): Query<Pet>| describe(&pet)))
        .get(
            "/page",
            inline(|Query(page): Query<Page>| page.n.to_string()),
        );
    let server = support::start(app);
    let addr = server.local_addr();
    let res = support::get(addr, "/pets?tag=a&name=rex&tag=b%2Bc");
    assert_eq!((res.status, res.text().as_str()), (200, "rex [a,b+c]"));
    assert_eq!(support::get(addr, "/pets?name=tom").text(), "tom []");
    assert_eq!(support::get(addr, "/page?n=7").text(), "7");
    assert_eq!(support::get(addr, "/page?n=seven").status, 400);
}

#[test]
fn redirects_send_axums_statuses_and_the_location_as_given() {
    let app = App::new()
        .get("/to", inline(|| Redirect::to("/login?next=%2Fhome")))
        .get("/temporary", inline(|| Redirect::temporary("/elsewhere")))
        .get(
            "/permanent",
            inline(|| Redirect::permanent("https://example.org/new")),
        );
    let server = support::start(app);
    let addr = server.local_addr();
    let cases = [
        (
            "/to",
            "HTTP/1.1 303 See Other\r\n",
            "\r\nlocation: /login?next=%2Fhome\r\n",
        ),
        (
            "/temporary",
            "HTTP/1.1 307 Temporary Redirect\r\n",
            "\r\nlocation: /elsewhere\r\n",
        ),
        (
            "/permanent",
            "HTTP/1.1 308 Permanent Redirect\r\n",
            "\r\nlocation: https://example.org/new\r\n",
        ),
    ];
    for (path, status_line, location) in cases {
        let raw = wire(addr, &format!("GET {path} HTTP/1.1\r\nHost: t\r\n\r\n"));
        assert!(raw.starts_with(status_line), "{raw}");
        assert!(raw.contains(location), "{raw}");
    }
}

fn typed_header_app() -> App {
    App::new()
        .get(
            "/agent",
            inline(|TypedHeader(agent): TypedHeader<UserAgent>| agent.to_string()),
        )
        .get(
            "/me",
            inline(|auth: Option<TypedHeader<Authorization<Bearer>>>| {
                auth.map_or("anonymous".to_owned(), |TypedHeader(a)| {
                    a.token().to_owned()
                })
            }),
        )
        .get(
            "/cached",
            inline(|| (TypedHeader(CacheControl::new().with_no_store()), "fresh")),
        )
}

#[test]
fn typed_headers_are_read_and_a_missing_one_is_400_naming_it() {
    let server = support::start(typed_header_app());
    let addr = server.local_addr();
    let res = support::exchange(
        addr,
        "GET /agent HTTP/1.1\r\nHost: t\r\nUser-Agent: probe/1.0\r\n\r\n",
    );
    assert_eq!((res.status, res.text().as_str()), (200, "probe/1.0"));
    let res = support::get(addr, "/agent");
    assert_eq!(res.status, 400);
    assert!(
        res.text().contains("missing header `user-agent`"),
        "{}",
        res.text()
    );
    let res = support::exchange(
        addr,
        "GET /me HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer s3cr3t\r\n\r\n",
    );
    assert_eq!(res.text(), "s3cr3t");
    assert_eq!(support::get(addr, "/me").text(), "anonymous");
}

#[test]
fn a_typed_header_is_a_response_part() {
    let server = support::start(typed_header_app());
    let res = support::get(server.local_addr(), "/cached");
    assert_eq!(
        (res.header("cache-control"), res.text().as_str()),
        (Some("no-store"), "fresh")
    );
}

fn cookie_app() -> App {
    App::new()
        .state(Key::from(&[7u8; 64]))
        .get(
            "/visit",
            inline(|jar: CookieJar| {
                let visits: u32 = jar
                    .get("visits")
                    .and_then(|c| c.value().parse().ok())
                    .unwrap_or(0);
                let cookie = Cookie::build(("visits", (visits + 1).to_string()))
                    .path("/")
                    .http_only(true)
                    .same_site(SameSite::Lax);
                (jar.add(cookie), format!("visit {}", visits + 1))
            }),
        )
        .get(
            "/greeting",
            inline(|jar: CookieJar| {
                let name = jar.get("name").map_or("", |c| c.value()).to_owned();
                (jar.add(Cookie::new("seen", "yes; twice")), name)
            }),
        )
        .post(
            "/logout",
            inline(|jar: CookieJar| (jar.remove(Cookie::build("visits").path("/")), "bye")),
        )
        .post(
            "/signed",
            inline(|jar: SignedCookieJar| jar.add(Cookie::new("user", "ann"))),
        )
        .get(
            "/signed",
            inline(|jar: SignedCookieJar| {
                jar.get("user")
                    .map_or("anonymous".into(), |c| c.value().to_owned())
            }),
        )
        .post(
            "/private",
            inline(|jar: PrivateCookieJar| jar.add(Cookie::new("user", "bea"))),
        )
        .get(
            "/private",
            inline(|jar: PrivateCookieJar| {
                jar.get("user")
                    .map_or("anonymous".into(), |c| c.value().to_owned())
            }),
        )
}

/// The `Set-Cookie` lines of a raw answer, as sent.
fn set_cookies(raw: &str) -> Vec<&str> {
    raw.lines()
        .filter_map(|l| {
            let (name, value) = l.split_once(": ")?;
            name.eq_ignore_ascii_case("set-cookie").then_some(value)
        })
        .collect()
}

fn get_with_cookie(addr: std::net::SocketAddr, path: &str, cookie: &str) -> String {
    wire(
        addr,
        &format!("GET {path} HTTP/1.1\r\nHost: t\r\nCookie: {cookie}\r\n\r\n"),
    )
}

#[test]
fn cookie_jar_reads_cookies_and_sets_changes_with_their_attributes() {
    let server = support::start(cookie_app());
    let addr = server.local_addr();
    let raw = get_with_cookie(addr, "/visit", "theme=dark; visits=4");
    assert!(raw.ends_with("visit 5"), "{raw}");
    assert_eq!(
        set_cookies(&raw),
        ["visits=5; HttpOnly; SameSite=Lax; Path=/"]
    );
    let raw = get_with_cookie(addr, "/greeting", "name=Ann%20Lee");
    assert!(raw.ends_with("Ann Lee"), "{raw}");
    assert_eq!(set_cookies(&raw), ["seen=yes%3B%20twice"]);
}

#[test]
fn cookie_jar_removal_sends_an_expired_cookie() {
    let server = support::start(cookie_app());
    let raw = wire(
        server.local_addr(),
        &post("/logout", "Cookie: visits=5\r\n", ""),
    );
    let sent = set_cookies(&raw);
    assert_eq!(sent.len(), 1, "{raw}");
    assert!(
        sent[0].starts_with("visits=; Path=/; Max-Age=0; Expires="),
        "{raw}"
    );
}

#[test]
fn signed_and_private_cookies_round_trip_and_tampered_ones_are_absent() {
    let server = support::start(cookie_app());
    let addr = server.local_addr();
    for (path, user) in [("/signed", "ann"), ("/private", "bea")] {
        let raw = wire(addr, &post(path, "", ""));
        let sent = set_cookies(&raw);
        assert_eq!(sent.len(), 1, "{raw}");
        let cookie = sent[0].split(';').next().unwrap();
        assert!(
            !cookie.ends_with(&format!("={user}")),
            "sent in the clear: {cookie}"
        );
        assert!(
            get_with_cookie(addr, path, cookie).ends_with(user),
            "{cookie}"
        );
        let (name, value) = cookie.split_once('=').unwrap();
        // Its first character changed (one in 64 values began with `A` already: the
        // gate's run of 2026-11-29 sent one back untouched).
        let other = if value.starts_with('A') { 'B' } else { 'A' };
        let tampered = format!("{name}={other}{}", &value[1..]);
        let raw = get_with_cookie(addr, path, &tampered);
        assert!(raw.starts_with("HTTP/1.1 200 "), "{raw}");
        assert!(raw.ends_with("anonymous"), "{raw}");
    }
    let forged = get_with_cookie(addr, "/signed", "user=ann");
    assert!(forged.ends_with("anonymous"), "{forged}");
}

#[test]
fn a_keyed_cookie_jar_without_a_registered_key_refuses_to_start() {
    let app = App::new().get(
        "/signed",
        inline(|jar: SignedCookieJar| jar.get("user").is_some().to_string()),
    );
    let config = Config {
        bind: "127.0.0.1:0".parse().unwrap(),
        ..Config::default()
    };
    let Err(refused) = Server::new(app).config(config).start() else {
        panic!("a server whose handler takes a keyed jar started without a key");
    };
    assert!(refused.to_string().contains("/signed"), "{refused}");
}

#[test]
fn rejections_render_as_json_when_accept_prefers_it_else_as_text() {
    let server = support::start(optional_app());
    let addr = server.local_addr();
    let body_of = |accept: &str| {
        let raw = format!(
            "GET /reject HTTP/1.1\r\nHost: t\r\n{accept}Content-Type: application/json\r\nContent-Length: 2\r\n\r\n{{}}"
        );
        support::exchange(addr, raw)
    };
    let res = body_of("Accept: application/json\r\n");
    assert_eq!(res.status, 422);
    assert_eq!(res.header("content-type"), Some("application/json"));
    let json: serde_json::Value = serde_json::from_slice(&res.body).unwrap();
    assert_eq!(json["status"], 422);
    assert!(
        json["error"]
            .as_str()
            .unwrap()
            .contains("missing field `name`"),
        "{json}"
    );
    let res = body_of("Accept: text/plain, application/json;q=0.5\r\n");
    assert_eq!(
        res.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    assert!(
        res.text()
            .starts_with("422 Unprocessable Entity: invalid JSON body"),
        "{}",
        res.text()
    );
    let res = body_of("");
    assert_eq!(
        res.header("content-type"),
        Some("text/plain; charset=utf-8")
    );
    let headers = support::start(typed_header_app());
    let raw = "GET /agent HTTP/1.1\r\nHost: t\r\nAccept: application/json\r\n\r\n";
    let res = support::exchange(headers.local_addr(), raw);
    assert_eq!(res.status, 400);
    assert_eq!(
        res.text(),
        r#"{"error":"missing header `user-agent`","status":400}"#
    );
}
