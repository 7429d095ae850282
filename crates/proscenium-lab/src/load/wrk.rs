//! Closed-loop load with `wrk`. A Lua script the lab writes prints the summary as one
//! JSON line at the end (`done`), so nothing depends on wrk's human-readable table; for
//! pipelining it sends `depth` requests in one write.
//!
//! The line carries a quantile table of the answers' latency (every percent, every
//! tenth above 99, 99.99 and the maximum) rather than wrk's own p50/p90/p99: the lab
//! adds the requests that timed out or broke at the timeout and computes the figures
//! itself (`latencies.rs`; how wrk counts a late answer is at [`parse`]). wrk stops at the end of its duration without waiting for
//! answers in flight, so every answer it counts is within the send window: there is no
//! drain to report.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use super::latencies::Latencies;
use super::{Latency, Measured, TIMEOUT_MS, output, shown};
use crate::Error;
use crate::scenario::method_and_path;
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
    threads: usize,
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
    let script = write_script(scratch, mixed, depth)?;
    let mut command = Command::new("taskset");
    command
        .args(["-c", cores])
        .arg(wrk)
        .args([
            &format!("-t{threads}"),
            &format!("-c{conns}"),
            &format!("-d{seconds}s"),
            "--timeout",
            &format!("{}s", TIMEOUT_MS / 1000.0),
            "-s",
        ])
        .arg(&script)
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
    let (out, spent) = output(&mut command, "wrk")?;
    Ok((shown(&command), parse(&out, TIMEOUT_MS)?.spent(spent)))
}

/// Writes wrk's script into `scratch`: the mix's (several targets or methods), the
/// pipeline's (`depth` above 1) or the report alone, each ending in the report of the
/// summary line; returns its path.
fn write_script(scratch: &Path, mixed: bool, depth: usize) -> Result<PathBuf, Error> {
    let (name, script) = if mixed {
        ("mix.lua", MIX)
    } else if depth > 1 {
        ("pipeline.lua", PIPELINE)
    } else {
        ("report.lua", "")
    };
    let file = scratch.join(name);
    std::fs::write(&file, format!("{script}{REPORT}"))
        .map_err(Error::io("write the wrk script"))?;
    Ok(file)
}

/// Reads the summary line out of wrk's output and accounts for it, a request that
/// timed out or broke counting at `timeout_ms`.
///
/// wrk counts an answer later than its timeout twice — as a request and as a
/// timeout — and leaves it out of its latency histogram (which holds values up to the
/// timeout only); a timeout beyond the requests is a connection that never answered.
/// So the histogram holds `requests − late` answers, and a late answer is a failure,
/// as under vegeta, which gives up on it.
pub(crate) fn parse(out: &str, timeout_ms: f64) -> Result<Measured, Error> {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix(MARKER))
        .ok_or_else(|| Error::Load(format!("no summary in wrk's output: {out}")))?;
    let s: Summary =
        serde_json::from_str(line).map_err(|e| Error::Load(format!("wrk summary: {e}")))?;
    let late = s.timeout.min(s.requests);
    let in_time = s.requests - late;
    let broken = s.read + s.write;
    let at_timeout = s.timeout + broken;
    let sent = in_time + at_timeout;
    let ok = in_time.saturating_sub(s.status);
    let seconds = s.duration_us as f64 / 1e6;
    let (latency_ms, answered_latency_ms) = latencies(&s, in_time, at_timeout, timeout_ms);
    Ok(Measured {
        sent: Some(sent),
        requests: s.requests,
        failed: Some((s.status + at_timeout).min(sent)),
        window_s: Some(seconds),
        achieved_rps: if seconds > 0.0 {
            ok as f64 / seconds
        } else {
            0.0
        },
        drain_s: None,
        drain_answers: None,
        latency_ms,
        answered_latency_ms,
        latency_by_path_ms: BTreeMap::new(),
        statuses: BTreeMap::from([
            ("2xx".to_owned(), ok),
            ("non-2xx".to_owned(), s.status),
            ("errors".to_owned(), s.connect + broken),
            ("timeouts".to_owned(), s.timeout),
        ]),
        generator_cpu_s: None,
        generator_wall_s: None,
    })
}

