//! The progress bar: scenario, server and step, and what the lab is doing meanwhile
//! (building, installing, waiting) as lines above it.

use indicatif::{ProgressBar, ProgressStyle};

/// A handle on the lab's progress bar; clones show on the same bar.
#[derive(Debug, Clone)]
pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// A bar, hidden when stderr is not a terminal (tests, CI).
    pub(crate) fn new() -> Self {
        let bar = ProgressBar::new(0);
        bar.set_style(
            ProgressStyle::with_template("{elapsed_precise} [{bar:30}] {pos}/{len} {msg}")
                .map(|s| s.progress_chars("=> "))
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        Self { bar }
    }

    /// Starts over for a scenario of `steps` steps.
    pub(crate) fn restart(&self, steps: u64) {
        self.bar.reset();
        self.bar.set_length(steps);
    }

    /// Shows where the lab is: `scenario / server / step`.
    pub(crate) fn at(&self, scenario: &str, server: &str, step: &str) {
        self.bar
            .set_message(format!("{scenario} / {server} / {step}"));
    }

    /// Counts one step done.
    pub(crate) fn advance(&self) {
        self.bar.inc(1);
    }

    /// Prints a line above the bar.
    pub(crate) fn say(&self, line: impl AsRef<str>) {
        if self.bar.is_hidden() {
            eprintln!("{}", line.as_ref());
        } else {
            self.bar.println(line);
        }
    }

    pub(crate) fn finish(&self) {
        self.bar.finish_and_clear();
    }
}
