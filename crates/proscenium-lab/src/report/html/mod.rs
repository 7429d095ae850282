//! `report.html`: one self-contained page.

use std::fmt::Write;

use super::Figure;
use crate::provenance::Provenance;
use crate::results::Results;

mod jobs;
mod source;
mod steps;

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

/// How the figures are made, said on every page.
const READING: &str = "<h2>Reading the figures</h2><ul>\
<li>Latency is over every request sent: a request that failed (timed out, broke, or was answered \
with a status other than 2xx) counts at the 10 s timeout, so a server cannot look fast by failing. \
The failed share is beside it; <i>answered p99</i> is the answered requests' own.</li>\
<li>Achieved/s counts the 2xx answers completed within the send window; answers after it are \
the drain, reported apart.</li>\
<li>Open loop: a step whose generator sent under 95 % of the offered requests is <b>invalid</b> \
(the server never saw the offered rate) and is not drawn.</li>\
<li>A latency or CPU figure resting on fewer than 100 answers is not drawn.</li>\
<li>Closed loop: a step whose requests still in flight at its end (one a connection, or the \
pipelining depth) are over 10 % of all its requests is <b>invalid</b>: wrk's figures leave them \
out, and they are the longest waits. So is one whose answers show fewer requests in flight than \
it kept (Little's law: answers a second × mean response time) by over 10 %, from a generator under \
half busy: the others were kept waiting unserved (connections not accepted, or never taken in \
turn), and a request never answered is in no latency. (A busier generator holds requests of its \
own, each connection's next one waiting its turn.)</li>\
<li>Each server gets a warm-up before its steps (in the steps table with its load, never \
counted); the steps run in \
interleaved rounds, each round starting with the next server. A point is the median over the \
rounds, its whisker from the least to the most.</li>\
<li>Utilisation is the server's CPU time ÷ (the send window and drain × its cores): under \
100 %, the server was not the bottleneck. The generator's is its CPU time ÷ (its run × its cores): \
near 100 %, the generator may have been.</li></ul>";

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
    source::section(&mut html, results);
    provenance(&mut html, results);
    let job = jobs::is_job(results);
    html.push_str(if job { jobs::READING } else { READING });
    deviations(&mut html, results);
    plots(&mut html, figures);
    servers(&mut html, results);
    if job {
        jobs::table(&mut html, results);
    } else {
        steps::table(&mut html, results);
    }
    commands(&mut html, results);
    html.push_str("</ul></body></html>\n");
    html
}

/// Where the run departs from its source.
fn deviations(html: &mut String, results: &Results) {
    html.push_str("<h2>Deviations from the source</h2><ul>");
    for d in &results.deviations {
        let _ = write!(html, "<li>{}</li>", esc(d));
    }
    html.push_str("</ul>");
}

/// The plots, each as its SVG inline with a link to its PNG.
fn plots(html: &mut String, figures: &[Figure]) {
    html.push_str("<h2>Plots</h2>");
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
}

/// Every step's command, to run it again.
fn commands(html: &mut String, results: &Results) {
    html.push_str("<h2>Commands</h2><ul>");
    for s in &results.steps {
        let _ = write!(
            html,
            "<li>{} / {} (round {}): <code>{}</code></li>",
            esc(&s.server),
            esc(&s.label),
            s.round,
            esc(&s.command)
        );
    }
}

/// When, from what, with which command and cores, on what machine and versions.
fn provenance(html: &mut String, results: &Results) {
    html.push_str("<h2>How this was made</h2>");
    match &results.provenance {
        Some(p) => recorded(html, p),
        None => html.push_str(
            "<p>Date, commit, command, rounds and CPU split: not recorded (a report from \
             before the lab recorded them).</p>",
        ),
    }
    machine(html, results);
}

/// The machine the run was on, and the versions of the programs involved.
fn machine(html: &mut String, results: &Results) {
    let m = &results.machine;
    let _ = write!(
        html,
        "<p>Machine: {} — {} cores, {} GiB, Linux {}</p><ul>",
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
    html.push_str("</ul>");
}

/// What `p` recorded: when, from which commit, the command, the cores and each step's
/// targets.
fn recorded(html: &mut String, p: &Provenance) {
    let _ = write!(
        html,
        "<p>On {} from commit <code>{}</code>, {} round{}: <code>{}</code></p>\
         <p>Servers on cores <b>{}</b>, load on cores <b>{}</b>.</p>",
        esc(&p.date),
        esc(&p.commit),
        p.rounds,
        if p.rounds == 1 { "" } else { "s" },
        esc(&p.command),
        esc(&p.server_cpus),
        esc(&p.load_cpus)
    );
    html.push_str("<table><tr><th class=l>step</th><th class=l>targets, in turn</th></tr>");
    for (step, mix) in &p.targets {
        let _ = write!(
            html,
            "<tr><td class=l>{}</td><td class=l>{}</td></tr>",
            esc(step),
            esc(&mix.join(", "))
        );
    }
    html.push_str("</table>");
}

/// Each server's cores and command, or why it was skipped, what it was calibrated at
/// and where it collapsed.
fn servers(html: &mut String, results: &Results) {
    html.push_str("<h2>Servers</h2><table><tr><th class=l>server</th><th class=l>cores</th><th class=l>command, or why skipped</th></tr>");
    for s in &results.servers {
        let how = match (&s.command, &s.skipped) {
            (_, Some(why)) => format!("skipped: {}", esc(why)),
            (Some(command), None) => format!(
                "<code>{}</code>{}",
                esc(command),
                s.calibration
                    .iter()
                    .map(|c| format!("calibrated: {}", c.describe()))
                    .chain(s.collapsed.iter().cloned())
                    .map(|line| format!("<br>{}", esc(&line)))
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
    html.push_str("</table>");
}
