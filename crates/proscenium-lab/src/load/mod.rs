//! Load: a step's load sent by its generator, and what was measured while it ran
//! (what a step sends is the plan's, [`Load`]).
//!
//! Closed loop (a fixed number of connections sending as fast as answers come) is
//! `wrk`; open loop (a fixed rate, whatever the answers do, so a slow server cannot
//! slow the load down and hide its own latency — coordinated omission) is `vegeta`.

mod latencies;
mod vegeta;
mod wrk;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::scenario::Load;
use crate::tools::Tools;

/// Latency figures, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Latency {
    /// The mean.
    pub mean: f64,
    /// The median.
    pub p50: f64,
    /// The 90th percentile.
    pub p90: f64,
    /// The 99th percentile.
    pub p99: f64,
    /// The slowest.
    pub max: f64,
}

/// How long a request may take before the generator gives up on it; a failed request
/// counts at this value in [`Measured::latency_ms`].
pub(crate) const TIMEOUT_MS: f64 = 10_000.0;

/// What a load generator reported for one step, as the lab accounts for it.
///
/// Fields added after the first reports are `None` in their `results.json` (not
/// recorded).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Requests that left the generator (open loop: one result each; closed loop:
    /// answers, timeouts and socket errors).
    #[serde(default)]
    pub sent: Option<u64>,
    /// Requests answered (any status).
    pub requests: u64,
    /// Requests that failed: no answer (timeout, socket error) or a status other than
    /// 2xx.
    #[serde(default)]
    pub failed: Option<u64>,
    /// The length of the send window in seconds: the step's duration, from the first
    /// send.
    #[serde(default)]
    pub window_s: Option<f64>,
    /// 2xx answers completed within the send window ÷ its length (answers of the drain
    /// are not counted).
    pub achieved_rps: f64,
    /// Seconds from the end of the send window to the last answer (open loop).
    #[serde(default)]
    pub drain_s: Option<f64>,
    /// Answers that came after the send window (open loop).
    #[serde(default)]
    pub drain_answers: Option<u64>,
    /// Latency of every sent request, each failure counted at the timeout (10 s); wrk
    /// cannot tell a non-2xx answer's time apart, so under wrk those keep their own.
    pub latency_ms: Latency,
    /// Latency of the answered requests alone, at their own times (under wrk, those
    /// answered within the timeout: its histogram holds no later ones).
    #[serde(default)]
    pub answered_latency_ms: Option<Latency>,
    /// Latency of every sent request per path, when the load mixed several.
    pub latency_by_path_ms: BTreeMap<String, Latency>,
    /// Counts by class: `2xx`, `4xx`, `5xx` (wrk: `non-2xx` only), `errors`, `timeouts`.
    pub statuses: BTreeMap<String, u64>,
    /// CPU seconds (user + system, every thread) the generator spent sending it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_cpu_s: Option<f64>,
    /// Wall seconds the generator ran for, from its start to its exit (what the lab
    /// does with its output afterwards, such as vegeta's encoding, not counted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_wall_s: Option<f64>,
}

impl Measured {
    /// The share of sent requests that failed, when recorded.
    pub fn failed_share(&self) -> Option<f64> {
        let sent = self.sent.filter(|&n| n > 0)?;
        Some(self.failed? as f64 / sent as f64)
    }

    /// How many cores the generator kept busy on average while it ran, when recorded.
    pub fn generator_cores_busy(&self) -> Option<f64> {
        Some(self.generator_cpu_s? / self.generator_wall_s.filter(|&w| w > 0.0)?)
    }

    /// These figures with the generator's own spending beside them.
    fn spent(self, spent: Spent) -> Self {
        Self {
            generator_cpu_s: Some(spent.cpu_s),
            generator_wall_s: Some(spent.wall_s),
            ..self
        }
    }
}

/// What a generator's run cost it.
#[derive(Clone, Copy, Debug)]
struct Spent {
    cpu_s: f64,
    wall_s: f64,
}

impl Load {
    /// Runs the load against `base` (`http://127.0.0.1:PORT`) from `cores`; returns
    /// the command as run and what it measured.
    pub(crate) fn run(
        &self,
        tools: &Tools,
        base: &str,
        cores: &str,
        scratch: &Path,
    ) -> Result<(String, Measured), Error> {
        match self {
            Self::Closed {
                targets,
                conns,
                depth,
                threads,
                seconds,
            } => wrk::run(
                tools, base, targets, *conns, *depth, *threads, *seconds, cores, scratch,
            ),
            Self::Open {
                targets,
                rate,
                seconds,
            } => vegeta::run(tools, base, targets, *rate, *seconds, cores, scratch),
        }
    }
}

/// Runs a generator; returns its stdout and what it spent, or an error with its
/// stderr. (The lab waits for no other child meanwhile: the time its children waited
/// for gained is the generator's.)
fn output(command: &mut std::process::Command, what: &str) -> Result<(String, Spent), Error> {
    let before = crate::process::waited_children_cpu_seconds();
    let started = std::time::Instant::now();
    let out = command
        .output()
        .map_err(Error::io("run the load generator"))?;
    let spent = Spent {
        cpu_s: crate::process::waited_children_cpu_seconds() - before,
        wall_s: started.elapsed().as_secs_f64(),
    };
    if !out.status.success() && out.stdout.is_empty() {
        return Err(Error::Load(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok((String::from_utf8_lossy(&out.stdout).into_owned(), spent))
}

/// A command as a shell would show it.
fn shown(command: &std::process::Command) -> String {
    format!("{command:?}").replace('"', "")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generators_cores_busy_are_its_cpu_over_its_own_run() {
        let ran = Measured::default().spent(Spent {
            cpu_s: 3.0,
            wall_s: 2.0,
        });
        assert_eq!(ran.generator_cores_busy(), Some(1.5));
        assert_eq!(Measured::default().generator_cores_busy(), None);
        let not_run = Measured::default().spent(Spent {
            cpu_s: 0.0,
            wall_s: 0.0,
        });
        assert_eq!(not_run.generator_cores_busy(), None);
    }
}
