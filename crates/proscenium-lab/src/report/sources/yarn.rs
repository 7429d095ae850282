//! Kjeldgaard, Yarn (2011), sec. 6.2.1, Fig. 6.4: a Ruby web server's throughput against
//! its number of prefork workers.

use super::{At, Comparison, Finding, Reference, Source, Verdict, at_label};
use crate::results::Results;
use crate::scenario::{Metric, YARNS_WORKERS};
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
            "proscenium:thread-pool:1/workers=N (each worker one thread, a request at a time)",
        ),
        (
            "—",
            "proscenium:prefork:N (each worker an event loop), judged when the line above is missing",
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

/// The rate at Yarn's step of each server of `family` (as `ServerSpec::workers` names
/// it), by its workers, in order.
fn family_line(results: &Results, family: &str) -> Vec<(f64, f64)> {
    let mut line: Vec<(f64, f64)> = results
        .servers
        .iter()
        .filter_map(|s| {
            let spec: ServerSpec = s.name.parse().ok()?;
            let (of, workers) = spec.workers()?;
            if of != family {
                return None;
            }
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
    // Yarn's own kind of worker when it ran; else workers that are event loops.
    let (line, kind) = match family_line(results, YARNS_WORKERS) {
        line if line.len() > 1 => (line, "ours, as Yarn's, served a request at a time"),
        _ => (
            family_line(results, "proscenium:prefork"),
            "Yarn's workers served a request at a time, ours each ran a loop",
        ),
    };
    let missing = ["proscenium:thread-pool:1/workers=N or proscenium:prefork:N for several N"];
    let (Some(&(_, first)), Some(&(most, last))) = (line.first(), line.last()) else {
        return Finding::missing(&missing);
    };
    let Some(&(at, peak)) = line.iter().max_by(|a, b| a.1.total_cmp(&b.1)) else {
        return Finding::missing(&missing);
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
             at {most:.0}: {kind}",
            last / peak
        ),
        rows,
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::recorded;

    /// A workers run of `rates` at Yarn's step, `(server, req/s)`, from a recorded run.
    fn workers_run(rates: &[(&str, f64)]) -> Results {
        let mut results = recorded("mixed");
        results.scenario = "workers".to_owned();
        let (server, step) = (results.servers[0].clone(), results.steps[0].clone());
        results.servers = rates
            .iter()
            .map(|&(name, _)| crate::results::ServerRun {
                name: name.to_owned(),
                ..server.clone()
            })
            .collect();
        results.steps = rates
            .iter()
            .map(|&(name, rps)| {
                let mut step = step.clone();
                (step.server, step.group, step.label) = (name.into(), GROUP.into(), STEP.into());
                (step.warmup, step.invalid) = (false, None);
                step.measured.achieved_rps = rps;
                step
            })
            .collect();
        results
    }

    #[test]
    fn issue39_yarns_own_kind_of_worker_is_judged_when_it_ran() {
        let loops = [
            ("proscenium:prefork:1", 900.0),
            ("proscenium:prefork:8", 880.0),
        ];
        let finding = judge(&workers_run(&loops));
        assert_eq!(finding.verdict, Verdict::Partly, "{finding:?}");
        assert!(
            finding.because.contains("ours each ran a loop"),
            "{finding:?}"
        );
        let yarns = [
            ("proscenium:thread-pool:1/workers=1", 100.0),
            ("proscenium:thread-pool:1/workers=8", 400.0),
            ("proscenium:thread-pool:1/workers=16", 500.0),
        ];
        let finding = judge(&workers_run(&[&loops[..], &yarns[..]].concat()));
        assert_eq!(finding.verdict, Verdict::Reproduced, "{finding:?}");
        assert!(finding.because.contains("as Yarn's"), "{finding:?}");
        assert_eq!(
            finding.rows[0].here,
            Some(100.0),
            "one worker of Yarn's kind"
        );
    }
}
