//! Node.Scala's Fig. 2, a stateful Fibonacci service: a cache shared by every loop,
//! read and written without a lock in user code.
//!
//! Run with: `cargo run --release -p fib-cache -- --bind 127.0.0.1:8080 --loops 2`
//!
//! - `GET /fib?n=30` → `832040`: a reading step looks `n` up in the cache; on a miss
//!   the request continues in a writing step on the blocking pool, which computes the
//!   recursive fib(n) — unless a request before it already did — and stores it.
//! - `PUT /fib/:n` computes fib(n) afresh and stores it: a writing route.
//! - `GET /verify/:n` computes fib(n) afresh and compares it with the cached value: a
//!   reading route doing a write's work, so reads run in parallel and writes alone at
//!   the same cost; the lab's `stateful` scenario mixes the two (404 while fib(n) is
//!   not cached, 500 if the cache holds a wrong value).
//! - `GET /stats` → `{"cached":…,"computed":…}`: entries, and fib computations so far
//!   (each `n` is computed once, however many requests miss it together).
//!
//! `fib-cache routes` prints the routes with their class and locks: `GET /fib` and
//! `GET /verify/:n` are reading (the cache), `PUT /fib/:n` writing (the cache and the counter); the
//! continuation of a miss, a writing step too, is not a route of its own.

use std::process::ExitCode;

use proscenium::state::{Counter, Read, SharedMap, Then, Write};
use proscenium::{App, Json, Path, Query, StatusCode, blocking, inline};
use serde::Deserialize;

/// The cache: n → fib(n).
type Cache = SharedMap<u32, u64>;

/// Larger n would keep a pool thread busy for minutes (fib(40) takes about a second).
const MAX_N: u32 = 40;

#[derive(Deserialize)]
struct Fib {
    n: u32,
}

/// The answer to an `n` past [`MAX_N`].
fn too_large(n: u32) -> Option<(StatusCode, String)> {
    (n > MAX_N).then(|| {
        (
            StatusCode::UNPROCESSABLE_ENTITY,
            format!("n must be at most {MAX_N}\n"),
        )
    })
}

fn fib_recursive(n: u32) -> u64 {
    match n {
        0 | 1 => u64::from(n),
        _ => fib_recursive(n - 1) + fib_recursive(n - 2),
    }
}

fn fib(Query(Fib { n }): Query<Fib>, cache: Read<Cache>) -> Then<(StatusCode, String)> {
    if let Some(refused) = too_large(n) {
        return Then::Done(refused);
    }
    if let Some(value) = cache.get(&n) {
        return Then::Done((StatusCode::OK, format!("{value}\n")));
    }
    cache.then(blocking(
        move |mut cache: Write<Cache>, mut computed: Write<Counter>| {
            let value = *cache.get_or_insert_with(n, || {
                computed.increment();
                fib_recursive(n)
            });
            (StatusCode::OK, format!("{value}\n"))
        },
    ))
}

/// Computes fib(n) afresh under the write lock and stores it.
fn refresh(
    Path(n): Path<u32>,
    mut cache: Write<Cache>,
    mut computed: Write<Counter>,
) -> (StatusCode, String) {
    if let Some(refused) = too_large(n) {
        return refused;
    }
    let value = fib_recursive(n);
    computed.increment();
    cache.insert(n, value);
    (StatusCode::OK, format!("{value}\n"))
}

/// Recomputes fib(n) under the read lock and checks the cache against it.
fn verify(Path(n): Path<u32>, cache: Read<Cache>) -> (StatusCode, String) {
    if let Some(refused) = too_large(n) {
        return refused;
    }
    let computed = fib_recursive(n);
    // The lock was held for the computation; it goes with the guard, here.
    let cached = cache.get(&n).copied();
    drop(cache);
    match cached {
        Some(cached) if cached == computed => (StatusCode::OK, format!("{computed}\n")),
        Some(cached) => (
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("fib({n}) is cached as {cached}, computed as {computed}\n"),
        ),
        None => (StatusCode::NOT_FOUND, format!("fib({n}) is not cached\n")),
    }
}

fn app() -> App {
    App::new()
        .state(Cache::new())
        .state(Counter::default())
        .get("/fib", inline(fib))
        .put("/fib/:n", blocking(refresh))
        .get("/verify/:n", blocking(verify))
        .get(
            "/stats",
            inline(|cache: Read<Cache>, computed: Read<Counter>| {
                Json(serde_json::json!({ "cached": cache.len(), "computed": computed.get() }))
            }),
        )
}

fn main() -> ExitCode {
    proscenium::main(|_| app())
}
