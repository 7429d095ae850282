//! Per-server calibration: values the lab measures once for each server — in its first
//! turn, after its start and warm-up, before its steps — records in its
//! [`ServerRun`](crate::ServerRun), and plans that server's steps from in every round,
//! so that all rounds offer a server the same points and a median is over like points.
//!
//! A plan asks for nothing, for a saturation, or for a heavy request, by its steps alone:
//! - a step with a `share_of_saturation` offers that share of the server's saturation
//!   rate for the step's group: 2xx answers a second under a closed-loop probe of the
//!   group's target (the probe is recorded as a step of the [`SATURATION`] group);
//! - a target that is [`HEAVY_TARGET`] gets the n whose recursive Fibonacci costs the server
//!   [`HEAVY_COST_MS`], timed on single requests.
//!
//! Measuring is the runner's (`run/calibrate.rs`); this module says what is recorded and
//! how a step is resolved from it.

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

/// The heavy request in a plan: recursive fib(n), [`HEAVY_N`] replaced per server.
pub(crate) const HEAVY_TARGET: &str = "/fib?n={heavy-n}";
const HEAVY_N: &str = "{heavy-n}";

/// The server time a heavy request should cost on every runtime: 200 ms.
///
/// Node.Scala's Fig. 1b offers 100 requests/s; at 5 % heavy (5 a second) its blocking
/// Node.js fell to 24.4 messages/s, so its heavy request saturated the one loop at 5 %
/// heavy: it cost at least 1 s ÷ 5 = 200 ms. The fallen throughput suggests more
/// (1 ÷ (0.05 × 24.4) ≈ 0.8 s), but at 0.8 s 5 % heavy is 4 s of work a second, past
/// every server on this 2-core machine; at 200 ms it saturates one loop exactly at
/// 5 % (as the source's did at the least), two loops at 10 % and every server at 15 %.
pub(crate) const HEAVY_COST_MS: f64 = 200.0;
/// The n timed, ascending, until one costs more than the target; 40 is the most the
/// lab's servers take. Each n costs about 1.6 times the one before, so the cost chosen
/// is within a factor of √1.6 ≈ 1.27 of the target (fib(40) at 243 ms against fib(39)
/// at 143 ms on one run here): equal work to that grain, not to the millisecond.
pub(crate) const HEAVY_CANDIDATES: std::ops::RangeInclusive<u32> = 30..=40;
/// Requests timed a candidate; the median is its cost.
pub(crate) const HEAVY_TIMINGS: usize = 3;

/// What was measured of one server before its steps.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Calibration {
    /// Per group, the 2xx answers a second the server sustained under the closed-loop
    /// probe of the group's target.
    #[serde(default)]
    pub saturation_rps: Vec<(String, f64)>,
    /// The heavy request chosen for the server, when the plan mixes one in.
    #[serde(default)]
    pub heavy: Option<HeavyRequest>,
}

/// The n of the heavy request `/fib?n=N` for one server, and what it cost.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct HeavyRequest {
    /// The n chosen: its cost is the nearest to the target, 200 ms (in ratio).
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

    /// One line for the report's servers table: the saturations and the heavy request.
    pub fn describe(&self) -> String {
        let saturations = self
            .saturation_rps
            .iter()
            .map(|(group, rps)| format!("{group} saturates at {}/s", thousands(*rps as u64)));
        let heavy = self.heavy.iter().map(|h| {
            format!(
                "heavy request fib({}) costs {:.0} ms (target {HEAVY_COST_MS:.0} ms)",
                h.n, h.cost_ms
            )
        });
        saturations.chain(heavy).collect::<Vec<_>>().join("; ")
    }
}

impl HeavyRequest {
    /// Chooses from `timed_ms` (n ascending, with its cost) the n whose cost is the
    /// nearest to [`HEAVY_COST_MS`] in ratio (costs grow geometrically with n).
    pub(crate) fn choose(timed_ms: Vec<(u32, f64)>) -> Option<Self> {
        let distance = |ms: f64| (ms.max(1e-3) / HEAVY_COST_MS).ln().abs();
        let &(n, cost_ms) = timed_ms
            .iter()
            .min_by(|a, b| distance(a.1).total_cmp(&distance(b.1)))?;
        Some(Self {
            n,
            cost_ms,
            timed_ms,
        })
    }
}

/// Whether `plan` asks for any calibration.
pub(crate) fn is_asked(plan: &Plan) -> bool {
    !probes(plan).is_empty() || needs_heavy(plan)
}

/// Whether a target of `plan` holds the heavy request's placeholder.
pub(crate) fn needs_heavy(plan: &Plan) -> bool {
    plan.steps
        .iter()
        .any(|s| s.load.targets().iter().any(|t| t == HEAVY_TARGET))
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
    /// label and x) from the group's saturation, its heavy request's n filled in; or
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
        if step.load.targets().iter().any(|t| t == HEAVY_TARGET) {
            let heavy = heavy_target(calibration.heavy.as_ref()?.n);
            for target in step.load.targets_mut() {
                if target == HEAVY_TARGET {
                    target.clone_from(&heavy);
                }
            }
        }
        Some(step)
    }
}

/// The heavy request for `n`.
pub(crate) fn heavy_target(n: u32) -> String {
    HEAVY_TARGET.replace(HEAVY_N, &n.to_string())
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
            heavy: HeavyRequest::choose(vec![(38, 90.0), (39, 150.0), (40, 240.0)]),
        }
    }

    #[test]
    fn the_heavy_target_holds_its_placeholder() {
        assert_eq!(heavy_target(39), "/fib?n=39");
    }

    #[test]
    fn the_servers_table_says_what_was_measured() {
        assert_eq!(
            calibrated().describe(),
            "fib(1000) saturates at 2,000/s; heavy request fib(40) costs 240 ms (target 200 ms)"
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
        assert_eq!(HeavyRequest::choose(Vec::new()), None);
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
            heavy: None,
        };
        let run = step.for_server(&slow).unwrap();
        let offered = run.load.offered_requests().unwrap();
        assert!(offered >= MIN_ANSWERS, "{offered} requests offered");
    }

    #[test]
    fn the_mix_gets_each_servers_heavy_n() {
        let plan = crate::scenario::plan("mixed", Profile::Quick, 2).unwrap();
        assert!(needs_heavy(&plan) && is_asked(&plan) && probes(&plan).is_empty());
        let run = plan.steps[1].for_server(&calibrated()).unwrap();
        assert!(run.load.targets().contains(&"/fib?n=40".to_owned()));
        assert!(run.load.targets().contains(&"/fib?n=20".to_owned()));
        assert!(
            plan.steps[0].for_server(&Calibration::default()).is_some(),
            "no heavy requests, nothing to resolve"
        );
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
