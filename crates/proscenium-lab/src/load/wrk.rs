//! Closed-loop load with `wrk`. A Lua script the lab writes prints the summary as one
//! JSON line at the end (`done`), so nothing depends on wrk's human-readable table; for
//! pipelining it sends `depth` requests in one write.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use serde::Deserialize;

use super::{Latency, Measured, method_and_path, output, shown};
use crate::Error;
use crate::tools::Tools;

/// The summary line the script prints, after this marker.
const MARKER: &str = "LAB-WRK ";

const REPORT: &str = r#"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'LAB-WRK {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,"mean_us":%.1f,"max_us":%d,"p50_us":%d,"p90_us":%d,"p99_us":%d}\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.max, latency:percentile(50), latency:percentile(90), latency:percentile(99)))
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
    max_us: f64,
    p50_us: f64,
    p90_us: f64,
    p99_us: f64,
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
            "10s",
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
    Ok((shown(&command), parse(&out)?))
}

/// Reads the summary line out of wrk's output.
pub(crate) fn parse(out: &str) -> Result<Measured, Error> {
    let line = out
        .lines()
        .find_map(|l| l.strip_prefix(MARKER))
        .ok_or_else(|| Error::Load(format!("no summary in wrk's output: {out}")))?;
    let s: Summary =
        serde_json::from_str(line).map_err(|e| Error::Load(format!("wrk summary: {e}")))?;
    let ok = s.requests.saturating_sub(s.status);
    let seconds = s.duration_us as f64 / 1e6;
    let ms = |us: f64| us / 1000.0;
    Ok(Measured {
        requests: s.requests,
        achieved_rps: if seconds > 0.0 {
            ok as f64 / seconds
        } else {
            0.0
        },
        latency_ms: Latency {
            mean: ms(s.mean_us),
            p50: ms(s.p50_us),
            p90: ms(s.p90_us),
            p99: ms(s.p99_us),
            max: ms(s.max_us),
        },
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

    /// wrk 4.1.0's output of a 2 s run with the report script, as recorded.
    const RECORDED: &str = "Running 2s test @ http://127.0.0.1:8080/plaintext
  1 threads and 64 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   612.41us  101.22us   3.05ms   83.17%
    Req/Sec   104.51k     3.08k  108.17k    75.00%
  207964 requests in 2.00s, 25.19MB read
Requests/sec: 103976.34
Transfer/sec:     12.59MB
LAB-WRK {\"requests\":207964,\"duration_us\":2000103,\"connect\":0,\"read\":0,\"write\":0,\"status\":12,\"timeout\":1,\"mean_us\":612.4,\"max_us\":3051,\"p50_us\":598,\"p90_us\":701,\"p99_us\":990}
";

    #[test]
    fn the_summary_line_becomes_figures() {
        let m = parse(RECORDED).unwrap();
        assert_eq!(m.requests, 207_964);
        assert!(
            (m.achieved_rps - 103_970.0).abs() < 10.0,
            "{}",
            m.achieved_rps
        );
        assert_eq!(m.latency_ms.p99, 0.99);
        assert_eq!(m.statuses["non-2xx"], 12);
        assert_eq!(m.statuses["timeouts"], 1);
    }

    #[test]
    fn output_without_a_summary_is_an_error() {
        assert!(parse("unable to connect to 127.0.0.1:8080 Connection refused").is_err());
    }
}
