//! `[stages]` in the configuration: what the stage graphs a server runs measure.

use serde::{Deserialize, Serialize};

/// One event in this many has its wait and service timed, unless the graph says
/// otherwise ([`Graph::sample`](crate::stage::Graph::sample), `[stages] sample`).
pub const DEFAULT_SAMPLE: u32 = 64;

/// The stage graphs' measurement (`[stages]`), applied to the graphs the server runs
/// (the `staged` model's, and [`Deploy::start_graph`](crate::launch::Deploy::start_graph)'s).
///
/// # Examples
///
/// ```
/// let config: proscenium::Config = toml::from_str("[stages]\nsample = 1").unwrap();
/// assert_eq!(config.stages.sample, 1);
/// assert_eq!(proscenium::Config::default().stages.sample, 64);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct StagesSpec {
    /// Each stage times the wait and service of one event in this many (default
    /// [`DEFAULT_SAMPLE`], 64; 1 times every event, 0
    /// is taken as 1). Counts stay exact; only the latency histograms are samples.
    pub sample: u32,
}

impl Default for StagesSpec {
    fn default() -> Self {
        Self {
            sample: DEFAULT_SAMPLE,
        }
    }
}
