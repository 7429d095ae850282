//! Leda's complex-event-processing (CEP) application as a Proscenium stage graph:
//! Source (reads a combined-format web-server log) → Window (1,000 entries) → Copy →
//! Persist (each window to disk) / Correlate (pairwise similarity of the clients'
//! request patterns, the CPU-heavy stage) / Filter (404 scans, 5xx bursts) → Alarm.
//!
//! Run with: `cargo run --release -p cep -- --entries 1000000 --config
//! examples/cep/configs/two-clusters.toml`. The partition comes from the configuration
//! file alone; the graph is the same under every file.
//!
//! Or over live logs (`live`): several sources, each in a cluster of its own, following
//! files as they grow or reading lines from sockets, alarms printed as they are raised:
//! `cargo run --release -p cep -- --follow /var/log/nginx/access.log --listen
//! 127.0.0.1:5140`.
//!
//! Filter and Correlate can be written in Lua instead (`--lua examples/cep/lua`, Leda's
//! users wrote their stages in Lua): the same graph, the same alarms and pairs.
//!
//! Left out on purpose: alarms from Correlate (it reports the most similar pair of each
//! window, which the output includes so two runs can be compared, but raises no alarm).

pub mod live;
pub mod log;
mod stages;

pub use self::stages::{Alarm, Code, Outcome, run, run_live, run_process};
