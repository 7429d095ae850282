//! Load: what a step sends, and what was measured while it ran.
//!
//! Closed loop (a fixed number of connections sending as fast as answers come) is
//! `wrk`; open loop (a fixed rate, whatever the answers do, so a slow server cannot
//! slow the load down and hide its own latency — coordinated omission) is `vegeta`.

mod vegeta;
mod wrk;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::Error;
use crate::tools::Tools;

/// What one step sends.
#[derive(Debug, Clone)]
pub(crate) enum Load {
    /// `conns` connections, each keeping `depth` requests in flight (pipelining above 1),
    /// sending `targets` in turn (see [`method_and_path`]).
    Closed {
        targets: Vec<String>,
        conns: usize,
        depth: usize,
        seconds: u64,
    },
    /// `rate` requests a second over `targets`, taken in turn (a target repeated k
    /// times is k shares of the mix).
    Open {
        targets: Vec<String>,
        rate: u64,
        seconds: u64,
    },
}

/// Splits a target, `/path` (a GET) or `METHOD /path`, into its method and path.
pub(crate) fn method_and_path(target: &str) -> (&str, &str) {
    target.split_once(' ').unwrap_or(("GET", target))
}

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
    /// The slowest answer.
    pub max: f64,
}

/// What a load generator reported for one step.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Measured {
    /// Requests answered (any status).
    pub requests: u64,
    /// Answers with a 2xx status per second of the step.
    pub achieved_rps: f64,
    /// Latency of answered requests.
    pub latency_ms: Latency,
    /// Latency per path, when the load mixed several.
    pub latency_by_path_ms: BTreeMap<String, Latency>,
    /// Counts by class: `2xx`, `4xx`, `5xx` (wrk: `non-2xx` only), `errors`, `timeouts`.
    pub statuses: BTreeMap<String, u64>,
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
                seconds,
            } => wrk::run(
                tools, base, targets, *conns, *depth, *seconds, cores, scratch,
            ),
            Self::Open {
                targets,
                rate,
                seconds,
            } => vegeta::run(tools, base, targets, *rate, *seconds, cores, scratch),
        }
    }

    /// The rate offered, for open loads.
    pub(crate) fn offered(&self) -> Option<f64> {
        match self {
            Self::Closed { .. } => None,
            Self::Open { rate, .. } => Some(*rate as f64),
        }
    }

    #[cfg(test)]
    pub(crate) fn seconds(&self) -> u64 {
        match self {
            Self::Closed { seconds, .. } | Self::Open { seconds, .. } => *seconds,
        }
    }
}

/// Runs a generator; returns its stdout, or an error with its stderr.
fn output(command: &mut std::process::Command, what: &str) -> Result<String, Error> {
    let out = command
        .output()
        .map_err(Error::io("run the load generator"))?;
    if !out.status.success() && out.stdout.is_empty() {
        return Err(Error::Load(format!(
            "{what} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// A command as a shell would show it.
fn shown(command: &std::process::Command) -> String {
    format!("{command:?}").replace('"', "")
}
