//! The table of every step of every round: what was offered, sent, achieved and
//! drained, the latency over all sent requests beside the failed share and the
//! answered requests' own p99, what the server (and the generator) spent, and why a
//! step is not drawn.

use std::fmt::Write;

use super::esc;
use crate::load::Measured;
use crate::results::Step;
use crate::scenario::MIN_ANSWERS;

const HEAD: &str = "<h2>Steps</h2><table><tr><th class=l>server</th><th class=l>group</th>\
<th class=l>step</th><th>round</th><th>offered/s</th><th>sent %</th><th>achieved/s</th><th>failed %</th>\
<th>drain s (answers)</th><th>mean ms</th><th>p50</th><th>p90</th><th>p99</th><th>max</th>\
<th>answered p99</th><th class=l>statuses</th><th>CPU µs/req</th><th>server busy %</th>\
<th>generator busy %</th><th>peak RSS MiB</th><th class=l>not drawn because</th></tr>";

/// Writes the table of `results`' steps.
pub(super) fn table(html: &mut String, results: &crate::results::Results) {
    html.push_str(HEAD);
    for s in &results.steps {
        row(html, s);
    }
    html.push_str("</table>");
}

/// Writes step `s`'s row.
fn row(html: &mut String, s: &Step) {
    let m = &s.measured;
    let l = &m.latency_ms;
    let _ = write!(
        html,
        "<tr><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td>\
         <td>{:.0}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td>\
         <td>{:.2}</td><td>{}</td><td class=l>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}</td><td class=l>{}</td></tr>",
        esc(&s.server),
        esc(&s.group),
        esc(&s.label),
        if s.warmup {
            "warm-up".to_owned()
        } else {
            s.round.to_string()
        },
        opt(s.offered_rps, 0),
        opt(s.sent_share.map(|v| v * 100.0), 1),
        m.achieved_rps,
        opt(m.failed_share().map(|v| v * 100.0), 1),
        drain(m),
        l.mean,
        l.p50,
        l.p90,
        l.p99,
        l.max,
        opt(m.answered_latency_ms.map(|a| a.p99), 2),
        esc(&statuses(m)),
        opt(s.cpu_us_per_request, 2),
        opt(s.server_utilisation.map(|u| u * 100.0), 0),
        opt(s.generator_utilisation.map(|u| u * 100.0), 0),
        s.peak_rss_kib as f64 / 1024.0,
        esc(&why_not_drawn(s)),
    );
}

/// `v` with `digits` decimals, or nothing.
fn opt(v: Option<f64>, digits: usize) -> String {
    v.map_or(String::new(), |v| format!("{v:.digits$}"))
}

/// The drain's seconds and answers, when recorded (open loop).
fn drain(m: &Measured) -> String {
    match (m.drain_s, m.drain_answers) {
        (Some(s), Some(n)) => format!("{s:.2} ({n})"),
        _ => String::new(),
    }
}

/// The counts of each status class seen.
fn statuses(m: &Measured) -> String {
    let statuses: Vec<String> = m
        .statuses
        .iter()
        .filter(|(_, n)| **n > 0)
        .map(|(k, n)| format!("{k}: {n}"))
        .collect();
    statuses.join(", ")
}

/// Why a step's figures are left off the plots, or an empty string.
fn why_not_drawn(step: &Step) -> String {
    if step.warmup {
        "warm-up".to_owned()
    } else if let Some(why) = &step.invalid {
        format!("invalid: {why}")
    } else if !step.has_enough_answers() {
        format!(
            "latency and CPU: {} answers, under {MIN_ANSWERS}",
            step.measured.requests
        )
    } else {
        String::new()
    }
}
