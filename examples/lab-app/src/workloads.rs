//! The workloads, as handlers. Each is what the source describes, no more: the lab
//! compares servers doing the same work, so the work must be plain to read.

use std::hint::black_box;
use std::time::Duration;

use http_body_util::{BodyExt, Empty};
use hyper::body::Bytes;
use num_bigint::BigUint;
use proscenium::{Html, Query, StatusCode};
use serde::Deserialize;

/// TechEmpower's JSON test object, serialized for each request (the Rust peers
/// serialize the same struct with serde_json, `bench/peers/workloads.rs`).
#[derive(serde::Serialize)]
pub(crate) struct Message {
    pub(crate) message: &'static str,
}

/// The iterations of the dynamic page's loop when the request names none: enough for
/// the page to cost about 1 ms of CPU, a page of realistic cost rather than a loop
/// cheaper than the request around it (on the lab's machine a million cost lab-app
/// 0.78–0.85 ms a request, HTTP included). The lab names its own per server, calibrated
/// so the page costs every server the same.
const DYNAMIC_ITERATIONS: u32 = 1_250_000;
/// The most iterations a page takes (about 70 ms here), so a request cannot hold a
/// core for long; every peer's `/dynamic` has the same bound.
const MAX_DYNAMIC_ITERATIONS: u32 = 100_000_000;

#[derive(Deserialize)]
pub(crate) struct Iterations {
    #[serde(default = "default_iterations")]
    n: u32,
}

fn default_iterations() -> u32 {
    DYNAMIC_ITERATIONS
}

/// Leda's dynamic page: a loop of `?n=` iterations (1,250,000 by default), then a small
/// page. The peers (`bench/peers/`) run the same 32-bit arithmetic; `black_box` keeps
/// the compiler from folding the loop into its result.
// Handlers take their extractors by value.
#[allow(clippy::needless_pass_by_value)]
pub(crate) fn dynamic_page(Query(q): Query<Iterations>) -> Result<Html<String>, Rejection> {
    if q.n > MAX_DYNAMIC_ITERATIONS {
        return Err((StatusCode::BAD_REQUEST, "n is at most 100000000"));
    }
    let mut acc: u32 = 0;
    for i in 0..q.n {
        acc = black_box(acc.wrapping_mul(31).wrapping_add(i));
    }
    Ok(Html(format!(
        "<!doctype html><title>dynamic</title><p>{} iterations: {acc}</p>",
        q.n
    )))
}

/// A refused request: its status and why.
pub(crate) type Rejection = (StatusCode, &'static str);

#[derive(Deserialize)]
pub(crate) struct N {
    pub(crate) n: u32,
}

/// The largest `n` the Fibonacci routes take, so a request cannot hold a core for
/// minutes.
const MAX_ITERATIVE: u32 = 200_000;
const MAX_RECURSIVE: u32 = 40;

/// The n-th Fibonacci number, iteratively with big integers, in hex.
// Handlers take their extractors by value.
#[allow(clippy::needless_pass_by_value)]
pub(crate) fn fib_iterative(Query(q): Query<N>) -> Result<String, Rejection> {
    fib_hex(q.n)
}

/// fib(n) in hex, for n up to [`MAX_ITERATIVE`]: the work of `/fib-iter` and of the
/// actors behind `/actor`.
pub(crate) fn fib_hex(n: u32) -> Result<String, Rejection> {
    if n > MAX_ITERATIVE {
        return Err((StatusCode::BAD_REQUEST, "n is at most 200000"));
    }
    let (mut a, mut b) = (BigUint::ZERO, BigUint::from(1u32));
    for _ in 0..n {
        let next = &a + &b;
        a = std::mem::replace(&mut b, next);
    }
    Ok(format!("{a:x}"))
}

/// fib(n), recursively: the CPU burn of Node.Scala's light (n = 20) and heavy (n = 35)
/// requests.
// Handlers take their extractors by value.
#[allow(clippy::needless_pass_by_value)]
pub(crate) fn fib_recursive(Query(q): Query<N>) -> Result<String, Rejection> {
    fn fib(n: u32) -> u64 {
        if n < 2 {
            u64::from(n)
        } else {
            fib(n - 1) + fib(n - 2)
        }
    }
    if q.n > MAX_RECURSIVE {
        return Err((StatusCode::BAD_REQUEST, "n is at most 40"));
    }
    Ok(fib(black_box(q.n)).to_string())
}

#[derive(Deserialize)]
pub(crate) struct Millis {
    ms: u64,
}

/// The longest burn `/cpu` accepts, so a request cannot hold a core for minutes.
const MAX_BURN_MS: u64 = 10_000;

/// Burns `ms` of CPU and says how many rounds it took.
// Handlers take their extractors by value.
#[allow(clippy::needless_pass_by_value)]
pub(crate) fn burn(Query(q): Query<Millis>) -> Result<String, Rejection> {
    if q.ms > MAX_BURN_MS {
        return Err((StatusCode::BAD_REQUEST, "ms is at most 10000"));
    }
    let until = std::time::Instant::now() + Duration::from_millis(q.ms);
    let mut rounds = 0u64;
    while std::time::Instant::now() < until {
        rounds = black_box(rounds + 1);
    }
    Ok(format!("burned {} ms in {rounds} rounds\n", q.ms))
}

#[derive(Deserialize)]
pub(crate) struct Page {
    ms: u64,
    kb: usize,
}

/// `kb` KiB of text after `ms` milliseconds: the upstream of the off-system test.
pub(crate) async fn slow_page(Query(q): Query<Page>) -> Result<String, Rejection> {
    if q.ms > 60_000 || q.kb > 10_240 {
        return Err((
            StatusCode::BAD_REQUEST,
            "ms is at most 60000, kb at most 10240",
        ));
    }
    tokio::time::sleep(Duration::from_millis(q.ms)).await;
    Ok("x".repeat(q.kb * 1024))
}

/// Fetches `upstream` and answers with its body; 502 when it cannot.
///
/// One connection per request, driven inside this future (no spawned task), so it
/// runs unchanged under every model: on a loop the await yields, on a thread it blocks.
pub(crate) async fn relay(upstream: hyper::Uri) -> Result<Bytes, (StatusCode, String)> {
    fetch(&upstream)
        .await
        .map_err(|e| (StatusCode::BAD_GATEWAY, format!("upstream: {e}")))
}

async fn fetch(upstream: &hyper::Uri) -> Result<Bytes, Box<dyn std::error::Error + Send + Sync>> {
    let host = upstream.host().ok_or("no host")?;
    let port = upstream.port_u16().unwrap_or(80);
    let stream = tokio::net::TcpStream::connect((host, port)).await?;
    let (mut sender, conn) =
        hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream)).await?;
    let request = hyper::Request::get(upstream.path_and_query().map_or("/", |p| p.as_str()))
        .header(hyper::header::HOST, host)
        .body(Empty::<Bytes>::new())?;
    let exchange = async move {
        let response = sender.send_request(request).await?;
        if !response.status().is_success() {
            return Err(format!("status {}", response.status()).into());
        }
        Ok::<_, Box<dyn std::error::Error + Send + Sync>>(
            response.into_body().collect().await?.to_bytes(),
        )
    };
    // The connection ends when the exchange drops its sender; drive both to the end.
    let (body, _) = tokio::join!(exchange, conn);
    body
}
