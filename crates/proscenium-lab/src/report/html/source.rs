//! The page's opening: what the source measured, which server stands in for which of
//! its own, its claim, and the verdict on it with the numbers it rests on.

use std::fmt::Write;

use super::esc;
use crate::report::sources;
use crate::results::{Finding, Results};

/// Writes the source's section for `results`, or says the scenario has none.
pub(super) fn section(html: &mut String, results: &Results) {
    let Some(source) = sources::of(&results.scenario) else {
        html.push_str("<p>No source figure for this scenario.</p>");
        return;
    };
    let _ = write!(
        html,
        "<h2>The source: {}</h2><p>{}</p><table><tr><th class=l>the source's server</th>\
         <th class=l>here in its place</th></tr>",
        esc(source.figure),
        esc(source.measured)
    );
    for (theirs, ours) in source.stand_ins {
        let _ = write!(
            html,
            "<tr><td class=l>{}</td><td class=l>{}</td></tr>",
            esc(theirs),
            esc(ours)
        );
    }
    let _ = write!(
        html,
        "</table><p>The claim tested: {}</p>",
        esc(source.claim)
    );
    if let Some(finding) = sources::judge(results) {
        verdict(html, &finding);
    }
}

/// Writes the verdict, why, and the numbers it rests on.
fn verdict(html: &mut String, finding: &Finding) {
    let _ = write!(
        html,
        "<p><b>Verdict: {}</b> — {}.</p>",
        finding.verdict.text(),
        esc(&finding.because)
    );
    if finding.rows.is_empty() {
        return;
    }
    html.push_str(
        "<table><tr><th class=l>compared</th><th>the source</th><th>here (median)</th>\
         <th class=l>unit</th></tr>",
    );
    let shown = |v: Option<f64>| v.map_or_else(|| "—".to_owned(), figure);
    for row in &finding.rows {
        let _ = write!(
            html,
            "<tr><td class=l>{}</td><td>{}</td><td>{}</td><td class=l>{}</td></tr>",
            esc(&row.what),
            shown(row.source),
            shown(row.here),
            esc(&row.unit)
        );
    }
    html.push_str("</table>");
}

/// A number as the table prints it: whole from 100 up, two decimals below.
fn figure(v: f64) -> String {
    if v.abs() >= 100.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}
