//! Per-server calibration: values the lab measures once for each server — in its first
//! turn, after its start and warm-up, before its steps — records in its
//! [`ServerRun`](crate::ServerRun), and plans that server's steps from in every round,
//! so that all rounds offer a server the same points and a median is over like points.
//!
//! A plan asks for nothing, for a saturation, or for a request of equal cost, by its
//! steps alone:
//! - a step with a `share_of_saturation` offers that share of the server's saturation
//!   rate for the step's group: 2xx answers a second under a closed-loop probe of the
//!   group's target (the probe is recorded as a step of the [`SATURATION`] group);
//! - a target that is a [`Tuning`]'s ([`HEAVY`]'s `/fib?n={heavy-n}`, [`PAGE`]'s
//!   `/dynamic?n={page-n}`) gets, per server, the n whose lone request costs that server
//!   the tuning's time: the same work on every runtime, whatever its language.
//!
//! Measuring is the runner's (`run/calibrate.rs`); this module says what is recorded and
//! how a step is resolved from it.

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

use crate::results::MIN_ANSWERS;
use crate::scenario::{Plan, StepPlan};

/// The group of the saturation probes' steps, and of their bar plot.
pub(crate) const SATURATION: &str = "saturation";

/// Connections of a saturation probe: 64, 32 a core on this 2-core machine. CPU-bound
/// work saturates a server once each core has a request to run, and the rest hide the
/// generator's round trip; many more would measure how a thread-per-connection server
/// copes with hundreds of threads rather than the rate it sustains.
pub(crate) const PROBE_CONNECTIONS: usize = 64;
/// A probe's seconds: enough for thousands of answers at the rates probed, short
/// beside the ramp it plans.
const PROBE_SECONDS: u64 = 3;

/// A request whose size the lab chooses per server, so that it costs every server the
/// same time: a plan writes its `target`, placeholder included, and each server's steps
/// get the n calibrated for it.
#[derive(Debug)]
pub(crate) struct Tuning {
    /// What the report calls it.
    pub(crate) what: &'static str,
    /// The target as a plan writes it.
    pub(crate) target: &'static str,
    placeholder: &'static str,
    /// The request before the server is calibrated (a warm-up's): the same code, at
    /// the server's own default or a small n.
    untuned: &'static str,
    /// The time one request alone should take, in milliseconds.
    pub(crate) cost_ms: f64,
    /// Requests timed at each n; the median is its cost.
    pub(crate) timings: usize,
    /// How the n is looked for.
    pub(crate) search: Search,
    slot: Slot,
}

/// How a [`Tuning`]'s n is looked for.
#[derive(Debug)]
pub(crate) enum Search {
    /// Each n timed, ascending, until one costs more than the target; the nearest in
    /// ratio is chosen. For a cost geometric in n (recursive Fibonacci), where a line
    /// through two timings would be far off.
    Ascending(RangeInclusive<u32>),
    /// n = 0 and n = `probe` timed; the cost is linear in n (a loop), so the n on that
    /// line at the target is chosen, at most `max`, and timed once more for the record.
    Linear { probe: u32, max: u32 },
}

/// Which of a [`Calibration`]'s fields holds a tuning's result.
#[derive(Debug, Clone, Copy)]
enum Slot {
    Heavy,
    Page,
}

/// Node.Scala Fig. 1b's heavy request: recursive fib(n) costing 200 ms.
///
/// Node.Scala's Fig. 1b offers 100 requests/s; at 5 % heavy (5 a second) its blocking
/// Node.js fell to 24.4 messages/s, so its heavy request saturated the one loop at 5 %
/// heavy: it cost at least 1 s ÷ 5 = 200 ms. The fallen throughput suggests more
/// (1 ÷ (0.05 × 24.4) ≈ 0.8 s), but at 0.8 s 5 % heavy is 4 s of work a second, past
/// every server on this 2-core machine; at 200 ms it saturates one loop exactly at
/// 5 % (as the source's did at the least), two loops at 10 % and every server at 15 %.
///
/// n from 30 to 40 (the most the lab's servers take): each n costs about 1.6 times the
/// one before, so the cost chosen is within a factor of √1.6 ≈ 1.27 of the target
/// (fib(40) at 243 ms against fib(39) at 143 ms on one run here): equal work to that
/// grain, not to the millisecond.
pub(crate) const HEAVY: Tuning = Tuning {
    what: "heavy request",
    target: "/fib?n={heavy-n}",
    placeholder: "{heavy-n}",
    untuned: "/fib?n=30",
    cost_ms: 200.0,
    timings: 3,
    search: Search::Ascending(30..=40),
    slot: Slot::Heavy,
};

