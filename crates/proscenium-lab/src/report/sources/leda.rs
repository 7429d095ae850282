//! Salmito, de Moura and Rodriguez, Leda (2014), sec. 6: Fig. 9, a staged web server
//! against Apache and nginx, static files and a dynamic page against clients; Table 1,
//! a CEP application under two partitions.

use super::{
    Comparison, Finding, Source, Verdict, at_common_top, at_label, line, peak, ran, steps,
};
use crate::report::summary::{Spread, spread};
use crate::results::Results;
use crate::scenario::{CEP_CONFIGURATIONS, CEP_GROUP, CEP_ROWS, Metric};

pub(super) const STATIC: Source = Source {
    figure: "Salmito et al. 2014 (Leda), Fig. 9a/b",
    measured: "Leda's staged web server (Lua, a thread per core), Apache 2.2 (150 threads \
        started, up to 2,000) and nginx 1.5 (a worker per core) serving 300 KB and 5 MB files to \
        100 to 5,000 concurrent clients from 10 httperf hosts. 300 KB: Apache had the lowest \
        response time, and no request failed. 5 MB: throughput plateaus between 200 and 300 \
        clients, requests time out; Apache degrades when overloaded, Leda and nginx hold a near \
        constant throughput, Leda slightly ahead. The text gives no other numbers.",
    stand_ins: &[
        ("Leda's web server", "proscenium:loops"),
        ("nginx 1.5", "nginx"),
        ("Apache 2.2, threads", "httpd-event"),
    ],
    claim: "Overloaded with large files, the event-driven servers (Leda, nginx) hold their \
        throughput while Apache's threads lose theirs.",
    references: &[],
    judge: static_files,
};

pub(super) const DYNAMIC: Source = Source {
    figure: "Salmito et al. 2014 (Leda), Fig. 9c",
    measured: "Leda and Apache 2.2 serving a Lua script that runs a 30,000-iteration loop to 100 \
        to 5,000 concurrent clients: Leda's response time grows more smoothly than Apache's, \
        whose many threads cost under a large processing load. The text gives no numbers.",
    stand_ins: &[
        ("Leda's web server, CGI stage", "proscenium:loops"),
        ("Apache 2.2 running the script", "httpd-event (mod_lua)"),
    ],
    claim: "Under a CPU-heavy page the event-driven server's response time grows with clients \
        no faster than the thread-based server's.",
    references: &[],
    judge: dynamic,
};

/// A server holds its throughput when at the most clients it answers 0.8 of its peak.
fn holds(results: &Results, server: &str, group: &str) -> Option<(f64, f64)> {
    let line = line(results, server, group, Metric::Rps);
    let last = line.last()?.1;
    let peak = peak(results, server, group, Metric::Rps)?;
    Some((last, peak))
}

/// The 5 MB file's steps decide; a quick run's are too short to (a deviation says so).
fn static_files(results: &Results) -> Finding {
    let group = "5120 KB file";
    let servers = ["proscenium:loops", "nginx", "httpd-event"];
    if !ran(results, &servers) {
        return Finding::missing(&servers);
    }
    let (rows, held) = held_throughput(results, &servers, group);
    let [leda, nginx, apache] = held[..] else {
        return Finding::missing(&servers);
    };
    if results.profile == "quick" {
        return Finding::new(
            Verdict::NotTestable,
            "a quick step is shorter than one round of 5,000 clients fetching 5 MB; the full profile decides",
            rows,
        );
    }
    let verdict = match (leda && nginx, apache) {
        (true, false) => Verdict::Reproduced,
        (true, true) => Verdict::Partly,
        (false, _) => Verdict::NotReproduced,
    };
    Finding::new(
        verdict,
        "a server holds its throughput when at the most clients it answers 0.8 of its peak or more",
        rows,
    )
}

