//! The client against real servers on loopback: a Proscenium app, and a raw one that
//! drops connections.

use std::io::{Read as _, Write as _};
use std::net::TcpListener;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use super::*;
use crate::{App, Config, Server, ServerHandle};

/// Requests `/slow` is serving now, and the most it served at once.
static NOW: AtomicUsize = AtomicUsize::new(0);
static MOST: AtomicUsize = AtomicUsize::new(0);

fn service() -> ServerHandle {
    let app = App::new()
        .get("/hello", || async { "hi" })
        .post("/echo", |body: Bytes| async move { body })
        .get("/big", || async { vec![b'x'; 1 << 20] })
        .get("/traceparent", |req: crate::Request| async move {
            req.headers()
                .get("traceparent")
                .map(|v| v.as_bytes().to_vec())
                .unwrap_or_default()
        })
        .get("/late", || async {
            tokio::time::sleep(Duration::from_millis(200)).await;
            "late"
        })
        .get("/slow", || async {
            let now = NOW.fetch_add(1, Ordering::SeqCst) + 1;
            MOST.fetch_max(now, Ordering::SeqCst);
            tokio::time::sleep(Duration::from_millis(200)).await;
            NOW.fetch_sub(1, Ordering::SeqCst);
            "slow"
        });
    let config = Config {
        bind: "127.0.0.1:0".parse().unwrap(),
        loops: Some(1),
        ..Config::default()
    };
    Server::new(app).config(config).start().unwrap()
}

fn block_on<F: std::future::Future>(future: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(future)
}

#[test]
fn answers_come_back_whole_from_an_async_caller_and_a_plain_thread() {
    let server = service();
    let base = format!("http://{}", server.local_addr());
    let client = Client::new();
    let hello = block_on(client.get(&format!("{base}/hello"))).unwrap();
    assert_eq!(
        (hello.status(), &hello.body()[..]),
        (StatusCode::OK, &b"hi"[..])
    );
    let echo = block_on(client.post_json(&format!("{base}/echo"), &serde_json::json!({"a": 1})));
    assert_eq!(&echo.unwrap().body()[..], br#"{"a":1}"#);
    let request = Request::get(format!("{base}/big"))
        .body(Bytes::new())
        .unwrap();
    let big = std::thread::spawn(move || client.send_blocking(request))
        .join()
        .unwrap();
    assert_eq!(big.unwrap().body().len(), 1 << 20);
}

#[test]
fn a_late_answer_is_a_timeout_and_a_large_one_too_large() {
    let server = service();
    let base = format!("http://{}", server.local_addr());
    let client = Client::with(ClientSpec {
        timeout: Duration::from_millis(50),
        max_body: 1000,
        ..ClientSpec::default()
    });
    let began = Instant::now();
    let late = block_on(client.get(&format!("{base}/late")));
    assert!(matches!(late, Err(ClientError::Timeout(_))), "{late:?}");
    assert!(
        began.elapsed() < Duration::from_millis(190),
        "gave up at the timeout"
    );
    assert_eq!(late.unwrap_err().status(), StatusCode::GATEWAY_TIMEOUT);
    let client = Client::with(ClientSpec {
        max_body: 1000,
        ..ClientSpec::default()
    });
    let big = block_on(client.get(&format!("{base}/big")));
    assert!(matches!(big, Err(ClientError::TooLarge(1000))), "{big:?}");
    let bad = block_on(client.get("ftp://example.com/"));
    assert!(matches!(bad, Err(ClientError::Url(_))), "{bad:?}");
}

#[test]
fn a_host_gets_at_most_its_cap_of_requests_at_once() {
    let server = service();
    let url = format!("http://{}/slow", server.local_addr());
    let client = Client::with(ClientSpec {
        max_per_host: 2,
        ..ClientSpec::default()
    });
    let answers = block_on(futures_util::future::join_all(
        (0..6).map(|_| client.get(&url)),
    ));
    assert!(
        answers
            .iter()
            .all(|a| a.as_ref().is_ok_and(|a| a.body() == "slow"))
    );
    assert_eq!(MOST.load(Ordering::SeqCst), 2, "two at a time, never more");
}

/// A server that reads the request on each of its first `drops` connections and
/// closes it unanswered, then answers every request `ok`.
fn flaky(drops: usize) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for (n, conn) in listener.incoming().enumerate() {
            let Ok(mut conn) = conn else { continue };
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0];
                while conn.read(&mut byte).is_ok_and(|n| n == 1) {
                    head.push(byte[0]);
                    if head.ends_with(b"\r\n\r\n") {
                        if n < drops {
                            return;
                        }
                        let _ = conn.write_all(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok");
                        head.clear();
                    }
                }
            });
        }
    });
    addr
}

#[test]
fn a_failed_connection_is_retried_for_a_get_never_for_a_post() {
    let client = Client::new();
    let get = block_on(client.get(&format!("http://{}/", flaky(1))));
    assert_eq!(&get.unwrap().body()[..], b"ok");
    let post = block_on(client.post_json(&format!("http://{}/", flaky(1)), &1));
    assert!(matches!(post, Err(ClientError::Failed(_))), "{post:?}");
    assert_eq!(post.unwrap_err().status(), StatusCode::BAD_GATEWAY);
}

