//! A plan per server: the calibration a plan asks for (saturation probes, tuned
//! requests), and each step resolved from what a server's calibration measured.

use super::{MIN_ANSWERS, Plan, StepPlan};
use crate::calibration::{Calibration, PROBE_SECONDS, SATURATION, TUNINGS, Tuning, thousands};

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::calibration::tests::calibrated;
    use crate::calibration::{HEAVY, PAGE};
    use crate::scenario;
    use crate::scenario::Profile;

    #[test]
    fn a_share_of_the_saturation_becomes_the_servers_own_rate() {
        let plan = scenario::plan("on-system", Profile::Quick, 2).unwrap();
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
        let plan = scenario::plan("on-system", Profile::Quick, 2).unwrap();
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
        let plan = scenario::plan("mixed", Profile::Quick, 2).unwrap();
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
        let plan = scenario::plan("dynamic", Profile::Quick, 2).unwrap();
        assert_eq!(tunings_asked(&plan).len(), 1);
        assert_eq!(tunings_asked(&plan)[0].target, PAGE.target);
        assert!(plan.steps[0].for_server(&Calibration::default()).is_none());
        let run = plan.steps[0].for_server(&calibrated()).unwrap();
        assert_eq!(run.load.targets(), ["/dynamic?n=1480000".to_owned()]);
    }

    #[test]
    fn before_calibration_a_step_runs_its_untuned_requests() {
        let dynamic = scenario::plan("dynamic", Profile::Quick, 2).unwrap();
        let warm_up = dynamic.steps[0].untuned().unwrap();
        assert_eq!(warm_up.load.targets(), ["/dynamic".to_owned()]);
        let mixed = scenario::plan("mixed", Profile::Quick, 2).unwrap();
        let heavy = mixed.steps[1].untuned().unwrap();
        assert!(heavy.load.targets().contains(&"/fib?n=30".to_owned()));
        assert!(!heavy.load.targets().contains(&HEAVY.target.to_owned()));
        let on_system = scenario::plan("on-system", Profile::Quick, 2).unwrap();
        assert!(
            on_system.steps[0].untuned().is_none(),
            "its rate needs the probe"
        );
    }

    #[test]
    fn on_system_probes_each_fibonacci_once() {
        let plan = scenario::plan("on-system", Profile::Quick, 2).unwrap();
        let labels: Vec<String> = probes(&plan).into_iter().map(|p| p.label).collect();
        assert_eq!(
            labels,
            ["fib(1000)", "fib(5000)", "fib(10000)", "fib(50000)"]
        );
        let plaintext = scenario::plan("plaintext", Profile::Quick, 2).unwrap();
        assert!(!is_asked(&plaintext));
    }
}
