//! `report.html`: one self-contained page.

use std::fmt::Write;

use super::Figure;
use crate::results::Results;

/// Escapes text for HTML.
fn esc(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

const STYLE: &str = "body{font-family:sans-serif;max-width:70rem;margin:2rem auto;padding:0 1rem;color:#222}\
table{border-collapse:collapse;font-size:.85rem}td,th{border:1px solid #ccc;padding:.2rem .4rem;text-align:right}\
th{background:#f3f3f3}td.l,th.l{text-align:left}code{font-size:.8rem}figure{margin:1rem 0}";

/// The page for `results` and its drawn `figures`.
pub(super) fn page(results: &Results, figures: &[Figure]) -> String {
    let mut html = String::new();
    let title = format!("Proscenium lab: {}", results.scenario);
    let _ = write!(
        html,
        "<!doctype html><html lang=en><head><meta charset=utf-8><title>{t}</title><style>{STYLE}</style></head><body>\
         <h1>{t}</h1><p>Reproduces {r}. Profile <b>{p}</b>.</p>",
        t = esc(&title),
        r = esc(&results.reproduces),
        p = esc(&results.profile),
    );
    let m = &results.machine;
    let _ = write!(
        html,
        "<h2>Machine</h2><p>{} — {} cores, {} GiB, Linux {}</p><h2>Versions</h2><ul>",
        esc(&m.cpu),
        m.cores,
        m.memory_gib,
        esc(&m.kernel)
    );
    for (name, version) in &results.versions {
        let _ = write!(
            html,
            "<li>{}: <code>{}</code></li>",
            esc(name),
            esc(version)
        );
    }
    html.push_str("</ul><h2>Deviations from the source</h2><ul>");
    for d in &results.deviations {
        let _ = write!(html, "<li>{}</li>", esc(d));
    }
    html.push_str("</ul><h2>Plots</h2>");
    for f in figures {
        let _ = write!(
            html,
            "<figure id=\"{}\">{}<figcaption>{} (<a href=\"{}.png\">PNG</a>)</figcaption></figure>",
            esc(&f.file),
            f.svg,
            esc(&f.title),
            esc(&f.file)
        );
    }
    html.push_str("<h2>Servers</h2><table><tr><th class=l>server</th><th class=l>cores</th><th class=l>command, or why skipped</th></tr>");
    for s in &results.servers {
        let how = match (&s.command, &s.skipped) {
            (_, Some(why)) => format!("skipped: {}", esc(why)),
            (Some(command), None) => format!(
                "<code>{}</code>{}",
                esc(command),
                s.collapsed
                    .iter()
                    .map(|c| format!("<br>{}", esc(c)))
                    .collect::<String>()
            ),
            (None, None) => String::new(),
        };
        let _ = write!(
            html,
            "<tr><td class=l>{}</td><td class=l>{}</td><td class=l>{how}</td></tr>",
            esc(&s.name),
            esc(&s.cores)
        );
    }
    html.push_str(
        "</table><h2>Steps</h2><table><tr><th class=l>server</th><th class=l>group</th><th class=l>step</th>\
         <th>offered/s</th><th>achieved/s</th><th>mean ms</th><th>p50</th><th>p90</th><th>p99</th><th>max</th>\
         <th class=l>statuses</th><th>CPU µs/req</th><th>peak RSS MiB</th></tr>",
    );
    for s in &results.steps {
        let l = &s.measured.latency_ms;
        let statuses: Vec<String> = s
            .measured
            .statuses
            .iter()
            .filter(|(_, n)| **n > 0)
            .map(|(k, n)| format!("{k}: {n}"))
            .collect();
        let _ = write!(
            html,
            "<tr><td class=l>{}</td><td class=l>{}</td><td class=l>{}</td><td>{}</td><td>{:.0}</td>\
             <td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td>{:.2}</td><td class=l>{}</td><td>{}</td><td>{:.1}</td></tr>",
            esc(&s.server),
            esc(&s.group),
            esc(&s.label),
            s.offered_rps.map_or(String::new(), |r| format!("{r:.0}")),
            s.measured.achieved_rps,
            l.mean,
            l.p50,
            l.p90,
            l.p99,
            l.max,
            esc(&statuses.join(", ")),
            s.cpu_us_per_request
                .map_or(String::new(), |c| format!("{c:.2}")),
            s.peak_rss_kib as f64 / 1024.0,
        );
    }
    html.push_str("</table><h2>Commands</h2><ul>");
    for s in &results.steps {
        let _ = write!(
            html,
            "<li>{} / {}: <code>{}</code></li>",
            esc(&s.server),
            esc(&s.label),
            esc(&s.command)
        );
    }
    html.push_str("</ul></body></html>\n");
    html
}
