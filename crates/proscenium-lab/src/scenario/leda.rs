//! Leda's figures: its web server's (Fig. 9: static files and a dynamic page against
//! clients) and its CEP application's partitions (Table 1).

use super::*;

/// The static files of the `static` scenario: name and size.
pub(crate) const FILES: [(&str, usize); 3] = [
    ("1kb.bin", 1024),
    ("300kb.bin", 300 * 1024),
    ("5mb.bin", 5 * 1024 * 1024),
];

/// Proscenium's models beside nginx and Apache httpd, as Leda measured.
const STATIC_SERVERS: [&str; 4] = [
    "proscenium:loops",
    "proscenium:staged",
    "nginx",
    "httpd-event",
];

/// Leda Fig. 9a/b: response time and throughput against clients, 300 KB and 5 MB
/// files (and 1 KB), Proscenium against nginx.
pub(super) fn static_files(quick: bool) -> Plan {
    let (clients, seconds): (&[usize], u64) = if quick {
        (&[100, 1000, 5000], 3)
    } else {
        (&[100, 500, 1000, 2000, 3000, 4000, 5000], 10)
    };
    let (steps, groups) = file_steps(clients, seconds, quick);
    let mut deviations = vec![
        "Leda measured Apache and nginx over a network; here nginx alone, on loopback".to_owned(),
    ];
    if quick {
        deviations.push(
            "a 3 s quick step is shorter than one round of 5,000 clients fetching 5 MB (25 GB): \
             read the 5 MB plot of the full profile, whose steps last two rounds"
                .to_owned(),
        );
    }
    Plan {
        name: "static",
        reproduces: "Leda Fig. 9a/b: static files, response time and throughput against clients, vs nginx",
        default_servers: servers(&STATIC_SERVERS),
        cores: Cores::Split,
        upstream: false,
        checks: vec![("/1kb.bin".to_owned(), "x".repeat(64))],
        steps,
        plots: plots(
            &groups,
            &[Metric::Rps, Metric::MeanLatency],
            Some("concurrent clients"),
        ),
        deviations,
    }
}

/// The steps of every file of [`FILES`] at each of `clients`, for `seconds` (longer
/// in the full profile, see [`long_enough`]), and the files' groups.
fn file_steps(clients: &[usize], seconds: u64, quick: bool) -> (Vec<StepPlan>, Vec<String>) {
    let mut steps = Vec::new();
    let mut groups = Vec::new();
    for (file, size) in FILES {
        let group = format!("{} KB file", size / 1024);
        // A full step lasts long enough for nine answers a client at ~1.5 GB/s, or the
        // requests still waiting at its end make it invalid.
        let seconds = |c| {
            if quick {
                seconds
            } else {
                seconds.max(long_enough(c, 1_500_000_000 / size))
            }
        };
        steps.extend(client_ramp(&group, &format!("/{file}"), clients, seconds));
        groups.push(group);
    }
    (steps, groups)
}

/// A page's steps against `clients`, each lasting at least `least` seconds and long
/// enough for nine pages a client at `pages_a_second`, from
/// [`DYNAMIC_LOAD_THREADS`] generator threads.
fn page_ramp(
    group: &str,
    target: &str,
    (clients, least): (&[usize], u64),
    pages_a_second: usize,
) -> Vec<StepPlan> {
    client_ramp(group, target, clients, |c| {
        least.max(long_enough(c, pages_a_second))
    })
    .into_iter()
    .map(|step| step.with_load_threads(DYNAMIC_LOAD_THREADS))
    .collect()
}

/// Every page scenario's listen backlog, as its deviation says.
const BACKLOG_NOTE: &str =
    "every server listens with a backlog of 4096 (the kernel caps it at net.core.somaxconn)";

/// wrk threads for the dynamic page: thousands of connections are more than one
/// generator thread keeps busy, and Leda's clients were many.
pub(super) const DYNAMIC_LOAD_THREADS: usize = 2;

/// The seconds a closed step of `clients` needs at `per_second` answers for nine answers
/// a client: then the requests still waiting at its end are at most a tenth
/// (`results::MAX_UNANSWERED_SHARE`), and the step counts.
fn long_enough(clients: usize, per_second: usize) -> u64 {
    (9 * clients).div_ceil(per_second.max(1)) as u64 + 1
}

/// The pages a second the `dynamic` scenario's steps are sized for: a core at ~1 ms a
/// page. A server slower than that gets invalid steps at its most clients, marked.
const DYNAMIC_PAGES_A_SECOND: usize = 1_000;

