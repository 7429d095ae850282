//! hyper peer: `GET /plaintext`, `GET /json` and `GET /dynamic` (the lab's 30,000-iteration
//! page), `--bind ADDR --workers N`
//! (N = 1: a current-thread runtime; more: a multi-thread runtime with N workers).

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::TokioIo;

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_owned())
}

/// The lab's dynamic page: the same 30,000 iterations as examples/lab-app.
fn dynamic_page() -> String {
    let mut acc: u32 = 0;
    for i in 0..30_000u32 {
        acc = std::hint::black_box(acc.wrapping_mul(31).wrapping_add(i));
    }
    format!("<!doctype html><title>dynamic</title><p>30000 iterations: {acc}</p>")
}

async fn handle(req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.uri().path() == "/dynamic" {
        let page = Full::new(Bytes::from(dynamic_page()));
        return Ok(Response::builder().header("content-type", "text/html").body(page).unwrap());
    }
    let (body, kind) = match req.uri().path() {
        "/plaintext" => (&b"Hello, World!"[..], "text/plain"),
        "/json" => (&br#"{"message":"Hello, World!"}"#[..], "application/json"),
        _ => return Ok(Response::builder().status(404).body(Full::new(Bytes::new())).unwrap()),
    };
    Ok(Response::builder().header("content-type", kind).body(Full::new(Bytes::from_static(body))).unwrap())
}

async fn serve(bind: String) {
    let listener = tokio::net::TcpListener::bind(&bind).await.expect("bind");
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(_) => continue,
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let _ = http1::Builder::new()
                .keep_alive(true)
                .pipeline_flush(true)
                .serve_connection(TokioIo::new(stream), service_fn(handle))
                .await;
        });
    }
}

fn main() {
    let bind = arg("--bind", "127.0.0.1:8082");
    let workers: usize = arg("--workers", "1").parse().expect("--workers N");
    let runtime = if workers == 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build()
    };
    // Ends on Ctrl-C (SIGINT) by returning from main, so that tools that report at
    // exit (bench/instructions.sh runs it under valgrind) see a normal exit.
    runtime.expect("runtime").block_on(async {
        tokio::select! {
            () = serve(bind) => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    });
}
