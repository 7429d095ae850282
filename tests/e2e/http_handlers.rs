//! Handlers over real sockets: an async extractor that awaits and rejects, sixteen
//! arguments, `State<T>` without a lock, and apps nested and merged.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use proscenium::state::{Counter, Read, Write};
use proscenium::{
    App, FromRequestParts, HeaderMap, Method, Next, Path, Query, Request, Server, State,
    StatusCode, inline,
};

use crate::support::{self, Client};

/// A session looked up somewhere slow: on the blocking pool, then after a timer.
struct User(String);

impl FromRequestParts for User {
    type Rejection = (StatusCode, &'static str);

    async fn from_request_parts(req: &Request) -> Result<Self, Self::Rejection> {
        let token = req
            .headers()
            .get("x-token")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let lookup = proscenium::rt::spawn_blocking(move || match token.as_deref() {
            Some("ada-token") => Some("ada".to_owned()),
            _ => None,
        })
        .map_err(|_| (StatusCode::SERVICE_UNAVAILABLE, "busy"))?;
        let found = lookup
            .await
            .map_err(|_| (StatusCode::INTERNAL_SERVER_ERROR, "lookup failed"))?;
        tokio::time::sleep(Duration::from_millis(2)).await;
        found
            .map(User)
            .ok_or((StatusCode::UNAUTHORIZED, "who are you?"))
    }
}

fn request(path: &str, headers: &str, body: &str) -> String {
    format!(
        "POST {path} HTTP/1.1\r\nHost: t\r\n{headers}Content-Length: {}\r\n\r\n{body}",
        body.len()
    )
}

#[derive(serde::Deserialize)]
struct Greeting {
    greeting: String,
}

#[test]
fn an_async_extractor_awaits_then_answers_or_rejects_with_401() {
    let app = App::new()
        .post(
            "/notes/:id",
            |User(name): User, Path(id): Path<u32>, Query(q): Query<Greeting>, body: String| async move {
                format!("{} {name}: note {id} = {body}", q.greeting)
            },
        )
        .get("/me", |User(name): User| async move { name });
    let server = support::start(app);
    let mut client = Client::connect(server.local_addr());

    let res = client
        .send(request(
            "/notes/7?greeting=hi",
            "X-Token: ada-token\r\n",
            "milk",
        ))
        .response();
    assert_eq!(
        (res.status, res.text()),
        (200, "hi ada: note 7 = milk".into())
    );
    let res = client
        .send(request("/notes/7?greeting=hi", "X-Token: eve\r\n", "milk"))
        .response();
    assert_eq!((res.status, res.text()), (401, "who are you?".into()));
    // The same connection goes on serving after a rejection.
    let res = client
        .send("GET /me HTTP/1.1\r\nHost: t\r\nX-Token: ada-token\r\n\r\n")
        .response();
    assert_eq!((res.status, res.text()), (200, "ada".into()));
    assert_eq!(support::get(server.local_addr(), "/me").status, 401);
}

#[test]
fn handlers_take_sixteen_arguments_inline_and_async() {
    let app = App::new().post("/inline/:a/:b", inline(sixteen_sync)).post(
        "/async/:a/:b",
        |m: Method,
         p: Path<(u8, u8)>,
         h1: HeaderMap,
         h2: HeaderMap,
         h3: HeaderMap,
         h4: HeaderMap,
         h5: HeaderMap,
         h6: HeaderMap,
         h7: HeaderMap,
         h8: HeaderMap,
         h9: HeaderMap,
         h10: HeaderMap,
         h11: HeaderMap,
         h12: HeaderMap,
         user: User,
         body: String| async move {
            let answer = sixteen_sync(
                m,
                p,
                h1,
                h2,
                h3,
                h4,
                h5,
                h6,
                h7,
                h8,
                h9,
                h10,
                h11,
                h12,
                Method::GET,
                body,
            );
            format!("{answer} {}", user.0)
        },
    );
    let server = support::start(app);
    let mut client = Client::connect(server.local_addr());
    let res = client.send(request("/inline/1/2", "", "x")).response();
    assert_eq!(res.text(), "POST 1 2 12 x");
    let res = client
        .send(request("/async/3/4", "X-Token: ada-token\r\n", "y"))
        .response();
    assert_eq!(res.text(), "POST 3 4 12 y ada");
}

/// Sixteen arguments, the last reading the body: the answer names them in order.
// A handler takes its extractors by value, however many it has.
#[allow(clippy::too_many_arguments, clippy::needless_pass_by_value)]
fn sixteen_sync(
    m: Method,
    Path((a, b)): Path<(u8, u8)>,
    h1: HeaderMap,
    h2: HeaderMap,
    h3: HeaderMap,
    h4: HeaderMap,
    h5: HeaderMap,
    h6: HeaderMap,
    h7: HeaderMap,
    h8: HeaderMap,
    h9: HeaderMap,
    h10: HeaderMap,
    h11: HeaderMap,
    h12: HeaderMap,
    _again: Method,
    body: String,
) -> String {
    let headers = [h1, h2, h3, h4, h5, h6, h7, h8, h9, h10, h11, h12].len();
    format!("{m} {a} {b} {headers} {body}")
}

/// A pool-like handle: shared already, so it needs no lock.
#[derive(Clone, Default)]
struct Hits(Arc<AtomicUsize>);

#[test]
fn state_is_cloned_without_a_lock_and_routes_say_which_routes_lock() {
    let app = App::new()
        .with_state(Hits::default())
        .state(Counter::default())
        .post(
            "/hit",
            inline(|State(hits): State<Hits>| {
                (hits.0.fetch_add(1, Ordering::SeqCst) + 1).to_string()
            }),
        )
        .post(
            "/both",
            |State(hits): State<Hits>, mut c: Write<Counter>| async move {
                c.increment();
                format!("{} {}", hits.0.load(Ordering::SeqCst), c.get())
            },
        );
    let lines: Vec<String> = app.routes().map(ToString::to_string).collect();
    assert!(
        lines[0].contains("stateless") && lines[0].contains("Hits (state)"),
        "{}",
        lines[0]
    );
    assert!(
        lines[1].contains("writing") && lines[1].contains("Hits (state), Counter (write)"),
        "{}",
        lines[1]
    );
    let server = support::start(app);
    let mut client = Client::connect(server.local_addr());
    for want in ["1", "2"] {
        assert_eq!(client.send(request("/hit", "", "")).response().text(), want);
    }
    assert_eq!(
        client.send(request("/both", "", "")).response().text(),
        "2 1"
    );
}

#[test]
fn a_route_taking_unregistered_state_names_it_at_start() {
    let app = App::new().state(Counter::default()).get(
        "/x",
        inline(|State(h): State<Hits>| h.0.load(Ordering::SeqCst).to_string()),
    );
    let err = Server::new(app)
        .bind("127.0.0.1:0".parse().unwrap())
        .start()
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("GET /x") && err.contains("Hits") && err.contains("with_state"),
        "{err}"
    );
}

