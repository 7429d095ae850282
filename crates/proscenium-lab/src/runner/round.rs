//! One server's turn in one round: start it, warm it up, run the plan's steps while
//! measuring what it spends, stop it.
//!
//! The warm-up is the plan's first load for [`WARM_UP_SECONDS`] seconds (a longer, closed
//! one for a server that compiles at run time), recorded with
//! `warmup: true` and left out of every figure: a server's first seconds (page faults,
//! lazy pools, JIT) are not its steady state (prefork's first step read p99 504 ms,
//! then 0.34 ms). In a server's first turn, when the plan asks, its calibration follows
//! the warm-up (`calibrate.rs`), and every round's steps are planned from it. A ramp
//! goes no higher for the server in this round once a step collapses it.

use std::time::Instant;

use super::cpus::CpuSet;
use super::{base_url, check_interrupt, cool_down, interleaved, start_checked};
use crate::Error;
use crate::calibration::Calibration;
use crate::calibration::PROBE_CONNECTIONS;
use crate::load::Measured;
use crate::process::{RssPeak, Running, tree_cpu_seconds};
use crate::progress::Progress;
use crate::results::{ServerRun, Step};
use crate::scenario::{self, JIT_WARM_UP_SECONDS, Plan, StepPlan, WARM_UP_SECONDS};
use crate::servers::{Placement, ServerSpec};
use crate::tools::Tools;

/// What every turn of a run shares: the plan, the tools and where servers and load go.
pub(super) struct Bench<'a> {
    pub(super) plan: &'a Plan,
    pub(super) tools: &'a Tools,
    pub(super) progress: &'a Progress,
    /// The server's place, its port chosen afresh each turn.
    pub(super) placement: Placement<'a>,
    pub(super) load_cores: &'a CpuSet,
}