/// An HTTPS server with a certificate for `names` from a CA of the test's own, and a
/// client trusting that CA (its file read as `[client] ca` is) — or not.
fn https(names: &[&str], trusting: bool) -> (crate::testing::HttpsServer, Client) {
    https_signed(|ca| ca.leaf(names), trusting)
}

/// An HTTPS server with the certificate `sign` makes with a CA of the test's own, and
/// a client trusting that CA or not.
fn https_signed(
    sign: impl FnOnce(&crate::testing::TestCa) -> crate::testing::Leaf,
    trusting: bool,
) -> (crate::testing::HttpsServer, Client) {
    let ca = crate::testing::TestCa::new();
    let server = crate::testing::HttpsServer::start(&sign(&ca));
    let dir = tempfile::tempdir().unwrap();
    let spec = ClientSpec {
        ca: trusting.then(|| CaFile::read(ca.write(dir.path())).unwrap()),
        ..ClientSpec::default()
    };
    (server, Client::with(spec))
}

#[test]
fn https_reaches_a_server_whose_certificate_the_configured_ca_signed_over_tls_1_3() {
    let (server, client) = https(&["localhost", "127.0.0.1"], true);
    let url = format!("https://localhost:{}/push", server.addr().port());
    let sent = block_on(client.post_json(&url, &serde_json::json!({"to": "ana"})));
    assert_eq!(&sent.unwrap().body()[..], b"ok");
    let received = server.received();
    assert_eq!(received.len(), 1);
    assert_eq!(received[0].version, Some(rustls::ProtocolVersion::TLSv1_3));
    assert_eq!(received[0].body, br#"{"to":"ana"}"#);
    let by_address = block_on(client.get(&format!("https://{}/", server.addr())));
    assert_eq!(by_address.unwrap().status(), StatusCode::OK);
}

#[test]
fn a_certificate_from_an_untrusted_ca_is_a_certificate_error_never_plain_http() {
    let (server, client) = https(&["localhost", "127.0.0.1"], false);
    let got = block_on(client.get(&format!("https://{}/", server.addr())));
    match got {
        Err(ClientError::Certificate { host, reason }) => {
            assert_eq!(
                (host.as_str(), reason),
                ("127.0.0.1", CertificateReason::UnknownIssuer)
            );
        }
        other => panic!("expected a refused certificate, got {other:?}"),
    }
    assert!(server.received().is_empty(), "no request was sent");
}

#[test]
fn a_certificate_for_another_name_is_a_certificate_error() {
    let (server, client) = https(&["push.example"], true);
    let got = block_on(client.get(&format!("https://localhost:{}/", server.addr().port())));
    assert!(
        matches!(
            &got,
            Err(ClientError::Certificate {
                reason: CertificateReason::NameMismatch,
                ..
            })
        ),
        "{got:?}"
    );
    assert!(got.unwrap_err().is_certificate());
}

#[test]
fn an_expired_certificate_is_a_certificate_error() {
    let (server, client) = https_signed(|ca| ca.expired_leaf(&["127.0.0.1"]), true);
    let got = block_on(client.get(&format!("https://{}/", server.addr())));
    assert!(
        matches!(
            &got,
            Err(ClientError::Certificate {
                reason: CertificateReason::Expired,
                ..
            })
        ),
        "{got:?}"
    );
}

#[test]
fn http_is_still_plain_http_with_a_ca_configured() {
    let (_, client) = https(&["localhost"], true);
    let server = service();
    let hello = block_on(client.get(&format!("http://{}/hello", server.local_addr())));
    assert_eq!(&hello.unwrap().body()[..], b"hi");
}

#[test]
#[cfg(feature = "traces")]
fn a_call_made_in_an_exported_span_carries_its_traceparent_and_none_otherwise() {
    use opentelemetry::trace::{TraceContextExt as _, TracerProvider as _};
    use tracing_opentelemetry::OpenTelemetrySpanExt as _;
    use tracing_subscriber::layer::SubscriberExt as _;

    let server = service();
    let url = format!("http://{}/traceparent", server.local_addr());
    let client = Client::new();
    let untraced = block_on(client.get(&url)).unwrap();
    assert_eq!(&untraced.body()[..], b"");
    let provider = opentelemetry_sdk::trace::SdkTracerProvider::builder().build();
    let exported = tracing_subscriber::Registry::default()
        .with(tracing_opentelemetry::layer().with_tracer(provider.tracer("test")));
    tracing::subscriber::with_default(exported, || {
        let span = tracing::trace_span!(target: crate::http::REQUEST_SPANS, "request");
        let traced = span.in_scope(|| block_on(client.get(&url))).unwrap();
        let context = span.context();
        let caller = context.span().span_context().clone();
        assert_eq!(
            String::from_utf8_lossy(traced.body()),
            format!("00-{}-{}-01", caller.trace_id(), caller.span_id())
        );
    });
}
