//! The verdict a report found on its source's claim, recorded with the results
//! (`report/sources/` judges it).

use serde::{Deserialize, Serialize};

/// Whether the run shows what the source claimed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    /// The claim holds here, in the source's terms.
    Reproduced,
    /// Some of it holds; the reasons say which.
    Partly,
    /// The run contradicts it.
    NotReproduced,
    /// This run cannot tell: a server or a step it needs is missing, or the machine
    /// cannot stage it.
    NotTestable,
}

impl Verdict {
    /// The verdict when the claim held in `held` of `measured` cases: all, none or
    /// some; `None` when none was measured.
    pub(crate) fn of_cases(held: usize, measured: usize) -> Option<Self> {
        match (held, measured) {
            (_, 0) => None,
            (h, m) if h == m => Some(Self::Reproduced),
            (0, _) => Some(Self::NotReproduced),
            _ => Some(Self::Partly),
        }
    }

    /// The verdict on a claim of one part: it held or it did not.
    pub(crate) fn of_one(held: bool) -> Self {
        if held {
            Self::Reproduced
        } else {
            Self::NotReproduced
        }
    }

    /// The verdict on a claim of two parts: both held, neither, or one.
    pub(crate) fn of_both(first: bool, second: bool) -> Self {
        match (first, second) {
            (true, true) => Self::Reproduced,
            (false, false) => Self::NotReproduced,
            _ => Self::Partly,
        }
    }

    /// The verdict as the pages print it.
    pub fn text(self) -> &'static str {
        match self {
            Self::Reproduced => "reproduced",
            Self::Partly => "partly reproduced",
            Self::NotReproduced => "not reproduced",
            Self::NotTestable => "not testable here",
        }
    }
}

/// A verdict, why, and the numbers it rests on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Finding {
    /// The source's work and figure: "Hessenberger 2014 (thesis), Fig. 5.1–5.4".
    pub figure: String,
    /// Whether the claim holds here.
    pub verdict: Verdict,
    /// One sentence: the rule and what the numbers did.
    pub because: String,
    /// The numbers: the source's beside ours, where it gives one.
    pub rows: Vec<Comparison>,
}

/// One number of the source's beside ours.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// What is compared: "p99 of light requests, node, 15 % heavy".
    pub what: String,
    /// The source's value, when it gives one.
    pub source: Option<f64>,
    /// Ours: the median over the rounds, when measured.
    pub here: Option<f64>,
    /// The unit of both: "ms", "req/s", "×".
    pub unit: String,
}

impl Finding {
    pub(crate) fn new(verdict: Verdict, because: impl Into<String>, rows: Vec<Comparison>) -> Self {
        Self {
            figure: String::new(),
            verdict,
            because: because.into(),
            rows,
        }
    }

    /// The verdict when a rule's servers were not all run.
    pub(crate) fn missing(servers: &[&str]) -> Self {
        Self::new(
            Verdict::NotTestable,
            format!("the rule needs {} measured in this run", servers.join(", ")),
            Vec::new(),
        )
    }
}

impl Comparison {
    pub(crate) fn new(
        what: impl Into<String>,
        source: Option<f64>,
        here: Option<f64>,
        unit: &str,
    ) -> Self {
        Self {
            what: what.into(),
            source,
            here,
            unit: unit.to_owned(),
        }
    }
}
