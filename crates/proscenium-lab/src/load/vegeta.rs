//! Open-loop load with `vegeta`: requests leave at the given rate whatever the server
//! does (vegeta starts as many workers as the rate needs), so a slow answer delays no
//! other request and latency is not hidden by coordinated omission. The lab reads
//! every request's result (`vegeta encode --to json`: its start, latency, status and
//! error) and does the accounting itself:
//!
//! - sent: one result a request that left the generator — fewer than rate × duration
//!   when the generator fell behind;
//! - the send window: the step's duration from the first send; achieved/s counts the
//!   2xx answers completed in it, and the drain (answers after it, and how long after
//!   the last came) is reported apart;
//! - latency over every sent request, a failure (no answer, or not 2xx) at the
//!   timeout, per path as well as in all; and the answered requests' own latency.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use super::latencies::Latencies;
use super::{Measured, TIMEOUT_MS, output, shown};
use crate::Error;
use crate::scenario::method_and_path;
use crate::tools::Tools;

pub(super) fn run(
    tools: &Tools,
    base: &str,
    targets: &[String],
    rate: u64,
    seconds: u64,
    cores: &str,
    scratch: &Path,
) -> Result<(String, Measured), Error> {
    let vegeta = tools.vegeta()?;
    let targets_file = write_targets(scratch, base, targets)?;
    let results = scratch.join("results.bin");
    let mut attack = Command::new("taskset");
    attack
        .args(["-c", cores])
        .arg(&vegeta)
        .args([
            "attack",
            "-rate",
            &format!("{rate}/1s"),
            "-duration",
            &format!("{seconds}s"),
        ])
        .args([
            "-timeout",
            &format!("{}s", TIMEOUT_MS / 1000.0),
            "-max-body",
            "0",
            "-keepalive=true",
            "-targets",
        ])
        .arg(&targets_file)
        .arg("-output")
        .arg(&results);
    let (_, spent) = output(&mut attack, "vegeta attack")?;
    let mut encode = Command::new(&vegeta);
    encode.args(["encode", "--to", "json"]).arg(&results);
    let (lines, _) = output(&mut encode, "vegeta encode")?;
    let measured = parse(&lines, seconds as f64, TIMEOUT_MS)?.spent(spent);
    Ok((shown(&attack), measured))
}

/// Writes vegeta's targets file into `scratch`: each of `targets` against `base`;
/// returns its path.
fn write_targets(scratch: &Path, base: &str, targets: &[String]) -> Result<PathBuf, Error> {
    let list: String = targets
        .iter()
        .map(|t| {
            let (method, path) = method_and_path(t);
            format!("{method} {base}{path}\n\n")
        })
        .collect();
    let file = scratch.join("targets.txt");
    std::fs::write(&file, list).map_err(Error::io("write vegeta's targets"))?;
    Ok(file)
}

#[derive(Deserialize)]
struct Result_ {
    code: u16,
    timestamp: String,
    /// Nanoseconds.
    latency: u64,
    error: String,
    url: String,
}

/// One request as the accounting needs it.
struct Request {
    /// Seconds since the epoch.
    start: f64,
    /// Milliseconds.
    latency: f64,
    class: String,
    path: String,
}

impl Request {
    fn read(line: &str) -> Result<Self, Error> {
        let r: Result_ =
            serde_json::from_str(line).map_err(|e| Error::Load(format!("vegeta result: {e}")))?;
        let start = seconds_since_epoch(&r.timestamp)
            .ok_or_else(|| Error::Load(format!("vegeta timestamp: {}", r.timestamp)))?;
        let class = match r.code {
            0 if r.error.contains("timeout") || r.error.contains("deadline") => {
                "timeouts".to_owned()
            }
            0 => "errors".to_owned(),
            code => format!("{}xx", code / 100),
        };
        let path = r
            .url
            .find("://")
            .and_then(|i| {
                r.url[i + 3..]
                    .find('/')
                    .map(|j| r.url[i + 3 + j..].to_owned())
            })
            .unwrap_or(r.url);
        Ok(Self {
            start,
            latency: r.latency as f64 / 1e6,
            class,
            path,
        })
    }

    fn is_answered(&self) -> bool {
        self.class.ends_with("xx")
    }

    fn is_ok(&self) -> bool {
        self.class == "2xx"
    }

    fn end(&self) -> f64 {
        self.start + self.latency / 1000.0
    }
}

