//! The application `proscenium bench` runs under every execution model: each
//! workload of the sources as a route, written once.
//!
//! Run with: `cargo run --release -p lab-app -- --bind 127.0.0.1:8080 --model loops:2`
//!
//! - `GET /plaintext`, `GET /json`: TechEmpower's two simplest tests.
//! - `GET /dynamic`: Leda's dynamic page, a 30,000-iteration loop (Fig. 9c).
//! - `GET /fib-iter?n=N`: the N-th Fibonacci number computed iteratively with big
//!   integers, in hex (the thesis's on-system work, Fig. 5.1–5.4); runs on the loop,
//!   as in Play's default dispatcher.
//! - `GET /fib?n=N`: recursive fib(N) (Node.Scala's light and heavy requests); marked
//!   blocking, so it runs on the blocking pool when one is configured and on the loop
//!   under `--blocking-pool 0` (Node.js, faithfully).
//! - `GET /relay`: fetches `--upstream` and relays its body (the thesis's off-system
//!   work, Fig. 5.5–5.7); under the thread models the await blocks the thread.
//! - `GET /page?ms=N&kb=K`: K KiB after N ms without using the CPU: the slow upstream
//!   the lab starts for `/relay`.
//! - With `--root DIR`, the files below DIR.

mod workloads;

use std::net::SocketAddr;
use std::path::PathBuf;

use clap::Parser;
use proscenium::{App, Config, Json, ModelSpec, Server, blocking, inline};

/// Command-line options.
#[derive(Parser)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    /// Execution model, as `proscenium serve --model` takes it (default: loops).
    #[arg(long)]
    model: Option<ModelSpec>,
    /// Event loops (default: one per core).
    #[arg(long)]
    loops: Option<usize>,
    /// Threads of the blocking pool; 0 runs blocking handlers on the loop.
    #[arg(long)]
    blocking_pool: Option<usize>,
    /// A directory served as static files below the routes.
    #[arg(long)]
    root: Option<PathBuf>,
    /// The URL `/relay` fetches.
    #[arg(long, default_value = "http://127.0.0.1:9090/page?ms=170&kb=44")]
    upstream: hyper::Uri,
}

fn app(upstream: hyper::Uri) -> App {
    App::new()
        .get("/plaintext", inline(|| "Hello, World!"))
        .get(
            "/json",
            inline(|| Json(serde_json::json!({"message": "Hello, World!"}))),
        )
        .get("/dynamic", inline(workloads::dynamic_page))
        .get("/fib-iter", inline(workloads::fib_iterative))
        .get("/fib", blocking(workloads::fib_recursive))
        .get("/page", workloads::slow_page)
        .get("/relay", move || workloads::relay(upstream.clone()))
}

fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut config = Config {
        bind: args.bind,
        root: args.root,
        ..Config::default()
    }
    .with_model(args.model, args.loops);
    if let Some(threads) = args.blocking_pool {
        config.blocking_threads = Some(threads);
    }
    let server = Server::new(app(args.upstream)).config(config);
    if let Err(e) = server.run() {
        eprintln!("lab-app: {e}");
        std::process::exit(1);
    }
}
