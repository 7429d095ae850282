//! Async middleware (issue 37): `middleware::from_fn` awaiting before and after the
//! rest of the app, answering by itself, changing request and response, taking head
//! extractors — under the model of this run.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use proscenium::middleware::{Next, from_fn};
use proscenium::{App, HeaderMap, IntoResponse, Request, StatusCode, inline};

use crate::support;

/// Echoes the request's `x-user` header, set by the middleware.
fn whoami() -> App {
    App::new().get(
        "/whoami",
        inline(|headers: HeaderMap| {
            let user = headers
                .get("x-user")
                .map(|v| v.to_str().unwrap_or("?").to_owned());
            user.unwrap_or_else(|| "nobody".to_owned())
        }),
    )
}

/// Looks the token up after a timer, as a session store over the network would.
async fn authenticate(req: Request, next: Next<'static>) -> proscenium::Response {
    let token = req.headers().get("authorization").cloned();
    tokio::time::sleep(Duration::from_millis(5)).await;
    let Some(token) = token else {
        return StatusCode::UNAUTHORIZED.into_response();
    };
    let mut req = req;
    req.headers_mut().insert("x-user", token);
    let mut res = next.run(req).await;
    // And an await after the rest of the app answered.
    tokio::task::yield_now().await;
    res.headers_mut()
        .insert("x-authenticated", "yes".parse().unwrap());
    res
}

#[test]
fn issue37_from_fn_awaits_before_and_after_the_rest_of_the_app() {
    let server = support::start(whoami().layer(from_fn(authenticate)));
    let addr = server.local_addr();
    let res = support::exchange(
        addr,
        "GET /whoami HTTP/1.1\r\nHost: t\r\nAuthorization: ada\r\n\r\n",
    );
    assert_eq!(res.status, 200);
    assert_eq!(res.text(), "ada");
    assert_eq!(res.header("x-authenticated"), Some("yes"));
}

#[test]
fn issue37_from_fn_answers_without_calling_the_rest_of_the_app() {
    support::in_process("what its handlers record");
    let called = Arc::new(AtomicUsize::new(0));
    let counted = called.clone();
    let app = App::new()
        .get(
            "/secret",
            inline(move || {
                counted.fetch_add(1, Ordering::Relaxed);
                "secret"
            }),
        )
        .layer(from_fn(authenticate));
    let server = support::start(app);
    let res = support::get(server.local_addr(), "/secret");
    assert_eq!(res.status, 401);
    assert_eq!(called.load(Ordering::Relaxed), 0);
}

#[test]
fn issue37_from_fn_takes_head_extractors_and_mixes_with_sync_middleware() {
    // The extractor's rejection answers before the function runs.
    let app = whoami()
        .layer(from_fn(
            |query: proscenium::Query<std::collections::HashMap<String, u32>>,
             req: Request,
             next: Next<'static>| async move {
                let times = query.0.get("times").copied().unwrap_or(1);
                let res = next.run(req).await;
                (StatusCode::OK, [("x-times", times.to_string())], res)
            },
        ))
        // Outside the async one: its reply arrives later, mapped all the same.
        .layer(|req: Request, next: proscenium::Next<'_>| {
            next.run(req).map(|mut res| {
                res.headers_mut().insert("x-outer", "sync".parse().unwrap());
                res
            })
        });
    let server = support::start(app);
    let addr = server.local_addr();
    let res = support::get(addr, "/whoami?times=3");
    assert_eq!(res.status, 200);
    assert_eq!(res.text(), "nobody");
    assert_eq!(res.header("x-times"), Some("3"));
    assert_eq!(res.header("x-outer"), Some("sync"));
    let res = support::get(addr, "/whoami?times=many");
    assert_eq!(res.status, 400);
    assert_eq!(res.header("x-outer"), Some("sync"));
}

#[test]
fn issue37_a_route_behind_async_middleware_is_counted_under_its_route() {
    // Routing happens in a later poll than the call: the answer is still the route's.
    let app = whoami().layer(from_fn(authenticate));
    let (server, admin) = crate::admin::start(app);
    let addr = server.local_addr();
    for _ in 0..3 {
        let res = support::exchange(
            addr,
            "GET /whoami HTTP/1.1\r\nHost: t\r\nAuthorization: ada\r\n\r\n",
        );
        assert_eq!(res.status, 200);
    }
    let count = || {
        let metrics = crate::admin::scrape(admin);
        let series = "proscenium_http_request_duration_seconds_count";
        crate::admin::sum(&metrics, series, &[("route", "/whoami")])
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while count() < 3.0 && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(count(), 3.0);
}
