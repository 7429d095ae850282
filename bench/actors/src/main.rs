//! Proscenium's actors side by side with actix, ractor and kameo (issue 6's
//! benchmarks): tell throughput into one actor, ping-pong between two actors on two
//! threads, ask round trip, fan-out of one message to 10,000 actors, and spawning
//! 1,000,000 actors (time and resident memory). `tell` sends from another thread than
//! the actor's (actix: the actor on an arbiter of its own); `tell-local` from the
//! actor's own thread, as a route on a loop tells an actor spawned there (actix: one
//! arbiter; ractor and kameo, on a tokio runtime, run their `tell`).
//!
//! `actor-bench` runs every benchmark of every framework, each in a fresh process,
//! three times, and prints the medians and Proscenium's ratios;
//! `actor-bench FRAMEWORK BENCH` runs one and prints its figures as one JSON line.
//! Run it with `bench/actors.sh` (a release build).

mod actix_side;
mod kameo_side;
mod proscenium_side;
mod ractor_side;

use std::process::Command;
use std::time::Duration;

/// The frameworks, in the table's order.
const FRAMEWORKS: [&str; 4] = ["proscenium", "actix", "ractor", "kameo"];

/// The benchmarks: name, operations, and what one operation is.
const BENCHES: [(&str, u64, &str); 6] = [
    (
        "tell",
        1_000_000,
        "messages told to one actor from another thread",
    ),
    (
        "tell-local",
        1_000_000,
        "messages told to one actor from its own thread (others: as tell)",
    ),
    (
        "ping-pong",
        100_000,
        "round trips between two actors on two threads",
    ),
    ("ask", 100_000, "sequential asks of one actor"),
    (
        "fan-out",
        10_000,
        "actors each told one message, all handled",
    ),
    ("spawn", 1_000_000, "actors spawned and idle"),
];

/// What one run measured.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Measure {
    pub(crate) elapsed: Duration,
    /// Resident memory the benchmark added, in KiB (spawn only).
    pub(crate) rss_kib: Option<u64>,
}

/// The process's resident memory, in KiB.
pub(crate) fn rss_kib() -> u64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Prints one run's figures as the JSON line the driver reads; returns the exit code.
pub(crate) fn report(m: Measure, ops: u64) -> i32 {
    println!(
        "{{\"seconds\":{},\"ops\":{ops},\"rss_kib\":{}}}",
        m.elapsed.as_secs_f64(),
        m.rss_kib.map_or("null".to_owned(), |k| k.to_string())
    );
    0
}

fn run_one(framework: &str, bench: &str, n: u64) -> Measure {
    match framework {
        "proscenium" => proscenium_side::run(bench, n),
        "actix" => actix_side::run(bench, n),
        "ractor" => ractor_side::run(bench, n),
        "kameo" => kameo_side::run(bench, n),
        other => panic!("unknown framework {other}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [framework, bench] = args.as_slice() {
        let n = BENCHES
            .iter()
            .find(|b| b.0 == bench)
            .unwrap_or_else(|| panic!("unknown benchmark {bench}"))
            .1;
        std::process::exit(report(run_one(framework, bench, n), n));
    }
    let me = std::env::current_exe().expect("own path");
    println!(
        "{:<10} {:<11} {:>14} {:>12} {:>10}",
        "bench", "framework", "ops/s", "µs/op", "RSS MiB"
    );
    for (bench, _, what) in BENCHES {
        let mut rows = Vec::new();
        for framework in FRAMEWORKS {
            let mut runs: Vec<(f64, u64, Option<u64>)> = (0..3)
                .map(|_| {
                    let out = Command::new(&me)
                        .args([framework, bench])
                        .output()
                        .expect("run a benchmark");
                    let line = String::from_utf8_lossy(&out.stdout);
                    let v: serde_json::Value = serde_json::from_str(line.trim())
                        .unwrap_or_else(|e| panic!("{framework} {bench}: {e}: {line}"));
                    (
                        v["seconds"].as_f64().unwrap_or(f64::NAN),
                        v["ops"].as_u64().unwrap_or(0),
                        v["rss_kib"].as_u64(),
                    )
                })
                .collect();
            runs.sort_by(|a, b| a.0.total_cmp(&b.0));
            let (seconds, ops, rss) = runs[1];
            let rate = ops as f64 / seconds;
            println!(
                "{bench:<10} {framework:<11} {rate:>14.0} {:>12.3} {:>10}",
                seconds * 1e6 / ops as f64,
                rss.map_or("-".to_owned(), |k| format!("{:.0}", k as f64 / 1024.0))
            );
            rows.push((framework, rate));
        }
        let ours = rows[0].1;
        let ratios: Vec<String> = rows[1..]
            .iter()
            .map(|(f, r)| format!("{:.2}× {f}", ours / r))
            .collect();
        println!("{:<10} proscenium: {} ({what})\n", "", ratios.join(", "));
    }
}
