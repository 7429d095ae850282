//! Sums of expositions: the prefork supervisor's `/metrics` adds its workers' texts
//! series by series — counters, gauges and each histogram bucket alike — so whatever
//! family a worker serves (today's or one added later) is summed without a list here.
//!
//! A series is a sample line's name and labels, compared as text: every process runs
//! the same binary, so the same series is written the same way in each.

use std::collections::HashMap;

/// Expositions added up, families in the order they first appeared.
#[derive(Debug, Default)]
pub(crate) struct Total {
    families: Vec<Family>,
    /// Each series' family and place in it.
    series: HashMap<String, (usize, usize)>,
    /// Each family's place, by name.
    names: HashMap<String, usize>,
}

#[derive(Debug)]
struct Family {
    /// Its `# HELP` and `# TYPE` lines, from the first exposition that had them.
    header: Vec<String>,
    /// What its `# TYPE` line says: `counter`, `gauge`, `histogram`…
    kind: String,
    samples: Vec<(String, Value)>,
}

/// A sample's value: integers stay integers; anything else is a float.
#[derive(Debug, Clone, Copy)]
enum Value {
    Int(i64),
    Float(f64),
}

impl Value {
    fn parse(text: &str) -> Option<Self> {
        match text.parse() {
            Ok(n) => Some(Self::Int(n)),
            Err(_) => text.parse().ok().map(Self::Float),
        }
    }

    fn plus(self, other: Self) -> Self {
        match (self, other) {
            (Self::Int(a), Self::Int(b)) => Self::Int(a.saturating_add(b)),
            (a, b) => Self::Float(a.float() + b.float()),
        }
    }

    fn float(self) -> f64 {
        match self {
            Self::Int(n) => n as f64,
            Self::Float(x) => x,
        }
    }
}

impl std::fmt::Display for Value {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Int(n) => write!(f, "{n}"),
            Self::Float(x) => write!(f, "{x}"),
        }
    }
}

impl Total {
    /// Adds every series of the exposition `text`.
    pub(crate) fn add(&mut self, text: &str) {
        self.add_where(text, |_| true);
    }

    /// Adds only the series that never decrease (counters and histograms) of the
    /// exposition `text`: what a worker that is gone still counts for.
    pub(crate) fn add_monotonic(&mut self, text: &str) {
        self.add_where(text, |kind| matches!(kind, "counter" | "histogram"));
    }

    fn add_where(&mut self, text: &str, keep: impl Fn(&str) -> bool) {
        let mut family = None;
        for line in text.lines() {
            if let Some(rest) = line.strip_prefix("# ") {
                family = self.header(rest, line);
            } else if let Some((series, value)) = line.rsplit_once(' ') {
                let (Some(at), Some(value)) = (family, Value::parse(value)) else {
                    continue;
                };
                if keep(&self.families[at].kind) {
                    self.sample(at, series, value);
                }
            }
        }
    }

    /// Notes a `# HELP` or `# TYPE` line (`rest` after the `# `); returns the family
    /// it names.
    fn header(&mut self, rest: &str, line: &str) -> Option<usize> {
        let mut words = rest.splitn(3, ' ');
        let (what, name) = (words.next()?, words.next()?);
        if !matches!(what, "HELP" | "TYPE") {
            return None;
        }
        let at = match self.names.get(name) {
            Some(&at) => at,
            None => {
                self.names.insert(name.to_owned(), self.families.len());
                self.families.push(Family {
                    header: Vec::new(),
                    kind: String::new(),
                    samples: Vec::new(),
                });
                self.families.len() - 1
            }
        };
        let family = &mut self.families[at];
        if !family
            .header
            .iter()
            .any(|h| h.starts_with(&format!("# {what} ")))
        {
            family.header.push(line.to_owned());
            if what == "TYPE" {
                family.kind = words.next().unwrap_or_default().to_owned();
            }
        }
        Some(at)
    }

    fn sample(&mut self, at: usize, series: &str, value: Value) {
        match self.series.get(series) {
            Some(&(f, s)) => {
                let sum = &mut self.families[f].samples[s].1;
                *sum = sum.plus(value);
            }
            None => {
                let samples = &mut self.families[at].samples;
                self.series.insert(series.to_owned(), (at, samples.len()));
                samples.push((series.to_owned(), value));
            }
        }
    }

    /// Returns the sum as an exposition, without the families that have no series.
    pub(crate) fn render(&self) -> String {
        let mut text = String::new();
        // A family with no series here: only a gone worker's gauges named it.
        for family in self.families.iter().filter(|f| !f.samples.is_empty()) {
            for line in &family.header {
                text.push_str(line);
                text.push('\n');
            }
            for (series, value) in &family.samples {
                text.push_str(&format!("{series} {value}\n"));
            }
        }
        text
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const WORKER: &str = "\
# HELP requests Requests.
# TYPE requests counter
requests_total{route=\"/a b\",status=\"2xx\"} 3
# HELP open Open.
# TYPE open gauge
open 2
# HELP latency Latency.
# TYPE latency histogram
latency_sum{route=\"/\"} 0.25
latency_count{route=\"/\"} 2
latency_bucket{le=\"0.1\",route=\"/\"} 1
latency_bucket{le=\"+Inf\",route=\"/\"} 2
";

    #[test]
    fn series_of_every_kind_are_summed_line_by_line() {
        let mut total = Total::default();
        total.add(WORKER);
        total.add(&WORKER.replace("} 3", "} 4").replace("0.25", "0.5"));
        let text = total.render();
        assert!(
            text.contains("requests_total{route=\"/a b\",status=\"2xx\"} 7\n"),
            "{text}"
        );
        assert!(text.contains("\nopen 4\n"), "{text}");
        assert!(text.contains("latency_sum{route=\"/\"} 0.75\n"), "{text}");
        assert!(text.contains("latency_bucket{le=\"+Inf\",route=\"/\"} 4\n"));
        assert_eq!(text.matches("# TYPE requests counter").count(), 1);
        assert!(text.starts_with("# HELP requests Requests.\n# TYPE requests counter\n"));
    }

    #[test]
    fn a_gone_workers_counters_and_histograms_are_kept_and_its_gauges_dropped() {
        let mut total = Total::default();
        total.add_monotonic(WORKER);
        let text = total.render();
        assert!(text.contains("requests_total{route=\"/a b\",status=\"2xx\"} 3\n"));
        assert!(text.contains("latency_count{route=\"/\"} 2\n"));
        assert!(!text.contains("\nopen "), "{text}");
    }

    #[test]
    fn lines_that_are_not_samples_are_skipped() {
        let mut total = Total::default();
        total.add("# EOF\nstray 1\n# TYPE x counter\nx_total one\nx_total 2\n\n");
        assert_eq!(total.render(), "# TYPE x counter\nx_total 2\n");
    }
}
