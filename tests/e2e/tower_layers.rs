//! tower both ways (issue 37): tower-http's layers on Proscenium routes through
//! `App::layer`, under the model of this run; and an `App` as a `tower::Service`,
//! driven by hyper, and nested in an axum router.

use std::io::Read;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use proscenium::{App, HeaderMap, Request, StatusCode, inline};
use tower::ServiceExt;
use tower_http::compression::CompressionLayer;
use tower_http::cors::{Any, CorsLayer};
use tower_http::request_id::{MakeRequestUuid, PropagateRequestIdLayer, SetRequestIdLayer};
use tower_http::timeout::TimeoutLayer;
use tower_http::trace::TraceLayer;

use crate::support;

fn hello() -> App {
    App::new().get("/hello", inline(|| "hello"))
}

#[test]
fn issue37_cors_layer_answers_preflight_and_marks_simple_requests() {
    let cors = CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([http::Method::GET]);
    let server = support::start(hello().layer(cors));
    let addr = server.local_addr();
    let preflight = support::exchange(
        addr,
        "OPTIONS /hello HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example\r\n\
         Access-Control-Request-Method: GET\r\n\r\n",
    );
    assert_eq!(preflight.status, 200);
    assert_eq!(preflight.header("access-control-allow-origin"), Some("*"));
    assert_eq!(
        preflight.header("access-control-allow-methods"),
        Some("GET")
    );
    let simple = support::exchange(
        addr,
        "GET /hello HTTP/1.1\r\nHost: t\r\nOrigin: https://a.example\r\n\r\n",
    );
    assert_eq!(simple.status, 200);
    assert_eq!(simple.text(), "hello");
    assert_eq!(simple.header("access-control-allow-origin"), Some("*"));
}

#[test]
fn issue37_timeout_layer_answers_a_slow_handler_with_408() {
    let app = hello()
        .get("/slow", || async {
            tokio::time::sleep(Duration::from_secs(60)).await;
            "late"
        })
        .layer(TimeoutLayer::with_status_code(
            StatusCode::REQUEST_TIMEOUT,
            Duration::from_millis(100),
        ));
    let server = support::start(app);
    let addr = server.local_addr();
    assert_eq!(support::get(addr, "/slow").status, 408);
    assert_eq!(support::get(addr, "/hello").text(), "hello");
}

#[test]
fn issue37_request_id_layers_set_and_propagate_the_id() {
    let app = App::new()
        .get(
            "/id",
            inline(|headers: HeaderMap| {
                headers
                    .get("x-request-id")
                    .map(|v| v.to_str().unwrap_or_default().to_owned())
                    .unwrap_or_default()
            }),
        )
        .layer(PropagateRequestIdLayer::x_request_id())
        .layer(SetRequestIdLayer::x_request_id(MakeRequestUuid));
    let server = support::start(app);
    let addr = server.local_addr();
    let res = support::get(addr, "/id");
    let seen = res.text();
    // A UUID the layer made, seen by the handler and sent back by the other layer.
    assert_eq!(seen.len(), 36, "{seen}");
    assert_eq!(res.header("x-request-id"), Some(seen.as_str()));
    let res = support::exchange(
        addr,
        "GET /id HTTP/1.1\r\nHost: t\r\nX-Request-Id: mine-1\r\n\r\n",
    );
    assert_eq!(res.text(), "mine-1");
    assert_eq!(res.header("x-request-id"), Some("mine-1"));
}

#[test]
fn issue37_trace_layer_sees_each_request_and_response() {
    support::in_process("what its layer records");
    let (requests, responses) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicUsize::new(0)));
    let (on_request, on_response) = (requests.clone(), responses.clone());
    let trace = TraceLayer::new_for_http()
        .on_request(
            move |_: &http::Request<proscenium::Body>, _: &tracing::Span| {
                on_request.fetch_add(1, Ordering::Relaxed);
            },
        )
        .on_response(
            move |res: &http::Response<proscenium::Body>, _: Duration, _: &tracing::Span| {
                assert_eq!(res.status(), StatusCode::OK);
                on_response.fetch_add(1, Ordering::Relaxed);
            },
        );
    let server = support::start(hello().layer(trace));
    let addr = server.local_addr();
    for _ in 0..3 {
        assert_eq!(support::get(addr, "/hello").text(), "hello");
    }
    assert_eq!(requests.load(Ordering::Relaxed), 3);
    assert_eq!(responses.load(Ordering::Relaxed), 3);
}

