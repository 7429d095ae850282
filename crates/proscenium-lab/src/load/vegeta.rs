//! Open-loop load with `vegeta`: requests leave at the given rate whatever the server
//! does (vegeta starts as many workers as the rate needs), so a slow answer delays no
//! other request and latency is not hidden by coordinated omission. The lab reads
//! every result (`vegeta encode --to json`) and computes the figures itself with
//! `hdrhistogram`, per path as well as in all.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use hdrhistogram::Histogram;
use serde::Deserialize;

use super::{Latency, Measured, method_and_path, output, shown};
use crate::Error;
use crate::tools::Tools;

/// How long one request may take before vegeta gives up on it.
const TIMEOUT: &str = "10s";

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
    let list: String = targets
        .iter()
        .map(|t| {
            let (method, path) = method_and_path(t);
            format!("{method} {base}{path}\n\n")
        })
        .collect();
    let targets_file = scratch.join("targets.txt");
    let results = scratch.join("results.bin");
    std::fs::write(&targets_file, list).map_err(Error::io("write vegeta's targets"))?;
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
            TIMEOUT,
            "-max-body",
            "0",
            "-keepalive=true",
            "-targets",
        ])
        .arg(&targets_file)
        .arg("-output")
        .arg(&results);
    output(&mut attack, "vegeta attack")?;
    let mut encode = Command::new(&vegeta);
    encode.args(["encode", "--to", "json"]).arg(&results);
    let lines = output(&mut encode, "vegeta encode")?;
    Ok((shown(&attack), parse(&lines)?))
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

/// Figures from vegeta's results, one JSON object a line.
pub(crate) fn parse(lines: &str) -> Result<Measured, Error> {
    let mut all = new_histogram()?;
    let mut by_path: BTreeMap<String, Histogram<u64>> = BTreeMap::new();
    let mut statuses: BTreeMap<String, u64> = BTreeMap::new();
    let (mut first, mut last) = (f64::MAX, f64::MIN);
    let mut requests = 0;
    for line in lines.lines().filter(|l| !l.trim().is_empty()) {
        let r: Result_ =
            serde_json::from_str(line).map_err(|e| Error::Load(format!("vegeta result: {e}")))?;
        let start = seconds_since_epoch(&r.timestamp)
            .ok_or_else(|| Error::Load(format!("vegeta timestamp: {}", r.timestamp)))?;
        first = first.min(start);
        last = last.max(start + r.latency as f64 / 1e9);
        let class = match r.code {
            0 if r.error.contains("timeout") || r.error.contains("deadline") => {
                "timeouts".to_owned()
            }
            0 => "errors".to_owned(),
            code => format!("{}xx", code / 100),
        };
        *statuses.entry(class).or_default() += 1;
        if r.code == 0 {
            continue;
        }
        requests += 1;
        let micros = (r.latency / 1000).max(1);
        all.saturating_record(micros);
        let path = r.url.find("://").and_then(|i| {
            r.url[i + 3..]
                .find('/')
                .map(|j| r.url[i + 3 + j..].to_owned())
        });
        let histogram = match by_path.entry(path.unwrap_or(r.url)) {
            std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
            std::collections::btree_map::Entry::Vacant(e) => e.insert(new_histogram()?),
        };
        histogram.saturating_record(micros);
    }
    let ok = statuses.get("2xx").copied().unwrap_or(0);
    let span = last - first;
    Ok(Measured {
        requests,
        achieved_rps: if span > 0.0 { ok as f64 / span } else { 0.0 },
        latency_ms: latency(&all),
        latency_by_path_ms: if by_path.len() > 1 {
            by_path
                .iter()
                .map(|(p, h)| (p.clone(), latency(h)))
                .collect()
        } else {
            BTreeMap::new()
        },
        statuses,
    })
}

fn new_histogram() -> Result<Histogram<u64>, Error> {
    Histogram::new_with_bounds(1, 3_600_000_000, 3).map_err(|e| Error::Load(e.to_string()))
}

fn latency(h: &Histogram<u64>) -> Latency {
    let ms = |us: u64| us as f64 / 1000.0;
    Latency {
        mean: h.mean() / 1000.0,
        p50: ms(h.value_at_quantile(0.50)),
        p90: ms(h.value_at_quantile(0.90)),
        p99: ms(h.value_at_quantile(0.99)),
        max: ms(h.max()),
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

    /// vegeta 12.12's `encode --to json` of a mixed attack, as recorded (bodies off).
    const RECORDED: &str = r#"{"attack":"","seq":0,"code":200,"timestamp":"2026-11-22T18:04:05.000000000Z","latency":2000000,"bytes_out":0,"bytes_in":0,"error":"","body":null,"method":"GET","url":"http://127.0.0.1:8080/fib?n=20","headers":{"Content-Type":["text/plain"]}}
{"attack":"","seq":1,"code":200,"timestamp":"2026-11-22T18:04:05.500000000Z","latency":40000000,"bytes_out":0,"bytes_in":0,"error":"","body":null,"method":"GET","url":"http://127.0.0.1:8080/fib?n=35","headers":{}}
{"attack":"","seq":2,"code":503,"timestamp":"2026-11-22T18:04:06.000000000Z","latency":1000000,"bytes_out":0,"bytes_in":0,"error":"503 Service Unavailable","body":null,"method":"GET","url":"http://127.0.0.1:8080/fib?n=20","headers":{}}
{"attack":"","seq":3,"code":0,"timestamp":"2026-11-22T18:04:06.500000000Z","latency":10000000000,"bytes_out":0,"bytes_in":0,"error":"Get \"http://127.0.0.1:8080/fib?n=35\": context deadline exceeded (Client.Timeout exceeded while awaiting headers)","body":null,"method":"GET","url":"http://127.0.0.1:8080/fib?n=35","headers":null}
"#;

    #[test]
    fn results_become_figures_per_path_and_in_all() {
        let m = parse(RECORDED).unwrap();
        assert_eq!(m.requests, 3, "the timed-out request has no latency");
        assert_eq!(m.statuses["2xx"], 2);
        assert_eq!(m.statuses["5xx"], 1);
        assert_eq!(m.statuses["timeouts"], 1);
        // Two answers in the 11.5 s from the first start to the timeout's end.
        assert!(
            (m.achieved_rps - 2.0 / 11.5).abs() < 1e-3,
            "{}",
            m.achieved_rps
        );
        assert!((m.latency_ms.max - 40.0).abs() < 0.1);
        assert!((m.latency_by_path_ms["/fib?n=35"].p50 - 40.0).abs() < 0.1);
        assert!((m.latency_by_path_ms["/fib?n=20"].p50 - 1.0).abs() < 0.1);
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