/// For each of `servers` measured in `group`: its rate at the most clients over its
/// peak, as a row, and whether it held 0.8 of the peak.
fn held_throughput(
    results: &Results,
    servers: &[&str],
    group: &str,
) -> (Vec<Comparison>, Vec<bool>) {
    let mut rows = Vec::new();
    let mut held = Vec::new();
    for server in servers {
        if let Some((last, peak)) = holds(results, server, group) {
            rows.push(Comparison::new(
                format!("{server}: at the most clients ÷ peak"),
                None,
                Some(last / peak),
                "×",
            ));
            held.push(last >= 0.8 * peak);
        }
    }
    (rows, held)
}

/// The most the page's CPU cost may differ between the two servers for their response
/// times to compare architectures rather than languages.
const SAME_COST: f64 = 1.5;

/// Mean response time at the most clients: Proscenium's at most httpd's — when the page
/// costs both about the same CPU (Leda ran the same Lua script in both servers; here
/// each server's iterations are calibrated for it, and the guard checks they did).
fn dynamic(results: &Results) -> Finding {
    let group = "dynamic page";
    if let Some(incomparable) = unequal_costs(results, group) {
        return incomparable;
    }
    let ours = line(results, "proscenium:loops", group, Metric::MeanLatency);
    let apache = line(results, "httpd-event", group, Metric::MeanLatency);
    let (Some(&(x, o)), Some(&(_, a))) = (ours.last(), apache.last()) else {
        return Finding::missing(&["proscenium:loops", "httpd-event"]);
    };
    Finding::new(
        Verdict::of_one(o <= a),
        format!(
            "at {x:.0} clients Proscenium's mean response time is {o:.0} ms, httpd's {a:.0} ms"
        ),
        vec![
            mean_at(x, "proscenium:loops", o),
            mean_at(x, "httpd-event", a),
        ],
    )
}

/// `server`'s mean response time `ms` at `clients`, as a row.
fn mean_at(clients: f64, server: &str, ms: f64) -> Comparison {
    let what = format!("{server}, mean at {clients:.0} clients");
    Comparison::new(what, None, Some(ms), "ms")
}

/// The finding that `group`'s page costs the two servers too unequal CPU to compare
/// them (over [`SAME_COST`] apart at the fewest clients), or that a cost is missing;
/// `None` when the costs compare.
fn unequal_costs(results: &Results, group: &str) -> Option<Finding> {
    let cost = |server| {
        line(results, server, group, Metric::CpuPerRequest)
            .first()
            .map(|p| p.1)
    };
    let (Some(ours_cost), Some(apache_cost)) = (cost("proscenium:loops"), cost("httpd-event"))
    else {
        return Some(Finding::missing(&["proscenium:loops", "httpd-event"]));
    };
    let cost_row = |server: &str, cost: f64| {
        let what = format!("{server}, CPU a page at the fewest clients");
        Comparison::new(what, None, Some(cost), "µs")
    };
    let costs = vec![
        cost_row("proscenium:loops", ours_cost),
        cost_row("httpd-event", apache_cost),
    ];
    let ratio = ours_cost.max(apache_cost) / ours_cost.min(apache_cost);
    (ratio > SAME_COST).then(|| {
        Finding::new(
            Verdict::NotTestable,
            format!(
                "the page costs one server {ratio:.1}× the CPU it costs the other at the fewest \
                 clients, though each server's iterations were chosen for 1 ms a lone page: \
                 a comparison of languages, not of threads and events"
            ),
            costs,
        )
    })
}

pub(super) const DYNAMIC_LUA: Source = Source {
    figure: "Salmito et al. 2014 (Leda), Fig. 9c, the page itself",
    measured: "Leda's staged web server (a thread per core, the page run by its CGI stage) and \
        Apache 2.2 (150 threads started, up to 2,000) serving a Lua script that runs a \
        30,000-iteration loop to 100 to 5,000 concurrent clients from 10 httperf hosts: \
        'the overhead of using a large number of threads' shows in Apache's response time, \
        while Leda's 'shows a smoother growth'. The text gives no numbers.",
    stand_ins: &[
        ("Leda's web server, Lua page", "proscenium-lua"),
        ("Apache 2.2, 150 to 2,000 threads", "httpd-worker (mod_lua)"),
    ],
    claim: "Under the Lua page, the event-driven server's mean response time at the most \
        clients is at most the threaded Apache's, and grows from the fewest clients by no \
        more.",
    references: &[],
    judge: dynamic_lua,
};

