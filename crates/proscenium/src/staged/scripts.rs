//! Leda's *CGI* stage (its Fig. 2), which ran the server's scripts: here two stages,
//! each there when the server has what it runs.
//!
//! - *lua*, in a cluster of its own, `scripts`, so that a page's CPU work never holds
//!   a loop of `http`: a route handler's Lua page or app hands its script to the stage
//!   (the thread's hook in `lua::threads`), one of the cluster's threads runs it, and
//!   the answer goes back to the connection, which writes it in order with its others.
//!   `[clusters.scripts]` tunes it as any cluster: its threads (by default `[lua]
//!   threads`, one a core), its queue (by default `[lua] queue`; full, a request gets
//!   503 as from a full Lua queue), the elastic pool, priorities. A script still
//!   running a margin past its deadline has its thread stood aside: lowered to idle
//!   priority, a new thread in its place, and the stuck one leaving the cluster when
//!   its script ends — the script threads' retirement, done by the cluster
//!   (`stood_aside` in its stats). The stage has an instance for each thread and each
//!   that may stand aside (`[lua] retired`), so the threads in their place find one.
//! - *cgi*, in `http`: a CGI program is a process of its own, which a loop starts and
//!   reads without a thread waiting on it, so the stage is async, on the loops. A
//!   request for a script waits its turn in the stage's queue, and past `[cgi]
//!   max_scripts` running it waits there for a slot — until `[cgi] timeout`, then 503
//!   — where the other models refuse it at once (the hook in `cgi::stage`).

#[cfg(any(feature = "lua", feature = "cgi"))]
use std::sync::{Arc, OnceLock};

use crate::Config;
use crate::config::ClusterSpec;
#[cfg(any(feature = "lua", feature = "cgi"))]
use crate::rt::hand_off::Handed;
use crate::stage::Graph;
#[cfg(any(feature = "lua", feature = "cgi"))]
use crate::stage::{Context, Inlet, Stage, StageRef};

/// A stage's inlet, set once the graph has started.
#[cfg(any(feature = "lua", feature = "cgi"))]
pub(super) type Way<T> = Arc<OnceLock<Inlet<T>>>;

/// The cluster running the Lua scripts.
#[cfg(feature = "lua")]
pub(super) const CLUSTER: &str = "scripts";

/// The stages, by the names `[clusters.*]` know them by.
#[cfg(feature = "lua")]
const LUA: &str = "lua";
#[cfg(feature = "cgi")]
const CGI: &str = "cgi";

/// The ways to the script stages the server has.
#[derive(Clone, Default)]
pub(super) struct Scripts {
    #[cfg(feature = "lua")]
    lua: Option<Way<crate::lua::ScriptJob>>,
    #[cfg(feature = "cgi")]
    cgi: Option<Way<crate::cgi::CgiJob>>,
}

/// The script stages of a graph, once added.
#[derive(Default)]
pub(super) struct Added {
    #[cfg(feature = "lua")]
    lua: Option<StageRef>,
    #[cfg(feature = "cgi")]
    cgi: Option<StageRef>,
}

impl Scripts {
    /// The stages `config` has scripts for: Lua pages or a Lua app, CGI.
    pub(super) fn of(config: &Config) -> Self {
        let _ = config;
        Self {
            #[cfg(feature = "lua")]
            lua: (config.lua.enabled || config.lua.app.is_some()).then(Arc::default),
            #[cfg(feature = "cgi")]
            cgi: config.cgi.enabled.then(Arc::default),
        }
    }

