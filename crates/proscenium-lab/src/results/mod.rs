//! What a run records: `results.json`, read back by the report and by anyone
//! comparing runs.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

mod finding;

pub use self::finding::{Comparison, Finding, Verdict};

use crate::calibration::Calibration;
use crate::load::Measured;
use crate::machine::Machine;
use crate::provenance::Provenance;
use crate::scenario::MIN_ANSWERS;

/// Everything one scenario's run recorded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Results {
    /// The scenario's name.
    pub scenario: String,
    /// The figure of the sources it reproduces.
    pub reproduces: String,
    /// `quick` or `full`.
    pub profile: String,
    /// When, from which commit, with which command, rounds and cores; `None` in the
    /// first reports (not recorded).
    #[serde(default)]
    pub provenance: Option<Provenance>,
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
    /// The verdict on the source's claim, as the report computed it from these steps
    /// (`report::judge` recomputes it from them; `None` before reports had one).
    #[serde(default)]
    pub finding: Option<Finding>,
}

impl Results {
    /// Judges every step again by the lab's rules of today, from what it recorded, so
    /// a report drawn again follows them; a step keeps a reason it was found invalid
    /// for. (Steps recorded before the lab kept their requests in flight and their
    /// generator's CPU are judged without Little's law.)
    pub(crate) fn judge_again(&mut self) {
        for step in &mut self.steps {
            if step.invalid.is_none() {
                step.invalid = step.judged();
            }
        }
    }
}

impl ServerRun {
    /// A server about to run on `cores`.
    pub(crate) fn new(name: String, cores: String) -> Self {
        Self {
            name,
            cores,
            command: None,
            skipped: None,
            collapsed: Vec::new(),
            calibration: None,
        }
    }
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
    /// What was measured of it before its steps, when the plan asked (saturation
    /// rates, the tuned requests' n): its steps in every round were planned from it.
    #[serde(default)]
    pub calibration: Option<Calibration>,
}

/// The share of the offered requests that must leave the generator for a step to count.
pub(crate) const MIN_SENT_SHARE: f64 = 0.95;

/// The most a closed loop's requests still waiting at its end may be of all its
/// requests: wrk's figures leave them out, and they are the longest waits.
pub(crate) const MAX_UNANSWERED_SHARE: f64 = 0.1;

/// The most a generator may be busy for a closed loop's shortfall in flight to be the
/// server's: busier, each connection's next request waits its turn in the generator
/// (one wrk thread reading 300 KB answers at 18,000 a second held 45 of its 100), and
/// Little's law cannot tell that wait from a server's.
const MOST_GENERATOR_BUSY: f64 = 0.5;

/// A closed loop's step, as its validity is judged.
#[derive(Debug, Clone, Copy)]
pub(crate) struct ClosedLoop {
    /// Requests answered.
    answers: u64,
    /// Requests it keeps in flight: connections × depth.
    in_flight: u64,
    /// Requests each connection keeps in flight.
    depth: u64,
    /// Answers a second and their mean response time in seconds.
    rate: f64,
    mean_s: Option<f64>,
    /// The generator's CPU ÷ (its run × its cores), when recorded.
    generator_busy: Option<f64>,
}

/// Why an open loop that sent `sent_share` of its offered requests is invalid: under
/// [`MIN_SENT_SHARE`], its generator fell behind.
fn fell_behind(sent_share: f64) -> Option<String> {
    (sent_share < MIN_SENT_SHARE).then(|| {
        format!(
            "the load generator sent {:.0} % of the offered requests (under {:.0} %): \
             it fell behind, so the server never saw the offered rate",
            sent_share * 100.0,
            MIN_SENT_SHARE * 100.0
        )
    })
}

