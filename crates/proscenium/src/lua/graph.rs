//! Graphs described in a file, as Leda's were: stages written in Lua and sources of
//! lines, connected by name, partitioned and scheduled by `[clusters.NAME]` as any
//! graph, run by `proscenium graph FILE` — a TOML file, or a Lua file returning the
//! same table (`return { stage = { ... }, clusters = { ... }, lua = { ... } }`).
//!
//! ```toml
//! [stage.log]
//! lines = "access.log"       # a source: each line of the file, an event (a string)
//! to = { lines = "parse" }   # its port `lines` feeds the stage `parse`
//!
//! [stage.parse]
//! lua = "parse.lua"          # handle(line) ... emit("entries", { ... })
//! to = { entries = "count" }
//!
//! [stage.count]
//! lua = "count.lua"
//! stateful = true            # one instance, events in order (else: as many as its cluster says)
//!
//! [clusters.main]            # optional: without clusters, every stage is in one
//! stages = ["log", "parse", "count"]
//! threads = 2
//!
//! [lua]                      # every Lua stage's budgets, as a page's
//! instructions = 0
//! ```
//!
//! Files are named relative to the graph's file. Events between stages are JSON
//! values (Lua tables, strings, numbers). The run ends when its sources have read
//! their files and every event has been handled, or at SIGINT or SIGTERM; what the
//! stages `print` goes to the log.

use std::collections::{BTreeMap, HashMap};
use std::io::BufRead as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use mlua::{ChunkMode, LuaSerdeExt as _};
use serde::Deserialize;

use super::{LuaSpec, LuaStage, one_line};
use crate::stage::{
    ClusterSpec, Connector, Graph, Out, RunningGraph, Stage, StageError, StageRef, StopSignal,
};

/// An event between the stages of a described graph.
type Event = serde_json::Value;

/// How long a stopping graph may take to drain.
const DRAIN: Duration = Duration::from_secs(10);

/// How often a run looks whether it is done.
const LOOK: Duration = Duration::from_millis(50);

/// A graph as its file describes it.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GraphFile {
    /// The stages, by name.
    stage: BTreeMap<String, StageSpec>,
    /// How the stages are partitioned and scheduled (default: one cluster).
    #[serde(default)]
    clusters: HashMap<String, ClusterSpec>,
    /// The Lua stages' budgets.
    #[serde(default)]
    lua: LuaSpec,
    /// The file's directory, which its files are named from.
    #[serde(skip)]
    dir: PathBuf,
}

/// One stage of the file: a Lua file's, or a source of a file's lines.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct StageSpec {
    lua: Option<PathBuf>,
    lines: Option<PathBuf>,
    #[serde(default)]
    stateful: bool,
    /// Where each output port goes: port → stage.
    #[serde(default)]
    to: BTreeMap<String, String>,
}

/// Why a graph's file cannot be run.
#[derive(Debug, thiserror::Error)]
#[error("{file}: {why}")]
pub struct GraphFileError {
    file: String,
    why: String,
}

impl GraphFile {
    /// Reads the graph in `path`: Lua if its name ends in `.lua`, TOML otherwise.
    ///
    /// # Errors
    ///
    /// A file that cannot be read, is no graph (an unknown key, a stage neither Lua nor
    /// lines), or connects a port to a stage it does not have.
    pub fn read(path: &Path) -> Result<Self, GraphFileError> {
        let refused = |why: String| GraphFileError {
            file: path.display().to_string(),
            why,
        };
        let text = std::fs::read_to_string(path).map_err(|e| refused(e.to_string()))?;
        let mut file: Self = if path.extension().is_some_and(|e| e == "lua") {
            from_lua(&text, path).map_err(|e| refused(one_line(&e)))?
        } else {
            toml::from_str(&text).map_err(|e| refused(e.message().to_owned()))?
        };
        file.dir = path.parent().unwrap_or(Path::new(".")).to_owned();
        file.check().map_err(refused)?;
        Ok(file)
    }

    fn check(&self) -> Result<(), String> {
        for (name, spec) in &self.stage {
            match (&spec.lua, &spec.lines) {
                (Some(_), None) | (None, Some(_)) => {}
                _ => return Err(format!("stage `{name}`: name one of `lua` and `lines`")),
            }
            if spec.lines.is_some() && spec.to.keys().any(|port| port != LINES) {
                return Err(format!(
                    "stage `{name}`: a source of lines has one port, `{LINES}`"
                ));
            }
            if let Some(to) = spec.to.values().find(|to| !self.stage.contains_key(*to)) {
                return Err(format!("stage `{name}` feeds `{to}`, which is no stage"));
            }
        }
        Ok(())
    }

