//! How much effort a run takes, which every plan is drawn to.

/// How much effort a run takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Profile {
    /// At most three minutes of load a scenario and round on a 2-core machine
    /// (on-system's four ramps, on eight servers: about seven and a half); three rounds of all
    /// twelve scenarios of servers, with on-system's saturation probes, take 82 minutes
    /// of load, and about twice that with starts, warm-ups, checks and cool-downs;
    /// `cep`'s three rounds of its eight runs take one to two minutes.
    Quick,
    /// The sources' parameters where the machine allows.
    Full,
}

impl Profile {
    pub(crate) fn name(self) -> &'static str {
        match self {
            Self::Quick => "quick",
            Self::Full => "full",
        }
    }
}