impl ClosedLoop {
    /// Why the loop is too short for its clients: the requests still waiting at its end
    /// are over [`MAX_UNANSWERED_SHARE`] of all, and its latency leaves them out.
    fn too_short(&self) -> Option<String> {
        let Self {
            answers, in_flight, ..
        } = *self;
        let unanswered = in_flight as f64 / (answers + in_flight).max(1) as f64;
        (unanswered > MAX_UNANSWERED_SHARE).then(|| {
            format!(
                "{answers} answers to {in_flight} requests kept in flight: the {:.0} % still \
                 waiting at the end (over {:.0} %) are left out of a closed loop's latency, \
                 and they are the longest waits; the step is too short for its clients",
                unanswered * 100.0,
                MAX_UNANSWERED_SHARE * 100.0
            )
        })
    }

    /// Why the loop kept clients unserved: its answers show fewer requests in flight
    /// than it kept (Little's law), by over [`MAX_UNANSWERED_SHARE`], from a generator
    /// with time to spare; `None` when its mean or its generator's CPU is not recorded.
    ///
    /// Judged at depth 1 only: a pipelined connection's answers to one batch arrive
    /// apart, so Little's law sees the time-average of a batch still unanswered, short
    /// of its depth even when every connection is served (wrk pipelining 16 on a busy
    /// machine: 869 of 1,024, every connection answered).
    fn clients_unserved(&self) -> Option<String> {
        if self.depth > 1 {
            return None;
        }
        let (mean_s, busy) = (self.mean_s?, self.generator_busy?);
        let (rate, in_flight) = (self.rate, self.in_flight);
        let seen = rate * mean_s;
        let unseen = in_flight as f64 - seen;
        (unseen > MAX_UNANSWERED_SHARE * in_flight as f64 && busy <= MOST_GENERATOR_BUSY).then(
            || {
                format!(
                    "{rate:.0} answers a second × {:.0} ms mean = {seen:.0} requests in flight \
                     of the {in_flight} kept, from a generator {:.0} % busy: the other \
                     {unseen:.0} were kept waiting unserved (connections not accepted, or never \
                     taken in turn), and a request never answered is in no latency",
                    mean_s * 1e3,
                    busy * 100.0
                )
            },
        )
    }
}

impl Step {
    /// Why a step is invalid, or `None`: an open loop that sent `sent_share` of its
    /// offered load, under 95 %; a closed loop whose requests in flight (waiting when
    /// it stopped) are more than a tenth of them with its answers — its latency would
    /// leave out the longest waits (5,000 clients of a ~1,000/s page for 5 s: under
    /// one answer a client) — or whose answers show fewer requests in flight than it
    /// kept (Little's law: answers a second × mean response time), by more than a
    /// tenth, from a generator with time to spare: the rest were kept waiting
    /// unserved (connections not accepted, or never taken in turn), in no latency
    /// (httpd-worker at 5,000 clients: its 2,000 threads' worth).
    pub(crate) fn invalid_for(
        sent_share: Option<f64>,
        closed: Option<ClosedLoop>,
    ) -> Option<String> {
        sent_share.and_then(fell_behind).or_else(|| {
            let closed = closed?;
            closed.too_short().or_else(|| closed.clients_unserved())
        })
    }

    /// Why the step is invalid by the lab's rules (`invalid_for`), from what it
    /// recorded.
    pub(crate) fn judged(&self) -> Option<String> {
        let m = &self.measured;
        let closed = self.in_flight.map(|in_flight| ClosedLoop {
            answers: m.requests,
            in_flight,
            depth: self.depth.unwrap_or(1),
            rate: m
                .window_s
                .map_or(m.achieved_rps, |w| m.requests as f64 / w.max(1e-9)),
            mean_s: m.answered_latency_ms.as_ref().map(|l| l.mean / 1e3),
            generator_busy: self.generator_utilisation,
        });
        Self::invalid_for(self.sent_share, closed)
    }

    /// Whether latency and CPU figures rest on enough answers to be drawn.
    pub fn has_enough_answers(&self) -> bool {
        self.measured.requests >= MIN_ANSWERS
    }

