//! The CEP graph: its events, its stages, and the run that waits for its last window.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use proscenium::Config;
use proscenium::config::LuaSpec;
use proscenium::lua::LuaStage;
use proscenium::stage::{
    ClusterSpec, Connector, Graph, Mapping, Out, RunningGraph, Stage, StageError, StopSignal,
};
use serde::{Deserialize, Serialize};

use crate::live::{self, Feed};
use crate::log::{Entry, WINDOW, parse};

/// An alarm raised by Filter.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Alarm {
    /// One client got many 404s in a window (a scan).
    Scan {
        /// The window's index.
        window: u64,
        /// The scanning client.
        client: String,
    },
    /// Many 5xx responses in one window.
    Burst {
        /// The window's index.
        window: u64,
    },
}

/// What a run produced.
#[derive(Debug, Clone, PartialEq)]
pub struct Outcome {
    /// Every alarm, sorted.
    pub alarms: BTreeSet<Alarm>,
    /// Entries processed.
    pub entries: u64,
    /// Correlate's most similar pair of each window, by window, as a checksum.
    pub correlations: BTreeMap<u64, (String, String)>,
    /// From the first line read to the last report.
    pub elapsed: Duration,
}

impl Outcome {
    /// A digest of Correlate's pairs, to compare two runs of one build in a line.
    pub fn correlations_digest(&self) -> u64 {
        let mut hasher = std::hash::DefaultHasher::new();
        std::hash::Hash::hash(&self.correlations, &mut hasher);
        std::hash::Hasher::finish(&hasher)
    }
}

impl std::fmt::Display for Alarm {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Scan { window, client } => write!(f, "scan in window {window} by {client}"),
            Self::Burst { window } => write!(f, "burst of 5xx in window {window}"),
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct Item {
    client: String,
    path: String,
    status: u16,
    bytes: u64,
}

/// What a source sends *window*.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) enum Line {
    /// A log entry.
    Entry(Item),
    /// A live source has had nothing new for a while: the window begun is closed.
    Idle,
    /// The log has ended: the last window is closed.
    End,
}