    /// Runs the graph until its sources have read their files and every event has
    /// been handled, or until `stop` comes.
    ///
    /// # Errors
    ///
    /// A graph that does not start (see [`Graph::start`]), or a source that could not
    /// read its file. A Lua stage's failed call drops its event, logged, and the run
    /// goes on.
    pub fn run(self, mut stop: StopSignal) -> Result<(), StageError> {
        let reading = Arc::new(AtomicUsize::new(0));
        let graph = self.graph(&reading);
        let running = graph.start(&self.clusters)?;
        let sources: Vec<&str> = (self.stage.iter())
            .filter(|(_, spec)| spec.lines.is_some())
            .map(|(name, _)| name.as_str())
            .collect();
        while !stop.came_within(LOOK) {
            if reading.load(Ordering::Acquire) == 0 && settled(&running, &sources) {
                break;
            }
        }
        let stats = running.stats();
        running.shutdown(DRAIN);
        match (stats.stages.iter()).find(|s| s.failed > 0 && sources.contains(&s.stage.as_str())) {
            Some(source) => Err(StageError::handler(format!(
                "source `{}` did not read its file whole (logged above)",
                source.stage
            ))),
            None => Ok(()),
        }
    }

    /// The graph: its stages, then their connections; `reading` counts the sources
    /// still reading.
    fn graph(&self, reading: &Arc<AtomicUsize>) -> Graph {
        let mut graph = Graph::new();
        let stages: HashMap<&str, StageRef> = (self.stage.iter())
            .map(|(name, spec)| {
                (
                    name.as_str(),
                    graph.stage(self.stage_of(name, spec, reading)),
                )
            })
            .collect();
        for (name, spec) in &self.stage {
            for (port, to) in &spec.to {
                graph.connect(
                    &stages[name.as_str()],
                    port,
                    &stages[to.as_str()],
                    Connector::decoupled(),
                );
            }
        }
        graph
    }

    fn stage_of(&self, name: &str, spec: &StageSpec, reading: &Arc<AtomicUsize>) -> Stage {
        if let Some(file) = &spec.lines {
            let stage = lines(name, self.dir.join(file), reading);
            return match spec.to.is_empty() {
                true => stage,
                false => stage.output(&Out::<Event>::new(LINES)),
            };
        }
        let file = self.dir.join(spec.lua.as_deref().unwrap_or(Path::new("")));
        let lua = (spec.to.keys()).fold(LuaStage::new(name, file, &self.lua), |lua, port| {
            // Ports are named by `&'static str`: a graph's names live as long as the
            // process that runs it, once.
            lua.output(&Out::<Event>::new(Box::leak(port.clone().into_boxed_str())))
        });
        match spec.stateful {
            true => lua.stateful::<Event>(),
            false => lua.stateless::<Event>(),
        }
    }
}

/// The port of a source of lines.
const LINES: &str = "lines";

/// A source sending each line of `file` on [`LINES`].
fn lines(name: &str, file: PathBuf, reading: &Arc<AtomicUsize>) -> Stage {
    reading.fetch_add(1, Ordering::AcqRel);
    let reading = Arc::clone(reading);
    let port = Out::<Event>::new(LINES);
    Stage::source(
        name,
        || (),
        move |(), ctx| {
            let read = std::fs::File::open(&file).map(std::io::BufReader::new);
            let sent = read
                .map_err(|e| StageError::handler(format!("{}: {e}", file.display())))
                .and_then(|read| {
                    for line in read.split(b'\n') {
                        let line = line.map_err(|e| StageError::handler(e.to_string()))?;
                        let text = String::from_utf8_lossy(&line).trim_end().to_owned();
                        ctx.send(&port, Event::String(text))?;
                    }
                    Ok(())
                });
            reading.fetch_sub(1, Ordering::AcqRel);
            sent
        },
    )
}

/// Whether every stage but the sources has handled all it was sent.
fn settled(running: &RunningGraph, sources: &[&str]) -> bool {
    let stats = running.stats();
    (stats.stages.iter())
        .filter(|stage| !sources.contains(&stage.stage.as_str()))
        .all(|stage| stage.queued == 0 && stage.handled >= stage.arrived)
}

/// The table a Lua graph file returns, run in a fresh state of the standard library
/// alone (it describes; it runs nothing else).
fn from_lua(text: &str, path: &Path) -> mlua::Result<GraphFile> {
    let lua = mlua::Lua::new();
    let table: mlua::Value = lua
        .load(text)
        .set_mode(ChunkMode::Text)
        .set_name(format!("@{}", path.display()))
        .eval()?;
    lua.from_value(table)
}
