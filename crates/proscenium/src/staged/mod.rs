//! The staged model: the server itself as a stage graph, after Leda's staged web
//! server (its Fig. 2), run by the stage layer like any application graph.
//!
//! ```text
//! wait-client ──client──▶ handle-client ──request──▶ route-handler ┄┄file┄┄▶ cache
//!                              ▲                          │   ┆ ┆            ▲   │
//!                              └────────keep-alive────────┘   ┆ ┆       fill │   │ miss
//!                                                  cgi ◀┄┄┄┄┄┄┘ ┆            │   ▼
//!                                        [scripts] lua ◀┄┄┄┄┄┄┄┄┘          read-file
//! ```
//!
//! - *wait-client* (an async source) accepts under the connection cap;
//! - *handle-client* holds a connection, without a thread, until it has sent a whole
//!   request (its head, and its body when small): the thread models' waiting room;
//! - *route-handler* serves the connection's requests on its thread's loop — parse,
//!   route, the app (static files included), the answers written in order — for as
//!   long as they keep coming, then gives it back to *handle-client* for the next
//!   request (Leda's keep-alive arrow), or closes it;
//! - *cache* and *read file* keep small static files in memory (`files.rs`): the app's
//!   `StaticFiles` asks *cache* through an inlet (the dotted arrow) and the answer
//!   goes back to the connection;
//! - *cgi* and *lua* run the app's CGI scripts and Lua pages (`scripts.rs`), *lua*
//!   in a cluster of its own, `scripts`, so a script's CPU work holds none of `http`'s
//!   loops;
//! - a request read on a thread busier than another is handed to the least busy
//!   thread's loop and answered from there (`dispatch.rs`: Node.Scala's dispatch per
//!   request).
//!
//! Every connector carries a socket or an answer's way back, so every one is `local`.
//! The graph is one cluster, `http` (with `scripts` beside it for Lua): `loops`
//! threads (`staged:N`), each a loop on which every stage is an async handler, so a
//! thread waits on no one client. `[clusters.http]` tunes it like any cluster (threads, the elastic pool, queue bounds, batching); a stage queue
//! that is full refuses the connection with the overload answer (503), as the thread
//! pool's queue does.

mod dispatch;
mod files;
mod scripts;

use std::any::Any;
use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::Config;
use crate::rt::dispatcher::pause_after_accept_error;
use crate::rt::event_loop::LoopSpec;
use crate::rt::overload::{Bound, note};
use crate::rt::threads::{accept, enter_thread, refuse, serve_visit};
use crate::rt::upgraded;
use crate::rt::waiting_room::{self, Held};
use crate::rt::{Host, Left, Protocol};
use crate::stage::{
    Admission, ClusterSpec, Connector, Context, Graph, GraphMonitor, Out, RunningGraph, Stage,
    StageError, StageRef,
};

use self::dispatch::Loops;
use self::files::{CacheEvent, CacheInlet};
use self::scripts::{Added, Scripts};

/// What each `http` thread reaches beyond its loop: the other loops it hands requests
/// to, and the stages it asks through an inlet, which is set once the graph has
/// started.
#[derive(Clone)]
struct Ways {
    loops: Arc<Loops>,
    cache: Option<CacheInlet>,
    scripts: Scripts,
}

/// The cluster every stage of the server is in.
pub(crate) const CLUSTER: &str = "http";

/// The section of `/_status` showing the server's graph (with `--tools`).
pub(crate) const STATUS: &str = "staged";

/// The stages, by the names `[clusters.http]` knows them by.
const WAIT_CLIENT: &str = "wait-client";
const HANDLE_CLIENT: &str = "handle-client";
const ROUTE_HANDLER: &str = "route-handler";

/// How often a stopping server looks whether every connection has closed.
const DRAIN_POLL: Duration = Duration::from_millis(5);

/// Returns the `http` cluster's scheduling: `[clusters.http]`, its threads by default
/// the model's loops, and room in its queues and instances for every connection the
/// cap lets in (so only a configured bound refuses one).
pub(crate) fn cluster(config: &Config) -> ClusterSpec {
    let mut spec = config.clusters.get(CLUSTER).cloned().unwrap_or_default();
    spec.threads = spec.threads.or(Some(config.loop_count()));
    let connections = config.limits.max_connections;
    spec.queue = spec.queue.or(Some(connections));
    for stage in [HANDLE_CLIENT, ROUTE_HANDLER] {
        spec.instances
            .entry(stage.to_owned())
            .or_insert(connections);
    }
    // A read holds its thread for microseconds: one reader a thread.
    spec.instances
        .entry(files::READ_FILE.to_owned())
        .or_insert(config.loop_count());
    spec
}

