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
    /// Ramps it collapsed in, and where: their higher rates were not run.
    #[serde(default)]
    pub collapsed: Vec<String>,
}

impl Step {
    /// Whether an open-loop step overwhelmed the server: under half the offered rate
    /// answered with a 2xx, or a mean response time above a second. A ramp goes no
    /// higher for that server — it would only add timeouts and minutes of draining
    /// (steps at the same rate, such as the `mixed` shares, still run).
    pub fn collapsed(&self) -> bool {
        self.offered_rps.is_some_and(|offered| {
            self.measured.achieved_rps < 0.5 * offered || self.measured.latency_ms.mean > 1000.0
        })
    }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn step(offered: Option<f64>, achieved: f64, mean_ms: f64) -> Step {
        Step {
            server: "s".into(),
            group: "g".into(),
            label: "l".into(),
            x: 0.0,
            offered_rps: offered,
            measured: Measured {
                achieved_rps: achieved,
                latency_ms: crate::load::Latency {
                    mean: mean_ms,
                    ..Default::default()
                },
                ..Default::default()
            },
            cpu_us_per_request: None,
            peak_rss_kib: 0,
            command: String::new(),
        }
    }

    #[test]
    fn a_ramp_collapses_on_lost_rate_or_second_long_answers() {
        assert!(!step(Some(1000.0), 990.0, 2.0).collapsed());
        assert!(step(Some(1000.0), 450.0, 20.0).collapsed());
        assert!(step(Some(1000.0), 990.0, 1500.0).collapsed());
        assert!(
            !step(None, 10.0, 5000.0).collapsed(),
            "closed loops never stop"
        );
    }
}
