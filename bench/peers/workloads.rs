//! The work of the Rust peers' routes (actix, hyper), each including this file with
//! `#[path]`: TechEmpower's JSON message, serialized per request as lab-app does, and
//! the loop of lab-app's `/dynamic?n=`, its bytes and its limit.

/// TechEmpower's JSON test object.
#[derive(serde::Serialize)]
struct Message {
    message: &'static str,
}

/// The `/json` body: the object serialized for this request, as TechEmpower asks.
pub fn json() -> Vec<u8> {
    serde_json::to_vec(&Message {
        message: "Hello, World!",
    })
    .expect("a struct of one string serializes")
}

/// The iterations when the request names none.
const DEFAULT_ITERATIONS: u32 = 1_250_000;
/// The most a page takes, as in every peer.
const MAX_ITERATIONS: u32 = 100_000_000;

/// The page for a request's query string (`n=N`), or why it is refused (a 400).
pub fn dynamic_page(query: &str) -> Result<String, &'static str> {
    let n = match query.split('&').find_map(|pair| pair.strip_prefix("n=")) {
        None => DEFAULT_ITERATIONS,
        Some(n) => n
            .parse()
            .ok()
            .filter(|n| *n <= MAX_ITERATIONS)
            .ok_or("n is at most 100000000")?,
    };
    let mut acc: u32 = 0;
    for i in 0..n {
        acc = std::hint::black_box(acc.wrapping_mul(31).wrapping_add(i));
    }
    Ok(format!("<!doctype html><title>dynamic</title><p>{n} iterations: {acc}</p>"))
}
