//! A job's page (the `cep` scenario): how its figures are made, and the table of every
//! run — its own time, wall time, CPU, how busy it kept its cores, memory, and the
//! output it must share with every other run.

use std::fmt::Write;

use super::esc;
use crate::results::Results;

/// How a job's figures are made.
pub(super) const READING: &str = "<h2>Reading the figures</h2><ul>\
<li>Each run is the job from start to exit over the same generated log, pinned to the cores \
below; its execution time is its own, from the first line read to the last report (Table 1's), \
and the wall time adds its start-up.</li>\
<li>CPU is the whole process's, every thread, user and system; busy is CPU ÷ (wall time × \
its cores).</li>\
<li>The runs go in interleaved rounds, each round starting with the next run. A bar is the \
median over the rounds, its whisker from the least to the most.</li>\
<li>A run whose alarms or entries differ from the first run's is <b>invalid</b> and not drawn: \
a partition must not change the output.</li></ul>";

/// Whether `results` are a job's runs rather than steps of load.
pub(super) fn is_job(results: &Results) -> bool {
    results.steps.iter().any(|s| s.job.is_some())
}

/// Writes the table of `results`' runs.
pub(super) fn table(html: &mut String, results: &Results) {
    html.push_str(
        "<h2>Runs</h2><table><tr><th class=l>configuration</th><th class=l>row</th>\
         <th>round</th><th>execution s</th><th>wall s</th><th>CPU s</th><th>busy %</th>\
         <th>alarms</th><th>entries</th><th>peak RSS MiB</th><th class=l>not drawn because</th></tr>",
    );
    for s in &results.steps {
        let Some(job) = s.job else { continue };
        let _ = write!(
            html,
            "<tr><td class=l>{}</td><td class=l>{}</td><td>{}</td><td>{:.3}</td><td>{:.3}</td>\
             <td>{:.2}</td><td>{:.0}</td><td>{}</td><td>{}</td><td>{:.1}</td><td class=l>{}</td></tr>",
            esc(&s.server),
            esc(&s.label),
            s.round,
            job.elapsed_s,
            job.wall_s,
            job.cpu_s,
            s.server_utilisation.unwrap_or(0.0) * 100.0,
            job.alarms,
            job.entries,
            s.peak_rss_kib as f64 / 1024.0,
            esc(s.invalid.as_deref().map_or("", |why| why)),
        );
    }
    html.push_str("</table>");
}
