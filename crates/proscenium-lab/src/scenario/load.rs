//! What a step sends: the load a plan gives each step, closed or open loop, and how a
//! plan reshapes it per server (a rate, a probe, a warm-up).

use crate::calibration::PROBE_CONNECTIONS;

/// What one step sends.
#[derive(Debug, Clone)]
pub(crate) enum Load {
    /// `conns` connections, each keeping `depth` requests in flight (pipelining above 1),
    /// sending `targets` in turn (see [`method_and_path`]), from `threads` generator
    /// threads (one unless a step needs more to keep its connections busy).
    Closed {
        targets: Vec<String>,
        conns: usize,
        depth: usize,
        threads: usize,
        seconds: u64,
    },
    /// `rate` requests a second over `targets`, taken in turn (a target repeated k
    /// times is k shares of the mix).
    Open {
        targets: Vec<String>,
        rate: u64,
        seconds: u64,
    },
}

/// Splits a target, `/path` (a GET) or `METHOD /path`, into its method and path.
pub(crate) fn method_and_path(target: &str) -> (&str, &str) {
    target.split_once(' ').unwrap_or(("GET", target))
}

impl Load {
    /// The requests a closed load keeps in flight (connections × depth); `None` for
    /// open loads.
    pub(crate) fn in_flight(&self) -> Option<u64> {
        match self {
            Self::Closed { conns, depth, .. } => Some((conns * depth) as u64),
            Self::Open { .. } => None,
        }
    }

    /// The requests each connection of a closed load keeps in flight; `None` for open
    /// loads.
    pub(crate) fn depth(&self) -> Option<u64> {
        match self {
            Self::Closed { depth, .. } => Some(*depth as u64),
            Self::Open { .. } => None,
        }
    }

    /// The rate offered, for open loads.
    pub(crate) fn offered(&self) -> Option<f64> {
        match self {
            Self::Closed { .. } => None,
            Self::Open { rate, .. } => Some(*rate as f64),
        }
    }

    /// The requests an open load should send in all: its rate times its duration.
    pub(crate) fn offered_requests(&self) -> Option<u64> {
        match self {
            Self::Closed { .. } => None,
            Self::Open { rate, seconds, .. } => Some(rate * seconds),
        }
    }

    /// The requests the load sends in turn.
    pub(crate) fn targets(&self) -> &[String] {
        match self {
            Self::Closed { targets, .. } | Self::Open { targets, .. } => targets,
        }
    }

    pub(crate) fn targets_mut(&mut self) -> &mut [String] {
        match self {
            Self::Closed { targets, .. } | Self::Open { targets, .. } => targets,
        }
    }

    /// The same open load at `rate`, lasting at least `min_seconds`; a closed load is
    /// returned as it is.
    pub(crate) fn at_rate(&self, rate: u64, min_seconds: u64) -> Self {
        let mut load = self.clone();
        if let Self::Open {
            rate: r, seconds, ..
        } = &mut load
        {
            *r = rate;
            *seconds = (*seconds).max(min_seconds);
        }
        load
    }

    /// A closed loop of [`PROBE_CONNECTIONS`] over the same targets for `seconds`: as
    /// many requests as the server answers, the load of a saturation probe and of a
    /// run-time compiler's warm-up.
    pub(crate) fn as_probe(&self, seconds: u64) -> Self {
        Self::Closed {
            targets: self.targets().to_vec(),
            conns: PROBE_CONNECTIONS,
            depth: 1,
            threads: 1,
            seconds,
        }
    }

    /// The same load for `seconds` (the warm-up's).
    pub(crate) fn for_seconds(&self, seconds: u64) -> Self {
        let mut load = self.clone();
        match &mut load {
            Self::Closed { seconds: s, .. } | Self::Open { seconds: s, .. } => *s = seconds,
        }
        load
    }

    /// What the load sends, as `k × METHOD /path` in the order of the mix (pipelined
    /// closed loads say how deep).
    pub(crate) fn mix(&self) -> Vec<String> {
        let (targets, depth) = match self {
            Self::Closed { targets, depth, .. } => (targets, *depth),
            Self::Open { targets, .. } => (targets, 1),
        };
        let mut mix: Vec<(String, usize)> = Vec::new();
        for target in targets {
            let (method, path) = method_and_path(target);
            let shown = format!("{method} {path}");
            match mix.iter_mut().find(|(t, _)| *t == shown) {
                Some((_, k)) => *k += 1,
                None => mix.push((shown, 1)),
            }
        }
        let pipelined = if depth > 1 {
            format!(", pipelined {depth} deep")
        } else {
            String::new()
        };
        mix.into_iter()
            .map(|(t, k)| format!("{k} × {t}{pipelined}"))
            .collect()
    }

    #[cfg(test)]
    pub(crate) fn seconds(&self) -> u64 {
        match self {
            Self::Closed { seconds, .. } | Self::Open { seconds, .. } => *seconds,
        }
    }
}