impl Bench<'_> {
    /// Runs `rounds` of every server's turn, each round starting with the next
    /// server, so no server always runs first (on a cold machine) or last (on a warm
    /// one); returns every step.
    pub(super) fn rounds(
        &self,
        servers: &[ServerSpec],
        rounds: u32,
        runs: &mut [ServerRun],
    ) -> Result<Vec<Step>, Error> {
        let mut steps = Vec::new();
        for round in 1..=rounds {
            for i in interleaved(servers.len(), round) {
                check_interrupt()?;
                if runs[i].skipped.is_none() {
                    steps.extend(self.turn(&servers[i], round, &mut runs[i])?);
                }
            }
        }
        Ok(steps)
    }

    /// Runs `server`'s turn in `round`: its steps (the warm-up first), or the reason it
    /// could not run in `run.skipped`; collapses go to `run.collapsed`.
    fn turn(
        &self,
        server: &ServerSpec,
        round: u32,
        run: &mut ServerRun,
    ) -> Result<Vec<Step>, Error> {
        let Some((mut running, port)) = self.start(server, round, run)? else {
            return Ok(Vec::new());
        };
        let base = base_url(port);
        let warm_up = self.warm_up_plan(run.calibration.as_ref())?;
        let mut steps = vec![self.warm_up(server, &warm_up, round, &mut running, &base)?];
        let Some(probes) = self.calibrate_once(server, &mut running, port, round, run)? else {
            return Ok(steps);
        };
        steps.extend(probes);
        steps.extend(self.steps(server, round, &mut running, &base, run)?);
        Ok(steps)
    }

    /// Runs the plan's steps against `server`, each resolved from its calibration; a
    /// ramp goes no higher in the round once a step collapses it (noted in
    /// `run.collapsed`).
    fn steps(
        &self,
        server: &ServerSpec,
        round: u32,
        running: &mut Running,
        base: &str,
        run: &mut ServerRun,
    ) -> Result<Vec<Step>, Error> {
        let calibration = run.calibration.clone().unwrap_or_default();
        // (group, rate) where a ramp collapsed: its higher rates are skipped.
        let mut stopped: Vec<(&str, f64)> = Vec::new();
        let mut steps = Vec::new();
        for planned in &self.plan.steps {
            check_interrupt()?;
            self.progress.advance();
            let step = &resolved(planned, &calibration, server)?;
            let offered = step.load.offered().unwrap_or(0.0);
            if above_collapse(&stopped, &planned.group, offered) {
                continue;
            }
            let at = format!("round {round} / {} / {}", step.group, step.label);
            self.progress.at(self.plan.name, server.name(), &at);
            let done = self.measure(server, step, running, base, round)?;
            if done.collapsed() {
                stopped.push((&planned.group, offered));
                run.collapsed.push(collapse(round, step, &done));
            }
            steps.push(done);
            cool_down(running.pid());
        }
        Ok(steps)
    }

    /// Starts and checks `server` on a fresh port; returns it and its port, or
    /// `None` with the reason in `run.skipped`.
    fn start(
        &self,
        server: &ServerSpec,
        round: u32,
        run: &mut ServerRun,
    ) -> Result<Option<(Running, u16)>, Error> {
        let placement = Placement {
            port: super::free_port()?,
            ..self.placement.clone()
        };
        self.progress.at(self.plan.name, server.name(), "starting");
        match start_checked(self.plan, server, self.tools, &placement) {
            Ok(running) => {
                run.command = Some(running.command().to_owned());
                Ok(Some((running, placement.port)))
            }
            Err(e) => {
                check_interrupt()?;
                self.skip(server, round, run, &e);
                Ok(None)
            }
        }
    }

    /// In the server's first turn, measures what the plan asks for into
    /// `run.calibration`; returns the probes' steps (none in later turns), or `None`
    /// with the reason in `run.skipped` when the server could not be calibrated.
    fn calibrate_once(
        &self,
        server: &ServerSpec,
        running: &mut Running,
        port: u16,
        round: u32,
        run: &mut ServerRun,
    ) -> Result<Option<Vec<Step>>, Error> {
        if run.calibration.is_some() || !scenario::is_asked(self.plan) {
            return Ok(Some(Vec::new()));
        }
        match self.calibrate(server, running, port, round) {
            Ok((calibration, probes)) => {
                run.calibration = Some(calibration);
                Ok(Some(probes))
            }
            Err(e) => {
                check_interrupt()?;
                self.skip(server, round, run, &e);
                Ok(None)
            }
        }
    }

    /// Records in `run.skipped` why `server` cannot run its steps from `round` on.
    fn skip(&self, server: &ServerSpec, round: u32, run: &mut ServerRun, why: &Error) {
        self.progress.say(format!("skipping {server}: {why}"));
        (0..self.plan.steps.len()).for_each(|_| self.progress.advance());
        run.skipped = Some(format!("round {round}: {why}"));
    }

    /// The warm-up's load: the plan's first step as planned for the server, or, before
    /// its calibration, that step with its tuned requests untuned, or the saturation
    /// probe of its group (a rate from the saturation is not known yet; the probe's
    /// target is the step's).
    fn warm_up_plan(&self, calibration: Option<&Calibration>) -> Result<StepPlan, Error> {
        let first = &self.plan.steps[0];
        first
            .for_server(calibration.unwrap_or(&Calibration::default()))
            .or_else(|| first.untuned())
            .or_else(|| {
                scenario::probes(self.plan)
                    .into_iter()
                    .find(|probe| probe.label == first.group)
            })
            .ok_or_else(|| Error::Load(format!("no warm-up load for {}", first.label)))
    }

    /// Runs `first`'s load for [`WARM_UP_SECONDS`], or its targets as a probe for
    /// [`JIT_WARM_UP_SECONDS`] when the server compiles at run time; returns it marked as
    /// the warm-up.
    fn warm_up(
        &self,
        server: &ServerSpec,
        first: &StepPlan,
        round: u32,
        running: &mut Running,
        base: &str,
    ) -> Result<Step, Error> {
        let (label, load) = if server.compiles_at_run_time() {
            let load = first.load.as_probe(JIT_WARM_UP_SECONDS);
            let closed = format!("{PROBE_CONNECTIONS} connections, {JIT_WARM_UP_SECONDS} s");
            (format!("warm-up ({}, {closed})", first.group), load)
        } else {
            let load = first.load.for_seconds(WARM_UP_SECONDS);
            (format!("warm-up ({})", first.label), load)
        };
        let warm_up = StepPlan {
            label,
            load,
            ..first.clone()
        };
        let mut warm = self.measure(server, &warm_up, running, base, round)?;
        warm.warmup = true;
        cool_down(running.pid());
        Ok(warm)
    }

    /// Runs one step's load and records what the server spent meanwhile.
    pub(super) fn measure(
        &self,
        server: &ServerSpec,
        step: &StepPlan,
        running: &mut Running,
        base: &str,
        round: u32,
    ) -> Result<Step, Error> {
        let pid = running.pid();
        let rss = RssPeak::watch(pid);
        let cpu_before = tree_cpu_seconds(pid);
        let started = Instant::now();
        let scratch = self.placement.workdir;
        let load_cores = self.load_cores;
        let (command, measured) = step.load.run(self.tools, base, &load_cores.list, scratch)?;
        let cpu = tree_cpu_seconds(pid) - cpu_before;
        // The server works while the load sends and drains; the generator's start and
        // vegeta's encoding of its results afterwards are idle time, not the server's.
        let busy_window = measured.window_s.map_or_else(
            || started.elapsed().as_secs_f64(),
            |w| w + measured.drain_s.unwrap_or(0.0),
        );
        check_interrupt()?;
        let spent = Spent {
            cpu_s: cpu,
            busy_s: busy_window,
            peak_rss_kib: rss.finish(),
        };
        let mut ran = self.record(server, step, round, (command, measured), spent);
        ran.invalid = ran.judged();
        Ok(ran)
    }

    /// The step `step` of `round` as it ran against `server`: the generator's
    /// `command` and what it `measured`, and what the server `spent`.
    fn record(
        &self,
        server: &ServerSpec,
        step: &StepPlan,
        round: u32,
        (command, measured): (String, Measured),
        spent: Spent,
    ) -> Step {
        let sent_share = step
            .load
            .offered_requests()
            .zip(measured.sent)
            .map(|(offered, sent)| sent as f64 / offered.max(1) as f64);
        let cores = self.placement.core_count as f64;
        Step {
            server: server.to_string(),
            group: step.group.clone(),
            label: step.label.clone(),
            x: step.x,
            round,
            warmup: false,
            offered_rps: step.load.offered(),
            sent_share,
            invalid: None,
            in_flight: step.load.in_flight(),
            depth: step.load.depth(),
            cpu_us_per_request: (measured.requests > 0)
                .then(|| spent.cpu_s * 1e6 / measured.requests as f64),
            server_utilisation: Some(spent.cpu_s / (spent.busy_s * cores)),
            generator_utilisation: measured
                .generator_cores_busy()
                .map(|busy| busy / self.load_cores.count as f64),
            measured,
            peak_rss_kib: spent.peak_rss_kib,
            command,
            job: None,
        }
    }
}

