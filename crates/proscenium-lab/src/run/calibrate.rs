//! A server's calibration (see `calibration.rs`): in its first turn, after its warm-up
//! and before its steps, the saturation probes the plan asks for (each recorded as a
//! step, cooled down after) and the timing of the heavy request's candidates.

use std::time::{Duration, Instant};

use super::round::Bench;
use super::{cool_down, get};
use crate::calibration::{self, HEAVY_CANDIDATES, HEAVY_COST_MS, HEAVY_TIMINGS, HeavyRequest};
use crate::process::Running;
use crate::results::Step;
use crate::servers::ServerSpec;
use crate::{Calibration, Error};

impl Bench<'_> {
    /// Measures what the plan asks of `server`, running on `port` in `round`; returns
    /// it and the probes' steps.
    ///
    /// # Errors
    ///
    /// [`Error::Calibration`] when a probe gets no 2xx answer or a heavy candidate
    /// is not answered with a 200; the generator's and interruption errors.
    pub(super) fn calibrate(
        &self,
        server: &ServerSpec,
        running: &mut Running,
        port: u16,
        round: u32,
    ) -> Result<(Calibration, Vec<Step>), Error> {
        let base = super::base_url(port);
        let fail = |reason: String| Error::Calibration {
            server: server.to_string(),
            reason,
        };
        let mut calibration = Calibration::default();
        let mut steps = Vec::new();
        for probe in calibration::probes(self.plan) {
            let what = format!("calibrating: saturation of {}", probe.label);
            self.progress.at(self.plan.name, server.name(), &what);
            let step = self.measure(server, &probe, running, &base, round)?;
            let rps = step.measured.achieved_rps;
            if rps < 1.0 {
                return Err(fail(format!("no 2xx answers to {}", probe.label)));
            }
            calibration.saturation_rps.push((probe.label.clone(), rps));
            steps.push(step);
            cool_down(running.pid());
        }
        if calibration::needs_heavy(self.plan) {
            let what = "calibrating: the heavy request's cost";
            self.progress.at(self.plan.name, server.name(), what);
            let timed = time_heavy(port).map_err(&fail)?;
            let heavy = HeavyRequest::choose(timed).ok_or_else(|| fail("no n timed".into()))?;
            calibration.heavy = Some(heavy);
        }
        Ok((calibration, steps))
    }
}

/// Times the heavy request for each candidate n, ascending, [`HEAVY_TIMINGS`] requests
/// one after another (the server otherwise idle); returns each n's median in
/// milliseconds, up to the first that costs more than [`HEAVY_COST_MS`].
fn time_heavy(port: u16) -> Result<Vec<(u32, f64)>, String> {
    let mut timed = Vec::new();
    for n in HEAVY_CANDIDATES {
        let path = calibration::heavy_target(n);
        let mut times = Vec::with_capacity(HEAVY_TIMINGS);
        for _ in 0..HEAVY_TIMINGS {
            let started = Instant::now();
            match get(port, &path) {
                Ok((200, _)) => times.push(started.elapsed()),
                Ok((status, _)) => return Err(format!("{path} answered {status}")),
                Err(e) => return Err(format!("{path}: {e}")),
            }
        }
        let median = median_ms(&mut times);
        timed.push((n, median));
        if median > HEAVY_COST_MS {
            break;
        }
    }
    Ok(timed)
}

fn median_ms(times: &mut [Duration]) -> f64 {
    times.sort();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    ms(times[times.len() / 2])
}