/// Leda Fig. 9c's dynamic page: a loop of n iterations costing 1 ms, a page of realistic
/// cost. Leda ran the same Lua script in its server and in Apache; here each server
/// runs the loop in its own language (Apache httpd in mod_lua, where 1,250,000
/// iterations cost about ten times what they cost Rust), so only a per-server n makes
/// the page the same work. Probed at 1,250,000 (about 1 ms in lab-app); at most
/// 100,000,000, the most the servers' `/dynamic` takes. Timed 21 times an n: a 1 ms
/// request is within a loopback round trip's noise of its neighbours.
pub(crate) const PAGE: Tuning = Tuning {
    what: "dynamic page",
    target: "/dynamic?n={page-n}",
    placeholder: "{page-n}",
    untuned: "/dynamic",
    cost_ms: 1.0,
    timings: 21,
    search: Search::Linear {
        probe: 1_250_000,
        max: 100_000_000,
    },
    slot: Slot::Page,
};

/// Every tuning a plan may ask for.
pub(crate) const TUNINGS: [&Tuning; 2] = [&HEAVY, &PAGE];

impl Tuning {
    /// The target with `n` in place of the placeholder.
    pub(crate) fn target_for(&self, n: u32) -> String {
        self.target.replace(self.placeholder, &n.to_string())
    }

    /// Chooses the n whose cost is the nearest to the target in ratio from `timed_ms`
    /// (each n with its cost, as [`Search::Ascending`] times them).
    pub(crate) fn nearest(&self, timed_ms: Vec<(u32, f64)>) -> Option<TunedRequest> {
        let distance = |ms: f64| (ms.max(1e-3) / self.cost_ms).ln().abs();
        let &(n, cost_ms) = timed_ms
            .iter()
            .min_by(|a, b| distance(a.1).total_cmp(&distance(b.1)))?;
        Some(TunedRequest {
            n,
            cost_ms,
            timed_ms,
        })
    }

    /// The n on the line through `(0, at_zero_ms)` and `(probe, at_probe_ms)` where a
    /// request costs the target, within `1..=max`; `None` when the cost does not grow
    /// with n (the loop is not what the time measures).
    pub(crate) fn on_the_line(
        &self,
        at_zero_ms: f64,
        probe: u32,
        at_probe_ms: f64,
        max: u32,
    ) -> Option<u32> {
        let per_iteration = (at_probe_ms - at_zero_ms) / f64::from(probe);
        if per_iteration <= 0.0 || !per_iteration.is_finite() {
            return None;
        }
        let n = ((self.cost_ms - at_zero_ms) / per_iteration).round();
        Some(n.clamp(1.0, f64::from(max)) as u32)
    }
}

/// What was measured of one server before its steps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Per group, the 2xx answers a second the server sustained under the closed-loop
    /// probe of the group's target.
    #[serde(default)]
    pub saturation_rps: Vec<(String, f64)>,
    /// The heavy request chosen for the server (mixed's `/fib?n=`), when the plan
    /// mixes one in.
    #[serde(default)]
    pub heavy: Option<TunedRequest>,
    /// The dynamic page's iterations chosen for the server (`/dynamic?n=`), when the plan
    /// asks for the page.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub page: Option<TunedRequest>,
}

/// The n of a tuned request for one server, and what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TunedRequest {
    /// The n chosen.
    pub n: u32,
    /// Its median time for one request alone, in milliseconds.
    pub cost_ms: f64,
    /// Every n timed, with its median time in milliseconds.
    pub timed_ms: Vec<(u32, f64)>,
}

impl Calibration {
    /// The saturation rate measured for `group`.
    pub fn saturation_of(&self, group: &str) -> Option<f64> {
        self.saturation_rps
            .iter()
            .find_map(|(g, rps)| (g == group).then_some(*rps))
    }

