//! Closed-loop load with `wrk`. A Lua script the lab writes prints the summary as one
//! JSON line at the end (`done`), so nothing depends on wrk's human-readable table; for
//! pipelining it sends `depth` requests in one write.
//!
//! The line carries a quantile table of the answers' latency (every percent, every
//! tenth above 99, 99.99 and the maximum) rather than wrk's own p50/p90/p99: the lab
//! adds the requests that timed out or broke at the timeout and computes the figures
//! itself (`latencies.rs`). wrk stops at the end of its duration without waiting for
//! answers in flight, so every answer it counts is within the send window: there is no
//! drain to report.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde::Deserialize;

use super::latencies::Latencies;
use super::{Latency, Measured, TIMEOUT_MS, method_and_path, output, shown};
use crate::Error;
use crate::tools::Tools;

/// The summary line the script prints, after this marker.
const MARKER: &str = "LAB-WRK ";

const REPORT: &str = r#"
done = function(summary, latency, requests)
  local e = summary.errors
  local points = {}
  local function point(p) points[#points + 1] = string.format('[%g,%d]', p, latency:percentile(p)) end
  for p = 1, 99 do point(p) end
  for p = 991, 999 do point(p / 10) end
  point(99.99)
  points[#points + 1] = string.format('[100,%d]', latency.max)
  io.write(string.format(
    'LAB-WRK {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"mean_us":%.1f,"quantiles_us":[%s]}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, table.concat(points, ',')))
end
"#;

/// Sends `depth` requests per write; only written for pipelining, because a script
/// with a `request` function costs wrk a Lua call per request.
const PIPELINE: &str = r#"
init = function(args)
  local depth = tonumber(args[1])
  local batch = {}
  for i = 1, depth do batch[i] = wrk.format() end
  pipelined = table.concat(batch)
end
request = function() return pipelined end
"#;

/// Sends the requests given as `METHOD PATH` pairs after `--`, in turn.
const MIX: &str = r#"
init = function(args)
  mix = {}
  for i = 1, #args, 2 do mix[#mix + 1] = wrk.format(args[i], args[i + 1]) end
  turn = 0
end
request = function()
  turn = turn % #mix + 1
  return mix[turn]
end
"#;

#[derive(Deserialize)]
struct Summary {
    requests: u64,
    duration_us: u64,
    connect: u64,
    read: u64,
    write: u64,
    status: u64,
    timeout: u64,
    mean_us: f64,
    /// `(percentile, microseconds)`, ascending, the last at 100 (the maximum).
    quantiles_us: Vec<(f64, f64)>,
}

#[allow(clippy::too_many_arguments)]
pub(super) fn run(
    tools: &Tools,
    base: &str,
    targets: &[String],
    conns: usize,
    depth: usize,
    seconds: u64,
    cores: &str,
    scratch: &Path,
) -> Result<(String, Measured), Error> {
    let wrk = tools.need("wrk", "wrk")?;
    let first = targets
        .first()
        .ok_or_else(|| Error::Load("a closed-loop step without targets".to_owned()))?;
    let mixed = targets.len() > 1 || method_and_path(first).0 != "GET";
    if mixed && depth > 1 {
        return Err(Error::Load("pipelining sends one GET only".to_owned()));
    }
    let (name, script) = if mixed {
        ("mix.lua", MIX)
    } else if depth > 1 {
        ("pipeline.lua", PIPELINE)
    } else {
        ("report.lua", "")
    };
    let script_file = scratch.join(name);
    std::fs::write(&script_file, format!("{script}{REPORT}"))
        .map_err(Error::io("write the wrk script"))?;
    let mut command = Command::new("taskset");
    command
        .args(["-c", cores])
        .arg(wrk)
        .args([
            "-t1",
            &format!("-c{conns}"),
            &format!("-d{seconds}s"),
            "--timeout",
            &format!("{}s", TIMEOUT_MS / 1000.0),
            "-s",
        ])
        .arg(&script_file)
        .arg(format!("{base}{}", method_and_path(first).1));
    if mixed {
        command.arg("--");
        for target in targets {
            let (method, path) = method_and_path(target);
            command.args([method, path]);
        }
    } else if depth > 1 {
        command.args(["--", &depth.to_string()]);
    }
    let out = output(&mut command, "wrk")?;
    Ok((shown(&command), parse(&out, TIMEOUT_MS)?))
}

/// Reads the summary line out of wrk's output and accounts for it, a request that
/// timed out or broke counting at `timeout_ms`.
pub(crate) fn parse(out: &str, timeout_ms: f64) -> Result<Measured, Error> {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix(MARKER))
        .ok_or_else(|| Error::Load(format!("no summary in wrk's output: {out}")))?;
    let s: Summary =
        serde_json::from_str(line).map_err(|e| Error::Load(format!("wrk summary: {e}")))?;
    let ok = s.requests.saturating_sub(s.status);
    let broken = s.timeout + s.read + s.write;
    let sent = s.requests + broken;
    let seconds = s.duration_us as f64 / 1e6;
    let mut answered = Latencies::default();
    let mut below = 0.0;
    for &(p, us) in &s.quantiles_us {
        answered.push(us / 1000.0, (p - below) / 100.0 * s.requests as f64);
        below = p;
    }
    let mut all = answered.clone();
    all.push(timeout_ms, broken as f64);
    // The table's points stand for the answers between them; the mean is wrk's exact one.
    let answered_mean = s.mean_us / 1000.0;
    let mean = |n: u64, extra: f64| (answered_mean * s.requests as f64 + extra) / n as f64;
    Ok(Measured {
        sent: Some(sent),
        requests: s.requests,
        failed: Some(s.status + broken),
        window_s: Some(seconds),
        achieved_rps: if seconds > 0.0 {
            ok as f64 / seconds
        } else {
            0.0
        },
        drain_s: None,
        drain_answers: None,
        latency_ms: all
            .figures()
            .map(|l| Latency {
                mean: mean(sent, timeout_ms * broken as f64),
                ..l
            })
            .unwrap_or_default(),
        answered_latency_ms: answered.figures().map(|l| Latency {
            mean: mean(s.requests, 0.0),
            ..l
        }),
        latency_by_path_ms: BTreeMap::new(),
        statuses: BTreeMap::from([
            ("2xx".to_owned(), ok),
            ("non-2xx".to_owned(), s.status),
            ("errors".to_owned(), s.connect + s.read + s.write),
            ("timeouts".to_owned(), s.timeout),
        ]),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// wrk 4.1.0 with the lab's script, 8 connections for 2 s against
    /// `testdata/slow_server.py`'s `/ok`, as recorded.
    const KEEP_ALIVE: &str = include_str!("testdata/wrk-keep-alive.txt");
    /// 16 connections for 3 s against `/jitter?ms=2000` with `--timeout 1s`: 38 answers,
    /// 16 timeouts.
    const TIMEOUTS: &str = include_str!("testdata/wrk-timeouts.txt");

    #[test]
    fn the_summary_line_becomes_figures() {
        let m = parse(KEEP_ALIVE, TIMEOUT_MS).unwrap();
        assert_eq!((m.sent, m.requests, m.failed), (Some(335), 335, Some(0)));
        assert!((m.achieved_rps - 335.0 / 2.083_098).abs() < 1e-6);
        assert_eq!(m.window_s, Some(2.083_098));
        assert_eq!(m.drain_s, None, "wrk does not drain");
        let l = m.latency_ms;
        assert_eq!(
            (l.p50, l.p90, l.p99, l.max),
            (47.949, 56.996, 71.992, 85.86)
        );
        assert!((l.mean - 49.2547).abs() < 1e-9);
        assert_eq!(m.answered_latency_ms, Some(l), "nothing failed");
    }

    #[test]
    fn timeouts_count_at_the_timeout_beside_the_answers_own_latency() {
        let m = parse(TIMEOUTS, 1000.0).unwrap();
        assert_eq!((m.sent, m.requests, m.failed), (Some(54), 38, Some(16)));
        assert_eq!(m.statuses["timeouts"], 16);
        assert!((m.failed_share().unwrap() - 16.0 / 54.0).abs() < 1e-12);
        // 27 of 54 is the 71st percent of the 38 answers: the table's point at 72.
        let l = m.latency_ms;
        assert_eq!(
            (l.p50, l.p90, l.p99, l.max),
            (768.604, 1000.0, 1000.0, 1000.0)
        );
        assert!((l.mean - (593.1343 * 38.0 + 16_000.0) / 54.0).abs() < 1e-9);
        let answered = m.answered_latency_ms.unwrap();
        assert_eq!((answered.p50, answered.p99), (637.094, 966.594));
        assert!((m.achieved_rps - 38.0 / 3.027_148).abs() < 1e-6);
    }

    #[test]
    fn output_without_a_summary_is_an_error() {
        assert!(
            parse(
                "unable to connect to 127.0.0.1:8080 Connection refused",
                1.0
            )
            .is_err()
        );
    }
}