/// Starts the server's graph on `listener`, its monitor in `shown`, and a thread that
/// stops it once shutdown begins and every connection has closed (or the shutdown
/// deadline passed).
pub(crate) fn spawn<P: Protocol>(
    listener: std::net::TcpListener,
    config: &Config,
    spec: LoopSpec<P>,
    shown: &OnceLock<GraphMonitor>,
) -> Result<JoinHandle<()>, StageError> {
    let ways = Ways {
        loops: Arc::new(Loops::default()),
        cache: (config.limits.static_cache > 0).then(CacheInlet::default),
        scripts: Scripts::of(config),
    };
    let (graph, stages) = graph(listener, config, &spec, &ways);
    let mut clusters = HashMap::from([(CLUSTER.to_owned(), cluster(config))]);
    ways.scripts.tune(config, &mut clusters);
    let running = graph.start(&clusters)?;
    if let (Some(cache), Some(inlet)) = (&stages.cache, &ways.cache) {
        // Until it is set, a file is read where its request is served. A cohort inlet:
        // a lookup runs the cache at once on the request's thread, so a hit is
        // answered inline, as a file read is under `loops`; queued, lookups piled up
        // in flight under 5,000 clients and past `max_inflight` were refused 503.
        let _ = inlet.set(running.cohort_inlet("static-files", cache)?);
    }
    ways.scripts.open(&stages.scripts, &running)?;
    let _ = shown.set(running.monitor());
    crate::rt::runtime::spawn_thread("proscenium-staged".to_owned(), move |runtime| {
        let mut shutdown = spec.shutdown.clone();
        // Ends at shutdown, or when the server that would say so is gone.
        runtime.block_on(shutdown.wait_for(|stop| *stop)).ok();
        stop_when_drained(running, &spec);
    })
    .map_err(|e| StageError::start(CLUSTER, &e))
}

/// Waits for the connections to close (or the shutdown deadline), then stops the
/// graph within what is left of the deadline.
fn stop_when_drained<P: Protocol>(running: RunningGraph, spec: &LoopSpec<P>) {
    let deadline = std::time::Instant::now() + spec.settings.timeouts.shutdown;
    while spec.gate.live() > 0 && std::time::Instant::now() < deadline {
        std::thread::sleep(DRAIN_POLL);
    }
    // The stages' threads need a moment to leave even when every connection is gone.
    let left = deadline.saturating_duration_since(std::time::Instant::now());
    let report = running.shutdown(left.max(DRAIN_POLL * 20));
    if report.stuck_threads > 0 || report.abandoned > 0 {
        tracing::warn!(
            stuck_threads = report.stuck_threads,
            abandoned = report.abandoned,
            "the staged server stopped past its deadline"
        );
    }
}

/// The stages of the server's graph its threads ask through inlets.
struct Asked {
    cache: Option<StageRef>,
    scripts: Added,
}

/// Returns Leda's Fig. 2 as this server's graph, with its *cache* stage when `ways`
/// has a way to it (`limits.static_cache` is not 0) and its script stages when it has
/// scripts; the route handlers hand requests to each other through `ways.loops`.
fn graph<P: Protocol>(
    listener: std::net::TcpListener,
    config: &Config,
    spec: &LoopSpec<P>,
    ways: &Ways,
) -> (Graph, Asked) {
    let client = Out::<Held>::local("client");
    let request = Out::<Held>::local("request");
    let keep_alive = Out::<Held>::local("keep-alive");
    let mut graph = Graph::new();
    let wait = graph.stage(wait_client(listener, spec, &client).output(&client));
    let handle = graph.stage(handle_client(spec, &request).output(&request));
    let route = graph.stage(route_handler(spec, &keep_alive, ways).output(&keep_alive));
    // A full queue refuses: a sender on a loop must not wait.
    let connector = Connector::local().admission(Admission::Reject);
    graph.connect(&wait, "client", &handle, connector);
    graph.connect(&handle, "request", &route, connector);
    graph.connect(&route, "keep-alive", &handle, connector);
    let cache = ways.cache.as_ref().map(|_| {
        let miss = Out::<files::Miss>::local("miss");
        let fill = Out::<CacheEvent>::local("fill");
        let cache = graph.stage(files::cache(config.limits.static_cache, &miss).output(&miss));
        let keep_up_to = config.limits.static_cache_file;
        let read = graph.stage(files::read_file(&fill, keep_up_to).output(&fill));
        graph.connect(&cache, "miss", &read, connector);
        graph.connect(&read, "fill", &cache, connector);
        cache
    });
    let scripts = ways.scripts.add(&mut graph);
    Scripts::part(&scripts, &mut graph);
    graph.sample(config.stages.sample);
    // Every thread joins the loops requests are handed between as it starts, so a
    // request can go to a thread that has served nothing yet.
    let (spec, ways) = (spec.clone(), ways.clone());
    graph.on_thread_start(move |cluster| {
        if cluster == CLUSTER {
            thread_side(&spec, &ways);
        }
    });
    (graph, Asked { cache, scripts })
}