    /// The request tuned for `tuning`, if measured.
    pub(crate) fn tuned(&self, tuning: &Tuning) -> Option<&TunedRequest> {
        match tuning.slot {
            Slot::Heavy => self.heavy.as_ref(),
            Slot::Page => self.page.as_ref(),
        }
    }

    /// Records the request tuned for `tuning`.
    pub(crate) fn set_tuned(&mut self, tuning: &Tuning, tuned: TunedRequest) {
        let slot = match tuning.slot {
            Slot::Heavy => &mut self.heavy,
            Slot::Page => &mut self.page,
        };
        *slot = Some(tuned);
    }

    /// One line for the report's servers table: the saturations and the tuned requests.
    pub fn describe(&self) -> String {
        let saturations = self
            .saturation_rps
            .iter()
            .map(|(group, rps)| format!("{group} saturates at {}/s", thousands(*rps as u64)));
        let tuned = TUNINGS.into_iter().filter_map(|tuning| {
            let tuned = self.tuned(tuning)?;
            Some(format!(
                "{} {} costs {} (target {})",
                tuning.what,
                tuning.target_for(tuned.n),
                milliseconds(tuned.cost_ms),
                milliseconds(tuning.cost_ms)
            ))
        });
        saturations.chain(tuned).collect::<Vec<_>>().join("; ")
    }
}

/// Milliseconds to the precision that matters beside a target: whole ones from 10 up.
fn milliseconds(ms: f64) -> String {
    if ms >= 10.0 {
        format!("{ms:.0} ms")
    } else {
        format!("{ms:.2} ms")
    }
}

/// Whether `plan` asks for any calibration.
pub(crate) fn is_asked(plan: &Plan) -> bool {
    !probes(plan).is_empty() || !tunings_asked(plan).is_empty()
}

/// The tunings whose target some step of `plan` holds.
pub(crate) fn tunings_asked(plan: &Plan) -> Vec<&'static Tuning> {
    TUNINGS
        .into_iter()
        .filter(|tuning| {
            plan.steps
                .iter()
                .any(|s| s.load.targets().iter().any(|t| t == tuning.target))
        })
        .collect()
}

/// The saturation probes `plan` asks for: one closed-loop step on the target of each
/// group whose steps offer a share of the saturation, labelled with that group.
pub(crate) fn probes(plan: &Plan) -> Vec<StepPlan> {
    let mut probes: Vec<StepPlan> = Vec::new();
    for step in plan
        .steps
        .iter()
        .filter(|s| s.share_of_saturation.is_some())
    {
        if !probes.iter().any(|p| p.label == step.group) {
            probes.push(StepPlan {
                group: SATURATION.to_owned(),
                label: step.group.clone(),
                x: 0.0,
                load: step.load.as_probe(PROBE_SECONDS),
                share_of_saturation: None,
            });
        }
    }
    probes
}

impl StepPlan {
    /// The step as run against a server calibrated as `calibration`: its rate (and
    /// label and x) from the group's saturation, its tuned requests' n filled in; or
    /// `None` when the calibration lacks what the step needs.
    ///
    /// A step at a share of the saturation lasts long enough to offer [`MIN_ANSWERS`]
    /// requests, or its latency would not be drawn (a quarter of a 100/s saturation
    /// sends 50 in 2 s).
    pub(crate) fn for_server(&self, calibration: &Calibration) -> Option<Self> {
        let mut step = self.clone();
        if let Some(share) = self.share_of_saturation {
            let rate = (share * calibration.saturation_of(&self.group)?).round() as u64;
            let rate = rate.max(1);
            step.label = format!("{} · {}/s", self.label, thousands(rate));
            step.x = rate as f64;
            step.load = self.load.at_rate(rate, MIN_ANSWERS.div_ceil(rate));
            step.share_of_saturation = None;
        }
        for tuning in TUNINGS {
            if step.load.targets().iter().any(|t| t == tuning.target) {
                let tuned = tuning.target_for(calibration.tuned(tuning)?.n);
                for target in step.load.targets_mut() {
                    if target == tuning.target {
                        target.clone_from(&tuned);
                    }
                }
            }
        }
        Some(step)
    }
}

