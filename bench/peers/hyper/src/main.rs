//! hyper peer: `GET /plaintext`, `GET /json` and `GET /dynamic?n=N` (the lab's
//! page of N iterations), `--bind ADDR --workers N`
//! (N = 1: a current-thread runtime; more: a multi-thread runtime with N workers);
//! `--h2c`: HTTP/2 with prior knowledge instead of HTTP/1.1.

use std::convert::Infallible;

use bytes::Bytes;
use http_body_util::Full;
use hyper::server::conn::{http1, http2};
use hyper::service::service_fn;
use hyper::{Request, Response};
use hyper_util::rt::{TokioExecutor, TokioIo};

#[path = "../../workloads.rs"]
mod workloads;

fn arg(name: &str, default: &str) -> String {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
        .unwrap_or_else(|| default.to_owned())
}

async fn handle(req: Request<hyper::body::Incoming>) -> Result<Response<Full<Bytes>>, Infallible> {
    if req.uri().path() == "/dynamic" {
        let answer = match workloads::dynamic_page(req.uri().query().unwrap_or("")) {
            Ok(page) => Response::builder().header("content-type", "text/html").body(Full::new(Bytes::from(page))),
            Err(reason) => Response::builder().status(400).body(Full::new(Bytes::from_static(reason.as_bytes()))),
        };
        return Ok(answer.unwrap());
    }
    let (body, kind) = match req.uri().path() {
        "/plaintext" => (Bytes::from_static(b"Hello, World!"), "text/plain"),
        "/json" => (Bytes::from(workloads::json()), "application/json"),
        _ => return Ok(Response::builder().status(404).body(Full::new(Bytes::new())).unwrap()),
    };
    Ok(Response::builder().header("content-type", kind).body(Full::new(body)).unwrap())
}

/// Pending connections the kernel holds: 4096 in every server the lab measures, as
/// nginx's `backlog=4096` (tokio's `TcpListener::bind` would take 1024).
const BACKLOG: u32 = 4096;

async fn serve(bind: String, h2c: bool) {
    let addr: std::net::SocketAddr = bind.parse().expect("--bind ADDR:PORT");
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()
    } else {
        tokio::net::TcpSocket::new_v6()
    }
    .expect("socket");
    socket.set_reuseaddr(true).expect("SO_REUSEADDR");
    socket.bind(addr).expect("bind");
    let listener = socket.listen(BACKLOG).expect("listen");
    loop {
        let (stream, _) = match listener.accept().await {
            Ok(accepted) => accepted,
            Err(_) => continue,
        };
        let _ = stream.set_nodelay(true);
        tokio::spawn(async move {
            let io = TokioIo::new(stream);
            let _ = if h2c {
                http2::Builder::new(TokioExecutor::new())
                    .serve_connection(io, service_fn(handle))
                    .await
            } else {
                http1::Builder::new()
                    .keep_alive(true)
                    .pipeline_flush(true)
                    .serve_connection(io, service_fn(handle))
                    .await
            };
        });
    }
}

fn main() {
    let bind = arg("--bind", "127.0.0.1:8082");
    let workers: usize = arg("--workers", "1").parse().expect("--workers N");
    let h2c = std::env::args().any(|a| a == "--h2c");
    let runtime = if workers == 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(workers).enable_all().build()
    };
    // Ends on Ctrl-C (SIGINT) by returning from main, so that tools that report at
    // exit (bench/instructions.sh runs it under valgrind) see a normal exit.
    runtime.expect("runtime").block_on(async {
        tokio::select! {
            () = serve(bind, h2c) => {}
            _ = tokio::signal::ctrl_c() => {}
        }
    });
}