#[test]
fn issue37_compression_layer_gzips_a_route_s_body() {
    let text = "a line of text to compress\n".repeat(100);
    let body = text.clone();
    let app = App::new()
        .get("/text", inline(move || body.clone()))
        .layer(CompressionLayer::new());
    let server = support::start(app);
    let res = support::exchange(
        server.local_addr(),
        "GET /text HTTP/1.1\r\nHost: t\r\nAccept-Encoding: gzip\r\n\r\n",
    );
    assert_eq!(res.status, 200);
    assert_eq!(res.header("content-encoding"), Some("gzip"));
    assert!(res.body.len() < text.len());
    let mut decoded = String::new();
    flate2::read::GzDecoder::new(&res.body[..])
        .read_to_string(&mut decoded)
        .unwrap();
    assert_eq!(decoded, text);
}

#[test]
fn issue37_an_app_is_a_tower_service_hyper_serves() {
    use proscenium::middleware::{Next, from_fn};
    let app = App::new()
        .post("/echo", |body: bytes::Bytes| async move { body })
        .layer(from_fn(|req: Request, next: Next<'static>| async move {
            tokio::task::yield_now().await;
            let mut res = next.run(req).await;
            res.headers_mut().insert("x-via", "hyper".parse().unwrap());
            res
        }));
    let service = app.into_service().max_body(16);
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        serve_with_hyper(listener, move || {
            let service = service.clone();
            hyper::service::service_fn(move |req| service.clone().oneshot(req))
        });
    });
    let res = support::exchange(
        addr,
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
    );
    assert_eq!(res.status, 200);
    assert_eq!(res.text(), "hello");
    assert_eq!(res.header("x-via"), Some("hyper"));
    let res = support::exchange(
        addr,
        "POST /echo HTTP/1.1\r\nHost: t\r\nContent-Length: 17\r\n\r\nseventeen bytes!!",
    );
    assert_eq!(res.status, 413);
    assert_eq!(support::get(addr, "/nowhere").status, 404);
}

#[test]
fn issue37_an_app_nests_in_axum_through_its_send_service() {
    let app = App::new()
        .get("/hello", || async {
            // An await on the app's own thread, with its timers.
            tokio::time::sleep(Duration::from_millis(5)).await;
            "proscenium hello"
        })
        .post("/echo", inline(|body: bytes::Bytes| body));
    let router = axum::Router::new()
        .route("/", axum::routing::get(|| async { "axum root" }))
        .nest_service("/app", app.into_send_service().max_body(16));
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        serve_with_hyper(listener, move || {
            let router = router.clone();
            hyper::service::service_fn(move |req: http::Request<hyper::body::Incoming>| {
                router.clone().oneshot(req.map(axum::body::Body::new))
            })
        });
    });
    assert_eq!(support::get(addr, "/").text(), "axum root");
    assert_eq!(support::get(addr, "/app/hello").text(), "proscenium hello");
    let res = support::exchange(
        addr,
        "POST /app/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n\r\nhello",
    );
    assert_eq!(res.text(), "hello");
    let res = support::exchange(
        addr,
        "POST /app/echo HTTP/1.1\r\nHost: t\r\nContent-Length: 17\r\n\r\nseventeen bytes!!",
    );
    assert_eq!(res.status, 413);
    assert_eq!(support::get(addr, "/app/nowhere").status, 404);
}

/// Serves every connection of `listener` with hyper's HTTP/1.1 server on a
/// current-thread runtime, each connection a local task answered by a service
/// `make` returns.
pub(crate) fn serve_with_hyper<S, B>(
    listener: std::net::TcpListener,
    make: impl Fn() -> S + 'static,
) where
    S: hyper::service::Service<http::Request<hyper::body::Incoming>, Response = http::Response<B>>
        + 'static,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    listener.set_nonblocking(true).unwrap();
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let local = tokio::task::LocalSet::new();
    local.block_on(&runtime, async move {
        let listener = tokio::net::TcpListener::from_std(listener).unwrap();
        loop {
            let Ok((stream, _)) = listener.accept().await else {
                return;
            };
            let service = make();
            tokio::task::spawn_local(async move {
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(io, service)
                    .await;
            });
        }
    });
}