/// The latency of every sent request (`at_timeout` of them failed, counting at
/// `timeout_ms`) and of the `in_time` answered alone, from the summary's quantile
/// table; the table's points stand for the answers between them, the mean is wrk's
/// exact one.
fn latencies(
    s: &Summary,
    in_time: u64,
    at_timeout: u64,
    timeout_ms: f64,
) -> (Latency, Option<Latency>) {
    let mut answered = Latencies::default();
    let mut below = 0.0;
    for &(p, us) in &s.quantiles_us {
        answered.push(us / 1000.0, (p - below) / 100.0 * in_time as f64);
        below = p;
    }
    let mut all = answered.clone();
    all.push(timeout_ms, at_timeout as f64);
    let in_time_ms = s.mean_us / 1000.0 * in_time as f64;
    let with_mean = |l: Latency, sum: f64, n: u64| Latency {
        mean: sum / n as f64,
        ..l
    };
    let sent = in_time + at_timeout;
    let every = all
        .figures()
        .map(|l| with_mean(l, in_time_ms + timeout_ms * at_timeout as f64, sent))
        .unwrap_or_default();
    let answered = answered
        .figures()
        .map(|l| with_mean(l, in_time_ms, in_time));
    (every, answered)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// wrk 4.1.0 with the lab's script, 8 connections for 2 s against
    /// `testdata/slow_server.py`'s `/ok`, as recorded.
    const KEEP_ALIVE: &str = include_str!("testdata/wrk-keep-alive.txt");
    /// 16 connections for 3 s against `/jitter?ms=2000` with `--timeout 1s`: 38 answers,
    /// 16 of them late (timeouts).
    const TIMEOUTS: &str = include_str!("testdata/wrk-timeouts.txt");
    /// 4 connections for 4 s against `/slow?ms=1500` with `--timeout 1s`: every answer
    /// late.
    const ALL_LATE: &str = include_str!("testdata/wrk-all-late.txt");

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
    fn late_answers_count_at_the_timeout_beside_the_answers_own_latency() {
        let m = parse(TIMEOUTS, 1000.0).unwrap();
        // 38 answers, 16 of them after the 1 s timeout: 22 in wrk's histogram.
        assert_eq!((m.sent, m.requests, m.failed), (Some(38), 38, Some(16)));
        assert_eq!(m.statuses["timeouts"], 16);
        assert!((m.failed_share().unwrap() - 16.0 / 38.0).abs() < 1e-12);
        // The 19th of 38 is the 86.4th percent of the 22 in time: the table's point at 87.
        let l = m.latency_ms;
        assert_eq!(
            (l.p50, l.p90, l.p99, l.max),
            (836.902, 1000.0, 1000.0, 1000.0)
        );
        assert!((l.mean - (593.1343 * 22.0 + 16_000.0) / 38.0).abs() < 1e-9);
        let answered = m.answered_latency_ms.unwrap();
        assert_eq!((answered.p50, answered.p99), (637.094, 966.594));
        assert!((m.achieved_rps - 22.0 / 3.027_148).abs() < 1e-6);
        assert!(m.requests < crate::scenario::MIN_ANSWERS, "not drawn");
    }

    #[test]
    fn answers_all_late_are_failures_not_zeros() {
        // wrk's own table reads 0 µs at every percentile: its histogram is empty.
        let m = parse(ALL_LATE, 1000.0).unwrap();
        assert_eq!((m.sent, m.failed, m.achieved_rps), (Some(8), Some(8), 0.0));
        let l = m.latency_ms;
        assert_eq!((l.p50, l.p99, l.mean), (1000.0, 1000.0, 1000.0));
        assert_eq!(m.answered_latency_ms, None);
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