    /// Tunes `clusters` for the stages: `http`'s (already there) for *cgi*, and
    /// `scripts` for *lua*.
    pub(super) fn tune(
        &self,
        config: &Config,
        clusters: &mut std::collections::HashMap<String, ClusterSpec>,
    ) {
        let _ = (config, &clusters);
        #[cfg(feature = "cgi")]
        if self.cgi.is_some() {
            if let Some(http) = clusters.get_mut(super::CLUSTER) {
                http.instances
                    .entry(CGI.to_owned())
                    .or_insert(config.cgi.max_scripts);
            }
        }
        #[cfg(feature = "lua")]
        if self.lua.is_some() {
            let mut spec = config.clusters.get(CLUSTER).cloned().unwrap_or_default();
            let threads = *spec
                .threads
                .get_or_insert(crate::lua::script_threads(&config.lua));
            spec.queue = spec.queue.or(Some(config.lua.queue));
            let most = spec.max_threads.unwrap_or(threads).max(threads);
            spec.instances
                .entry(LUA.to_owned())
                .or_insert(most + config.lua.retired);
            clusters.insert(CLUSTER.to_owned(), spec);
        }
    }

    /// Adds the stages to `graph`; returns them, and the stages of `http` (those
    /// not in `scripts`).
    pub(super) fn add(&self, graph: &mut Graph) -> Added {
        let _ = &graph;
        Added {
            #[cfg(feature = "lua")]
            lua: self.lua.as_ref().map(|_| {
                graph.stage(Stage::stateless(
                    LUA,
                    || (),
                    |(): &mut (), job: crate::lua::ScriptJob, _: &mut Context<'_>| {
                        job.run_on_stage();
                        Ok(())
                    },
                ))
            }),
            #[cfg(feature = "cgi")]
            cgi: self.cgi.as_ref().map(|_| {
                graph.stage(Stage::stateless_async(
                    CGI,
                    || (),
                    async |(): &mut (), job: crate::cgi::CgiJob, _: &mut Context<'_>| {
                        job.run().await;
                        Ok(())
                    },
                ))
            }),
        }
    }

    /// Parts `graph` into `http` and, with *lua*, `scripts`.
    pub(super) fn part(added: &Added, graph: &mut Graph) {
        let _ = added;
        #[cfg(feature = "lua")]
        if let Some(lua) = &added.lua {
            let http = graph.all() - lua;
            graph.part([(super::CLUSTER, http), (CLUSTER, lua.into())]);
            return;
        }
        graph.part([(super::CLUSTER, graph.all())]);
    }

    /// Opens the ways into the stages of `running`, now that it has started (until
    /// then, scripts run as under the other models). Queued, and refused when a
    /// queue is full: a loop must not wait.
    pub(super) fn open(
        &self,
        added: &Added,
        running: &crate::stage::RunningGraph,
    ) -> Result<(), crate::stage::StageError> {
        let _ = (added, running);
        #[cfg(feature = "lua")]
        if let (Some(way), Some(lua)) = (&self.lua, &added.lua) {
            let _ = way.set(running.inlet("scripts", lua, crate::stage::Admission::Reject)?);
        }
        #[cfg(feature = "cgi")]
        if let (Some(way), Some(cgi)) = (&self.cgi, &added.cgi) {
            let _ = way.set(running.inlet("cgi", cgi, crate::stage::Admission::Reject)?);
        }
        Ok(())
    }

    /// Sends the scripts of the requests this thread serves to the stages.
    pub(super) fn install(&self) {
        #[cfg(feature = "lua")]
        if let Some(way) = &self.lua {
            let way = Arc::clone(way);
            crate::lua::install_stage(move |job| through(&way, job));
        }
        #[cfg(feature = "cgi")]
        if let Some(way) = &self.cgi {
            let way = Arc::clone(way);
            crate::cgi::install_stage(move |job| through(&way, job));
        }
    }
}

/// Sends `event` through `way`, if it is open.
#[cfg(any(feature = "lua", feature = "cgi"))]
fn through<T: Send + 'static>(way: &OnceLock<Inlet<T>>, event: T) -> Handed<T> {
    match way.get() {
        Some(inlet) => match inlet.send(event) {
            Ok(()) => Handed::Taken,
            Err(_) => Handed::Refused,
        },
        None => Handed::NotOpen(event),
    }
}