/// `planned` as run against `server`, calibrated as `calibration`: calibrated in its
/// first turn, or in an earlier round, so every step resolves.
fn resolved(
    planned: &StepPlan,
    calibration: &Calibration,
    server: &ServerSpec,
) -> Result<StepPlan, Error> {
    planned
        .for_server(calibration)
        .ok_or_else(|| Error::Calibration {
            server: server.to_string(),
            reason: format!("nothing to plan {} / {} from", planned.group, planned.label),
        })
}

/// Whether a step of `group` offering `offered`/s is above a rate its ramp collapsed
/// at (`stopped`: each group with that rate), so not run.
fn above_collapse(stopped: &[(&str, f64)], group: &str, offered: f64) -> bool {
    stopped
        .iter()
        .any(|&(g, rate)| g == group && offered > rate)
}

/// The note of a ramp that collapsed at `step` in `round`.
fn collapse(round: u32, step: &StepPlan, done: &Step) -> String {
    format!(
        "round {round}: {} collapsed at {} ({:.0} answers/s, mean {:.0} ms); higher rates not run",
        step.group, step.label, done.measured.achieved_rps, done.measured.latency_ms.mean
    )
}

/// What the server spent during a step: CPU seconds, the seconds it was kept busy
/// (the send window and the drain), its peak memory.
#[derive(Clone, Copy)]
struct Spent {
    cpu_s: f64,
    busy_s: f64,
    peak_rss_kib: u64,
}