/// Leda measured against Apache; actix, hyper and Node.js are today's choices.
const DYNAMIC_SERVERS: [&str; 6] = [
    "proscenium:loops",
    "proscenium:staged",
    "httpd-event",
    "actix",
    "hyper",
    "node",
];

/// Leda Fig. 9c: a page of realistic cost against clients — a loop whose iterations
/// each server gets calibrated so a lone page costs it 1 ms ([`calibration::PAGE`]).
pub(super) fn dynamic(quick: bool) -> Plan {
    let ramp: (&[usize], u64) = if quick {
        (&[100, 500, 1000], 5)
    } else {
        (&[100, 500, 1000, 2000, 5000], 10)
    };
    let steps = page_ramp(
        "dynamic page",
        calibration::PAGE.target,
        ramp,
        DYNAMIC_PAGES_A_SECOND,
    );
    Plan {
        name: "dynamic",
        reproduces: "Leda Fig. 9c: a dynamic page of 1 ms of CPU (a loop, its iterations chosen per server), against clients",
        default_servers: servers(&DYNAMIC_SERVERS),
        cores: Cores::Split,
        upstream: false,
        checks: vec![("/dynamic".to_owned(), "1250000 iterations".to_owned())],
        steps,
        plots: plots(
            &["dynamic page".to_owned()],
            &[Metric::Rps, Metric::MeanLatency],
            Some("concurrent clients"),
        ),
        deviations: dynamic_deviations(),
    }
}

/// Where the dynamic page departs from Leda's.
fn dynamic_deviations() -> Vec<String> {
    vec![
        "Leda's peers ran the page as CGI/PHP; here the same loop is native in each peer (Apache httpd: mod_lua), \
         its iterations chosen per server before round 1 so a lone page costs that server 1 ms \
         (the servers table gives each n and its cost)"
            .to_owned(),
        BACKLOG_NOTE.to_owned(),
        "each step lasts for nine pages a client at 1,000 pages a second, so the quick profile \
         stops at 1,000 clients (5,000 need 46 s steps: the full profile runs them)"
            .to_owned(),
    ]
}

/// Leda's own page: `bench/peers/lua/leda/loop.lua`, a Lua `for` loop of 30,000
/// iterations, which every server of `dynamic-lua` runs as it runs Lua.
pub(crate) const LEDA_PAGE: &str = "/leda.lua";

/// The pages a second the `dynamic-lua` steps are sized for: a loop of 30,000 costs
/// Lua 5.4 about 0.3 ms here, and a CGI process more than that again.
const LEDA_PAGES_A_SECOND: usize = 1_000;

/// Every server that runs Leda's Lua page: Proscenium's Lua and CGI, Apache httpd's
/// mod_lua, nginx's Lua module.
const LUA_SERVERS: [&str; 5] = [
    "proscenium-lua",
    "proscenium-cgi",
    "httpd-worker",
    "httpd-event",
    "nginx-lua",
];

/// Leda Fig. 9c as Leda ran it: the same Lua page (a loop of 30,000 iterations) in
/// every server — Proscenium's embedded Lua and its CGI, Apache httpd's mod_lua under
/// the event MPM and under the worker MPM as Leda configured Apache (150 threads, up to
/// 2,000), nginx's Lua module — from 100 to 5,000 clients.
pub(super) fn dynamic_lua(quick: bool) -> Plan {
    let ramp: (&[usize], u64) = if quick {
        (&[100, 500, 1000], 5)
    } else {
        (&[100, 500, 1000, 2000, 3000, 4000, 5000], 10)
    };
    let group = "Lua page";
    let steps = page_ramp(group, LEDA_PAGE, ramp, LEDA_PAGES_A_SECOND);
    Plan {
        name: "dynamic-lua",
        reproduces: "Leda Fig. 9c: Leda's Lua page (a 30,000-iteration loop), response time and throughput against clients, vs Apache httpd",
        default_servers: servers(&LUA_SERVERS),
        cores: Cores::Split,
        upstream: false,
        checks: vec![(
            LEDA_PAGE.to_owned(),
            "30000 iterations: 3784805016".to_owned(),
        )],
        steps,
        plots: plots(
            &[group.to_owned()],
            &[Metric::MeanLatency, Metric::Rps, Metric::CpuPerRequest],
            Some("concurrent clients"),
        ),
        deviations: dynamic_lua_deviations(),
    }
}