impl StepPlan {
    /// The step before its server's calibration, each tuned request in its untuned
    /// form, for a warm-up to run: `None` for a step at a share of the saturation,
    /// whose rate is not known yet.
    pub(crate) fn untuned(&self) -> Option<Self> {
        if self.share_of_saturation.is_some() {
            return None;
        }
        let mut step = self.clone();
        for target in step.load.targets_mut() {
            if let Some(tuning) = TUNINGS.into_iter().find(|t| t.target == target) {
                tuning.untuned.clone_into(target);
            }
        }
        Some(step)
    }
}

/// `n` with a comma between thousands: 12,345.
pub(crate) fn thousands(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Profile;

    fn calibrated() -> Calibration {
        Calibration {
            saturation_rps: vec![("fib(1000)".into(), 2_000.0)],
            heavy: HEAVY.nearest(vec![(38, 90.0), (39, 150.0), (40, 240.0)]),
            page: Some(TunedRequest {
                n: 1_480_000,
                cost_ms: 1.02,
                timed_ms: vec![(0, 0.15), (1_250_000, 0.88), (1_480_000, 1.02)],
            }),
        }
    }

    #[test]
    fn a_tuned_target_holds_its_placeholder() {
        assert_eq!(HEAVY.target_for(39), "/fib?n=39");
        assert_eq!(PAGE.target_for(1_480_000), "/dynamic?n=1480000");
    }

    #[test]
    fn the_servers_table_says_what_was_measured() {
        assert_eq!(
            calibrated().describe(),
            "fib(1000) saturates at 2,000/s; heavy request /fib?n=40 costs 240 ms (target 200 ms); \
             dynamic page /dynamic?n=1480000 costs 1.02 ms (target 1.00 ms)"
        );
        assert_eq!(Calibration::default().describe(), "");
    }

    #[test]
    fn thousands_are_separated() {
        assert_eq!(thousands(7), "7");
        assert_eq!(thousands(1_234), "1,234");
        assert_eq!(thousands(1_234_567), "1,234,567");
    }

    #[test]
    fn the_heavy_request_is_the_n_nearest_the_target_cost_in_ratio() {
        let heavy = calibrated().heavy.unwrap();
        // 240 / 200 = 1.2 beats 200 / 150 = 1.33.
        assert_eq!((heavy.n, heavy.cost_ms), (40, 240.0));
        assert_eq!(HEAVY.nearest(Vec::new()), None);
    }

    #[test]
    fn the_page_gets_the_n_on_the_line_through_its_two_timings() {
        // 0.2 ms at n = 0 and 0.6 ms at 1,000,000: 0.4 µs an iteration, so 1 ms at
        // 2,000,000.
        assert_eq!(
            PAGE.on_the_line(0.2, 1_000_000, 0.6, u32::MAX),
            Some(2_000_000)
        );
        // A page ten times dearer an iteration (Lua) gets a tenth of the iterations.
        assert_eq!(
            PAGE.on_the_line(0.2, 1_000_000, 4.2, u32::MAX),
            Some(200_000)
        );
        // Within bounds: a request whose overhead alone passes the target still loops
        // once; a very cheap loop stops at the most the servers take.
        assert_eq!(PAGE.on_the_line(1.5, 1_000_000, 2.0, u32::MAX), Some(1));
        assert_eq!(
            PAGE.on_the_line(0.2, 1_000_000, 0.2001, 50_000_000),
            Some(50_000_000)
        );
    }

    #[test]
    fn a_cost_that_does_not_grow_with_n_gives_no_n() {
        assert_eq!(PAGE.on_the_line(0.5, 1_000_000, 0.5, u32::MAX), None);
        assert_eq!(PAGE.on_the_line(0.5, 1_000_000, 0.4, u32::MAX), None);
        assert_eq!(PAGE.on_the_line(0.5, 1_000_000, f64::NAN, u32::MAX), None);
    }

    #[test]
    fn a_share_of_the_saturation_becomes_the_servers_own_rate() {
        let plan = crate::scenario::plan("on-system", Profile::Quick, 2).unwrap();
        let step = plan
            .steps
            .iter()
            .find(|s| s.group == "fib(1000)" && s.share_of_saturation == Some(0.5))
            .unwrap();
        assert!(step.for_server(&Calibration::default()).is_none());
        let run = step.for_server(&calibrated()).unwrap();
        assert_eq!((run.x, run.load.offered()), (1_000.0, Some(1_000.0)));
        assert_eq!(run.label, "0.5× · 1,000/s");
        assert_eq!(run.share_of_saturation, None);
    }

    #[test]
    fn a_slow_saturation_stretches_the_step_to_enough_answers() {
        let plan = crate::scenario::plan("on-system", Profile::Quick, 2).unwrap();
        let step = plan.steps.iter().find(|s| s.group == "fib(50000)").unwrap();
        let slow = Calibration {
            saturation_rps: vec![("fib(50000)".into(), 100.0)],
            ..Calibration::default()
        };
        let run = step.for_server(&slow).unwrap();
        let offered = run.load.offered_requests().unwrap();
        assert!(offered >= MIN_ANSWERS, "{offered} requests offered");
    }

    #[test]
    fn the_mix_gets_each_servers_heavy_n() {
        let plan = crate::scenario::plan("mixed", Profile::Quick, 2).unwrap();
        assert!(is_asked(&plan) && probes(&plan).is_empty());
        assert_eq!(tunings_asked(&plan)[0].target, HEAVY.target);
        let run = plan.steps[1].for_server(&calibrated()).unwrap();
        assert!(run.load.targets().contains(&"/fib?n=40".to_owned()));
        assert!(run.load.targets().contains(&"/fib?n=20".to_owned()));
        assert!(
            plan.steps[0].for_server(&Calibration::default()).is_some(),
            "no heavy requests, nothing to resolve"
        );
    }

    #[test]
    fn the_dynamic_page_gets_each_servers_iterations() {
        let plan = crate::scenario::plan("dynamic", Profile::Quick, 2).unwrap();
        assert_eq!(tunings_asked(&plan).len(), 1);
        assert_eq!(tunings_asked(&plan)[0].target, PAGE.target);
        assert!(plan.steps[0].for_server(&Calibration::default()).is_none());
        let run = plan.steps[0].for_server(&calibrated()).unwrap();
        assert_eq!(run.load.targets(), ["/dynamic?n=1480000".to_owned()]);
    }

    #[test]
    fn before_calibration_a_step_runs_its_untuned_requests() {
        let dynamic = crate::scenario::plan("dynamic", Profile::Quick, 2).unwrap();
        let warm_up = dynamic.steps[0].untuned().unwrap();
        assert_eq!(warm_up.load.targets(), ["/dynamic".to_owned()]);
        let mixed = crate::scenario::plan("mixed", Profile::Quick, 2).unwrap();
        let heavy = mixed.steps[1].untuned().unwrap();
        assert!(heavy.load.targets().contains(&"/fib?n=30".to_owned()));
        assert!(!heavy.load.targets().contains(&HEAVY.target.to_owned()));
        let on_system = crate::scenario::plan("on-system", Profile::Quick, 2).unwrap();
        assert!(
            on_system.steps[0].untuned().is_none(),
            "its rate needs the probe"
        );
    }

    #[test]
    fn a_recorded_calibration_without_a_page_still_reads() {
        let json =
            r#"{"saturation_rps":[],"heavy":{"n":38,"cost_ms":180.0,"timed_ms":[[38,180.0]]}}"#;
        let read: Calibration = serde_json::from_str(json).unwrap();
        assert_eq!((read.heavy.unwrap().n, read.page), (38, None));
    }

    #[test]
    fn on_system_probes_each_fibonacci_once() {
        let plan = crate::scenario::plan("on-system", Profile::Quick, 2).unwrap();
        let labels: Vec<String> = probes(&plan).into_iter().map(|p| p.label).collect();
        assert_eq!(
            labels,
            ["fib(1000)", "fib(5000)", "fib(10000)", "fib(50000)"]
        );
        let plaintext = crate::scenario::plan("plaintext", Profile::Quick, 2).unwrap();
        assert!(!is_asked(&plaintext));
    }
}