    /// Whether an open-loop step overwhelmed the server: under half the offered rate
    /// answered with a 2xx within the send window, or a mean response time above a
    /// second (failures counting at the timeout, that is from about one in ten failed). A ramp goes no
    /// higher for that server — it would only add timeouts and minutes of draining
    /// (steps at the same rate, such as the `mixed` shares, still run).
    pub fn collapsed(&self) -> bool {
        self.offered_rps.is_some_and(|offered| {
            self.measured.achieved_rps < 0.5 * offered || self.measured.latency_ms.mean > 1000.0
        })
    }
}

/// One step of load against one server (`Default`: a step that recorded nothing, for
/// the literals that fill in what they know).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Step {
    /// The server's name.
    pub server: String,
    /// The plot it belongs to (a file size, a Fibonacci n, a route).
    pub group: String,
    /// What the step is (clients, rate, mix).
    pub label: String,
    /// Its place on the plot's x axis.
    pub x: f64,
    /// The round it ran in, from 1.
    #[serde(default = "first_round")]
    pub round: u32,
    /// Whether it was the warm-up before a server's steps: recorded, never counted.
    #[serde(default)]
    pub warmup: bool,
    /// Requests a second offered (open loop only).
    pub offered_rps: Option<f64>,
    /// Requests that left the generator ÷ the requests offered (open loop).
    #[serde(default)]
    pub sent_share: Option<f64>,
    /// Why the step is not a valid point (it is not drawn), or `None`.
    #[serde(default)]
    pub invalid: Option<String>,
    /// Requests a closed loop kept in flight (connections × depth); `None` for an open
    /// loop, a job, and steps recorded before the lab kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub in_flight: Option<u64>,
    /// Requests each connection of a closed loop keeps in flight (above 1: pipelined);
    /// `None` for an open loop, a job, and steps recorded before the lab kept it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub depth: Option<u64>,
    /// What the load generator measured.
    #[serde(flatten)]
    pub measured: Measured,
    /// Server CPU time (its whole process tree) over the step ÷ requests answered.
    pub cpu_us_per_request: Option<f64>,
    /// Server CPU time ÷ (the send window and drain × the cores given to the server):
    /// under 1, the server had time to spare and was not the bottleneck.
    #[serde(default)]
    pub server_utilisation: Option<f64>,
    /// The generator's CPU time ÷ (its run × the cores given to it): near 1, it held
    /// requests of its own (each connection's next one waiting its turn).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator_utilisation: Option<f64>,
    /// The most resident memory the server's process tree held during the step.
    pub peak_rss_kib: u64,
    /// The load generator's command line (a job's: its own).
    pub command: String,
    /// What a job run (the `cep` scenario) did, or `None` for a step of load.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job: Option<JobOutcome>,
}

/// One timed run of a job: what it says it did and what it cost.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct JobOutcome {
    /// Its own time, from the first line read to the last report (Table 1's).
    pub elapsed_s: f64,
    /// From start to exit, as the lab saw it: the job's time and its start-up.
    pub wall_s: f64,
    /// CPU time (user + system, every thread) from start to exit.
    pub cpu_s: f64,
    /// The alarms it raised: the same log must raise the same under every partition.
    pub alarms: u64,
    /// The entries it processed.
    pub entries: u64,
}

/// The round of steps recorded before rounds existed.
fn first_round() -> u32 {
    1
}

#[cfg(test)]
mod tests {
    use super::*;