/// The accounting of vegeta's results (one JSON object a line) for a step that sent
/// for `window_s` seconds, a failure counting at `timeout_ms`.
pub(crate) fn parse(lines: &str, window_s: f64, timeout_ms: f64) -> Result<Measured, Error> {
    let requests = lines
        .lines()
        .filter(|l| !l.trim().is_empty())
        .map(Request::read)
        .collect::<Result<Vec<_>, _>>()?;
    let first = requests
        .iter()
        .map(|r| r.start)
        .fold(f64::INFINITY, f64::min);
    let window_end = first + window_s;
    let t = Tally::of(&requests, window_end, timeout_ms);
    let answered_count = requests.iter().filter(|r| r.is_answered()).count() as u64;
    let sent = requests.len() as u64;
    Ok(Measured {
        sent: Some(sent),
        requests: answered_count,
        failed: Some(sent - requests.iter().filter(|r| r.is_ok()).count() as u64),
        window_s: Some(window_s),
        achieved_rps: t.ok_in_window as f64 / window_s,
        drain_s: Some(if sent > 0 {
            t.last_end - window_end
        } else {
            0.0
        }),
        drain_answers: Some(t.drain_answers),
        latency_ms: t.all.figures().unwrap_or_default(),
        answered_latency_ms: t.answered.figures(),
        latency_by_path_ms: if t.by_path.len() > 1 {
            t.by_path
                .iter()
                .filter_map(|(p, l)| Some(((*p).to_owned(), l.figures()?)))
                .collect()
        } else {
            BTreeMap::new()
        },
        statuses: t.statuses,
        generator_cpu_s: None,
        generator_wall_s: None,
    })
}

/// vegeta's results counted: every request's latency (a failure at the timeout),
/// the answered ones' own, by path, by status class, and what came within the send
/// window or after it.
struct Tally<'a> {
    all: Latencies,
    answered: Latencies,
    by_path: BTreeMap<&'a str, Latencies>,
    statuses: BTreeMap<String, u64>,
    ok_in_window: u64,
    drain_answers: u64,
    last_end: f64,
}

impl<'a> Tally<'a> {
    /// Counts `requests` whose send window ends at `window_end`, a failure at
    /// `timeout_ms`.
    fn of(requests: &'a [Request], window_end: f64, timeout_ms: f64) -> Self {
        let mut t = Self {
            all: Latencies::default(),
            answered: Latencies::default(),
            by_path: BTreeMap::new(),
            statuses: BTreeMap::new(),
            ok_in_window: 0,
            drain_answers: 0,
            last_end: window_end,
        };
        for r in requests {
            *t.statuses.entry(r.class.clone()).or_default() += 1;
            let counted = if r.is_ok() { r.latency } else { timeout_ms };
            t.all.push(counted, 1.0);
            t.by_path.entry(&r.path).or_default().push(counted, 1.0);
            if r.is_answered() {
                t.answered.push(r.latency, 1.0);
                t.last_end = t.last_end.max(r.end());
                if r.end() > window_end {
                    t.drain_answers += 1;
                } else if r.is_ok() {
                    t.ok_in_window += 1;
                }
            }
        }
        t
    }
}