/// The line a log line makes, if it is a log entry.
pub(crate) fn entry_line(text: &str) -> Option<Line> {
    let Entry {
        client,
        path,
        status,
        bytes,
    } = parse(text)?;
    Some(Line::Entry(Item {
        client,
        path,
        status,
        bytes,
    }))
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Window {
    index: u64,
    last: bool,
    entries: Vec<Item>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
enum Finding {
    Persisted,
    Correlated(Option<(String, String)>),
    Filtered(Vec<Alarm>),
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct Report {
    window: u64,
    last: bool,
    entries: u64,
    finding: Finding,
}

/// The graph's name: its streams and its shape in Redis carry it.
const GRAPH: &str = "cep";

/// The stage whose cluster's process reports the outcome.
const ALARM: &str = "alarm";

/// Reports *alarm* remembers to drop one delivered again: three for each of a
/// 33-million-entry log's windows.
const REPORTS_REMEMBERED: usize = 100_000;

/// How long a stopping graph may take to drain.
const DRAIN: Duration = Duration::from_secs(10);

/// Runs the graph over the log at `log`, its Filter and Correlate in `code`,
/// persisting windows under `dir`, partitioned and scheduled by `clusters`.
///
/// # Errors
///
/// A graph that does not start (see [`Graph::start`]), or one that stops before its
/// last window's reports arrive.
pub fn run(
    log: &Path,
    code: &Code,
    dir: &Path,
    clusters: &HashMap<String, ClusterSpec>,
) -> Result<Outcome, StageError> {
    let (done, outcome) = mpsc::channel();
    let started = Instant::now();
    let input = Input::Log(log.to_owned());
    let running = build(input, code, dir.to_owned(), done, None).start(clusters)?;
    finish(running, &outcome, started)
}

/// Runs process `process`'s part of the graph, as `config` maps it
/// (`[processes.NAME]`, over `[redis]`). The process with *alarm* returns the outcome
/// after the last window's reports; any other runs until `stop` comes, and returns
/// `None`.
///
/// # Errors
///
/// As [`run`], and as [`Graph::start_mapped`]: a mapping the configuration lacks, a
/// graph that differs from its other processes', a Redis that cannot be reached.
pub fn run_process(
    log: &Path,
    code: &Code,
    dir: &Path,
    config: &Config,
    process: &str,
    stop: StopSignal,
) -> Result<Option<Outcome>, StageError> {
    let mapping = Mapping::for_process(GRAPH, process, config)?;
    let (done, outcome) = mpsc::channel();
    let done_early = done.clone();
    let started = Instant::now();
    let running = build(Input::Log(log.to_owned()), code, dir.to_owned(), done, None)
        .start_mapped(&config.clusters, &mapping)?;
    let reports = config.clusters.iter().any(|(name, spec)| {
        mapping.clusters.contains(name) && spec.stages.iter().any(|s| s == ALARM)
    });
    if !reports {
        stop.wait();
        running.shutdown(DRAIN);
        return Ok(None);
    }
    // Stopped before the last window, the run ends with what it has drained.
    let stopped = done_early;
    std::thread::spawn(move || {
        stop.wait();
        let _ = stopped.send(None);
    });
    finish(running, &outcome, started).map(Some)
}

/// Runs the graph over live `feeds` until `stop` comes, each source in a cluster of
/// its own unless `clusters` places it (with no clusters, the other stages share one),
/// sending each alarm on `raised` as it is raised.
///
/// # Errors
///
/// As [`run`].
pub fn run_live(
    feeds: Vec<Feed>,
    code: &Code,
    dir: &Path,
    clusters: &HashMap<String, ClusterSpec>,
    stop: StopSignal,
    raised: mpsc::Sender<Alarm>,
) -> Result<(), StageError> {
    let clusters = live_clusters(clusters, feeds.len());
    let (done, _) = mpsc::channel();
    let input = Input::Live(feeds);
    let running = build(input, code, dir.to_owned(), done, Some(raised)).start(&clusters)?;
    stop.wait();
    running.shutdown(DRAIN);
    Ok(())
}

/// `clusters` for a live run of `sources` sources: *source* (which it has not) taken
/// out, and a cluster of one thread for each live source no cluster names.
fn live_clusters(
    clusters: &HashMap<String, ClusterSpec>,
    sources: usize,
) -> HashMap<String, ClusterSpec> {
    let mut live = clusters.clone();
    if live.is_empty() {
        let stages = PROCESSING.map(str::to_owned).to_vec();
        let main = ClusterSpec {
            stages,
            ..ClusterSpec::default()
        };
        live.insert("main".to_owned(), main);
    }
    for spec in live.values_mut() {
        spec.stages.retain(|stage| stage != "source");
    }
    live.retain(|_, spec| !spec.stages.is_empty());
    for name in (1..=sources).map(live::source_name) {
        if !live.values().any(|spec| spec.stages.contains(&name)) {
            let own = ClusterSpec {
                stages: vec![name.clone()],
                threads: Some(1),
                ..ClusterSpec::default()
            };
            live.insert(name, own);
        }
    }
    live
}

/// How often a run waiting for its last window looks for a stage that failed.
const LOOK: Duration = Duration::from_millis(100);

/// Waits for the last window's reports, then stops the graph; or stops it at once
/// when a stage here failed an event, whose window's report will then never come.
fn finish(
    running: RunningGraph,
    outcome: &mpsc::Receiver<Done>,
    started: Instant,
) -> Result<Outcome, StageError> {
    let result = loop {
        match outcome.recv_timeout(LOOK) {
            Ok(done) => break Ok(done),
            Err(mpsc::RecvTimeoutError::Disconnected) => break Ok(None),
            Err(mpsc::RecvTimeoutError::Timeout) => {
                let stats = running.stats();
                if let Some(failed) = stats.stages.iter().find(|stage| stage.failed > 0) {
                    let (stage, events) = (&failed.stage, failed.failed);
                    break Err(StageError::handler(format!(
                        "stage `{stage}` failed on {events} event(s), logged above: the run cannot complete its windows"
                    )));
                }
            }
        }
    };
    running.shutdown(DRAIN);
    let (alarms, entries, correlations) =
        result?.ok_or_else(|| StageError::handler("the graph stopped before its last window"))?;
    Ok(Outcome {
        alarms,
        entries,
        correlations,
        elapsed: started.elapsed(),
    })
}

/// What *alarm* sends once the last window's reports are in; `None`: the run was
/// told to stop first.
type Done = Option<(BTreeSet<Alarm>, u64, BTreeMap<u64, (String, String)>)>;

/// Where the graph's entries come from.
enum Input {
    /// A log read once, by *source*.
    Log(PathBuf),
    /// Live sources: `source-1`, `source-2`, ...
    Live(Vec<Feed>),
}

/// What Filter and Correlate are written in.
#[derive(Debug, Clone, Default)]
pub enum Code {
    /// Rust, the stages of this file.
    #[default]
    Rust,
    /// Lua: `filter.lua` and `correlate.lua` in the directory (`examples/cep/lua`), run
    /// within the budgets given (Correlate's windows take tens of millions of
    /// instructions: `[lua] instructions = 0` leaves them uncounted).
    Lua(PathBuf, LuaSpec),
}

/// The stages but the sources, in the cluster a live run makes when the
/// configuration has none.
const PROCESSING: [&str; 6] = ["window", "copy", "persist", "correlate", "filter", ALARM];

/// The graph over `input`; each alarm is sent on `raised` as it comes, when given,
/// rather than kept for the outcome.
fn build(
    input: Input,
    code: &Code,
    dir: PathBuf,
    done: mpsc::Sender<Done>,
    raised: Option<mpsc::Sender<Alarm>>,
) -> Graph {
    let windows = Out::<Window>::new("windows");
    let (to_persist, to_correlate, to_filter) = (
        Out::<Window>::new("persist"),
        Out::<Window>::new("correlate"),
        Out::<Window>::new("filter"),
    );
    let reports = Out::<Report>::new("reports");
    let mut graph = Graph::new();
    let lines = Out::<Line>::new("lines");
    let sources = match input {
        Input::Log(log) => vec![source(log, lines.clone())],
        Input::Live(feeds) => (feeds.into_iter().enumerate())
            .map(|(n, feed)| live::source(&live::source_name(n + 1), feed, &lines))
            .collect(),
    };
    let window = graph.stage(window(windows.clone()).output(&windows));
    for source in sources {
        let source = graph.stage(source.output(&lines));
        // Decoupled wherever a configuration may put the two ends in different clusters.
        graph.connect(&source, "lines", &window, Connector::decoupled());
    }
    let copy = graph.stage(
        copy([to_persist.clone(), to_correlate.clone(), to_filter.clone()])
            .output(&to_persist)
            .output(&to_correlate)
            .output(&to_filter),
    );
    let persist = graph.stage(persist(dir, reports.clone()).output(&reports));
    let (correlate, filter) = match code {
        Code::Rust => (
            correlate(reports.clone()).output(&reports),
            filter(reports.clone()).output(&reports),
        ),
        Code::Lua(lua, spec) => {
            let stage = |name: &str| {
                let file = lua.join(format!("{name}.lua"));
                LuaStage::new(name, file, spec)
                    .output(&reports)
                    .stateless::<Window>()
            };
            (stage("correlate"), stage("filter"))
        }
    };
    let correlate = graph.stage(correlate);
    let filter = graph.stage(filter);
    let alarm = graph.stage(alarm(done, raised));
    graph.connect(&window, "windows", &copy, Connector::decoupled());
    graph.connect(&copy, "persist", &persist, Connector::decoupled());
    graph.connect(&copy, "correlate", &correlate, Connector::decoupled());
    graph.connect(&copy, "filter", &filter, Connector::decoupled());
    graph.connect(&persist, "reports", &alarm, Connector::decoupled());
    graph.connect(&correlate, "reports", &alarm, Connector::decoupled());
    graph.connect(&filter, "reports", &alarm, Connector::decoupled());
    graph
}

fn io_error(error: &std::io::Error) -> StageError {
    StageError::handler(error.to_string())
}

fn source(log: PathBuf, lines: Out<Line>) -> Stage {
    Stage::source(
        "source",
        || (),
        move |(), ctx| {
            let text = std::fs::read_to_string(&log).map_err(|e| io_error(&e))?;
            for line in text.lines().filter_map(entry_line) {
                ctx.send(&lines, line)?;
            }
            Ok(ctx.send(&lines, Line::End)?)
        },
    )
}

/// *window*'s state: the next window's index, its entries so far, and when the last
/// of them came.
struct Open {
    index: u64,
    entries: Vec<Item>,
    last_entry: Instant,
}

/// *window*: a window is [`WINDOW`] entries, or those that came before the log ended,
/// or before a live source went quiet — unless another's entries are still coming
/// (one came within half of [`live::IDLE`]): that one says so when it goes quiet.
fn window(windows: Out<Window>) -> Stage {
    Stage::stateful(
        "window",
        || Open {
            index: 0,
            entries: Vec::new(),
            last_entry: Instant::now(),
        },
        move |open: &mut Open, line: Line, ctx| {
            let last = matches!(line, Line::End);
            let quiet = matches!(line, Line::Idle)
                && !open.entries.is_empty()
                && open.last_entry.elapsed() >= live::IDLE / 2;
            if let Line::Entry(item) = line {
                open.entries.push(item);
                open.last_entry = Instant::now();
            }
            if last || quiet || open.entries.len() == WINDOW {
                let entries = std::mem::replace(&mut open.entries, Vec::with_capacity(WINDOW));
                ctx.send(
                    &windows,
                    Window {
                        index: open.index,
                        last,
                        entries,
                    },
                )?;
                open.index += 1;
            }
            Ok(())
        },
    )
}

fn copy(ports: [Out<Window>; 3]) -> Stage {
    Stage::stateless(
        "copy",
        || (),
        move |(), window: Window, ctx| {
            ctx.send(&ports[0], window.clone())?;
            ctx.send(&ports[1], window.clone())?;
            Ok(ctx.send(&ports[2], window)?)
        },
    )
}

fn report(window: &Window, finding: Finding) -> Report {
    Report {
        window: window.index,
        last: window.last,
        entries: window.entries.len() as u64,
        finding,
    }
}

fn persist(dir: PathBuf, reports: Out<Report>) -> Stage {
    Stage::stateless(
        "persist",
        || (),
        move |(), window: Window, ctx| {
            let path = dir.join(format!("window-{:06}.log", window.index));
            let mut file =
                std::io::BufWriter::new(std::fs::File::create(path).map_err(|e| io_error(&e))?);
            for e in &window.entries {
                writeln!(file, "{} {} {} {}", e.client, e.path, e.status, e.bytes)
                    .map_err(|e| io_error(&e))?;
            }
            file.flush().map_err(|e| io_error(&e))?;
            Ok(ctx.send(&reports, report(&window, Finding::Persisted))?)
        },
    )
}

fn correlate(reports: Out<Report>) -> Stage {
    Stage::stateless(
        "correlate",
        || (),
        move |(), window: Window, ctx| {
            let pair = crate::stages::most_similar(&window.entries);
            Ok(ctx.send(&reports, report(&window, Finding::Correlated(pair)))?)
        },
    )
}

/// Feature dimensions of a client's request pattern.
const DIMS: usize = 64;
/// Passes over the pairs: the work Leda's correlation does per window, scaled so
/// Correlate is the dominant cost.
const ROUNDS: usize = 4;

/// Returns the pair of clients whose request patterns are most alike (cosine
/// similarity of their feature vectors, ties broken by name), the CPU-heavy step.
fn most_similar(entries: &[Item]) -> Option<(String, String)> {
    let mut vectors: BTreeMap<&str, [f64; DIMS]> = BTreeMap::new();
    for e in entries {
        let v = vectors.entry(&e.client).or_insert([0.0; DIMS]);
        let h = e.path.bytes().fold(e.status as usize, |h, b| {
            h.wrapping_mul(31).wrapping_add(b as usize)
        });
        v[h % DIMS] += 1.0;
        v[(e.bytes as usize / 100) % DIMS] += 0.5;
    }
    let clients: Vec<(&str, [f64; DIMS])> = vectors.into_iter().collect();
    let mut best: Option<(f64, usize, usize)> = None;
    for round in 0..ROUNDS {
        for i in 0..clients.len() {
            for j in i + 1..clients.len() {
                let (a, b) = (&clients[i].1, &clients[j].1);
                let (mut dot, mut na, mut nb) = (0.0, 0.0, 0.0);
                for (k, x) in a.iter().enumerate() {
                    let y = b[(k + round) % DIMS];
                    dot += x * y;
                    na += x * x;
                    nb += y * y;
                }
                let sim = if na == 0.0 || nb == 0.0 {
                    0.0
                } else {
                    dot / (na.sqrt() * nb.sqrt())
                };
                if round == 0 && best.is_none_or(|(s, _, _)| sim > s) {
                    best = Some((sim, i, j));
                }
            }
        }
    }
    best.map(|(_, i, j)| (clients[i].0.to_owned(), clients[j].0.to_owned()))
}

/// 404s from one client in one window that make a scan.
const SCAN_THRESHOLD: usize = 20;
/// 5xx responses in one window that make a burst.
const BURST_THRESHOLD: usize = 20;

fn filter(reports: Out<Report>) -> Stage {
    Stage::stateless(
        "filter",
        || (),
        move |(), window: Window, ctx| {
            let mut not_found: BTreeMap<&str, usize> = BTreeMap::new();
            let mut errors = 0;
            for e in &window.entries {
                match e.status {
                    404 => *not_found.entry(&e.client).or_default() += 1,
                    500..=599 => errors += 1,
                    _ => {}
                }
            }
            let mut alarms: Vec<Alarm> = not_found
                .into_iter()
                .filter(|&(_, n)| n >= SCAN_THRESHOLD)
                .map(|(client, _)| Alarm::Scan {
                    window: window.index,
                    client: client.to_owned(),
                })
                .collect();
            if errors >= BURST_THRESHOLD {
                alarms.push(Alarm::Burst {
                    window: window.index,
                });
            }
            Ok(ctx.send(&reports, report(&window, Finding::Filtered(alarms)))?)
        },
    )
}

#[derive(Default)]
struct Tally {
    alarms: BTreeSet<Alarm>,
    entries: u64,
    correlations: BTreeMap<u64, (String, String)>,
    reports: u64,
    windows: Option<u64>,
}

fn alarm(done: mpsc::Sender<Done>, raised: Option<mpsc::Sender<Alarm>>) -> Stage {
    Stage::stateful(
        ALARM,
        Tally::default,
        move |tally: &mut Tally, report: Report, _| {
            tally.reports += 1;
            if report.last {
                tally.windows = Some(report.window + 1);
            }
            match (report.finding, &raised) {
                (Finding::Persisted, _) => tally.entries += report.entries,
                // A live run keeps nothing a window: it runs for as long as its logs.
                (Finding::Correlated(_), Some(_)) => {}
                (Finding::Correlated(pair), None) => {
                    if let Some(pair) = pair {
                        tally.correlations.insert(report.window, pair);
                    }
                }
                (Finding::Filtered(alarms), Some(raised)) => {
                    for alarm in alarms {
                        // The receiver gone: the run is stopping.
                        let _ = raised.send(alarm);
                    }
                }
                (Finding::Filtered(alarms), None) => tally.alarms.extend(alarms),
            }
            if tally.windows.is_some_and(|w| tally.reports == 3 * w) {
                let t = std::mem::take(tally);
                // The receiver gone means the run gave up waiting; nothing is lost that
                // anyone is still waiting for.
                let _ = done.send(Some((t.alarms, t.entries, t.correlations)));
            }
            Ok(())
        },
    )
    // A report delivered again (its stage's process died before acknowledging the
    // window) must not count twice: one report of each kind per window.
    .idempotent_by(REPORTS_REMEMBERED, |report: &Report| {
        (report.window, std::mem::discriminant(&report.finding))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster(stages: &[&str]) -> ClusterSpec {
        ClusterSpec {
            stages: stages.iter().map(|s| (*s).to_owned()).collect(),
            ..ClusterSpec::default()
        }
    }

    #[test]
    fn each_live_source_is_in_a_cluster_of_its_own_unless_one_is_configured() {
        let stages = |clusters: &HashMap<String, ClusterSpec>| {
            let mut named: Vec<(String, Vec<String>)> = (clusters.iter())
                .map(|(name, spec)| (name.clone(), spec.stages.clone()))
                .collect();
            named.sort();
            named
        };
        let none = live_clusters(&HashMap::new(), 2);
        assert_eq!(
            stages(&none),
            [
                ("main".to_owned(), PROCESSING.map(str::to_owned).to_vec()),
                ("source-1".to_owned(), vec!["source-1".to_owned()]),
                ("source-2".to_owned(), vec!["source-2".to_owned()]),
            ]
        );
        assert_eq!(none["source-1"].threads, Some(1));
        // A file's *source* cluster goes (the live graph has none); a source it places
        // stays where it is.
        let file = HashMap::from([
            ("sources".to_owned(), cluster(&["source"])),
            ("main".to_owned(), cluster(&PROCESSING)),
            ("tails".to_owned(), cluster(&["source-2"])),
        ]);
        assert_eq!(
            stages(&live_clusters(&file, 2)),
            [
                ("main".to_owned(), PROCESSING.map(str::to_owned).to_vec()),
                ("source-1".to_owned(), vec!["source-1".to_owned()]),
                ("tails".to_owned(), vec!["source-2".to_owned()]),
            ]
        );
    }
}
