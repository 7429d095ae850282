//! Leda's complex-event-processing (CEP) application as a Proscenium stage graph:
//! Source (reads a combined-format web-server log) → Window (1,000 entries) → Copy →
//! Persist (each window to disk) / Correlate (pairwise similarity of the clients'
//! request patterns, the CPU-heavy stage) / Filter (404 scans, 5xx bursts) → Alarm.
//!
//! Run with: `cargo run --release -p cep -- --entries 1000000 --config
//! examples/cep/configs/two-clusters.toml`. The partition comes from the configuration
//! file alone; the graph is the same under every file.
//!
//! Left out on purpose: a streaming source (the log is read to its end once) and
//! alarms from Correlate (it reports the most similar pair of each window, which the
//! output includes so two runs can be compared, but raises no alarm).

pub mod log;
mod stages;

pub use self::stages::{Alarm, Outcome, run, run_process};
