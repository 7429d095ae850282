//! The application `proscenium bench` runs under every execution model: each
//! workload of the sources as a route, written once.
//!
//! Run with: `cargo run --release -p lab-app -- --bind 127.0.0.1:8080 --model loops:2`
//!
//! - `GET /plaintext`, `GET /json`: TechEmpower's two simplest tests.
//! - `GET /dynamic?n=N`: Leda's dynamic page, a loop of N iterations (1,250,000, about
//!   1 ms of CPU, when no N is given; at most 100,000,000) (Fig. 9c).
//! - `GET /fib-iter?n=N`: the N-th Fibonacci number computed iteratively with big
//!   integers, in hex (the thesis's on-system work, Fig. 5.1–5.4); runs on the loop,
//!   as in Play's default dispatcher.
//! - `GET /actor?n=N`: the body of `/fib-iter?n=N`, computed by one of a pool of
//!   actors the route asks (the thesis's Play/Akka side; `actors.rs`).
//! - `GET /fib?n=N`: recursive fib(N) (Node.Scala's light and heavy requests); marked
//!   blocking, so it runs on the blocking pool when one is configured and on the loop
//!   under `--blocking-pool 0` (Node.js, faithfully).
//! - `GET /cpu?ms=N`, `GET /cpu-blocking?ms=N`: N ms (at most 10,000) of CPU, on the
//!   loop or on the blocking pool: what a stalled loop looks like, for the watchdog
//!   and `bench/models.sh` / `bench/blocked-loop.sh`.
//! - `GET /relay`: fetches `--upstream` and relays its body (the thesis's off-system
//!   work, Fig. 5.5–5.7); under the thread models the await blocks the thread.
//! - `GET /page?ms=N&kb=K`: K KiB after N ms without using the CPU: the slow upstream
//!   the lab starts for `/relay`.
//! - With a directory (`lab-app DIR`), the files below DIR.

mod actors;
mod workloads;

use std::process::ExitCode;

use proscenium::actor::Router;
use proscenium::launch::Launcher;
use proscenium::{App, Json, blocking, inline};

use crate::actors::Fibber;

/// The lab-app's own option; how it runs comes from the deploy flags.
#[derive(clap::Args)]
struct Upstream {
    /// The URL `/relay` fetches.
    #[arg(long, default_value = "http://127.0.0.1:9090/page?ms=170&kb=44")]
    upstream: hyper::Uri,
}

fn app(upstream: hyper::Uri, fibbers: Router<Fibber>) -> App {
    App::new()
        .state(fibbers)
        .get("/plaintext", inline(|| "Hello, World!"))
        .get(
            "/json",
            inline(|| {
                Json(workloads::Message {
                    message: "Hello, World!",
                })
            }),
        )
        .get("/dynamic", inline(workloads::dynamic_page))
        .get("/fib-iter", inline(workloads::fib_iterative))
        .get("/actor", actors::ask)
        .get("/fib", blocking(workloads::fib_recursive))
        .get("/cpu", inline(workloads::burn))
        .get("/cpu-blocking", blocking(workloads::burn))
        .get("/page", workloads::slow_page)
        .get("/relay", move || workloads::relay(upstream.clone()))
}

fn main() -> ExitCode {
    Launcher::new().options::<Upstream>().run(|deploy| {
        let fibbers = actors::fibbers(deploy.actors());
        app(deploy.options().upstream.clone(), fibbers)
    })
}
