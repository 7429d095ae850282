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
//! Measuring is the runner's (`runner/calibrate.rs`); this module says what is recorded,
//! and `scenario/per_server.rs` how a step is resolved from it.

use std::ops::RangeInclusive;

use serde::{Deserialize, Serialize};

/// The group of the saturation probes' steps, and of their bar plot.
pub(crate) const SATURATION: &str = "saturation";

/// Connections of a saturation probe: 64, 32 a core on this 2-core machine. CPU-bound
/// work saturates a server once each core has a request to run, and the rest hide the
/// generator's round trip; many more would measure how a thread-per-connection server
/// copes with hundreds of threads rather than the rate it sustains.
pub(crate) const PROBE_CONNECTIONS: usize = 64;
/// A probe's seconds: enough for thousands of answers at the rates probed, short
/// beside the ramp it plans.
pub(crate) const PROBE_SECONDS: u64 = 3;

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
    pub(crate) untuned: &'static str,
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
pub(crate) mod tests {
    use super::*;

    /// A server calibrated at 2,000/s for `fib(1000)`, fib(40) and a 1.02 ms page.
    pub(crate) fn calibrated() -> Calibration {
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
    fn a_recorded_calibration_without_a_page_still_reads() {
        let json =
            r#"{"saturation_rps":[],"heavy":{"n":38,"cost_ms":180.0,"timed_ms":[[38,180.0]]}}"#;
        let read: Calibration = serde_json::from_str(json).unwrap();
        assert_eq!((read.heavy.unwrap().n, read.page), (38, None));
    }
}
