//! Kjeldgaard, Yarn (2011), sec. 6.2.1, Fig. 6.4: a Ruby web server's throughput against
//! its number of prefork workers.

use super::{At, Comparison, Finding, Reference, Source, Verdict, at_label};
use crate::results::Results;
use crate::scenario::Metric;
use crate::servers::ServerSpec;

/// Yarn's load: the workers scenario's group and step of 20 connections.
const GROUP: &str = "20 connections (Yarn's)";
const STEP: &str = "20 connections";

pub(super) const WORKERS: Source = Source {
    figure: "Kjeldgaard 2011 (Yarn), Fig. 6.4",
    measured: "Yarn, a Ruby web server of prefork worker processes (each serving one request at \
        a time), serving a simple Rack application on a 4-core Linux machine with 8 GB; 1,000 \
        requests, 20 at a time, for each count of workers from 1 to 512 (above that the machine \
        bogged down). From about 250 requests/s at one worker to 875 at best (256 workers), 775 \
        on average.",
    stand_ins: &[
        (
            "Yarn, N prefork workers",
            "proscenium:prefork:N (each worker an event loop)",
        ),
        (
            "—",
            "httpd-prefork (Apache's prefork, a process a connection) as a reference",
        ),
    ],
    claim: "Throughput grows with the number of worker processes, from about 250 to about 800 \
        requests/s.",
    references: &[Reference {
        group: GROUP,
        metric: Metric::Rps,
        name: "Yarn Fig. 6.4 (1 and 256 workers)",
        at: At::Line(&[(1.0, 250.0), (256.0, 875.0)]),
    }],
    judge,
};

/// Yarn's shape (the most workers at 1.5× one worker or more, the peak past a worker
/// a core) or the other (a peak by two workers a core, 0.8 of it held at the most),
/// from the rate of one worker, the peak and where, and the rate of the most.
fn verdict(first: f64, (at, peak): (f64, f64), last: f64, cores: f64) -> Verdict {
    if last >= 1.5 * first && at > cores {
        Verdict::Reproduced
    } else if at <= 2.0 * cores && last >= 0.8 * peak {
        Verdict::Partly
    } else {
        Verdict::NotReproduced
    }
}

/// Each `proscenium:prefork` server's rate at Yarn's step, by its workers, in order.
fn prefork_line(results: &Results) -> Vec<(f64, f64)> {
    let mut line: Vec<(f64, f64)> = results
        .servers
        .iter()
        .filter_map(|s| {
            let spec: ServerSpec = s.name.parse().ok()?;
            let ("proscenium:prefork", workers) = spec.workers()? else {
                return None;
            };
            let rps = at_label(results, &s.name, GROUP, STEP, Metric::Rps)?;
            Some((workers as f64, rps))
        })
        .collect();
    line.sort_by(|a, b| a.0.total_cmp(&b.0));
    line
}

/// Yarn's claim holds when the most workers answer 1.5× one worker or more with the peak
/// past a worker a core; a line that peaks by two workers a core and then holds 0.8 of
/// it shows the other shape: workers that are event loops need no more than the cores.
fn judge(results: &Results) -> Finding {
    let line = prefork_line(results);
    let (Some(&(_, first)), Some(&(most, last))) = (line.first(), line.last()) else {
        return Finding::missing(&["proscenium:prefork:N for several N"]);
    };
    let Some(&(at, peak)) = line.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
        return Finding::missing(&["proscenium:prefork:N for several N"]);
    };
    let cores = results.machine.cores as f64;
    let rows = vec![
        Comparison::new("one worker", Some(250.0), Some(first), "req/s"),
        Comparison::new(
            format!("peak ({at:.0} workers)"),
            Some(875.0),
            Some(peak),
            "req/s",
        ),
        Comparison::new(format!("{most:.0} workers"), None, Some(last), "req/s"),
    ];
    Finding::new(
        verdict(first, (at, peak), last, cores),
        format!(
            "throughput peaks at {at:.0} workers on {cores:.0} cores and holds {:.2} of its peak \
             at {most:.0}: Yarn's workers served a request at a time, ours each run a loop",
            last / peak
        ),
        rows,
    )
}
