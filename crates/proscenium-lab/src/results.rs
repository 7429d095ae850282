//! What a run records: `results.json`, read back by the report and by anyone
//! comparing runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::Machine;
use crate::load::Measured;

/// Everything one scenario's run recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// The scenario's name.
    pub scenario: String,
    /// The figure of the sources it reproduces.
    pub reproduces: String,
    /// `quick` or `full`.
    pub profile: String,
    /// What it ran on.
    pub machine: Machine,
    /// The versions of the programs involved.
    pub versions: BTreeMap<String, String>,
    /// Where this run departs from the source, and why.
    pub deviations: Vec<String>,
    /// Each server, run or skipped.
    pub servers: Vec<ServerRun>,
    /// Every step of every server.
    pub steps: Vec<Step>,
    /// The plot files, in the report's order (each as `.svg` and `.png`).
    pub plots: Vec<String>,
}

/// How a server was run, or why it was not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRun {
    /// Its name, as given.
    pub name: String,
    /// The cores it was pinned to.
    pub cores: String,
    /// The command that started it.
    pub command: Option<String>,
    /// Why it was not measured.
    pub skipped: Option<String>,
}

/// One step of load against one server.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The server's name.
    pub server: String,
    /// The plot it belongs to (a file size, a Fibonacci n, a route).
    pub group: String,
    /// What the step is (clients, rate, mix).
    pub label: String,
    /// Its place on the plot's x axis.
    pub x: f64,
    /// Requests a second offered (open loop only).
    pub offered_rps: Option<f64>,
    /// What the load generator measured.
    #[serde(flatten)]
    pub measured: Measured,
    /// Server CPU time (its whole process tree) over the step ÷ requests answered.
    pub cpu_us_per_request: Option<f64>,
    /// The most resident memory the server's process tree held during the step.
    pub peak_rss_kib: u64,
    /// The load generator's command line.
    pub command: String,
}
