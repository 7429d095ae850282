//! TechEmpower's two simplest tests and an echo route, on Proscenium's loops.
//!
//! Run with: `cargo run --release -p hello -- --bind 127.0.0.1:8080 --loops 1`
//! (`--model thread-pool`, `--model prefork:2`, ... runs it under another model).
//!
//! - `GET /plaintext` → `Hello, World!`
//! - `GET /json` → `{"message":"Hello, World!"}`
//! - `ANY /echo` → the request exactly as parsed, as JSON (method, target, version,
//!   headers in order, body): for debugging clients and differential tests.
//!
//! Left out on purpose: logging and static files, so the benchmark measures the
//! request path alone.

use std::net::SocketAddr;

use clap::Parser;
use proscenium::{App, Config, Json, ModelSpec, Server, inline, web};

/// Command-line options.
#[derive(Parser)]
struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "127.0.0.1:8080")]
    bind: SocketAddr,
    /// Event loops (default: one per core).
    #[arg(long)]
    loops: Option<usize>,
    /// Execution model, as `proscenium serve --model` takes it (default: loops).
    #[arg(long)]
    model: Option<ModelSpec>,
}

fn app() -> App {
    App::new()
        .get("/plaintext", inline(|| "Hello, World!"))
        .get(
            "/json",
            inline(|| Json(serde_json::json!({"message": "Hello, World!"}))),
        )
        .any("/echo", inline(web::echo))
}

fn main() {
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let config = Config {
        bind: args.bind,
        ..Config::default()
    }
    .with_model(args.model, args.loops);
    let server = Server::new(app()).config(config);
    if let Err(e) = server.run() {
        eprintln!("hello: {e}");
        std::process::exit(1);
    }
}