/// Proscenium's Lua page against Leda's Apache (httpd-worker): its mean response time
/// at the most clients both reached at most Apache's, and its growth from the fewest
/// clients at most Apache's — both: reproduced, one: partly.
fn dynamic_lua(results: &Results) -> Finding {
    let group = "Lua page";
    let servers = ["proscenium-lua", "httpd-worker"];
    let [ours, apache] = servers.map(|server| line(results, server, group, Metric::MeanLatency));
    let (Some(&(low, ours_first)), Some(&(_, apache_first))) = (ours.first(), apache.first())
    else {
        return Finding::missing(&servers);
    };
    let Some((top, ours_top, apache_top)) = at_common_top(&ours, &apache) else {
        return Finding::missing(&servers);
    };
    let (ours_growth, apache_growth) = (ours_top / ours_first, apache_top / apache_first);
    let verdict = Verdict::of_both(ours_top <= apache_top, ours_growth <= apache_growth);
    Finding::new(
        verdict,
        format!(
            "at {top:.0} clients Proscenium's mean response time is {ours_top:.1} ms, Apache's \
             {apache_top:.1} ms; from {low:.0} clients it grew {ours_growth:.1}×, Apache's \
             {apache_growth:.1}×"
        ),
        lua_rows(
            (low, top),
            (ours_top, apache_top),
            (ours_growth, apache_growth),
        ),
    )
}

/// The Lua page's numbers: each server's mean at `top` clients and its growth from
/// `low`, Proscenium's first.
fn lua_rows(
    (low, top): (f64, f64),
    (ours_top, apache_top): (f64, f64),
    (ours_growth, apache_growth): (f64, f64),
) -> Vec<Comparison> {
    vec![
        mean_at(top, "proscenium-lua", ours_top),
        mean_at(top, "httpd-worker", apache_top),
        Comparison::new(
            format!("proscenium-lua, growth from {low:.0} clients"),
            None,
            Some(ours_growth),
            "×",
        ),
        Comparison::new(
            format!("httpd-worker, growth from {low:.0} clients"),
            None,
            Some(apache_growth),
            "×",
        ),
    ]
}

pub(super) const CEP: Source = Source {
    figure: "Salmito et al. 2014 (Leda), Table 1",
    measured: "Leda's CEP application (Source → Window → Copy → Persist / Correlate / Filter → \
        Alarm) over a stored web-server log of 1,000,000 entries, windows of 1,000, on a 24-core \
        Xeon X5650, the average of three runs: configuration 1 (one cluster for every stage but \
        the sources) against configuration 2 (Correlate, the CPU-heavy stage, in a second \
        process), at 24 and 48 threads and four sets of instances of Persist, Filter and \
        Correlate. Configuration 2 took 98.7 s against 107.8 s, 102.2 against 104.0, 102.3 \
        against 112.1 and 111.6 against 111.6: 'in general' better, the paper says, because its \
        threads are dedicated to the computing-intensive stage.",
    stand_ins: &[
        (
            "configuration 1: one cluster",
            "configuration 1 (examples/cep/configs/table-1/config-1-*.toml)",
        ),
        (
            "configuration 2: Correlate in a second process",
            "configuration 2: Correlate in a second cluster of the same process \
             (examples/cep/configs/table-1/config-2-*.toml)",
        ),
    ],
    claim: "A cluster of its own for the CPU-heavy stage (configuration 2) runs the job in \
        general faster than one cluster for every stage (configuration 1).",
    references: &[],
    judge: cep,
};