/// An app with a root route, a parameter route, a fallback, middleware marking its
/// answers, and state of its own.
fn api() -> App {
    App::new()
        .state(Counter::default())
        .get("/", inline(|| "api root"))
        .get(
            "/users/:id",
            inline(|Path(id): Path<u32>, hits: Read<Counter>| format!("user {id} {}", hits.get())),
        )
        .post(
            "/count",
            |mut c: Write<Counter>, State(h): State<Hits>| async move {
                h.0.fetch_add(1, Ordering::SeqCst);
                c.increment().to_string()
            },
        )
        .fallback(inline(|| (StatusCode::IM_A_TEAPOT, "api fallback")))
        .layer(|req: Request, next: Next<'_>| {
            next.run(req).map(|mut res| {
                res.headers_mut().insert("x-api", "1".parse().unwrap());
                res
            })
        })
}

#[test]
fn a_nested_app_answers_under_its_prefix_with_its_fallback_and_middleware() {
    support::in_process("what its middleware counts");
    let app = App::new()
        .with_state(Hits::default())
        .get("/", inline(|| "home"))
        .nest("/api", api())
        .fallback(inline(|| (StatusCode::NOT_FOUND, "outer fallback")));
    let server = support::start(app);
    let addr = server.local_addr();
    let cases = [
        ("/", 200, "home", None),
        ("/api", 200, "api root", Some("1")),
        ("/api/users/7", 200, "user 7 0", Some("1")),
        ("/api/users", 418, "api fallback", Some("1")),
        ("/api/nothing/here", 418, "api fallback", Some("1")),
        ("/nothing", 404, "outer fallback", None),
        ("/apix", 404, "outer fallback", None),
    ];
    for (path, status, body, marked) in cases {
        let res = support::get(addr, path);
        assert_eq!((res.status, res.text().as_str()), (status, body), "{path}");
        assert_eq!(res.header("x-api"), marked, "{path}");
    }
    // The nested route takes the outer app's State and its own Write, merged.
    let res = support::exchange(addr, request("/api/count", "", ""));
    assert_eq!((res.status, res.text()), (200, "1".into()));
    assert_eq!(support::get(addr, "/api/users/1").text(), "user 1 1");
}

#[test]
fn merged_apps_answer_both_route_sets_and_share_state() {
    support::in_process("state its handlers share with it");
    let users = App::new().with_state(Hits::default()).get(
        "/users",
        inline(|State(h): State<Hits>| h.0.load(Ordering::SeqCst).to_string()),
    );
    let app = App::new()
        .state(Counter::default())
        .post(
            "/hit",
            inline(|State(h): State<Hits>, mut c: Write<Counter>| {
                h.0.fetch_add(1, Ordering::SeqCst);
                c.increment().to_string()
            }),
        )
        .merge(users);
    assert!(app.check_state().is_ok());
    let server = support::start(app);
    let addr = server.local_addr();
    assert_eq!(support::exchange(addr, request("/hit", "", "")).text(), "1");
    assert_eq!(support::get(addr, "/users").text(), "1");
    assert_eq!(support::get(addr, "/other").status, 404);
}

#[test]
#[should_panic(expected = "route `GET /users` registered twice")]
fn merging_a_route_both_apps_have_panics_naming_it() {
    let users = App::new().get("/users", inline(|| "b"));
    let _ = App::new().get("/users", inline(|| "a")).merge(users);
}

#[test]
#[should_panic(expected = "state `Counter` registered twice")]
fn composing_apps_with_one_state_type_twice_panics_naming_it() {
    let _ = App::new().state(Counter::default()).nest("/api", api());
}
