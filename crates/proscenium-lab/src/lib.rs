//! The lab behind `proscenium bench`: it runs the sources' experiments — TechEmpower's
//! plaintext and JSON, Leda's static and dynamic pages and its CEP partitions (Table 1),
//! the thesis's on- and off-system ramps, Node.Scala's mix and scaling — against Proscenium's execution models and the
//! servers people would otherwise pick, with established load generators (`wrk`
//! closed loop, `vegeta` open loop), and writes `results.json` and a self-contained
//! `report.html` with its plots (SVG, and PNG beside them).
//!
//! # Example
//!
//! ```no_run
//! use proscenium_lab::{Options, Profile};
//!
//! let options = Options {
//!     scenario: "plaintext".into(),
//!     servers: Some(vec!["proscenium:loops".parse().unwrap(), "nginx".parse().unwrap()]),
//!     profile: Profile::Quick,
//!     out: "lab-results".into(),
//!     rounds: None,
//!     server_cpus: None,
//!     load_cpus: None,
//!     command_line: "proscenium bench plaintext --servers proscenium:loops,nginx".into(),
//! };
//! for dir in proscenium_lab::run(&options).unwrap() {
//!     println!("report: {}", dir.join("report.html").display());
//! }
//! ```
//!
//! # A tour
//!
//! Four layers and the runner above them; a module imports only from those before it
//! (`tests/layers.rs` checks it):
//!
//! ```text
//! plan      calibration.rs, scenario/      what a scenario asks
//! run       error, progress, tools, process,
//!           servers/, machine, provenance,
//!           load/                          what runs, and what it measured
//! results   results/                       what was measured, stored
//! report    report/ (sources/), index.rs   what the results say
//! runner    runner/                        all of them, as `proscenium bench` runs
//! ```
//!
//! - A scenario (`scenario/`, one file a source) is a plan: default servers, where servers and load run
//!   (`Split`: server and load on separate cores; `Shared`: all cores for both, or as
//!   `--server-cpus` / `--load-cpus` say), the answers checked first, the steps of
//!   load, the plots; `calibration.rs` says what is measured per server (saturation
//!   rates, the heavy request's n, the dynamic page's iterations) and
//!   `scenario/per_server.rs` how each step is planned from it.
//! - `servers/` builds and starts each server (nginx from `bench/nginx.conf.in`, the
//!   config `bench/lib.sh` fills too); `load/` drives the generators and does the
//!   accounting from their raw output: latency over every sent request (failures at
//!   the timeout), achieved/s within the send window, the drain, what was sent.
//! - `results/` is `results.json`: every step, marked invalid where its generator fell
//!   behind, and the verdict on the source's claim.
//! - `report/` writes `results.json`, the plots (medians over rounds, whiskers) and the
//!   page with its provenance (`provenance.rs`); `report/sources/` gives each
//!   scenario's source — what it measured, the stand-ins, its numbers drawn on our
//!   plots — and the verdict on its claim, computed from the steps; `index.rs` draws a
//!   directory's reports again and writes its README.
//! - The runner (`runner/`) checks before any load what the run needs (the checkout,
//!   the plots' font, the generators, every server's build), then runs rounds, each
//!   starting with the next server; a server's turn (`runner/round.rs`) starts it
//!   pinned to its cores, checks its answers, warms it up, in its first turn
//!   calibrates it (`runner/calibrate.rs`), drives each step and records what the
//!   server spent, then stops it. `cep` is a job, not servers under load:
//!   `runner/job.rs` generates its log once and times `examples/cep` under each
//!   partition of Table 1 (configuration files in the checkout), its runs recorded as
//!   steps with a `job` outcome.

mod calibration;
mod error;
mod index;
mod load;
mod machine;
mod process;
mod progress;
mod provenance;
mod report;
mod results;
mod runner;
mod scenario;
mod servers;
mod tools;

pub use self::calibration::{Calibration, TunedRequest};
pub use self::error::Error;
pub use self::index::write_index;
pub use self::load::{Latency, Measured};
pub use self::machine::Machine;
pub use self::provenance::Provenance;
pub use self::report::judge;
pub use self::results::{Comparison, Finding, JobOutcome, Results, ServerRun, Step, Verdict};
pub use self::runner::{Options, interrupt_on_signals, run};
pub use self::scenario::{Profile, SCENARIOS};
pub use self::servers::ServerSpec;