/// Table 1's execution times (s), configuration 1 and 2, row by row, with the row as
/// Leda gave it.
const TABLE_1: [(&str, f64, f64); 4] = [
    ("24 threads, 6/6/12", 107.836, 98.720),
    ("24 threads, 12/12/12", 104.015, 102.200),
    ("48 threads, 12/12/24", 112.116, 102.329),
    ("48 threads, 24/24/24", 111.629, 111.616),
];

/// Per row, configuration 2 is faster when its slowest run beats configuration 1's
/// fastest, slower when the other way round; in general faster when it is in three
/// rows of four and slower in none.
fn cep(results: &Results) -> Finding {
    if !ran(results, &CEP_CONFIGURATIONS) {
        return Finding::missing(&CEP_CONFIGURATIONS);
    }
    let [one, two, apart] = CEP_CONFIGURATIONS;
    let mut rows = Vec::new();
    let (mut faster, mut slower, mut measured) = (0, 0, 0);
    for (row, leda) in CEP_ROWS.iter().zip(TABLE_1) {
        let label = row.label();
        let of = |server| elapsed(results, server, &label);
        let (a, b) = (of(one), of(two));
        rows.extend(cep_row(results, &label, [a, b, of(apart)], leda));
        if let (Some(a), Some(b)) = (a, b) {
            measured += 1;
            faster += usize::from(b.max < a.min);
            slower += usize::from(b.min > a.max);
        }
    }
    if measured == 0 {
        return Finding::missing(&CEP_CONFIGURATIONS);
    }
    Finding::new(
        cep_verdict(faster, slower, measured),
        format!(
            "configuration 2 was faster beyond the spread of the rounds in {faster} of \
             {measured} rows and slower beyond it in {slower} (the rule: faster in three \
             rows of four and slower in none)"
        ),
        rows,
    )
}

/// The times of `server`'s runs of the Table 1 row `label`, over the rounds.
fn elapsed(results: &Results, server: &str, label: &str) -> Option<Spread> {
    let steps = steps(results, server, CEP_GROUP);
    spread(
        Metric::Elapsed,
        steps.into_iter().filter(|s| s.label == label),
    )
}

/// Table 1's rule: configuration 2 faster in three rows of four (of the `measured`)
/// and slower in none.
fn cep_verdict(faster: usize, slower: usize, measured: usize) -> Verdict {
    if slower == 0 && 4 * faster >= 3 * measured {
        Verdict::Reproduced
    } else if faster == 0 {
        Verdict::NotReproduced
    } else {
        Verdict::Partly
    }
}

/// A row of Table 1 compared: each configuration's median time (`spreads`, in
/// [`CEP_CONFIGURATIONS`]' order) beside Leda's, and 2 and 2p over 1 beside Leda's
/// ratio.
fn cep_row(
    results: &Results,
    label: &str,
    spreads: [Option<Spread>; 3],
    (leda, leda_one, leda_two): (&str, f64, f64),
) -> Vec<Comparison> {
    let [one, two, apart] = CEP_CONFIGURATIONS;
    let time = |what: String, leda: f64, spread: Option<Spread>| {
        Comparison::new(what, Some(leda), spread.map(|s| s.median), "s")
    };
    let mut rows = vec![
        time(
            format!("{one}, {label} (Leda: {leda})"),
            leda_one,
            spreads[0],
        ),
        time(format!("{two}, {label}"), leda_two, spreads[1]),
        time(format!("{apart}, {label}"), leda_two, spreads[2]),
    ];
    for configuration in [two, apart] {
        rows.push(Comparison::new(
            format!("{configuration} ÷ {one}, {label}"),
            Some(leda_two / leda_one),
            at_label(results, configuration, CEP_GROUP, label, Metric::Elapsed)
                .zip(at_label(results, one, CEP_GROUP, label, Metric::Elapsed))
                .map(|(b, a)| b / a),
            "×",
        ));
    }
    rows
}
