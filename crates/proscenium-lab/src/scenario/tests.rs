use super::leda::DYNAMIC_LOAD_THREADS;
use super::*;
use crate::servers::ServerSpec;

#[test]
fn every_scenario_plans_steps_plots_and_checks() {
    for name in SCENARIOS.into_iter().filter(|n| !is_job(n)) {
        let plan = plan(name, Profile::Quick, 2).unwrap();
        assert!(
            !plan.steps.is_empty() && !plan.plots.is_empty() && !plan.checks.is_empty(),
            "{name}"
        );
        assert!(!plan.default_servers.is_empty(), "{name}");
        let probes = super::probes(&plan);
        for p in &plan.plots {
            assert!(
                plan.steps.iter().chain(&probes).any(|s| s.group == p.group),
                "{name}: plot of no steps"
            );
        }
    }
    assert!(plan("nope", Profile::Quick, 2).is_none());
}

#[test]
fn the_cep_job_runs_table_1_under_both_configurations_from_files_in_the_checkout() {
    let plan = plan("cep", Profile::Quick, 2).unwrap();
    assert!(is_job(plan.name) && plan.steps.is_empty());
    assert_eq!(plan.default_servers, CEP_CONFIGURATIONS);
    assert!(plan.plots.iter().any(|p| p.metric == Metric::Elapsed));
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/../..");
    for row in CEP_ROWS {
        for configuration in [1, 2] {
            let file = std::path::Path::new(root).join(row.config(configuration));
            let text = std::fs::read_to_string(&file).unwrap();
            let [p, f, c] = row.instances;
            assert!(
                text.contains(&format!("persist = {p}"))
                    && text.contains(&format!("filter = {f}"))
                    && text.contains(&format!("correlate = {c}")),
                "{}",
                file.display()
            );
            let threads: usize = text
                .lines()
                .filter_map(|l| l.strip_prefix("threads = ")?.parse::<usize>().ok())
                .sum();
            assert_eq!(
                threads,
                row.threads + 1,
                "the row's and the source's: {text}"
            );
        }
    }
}

/// Seconds of load the servers get in one round of `plan`, their warm-ups included.
fn round_seconds(plan: &Plan) -> u64 {
    let steps: u64 = plan.steps.iter().map(|s| s.load.seconds()).sum();
    let warm_up = |name: &String| {
        let server: ServerSpec = name.parse().unwrap();
        if server.compiles_at_run_time() {
            JIT_WARM_UP_SECONDS
        } else {
            WARM_UP_SECONDS
        }
    };
    plan.default_servers
        .iter()
        .map(|s| steps + warm_up(s))
        .sum()
}

/// Seconds of the saturation probes one server gets once a run, before round 1.
fn probe_seconds(plan: &Plan) -> u64 {
    super::probes(plan).iter().map(|p| p.load.seconds()).sum()
}

#[test]
fn quick_scenarios_take_at_most_three_minutes_of_load_a_round() {
    let mut all = 0;
    for name in SCENARIOS.into_iter().filter(|n| !is_job(n)) {
        let plan = plan(name, Profile::Quick, 2).unwrap();
        let servers = plan.default_servers.len() as u64;
        let round = round_seconds(&plan);
        // On-system runs four ramps (Fig. 5.1–5.4) of six points on eight servers, three
        // of them warmed up for their JIT.
        let most = if name == "on-system" { 440 } else { 180 };
        assert!(round <= most, "{name}: {round} s of load a round");
        all += 3 * round + probe_seconds(&plan) * servers;
    }
    // Three rounds of every scenario: the quick profile's load, before starts,
    // checks and cool-downs (a few seconds a step at most), and before any step an
    // on-system server with a saturation under 50/s stretches to 100 requests.
    assert_eq!(all, 4_917, "update the profile's stated time");
}

#[test]
fn workers_draws_yarns_workers_and_prefork_against_their_workers_to_yarn_s_most() {
    let servers = |profile| {
        let plan = plan("workers", profile, 2).unwrap();
        assert!(plan.plots.iter().all(|p| p.x_axis == XAxis::Workers));
        assert!(plan.plots.iter().any(|p| p.metric == Metric::Utilisation));
        assert_eq!(plan.default_servers.last().unwrap(), "httpd-prefork");
        plan.default_servers
    };
    for (profile, most) in [(Profile::Quick, 256), (Profile::Full, 512)] {
        let servers = servers(profile);
        for family in ["proscenium:thread-pool:1/workers=", "proscenium:prefork:"] {
            let counts: Vec<usize> = servers
                .iter()
                .filter_map(|s| s.strip_prefix(family)?.parse().ok())
                .collect();
            let doubling: Vec<usize> = std::iter::successors(Some(1), |n| Some(n * 2))
                .take_while(|&n| n <= most)
                .collect();
            assert_eq!(counts, doubling, "{family}");
        }
    }
}

#[test]
fn only_the_dynamic_pages_are_sent_from_two_load_threads() {
    for name in SCENARIOS {
        for step in plan(name, Profile::Quick, 2).unwrap().steps {
            if let Load::Closed { threads, .. } = step.load {
                let want = if name.starts_with("dynamic") {
                    DYNAMIC_LOAD_THREADS
                } else {
                    1
                };
                assert_eq!(threads, want, "{name}");
            }
        }
    }
}

#[test]
fn stateful_mixes_reads_and_writes_of_the_stated_share() {
    let plan = plan("stateful", Profile::Quick, 2).unwrap();
    let Load::Closed { targets, .. } = &plan.steps[1].load else {
        panic!("closed loop")
    };
    let writes = targets.iter().filter(|t| t.starts_with("PUT ")).count();
    let reads = targets.iter().filter(|t| t.starts_with("/verify/")).count();
    assert_eq!((plan.steps[1].x, writes, reads), (25.0, 5, 15));
}

#[test]
fn the_mix_holds_the_stated_share_of_heavy_requests() {
    let plan = plan("mixed", Profile::Quick, 2).unwrap();
    let Load::Open { targets, .. } = &plan.steps[2].load else {
        panic!("open loop")
    };
    let heavy = targets
        .iter()
        .filter(|t| *t == calibration::HEAVY.target)
        .count();
    assert_eq!((heavy * 100 / targets.len(), targets.len()), (10, 20));
}