/// Where the Lua page departs from Leda's.
fn dynamic_lua_deviations() -> Vec<String> {
    vec![
        "one page, three Lua implementations: Proscenium embeds Lua 5.4 (and its CGI runs \
         Debian's lua5.4, a process a page), Debian's mod_lua links Lua 5.3, Debian's \
         nginx Lua module runs LuaJIT 2.1, which compiles the loop; Leda's server and \
         Apache ran Lua 5.1 scripts"
            .to_owned(),
        "Apache 2.4 (Debian's) for Leda's Apache 2.2: httpd-worker is configured as Leda's \
         (150 threads started, up to 2,000), httpd-event as Debian's (150 threads); \
         proscenium-cgi runs up to 2,000 scripts at once (bench/peers/lua/cgi/proscenium.toml; \
         its default cap is 64)"
            .to_owned(),
        BACKLOG_NOTE.to_owned(),
        "each step lasts for nine pages a client at 1,000 pages a second: a server slower \
         than that (CGI, a process a page) leaves more than a tenth of its last requests \
         unanswered at the most clients, and those steps are marked invalid"
            .to_owned(),
    ]
}

/// The entries of the log every `cep` run processes: Table 1's million.
pub(crate) const CEP_ENTRIES: u64 = 1_000_000;

/// The group of the `cep` scenario's runs.
pub(crate) const CEP_GROUP: &str = "1,000,000 entries";

/// One row of Leda's Table 1, scaled to this machine: its threads and the instances
/// of Persist, Filter and Correlate, each run under both configurations.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CepRow {
    pub(crate) threads: usize,
    pub(crate) instances: [usize; 3],
}

/// Table 1's rows (24 and 48 threads on 24 cores: one and two a core; instances
/// 6/6/12, 12/12/12, 12/12/24, 24/24/24) scaled to two cores, each row's proportions
/// kept: 2 and 4 threads, instances 1/1/2, 2/2/2, 2/2/4, 4/4/4.
pub(crate) const CEP_ROWS: [CepRow; 4] = [
    CepRow {
        threads: 2,
        instances: [1, 1, 2],
    },
    CepRow {
        threads: 2,
        instances: [2, 2, 2],
    },
    CepRow {
        threads: 4,
        instances: [2, 2, 4],
    },
    CepRow {
        threads: 4,
        instances: [4, 4, 4],
    },
];

/// The two partitions of Table 1, as the runs are named: the second both as a cluster
/// of the same process and, as Leda ran it, in a second process.
pub(crate) const CEP_CONFIGURATIONS: [&str; 3] = [
    "configuration 1",
    "configuration 2",
    "configuration 2, two processes",
];

impl CepRow {
    /// The row's label on the plots and in the tables.
    pub(crate) fn label(self) -> String {
        let [p, f, c] = self.instances;
        format!("{} threads, P/F/C {p}/{f}/{c}", self.threads)
    }

    /// The configuration file of `configuration` (1, 2, or 3 for 2 over two
    /// processes) for this row, relative to the checkout: the file alone changes
    /// between the runs.
    pub(crate) fn config(self, configuration: usize) -> String {
        let [p, f, c] = self.instances;
        let file = ["1", "2", "2p"][configuration - 1];
        format!(
            "examples/cep/configs/table-1/config-{file}-threads-{}-instances-{p}-{f}-{c}.toml",
            self.threads
        )
    }
}

/// Leda Table 1: the CEP application under its two partitions, timed. A job, not a
/// server under load: the lab runs `cep` itself (`runner/job.rs`), so the plan has no
/// servers, checks or load steps, only its plots.
pub(super) fn cep() -> Plan {
    Plan {
        name: "cep",
        reproduces: "Leda Table 1: a CEP application over 1,000,000 log entries, one cluster \
            against a cluster of its own for the CPU-heavy stage, at two thread counts",
        default_servers: servers(&CEP_CONFIGURATIONS),
        cores: Cores::Shared,
        upstream: false,
        checks: Vec::new(),
        steps: Vec::new(),
        plots: plots(
            &[CEP_GROUP.to_owned()],
            &[Metric::Elapsed, Metric::Utilisation],
            None,
        ),
        deviations: vec![
            "Leda ran on 24 cores; here 2: Table 1's threads (24 and 48, one and two a core) \
             and instances are scaled to 2 and 4 threads keeping each row's proportions, \
             configuration 2 splitting its threads equally between its clusters as Leda split \
             them between its two processes"
                .to_owned(),
            "Leda's configuration 2 ran Correlate in a second process; here it runs both as a \
             second cluster of the same process (configuration 2, which the verdict weighs) and \
             in a second process through a Redis of the lab's own (configuration 2, two \
             processes; its peak memory is the supervising process's alone)"
                .to_owned(),
            "the source's numbers are 100 s and ours a few, so they are not drawn on the \
             plot: the verdict's table sets them side by side, and configuration 2 ÷ 1 in both"
                .to_owned(),
        ],
    }
}