    fn step(offered: Option<f64>, achieved: f64, mean_ms: f64) -> Step {
        Step {
            server: "s".into(),
            group: "g".into(),
            label: "l".into(),
            round: 1,
            offered_rps: offered,
            measured: Measured {
                achieved_rps: achieved,
                latency_ms: crate::load::Latency {
                    mean: mean_ms,
                    ..Default::default()
                },
                ..Default::default()
            },
            ..Step::default()
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

    fn closed(answers: u64, in_flight: u64, rate: f64, mean_ms: f64) -> Option<ClosedLoop> {
        Some(ClosedLoop {
            answers,
            in_flight,
            depth: 1,
            rate,
            mean_s: Some(mean_ms / 1e3),
            generator_busy: Some(0.05),
        })
    }

    #[test]
    fn a_closed_loop_too_short_for_its_clients_is_invalid() {
        assert!(
            Step::invalid_for(None, closed(9_000, 1_000, 900.0, 1_100.0)).is_none(),
            "10 % waiting"
        );
        // The dynamic page at 5,000 clients for 5 s: 4,837 answers.
        let why = Step::invalid_for(None, closed(4_837, 5_000, 967.0, 5_000.0)).unwrap();
        assert!(why.contains("51 % still waiting"), "{why}");
    }

    #[test]
    fn a_closed_loop_whose_answers_show_clients_unserved_is_invalid() {
        // httpd-worker at 5,000 clients (dynamic-lua, full): 3,671 a second, 540 ms.
        let why = Step::invalid_for(None, closed(169_130, 5_000, 3_671.0, 540.0)).unwrap();
        assert!(why.contains("= 1982 requests in flight"), "{why}");
        // Proscenium there: 4,914 a second, 1,002 ms — every client served.
        assert!(Step::invalid_for(None, closed(226_000, 5_000, 4_914.0, 1_002.0)).is_none());
        // Plaintext: 64 connections at 150,000 a second and 0.4 ms — 60 in flight.
        assert!(Step::invalid_for(None, closed(1_500_000, 64, 150_000.0, 0.4)).is_none());
    }

    #[test]
    fn a_pipelined_loop_is_not_judged_by_its_average_in_flight() {
        // 64 connections pipelining 16 on a busy machine: 340,536 a second, 2.55 ms.
        let mut pipelined = closed(1_718_800, 1_024, 340_536.0, 2.55).unwrap();
        pipelined.generator_busy = Some(0.37);
        assert!(
            Step::invalid_for(None, Some(pipelined)).is_some(),
            "at depth 1"
        );
        pipelined.depth = 16;
        assert!(Step::invalid_for(None, Some(pipelined)).is_none());
    }

    #[test]
    fn a_shortfall_in_flight_from_a_busy_generator_is_its_own() {
        // 300 KB files to 100 clients: 18,313 a second, 3 ms — 55 in flight, the other
        // 45 waiting for the one wrk thread to read them.
        let busy = |generator_busy| {
            let mut step = closed(55_386, 100, 18_313.0, 3.0).unwrap();
            step.generator_busy = generator_busy;
            Step::invalid_for(None, Some(step))
        };
        assert!(busy(Some(0.97)).is_none());
        assert!(busy(None).is_none(), "not recorded: not judged");
        let why = busy(Some(0.2)).unwrap();
        assert!(why.contains("generator 20 % busy"), "{why}");
    }

    #[test]
    fn a_step_is_judged_again_from_what_it_recorded() {
        let mut httpd = step(None, 3_746.0, 531.6);
        httpd.measured.requests = 172_722;
        httpd.measured.window_s = Some(46.1);
        httpd.measured.answered_latency_ms = Some(httpd.measured.latency_ms);
        let unrecorded = httpd.clone();
        (httpd.in_flight, httpd.generator_utilisation) = (Some(5_000), Some(0.04));
        let mut results: Results = serde_json::from_str(
            &std::fs::read_to_string(concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/src/report/testdata/static.json"
            ))
            .unwrap(),
        )
        .unwrap();
        results.steps = vec![httpd, unrecorded];
        results.judge_again();
        let why = results.steps[0].invalid.as_deref().unwrap_or_default();
        assert!(why.contains("of the 5000 kept"), "{why}");
        assert_eq!(results.steps[1].invalid, None);
    }

    #[test]
    fn a_step_that_sent_under_95_percent_is_invalid() {
        assert!(Step::invalid_for(Some(0.95), None).is_none());
        let why = Step::invalid_for(Some(0.48), None).unwrap();
        assert!(why.contains("48 %"), "{why}");
    }
}