/// *wait-client*: accepts under the connection cap until shutdown begins.
fn wait_client<P: Protocol>(
    listener: std::net::TcpListener,
    spec: &LoopSpec<P>,
    client: &Out<Held>,
) -> Stage {
    // The source has one instance: its state takes the listener once.
    let listener = parking_lot::Mutex::new(Some(listener));
    let (spec, client) = (spec.clone(), client.clone());
    Stage::source_async(
        WAIT_CLIENT,
        move || listener.lock().take(),
        async move |listener: &mut Option<std::net::TcpListener>, (): (), ctx: &mut Context<'_>| {
            let Some(listener) = listener.take() else {
                return Ok(());
            };
            let listener = tokio::net::TcpListener::from_std(listener)
                .map_err(|e| StageError::handler(format!("cannot listen: {e}")))?;
            let mut shutdown = spec.shutdown.clone();
            loop {
                tokio::select! {
                    accepted = accept(&listener, &spec) => match accepted {
                        Ok(held) => pass_on(ctx, &client, held, &spec).await,
                        Err(e) => pause_after_accept_error(&e).await,
                    },
                    _ = shutdown.changed() => break,
                }
            }
            spec.gate.withdraw();
            Ok(())
        },
    )
}

/// *handle-client*: holds a connection until it has sent a whole request, or closes it.
fn handle_client<P: Protocol>(spec: &LoopSpec<P>, request: &Out<Held>) -> Stage {
    let (spec, request) = (spec.clone(), request.clone());
    Stage::stateless_async(
        HANDLE_CLIENT,
        || (),
        async move |(): &mut (), held: Held, ctx: &mut Context<'_>| {
            if let Some(held) = waiting_room::wait(held, &spec).await {
                pass_on(ctx, &request, held, &spec).await;
            }
            Ok(())
        },
    )
}

/// *route-handler*: serves a connection's requests while they keep coming, then gives
/// it back to *handle-client* (keep-alive), or closes it; its static files come from
/// *cache* and its scripts run in *lua* (through `ways`), when there are those.
fn route_handler<P: Protocol>(spec: &LoopSpec<P>, keep_alive: &Out<Held>, ways: &Ways) -> Stage {
    let (spec, keep_alive, ways) = (spec.clone(), keep_alive.clone(), ways.clone());
    Stage::stateless_async(
        ROUTE_HANDLER,
        || (),
        async move |(): &mut (), held: Held, ctx: &mut Context<'_>| {
            let Held { visit, pass } = held;
            let side = thread_side(&spec, &ways);
            match serve_visit(&side, visit, &spec).await {
                Left::Closed => {}
                Left::Waiting(visit) => {
                    pass_on(ctx, &keep_alive, Held { visit, pass }, &spec).await;
                }
                // This thread's loop waits on no one socket: it runs here.
                Left::Upgraded(moved) => upgraded::run(moved, pass, spec.clone()).await,
            }
            Ok(())
        },
    )
}

/// Sends `held` on through `port`; a full queue (or a stopped graph) refuses it with
/// the protocol's overload answer.
async fn pass_on<P: Protocol>(
    ctx: &mut Context<'_>,
    port: &Out<Held>,
    held: Held,
    spec: &LoopSpec<P>,
) {
    if let Err(refused) = ctx.send(port, held) {
        if refused.error().is_rejected() {
            note(Bound::StageQueue);
        }
        refuse(refused.into_inner().visit, &*spec.protocol).await;
    }
}

thread_local! {
    /// This thread's side of the protocol (an `Rc<P::Local>`), made on first use.
    static SIDE: RefCell<Option<Rc<dyn Any>>> = const { RefCell::new(None) };
}

/// Threads that have made their side, for their loop ids.
static THREADS: AtomicUsize = AtomicUsize::new(0);

/// Returns this thread's side of the protocol, making it (and the thread's loop
/// context: blocking pools, counters, its place among the loops requests are handed
/// between, its ways to the static files' cache and to the scripts stage) the first
/// time.
fn thread_side<P: Protocol>(spec: &LoopSpec<P>, ways: &Ways) -> Rc<P::Local> {
    SIDE.with_borrow_mut(|side| {
        if let Some(local) = side.clone().and_then(|s| s.downcast::<P::Local>().ok()) {
            return local;
        }
        enter_thread(THREADS.fetch_add(1, Ordering::Relaxed), spec);
        ways.loops.join();
        if let Some(cache) = &ways.cache {
            files::install(cache);
        }
        ways.scripts.install();
        let local = spec.protocol.local(Host::Stage);
        *side = Some(local.clone());
        local
    })
}