/// Reads an RFC 3339 time such as `2026-11-22T18:04:05.123456789Z` or with an offset
/// (`+01:00`) into seconds since the epoch.
fn seconds_since_epoch(time: &str) -> Option<f64> {
    let (date, rest) = time.split_once('T')?;
    let mut ymd = date.split('-').map(|v| v.parse::<i64>().ok());
    let (y, m, d) = (ymd.next()??, ymd.next()??, ymd.next()??);
    let zone_at = rest.find(['Z', '+', '-'])?;
    let (clock, zone) = rest.split_at(zone_at);
    let mut hms = clock.split(':');
    let (h, min) = (
        hms.next()?.parse::<i64>().ok()?,
        hms.next()?.parse::<i64>().ok()?,
    );
    let s: f64 = hms.next()?.parse().ok()?;
    let offset = match zone {
        "Z" => 0,
        _ => {
            let sign = if zone.starts_with('-') { -1 } else { 1 };
            let (oh, om) = zone[1..].split_once(':')?;
            sign * (oh.parse::<i64>().ok()? * 3600 + om.parse::<i64>().ok()? * 60)
        }
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * (m + if m > 2 { -3 } else { 9 }) + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some((days * 86_400 + h * 3600 + min * 60 - offset) as f64 + s)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::results::Step;
    use crate::scenario::MIN_ANSWERS;

    /// vegeta 12.12's `encode --to json` of 2 s attacks on `testdata/slow_server.py`,
    /// as recorded (headers dropped to keep them small). 40/s on `/jitter?ms=2000`
    /// with `-timeout 1s`: 38 answers, 42 timeouts.
    const TIMEOUTS: &str = include_str!("testdata/vegeta-timeouts.jsonl");
    /// 100/s on `/slow?ms=100` with one worker (`-workers 1 -max-workers 1`): the
    /// generator fell behind and sent 16 of 200.
    const BEHIND: &str = include_str!("testdata/vegeta-behind.jsonl");
    /// 60/s on `/slow?ms=600` and `/fail` (503) in turn: answers keep coming 0.6 s after
    /// the last send.
    const DRAIN: &str = include_str!("testdata/vegeta-drain.jsonl");

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-5
    }

    #[test]
    fn timeouts_count_at_the_timeout_in_every_figure() {
        let m = parse(TIMEOUTS, 2.0, 1000.0).unwrap();
        assert_eq!((m.sent, m.requests, m.failed), (Some(80), 38, Some(42)));
        assert_eq!(m.statuses["timeouts"], 42);
        let l = m.latency_ms;
        assert_eq!(
            (l.p50, l.p90, l.p99, l.max),
            (1000.0, 1000.0, 1000.0, 1000.0)
        );
        assert!(close(l.mean, 786.251_353_312_5), "{}", l.mean);
        // 27 of the 38 answers came within the window, 11 in the drain.
        assert!(close(m.achieved_rps, 13.5));
        assert_eq!(m.drain_answers, Some(11));
        assert!(close(m.drain_s.unwrap(), 0.824_032_8), "{:?}", m.drain_s);
        let answered = m.answered_latency_ms.unwrap();
        assert!(answered.p99 < 1000.0 && answered.p50 <= answered.p90);
        assert!(
            m.requests < MIN_ANSWERS,
            "38 answers: no latency point is drawn"
        );
    }

    #[test]
    fn a_generator_that_fell_behind_shows_in_what_was_sent() {
        let m = parse(BEHIND, 2.0, TIMEOUT_MS).unwrap();
        assert_eq!((m.sent, m.failed), (Some(16), Some(0)));
        assert!(close(m.achieved_rps, 7.0));
        let l = m.latency_ms;
        assert_eq!(
            (l.p50, l.p90, l.p99),
            (143.991_55, 144.063_439, 148.003_118)
        );
        let share = m.sent.unwrap() as f64 / 200.0;
        let why = Step::invalid_for(Some(share), None).expect("16 of 200 sent is invalid");
        assert!(why.contains("sent 8 %"), "{why}");
    }

    #[test]
    fn the_drain_is_counted_apart_and_failed_statuses_at_the_timeout() {
        let m = parse(DRAIN, 2.0, TIMEOUT_MS).unwrap();
        assert_eq!((m.sent, m.requests, m.failed), (Some(120), 120, Some(60)));
        assert_eq!((m.statuses["2xx"], m.statuses["5xx"]), (60, 60));
        assert!(
            close(m.achieved_rps, 20.5),
            "41 of 60 answers in the window"
        );
        assert_eq!(m.drain_answers, Some(20));
        assert!(close(m.drain_s.unwrap(), 0.610_659_8), "{:?}", m.drain_s);
        assert_eq!(m.failed_share(), Some(0.5));
        let l = m.latency_ms;
        assert_eq!((l.p50, l.p90, l.p99), (649.005_537, TIMEOUT_MS, TIMEOUT_MS));
        let slow = m.latency_by_path_ms["/slow?ms=600"];
        assert!(slow.p50 > 600.0 && slow.max < 700.0, "{slow:?}");
        assert_eq!(m.latency_by_path_ms["/fail"].p50, TIMEOUT_MS);
    }

    #[test]
    fn times_with_offsets_count_from_the_epoch() {
        assert_eq!(seconds_since_epoch("1970-01-01T00:00:01Z"), Some(1.0));
        assert_eq!(
            seconds_since_epoch("2000-03-01T01:00:00+01:00"),
            Some(951_868_800.0)
        );
        assert!(seconds_since_epoch("yesterday").is_none());
    }
}
