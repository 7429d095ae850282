//! The application API over the wire: routes and extractors, responses, middleware,
//! and a mounted axum router (what Rack is to Ruby servers).

use proscenium::{
    App, Bytes, HeaderMap, Json, Next, Path, Query, Reply, Request, StatusCode, inline,
};
use serde::Deserialize;

use crate::support::{self, Client};

#[derive(Deserialize)]
struct Search {
    q: String,
}

#[derive(Deserialize, serde::Serialize)]
struct NewUser {
    name: String,
}

fn app() -> App {
    App::new()
        .get("/picture/:id/likes", |Path(id): Path<u64>| async move {
            format!("likes of {id}")
        })
        .get(
            "/pair/:a/:b",
            inline(|Path((a, b)): Path<(String, u8)>| format!("{a}+{b}")),
        )
        .get(
            "/search",
            inline(|Query(q): Query<Search>| format!("q={}", q.q)),
        )
        .post("/users", |Json(user): Json<NewUser>| async move {
            (StatusCode::CREATED, Json(user))
        })
        .post(
            "/raw",
            inline(|headers: HeaderMap, body: Bytes| {
                format!("{} {}", headers["x-tag"].to_str().unwrap(), body.len())
            }),
        )
        .put("/text", inline(|body: String| body.to_uppercase()))
        .get(
            "/created",
            inline(|| (StatusCode::CREATED, [("location", "/x")], "made")),
        )
        .get("/whole", inline(|req: Request| req.uri().to_string()))
}

#[test]
fn extractors_read_path_query_json_headers_and_body() {
    let server = support::start(app());
    let addr = server.local_addr();
    assert_eq!(
        support::get(addr, "/picture/1234/likes").text(),
        "likes of 1234"
    );
    assert_eq!(support::get(addr, "/pair/a%20b/7").text(), "a b+7");
    assert_eq!(support::get(addr, "/search?q=rust").text(), "q=rust");
    assert_eq!(support::get(addr, "/whole?x=1").text(), "/whole?x=1");
    let res = support::exchange(
        addr,
        "POST /users HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 14\r\n\r\n{\"name\":\"ann\"}",
    );
    assert_eq!(
        (res.status, res.text().as_str()),
        (201, "{\"name\":\"ann\"}")
    );
    let res = support::exchange(
        addr,
        "POST /raw HTTP/1.1\r\nHost: t\r\nX-Tag: t1\r\nContent-Length: 3\r\n\r\nabc",
    );
    assert_eq!(res.text(), "t1 3");
    let res = support::exchange(
        addr,
        "PUT /text HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\nhi",
    );
    assert_eq!(res.text(), "HI");
    let res = support::get(addr, "/created");
    assert_eq!((res.status, res.header("location")), (201, Some("/x")));
}

#[test]
fn rejections_answer_with_their_statuses() {
    let server = support::start(app());
    let addr = server.local_addr();
    assert_eq!(support::get(addr, "/picture/abc/likes").status, 400);
    assert_eq!(support::get(addr, "/search").status, 400);
    let cases: [(&[u8], u16); 4] = [
        (b"POST /users HTTP/1.1\r\nHost: t\r\nContent-Length: 2\r\n\r\n{}", 415),
        (b"POST /users HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 1\r\n\r\n{", 400),
        (b"POST /users HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}", 422),
        (b"PUT /text HTTP/1.1\r\nHost: t\r\nContent-Length: 1\r\n\r\n\xff", 400),
    ];
    for (raw, status) in cases {
        assert_eq!(
            support::exchange(addr, raw).status,
            status,
            "{}",
            String::from_utf8_lossy(raw)
        );
    }
}

#[test]
fn middleware_wraps_every_request_including_404s() {
    let tagged = app().layer(|req: Request, next: Next<'_>| {
        let method = req.method().clone();
        next.run(req).map(move |mut res| {
            res.headers_mut()
                .insert("x-method", method.as_str().parse().unwrap());
            res
        })
    });
    let server = support::start(tagged);
    let addr = server.local_addr();
    assert_eq!(
        support::get(addr, "/picture/1/likes").header("x-method"),
        Some("GET")
    );
    assert_eq!(
        support::get(addr, "/nowhere").header("x-method"),
        Some("GET")
    );
}

#[test]
fn middleware_can_answer_by_itself() {
    let guarded =
        app().layer(
            |req: Request, next: Next<'_>| match req.headers().get("authorization") {
                Some(_) => next.run(req),
                None => Reply::ready(StatusCode::UNAUTHORIZED),
            },
        );
    let server = support::start(guarded);
    let addr = server.local_addr();
    assert_eq!(support::get(addr, "/whole").status, 401);
    let res = support::exchange(
        addr,
        "GET /whole HTTP/1.1\r\nHost: t\r\nAuthorization: x\r\n\r\n",
    );
    assert_eq!(res.status, 200);
}

#[test]
fn an_axum_router_runs_mounted_under_a_prefix() {
    use axum::routing::get;
    let router = axum::Router::new()
        .route("/", get(|| async { "axum root" }))
        .route(
            "/users/{id}",
            get(
                |axum::extract::Path(id): axum::extract::Path<u32>| async move {
                    format!("axum user {id}")
                },
            ),
        )
        .route(
            "/echo",
            axum::routing::post(|body: String| async move { body }),
        );
    let server = support::start(app().mount("/legacy", router));
    let addr = server.local_addr();
    assert_eq!(support::get(addr, "/legacy/users/9").text(), "axum user 9");
    assert_eq!(support::get(addr, "/legacy").text(), "axum root");
    let res = support::exchange(
        addr,
        "POST /legacy/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
    );
    assert_eq!(res.text(), "hello");
    assert_eq!(support::get(addr, "/legacy/missing").status, 404);
    assert_eq!(
        support::get(addr, "/picture/5/likes").text(),
        "likes of 5",
        "own routes still answer"
    );
}

#[test]
fn keep_alive_connection_serves_app_routes_in_turn() {
    let server = support::start(app());
    let mut client = Client::connect(server.local_addr());
    for id in 0..5 {
        let res = client.get(&format!("/picture/{id}/likes")).response();
        assert_eq!(res.text(), format!("likes of {id}"));
    }
}
