//! A server's calibration (see `calibration.rs`): in its first turn, after its warm-up
//! and before its steps, the saturation probes the plan asks for (each recorded as a
//! step, cooled down after) and the timing of its tuned requests (the heavy request's
//! n, the dynamic page's iterations).

use std::time::{Duration, Instant};

use super::round::Bench;
use super::{cool_down, get};
use crate::Error;
use crate::calibration::Calibration;
use crate::calibration::{Search, TunedRequest, Tuning};
use crate::process::Running;
use crate::results::Step;
use crate::scenario;
use crate::servers::ServerSpec;

impl Bench<'_> {
    /// Measures what the plan asks of `server`, running on `port` in `round`; returns
    /// it and the probes' steps.
    ///
    /// # Errors
    ///
    /// [`Error::Calibration`] when a probe gets no 2xx answer, a tuned request is not
    /// answered with a 200 or its cost does not grow with n; the generator's and
    /// interruption errors.
    pub(super) fn calibrate(
        &self,
        server: &ServerSpec,
        running: &mut Running,
        port: u16,
        round: u32,
    ) -> Result<(Calibration, Vec<Step>), Error> {
        let base = super::base_url(port);
        let fail = |reason: String| failed(server, reason);
        let mut calibration = Calibration::default();
        let steps = self.saturations(server, running, &base, round, &mut calibration)?;
        for tuning in scenario::tunings_asked(self.plan) {
            let what = format!("calibrating: the {}'s cost", tuning.what);
            self.progress.at(self.plan.name, server.name(), &what);
            calibration.set_tuned(tuning, tune(port, tuning).map_err(&fail)?);
        }
        Ok((calibration, steps))
    }

    /// Probes `server`'s saturation of each group the plan offers shares of, into
    /// `calibration`; returns the probes' steps.
    fn saturations(
        &self,
        server: &ServerSpec,
        running: &mut Running,
        base: &str,
        round: u32,
        calibration: &mut Calibration,
    ) -> Result<Vec<Step>, Error> {
        let mut steps = Vec::new();
        for probe in scenario::probes(self.plan) {
            let what = format!("calibrating: saturation of {}", probe.label);
            self.progress.at(self.plan.name, server.name(), &what);
            let step = self.measure(server, &probe, running, base, round)?;
            let rps = step.measured.achieved_rps;
            if rps < 1.0 {
                return Err(failed(server, format!("no 2xx answers to {}", probe.label)));
            }
            calibration.saturation_rps.push((probe.label.clone(), rps));
            steps.push(step);
            cool_down(running.pid());
        }
        Ok(steps)
    }
}

/// The error of `server`'s calibration, and why.
fn failed(server: &ServerSpec, reason: String) -> Error {
    Error::Calibration {
        server: server.to_string(),
        reason,
    }
}

/// Finds `tuning`'s n for the server on `port` (otherwise idle) by its search, each n
/// timed [`Tuning::timings`] requests one after another.
fn tune(port: u16, tuning: &Tuning) -> Result<TunedRequest, String> {
    match tuning.search {
        Search::Ascending(ref candidates) => {
            let mut timed = Vec::new();
            for n in candidates.clone() {
                let cost = time(port, tuning, n)?;
                timed.push((n, cost));
                if cost > tuning.cost_ms {
                    break;
                }
            }
            tuning.nearest(timed).ok_or_else(|| "no n timed".to_owned())
        }
        Search::Linear { probe, max } => tune_linear(port, tuning, probe, max),
    }
}

/// [`Search::Linear`]: `tuning`'s request timed at n = 0 and n = `probe`, the n on the
/// line through them at the target cost (at most `max`), timed once more.
fn tune_linear(port: u16, tuning: &Tuning, probe: u32, max: u32) -> Result<TunedRequest, String> {
    let (at_zero, at_probe) = (time(port, tuning, 0)?, time(port, tuning, probe)?);
    let n = tuning
        .on_the_line(at_zero, probe, at_probe, max)
        .ok_or_else(|| {
            format!(
                "{} took {at_zero:.3} ms at n = 0 and {at_probe:.3} ms at n = {probe}: \
                 its cost does not grow with n",
                tuning.what
            )
        })?;
    let cost_ms = time(port, tuning, n)?;
    Ok(TunedRequest {
        n,
        cost_ms,
        timed_ms: vec![(0, at_zero), (probe, at_probe), (n, cost_ms)],
    })
}

/// The median time of `tuning`'s request at `n`, in milliseconds, over its timings.
fn time(port: u16, tuning: &Tuning, n: u32) -> Result<f64, String> {
    let path = tuning.target_for(n);
    let mut times = Vec::with_capacity(tuning.timings);
    for _ in 0..tuning.timings {
        let started = Instant::now();
        match get(port, &path) {
            Ok((200, _)) => times.push(started.elapsed()),
            Ok((status, _)) => return Err(format!("{path} answered {status}")),
            Err(e) => return Err(format!("{path}: {e}")),
        }
    }
    Ok(median_ms(&mut times))
}

fn median_ms(times: &mut [Duration]) -> f64 {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    ms(times[times.len() / 2])
}

#[cfg(test)]
mod tests {
    use super::super::tests::started_as;
    use super::*;

    /// The dynamic page of a real server (lab-app under `loops`), tuned as the lab
    /// tunes it: timed at n = 0, at the probe and at the n chosen, which it answers.
    #[test]
    fn a_running_servers_page_is_tuned() {
        let work = tempfile::tempdir().unwrap();
        super::super::write_files(&work.path().join("www")).unwrap();
        let (_running, port) = started_as(
            "dynamic",
            "proscenium:loops",
            "http://127.0.0.1:9/",
            work.path(),
        );
        let page = tune(port, &crate::calibration::PAGE).unwrap();
        let timed: Vec<u32> = page.timed_ms.iter().map(|t| t.0).collect();
        assert_eq!(timed, [0, 1_250_000, page.n]);
        let (status, body) =
            super::super::get(port, &crate::calibration::PAGE.target_for(page.n)).unwrap();
        assert_eq!(status, 200);
        assert!(
            body.contains(&format!("<p>{} iterations: ", page.n)),
            "{body}"
        );
    }
}
